"""Re-recording a number (contract §6.1 "同号重录"; docs/recorder.md "Re-recording a number"):
`reel simulate --episode N [--replace]`, TaskWriter::BeginEpisode(N, replace).

- a number whose data was deleted is recorded again without --replace;
- a live number (data or video files exist) is refused without --replace, nothing changed;
- a number never recorded is refused (new numbers never skip);
- --replace with another slot set publishes the new files and removes the old ones the new
  recording lacks in the same commit; stats.json keeps counting N once (left as it is);
- SIGKILL at any moment of a replace leaves the old episode or the new one, never a mix.

The kill rounds: REEL_RERECORD_KILLS (6 in make test, 50 in make soak).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from .checks import snapshot
from .fixtures import data_rel
from .kill_campaign import kill_rounds, run_killed_after
from .recorder_common import check_clean, delete, reel_exec, simulate

SIM = ("--seconds", 0.2, "--fps", 10, "--video-size", "32x24")


def episode_files(task: Path, n: int) -> dict:
    """rel path -> sha256 of every visible (non-dot) data, video and episodes file of N (chunk 0)."""
    out = {}
    want = f"episode-{n - 1:03d}."
    for sub in ("data", "videos", "meta/episodes"):
        for dirpath, _, files in os.walk(task / sub):
            for name in files:
                if name.startswith(".") or not name.startswith(want):
                    continue
                p = Path(dirpath) / name
                out[p.relative_to(task).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def task_snapshot(task: Path) -> dict:
    """The snapshot less dotfiles (the lock anchor, the episode index cache)."""
    return {k: v for k, v in snapshot(task).items() if not any(part.startswith(".") for part in Path(k).parts)}


@pytest.fixture
def task(reel_bin, tmp_path):
    t = tmp_path / "pick"
    simulate(reel_bin, t, "--count", 2, *SIM)
    return t


def test_rerecord_after_delete(reel_bin, task):
    old = episode_files(task, 1)
    delete(reel_bin, task, 1)
    stats = (task / "meta/stats.json").read_bytes()
    eps = simulate(reel_bin, task, "--episode", 1, "--seed", 7, *SIM)
    assert [(e["episode_index"], e["committed"]) for e in eps] == [(1, True)]
    new = episode_files(task, 1)
    assert set(new) == set(old)
    assert new[data_rel(1)] != old[data_rel(1)]
    assert set(pq.read_table(task / data_rel(1), columns=["episode_index"]).column(0).to_pylist()) == {1}
    assert (task / "meta/stats.json").read_bytes() == stats, "a re-recorded number stays counted once"
    assert json.loads((task / "meta/info.json").read_text())["total_episodes"] == 2
    check_clean(reel_bin, task)
    assert not (task / "meta/recycled_episode.json").exists()
    # The next new number still follows the highest.
    assert simulate(reel_bin, task, "--count", 1, *SIM)[0]["episode_index"] == 3


def test_a_live_number_is_refused_without_replace(reel_bin, task):
    before = task_snapshot(task)
    rc, out, err = reel_exec(reel_bin, "simulate", task, "--episode", 2, *SIM)
    assert rc == 2, (out, err)
    assert "episode 2 is live" in err and "--replace" in err, err
    assert task_snapshot(task) == before


def test_a_number_never_recorded_is_refused(reel_bin, task):
    before = task_snapshot(task)
    rc, out, err = reel_exec(reel_bin, "simulate", task, "--episode", 5, "--replace", *SIM)
    assert rc == 2 and "never recorded" in err and "highest recorded is 2" in err, err
    assert task_snapshot(task) == before


def test_replace_needs_a_number(reel_bin, task):
    rc, out, err = reel_exec(reel_bin, "simulate", task, "--replace", *SIM)
    assert rc == 2 and "--episode" in err, err


def depth_videos(files: dict) -> dict:
    return {k: v for k, v in files.items() if k.startswith("videos/") and "depth" in k}


def test_replace_with_another_depth_codec_removes_the_old_files(reel_bin, task):
    """The old depth videos are 12-bit HEVC .mp4, the new FFV1 .mkv: the .mp4 must go in the
    same commit (readers would otherwise find both)."""
    old = episode_files(task, 2)
    assert depth_videos(old) and all(k.endswith(".mp4") for k in depth_videos(old))
    stats = (task / "meta/stats.json").read_bytes()
    simulate(reel_bin, task, "--episode", 2, "--replace", "--depth-ffv1", "--seed", 9, *SIM)
    new = episode_files(task, 2)
    assert depth_videos(new) and all(k.endswith(".mkv") for k in depth_videos(new)), sorted(new)
    for k in depth_videos(old):
        assert not (task / k).exists(), f"{k}: the replaced recording's file was left"
    assert new[data_rel(2)] != old[data_rel(2)]
    assert episode_files(task, 1) and (task / "meta/stats.json").read_bytes() == stats
    check_clean(reel_bin, task)


def test_replace_without_video_removes_every_old_video(reel_bin, task):
    old = episode_files(task, 2)
    simulate(reel_bin, task, "--episode", 2, "--replace", "--no-video", "--seed", 3, *SIM)
    new = episode_files(task, 2)
    assert not [k for k in new if k.startswith("videos/")], sorted(new)
    assert [k for k in old if k.startswith("videos/")]
    rc, out, _ = reel_exec(reel_bin, "ls", task, "--json")
    eps = {e["episode_index"]: e for e in json.loads(out)["episodes"]}
    assert eps[2]["videos"] == {} and eps[1]["videos"]


# --------------------------------------------------------------------------- kill during replace


def test_kill_during_replace_leaves_old_or_new(reel_bin, tmp_path):
    rounds = kill_rounds("REEL_RERECORD_KILLS", quick=6, soak=50)
    task = tmp_path / "pick"
    simulate(reel_bin, task, "--count", 2, *SIM)
    # The timing run: one whole replace, on a copy of the task.
    shutil.copytree(task, tmp_path / "timing")
    t0 = time.monotonic()
    simulate(reel_bin, tmp_path / "timing", "--episode", 2, "--replace", "--depth-ffv1", *SIM)
    full_s = time.monotonic() - t0
    rng = random.Random(6)
    outcomes = {"old": 0, "new": 0}
    for rnd in range(rounds):
        old = episode_files(task, 2)
        stats = (task / "meta/stats.json").read_bytes()
        # Alternate the depth codec so each round's new set differs from the old one.
        codec = "--depth-ffv1" if rnd % 2 == 0 else "--depth-hevc"
        delay = rng.uniform(0.0, 1.3 * full_s)
        rc, _ = run_killed_after([reel_bin, "simulate", str(task), "--episode", "2", "--replace", codec,
                               "--seed", str(100 + rnd), *[str(a) for a in SIM]], delay)
        what = f"round {rnd} (SIGKILL after {delay:.3f} s of ~{full_s:.2f} s, rc {rc})"
        assert rc in (0, -signal.SIGKILL), f"{what}: exited {rc}"
        # Roll an interrupted commit forward (any writer's open does), then look.
        simulate(reel_bin, task, "--count", 0, *SIM)
        now = episode_files(task, 2)
        exts = {k.rsplit(".", 1)[1] for k in depth_videos(now)}
        new_ext = "mkv" if codec == "--depth-ffv1" else "mp4"
        if now == old:
            outcomes["old"] += 1
        else:
            # A whole new recording: its data, its depth codec only, every slot.
            assert now.get(data_rel(2)) and now[data_rel(2)] != old[data_rel(2)], f"{what}: data {sorted(now)}"
            assert exts == {new_ext}, f"{what}: depth files {sorted(depth_videos(now))} mix old and new"
            assert len([k for k in now if k.startswith("videos/")]) == len([k for k in old if k.startswith("videos/")]), \
                f"{what}: {sorted(now)}"
            outcomes["new"] += 1
        assert (task / "meta/stats.json").read_bytes() == stats, f"{what}: stats.json changed"
        check_clean(reel_bin, task)
    print(f"\nre-record kill rounds: {rounds}, outcomes {outcomes}")
