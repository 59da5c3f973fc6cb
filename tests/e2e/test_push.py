"""reel push (include/reel/push.h, docs/storage.md): mirror a task, only what is missing,
resumable, one writer, never a torn episode.

The kill campaign SIGKILLs `reel push` at random moments (REEL_PUSH_KILLS kills: 15 in make test, 50 in make soak)
onto a copy that already holds an older, smaller push of the task, then checks what a reader
sees: `reel ls` on the copy lists only episodes whose every file is byte-identical to the
source, exactly those an independent listing finds published (episodes row present, no push
journal), and a re-run completes the copy. The destination is a directory here; the same
protocol on object storage is tested in test_object_store.py.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from .cli_run import reel
from .kill_campaign import kill_rounds, run_killed_after

JOURNAL_RE = re.compile(r"\.(?:push|commit)-(\d+)\.json")
ROW_RE = re.compile(r"meta/episodes/chunk-(\d{3})/episode-(\d{3})\.parquet")


def files_of(root: Path) -> dict:
    """Relative path -> sha256 of every non-dot file under root (what a mirror must hold)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not any(part.startswith(".") for part in rel.split("/")):
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def episode_files(task: Path, reel_bin: str) -> dict:
    """N -> the relative paths of episode N's files (data, row, videos), from the source task."""
    listed = json.loads(reel(reel_bin, "ls", task, "--json").stdout)["episodes"]
    out = {}
    for e in listed:
        c, f = e["chunk"], e["file"]
        out[e["episode_index"]] = [f"data/chunk-{c:03d}/episode-{f:03d}.parquet",
                                   f"meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet", *e["videos"].values()]
    return out


def published(dest: Path, chunks_size: int = 1000) -> set:
    """Episodes an independent reader would show: episodes row present, no journal."""
    rows = set()
    for p in dest.glob("meta/episodes/chunk-*/episode-*.parquet"):
        m = ROW_RE.fullmatch(p.relative_to(dest).as_posix())
        rows.add(int(m.group(1)) * chunks_size + int(m.group(2)) + 1)
    meta = dest / "meta"
    journals = {int(m.group(1)) for p in meta.iterdir() if (m := JOURNAL_RE.fullmatch(p.name))} if meta.is_dir() else set()
    return rows - journals


def assert_never_torn(reel_bin: str, dest: Path, source_files: dict, source_hashes: dict, context: str):
    proc = subprocess.run([reel_bin, "ls", str(dest), "--json"], capture_output=True, text=True, timeout=60)
    if not (dest / "meta" / "info.json").exists():
        assert proc.returncode == 2, f"{context}: a copy without info.json is not a task\n{proc.stderr}"
        return set()
    assert proc.returncode == 0, f"{context}: {proc.stderr}"
    listed = {e["episode_index"] for e in json.loads(proc.stdout)["episodes"]}
    assert listed == published(dest), f"{context}: reel lists {sorted(listed)}, published {sorted(published(dest))}"
    for n in listed:
        for rel in source_files[n]:
            p = dest / rel
            assert p.is_file(), f"{context}: episode {n} is listed but {rel} is missing (torn)"
            assert hashlib.sha256(p.read_bytes()).hexdigest() == source_hashes[rel], \
                f"{context}: episode {n} is listed but {rel} differs from the source (torn)"
    return listed


@pytest.fixture(scope="module")
def source(reel_bin, tmp_path_factory):
    """A 6-episode task, and a copy of it cut down to its first 2 episodes (an older state)."""
    root = tmp_path_factory.mktemp("push")
    task = root / "task"
    reel(reel_bin, "simulate", task, "--count", 6, "--seconds", 1)
    older = root / "older"
    shutil.copytree(task, older)
    for n, rels in episode_files(task, reel_bin).items():
        if n > 2:
            for rel in rels:
                (older / rel).unlink()
    return task, older


def test_push_mirrors_then_sends_nothing(reel_bin, source, tmp_path):
    task, _ = source
    dest = tmp_path / "copy"
    first = json.loads(reel(reel_bin, "push", task, dest, "--json").stdout)
    assert first["sent"] == [1, 2, 3, 4, 5, 6] and first["present"] == 0
    assert first["task_files_sent"] == ["meta/tasks.jsonl", "meta/info.json", "meta/stats.json"]
    assert files_of(dest) == files_of(task)
    assert not list(dest.glob("meta/.push-*")), "no journal or lock is left behind"
    again = json.loads(reel(reel_bin, "push", task, dest, "--json").stdout)
    assert again["sent"] == [] and again["present"] == 6 and again["files_sent"] == 0
    assert again["task_files_sent"] == []
    reel(reel_bin, "check", dest)


def test_push_of_chosen_episodes(reel_bin, source, tmp_path):
    task, _ = source
    files = episode_files(task, reel_bin)
    dest = tmp_path / "some"
    report = json.loads(reel(reel_bin, "push", task, dest, "--episodes", "2,4-5", "--json").stdout)
    assert report["sent"] == [2, 4, 5] and report["episodes"] == 3
    sent = {rel for n in (2, 4, 5) for rel in files[n]}
    task_files = {"meta/tasks.jsonl", "meta/info.json", "meta/stats.json"}
    assert set(files_of(dest)) == sent | task_files
    proc = reel(reel_bin, "push", task, dest, "--episodes", "7", ok=2)
    assert "episode 7 is not in the task" in proc.stderr
    proc = reel(reel_bin, "push", task, dest, "--episodes", "x", ok=2)
    assert "--episodes" in proc.stderr


def test_only_what_is_missing_is_sent_and_verify_finds_changed_bytes(reel_bin, source, tmp_path):
    task, older = source
    dest = tmp_path / "copy"
    reel(reel_bin, "push", older, dest)
    report = json.loads(reel(reel_bin, "push", task, dest, "--json").stdout)
    assert report["sent"] == [3, 4, 5, 6] and report["present"] == 2
    assert files_of(dest) == files_of(task)
    # Same size, other bytes: found by --verify only.
    video = next(dest.glob("videos/chunk-000/*/episode-000.mp4"))
    data = bytearray(video.read_bytes())
    data[-1] ^= 0xFF
    video.write_bytes(bytes(data))
    assert json.loads(reel(reel_bin, "push", task, dest, "--json").stdout)["sent"] == []
    assert json.loads(reel(reel_bin, "push", task, dest, "--json", "--verify").stdout)["sent"] == [1]
    assert files_of(dest) == files_of(task)


def test_dry_run_sends_nothing(reel_bin, source, tmp_path):
    task, _ = source
    dest = tmp_path / "copy"
    report = json.loads(reel(reel_bin, "push", task, dest, "--dry-run", "--json").stdout)
    assert report["dry_run"] and report["sent"] == [1, 2, 3, 4, 5, 6] and report["files_sent"] > 0
    assert not dest.exists() or files_of(dest) == {}


def test_a_second_writer_is_refused_while_the_lease_is_live(reel_bin, source, tmp_path):
    task, _ = source
    dest = tmp_path / "copy"
    (dest / "meta").mkdir(parents=True)
    lock = dest / "meta" / ".push-lock.json"
    lock.write_text(json.dumps({"holder": "another-host:4242:1", "written_at": time.time(),
                                "expires_at": time.time() + 600}))
    proc = reel(reel_bin, "push", task, dest, ok=2)
    assert "being pushed by another-host:4242:1" in proc.stderr and "one writer per task" in proc.stderr
    assert not (dest / "meta" / "info.json").exists()
    assert "another-host" in lock.read_text(), "the refused push leaves the other writer's lock alone"
    # An expired lease (its writer died) is taken over.
    lock.write_text(json.dumps({"holder": "another-host:4242:1", "written_at": 0, "expires_at": 1}))
    reel(reel_bin, "push", task, dest)
    assert files_of(dest) == files_of(task) and not lock.exists()


def test_killed_push_never_shows_a_torn_episode_and_a_rerun_completes_it(reel_bin, source, tmp_path):
    task, older = source
    kills_wanted = kill_rounds("REEL_PUSH_KILLS", quick=15, soak=50)
    source_files, source_hashes = episode_files(task, reel_bin), files_of(task)
    bases = {}
    for name, base in (("fresh", None), ("older", older)):
        d = tmp_path / f"base-{name}"
        if base is not None:
            reel(reel_bin, "push", base, d)
        bases[name] = d
    # How long a whole push onto the older copy takes, to spread the kills over it.
    probe = tmp_path / "probe"
    shutil.copytree(bases["older"], probe)
    started = time.monotonic()
    reel(reel_bin, "push", task, probe)
    duration = time.monotonic() - started
    rng = random.Random(15)
    kills, rounds, seen_partial = 0, 0, 0
    while kills < kills_wanted and rounds < 8 * kills_wanted:
        rounds += 1
        name = rng.choice(["fresh", "older", "older"])
        dest = tmp_path / "dest"
        shutil.rmtree(dest, ignore_errors=True)
        if bases[name].exists():
            shutil.copytree(bases[name], dest)
        delay = rng.uniform(0.0, duration * 1.1)
        rc, err = run_killed_after([reel_bin, "push", str(task), str(dest)], delay)
        context = f"round {rounds} ({name}, killed after {delay:.3f} s, exit {rc})"
        assert rc in (0, -9), f"{context}: {err}"
        kills += rc == -9
        listed = assert_never_torn(reel_bin, dest, source_files, source_hashes, context)
        seen_partial += 0 < len(listed) < len(source_files)
        reel(reel_bin, "push", task, dest)  # the re-run completes it
        assert files_of(dest) == source_hashes, f"{context}: the re-run did not complete the copy"
        assert not list((dest / "meta").glob(".push-*")), f"{context}: a journal or lock was left"
    print(f"{kills} kills in {rounds} rounds; {seen_partial} left a partly pushed copy")
    assert kills >= kills_wanted, f"only {kills} of {rounds} pushes were still running when killed"
    assert seen_partial > 0, "no kill left a partly pushed copy: the campaign did not reach the middle"
    reel(reel_bin, "check", dest)


def test_a_push_never_rolls_a_destination_back(reel_bin, source, tmp_path):
    # Issue 27 finding 12: `reel push` after episodes reached the destination another way
    # (`reel import` into it) overwrote its info.json and stats.json (total_episodes 4 -> 2).
    # Now refused before anything is sent, naming the episodes.
    task, older = source
    dest = tmp_path / "copy"
    reel(reel_bin, "push", task, dest)
    before = files_of(dest)
    proc = reel(reel_bin, "push", older, dest, ok=2)
    assert "3, 4, 5, 6" in proc.stderr and "roll" in proc.stderr, proc.stderr
    assert files_of(dest) == before
    reel(reel_bin, "push", task, dest)  # the source that holds them all pushes as before


def test_a_linked_file_in_the_source_is_refused_and_nothing_sent(reel_bin, source, tmp_path):
    # Issue 27: a task's files are its own. A video that is a link to a file outside the task
    # would send that file's bytes to the destination: refused before anything is sent.
    task = tmp_path / "task"
    shutil.copytree(source[0], task)
    secret = tmp_path / "outside.mp4"
    video = sorted(task.glob("videos/chunk-000/*/episode-001.mp4"))[0]
    secret.write_bytes(video.read_bytes())
    video.unlink()
    video.symlink_to(secret)
    dest = tmp_path / "copy"
    proc = reel(reel_bin, "push", task, dest, ok=2)
    rel = video.relative_to(task).as_posix()
    assert f'the symbolic link "{rel}"' in proc.stderr, proc.stderr
    assert not dest.exists() or not [p for p in dest.rglob("*") if p.is_file()]
