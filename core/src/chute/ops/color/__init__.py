"""Color operators (color_twist, hsv, brightness_contrast, color_space_conversion, ...).

Each operator module has its backends beside it: ``<topic>_ops.py`` declares the
operators, ``<topic>_kernels.py`` holds their per-sample CPU kernels and
``<topic>_gpu.py`` their GPU backends (what ``run_gpu`` calls), with the host-side
plans those need.

color_ops.py -> color_kernels.py / color_gpu.py (brightness, contrast, color matrices)
and color_space_kernels.py / color_space_gpu.py (color_space_conversion).
"""
