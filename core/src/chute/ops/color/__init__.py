"""Color operators (color_twist, hsv, brightness_contrast, color_space_conversion, ...) and their
per-sample CPU kernels."""
