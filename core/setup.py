"""The one compiled part of chute: ``chute.runtime._native`` (GIL-free CPU kernels, csrc/).

It is optional: where it cannot be built, chute runs the same operators through Pillow
and NumPy (see chute.ops.geometry.resize_kernels).
"""

import sys

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "chute.runtime._native",
            sources=[
                "csrc/native.c",
                "csrc/jpeg_region.c",
                "csrc/read_files.c",
                "csrc/crop_window.c",
                "csrc/lut_planes.c",
                "csrc/jpeg_check.c",
                "csrc/parallel.c",
                "csrc/codec_calls.c",
            ],
            depends=["csrc/native.h"],
            extra_compile_args=[] if sys.platform == "win32" else ["-O3", "-std=c11"],
            # dlopen (jpeg_region.c) lives in libdl before glibc 2.34; log/exp in libm
            libraries=["dl", "m"] if sys.platform.startswith("linux") else [],
            optional=True,
        )
    ]
)
