"""Where readers find their files: local paths, or any fsspec URL (s3://, gs://, http(s)://, ...).

Every reader lists, opens and reads through these functions. Local paths take the
operating system's calls directly (the readers keep their own fast paths for them:
native batch reads, memory maps, ``pread``); a path with a protocol (``s3://bucket/x``,
``https://host/x``, chained ones such as ``simplecache::s3://bucket/x`` for a local
cache) goes through `fsspec <https://filesystem-spec.readthedocs.io>`_, imported on
first use (``pip install 'chute[remote]'`` brings fsspec, s3fs and aiohttp; ``'chute[gcs]'``
fsspec and gcsfs for ``gs://``). A URL whose protocol's package is missing fails with an
ImportError naming the URL and the package to install.

- Credentials and endpoints come from each backend's standard configuration (for S3:
  ``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``, ``~/.aws/config``; for GCS: Application
  Default Credentials, ``STORAGE_EMULATOR_HOST`` for an emulator; fsspec's own
  ``FSSPEC_<PROTOCOL>_<OPTION>`` variables).
- A batch is fetched in one call: :func:`read_many` (whole objects) and
  :func:`read_ranges` (byte ranges of indexed formats) run their requests concurrently
  over the backend's pooled connections (fsspec's event loop for s3/gcs/http, a thread
  pool for the others), so the reader stage, which runs ahead of the pipeline, keeps
  the decoders fed.
- Transient failures (connection resets, timeouts, 5xx answers) are retried with
  backoff, ``RETRIES`` times; a missing object or a refused one fails at once.
- Every error is an OSError whose message names the URL.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

__all__ = [
    "RETRIES",
    "basename",
    "check_folder",
    "dirname",
    "fingerprint",
    "is_url",
    "isdir",
    "join",
    "list_dirs",
    "open_binary",
    "read_bytes",
    "read_many",
    "read_ranges",
    "read_text",
    "relpath",
    "size",
    "walk_files",
]

RETRIES = 3  # attempts at a request that failed for a transient reason
_BACKOFF_S = 0.1  # the first wait; each further wait is 4 times longer
_PERMANENT = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)
_THREADS = 16  # concurrent requests to backends without their own event loop


def is_url(path: str) -> bool:
    """Whether ``path`` names a remote object (has a protocol), not a local file."""
    return "://" in path or "::" in path


def _fsspec() -> Any:
    try:
        import fsspec
    except ImportError as exc:
        raise ImportError(
            "reading URLs (s3://, gs://, http://, ...) needs fsspec: "
            "pip install 'chute[remote]' (fsspec, s3fs, aiohttp)"
        ) from exc
    return fsspec


# protocol -> (the package its fsspec backend needs, chute's extra that brings it)
_BACKENDS = {
    "s3": ("s3fs", "remote"),
    "s3a": ("s3fs", "remote"),
    "gs": ("gcsfs", "gcs"),
    "gcs": ("gcsfs", "gcs"),
    "http": ("aiohttp", "remote"),
    "https": ("aiohttp", "remote"),
}


def _missing_backend(url: str, exc: ImportError) -> ImportError:
    """An ImportError naming the URL and the package its protocol needs."""
    protocols = [part.split("://", 1)[0] for part in url.split("::") if "://" in part]
    for protocol in protocols:
        if protocol in _BACKENDS:
            package, extra = _BACKENDS[protocol]
            if _importable(package):
                continue
            return ImportError(
                f"cannot read {url!r}: {protocol}:// URLs are read through fsspec's {package} "
                f"backend, which is not installed or cannot be imported ({exc}): "
                f"pip install {package} (or pip install 'chute[{extra}]')"
            )
    return ImportError(f"cannot read {url!r}: {exc}")


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _resolve(url: str) -> tuple[Any, str]:
    """(fsspec filesystem, the path it knows the object by); the instance is shared."""
    fsspec = _fsspec()
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as exc:  # the protocol's backend package is missing
        raise _missing_backend(url, exc) from exc
    except (ValueError, KeyError) as exc:  # unknown protocol, bad chain
        raise OSError(f"cannot open {url!r}: {exc}") from None


def _failure(url: str, exc: BaseException) -> OSError:
    """An OSError naming the URL (of the class fsspec raised where it is an OSError)."""
    if isinstance(exc, OSError) and url in str(exc):
        return exc
    reason = str(exc) or type(exc).__name__
    kind = type(exc) if isinstance(exc, _PERMANENT) else OSError
    return kind(f"cannot read {url!r}: {reason}")


def _with_retries(url: str, call: Callable[[], Any]) -> Any:
    for attempt in range(RETRIES):
        try:
            return call()
        except _PERMANENT as exc:
            raise _failure(url, exc) from None
        except ImportError:
            raise
        except Exception as exc:  # fsspec backends raise their clients' own errors
            if attempt + 1 == RETRIES:
                raise _failure(url, exc) from None
            time.sleep(_BACKOFF_S * 4**attempt)
    raise AssertionError("unreachable")


# ---- names ----------------------------------------------------------------------------------


def join(base: str | None, name: str) -> str:
    """``name`` under ``base`` (a folder path or URL); ``name`` when absolute or a URL."""
    if not base or is_url(name):
        return name
    if is_url(base):
        return f"{base.rstrip('/')}/{name.lstrip('/')}"
    return os.path.join(base, name)


def dirname(path: str) -> str:
    """The folder holding ``path``."""
    if is_url(path):
        return path.rstrip("/").rsplit("/", 1)[0]
    return os.path.dirname(os.path.abspath(path))


def basename(path: str) -> str:
    """The last part of ``path``."""
    return path.rstrip("/").rsplit("/", 1)[-1] if is_url(path) else os.path.basename(path)


def relpath(path: str, root: str) -> str:
    """``path`` relative to ``root`` (for names that do not depend on where data is mounted)."""
    if is_url(path) or is_url(root):
        prefix = root.rstrip("/") + "/"
        return path[len(prefix) :] if path.startswith(prefix) else path
    return os.path.relpath(path, root)


# ---- listing --------------------------------------------------------------------------------


def isdir(path: str) -> bool:
    """Whether ``path`` is a folder (a prefix holding objects, remotely)."""
    if not is_url(path):
        return os.path.isdir(path)
    fs, p = _resolve(path)
    return bool(_with_retries(path, lambda: fs.isdir(p)))


def check_folder(root: str, where: str, instead: str) -> None:
    """Raise a ValueError naming ``root`` unless it is a folder that can be listed.

    An HTTP server lists a folder only through an index page of links (as
    ``python -m http.server`` or nginx's autoindex serve them); where it has none, the
    message says what to pass instead (``instead``: the reader's ``files`` /
    ``file_list`` arguments).
    """
    if isdir(root):
        return
    if re.search(r"(^|::)https?://", root):
        raise ValueError(
            f"{where}: file_root {root!r} cannot be listed: the HTTP server gives no index "
            f"page of links for it (HTTP has no other way to list a folder); pass {instead} "
            "instead"
        )
    raise ValueError(f"{where}: file_root {root!r} is not a folder")


def list_dirs(root: str) -> list[str]:
    """The names of the folders directly under ``root``, sorted."""
    if not is_url(root):
        return sorted(e.name for e in os.scandir(root) if e.is_dir())
    fs, p = _resolve(root)
    entries = _with_retries(root, lambda: fs.ls(p, detail=True))
    names = {basename(str(e["name"])) for e in entries if e.get("type") == "directory"}
    return sorted(n for n in names if n)


def _walk_order(rel: str) -> tuple:
    # os.walk's top-down order with sorted names: a folder's files before its subfolders
    parts = rel.split("/")
    return (*((1, d) for d in parts[:-1]), (0, parts[-1]))


def walk_files(root: str) -> list[str]:
    """Every file below ``root`` as a path relative to it, in sorted ``os.walk`` order."""
    if not is_url(root):
        out = []
        for folder, dirs, names in os.walk(root):
            dirs.sort()
            rel = os.path.relpath(folder, root)
            out += [n if rel == "." else os.path.join(rel, n) for n in sorted(names)]
        return out
    fs, p = _resolve(root)
    found = _with_retries(root, lambda: fs.find(p, withdirs=False, detail=False))
    prefix = p.rstrip("/") + "/"
    rels = [f[len(prefix) :] for f in found if f.startswith(prefix)]
    return sorted((r for r in rels if r and not r.endswith("/")), key=_walk_order)


# ---- reading --------------------------------------------------------------------------------


def size(path: str) -> int:
    """The size of the file or object in bytes."""
    if not is_url(path):
        return os.stat(path).st_size
    fs, p = _resolve(path)
    return int(_with_retries(path, lambda: fs.size(p)))


def fingerprint(path: str) -> str:
    """What changes when the file does: size and modification time (or the object's ETag)."""
    if not is_url(path):
        st = os.stat(path)
        return f"{os.path.abspath(path)}\0{st.st_size}\0{st.st_mtime_ns}"
    fs, p = _resolve(path)
    info = _with_retries(path, lambda: fs.info(p))
    stamp = next(
        (info[k] for k in ("ETag", "etag", "md5Hash", "LastModified", "mtime") if info.get(k)), ""
    )
    return f"{path}\0{info.get('size')}\0{stamp}"


def open_binary(path: str, block_size: int = 4 << 20) -> IO[bytes]:
    """A seekable binary file (remote objects are read ahead ``block_size`` bytes at a time)."""
    if not is_url(path):
        return open(path, "rb", buffering=0)
    fs, p = _resolve(path)
    return _with_retries(
        path, lambda: fs.open(p, "rb", block_size=block_size, cache_type="readahead")
    )


def read_bytes(path: str) -> bytes:
    """The whole file or object."""
    if not is_url(path):
        with open(path, "rb") as f:
            return f.read()
    fs, p = _resolve(path)
    return _with_retries(path, lambda: fs.cat_file(p))


def read_text(path: str) -> str:
    """The whole file as UTF-8 text."""
    return read_bytes(path).decode("utf-8")


def read_many(paths: Sequence[str]) -> list[bytes | OSError]:
    """Whole objects, fetched concurrently: each one's bytes, or the OSError naming it."""
    return read_ranges([(p, None, None) for p in paths])


def read_ranges(requests: Sequence[tuple[str, int | None, int | None]]) -> list[bytes | OSError]:
    """Byte ranges ``[start, end)`` of files or objects (None: from the start / to the end),
    fetched concurrently; each result is the bytes (fewer where the object ends first) or
    the OSError naming the URL. Transient failures are retried."""
    out: list[bytes | OSError | None] = [None] * len(requests)
    pending = list(range(len(requests)))
    for attempt in range(RETRIES):
        groups: dict[int, tuple[Any, list[int], list[str]]] = {}
        for k in pending:
            url = requests[k][0]
            if not is_url(url):
                out[k] = _read_local(*requests[k])
                continue
            try:
                fs, p = _resolve(url)
            except OSError as exc:
                out[k] = exc
                continue
            groups.setdefault(id(fs), (fs, [], []))[1].append(k)
            groups[id(fs)][2].append(p)
        retry = []
        for fs, ks, ps in groups.values():
            starts = [requests[k][1] for k in ks]
            ends = [requests[k][2] for k in ks]
            for k, result in zip(ks, _fetch(fs, ps, starts, ends)):
                url, start, end = requests[k]
                if isinstance(result, BaseException):
                    out[k] = _failure(url, result)
                    if not isinstance(result, _PERMANENT):
                        retry.append(k)
                else:
                    out[k] = _cut(bytes(result), start, end)
        if not retry:
            break
        pending = retry
        if attempt + 1 < RETRIES:
            time.sleep(_BACKOFF_S * 4**attempt)
        else:
            break
    return out  # type: ignore[return-value]


def _fetch(fs: Any, paths: list[str], starts: list, ends: list) -> list[Any]:
    if getattr(fs, "async_impl", False):
        try:
            return list(fs.cat_ranges(paths, starts, ends, on_error="return"))
        except Exception as exc:  # a failure of the whole call: every request gets it
            return [exc] * len(paths)
    pool = _thread_pool()

    def one(k: int) -> Any:
        try:
            return fs.cat_file(paths[k], starts[k], ends[k])
        except Exception as exc:
            return exc

    return list(pool.map(one, range(len(paths))))


def _cut(data: bytes, start: int | None, end: int | None) -> bytes:
    """The asked range of what a server sent: one that ignores Range sends the whole object."""
    if start is None and end is None:
        return data
    want = None if end is None else end - (start or 0)
    if want is not None and len(data) > want:
        return data[start or 0 : end]
    return data


def _read_local(path: str, start: int | None, end: int | None) -> bytes | OSError:
    try:
        with open(path, "rb", buffering=0) as f:
            if start:
                f.seek(start)
            return f.read() if end is None else f.read(max(0, end - (start or 0)))
    except OSError as exc:
        return OSError(f"cannot read {path!r}: {exc.strerror or exc}")


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _thread_pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(_THREADS, thread_name_prefix="chute-remote")
        return _POOL
