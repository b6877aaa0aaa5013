"""The DataLoader proxy's server keeps serving whatever other local processes send it.

Issue 30, item 1: a bare connect-and-close (a port scan), a wrong authentication
digest or an idle connection used to end or block the server's accept loop, so
that new DataLoader workers then waited forever in ``Client()`` and ``stop()``
hung. Every call that could hang here runs under a deadline.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
from multiprocessing.connection import AuthenticationError, Client

import numpy as np
import pytest
from test_proxy_helpers import KeywordDataset

from chute import fn, pipeline_def
from chute.torch import proxy

DEADLINE_S = 20.0


@pipeline_def(batch_size=3, num_threads=1, seed=1)
def keyword_pipe():
    a = fn.external_source(name="a", batch=False)
    b = fn.external_source(name="b", batch=False)
    return a + 1, b * 2


def _raw_connect(address) -> socket.socket:
    family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(5)
    sock.connect(address)
    return sock


def _in_thread(call, seconds: float):
    """Run ``call`` in a daemon thread; (finished, result or exception)."""
    box: dict = {}

    def target():
        try:
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive(), box


def _epoch(server) -> list[int]:
    """One epoch of a torch DataLoader with fork workers (each connects anew)."""
    loader = proxy.DataLoader(
        server,
        KeywordDataset(7, server.proxy),
        batch_size=3,
        num_workers=2,
        multiprocessing_context="fork",
        timeout=DEADLINE_S,  # workers stuck in Client() fail the test instead of hanging it
    )
    seen = []
    for batch in loader:
        a, b = batch["out"]
        np.testing.assert_array_equal(b[:, 0].numpy() * 5, a[:, 0].numpy() - 1)
        seen += a[:, 0].tolist()
    return seen


def _port_scan(address) -> None:
    _raw_connect(address).close()


def _wrong_digest(address) -> None:
    with pytest.raises((AuthenticationError, EOFError, ConnectionError)):
        Client(address, authkey=b"not the server's key").close()


def _garbage(address) -> None:
    with _raw_connect(address) as sock:
        sock.sendall(b"\xff" * 64)
        time.sleep(0.2)


ATTACKS = {"port_scan": _port_scan, "wrong_digest": _wrong_digest, "garbage": _garbage}


@pytest.mark.parametrize("attack", [*ATTACKS, "idle", "all"])
def test_server_survives_local_connections(attack):
    pipe = keyword_pipe()
    server = proxy.Server(pipe, timeout=DEADLINE_S)
    server.start()
    idle = []
    try:
        expected = [10 * i + 1 for i in range(7)]
        assert _epoch(server) == expected
        address = server.proxy.address
        if attack in ("idle", "all"):  # connected, never says a word, stays open
            idle.append(_raw_connect(address))
        for name, call in ATTACKS.items():
            if attack in (name, "all"):
                done, box = _in_thread(lambda call=call: call(address), 10)
                assert done, f"{name}: the connection attempt hung"
                if "error" in box:
                    raise box["error"]
        done, box = _in_thread(lambda: _epoch(server), 3 * DEADLINE_S)
        assert done, "the DataLoader epoch after the connections hung"
        if "error" in box:
            raise box["error"]
        assert box["value"] == expected
    finally:
        start = time.monotonic()
        done, _ = _in_thread(server.stop, 10)
        elapsed = time.monotonic() - start
        for sock in idle:
            sock.close()
        pipe.close()
    assert done and elapsed < 1.0, f"stop() took {elapsed:.2f} s"


def test_stop_returns_promptly_with_an_idle_connection_open():
    pipe = keyword_pipe()
    server = proxy.Server(pipe, timeout=5)
    server.start()
    sock = _raw_connect(server.proxy.address)
    try:
        time.sleep(0.2)  # the server has accepted it and waits for its handshake
        start = time.monotonic()
        done, _ = _in_thread(server.stop, 10)
        elapsed = time.monotonic() - start
    finally:
        sock.close()
        pipe.close()
    assert done and elapsed < 1.0, f"stop() took {elapsed:.2f} s"


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no Unix domain sockets")
def test_listens_on_a_unix_socket_in_a_private_directory():
    pipe = keyword_pipe()
    with proxy.Server(pipe) as server:
        address = server.proxy.address
        assert isinstance(address, str), f"listening on {address!r}, not a Unix socket"
        folder = os.path.dirname(address)
        mode = os.stat(folder).st_mode
        assert stat.S_IMODE(mode) == 0o700 and os.stat(folder).st_uid == os.getuid()
        assert stat.S_ISSOCK(os.stat(address).st_mode)
        refs = [server.proxy(a=[1], b=[2]), server.proxy(a=[3], b=[4])]
        a, b = server.produce_data(refs)
    pipe.close()
    assert a[:, 0].tolist() == [2, 4] and b[:, 0].tolist() == [4, 8]
    assert not os.path.exists(folder), "stop() leaves the socket's directory behind"


def test_handshake_of_an_idle_connection_times_out(monkeypatch):
    monkeypatch.setattr(proxy, "HANDSHAKE_TIMEOUT_S", 0.3)
    pipe = keyword_pipe()
    with proxy.Server(pipe) as server, _raw_connect(server.proxy.address) as sock:
        sock.settimeout(5)
        start = time.monotonic()
        sock.recv(1024)  # the challenge
        assert sock.recv(1024) == b""  # then the server hangs up on us
        assert time.monotonic() - start < 3
    pipe.close()


def test_torch_loader_under_a_port_scan_storm():
    """Many port scans and wrong digests while workers connect: every batch still arrives."""
    pipe = keyword_pipe()
    stop = threading.Event()
    with proxy.Server(pipe, timeout=DEADLINE_S) as server:
        address = server.proxy.address

        def storm():
            while not stop.is_set():
                try:
                    _port_scan(address)
                    Client(address, authkey=b"wrong").close()
                except (OSError, EOFError, AuthenticationError):
                    pass

        attacker = threading.Thread(target=storm, daemon=True)
        attacker.start()
        try:
            done, box = _in_thread(lambda: _epoch(server), 3 * DEADLINE_S)
        finally:
            stop.set()
            attacker.join(10)
    pipe.close()
    assert done, "the epoch hung"
    if "error" in box:
        raise box["error"]
    assert box["value"] == [10 * i + 1 for i in range(7)]
