"""Variable-length IMU lists (contract §7.2, Appendix C): imu_ts_ns list<int64> and
observation.imu list<fixed_size_list<float32>[6]>, in lockstep, any number of samples per row."""

from __future__ import annotations

import pyarrow as pa
import pytest

from .checks import assert_finding, check_report, error_rules, findings
from .fixtures import EpisodeSpec, write_task

DATA1 = "data/chunk-000/episode-000.parquet"


@pytest.fixture
def imu_task(tmp_path):
    return write_task(tmp_path, "imu", [EpisodeSpec(1, length=3, imu=[0, 1, 3]), EpisodeSpec(2, length=2, imu=[3, 0])])


def test_show_counts_rows_and_samples(reel_json, imu_task):
    assert reel_json("show", imu_task.path, 1)["imu"] == {"rows": 3, "samples": 4}
    assert reel_json("show", imu_task.path, 2)["imu"] == {"rows": 2, "samples": 3}


def test_show_reports_imu_types(reel_json, imu_task):
    cols = {c["name"]: c for c in reel_json("show", imu_task.path, 1)["columns"]}
    norm = lambda s: "".join(s.replace("element: ", "").replace("item: ", "").split())  # noqa: E731
    assert norm(cols["imu_ts_ns"]["type"]) == "list<int64>"
    assert norm(cols["observation.imu"]["type"]) == "list<fixed_size_list<float>[6]>"
    assert cols["observation.imu"]["null_count"] == 0


def test_stats_count_imu_per_sample(reel_json, imu_task):
    blk = reel_json("stats", imu_task.path)["blocks"]["observation.imu"]
    assert blk["count"] == 7  # 0+1+3 + 3+0 samples, not 5 rows
    assert blk["dim"] == 6
    assert blk["mean"] == pytest.approx(imu_task.stats["observation.imu"]["mean"], rel=1e-9)


def test_check_accepts_variable_lengths(run_reel, imu_task):
    rc, report = check_report(run_reel, imu_task.path)
    assert rc == 0, error_rules(report)
    assert not findings(report, "data.imu_lockstep")


def test_check_flags_lockstep_break(run_reel, tmp_path):
    ts = pa.array([[], [1_000], [2_000, 3_000]], pa.list_(pa.int64()))  # 2 stamps for 3 samples on row 2
    task = write_task(tmp_path, "t", [EpisodeSpec(1, length=3, imu=[0, 1, 3], extra_columns={"imu_ts_ns": ts})])
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    assert_finding(report, "data.imu_lockstep", DATA1, severity="error")


@pytest.mark.parametrize(
    "column,array",
    [
        ("imu_ts_ns", pa.array([[], [1], [2, 3, 4]], pa.list_(pa.int32()))),
        ("observation.imu", pa.array([[], [[0.0] * 6], [[0.0] * 6] * 3], pa.list_(pa.list_(pa.float32())))),
        ("observation.imu", pa.array([[], [[0.0] * 6], [[0.0] * 6] * 3], pa.list_(pa.list_(pa.float64(), 6)))),
    ],
    ids=["ts_int32", "inner_variable", "inner_float64"],
)
def test_check_flags_wrong_imu_types(run_reel, tmp_path, column, array):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, length=3, imu=[0, 1, 3], extra_columns={column: array})])
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    assert_finding(report, "data.column_type", DATA1, severity="error")
