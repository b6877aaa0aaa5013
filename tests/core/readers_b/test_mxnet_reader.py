"""fn.readers.mxnet: RecordIO bytes, labels, order, shards, shuffle_after_epoch, resume, bad records."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from _listed_reader_checks import check_resume, shard_epochs

from chute import OperatorError, fn, pipeline_def
from chute.ops.readers.mxnet import MAGIC, encode_image_record, encode_record


def write_rec(tmp_path, payloads, name="data"):
    """A .rec of records with ``payloads`` (bytes of each record's data) and its .idx."""
    rec, idx = tmp_path / f"{name}.rec", tmp_path / f"{name}.idx"
    offsets, blob = [], b""
    for data in payloads:
        offsets.append(len(blob))
        blob += encode_record(data)
    rec.write_bytes(blob)
    idx.write_text("".join(f"{k}\t{o}\n" for k, o in enumerate(offsets)))
    return str(rec), str(idx), offsets


def images(n):
    # image i: bytes [i, i+1, ...] of length 3 + i % 4; label 10 * i
    return [bytes((i + j) % 256 for j in range(3 + i % 4)) for i in range(n)]


def test_one_record_matches_hand_computed_bytes():
    data = encode_image_record(b"\xff\xd8ab", 7.0, record_id=3)
    header = struct.pack("<I", 0) + struct.pack("<f", 7.0) + (3).to_bytes(8, "little") + bytes(8)
    assert data == header + b"\xff\xd8ab"
    rec = encode_record(data)
    # magic 0xced7230a little-endian, lrecord = cflag 0 | length 28, data, no padding (28 % 4 == 0)
    assert rec[:8] == bytes([0x0A, 0x23, 0xD7, 0xCE, 28, 0, 0, 0])
    assert rec[8:] == data
    odd = encode_record(b"abcde")
    assert odd == bytes([0x0A, 0x23, 0xD7, 0xCE, 5, 0, 0, 0]) + b"abcde\0\0\0"
    # data holding the magic is split: start (cflag 1) and end (cflag 3) parts
    split = encode_record(b"xy" + struct.pack("<I", MAGIC) + b"z")
    assert split == (
        bytes([0x0A, 0x23, 0xD7, 0xCE, 2, 0, 0, 0x20])
        + b"xy\0\0"
        + bytes([0x0A, 0x23, 0xD7, 0xCE, 1, 0, 0, 0x60])
        + b"z\0\0\0"
    )


def reader_pipe(rec, idx, batch_size=3, **kw):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, seed=3)
    def pipe():
        data, label = fn.readers.mxnet(path=[rec], index_path=[idx], name="R", **kw)
        return data, label

    return pipe()


def test_values_and_order_and_multi_labels(tmp_path):
    payloads = [encode_image_record(img, 10.0 * i) for i, img in enumerate(images(4))]
    payloads.append(encode_image_record(b"\x01\x02" + struct.pack("<I", MAGIC), [1.5, 2.5, 3.5]))
    rec, idx, _ = write_rec(tmp_path, payloads)
    p = reader_pipe(rec, idx, batch_size=5)
    data, label = p.run()
    for i, img in enumerate(images(4)):
        assert data.at(i).tobytes() == img
        assert label.at(i).dtype == np.float32 and label.at(i).tolist() == [10.0 * i]
    assert data.at(4).tobytes() == b"\x01\x02" + struct.pack("<I", MAGIC)  # split record joined
    assert label.at(4).tolist() == [1.5, 2.5, 3.5]
    assert p.reader_meta("R")["epoch_size"] == 5
    p.close()


@pytest.mark.parametrize("num_shards", [1, 2, 3])
@pytest.mark.parametrize("shuffle", ["none", "random_shuffle", "shuffle_after_epoch"])
def test_shards_cover_every_record_once_per_epoch(tmp_path, num_shards, shuffle):
    n = 11
    payloads = [encode_image_record(img, float(i)) for i, img in enumerate(images(n))]
    rec, idx, _ = write_rec(tmp_path, payloads)
    kw = {} if shuffle == "none" else {shuffle: True}

    def make(shard, shards):
        return reader_pipe(rec, idx, batch_size=2, shard_id=shard, num_shards=shards, **kw)

    epochs = shard_epochs(
        make, ["data", "label"], lambda b, i: int(b["label"].at(i)[0]), num_shards
    )
    for per_shard in epochs:
        assert sorted(k for keys in per_shard for k in keys) == list(range(n))
    first = [k for keys in epochs[0] for k in keys]
    if shuffle in ("none", "shuffle_after_epoch"):
        assert first == list(range(n))  # the first epoch in file order
    if shuffle == "shuffle_after_epoch":
        assert [k for keys in epochs[1] for k in keys] != list(range(n))
    if shuffle == "none" and num_shards == 2:
        # stick_to_shard=False: shards rotate, shard 0 reads the second half in epoch 1
        assert epochs[0][0] == list(range(5)) and epochs[1][0] == list(range(5, 11))


def test_resume_mid_epoch(tmp_path):
    payloads = [encode_image_record(img, float(i)) for i, img in enumerate(images(7))]
    rec, idx, _ = write_rec(tmp_path, payloads)
    check_resume(
        lambda: reader_pipe(rec, idx, batch_size=2, random_shuffle=True),
        ["data", "label"],
        lambda b: [b["label"].at(i).tolist() for i in range(len(b["label"]))],
    )


def test_truncated_record_names_file_and_offset(tmp_path):
    payloads = [encode_image_record(img, float(i)) for i, img in enumerate(images(4))]
    rec, idx, offsets = write_rec(tmp_path, payloads)
    blob = Path(rec).read_bytes()
    # record 2 claims more bytes than the file holds before record 3
    bad = bytearray(blob)
    struct.pack_into("<I", bad, offsets[2] + 4, 500)
    Path(rec).write_bytes(bytes(bad))
    p = reader_pipe(rec, idx, batch_size=4)
    with pytest.raises(
        (OperatorError, ValueError), match=rf"data\.rec.*offset {offsets[2]}.*500 bytes"
    ):
        p.run()
    p.close()

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, on_error="skip")
    def skipping():
        data, label = fn.readers.mxnet(path=[rec], index_path=[idx], name="R")
        return data, label * 1.0  # a CPU step: the engine handles the skips there

    p = skipping()
    data, label = p.run()
    assert sorted({float(label.at(i)[0]) for i in range(len(label))}) == [0.0, 1.0, 3.0]
    assert p.last_batch_meta()[3]["real"] is False
    (error,) = p.errors()
    assert error["path"].endswith(f"data.rec@{offsets[2]}") and "500 bytes" in error["reason"]
    p.close()


def test_bad_magic_and_bad_index_line(tmp_path):
    rec, idx, offsets = write_rec(tmp_path, [encode_image_record(b"ab", 1.0)] * 2)
    bad = bytearray(Path(rec).read_bytes())
    bad[offsets[1]] ^= 0xFF
    Path(rec).write_bytes(bytes(bad))
    p = reader_pipe(rec, idx, batch_size=2)
    with pytest.raises((OperatorError, ValueError), match=rf"offset {offsets[1]}.*bad magic"):
        p.run()
    with open(idx, "a") as f:
        f.write("oops\n")
    with pytest.raises(ValueError, match=r"data\.idx.* line 3"):
        reader_pipe(rec, idx).build()
