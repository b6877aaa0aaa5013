"""on_error="skip" with GPU outputs: the mixed decoders' failed places are filled too.

The GPU twin of test_skip_refill.py: the batches the user gets live on the device
(TensorListGPU), refilled from later batches computed on other streams. Some files are
corrupt (text, a truncated JPEG that the structure walk refuses before the GPU sees it),
one batch fails whole. Each epoch keeps its number of batches, each good sample comes
once, in reader order, with its own pixels; delivered + skipped = files; FILL batches
are full; a checkpoint taken while places are being filled resumes exactly.
"""

from __future__ import annotations

import math
import os

import cv2
import numpy as np
import pytest

from chute import Iterator, LastBatchPolicy, fn, pipeline_def

pytestmark = pytest.mark.gpu

N = 23
BAD = {1, 4, 5, 6, 7, 8, 9, 10, 13, 20, 21}  # a whole batch (4..7), runs across batches, the end
BATCH = 4
GOOD = [i for i in range(N) if i not in BAD]
DECODERS = ("image", "image_crop", "image_slice", "image_random_crop")


def make_files(root, n=N, bad=BAD):
    """16 x 16 grey JPEGs of value 10 * index; bad ones alternate text and a cut JPEG."""
    paths = []
    for i in range(n):
        path = root / f"{i:03d}.jpg"
        data = cv2.imencode(".jpg", np.full((16, 16, 3), 10 * i, np.uint8))[1].tobytes()
        if i in bad:
            data = b"not an image at all" if i % 2 else data[: len(data) // 2]
        path.write_bytes(data)
        paths.append(str(path))
    return paths


def decode(name: str, data):
    if name == "image":
        return fn.decoders.image(data, device="mixed")
    if name == "image_crop":
        return fn.decoders.image_crop(data, device="mixed", crop=(8, 8))
    if name == "image_slice":
        return fn.decoders.image_slice(
            data, device="mixed", rel_start=(0.25, 0.25), rel_shape=(0.5, 0.5)
        )
    return fn.decoders.image_random_crop(data, device="mixed")


def make_pipe(files, decoder="image", pipelined=True):
    @pipeline_def(
        batch_size=BATCH,
        num_threads=2,
        seed=0,
        device_id=0,
        on_error="skip",
        exec_pipelined=pipelined,
    )
    def pipe():
        data, _ = fn.readers.file(files=files, name="R")
        return decode(decoder, data), fn.get_property(data, key="source_info")

    return pipe()


def index_of(path: str) -> int:
    return int(os.path.basename(path)[:3])


def collect(batch) -> list[int]:
    """Indices of the batch's real samples; each image's pixels must be its file's."""
    from chute.tensors.gpu import TensorListGPU

    assert isinstance(batch["image"], TensorListGPU)  # refilled on the device
    images = batch["image"].as_cpu()
    out = []
    for k in range(batch.real):
        i = index_of(str(batch["path"].at(k)))
        pixels = np.asarray(images.at(k)).astype(int)
        assert pixels.ndim == 3 and pixels.shape[2] == 3
        assert np.abs(pixels - 10 * i).max() <= 2, (i, pixels.min(), pixels.max())
        out.append(i)
    return out


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("policy", [LastBatchPolicy.FILL, LastBatchPolicy.PARTIAL])
def test_gpu_outputs_are_refilled_and_epochs_stay_exact(tmp_path, decoder, policy):
    files = make_files(tmp_path)
    p = make_pipe(files, decoder)
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy=policy)
    assert len(it) == math.ceil(N / BATCH)
    for epoch in range(2):
        reals, seen, batches = [], [], 0
        for (b,) in it:
            batches += 1
            reals.append(b.real)
            assert len(b["image"]) == (BATCH if policy is LastBatchPolicy.FILL else b.real)
            seen += collect(b)
        it.reset()
        assert batches == len(it)
        assert seen == GOOD  # each good sample once, in reader order
        full, rest = divmod(len(GOOD), BATCH)
        assert reals == [BATCH] * full + [rest] + [0] * (len(it) - full - 1)
        reported = [e for e in p.errors() if e["epoch"] == epoch]
        assert sorted(index_of(e["path"]) for e in reported) == sorted(BAD)
        assert len(seen) + len(reported) == len(files)  # delivered + skipped = files
    p.close()


def test_gpu_refill_without_pipelining(tmp_path):
    files = make_files(tmp_path)
    p = make_pipe(files, pipelined=False)
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy="fill")
    seen = [i for (b,) in it for i in collect(b)]
    assert seen == GOOD
    assert sorted(index_of(e["path"]) for e in p.errors()) == sorted(BAD)
    p.close()


@pytest.mark.parametrize("after", [1, 2, 3])
def test_gpu_checkpoint_while_filling_resumes_exactly(tmp_path, after):
    files = make_files(tmp_path)
    p = make_pipe(files)
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy="partial")
    first = [collect(next(it)[0]) for _ in range(after)]
    state = it.state_dict()
    p.close()
    q = make_pipe(files)
    it2 = Iterator(q, ["image", "path"], reader_name="R", last_batch_policy="partial")
    it2.load_state_dict(state)
    rest = [collect(b) for (b,) in it2]
    assert len(first) + len(rest) == len(it2)
    assert [i for b in first + rest for i in b] == GOOD
    assert {index_of(e["path"]) for e in p.errors() + q.errors()} == BAD
    q.close()


def test_gpu_a_batch_of_only_bad_files_is_filled_from_the_next(tmp_path):
    files = make_files(tmp_path, 8, {0, 1, 2, 3})
    p = make_pipe(files)
    p.build()
    images, paths = p.run()
    assert [index_of(str(paths.at(k))) for k in range(4)] == [4, 5, 6, 7]
    assert [m["real"] for m in p.last_batch_meta()] == [True] * 4
    host = images.as_cpu()
    assert [round(int(np.asarray(host.at(k))[0, 0, 0]) / 10) for k in range(4)] == [4, 5, 6, 7]
    p.close()
