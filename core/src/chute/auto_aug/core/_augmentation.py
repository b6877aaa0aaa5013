"""Augmentation: a transformation whose parameter comes from a magnitude bin.

An augmentation is a function ``op(data, parameter, **extra)`` made of chute operators,
wrapped with how its parameter is found: ``magnitudes = linspace(*mag_range,
num_magnitude_bins)`` (or an explicit array), the bin's magnitude, negated per sample
when ``randomly_negate`` and the sample's random sign is 1, then ``mag_to_param``. All
the parameters of all bins (and both signs) are computed once at trace time into a
constant table; each sample looks its own up with its bin (a per-sample index).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from chute import fn, types
from chute.auto_aug.core._args import (
    MissingArgException,
    accepted_kwargs,
    missing_kwargs,
    num_positional_args,
)
from chute.graph import DataNode
from chute.pipeline.autograph import convert


class _Unset:
    """Default of :meth:`Augmentation.augmentation`'s arguments: keep the current value."""


class _SignedMagnitudeBin:
    """A magnitude bin and a random sign per sample, drawn before any per-sample split.

    ``signed_magnitude_idx = 2 * bin + sign`` indexes the table of signed parameters
    (``[+m0, -m0, +m1, -m1, ...]``).
    """

    def __init__(self, magnitude_bin: Any, random_sign: Any, signed_magnitude_idx: Any):
        self._magnitude_bin = magnitude_bin
        self._random_sign = random_sign
        self._signed_magnitude_idx = signed_magnitude_idx

    @classmethod
    def create_from_bin(
        cls,
        magnitude_bin: int | DataNode,
        random_sign: DataNode | None = None,
        seed: int | None = None,
        shape: tuple[int, ...] | None = None,
    ) -> _SignedMagnitudeBin:
        if isinstance(magnitude_bin, bool) or not isinstance(magnitude_bin, (int, DataNode)):
            raise TypeError(
                "The `magnitude_bin` must be an int or a DataNode (an operator's output or "
                "`types.Constant`) of ints from `[0, num_magnitude_bins - 1]`, got "
                f"{magnitude_bin!r}."
            )
        if random_sign is not None and (seed is not None or shape is not None):
            raise ValueError("The `random_sign` cannot be given together with `seed` or `shape`.")
        if random_sign is None:
            random_sign = fn.random.uniform(
                values=[0, 1], dtype=types.INT32, seed=seed, shape=shape
            )
        return cls(magnitude_bin, random_sign, 2 * magnitude_bin + random_sign)

    def __getitem__(self, idx: int) -> _SignedMagnitudeBin:
        """The bin of one position of a sequence drawn at once (RandAugment's ``n`` levels)."""
        magnitude_bin = self._magnitude_bin
        if not isinstance(magnitude_bin, int):
            magnitude_bin = magnitude_bin[idx]
        return type(self)(magnitude_bin, self._random_sign[idx], self._signed_magnitude_idx[idx])

    def map_nodes(self, transform: Callable[[DataNode], DataNode]) -> _SignedMagnitudeBin:
        """The same bin with every DataNode passed through ``transform`` (a split)."""

        def apply(x: Any) -> Any:
            return transform(x) if isinstance(x, DataNode) else x

        return type(self)(
            apply(self._magnitude_bin), apply(self._random_sign), apply(self._signed_magnitude_idx)
        )

    @staticmethod
    def _remap_to_signed_magnitudes(magnitudes: Any) -> np.ndarray:
        """``[m0, m1, ...]`` -> ``[m0, -m0, m1, -m1, ...]`` (index ``2 * bin + sign``)."""
        mags = np.asarray(magnitudes)
        return np.stack([mags, -mags], axis=1).reshape(-1)

    @property
    def bin(self) -> Any:
        return self._magnitude_bin

    @property
    def random_sign(self) -> Any:
        return self._random_sign

    @property
    def signed_magnitude_idx(self) -> Any:
        return self._signed_magnitude_idx

    def __repr__(self) -> str:
        return f"signed_bin({self._magnitude_bin!r}, random_sign={self._random_sign!r})"


def signed_bin(
    magnitude_bin: int | DataNode,
    random_sign: DataNode | None = None,
    seed: int | None = None,
    shape: tuple[int, ...] | None = None,
) -> _SignedMagnitudeBin:
    """Combine a magnitude bin with a per-sample random sign (drawn unless given).

    Augmentations declared with ``randomly_negate=True`` negate the magnitude where the
    sign is 1. Drawing the sign once, before the batch is split among augmentations,
    costs one random operator instead of one per augmentation.

    Args:
        magnitude_bin: an int or a DataNode of ints from ``[0, num_magnitude_bins - 1]``.
        random_sign: a DataNode of 0/1 ints; drawn with ``fn.random.uniform`` if not given.
        seed: the seed of the drawn sign.
        shape: the shape of the drawn sign per sample (one sign per position of a sequence).
    """
    return _SignedMagnitudeBin.create_from_bin(magnitude_bin, random_sign, seed, shape)


def _as_param_array(aug: Augmentation, magnitude: Any) -> np.ndarray:
    param = aug.mag_to_param(magnitude)
    if _contains_data_node(param):
        raise TypeError(
            f"The `mag_to_param` of augmentation `{aug.name}` returned a DataNode; it must "
            "return NumPy arrays (or values convertible to them) so that the parameters of "
            "all the magnitudes can be computed once, at definition time. Move the operators "
            f"into the augmentation's function instead. Augmentation: {aug}."
        )
    return np.array(param)


def _contains_data_node(obj: Any) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_contains_data_node(x) for x in obj)
    return isinstance(obj, DataNode)


def _table(params: np.ndarray, index: DataNode, device: str) -> DataNode:
    """Each sample's row of the constant ``params`` (looked up on the CPU)."""
    if params.dtype == np.float64:
        params = params.astype(np.float32)
    elif params.dtype == np.int64:
        params = params.astype(np.int32)
    row = types.Constant(params)[index]
    return row.gpu() if device == "gpu" else row


def _constant(param: np.ndarray, device: str) -> Any:
    if param.dtype == np.float64:
        param = param.astype(np.float32)
    if param.ndim == 0:  # a typed scalar constant: no node, usable on either device
        return types.Constant(param)
    return types.Constant(param, device=device if device == "gpu" else None)


class Augmentation:
    """A transformation made of chute operators, for automatic augmentation policies.

    Made by the :func:`~chute.auto_aug.core.augmentation` decorator; call it with
    ``magnitude_bin`` and ``num_magnitude_bins`` instead of the parameter.
    """

    def __init__(
        self,
        op: Callable[..., DataNode],
        mag_range: Any = None,
        randomly_negate: bool | None = None,
        mag_to_param: Callable[[float], Any] | None = None,
        param_device: str | None = None,
        name: str | None = None,
    ):
        self._op = op
        self._mag_range = mag_range
        self._randomly_negate = randomly_negate
        self._mag_to_param = mag_to_param
        self._param_device = param_device
        self._name = name
        if param_device not in (None, "cpu", "gpu", "auto"):
            raise ValueError(
                f"The `param_device` must be 'cpu', 'gpu' or 'auto', got {param_device!r}."
            )
        if num_positional_args(op) < 2:
            raise TypeError(
                f"The function {op} of an augmentation must take at least two positional "
                "arguments: the batch and the parameter."
            )

    def __repr__(self) -> str:
        config = [f"{k}={v!r}" for k, v in self._get_config().items() if v is not None]
        return f"Augmentation({', '.join([repr(self._op), *config])})"

    def __call__(
        self,
        data: DataNode,
        *,
        magnitude_bin: int | DataNode | _SignedMagnitudeBin | None = None,
        num_magnitude_bins: int | None = None,
        **kwargs: Any,
    ) -> DataNode:
        """Apply the transformation to ``data`` with the parameter of ``magnitude_bin``.

        ``kwargs`` that the function takes by name (``shape``, ``fill_value``, ...) are
        passed on; the others are ignored, so that one set of arguments serves a suite.
        """
        param = self._get_param(magnitude_bin, num_magnitude_bins, self._infer_param_device(data))
        missing = missing_kwargs(self._op, kwargs, 2)
        if missing:
            raise MissingArgException(
                f"The augmentation `{self.name}` needs the named argument(s) "
                f"{', '.join(missing)}, which the call did not give.",
                augmentation=self,
                missing_args=missing,
            )
        # the policies split the batch per sample whether or not the pipeline enables
        # conditionals, so an `if` on a DataNode in one's own augmentation is per sample too
        op = convert(self._op)
        return op(data, param, **accepted_kwargs(self._op, kwargs, 2))

    @property
    def op(self) -> Callable[..., DataNode]:
        return self._op

    @property
    def mag_range(self) -> Any:
        return self._mag_range

    @property
    def mag_to_param(self) -> Callable[[float], Any]:
        return self._mag_to_param or np.array

    @property
    def randomly_negate(self) -> bool:
        return bool(self._randomly_negate)

    @property
    def param_device(self) -> str:
        return self._param_device or "cpu"

    @property
    def name(self) -> str:
        return self._name or self._op.__name__

    def augmentation(
        self,
        mag_range: Any = _Unset,
        randomly_negate: Any = _Unset,
        mag_to_param: Any = _Unset,
        param_device: Any = _Unset,
        name: Any = _Unset,
        augmentation_cls: type[Augmentation] | None = None,
    ) -> Augmentation:
        """A copy of this augmentation (same function) with the given settings changed."""
        config = self._get_config()
        changes = dict(
            mag_range=mag_range,
            randomly_negate=randomly_negate,
            mag_to_param=mag_to_param,
            param_device=param_device,
            name=name,
        )
        config.update({k: v for k, v in changes.items() if v is not _Unset})
        return (augmentation_cls or type(self))(self._op, **config)

    def _get_config(self) -> dict[str, Any]:
        return {
            "mag_range": self._mag_range,
            "mag_to_param": self._mag_to_param,
            "randomly_negate": self._randomly_negate,
            "param_device": self._param_device,
            "name": self._name,
        }

    def _infer_param_device(self, data: Any) -> str:
        if self.param_device != "auto":
            return self.param_device
        return getattr(data, "device", None) or "cpu"

    def _get_magnitudes(self, num_magnitude_bins: int | None) -> np.ndarray | None:
        mag_range = self._mag_range
        if mag_range is None:
            return None
        if isinstance(mag_range, np.ndarray):
            if num_magnitude_bins is not None and len(mag_range) != num_magnitude_bins:
                raise ValueError(
                    f"The augmentation `{self.name}` has {len(mag_range)} explicit magnitudes "
                    f"(`mag_range`), but the call gives num_magnitude_bins={num_magnitude_bins}."
                )
            return mag_range
        if num_magnitude_bins is None:
            raise TypeError(
                f"The call of augmentation `{self.name}` needs `num_magnitude_bins` (with "
                f"`magnitude_bin`). Augmentation: {self}."
            )
        if not hasattr(mag_range, "__len__") or len(mag_range) != 2:
            raise ValueError(
                "The `mag_range` must be a (low, high) pair or an np.ndarray of magnitudes, got "
                f"{mag_range!r} for augmentation `{self.name}`."
            )
        return np.linspace(mag_range[0], mag_range[1], num_magnitude_bins, dtype=np.float32)

    def _map_mags_to_params(self, magnitudes: Any) -> np.ndarray:
        params = [_as_param_array(self, m) for m in magnitudes]
        for param, mag in zip(params[1:], magnitudes[1:]):
            if param.shape != params[0].shape or param.dtype != params[0].dtype:
                raise ValueError(
                    f"The `mag_to_param` of augmentation `{self.name}` must give arrays of one "
                    f"shape and type for every magnitude: {params[0].shape} {params[0].dtype} "
                    f"for {magnitudes[0]}, but {param.shape} {param.dtype} for {mag}."
                )
        return np.array(params)

    def _get_param(self, magnitude_bin: Any, num_magnitude_bins: int | None, device: str) -> Any:
        magnitudes = self._get_magnitudes(num_magnitude_bins)
        if magnitudes is None:
            return None
        if magnitude_bin is None:
            raise TypeError(
                f"The augmentation `{self.name}` has a `mag_range`, so its call needs a "
                f"`magnitude_bin`. Augmentation: {self}."
            )
        if self.randomly_negate and not isinstance(magnitude_bin, _SignedMagnitudeBin):
            warnings.warn(
                f"The augmentation `{self.name}` negates magnitudes at random, but got an "
                "unsigned `magnitude_bin`: it draws the signs itself. Where the batch is split "
                "among several augmentations, call `signed_bin(magnitude_bin)` once before the "
                "split and pass that instead.",
                Warning,
                stacklevel=2,
            )
            magnitude_bin = signed_bin(magnitude_bin)
        if self.randomly_negate:
            if isinstance(magnitude_bin.bin, int):  # one magnitude, two signs
                magnitudes, index = [magnitudes[magnitude_bin.bin]], magnitude_bin.random_sign
            else:
                index = magnitude_bin.signed_magnitude_idx
            signed = _SignedMagnitudeBin._remap_to_signed_magnitudes(magnitudes)
            return _table(self._map_mags_to_params(signed), index, device)
        plain = (
            magnitude_bin.bin if isinstance(magnitude_bin, _SignedMagnitudeBin) else magnitude_bin
        )
        if isinstance(plain, int):
            return _constant(_as_param_array(self, magnitudes[plain]), device)
        return _table(self._map_mags_to_params(magnitudes), plain, device)
