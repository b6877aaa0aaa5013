"""The one compiled part of chute: ``chute._native`` (GIL-free CPU kernels, csrc/native.c).

It is optional: where it cannot be built, chute runs the same operators through Pillow
and NumPy (see chute.ops.geometry.resize_kernels).
"""

import sys

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "chute._native",
            sources=["csrc/native.c"],
            extra_compile_args=[] if sys.platform == "win32" else ["-O3", "-std=c11"],
            optional=True,
        )
    ]
)
