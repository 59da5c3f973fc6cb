"""The five read commands on a small, fully correct task (contract §1-§8)."""

from __future__ import annotations

import json
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .checks import (
    all_findings,
    assert_check_consistent,
    assert_json_close,
    check_report,
    error_rules,
    norm_path,
)
from .fixtures import EpisodeSpec, write_task

COMMANDS = ["info", "ls", "show", "stats", "check"]


def arrow_type(s: str) -> str:
    """Arrow type string without child-field names: list<item: int16> == list<element: int16>."""
    return re.sub(r"<\s*[A-Za-z_]+\s*:\s*", "<", s).replace(" ", "")


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_command_has_help(run_reel, cmd):
    rc, out, err = run_reel(cmd, "--help")
    assert rc == 0, err
    assert out.strip(), f"reel {cmd} --help printed nothing on stdout"


def test_top_level_help(run_reel):
    rc, out, err = run_reel("--help")
    assert rc == 0, err
    for cmd in COMMANDS:
        assert cmd in out


def test_info(reel_json, clean_task):
    got = reel_json("info", clean_task.path)
    info = clean_task.info
    assert os.path.samefile(got["path"], clean_task.path)
    assert got["format"] == "pooled_episodes_v1"
    assert got["task_name"] == "pick_cube"
    assert got["codebase_version"] == "v3.0"
    assert got["app_version"] == info["app_version"]
    assert got["fps"] == 30.0
    assert got["chunks_size"] == 1000
    assert got["total_episodes"] == 2
    assert got["episodes"] == 2
    assert got["frames"] == 3 + 4
    assert got["duration_sec"] == pytest.approx(3 / 30 + 4 / 30, rel=1e-9)
    assert_json_close(got["devices"], info["devices"])
    assert_json_close(got["cameras"], info["cameras"])
    assert_json_close(got["video_extensions"], info["video_extensions"])
    assert got["video_slots"] == ["d435_depth", "d435_rgb"]
    assert got["sensors"] == ["left_glove"]
    assert set(got["features"]) == set(info["features"])
    for name, feat in info["features"].items():
        assert got["features"][name]["dtype"] == feat["dtype"], name
        assert list(got["features"][name]["shape"]) == feat["shape"], name
    assert got["features"]["observation.left_glove"]["shape"] == [16, 16]
    assert "version" in got


def test_ls(reel_json, clean_task):
    got = reel_json("ls", clean_task.path)
    eps = got["episodes"]
    assert [e["episode_index"] for e in eps] == [1, 2]
    for e in eps:
        b = clean_task.ep(e["episode_index"])
        assert (e["chunk"], e["file"]) == (b.chunk, b.file)
        assert e["length"] == b.spec.length
        assert e["duration_sec"] == pytest.approx(b.spec.length / 30.0, rel=1e-9)
        assert e["has_data"] is True
        assert e["row_source"] == "episode_file"
        assert {k: norm_path(v) for k, v in e["videos"].items()} == b.videos
        assert sorted(e["columns"]) == sorted(b.table.column_names)
    assert eps[1]["videos"]["d435_depth"].endswith("videos/chunk-000/d435_depth/episode-001.mkv")


def test_show(reel_json, clean_task):
    b = clean_task.ep(2)
    got = reel_json("show", clean_task.path, 2)
    assert got["episode_index"] == 2
    assert (got["chunk"], got["file"]) == (0, 1)
    assert norm_path(got["data_path"]).endswith("data/chunk-000/episode-001.parquet")

    row = got["row"]
    for name in ("episode_index", "task_index", "start_frame_index", "end_frame_index", "length", "created_at", "duration_sec"):
        assert row[name] == pytest.approx(b.row[name], rel=1e-12), name
    assert row["end_frame_index"] == 3 and row["length"] == 4
    for name in ("drop_stats", "video_codec", "calibration", "force_matrix_specs"):
        assert_json_close(row[name], b.row[name], f"row.{name}")
    assert row["slam_specs"] == {}
    assert set(row["missing_columns"]) <= {"slam_specs"}

    schema = pq.read_schema(clean_task.path / b.data_rel)
    table = b.table
    cols = {c["name"]: c for c in got["columns"]}
    assert set(cols) == set(schema.names)
    for f in schema:
        assert arrow_type(cols[f.name]["type"]) == arrow_type(str(f.type)), f.name
        assert cols[f.name]["null_count"] == table.column(f.name).null_count == 0
    assert arrow_type(cols["observation.left_glove"]["type"]) == "fixed_size_list<float>[256]"
    assert arrow_type(cols["timestamp"]["type"]) == "float"

    assert got["force_matrices"] == []
    assert got["imu"] == {"rows": 4, "samples": 5}
    assert got["slam"] == []


def test_show_episode_without_imu_has_null_imu(reel_json, tmp_path):
    task = write_task(tmp_path, "no_imu", [EpisodeSpec(1)])
    got = reel_json("show", task.path, 1)
    assert got["imu"] is None


def test_stats(reel_json, clean_task):
    got = reel_json("stats", clean_task.path)
    blocks = got["blocks"]
    assert set(blocks) == {"observation.left_glove", "observation.imu", "action"}
    for name, exp in clean_task.stats.items():
        blk = blocks[name]
        assert blk["count"] == exp["count"], name
        assert blk["needs_rebuild"] is False
        assert blk["dim"] == len(exp["mean"])
        for k in ("mean", "std", "min", "max"):
            assert_json_close(blk[k], exp[k], f"{name}.{k}")
    assert blocks["observation.left_glove"]["count"] == 7
    assert blocks["observation.imu"]["count"] == 8
    assert blocks["observation.imu"]["dim"] == 6
    assert blocks["action"]["count"] == 0 and blocks["action"]["dim"] == 1


def test_check_clean_json(run_reel, clean_task):
    rc, report = check_report(run_reel, clean_task.path)
    assert rc == 0
    assert report["errors"] == 0 and report["warnings"] == 0, all_findings(report)
    (t,) = report["tasks"]
    assert os.path.samefile(t["path"], clean_task.path)
    assert t["format"] == "pooled_episodes_v1"
    assert t["episodes"] == 2


def test_check_clean_prints_one_summary_line(run_reel, clean_task):
    rc, out, err = run_reel("check", clean_task.path)
    assert rc == 0, err
    assert len(out.strip().splitlines()) == 1, out


def test_check_folder_of_tasks(run_reel, tmp_path):
    root = tmp_path / "recordings"
    write_task(root, "good", [EpisodeSpec(1)])
    # N=2 whose data says episode_index 1: an error finding in that task only
    write_task(root, "bad", [EpisodeSpec(1), EpisodeSpec(2, extra_columns={"episode_index": pa.array([1, 1, 1], pa.int64())})])

    rc, report = check_report(run_reel, root)
    assert rc == 1
    by_name = {os.path.basename(norm_path(t["path"])): t for t in report["tasks"]}
    assert set(by_name) == {"good", "bad"}
    assert by_name["good"]["errors"] == 0
    assert by_name["bad"]["errors"] >= 1
    assert "numbering.episode_index" in error_rules({"tasks": [by_name["bad"]]})
    assert_check_consistent(report, rc)


def test_check_folder_of_clean_tasks_exits_zero(run_reel, tmp_path):
    root = tmp_path / "recordings"
    write_task(root, "a", [EpisodeSpec(1)])
    write_task(root, "b", [EpisodeSpec(1), EpisodeSpec(2)])
    rc, report = check_report(run_reel, root)
    assert rc == 0
    assert len(report["tasks"]) == 2
    assert report["errors"] == 0


def test_every_command_prints_its_json_object(run_reel, clean_task):
    expected_keys = {
        "info": {"path", "format", "episodes", "frames", "features"},
        "ls": {"episodes"},
        "show": {"episode_index", "row", "columns", "force_matrices", "imu", "slam"},
        "stats": {"blocks"},
        "check": {"tasks", "errors", "warnings"},
    }
    for cmd, extra in (("info", ()), ("ls", ()), ("show", (1,)), ("stats", ()), ("check", ())):
        rc, out, err = run_reel(cmd, clean_task.path, *extra, "--json")
        assert rc == 0, f"{cmd}: {err}"
        got = json.loads(out)
        assert isinstance(got, dict), cmd
        assert set(got) >= expected_keys[cmd], f"{cmd}: {sorted(got)}"
