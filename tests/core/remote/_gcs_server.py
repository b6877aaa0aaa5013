"""A tiny Google Cloud Storage server for the gs:// tests: the JSON API calls gcsfs makes to read.

It serves folders as buckets (an object's name is its path below the folder) and
answers, as storage.googleapis.com does:

- ``GET /storage/v1/b/<bucket>``: the bucket's metadata;
- ``GET /storage/v1/b/<bucket>/o/<name>``: an object's metadata (``size`` as a string,
  ``generation``, ``md5Hash``, ``updated``, ...);
- ``GET /download/storage/v1/b/<bucket>/o/<name>?alt=media``: its bytes, a single
  ``Range`` answered with 206;
- ``GET /storage/v1/b/<bucket>/o?prefix=&delimiter=&maxResults=&pageToken=``: a listing
  (``items`` and, with a delimiter, ``prefixes``), in pages.

gcsfs sends its requests here when ``STORAGE_EMULATOR_HOST`` names the server
(gcsfs.core._location). Everything else answers 404 or 405. Listens on 127.0.0.1.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import hashlib
import json
import os
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlsplit

from _remote_servers import RecordingServer


class _GcsHandler(BaseHTTPRequestHandler):
    server: GcsServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, content_type: str, headers: dict | None = None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, doc: dict) -> None:
        self._send(status, json.dumps(doc).encode(), "application/json; charset=UTF-8")

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": {"code": status, "message": message}})

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        self.server.log_request(url.path, self.headers.get("Range"))
        if self.server.take_failure():
            self._error(503, "injected failure")
            return
        match = re.fullmatch(r"(/download)?/storage/v1/b/([^/]+)(/o(?:/(.+))?)?", url.path)
        if match is None:
            self._error(404, f"no such API call: {url.path}")
            return
        download, bucket, objects, name = match.groups()
        folder = self.server.buckets.get(bucket)
        if folder is None:
            self._error(404, f"no such bucket: {bucket}")
        elif objects is None:
            self._json(200, {"kind": "storage#bucket", "id": bucket, "name": bucket})
        elif name is None:
            self._list(bucket, folder, query)
        else:
            name = unquote(name)
            path = os.path.join(folder, *name.split("/"))
            if not os.path.isfile(path):
                self._error(404, f"no such object: {bucket}/{name}")
            elif download or query.get("alt") == "media":
                self._media(path)
            else:
                self._json(200, self.server.metadata(bucket, name, path))

    def _media(self, path: str) -> None:
        with open(path, "rb") as f:
            data = f.read()
        header = self.headers.get("Range")
        if not header:
            self._send(200, data, "application/octet-stream")
            return
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", header.strip())
        if match is None or match.groups() == ("", ""):
            self._error(400, f"bad Range {header!r}")
            return
        first, last = match.groups()
        size = len(data)
        if first == "":  # the last N bytes
            start, end = max(0, size - int(last)), size
        else:
            start, end = int(first), size if last == "" else min(size, int(last) + 1)
        if start >= size:
            self._send(416, b"", "text/plain", {"Content-Range": f"bytes */{size}"})
            return
        content_range = {"Content-Range": f"bytes {start}-{end - 1}/{size}"}
        self._send(206, data[start:end], "application/octet-stream", content_range)

    def _list(self, bucket: str, folder: str, query: dict) -> None:
        prefix = query.get("prefix", "")
        delimiter = query.get("delimiter", "")
        names = []
        for dirpath, _, files in os.walk(folder):
            rel = os.path.relpath(dirpath, folder).replace(os.sep, "/")
            names += [f if rel == "." else f"{rel}/{f}" for f in files]
        entries: dict[str, str | None] = {}  # sorted names: object -> its path, prefix -> None
        for name in sorted(n for n in names if n.startswith(prefix)):
            cut = name.find(delimiter, len(prefix)) if delimiter else -1
            if cut >= 0:
                entries.setdefault(name[: cut + len(delimiter)], None)
            else:
                entries[name] = os.path.join(folder, *name.split("/"))
        keys = sorted(entries)
        first = int(query.get("pageToken", "0"))
        count = int(query.get("maxResults", "1000"))
        page = keys[first : first + count]
        doc: dict = {
            "kind": "storage#objects",
            "items": [
                self.server.metadata(bucket, k, entries[k])  # type: ignore[arg-type]
                for k in page
                if entries[k] is not None
            ],
            "prefixes": [k for k in page if entries[k] is None],
        }
        if first + count < len(keys):
            doc["nextPageToken"] = str(first + count)
        self._json(200, doc)

    def do_POST(self) -> None:
        self._error(405, "this server only reads")

    do_PUT = do_DELETE = do_PATCH = do_POST


class GcsServer(RecordingServer):
    """Serves ``{bucket: folder}``; records each GET (path, Range); can fail the next N GETs."""

    def __init__(self, buckets: dict[str, str]):
        super().__init__(_GcsHandler)
        self.buckets = buckets

    @staticmethod
    def metadata(bucket: str, name: str, path: str) -> dict:
        """The object resource of the JSON API for the file ``path``."""
        st = os.stat(path)
        with open(path, "rb") as f:
            md5 = base64.b64encode(hashlib.md5(f.read()).digest()).decode()
        stamp = datetime.datetime.fromtimestamp(st.st_mtime, datetime.timezone.utc)
        when = stamp.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        return {
            "kind": "storage#object",
            "id": f"{bucket}/{name}/{st.st_mtime_ns}",
            "name": name,
            "bucket": bucket,
            "generation": str(st.st_mtime_ns),
            "metageneration": "1",
            "contentType": "application/octet-stream",
            "size": str(st.st_size),
            "md5Hash": md5,
            "etag": md5,
            "timeCreated": when,
            "updated": when,
            "storageClass": "STANDARD",
        }


@contextlib.contextmanager
def gcs_server(buckets: dict[str, str]) -> Iterator[GcsServer]:
    """The server in a thread until the block ends (start the client's environment yourself)."""
    server = GcsServer(buckets)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
