"""Bad input: every command fails cleanly (non-zero exit, a message naming the file, no crash,
nothing written). `check` exits 2 when the task cannot be read at all, 1 on error findings."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pytest

from .checks import assert_fails_naming, assert_finding, check_report
from .fixtures import EpisodeSpec, write_task

READ_CMDS = [("info", ()), ("ls", ()), ("show", ("1",)), ("stats", ())]
DATA1 = "data/chunk-000/episode-000.parquet"


def all_commands_fail(run_reel, path, *needles, check_rc=2):
    for cmd, extra in READ_CMDS:
        assert_fails_naming(run_reel(cmd, path, *extra, "--json"), *needles)
        assert_fails_naming(run_reel(cmd, path, *extra), *needles)
    res = run_reel("check", path, "--json")
    assert res[0] == check_rc, f"check exited {res[0]}, expected {check_rc}\n{res[1]}\n{res[2]}"
    assert_fails_naming(res, *needles)
    res = run_reel("check", path)
    assert res[0] == check_rc
    assert_fails_naming(res, *needles)


# --------------------------------------------------------------------------- cannot read at all


def test_unknown_format(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_overrides={"format": "pooled_episodes_v9"})
    all_commands_fail(run_reel, task.path, "pooled_episodes_v9")


def test_unknown_format_is_a_format_finding_or_error(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_overrides={"format": "pooled_episodes_v9"})
    rc, out, err = run_reel("check", task.path, "--json")
    assert rc == 2
    if out.strip():
        report = json.loads(out)
        assert_finding(report, "format.unknown")
    else:
        assert "pooled_episodes_v9" in err


def test_malformed_info_json(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_text='{"format": "pooled_episodes_v1", "fps": ')
    all_commands_fail(run_reel, task.path, "info.json")


def test_info_json_is_a_list(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_text='[{"format": "pooled_episodes_v1"}]\n')
    all_commands_fail(run_reel, task.path, "info.json")


def test_info_json_empty_file(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_text="")
    all_commands_fail(run_reel, task.path, "info.json")


def test_missing_info_json(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], write_info=False)
    assert not (task.path / "meta/info.json").exists()
    all_commands_fail(run_reel, task.path, "info.json")


def test_task_path_is_a_regular_file(run_reel, tmp_path):
    f = tmp_path / "not_a_task.json"
    f.write_text("{}", encoding="utf-8")
    all_commands_fail(run_reel, f, "not_a_task.json")


def test_task_path_does_not_exist(run_reel, tmp_path):
    all_commands_fail(run_reel, tmp_path / "no_such_task", "no_such_task")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads files regardless of permissions")
def test_unreadable_info_json(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    info = task.path / "meta/info.json"
    info.chmod(0)
    try:
        all_commands_fail(run_reel, task.path, "info.json")
    finally:
        info.chmod(0o644)


# --------------------------------------------------------------------------- readable task, bad file


def truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_truncated_data_parquet(run_reel, reel_json, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2)])
    truncate(task.path / DATA1)
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    assert_finding(report, "data.unreadable", DATA1, severity="error")
    assert_fails_naming(run_reel("show", task.path, 1, "--json"), "episode-000.parquet")
    # the other episode still reads
    assert reel_json("show", task.path, 2)["episode_index"] == 2


def test_truncated_episodes_row(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2)])
    truncate(task.path / "meta/episodes/chunk-000/episode-001.parquet")
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    hits = [
        f
        for t in report["tasks"]
        for f in t["findings"]
        if f["severity"] == "error" and f["path"].replace("\\", "/").endswith("meta/episodes/chunk-000/episode-001.parquet")
    ]
    assert hits, report
    assert_fails_naming(run_reel("show", task.path, 2, "--json"), "episode-001.parquet")


def test_data_file_that_is_not_parquet(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    (task.path / DATA1).write_text("this is not parquet", encoding="utf-8")
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    assert_finding(report, "data.unreadable", DATA1)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads files regardless of permissions")
def test_unreadable_data_parquet(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    data = task.path / DATA1
    data.chmod(0)
    try:
        rc, report = check_report(run_reel, task.path)
        assert rc == 1
        assert_finding(report, "data.unreadable", DATA1)
        assert_fails_naming(run_reel("show", task.path, 1), "episode-000.parquet")
    finally:
        data.chmod(0o644)


def test_glove_as_variable_list(run_reel, tmp_path):
    """list<float32, 256> means fixed_size_list<float32>[256]; a variable list is wrong."""
    glove = pa.array(np.zeros((3, 256), dtype=np.float32).tolist(), pa.list_(pa.float32()))
    task = write_task(tmp_path, "t", [EpisodeSpec(1, extra_columns={"observation.left_glove": glove})])
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    f = assert_finding(report, "data.column_type", DATA1, severity="error")
    assert "observation.left_glove" in f["message"], f


def test_glove_with_wrong_width(run_reel, tmp_path):
    glove = pa.array(np.zeros((3, 255), dtype=np.float32).tolist(), pa.list_(pa.float32(), 255))
    task = write_task(tmp_path, "t", [EpisodeSpec(1, extra_columns={"observation.left_glove": glove})])
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    assert_finding(report, "data.column_type", DATA1)


@pytest.mark.parametrize(
    "column,array",
    [
        ("timestamp", pa.array([0.0, 1 / 30, 2 / 30], pa.float64())),
        ("frame_index", pa.array([0, 1, 2], pa.int32())),
        ("wall_time", pa.array([1.0, 2.0, 3.0], pa.float32())),
        ("action", pa.array([[0.0], [0.0], [0.0]], pa.list_(pa.float32()))),
    ],
    ids=["timestamp_float64", "frame_index_int32", "wall_time_float32", "action_variable"],
)
def test_key_column_with_wrong_type(run_reel, tmp_path, column, array):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, extra_columns={column: array})])
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    hits = [
        f
        for t in report["tasks"]
        for f in t["findings"]
        if f["rule"] in ("data.key_column", "data.column_type") and f["path"].replace("\\", "/").endswith(DATA1)
    ]
    assert hits, report
    assert any(column in f["message"] for f in hits), hits
