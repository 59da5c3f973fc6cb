"""Crash safety of the recorder (include/reel/recorder.h, "Commit protocol"; contract-decisions "durability").

- SIGKILL at random moments while `reel simulate` records: no committed episode is ever lost
  or changed, numbers never repeat, a commit whose journal exists is rolled forward by the
  next recording, `reel check` is clean after every kill (readers hide an episode whose
  meta/.commit-N.json journal is still present), and the next number follows the rules.
- Two recorders started together on one fresh task never share a number.
- `reel delete` of a missing episode fails with a message; of an existing one keeps its row.

The kill test runs REEL_KILL_ROUNDS rounds (default 40) within REEL_KILL_BUDGET_S seconds
(default 30, timing run included). A longer run, without the time budget, as a script:

    REEL_BIN=build/cmake/tools/reel .venv/bin/python -m tests.e2e.test_recorder_crash 500
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from .fixtures import data_rel, row_rel
from .kill_campaign import run_killed_after
from .recorder_common import (
    check_clean,
    data_numbers,
    leftover_dotfiles,
    listing,
    reel_exec,
    row_dict,
    row_numbers,
    simulate,
)

# Video on, tiny (the crash points of interest are the files, not the pixels): every
# committed episode must have all eight slot files, a rolled-back one none.
SIM_ARGS = ("--count", 50, "--seconds", 0.2, "--fps", 10, "--video-size", "32x24")
VIDEO_SLOTS = 8
VIDEO_RE = re.compile(r"^videos/chunk-(\d{3})/[a-z0-9_]+/episode-(\d{3})\.(mp4|mkv)$")
TIMING_EPISODES = 10
MARKER = "meta/recycled_episode.json"
JOURNAL_RE = re.compile(r"\.commit-(\d+)\.json$")


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def pending_journals(task: Path) -> set:
    meta = Path(task) / "meta"
    if not meta.is_dir():
        return set()
    return {int(m.group(1)) for p in meta.iterdir() if (m := JOURNAL_RE.fullmatch(p.name))}


def visible_episodes(task: Path) -> dict:
    """N -> (sha256 of data parquet, of episodes row, of each video) for every committed
    episode: all its files present and no journal pending for N (what readers show)."""
    data, rows, pending = set(data_numbers(task)), set(row_numbers(task)), pending_journals(task)
    videos: dict = {}
    for rel in listing(task, "videos"):
        if m := VIDEO_RE.match(rel):
            videos.setdefault(int(m.group(1)) * 1000 + int(m.group(2)) + 1, []).append(rel)
    out = {}
    for n in sorted((data | rows | set(videos)) - pending):
        vids = sorted(videos.get(n, []))
        assert n in data and n in rows and len(vids) == VIDEO_SLOTS, (
            f"N={n} is half there (data: {n in data}, episodes row: {n in rows}, videos: {len(vids)}/{VIDEO_SLOTS}) "
            f"and no journal is pending: {listing(task, 'data')} / {listing(task, 'meta/episodes')} / {vids}"
        )
        out[n] = (sha256(Path(task) / data_rel(n)), sha256(Path(task) / row_rel(n)), *(sha256(Path(task) / v) for v in vids))
    return out


def marker_number(task: Path):
    p = Path(task) / MARKER
    if not p.is_file():
        return None
    return json.loads(p.read_text(encoding="utf-8")).get("episode_index")


def assert_episode_is(task: Path, n: int) -> None:
    """A newly visible episode holds its own number (so no number was shared)."""
    col = pq.read_table(Path(task) / data_rel(n), columns=["episode_index"]).column("episode_index")
    assert set(col.to_pylist()) == {n}, f"{data_rel(n)}: episode_index column holds {sorted(set(col.to_pylist()))}, expected {n}"
    assert row_dict(task, n)["episode_index"] == n, f"{row_rel(n)}: episode_index != {n}"


def run_kill_rounds(reel_bin: str, work: Path, rounds: int, budget_s: float | None, seed: int = 20240601) -> int:
    """Runs the kill rounds on work/'kill'; returns how many ran. Plain asserts (usable as a script)."""
    rng = random.Random(seed)
    started = time.monotonic()
    # Expected runtime of one full 50-episode run, measured once on a scratch task
    # (10 episodes, scaled: the per-episode cost dominates).
    timing_args = ("--count", TIMING_EPISODES, *SIM_ARGS[2:])
    t0 = time.monotonic()
    rc, out, err = reel_exec(reel_bin, "simulate", work / "timing", *timing_args, timeout=300)
    assert rc == 0, f"reel simulate (timing run) exited {rc}\n{out}\n{err}"
    full_s = (time.monotonic() - t0) * SIM_ARGS[1] / TIMING_EPISODES

    task = work / "kill"
    argv = [reel_bin, "simulate", str(task), *[str(a) for a in SIM_ARGS]]
    seen: dict = {}  # every episode ever visible -> hashes
    decided: set = set()  # journals present after a kill: must be rolled forward
    done_rounds = 0
    for rnd in range(rounds):
        if budget_s is not None and time.monotonic() - started > budget_s:
            break
        delay = rng.uniform(0.0, full_s)
        returncode, err = run_killed_after(argv, delay)
        what = f"round {rnd} (SIGKILL after {delay:.3f} s of ~{full_s:.2f} s)"
        assert returncode in (0, -signal.SIGKILL), f"{what}: reel simulate exited {returncode}\n{err}"
        done_rounds += 1

        # This round's Open rolled forward the journals the previous kill left.
        now = visible_episodes(task)
        for n in sorted(decided):
            assert n in now, f"{what}: N={n} had a commit journal after the previous kill but is gone now"
        lost = sorted(set(seen) - set(now))
        assert not lost, f"{what}: committed episodes lost: {lost}"
        changed = sorted(n for n in seen if now[n] != seen[n])
        assert not changed, f"{what}: committed episodes changed (a number was reused?): {changed}"
        for n in sorted(set(now) - set(seen)):
            assert_episode_is(task, n)
        seen.update(now)
        decided = pending_journals(task)

        # A crash never leaves a gap: an interrupted N is taken again by the next recording.
        assert sorted(now) == list(range(1, len(now) + 1)), f"{what}: committed numbers are not 1..{len(now)}: {sorted(now)}"
        if decided:
            assert max(decided) > max(now, default=0), f"{what}: journal for {sorted(decided)} but visible {sorted(now)}"
        check_clean(reel_bin, task)

    # One more recording: rolls forward, gets the next number, and the task checks clean.
    free = marker_number(task)
    before = visible_episodes(task) | {n: None for n in decided}
    eps = simulate(reel_bin, task, "--count", 1, "--seconds", 0.2, "--fps", 10)
    assert len(eps) == 1 and eps[0]["committed"], eps
    n = eps[0]["episode_index"]
    if free is not None and free not in before:
        assert n == free, f"recycled marker named free N={free}, but the final recording got N={n}"
    else:
        assert n > max(before, default=0), f"final recording got N={n}, not above every committed N {sorted(before)}"
    after = visible_episodes(task)
    for m, h in seen.items():
        assert after.get(m) == h, f"after the final recording, committed N={m} is lost or changed"
    assert set(after) == set(before) | {n}, f"visible after the final recording: {sorted(after)}, expected {sorted(set(before) | {n})}"
    check_clean(reel_bin, task)
    assert not leftover_dotfiles(task), f"dotfiles left after a clean recording: {leftover_dotfiles(task)}"
    return done_rounds


def test_sigkill_while_recording_never_loses_a_committed_episode(reel_bin, tmp_path):
    rounds = int(os.environ.get("REEL_KILL_ROUNDS", "40"))
    budget = float(os.environ.get("REEL_KILL_BUDGET_S", "30"))
    ran = run_kill_rounds(reel_bin, tmp_path, rounds, budget)
    print(f"{ran} kill rounds of {rounds} within {budget} s")
    assert ran >= min(rounds, 5), f"only {ran} kill rounds fit in {budget} s"


def test_two_recorders_started_together_never_share_a_number(reel_bin, tmp_path):
    task = tmp_path / "shared"
    argv = [reel_bin, "simulate", str(task), "--count", 5, "--seconds", 0.2, "--fps", 10, "--json"]
    argv = [str(a) for a in argv]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    numbers = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, f"reel simulate exited {p.returncode}\n{err.decode(errors='replace')}"
        got = json.loads(out)
        numbers += [e["episode_index"] for e in got["episodes"] if e["committed"]]
    assert len(numbers) == 10, numbers
    assert sorted(numbers) == list(range(1, 11)), f"two recorders shared or skipped numbers: {sorted(numbers)}"
    check_clean(reel_bin, task)
    rows = [p for p in listing(task, "meta/episodes") if not Path(p).name.startswith(".")]
    assert rows == sorted(row_rel(n) for n in range(1, 11)), f"meta/episodes holds {rows}"
    assert data_numbers(task) == list(range(1, 11))
    for n in range(1, 11):
        assert_episode_is(task, n)
    assert not leftover_dotfiles(task), leftover_dotfiles(task)


def test_delete_missing_episode_fails_and_existing_keeps_its_row(reel_bin, tmp_path):
    task = tmp_path / "del"
    simulate(reel_bin, task, "--count", 2, "--seconds", 0.2, "--fps", 10)
    rc, out, err = reel_exec(reel_bin, "delete", task, 7)
    assert rc != 0, f"reel delete of a missing episode exited 0\n{out}\n{err}"
    assert (out + err).strip(), "reel delete of a missing episode printed no message"
    assert "7" in out + err, f"the message does not name the episode: {out}{err}"
    rc, out, err = reel_exec(reel_bin, "delete", task, 2)
    assert rc == 0, f"reel delete 2 exited {rc}\n{out}\n{err}"
    assert data_numbers(task) == [1]
    assert row_numbers(task) == [1, 2], "the deleted episode's row must stay (contract §9)"
    check_clean(reel_bin, task)
    eps = simulate(reel_bin, task, "--count", 1, "--seconds", 0.2, "--fps", 10)
    assert eps[0]["episode_index"] == 3, f"a deleted number was reused: {eps}"


if __name__ == "__main__":
    # python -m tests.e2e.test_recorder_crash [ROUNDS]: the kill test without the time budget.
    bin_path = os.environ.get("REEL_BIN")
    if not bin_path:
        sys.exit("set REEL_BIN to the built reel CLI")
    n_rounds = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ.get("REEL_KILL_ROUNDS", "40"))
    with tempfile.TemporaryDirectory() as d:
        done = run_kill_rounds(os.path.abspath(bin_path), Path(d), n_rounds, None)
    print(f"{done} kill rounds: ok")
