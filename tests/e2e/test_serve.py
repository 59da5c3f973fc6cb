"""The import server (`reel serve`), over loopback with real clients: Python `requests` and
the `curl` CLI. Expected values come from the contract (§9, §3, §4) and from the files the
simulator wrote, read with pyarrow/zipfile; reel is only the server under test (and
`reel check` a second opinion on what it committed)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import stat
import subprocess
import threading
import time
import zipfile

import pyarrow as pa
import pyarrow.parquet as pq
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
    data_rows,
    episode_files,
    sim_task,
    tree,
    upload,
    write_config,
)


@pytest.fixture(scope="module")
def client_task(reel_bin, tmp_path_factory):
    return sim_task(reel_bin, tmp_path_factory, "serve_client")


@pytest.fixture(scope="module")
def other_task(reel_bin, tmp_path_factory):
    """Same numbering, different content (another seed): a conflicting episode 1."""
    return sim_task(reel_bin, tmp_path_factory, "serve_other", episodes=1, seed=7)


# ---------------------------------------------------------------------------------- happy path


def test_upload_with_requests_imports_the_episode(server, client_task, reel_bin, tmp_path):
    z = build_slice(client_task, 2, tmp_path / "s2.zip")
    r = upload(server.url, z, episode_index=1)
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["episode_index"] == 2 and body["already_present"] is False
    assert body["session_id"] == "task_a/2" and body["name"] == "task_a"
    task = server.root / "task_a"
    assert_same_episode(client_task, task, 2)
    info = json.loads((task / "meta/info.json").read_text())
    assert info["format"] == "pooled_episodes_v1" and info["total_episodes"] == 2
    stats = json.loads((task / "meta/stats.json").read_text())
    assert stats["observation.imu"]["count"] == sum(len(v) for v in pq.read_table(task / data_rel(2))
                                                    .column("observation.imu").to_pylist())
    assert (task / "meta/tasks.jsonl").read_text() == (client_task / "meta/tasks.jsonl").read_text()
    check_clean(reel_bin, task)
    # The listing the client's retry logic reads.
    s = requests.get(f"{server.url}/api/v1/sessions", params={"name": "task_a"}, headers=AUTH, timeout=30).json()
    assert s["sessions"] == [{"session_id": "task_a/2", "name": "task_a", "project_id": "task_a",
                              "episode_index": 2, "upload_episode_index": 1}]
    assert not any((server.root / ".staging").glob("*")), "staging area not cleaned"


def test_the_server_answers_what_it_holds_of_an_episode_with_digests(server, client_task, tmp_path):
    # Issue 28 (proof before deletion, shared with issue 32): GET /api/v1/projects/<p>/episodes/<N>
    # lists N's files with size and SHA-256 as the server holds them now; an uploader compares
    # them by role with its own. The expected digests are hashlib's over the client's files.
    z = build_slice(client_task, 2, tmp_path / "s2.zip")
    assert upload(server.url, z, episode_index=1).status_code == 201
    r = requests.get(f"{server.url}/api/v1/projects/task_a/episodes/2", headers=AUTH, timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["project_id"], body["episode_index"], body["file_group"]) == ("task_a", 2, "whole")
    expected = []
    for rel in episode_files(client_task, 2):
        role = ("data" if rel == data_rel(2) else "episodes_row" if rel == row_rel(2)
                else "video/" + rel.split("/")[2])
        data = (client_task / rel).read_bytes()
        expected.append({"role": role, "path": rel, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    order = {"data": 0, "episodes_row": 1}
    assert body["files"] == sorted(expected, key=lambda f: (order.get(f["role"], 2), f["role"]))
    assert any(f["role"].startswith("video/") for f in body["files"])
    missing = requests.get(f"{server.url}/api/v1/projects/task_a/episodes/9", headers=AUTH, timeout=30)
    assert missing.status_code == 404 and missing.json()["rule"] == "episode.not_found", missing.text
    no_task = requests.get(f"{server.url}/api/v1/projects/task_z/episodes/1", headers=AUTH, timeout=30)
    assert no_task.status_code == 404 and no_task.json()["rule"] == "episode.not_found"
    other = requests.get(f"{server.url}/api/v1/projects/task_a/episodes/2", timeout=30,
                         headers={"Authorization": f"Bearer {TOKEN_A}"})
    assert other.status_code == 200  # rig-a may read task_a
    assert requests.get(f"{server.url}/api/v1/projects/task_b/episodes/2", timeout=30,
                        headers={"Authorization": f"Bearer {TOKEN_A}"}).status_code == 403
    assert requests.get(f"{server.url}/api/v1/projects/task_a/episodes/2", timeout=30).status_code == 401
    dot = requests.get(f"{server.url}/api/v1/projects/.uploads/episodes/1", headers=AUTH, timeout=30)
    assert dot.status_code == 400 and dot.json()["rule"] == "form.name"


def test_upload_with_curl_and_all_episodes_merge_like_the_client(server, client_task, reel_bin, tmp_path):
    for n in (1, 2, 3):
        z = build_slice(client_task, n, tmp_path / f"s{n}.zip")
        out = subprocess.run(
            ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", "-H", f"Authorization: Bearer {TOKEN_ALL}",
             "-F", "name=task_a", "-F", f"episode_index={n - 1}", "-F", f"file=@{z};type=application/zip",
             f"{server.url}/api/v1/session/upload"], capture_output=True, text=True, timeout=120)
        body, code = out.stdout.rsplit("\n", 1)
        assert code == "201", out.stdout + out.stderr
        assert json.loads(body)["episode_index"] == n
    task = server.root / "task_a"
    check_clean(reel_bin, task)
    for n in (1, 2, 3):
        assert_same_episode(client_task, task, n)
    # stats.json merged episode by episode equals the client's accumulated one (§4 math).
    mine, theirs = (json.loads((t / "meta/stats.json").read_text()) for t in (task, client_task))
    assert list(mine) == list(theirs)
    for key, block in theirs.items():
        assert mine[key]["count"] == block["count"], key
        for field in ("mean", "std", "min", "max"):
            for a, b in zip(mine[key][field], block[field]):
                assert abs(a - b) <= 1e-6 * max(1.0, abs(b)), (key, field)
    info_s, info_c = (json.loads((t / "meta/info.json").read_text()) for t in (task, client_task))
    assert info_s["total_episodes"] == info_c["total_episodes"] == 3
    assert info_s["features"] == info_c["features"]
    assert info_s["video_extensions"] == info_c["video_extensions"]


def test_identical_reupload_is_a_noop_and_a_different_episode_is_409(server, client_task, other_task, tmp_path):
    z = build_slice(client_task, 1, tmp_path / "s1.zip")
    assert upload(server.url, z, episode_index=0).status_code == 201
    before = tree(server.root / "task_a")
    again = upload(server.url, z, episode_index=0)
    assert again.status_code == 200, again.text
    assert again.json()["already_present"] is True
    other = build_slice(other_task, 1, tmp_path / "o1.zip")
    clash = upload(server.url, other, episode_index=0)
    assert clash.status_code == 409, clash.text
    assert clash.json()["rule"] == "import.conflict"
    assert tree(server.root / "task_a") == before, "a refused or repeated upload changed the task"


def test_a_conflict_is_logged_with_the_episode_it_is_about(server, client_task, other_task, tmp_path):
    # issue 14: the 409 log line said episode_index 0 whatever the episode.
    assert upload(server.url, build_slice(client_task, 1, tmp_path / "s1.zip"), episode_index=0).status_code == 201
    clash = upload(server.url, build_slice(other_task, 1, tmp_path / "o1.zip"), episode_index=0)
    assert clash.status_code == 409 and clash.json()["rule"] == "import.conflict", clash.text
    imports = [l for l in server.log_lines() if l.get("event") == "import"]
    assert [(l["status"], l["episode_index"]) for l in imports] == [(201, 1), (409, 1)], imports
    # Refused before the slice's N is known: no number rather than a wrong one.
    junk = tmp_path / "junk.zip"
    with zipfile.ZipFile(junk, "w") as z:
        z.writestr("hello.txt", "not a slice")
    refused = upload(server.url, junk, episode_index=0)
    assert refused.status_code == 422, refused.text
    last = [l for l in server.log_lines() if l.get("event") == "import"][-1]
    assert last["status"] == 422 and last["episode_index"] is None, last


def test_a_rejected_upload_logs_one_request_line(server, client_task, tmp_path):
    # issue 14: one rejected upload logged four extra empty request lines and counted them.
    z = build_slice(client_task, 1, tmp_path / "s1.zip")
    assert upload(server.url, z, headers={}).status_code == 401
    assert upload(server.url, z, headers={"Authorization": "Bearer nope"}).status_code == 401
    requests.get(f"{server.url}/health", timeout=30)  # a later request on a fresh connection
    # The server logs a request after answering it: wait (bounded) for the /health line.
    deadline = time.time() + 10
    while time.time() < deadline and not any(l.get("path") == "/health" for l in server.log_lines()):
        time.sleep(0.05)
    lines = [l for l in server.log_lines() if "method" in l]
    assert [(l["method"], l["path"], l["status"]) for l in lines] == [
        ("POST", "/api/v1/session/upload", 401), ("POST", "/api/v1/session/upload", 401),
        ("GET", "/health", 200)], lines
    metrics = requests.get(f"{server.url}/metrics", timeout=30).text
    assert 'reel_http_requests_total{code="4xx"} 2' in metrics, metrics


def test_a_root_that_cannot_be_listed_is_an_error_not_no_sessions(server, client_task, tmp_path):
    # The client's retry logic reads the sessions listing: "none" would mean "upload all again".
    z = build_slice(client_task, 2, tmp_path / "s2.zip")
    assert upload(server.url, z, episode_index=1).status_code == 201
    every = requests.get(f"{server.url}/api/v1/sessions", headers=AUTH, timeout=30)
    assert every.status_code == 200 and [s["session_id"] for s in every.json()["sessions"]] == ["task_a/2"]
    moved = server.root.with_name("root.moved")
    os.rename(server.root, moved)  # the root vanishes under the server (an unmounted share)
    try:
        r = requests.get(f"{server.url}/api/v1/sessions", headers=AUTH, timeout=30)
    finally:
        os.rename(moved, server.root)
    assert r.status_code == 500, r.text
    assert r.json()["rule"] == "import.io" and "sessions" not in r.json()


def test_hash_password_refuses_an_empty_password(reel_bin):
    for given in ("\n", "", "\r\n"):
        proc = subprocess.run([reel_bin, "serve", "--hash-password"], input=given, capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 2 and proc.stdout == "", (given, proc.stdout, proc.stderr)
        assert "empty" in proc.stderr, proc.stderr


# ---------------------------------------------------------------------------------- auth


def test_authentication_happens_before_the_body(server, client_task, tmp_path):
    z = build_slice(client_task, 1, tmp_path / "s1.zip")
    none = upload(server.url, z, headers={})
    assert none.status_code == 401 and none.json()["rule"] == "auth.missing"
    bad = upload(server.url, z, headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401 and bad.json()["rule"] == "auth.invalid"
    # curl asks `Expect: 100-continue` before a large body: a 401 arrives instead, so the
    # body is never sent.
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(4 << 20))
    out = subprocess.run(["curl", "-v", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                          "-F", "name=task_a", "-F", f"file=@{big}",
                          f"{server.url}/api/v1/session/upload"], capture_output=True, text=True, timeout=60)
    assert out.stdout == "401", out.stdout
    assert "Expect: 100-continue" in out.stderr and "We are completely uploaded" not in out.stderr, out.stderr
    forbidden = upload(server.url, z, name="task_b", headers={"Authorization": f"Bearer {TOKEN_A}"})
    assert forbidden.status_code == 403 and forbidden.json()["rule"] == "auth.project"
    assert not (server.root / "task_a").exists() and not (server.root / "task_b").exists()
    listing = requests.get(f"{server.url}/api/v1/sessions", params={"name": "task_b"},
                           headers={"Authorization": f"Bearer {TOKEN_A}"}, timeout=30)
    assert listing.status_code == 403


def test_login_cookie_flow(server, client_task, tmp_path):
    s = requests.Session()
    wrong = s.post(f"{server.url}/api/v1/auth/login", json={"username": USER, "password": "x"}, timeout=30)
    assert wrong.status_code == 401
    ok = s.post(f"{server.url}/api/v1/auth/login", json={"username": USER, "password": PASSWORD}, timeout=30)
    assert ok.status_code == 200 and "reel_session" in s.cookies
    z = build_slice(client_task, 1, tmp_path / "s1.zip")
    r = upload(server.url, z, episode_index=0, headers={}, session=s)
    assert r.status_code == 201, r.text


def test_health_and_metrics_and_request_log(server, client_task, tmp_path):
    assert requests.get(f"{server.url}/health", timeout=30).json()["status"] == "ok"
    z = build_slice(client_task, 1, tmp_path / "s1.zip")
    r = upload(server.url, z, episode_index=0)
    assert r.status_code == 201
    metrics = requests.get(f"{server.url}/metrics", timeout=30).text
    assert 'reel_imports_total{outcome="created"} 1' in metrics
    lines = [l for l in server.log_lines() if l.get("path") == "/api/v1/session/upload"]
    assert lines and lines[-1]["status"] == 201 and lines[-1]["request_id"] == r.headers["X-Request-Id"]
    assert lines[-1]["principal"] == "token:rig-all"


# ---------------------------------------------------------------------------------- limits


def test_request_size_limit_is_413(reel_bin, tmp_path, client_task):
    cfg = write_config(reel_bin, tmp_path / "small.json", limits={"max_request_bytes": 64 * 1024})
    srv = ReelServer(reel_bin, tmp_path / "root", cfg, tmp_path / "serve.log").start()
    try:
        big = tmp_path / "big.zip"
        big.write_bytes(os.urandom(256 * 1024))
        r = upload(srv.url, big)
        assert r.status_code == 413 and r.json()["rule"] == "limit.request_size"
        assert not (srv.root / "task_a").exists()
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------- hostile slices


def _symlink_zip(task, path):
    build_slice(task, 1, path)
    with zipfile.ZipFile(path, "a") as z:
        info = zipfile.ZipInfo("videos/chunk-000/evil/episode-000.mp4")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, "/etc/passwd")
    return path


def _bomb_zip(task, path):
    build_slice(task, 1, path)
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("videos/chunk-000/bomb/episode-000.mp4", b"\0" * (64 << 20))
    return path


def _duplicate_zip(task, path):
    build_slice(task, 1, path)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(path, "a") as z:
            z.writestr("meta/info.json", b"{}")
    return path


def _info_with_format(task, fmt):
    info = json.loads((task / "meta/info.json").read_text())
    info["format"] = fmt
    return json.dumps(info).encode()


HOSTILE = {
    "absolute": (lambda t, p: build_slice(t, 1, p, extra={"/etc/cron.d/x": b"x"}), "zip."),
    "traversal": (lambda t, p: build_slice(t, 1, p, extra={"meta/../../escape.txt": b"x"}), "zip."),
    "symlink": (_symlink_zip, "zip."),
    "duplicate": (_duplicate_zip, "zip."),
    "not_allowed": (lambda t, p: build_slice(t, 1, p, extra={"run.sh": b"#!/bin/sh"}), "zip."),
    "dotfile": (lambda t, p: build_slice(t, 1, p, extra={"meta/episodes/.lock": b""}), "zip."),
    "bomb": (_bomb_zip, "zip."),
    "mixed_episodes": (lambda t, p: build_slice(t, 1, p, extra={data_rel(2): (t / data_rel(2)).read_bytes()}),
                       "zip."),
    "missing_data": (lambda t, p: build_slice(t, 1, p, drop=(data_rel(1),)), "zip."),
    "wrong_format": (lambda t, p: build_slice(t, 1, p, replace={"meta/info.json": _info_with_format(t, "lerobot")}),
                     "zip.format"),
    "not_a_zip": (lambda t, p: (p.write_bytes(b"PK\x03\x04 this is not a zip" * 10), p)[1], "zip."),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_slices_are_refused_and_nothing_is_written(server, client_task, tmp_path, case):
    make, rule_prefix = HOSTILE[case]
    z = make(client_task, tmp_path / f"{case}.zip")
    r = upload(server.url, z, episode_index=0)
    assert 400 <= r.status_code < 500, (case, r.status_code, r.text)
    body = r.json()
    assert body["rule"].startswith(rule_prefix), (case, body)
    assert body["detail"], case
    assert str(server.root) not in body["detail"], f"{case}: the answer leaks server paths: {body['detail']}"
    assert not (server.root / "task_a").exists(), f"{case}: the task directory was created"
    assert not (tmp_path.parent / "escape.txt").exists()
    assert not any((server.root / ".staging").rglob("*")), f"{case}: staging not cleaned"


def test_form_episode_index_must_match_the_parquet(server, client_task, tmp_path):
    z = build_slice(client_task, 2, tmp_path / "s2.zip")
    r = upload(server.url, z, episode_index=0)  # N=2 has file number 1
    assert r.status_code == 422 and r.json()["rule"] == "form.episode_index", r.text
    assert "2" in r.json()["detail"] and "1" in r.json()["detail"]
    assert not (server.root / "task_a").exists()


def test_parquet_episode_index_disagreeing_with_its_file_is_refused(server, client_task, tmp_path):
    table = pq.read_table(client_task / data_rel(1))
    import pyarrow as pa
    idx = table.schema.get_field_index("episode_index")
    table = table.set_column(idx, "episode_index", pa.array([5] * table.num_rows, pa.int64()))
    buf = io.BytesIO()
    pq.write_table(table, buf)
    z = build_slice(client_task, 1, tmp_path / "s1.zip", replace={data_rel(1): buf.getvalue()})
    r = upload(server.url, z, episode_index=0)
    assert r.status_code == 422, r.text
    assert r.json()["rule"] in ("slice.episode_index", "check.data.episode_index"), r.json()
    assert not (server.root / "task_a").exists()


def _with_table(client_task, n, change):
    """The data parquet of episode n with `change(table) -> table` applied, as bytes."""
    buf = io.BytesIO()
    pq.write_table(change(pq.read_table(client_task / data_rel(n))), buf, compression="zstd")
    return buf.getvalue()


def test_a_force_matrix_cell_of_the_wrong_length_is_refused(server, client_task, tmp_path):
    """The server's check counts force-matrix cells from the column's levels, not its values
    (CheckOptions::deep off): a cell of 100 values is still refused."""
    col = "observation.gripper_left_force_matrix"

    def short_cell(table):
        cells = table.column(col).to_pylist()
        first = next(i for i, c in enumerate(cells) if c)  # a sampled row
        cells[first] = cells[first][:100]
        return table.set_column(table.schema.get_field_index(col), col, pa.array(cells, table.schema.field(col).type))

    z = build_slice(client_task, 1, tmp_path / "s1.zip", replace={data_rel(1): _with_table(client_task, 1, short_cell)})
    r = upload(server.url, z, episode_index=0)
    assert r.status_code == 422, r.text
    assert r.json()["rule"] == "check.data.force_matrix", r.json()
    assert "100 values" in r.json()["detail"], r.json()
    assert not (server.root / "task_a").exists()


def test_videos_longer_than_the_data_are_refused(server, client_task, tmp_path):
    """Frame counts come from the containers' packet index, not a decode: videos longer than
    the data parquet (every row after the 20th cut) are refused."""
    z = build_slice(client_task, 1, tmp_path / "s1.zip",
                    replace={data_rel(1): _with_table(client_task, 1, lambda t: t.slice(0, 20))})
    r = upload(server.url, z, episode_index=0)
    assert r.status_code == 422, r.text
    assert r.json()["rule"] == "check.video.frame_count", r.json()
    assert "20 rows" in r.json()["detail"], r.json()
    assert not (server.root / "task_a").exists()


# ---------------------------------------------------------------------------------- resumable


def test_resumable_upload_tus(server, client_task, tmp_path):
    z = build_slice(client_task, 3, tmp_path / "s3.zip").read_bytes()
    def b64(s):
        return base64.b64encode(s.encode()).decode()

    h = {**AUTH, "Tus-Resumable": "1.0.0"}
    created = requests.post(f"{server.url}/api/v1/uploads", timeout=30, headers={
        **h, "Upload-Length": str(len(z)), "Upload-Metadata": f"name {b64('task_a')},episode_index {b64('2')}"})
    assert created.status_code == 201, created.text
    loc = server.url + created.headers["Location"]
    half = len(z) // 2
    p1 = requests.patch(loc, data=z[:half], timeout=30, headers={
        **h, "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"})
    assert p1.status_code == 204 and p1.headers["Upload-Offset"] == str(half)
    stale = requests.patch(loc, data=z[:10], timeout=30, headers={
        **h, "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"})
    assert stale.status_code == 409
    head = requests.head(loc, headers=h, timeout=30)
    assert head.headers["Upload-Offset"] == str(half) and head.headers["Upload-Length"] == str(len(z))
    early = requests.post(loc + "/import", headers=h, timeout=30)
    assert early.status_code == 409 and early.json()["rule"] == "tus.incomplete"
    p2 = requests.patch(loc, data=z[half:], timeout=30, headers={
        **h, "Upload-Offset": str(half), "Content-Type": "application/offset+octet-stream"})
    assert p2.status_code == 204 and p2.headers["Upload-Offset"] == str(len(z))
    done = requests.post(loc + "/import", headers=h, timeout=60)
    assert done.status_code == 201 and done.json()["episode_index"] == 3, done.text
    again = requests.post(loc + "/import", headers=h, timeout=60)
    assert again.status_code == 201 and again.json() == done.json()
    assert_same_episode(client_task, server.root / "task_a", 3)
    other = requests.head(loc, headers={"Authorization": f"Bearer {TOKEN_A}", "Tus-Resumable": "1.0.0"}, timeout=30)
    assert other.status_code == 404, "another principal must not see the upload"


# ---------------------------------------------------------------------------------- concurrency, kill


def test_concurrent_uploads_never_lose_or_duplicate(server, reel_bin, tmp_path_factory, tmp_path):
    task = sim_task(reel_bin, tmp_path_factory, "serve_many", episodes=6, seed=3)
    zips = {n: build_slice(task, n, tmp_path / f"s{n}.zip") for n in range(1, 7)}
    results, lock = [], threading.Lock()

    def worker(ns):
        for n in ns:
            r = upload(server.url, zips[n], episode_index=n - 1)
            with lock:
                results.append((n, r.status_code, r.text))

    # Every episode twice, from different threads at once.
    plan = [[1, 2, 3], [4, 5, 6], [6, 5, 4], [3, 2, 1]]
    threads = [threading.Thread(target=worker, args=(p,)) for p in plan]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n in range(1, 7):
        codes = sorted(code for m, code, _ in results if m == n)
        assert codes == [200, 201], (n, [r for r in results if r[0] == n])
    served = server.root / "task_a"
    check_clean(reel_bin, served)
    for n in range(1, 7):
        assert_same_episode(task, served, n)
    info = json.loads((served / "meta/info.json").read_text())
    assert info["total_episodes"] == 6
    stats = json.loads((served / "meta/stats.json").read_text())
    glove = [k for k in stats if k.startswith("observation.") and k != "observation.imu" and k != "action"]
    for k in glove:
        assert stats[k]["count"] == sum(data_rows(task, n) for n in range(1, 7)), k


def test_kill_mid_import_leaves_episode_whole_or_absent(reel_bin, tmp_path, tmp_path_factory):
    task = sim_task(reel_bin, tmp_path_factory, "serve_kill", episodes=4, seed=5)
    cfg = write_config(reel_bin, tmp_path / "serve.json")
    root = tmp_path / "root"
    delays = [0.05, 0.15, 0.3, 0.6]
    for n, delay in zip(range(1, 5), delays):
        srv = ReelServer(reel_bin, root, cfg, tmp_path / f"serve{n}.log").start()
        z = build_slice(task, n, tmp_path / f"s{n}.zip")
        t = threading.Thread(target=lambda: _quiet_upload(srv.url, z, n - 1))
        t.start()
        import time
        time.sleep(delay)
        srv.kill()
        t.join()
        # Restart: recovery rolls an interrupted commit forward; the task must check clean.
        srv2 = ReelServer(reel_bin, root, cfg, tmp_path / f"serve{n}b.log").start()
        served = root / "task_a"
        if (served / "meta/info.json").exists():
            check_clean(reel_bin, served)
            present = [p for p in episode_files(task, n) if (served / p).exists()]
            assert present in ([], episode_files(task, n)), f"N={n}: partial episode {present}"
        assert not any((root / ".staging").rglob("*")), "staging not cleaned at start"
        # The client's retry path: afterwards the episode lands exactly once.
        r = upload(srv2.url, z, episode_index=n - 1)
        assert r.status_code in (200, 201), r.text
        assert_same_episode(task, served, n)
        srv2.stop()


def _quiet_upload(url, z, idx):
    try:
        upload(url, z, episode_index=idx)
    except requests.RequestException:
        pass


def test_slow_trickle_is_cut_off_with_408(reel_bin, tmp_path):
    """A client that sends its body a byte at a time, each within the read timeout, still
    has to finish within request_timeout_s; the worker is freed and nothing is written."""
    import socket
    import time
    from urllib.parse import urlparse
    cfg = write_config(reel_bin, tmp_path / "slow.json", limits={"request_timeout_s": 1})
    srv = ReelServer(reel_bin, tmp_path / "root", cfg, tmp_path / "serve.log").start()
    try:
        u = urlparse(srv.url)
        boundary = "xyzboundary"
        head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\ntask_a\r\n"
                f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"t.zip\"\r\n"
                f"Content-Type: application/zip\r\n\r\n").encode()
        body_len = len(head) + 10000
        s = socket.create_connection((u.hostname, u.port), timeout=30)
        s.sendall((f"POST /api/v1/session/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN_ALL}\r\n"
                   f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                   f"Content-Length: {body_len}\r\n\r\n").encode() + head)
        answer = b""
        deadline = time.time() + 20
        s.settimeout(0.2)
        while time.time() < deadline and b"\r\n\r\n" not in answer:
            try:
                s.sendall(b"x" * 64)
            except OSError:
                pass
            try:
                answer += s.recv(65536)
            except socket.timeout:
                pass
            except OSError:
                break
        s.close()
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"limit.request_time" in answer
        assert not (srv.root / "task_a").exists()
    finally:
        srv.stop()
