"""The LeRobot export's time-aligned streams (issue 29, docs/interop.md "Aligned streams"): force
matrices decoded and paired with each frame by their scalar _ns, the IMU as a causal window of K
samples on the frame clock, trajectories paired by their _ns lists, the left glove in canonical
order; loaded by the real LeRobotDataset (lerobot 0.4.4 for v3.0, 0.3.3 for v2.1) and compared with
values computed here with numpy from the pooled parquet files (the pairing by brute force, as in
test_align.py; the matrices decoded by the contract's cumsum rule), not through reel."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from .cli_run import reel
from .lerobot_peer import dump
from .test_align import ref_nearest, segments

W, H = 96, 64
TOL = 16_666_667  # half a frame period at 30 fps, rounded to ns
MATRICES = ["observation.gripper_2_gripper_left_force_matrix", "observation.gripper_left_force_matrix"]
TRAJECTORIES = ["observation.ego_slam_trajectory", "observation.gripper_2_slam_trajectory",
                "observation.slam_trajectory"]
K = 16


@pytest.fixture(scope="module")
def task(reel_bin, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("aligned-task") / "pick"
    reel(reel_bin, "simulate", root, "--count", 2, "--seconds", 1.2, "--video-size", f"{W}x{H}", "--seed", 7)
    return root


def decode_matrix(cell, spec) -> np.ndarray:
    """The contract's decoding (000 §force matrix): row_diff_quantized = int16 rows of 750,
    cumulative sum in int32, back to int16 (wraparound), / scale; row_flat_raw as stored."""
    if spec["encoding"] == "row_flat_raw":
        return np.asarray(cell, np.float32).reshape(250, 250, 3)
    q = np.asarray(cell, np.int16).reshape(250, 750)
    v = np.cumsum(q.astype(np.int32), axis=1).astype(np.int16)
    return (v.astype(np.float32) / np.float32(spec["scale"])).reshape(250, 250, 3)


def imu_windows(t: dict, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The K newest IMU samples at or before each frame on the frame clock (oldest first, padding
    first): device stamps mapped through the nearest frame's raw_hw_ns (ties earlier)."""
    hw = np.array(t["hardware_ns"], np.int64)
    raw = np.array(t["raw_hw_ns"], np.int64)
    ts = np.array([x for row in t["imu_ts_ns"] for x in row], np.int64)
    vals = np.array([x for row in t["observation.imu"] for x in row], np.float32).reshape(-1, 6)
    f = np.array([int(np.argmin(np.abs(raw - d))) for d in ts])
    mapped = hw[f] + (ts - raw[f])
    assert len(set(segments(hw))) == 1  # the simulator's clock never steps back
    order = np.argsort(mapped, kind="stable")
    win = np.zeros((len(hw), k, 6), np.float32)
    mask = np.zeros((len(hw), k), np.float32)
    for r, now in enumerate(hw):
        seen, picked = set(), []
        for i in order:
            if mapped[i] <= now and mapped[i] not in seen:
                seen.add(mapped[i])
                picked.append(i)
        picked = picked[-k:]
        for slot, i in enumerate(picked, start=k - len(picked)):
            win[r, slot] = vals[i]
            mask[r, slot] = 1.0
    return win, mask


def expected(task: Path, fm: str, k: int = K) -> dict[str, np.ndarray]:
    """Per exported feature: the frames of every episode, stacked."""
    out: dict[str, list] = {}
    files = sorted((task / "data").rglob("*.parquet"))
    rows = [pq.read_table(f).to_pylist()[0] for f in sorted((task / "meta/episodes").rglob("*.parquet"))]
    for f, row in zip(files, rows):
        t = pq.read_table(f).to_pydict()
        hw = np.array(t["hardware_ns"], np.int64)
        n = len(hw)
        specs = json.loads(row["force_matrix_specs"])
        for c in MATRICES:
            pick = ref_nearest(hw, np.array(t[c + "_ns"], np.int64), np.arange(n), TOL)
            mats = np.zeros((n, 250, 250, 3), np.float32)
            for r, i in enumerate(pick):
                if i >= 0 and len(t[c][i]):
                    mats[r] = decode_matrix(t[c][i], specs[c])
            valid = np.array([i >= 0 and len(t[c][i]) > 0 for i in pick], np.float32)
            out.setdefault(c, []).append(mats[..., 2] if fm == "fz" else mats)
            out.setdefault(c + "_valid", []).append(valid)
        for c in TRAJECTORIES:
            pts = np.array([x for r in t[c] for x in r], np.float64).reshape(-1, 8)
            ns = np.array([x for r in t[c + "_ns"] for x in r], np.int64)
            prow = np.array([r for r, v in enumerate(t[c + "_ns"]) for _ in v], np.int64)
            pick = ref_nearest(hw, ns, prow, TOL)
            out.setdefault(c, []).append(np.stack([pts[i] if i >= 0 else np.zeros(8) for i in pick]))
            out.setdefault(c + "_valid", []).append(np.array([i >= 0 for i in pick], np.float32))
        win, mask = imu_windows(t, k)
        out.setdefault("observation.imu", []).append(win)
        out.setdefault("observation.imu_mask", []).append(mask)
        left = np.array(t["observation.left_glove"], np.float32).reshape(-1, 16, 16)
        # multi-device §4.5, the reference's canonical_pressure_matrix: values[::-1, ::-1].T
        out.setdefault("observation.left_glove", []).append(np.stack([m[::-1, ::-1].T.reshape(-1) for m in left]))
    return {key: np.concatenate(v) for key, v in out.items()}


@pytest.fixture(scope="module")
def exported(reel_bin, task, tmp_path_factory):
    cache = {}

    def get(version, fm):
        if (version, fm) not in cache:
            root = tmp_path_factory.mktemp(f"aligned-{version}-{fm}") / "ds"
            to = {"v3.0": "lerobot-v3", "v2.1": "lerobot-v2.1"}[version]
            reel(reel_bin, "export", "--to", to, task, root, "--force-matrix", fm, "--no-depth")
            cache[(version, fm)] = root
        return cache[(version, fm)]

    return get


SHAPES = {"fz": [250, 250], "full": [250, 250, 3]}


@pytest.mark.parametrize("version,fm", [("v3.0", "fz"), ("v2.1", "full")])
def test_lerobot_dataset_loads_the_aligned_streams(exported, task, version, fm):
    root = exported(version, fm)
    info = json.loads((root / "meta/info.json").read_text())
    feats = info["features"]
    for c in MATRICES:
        assert feats[c]["dtype"] == "float32" and feats[c]["shape"] == SHAPES[fm], c
        assert feats[c + "_valid"] == {"dtype": "float32", "shape": [1], "names": None}
    assert feats["observation.imu"]["shape"] == [K, 6] and feats["observation.imu_mask"]["shape"] == [K]
    for c in TRAJECTORIES:
        assert feats[c]["dtype"] == "float64" and feats[c]["shape"] == [8]
    assert "imu_ts_ns" not in feats and "observation.slam_trajectory_ns" not in feats
    assert not any(k.endswith("_is_pad") for k in feats)  # LeRobot's own padding flags stay LeRobot's
    d = dump(root, version)
    want = expected(task, fm)
    n = len(d["index"])
    for key, value in want.items():
        got = d[key]
        if value.ndim == 1:  # shape [1] features come back as scalars
            got = got.reshape(n)
        if value.dtype == np.float64:
            # LeRobot hands float64 features out as float32 tensors (its torch conversion); the
            # parquet keeps float64, checked exactly below.
            value = value.astype(np.float32)
        assert got.dtype == value.dtype, key
        np.testing.assert_array_equal(got, value, err_msg=key)
    data = [pq.read_table(f) for f in sorted((root / "data").rglob("*.parquet"))]
    for c in TRAJECTORIES:
        exact = np.concatenate([np.array(t.column(c).to_pylist(), np.float64) for t in data])
        np.testing.assert_array_equal(exact, want[c], err_msg=c)
    # Something to see: paired and unpaired frames (the matrix pump runs at half the frame rate).
    assert 0 < want[MATRICES[1] + "_valid"].sum() < n
    assert want["observation.imu_mask"].sum() > 0 and (want["observation.imu_mask"][0] == 0).any()


def test_no_align_keeps_the_row_mapping(reel_bin, task, tmp_path):
    root = tmp_path / "ds"
    reel(reel_bin, "export", task, root, "--no-align", "--no-depth")
    feats = json.loads((root / "meta/info.json").read_text())["features"]
    assert feats["observation.imu"]["shape"] == [6]
    assert not any(k.endswith("_force_matrix") or k.endswith("_valid") and "glove" not in k for k in feats)
    t = pq.read_table(next((root / "data").rglob("*.parquet")))
    first = pq.read_table(sorted((task / "data").rglob("*.parquet"))[0])
    n = first.num_rows
    np.testing.assert_array_equal(np.array(t.column("observation.left_glove").to_pylist()[:n], np.float32),
                                  np.array(first.column("observation.left_glove").to_pylist(), np.float32))


def test_imu_window_and_tolerance_options(reel_bin, task, tmp_path):
    root = tmp_path / "ds"
    reel(reel_bin, "export", task, root, "--imu-window", 4, "--force-matrix", "none", "--no-depth")
    feats = json.loads((root / "meta/info.json").read_text())["features"]
    assert feats["observation.imu"]["shape"] == [4, 6]
    assert not any(k.endswith("_force_matrix") for k in feats)
    t = pq.read_table(sorted((root / "data").rglob("*.parquet"))[0])
    want = expected(task, "fz", k=4)
    got = np.array(t.column("observation.imu").to_pylist(), np.float32)
    np.testing.assert_array_equal(got, want["observation.imu"])
    # A whole frame of tolerance pairs every matrix frame (the pump runs at 15 Hz).
    root2 = tmp_path / "ds2"
    reel(reel_bin, "export", task, root2, "--align-tolerance", 0.035, "--no-depth")
    t2 = pq.read_table(sorted((root2 / "data").rglob("*.parquet"))[0])
    assert set(t2.column(MATRICES[1] + "_valid").to_pylist()) == {1.0}


def test_sparse_streams_give_empty_masks(reel_bin, tmp_path):
    """Episode 1 has IMU samples and a trajectory; episode 2 has neither, and episode 3 has
    trajectory points without their _ns list (an unstamped episode, multi-device §8.1.3): the
    export fills the missing columns, and their frames are unpaired (masks 0), not an error."""
    from .fixtures import EpisodeSpec, write_task

    slam = "observation.slam_trajectory"
    eps = [EpisodeSpec(1, length=4, imu=[2, 1, 0, 3], slam={slam: [1, 0, 1, 1]}),
           EpisodeSpec(2, length=3),
           EpisodeSpec(3, length=3, slam={slam: [1, 1, 1]}, drop_columns=(slam + "_ns",))]
    task = write_task(tmp_path, "sparse", eps)
    root = tmp_path / "ds"
    reel(reel_bin, "export", task.path, root, "--no-depth", "--imu-window", 2)
    t = pq.read_table(next((root / "data").rglob("*.parquet"))).to_pydict()
    assert t["episode_index"] == [0] * 4 + [1] * 3 + [2] * 3
    mask = np.array(t["observation.imu_mask"], np.float32)
    assert mask[:4].sum() > 0 and not mask[4:].any()
    valid = t[slam + "_valid"]
    assert valid[4:] == [0.0] * 6
    assert np.array(t["observation.imu"][4:], np.float32).shape == (6, 2, 6)
