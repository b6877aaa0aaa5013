"""Image operators (gaussian_blur, normalize, crop_mirror_normalize) and their per-sample CPU
kernels, with the saturating dtype conversion they share."""
