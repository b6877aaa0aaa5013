"""fn.readers.tfrecord on TFRecord files written here: bytes, features, index, shards, errors."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest
from _reader_checks import check_resume, shard_epochs

from chute import Iterator, LastBatchPolicy, OperatorError, fn, pipeline_def, tfrecord
from chute.ops.readers import tfrecord_format
from chute.tools.cli import main


def bitwise_crc32c(data: bytes) -> int:
    """CRC-32C bit by bit (reflected polynomial 0x82F63B78): independent of chute's table."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUTE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "tfrecord-index"


def test_crc32c_matches_the_standard_check_value():
    assert bitwise_crc32c(b"123456789") == 0xE3069283  # CRC-32C's published check value
    assert tfrecord_format.crc32c(b"123456789") == 0xE3069283
    data = bytes(range(256)) * 3
    assert tfrecord_format.crc32c(data) == bitwise_crc32c(data)
    assert tfrecord_format.masked_crc32c(data) == masked(bitwise_crc32c(data))


def test_writer_bytes_match_a_hand_encoded_record(tmp_path):
    # tf.train.Example {features {feature {key: "a" value {int64_list {value: [1]}}}}}
    int64_list = b"\x0a\x01\x01"  # field 1, packed, 1 byte: varint 1
    feature = b"\x1a\x03" + int64_list  # Feature.int64_list = field 3
    entry = b"\x0a\x01a" + b"\x12\x05" + feature  # map entry: key = 1, value = 2
    example = b"\x0a\x0c" + b"\x0a\x0a" + entry  # Example.features(1) -> Features.feature(1)
    assert len(example) == 14
    assert tfrecord.encode_example({"a": [1]}) == example
    length = struct.pack("<Q", 14)
    expected = (
        length
        + struct.pack("<I", masked(bitwise_crc32c(length)))
        + example
        + struct.pack("<I", masked(bitwise_crc32c(example)))
    )
    index = tfrecord.write_records(tmp_path / "one.tfrecord", [example, example])
    assert (tmp_path / "one.tfrecord").read_bytes() == expected * 2
    assert index == [(0, 30), (30, 30)]


def test_decoder_reads_unpacked_lists_negative_ints_and_skips_unknown_fields():
    minus_two = b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01"  # int64 -2 as a 10-byte varint
    ints = b"\x08" + minus_two + b"\x08\x05"  # unpacked: two (field 1, varint) entries
    floats = b"\x0d" + struct.pack("<f", 1.5) + b"\x0d" + struct.pack("<f", -2.0)
    unknown = b"\x28\x07"  # field 5, varint 7: not part of Feature, skipped
    f_int = b"\x1a" + bytes([len(ints)]) + ints + unknown
    f_float = b"\x12" + bytes([len(floats)]) + floats
    entries = b""
    for name, feat in ((b"i", f_int), (b"f", f_float)):
        entry = b"\x0a\x01" + name + b"\x12" + bytes([len(feat)]) + feat
        entries += b"\x0a" + bytes([len(entry)]) + entry
    example = b"\x0a" + bytes([len(entries)]) + entries
    decoded = tfrecord.decode_example(example)
    assert decoded["i"][0] == 3 and decoded["i"][1].tolist() == [-2, 5]
    assert decoded["f"][0] == 2 and decoded["f"][1].tolist() == [1.5, -2.0]
    assert tfrecord.decode_example(tfrecord.encode_example({"n": [-2, 5]}))["n"][1].tolist() == [
        -2,
        5,
    ]
    with pytest.raises(ValueError, match="runs past"):
        tfrecord.decode_example(example[:-3])


def write_dataset(path, ids, *, with_extra=lambda i: i % 2 == 0):
    payloads = []
    for i in ids:
        features = {
            "label": [i],
            "image": bytes([i % 256]) * (i % 5 + 1),
            "boxes": np.arange(4 * (i % 3), dtype=np.float32) + i,
        }
        if with_extra(i):
            features["weights"] = [float(i), -float(i)]
        payloads.append(tfrecord.encode_example(features))
    return tfrecord.write_records(path, payloads)


FEATURES = {  # deliberately not sorted: outputs follow this order
    "weights": tfrecord.FixedLenFeature([2], tfrecord.float32, 0.25),
    "label": tfrecord.FixedLenFeature([], tfrecord.int64, -1),
    "image": tfrecord.FixedLenFeature((), tfrecord.string, ""),
    "boxes": tfrecord.VarLenFeature([4], tfrecord.float32, 0.0),
}


def run_all(paths, batch_size=4, features=FEATURES, n=None, **kw):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, seed=3)
    def pipe():
        out = fn.readers.tfrecord(path=paths, features=features, name="R", **kw)
        assert list(out) == list(features)  # the dict follows the features' order
        return tuple(out.values())

    p = pipe()
    p.build()
    n = n or p.epoch_size("R")
    rows = []
    while len(rows) < n:
        outs = p.run()
        rows += [[o.at(k) for o in outs] for k in range(len(outs[0]))]
    p.close()
    return rows[:n]


def test_features_values_order_and_defaults(tmp_path):
    write_dataset(tmp_path / "a.tfrecord", range(5))
    write_dataset(tmp_path / "b.tfrecord", range(5, 9))
    rows = run_all([str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")])
    assert len(rows) == 9
    for i, (weights, label, image, boxes) in enumerate(rows):  # file order, record order
        assert label.dtype == np.int64 and label.tolist() == [i]
        assert weights.dtype == np.float32
        assert weights.tolist() == ([float(i), -float(i)] if i % 2 == 0 else [0.25, 0.25])
        assert image.dtype == np.uint8 and image.tobytes() == bytes([i]) * (i % 5 + 1)
        assert boxes.shape == (i % 3, 4)
        np.testing.assert_array_equal(boxes.ravel(), np.arange(4 * (i % 3)) + i)


def test_missing_feature_without_default_names_the_record(tmp_path):
    index = write_dataset(tmp_path / "a.tfrecord", range(3))
    features = {"weights": tfrecord.FixedLenFeature([2], tfrecord.float32)}
    with pytest.raises(OperatorError, match=rf"a.tfrecord' at offset {index[1][0]}.*'weights'"):
        run_all(str(tmp_path / "a.tfrecord"), batch_size=1, features=features, n=3)
    wrong = {"label": tfrecord.FixedLenFeature([3], tfrecord.int64, 0)}
    with pytest.raises(OperatorError, match="holds 1 values, its shape \\[3\\] needs 3"):
        run_all(str(tmp_path / "a.tfrecord"), features=wrong)
    kind = {"label": tfrecord.FixedLenFeature([1], tfrecord.float32, 0.0)}
    with pytest.raises(OperatorError, match="int64_list, the reader expects float_list"):
        run_all(str(tmp_path / "a.tfrecord"), features=kind)


def test_index_files_cli_and_self_index_agree(tmp_path, cache):
    path = tmp_path / "a.tfrecord"
    index = write_dataset(path, range(6))
    assert main(["tfrecord2idx", str(path), str(tmp_path / "a.idx")]) == 0
    text = (tmp_path / "a.idx").read_text()
    assert text == "".join(f"{o} {s}\n" for o, s in index)  # DALI's "offset size" lines
    assert tfrecord.read_index(tmp_path / "a.idx") == index
    with_index = run_all(str(path), index_path=str(tmp_path / "a.idx"))
    without = run_all(str(path))
    assert [[x.tolist() for x in r] for r in with_index] == [
        [x.tolist() for x in r] for r in without
    ]
    assert len(os.listdir(cache)) == 1  # indexed once, kept
    (tmp_path / "bad.idx").write_text("0 30\nzero 12\n")
    with pytest.raises(ValueError, match="bad.idx' line 2"):
        run_all(str(path), index_path=str(tmp_path / "bad.idx"))


def test_self_index_is_redone_when_the_file_changes(tmp_path, cache):
    path = tmp_path / "a.tfrecord"
    write_dataset(path, range(4))
    assert [int(r[1][0]) for r in run_all(str(path))] == [0, 1, 2, 3]
    write_dataset(path, range(10, 17))
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert [int(r[1][0]) for r in run_all(str(path))] == list(range(10, 17))
    assert len(os.listdir(cache)) == 2


def test_index_cache_temporary_names_differ_between_hosts(tmp_path, cache, monkeypatch):
    """Two nodes sharing the cache folder may run processes of one pid: their files differ."""
    path = tmp_path / "a.tfrecord"
    write_dataset(path, range(3))
    written = []
    real_write = tfrecord_format.write_index

    def spy(target, index):
        written.append(os.path.basename(target))
        real_write(target, index)

    monkeypatch.setattr(tfrecord_format, "write_index", spy)
    monkeypatch.setattr(os, "getpid", lambda: 4242)
    for host in ("node-a", "node-b"):
        monkeypatch.setattr(tfrecord_format.socket, "gethostname", lambda host=host: host)
        for entry in os.listdir(cache) if cache.exists() else []:
            os.remove(cache / entry)  # index again, as a second node would
        assert tfrecord_format.record_index(str(path)) == tfrecord.read_index(
            cache / os.listdir(cache)[0]
        )
    assert len(written) == 2 and written[0] != written[1]
    assert all(name.endswith(".4242.tmp") for name in written)


@pytest.mark.parametrize("policy", [LastBatchPolicy.PARTIAL, LastBatchPolicy.FILL])
@pytest.mark.parametrize("shuffle", [False, True])
def test_shards_cover_every_record_once_per_epoch(tmp_path, policy, shuffle):
    paths = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    write_dataset(paths[0], range(7))
    write_dataset(paths[1], range(7, 11))

    def make(**kw):
        @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=7)
        def pipe():
            out = fn.readers.tfrecord(
                path=paths, features=FEATURES, random_shuffle=shuffle, name="R", **kw
            )
            return out["label"]

        return pipe()

    for shards in (1, 2, 3):
        epochs = shard_epochs(make, shards, lambda x: int(x[0]), policy)
        for ids in epochs:
            assert sorted(ids) == list(range(11)), (shards, ids)
        if shuffle and shards == 1:
            assert epochs[0] != epochs[1] and epochs[0] != sorted(epochs[0])


def test_resume_mid_epoch(tmp_path):
    path = str(tmp_path / "a.tfrecord")
    write_dataset(path, range(10))

    def make():
        @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=11)
        def pipe():
            return fn.readers.tfrecord(path=path, features=FEATURES, random_shuffle=True, name="R")[
                "label"
            ]

        return pipe()

    check_resume(make)


def test_shuffle_after_epoch_reads_the_first_epoch_in_order(tmp_path):
    path = str(tmp_path / "a.tfrecord")
    write_dataset(path, range(9))

    def make(**kw):
        @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=2)
        def pipe():
            out = fn.readers.tfrecord(
                path=path, features=FEATURES, shuffle_after_epoch=True, name="R", **kw
            )
            return out["label"]

        return pipe()

    first, second, third = shard_epochs(make, 1, lambda x: int(x[0]), epochs=3)
    assert first == list(range(9))
    assert sorted(second) == sorted(third) == first and second != first and second != third
    with pytest.raises(ValueError, match="mutually exclusive"):
        fn_args = {"shuffle_after_epoch": True, "random_shuffle": True}

        @pipeline_def(batch_size=1, num_threads=1, device_id=None)
        def bad():
            return fn.readers.tfrecord(path=path, features=FEATURES, **fn_args)["label"]

        bad()


def corrupt_dataset(tmp_path):
    """5 records: #1 has a flipped data byte (CRC mismatch), #4 is cut short."""
    path = tmp_path / "bad.tfrecord"
    index = write_dataset(path, range(5))
    data = bytearray(path.read_bytes())
    # record 1's image: BytesList.value (field 1, 2 bytes) = 01 01; flip a data byte
    image_byte = data.index(b"\x0a\x02\x01\x01", index[1][0]) + 2
    data[image_byte] ^= 0xFF
    del data[index[4][0] + index[4][1] - 5 :]
    path.write_bytes(bytes(data))
    return str(path), index


def test_bad_records_raise_naming_file_and_offset(tmp_path):
    path, index = corrupt_dataset(tmp_path)
    with pytest.raises(OperatorError, match=rf"bad.tfrecord' at offset {index[1][0]}.*CRC"):
        run_all(path, batch_size=1, n=5, check_crc=True)
    rows = run_all(path, batch_size=1, n=4)  # without check_crc the flipped byte is read
    assert rows[1][2].tobytes() != bytes([1]) * 2
    with pytest.raises(OperatorError, match=rf"offset {index[4][0]}.*truncated TFRecord"):
        run_all(path, batch_size=1, n=5)


def test_bad_records_are_skipped_and_reported(tmp_path):
    path, index = corrupt_dataset(tmp_path)

    @pipeline_def(batch_size=5, num_threads=1, device_id=None, on_error="skip")
    def pipe():
        out = fn.readers.tfrecord(path=path, features=FEATURES, check_crc=True, name="R")
        # a compute step: the engine applies on_error="skip" where samples are computed
        return out["label"] * 1

    p = pipe()
    (batch,) = next(iter(Iterator(p, ["label"], reader_name="R")))
    assert batch.real == 3
    assert [int(batch["label"].at(k)[0]) for k in range(3)] == [0, 2, 3]
    reported = sorted(e["path"] for e in p.errors())
    assert reported == sorted([f"{path}:{index[1][0]}", f"{path}:{index[4][0]}"])
    assert "CRC mismatch" in " ".join(e["reason"] for e in p.errors())
    p.close()


def test_argument_errors():
    with pytest.raises(ValueError, match="string features must be FixedLenFeature"):
        tfrecord.VarLenFeature(tfrecord.string, "")
    with pytest.raises(TypeError, match="feature type"):
        tfrecord.FixedLenFeature([1], "int64", 0)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe(**kw):
        return fn.readers.tfrecord(**kw)["x"]

    with pytest.raises(ValueError, match="index_path' lists 1 file"):
        pipe(path=["a", "b"], index_path="a.idx", features={"x": FEATURES["label"]})
    with pytest.raises(TypeError, match="features"):
        pipe(path="a", features={"x": "int64"})
