"""`reel check` rules on tasks that read fine but break one contract rule each.

Each test builds an otherwise correct task, breaks one thing, and asserts the rule id and the
file it names. Severity is asserted only where the contract makes the breach a MUST."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .checks import all_findings, assert_finding, check_report, error_rules, findings
from .fixtures import EpisodeSpec, write_task

DATA1 = "data/chunk-000/episode-000.parquet"
ROW1 = "meta/episodes/chunk-000/episode-000.parquet"
INFO = "meta/info.json"


def report_for(run_reel, tmp_path, episodes, **kw):
    task = write_task(tmp_path, "t", episodes, **kw)
    return check_report(run_reel, task.path)


# --------------------------------------------------------------------------- info.json


@pytest.mark.parametrize("key", ["device_names", "created_at", "sensor_dim", "calibration", "video_extensions", "fps"])
def test_info_required_key(run_reel, tmp_path, key):
    rc, report = report_for(run_reel, tmp_path, [EpisodeSpec(1)], info_drop=(key,))
    f = assert_finding(report, "info.required_key", INFO)
    assert any(key in g["message"] for g in findings(report, "info.required_key")), f


@pytest.mark.parametrize(
    "key,value",
    [("fps", "30.0"), ("video", "true"), ("devices", {}), ("chunks_size", "1000"), ("features", [])],
)
def test_info_key_type(run_reel, tmp_path, key, value):
    rc, report = report_for(run_reel, tmp_path, [EpisodeSpec(1)], info_overrides={key: value})
    assert_finding(report, "info.key_type", INFO)
    assert any(key in g["message"] for g in findings(report, "info.key_type"))


def test_extra_info_keys_are_allowed(run_reel, tmp_path):
    """New keys are additive (multi-device §6.1): an unknown top-level key is not an error."""
    rc, report = report_for(run_reel, tmp_path, [EpisodeSpec(1)], info_overrides={"slam_frames": {}, "x_new_key": 1})
    assert rc == 0, error_rules(report)


# --------------------------------------------------------------------------- episodes rows


def test_row_missing(reel_json, run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2, row="none")])
    (e1, e2) = reel_json("ls", task.path)["episodes"]
    assert e1["row_source"] == "episode_file"
    assert e2["row_source"] == "missing" and e2["has_data"] is True
    rc, report = check_report(run_reel, task.path)
    assert_finding(report, "episodes.row_missing", "data/chunk-000/episode-001.parquet")


def test_row_file_with_two_rows(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    row = pq.read_table(task.path / ROW1)
    pq.write_table(pa.concat_tables([row, row]), task.path / ROW1)
    rc, report = check_report(run_reel, task.path)
    assert_finding(report, "episodes.row_count", ROW1)


def test_row_file_with_no_rows(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    row = pq.read_table(task.path / ROW1)
    pq.write_table(row.slice(0, 0), task.path / ROW1)
    rc, report = check_report(run_reel, task.path)
    assert_finding(report, "episodes.row_count", ROW1)


@pytest.mark.parametrize(
    "column,value",
    [("length", (3, pa.int32())), ("created_at", ("2026-01-01", pa.string())), ("drop_stats", (0, pa.int64()))],
)
def test_row_column_type(run_reel, tmp_path, column, value):
    rc, report = report_for(run_reel, tmp_path, [EpisodeSpec(1, row_overrides={column: value})])
    f = assert_finding(report, "episodes.column_type", ROW1)
    assert column in f["message"], f


@pytest.mark.parametrize("column", ["drop_stats", "video_codec", "calibration", "force_matrix_specs"])
def test_row_json_column_not_json(run_reel, tmp_path, column):
    rc, report = report_for(run_reel, tmp_path, [EpisodeSpec(1, row_overrides={column: "{not json"})])
    f = assert_finding(report, "episodes.json_column", ROW1)
    assert column in f["message"], f


def test_row_length_differs_from_data_rows(run_reel, tmp_path):
    spec = EpisodeSpec(1, length=3, row_overrides={"length": 5, "end_frame_index": 4})
    rc, report = report_for(run_reel, tmp_path, [spec])
    assert rc == 1
    assert_finding(report, "episodes.length", severity="error")


def test_row_end_frame_index_not_length_minus_one(run_reel, tmp_path):
    rc, report = report_for(run_reel, tmp_path, [EpisodeSpec(1, length=3, row_overrides={"end_frame_index": 3})])
    assert_finding(report, "episodes.length", ROW1)


def test_row_with_slam_specs_column(reel_json, run_reel, tmp_path):
    """The 12th column (slam_specs, JSON string) is accepted and parsed."""
    specs = {"observation.slam_trajectory": {"frame": "down_left_forward", "owner": {"role": "gripper", "rig": 1}}}
    spec = EpisodeSpec(1, slam={"observation.slam_trajectory": [1, 0, 2]}, row_extra={"slam_specs": specs})
    task = write_task(tmp_path, "t", [spec])
    row = reel_json("show", task.path, 1)["row"]
    assert row["slam_specs"] == specs
    assert row["missing_columns"] == []
    rc, report = check_report(run_reel, task.path)
    assert rc == 0, error_rules(report)


# --------------------------------------------------------------------------- file groups
# An episode's files are whole or gone (contract §2, §9): the fixture writes whole episodes and
# os.remove breaks one; `reel ls` shows the same state as the finding.

DATA2 = "data/chunk-000/episode-001.parquet"
RGB2 = "videos/chunk-000/d435_rgb/episode-001.mp4"
DEPTH2 = "videos/chunk-000/d435_depth/episode-001.mkv"


def file_groups(reel_json, task) -> dict:
    return {e["episode_index"]: (e["file_group"], e["missing_files"]) for e in reel_json("ls", task.path)["episodes"]}


def test_file_group_videos_without_data(reel_json, run_reel, tmp_path):
    """A torn delete as the old DeleteEpisode left it: the data parquet gone, the videos there."""
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2)])
    (task.path / DATA2).unlink()
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    assert error_rules(report) == ["episode.file_group"]
    (f,) = findings(report, "episode.file_group")
    assert f["severity"] == "error" and f["path"] == DATA2
    assert f["message"] == (f"episode 2's file group is partial: missing {DATA2}; present {DEPTH2}, {RGB2} (a torn "
                            "delete or lost files: restore the missing ones, or remove the rest with reel delete)")
    assert file_groups(reel_json, task) == {1: ("whole", []), 2: ("partial", [DATA2])}


def test_file_group_data_without_a_declared_depth_video(reel_json, run_reel, tmp_path):
    """The reference deletes videos first: data without a slot the row declares (video_codec depth)."""
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2)])
    (task.path / DEPTH2).unlink()
    rc, report = check_report(run_reel, task.path)
    assert rc == 1 and error_rules(report) == ["episode.file_group"]
    f = assert_finding(report, "episode.file_group", DEPTH2, "error")
    assert f"missing {DEPTH2}; present {DATA2}, {RGB2}" in f["message"], f
    assert file_groups(reel_json, task)[2] == ("partial", [DEPTH2])


def test_file_group_rgb_slot_the_row_does_not_declare_may_be_absent(reel_json, run_reel, tmp_path):
    """Slots may change between episodes (contract §8) and a row names only its depth slots (and
    their master_slot when the writer records it): an RGB slot that is not named is not required."""
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2)])
    (task.path / RGB2).unlink()
    rc, report = check_report(run_reel, task.path)
    assert findings(report, "episode.file_group") == []
    assert file_groups(reel_json, task)[2] == ("whole", [])


def test_file_group_row_only_is_a_deleted_episode(reel_json, run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2)])
    for rel in (DATA2, RGB2, DEPTH2):
        (task.path / rel).unlink()
    rc, report = check_report(run_reel, task.path)
    assert rc == 0, error_rules(report)
    assert file_groups(reel_json, task) == {1: ("whole", []), 2: ("deleted", [])}


# --------------------------------------------------------------------------- data parquet


@pytest.mark.parametrize("column", ["wall_time", "hardware_ns", "frame_index", "task_index"])
def test_missing_key_column(run_reel, tmp_path, column):
    rc, report = report_for(run_reel, tmp_path, [EpisodeSpec(1, drop_columns=(column,))])
    assert rc == 1
    f = assert_finding(report, "data.key_column", DATA1, severity="error")
    assert column in f["message"], f


@pytest.mark.parametrize("frames", [[1, 2, 3], [0, 2, 3], [0, 1, 1]], ids=["starts_at_1", "hole", "repeat"])
def test_frame_index_not_0_to_n(run_reel, tmp_path, frames):
    spec = EpisodeSpec(1, length=3, extra_columns={"frame_index": pa.array(frames, pa.int64())})
    rc, report = report_for(run_reel, tmp_path, [spec])
    assert rc == 1
    assert_finding(report, "data.frame_index", DATA1, severity="error")


def test_null_in_list_column(run_reel, tmp_path):
    rows = [np.ones(256, np.float32).tolist(), None, np.zeros(256, np.float32).tolist()]
    spec = EpisodeSpec(1, length=3, extra_columns={"observation.left_glove": pa.array(rows, pa.list_(pa.float32(), 256))})
    rc, report = report_for(run_reel, tmp_path, [spec])
    assert rc == 1
    # Arrow C++ 25's parquet reader refuses a fixed_size_list column with a null row ("Expected
    # all lists to be of size=256"); 26 reads it and reel reports data.null_list. Either way the
    # file is an error that names it. (pyarrow is pinned at 25 for daft: requirements.txt.)
    rules = {f["rule"] for f in all_findings(report)}
    rule = "data.null_list" if "data.null_list" in rules else "data.unreadable"
    f = assert_finding(report, rule, DATA1, severity="error")
    assert rule == "data.null_list" or "size=256" in f["message"], f


def test_null_in_variable_list(run_reel, tmp_path):
    ts = pa.array([[1], None, []], pa.list_(pa.int64()))
    spec = EpisodeSpec(1, length=3, imu=[1, 0, 0], extra_columns={"imu_ts_ns": ts})
    rc, report = report_for(run_reel, tmp_path, [spec])
    assert_finding(report, "data.null_list", DATA1)


def test_a_nan_in_a_value_column_is_warned_naming_the_row(run_reel, tmp_path):
    # Issue 27 (low): NaN passed `reel check`; stats.json's mean and std of the column become NaN.
    rows = [np.ones(256, np.float32).tolist()] * 3
    rows[2] = [0.0] * 255 + [float("nan")]
    spec = EpisodeSpec(1, length=3, extra_columns={"observation.left_glove": pa.array(rows, pa.list_(pa.float32(), 256))})
    rc, report = report_for(run_reel, tmp_path, [spec])
    f = assert_finding(report, "data.finite", DATA1, severity="warning")
    assert "column \"observation.left_glove\" holds a NaN or an infinity at row 2" in f["message"], f
    rc, report = report_for(run_reel, tmp_path / "clean", [EpisodeSpec(1, length=3)])
    assert not findings(report, "data.finite")


def test_a_column_wider_than_reel_writes_is_an_error(run_reel, tmp_path):
    # Writer bound = reader bound (issue 27, finding 9): add-columns refuses more than 65,536
    # values in a row, and check reports a column that holds more.
    wide = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(3 * 65537, np.float32)), 65537)
    ok = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(3 * 65536, np.float32)), 65536)
    spec = EpisodeSpec(1, length=3, extra_columns={"observation.wide_map": wide, "observation.ok_map": ok})
    rc, report = report_for(run_reel, tmp_path, [spec], info_overrides={"features": {
        "observation.wide_map": {"dtype": "float32", "shape": [65537]},
        "observation.ok_map": {"dtype": "float32", "shape": [65536]}}})
    f = assert_finding(report, "data.row_width", DATA1, severity="error")
    assert "column \"observation.wide_map\" holds 65537 values in a row, more than the 65536" in f["message"], f
    assert len(findings(report, "data.row_width")) == 1


def test_undeclared_observation_column(run_reel, tmp_path):
    extra = {"observation.mystery_sensor": pa.array([[0.0] * 3] * 3, pa.list_(pa.float32(), 3))}
    rc, report = report_for(run_reel, tmp_path, [EpisodeSpec(1, extra_columns=extra)])
    f = assert_finding(report, "data.undeclared_column", DATA1)
    assert "observation.mystery_sensor" in f["message"], f


def test_status_and_key_columns_need_no_feature(run_reel, tmp_path):
    spec = EpisodeSpec(1, status={"head_left_rgb": "connected", "left_glove": "disconnected"})
    spec.extra_columns["raw_hw_ns"] = pa.array([0, 5, 0], pa.int64())
    rc, report = report_for(run_reel, tmp_path, [spec])
    assert rc == 0, error_rules(report)
    assert not findings(report, "data.undeclared_column")


@pytest.mark.parametrize(
    "name", ["observation.Left_Glove_Extra", "observation.手套压力", "observation.gripper_1_gripper_state"]
)
def test_bad_column_names(run_reel, tmp_path, name):
    extra = {name: pa.array([[0.0] * 3] * 3, pa.list_(pa.float32(), 3))}
    feats = {name: {"dtype": "float32", "shape": [3]}}
    rc, report = report_for(run_reel, tmp_path, [EpisodeSpec(1, extra_columns=extra)], features_overrides=feats)
    f = assert_finding(report, "data.column_name", DATA1)
    assert name in f["message"], f


def test_slam_clean(reel_json, run_reel, tmp_path):
    spec = EpisodeSpec(1, length=3, slam={"observation.slam_trajectory": [0, 1, 2]})
    task = write_task(tmp_path, "t", [spec])
    assert task.info["gripper_slam_frame"] == "down_left_forward"
    (slam,) = reel_json("show", task.path, 1)["slam"]
    assert slam["column"] == "observation.slam_trajectory"
    assert slam["points"] == 3
    assert slam["stamped_points"] == 3
    rc, report = check_report(run_reel, task.path)
    assert rc == 0, error_rules(report)


def test_slam_row_not_multiple_of_8(run_reel, tmp_path):
    col = "observation.slam_trajectory"
    bad = pa.array([[], [0.5] * 12, [0.5] * 16], pa.list_(pa.float64()))
    spec = EpisodeSpec(1, length=3, slam={col: [0, 1, 2]}, extra_columns={col: bad})
    rc, report = report_for(run_reel, tmp_path, [spec])
    assert rc == 1
    assert_finding(report, "data.slam_lockstep", DATA1, severity="error")


def test_slam_ns_length_differs_from_points(run_reel, tmp_path):
    col = "observation.gripper_2_slam_trajectory"
    ns = pa.array([[], [10, 11], [12, 13]], pa.list_(pa.int64()))  # row 1 has 1 point, 2 stamps
    spec = EpisodeSpec(1, length=3, slam={col: [0, 1, 2]}, extra_columns={col + "_ns": ns})
    rc, report = report_for(run_reel, tmp_path, [spec])
    assert rc == 1
    assert_finding(report, "data.slam_lockstep", DATA1, severity="error")


@pytest.mark.parametrize("slam", [{}, {"observation.ego_slam_trajectory": [1, 1, 0]}], ids=["no_slam", "ego_only"])
def test_gripper_slam_frame_without_gripper_trajectory(run_reel, tmp_path, slam):
    spec = EpisodeSpec(1, length=3, slam=slam)
    rc, report = report_for(run_reel, tmp_path, [spec], info_overrides={"gripper_slam_frame": "down_left_forward"})
    assert_finding(report, "features.slam_frame", INFO)


def test_ego_trajectory_without_gripper_slam_frame_is_clean(run_reel, tmp_path):
    spec = EpisodeSpec(1, length=3, slam={"observation.ego_slam_trajectory": [1, 1, 0]})
    task = write_task(tmp_path, "t", [spec])
    assert "gripper_slam_frame" not in task.info
    rc, report = check_report(run_reel, task.path)
    assert rc == 0, error_rules(report)
    assert not findings(report, "features.slam_frame")
