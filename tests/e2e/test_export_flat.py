"""`reel export --to flat` (docs/interop.md "The flat table"): one row per IMU sample with the
frame-level signals interpolated to the sample's time on the frame clock, one row per frame for an
episode without IMU. The expected rows are computed here with numpy from the pooled parquet files:
the IMU's device clock mapped by the nearest frame's raw_hw_ns, the interpolation by brute force
(test_align.py's reference), the quaternion by a textbook slerp."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from .cli_run import reel
from .fixtures import data_rel, write_task
from .test_align import FEATURES, force_episode, ref_interpolate

T = 33_333_333  # the flat table's default tolerance: one frame period at 30 fps
IMU = ["acc_x", "acc_y", "acc_z", "gyro_x", "gyro_y", "gyro_z"]
FORCES = ["observation.gripper_2_gripper_left_force", "observation.gripper_2_gripper_right_force",
          "observation.gripper_left_force", "observation.gripper_right_force"]
STATES = ["observation.gripper_2_gripper_state", "observation.gripper_state"]
TRAJECTORIES = ["observation.ego_slam_trajectory", "observation.gripper_2_slam_trajectory",
                "observation.slam_trajectory"]


def slerp(qa, qb, w):
    qa, qb = np.asarray(qa, float), np.asarray(qb, float)
    d = float(qa @ qb)
    if d < 0:
        qb, d = -qb, -d
    if d > 0.9995:
        q = qa + w * (qb - qa)
    else:
        th = np.arccos(min(d, 1.0))
        q = (np.sin((1 - w) * th) * qa + np.sin(w * th) * qb) / np.sin(th)
    return q / np.linalg.norm(q)


def interpolated(targets, sample_ns, sample_values, sample_target, pose=False):
    """Per target: the blend of its (a, b, w) pairing, or None."""
    out = []
    for a, b, w in ref_interpolate(targets, sample_ns, sample_target, T):
        if a < 0:
            out.append(None)
            continue
        va = np.asarray(sample_values[a], float)
        vb = np.asarray(sample_values[b], float) if b >= 0 else va
        v = va + w * (vb - va)
        if pose and b >= 0:
            v[4:] = slerp(va[4:], vb[4:], w)
        out.append(v)
    return out


def first_target_of_row(target_rows, nrows):
    """A frame-level sample of data row r pairs within the segment of the first target on row r
    or later (the last target when none)."""
    out = []
    for r in range(nrows):
        later = [k for k, tr in enumerate(target_rows) if tr >= r]
        out.append(later[0] if later else len(target_rows) - 1)
    return np.array(out)


@pytest.fixture(scope="module")
def sim(reel_bin, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("flat-task") / "pick"
    reel(reel_bin, "simulate", root, "--count", 2, "--seconds", 1, "--video-size", "96x64", "--seed", 3)
    return root


def test_one_row_per_imu_sample_with_interpolated_signals(reel_bin, sim, tmp_path):
    out = tmp_path / "flat"
    reel(reel_bin, "export", "--to", "flat", sim, out, "--episodes", 2)
    meta = json.loads((out / "flat.json").read_text())
    assert meta["format"] == "reel-flat" and meta["tolerance_ns"] == T
    assert [e["episode_index"] for e in meta["episodes"]] == [2]
    got = pq.read_table(out / "flat.parquet").to_pydict()
    assert list(got)[:10] == ["episode_index", "imu_ts_ns", "ns", "frame_index", *IMU]
    t = pq.read_table(sorted((sim / "data").rglob("*.parquet"))[1]).to_pydict()
    hw = np.array(t["hardware_ns"], np.int64)
    raw = np.array(t["raw_hw_ns"], np.int64)
    ts = np.array([x for row in t["imu_ts_ns"] for x in row], np.int64)
    rows = np.array([r for r, v in enumerate(t["imu_ts_ns"]) for _ in v], np.int64)
    vals = np.array([x for row in t["observation.imu"] for x in row], np.float32).reshape(-1, 6)
    f = np.array([int(np.argmin(np.abs(raw - d))) for d in ts])
    mapped = hw[f] + (ts - raw[f])
    assert got["episode_index"] == [2] * len(ts)
    assert got["imu_ts_ns"] == ts.tolist()
    assert got["ns"] == mapped.tolist()
    assert got["frame_index"] == [int(np.argmin(np.abs(hw - m))) for m in mapped]
    for c, name in enumerate(IMU):
        np.testing.assert_array_equal(np.array(got[name], np.float32), vals[:, c], err_msg=name)
    of_row = first_target_of_row(rows, len(hw))
    n = len(hw)
    for c in FORCES:
        want = interpolated(mapped, np.array(t[c + "_ns"], np.int64), t[c], of_row)
        assert [None if v is None else np.float32(v).tolist() for v in want] == got[c], c
    for c in STATES:
        st = np.array(t[c], np.float32)
        ns = np.where(np.any(st != 0, axis=1), hw, 0)
        want = interpolated(mapped, ns, st, of_row)
        assert [None if v is None else np.float32(v).tolist() for v in want] == got[c], c
    for c in TRAJECTORIES:
        pts = np.array([x for r in t[c] for x in r], np.float64).reshape(-1, 8)
        ns = np.array([x for r in t[c + "_ns"] for x in r], np.int64)
        prow = np.array([r for r, v in enumerate(t[c + "_ns"]) for _ in v], np.int64)
        want = interpolated(mapped, ns, pts, of_row[prow], pose=True)
        assert [v is None for v in want] == [v is None for v in got[c]], c
        for w, g in zip(want, got[c]):
            if w is not None:
                np.testing.assert_allclose(g, w, rtol=0, atol=1e-12, err_msg=c)
    # Something to see: interpolated rows, and some rows of every signal paired.
    assert all(sum(v is not None for v in got[c]) > len(ts) // 2 for c in FORCES + TRAJECTORIES)
    assert n > 0


def test_an_episode_without_imu_gives_one_row_per_frame(reel_bin, tmp_path):
    task = write_task(tmp_path, "align_task", [force_episode()], features_overrides=FEATURES)
    out = tmp_path / "flat"
    reel(reel_bin, "export", "--to", "flat", task.path, out)
    got = pq.read_table(out / "flat.parquet").to_pydict()
    t = pq.read_table(task.path / data_rel(1)).to_pydict()
    hw = np.array(t["hardware_ns"], np.int64)
    n = len(hw)
    assert got["frame_index"] == list(range(n))
    assert got["ns"] == [int(v) if v else None for v in hw]  # row 5 has no stamp
    assert got["imu_ts_ns"] == [None] * n and got["acc_x"] == [None] * n
    c = "observation.gripper_left_force"
    want = interpolated(hw, np.array(t[c + "_ns"], np.int64), t[c], np.arange(n))
    assert [None if v is None else np.float32(v).tolist() for v in want] == got[c]
    assert json.loads((out / "flat.json").read_text())["episodes"][0]["imu_clock"] == "none"


def test_python_export_flat_and_force(reel_mod, reel_bin, sim, tmp_path):
    out = tmp_path / "flat"
    r = reel_mod.export(str(sim), str(out), format="flat", episodes=[1])
    assert r["format"] == "flat" and r["episodes"] == 1
    first = pq.read_table(out / "flat.parquet")
    r = reel_mod.export(str(sim), str(out), format="flat", replace_existing=True)
    assert r["episodes"] == 2 and pq.read_table(out / "flat.parquet").num_rows > first.num_rows
