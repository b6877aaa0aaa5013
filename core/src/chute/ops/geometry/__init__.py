"""Geometry operators: resize, crop, slice, flip, pad, warps, distortions, transforms.

The ``*_kernels`` modules hold the per-sample CPU implementations as pure functions
over HWC numpy arrays.
"""
