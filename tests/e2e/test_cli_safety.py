"""Safe and visible (issue 14 item 5): --force before an output is replaced, delete --dry-run and
its summary, check --recursive and the skipped-folders line, --progress json, and scratch removed
when a job is interrupted."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from .cli_run import reel
from .fixtures import EpisodeSpec, data_rel, write_task

W, H = 64, 48


def run(reel_bin, *args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([reel_bin, *map(str, args)], capture_output=True, text=True, timeout=300, **kw)


@pytest.fixture(scope="module")
def sim_task(reel_bin, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("safety") / "pick"
    reel(reel_bin, "simulate", root, "--count", 3, "--seconds", 1.0, "--video-size", f"{W}x{H}", "--seed", 5)
    return root


def progress_lines(stderr: str) -> list[dict]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith('{"progress"')]


# --------------------------------------------------------------------------- --force


def test_pack_refuses_an_existing_zip_without_force(reel_bin, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    target = tmp_path / "slice.zip"
    target.write_bytes(b"someone else's file")
    p = run(reel_bin, "pack", task.path, 1, "-o", target)
    assert p.returncode == 2 and "slice.zip" in p.stderr and "--force" in p.stderr, p.stderr
    assert target.read_bytes() == b"someone else's file"
    # --force replaces a zip, never another file (the review found `-o meta/info.json --force`).
    p = run(reel_bin, "pack", task.path, 1, "-o", target, "--force")
    assert p.returncode == 2 and "not a zip" in p.stderr, p.stderr
    assert target.read_bytes() == b"someone else's file"
    target.unlink()
    assert run(reel_bin, "pack", task.path, 1, "-o", target).returncode == 0
    p = run(reel_bin, "pack", task.path, 1, "-o", target, "--force")
    assert p.returncode == 0, p.stderr
    assert target.read_bytes()[:2] == b"PK"


def test_export_replaces_an_existing_dataset_only_with_force(reel_bin, sim_task, tmp_path):
    out = tmp_path / "v3"
    reel(reel_bin, "export", sim_task, "-o", out, "--episodes", 1)
    p = reel(reel_bin, "export", sim_task, "-o", out, ok=2)
    assert "already exists" in p.stderr and "--force" in p.stderr, p.stderr
    reel(reel_bin, "export", sim_task, "-o", out, "--force")
    assert json.loads((out / "meta/info.json").read_text())["total_episodes"] == 3
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == [], "no staging left"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "mine.txt").write_text("keep")
    p = reel(reel_bin, "export", sim_task, "-o", notes, "--force", ok=2)
    assert "neither a LeRobot or bundle export" in p.stderr and (notes / "mine.txt").read_text() == "keep"
    # A pooled task is a recording, never an export's output (the review replaced one).
    other = tmp_path / "recording"
    shutil.copytree(sim_task, other)
    before = sorted(str(q.relative_to(other)) for q in other.rglob("*"))
    p = reel(reel_bin, "export", sim_task, "-o", other, "--force", ok=2)
    assert "pooled_episodes_v1" in p.stderr, p.stderr
    assert sorted(str(q.relative_to(other)) for q in other.rglob("*")) == before


# --------------------------------------------------------------------------- delete


def test_delete_dry_run_prints_and_keeps_everything(reel_bin, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2)])
    p = run(reel_bin, "delete", task.path, "1-2", "--dry-run")
    assert p.returncode == 0, p.stderr
    assert "would delete episode 1" in p.stdout and data_rel(2) in p.stdout, p.stdout
    assert (task.path / data_rel(1)).is_file() and (task.path / data_rel(2)).is_file()


def test_delete_says_what_it_deleted_and_refuses_to_delete_twice(reel_bin, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2)])
    p = run(reel_bin, "delete", task.path, 2)
    assert p.returncode == 0 and "deleted episode 2" in p.stdout, (p.stdout, p.stderr)
    assert not (task.path / data_rel(2)).exists()
    p = run(reel_bin, "delete", task.path, 2)
    assert p.returncode == 2 and "episode 2" in p.stderr and "deleted before" in p.stderr, p.stderr
    p = run(reel_bin, "delete", task.path, "1,2")  # one bad number: nothing is deleted
    assert p.returncode == 2 and (task.path / data_rel(1)).is_file()


# --------------------------------------------------------------------------- check


def nested(tmp_path) -> Path:
    root = tmp_path / "site"
    write_task(root, "good", [EpisodeSpec(1)])
    broken = write_task(root / "robots" / "arm", "bad", [EpisodeSpec(1)])
    (broken.path / data_rel(1)).write_bytes(b"not parquet")
    (root / "empty").mkdir()
    return root


def test_check_names_the_folders_it_did_not_look_into(reel_bin, tmp_path):
    root = nested(tmp_path)
    p = run(reel_bin, "check", root)
    assert p.returncode == 0, p.stderr
    assert "skipped 2 folders (not a task; --recursive looks inside)" in p.stdout, p.stdout
    assert str(root / "robots") in p.stdout
    doc = json.loads(run(reel_bin, "check", root, "--json").stdout)
    assert {s["path"] for s in doc["skipped"]} == {str(root / "empty"), str(root / "robots")}


def test_check_recursive_finds_a_broken_task_two_levels_down(reel_bin, tmp_path):
    root = nested(tmp_path)
    os.symlink(root / "robots", root / "link")
    p = run(reel_bin, "check", root, "--recursive")
    assert p.returncode == 1, p.stdout + p.stderr
    assert f"{root}/robots/arm/bad: FAILED" in p.stdout, p.stdout
    assert f"{root}/good: OK" in p.stdout
    assert "symbolic link" in p.stdout and str(root / "link") in p.stdout  # never followed
    p = run(reel_bin, "check", root, "--recursive", "--max-depth", 1)
    assert p.returncode == 0 and "deeper than max_depth" in p.stdout, p.stdout


def test_check_of_a_folder_with_tasks_only_further_down_points_at_recursive(reel_bin, tmp_path):
    root = nested(tmp_path)
    p = run(reel_bin, "check", root / "robots")
    assert p.returncode == 2 and "--recursive looks further down" in p.stderr, p.stderr
    p = run(reel_bin, "check", root / "robots", "-r")
    assert p.returncode == 1 and "robots/arm/bad: FAILED" in p.stdout, p.stdout


# --------------------------------------------------------------------------- progress


def test_long_jobs_report_progress_as_json_lines(reel_bin, sim_task, tmp_path):
    p = reel(reel_bin, "check", sim_task, "--progress", "json")
    lines = progress_lines(p.stderr)
    assert lines and lines[-1]["progress"] == "episodes checked" and lines[-1]["done"] == lines[-1]["total"] == 3
    assert p.stdout.startswith(str(sim_task))  # stdout stays the report
    p = reel(reel_bin, "export", sim_task, "-o", tmp_path / "v3", "--progress", "json")
    assert progress_lines(p.stderr)[-1] == {**progress_lines(p.stderr)[-1], "done": 3, "total": 3,
                                             "progress": "episodes exported"}
    p = reel(reel_bin, "import", tmp_path / "v3", tmp_path / "back", "--progress", "json")
    assert progress_lines(p.stderr)[-1]["progress"] == "episodes imported"
    p = reel(reel_bin, "pack", sim_task, 1, "-o", tmp_path / "s.zip", "--precompress", "--progress", "json")
    assert progress_lines(p.stderr)[-1]["progress"] == "videos precompressed"
    p = reel(reel_bin, "simulate", tmp_path / "sim", "--count", 2, "--seconds", 0.2, "--no-video",
             "--progress", "json")
    assert [line["done"] for line in progress_lines(p.stderr)] == [1, 2]
    p = reel(reel_bin, "check", sim_task)  # stderr is not a terminal: nothing
    assert p.stderr == ""


# --------------------------------------------------------------------------- interrupted


def full_pipe() -> tuple[int, int]:
    """A pipe whose buffer is full: the child's first write to it blocks, mid-job."""
    r, w = os.pipe()
    os.set_blocking(w, False)
    for size in (4096, 1):
        try:
            while True:
                os.write(w, b"x" * size)
        except BlockingIOError:
            pass
    os.set_blocking(w, True)
    return r, w


def interrupt_at_first_progress(argv, scratch_glob, env=None) -> subprocess.Popen:
    r, w = full_pipe()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=w, env=env)
    os.close(w)
    deadline = time.monotonic() + 60
    while not list(scratch_glob()) and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    assert list(scratch_glob()), "the job never made its scratch directory"
    time.sleep(0.3)  # blocked on the full stderr now
    child.send_signal(signal.SIGINT)
    drained = threading.Thread(target=lambda: [None for _ in iter(lambda: os.read(r, 65536), b"")], daemon=True)
    drained.start()
    child.wait(timeout=60)
    os.close(r)
    return child


def test_interrupted_export_leaves_no_staging(reel_bin, sim_task, tmp_path):
    out = tmp_path / "v3"
    child = interrupt_at_first_progress([reel_bin, "export", str(sim_task), "-o", str(out), "--progress", "json"],
                                        lambda: tmp_path.glob(".v3.export-*"))
    assert child.returncode == -signal.SIGINT
    assert list(tmp_path.iterdir()) == [], [p.name for p in tmp_path.iterdir()]


def test_interrupted_pack_precompress_leaves_no_scratch(reel_bin, sim_task, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    child = interrupt_at_first_progress(
        [reel_bin, "pack", str(sim_task), "1", "-o", str(tmp_path / "s.zip"), "--precompress", "--progress", "json"],
        lambda: tmp.glob("reel-pack-*"), env={**os.environ, "TMPDIR": str(tmp)})
    assert child.returncode == -signal.SIGINT
    assert list(tmp.iterdir()) == []


def test_progress_is_drawn_on_a_terminal(reel_bin, sim_task):
    import pty

    master, slave = pty.openpty()
    p = subprocess.run([reel_bin, "check", str(sim_task)], stdout=subprocess.PIPE, stderr=slave, timeout=120)
    os.close(slave)
    drawn = b""
    try:
        while chunk := os.read(master, 65536):
            drawn += chunk
    except OSError:  # EIO: the terminal's other side is closed
        pass
    os.close(master)
    assert p.returncode == 0
    assert b"\repisodes checked: 3/3" in drawn, drawn


def test_the_next_export_removes_staging_of_a_dead_run(reel_bin, sim_task, tmp_path):
    stale = tmp_path / ".v3.export-999999999-AbCdEf"  # no such pid
    (stale / "data").mkdir(parents=True)
    hour_ago = time.time() - 3600
    os.utime(stale, (hour_ago, hour_ago))
    reel(reel_bin, "export", sim_task, "-o", tmp_path / "v3", "--episodes", 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v3"]
