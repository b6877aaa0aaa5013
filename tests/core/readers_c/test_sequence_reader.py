"""fn.readers.sequence on folders of PNG frames written here: sequences, step, stride, shards."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from chute import Iterator, LastBatchPolicy, OperatorError, fn, pipeline_def


def frame(stream: int, i: int, size=(6, 4)) -> np.ndarray:
    """Frame i of a stream: every pixel (stream * 50 + i, i * 10, 255 - i), H x W = size."""
    h, w = size
    img = np.empty((h, w, 3), np.uint8)
    img[...] = (stream * 50 + i, i * 10, 255 - i)
    return img


def write_streams(root, lengths, size=(6, 4)):
    for s, n in enumerate(lengths):
        folder = root / f"stream{s}"
        folder.mkdir(parents=True)
        for i in range(n):
            Image.fromarray(frame(s, i, size)).save(folder / f"{i:05d}.png")
    return str(root)


def make(root, batch_size=2, **kw):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=7)
    def pipe():
        return fn.readers.sequence(file_root=root, name="R", **kw)

    p = pipe()
    p.build()
    return p


def ids(video):
    """(stream, frame) of each frame, read back from the pixel values."""
    return [(int(f[0, 0, 0] - f[0, 0, 1] // 10) // 50, int(f[0, 0, 1]) // 10) for f in video]


def test_sequences_step_stride_and_order(tmp_path):
    root = write_streams(tmp_path / "d", [7, 4, 2])
    p = make(root, batch_size=3, sequence_length=2, step=2, stride=3)
    # span 4: stream0 (7) starts 0, 2; stream1 (4) starts 0; stream2 (2) none
    assert p.epoch_size("R") == 3
    (out,) = p.run()
    assert out.layout() == "FHWC"
    seqs = [np.asarray(out.at(k)) for k in range(3)]
    assert [ids(s) for s in seqs] == [[(0, 0), (0, 3)], [(0, 2), (0, 5)], [(1, 0), (1, 3)]]
    np.testing.assert_array_equal(seqs[0][1], frame(0, 3))
    assert seqs[0].shape == (2, 6, 4, 3) and seqs[0].dtype == np.uint8
    p.close()


def test_image_types(tmp_path):
    root = write_streams(tmp_path / "d", [2])
    bgr = np.asarray(make(root, 1, sequence_length=2, image_type="BGR").run()[0].at(0))
    np.testing.assert_array_equal(bgr[1], frame(0, 1)[..., ::-1])
    gray = np.asarray(make(root, 1, sequence_length=1, image_type="GRAY").run()[0].at(0))
    assert gray.shape == (1, 6, 4, 1)
    r, g, b = (int(v) for v in frame(0, 0)[0, 0])
    assert abs(int(gray[0, 0, 0, 0]) - round(0.299 * r + 0.587 * g + 0.114 * b)) <= 1


@pytest.mark.parametrize("num_shards", [1, 2, 3])
def test_shards_cover_every_sequence_once_per_epoch(tmp_path, num_shards):
    root = write_streams(tmp_path / "d", [5, 3, 4])  # length 2, step 1: 4 + 2 + 3 = 9
    its = [
        Iterator(
            make(
                root, 2, sequence_length=2, shard_id=i, num_shards=num_shards, random_shuffle=True
            ),
            ["x"],
            reader_name="R",
            last_batch_policy=LastBatchPolicy.PARTIAL,
        )
        for i in range(num_shards)
    ]
    assert len({len(it) for it in its}) == 1
    want = sorted(
        [(0, i) for i in range(4)] + [(1, i) for i in range(2)] + [(2, i) for i in range(3)]
    )
    orders = []
    for _ in range(2):
        got = []
        for it in its:
            for (b,) in it:
                got += [ids(np.asarray(b["x"].at(k)))[0] for k in range(b.real)]
            it.reset()
        assert sorted(got) == want
        orders.append(got)
    assert orders[0] != orders[1]  # a new permutation each epoch
    for it in its:
        for p in it.pipelines:
            p.close()


def test_resume_mid_epoch(tmp_path):
    root = write_streams(tmp_path / "d", [6, 5])

    def make_it():
        return Iterator(
            make(root, 2, sequence_length=3, random_shuffle=True),
            ["x"],
            reader_name="R",
            auto_reset=True,
            last_batch_policy=LastBatchPolicy.PARTIAL,
        )

    def take(it, n):
        out = []
        while len(out) < n:
            try:
                (b,) = next(it)
            except StopIteration:
                continue
            out.append([ids(np.asarray(b["x"].at(k))) for k in range(len(b["x"]))])
        return out

    reference = take(make_it(), 8)
    first = make_it()
    head = take(first, 3)
    resumed = make_it()
    resumed.load_state_dict(first.state_dict())
    assert head + take(resumed, 5) == reference


def test_bad_frame_raises_naming_it_or_is_skipped(tmp_path):
    root = write_streams(tmp_path / "d", [2, 2])
    (tmp_path / "d" / "stream1" / "00001.png").write_bytes(b"not an image at all")
    with pytest.raises(OperatorError, match=r"readers\.sequence.*stream1/00001\.png"):
        make(root, 2, sequence_length=2).run()

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, on_error="skip")
    def pipe():
        return fn.readers.sequence(file_root=root, sequence_length=2, name="R")

    p = pipe()
    p.build()
    it = Iterator(p, ["x"], reader_name="R", last_batch_policy=LastBatchPolicy.PARTIAL)
    (b,) = next(it)
    assert b.real == 1 and ids(np.asarray(b["x"].at(0))) == [(0, 0), (0, 1)]
    (error,) = p.errors()
    assert "stream1" in error["path"] and "00001.png" in error["reason"]
    p.close()


def test_frames_of_different_sizes_in_a_sequence_are_refused(tmp_path):
    root = write_streams(tmp_path / "d", [2])
    Image.fromarray(frame(0, 1, (5, 4))).save(tmp_path / "d" / "stream0" / "00001.png")
    with pytest.raises(OperatorError, match="one size"):
        make(root, 1, sequence_length=2).run()


def test_legacy_name_and_argument_checks(tmp_path):
    root = write_streams(tmp_path / "d", [3])
    with pytest.warns(DeprecationWarning):

        @pipeline_def(batch_size=1, num_threads=1, device_id=None)
        def pipe():
            return fn.sequence_reader(file_root=root, sequence_length=3)

        p = pipe()
    p.build()
    assert ids(np.asarray(p.run()[0].at(0))) == [(0, 0), (0, 1), (0, 2)]
    with pytest.raises(ValueError, match="'stride' must be >= 1"):
        make(root, sequence_length=2, stride=0)
    with pytest.raises(OperatorError if False else ValueError, match="no stream"):
        make(root, sequence_length=4)
