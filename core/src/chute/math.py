"""DALI's ``nvidia.dali.math`` on DataNodes: ``chute.math.sqrt(x)``, ``chute.math.clamp(x, 0, 1)``.

The same functions as ``chute.fn.math`` (see there for the type promotion).
"""

from __future__ import annotations

from chute.fn.math import *  # noqa: F403
from chute.fn.math import __all__ as __all__
