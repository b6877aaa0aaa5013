"""Every file-based reader reads s3:// and http:// URLs as it reads the same files on disk.

The tests write one small dataset per format, upload it to an S3 server (moto) and
serve it over HTTP, both started here; each reader's outputs from the URLs must be
those it gives for the local files, which are checked against the values written.
"""

from __future__ import annotations

import io
import json
import re
import tarfile

import numpy as np
import pytest
from _remote_servers import http_server, s3_server, upload
from _remote_servers import read_samples as run

from chute import Iterator, LastBatchPolicy, OperatorError, fn, pipeline_def, tfrecord
from chute.ops.readers.mxnet import encode_image_record, encode_record

pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")


def _write_images(root):
    for cls, names in {"cats": ["a.jpg", "b.jpg"], "dogs": ["c.jpg"]}.items():
        (root / "images" / cls).mkdir(parents=True)
        for name in names:
            (root / "images" / cls / name).write_bytes(f"bytes of {cls}/{name}".encode())
    (root / "images" / "list.txt").write_text("dogs/c.jpg 5\ncats/a.jpg 2\n")


def _write_numpy(root):
    (root / "npy" / "sub").mkdir(parents=True)
    np.save(root / "npy" / "a.npy", np.arange(6, dtype=np.int16).reshape(2, 3))
    np.save(
        root / "npy" / "sub" / "b.npy",
        np.asfortranarray(np.arange(6, dtype=np.int16)[::-1].reshape(2, 3)),
    )


def _write_tfrecord(root):
    (root / "tfr").mkdir()
    examples = [
        tfrecord.encode_example({"id": [i], "data": [bytes([i]) * (i + 1)]}) for i in range(5)
    ]
    index = tfrecord.write_records(root / "tfr" / "data.tfrecord", examples)
    (root / "tfr" / "data.idx").write_text("".join(f"{o} {s}\n" for o, s in index))


def _write_webdataset(root):
    (root / "wds").mkdir()
    with tarfile.open(root / "wds" / "shard.tar", "w", format=tarfile.GNU_FORMAT) as tar:
        for i in range(4):
            for ext, data in [("jpg", bytes([i]) * (i + 2)), ("cls", np.int32(10 * i).tobytes())]:
                info = tarfile.TarInfo(f"s{i}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


def _write_mxnet(root):
    (root / "rec").mkdir()
    blob, offsets = b"", []
    for i in range(4):
        offsets.append(len(blob))
        blob += encode_record(encode_image_record(bytes([i + 1]) * (3 + i), float(i)))
    (root / "rec" / "data.rec").write_bytes(blob)
    (root / "rec" / "data.idx").write_text("".join(f"{k}\t{o}\n" for k, o in enumerate(offsets)))


def _write_coco(root):
    (root / "coco" / "img").mkdir(parents=True)
    images = []
    for image_id in (2, 1):
        name = f"im{image_id}.jpg"
        (root / "coco" / "img" / name).write_bytes(bytes([image_id]) * 7)
        images.append({"id": image_id, "file_name": name, "width": 10, "height": 10})
    doc = {
        "images": images,
        "categories": [{"id": 4, "name": "x"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 4, "bbox": [1, 2, 3, 4], "iscrowd": 0},
            {"id": 2, "image_id": 2, "category_id": 4, "bbox": [0, 0, 5, 5], "iscrowd": 0},
        ],
    }
    (root / "coco" / "ann.json").write_text(json.dumps(doc))


def _write_nemo(root):
    sf = pytest.importorskip("soundfile")
    (root / "asr" / "audio").mkdir(parents=True)
    lines = []
    for i in range(3):
        wave = ((np.arange(50) * 11 + 1000 * i) % 3000).astype(np.int16)
        sf.write(root / "asr" / "audio" / f"{i}.wav", wave, 8000, subtype="PCM_16")
        lines.append(json.dumps({"audio_filepath": f"audio/{i}.wav", "text": f"t{i}"}))
    (root / "asr" / "manifest.json").write_text("\n".join(lines) + "\n")


def _write_frames_and_fits(root):
    from PIL import Image

    for s, n in enumerate([3, 2]):
        (root / "seq" / f"s{s}").mkdir(parents=True)
        for i in range(n):
            pixel = np.full((2, 3, 3), 10 * s + i, np.uint8)
            Image.fromarray(pixel).save(root / "seq" / f"s{s}" / f"{i:03d}.png")
    (root / "fits").mkdir()
    for i in range(2):
        cards = [f"SIMPLE  = {'T':>20}", f"BITPIX  = {16:>20}", f"NAXIS   = {1:>20}"]
        cards += [f"NAXIS1  = {3:>20}", "END"]
        header = "".join(c.ljust(80) for c in cards).encode().ljust(2880)
        data = (np.arange(3) + 100 * i).astype(">i2").tobytes().ljust(2880, b"\0")
        (root / "fits" / f"{i}.fits").write_bytes(header + data)


def _write_video(root):
    """6 MJPEG frames of 32x16, frame i bright in columns 4i..4i+3 (where PyAV is installed)."""
    try:
        import av
    except ImportError:
        return
    (root / "video").mkdir()
    with av.open(str(root / "video" / "v.mkv"), "w") as out:
        stream = out.add_stream("mjpeg", rate=10)
        stream.width, stream.height, stream.pix_fmt = 32, 16, "yuvj420p"
        for i in range(6):
            frame = np.zeros((16, 32, 3), np.uint8)
            frame[:, 4 * i : 4 * i + 4] = 255
            out.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(stream.encode())


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("remote_data")
    for write in (
        _write_images,
        _write_numpy,
        _write_tfrecord,
        _write_webdataset,
        _write_mxnet,
        _write_coco,
    ):
        write(root)
    _write_nemo(root)
    _write_video(root)
    _write_frames_and_fits(root)
    return root


@pytest.fixture(scope="module")
def http(data):
    with http_server(str(data)) as server:
        yield server


@pytest.fixture(scope="module")
def s3(data):
    with s3_server() as client:
        upload(client, "chute-data", str(data), "set/")
        yield "s3://chute-data/set"


@pytest.fixture(params=["local", "s3", "http"])
def base(request, data):
    """The dataset's root as a folder path, an S3 URL or an HTTP URL."""
    if request.param == "local":
        return str(data)
    return (
        request.getfixturevalue(request.param)
        if request.param == "s3"
        else request.getfixturevalue("http").url
    )


def test_file_reader_file_root_classes(base):
    # over HTTP the folders are listed through the server's index pages
    rows = run(fn.readers.file, 3, file_root=f"{base}/images")
    assert [(r[0].tobytes(), int(r[1][0])) for r in rows] == [
        (b"bytes of cats/a.jpg", 0),
        (b"bytes of cats/b.jpg", 0),
        (b"bytes of dogs/c.jpg", 1),
    ]


def test_file_reader_file_list_and_files(base):
    rows = run(fn.readers.file, 2, file_root=f"{base}/images", file_list=f"{base}/images/list.txt")
    assert [(r[0].tobytes(), int(r[1][0])) for r in rows] == [
        (b"bytes of dogs/c.jpg", 5),
        (b"bytes of cats/a.jpg", 2),
    ]
    rows = run(fn.readers.file, 1, batch_size=1, files=[f"{base}/images/cats/b.jpg"])
    assert rows[0][0].tobytes() == b"bytes of cats/b.jpg"


def test_numpy_reader(base):
    for rows in (
        run(fn.readers.numpy, 2, file_root=f"{base}/npy"),
        run(fn.readers.numpy, 2, files=["npy/a.npy", "npy/sub/b.npy"], file_root=base),
    ):
        np.testing.assert_array_equal(rows[0][0], [[0, 1, 2], [3, 4, 5]])
        np.testing.assert_array_equal(rows[1][0], [[5, 4, 3], [2, 1, 0]])
    rows = run(
        fn.readers.numpy,
        1,
        batch_size=1,
        files=[f"{base}/npy/a.npy"],
        roi_start=[1],
        roi_end=[3],
        roi_axes=[1],
    )
    np.testing.assert_array_equal(rows[0][0], [[1, 2], [4, 5]])


@pytest.mark.parametrize("indexed", [True, False])
def test_tfrecord_reader(base, indexed):
    features = {
        "id": tfrecord.FixedLenFeature([1], tfrecord.int64, -1),
        "data": tfrecord.FixedLenFeature((), tfrecord.string, ""),
    }
    index = {"index_path": f"{base}/tfr/data.idx"} if indexed else {}
    rows = run(fn.readers.tfrecord, 5, path=f"{base}/tfr/data.tfrecord", features=features, **index)
    assert [(int(i[0]), d.tobytes()) for i, d in rows] == [
        (i, bytes([i]) * (i + 1)) for i in range(5)
    ]


def test_tfrecord_over_http_reads_ranges_not_whole_files(http):
    features = {"id": tfrecord.FixedLenFeature([1], tfrecord.int64, -1)}
    http.requests.clear()
    run(
        fn.readers.tfrecord,
        2,
        path=f"{http.url}/tfr/data.tfrecord",
        index_path=f"{http.url}/tfr/data.idx",
        features=features,
    )
    data_requests = [r for path, r in http.requests if path.endswith(".tfrecord")]
    assert data_requests and all(r is not None and r.startswith("bytes=") for r in data_requests)


@pytest.mark.parametrize("where", ["local", "http"])
def test_tfrecord_read_ahead_fetches_each_file_once_whole(http, data, where):
    features = {
        "id": tfrecord.FixedLenFeature([1], tfrecord.int64, -1),
        "data": tfrecord.FixedLenFeature((), tfrecord.string, ""),
    }
    base = http.url if where == "http" else str(data)
    http.requests.clear()
    rows = run(
        fn.readers.tfrecord,
        5,
        path=f"{base}/tfr/data.tfrecord",
        index_path=f"{base}/tfr/data.idx",
        features=features,
        read_ahead=True,
    )
    assert [(int(i[0]), d.tobytes()) for i, d in rows] == [
        (i, bytes([i]) * (i + 1)) for i in range(5)
    ]
    data_requests = [r for path, r in http.requests if path.endswith(".tfrecord")]
    # three batches of 2, one request: the whole file (no Range header)
    assert data_requests == ([None] if where == "http" else [])


def test_webdataset_reader(base):
    rows = run(
        fn.readers.webdataset,
        4,
        paths=f"{base}/wds/shard.tar",
        ext=["jpg", "cls"],
        dtypes=[np.uint8, np.int32],
    )
    assert [(j.tobytes(), c.tolist()) for j, c in rows] == [
        (bytes([i]) * (i + 2), [10 * i]) for i in range(4)
    ]


def test_mxnet_reader(base):
    rows = run(
        fn.readers.mxnet, 4, path=[f"{base}/rec/data.rec"], index_path=[f"{base}/rec/data.idx"]
    )
    assert [(im.tobytes(), lab.tolist()) for im, lab in rows] == [
        (bytes([i + 1]) * (3 + i), [float(i)]) for i in range(4)
    ]


def test_coco_reader(base):
    rows = run(
        fn.readers.coco,
        2,
        file_root=f"{base}/coco/img",
        annotations_file=f"{base}/coco/ann.json",
        image_ids=True,
    )
    assert [(im.tobytes(), ids.tolist()) for im, _, _, ids in rows] == [
        (b"\x01" * 7, [1]),
        (b"\x02" * 7, [2]),
    ]
    np.testing.assert_array_equal(rows[0][1], [[1, 2, 3, 4]])


def test_nemo_asr_reader(base):
    rows = run(
        fn.readers.nemo_asr,
        3,
        manifest_filepaths=[f"{base}/asr/manifest.json"],
        dtype=np.int16,
        read_text=True,
    )
    for i, (audio, rate, text) in enumerate(rows):
        assert float(rate) == 8000
        np.testing.assert_array_equal(
            audio, ((np.arange(50) * 11 + 1000 * i) % 3000).astype(np.int16)
        )
        assert text.tobytes() == f"t{i}".encode()


def test_video_reader(base):
    pytest.importorskip("av")
    rows = run(
        fn.readers.video,
        2,
        filenames=[f"{base}/video/v.mkv"],
        sequence_length=3,
        enable_frame_num=True,
    )
    for video, first in rows:
        bright = [int(np.argmax(f[8, :, 0])) // 4 for f in video]
        assert bright == [int(first[0]) + k for k in range(3)]
    assert [int(f[0]) for _, f in rows] == [0, 3]


def test_sequence_reader(base):
    rows = run(fn.readers.sequence, 3, file_root=f"{base}/seq", sequence_length=2)
    assert [[int(f[0, 0, 0]) for f in r[0]] for r in rows] == [[0, 1], [1, 2], [10, 11]]


def test_fits_reader(base):
    rows = run(fn.experimental.readers.fits, 2, file_root=f"{base}/fits", hdu_indices=[1])
    assert [r[0].tolist() for r in rows] == [[0, 1, 2], [100, 101, 102]]
    rows = run(
        fn.experimental.readers.fits,
        2,
        file_root=base,
        files=["fits/0.fits", "fits/1.fits"],
        hdu_indices=[1],
    )
    assert [r[0].tolist() for r in rows] == [[0, 1, 2], [100, 101, 102]]


def test_io_file_read_takes_urls(http):
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        name = fn.external_source(
            source=lambda: [np.frombuffer(f"{http.url}/images/cats/a.jpg".encode(), np.uint8)]
        )
        return fn.io.file.read(name)

    p = pipe()
    p.build()
    assert np.asarray(p.run()[0].at(0)).tobytes() == b"bytes of cats/a.jpg"


def test_missing_object_raises_naming_url_and_operator(s3):
    with pytest.raises(OperatorError, match=r"readers\.file.*s3://chute-data/set/images/gone\.jpg"):
        run(fn.readers.file, 1, batch_size=1, files=[f"{s3}/images/gone.jpg"])


def test_missing_object_is_reported_under_skip(s3):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=0, on_error="skip")
    def pipe():
        data, _ = fn.readers.file(
            files=[f"{s3}/images/cats/a.jpg", f"{s3}/images/gone.jpg"], name="R"
        )
        return data

    p = pipe()
    p.build()
    it = Iterator(p, ["x"], reader_name="R", last_batch_policy=LastBatchPolicy.PARTIAL)
    (batch,) = next(it)
    assert batch.real == 1 and batch["x"].at(0).tobytes() == b"bytes of cats/a.jpg"
    (error,) = p.errors()
    assert error["path"] == f"{s3}/images/gone.jpg" and "gone.jpg" in error["reason"]
    p.close()


def test_bad_record_over_s3_names_url_and_offset(s3, data):
    # an index that points past the file's records: a truncated record at offset 10000
    first = (data / "tfr" / "data.idx").read_text().splitlines()[0]
    (data / "tfr" / "bad.idx").write_text(f"{first}\n10000 40\n")
    client = __import__("boto3").client("s3")
    client.put_object(
        Bucket="chute-data", Key="set/tfr/bad.idx", Body=(data / "tfr" / "bad.idx").read_bytes()
    )
    features = {"id": tfrecord.FixedLenFeature([1], tfrecord.int64, -1)}
    with pytest.raises(
        OperatorError, match=r"s3://chute-data/set/tfr/data\.tfrecord.*offset 10000"
    ):
        run(
            fn.readers.tfrecord,
            2,
            batch_size=2,
            path=f"{s3}/tfr/data.tfrecord",
            index_path=f"{s3}/tfr/bad.idx",
            features=features,
        )


def test_lmdb_urls_are_refused_with_a_reason(s3):
    with pytest.raises(Exception, match="local folder"):
        run(fn.readers.caffe, 1, path=f"{s3}/lmdb")


def test_resume_mid_epoch_over_s3(s3):
    features = {"id": tfrecord.FixedLenFeature([1], tfrecord.int64, -1)}

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=5)
    def pipe():
        return fn.readers.tfrecord(
            path=f"{s3}/tfr/data.tfrecord", features=features, random_shuffle=True, name="R"
        )["id"]

    def ids(it, n):
        out = []
        while len(out) < n:
            try:
                (b,) = next(it)
            except StopIteration:
                continue
            out += [int(b["x"].at(k)[0]) for k in range(b.real)]
        return out

    reference = Iterator(
        pipe(), ["x"], reader_name="R", auto_reset=True, last_batch_policy=LastBatchPolicy.PARTIAL
    )
    want = ids(reference, 10)
    it = Iterator(
        pipe(), ["x"], reader_name="R", auto_reset=True, last_batch_policy=LastBatchPolicy.PARTIAL
    )
    head = ids(it, 2)
    state = it.state_dict()
    resumed = Iterator(
        pipe(), ["x"], reader_name="R", auto_reset=True, last_batch_policy=LastBatchPolicy.PARTIAL
    )
    resumed.load_state_dict(state)
    assert head + ids(resumed, 8) == want
    assert sorted(want[:5]) == list(range(5)) and sorted(want[5:]) == list(range(5))
    for i in (reference, it, resumed):
        for p in i.pipelines:
            p.close()


def test_missing_archive_and_folder_are_named(http, s3):
    with pytest.raises(OSError, match=r"readers\.webdataset.*/wds/gone\.tar"):
        run(fn.readers.webdataset, 1, paths=f"{http.url}/wds/gone.tar", ext="jpg")
    with pytest.raises(
        ValueError, match=r"file_root 's3://chute-data/set/nothing' is not a folder"
    ):
        run(fn.readers.file, 1, file_root=f"{s3}/nothing")


@pytest.fixture(scope="module")
def http_unlisted(data):
    """The same data from a server without index pages: a folder's URL answers 404."""
    with http_server(str(data), listing=False) as server:
        yield server


@pytest.mark.parametrize(
    ("reader", "folder", "args", "instead"),
    [
        (fn.readers.file, "images", {}, r"pass files=\[...\] \(with labels=\) or file_list="),
        (
            fn.readers.numpy,
            "npy",
            {},
            r"pass files=\[...\] \(relative to file_root\) or file_list=",
        ),
        (fn.experimental.readers.fits, "fits", {}, r"pass files=\[...\]"),
        (fn.readers.sequence, "seq", {"sequence_length": 2}, r"readers\.sequence has no file list"),
        (fn.readers.video, "video", {"sequence_length": 2}, r"pass filenames=\[...\]"),
    ],
)
def test_folder_without_index_page_names_url_and_what_to_pass(
    http_unlisted, reader, folder, args, instead
):
    url = f"{http_unlisted.url}/{folder}"
    with pytest.raises(ValueError, match=re.escape(f"file_root {url!r} cannot be listed")):
        run(reader, 1, file_root=url, **args)
    with pytest.raises(ValueError, match=instead):
        run(reader, 1, file_root=url, **args)


def test_files_and_file_list_need_no_index_page(http_unlisted):
    base = http_unlisted.url
    rows = run(fn.readers.file, 2, file_root=f"{base}/images", file_list=f"{base}/images/list.txt")
    assert [(r[0].tobytes(), int(r[1][0])) for r in rows] == [
        (b"bytes of dogs/c.jpg", 5),
        (b"bytes of cats/a.jpg", 2),
    ]
    rows = run(fn.readers.numpy, 2, files=["npy/a.npy", "npy/sub/b.npy"], file_root=base)
    np.testing.assert_array_equal(rows[1][0], [[5, 4, 3], [2, 1, 0]])
