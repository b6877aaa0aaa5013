"""fn.readers.caffe / caffe2: LMDB records decoded by hand, labels, order, shards, resume, errors."""

from __future__ import annotations

import numpy as np
import pytest
from _listed_reader_checks import check_resume, shard_epochs

from chute import OperatorError, fn, pipeline_def
from chute.ops.readers import protowire as pw
from chute.ops.readers.caffe import (
    BYTE,
    FLOAT,
    INT32,
    INT64,
    STRING,
    encode_datum,
    encode_tensor,
    encode_tensor_protos,
    parse_datum,
)

lmdb = pytest.importorskip("lmdb")


def write_lmdb(path, values):
    env = lmdb.open(str(path), map_size=1 << 24)
    with env.begin(write=True) as txn:
        for key, value in values:
            txn.put(key, value)
    env.close()
    return str(path)


def test_protowire_by_hand():
    # Datum{channels: 3, data: "ab", label: -1, encoded: true}
    buf = (
        pw.encode_int(1, 3) + pw.encode_bytes(4, b"ab") + pw.encode_int(5, -1) + pw.encode_int(7, 1)
    )
    assert buf == bytes([0x08, 3, 0x22, 2]) + b"ab" + bytes([0x28]) + b"\xff" * 9 + b"\x01" + bytes(
        [0x38, 1]
    )
    d = parse_datum(buf)
    assert (d["channels"], d["data"], d["label"], d["encoded"]) == (3, b"ab", -1, True)
    assert pw.read_varint(bytes([0xAC, 0x02]), 0) == (300, 2)
    with pytest.raises(pw.WireError, match="says 9 bytes"):
        pw.fields(bytes([0x22, 9]) + b"ab")


def caffe_pipe(path, batch_size=4, **kw):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, seed=2)
    def pipe():
        images, labels = fn.readers.caffe(path=path, name="R", **kw)
        return images, labels

    return pipe()


def test_caffe_encoded_and_raw_images(tmp_path):
    path = write_lmdb(
        tmp_path / "enc",
        [
            (b"00000000", encode_datum(b"\xff\xd8jpeg", label=4, encoded=True)),
            (b"00000001", encode_datum(b"plain", label=-2)),  # no 'encoded' field: encoded
        ],
    )
    images, labels = caffe_pipe(path, batch_size=2).run()
    assert images.at(0).tobytes() == b"\xff\xd8jpeg" and images.at(1).tobytes() == b"plain"
    assert labels.dtype == np.int32 and [int(labels.at(i)[0]) for i in range(2)] == [4, -2]
    raw = np.arange(2 * 3 * 2, dtype=np.uint8)
    path = write_lmdb(
        tmp_path / "raw",
        [(b"0", encode_datum(raw.tobytes(), label=9, encoded=False, shape=(2, 2, 3)))],
    )
    images, labels = caffe_pipe(path, batch_size=1).run()
    # raw data as stored, shaped (height, width, channels) as DALI does
    assert images.at(0).shape == (2, 3, 2) and images.at(0).ravel().tolist() == raw.tolist()
    assert int(labels.at(0)[0]) == 9


def numbered_db(tmp_path, n):
    # keys in LMDB's byte order are the reading order: key i holds label i
    return write_lmdb(
        tmp_path / "db", [(b"%08d" % i, encode_datum(bytes([i]), label=i)) for i in range(n)]
    )


@pytest.mark.parametrize("num_shards", [1, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_caffe_shards_cover_every_record_once(tmp_path, num_shards, shuffle):
    path = numbered_db(tmp_path, 10)
    epochs = shard_epochs(
        lambda s, n: caffe_pipe(path, 3, shard_id=s, num_shards=n, random_shuffle=shuffle),
        ["image", "label"],
        lambda b, i: int(b["label"].at(i)[0]),
        num_shards,
    )
    for per_shard in epochs:
        assert sorted(k for keys in per_shard for k in keys) == list(range(10))
    if not shuffle and num_shards == 1:
        assert epochs[0][0] == list(range(10))


def test_caffe_resume_mid_epoch(tmp_path):
    path = numbered_db(tmp_path, 7)
    check_resume(
        lambda: caffe_pipe(path, 2, random_shuffle=True),
        ["image", "label"],
        lambda b: [int(b["label"].at(i)[0]) for i in range(len(b["label"]))],
    )


def test_caffe_corrupt_record_raises_or_is_skipped(tmp_path):
    path = write_lmdb(
        tmp_path / "db",
        [
            (b"a", encode_datum(b"x", label=1)),
            (b"b", bytes([0x22, 50]) + b"short"),  # says 50 bytes of data, has 5
            (b"c", encode_datum(b"z", label=3)),
        ],
    )
    with pytest.raises((OperatorError, ValueError), match=r"db.*key b'b'.*says 50 bytes"):
        caffe_pipe(path, 3).run()

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, on_error="skip")
    def pipe():
        images, labels = fn.readers.caffe(path=path, name="R")
        return images, labels + 0

    p = pipe()
    _, labels = p.run()
    assert sorted({int(labels.at(i)[0]) for i in range(3)}) == [1, 3]
    (error,) = p.errors()
    assert error["path"].endswith("db:b") and "says 50 bytes" in error["reason"]


def caffe2_record(image, label_tensors, extra=(), bbox=None):
    tensors = [image, *label_tensors, *extra]
    if bbox is not None:
        tensors.append(encode_tensor(INT32, bbox))
    return encode_tensor_protos(tensors)


def caffe2_pipe(path, batch_size, **kw):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, seed=2)
    def pipe():
        out = fn.readers.caffe2(path=path, name="R", **kw)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    return pipe()


def test_caffe2_single_label_extra_inputs_and_bbox(tmp_path):
    raw = np.arange(12, dtype=np.uint8)
    path = write_lmdb(
        tmp_path / "db",
        [
            (
                b"0",
                caffe2_record(
                    encode_tensor(STRING, [b"\xff\xd8enc"]),
                    [encode_tensor(INT32, [7])],
                    [encode_tensor(FLOAT, [0.5, -1.25]), encode_tensor(INT64, [1 << 40])],
                    bbox=[1, 2, 3, 4],
                ),
            ),
            (
                b"1",
                caffe2_record(
                    encode_tensor(STRING, [b"second"]),
                    [encode_tensor(INT32, [-3])],
                    [encode_tensor(FLOAT, [2.0]), encode_tensor(INT64, [-5])],
                ),
            ),
        ],
    )
    image, label, extra_f, extra_i, bbox = caffe2_pipe(
        path, 2, additional_inputs=2, bbox=True
    ).run()
    assert image.at(0).tobytes() == b"\xff\xd8enc"
    assert image.at(1).tobytes() == b"second"
    assert label.dtype == np.int32 and [label.at(i).tolist() for i in range(2)] == [[7], [-3]]
    assert extra_f.at(0).tolist() == [0.5, -1.25] and extra_f.at(1).tolist() == [2.0]
    assert extra_i.dtype == np.int64 and extra_i.at(0).tolist() == [1 << 40]
    assert extra_i.at(1).tolist() == [-5]
    assert bbox.at(0).tolist() == [1, 2, 3, 4] and bbox.at(1).tolist() == []
    path = write_lmdb(
        tmp_path / "raw",
        [(b"0", caffe2_record(encode_tensor(BYTE, raw.tobytes(), dims=(2, 2, 3)), []))],
    )
    (image,) = caffe2_pipe(path, 1, label_type=4).run()
    assert image.at(0).shape == (2, 2, 3) and image.at(0).ravel().tolist() == raw.tolist()


def test_caffe2_multi_label_types(tmp_path):
    image = encode_tensor(STRING, [b"img"])
    path = write_lmdb(
        tmp_path / "sparse",
        [(b"0", caffe2_record(image, [encode_tensor(INT32, [0, 3])]))],
    )
    img, label = caffe2_pipe(path, 1, label_type=1, num_labels=5).run()
    assert label.at(0).tolist() == [1, 0, 0, 1, 0] and label.dtype == np.int32
    path = write_lmdb(
        tmp_path / "weighted",
        [
            (
                b"0",
                caffe2_record(
                    image, [encode_tensor(INT32, [1, 4]), encode_tensor(FLOAT, [0.25, 2.0])]
                ),
            )
        ],
    )
    _, label = caffe2_pipe(path, 1, label_type=3, num_labels=5).run()
    assert label.dtype == np.float32 and label.at(0).tolist() == [0, 0.25, 0, 0, 2.0]
    path = write_lmdb(
        tmp_path / "dense", [(b"0", caffe2_record(image, [encode_tensor(FLOAT, [0.1, 0.9])]))]
    )
    _, label = caffe2_pipe(path, 1, label_type=2).run()
    assert label.at(0).tolist() == pytest.approx([0.1, 0.9])
    (only,) = caffe2_pipe(path, 1, label_type=4).run()  # no label: the image alone
    assert only.at(0).tobytes() == b"img"


def test_caffe2_shards_and_bad_record(tmp_path):
    values = [
        (
            b"%03d" % i,
            caffe2_record(encode_tensor(STRING, [bytes([i])]), [encode_tensor(INT32, [i])]),
        )
        for i in range(8)
    ]
    values[5] = (b"005", b"\x0a\x03\x08")  # a TensorProto cut short
    path = write_lmdb(tmp_path / "db", values)

    def make(shard, shards):
        @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=1, on_error="skip")
        def pipe():
            image, label = fn.readers.caffe2(path=path, name="R", shard_id=shard, num_shards=shards)
            return image, label + 0

        return pipe()

    epochs = shard_epochs(make, ["image", "label"], lambda b, i: int(b["label"].at(i)[0]), 2)
    for per_shard in epochs:
        assert sorted(k for keys in per_shard for k in keys) == [0, 1, 2, 3, 4, 6, 7]
    with pytest.raises((OperatorError, ValueError), match=r"key b'005'.*Caffe2"):
        caffe2_pipe(path, 8).run()
