"""Servers the remote-storage tests start and stop themselves: HTTP with ranges, and S3 (moto).

Both listen on 127.0.0.1 only, on a port the system picks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from chute import pipeline_def


class _RangeHandler(SimpleHTTPRequestHandler):
    """http.server's file handler, plus single byte ranges (206) and injected failures."""

    server: RangeServer

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self.server.log_request(self.path, self.headers.get("Range"))
        if self.server.take_failure():
            self.send_error(503, "injected failure")
            return
        path = self.translate_path(self.path)
        if not self.server.listing and os.path.isdir(path):
            self.send_error(404, "no index pages here")
            return
        header = self.headers.get("Range")
        if not header or not os.path.isfile(path):
            super().do_GET()
            return
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", header.strip())
        size = os.path.getsize(path)
        if match is None or match.groups() == ("", ""):
            self.send_error(400, "bad Range")
            return
        first, last = match.groups()
        if first == "":  # the last N bytes
            start, end = max(0, size - int(last)), size
        else:
            start, end = int(first), size if last == "" else min(size, int(last) + 1)
        if start >= size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.end_headers()
            return
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read(end - start)
        self.send_response(206)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        self.wfile.write(data)


class RecordingServer(ThreadingHTTPServer):
    """A local test server that records each GET (path, Range header) and can fail the next
    ``failures`` GETs; subclasses give the handler."""

    daemon_threads = True
    request_queue_size = 128  # socketserver's 5 drops the SYNs of concurrent fetches (1 s retries)

    def __init__(self, handler: Any):
        super().__init__(("127.0.0.1", 0), handler)
        self.requests: list[tuple[str, str | None]] = []
        self.failures = 0
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def log_request(self, path: str, byte_range: str | None) -> None:
        with self._lock:
            self.requests.append((path, byte_range))

    def take_failure(self) -> bool:
        with self._lock:
            if self.failures > 0:
                self.failures -= 1
                return True
            return False


class RangeServer(RecordingServer):
    """Serves a folder; records each GET (path, Range header); can fail the next N GETs.

    With ``listing=False`` a folder's URL answers 404 instead of an index page (as a
    server without autoindex, or a CDN, does).
    """

    def __init__(self, folder: str, listing: bool = True):
        super().__init__(partial(_RangeHandler, directory=folder))
        self.listing = listing


@contextlib.contextmanager
def http_server(folder: str, listing: bool = True) -> Iterator[RangeServer]:
    """An HTTP server of ``folder`` running in a thread until the block ends."""
    server = RangeServer(folder, listing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@contextlib.contextmanager
def s3_server() -> Iterator[object]:
    """moto's S3 server in this process, with the environment pointing boto/s3fs at it.

    Yields a boto3 S3 client of the server. Skips the test where moto or s3fs are
    not installed.
    """
    moto_server = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    s3fs = pytest.importorskip("s3fs")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
    }
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        s3fs.S3FileSystem.clear_instance_cache()  # no client of an earlier server
        try:
            yield boto3.client("s3")
        finally:
            s3fs.S3FileSystem.clear_instance_cache()
            server.stop()


def upload(client: object, bucket: str, folder: str, prefix: str = "") -> None:
    """Every file under ``folder`` into ``bucket`` (keys: ``prefix`` + relative path)."""
    existing = {b["Name"] for b in client.list_buckets()["Buckets"]}  # type: ignore[attr-defined]
    if bucket not in existing:
        client.create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(dirpath, name)
            key = prefix + os.path.relpath(path, folder).replace(os.sep, "/")
            with open(path, "rb") as f:
                client.put_object(Bucket=bucket, Key=key, Body=f.read())  # type: ignore[attr-defined]


def read_samples(reader, n, batch_size=2, **kwargs):
    """The first ``n`` samples of ``reader(**kwargs)``: one list of arrays per sample."""

    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, seed=3)
    def pipe():
        out = reader(name="R", **kwargs)
        out = list(out.values()) if isinstance(out, dict) else out
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    p = pipe()
    p.build()
    rows = []
    while len(rows) < n:
        outs = p.run()
        rows += [[np.asarray(o.at(k)) for o in outs] for k in range(len(outs[0]))]
    p.close()
    return rows[:n]
