"""chute.runtime.tuning: one frozen Tuning, made current with use(), read when a pipeline builds."""

from __future__ import annotations

import dataclasses
import io
import threading

import numpy as np
import pytest
from PIL import Image

from chute import fn, pipeline_def
from chute.ops.decoders import batch_decode
from chute.runtime import tuning


def _jpeg(seed: int) -> np.ndarray:
    pixels = np.random.default_rng(seed).integers(0, 255, (24, 32, 3), np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "JPEG")
    return np.frombuffer(buf.getvalue(), np.uint8)


@pipeline_def(batch_size=8, num_threads=2, seed=1, device_id=None)
def decode_pipe():
    x = fn.external_source(source=lambda info: _jpeg(info.idx_in_epoch), batch=False)
    return fn.decoders.image(x)


def test_defaults_are_the_measured_values_and_frozen():
    t = tuning.current()
    assert t is tuning.DEFAULTS
    assert (t.gpu_lanes, t.cpu_lanes, t.hw_load, t.max_decoders) == (2, 2, 1.0, 1)
    assert (t.read_processes, t.max_chunk, t.switch_interval) == (2, 8, 0.0002)
    assert dict(t.decoder_options) == {}
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.gpu_lanes = 3
    given = {"hw_roi": False}
    t2 = tuning.Tuning(decoder_options=given)
    given["hw_roi"] = True  # the caller's dict is copied, and the copy is read-only
    assert t2.decoder_options == {"hw_roi": False}
    with pytest.raises(TypeError):
        t2.decoder_options["x"] = 1
    assert t2.replace(max_chunk=4).max_chunk == 4 and t2.max_chunk == 8


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"gpu_lanes": 0}, "gpu_lanes"),
        ({"cpu_lanes": 1.5}, "cpu_lanes"),
        ({"max_chunk": 0}, "max_chunk"),
        ({"read_processes": -1}, "read_processes"),
        ({"hw_load": 1.5}, "hw_load"),
        ({"switch_interval": 0}, "switch_interval"),
    ],
)
def test_bad_values_raise_naming_the_field(change, fragment):
    with pytest.raises(ValueError, match=fragment):
        tuning.Tuning(**change)


def test_use_nests_restores_and_stays_in_its_thread():
    outer, inner = tuning.Tuning(gpu_lanes=3), tuning.Tuning(gpu_lanes=4)
    seen = []
    with tuning.use(outer):
        with tuning.use(inner):
            assert tuning.current() is inner
            worker = threading.Thread(target=lambda: seen.append(tuning.current()))
            worker.start()
            worker.join()
        assert tuning.current() is outer
    assert tuning.current() is tuning.DEFAULTS
    assert seen == [tuning.DEFAULTS]  # another thread keeps its own
    with pytest.raises(RuntimeError), tuning.use(outer):
        raise RuntimeError("left by an error")
    assert tuning.current() is tuning.DEFAULTS
    with pytest.raises(TypeError, match="Tuning"), tuning.use({"gpu_lanes": 3}):
        pass


def test_a_pipeline_keeps_the_tuning_it_was_built_with(monkeypatch):
    """Lanes and the CPU decoders' chunks come from the Tuning at build, not at run time."""
    sizes = []
    real = batch_decode.chunk_sizes
    monkeypatch.setattr(
        batch_decode, "chunk_sizes", lambda n, t, m: sizes.append(m) or real(n, t, m)
    )
    tuned = decode_pipe()
    with tuning.use(tuning.Tuning(cpu_lanes=3, max_chunk=1)):
        tuned.build()
    assert tuned._executor.lanes == 3
    (a,) = tuned.run()  # run outside the with block, on the executor's threads
    a = [np.array(a.at(i)) for i in range(8)]
    tuned.close()  # stops its prefetching before the other pipeline runs
    assert set(sizes) == {1}
    sizes.clear()
    plain = decode_pipe()
    plain.build()
    assert plain._executor.lanes == tuning.DEFAULTS.cpu_lanes
    (b,) = plain.run()
    plain.close()
    assert set(sizes) == {8}
    for i in range(8):  # the tuning changes how the work is cut, never the pixels
        np.testing.assert_array_equal(a[i], np.asarray(b.at(i)))


def test_chunk_sizes_cover_the_batch_within_max_chunk():
    for n, threads, max_chunk in [(256, 16, 8), (10, 3, 8), (7, 16, 2), (1, 4, 8)]:
        sizes = batch_decode.chunk_sizes(n, threads, max_chunk)
        assert sum(sizes) == n and max(sizes) <= max_chunk and min(sizes) >= 1
