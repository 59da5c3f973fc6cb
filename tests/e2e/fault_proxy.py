"""A TCP fault proxy for loopback tests of the HTTP upload client; this module holds no tests.

`FaultProxy(upstream_port)` listens on 127.0.0.1 (a free port, never another address) and
forwards every accepted connection to 127.0.0.1:upstream_port, byte for byte, with faults
switched at run time: added latency, a byte-rate cap, resets (a real RST: SO_LINGER 0, then
close), stalls (bytes held, sockets open) and blackouts (every connection reset), plus an
optional seeded `chaos()` thread that applies them at random moments. Python's standard library
only: one accept thread and two pump threads per connection, each looping on 0.2 s socket
timeouts so that stop() ends everything within about 2 s, whatever the knobs say.
"""

from __future__ import annotations

import random
import socket
import struct
import threading
import time

POLL_S = 0.2          # every blocking socket call returns at least this often
CHUNK = 65536         # most bytes one recv() forwards at a time
_LINGER_0 = struct.pack("ii", 1, 0)


def _abort(sock: socket.socket) -> None:
    """Close `sock` with an RST (SO_LINGER on, 0 s), never a FIN; errors are ignored."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_0)
    except OSError:
        pass
    sock.close()


class _Conn:
    """One client connection and its upstream; `closed` once either side was closed by us."""

    def __init__(self, n: int, client: socket.socket, upstream: socket.socket):
        self.n, self.client, self.upstream = n, client, upstream
        self.lock = threading.Lock()
        self.closed = False
        self.eofs = 0          # directions that ended with an orderly EOF (2: close both, no RST)
        self.up_bytes = 0      # client->server bytes forwarded on this connection

    def claim(self) -> bool:
        """Marks the connection closed; True for the one caller that must close the sockets."""
        with self.lock:
            was, self.closed = self.closed, True
        return not was

    def close(self, rst: bool, claimed: bool = False) -> bool:
        """Closes both sockets once (RST when `rst`); True when this call did it."""
        if not (claimed or self.claim()):
            return False
        for s in (self.client, self.upstream):
            if rst:
                _abort(s)
            else:
                s.close()
        return True


class FaultProxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1", seed: int = 0):
        self.upstream = (upstream_host, upstream_port)
        self.seed = seed
        # Knobs: read by the pumps before every chunk (and by accept for each connection).
        self.delay_s: float = 0.0                 # latency added per forwarded chunk, each direction
        self.rate_bps: float | None = None        # bytes/s per direction per connection
        self.reset_after_bytes: int | None = None  # RST once this many client->server bytes went
        self.stalled: bool = False                # hold all bytes (nothing read, nothing sent)
        self._blackout = False
        # Counters: connections accepted, connections we reset, bytes forwarded each way.
        self.connections = self.resets = self.bytes_up = self.bytes_down = 0
        self.chaos_log: list[tuple[float, str, float]] = []  # (monotonic time, fault, seconds)
        self._lock = threading.Lock()
        self._conns: dict[int, _Conn] = {}
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._chaos_stop = threading.Event()
        self._listener: socket.socket | None = None
        self.port = 0
        self.url = ""

    # ------------------------------------------------------------------ life cycle

    def start(self) -> FaultProxy:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(POLL_S)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._spawn(self._accept_loop, "accept")
        return self

    def stop(self) -> None:
        """Ends chaos, the listener and every connection (RST, not counted in `resets`), then joins
        every thread this proxy started, waiting at most about 2 s in all."""
        self._stopping.set()
        self._chaos_stop.set()
        deadline = time.monotonic() + 2.0
        # The accept thread first (it ends within POLL_S), so that no connection starts after
        # the snapshot below; then every connection, then every other thread.
        for pass_ in ("accept", "all"):
            if pass_ == "all":
                with self._lock:
                    conns = list(self._conns.values())
                    self._conns.clear()
                for c in conns:
                    c.close(rst=True)
            with self._lock:
                threads = list(self._threads)
            for t in threads:
                if (pass_ == "all" or t.name.endswith("-accept")) and t is not threading.current_thread():
                    t.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _spawn(self, target, name: str, *args) -> None:
        t = threading.Thread(target=target, args=args, name=f"fault-proxy-{self.port}-{name}", daemon=True)
        with self._lock:
            self._threads = [x for x in self._threads if x.is_alive()]
            self._threads.append(t)
        t.start()

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + n)

    # ------------------------------------------------------------------ faults

    @property
    def blackout(self) -> bool:
        return self._blackout

    @blackout.setter
    def blackout(self, on: bool) -> None:
        """True: open connections are reset now, new ones are accepted and reset at once."""
        self._blackout = bool(on)
        if on:
            self.reset_all()

    def reset_all(self) -> int:
        """Resets every open connection now; returns how many."""
        with self._lock:
            conns = list(self._conns.values())
        return sum(self._reset(c) for c in conns)

    def _reset(self, c: _Conn) -> bool:
        if not c.claim():
            return False
        if not self._stopping.is_set():
            self._count("resets")            # counted before the client can see the RST
        with self._lock:
            self._conns.pop(c.n, None)
        return c.close(rst=True, claimed=True)

    # ------------------------------------------------------------------ forwarding

    def _accept_loop(self) -> None:
        listener = self._listener
        try:
            while not self._stopping.is_set():
                try:
                    client, _ = listener.accept()
                except (TimeoutError, socket.timeout):
                    continue
                n = self.connections + 1        # only this thread changes `connections`
                upstream = None
                if not self._blackout:
                    try:
                        upstream = socket.create_connection(self.upstream, timeout=2.0)
                    except OSError:
                        pass
                if upstream is None:               # blackout or upstream down: an RST
                    self._count("resets")
                    self._count("connections")
                    _abort(client)
                    continue
                for s in (client, upstream):
                    s.settimeout(POLL_S)
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                c = _Conn(n, client, upstream)
                with self._lock:
                    self._conns[n] = c
                self._count("connections")         # counted once reset_all() can see it
                self._spawn(self._pump, f"c{n}-up", c, client, upstream, True)
                self._spawn(self._pump, f"c{n}-down", c, upstream, client, False)
        finally:
            listener.close()

    def _wait_until(self, c: _Conn, t: float) -> bool:
        """Sleeps until monotonic time `t` in short steps; False when stopped or `c` closed."""
        while not (self._stopping.is_set() or c.closed):
            left = t - time.monotonic()
            if left <= 0:
                return True
            time.sleep(min(left, 0.05))
        return False

    def _held(self, c: _Conn) -> bool:
        """Waits while stalled; True when the connection must end (stopped, closed, blackout)."""
        while self.stalled and not (self._stopping.is_set() or c.closed or self._blackout):
            time.sleep(0.05)
        return self._stopping.is_set() or c.closed or self._blackout

    def _pump(self, c: _Conn, src: socket.socket, dst: socket.socket, up: bool) -> None:
        """Forwards src -> dst until EOF (then shuts dst's write side: half-close), an error on
        either socket (then both are reset), a fault, or stop()."""
        next_t = 0.0  # token bucket without burst: the next chunk may leave at next_t
        try:
            while True:
                if self._held(c):
                    break
                rate = self.rate_bps
                size = CHUNK if not rate else max(1, min(CHUNK, int(rate * 0.05)))
                try:
                    data = src.recv(size)
                except (TimeoutError, socket.timeout):
                    continue
                if not data:                                   # orderly EOF from src
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    with c.lock:
                        c.eofs += 1
                        both = c.eofs == 2
                    if both and c.close(rst=False):
                        with self._lock:
                            self._conns.pop(c.n, None)
                    return
                limit = self.reset_after_bytes if up else None
                cut = limit is not None and c.up_bytes + len(data) >= limit
                if cut:
                    data = data[: max(0, limit - c.up_bytes)]
                if self.delay_s > 0 and not self._wait_until(c, time.monotonic() + self.delay_s):
                    break
                rate = self.rate_bps
                if rate:
                    if not self._wait_until(c, next_t):
                        break
                    next_t = max(time.monotonic(), next_t) + len(data) / rate
                else:
                    next_t = 0.0
                if self._held(c) or not self._send(c, dst, data, up):
                    break
                if cut:
                    break
        except OSError:
            pass                                               # a peer's reset or our own close
        self._reset(c)

    def _send(self, c: _Conn, dst: socket.socket, data: bytes, up: bool) -> bool:
        view = memoryview(data)
        while view:
            if self._stopping.is_set() or c.closed:
                return False
            try:
                n = dst.send(view)
            except (TimeoutError, socket.timeout):
                continue
            view = view[n:]
            if up:
                c.up_bytes += n
            self._count("bytes_up" if up else "bytes_down", n)
        return True

    # ------------------------------------------------------------------ chaos

    def chaos(self, rng_faults: dict, period_s: float) -> None:
        """Starts a thread that every period_s * uniform(0.5, 1.5) (random.Random(seed)) applies
        one fault drawn among those enabled, and undoes it before drawing the next:
        reset_all() (unless rng_faults["reset"] is falsy); "stall_s": X -> stalled for
        uniform(0, X) s; "blackout_s": Y -> blackout for uniform(0, Y) s; "rate_s": Z ->
        rate_bps = rng_faults.get("rate_bps", 65536) for uniform(0, Z) s (a fault whose key is
        absent or 0 is never drawn). Ends on stop_chaos() or stop(); chaos_log lists each fault."""
        self.stop_chaos()                         # one chaos thread at a time
        kinds = ["reset"] if rng_faults.get("reset", True) else []
        kinds += [k for k in ("stall_s", "blackout_s", "rate_s") if rng_faults.get(k)]
        self._chaos_stop.clear()
        self._spawn(self._chaos_loop, "chaos", dict(rng_faults), kinds, float(period_s))

    def stop_chaos(self) -> None:
        self._chaos_stop.set()
        for t in list(self._threads):
            if t.name.endswith("-chaos") and t is not threading.current_thread():
                t.join(2.0)

    def _chaos_loop(self, faults: dict, kinds: list[str], period_s: float) -> None:
        rng = random.Random(self.seed)
        while kinds and not self._chaos_stop.wait(period_s * rng.uniform(0.5, 1.5)):
            kind = rng.choice(kinds)
            secs = 0.0 if kind == "reset" else rng.uniform(0.0, float(faults[kind]))
            self.chaos_log.append((time.monotonic(), kind, secs))
            if kind == "reset":
                self.reset_all()
            elif kind == "stall_s":
                self.stalled = True
                self._chaos_stop.wait(secs)
                self.stalled = False
            elif kind == "blackout_s":
                self.blackout = True
                self._chaos_stop.wait(secs)
                self.blackout = False
            else:
                before, self.rate_bps = self.rate_bps, float(faults.get("rate_bps", 65536))
                self._chaos_stop.wait(secs)
                self.rate_bps = before
