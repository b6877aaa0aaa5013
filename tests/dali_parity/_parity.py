"""Run one pipeline definition under DALI and under chute, and compare what they give.

A definition is a function ``define(lib, x)`` written once for both: ``lib.fn``,
``lib.types`` and ``lib.math`` are DALI's or chute's, and ``x`` is the batch given
(an ``external_source``), so that the code under test differs only by its imports,
as a ported program does. Both run on the CPU (``device_id=None``), batch size 4.
"""

from __future__ import annotations

import dataclasses
import io
import types as pytypes
from collections.abc import Callable
from typing import Any

import numpy as np
import nvidia.dali as dali
import nvidia.dali.math
from PIL import Image

import chute
import chute.math

DALI = pytypes.SimpleNamespace(
    name="dali", lib=dali, fn=dali.fn, types=dali.types, math=nvidia.dali.math
)
CHUTE = pytypes.SimpleNamespace(
    name="chute", lib=chute, fn=chute.fn, types=chute.types, math=chute.math
)
BATCH = 4


def photo_like(h: int, w: int, seed: int) -> np.ndarray:
    """A smooth RGB ramp with noise: edges and flat areas, like a photo, reproducible."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    image = np.stack([x * 255 / w, y * 255 / h, (x + y) * 127 / (h + w)], -1)
    return np.clip(image + rng.normal(0, 20, image.shape), 0, 255).astype(np.uint8)


IMAGES = [photo_like(40 + 8 * i, 56 - 4 * i, i) for i in range(BATCH)]
FLOAT_IMAGES = [image.astype(np.float32) / 255 for image in IMAGES]


def encoded(image: np.ndarray, fmt: str, **options: Any) -> np.ndarray:
    """``image`` encoded by Pillow as ``fmt`` (the bytes both decoders get)."""
    out = io.BytesIO()
    Image.fromarray(image).save(out, fmt, **options)
    return np.frombuffer(out.getvalue(), np.uint8)


@dataclasses.dataclass(frozen=True)
class Case:
    """One comparison and its tolerance: ``atol`` on every element, except at most an
    ``outliers`` fraction of them; ``rtol`` relative; equal dtypes and shapes always."""

    name: str
    define: Callable[[Any, Any], Any]
    inputs: list[np.ndarray] = dataclasses.field(default_factory=lambda: IMAGES)
    atol: float = 0
    rtol: float = 0
    outliers: float = 0.0
    layout: str | None = "HWC"
    why: str = ""  # where the results are not equal: the reason


def run(impl: Any, case: Case) -> list[list[np.ndarray]]:
    """The case's outputs under ``impl`` (DALI or CHUTE): per output, the samples as arrays."""
    samples = case.inputs

    @impl.lib.pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, seed=1)
    def pipe():
        x = impl.fn.external_source(source=lambda: samples, layout=case.layout)
        out = case.define(impl, x)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    p = pipe()
    p.build()
    return [[np.array(batch.as_cpu().at(i)) for i in range(len(batch))] for batch in p.run()]


def compare(case: Case) -> None:
    """Assert that chute's outputs equal DALI's within the case's tolerance."""
    expected, got = run(DALI, case), run(CHUTE, case)
    assert len(expected) == len(got), f"{case.name}: {len(expected)} outputs vs {len(got)}"
    for k, (want_batch, got_batch) in enumerate(zip(expected, got)):
        for i, (want, have) in enumerate(zip(want_batch, got_batch, strict=True)):
            where = f"{case.name}: output {k}, sample {i}"
            assert have.dtype == want.dtype, f"{where}: dtype {have.dtype}, DALI's {want.dtype}"
            assert have.shape == want.shape, f"{where}: shape {have.shape}, DALI's {want.shape}"
            if have.dtype.kind in "US" or not have.size:
                assert np.array_equal(have, want), where
                continue
            diff = np.abs(have.astype(np.float64) - want.astype(np.float64))
            allowed = case.atol + case.rtol * np.abs(want.astype(np.float64))
            over = float(np.mean(diff > allowed))
            assert over <= case.outliers, (
                f"{where}: {over:.2%} of the elements differ by more than the tolerance "
                f"(max |diff| {diff.max():g}, mean {diff.mean():.3g})"
            )
