#!/usr/bin/env python3
"""Soak (a): SIGKILL the recorder at random moments, round after round, and count what
a crash could do to a task (docs/reliability.md "Soak").

Each round starts `reel simulate TASK --episodes E` and kills it (SIGKILL) after a random
delay drawn over one full run; the next round's recorder rolls forward what the kill left.
After every round the task is reopened and judged:
  torn      an episode half there (data, episodes row and all 8 videos, not all of them)
            with no commit journal pending, or `reel check` reporting an error
  lost      an episode visible after an earlier round that is gone now
  reused    an episode whose files changed (its number was given out twice)
  misnumbered  a new episode whose data/episodes row holds another number
  gaps      committed numbers that are not 1..k
The task is replaced by a fresh one every SOAK_ROUNDS_PER_TASK rounds (so `reel check`
stays cheap); each finished task gets one clean recording and a final check.

    REEL_BIN=build/cmake/tools/reel .venv/bin/python tests/soak/recorder_kill.py
Environment: SOAK_KILL_ROUNDS (1000), SOAK_ROUNDS_PER_TASK (25), SOAK_EPISODES (8 per
run), SOAK_SEED (1), SOAK_WORK (a temp dir), SOAK_OUT (JSON summary path, optional).
Exit 0 when every count but kills/rounds is 0.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.e2e.test_recorder_crash import assert_episode_is, pending_journals, run_killed_after, visible_episodes  # noqa: E402

SIM = ["--seconds", "0.2", "--fps", "10", "--video-size", "32x24"]


def reel_check_errors(reel: str, task: Path) -> list[str]:
    p = subprocess.run([reel, "check", str(task), "--json"], capture_output=True, text=True, timeout=600)
    if p.returncode not in (0, 1):
        return [f"reel check exited {p.returncode}: {p.stderr.strip()[:300]}"]
    try:
        report = json.loads(p.stdout)
    except ValueError:
        return [f"reel check printed no JSON: {p.stdout[:200]}"]
    return [f"{f['rule']} {f['path']}: {f['message']}" for t in report.get("tasks", []) for f in t.get("findings", [])
            if f.get("severity") == "error"]


def main() -> int:
    reel = os.path.abspath(os.environ["REEL_BIN"])
    rounds = int(os.environ.get("SOAK_KILL_ROUNDS", "1000"))
    per_task = int(os.environ.get("SOAK_ROUNDS_PER_TASK", "25"))
    episodes = int(os.environ.get("SOAK_EPISODES", "8"))
    rng = random.Random(int(os.environ.get("SOAK_SEED", "1")))
    work = Path(os.environ.get("SOAK_WORK") or tempfile.mkdtemp(prefix="reel-soak-kill-"))
    work.mkdir(parents=True, exist_ok=True)
    c = dict(rounds=0, kills=0, completed_runs=0, tasks=0, episodes_committed=0, killed_before_first_commit=0, torn=0, lost=0, reused=0,
             misnumbered=0, gaps=0, check_errors=0, bad_exit=0, final_recording_failures=0)
    problems: list[str] = []

    def problem(kind: str, msg: str) -> None:
        c[kind] += 1
        if len(problems) < 50:
            problems.append(f"{kind}: {msg}")
        print(f"  !! {kind}: {msg}", flush=True)

    # One full run's duration, measured once; kills are drawn uniformly over it.
    t0 = time.monotonic()
    subprocess.run([reel, "simulate", str(work / "timing"), "--count", str(episodes), *SIM],
                   check=True, capture_output=True, timeout=600)
    full_s = time.monotonic() - t0
    shutil.rmtree(work / "timing", ignore_errors=True)
    print(f"recorder kill soak: {rounds} rounds, {episodes} episodes a run (~{full_s:.2f} s), "
          f"fresh task every {per_task} rounds, work {work}", flush=True)

    started = time.monotonic()
    task, seen, decided = None, {}, set()

    def finish(task: Path, seen: dict, decided: set) -> None:
        """One clean recording after the last kill, then a final check; the task is removed."""
        before = set(visible_episodes(task)) | decided
        p = subprocess.run([reel, "simulate", str(task), "--count", "1", *SIM, "--json"],
                           capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            problem("final_recording_failures", f"{task.name}: reel simulate exited {p.returncode}: {p.stderr[:300]}")
        else:
            after = visible_episodes(task)
            for n, h in seen.items():
                if after.get(n) != h:
                    problem("lost", f"{task.name}: N={n} lost or changed by the final recording")
            if set(after) - before and len(set(after) - before) != 1:
                problem("gaps", f"{task.name}: the final recording added {sorted(set(after) - before)}")
            c["episodes_committed"] += len(after)
        for e in reel_check_errors(reel, task):
            problem("check_errors", f"{task.name} (final): {e}")
        shutil.rmtree(task, ignore_errors=True)

    for rnd in range(rounds):
        if rnd % per_task == 0:
            if task is not None:
                finish(task, seen, decided)
            task, seen, decided = work / f"task{rnd // per_task:04d}", {}, set()
            c["tasks"] += 1
        delay = rng.uniform(0.0, full_s)
        returncode, err = run_killed_after([reel, "simulate", str(task), "--count", str(episodes), *SIM], delay)
        c["rounds"] += 1
        what = f"round {rnd} ({task.name}, kill after {delay:.3f} s)"
        if returncode == -signal.SIGKILL:
            c["kills"] += 1
        elif returncode == 0:
            c["completed_runs"] += 1
        else:
            problem("bad_exit", f"{what}: reel simulate exited {returncode}: {err[:300]}")

        try:
            now = visible_episodes(task)
        except AssertionError as e:
            problem("torn", f"{what}: {str(e)[:300]}")
            continue
        # A journal left by the previous kill is rolled forward by this round's recorder, unless
        # this round was killed before its open got that far: then the journal is still there.
        pending_now = pending_journals(task)
        for n in sorted(decided):
            if n not in now and n not in pending_now:
                problem("lost", f"{what}: N={n} had a commit journal after the previous kill but is gone")
        for n in sorted(set(seen) - set(now)):
            problem("lost", f"{what}: committed N={n} is gone")
        for n in sorted(n for n in seen if n in now and now[n] != seen[n]):
            problem("reused", f"{what}: committed N={n} changed")
        for n in sorted(set(now) - set(seen)):
            try:
                assert_episode_is(task, n)
            except AssertionError as e:
                problem("misnumbered", f"{what}: {str(e)[:300]}")
        if sorted(now) != list(range(1, len(now) + 1)):
            problem("gaps", f"{what}: committed numbers {sorted(now)[:20]}... are not 1..{len(now)}")
        seen.update(now)
        decided = pending_now
        if not now and not decided and not (task / "meta/info.json").exists():
            c["killed_before_first_commit"] += 1  # nothing published yet: not a dataset, nothing to check
            continue
        for e in reel_check_errors(reel, task):
            problem("check_errors", f"{what}: {e}")
        if (rnd + 1) % 50 == 0:
            el = time.monotonic() - started
            print(f"  {rnd + 1}/{rounds} rounds, {c['kills']} kills, {el:.0f} s, problems: "
                  f"{sum(v for k, v in c.items() if k not in ('rounds', 'kills', 'completed_runs', 'tasks', 'episodes_committed', 'killed_before_first_commit'))}",
                  flush=True)
    if task is not None:
        finish(task, seen, decided)
    c["seconds"] = round(time.monotonic() - started, 1)
    bad = sum(v for k, v in c.items() if k in ("torn", "lost", "reused", "misnumbered", "gaps", "check_errors",
                                                "bad_exit", "final_recording_failures"))
    print("\nrecorder kill soak:")
    for k, v in c.items():
        print(f"  {k:26s} {v}")
    if os.environ.get("SOAK_OUT"):
        Path(os.environ["SOAK_OUT"]).write_text(json.dumps({"counts": c, "problems": problems}, indent=2))
    if not os.environ.get("SOAK_WORK"):
        shutil.rmtree(work, ignore_errors=True)
    print("OK" if bad == 0 else f"FAILED: {bad} problem(s)")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
