"""An episode's file group is whole or gone (contract §2, §9; issue 26 items 2 and 3).

- A partial file group (videos without the data parquet, made here with os.remove on a task
  `reel simulate` wrote) is an error of `reel check` (episode.file_group, exit 1), a
  `file_group: "partial"` of `reel ls --json` and of Python's Task.episodes(), and `reel delete`
  removes what is left of it.
- `reel delete` is one journaled commit: SIGKILLed at random moments, it leaves the episode whole
  or deleted (its episodes row alone), before and after the next writer rolls the journal forward.

Expected file lists come from directory walks (pathlib), not from reel.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pyarrow as pa

from .recorder_common import reel_exec, simulate

SIM = ("--count", 2, "--seconds", 0.2, "--fps", 10, "--video-size", "32x24")
DATA2 = "data/chunk-000/episode-001.parquet"
ROW2 = "meta/episodes/chunk-000/episode-001.parquet"
RULE = "episode.file_group"


def group2(task: Path) -> list:
    """Episode 2's data parquet and video files on disk, sorted (relative paths)."""
    out = [DATA2] if (task / DATA2).is_file() else []
    out += [p.relative_to(task).as_posix() for p in (task / "videos").rglob("episode-001.*")]
    return sorted(out)


def check_json(reel_bin: str, task: Path) -> tuple[int, list]:
    rc, out, err = reel_exec(reel_bin, "check", task, "--json", timeout=300)
    assert rc in (0, 1), f"reel check exited {rc}\n{out}\n{err}"
    return rc, [f for t in json.loads(out)["tasks"] for f in t["findings"]]


def ls_json(reel_bin: str, task: Path) -> dict:
    rc, out, err = reel_exec(reel_bin, "ls", task, "--json")
    assert rc == 0, f"reel ls exited {rc}\n{out}\n{err}"
    return {e["episode_index"]: e for e in json.loads(out)["episodes"]}


def test_partial_group_is_seen_by_check_ls_and_python_and_deleted_whole(reel_bin, reel_mod, tmp_path):
    task = tmp_path / "pick"
    simulate(reel_bin, task, *SIM)
    videos = [p for p in group2(task) if p != DATA2]
    assert len(videos) == 8, videos  # every slot of the simulated rig
    (task / DATA2).unlink()

    rc, found = check_json(reel_bin, task)
    assert rc == 1
    hits = [f for f in found if f["rule"] == RULE]
    assert len(hits) == 1 and hits[0]["severity"] == "error" and hits[0]["path"] == DATA2, hits
    assert all(v in hits[0]["message"] for v in videos), hits[0]["message"]
    assert [f["rule"] for f in found if f["severity"] == "error"] == [RULE], found

    eps = ls_json(reel_bin, task)
    assert (eps[1]["file_group"], eps[1]["missing_files"]) == ("whole", [])
    assert (eps[2]["file_group"], eps[2]["missing_files"]) == ("partial", [DATA2])
    rc, out, err = reel_exec(reel_bin, "ls", task)
    line2 = [line for line in out.splitlines() if line.startswith("2 ")]
    assert len(line2) == 1 and " partial " in line2[0] and f"| missing: {DATA2}" in line2[0], out
    assert " whole " in [line for line in out.splitlines() if line.startswith("1 ")][0], out

    py = reel_mod.open(str(task))
    assert [(e["episode_index"], e["file_group"], e["missing_files"]) for e in py.episodes()] == [
        (1, "whole", []), (2, "partial", [DATA2])]
    assert pa.table(py.episodes_arrow()).column("file_group").to_pylist() == ["whole", "partial"]

    rc, out, err = reel_exec(reel_bin, "delete", task, 2, "--dry-run", "--json")
    assert rc == 0 and json.loads(out)["episodes"] == [{"episode_index": 2, "files": videos}], (out, err)
    rc, out, err = reel_exec(reel_bin, "delete", task, 2)
    assert rc == 0 and "deleted episode 2 (8 files)" in out, (out, err)
    assert group2(task) == [] and (task / ROW2).is_file()
    assert check_json(reel_bin, task)[0] == 0
    assert (ls_json(reel_bin, task)[2]["file_group"], py.episodes()[1]["file_group"]) == ("deleted", "deleted")


def test_killed_delete_leaves_the_episode_whole_or_deleted(reel_bin, tmp_path):
    template = tmp_path / "template"
    simulate(reel_bin, template, *SIM)
    whole = group2(template)
    # How long one delete runs, start to end (the kill lands anywhere in it, start-up included).
    timing = tmp_path / "timing"
    shutil.copytree(template, timing)
    t0 = time.monotonic()
    assert reel_exec(reel_bin, "delete", timing, 2)[0] == 0
    duration = time.monotonic() - t0
    rng = random.Random(2026)
    outcomes = {"whole": 0, "deleted": 0, "pending": 0}
    for i in range(12):
        work = tmp_path / f"k{i}"
        shutil.copytree(template, work)
        p = subprocess.Popen([reel_bin, "delete", str(work), "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.1) * duration)
        p.send_signal(signal.SIGKILL)
        p.wait()
        pending = (work / "meta/.commit-2.json").exists()
        outcomes["pending" if pending else "whole" if group2(work) == whole else "deleted"] += 1
        # Readers: N hidden while its journal is there, else whole or deleted; never partial.
        eps = ls_json(reel_bin, work)
        assert (2 not in eps) if pending else eps[2]["file_group"] in ("whole", "deleted"), (i, eps.get(2))
        assert not [f for f in check_json(reel_bin, work)[1] if f["rule"] == RULE], i
        # The next writer (delete of episode 1 takes the task lock) rolls a pending delete forward.
        assert reel_exec(reel_bin, "delete", work, 1)[0] == 0, i
        assert group2(work) in ([], whole), (i, group2(work))
        assert (work / ROW2).is_file() and not (work / "meta/.commit-2.json").exists(), i
        assert ls_json(reel_bin, work)[2]["file_group"] == ("deleted" if pending else
                                                            "whole" if group2(work) == whole else "deleted"), i
        shutil.rmtree(work)
    print(f"killed deletes: {outcomes}")
