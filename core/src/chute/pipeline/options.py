"""The Pipeline constructor's arguments: DALI 2.4's list, their defaults and their checks.

Every argument that DALI's ``Pipeline`` and ``@pipeline_def`` take is accepted.
``None`` for any of them means its default. A misspelled name raises a
``TypeError`` that names the closest valid one. :func:`check_options` returns
the checked values, keyed by name; the Pipeline keeps them.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

import numpy as np

from chute.types import DALIDataType, to_dtype

__all__ = [
    "DEFAULTS",
    "PipelineArguments",
    "check_options",
    "closest_name",
    "unknown_argument",
]

# name -> default, in DALI's order (the first eleven are positional in DALI too).
DEFAULTS: dict[str, Any] = {
    "batch_size": -1,
    "num_threads": -1,
    "device_id": None,
    "seed": None,
    "exec_pipelined": True,
    "prefetch_queue_depth": 2,
    "exec_async": True,
    "bytes_per_sample": 0,
    "set_affinity": False,
    "max_streams": -1,
    "default_cuda_stream_priority": 0,
    "enable_memory_stats": False,
    "enable_checkpointing": False,
    "checkpoint": None,
    "py_num_workers": 1,
    "py_start_method": "fork",
    "py_callback_pickler": None,
    "output_dtype": None,
    "output_ndim": None,
    "exec_dynamic": False,
    "experimental_exec_dynamic": False,
    # chute's own
    "on_error": "raise",
    "max_error_ratio": 1.0,
    "max_error_entries": 1000,
    "device_fallback": None,  # None: on unless CHUTE_DEVICE_FALLBACK=0
}

# Arguments that @pipeline_def takes besides the constructor's.
DECORATOR_ONLY = ("enable_conditionals", "debug")


class PipelineArguments(TypedDict, total=False):
    """The keywords ``@pipeline_def`` (and DALI-style decorators over it) take, typed.

    For ``**kwargs: Unpack[PipelineArguments]``, so that a type checker flags a misspelled
    pipeline argument; the names are DEFAULTS' and DECORATOR_ONLY's, the types
    ``Pipeline.__init__``'s (tests/core/test_plugin_stubs.py keeps them equal).
    """

    batch_size: int
    num_threads: int
    device_id: int | None
    seed: int | None
    exec_pipelined: bool
    prefetch_queue_depth: int | dict[str, int]
    exec_async: bool
    bytes_per_sample: int
    set_affinity: bool
    max_streams: int
    default_cuda_stream_priority: int
    enable_memory_stats: bool
    enable_checkpointing: bool
    checkpoint: str | None
    py_num_workers: int
    py_start_method: str
    py_callback_pickler: Any
    output_dtype: Any
    output_ndim: int | list[int | None] | None
    exec_dynamic: bool
    experimental_exec_dynamic: bool
    on_error: str
    max_error_ratio: float
    max_error_entries: int
    device_fallback: bool | None
    enable_conditionals: bool
    debug: bool


def closest_name(name: str, valid: list[str] | tuple[str, ...]) -> str | None:
    """The valid name nearest to ``name`` (difflib), or None when none is close."""
    found = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_argument(where: str, name: str, valid: list[str] | tuple[str, ...]) -> TypeError:
    """The TypeError for a misspelled argument: names it and the closest valid one."""
    near = closest_name(name, valid)
    hint = f"; did you mean {near!r}?" if near else f"; valid arguments: {', '.join(valid)}"
    return TypeError(f"{where} got an unexpected argument {name!r}{hint}")


def _int(name: str, value: Any, low: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"Pipeline: {name} must be an int, got {type(value).__name__} {value!r}")
    if low is not None and value < low:
        raise ValueError(f"Pipeline: {name} must be >= {low}, got {value}")
    return int(value)


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_, int)) or value not in (0, 1):
        raise TypeError(f"Pipeline: {name} must be True or False, got {value!r}")
    return bool(value)


def _prefetch(value: Any) -> dict[str, int]:
    if isinstance(value, Mapping):
        extra = set(value) - {"cpu_size", "gpu_size"}
        if extra or len(value) != 2:
            raise ValueError(
                'Pipeline: prefetch_queue_depth as a dict needs exactly "cpu_size" and '
                f'"gpu_size", got {sorted(value)}'
            )
        return {k: _int(f"prefetch_queue_depth[{k!r}]", value[k], 1) for k in value}
    depth = _int("prefetch_queue_depth", value, 1)
    return {"cpu_size": depth, "gpu_size": depth}


def _pickler(value: Any) -> Any:
    module = value[0] if isinstance(value, tuple) and value else value
    if not (hasattr(module, "dumps") and hasattr(module, "loads")):
        raise TypeError(
            "Pipeline: py_callback_pickler must be a module or object with dumps() and "
            "loads() (pickle, dill, cloudpickle), or a tuple (pickler, dumps_kwargs, "
            f"loads_kwargs); got {value!r}"
        )
    return value


def _per_output(name: str, value: Any, check: Callable[[Any], Any]) -> Any:
    """A single value (broadcast to every output) or a list with None as a wildcard."""
    if isinstance(value, (list, tuple)):
        return [None if v is None else check(v) for v in value]
    return check(value)


def _dtype(value: Any) -> np.dtype:
    if isinstance(value, (str, bool, int, float)) and not isinstance(value, DALIDataType):
        raise TypeError(f"Pipeline: output_dtype must be types.DALIDataType values, got {value!r}")
    return to_dtype(value)


def _ndim(value: Any) -> int:
    return _int("output_ndim", value, 0)


def _device_id(value: Any) -> int | None:
    value = _int("device_id", value)
    return None if value < 0 else value


def _on_error(value: Any) -> str:
    value = getattr(value, "value", value)
    if value not in ("raise", "skip", "warn"):
        raise ValueError(f"Pipeline: on_error must be 'raise', 'skip' or 'warn', got {value!r}")
    return value


def _ratio(value: Any) -> float:
    if not isinstance(value, (int, float, np.number)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"Pipeline: max_error_ratio must be in [0, 1], got {value!r}")
    return float(value)


def _start_method(value: Any) -> str:
    if value not in ("fork", "spawn"):
        raise ValueError(f"Pipeline: py_start_method must be 'fork' or 'spawn', got {value!r}")
    return value


def _checkpoint(value: Any) -> str:
    if not isinstance(value, (str, bytes)):
        raise TypeError(
            f"Pipeline: checkpoint must be the string pipe.checkpoint() returned, got {value!r}"
        )
    return value.decode() if isinstance(value, bytes) else value


def _fallback(value: Any) -> bool:
    return _bool("device_fallback", value)


_CHECKS: dict[str, Callable[[Any], Any]] = {
    "batch_size": lambda v: _int("batch_size", v, 1),
    "num_threads": lambda v: _int("num_threads", v),
    "device_id": _device_id,
    "seed": lambda v: _int("seed", v),
    "exec_pipelined": lambda v: _bool("exec_pipelined", v),
    "prefetch_queue_depth": _prefetch,
    "exec_async": lambda v: _bool("exec_async", v),
    "bytes_per_sample": lambda v: _int("bytes_per_sample", v, 0),
    "set_affinity": lambda v: _bool("set_affinity", v),
    "max_streams": lambda v: _int("max_streams", v, -1),
    "default_cuda_stream_priority": lambda v: _int("default_cuda_stream_priority", v),
    "enable_memory_stats": lambda v: _bool("enable_memory_stats", v),
    "enable_checkpointing": lambda v: _bool("enable_checkpointing", v),
    "checkpoint": _checkpoint,
    "py_num_workers": lambda v: _int("py_num_workers", v, 0),
    "py_start_method": _start_method,
    "py_callback_pickler": _pickler,
    "output_dtype": lambda v: _per_output("output_dtype", v, _dtype),
    "output_ndim": lambda v: _per_output("output_ndim", v, _ndim),
    "exec_dynamic": lambda v: _bool("exec_dynamic", v),
    "experimental_exec_dynamic": lambda v: _bool("experimental_exec_dynamic", v),
    "on_error": _on_error,
    "max_error_ratio": _ratio,
    "max_error_entries": lambda v: _int("max_error_entries", v, 0),
    "device_fallback": _fallback,
}


def check_options(given: Mapping[str, Any]) -> dict[str, Any]:
    """Every constructor argument, checked: ``given`` over the defaults (None = default)."""
    for name in given:
        if name not in DEFAULTS:
            raise unknown_argument("Pipeline", name, list(DEFAULTS))
    options: dict[str, Any] = {}
    for name, default in DEFAULTS.items():
        value = given.get(name)
        if value is None:
            value = default
        options[name] = None if value is None else _CHECKS[name](value)
    if options["batch_size"] is None or options["batch_size"] < 1:
        raise ValueError(
            f"Pipeline: batch_size must be a positive integer, got {given.get('batch_size')!r}"
        )
    if options["py_callback_pickler"] is not None and options["py_start_method"] == "fork":
        raise ValueError(
            "Pipeline: py_callback_pickler applies to py_start_method='spawn' only; "
            "with 'fork' the callbacks are not pickled"
        )
    depth = given.get("prefetch_queue_depth")
    if isinstance(depth, Mapping) and not options["exec_async"] and not options["exec_pipelined"]:
        raise ValueError(
            "Pipeline: prefetch_queue_depth as a dict (separate CPU and GPU queues) needs "
            "exec_async or exec_pipelined"
        )
    if options["device_fallback"] is None:
        options["device_fallback"] = os.environ.get("CHUTE_DEVICE_FALLBACK", "1") not in (
            "0",
            "false",
            "False",
            "no",
        )
    return options
