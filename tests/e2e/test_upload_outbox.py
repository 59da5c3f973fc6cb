"""The upload outbox (issue 28, docs/upload.md) with the real `reel upload` against the real
`reel serve` over loopback: a killed upload resumes at the server's offset, a re-run sends
nothing the server confirmed, `--watch` picks up new commits by itself, transient failures
back off and never end a job, refusals and conflicts are final states with the server's rule,
and the outbox is invisible to readers, pack and check. Expected values come from the client
task's own files and the server's request log, never from the outbox under test."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import requests

from .fixtures import data_rel
from .recorder_common import check_clean, reel_exec, simulate
from .serve_common import TOKEN_ALL, ReelServer, episode_files, write_config


@pytest.fixture
def config(reel_bin, tmp_path):
    return write_config(reel_bin, tmp_path / "serve.json", project_a="pick_cup")


@pytest.fixture
def server(reel_bin, tmp_path, config):
    srv = ReelServer(reel_bin, tmp_path / "root", config, tmp_path / "serve.log").start()
    yield srv
    srv.stop()


def small_task(reel_bin, root: Path, count=3) -> Path:
    t = root / "pick_cup"
    simulate(reel_bin, t, "--count", count, "--seconds", "1", "--video-size", "32x24")
    return t


def upload(reel_bin, task, url, *args, timeout=300):
    rc, out, err = reel_exec(reel_bin, "upload", task, *args, "--server", url, "--token", TOKEN_ALL,
                             "--no-progress", "--json", timeout=timeout)
    return rc, (json.loads(out) if out.strip().startswith("{") else None), err


def status(reel_bin, task) -> dict:
    rc, out, err = reel_exec(reel_bin, "upload", task, "--status", "--json")
    assert rc == 0, err
    return json.loads(out)


def jobs_now(reel_bin, task) -> list[dict]:
    """The outbox's jobs, or [] before the uploader created it."""
    rc, out, _ = reel_exec(reel_bin, "upload", task, "--status", "--json")
    return json.loads(out)["jobs"] if rc == 0 else []


def states(reel_bin, task) -> dict[int, str]:
    return {j["episode_index"]: j["state"] for j in status(reel_bin, task)["jobs"]}


def start_upload(reel_bin, task, url, *args) -> subprocess.Popen:
    return subprocess.Popen([reel_bin, "upload", str(task), *map(str, args), "--server", url, "--token", TOKEN_ALL,
                             "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for(pred, timeout: float, what: str):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout} s: {what}")


def metric(text: str, name: str) -> float:
    """The value of the Prometheus sample `name` (with its labels) in `text`."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{name} not in /metrics:\n{text}")


def assert_landed(client: Path, served: Path, n: int):
    for rel in episode_files(client, n):
        assert (served / rel).read_bytes() == (client / rel).read_bytes(), f"N={n}: {rel} differs on the server"


def test_the_outbox_is_invisible_to_readers_pack_and_check(reel_bin, tmp_path, server):
    task = small_task(reel_bin, tmp_path / "client")
    _, ls_before, _ = reel_exec(reel_bin, "ls", task, "--json")
    rc, doc, err = upload(reel_bin, task, server.url)
    assert rc == 0 and doc["all_landed"], (doc, err)
    assert (task / "meta" / ".upload-outbox" / "outbox.sqlite").is_file()
    check_clean(reel_bin, task)
    _, ls_after, _ = reel_exec(reel_bin, "ls", task, "--json")
    assert ls_after == ls_before
    zip_path = tmp_path / "slice.zip"
    rc, _, err = reel_exec(reel_bin, "pack", task, 1, "-o", zip_path)
    assert rc == 0, err
    assert not [n for n in zipfile.ZipFile(zip_path).namelist() if ".upload-outbox" in n]
    # Every job confirmed by the server's digests, and the kept slices are gone.
    assert states(reel_bin, task) == {1: "confirmed", 2: "confirmed", 3: "confirmed"}
    assert list((task / "meta" / ".upload-outbox" / "slices").iterdir()) == []
    for j in status(reel_bin, task)["jobs"]:
        assert len(j["digest"]) == 64 and j["session_id"] and j["project"] == "pick_cup"


def test_a_killed_resumable_upload_resumes_at_the_servers_offset(reel_bin, tmp_path, server):
    task = tmp_path / "client" / "pick_cup"
    simulate(reel_bin, task, "--count", 1, "--seconds", "3", "--video-size", "320x240")
    chunk = 64 * 1024
    args = ("--resumable-threshold", 1, "--chunk", chunk, "--bwlimit", "256K")
    proc = start_upload(reel_bin, task, server.url, *args)
    try:
        sent = wait_for(lambda: next((j["sent"] for j in jobs_now(reel_bin, task)
                                      if j["state"] == "sending" and j["sent"] >= 2 * chunk), None),
                        60, "the upload to be part-way")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    job = status(reel_bin, task)["jobs"][0]
    assert job["state"] == "sending" and job["sent"] >= sent and job["sent"] < job["zip_bytes"], job
    rc, doc, err = upload(reel_bin, task, server.url, *args[:4])
    assert rc == 0 and doc["all_landed"], (doc, err)
    assert_landed(task, server.root / "pick_cup", 1)
    # What crossed the wire in PATCH bodies, by the server's own count: the slice once, plus
    # at most the chunk in flight when the client died and the one the persisted offset lags.
    patched = sum(l.get("bytes_in", 0) for l in server.log_lines() if l.get("method") == "PATCH")
    assert job["zip_bytes"] <= patched <= job["zip_bytes"] + 2 * chunk, (patched, job)
    creations = [l for l in server.log_lines() if l.get("method") == "POST" and l.get("path") == "/api/v1/uploads"]
    assert len(creations) == 1, "the second run must resume the first run's upload, not create another"
    assert states(reel_bin, task) == {1: "confirmed"}
    # The server's side of it in /metrics: the resume (a HEAD) and the proof.
    metrics = requests.get(server.url + "/metrics", timeout=30).text
    assert metric(metrics, "reel_tus_resumes_total") >= 1, metrics
    assert metric(metrics, 'reel_episode_proofs_total{outcome="held"}') >= 1, metrics


def test_watch_uploads_each_new_commit_by_itself(reel_bin, tmp_path, server):
    task = small_task(reel_bin, tmp_path / "client", count=1)
    events = tmp_path / "events.jsonl"
    proc = start_upload(reel_bin, task, server.url, "--watch", "--events", events, "--rescan", 60)
    try:
        served = server.root / "pick_cup"
        wait_for(lambda: (served / data_rel(1)).is_file(), 60, "episode 1 on the server")
        # Recorded while the uploader runs: inotify on meta/ sees the commit (the rescan is 60 s).
        simulate(reel_bin, task, "--count", 2, "--seconds", "1", "--video-size", "32x24")
        wait_for(lambda: {j["episode_index"]: j["state"] for j in jobs_now(reel_bin, task)}
                 == {1: "confirmed", 2: "confirmed", 3: "confirmed"}, 60,
                 "episodes 2 and 3 confirmed by the watcher")
        assert proc.poll() is None, "--watch keeps running"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    for n in (1, 2, 3):
        assert_landed(task, served, n)
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert {"enqueued", "packed", "imported", "confirmed"} <= {e["event"] for e in lines}
    posts = [l for l in server.log_lines() if l.get("path") == "/api/v1/session/upload"]
    assert sorted(l["status"] for l in posts) == [201, 201, 201], "each episode sent once"


def test_transient_failures_back_off_and_never_end_a_job(reel_bin, tmp_path, config):
    task = small_task(reel_bin, tmp_path / "client", count=2)
    srv = ReelServer(reel_bin, tmp_path / "root", config, tmp_path / "serve.log").start()
    url = srv.url
    srv.stop()  # nothing listens at url now
    rc, doc, err = upload(reel_bin, task, url, "--retries", 2)
    assert rc == 2 and not doc["all_landed"], (doc, err)
    jobs = status(reel_bin, task)["jobs"]
    assert [j["state"] for j in jobs] == ["sending", "sending"], jobs
    assert all(j["attempts"] == 2 and "no answer from the server" in j["last_error"] for j in jobs), jobs
    port = int(url.rsplit(":", 1)[1])
    srv = ReelServer(reel_bin, tmp_path / "root", config, tmp_path / "serve.log", port=port).start()
    try:
        rc, doc, err = upload(reel_bin, task, url)
        assert rc == 0 and doc["all_landed"], (doc, err)
        assert states(reel_bin, task) == {1: "confirmed", 2: "confirmed"}
        check_clean(reel_bin, srv.root / "pick_cup")
    finally:
        srv.stop()


def test_conflict_and_rejection_are_final_with_the_servers_rule(reel_bin, tmp_path, server):
    # Another rig's episode 1 of the same task lands first: ours is a conflict, never "done".
    other = small_task(reel_bin, tmp_path / "other", count=1)
    rc, doc, err = upload(reel_bin, other, server.url)
    assert rc == 0, err
    task = small_task(reel_bin, tmp_path / "client", count=2)
    rc, doc, err = upload(reel_bin, task, server.url, "--delete-after", "confirmed")
    assert rc == 2, (doc, err)
    jobs = {j["episode_index"]: j for j in status(reel_bin, task)["jobs"]}
    assert jobs[1]["state"] == "conflict" and jobs[1]["rule"] == "import.conflict", jobs[1]
    assert jobs[2]["state"] == "pruned", jobs[2]
    assert (task / data_rel(1)).is_file(), "a conflict never deletes"
    # A refusal (a project this token may not write) is final too, with the rule.
    rc, doc, err = upload(reel_bin, task, server.url, 1, "--project-id", "no/such")
    assert rc == 2, (doc, err)
    refused = [j for j in status(reel_bin, task)["jobs"] if j["project"] == "no/such"]
    assert refused and refused[0]["state"] == "rejected" and refused[0]["rule"], refused
    # Re-running sends nothing for settled jobs: the request log does not grow with uploads.
    before = len([l for l in server.log_lines() if l.get("method") in ("POST", "PATCH")])
    upload(reel_bin, task, server.url)
    after = len([l for l in server.log_lines() if l.get("method") in ("POST", "PATCH")])
    assert after == before


def test_status_formats_and_python(reel_bin, tmp_path, server):
    reel = pytest.importorskip("reel")
    task = small_task(reel_bin, tmp_path / "client", count=2)
    seen = []
    report = reel.upload(task, server=server.url, token=TOKEN_ALL, events=seen.append, parallel=1)
    out = report["episodes"]
    assert report["all_landed"]
    assert [r["ok"] for r in out] == [True, True] and [r["episode_index"] for r in out] == [1, 2], out
    assert {"packed", "imported", "confirmed"} <= {e["event"] for e in seen}
    st = reel.upload_status(task)
    assert [j["state"] for j in st["jobs"]] == ["confirmed", "confirmed"]
    assert st["counters"]["confirmed"] == 2
    again = reel.upload(task, server=server.url, token=TOKEN_ALL)["episodes"]
    assert all(r["already_present"] and r["attempts"] == 0 for r in again), again
    rc, text, err = reel_exec(reel_bin, "upload", task, "--status", "--prometheus")
    assert rc == 0, err
    assert 'reel_upload_jobs{state="confirmed"} 2' in text and "reel_upload_confirmed_total 2" in text, text
    with pytest.raises(reel.NotFoundError):
        reel.upload_status(tmp_path)


def test_min_free_prunes_confirmed_episodes_oldest_first(reel_bin, tmp_path, server):
    # A watermark no disk reaches (1 PiB free): every confirmed episode is pruned, each
    # after a fresh proof, the oldest confirmation first; the episodes rows stay (§9).
    task = small_task(reel_bin, tmp_path / "client", count=3)
    events = tmp_path / "events.jsonl"
    rc, doc, err = upload(reel_bin, task, server.url, "--parallel", 1, "--min-free", "1024T", "--events", events)
    assert rc == 0, (doc, err)
    assert states(reel_bin, task) == {1: "pruned", 2: "pruned", 3: "pruned"}
    for n in (1, 2, 3):
        assert not (task / data_rel(n)).exists()
        assert_landed_on_server_only(server.root / "pick_cup", n)
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    confirmed = [e["episode_index"] for e in lines if e["event"] == "confirmed"]
    pruned = [e["episode_index"] for e in lines if e["event"] == "pruned"]
    assert pruned == confirmed, (confirmed, pruned)
    proofs = [l for l in server.log_lines() if "/episodes/" in l.get("path", "") and l.get("method") == "GET"]
    assert len(proofs) >= 6, "one proof to confirm and one more right before each delete"
    check_clean(reel_bin, task)


def assert_landed_on_server_only(served: Path, n: int):
    assert (served / data_rel(n)).is_file(), f"N={n} not on the server"


def test_a_kill_between_delete_and_its_record_ends_pruned(reel_bin, tmp_path, server):
    # The delete happened, the "pruned" transition was lost (a kill, a power cut with
    # synchronous=NORMAL): the next run finds confirmed + no local data and records pruned,
    # never "proves" over no files.
    task = small_task(reel_bin, tmp_path / "client", count=1)
    rc, doc, err = upload(reel_bin, task, server.url, "--delete-after", "confirmed")
    assert rc == 0 and doc["episodes"][0]["deleted"], (doc, err)
    db = sqlite3.connect(task / "meta" / ".upload-outbox" / "outbox.sqlite")
    db.execute("UPDATE jobs SET state = 'confirmed'")
    db.commit()
    db.close()
    rc, doc, err = upload(reel_bin, task, server.url, "--delete-after", "confirmed")
    assert rc == 0, (doc, err)
    assert states(reel_bin, task) == {1: "pruned"}


def test_a_linked_outbox_is_refused(reel_bin, tmp_path, server):
    # The outbox is one of the task's files: a link must not lead its writes outside the task.
    task = small_task(reel_bin, tmp_path / "client", count=1)
    outside = tmp_path / "outside"
    outside.mkdir()
    (task / "meta" / ".upload-outbox").symlink_to(outside)
    rc, doc, err = upload(reel_bin, task, server.url)
    assert rc == 2 and "not a directory" in err, (doc, err)
    assert list(outside.iterdir()) == []


def test_python_watch_stops_on_ctrl_c(reel_bin, tmp_path, server):
    # reel.upload(watch=True) runs until interrupted; Ctrl-C (SIGINT) raises KeyboardInterrupt
    # once the jobs in flight stopped, and what was confirmed stays confirmed.
    pytest.importorskip("reel")
    task = small_task(reel_bin, tmp_path / "client", count=1)
    script = ("import sys, reel\n"
              "try:\n"
              f"    reel.upload({str(task)!r}, server={server.url!r}, token={TOKEN_ALL!r}, watch=True, rescan_s=1)\n"
              "except KeyboardInterrupt:\n"
              "    print('interrupted', flush=True)\n"
              "    sys.exit(0)\n"
              "sys.exit(3)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: {j["episode_index"]: j["state"] for j in jobs_now(reel_bin, task)} == {1: "confirmed"}, 60,
                 "episode 1 confirmed by the Python watcher")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "interrupted" in out, (proc.returncode, out, err)


def test_a_task_this_user_may_not_write_is_uploaded_once_without_an_outbox(reel_bin, tmp_path, server):
    # An archive or a read-only mount: no outbox can be made there, so the upload runs once as
    # before the outbox; --watch and deleting after upload need the outbox and are refused.
    task = small_task(reel_bin, tmp_path / "client", count=2)
    subprocess.run(["chmod", "-R", "a-w,a+rX", str(task)], check=True)
    for p in [tmp_path, *tmp_path.parents]:
        if p == Path("/"):
            break
        p.chmod(p.stat().st_mode | 0o005)  # the other user may reach the task
    as_other = [] if os.geteuid() != 0 else ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    if as_other and subprocess.run([*as_other, reel_bin, "--version"], capture_output=True).returncode != 0:
        pytest.skip("the reel binary is not runnable by another user here (its directories are private)")
    base = [*as_other, reel_bin, "upload", str(task), "--server", server.url, "--token", TOKEN_ALL, "--no-progress",
            "--json"]
    p = subprocess.run(base, capture_output=True, text=True, timeout=300)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["all_landed"] and len(doc["episodes"]) == 2, (p.stdout, p.stderr)
    assert not (task / "meta" / ".upload-outbox").exists()
    for n in (1, 2):
        assert_landed(task, server.root / "pick_cup", n)
    p = subprocess.run([*base, "--delete-after", "confirmed"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "needs the outbox" in p.stderr, (p.stdout, p.stderr)
    subprocess.run(["chmod", "-R", "u+w", str(task)], check=True)


def test_an_outbox_of_the_first_schema_is_migrated(reel_bin, tmp_path, server):
    # Version 1 outboxes have no jobs.files: the next uploader adds it and goes on.
    task = small_task(reel_bin, tmp_path / "client", count=2)
    rc, doc, err = upload(reel_bin, task, server.url, 1)
    assert rc == 0, (doc, err)
    db = sqlite3.connect(task / "meta" / ".upload-outbox" / "outbox.sqlite")
    db.execute("ALTER TABLE jobs DROP COLUMN files")
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()
    rc, doc, err = upload(reel_bin, task, server.url)
    assert rc == 0 and [e["episode_index"] for e in doc["episodes"]] == [1, 2], (doc, err)
    assert states(reel_bin, task) == {1: "confirmed", 2: "confirmed"}
    db = sqlite3.connect(task / "meta" / ".upload-outbox" / "outbox.sqlite")
    assert db.execute("PRAGMA user_version").fetchone()[0] == 2
    files = dict(db.execute("SELECT episode_index, files FROM jobs").fetchall())
    assert files[1] == "" and json.loads(files[2])[0][0] == "data", files
