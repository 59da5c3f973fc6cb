"""Files around the data (contract §1, §5, §7.4, §7.5, §11): tasks.jsonl must be one object per
line; runtime/temporary files are ignored without findings; v1.0 leftovers and obsolete files
are reported."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from .checks import all_findings, assert_finding, check_report, error_rules, norm_path
from .fixtures import EpisodeSpec, write_json, write_parquet, write_task


def test_pretty_printed_tasks_jsonl(run_reel, reel_json, tmp_path):
    text = json.dumps({"task_index": 0, "task": "pick_cube"}, indent=2, ensure_ascii=False) + "\n"
    task = write_task(tmp_path, "pick_cube", [EpisodeSpec(1)], tasks_text=text)
    assert len(text.splitlines()) == 4
    rc, report = check_report(run_reel, task.path)
    assert_finding(report, "tasks.jsonl", "meta/tasks.jsonl")
    # reading the task itself still works
    assert reel_json("info", task.path)["episodes"] == 1


def test_single_line_tasks_jsonl_is_clean(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], task_text="D435-裸手_3D手部关键点识别_AI标注")
    rc, report = check_report(run_reel, task.path)
    assert rc == 0 and report["warnings"] == 0, all_findings(report)


NON_DATA = [
    "meta/episodes/.lock",
    "meta/recycled_episode.json",
    "data/chunk-000/.episode-001.parquet.tmp",
    "data/chunk-000/.episode-002.parquet.tmp",
    "meta/.info.json.tmp",
    "_migrate_backup_x",
    "meta/_episodes_task_3.parquet",
]


def test_non_data_files_are_ignored(run_reel, reel_json, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2)])
    p = task.path
    (p / "meta/episodes/.lock").write_bytes(b"")
    write_json(p / "meta/recycled_episode.json", {"episode_index": 3, "freed_at": "2026-01-01T00:00:00Z"})
    (p / "data/chunk-000/.episode-001.parquet.tmp").write_bytes(b"PAR1 half written")
    (p / "data/chunk-000/.episode-002.parquet.tmp").write_bytes(b"PAR1")
    (p / "meta/.info.json.tmp").write_text("{", encoding="utf-8")
    # a backup of a whole episode N=3 and an upload slice of the row of N=3: neither is N=3
    backup = p / "_migrate_backup_x"
    write_parquet(task.ep(1).table, backup / "data/chunk-000/episode-002.parquet")
    write_json(backup / "meta/info.json", {"format": "pooled_episodes_v1"})
    row = pa.table({"episode_index": pa.array([3], pa.int64()), "length": pa.array([3], pa.int64())})
    write_parquet(row, p / "meta/_episodes_task_3.parquet")

    rc, report = check_report(run_reel, task.path)
    assert rc == 0, error_rules(report)
    noisy = [f for f in all_findings(report) if any(n.split("/")[-1] in norm_path(f["path"]) for n in NON_DATA)]
    assert not noisy, noisy
    assert report["warnings"] == 0, all_findings(report)
    assert [e["episode_index"] for e in reel_json("ls", task.path)["episodes"]] == [1, 2]
    assert reel_json("info", task.path)["episodes"] == 2


@pytest.mark.parametrize("name", ["meta/.stats_state.json", "_trash"])
def test_obsolete_files_warn(run_reel, tmp_path, name):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    if name == "_trash":
        (task.path / "_trash/episode-005").mkdir(parents=True)
        (task.path / "_trash/episode-005/data.parquet").write_bytes(b"x")
    else:
        write_json(task.path / name, {"observation.left_glove": {"n": 3}})
    rc, report = check_report(run_reel, task.path)
    assert rc == 0, error_rules(report)
    assert_finding(report, "nondata.obsolete", name, severity="warning")


@pytest.mark.parametrize("name", ["calibration", "metadata.json", "timestamps.json", "t_000001"])
def test_v1_0_leftovers(run_reel, tmp_path, name):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    target = task.path / name
    if name.endswith(".json"):
        write_json(target, {"task": "t"})
    else:
        target.mkdir()
        write_json(target / ("metadata.json" if name.startswith("t_") else "head_stereo.json"), {"x": 1})
    rc, report = check_report(run_reel, task.path)
    assert_finding(report, "layout.legacy_leftover", name)


def test_stray_file(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    (task.path / "data/chunk-000/notes.txt").write_text("hello", encoding="utf-8")
    rc, report = check_report(run_reel, task.path)
    assert_finding(report, "layout.stray_file", "data/chunk-000/notes.txt")


@pytest.mark.parametrize("where", ["meta/cache", "videos", "data/chunk-000/episode-000.parquet", "data/chunk-000/extra"])
def test_a_symbolic_link_inside_the_task_is_an_error(run_reel, tmp_path, where):
    # Issue 27: a task is copied from elsewhere; a link inside it could lead readers out
    # of it, and reel's writers refuse to write through one.
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.txt").write_text("the user's", encoding="utf-8")
    link = task.path / where
    if link.exists():  # a task's own file or folder replaced by a link to a copy of it elsewhere
        moved = tmp_path / ("moved-" + link.name)
        link.rename(moved)
        link.symlink_to(moved, target_is_directory=moved.is_dir())
    else:
        link.symlink_to(outside, target_is_directory=True)
    rc, report = check_report(run_reel, task.path)
    assert rc != 0
    assert_finding(report, "layout.symlink", where)


def test_an_interrupted_commit_is_reported(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2)])
    write_json(task.path / "meta/.commit-2.json", {"episode_index": 2, "renames": []})
    rc, report = check_report(run_reel, task.path)
    assert_finding(report, "layout.pending_commit", "meta/.commit-2.json", severity="warning")
