"""Image operators (gaussian_blur, normalize, crop_mirror_normalize) and the saturating dtype
conversion they share (convert_kernels).

Each operator module has its backends beside it: ``<topic>_ops.py`` declares the
operators, ``<topic>_kernels.py`` holds their per-sample CPU kernels and
``<topic>_gpu.py`` their GPU backends (what ``run_gpu`` calls), with the host-side
plans those need.

image_ops.py's operators -> filter_kernels / filter_gpu (gaussian_blur),
normalize_kernels / normalize_gpu, cmn_kernels / cmn_gpu (crop_mirror_normalize).
paste_ops (multi_paste), debayer_ops (debayer, experimental.debayer) and clahe_ops
(clahe) have their kernels and GPU backends beside them under the same topic names.
"""
