"""DALI 2.4 and chute read the same files in the same order (random_shuffle=False), shards too.

Run where ``nvidia-dali-cuda130==2.4.0`` installs (its CPU readers need no GPU), e.g.
``nox -s dali_parity`` or, by hand::

    python3 -m venv /tmp/dalivenv && /tmp/dalivenv/bin/pip install nvidia-dali-cuda130==2.4.0 \\
        numpy pillow opencv-python-headless simplejpeg tqdm pytest
    PYTHONPATH=core/src /tmp/dalivenv/bin/python -m pytest -q tests/dali_parity

Each reader reads 11 samples, written here, as one shard of several. Compared:

- ``reader_meta``: epoch_size, epoch_size_padded, number_of_shards, shard_id;
- the first epoch: the shard's samples, in order;
- with ``pad_last_batch=True``: every batch of three epochs, padding included, shards
  rotating between epochs (or not, with ``stick_to_shard``).

Where they differ by design (without ``pad_last_batch``, DALI's reader runs on past the
end of an epoch: it fills the last batch with the following samples and starts the next
epoch where it stopped, while chute starts every epoch at the shard's first sample and
fills the last batch from the shard's start; see chute.ops.readers.sharding), only the
first epoch is compared.
"""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest

dali = pytest.importorskip("nvidia.dali")
from _harness import CHUTE, DALI, build  # noqa: E402

from chute import tfrecord as chute_tfrec  # noqa: E402
from chute.ops.readers.mxnet import encode_image_record, encode_record  # noqa: E402

N = 11
CLASSES = {"ant": 3, "bee": 4, "cat": 4}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The same 11 samples as loose files, .npy files, a TFRecord, tar shards and RecordIO."""
    root = tmp_path_factory.mktemp("parity")
    k = 0
    for cls, count in CLASSES.items():
        (root / "files" / cls).mkdir(parents=True)
        for i in range(count):
            (root / "files" / cls / f"{i}.jpg").write_bytes(f"{cls}{i}".encode())
            k += 1
    (root / "npy" / "sub").mkdir(parents=True)
    for i in range(N):
        folder = root / "npy" / ("sub" if i >= 8 else "")
        np.save(folder / f"{i:02d}.npy", np.full((2,), i, np.int32))
    examples = [chute_tfrec.encode_example({"id": [i]}) for i in range(N)]
    index = chute_tfrec.write_records(root / "data.tfrecord", examples)
    (root / "data.idx").write_text("".join(f"{o} {s}\n" for o, s in index))
    for shard, ids in (("a", range(6)), ("b", range(6, N))):
        with tarfile.open(root / f"{shard}.tar", "w", format=tarfile.GNU_FORMAT) as tar:
            for i in ids:
                for ext, blob in (("jpg", bytes([i]) * (i + 1)), ("cls", str(i).encode())):
                    info = tarfile.TarInfo(f"s{i:02d}.{ext}")
                    info.size = len(blob)
                    tar.addfile(info, io.BytesIO(blob))
    blob, offsets = b"", []
    for i in range(N):
        offsets.append(len(blob))
        blob += encode_record(encode_image_record(bytes([i]) * (i + 2), float(i)))
    (root / "data.rec").write_bytes(blob)
    (root / "data.rec.idx").write_text("".join(f"{k}\t{o}\n" for k, o in enumerate(offsets)))
    return root


def _file(L, root, **kw):
    return L.fn.readers.file(file_root=str(root / "files"), name="R", **kw)


def _numpy(L, root, **kw):
    return (L.fn.readers.numpy(file_root=str(root / "npy"), name="R", **kw),)


def _tfrecord(L, root, **kw):
    out = L.fn.readers.tfrecord(
        path=str(root / "data.tfrecord"),
        index_path=str(root / "data.idx"),
        features={"id": L.tfrecord.FixedLenFeature([1], L.tfrecord.int64, -1)},
        name="R",
        **kw,
    )
    return (out["id"],)


def _webdataset(L, root, **kw):
    paths = [str(root / "a.tar"), str(root / "b.tar")]
    return L.fn.readers.webdataset(paths=paths, ext=["jpg", "cls"], name="R", **kw)


def _mxnet(L, root, **kw):
    return L.fn.readers.mxnet(
        path=[str(root / "data.rec")], index_path=[str(root / "data.rec.idx")], name="R", **kw
    )


READERS = {
    "file": _file,
    "numpy": _numpy,
    "tfrecord": _tfrecord,
    "webdataset": _webdataset,
    "mxnet": _mxnet,
}

SHARDS = [
    {},
    {"shard_id": 1, "num_shards": 3},
    {"shard_id": 2, "num_shards": 3, "stick_to_shard": True},
    {"shard_id": 1, "num_shards": 3, "pad_last_batch": True},
    {"shard_id": 0, "num_shards": 2, "pad_last_batch": True},
    {"shard_id": 2, "num_shards": 3, "pad_last_batch": True, "stick_to_shard": True},
]


def _key(sample: np.ndarray) -> bytes:
    return np.ascontiguousarray(sample).tobytes()


def read(impl, reader, root, batch_size: int, iterations: int, **kw):
    """(samples of ``iterations`` batches, each a tuple of its outputs' bytes; reader_meta)."""
    p = build(impl, lambda L: reader(L, root, random_shuffle=False, **kw), batch_size)
    batches = []
    for _ in range(iterations):
        try:
            outs = p.run()
        except StopIteration:  # chute's end of an epoch
            p.reset()
            outs = p.run()
        batches.append([tuple(_key(np.asarray(o[k])) for o in outs) for k in range(len(outs[0]))])
    meta = p.reader_meta("R")
    return batches, {
        k: int(meta[k]) for k in ("epoch_size", "epoch_size_padded", "number_of_shards", "shard_id")
    }


def _shard_size(kw: dict) -> int:
    shards, i = kw.get("num_shards", 1), kw.get("shard_id", 0)
    return (i + 1) * N // shards - i * N // shards


@pytest.mark.parametrize("batch_size", [3, 4])
@pytest.mark.parametrize(
    "shards", SHARDS, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()) or "one"
)
@pytest.mark.parametrize("name", list(READERS))
def test_sample_order_matches_dali(data, name, shards, batch_size):
    size = _shard_size(shards)
    per_epoch = -(-size // batch_size)
    epochs = 3 if shards.get("pad_last_batch") else 1
    args = (READERS[name], data, batch_size, per_epoch * epochs)
    dali_batches, dali_meta = read(DALI, *args, **shards)
    chute_batches, chute_meta = read(CHUTE, *args, **shards)
    assert chute_meta == dali_meta
    if shards.get("pad_last_batch"):
        assert chute_batches == dali_batches
    else:
        first = [s for b in chute_batches for s in b][:size]
        assert len(first) == size
        assert first == [s for b in dali_batches for s in b][:size]


# ---- fn.experimental.readers.video (MJPEG: DALI's CPU backend decodes it) -------------------


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    """MJPEG AVIs of 20, 12 and 3 frames at 25 fps; frame i bright in columns 8i..8i+7."""
    av = pytest.importorskip("av")
    root = tmp_path_factory.mktemp("parity_video")
    for name, frames in (("a.avi", 20), ("b.avi", 12), ("c.avi", 3)):
        with av.open(str(root / name), "w") as out:
            stream = out.add_stream("mjpeg", rate=25)
            stream.width, stream.height, stream.pix_fmt = 256, 16, "yuvj420p"
            for i in range(frames):
                img = np.full((16, 256, 3), 16, np.uint8)
                img[:, 8 * i : 8 * i + 8] = 235
                out.mux(stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")))
            out.mux(stream.encode())
    (root / "list.txt").write_text(f"{root / 'a.avi'} 3 2 -3\n{root / 'b.avi'} 4 -5 11\n")
    return root


def _frame_ids(video: np.ndarray) -> list[int]:
    rows = video[:, 8, :, 0].astype(np.int32)
    return [int(np.argmax(r)) // 8 if r.max() > 128 else -1 for r in rows]


def read_video(impl, samples: int, **kw) -> list[list]:
    p = build(impl, lambda L: L.fn.experimental.readers.video(device="cpu", name="R", **kw), 1)
    rows = []
    for _ in range(samples):
        outs = p.run()
        video, *rest = (np.asarray(o[0]) for o in outs)
        rows.append([_frame_ids(video), *(r.tolist() for r in rest)])
    return rows


@pytest.mark.parametrize(
    "kw",
    [
        {"pad_mode": "constant", "enable_frame_num": "sequence"},
        {"pad_mode": "repeat", "enable_frame_num": "sequence"},
        {"pad_mode": "reflect_101", "enable_frame_num": "sequence"},
        {"pad_mode": "reflect_1001", "enable_frame_num": "sequence"},
        {"pad_mode": "none", "enable_frame_num": "scalar", "stride": 2, "step": 3},
    ],
    ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()),
)
def test_video_sequences_and_padding_match_dali(videos, kw):
    files = [str(videos / "b.avi")]
    ours = read_video(CHUTE, 3, filenames=files, sequence_length=5, **kw)
    assert ours == read_video(DALI, 3, filenames=files, sequence_length=5, **kw)


def test_video_uniform_sample_matches_dali(videos):
    kw = {
        "filenames": [str(videos / n) for n in ("a.avi", "b.avi", "c.avi")],
        "labels": [7, 8, 9],
        "sequence_length": 5,
        "uniform_sample": True,
        "enable_frame_num": "sequence",
    }
    ours = read_video(CHUTE, 3, **kw)
    assert ours[2][0] == [0, 1, 1, 2, 2]
    assert ours == read_video(DALI, 3, **kw)


@pytest.mark.parametrize("include_end", [True, False])
def test_video_file_list_frame_ranges_match_dali(videos, include_end):
    kw = {
        "file_list": str(videos / "list.txt"),
        "file_list_format": "frames",
        "file_list_include_end": include_end,
        "sequence_length": 4,
        "enable_frame_num": "scalar",
    }
    ours = read_video(CHUTE, 4, **kw)
    assert [r[2] for r in ours] == [[2], [6], [10], [7]]
    assert ours == read_video(DALI, 4, **kw)
