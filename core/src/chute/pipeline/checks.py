"""What the Pipeline checks of its outputs and how it writes checkpoints.

``output_dtype`` / ``output_ndim`` (DALI's constructor arguments) declare what
each output must be: checked at build against the outputs' build-time specs,
and after each run for the outputs whose type is known only then. A checkpoint
is the pipeline's ``state_dict()`` as a JSON string (DALI hands out a string too).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["check_outputs", "decode_checkpoint", "encode_checkpoint", "per_output"]

_FORMAT = "chute-checkpoint-1"


def per_output(value: Any, n: int, name: str) -> list[Any]:
    """``value`` for each of ``n`` outputs: a single value is broadcast; a list must have ``n``."""
    if value is None:
        return [None] * n
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"Pipeline: {name} lists {len(value)} values for {n} outputs")
        return list(value)
    return [value] * n


def check_outputs(
    names: Sequence[str],
    dtypes: Sequence[np.dtype | None],
    ndims: Sequence[int | None],
    want_dtype: Sequence[Any],
    want_ndim: Sequence[Any],
    when: str,
) -> None:
    """Raise naming the first output whose known dtype / ndim is not the declared one."""
    for k, name in enumerate(names):
        if want_dtype[k] is not None and dtypes[k] is not None and dtypes[k] != want_dtype[k]:
            raise TypeError(
                f"Pipeline output {k} ({name!r}) has dtype {np.dtype(dtypes[k]).name} {when}, "
                f"but output_dtype declares {np.dtype(want_dtype[k]).name}"
            )
        if want_ndim[k] is not None and ndims[k] is not None and ndims[k] != want_ndim[k]:
            raise ValueError(
                f"Pipeline output {k} ({name!r}) has {ndims[k]} dimensions {when}, "
                f"but output_ndim declares {want_ndim[k]}"
            )


def encode_checkpoint(state: dict[str, Any], iterator_data: Any = None) -> str:
    """The string ``Pipeline.checkpoint()`` returns."""
    return json.dumps(
        {"format": _FORMAT, "state": state, "iterator_data": iterator_data}, sort_keys=True
    )


def decode_checkpoint(text: str) -> tuple[dict[str, Any], Any]:
    """(state_dict, iterator_data) of a checkpoint string; ValueError for anything else."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a chute checkpoint (not JSON: {exc})") from None
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise ValueError("not a chute checkpoint: pass the string that pipe.checkpoint() returned")
    return data["state"], data.get("iterator_data")
