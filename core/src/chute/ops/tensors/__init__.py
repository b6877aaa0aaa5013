"""Tensor operators that make, relabel or regroup data (DALI's tensor and sequence operators).

constant_ops.py: constant, full, full_like, zeros, zeros_like, ones, ones_like.
shape_ops.py: squeeze, expand_dims, reinterpret, cast_like, per_frame, one_hot.
sequence_ops.py: element_extract, sequence_rearrange, batch_permutation, permute_batch.
tensors_gpu.py: their GPU backends (views where the data stays, CuPy where it moves).

cast, reshape, transpose, stack, cat, shapes and copy live in ``chute.ops.tensor_ops``.
"""
