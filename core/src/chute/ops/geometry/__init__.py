"""Geometry operators: resize, crop, slice, flip, pad, warps, distortions, transforms.

Each operator module has its backends beside it: ``<topic>_ops.py`` declares the
operators, ``<topic>_kernels.py`` holds their per-sample CPU kernels and
``<topic>_gpu.py`` their GPU backends (what ``run_gpu`` calls), with the host-side
plans those need.

The ``*_kernels`` modules are pure functions over HWC numpy arrays; the ``*_gpu``
modules launch chute.gpu's batched kernels (resize_gpu: resize, random_resized_crop,
resize_crop_mirror, fast_resize_crop_mirror; crop_gpu: crop, pad, flip; warp_gpu:
warp_affine, rotate) or their own CuPy kernels (remap_gpu: experimental.warp_perspective,
experimental.remap; tensor_resize_gpu: tensor_resize, experimental.tensor_resize).
"""
