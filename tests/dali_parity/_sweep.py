"""Run one definition under DALI 2.4 and under chute (CPU) and compare the outputs.

A definition ``define(L, x)`` is written once: ``L.fn`` / ``L.types`` are DALI's or chute's
and ``x`` the batch from an ``external_source``, as a ported program differs only by its
imports. The module imports ``nvidia.dali``: test modules import it after
``pytest.importorskip("nvidia.dali")``.
"""

from __future__ import annotations

import dataclasses
import types as pytypes
from collections.abc import Callable
from typing import Any

import numpy as np
import nvidia.dali as dali

import chute

DALI = pytypes.SimpleNamespace(name="dali", lib=dali, fn=dali.fn, types=dali.types)
CHUTE = pytypes.SimpleNamespace(name="chute", lib=chute, fn=chute.fn, types=chute.types)


def photo(h: int, w: int, seed: int, channels: int = 3) -> np.ndarray:
    """A smooth color ramp with noise (edges and flat areas), reproducible."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    planes = [x * 255 / w, y * 255 / h, (x + y) * 127 / (h + w)][:channels]
    image = np.stack(planes, -1) + rng.normal(0, 20, (h, w, channels))
    return np.clip(image, 0, 255).astype(np.uint8)


IMAGES = [photo(40 + 8 * i, 57 - 5 * i, i) for i in range(4)]
FLOATS = [image.astype(np.float32) / 255 for image in IMAGES]


@dataclasses.dataclass(frozen=True)
class Case:
    """A comparison: ``atol`` on all but an ``outliers`` fraction of the elements."""

    name: str
    define: Callable[[Any, Any], Any]
    inputs: list[np.ndarray] = dataclasses.field(default_factory=lambda: IMAGES)
    atol: float = 0
    outliers: float = 0.0
    layout: str | None = "HWC"
    why: str = ""

    def __str__(self) -> str:
        return self.name


def run(impl: Any, case: Case) -> list[list[np.ndarray]]:
    """Per output, the samples ``case.define`` gives under ``impl`` (DALI or CHUTE), on the CPU."""
    samples = case.inputs

    @impl.lib.pipeline_def(batch_size=len(samples), num_threads=1, device_id=None, seed=7)
    def pipe():
        x = impl.fn.external_source(source=lambda: samples, layout=case.layout)
        out = case.define(impl, x)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    p = pipe()
    p.build()
    return [[np.array(batch.at(i)) for i in range(len(batch))] for batch in p.run()]


def compare(case: Case) -> None:
    """Assert that chute's outputs equal DALI's: dtype, shape, values within the tolerance."""
    want_all, got_all = run(DALI, case), run(CHUTE, case)
    assert len(want_all) == len(got_all), f"{case}: {len(got_all)} outputs, DALI {len(want_all)}"
    for k, (want_batch, got_batch) in enumerate(zip(want_all, got_all)):
        for i, (want, got) in enumerate(zip(want_batch, got_batch, strict=True)):
            where = f"{case}: output {k}, sample {i}"
            assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, DALI {want.dtype}"
            assert got.shape == want.shape, f"{where}: shape {got.shape}, DALI {want.shape}"
            if not got.size:
                continue
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            over = float(np.mean(diff > case.atol))
            assert over <= case.outliers, (
                f"{where}: {over:.2%} of the elements differ by more than {case.atol} "
                f"(max {diff.max():g}, mean {diff.mean():.3g})"
            )


def xfail(case: Case) -> Any:
    """A case that differs on purpose (strict: the day it agrees, the test says so)."""
    import pytest

    return pytest.param(case, id=case.name, marks=pytest.mark.xfail(strict=True, reason=case.why))
