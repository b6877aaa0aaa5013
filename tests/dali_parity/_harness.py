"""Run one pipeline definition under DALI 2.4 and under chute (CPU) and compare the outputs.

A definition ``define(L, x, ...)`` is written once for both: ``L.fn``, ``L.types``,
``L.math`` and ``L.tfrecord`` are DALI's or chute's, and ``x, ...`` the batches given (one
``external_source`` each), so that the code under test differs only by its imports, as a
ported program does. Both run on the CPU (``device_id=None``), one thread, the same seed.

The module imports ``nvidia.dali``: test modules import it after
``pytest.importorskip("nvidia.dali")``.
"""

from __future__ import annotations

import dataclasses
import io
import types as pytypes
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import nvidia.dali as dali
import nvidia.dali.math
import nvidia.dali.tfrecord
import pytest
from PIL import Image

import chute
import chute.math
import chute.tfrecord

DALI = pytypes.SimpleNamespace(
    name="dali",
    lib=dali,
    fn=dali.fn,
    types=dali.types,
    math=nvidia.dali.math,
    tfrecord=nvidia.dali.tfrecord,
)
CHUTE = pytypes.SimpleNamespace(
    name="chute",
    lib=chute,
    fn=chute.fn,
    types=chute.types,
    math=chute.math,
    tfrecord=chute.tfrecord,
)
SEED = 7


def photo(h: int, w: int, seed: int, channels: int = 3) -> np.ndarray:
    """A smooth color ramp with noise (edges and flat areas, like a photo), reproducible."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    planes = [x * 255 / w, y * 255 / h, (x + y) * 127 / (h + w)][:channels]
    image = np.stack(planes, -1) + rng.normal(0, 20, (h, w, channels))
    return np.clip(image, 0, 255).astype(np.uint8)


IMAGES = [photo(40 + 8 * i, 56 - 4 * i, i) for i in range(4)]
FLOAT_IMAGES = [image.astype(np.float32) / 255 for image in IMAGES]


def encoded(image: np.ndarray, fmt: str, **options: Any) -> np.ndarray:
    """``image`` encoded by Pillow as ``fmt`` (the bytes both decoders get)."""
    out = io.BytesIO()
    Image.fromarray(image).save(out, fmt, **options)
    return np.frombuffer(out.getvalue(), np.uint8)


def build(impl: Any, define: Callable[[Any], Any], batch_size: int, seed: int = SEED) -> Any:
    """The built CPU pipeline under ``impl`` (DALI or CHUTE) whose outputs ``define(impl)`` gives."""

    @impl.lib.pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, seed=seed)
    def pipe():
        out = define(impl)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    p = pipe()
    p.build()
    return p


@dataclasses.dataclass(frozen=True)
class Case:
    """One comparison and its tolerance.

    ``define(L, x, *more)`` gets ``inputs`` as ``x`` (with ``layout``) and each batch of
    ``more_inputs`` as a further external_source. Values agree within ``atol`` plus ``rtol``
    times DALI's value on every element, except at most an ``outliers`` fraction of them;
    dtypes and shapes are always equal.
    """

    name: str
    define: Callable[..., Any]
    inputs: list[np.ndarray] = dataclasses.field(default_factory=lambda: IMAGES)
    atol: float = 0
    rtol: float = 0
    outliers: float = 0.0
    layout: str | None = "HWC"
    why: str = ""  # where the results are not equal: the reason
    more_inputs: Sequence[list[np.ndarray]] = ()

    def __str__(self) -> str:
        return self.name


def _constant(batch: list[np.ndarray]) -> Callable[[], list[np.ndarray]]:
    # no parameters: external_source passes an iteration number to a callable that takes one
    return lambda: batch


def run(impl: Any, case: Case) -> list[list[np.ndarray]]:
    """The case's outputs under ``impl`` (DALI or CHUTE): per output, the samples as arrays."""
    batches = [case.inputs, *case.more_inputs]

    def define(L: Any) -> Any:
        x = L.fn.external_source(source=_constant(case.inputs), layout=case.layout)
        more = [L.fn.external_source(source=_constant(b)) for b in case.more_inputs]
        return case.define(L, x, *more)

    outputs = build(impl, define, len(batches[0])).run()
    return [[np.array(batch.as_cpu().at(i)) for i in range(len(batch))] for batch in outputs]


def compare(case: Case) -> None:
    """Assert that chute's outputs equal DALI's: dtype, shape, values within the tolerance."""
    want_all, got_all = run(DALI, case), run(CHUTE, case)
    assert len(want_all) == len(got_all), f"{case}: {len(got_all)} outputs, DALI {len(want_all)}"
    for k, (want_batch, got_batch) in enumerate(zip(want_all, got_all)):
        for i, (want, got) in enumerate(zip(want_batch, got_batch, strict=True)):
            where = f"{case}: output {k}, sample {i}"
            assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, DALI {want.dtype}"
            assert got.shape == want.shape, f"{where}: shape {got.shape}, DALI {want.shape}"
            if got.dtype.kind in "USO" or not got.size:
                assert np.array_equal(got, want), where
                continue
            got64, want64 = got.astype(np.float64), want.astype(np.float64)
            finite = np.isfinite(want64)  # infinities and NaNs: the same ones in both
            assert np.array_equal(got64[~finite], want64[~finite], equal_nan=True), (
                f"{where}: the non-finite values differ from DALI's"
            )
            diff = np.abs(got64[finite] - want64[finite])
            allowed = case.atol + case.rtol * np.abs(want64[finite])
            over = float(np.mean(diff > allowed)) if diff.size else 0.0
            assert over <= case.outliers, (
                f"{where}: {over:.2%} of the elements differ by more than the tolerance "
                f"(max |diff| {diff.max():g}, mean {diff.mean():.3g})"
            )


def param(case: Case) -> Any:
    """The case as a pytest parameter named by the case."""
    return pytest.param(case, id=case.name)


def xfail(case: Case) -> Any:
    """A case that differs on purpose (strict: the day it agrees, the test says so)."""
    return pytest.param(case, id=case.name, marks=pytest.mark.xfail(strict=True, reason=case.why))


def params(table: list) -> list:
    """A table of cases (some already ``xfail``) as pytest parameters."""
    return [param(c) if isinstance(c, Case) else c for c in table]
