"""fn.experimental.resize: DALI 2.4's newer resize implementation, under its own name.

DALI offers it beside fn.resize with the same arguments (GPU only there); in chute it is
fn.resize itself, on the CPU and the GPU: the same sizes, filters and regions.
"""

from __future__ import annotations

import dataclasses

from chute.ops.geometry.resize_ops import Resize
from chute.runtime.registry import register

__all__ = ["ExperimentalResize"]


@register
class ExperimentalResize(Resize):
    """fn.resize under DALI's ``experimental.resize`` name (same arguments and results)."""

    schema = dataclasses.replace(Resize.schema, name="experimental.resize")
