"""Run a chute pipeline behind a torch DataLoader: workers load, the main process augments.

    with chute.torch.proxy.Server(pipe) as server:
        dataset = MyDataset(files, transform=server.proxy)  # any map-style Dataset
        loader = chute.torch.proxy.DataLoader(server, dataset, batch_size=32, num_workers=4)
        for images, labels in loader:  # the pipeline's outputs, as torch tensors
            ...

The pipeline has one ``fn.external_source(name=...)`` (no ``source``) per
argument of the proxy; positional arguments go to them in the order they
were defined, keyword arguments by name. Calling ``server.proxy`` in a
DataLoader worker sends the sample's inputs (as NumPy arrays) to the server
over a local socket and returns a small :class:`SampleRef`. When the worker
collates a batch, the refs become one :class:`BatchRef` and the server is
told that these samples form a batch; it runs them through the pipeline
(in the main process, where the GPU is) as soon as they arrive.
``server.produce_data(batch)`` replaces each BatchRef in a DataLoader batch
by the pipeline's outputs, waiting for them if needed. Workers never touch
the GPU; ``fork`` and ``spawn`` workers both work.

Batches run in the order they arrive from the workers, so random operators
see iteration numbers in that order; pipelines without randomness give the
same batches as the pipeline fed directly.

The server listens on a Unix domain socket in a private (0700) directory, or
on 127.0.0.1 where there are none, and every connection must prove that it
knows the server's random key before anything it sends is unpickled. A
connection that fails (a port scan, a wrong key, silence past
``HANDSHAKE_TIMEOUT_S``) is logged and closed; the server goes on serving.
docs/security.md states the threat model.
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import shutil
import socket
import struct
import tempfile
import threading
from collections.abc import Iterator, Mapping
from multiprocessing.connection import (
    AuthenticationError,
    Client,
    Connection,
    answer_challenge,
    deliver_challenge,
)
from typing import Any

import numpy as np

import torch
import torch.utils.data
from chute.torch._iterator import to_torch
from torch.utils.data._utils.collate import default_collate_fn_map

__all__ = ["BatchRef", "DataLoader", "PipelineProxy", "SampleRef", "Server"]

# Seconds a new connection has to authenticate before the server hangs up.
HANDSHAKE_TIMEOUT_S = 5.0

_log = logging.getLogger(__name__)


class SampleRef:
    """What ``server.proxy(...)`` returns in a worker: a ticket for one sample's outputs."""

    __slots__ = ("client", "seq", "server")

    def __init__(self, server: str, client: str, seq: int):
        self.server, self.client, self.seq = server, client, seq

    def __reduce__(self) -> Any:
        return (SampleRef, (self.server, self.client, self.seq))

    def __repr__(self) -> str:
        return f"SampleRef({self.client}:{self.seq})"


class BatchRef:
    """A collated batch of SampleRefs; ``Server.produce_data`` turns it into outputs."""

    __slots__ = ("announce", "client", "seqs", "server")

    def __init__(self, server: str, client: str, seqs: tuple[int, ...]):
        self.server, self.client, self.seqs = server, client, tuple(seqs)
        # collated outside the worker that sent the samples: the main process tells the server
        self.announce = False

    @property
    def key(self) -> tuple:
        return (self.client, self.seqs)

    def __reduce__(self) -> Any:
        return (BatchRef, (self.server, self.client, self.seqs))

    def __len__(self) -> int:
        return len(self.seqs)

    def __repr__(self) -> str:
        return f"BatchRef({self.client}, {len(self.seqs)} samples)"


# ---- worker side -----------------------------------------------------------------------------
class _Client:
    """One process's connection to one server (made again after a fork)."""

    def __init__(self, address: str | tuple, authkey: bytes):
        self.pid = os.getpid()
        self.id = f"{os.getpid()}-{os.urandom(6).hex()}"
        self.conn = Client(address, authkey=authkey)
        self.seq = itertools.count()
        self.lock = threading.Lock()

    def send(self, message: tuple) -> None:
        with self.lock:
            self.conn.send(message)


_clients: dict[str, _Client] = {}
_proxies: dict[str, PipelineProxy] = {}


def _client(proxy: PipelineProxy) -> _Client:
    client = _clients.get(proxy.token)
    if client is None or client.pid != os.getpid():
        client = _Client(proxy.address, proxy.authkey)
        _clients[proxy.token] = client
        _proxies[proxy.token] = proxy
    return client


def _as_array(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(x), dtype=np.uint8)
    return np.asarray(x)


class PipelineProxy:
    """The picklable callable that workers use as a transform (``Server.proxy``)."""

    def __init__(self, address: str | tuple, authkey: bytes, token: str, names: tuple[str, ...]):
        self.address = address
        self.authkey = authkey
        self.token = token
        self.names = names

    def __reduce__(self) -> Any:
        return (PipelineProxy, (self.address, self.authkey, self.token, self.names))

    def __call__(self, *args: Any, **kwargs: Any) -> SampleRef:
        """Send one sample's inputs to the server; return its ticket."""
        if len(args) > len(self.names):
            raise TypeError(
                f"the pipeline has {len(self.names)} inputs ({', '.join(self.names)}), "
                f"got {len(args)} positional arguments"
            )
        values = dict(zip(self.names, args))
        for key, value in kwargs.items():
            if key not in self.names:
                raise TypeError(
                    f"the pipeline has no input {key!r}; inputs: {', '.join(self.names)}"
                )
            if key in values:
                raise TypeError(f"input {key!r} given twice")
            values[key] = value
        missing = [n for n in self.names if n not in values]
        if missing:
            raise TypeError(f"missing pipeline inputs: {', '.join(missing)}")
        client = _client(self)
        seq = next(client.seq)
        client.send(("sample", client.id, seq, [_as_array(values[n]) for n in self.names]))
        return SampleRef(self.token, client.id, seq)


def _collate_refs(batch: list[SampleRef], *, collate_fn_map: Any = None) -> BatchRef:
    """Collating refs (in the worker) tells the server that they form one batch."""
    token, client_id = batch[0].server, batch[0].client
    if any(r.server != token or r.client != client_id for r in batch):
        raise ValueError("a batch of SampleRefs must come from one worker and one server")
    seqs = tuple(r.seq for r in batch)
    client = _clients.get(token)
    if client is not None and client.id == client_id and client.pid == os.getpid():
        client.send(("batch", client_id, seqs))
    ref = BatchRef(token, client_id, seqs)
    if client is None or client.id != client_id:  # collated elsewhere: the main process announces
        ref.announce = True
    return ref


# torch's default_collate looks up element types here, in workers and in the main process.
default_collate_fn_map[SampleRef] = _collate_refs


# ---- server side -----------------------------------------------------------------------------
class Server:
    """Runs ``pipeline`` in this process for samples that DataLoader workers send.

    A context manager: ``__enter__`` builds the pipeline and starts listening;
    ``__exit__`` stops. ``timeout`` bounds the wait for a batch in
    ``produce_data`` (seconds, None = forever).
    """

    def __init__(self, pipeline: Any, timeout: float | None = 300.0):
        self.pipeline = pipeline
        self.timeout = timeout
        self.names = tuple(pipeline.external_source_names())
        if not self.names:
            raise ValueError(
                "the pipeline has no fn.external_source(name=...) without a source to feed"
            )
        self._token = os.urandom(8).hex()
        self._authkey = os.urandom(16)
        self._listener: socket.socket | None = None
        self._address: str | tuple | None = None
        self._folder: str | None = None  # the private directory of the Unix socket
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._samples: dict[tuple[str, int], list[np.ndarray]] = {}
        self._results: dict[tuple, Any] = {}
        self._cond = threading.Condition()
        self._groups: queue.Queue = queue.Queue()
        self._running = False

    # ---- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> Server:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        """Build the pipeline and start serving."""
        if self._running:
            return
        self.pipeline.build()
        self._listener, self._address, self._folder = _listen()
        self._running = True
        self._threads = [
            threading.Thread(target=self._accept_loop, name="chute-proxy-accept", daemon=True),
            threading.Thread(target=self._run_loop, name="chute-proxy-run", daemon=True),
        ]
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        """Stop serving (the pipeline stays built); returns within about half a second."""
        if not self._running:
            return
        self._running = False
        self._groups.put(None)
        _hang_up(self._listener)  # wakes the accept loop
        self._listener.close()
        with self._lock:
            for sock in self._connections:
                _hang_up(sock)  # wakes their receive loops
        for t in self._threads:
            t.join(timeout=0.25)  # a batch still in the pipeline finishes on its own
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
        with self._cond:
            self._cond.notify_all()

    @property
    def proxy(self) -> PipelineProxy:
        """The transform to hand to a Dataset (picklable; call it in DataLoader workers)."""
        if self._listener is None:
            raise RuntimeError("start the server first: `with Server(pipe) as server:`")
        proxy = PipelineProxy(self._address, self._authkey, self._token, self.names)
        _proxies[self._token] = proxy
        return proxy

    # ---- serving -----------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        """Accept connections; each authenticates in a thread of its own."""
        while self._running:
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                if not self._running:
                    return
                _log.warning("chute proxy: accepting a connection failed: %s", exc)
                threading.Event().wait(0.05)  # out of file descriptors: let some close
                continue
            threading.Thread(
                target=self._serve, args=(sock,), name="chute-proxy-conn", daemon=True
            ).start()

    def _serve(self, sock: socket.socket) -> None:
        """Authenticate one connection, then receive its messages until it closes."""
        with self._lock:
            if not self._running:
                sock.close()
                return
            self._connections.add(sock)
        # The handshake must finish in time: an idle or half-speaking peer is hung up on.
        timer = threading.Timer(HANDSHAKE_TIMEOUT_S, _hang_up, (sock,))
        timer.daemon = True
        timer.start()
        peer = "a local process"
        try:
            peer = _peer(sock)
            with Connection(os.dup(sock.fileno())) as conn:
                try:
                    _check_peer_user(sock)
                    deliver_challenge(conn, self._authkey)
                    answer_challenge(conn, self._authkey)
                except (AuthenticationError, EOFError, OSError) as exc:
                    if self._running:
                        _log.warning(
                            "chute proxy: refused a connection from %s: %s",
                            peer,
                            _reason(exc, timer),
                        )
                    return
                finally:
                    timer.cancel()
                self._receive_loop(conn, peer)
        except Exception as exc:  # never let one connection end the server
            _log.warning("chute proxy: connection from %s failed: %r", peer, exc)
        finally:
            with self._lock:
                self._connections.discard(sock)
            sock.close()

    def _receive_loop(self, conn: Any, peer: str) -> None:
        while self._running:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            try:
                self._handle(message)
            except Exception as exc:  # a malformed message: drop it, keep the connection
                _log.warning("chute proxy: bad message from %s: %r", peer, exc)

    def _handle(self, message: tuple) -> None:
        if message[0] == "sample":
            _, client, seq, arrays = message
            with self._cond:
                self._samples[(client, seq)] = arrays
                self._cond.notify_all()
        elif message[0] == "batch":
            _, client, seqs = message
            self._groups.put((client, tuple(seqs)))

    def _run_loop(self) -> None:
        while True:
            group = self._groups.get()
            if group is None:
                return
            client, seqs = group
            try:
                outputs: Any = self._run_group(client, seqs)
            except BaseException as exc:
                outputs = exc
            with self._cond:
                self._results[(client, seqs)] = outputs
                self._cond.notify_all()

    def _run_group(self, client: str, seqs: tuple[int, ...]) -> tuple[Any, ...]:
        pipe = self.pipeline
        if len(seqs) > pipe.batch_size:
            raise ValueError(
                f"a DataLoader batch of {len(seqs)} samples is larger than the pipeline's "
                f"batch_size={pipe.batch_size}"
            )
        keys = [(client, s) for s in seqs]
        with self._cond:
            while self._running and not all(k in self._samples for k in keys):
                self._cond.wait(0.1)
            samples = [self._samples.pop(k) for k in keys if k in self._samples]
        if len(samples) != len(keys):
            raise RuntimeError("the server stopped before the batch's samples arrived")
        for i, name in enumerate(self.names):
            pipe.feed_input(name, [s[i] for s in samples])
        return tuple(to_torch(out) for out in pipe.run())

    def _wait(self, ref: BatchRef) -> Any:
        if ref.announce:
            self._groups.put(ref.key)
        with self._cond:
            ok = self._cond.wait_for(
                lambda: ref.key in self._results or not self._running, self.timeout
            )
            if not ok or ref.key not in self._results:
                raise TimeoutError(
                    f"no pipeline output for {ref!r} after {self.timeout} s"
                    if self._running
                    else "the proxy server was stopped"
                )
            result = self._results.pop(ref.key)
        if isinstance(result, BaseException):
            raise result
        return result[0] if len(result) == 1 else result

    def produce_data(self, batch: Any) -> Any:
        """A DataLoader batch with every BatchRef replaced by the pipeline's outputs (in order)."""
        if isinstance(batch, BatchRef):
            return self._wait(batch)
        if isinstance(batch, list) and batch and all(isinstance(r, SampleRef) for r in batch):
            return self._wait(_collate_refs(batch))
        if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # namedtuple
            return type(batch)(*(self.produce_data(x) for x in batch))
        if isinstance(batch, (list, tuple)):
            return type(batch)(self.produce_data(x) for x in batch)
        if isinstance(batch, Mapping):
            return {k: self.produce_data(v) for k, v in batch.items()}
        return batch


def _listen() -> tuple[socket.socket, str | tuple, str | None]:
    """A listening socket, its address and its private directory (if a Unix socket)."""
    if hasattr(socket, "AF_UNIX"):
        folder = tempfile.mkdtemp(prefix="chute-proxy-")  # mode 0700: this user only
        path = os.path.join(folder, "s")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(path)
        except OSError as exc:  # e.g. a TMPDIR too long for a socket path
            sock.close()
            shutil.rmtree(folder, ignore_errors=True)
            _log.warning("chute proxy: no Unix socket (%s), listening on 127.0.0.1", exc)
        else:
            address: str | tuple = path
            sock.listen(128)
            sock.settimeout(0.2)  # where shutdown() does not wake accept(), this does
            return sock, address, folder
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.settimeout(0.2)
    return sock, sock.getsockname(), None


def _hang_up(sock: socket.socket) -> None:
    """Wake whatever thread waits on ``sock`` (closing it alone does not)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # not connected, or closed already


def _peer(sock: socket.socket) -> str:
    """The peer of a connection, as the log names it (its pid where the OS tells)."""
    if sock.family == getattr(socket, "AF_UNIX", None):
        if hasattr(socket, "SO_PEERCRED"):  # Linux
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            pid, uid, _ = struct.unpack("3i", creds)
            return f"pid {pid} (uid {uid})"
        return "a local process"
    try:
        host, port = sock.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "a closed connection"


def _check_peer_user(sock: socket.socket) -> None:
    """Refuse another user's process where the OS tells who it is (the directory's mode
    already keeps other users out; root can open it all the same)."""
    if sock.family == getattr(socket, "AF_UNIX", None) and hasattr(socket, "SO_PEERCRED"):
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        uid = struct.unpack("3i", creds)[1]
        if uid != os.getuid():
            raise AuthenticationError(f"the peer runs as uid {uid}, the server as {os.getuid()}")


def _reason(exc: BaseException, timer: threading.Timer) -> str:
    if timer.finished.is_set() and not isinstance(exc, AuthenticationError):
        return f"no handshake within {HANDSHAKE_TIMEOUT_S} s"
    if isinstance(exc, EOFError):
        return "closed before authenticating (a port scan?)"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class DataLoader(torch.utils.data.DataLoader):
    """A torch DataLoader whose batches come out through ``server.produce_data``."""

    def __init__(self, server: Server, dataset: Any, *args: Any, **kwargs: Any):
        super().__init__(dataset, *args, **kwargs)
        self.server = server

    def __iter__(self) -> Iterator[Any]:
        for batch in super().__iter__():
            yield self.server.produce_data(batch)
