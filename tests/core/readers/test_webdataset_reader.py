"""fn.readers.webdataset on tar shards written here with tarfile."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest
from _reader_checks import check_resume, shard_epochs

from chute import Iterator, LastBatchPolicy, OperatorError, fn, pipeline_def, types
from chute.ops.readers import wds_format
from chute.tools.cli import main


def write_shard(path, ids, fmt=tarfile.GNU_FORMAT, extra=lambda i: i % 2 == 1, prefix="data"):
    """Samples ``prefix/sample{i}``: .jpg (bytes i), .cls (int32 i), .seg.png on odd ids."""
    with tarfile.open(path, "w", format=fmt) as tar:
        for i in ids:
            parts = [("jpg", bytes([i % 256]) * (i % 4 + 1)), ("cls", np.int32(i).tobytes())]
            if extra(i):
                parts.append(("seg.PNG", bytes([200 + i % 50]) * 3))
            for ext, data in parts:
                info = tarfile.TarInfo(f"{prefix}/sample{i:04d}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    with tarfile.open(path) as tar:
        return {m.name: (m.offset_data, m.size) for m in tar.getmembers()}


def run_all(paths, ext, batch_size=4, n=None, **kw):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, seed=1)
    def pipe():
        out = fn.readers.webdataset(paths=paths, ext=ext, name="R", **kw)
        return tuple(out) if isinstance(out, list) else (out,)

    p = pipe()
    p.build()
    n = n or p.epoch_size("R")
    rows = []
    while len(rows) < n:
        outs = p.run()
        rows += [[np.asarray(o.at(k)) for o in outs] for k in range(len(outs[0]))]
    p.close()
    return rows[:n]


def test_outputs_ext_groups_dtypes_and_empty_components(tmp_path):
    a, b = str(tmp_path / "a.tar"), str(tmp_path / "b.tar")
    write_shard(a, range(5))
    write_shard(b, range(5, 8), fmt=tarfile.PAX_FORMAT)
    rows = run_all(
        [a, b],
        ["jpg;png", "cls", "seg.PNG", "txt"],
        dtypes=[types.UINT8, types.INT32, np.uint8, types.UINT8],
    )
    assert len(rows) == 8
    for i, (jpg, cls, seg, txt) in enumerate(rows):
        assert jpg.dtype == np.uint8 and jpg.tobytes() == bytes([i]) * (i % 4 + 1)
        assert cls.dtype == np.int32 and cls.tolist() == [i]
        assert seg.tobytes() == (bytes([200 + i]) * 3 if i % 2 else b"")
        assert txt.shape == (0,) and txt.dtype == np.uint8


def test_missing_component_behaviors_and_case(tmp_path):
    a = str(tmp_path / "a.tar")
    write_shard(a, range(6))
    # case-sensitive: "seg.png" matches no member ("seg.PNG"): every sample is skipped
    with pytest.raises(ValueError, match="no samples"):
        run_all(a, ["cls", "seg.png"], missing_component_behavior="skip")
    rows = run_all(
        a,
        ["cls", "seg.png"],
        dtypes=[types.INT32, types.UINT8],
        missing_component_behavior="Skip",
        case_sensitive_extensions=False,
    )
    assert [int(r[0][0]) for r in rows] == [1, 3, 5]
    with pytest.raises(ValueError, match=r"sample 1 \(data/sample0000.jpg\).*'error'"):
        run_all(a, ["jpg", "seg.PNG"], missing_component_behavior="error")
    with pytest.raises(ValueError, match="missing_component_behavior"):
        run_all(a, ["jpg"], missing_component_behavior="drop")
    with pytest.raises(ValueError, match="does not hold whole int64"):
        run_all(a, ["cls"], dtypes=[types.INT64])


def test_index_files_cli_v11_and_scan_agree(tmp_path):
    a = str(tmp_path / "a.tar")
    members = write_shard(a, range(4))
    assert main(["wds2idx", a]) == 0  # default index: a.idx beside the archive
    lines = (tmp_path / "a.idx").read_text().splitlines()
    assert lines[0] == "v1.2 4"
    expected = []
    for i in range(4):
        names = [f"data/sample{i:04d}.{e}" for e in ("jpg", "cls", "seg.PNG")][: 3 if i % 2 else 2]
        expected.append(
            " ".join(f"{n.split('.', 1)[1]} {members[n][0]} {members[n][1]} {n}" for n in names)
        )
    assert lines[1:] == expected
    v11 = tmp_path / "a11.idx"
    v11.write_text(
        "v1.1 4\n"
        + "".join(
            " ".join(x for k, x in enumerate(line.split()) if k % 4 != 3) + "\n"
            for line in expected
        )
    )
    ext = ["jpg", "cls", "seg.PNG"]
    scanned = run_all(a, ext)
    for index in (str(tmp_path / "a.idx"), str(v11)):
        indexed = run_all(a, ext, index_paths=index)
        assert [[x.tolist() for x in r] for r in indexed] == [
            [x.tolist() for x in r] for r in scanned
        ]
    (tmp_path / "bad.idx").write_text("v1.2 1\njpg 100 5 x.jpg\n")
    with pytest.raises(ValueError, match="bad.idx' line 1.*multiple of the tar block"):
        run_all(a, ext, index_paths=str(tmp_path / "bad.idx"))


def test_source_info_names_archive_offset_and_member(tmp_path):
    a = str(tmp_path / "a.tar")
    members = write_shard(a, range(2))

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        jpg = fn.readers.webdataset(paths=a, ext="jpg")
        return fn.get_property(jpg, key="source_info")

    p = pipe()
    p.build()
    (info,) = p.run()
    first = "data/sample0000.jpg"
    assert str(info.at(0)) == f"{a}:{members[first][0]}:{first}"


@pytest.mark.parametrize("policy", [LastBatchPolicy.PARTIAL, LastBatchPolicy.FILL])
def test_shards_cover_every_sample_once_per_epoch(tmp_path, policy):
    paths = [str(tmp_path / "a.tar"), str(tmp_path / "b.tar")]
    write_shard(paths[0], range(6))
    write_shard(paths[1], range(6, 13))

    def make(**kw):
        @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=4)
        def pipe():
            return fn.readers.webdataset(
                paths=paths, ext="cls", dtypes=types.INT32, random_shuffle=True, name="R", **kw
            )

        return pipe()

    for shards in (1, 2, 3, 4):
        for ids in shard_epochs(make, shards, lambda x: int(x[0]), policy):
            assert sorted(ids) == list(range(13)), shards


def test_resume_mid_epoch(tmp_path):
    a = str(tmp_path / "a.tar")
    write_shard(a, range(11))

    def make():
        @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=8)
        def pipe():
            return fn.readers.webdataset(
                paths=a, ext="cls", dtypes=types.INT32, random_shuffle=True, name="R"
            )

        return pipe()

    check_resume(make)


def truncated_shard(tmp_path):
    a = tmp_path / "cut.tar"
    members = write_shard(a, range(4), extra=lambda i: False)
    offset, size = members["data/sample0003.jpg"]
    a.write_bytes(a.read_bytes()[: offset + 1])  # sample 3's jpg cut after 1 of 4 bytes
    return str(a), offset


def test_truncated_member_raises_naming_archive_and_offset(tmp_path):
    a, offset = truncated_shard(tmp_path)
    with pytest.raises(OperatorError, match=rf"cut.tar' at offset {offset}.*truncated tar member"):
        run_all(a, ["jpg"], batch_size=1, n=4)


def test_bad_members_are_skipped_and_reported_the_rest_read(tmp_path):
    a, offset = truncated_shard(tmp_path)
    b = tmp_path / "corrupt.tar"
    members = write_shard(b, range(10, 14), extra=lambda i: False)
    data = bytearray(b.read_bytes())
    header = members["data/sample0012.jpg"][0] - 512
    data[header + 10] ^= 0x55  # a byte of the member name: the checksum no longer matches
    b.write_bytes(bytes(data))

    @pipeline_def(batch_size=10, num_threads=1, device_id=None, on_error="skip")
    def pipe():
        jpg = fn.readers.webdataset(paths=[a, str(b)], ext="jpg", name="R")
        return jpg + 0  # a compute step: on_error applies where samples are computed

    p = pipe()
    (batch,) = next(iter(Iterator(p, ["jpg"], reader_name="R")))
    # a: samples 0-2 whole, 3 truncated; b: samples 10, 11, then the corrupt header
    assert batch.real == 5
    firsts = [int(batch["jpg"].at(k)[0]) for k in range(5)]
    assert firsts == [0, 1, 2, 10, 11]
    errors = {e["path"]: e["reason"] for e in p.errors()}
    assert len(errors) == 2
    assert "truncated tar member 'data/sample0003.jpg'" in " ".join(errors.values())
    assert f"{b}:{header}" in errors and "checksum" in errors[f"{b}:{header}"]
    p.close()


def test_scanner_reads_long_names_and_skips_hidden_files(tmp_path):
    a = tmp_path / "long.tar"
    long_dir = "d" * 120
    with tarfile.open(a, "w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in [(f"{long_dir}/x.txt", b"abc"), (".hidden", b"zz"), ("dir/", None)]:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    members, problem = wds_format.scan_tar(str(a))
    assert problem is None and [m[0] for m in members] == [f"{long_dir}/x.txt", ".hidden"]
    samples = wds_format.group_samples(members)
    assert [[c.ext for c in s] for s in samples] == [["txt"]]
    assert wds_format.split_name("a.b/c.seg.png") == ("a.b/c", "seg.png")
