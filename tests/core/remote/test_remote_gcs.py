"""gs:// URLs: readers read through gcsfs from a GCS JSON API server the tests start.

gcsfs sends its requests to ``STORAGE_EMULATOR_HOST`` when it is set (as Google's own
clients do), so the readers below run exactly as a user's would against
storage.googleapis.com, with anonymous credentials (fsspec's configuration, as
``~/.config/fsspec/gcs.json`` would give them) and gcsfs's bucket-layout lookup over
gRPC switched off (``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false``: a JSON API server has no
gRPC side). Without gcsfs, a gs:// URL fails with an error naming it and the package.
"""

from __future__ import annotations

import importlib
import io
import sys
import tarfile

import numpy as np
import pytest
from _gcs_server import gcs_server
from _remote_servers import read_samples as run

from chute import OperatorError, fn, tfrecord
from chute.ops.readers import storage

fsspec = pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")

BUCKET = "chute-gcs"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """images/{cats,dogs}/*.jpg, tfr/data.tfrecord + .idx, wds/shard.tar under set/."""
    root = tmp_path_factory.mktemp("gcs_bucket")
    base = root / "set"
    for cls, names in {"cats": ["a.jpg", "b.jpg"], "dogs": ["c.jpg"]}.items():
        (base / "images" / cls).mkdir(parents=True)
        for name in names:
            (base / "images" / cls / name).write_bytes(f"bytes of {cls}/{name}".encode())
    (base / "tfr").mkdir()
    examples = [
        tfrecord.encode_example({"id": [i], "data": [bytes([i]) * (i + 1)]}) for i in range(5)
    ]
    index = tfrecord.write_records(base / "tfr" / "data.tfrecord", examples)
    (base / "tfr" / "data.idx").write_text("".join(f"{o} {s}\n" for o, s in index))
    (base / "wds").mkdir()
    with tarfile.open(base / "wds" / "shard.tar", "w", format=tarfile.GNU_FORMAT) as tar:
        for i in range(3):
            for ext, blob in [("jpg", bytes([i]) * (i + 2)), ("cls", np.int32(7 * i).tobytes())]:
                info = tarfile.TarInfo(f"s{i}.{ext}")
                info.size = len(blob)
                tar.addfile(info, io.BytesIO(blob))
    return root


@pytest.fixture(scope="module")
def gcs(data):
    """The server holding ``data`` as bucket chute-gcs, gcsfs pointed at it; yields it."""
    with pytest.MonkeyPatch.context() as mp, gcs_server({BUCKET: str(data)}) as server:
        mp.setenv("STORAGE_EMULATOR_HOST", server.url)
        mp.setenv("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")  # read on gcsfs's import
        mp.setitem(fsspec.config.conf, "gcs", {"token": "anon"})
        gcsfs = pytest.importorskip("gcsfs")
        # where gcsfs was imported before this module set the switch: its plain class
        for protocol in ("gs", "gcs"):
            fsspec.register_implementation(protocol, gcsfs.core.GCSFileSystem, clobber=True)
        gcsfs.core.GCSFileSystem.clear_instance_cache()
        try:
            yield server
        finally:
            gcsfs.core.GCSFileSystem.clear_instance_cache()


def test_storage_lists_and_reads_ranges(gcs):
    base = f"gs://{BUCKET}/set"
    assert storage.isdir(f"{base}/images")
    assert storage.list_dirs(f"{base}/images") == ["cats", "dogs"]
    assert storage.walk_files(f"{base}/images") == ["cats/a.jpg", "cats/b.jpg", "dogs/c.jpg"]
    assert storage.size(f"{base}/images/dogs/c.jpg") == len(b"bytes of dogs/c.jpg")
    assert storage.read_ranges(
        [(f"{base}/images/cats/a.jpg", 9, 13), (f"{base}/images/dogs/c.jpg", None, None)]
    ) == [b"cats", b"bytes of dogs/c.jpg"]


def test_file_reader_file_root_classes(gcs):
    rows = run(fn.readers.file, 3, file_root=f"gs://{BUCKET}/set/images")
    assert [(r[0].tobytes(), int(r[1][0])) for r in rows] == [
        (b"bytes of cats/a.jpg", 0),
        (b"bytes of cats/b.jpg", 0),
        (b"bytes of dogs/c.jpg", 1),
    ]


@pytest.mark.parametrize("indexed", [True, False])
def test_tfrecord_reader(gcs, indexed):
    base = f"gs://{BUCKET}/set/tfr"
    features = {
        "id": tfrecord.FixedLenFeature([1], tfrecord.int64, -1),
        "data": tfrecord.FixedLenFeature((), tfrecord.string, ""),
    }
    index = {"index_path": f"{base}/data.idx"} if indexed else {}
    gcs.requests.clear()
    rows = run(fn.readers.tfrecord, 5, path=f"{base}/data.tfrecord", features=features, **index)
    assert [(int(i[0]), d.tobytes()) for i, d in rows] == [
        (i, bytes([i]) * (i + 1)) for i in range(5)
    ]
    if indexed:  # the records come as byte ranges of the object, not the whole file
        media = [r for path, r in gcs.requests if path.endswith("data.tfrecord")]
        assert media and all(r is not None and r.startswith("bytes=") for r in media)


def test_webdataset_reader(gcs):
    rows = run(
        fn.readers.webdataset,
        3,
        paths=f"gs://{BUCKET}/set/wds/shard.tar",
        ext=["jpg", "cls"],
        dtypes=[np.uint8, np.int32],
    )
    assert [(j.tobytes(), c.tolist()) for j, c in rows] == [
        (bytes([i]) * (i + 2), [7 * i]) for i in range(3)
    ]


def test_transient_failure_is_retried(gcs):
    gcs.failures = 1  # the next request answers 503
    rows = run(fn.readers.file, 1, batch_size=1, files=[f"gs://{BUCKET}/set/images/cats/b.jpg"])
    assert rows[0][0].tobytes() == b"bytes of cats/b.jpg"
    assert gcs.failures == 0


def test_missing_object_names_url_and_operator(gcs):
    with pytest.raises(OperatorError, match=rf"readers\.file.*gs://{BUCKET}/set/images/gone\.jpg"):
        run(fn.readers.file, 1, batch_size=1, files=[f"gs://{BUCKET}/set/images/gone.jpg"])


def test_without_gcsfs_the_error_names_the_url_and_the_package(monkeypatch):
    # gcsfs not importable, and fsspec not holding its class from an earlier test
    monkeypatch.setitem(sys.modules, "gcsfs", None)
    registry = importlib.import_module("fsspec.registry")
    for protocol in ("gs", "gcs"):
        monkeypatch.delitem(registry._registry, protocol, raising=False)
    url = "gs://some-bucket/train/part0.tfrecord"
    with pytest.raises(
        ImportError, match=r"gs://some-bucket/train/part0\.tfrecord.*pip install gcsfs"
    ):
        storage.size(url)
    features = {"id": tfrecord.FixedLenFeature([1], tfrecord.int64, -1)}
    with pytest.raises((ImportError, OperatorError), match=r"part0\.tfrecord.*pip install gcsfs"):
        run(fn.readers.tfrecord, 1, batch_size=1, path=url, features=features)
