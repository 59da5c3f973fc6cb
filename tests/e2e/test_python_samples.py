"""Task.imu and Task.slam (issue 6): variable-length sample families flattened into numpy,
compared with pyarrow's reading of the fixture's own lists; SLAM points paired to frames by
nearest hardware_ns (multi-device §8.2.4), recomputed here with numpy."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from .fixtures import EpisodeSpec, data_rel, write_task

SLAM = "observation.slam_trajectory"


@pytest.fixture
def task_dir(tmp_path):
    return write_task(tmp_path, "samples_task",
                      [EpisodeSpec(1, length=4, imu=[2, 0, 3, 1], slam={SLAM: [1, 0, 2, 3]}),
                       EpisodeSpec(2, length=3, imu=None)])


def test_imu_flattened(reel_mod, task_dir, unchanged):
    task = reel_mod.open(str(task_dir.path))
    with unchanged("Task.imu"):
        got = task.imu(1)
    t = pq.read_table(task_dir.path / data_rel(1))
    lists = t.column("observation.imu").to_pylist()
    want_rows = np.concatenate([[r] * len(l) for r, l in enumerate(lists)]).astype(np.int64)
    want_vals = np.array([s for l in lists for s in l], dtype=np.float32).reshape(-1, 6)
    want_ts = np.array([x for l in t.column("imu_ts_ns").to_pylist() for x in l], dtype=np.int64)
    assert np.array_equal(got["row"], want_rows)
    assert np.array_equal(got["values"], want_vals)
    assert np.array_equal(got["ts_ns"], want_ts)
    assert got["values"].dtype == np.float32 and got["values"].shape == (6, 6)
    with pytest.raises(reel_mod.NotFoundError):
        task.imu(2)  # an episode without IMU columns


def test_slam_points_and_frame_pairing(reel_mod, task_dir):
    task = reel_mod.open(str(task_dir.path))
    got = task.slam(1, SLAM)
    t = pq.read_table(task_dir.path / data_rel(1))
    rows = t.column(SLAM).to_pylist()
    want_pts = np.array([x for r in rows for x in r], dtype=np.float64).reshape(-1, 8)
    want_row = np.concatenate([[i] * (len(r) // 8) for i, r in enumerate(rows)]).astype(np.int64)
    want_ns = np.array([x for r in t.column(SLAM + "_ns").to_pylist() for x in r], dtype=np.int64)
    assert np.array_equal(got["points"], want_pts)
    assert np.array_equal(got["row"], want_row)
    assert np.array_equal(got["ns"], want_ns)
    hw = np.array(t.column("hardware_ns").to_pylist(), dtype=np.int64)
    # Nearest frame by hardware_ns, ties to the earlier frame; 0 = no stamp -> -1.
    want_frame = []
    for s in want_ns:
        if s == 0:
            want_frame.append(-1)
            continue
        d = np.abs(hw - s)
        want_frame.append(int(np.flatnonzero(d == d.min())[0]))
    assert got["frame"].tolist() == want_frame
    with pytest.raises(reel_mod.NotFoundError):
        task.slam(1, "observation.no_such_trajectory")
