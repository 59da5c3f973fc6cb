"""The reference collector's episode writer, re-implemented for bench_recorder.py (our own code).

What the collector (`collector/core/egodata_writer.py` and `core/gripper_codec.py` in
Stouching-Robotics/DataFlowing, v1.3.x; shared/docs/reference-behaviour.md) does during and at the
end of a recording, video off: write_frame_row turns each frame's device values into a dict of
Python values and appends it to a list (gloves also go into numpy stats accumulators); the force
matrix arrives as the flat list of ints its pump thread encoded; end_episode builds each column
with pa.array, writes the data parquet with zstd, then the single-row episodes file (under
flock), info.json (read-merge-write, total_episodes from a data/ scan), stats.json (merged
accumulators) and tasks.jsonl, each as `.name.tmp` + os.replace, without fsync.
The collector code that could be read predates raw_hw_ns, the D435 forensic columns and
slam_trajectory_ns (v1.3.11); they are written like its other columns (EXTRA, suffix typing).
"""

from __future__ import annotations

import fcntl
import json
import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

TASK = "rig_bench"  # the task name (info.json task_name, tasks.jsonl)
EXTRA = {"raw_hw_ns": pa.int64(), "depth_ns": pa.int64(), "host_ns": pa.int64(), "rgb_dup": pa.int8(),
         "depth_dup": pa.int8(), "ts_src": pa.int8(), "rgb_gap": pa.int32(), "depth_gap": pa.int32()}
SENSOR_DIM, HAND_POSE_DIM, MATRIX_SHAPE = 256, 63, (250, 250, 3)


def chunk_file(n: int) -> tuple[int, int]:
    return divmod(max(n - 1, 0), 1000)


def atomic_write(path: str, write) -> None:
    """The reference's atomic write: `.name.tmp` beside the target, then os.replace; no fsync."""
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.tmp")
    write(tmp)
    os.replace(tmp, path)


def write_json(path: str, data: dict) -> None:
    def w(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False)
    atomic_write(path, w)


def encode_force_matrix(frame: np.ndarray, scale: int) -> list:
    """The collector's pump thread: quantise at the tier, int16 row diffs, a flat list of ints.
    (Scaled tiers only; the x1 tier truncates instead of rounding and is not used here.)"""
    flat = np.asarray(frame, dtype=np.float32).reshape(MATRIX_SHAPE[0], -1)
    q = np.clip(np.rint(flat * np.float32(scale)), -32767.0, 32767.0).astype(np.int16)
    d = np.empty_like(q)
    d[:, 0] = q[:, 0]
    d[:, 1:] = q[:, 1:] - q[:, :-1]  # int16 wraparound
    return d.reshape(-1).tolist()


class PeerWriter:
    """The reference collector's episode writer (EgoDataWriter, video off), re-implemented: rows are
    Python dicts buffered in a list; at the end the table is built column by column with pa.array,
    written with zstd, then the single-row episodes file, info.json, stats.json, tasks.jsonl."""

    def __init__(self, task_dir: str, fps: float, sensors: list[str], device_ids: list[str],
                 devices: list[dict], calibration: dict, matrix_scale: dict[str, int]):
        self.task_dir, self.fps, self.sensors, self.device_ids = task_dir, fps, sensors, device_ids
        self.devices, self.calibration, self.matrix_scale = devices, calibration, matrix_scale

    def start_episode(self, n: int) -> None:
        self.n, self.rows, self.max_frame = n, [], 0
        self.created_at = time.time()
        self.present_sensors, self.present_glove_imu, self.present_gripper = set(), set(), set()
        self.present_imu, self.present_extra, self.stats = False, set(), {}
        c, _ = chunk_file(n)
        for sub in (f"meta/episodes/chunk-{c:03d}", f"data/chunk-{c:03d}"):
            os.makedirs(os.path.join(self.task_dir, sub), exist_ok=True)

    def _acc(self, name: str, a: np.ndarray, count: int) -> None:  # numpy accumulators, float64
        st = self.stats.get(name)
        if st is None:
            d = a.shape[-1]
            st = self.stats[name] = {"sum": np.zeros(d), "sum_sq": np.zeros(d), "count": 0,
                                     "min": np.full(d, np.inf), "max": np.full(d, -np.inf)}
        a2 = a.reshape(-1, a.shape[-1])
        st["sum"] += a2.sum(axis=0)
        st["sum_sq"] += np.square(a2).sum(axis=0)
        st["min"] = np.minimum(st["min"], a2.min(axis=0))
        st["max"] = np.maximum(st["max"], a2.max(axis=0))
        st["count"] += count

    def write_frame_row(self, frame_index, timestamp_s, wall_time, hardware_ns, sensors, imu_samples,
                        glove_imu, gripper, extra, connection_status=None) -> None:
        row = {"episode_index": self.n, "frame_index": frame_index, "timestamp": np.float32(timestamp_s),
               "task_index": 0, "wall_time": float(wall_time), "hardware_ns": int(hardware_ns or 0),
               "action": [0.0]}
        for k, v in extra.items():  # raw_hw_ns, D435 forensic columns: a column once any row has one
            row[k] = int(v)
            self.present_extra.add(k)
        for sn in self.sensors:
            data = sensors.get(sn)
            if data is None:
                data = np.zeros(SENSOR_DIM, dtype=np.float32)
            else:
                data = data.astype(np.float32).ravel()[:SENSOR_DIM]
                self.present_sensors.add(sn)
            row[f"observation.{sn}"] = data.tolist()
            self._acc(sn, data.astype(np.float64), 1)  # per row, zero rows included
        if imu_samples:
            self.present_imu = True
            row["imu_ts_ns"] = [int(s[0]) for s in imu_samples]
            row["observation.imu"] = [[float(v) for v in s[1:7]] for s in imu_samples]
            self._acc("imu", np.asarray(row["observation.imu"], dtype=np.float64), len(imu_samples))
        for sn, (quats, valid) in glove_imu.items():
            row[f"observation.{sn}_imu_quat"] = [float(v) for v in np.asarray(quats, np.float32).ravel()[:64]]
            row[f"observation.{sn}_imu_valid"] = [float(v) for v in np.asarray(valid, np.float32).ravel()[:16]]
            self.present_glove_imu.add(sn)
        row["observation.left_hand_pose"] = [0.0] * HAND_POSE_DIM
        row["observation.right_hand_pose"] = [0.0] * HAND_POSE_DIM
        for key, value in gripper.items():  # typed by suffix; no key when no new sample
            if key.endswith("slam_trajectory_ns"):
                row[f"observation.{key}"] = [int(v) for v in value]
            elif key.endswith("_ns"):
                row[f"observation.{key}"] = int(value)
            elif key.endswith("_force_matrix") or key.endswith("slam_trajectory"):
                row[f"observation.{key}"] = value
            elif key.endswith("_state") or key.endswith("_force"):
                row[f"observation.{key}"] = [float(v) for v in value[:3]]
            else:
                continue
            self.present_gripper.add(key)
        cs = connection_status or {}
        for did in self.device_ids:
            row[f"status.{did}"] = cs.get(did, "connected")
        self.rows.append(row)
        self.max_frame = max(self.max_frame, frame_index + 1)

    def end_episode(self) -> None:
        self._write_data()
        self._write_episode_row()
        self._write_info()
        self._merge_stats()
        tasks = os.path.join(self.task_dir, "meta", "tasks.jsonl")
        if not os.path.isfile(tasks):
            with open(tasks, "w", encoding="utf-8") as f:
                f.write(json.dumps({"task_index": 0, "task": TASK}, ensure_ascii=False) + "\n")
        marker = os.path.join(self.task_dir, "meta", "recycled_episode.json")
        if os.path.exists(marker):
            os.remove(marker)

    def _write_data(self) -> None:
        rows, f32 = self.rows, pa.float32()
        col = lambda name, typ, default: pa.array([r.get(name, default) for r in rows], typ)  # noqa: E731
        cols = {"episode_index": col("episode_index", pa.int64(), 0), "frame_index": col("frame_index", pa.int64(), 0),
                "timestamp": col("timestamp", f32, 0), "task_index": col("task_index", pa.int64(), 0),
                "wall_time": col("wall_time", pa.float64(), 0), "hardware_ns": col("hardware_ns", pa.int64(), 0),
                "action": col("action", pa.list_(f32, 1), [0.0])}
        for k in sorted(self.present_extra):
            cols[k] = col(k, EXTRA[k], 0)
        for sn in sorted(self.present_sensors):
            cols[f"observation.{sn}"] = col(f"observation.{sn}", pa.list_(f32, SENSOR_DIM), [0.0] * SENSOR_DIM)
        if self.present_imu:
            cols["imu_ts_ns"] = col("imu_ts_ns", pa.list_(pa.int64()), [])
            cols["observation.imu"] = col("observation.imu", pa.list_(pa.list_(f32, 6)), [])
        for sn in sorted(self.present_glove_imu):
            cols[f"observation.{sn}_imu_quat"] = col(f"observation.{sn}_imu_quat", pa.list_(f32, 64), [0.0] * 64)
            cols[f"observation.{sn}_imu_valid"] = col(f"observation.{sn}_imu_valid", pa.list_(f32, 16), [0.0] * 16)
        for key in sorted(self.present_gripper):
            name = f"observation.{key}"
            if key.endswith("slam_trajectory_ns"):
                cols[name] = col(name, pa.list_(pa.int64()), [])
            elif key.endswith("_ns"):
                cols[name] = col(name, pa.int64(), 0)
            elif key.endswith("_force_matrix"):
                cols[name] = col(name, pa.list_(pa.int16()), [])
            elif key.endswith("slam_trajectory"):
                cols[name] = col(name, pa.list_(pa.float64()), [])
            else:
                cols[name] = col(name, pa.list_(f32, 3), [0.0] * 3)
        for side in ("left", "right"):
            cols[f"observation.{side}_hand_pose"] = col(f"observation.{side}_hand_pose", pa.list_(f32, HAND_POSE_DIM), None)
        for did in self.device_ids:
            cols[f"status.{did}"] = col(f"status.{did}", pa.string(), "connected")
        self.rows = []
        c, f = chunk_file(self.n)
        table = pa.table(cols)
        atomic_write(os.path.join(self.task_dir, f"data/chunk-{c:03d}/episode-{f:03d}.parquet"),
                     lambda tmp: pq.write_table(table, tmp, compression="zstd"))

    def _matrix_features(self) -> dict:
        return {f"observation.{k}": {"dtype": "int16", "shape": list(MATRIX_SHAPE), "encoding": "row_diff_quantized",
                                     "scale": self.matrix_scale.get(k, 1)}
                for k in sorted(self.present_gripper) if k.endswith("_force_matrix")}

    def _write_episode_row(self) -> None:
        c, f = chunk_file(self.n)
        row = {"episode_index": self.n, "task_index": 0, "start_frame_index": 0,
               "end_frame_index": max(0, self.max_frame - 1), "length": self.max_frame,
               "created_at": float(self.created_at), "duration_sec": self.max_frame / max(self.fps, 1.0),
               "drop_stats": "{}", "video_codec": "{}",  # video off: no encoder chosen
               "calibration": json.dumps(self.calibration, ensure_ascii=False),
               "force_matrix_specs": json.dumps(self._matrix_features(), ensure_ascii=False)}
        types = [pa.int64()] * 5 + [pa.float64()] * 2 + [pa.string()] * 4
        table = pa.table({k: pa.array([v], t) for (k, v), t in zip(row.items(), types)})
        with open(os.path.join(self.task_dir, "meta", "episodes", ".lock"), "a+") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # guards the row write + legacy shard check
            atomic_write(os.path.join(self.task_dir, f"meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet"),
                         lambda tmp: pq.write_table(table, tmp, compression="zstd"))
            os.path.isfile(os.path.join(self.task_dir, f"meta/episodes/chunk-{c:03d}/file-{c:03d}.parquet"))

    def _write_info(self) -> None:
        features = {f"observation.{sn}": {"dtype": "float32", "shape": [16, 16]} for sn in sorted(self.present_sensors)}
        if self.present_imu:
            features["observation.imu"] = {"dtype": "float32", "shape": [6]}
        for sn in sorted(self.present_glove_imu):
            features[f"observation.{sn}_imu_quat"] = {"dtype": "float32", "shape": [16, 4]}
            features[f"observation.{sn}_imu_valid"] = {"dtype": "float32", "shape": [16]}
        matrices = self._matrix_features()
        for key in sorted(self.present_gripper):
            name = f"observation.{key}"
            if key.endswith("slam_trajectory_ns"):
                features[name] = {"dtype": "int64", "shape": [1], "encoding": "flat_parallel_to_slam_trajectory",
                                  "clock": "host_monotonic_ns"}
            elif key.endswith("_ns"):
                features[name] = {"dtype": "int64", "shape": [1], "encoding": "host_monotonic_ns"}
            elif key.endswith("_force_matrix"):
                features[name] = matrices[name]
            elif key.endswith("slam_trajectory"):
                features[name] = {"dtype": "float64", "shape": [8], "encoding": "flat_points_8_txyz_qxyzw"}
            else:
                features[name] = {"dtype": "float32", "shape": [3]}
        for side in ("left", "right"):
            features[f"observation.{side}_hand_pose"] = {"dtype": "float32", "shape": [21, 3]}
        features["action"] = {"dtype": "float32", "shape": [1]}
        path = os.path.join(self.task_dir, "meta", "info.json")
        base = json.load(open(path, encoding="utf-8")) if os.path.isfile(path) else {}
        data_root = os.path.join(self.task_dir, "data")  # total_episodes: the reference rescans data/
        total = sum(1 for cd in os.scandir(data_root) for fe in os.scandir(cd.path) if fe.name.startswith("episode-"))
        info = dict(base)
        info.update({
            "format": "pooled_episodes_v1", "chunks_size": 1000,
            "data_path": "data/chunk-{c:03d}/episode-{f:03d}.parquet",
            "video_path": "videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext}",
            "episodes_path": "meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet",
            "codebase_version": "v3.0", "app_version": "peer", "fps": self.fps, "video": False, "task_name": TASK,
            "features": {**(base.get("features") or {}), **features}, "cameras": dict(base.get("cameras") or {}),
            "devices": [{k: d.get(k) for k in ("key", "kind", "name", "slots")} for d in self.devices],
            "device_names": {s: d["name"] for d in self.devices if d.get("name") for s in d.get("slots") or []},
            "sensors": sorted(self.present_sensors), "sensor_dim": SENSOR_DIM, "created_at": time.time(),
            "calibration": self.calibration, "total_episodes": total,
            "video_extensions": dict(base.get("video_extensions") or {})})
        write_json(path, info)

    def _merge_stats(self) -> None:
        path = os.path.join(self.task_dir, "meta", "stats.json")
        old = json.load(open(path, encoding="utf-8")) if os.path.isfile(path) else {}
        out = dict(old)
        for name, key in [(f"observation.{sn}", sn) for sn in sorted(self.present_sensors)] + \
                [("observation.imu", "imu")] * self.present_imu:
            st, prev = self.stats[key], old.get(name)
            n, s, sq, lo, hi = st["count"], st["sum"], st["sum_sq"], st["min"], st["max"]
            if prev and prev.get("count"):
                pm, ps, pn = np.asarray(prev["mean"]), np.asarray(prev["std"]), prev["count"]
                s, sq, n = s + pm * pn, sq + (ps ** 2 + pm ** 2) * pn, n + pn
                lo, hi = np.minimum(lo, prev["min"]), np.maximum(hi, prev["max"])
            mean = s / n
            out[name] = {"count": int(n), "mean": mean.tolist(), "std": np.sqrt(np.maximum(sq / n - mean ** 2, 0)).tolist(),
                         "min": lo.tolist(), "max": hi.tolist()}
        out["action"] = {"count": 0, "mean": [0.0], "std": [1.0], "min": [0.0], "max": [0.0]}
        write_json(path, out)
