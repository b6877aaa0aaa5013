"""``@pipeline_def``: a function that wires operators becomes a factory of Pipelines."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from chute.pipeline import Pipeline, _as_tuple
from chute.pipeline.autograph import convert
from chute.pipeline.options import DECORATOR_ONLY, DEFAULTS, closest_name, unknown_argument

if TYPE_CHECKING:  # typing.Unpack from Python 3.11; annotations are not evaluated
    from typing_extensions import Unpack

    from chute.pipeline.options import PipelineArguments

__all__ = ["pipeline_def"]


def pipeline_def(
    fn: Callable | None = None, **pipeline_kwargs: Unpack[PipelineArguments]
) -> Callable:
    """Turn a function that wires operators into a factory of Pipelines.

    Pipeline arguments (batch_size, num_threads, device_id, seed, ... every
    argument of :class:`Pipeline`) may be given to the decorator and overridden
    when calling the factory; the other call arguments go to the function.
    ``debug=True`` gives a pipeline that runs the function eagerly on every
    ``run()`` (see :mod:`chute.debug`). ``enable_conditionals=True`` rewrites the
    function so that ``if`` on a per-sample DataNode runs each branch on its samples
    only (see chute.pipeline.autograph and docs/conditionals.md).
    A misspelled pipeline argument raises a TypeError naming the closest one.
    """
    for name in pipeline_kwargs:
        if name not in DEFAULTS and name not in DECORATOR_ONLY:
            raise unknown_argument("pipeline_def", name, [*DEFAULTS, *DECORATOR_ONLY])
    conditionals_default = bool(pipeline_kwargs.pop("enable_conditionals", False))
    debug_default = pipeline_kwargs.pop("debug", False)

    def decorate(func: Callable) -> Callable:
        sig = inspect.signature(func)
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())

        @functools.wraps(func)
        def create(*args: Any, **kwargs: Any) -> Pipeline:
            debug = debug_default
            if "debug" in kwargs and "debug" not in sig.parameters:
                debug = kwargs.pop("debug")
            conditionals = conditionals_default
            if "enable_conditionals" in kwargs and "enable_conditionals" not in sig.parameters:
                conditionals = bool(kwargs.pop("enable_conditionals"))
            ctor = {k: kwargs.pop(k) for k in list(kwargs) if k in DEFAULTS}
            if not takes_any:
                for name in kwargs:
                    if name not in sig.parameters and closest_name(name, list(DEFAULTS)):
                        raise unknown_argument(func.__name__, name, list(DEFAULTS))
            if debug and conditionals:
                raise ValueError(
                    f"{func.__name__}: debug=True and enable_conditionals=True together are "
                    "not supported; run the pipeline without debug to use per-sample `if`"
                )
            if debug:  # eager: operators run on each run(), see chute.debug
                from chute.debug import DebugPipeline

                return DebugPipeline(func, args, kwargs, **{**pipeline_kwargs, **ctor})
            pipe = Pipeline(**{**pipeline_kwargs, **ctor})
            body = convert(func, required=True) if conditionals else func
            with pipe:
                outputs = body(*args, **kwargs)
            pipe.set_outputs(*_as_tuple(outputs))
            return pipe

        create.__signature__ = sig  # type: ignore[attr-defined]
        create._is_pipeline_def = True  # type: ignore[attr-defined]  # see do_not_convert
        # the signature shows the function's own arguments; callers that pass pipeline
        # arguments (device_id, ...) to a factory they were given look for this mark
        create.takes_pipeline_args = True  # type: ignore[attr-defined]
        return create

    return decorate(fn) if fn is not None else decorate
