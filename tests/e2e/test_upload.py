"""reel's own client (`reel upload`) against the real import server (`reel serve`) over
loopback: every episode lands exactly once, byte for byte, through the simple and the
resumable protocol, with a token or the login cookie, and survives a server killed mid-upload.
Values are compared with the client task's own files; `reel check` judges the server task."""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
import requests

from .fixtures import data_rel, row_rel
from .recorder_common import check_clean, reel_exec, simulate
from .serve_common import PASSWORD, TOKEN_A, TOKEN_ALL, USER, ReelServer, episode_files, write_config


@pytest.fixture
def task(reel_bin, tmp_path):
    t = tmp_path / "client" / "pick_cup"
    simulate(reel_bin, t, "--count", 3, "--seconds", "1", "--video-size", "32x24", "--depth-ffv1")
    return t


@pytest.fixture
def config(reel_bin, tmp_path):
    return write_config(reel_bin, tmp_path / "serve.json", project_a="pick_cup")


@pytest.fixture
def server(reel_bin, tmp_path, config):
    srv = ReelServer(reel_bin, tmp_path / "root", config, tmp_path / "serve.log").start()
    yield srv
    srv.stop()


def reel_upload(reel_bin, task, url, *args, token=TOKEN_ALL):
    extra = ["--token", token] if token else []
    rc, out, err = reel_exec(reel_bin, "upload", task, *args, "--server", url, *extra, "--no-progress", "--json",
                             timeout=300)
    return rc, (json.loads(out) if out.strip().startswith("{") else None), err


def assert_landed(client: Path, served: Path, n: int):
    for rel in episode_files(client, n):
        assert (served / rel).read_bytes() == (client / rel).read_bytes(), f"N={n}: {rel} differs on the server"


def test_upload_every_episode_then_again_is_a_noop(reel_bin, task, server):
    rc, doc, err = reel_upload(reel_bin, task, server.url)
    assert rc == 0, err
    assert doc["all_landed"] and [e["episode_index"] for e in doc["episodes"]] == [1, 2, 3]
    assert all(not e["already_present"] and e["attempts"] == 1 for e in doc["episodes"]), doc
    served = server.root / "pick_cup"
    check_clean(reel_bin, served)
    for n in (1, 2, 3):
        assert_landed(task, served, n)
    # Again: the outbox remembers that the server confirmed episode 2; nothing is sent.
    rc, doc, err = reel_upload(reel_bin, task, server.url, 2)
    assert rc == 0 and doc["episodes"][0]["already_present"] and doc["episodes"][0]["attempts"] == 0, (doc, err)
    posts = [l for l in server.log_lines() if l.get("path") == "/api/v1/session/upload"]
    assert [l["status"] for l in posts] == [201, 201, 201]
    # Without the outbox (a new rig disk, say) the server's own idempotency answers: 200.
    shutil.rmtree(task / "meta" / ".upload-outbox")
    rc, doc, err = reel_upload(reel_bin, task, server.url, 2)
    assert rc == 0 and doc["episodes"][0]["attempts"] == 1, (doc, err)
    posts = [l for l in server.log_lines() if l.get("path") == "/api/v1/session/upload"]
    assert [l["status"] for l in posts] == [201, 201, 201, 200]


def test_resumable_path_and_delete_after(reel_bin, task, server):
    rc, doc, err = reel_upload(reel_bin, task, server.url, 1, "--resumable-threshold", 1, "--chunk", 65536,
                               "--delete-after")
    assert rc == 0, err
    e = doc["episodes"][0]
    assert e["resumable"] and e["deleted"] and not e["already_present"], doc
    served = server.root / "pick_cup"
    check_clean(reel_bin, served)
    # Contract §9 upload-delete: data and videos go, the episodes row and stats stay.
    assert not (task / data_rel(1)).exists() and (task / row_rel(1)).exists()
    assert not list((task / "videos").glob("chunk-000/*/episode-000.*"))
    assert (served / data_rel(1)).is_file()
    patches = [l for l in server.log_lines() if l.get("method") == "PATCH"]
    assert len(patches) >= 2, "the slice should have gone in several PATCH chunks"


def test_delete_after_deletes_only_what_the_server_proves_it_holds(reel_bin, task, server, tmp_path):
    # Issue 28, proof before deletion: with --precompress the re-encoded videos are compared
    # by the size sent, and the episode is deleted once the server's digests match. An
    # episode the server holds under the same N with other bytes (another rig's) is never
    # deleted here: reel serve answers 409; a server that says "present" by name alone is
    # caught by the digests (client_test.cc DeleteAfterNeedsTheServersProof).
    served = server.root / "pick_cup"
    rc, doc, err = reel_upload(reel_bin, task, server.url, 1, "--delete-after", "--precompress")
    assert rc == 0 and doc["episodes"][0]["deleted"], (doc, err)
    assert not (task / data_rel(1)).exists() and (served / data_rel(1)).is_file()
    # The server's copy of episode 2 changes behind the client's back (a stand-in for another
    # rig's episode 2 landed first).
    rc, doc, err = reel_upload(reel_bin, task, server.url, 2)
    assert rc == 0, err
    held = served / data_rel(2)
    held.write_bytes(held.read_bytes() + b"\0")
    before = (task / data_rel(2)).read_bytes()
    rc, doc, err = reel_upload(reel_bin, task, server.url, 2, "--delete-after")
    assert rc != 0 and not doc["episodes"][0].get("deleted"), (doc, err)
    # The outbox knows episode 2 was confirmed, so nothing is sent again; the proof made
    # right before the delete finds other bytes on the server and nothing is deleted.
    err2 = doc["episodes"][0]["error"]
    assert "not deleted" in err2 and "the server's data of episode 2" in err2, doc
    assert (task / data_rel(2)).read_bytes() == before
    rc, status, err = reel_exec(reel_bin, "upload", task, "--status", "--json")
    assert rc == 0, err
    states = {j["episode_index"]: j["state"] for j in json.loads(status)["jobs"]}
    assert states == {1: "pruned", 2: "conflict"}, states


def test_login_cookie_and_token_from_file(reel_bin, task, server, tmp_path):
    pw = tmp_path / "pw"
    pw.write_text(PASSWORD + "\n")
    rc, doc, err = reel_upload(reel_bin, task, server.url, 1, "--user", USER, "--password-file", pw, token=None)
    assert rc == 0, err
    tok = tmp_path / "tok"
    tok.write_text(TOKEN_A + "\n")
    rc, doc, err = reel_upload(reel_bin, task, server.url, 2, "--token-file", tok, token=None)
    assert rc == 0, err
    assert_landed(task, server.root / "pick_cup", 2)


def test_refusals_are_final_and_named(reel_bin, task, server):
    # A token limited to pick_cup may not upload under another name: 403, one attempt.
    rc, doc, err = reel_upload(reel_bin, task, server.url, 1, "--name", "other_task", token=TOKEN_A)
    assert rc == 2 and not doc["all_landed"], (doc, err)
    msg = doc["episodes"][0]["error"]
    assert "403" in msg and "auth.project" in msg, msg
    rc, doc, err = reel_upload(reel_bin, task, server.url, 1, token="wrong-token")
    assert rc == 2 and "401" in doc["episodes"][0]["error"], doc
    assert not (server.root / "other_task").exists() and not (server.root / "pick_cup").exists()


def test_refused_credentials_stop_before_any_slice_is_sent(reel_bin, task, server):
    rc, doc, err = reel_upload(reel_bin, task, server.url, 1, 2, 3, token=None)
    assert rc == 2 and [e["episode_index"] for e in doc["episodes"]] == [1, 2, 3], (doc, err)
    for e in doc["episodes"]:
        assert "401" in e["error"] and "before any slice was sent" in e["error"], e
    assert [l for l in server.log_lines() if l.get("method") in ("POST", "PATCH")] == []


def test_progress_as_json_lines(reel_bin, task, server):
    rc, out, err = reel_exec(reel_bin, "upload", task, 1, "--server", server.url, "--token", TOKEN_ALL,
                             "--progress", "json", timeout=300)
    assert rc == 0, err
    lines = [json.loads(x) for x in err.splitlines() if x.startswith('{"progress"')]
    assert lines and lines[-1]["progress"] == "bytes sent" and lines[-1]["done"] == lines[-1]["total"] > 0, err
    assert lines[-1]["item"] == "episode 1"


def test_connection_errors_name_the_server(reel_bin, task):
    port = _free_port()
    rc, doc, err = reel_upload(reel_bin, task, f"http://127.0.0.1:{port}", 1, "--retries", 1)
    assert rc == 2 and f"http://127.0.0.1:{port}" in doc["episodes"][0]["error"], doc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_server_killed_mid_upload_episode_lands_exactly_once(reel_bin, task, config, tmp_path):
    port = _free_port()
    root = tmp_path / "root"
    first = ReelServer(reel_bin, root, config, tmp_path / "a.log", port=port).start()
    url = f"http://127.0.0.1:{port}"
    assert first.url == url
    result = {}

    def run():
        result["r"] = reel_upload(reel_bin, task, url)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.3)  # mid-way through the three uploads
    first.kill()
    second = ReelServer(reel_bin, root, config, tmp_path / "b.log", port=port).start()
    t.join(timeout=300)
    try:
        rc, doc, err = result["r"]
        assert rc == 0 and doc["all_landed"], (doc, err)
        served = root / "pick_cup"
        check_clean(reel_bin, served)
        for n in (1, 2, 3):
            assert_landed(task, served, n)
        sessions = requests.get(f"{url}/api/v1/sessions", params={"name": "pick_cup"},
                                headers={"Authorization": f"Bearer {TOKEN_ALL}"}, timeout=30).json()["sessions"]
        assert sorted(s["episode_index"] for s in sessions) == [1, 2, 3]
    finally:
        second.stop()
