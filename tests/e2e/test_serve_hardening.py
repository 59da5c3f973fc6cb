"""The import server (`reel serve`) against bad input from a probe: slices in another layout,
bodies that lie about their size, hostile JSON, slow clients, leaked paths, spoofable names and
tokens, login floods. A real server on 127.0.0.1 with real clients (`requests`, raw sockets);
slices are built here with zipfile straight from the contract (§9)."""

from __future__ import annotations

import base64
import gzip
import io
import json
import re
import socket
import threading
import time
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pytest
import requests

from .fixtures import data_rel, row_rel
from .recorder_common import check_clean
from .serve_common import (
    AUTH,
    PASSWORD,
    TOKEN_A,
    TOKEN_ALL,
    USER,
    ReelServer,
    assert_same_episode,
    build_slice,
    episode_files,
    sim_task,
    tree,
    upload,
    write_config,
)


@pytest.fixture(scope="module")
def client_task(reel_bin, tmp_path_factory):
    return sim_task(reel_bin, tmp_path_factory, "serve_client")


def start(reel_bin, tmp_path, name, limits):
    cfg = write_config(reel_bin, tmp_path / f"{name}.json", limits=limits)
    return ReelServer(reel_bin, tmp_path / "root", cfg, tmp_path / f"{name}.log").start()


def host_port(url):
    u = urlparse(url)
    return u.hostname, u.port


def in_flight(url) -> float:
    text = requests.get(f"{url}/metrics", timeout=30).text
    return float(re.search(r"^reel_imports_in_flight (\S+)$", text, re.M).group(1))


def high_water_bytes(pid) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def loc(n, chunks):
    return (max(n - 1, 0)) // chunks, (max(n - 1, 0)) % chunks


def slice_with_chunks(task: Path, n: int, out: Path, chunks: int, info_edit=None) -> Path:
    """Episode N of `task` packed as a collector with `chunks_size: chunks` would: the same
    files, named for (chunk, file) under that chunks_size, and info.json saying so."""
    info = json.loads((task / "meta/info.json").read_text())
    info["chunks_size"] = chunks
    if info_edit:
        info_edit(info)
    c, f = loc(n, chunks)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as z:
        for rel in episode_files(task, n):
            parts = rel.split("/")
            if parts[0] == "videos":
                ext = parts[-1].rsplit(".", 1)[1]
                name = f"videos/chunk-{c:03d}/{parts[2]}/episode-{f:03d}.{ext}"
            elif parts[0] == "data":
                name = f"data/chunk-{c:03d}/episode-{f:03d}.parquet"
            else:
                name = f"meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet"
            z.writestr(zipfile.ZipInfo(name), (task / rel).read_bytes())
        z.writestr(zipfile.ZipInfo("meta/info.json"), json.dumps(info).encode())
        for rel in ("meta/stats.json", "meta/tasks.jsonl"):
            z.writestr(zipfile.ZipInfo(rel), (task / rel).read_bytes())
    return out


# ------------------------------------------------------------------------ 2: layout


def test_slice_with_another_chunks_size_lands_where_the_task_puts_n(server, client_task, reel_bin, tmp_path):
    """Episode 2 packed with chunks_size 1 names data/chunk-001/episode-000.parquet, the
    task's place for episode 1001. The server places it by the task's templates and
    chunks_size (1000): episode 2 lands at chunk-000/episode-001, byte for byte, and a file
    already at the slice's own path is not touched."""
    assert upload(server.url, build_slice(client_task, 1, tmp_path / "s1.zip"), episode_index=0).status_code == 201
    task = server.root / "task_a"
    sentinel = task / "data/chunk-001/episode-000.parquet"
    z = slice_with_chunks(client_task, 2, tmp_path / "s2.zip", chunks=1)
    with zipfile.ZipFile(z) as zf:
        assert "data/chunk-001/episode-000.parquet" in zf.namelist()
    sentinel.parent.mkdir(parents=True)
    sentinel.write_bytes(b"episode 1001 lives here")
    r = upload(server.url, z, episode_index=1)
    assert r.status_code == 201, r.text
    assert r.json()["episode_index"] == 2
    assert sentinel.read_bytes() == b"episode 1001 lives here", "the slice overwrote another episode's file"
    sentinel.unlink()
    sentinel.parent.rmdir()
    assert_same_episode(client_task, task, 2)
    info = json.loads((task / "meta/info.json").read_text())
    assert info["chunks_size"] == 1000
    check_clean(reel_bin, task)
    # The same slice again is the same episode: 200, nothing written.
    before = tree(task)
    again = upload(server.url, z, episode_index=0)  # its own file number is accepted too
    assert again.status_code == 200 and again.json()["already_present"] is True, again.text
    assert tree(task) == before


def test_slice_with_another_chunks_size_into_a_new_task(server, client_task, reel_bin, tmp_path):
    z = slice_with_chunks(client_task, 3, tmp_path / "s3.zip", chunks=2)  # N=3 -> chunk 1, file 0
    r = upload(server.url, z, episode_index=2)
    assert r.status_code == 201, r.text
    task = server.root / "task_a"
    assert not (task / "data/chunk-001").exists()
    assert_same_episode(client_task, task, 3)
    check_clean(reel_bin, task)


def test_slice_whose_templates_differ_from_the_tasks_is_refused(server, client_task, tmp_path):
    """data_path and episodes_path swapped in the slice's info.json, and its two parquet
    files swapped to match: consistent in itself, but the task reads files by its own
    templates, so placing them by name would leave a data parquet where the task expects
    an episodes row."""
    assert upload(server.url, build_slice(client_task, 1, tmp_path / "s1.zip"), episode_index=0).status_code == 201
    before = tree(server.root / "task_a")
    info = json.loads((client_task / "meta/info.json").read_text())
    info["data_path"], info["episodes_path"] = info["episodes_path"], info["data_path"]
    z = build_slice(client_task, 2, tmp_path / "s2.zip", replace={
        "meta/info.json": json.dumps(info).encode(),
        data_rel(2): (client_task / row_rel(2)).read_bytes(),
        row_rel(2): (client_task / data_rel(2)).read_bytes()})
    r = upload(server.url, z, episode_index=1)
    assert r.status_code == 422, r.text
    assert r.json()["rule"] == "slice.layout", r.json()
    assert "data_path" in r.json()["detail"]
    assert tree(server.root / "task_a") == before, "a refused slice changed the task"


# ------------------------------------------------------------------------ 3: body limits


def gzip_of_zeros(n_bytes: int) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as g:
        block = b"\0" * (1 << 20)
        for _ in range(n_bytes // len(block)):
            g.write(block)
    return out.getvalue()


def test_compressed_bodies_are_refused_before_they_are_read(server, client_task, tmp_path):
    bomb = gzip_of_zeros(1 << 30)  # ~1 MB on the wire, 1 GiB inflated
    assert len(bomb) < 2 << 20
    pid = server.proc.pid
    base = high_water_bytes(pid)
    r = requests.post(f"{server.url}/api/v1/auth/login", data=bomb, timeout=60,
                      headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})
    assert r.status_code == 415 and r.json()["rule"] == "limit.content_encoding", r.text
    z = build_slice(client_task, 1, tmp_path / "s1.zip")
    r = requests.post(f"{server.url}/api/v1/session/upload", timeout=60,
                      data=gzip.compress(z.read_bytes()),
                      headers={**AUTH, "Content-Encoding": "gzip",
                               "Content-Type": "multipart/form-data; boundary=xyz"})
    assert r.status_code == 415 and r.json()["rule"] == "limit.content_encoding", r.text
    grown = high_water_bytes(pid) - base
    assert grown < 200 << 20, f"the server grew by {grown >> 20} MiB"
    assert not (server.root / "task_a").exists()


def multipart(fields: dict, zip_bytes: bytes, boundary="reelboundary0123") -> tuple[bytes, str]:
    out = b""
    for k, v in fields.items():
        out += f"--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n".encode()
    out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"t.zip\"\r\n"
            f"Content-Type: application/zip\r\n\r\n").encode() + zip_bytes + f"\r\n--{boundary}--\r\n".encode()
    return out, f"multipart/form-data; boundary={boundary}"


def test_chunked_upload_is_counted_against_the_limit(reel_bin, tmp_path):
    srv = start(reel_bin, tmp_path, "small", {"max_request_bytes": 1 << 20})
    try:
        body, ctype = multipart({"name": "task_a", "episode_index": "0"}, b"x" * (8 << 20))

        def chunks():
            for i in range(0, len(body), 64 << 10):
                yield body[i:i + (64 << 10)]

        try:
            r = requests.post(f"{srv.url}/api/v1/session/upload", data=chunks(), timeout=60,
                              headers={**AUTH, "Content-Type": ctype})
            assert r.status_code == 413 and r.json()["rule"] == "limit.request_size", r.text
        except requests.ConnectionError:
            pass  # the server may close before the client has sent everything
        line = [l for l in srv.log_lines() if l.get("path") == "/api/v1/session/upload"][-1]
        assert line["status"] == 413 and line["bytes_in"] <= (1 << 20) + (128 << 10), line
        assert not any((srv.root / ".staging").rglob("*"))
        assert not (srv.root / "task_a").exists()
    finally:
        srv.stop()


def test_small_endpoints_take_small_bodies_with_a_length(server):
    big = requests.post(f"{server.url}/api/v1/auth/login", data=b"{" + b" " * (100 << 10) + b"}", timeout=30,
                        headers={"Content-Type": "application/json"})
    assert big.status_code == 413 and big.json()["rule"] == "limit.request_size", big.text

    def chunks():
        yield json.dumps({"username": USER, "password": PASSWORD}).encode()

    chunked = requests.post(f"{server.url}/api/v1/auth/login", data=chunks(), timeout=30,
                            headers={"Content-Type": "application/json"})
    assert chunked.status_code == 411 and chunked.json()["rule"] == "limit.length_required", chunked.text


# ------------------------------------------------------------------------ 4, 5: hostile JSON


def info_with(task: Path, edit) -> bytes:
    info = json.loads((task / "meta/info.json").read_text())
    edit(info)
    return json.dumps(info).encode()


def test_number_overflow_in_a_slice_is_a_refusal_and_in_flight_returns_to_zero(server, client_task, tmp_path):
    text = (client_task / "meta/info.json").read_text().rstrip()
    assert text.endswith("}")
    bad = (text[:-1] + ', "reel_probe": 1e999}').encode()
    z = build_slice(client_task, 1, tmp_path / "s1.zip", replace={"meta/info.json": bad})
    r = upload(server.url, z, episode_index=0)
    assert 400 <= r.status_code < 500, (r.status_code, r.text)
    assert r.json()["rule"], r.json()
    assert in_flight(server.url) == 0
    assert not (server.root / "task_a").exists()


def test_deeply_nested_info_json_writes_nothing(server, client_task, tmp_path):
    depth = 4000
    nested = "[" * depth + "]" * depth
    text = (client_task / "meta/info.json").read_text().rstrip()
    bad = (text[:-1] + f', "calibration": {{"deep": {nested}}}}}').encode()
    z = build_slice(client_task, 1, tmp_path / "s1.zip", replace={"meta/info.json": bad})
    assert z.stat().st_size < 10 << 20
    r = upload(server.url, z, episode_index=0)
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:500])
    assert not (server.root / "task_a").exists(), "a refused slice created the task"
    assert in_flight(server.url) == 0


# ------------------------------------------------------------------------ 6: slow clients


def test_slow_heads_do_not_block_health(reel_bin, tmp_path):
    """Four times as many connections as workers trickle a request head one byte every
    0.3 s (each byte well within the read timeout). Heads are read by connection threads
    and cut at the head deadline; workers serve only complete requests, so /health and an
    authenticated listing stay answered."""
    srv = start(reel_bin, tmp_path, "slow", {"workers": 2, "head_timeout_s": 2})
    host, port = host_port(srv.url)
    stop = threading.Event()
    cut = []

    def trickle():
        deadline = time.time() + 40
        while not stop.is_set() and time.time() < deadline:
            s = None
            try:
                s = socket.create_connection((host, port), timeout=5)
                for b in b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 200:
                    if stop.is_set():
                        break
                    s.send(bytes([b]))
                    time.sleep(0.3)
            except OSError:
                cut.append(1)  # the server closed it; come back at once
            finally:
                if s:
                    s.close()

    threads = [threading.Thread(target=trickle, daemon=True) for _ in range(8)]
    try:
        for t in threads:
            t.start()
        time.sleep(1.0)
        for _ in range(6):
            t0 = time.time()
            r = requests.get(f"{srv.url}/health", timeout=15)
            assert r.status_code == 200
            listing = requests.get(f"{srv.url}/api/v1/sessions", headers=AUTH, timeout=15)
            assert listing.status_code == 200
            assert time.time() - t0 < 5, f"/health and a listing took {time.time() - t0:.1f} s"
            time.sleep(0.5)
        assert cut, "no slow connection was cut at the head deadline"
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
        srv.stop()


def test_connections_per_address_are_bounded(reel_bin, tmp_path):
    srv = start(reel_bin, tmp_path, "peraddr", {"max_connections_per_address": 4})
    host, port = host_port(srv.url)
    idle = []
    try:
        for _ in range(4):
            idle.append(socket.create_connection((host, port), timeout=10))
            idle[-1].send(b"G")  # a head that has begun, and will take its time
        time.sleep(0.5)
        extra = socket.create_connection((host, port), timeout=10)
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = extra.recv(4096)
            if not chunk:
                break
            answer += chunk
        extra.close()
        assert answer.startswith(b"HTTP/1.1 503") and b"limit.connections" in answer, answer[:300]
        for s in idle:
            s.close()
        idle.clear()
        # Once they are gone, the address is served again.
        deadline, status = time.time() + 10, None
        while time.time() < deadline and status != 200:
            try:
                status = requests.get(f"{srv.url}/health", timeout=5).status_code
            except requests.RequestException:
                pass
            time.sleep(0.2)
        assert status == 200
    finally:
        for s in idle:
            s.close()
        srv.stop()


def test_slow_small_body_is_cut_at_the_head_deadline(reel_bin, tmp_path):
    srv = start(reel_bin, tmp_path, "slowbody", {"head_timeout_s": 2})
    host, port = host_port(srv.url)
    try:
        s = socket.create_connection((host, port), timeout=30)
        s.sendall(b"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 100\r\n\r\n")
        t0 = time.time()
        closed = False
        s.settimeout(0.3)
        while time.time() - t0 < 20:
            try:
                s.send(b" ")
            except OSError:
                closed = True
                break
            try:
                if s.recv(65536) == b"":
                    closed = True
                    break
            except socket.timeout:
                pass
            except OSError:
                closed = True
                break
        s.close()
        assert closed and time.time() - t0 < 8, f"the connection stayed open {time.time() - t0:.1f} s"
    finally:
        srv.stop()


# ------------------------------------------------------------------------ 8: paths, broken projects


def test_broken_project_neither_leaks_paths_nor_hides_the_others(server, client_task, tmp_path):
    assert upload(server.url, build_slice(client_task, 1, tmp_path / "s1.zip"), name="good",
                  episode_index=0).status_code == 201
    broken = server.root / "broken"
    (broken / "meta").mkdir(parents=True)
    (broken / "meta/info.json").write_text('{"format": "pooled_episodes_v1", "fps": ')
    listing = requests.get(f"{server.url}/api/v1/sessions", headers=AUTH, timeout=30)
    assert listing.status_code == 200, listing.text
    body = listing.json()
    assert [s["session_id"] for s in body["sessions"]] == ["good/1"]
    assert [s["project_id"] for s in body["skipped"]] == ["broken"]
    assert str(server.root) not in listing.text and str(server.root.resolve()) not in listing.text
    one = requests.get(f"{server.url}/api/v1/sessions", params={"name": "broken"}, headers=AUTH, timeout=30)
    assert one.status_code == 409 and one.json()["rule"] == "import.task", one.text
    assert str(server.root) not in one.text
    r = upload(server.url, build_slice(client_task, 2, tmp_path / "s2.zip"), name="broken", episode_index=1)
    assert r.status_code == 409 and r.json()["rule"] == "import.task", r.text
    assert str(server.root) not in r.text and str(server.root.resolve()) not in r.text
    assert "broken/meta/info.json" in r.json()["detail"]


# ------------------------------------------------------------------------ 14: fields, names, tokens, login


def test_upload_without_episode_index_is_refused(server, client_task, tmp_path):
    z = build_slice(client_task, 1, tmp_path / "s1.zip")
    r = upload(server.url, z)  # no episode_index field
    assert r.status_code == 400 and r.json()["rule"] == "form.episode_index", r.text
    def b64(s):
        return base64.b64encode(s.encode()).decode()

    tus = requests.post(f"{server.url}/api/v1/uploads", timeout=30, headers={
        **AUTH, "Tus-Resumable": "1.0.0", "Upload-Length": "10", "Upload-Metadata": f"name {b64('task_a')}"})
    assert tus.status_code == 400 and tus.json()["rule"] == "form.episode_index", tus.text
    assert not (server.root / "task_a").exists()


@pytest.mark.parametrize("name", ["task\u202ea", "task_a ", " task_a", "task\u200ba", "cafe\u0301", "task\u00a0"])
def test_spoofable_project_names_are_refused(server, client_task, tmp_path, name):
    z = build_slice(client_task, 1, tmp_path / "s1.zip")
    r = upload(server.url, z, name=name, episode_index=0)
    assert r.status_code == 400 and r.json()["rule"] == "form.name", r.text
    assert [p.name for p in server.root.iterdir() if not p.name.startswith(".")] == []


def test_nfc_chinese_project_name_is_accepted(server, client_task, tmp_path):
    z = build_slice(client_task, 1, tmp_path / "s1.zip")
    r = upload(server.url, z, name="抓取杯子", episode_index=0)
    assert r.status_code == 201, r.text
    # What the server holds of it is asked for with the name percent-encoded in the path.
    held = requests.get(f"{server.url}/api/v1/projects/%E6%8A%93%E5%8F%96%E6%9D%AF%E5%AD%90/episodes/1",
                        headers=AUTH, timeout=30)
    assert held.status_code == 200 and held.json()["project_id"] == "抓取杯子", held.text


@pytest.mark.parametrize("token", [TOKEN_ALL.replace("-", "%2D"), TOKEN_ALL + "%00junk", TOKEN_ALL + "%20"])
def test_token_is_matched_on_the_raw_header(server, token):
    r = requests.get(f"{server.url}/api/v1/sessions", params={"name": "task_a"},
                     headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert r.status_code == 401 and r.json()["rule"] == "auth.invalid", (token, r.status_code, r.text)
    ok = requests.get(f"{server.url}/api/v1/sessions", params={"name": "task_a"}, headers=AUTH, timeout=30)
    assert ok.status_code == 200


def test_login_attempts_are_rate_limited_per_address(server):
    codes, retry = [], None
    for _ in range(14):
        r = requests.post(f"{server.url}/api/v1/auth/login", json={"username": USER, "password": "wrong"},
                          timeout=30)
        codes.append(r.status_code)
        if r.status_code == 429:
            retry = r.headers.get("Retry-After")
            assert r.json()["rule"] == "auth.rate"
    assert 429 in codes, codes
    assert codes[0] == 401
    assert retry is not None and int(retry) >= 1


def create_upload(url: str, length: int, token: str = TOKEN_ALL):
    """POST /api/v1/uploads (tus creation) of `length` bytes for task_a, episode 1 (file number 0)."""
    b64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
    return requests.post(f"{url}/api/v1/uploads", timeout=30, headers={
        "Authorization": f"Bearer {token}", "Tus-Resumable": "1.0.0", "Upload-Length": str(length),
        "Upload-Metadata": f"name {b64('task_a')},episode_index {b64('0')}"})


def test_pending_resumable_uploads_are_bounded_per_credential(reel_bin, client_task, tmp_path):
    # Issue 27 (low): 2,000 uploads of 8 GiB each were created in 17 s, none sent. A credential
    # holds at most max_pending_uploads created-and-not-imported uploads (and bytes declared);
    # an import frees a slot; another credential is not affected; a restart counts them again.
    srv = start(reel_bin, tmp_path, "pending", {"max_pending_uploads": 3})
    create = lambda length, token=TOKEN_ALL: create_upload(srv.url, length, token)  # noqa: E731
    try:
        z = build_slice(client_task, 1, tmp_path / "s1.zip").read_bytes()
        assert create(8 << 30).status_code == 201 and create(8 << 30).status_code == 201
        real = create(len(z))
        assert real.status_code == 201, real.text
        refused = create(10)
        assert refused.status_code == 429 and refused.json()["rule"] == "limit.pending_uploads", refused.text
        assert "rig-all has 3 uploads pending" in refused.json()["detail"] and refused.headers["Retry-After"] == "60"
        assert create(10, TOKEN_A).status_code == 201  # rig-a has its own three
        loc = srv.url + real.headers["Location"]
        h = {"Authorization": f"Bearer {TOKEN_ALL}", "Tus-Resumable": "1.0.0"}
        sent = requests.patch(loc, data=z, timeout=30, headers={
            **h, "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"})
        assert sent.status_code == 204
        done = requests.post(loc + "/import", headers=h, timeout=60)
        assert done.status_code == 201, done.text
        assert create(10).status_code == 201  # the import freed its slot
        srv.stop()
        srv.start()
        again = create(10)
        assert again.status_code == 429 and again.json()["rule"] == "limit.pending_uploads", again.text
    finally:
        srv.stop()
    (tmp_path / "b").mkdir()
    by_bytes = start(reel_bin, tmp_path / "b", "bytes", {"max_pending_bytes": 10 << 30})
    try:
        assert create_upload(by_bytes.url, 8 << 30).status_code == 201
        over = create_upload(by_bytes.url, 3 << 30)
        assert over.status_code == 429 and over.json()["rule"] == "limit.pending_uploads", over.text
        assert create_upload(by_bytes.url, 2 << 30).status_code == 201
    finally:
        by_bytes.stop()

