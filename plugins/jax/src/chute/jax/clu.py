"""DALI's ``nvidia.dali.plugin.jax.clu``: the peekable iterator for CLU / T5X training loops."""

from __future__ import annotations

from chute.jax._dali import DALIGenericPeekableIterator
from chute.jax._decorator import peekable_data_iterator

__all__ = ["DALIGenericPeekableIterator", "peekable_data_iterator"]
