"""`reel split-episodes` (docs/maintenance.md): legacy multi-row shards
meta/episodes/chunk-CCC/file-CCC.parquet (contract §2, §6.1) into one file per episode at
info.json's episodes_path, rows unchanged, the shard removed last; idempotent; readers see the
same rows before, during (SIGKILL at any moment) and after, and `reel check` stays clean.

Fixtures are written with pyarrow (tests/e2e/fixtures.py), independently of reel.

The kill campaign runs REEL_SPLIT_KILLS rounds (8 in make test; make soak runs the issue's
campaign, 100):

    REEL_SPLIT_KILLS=120 REEL_BIN=build/cmake/tools/reel .venv/bin/python -m pytest -q -s \\
        -p no:cacheprovider tests/e2e/test_split_episodes.py -k kill
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .checks import snapshot
from .fixtures import EpisodeSpec, row_rel, shard_rel, write_task
from .kill_campaign import kill_rounds, run_killed_after
from .recorder_common import check_clean, reel_exec

SHARD0 = list(range(1, 13))  # N=1..12 in chunk-000/file-000.parquet
FILE_ROW = 13                # an old task continued under v1.1.2: N=13 in its own file
SHARD1 = [1001, 1002]        # chunk-001/file-001.parquet


def make_task(root: Path, name: str = "legacy") -> Path:
    eps = [EpisodeSpec(n, length=2 + n % 3, videos={}, row="shard") for n in SHARD0]
    eps.append(EpisodeSpec(FILE_ROW, length=4, videos={}, row="file"))
    eps += [EpisodeSpec(n, length=3, videos={}, row="shard") for n in SHARD1]
    task = write_task(root, name, eps).path
    assert (task / shard_rel(0)).is_file() and (task / shard_rel(1)).is_file()
    return task


def shard_rows(task: Path) -> dict:
    """N -> (schema, one-row table) of every row of every shard, read with pyarrow."""
    out = {}
    for c in (0, 1):
        t = pq.read_table(task / shard_rel(c))
        for i, n in enumerate(t.column("episode_index").to_pylist()):
            out[n] = t.slice(i, 1)
    return out


def split(reel_bin: str, task: Path, *args) -> dict:
    rc, out, err = reel_exec(reel_bin, "split-episodes", task, "--json", *args)
    assert rc == 0, f"reel split-episodes {task} exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    return json.loads(out)


def readers_view(reel_bin: str, task: Path) -> dict:
    """What readers show: `reel ls --json` (less where each row lives) and every row `reel show` prints."""
    rc, out, err = reel_exec(reel_bin, "ls", task, "--json")
    assert rc == 0, f"reel ls {task} exited {rc}\n{err}"
    view = {}
    for e in json.loads(out)["episodes"]:
        n = e["episode_index"]
        e = {k: v for k, v in e.items() if k not in ("row_source", "row_path")}
        rc, out, err = reel_exec(reel_bin, "show", task, n, "--json")
        assert rc == 0, f"reel show {task} {n} exited {rc}\n{err}"
        row = json.loads(out)["row"]
        view[n] = (e, row)
    return view


def task_dotfiles(task: Path) -> list:
    """Dot entries other than the lock anchor and the episode index cache."""
    out = []
    for dirpath, dirs, files in os.walk(task):
        for name in dirs + files:
            rel = os.path.relpath(os.path.join(dirpath, name), task).replace(os.sep, "/")
            if name.startswith(".") and rel != "meta/episodes/.lock" and not name.startswith(".episode_index"):
                out.append(rel)
    return sorted(out)


def assert_split_done(task: Path, original: dict) -> None:
    """No shard left; every shard row in its own file with the shard's schema and values."""
    assert not (task / shard_rel(0)).exists() and not (task / shard_rel(1)).exists()
    for n, row in original.items():
        got = pq.read_table(task / row_rel(n))
        assert got.num_rows == 1, f"{row_rel(n)}: {got.num_rows} rows"
        assert got.schema.equals(row.schema, check_metadata=False), f"{row_rel(n)}: schema {got.schema} != {row.schema}"
        assert got.to_pylist() == row.to_pylist(), f"{row_rel(n)}: values differ from the shard's row"
        assert got.equals(row), f"{row_rel(n)}: row differs from the shard's"


@pytest.fixture
def legacy(tmp_path):
    return make_task(tmp_path)


def test_split_writes_one_file_per_row_and_removes_the_shards(reel_bin, legacy):
    original = shard_rows(legacy)
    before = readers_view(reel_bin, legacy)
    check_clean(reel_bin, legacy)
    report = split(reel_bin, legacy)
    assert report["dry_run"] is False
    assert report["episodes_split"] == len(SHARD0) + len(SHARD1)
    assert report["episodes_kept"] == 0
    assert [s["shard"] for s in report["shards"]] == [shard_rel(0), shard_rel(1)]
    assert report["shards"][0]["split"] == SHARD0
    assert report["shards"][0]["files"] == [row_rel(n) for n in SHARD0]
    assert_split_done(legacy, original)
    assert readers_view(reel_bin, legacy) == before
    rc, out, _ = reel_exec(reel_bin, "ls", legacy, "--json")
    assert {e["row_source"] for e in json.loads(out)["episodes"]} == {"episode_file"}
    report = check_clean(reel_bin, legacy)
    assert not [f for t in report["tasks"] for f in t["findings"] if f["rule"] == "episodes.legacy_shard"]
    assert task_dotfiles(legacy) == []


def test_split_is_idempotent(reel_bin, legacy):
    split(reel_bin, legacy)
    after_first = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in (legacy / "meta/episodes").rglob("episode-*.parquet")}
    again = split(reel_bin, legacy)
    assert again["shards"] == [] and again["episodes_split"] == 0
    assert {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in (legacy / "meta/episodes").rglob("episode-*.parquet")} == after_first
    rc, out, _ = reel_exec(reel_bin, "split-episodes", legacy)
    assert rc == 0 and "no legacy shards" in out


def test_dry_run_writes_nothing(reel_bin, legacy):
    before = snapshot(legacy)
    report = split(reel_bin, legacy, "--dry-run")
    assert snapshot(legacy) == before
    assert report["dry_run"] is True
    assert report["episodes_split"] == len(SHARD0) + len(SHARD1)
    rc, out, _ = reel_exec(reel_bin, "split-episodes", legacy, "--dry-run")
    assert rc == 0 and f"would split {shard_rel(0)}: {len(SHARD0)} rows" in out
    assert snapshot(legacy) == before


def test_check_hint_names_the_command(reel_bin, legacy):
    report = check_clean(reel_bin, legacy)
    hints = [f for t in report["tasks"] for f in t["findings"] if f["rule"] == "episodes.legacy_shard"]
    assert len(hints) == 1 and hints[0]["severity"] == "info"
    assert "reel split-episodes" in hints[0]["message"], hints[0]
    assert "--split-episodes" not in hints[0]["message"]


def write_own_file(task: Path, n: int, row: pa.Table) -> None:
    (task / row_rel(n)).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(row, task / row_rel(n))


def test_a_row_in_both_places_reads_the_same_and_checks_clean(reel_bin, legacy):
    """The state a split killed half-way leaves: N's own file and the shard row both present.
    Readers take the own file (Task::ListEpisodes); check reports only the info hint."""
    original = shard_rows(legacy)
    before = readers_view(reel_bin, legacy)
    for n in SHARD0[:5]:
        write_own_file(legacy, n, original[n])
    assert readers_view(reel_bin, legacy) == before
    check_clean(reel_bin, legacy)
    report = split(reel_bin, legacy)
    assert report["shards"][0]["kept"] == SHARD0[:5] and report["shards"][0]["split"] == SHARD0[5:]
    assert_split_done(legacy, original)
    assert readers_view(reel_bin, legacy) == before


def test_an_existing_own_file_wins_and_is_left_as_it_is(reel_bin, legacy):
    """Readers already read N's own file when it exists (not the shard row): the split keeps it."""
    original = shard_rows(legacy)
    n = SHARD0[2]
    own = original[n].set_column(original[n].schema.get_field_index("created_at"), "created_at",
                                 pa.array([1_800_000_000.5], pa.float64()))
    write_own_file(legacy, n, own)
    before = readers_view(reel_bin, legacy)
    assert before[n][1]["created_at"] == 1_800_000_000.5
    data = (legacy / row_rel(n)).read_bytes()
    report = split(reel_bin, legacy)
    assert n in report["shards"][0]["kept"] and report["episodes_kept"] == 1
    assert (legacy / row_rel(n)).read_bytes() == data
    assert readers_view(reel_bin, legacy) == before


def test_duplicate_rows_in_a_shard_are_refused(reel_bin, legacy):
    t = pq.read_table(legacy / shard_rel(0))
    pq.write_table(pa.concat_tables([t, t.slice(3, 1)]), legacy / shard_rel(0))
    (legacy / "meta/episodes/.lock").touch()  # the lock anchor the run creates
    before = snapshot(legacy)
    rc, out, err = reel_exec(reel_bin, "split-episodes", legacy)
    assert rc == 2, (out, err)
    assert shard_rel(0) in err and "episode_index 4" in err, err
    assert snapshot(legacy) == before


def test_an_old_template_that_names_episode_files_like_shards_is_refused(reel_bin, tmp_path):
    eps = [EpisodeSpec(n, videos={}, row="shard") for n in (1, 2)]
    task = write_task(tmp_path, "oldtpl", eps,
                      info_overrides={"episodes_path": "meta/episodes/chunk-{c:03d}/file-{f:03d}.parquet"}).path
    rc, out, err = reel_exec(reel_bin, "split-episodes", task)
    assert rc == 2 and "episodes_path" in err and shard_rel(0) in err, (out, err)
    assert (task / shard_rel(0)).is_file()


def test_a_task_without_shards_is_left_as_it_is(reel_bin, tmp_path):
    task = write_task(tmp_path, "modern", [EpisodeSpec(1, videos={}), EpisodeSpec(2, videos={})]).path
    (task / "meta/episodes/.lock").touch()
    before = snapshot(task)
    report = split(reel_bin, task)
    assert report["shards"] == [] and report["episodes_split"] == 0
    assert snapshot(task) == before


# --------------------------------------------------------------------------- kill campaign


def kill_state(task: Path) -> str:
    """Where a kill left the split: before the journal, journal pending, or done."""
    if (task / "meta/.commit-task.json").exists():
        return "journal"
    shards = sum((task / shard_rel(c)).exists() for c in (0, 1))
    temps = [d for d in task_dotfiles(task) if d.endswith(".tmp")]
    if shards == 2:
        return "temps" if temps else "untouched"
    return "shard0_done" if shards == 1 else "done"


def test_kill_campaign(reel_bin, tmp_path):
    rounds = kill_rounds("REEL_SPLIT_KILLS", quick=8, soak=100)
    template = make_task(tmp_path / "template")
    original = shard_rows(template)
    before = readers_view(reel_bin, template)
    check_clean(reel_bin, template)

    timing = tmp_path / "timing"
    shutil.copytree(template, timing)
    t0 = time.monotonic()
    split(reel_bin, timing)
    full_s = time.monotonic() - t0

    rng = random.Random(1702)
    states: dict = {}
    for rnd in range(rounds):
        task = tmp_path / f"round{rnd}"
        shutil.copytree(template, task)
        delay = rng.uniform(0.0, 1.2 * full_s)
        rc, _ = run_killed_after([reel_bin, "split-episodes", str(task)], delay)
        what = f"round {rnd} (SIGKILL after {delay * 1000:.1f} ms of ~{full_s * 1000:.1f} ms)"
        assert rc in (0, -signal.SIGKILL), f"{what}: reel split-episodes exited {rc}"
        state = kill_state(task)
        states[state] = states.get(state, 0) + 1
        assert readers_view(reel_bin, task) == before, f"{what}: readers see other rows after the kill ({state})"
        check_clean(reel_bin, task)
        split(reel_bin, task)  # the re-run rolls forward or finishes
        assert_split_done(task, original)
        assert readers_view(reel_bin, task) == before, f"{what}: readers see other rows after the re-run"
        check_clean(reel_bin, task)
        assert task_dotfiles(task) == [], f"{what}: {task_dotfiles(task)} left after the re-run"
        shutil.rmtree(task)
    print(f"\nsplit-episodes kill campaign: {rounds} rounds, full run ~{full_s * 1000:.1f} ms, "
          f"states after the kill: {dict(sorted(states.items()))}")


def test_progress_and_a_trailing_slash(reel_bin, legacy):
    rc, out, err = reel_exec(reel_bin, "split-episodes", f"{legacy}/", "--progress", "json")
    assert rc == 0, err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert lines and lines[-1]["progress"] == "episodes split"
    assert lines[-1]["done"] == lines[-1]["total"] == len(SHARD0) + len(SHARD1)
    assert_split_done(legacy, shard_rows(make_task(legacy.parent / "again")))


def test_python_split_episodes(reel_mod, reel_bin, legacy):
    original = shard_rows(legacy)
    before = snapshot(legacy)
    plan = reel_mod.split_episodes(legacy, dry_run=True)
    assert snapshot(legacy) == before
    assert plan["dry_run"] is True and plan["episodes_split"] == len(SHARD0) + len(SHARD1)
    done = reel_mod.split_episodes(str(legacy))
    assert {k: v for k, v in done.items() if k != "dry_run"} == {k: v for k, v in plan.items() if k != "dry_run"}
    assert_split_done(legacy, original)
    assert reel_mod.split_episodes(legacy)["shards"] == []
    check_clean(reel_bin, legacy)
