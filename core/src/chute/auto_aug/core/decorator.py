"""``@augmentation``: turn a function of chute operators into an :class:`Augmentation`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chute.auto_aug.core._augmentation import Augmentation
from chute.graph import DataNode


def augmentation(
    function: Callable[..., DataNode] | None = None,
    *,
    mag_range: Any = None,
    randomly_negate: bool | None = None,
    mag_to_param: Callable[[float], Any] | None = None,
    param_device: str | None = None,
    name: str | None = None,
    augmentation_cls: type[Augmentation] | None = None,
) -> Any:
    """Make ``function(data, parameter, **extra)`` usable by automatic augmentation policies.

    The decorated augmentation takes ``magnitude_bin`` and ``num_magnitude_bins`` instead
    of the parameter: the parameter is ``mag_to_param(magnitudes[bin] * (-1) ** sign)``
    with ``magnitudes = linspace(mag_range[0], mag_range[1], num_magnitude_bins)``.

    Args:
        function: takes at least two positional arguments, the batch (a DataNode) and the
            parameter, and returns the transformed batch.
        mag_range: ``(low, high)``, or an np.ndarray of the magnitudes themselves. Without
            it the function gets ``None`` as the parameter.
        randomly_negate: negate the magnitude for the samples whose random sign is 1.
        mag_to_param: magnitude -> parameter (NumPy values of one shape and type for all
            magnitudes: they are computed once, when the pipeline is defined).
        param_device: where the parameter table lives: "cpu" (default), "gpu", or "auto"
            (the device of the batch).
        name: the augmentation's name (default: the function's).
        augmentation_cls: a subclass of :class:`Augmentation` to make.

    Usable bare (``@augmentation``) or with arguments (``@augmentation(mag_range=...)``).
    """

    def decorate(func: Callable[..., DataNode]) -> Augmentation:
        return (augmentation_cls or Augmentation)(
            func,
            mag_range=mag_range,
            randomly_negate=randomly_negate,
            mag_to_param=mag_to_param,
            param_device=param_device,
            name=name,
        )

    if function is None:
        return decorate
    if isinstance(function, Augmentation):
        raise TypeError(
            f"`@augmentation` was applied to the augmentation `{function.name}`, which is "
            f"one already: call `{function.name}.augmentation(...)` to change its settings, "
            f"or decorate `{function.name}.op`."
        )
    if not callable(function):
        raise TypeError(f"`@augmentation` decorates functions, got {function!r}.")
    return decorate(function)
