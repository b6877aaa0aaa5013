"""fn.readers.numpy on .npy files written here with NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _reader_checks import check_resume, shard_epochs

from chute import Iterator, LastBatchPolicy, OperatorError, fn, pipeline_def

DTYPES = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", ">i4", ">f8", "c8"]


def run_all(batch_size=2, n=None, **kw):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, seed=1)
    def pipe():
        return fn.readers.numpy(name="R", **kw)

    p = pipe()
    p.build()
    n = n or p.epoch_size("R")
    out = []
    while len(out) < n:
        (batch,) = p.run()
        out += [np.asarray(batch.at(k)) for k in range(len(batch))]
    p.close()
    return out[:n]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_every_dtype_in_c_and_fortran_order(tmp_path, dtype, order):
    rng = np.random.default_rng(0)
    arrays = [
        np.asarray(rng.integers(0, 100, (3, 4, 2)) - 50, dtype=dtype, order=order),
        np.asarray(rng.integers(0, 2, (5, 1, 3)), dtype=dtype, order=order),
    ]
    files = []
    for i, a in enumerate(arrays):
        files.append(str(tmp_path / f"{i}.npy"))
        np.save(files[-1], a)
    for mmap_kw in ({}, {"dont_use_mmap": False}, {"use_o_direct": True}):
        got = run_all(batch_size=1, files=files, **mmap_kw)
        for a, g in zip(arrays, got):
            assert g.shape == a.shape and g.flags.c_contiguous
            assert g.dtype == a.dtype.newbyteorder("=")
            np.testing.assert_array_equal(g, a)
    np.save(tmp_path / "scalar.npy", np.asarray(7, dtype=dtype))
    (scalar,) = run_all(batch_size=1, files=[str(tmp_path / "scalar.npy")])
    assert scalar.shape == () and scalar == np.asarray(7, dtype=dtype)


def test_a_file_of_another_type_fails_naming_it(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((2, 2), np.int16))
    np.save(tmp_path / "b.npy", np.zeros(3, np.float32))
    with pytest.raises(OperatorError, match="b.npy'.*holds float32 of 1 dims.*int16 of 2 dims"):
        run_all(batch_size=1, files=[str(tmp_path / "a.npy"), str(tmp_path / "b.npy")])


def test_file_root_filter_file_list_and_files(tmp_path):
    for rel in ["b/2.npy", "a/1.npy", "a/0.npy", "top.npy", "a/skip.txt", "c/3.NPY"]:
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        with open(tmp_path / rel, "wb") as f:
            np.save(f, np.array([len(rel)]))
    rows = run_all(batch_size=4, file_root=str(tmp_path))
    assert [int(r[0]) for r in rows] == [
        len("a/0.npy"),
        len("a/1.npy"),
        len("b/2.npy"),
        len("top.npy"),
    ]
    listing = tmp_path / "a" / "list.txt"
    listing.write_text("1.npy\n0.npy\n")  # relative to the list's folder
    assert [int(r[0]) for r in run_all(file_list=str(listing))] == [7, 7]
    rows = run_all(file_root=str(tmp_path), files=["top.npy", "b/2.npy"])
    assert [int(r[0]) for r in rows] == [7, 7]
    rows = run_all(file_root=str(tmp_path / "c"), file_filter="*.NPY", batch_size=1)
    assert [int(r[0]) for r in rows] == [len("c/3.NPY")]


ROIS = [
    (dict(roi_start=[1, 0, 1], roi_end=[3, 2, 3]), np.s_[1:3, 0:2, 1:3]),
    (dict(roi_start=[1], roi_shape=[2], roi_axes=[2]), np.s_[:, :, 1:3]),
    (dict(rel_roi_start=[0.25, 0.5], rel_roi_end=[0.75, 1.0], roi_axes=[0, 1]), np.s_[1:3, 3:6]),
    (dict(rel_roi_start=[0.5], rel_roi_shape=[0.5], roi_axes=[-1]), np.s_[:, :, 2:4]),  # 1.5->2
    (dict(roi_end=[2], roi_axes=[1]), np.s_[:, 0:2]),
    (dict(rel_roi_shape=[0.5, 0.5, 0.5]), np.s_[0:2, 0:3, 0:2]),
]


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize(("roi", "expected"), ROIS)
def test_region_of_interest_matches_numpy_slicing(tmp_path, order, roi, expected):
    a = np.asarray(np.arange(4 * 6 * 3).reshape(4, 6, 3), np.int32, order=order)
    np.save(tmp_path / "a.npy", a)
    (got,) = run_all(batch_size=1, files=[str(tmp_path / "a.npy")], **roi)
    np.testing.assert_array_equal(got, a[expected])


def test_out_of_bounds_policies(tmp_path):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "a.npy", a)
    files = [str(tmp_path / "a.npy")]
    roi = dict(roi_start=[-1, 2], roi_end=[2, 6])
    with pytest.raises(OperatorError, match="out of the bounds of shape \\[3, 4\\]"):
        run_all(batch_size=1, files=files, **roi)
    (trim,) = run_all(batch_size=1, files=files, out_of_bounds_policy="trim_to_shape", **roi)
    np.testing.assert_array_equal(trim, a[0:2, 2:4])
    (pad,) = run_all(batch_size=1, files=files, out_of_bounds_policy="pad", fill_value=-1, **roi)
    expected = np.full((3, 4), -1, np.float32)
    expected[1:3, 0:2] = a[0:2, 2:4]
    np.testing.assert_array_equal(pad, expected)
    with pytest.raises(ValueError, match="mutually exclusive"):
        run_all(files=files, roi_end=[1, 1], roi_shape=[1, 1])


def test_header_versions_2_and_3(tmp_path):
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    for version in [(2, 0), (3, 0)]:
        path = tmp_path / f"v{version[0]}.npy"
        with open(path, "wb") as f:
            np.lib.format.write_array(f, a, version=version)
        (got,) = run_all(batch_size=1, files=[str(path)])
        np.testing.assert_array_equal(got, a)


@pytest.mark.parametrize("policy", [LastBatchPolicy.PARTIAL, LastBatchPolicy.FILL])
def test_shards_cover_every_file_once_per_epoch(tmp_path, policy):
    files = []
    for i in range(10):
        files.append(str(tmp_path / f"{i}.npy"))
        np.save(files[-1], np.array([i, i], np.int64))

    def make(**kw):
        @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=6)
        def pipe():
            return fn.readers.numpy(files=files, random_shuffle=True, name="R", **kw)

        return pipe()

    for shards in (1, 2, 3):
        for ids in shard_epochs(make, shards, lambda x: int(x[0]), policy):
            assert sorted(ids) == list(range(10)), shards


def test_resume_mid_epoch(tmp_path):
    files = []
    for i in range(8):
        files.append(str(tmp_path / f"{i}.npy"))
        np.save(files[-1], np.full((2, 2), i, np.uint8))

    def make():
        @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=12)
        def pipe():
            return fn.readers.numpy(files=files, random_shuffle=True, name="R")

        return pipe()

    check_resume(make)


def bad_files(tmp_path):
    good = np.arange(8, dtype=np.int32)
    paths = {name: str(tmp_path / f"{name}.npy") for name in ("good", "magic", "header", "short")}
    for p in paths.values():
        np.save(p, good)
    raw = Path(paths["good"]).read_bytes()
    Path(paths["magic"]).write_bytes(b"\x93NUMPZ" + raw[6:])
    header_end = raw.index(b"}")
    Path(paths["header"]).write_bytes(
        raw[:10] + raw[10:header_end].replace(b"'shape'", b"'shope'") + raw[header_end:]
    )
    Path(paths["short"]).write_bytes(raw[:-5])
    return paths, len(raw) - 32  # data offset: 128-byte v1 header


def test_bad_files_raise_naming_file_and_offset(tmp_path):
    paths, data_offset = bad_files(tmp_path)
    cases = {
        "magic": "bytes at offset 0 are",
        "header": "malformed .npy header at offset 10",
        "short": f"truncated .npy data at offset {data_offset}: 32 bytes needed",
    }
    for name, message in cases.items():
        with pytest.raises(OperatorError, match=rf"{name}.npy'.*{message}"):
            run_all(batch_size=1, files=[paths["good"], paths[name]])


def test_bad_files_are_skipped_and_reported(tmp_path):
    paths, _ = bad_files(tmp_path)
    files = [paths["good"], paths["magic"], paths["header"], paths["good"], paths["short"]]

    @pipeline_def(batch_size=5, num_threads=1, device_id=None, on_error="skip")
    def pipe():
        return fn.readers.numpy(files=files, name="R") + 0  # a compute step applies on_error

    p = pipe()
    (batch,) = next(iter(Iterator(p, ["x"], reader_name="R")))
    assert batch.real == 2
    np.testing.assert_array_equal(batch["x"].at(1), np.arange(8))
    assert sorted(e["path"] for e in p.errors()) == sorted(files[1:3] + files[4:])
    p.close()
