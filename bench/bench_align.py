#!/usr/bin/env python3
"""Task.align over a 10-minute episode against a hand-written peer (issue 29's goal: >= 10x).

The episode (written here by pyarrow, 18,000 rows at 30 fps): a gripper force vector with its
scalar _ns (a sample on 9 rows in 10), a SLAM trajectory with one point per row and its _ns list
(a point dropped every 11th row), the head IMU at 400 Hz (13-14 samples a row) on the device
clock with the frames' raw_hw_ns on that clock. The peer is what a team writes without reel:
pyarrow reads the columns, numpy's searchsorted pairs each stream's stamps with hardware_ns
(nearest within half a frame, ties earlier, a repeated stamp once), the IMU first mapped to the
frame clock through the nearest raw_hw_ns. Both give the same values (asserted) before timing.
Runs are interleaved; the best of --reps is reported, with the parquet read alone beside them
(the floor both share).

    python bench/bench_align.py [--minutes 10] [--reps 5] [--out /dev/shm/bench_align]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from align_peer import TOL, pair

import reel

FPS = 30.0
T = 33_333_333
FORCE = "observation.gripper_left_force"
SLAM = "observation.slam_trajectory"
IMU = "observation.imu"
DATA = "data/chunk-000/episode-000.parquet"


def write_task(root: Path, minutes: float) -> Path:
    task = root / "align_task"
    if task.exists():
        shutil.rmtree(task)
    rng = np.random.default_rng(29)
    rows = int(minutes * 60 * FPS)
    frame = np.arange(rows, dtype=np.int64)
    hw = 5_000_000_000_000 + frame * T
    dev0 = 7_000_000_000
    raw = dev0 + frame * T + rng.integers(-200_000, 200_000, rows)
    f_ns = hw - rng.integers(0, 20_000_000, rows)
    f_ns[frame % 10 == 3] = 0
    force = rng.normal(0, 100, (rows, 3)).astype(np.float32)
    keep = frame % 11 != 5
    slam_ns = [[int(h - 2_000_000)] if k else [] for h, k in zip(hw, keep)]
    slam_pts = [rng.normal(size=8).tolist() if k else [] for k in keep]
    imu_t = np.arange(dev0, dev0 + rows * T, 2_500_000, dtype=np.int64)
    imu_row = np.minimum((imu_t - dev0) // T, rows - 1)
    bounds = np.searchsorted(imu_row, np.arange(rows + 1))
    imu_vals = rng.normal(size=(len(imu_t), 6)).astype(np.float32)
    table = pa.table({
        "episode_index": pa.array(np.ones(rows, np.int64)),
        "frame_index": pa.array(frame),
        "timestamp": pa.array((frame / FPS).astype(np.float32)),
        "task_index": pa.array(np.zeros(rows, np.int64)),
        "wall_time": pa.array(1_790_000_000.0 + frame / FPS),
        "hardware_ns": pa.array(hw),
        "raw_hw_ns": pa.array(raw),
        "action": pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(rows, np.float32)), 1),
        "imu_ts_ns": pa.ListArray.from_arrays(pa.array(bounds.astype(np.int32)), pa.array(imu_t)),
        IMU: pa.ListArray.from_arrays(pa.array(bounds.astype(np.int32)),
                                      pa.FixedSizeListArray.from_arrays(pa.array(imu_vals.reshape(-1)), 6)),
        FORCE: pa.FixedSizeListArray.from_arrays(pa.array(force.reshape(-1)), 3),
        FORCE + "_ns": pa.array(f_ns),
        SLAM: pa.array([p for p in slam_pts], pa.list_(pa.float64())),
        SLAM + "_ns": pa.array(slam_ns, pa.list_(pa.int64())),
    })
    (task / "data/chunk-000").mkdir(parents=True)
    pq.write_table(table, str(task / DATA), compression="zstd")
    (task / "meta/episodes/chunk-000").mkdir(parents=True)
    row = {"episode_index": [1], "task_index": [0], "start_frame_index": [0], "end_frame_index": [rows - 1],
           "length": [rows], "created_at": [1_790_000_000.0], "duration_sec": [rows / FPS],
           "drop_stats": ["{}"], "video_codec": ["{}"], "calibration": ["{}"], "force_matrix_specs": ["{}"]}
    pq.write_table(pa.table(row), str(task / "meta/episodes/chunk-000/episode-000.parquet"))
    info = {"format": "pooled_episodes_v1", "chunks_size": 1000,
            "data_path": "data/chunk-{c:03d}/episode-{f:03d}.parquet",
            "video_path": "videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext}",
            "episodes_path": "meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet",
            "codebase_version": "v3.0", "app_version": "bench", "fps": FPS, "video": False,
            "task_name": "align", "features": {}, "cameras": {}, "video_extensions": {}, "devices": [],
            "device_names": {}, "sensors": [], "sensor_dim": 256, "created_at": 1_789_999_000.0,
            "calibration": {}, "total_episodes": 1}
    (task / "meta/info.json").write_text(json.dumps(info))
    (task / "meta/tasks.jsonl").write_text(json.dumps({"task_index": 0, "task": "align"}) + "\n")
    return task


# ---- The peer -------------------------------------------------------------------------------

def peer(task: Path) -> dict[str, np.ndarray]:
    t = pq.read_table(str(task / DATA), columns=["hardware_ns", "raw_hw_ns", "imu_ts_ns", IMU, FORCE,
                                                 FORCE + "_ns", SLAM, SLAM + "_ns"])
    hw = t["hardware_ns"].to_numpy()
    out = {}
    force = t[FORCE].combine_chunks().values.to_numpy().reshape(-1, 3)
    i = pair(hw, t[FORCE + "_ns"].to_numpy(), TOL)
    out[FORCE] = np.where(i[:, None] >= 0, force[i], np.nan)
    pts = t[SLAM].combine_chunks().values.to_numpy().reshape(-1, 8)
    i = pair(hw, t[SLAM + "_ns"].combine_chunks().values.to_numpy(), TOL)
    out[SLAM] = np.where(i[:, None] >= 0, pts[i], np.nan)
    raw = t["raw_hw_ns"].to_numpy()
    d = t["imu_ts_ns"].combine_chunks().values.to_numpy()
    vals = t[IMU].combine_chunks().values.values.to_numpy().reshape(-1, 6)
    pos = np.clip(np.searchsorted(raw, d), 1, len(raw) - 1)
    f = np.where(np.abs(d - raw[pos - 1]) <= np.abs(raw[pos] - d), pos - 1, pos)
    mapped = hw[f] + (d - raw[f])
    i = pair(hw, mapped, TOL)
    out[IMU] = np.where(i[:, None] >= 0, vals[i], np.nan)
    return out


def with_reel(task: reel.Task) -> dict[str, np.ndarray]:
    t = task.align(1, [FORCE, SLAM, IMU])
    out = {}
    for name in (FORCE, SLAM, IMU):
        col = t[name].combine_chunks()
        w = col.type.list_size
        v = col.values.to_numpy()[col.offset * w:(col.offset + len(col)) * w].reshape(-1, w).astype(np.float64)
        v[col.is_null().to_numpy(zero_copy_only=False)] = np.nan
        out[name] = v
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default="/dev/shm/bench_align")
    args = ap.parse_args()
    root = Path(args.out)
    root.mkdir(parents=True, exist_ok=True)
    task_dir = write_task(root, args.minutes)
    task = reel.open(str(task_dir))
    a, b = peer(task_dir), with_reel(task)
    for name in a:
        assert np.array_equal(a[name].astype(np.float32), b[name].astype(np.float32), equal_nan=True), name
    paired = {name: int((~np.isnan(a[name][:, 0])).sum()) for name in a}
    runs = {"reel Task.align": lambda: task.align(1, [FORCE, SLAM, IMU]), "peer (pyarrow + numpy)": lambda: peer(task_dir),
            "parquet read alone": lambda: pq.read_table(str(task_dir / DATA))}
    times = {k: [] for k in runs}
    for _ in range(args.reps):
        for k, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    best = {k: min(v) for k, v in times.items()}
    rows = int(args.minutes * 60 * FPS)
    print(f"== Task.align, a {args.minutes:g}-minute episode ({rows} rows; paired: {paired}), best of {args.reps}")
    for k, v in best.items():
        print(f"  {k:<24} {v * 1e3:8.1f} ms")
    print(f"  reel / peer speed-up: {best['peer (pyarrow + numpy)'] / best['reel Task.align']:.2f}x (goal >= 10x)")


if __name__ == "__main__":
    main()
