"""Paddle iterators under DALI's names: ``from nvidia.dali.plugin.paddle import X`` ports to
``from chute.paddle import X``.

They are :class:`chute.paddle.DataIterator` with DALI's conventions switched
on (``iter()`` after an ended epoch starts the next one, DALI's warnings) and
DALI's signatures: each step is a list with one dict of paddle.Tensors per
pipeline, keyed by ``output_map``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chute.iteration import PipelineSource
from chute.iteration.dali import dali_iterator
from chute.paddle._iterator import DataIterator

__all__ = ["DALIClassificationIterator", "DALIGenericIterator"]


def _names(output_map: Sequence[str | tuple[str, int]]) -> list[str]:
    # DALI's paddle output_map entries are names or (name, lod_level) pairs
    names = []
    for entry in output_map:
        if isinstance(entry, str):
            names.append(entry)
            continue
        name, lod_level = entry
        if lod_level:
            raise ValueError(
                f"DALIGenericIterator: output {name!r} asks for lod_level={lod_level}; chute "
                "gives ragged outputs as lists of per-sample tensors, use lod_level 0"
            )
        names.append(name)
    return names


class DALIGenericIterator(DataIterator):
    """DALI's ``DALIGenericIterator`` for Paddle: a list with one dict of paddle.Tensors per pipeline.

    ``output_map`` holds names, or DALI's ``(name, lod_level)`` pairs with
    ``lod_level`` 0. ``size`` / ``reader_name`` / ``auto_reset`` /
    ``fill_last_batch`` (deprecated, warns) / ``dynamic_shape`` (ignored) /
    ``last_batch_padded`` / ``last_batch_policy`` / ``prepare_first_batch``
    behave as in the other plugins (:mod:`chute.iteration`); the signature is DALI's.
    """

    dali_conventions = True

    @dali_iterator("pipelines", "output_map")
    def __init__(
        self, pipelines: PipelineSource, output_map: Sequence[str | tuple[str, int]], **options: Any
    ):
        super().__init__(pipelines, _names(output_map), **options)


class DALIClassificationIterator(DALIGenericIterator):
    """DALI's ``DALIClassificationIterator`` for Paddle: outputs named "data" and "label"."""

    @dali_iterator("pipelines")
    def __init__(self, pipelines: PipelineSource, **options: Any):
        super().__init__(pipelines, ["data", "label"], **options)
