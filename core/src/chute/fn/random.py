"""Random number operators: ``fn.random.uniform``, ``normal``, ``coin_flip``, ``choice``."""

from __future__ import annotations

from chute.ops.random import Choice, CoinFlip, Normal, Uniform
from chute.runtime.operator import make_fn

__all__ = ["choice", "coin_flip", "normal", "uniform"]

uniform = make_fn(Uniform)
normal = make_fn(Normal)
coin_flip = make_fn(CoinFlip)
choice = make_fn(Choice)
