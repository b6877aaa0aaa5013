"""JAX iterators under DALI's names: ``from nvidia.dali.plugin.jax import X`` ports to
``from chute.jax import X`` (and ``nvidia.dali.plugin.jax.clu`` to ``chute.jax.clu``).

``DALIGenericIterator`` yields one dict of jax.Arrays per step, as DALI's:
with ``sharding``, global arrays laid over the devices; with several
pipelines and no sharding, the pipelines' batches stacked on a new leading
axis (the layout ``jax.pmap`` takes). ``LastBatchPolicy.PARTIAL`` is refused,
as in DALI.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
from chute.iteration import PipelineSource, as_policy
from chute.iteration.dali import dali_iterator
from chute.jax._iterator import DataIterator
from chute.types import LastBatchPolicy

__all__ = ["DALIGenericIterator", "DALIGenericPeekableIterator"]


class DALIGenericIterator(DataIterator):
    """DALI's ``DALIGenericIterator`` for JAX: a dict of jax.Arrays keyed by ``output_map``.

    The arguments are DALI's (``size``, ``reader_name``, ``auto_reset`` as a
    bool or "yes"/"no", ``last_batch_padded``, ``last_batch_policy`` FILL or
    DROP, ``prepare_first_batch``, ``sharding``); ``pad_ragged`` (keyword,
    chute's) zero-pads ragged outputs instead of listing their samples.
    """

    dali_conventions = True

    @dali_iterator(
        "pipelines",
        "output_map",
        omit=("fill_last_batch", "dynamic_shape"),  # not in DALI's JAX iterator
        after={"prepare_first_batch": [("sharding", None)]},
        keyword_only=[("pad_ragged", False)],
    )
    def __init__(self, pipelines: PipelineSource, output_map: Sequence[str], **options: Any):
        if as_policy(options["last_batch_policy"]) is LastBatchPolicy.PARTIAL:
            raise ValueError(
                "DALIGenericIterator: the JAX iterator does not support "
                "last_batch_policy=LastBatchPolicy.PARTIAL (as in DALI); use FILL or DROP"
            )
        super().__init__(pipelines, output_map, **options)

    def _join(self, name: str, arrays: list[jax.Array]) -> jax.Array:
        # DALI: one leading axis per pipeline, ready for jax.pmap
        if len({a.shape for a in arrays}) > 1:
            raise ValueError(
                f"DALIGenericIterator: output {name!r} has different shapes in different "
                f"pipelines ({[a.shape for a in arrays]}); they cannot be stacked"
            )
        return jnp.stack(arrays)


class DALIGenericPeekableIterator(DALIGenericIterator):
    """DALI's ``clu.DALIGenericPeekableIterator``: a DALIGenericIterator with ``peek()``.

    ``peek()`` returns the next batch without consuming it, ``peek_async()`` a
    ``concurrent.futures.Future`` of it, and ``element_spec`` the shape and
    dtype of every output (``jax.ShapeDtypeStruct``; DALI gives CLU's
    ``ArraySpec``, which has the same ``shape`` and ``dtype``).
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def peek_async(self) -> concurrent.futures.Future:
        """A future of :meth:`peek`, computed on a helper thread."""
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(1, "chute-peek")
        return self._pool.submit(self.peek)
