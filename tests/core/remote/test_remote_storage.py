"""chute.ops.readers.storage against real servers the tests start: HTTP (ranges) and S3 (moto)."""

from __future__ import annotations

import pytest
from _remote_servers import http_server, s3_server, upload

from chute.ops.readers import storage

pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")

BLOB = bytes(range(256)) * 40  # 10240 bytes


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """b.bin, a/x.bin, a/y.txt, a/deep/z.bin, c/w.bin: files before folders in walk order."""
    root = tmp_path_factory.mktemp("tree")
    for rel, data in {
        "b.bin": BLOB,
        "a/x.bin": b"x" * 10,
        "a/y.txt": b"line one\nline two\n",
        "a/deep/z.bin": b"z",
        "c/w.bin": b"w" * 3,
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


@pytest.fixture(scope="module")
def http(tree):
    with http_server(str(tree)) as server:
        yield server


@pytest.fixture(scope="module")
def s3(tree):
    with s3_server() as client:
        upload(client, "chute-tree", str(tree), "data/")
        yield "s3://chute-tree/data"


WALK = ["b.bin", "a/x.bin", "a/y.txt", "a/deep/z.bin", "c/w.bin"]


def test_walk_order_is_the_same_locally_and_on_s3(tree, s3):
    assert storage.walk_files(str(tree)) == WALK
    assert storage.walk_files(s3) == WALK
    assert storage.list_dirs(s3) == ["a", "c"]
    assert storage.isdir(s3) and not storage.isdir(f"{s3}/b.bin")


def test_http_listing_follows_the_servers_index_pages(http):
    assert storage.walk_files(http.url) == WALK
    assert storage.list_dirs(f"{http.url}/a") == ["deep"]


def test_names_of_urls():
    assert storage.join("s3://b/root/", "/x/y.jpg") == "s3://b/root/x/y.jpg"
    assert storage.join("/data", "s3://b/k") == "s3://b/k"
    assert storage.dirname("https://h/a/b.json") == "https://h/a"
    assert storage.basename("gs://b/a/c.npy") == "c.npy"
    assert storage.relpath("s3://b/r/c/x.jpg", "s3://b/r/") == "c/x.jpg"
    assert storage.is_url("simplecache::s3://b/x") and not storage.is_url("/tmp/x")


@pytest.mark.parametrize("where", ["http", "s3"])
def test_ranges_and_whole_objects_are_fetched_together(where, http, s3):
    base = http.url if where == "http" else s3
    got = storage.read_ranges(
        [
            (f"{base}/b.bin", 100, 110),
            (f"{base}/b.bin", 10230, 10300),  # past the end: what is there
            (f"{base}/a/x.bin", None, None),
            (f"{base}/missing.bin", 0, 4),
        ]
    )
    assert got[0] == BLOB[100:110]
    assert got[1] == BLOB[10230:]
    assert got[2] == b"x" * 10
    assert isinstance(got[3], FileNotFoundError) and f"{base}/missing.bin" in str(got[3])
    assert storage.read_text(f"{base}/a/y.txt") == "line one\nline two\n"
    assert storage.size(f"{base}/b.bin") == len(BLOB)


def test_http_ranges_are_range_requests(http):
    http.requests.clear()
    (data,) = storage.read_ranges([(f"{http.url}/b.bin", 4096, 4196)])
    assert data == BLOB[4096:4196]
    assert ("/b.bin", "bytes=4096-4195") in http.requests


def test_transient_failures_are_retried(http):
    http.failures = 2  # the next two GETs answer 503
    assert storage.read_many([f"{http.url}/a/x.bin"]) == [b"x" * 10]
    assert http.failures == 0
    http.failures = storage.RETRIES  # every attempt fails: the error names the URL
    (error,) = storage.read_many([f"{http.url}/c/w.bin"])
    assert isinstance(error, OSError) and f"{http.url}/c/w.bin" in str(error)
    http.failures = 0


def test_a_missing_object_fails_at_once_naming_it(s3):
    with pytest.raises(FileNotFoundError, match="s3://chute-tree/data/nope.txt"):
        storage.read_text(f"{s3}/nope.txt")


def test_fingerprint_changes_with_the_object(s3):
    client_url = f"{s3}/a/x.bin"
    before = storage.fingerprint(client_url)
    assert before == storage.fingerprint(client_url)
    assert before != storage.fingerprint(f"{s3}/c/w.bin")
