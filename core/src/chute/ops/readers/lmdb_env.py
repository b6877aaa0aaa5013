"""LMDB environments shared by the readers of a process (readers.caffe, readers.caffe2)."""

from __future__ import annotations

import os
import threading
from typing import Any

__all__ = ["close_env", "lmdb_module", "open_env"]


def lmdb_module() -> Any:
    """The ``lmdb`` module, or an ImportError that names the extra to install."""
    try:
        import lmdb
    except ImportError as exc:
        raise ImportError(
            "fn.readers.caffe and fn.readers.caffe2 need the 'lmdb' package: "
            "pip install 'chute[lmdb]'"
        ) from exc
    return lmdb


_ENVS: dict[str, list[Any]] = {}  # real path -> [environment, users]: lmdb opens each once
_ENVS_LOCK = threading.Lock()


def open_env(path: str) -> Any:
    """The read-only LMDB environment at ``path``, shared by every reader of this process."""
    lmdb = lmdb_module()
    key = os.path.realpath(path)
    with _ENVS_LOCK:
        entry = _ENVS.get(key)
        if entry is None:
            env = lmdb.open(
                path,
                readonly=True,
                lock=False,
                readahead=False,
                subdir=os.path.isdir(path),
                max_readers=512,
            )
            entry = _ENVS[key] = [env, 0]
        entry[1] += 1
        return entry[0]


def close_env(path: str) -> None:
    """One reader is done with the environment; the last one closes it."""
    key = os.path.realpath(path)
    with _ENVS_LOCK:
        entry = _ENVS.get(key)
        if entry is not None:
            entry[1] -= 1
            if entry[1] <= 0:
                entry[0].close()
                del _ENVS[key]
