"""fn.decoders.inflate on the GPU (one LZ4 kernel launch per batch) against the CPU backend."""

from __future__ import annotations

import numpy as np
import pytest
from misc_helpers import run

from chute import OperatorError, fn

pytestmark = pytest.mark.gpu
lz4_block = pytest.importorskip("lz4.block")

RNG = np.random.default_rng(4)


def lz4(data: np.ndarray) -> np.ndarray:
    return np.frombuffer(lz4_block.compress(data.tobytes(), store_size=False), np.uint8)


def _frames(k: int) -> np.ndarray:
    # runs and noise: literals, short and long matches, overlapping copies
    frames = np.repeat(RNG.integers(0, 4, (k, 40), dtype=np.uint16), 7, axis=1)
    frames[:, ::13] = RNG.integers(0, 60000, frames[:, ::13].shape, dtype=np.uint16)
    return frames.reshape(k, 10, 28)


def test_gpu_equals_cpu_for_chunked_and_single_samples():
    seqs = [_frames(k) for k in (3, 1, 4)]
    packed = [np.concatenate([lz4(f) for f in s]) for s in seqs]
    sizes = [np.array([len(lz4(f)) for f in s], np.int32) for s in seqs]
    singles = [lz4(s[0]) for s in seqs]

    def pipe(device):
        def expr(x, s, one):
            if device == "gpu":
                x, one = x.gpu(), one.gpu()
            seq = fn.decoders.inflate(
                x, shape=[10, 28], dtype=np.uint16, chunk_sizes=s, layout="HW"
            )
            single = fn.decoders.inflate(
                one, shape=[10, 30], dtype=np.uint16
            )  # 40 bytes more than the data: zero-padded
            return seq, single

        return run(expr, packed, sizes, singles, device_id=0)

    gpu, cpu = pipe("gpu"), pipe("cpu")
    for g, c in zip(gpu, cpu):
        assert g.layout() == c.layout()
        for i in range(3):
            np.testing.assert_array_equal(g.at(i), c.at(i))
    np.testing.assert_array_equal(gpu[0].at(2), seqs[2])
    assert (gpu[1].at(0)[-1, -2:] == 0).all()  # zero-padded tail


def test_gpu_malformed_chunk_raises():
    bad = [lz4(np.ones(64, np.uint8)), np.array([0x1F, 7, 9, 0], np.uint8)]
    with pytest.raises(OperatorError, match="sample 1, chunk 0 is malformed LZ4 data"):
        run(lambda x: fn.decoders.inflate(x.gpu(), shape=[64]), bad, device_id=0)
    with pytest.raises(OperatorError, match="inflates to more bytes than fit"):
        run(lambda x: fn.decoders.inflate(x.gpu(), shape=[32]), bad[:1], device_id=0)
