"""The v1.0 task fixture (one folder per session), written from shared/docs/v1.0-layout.md
independently of reel: the input of `reel migrate` in test_migrate.py and the tests that
migrate on the way (test_contract_writer.py, test_cli_python_json.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .fixtures import video_bytes

TASK = "pick"
FPS = 30
# (folder suffix, frames, stereo); suffixes 1, 2, 5 become N = 1, 2, 3
# (contract-decisions.md "v1.0 -> pooled migration: numbering").
SESSIONS = ((1, 6, True), (2, 5, False), (5, 4, True))
GLOVES = ("left_glove", "right_glove")


def fixed(values, width):
    return pa.array([list(map(float, v)) for v in values], pa.list_(pa.float32(), width))


def glove_table(idx: int, frames: int, sensor: str, rng) -> pa.Table:
    """One glove's parquet. The right glove repeats frame 1 (the first row wins); the left
    glove misses frame 2 (zeros and "connected" there)."""
    fis = list(range(frames))
    if sensor == "right_glove":
        fis = fis[:2] + [1] + fis[2:]
    else:
        fis = [f for f in fis if f != 2]
    n = len(fis)
    return pa.table({
        "episode_index": pa.array([idx] * n, pa.int64()),
        "frame_index": pa.array(fis, pa.int64()),
        "timestamp": pa.array([f / FPS for f in fis], pa.float32()),
        "task_index": pa.array([0] * n, pa.int64()),
        f"observation.{sensor}": fixed(rng.random((n, 256)), 256),
        "observation.left_hand_pose": fixed(np.zeros((n, 63)), 63),
        "observation.right_hand_pose": fixed(rng.random((n, 63)) if sensor == "right_glove" else np.zeros((n, 63)), 63),
        "action": fixed(np.zeros((n, 1)), 1),
        f"status.ble_glove:{sensor[0].upper()}1": pa.array(
            ["connected" if k % 3 else "disconnected" for k in range(n)], pa.string()),
    })


def imu_table(idx: int, frames: int, rng) -> pa.Table:
    counts = [1 + (f % 3) for f in range(frames)]
    return pa.table({
        "episode_index": pa.array([idx] * frames, pa.int64()),
        "frame_index": pa.array(range(frames), pa.int64()),
        "timestamp": pa.array([f / FPS for f in range(frames)], pa.float32()),
        "task_index": pa.array([0] * frames, pa.int64()),
        "hardware_ns": pa.array([10**9 * f for f in range(frames)], pa.int64()),
        "imu_ts_ns": pa.array([[10**9 * f + 1000 * k for k in range(c)] for f, c in enumerate(counts)],
                              pa.list_(pa.int64())),
        "observation.imu": pa.array([[list(map(float, rng.random(6))) for _ in range(c)] for c in counts],
                                    pa.list_(pa.list_(pa.float32(), 6))),
    })


def make_v1_task(root: Path) -> Path:
    task = root / TASK
    rng = np.random.default_rng(7)
    for k, (idx, frames, stereo) in enumerate(SESSIONS):
        s = task / f"{TASK}_{idx:06d}"
        created = 1_700_000_000.0 + 100.0 * k
        cameras = {"head_left": {"height": 24, "width": 32},
                   "head_depth": {"height": 24, "width": 32, "type": "depth", "unit": "mm", "format": "png16"}}
        if stereo:
            cameras["head_right"] = {"height": 24, "width": 32, "fps": 15}
        meta = {
            "format": "egodata", "format_version": "1.0", "episode_index": idx, "fps": FPS, "task_name": TASK,
            "cameras": cameras,
            "devices": [{"key": "s80m:AB12", "kind": "s80m", "name": f"Head {k}", "slots": list(cameras),
                         "serial": "AB12", "resolution": [32, 24], "fps": FPS, "calibration": {}},
                        {"key": "ble_glove:R1", "kind": "ble_glove", "name": "Right glove", "slots": [],
                         "sensor_column": "observation.right_glove"}],
            "sensors": list(GLOVES), "sensor_dim": 256, "created_at": created, "codebase_version": f"1.0.1{k}",
            "video_codec": {"encoder": "libx264", "codec": "h264", "crf": 23, "ffmpeg": "/usr/bin/ffmpeg",
                            "selected_by": "probe", "probe": {"libx264": True}},
            "drop_stats": {"queue": k, "imu_overflow": 0},
        }
        entries = []
        for f in range(frames):
            e = {"frame_index": f, "timestamp": f / FPS, "wall_time": created + f / FPS}
            if stereo:
                e["hardware_ns"] = 10**9 * f + 7
            entries.append(e)
            if stereo:  # the right eye's entry: never the one kept
                entries.append({"frame_index": f, "timestamp": f / FPS + 0.001, "wall_time": created + f / FPS + 0.001,
                                "hardware_ns": 10**9 * f + 9})
        write_json(s / "metadata.json", meta)
        write_json(s / "timestamps.json", {"timestamps": entries, "total_frames": frames})
        for sensor in GLOVES:
            write_parquet(s / "data" / sensor / "chunk-0000" / "chunk_000000.parquet", glove_table(idx, frames, sensor, rng))
        if stereo:
            write_parquet(s / "data" / "imu" / "chunk-0000" / "chunk_000000.parquet", imu_table(idx, frames, rng))
        write_bytes(s / "videos" / "head_left" / "chunk-0000" / "head_left.mp4", video_bytes("mp4", False, frames))
        if stereo:
            # A 15 fps camera in a 30 fps session: the collector wrote a frame at every other
            # tick, from the first (multi-device §4.2 cameras[slot].fps).
            write_bytes(s / "videos" / "head_right" / "chunk-0000" / "head_right.mp4",
                   video_bytes("mp4", False, (frames + 1) // 2))
            write_bytes(s / "videos" / "head_left" / "chunk-0000" / "head_left_aux.mp4", video_bytes("mp4", False, frames))
        write_bytes(s / "depth" / "head_depth" / "head_depth.mkv", video_bytes("mkv", True, frames))
        write_bytes(s / "depth" / "head_depth" / "head_depth.mp4", video_bytes("mp4", False, frames))  # heat-map preview
        write_json(s / "calibration" / "head_stereo.json", {"baseline_m": 0.06 + k, "K": [[1, 0, 16], [0, 1, 12], [0, 0, 1]]})
        if k == 0:
            write_json(s / "calibration" / "wrist_calibration.json", {"R": [1, 0, 0]})
        write_json(s / "meta" / "info.json", {"codebase_version": "v3.0", "fps": FPS, "total_episodes": 1})
        write_bytes(s / "meta" / "tasks.jsonl", json.dumps({"task_index": 0, "task": TASK}).encode() + b"\n")
        write_parquet(s / "meta" / "episodes" / "chunk-000" / "file-000.parquet", pa.table(
            {c: pa.array([v], pa.int64()) for c, v in
             {"episode_index": idx, "task_index": 0, "start_frame_index": 0, "end_frame_index": frames - 1,
              "length": frames}.items()}))
    return task


def write_bytes(path: Path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def write_json(path: Path, obj):
    write_bytes(path, json.dumps(obj, indent=2).encode())


def write_parquet(path: Path, table: pa.Table):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)



def pooled_rel(n: int, kind: str, slot: str = "", ext: str = "") -> str:
    c, f = (n - 1) // 1000, (n - 1) % 1000
    return {"data": f"data/chunk-{c:03d}/episode-{f:03d}.parquet",
            "row": f"meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet",
            "video": f"videos/chunk-{c:03d}/{slot}/episode-{f:03d}.{ext}"}[kind]
