"""The TCP fault proxy (fault_proxy.py) on its own: a tiny threaded HTTP server on 127.0.0.1
behind it, real clients (http.client, raw sockets) in front. Time bounds are lower bounds only."""

from __future__ import annotations

import hashlib
import http.client
import json
import random
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .fault_proxy import FaultProxy

MB = 1_000_000
# What a client may see when the proxy resets its connection (RemoteDisconnected: EOF instead
# of a status line, which http.client reports as a ConnectionResetError subclass).
RESET_ERRORS = (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected)


def payload(n: int) -> bytes:
    return random.Random(n).randbytes(n)


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


class _Handler(BaseHTTPRequestHandler):
    """GET /N -> payload(N); POST -> {"len", "sha256"} of the body. Keep-alive (HTTP/1.1)."""

    protocol_version = "HTTP/1.1"
    timeout = 10

    def _answer(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._answer(payload(int(self.path.strip("/") or 0)))

    def do_POST(self):
        n = int(self.headers["Content-Length"])
        body = self.rfile.read(n)
        if len(body) < n:                 # the connection went away mid-body
            self.close_connection = True
            return
        self.server.posts.append(len(body))
        self._answer(json.dumps({"len": len(body), "sha256": sha(body)}).encode())

    def log_message(self, *args):
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass                              # resets and timeouts are what these tests cause


@pytest.fixture
def upstream():
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.posts = []
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    t.join(5)


def proxy_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("fault-proxy-")]


@pytest.fixture
def proxy(upstream):
    with FaultProxy(upstream.server_address[1], seed=7) as p:
        yield p
    assert proxy_threads() == []


def request(p: FaultProxy, method: str, path: str, body: bytes | None = None, timeout: float = 10,
            conn: http.client.HTTPConnection | None = None) -> bytes:
    conn = conn or http.client.HTTPConnection("127.0.0.1", p.port, timeout=timeout)
    conn.request(method, path, body=body)
    resp = conn.getresponse()
    assert resp.status == 200
    return resp.read()


def post(p: FaultProxy, body: bytes, **kw) -> dict:
    return json.loads(request(p, "POST", "/", body, **kw))


def test_pass_through_get_and_post_intact(proxy, upstream):
    assert proxy.url == f"http://127.0.0.1:{proxy.port}"
    got = request(proxy, "GET", f"/{5 * MB}")
    assert sha(got) == sha(payload(5 * MB))
    body = payload(5 * MB + 1)
    assert post(proxy, body) == {"len": len(body), "sha256": sha(body)}
    assert upstream.posts == [len(body)]
    assert proxy.connections == 2 and proxy.resets == 0
    assert proxy.bytes_up > len(body) and proxy.bytes_down > 5 * MB


@pytest.mark.parametrize("direction", ["down", "up"])
def test_rate_cap_is_a_lower_bound_on_time(proxy, direction):
    proxy.rate_bps = 2 * MB
    t0 = time.monotonic()
    if direction == "down":
        assert len(request(proxy, "GET", f"/{3 * MB}")) == 3 * MB
    else:
        assert post(proxy, payload(3 * MB))["len"] == 3 * MB
    assert time.monotonic() - t0 >= 1.2


def test_delay_per_chunk(proxy):
    proxy.delay_s = 0.3
    t0 = time.monotonic()
    assert request(proxy, "GET", "/10") == payload(10)
    assert time.monotonic() - t0 >= 0.3


def test_reset_after_bytes_then_next_request_works(proxy, upstream):
    proxy.reset_after_bytes = 100_000
    with pytest.raises(RESET_ERRORS):
        post(proxy, payload(MB))
    assert proxy.resets == 1 and proxy.bytes_up == 100_000   # exactly the bytes allowed
    assert upstream.posts == []
    proxy.reset_after_bytes = None
    assert post(proxy, b"hello") == {"len": 5, "sha256": sha(b"hello")}


def test_stall_holds_bytes_until_released(proxy):
    proxy.stalled = True
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        request(proxy, "GET", "/100", timeout=0.5)
    assert time.monotonic() - t0 >= 0.45
    # Bytes sent while stalled are held, not lost: the answer comes once the stall ends.
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as s:
        s.sendall(b"GET /100 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        s.settimeout(0.5)
        with pytest.raises(TimeoutError):
            s.recv(1)
        proxy.stalled = False
        s.settimeout(5)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    assert got.startswith(b"HTTP/1.") and got.endswith(payload(100))
    assert request(proxy, "GET", "/100", timeout=5) == payload(100)


def test_blackout_resets_open_and_new_connections(proxy):
    kept = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=5)
    assert request(proxy, "GET", "/10", conn=kept) == payload(10)
    proxy.blackout = True
    with pytest.raises(RESET_ERRORS):
        request(proxy, "GET", "/10", conn=kept)
    kept.close()
    for _ in range(3):
        with pytest.raises(RESET_ERRORS):
            request(proxy, "GET", "/10", timeout=5)
    assert proxy.resets >= 4
    proxy.blackout = False
    assert request(proxy, "GET", "/10", timeout=5) == payload(10)


def test_reset_all_counts_open_connections(proxy):
    socks = [socket.create_connection(("127.0.0.1", proxy.port), timeout=5) for _ in range(3)]
    deadline = time.monotonic() + 5
    while proxy.connections < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proxy.reset_all() == 3
    for s in socks:
        with s, pytest.raises(ConnectionResetError):
            s.recv(1)


def test_half_close_is_propagated():
    # An echo server that answers only after it sees EOF: it needs the client's shutdown(WR).
    lsock = socket.create_server(("127.0.0.1", 0))
    lsock.settimeout(5)

    def echo():
        conn, _ = lsock.accept()
        with conn:
            conn.settimeout(5)
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
            conn.sendall(data[::-1])

    t = threading.Thread(target=echo, daemon=True)
    t.start()
    with lsock, FaultProxy(lsock.getsockname()[1]) as p:
        with socket.create_connection(("127.0.0.1", p.port), timeout=5) as s:
            s.sendall(b"abc" * 1000)
            s.shutdown(socket.SHUT_WR)
            got = b""
            while chunk := s.recv(65536):
                got += chunk
        assert got == (b"abc" * 1000)[::-1]
        t.join(5)
        assert p.resets == 0
    assert proxy_threads() == []


def test_stop_while_stalled_is_bounded_and_leaks_no_threads(upstream):
    p = FaultProxy(upstream.server_address[1]).start()
    socks = [socket.create_connection(("127.0.0.1", p.port), timeout=5) for _ in range(4)]
    for s in socks[:3]:
        s.sendall(b"POST / HTTP/1.1\r\nContent-Length: 1000\r\n\r\npartial")
    socks[3].sendall(b"GET /100 HTTP/1.1\r\nHost: x\r\n\r\n")
    deadline = time.monotonic() + 5
    while p.connections < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    p.stalled = True
    t0 = time.monotonic()
    p.stop()
    assert time.monotonic() - t0 < 3
    assert proxy_threads() == []
    for s in socks:                   # each client sees its connection end (no TimeoutError)
        with s:
            s.settimeout(2)
            try:
                while s.recv(65536):      # whatever was forwarded before the stop, then the end
                    pass
            except ConnectionResetError:
                pass


def test_chaos_is_seeded_bounded_and_restores_knobs(upstream):
    faults = {"stall_s": 0.15, "blackout_s": 0.15, "rate_s": 0.15, "rate_bps": MB}  # + reset_all
    port = upstream.server_address[1]
    with FaultProxy(port, seed=3) as a, FaultProxy(port, seed=3) as b:
        a.chaos(faults, period_s=0.05)
        b.chaos(faults, period_s=0.05)
        time.sleep(1.0)
        a.stop_chaos()
        b.stop_chaos()
        assert a.stalled is False and a.blackout is False and a.rate_bps is None
        assert request(a, "GET", "/1000", timeout=5) == payload(1000)
        la = [(k, s) for _, k, s in a.chaos_log]
        lb = [(k, s) for _, k, s in b.chaos_log]
        assert la and lb and {k for k, _ in la + lb} <= {"reset", "stall_s", "blackout_s", "rate_s"}
        short, long_ = sorted((la, lb), key=len)
        assert long_[: len(short)] == short           # same seed, same draws
    assert proxy_threads() == []
