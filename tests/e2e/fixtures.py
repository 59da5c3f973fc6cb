"""Builders for pooled_episodes_v1 task directories, written from the file contract.

Everything here uses pyarrow, json, numpy and the ffmpeg CLI (for the video files) only;
nothing imports or runs reel, so the files these builders write are an independent
statement of what the contract says a task looks like (docs: shared/seeds/000_* §1-§12, shared/seeds/002_* Appendix B/C,
shared/docs/reference-behaviour.md, shared/docs/contract-decisions.md).

Main entry point::

    task = write_task(tmp_path, "pick_cube", [EpisodeSpec(1), EpisodeSpec(2, imu=[0, 1, 3])])
    task.path                 # pathlib.Path of the task directory
    task.episodes[2].table    # the pyarrow data table written for N=2
    task.episodes[2].row      # the episodes-row values (python objects) written for N=2
    task.info, task.stats     # the dicts written to meta/info.json and meta/stats.json

Numbering (contract §2): N -> chunk = (N-1)//1000, file = (N-1)%1000; the episode_index
column holds N.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CHUNKS_SIZE = 1000
FORMAT = "pooled_episodes_v1"
DATA_PATH = "data/chunk-{c:03d}/episode-{f:03d}.parquet"
VIDEO_PATH = "videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext}"
EPISODES_PATH = "meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet"

FM_SHAPE = (250, 250, 3)
FM_FLAT = 250 * 750  # 187500
GLOVE_DIM = 256
IMU_DIM = 6
HAND_POSE_DIM = 63

# Force-matrix storage tiers (reference-behaviour.md "Force matrix codec").
# tier -> (column dtype, encoding, scale)
FM_TIERS: dict[str, tuple[str, str, int]] = {
    "int16": ("int16", "row_diff_quantized", 1),
    "int16x10": ("int16", "row_diff_quantized", 10),
    "int16x100": ("int16", "row_diff_quantized", 100),
    "int16x1000": ("int16", "row_diff_quantized", 1000),
    "float32": ("float32", "row_flat_raw", 1),
}

# The 11 episodes-row columns, in contract order (§6.2), with their Arrow types.
EPISODE_ROW_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("episode_index", pa.int64()),
    ("task_index", pa.int64()),
    ("start_frame_index", pa.int64()),
    ("end_frame_index", pa.int64()),
    ("length", pa.int64()),
    ("created_at", pa.float64()),
    ("duration_sec", pa.float64()),
    ("drop_stats", pa.string()),
    ("video_codec", pa.string()),
    ("calibration", pa.string()),
    ("force_matrix_specs", pa.string()),
]
JSON_ROW_COLUMNS = ("drop_stats", "video_codec", "calibration", "force_matrix_specs", "slam_specs")

DEPTH_SLOT_RE = re.compile(r"_depth(_\d+)?$")

DEFAULT_CALIBRATION = {
    "type": "stereo_rgbd_camera",
    "name": "head_stereo",
    "resolution": [640, 480],
    "fps": 30.0,
    "baseline": 0.05,
    "left_camera": {"intrinsic": [600.0, 600.0, 320.0, 240.0], "distortion": [0.0, 0.0, 0.0, 0.0, 0.0]},
    "right_camera": {"intrinsic": [600.0, 600.0, 320.0, 240.0], "distortion": [0.0, 0.0, 0.0, 0.0, 0.0]},
    "depth_scale": 0.001,
    "cam_imu_timeshift": 0.0,
}

SLAM_FRAME = "down_left_forward"
SLAM_FRAME_AXES = {"+X": "down", "+Y": "left", "+Z": "forward"}

# Video files are real and tiny (made by the ffmpeg CLI): one frame per data row, because
# `reel check` opens every video and counts its frames (video.unreadable, video.frame_count).
VIDEO_SIZE = (32, 24)  # width, height
_VIDEO_CACHE: dict = {}


def video_bytes(ext: str, depth: bool, frames: int) -> bytes:
    """A video of `frames` frames: RGB H.264 yuv420p (.mp4 or .mkv); depth as FFV1 gray16le
    millimetres (.mkv) or 12-bit gray HEVC log codes (.mp4). Cached per (ext, depth, frames)."""
    key = (ext, depth, frames)
    if key not in _VIDEO_CACHE:
        _VIDEO_CACHE[key] = _make_video(ext, depth, frames)
    return _VIDEO_CACHE[key]


def _make_video(ext: str, depth: bool, frames: int) -> bytes:
    w, h = VIDEO_SIZE
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / f"video.{ext}"
        cmd = ["ffmpeg", "-nostdin", "-v", "error", "-y"]
        if depth:
            mm = (500 + 10 * np.arange(frames * h * w)).reshape(frames, h, w) % 4000 + 200
            raw = Path(d) / "depth.raw"
            if ext == "mp4":  # 12-bit log code (reference-behaviour.md "Depth")
                codes = np.rint((np.log(mm) - np.log(100.0)) * (4095 / np.log(50.0)))
                raw.write_bytes(np.clip(codes, 0, 4095).astype("<u2").tobytes())
                cmd += ["-f", "rawvideo", "-pix_fmt", "gray12le", "-s", f"{w}x{h}", "-r", "30", "-i", str(raw),
                        "-c:v", "libx265", "-pix_fmt", "gray12le", "-x265-params", "qp=6:range=full:log-level=error",
                        "-tag:v", "hvc1"]
            else:
                raw.write_bytes(mm.astype("<u2").tobytes())
                cmd += ["-f", "rawvideo", "-pix_fmt", "gray16le", "-s", f"{w}x{h}", "-r", "30", "-i", str(raw),
                        "-c:v", "ffv1", "-pix_fmt", "gray16le"]
        else:
            cmd += ["-f", "lavfi", "-i", f"testsrc2=size={w}x{h}:rate=30", "-frames:v", str(frames),
                    "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "2"]
        subprocess.run(cmd + [str(out)], check=True, capture_output=True)
        return out.read_bytes()


# --------------------------------------------------------------------------- numbering


def chunk_file(n: int) -> tuple[int, int]:
    """Contract §2: N (1-based) -> (chunk, file)."""
    return (n - 1) // CHUNKS_SIZE, (n - 1) % CHUNKS_SIZE


def data_rel(n: int) -> str:
    c, f = chunk_file(n)
    return DATA_PATH.format(c=c, f=f)


def row_rel(n: int) -> str:
    c, f = chunk_file(n)
    return EPISODES_PATH.format(c=c, f=f)


def shard_rel(chunk: int) -> str:
    """Legacy v1.1.0 shard: one file per chunk, named by the chunk number."""
    return f"meta/episodes/chunk-{chunk:03d}/file-{chunk:03d}.parquet"


def video_rel(n: int, slot: str, ext: str) -> str:
    c, f = chunk_file(n)
    return VIDEO_PATH.format(c=c, f=f, image_key=slot, ext=ext)


def is_depth_slot(slot: str) -> bool:
    return bool(DEPTH_SLOT_RE.search(slot))


# --------------------------------------------------------------------------- force matrix codec


def fm_quantize(frame: np.ndarray, tier: str) -> np.ndarray:
    """int16 tiers: the (250, 750) quantized matrix q (before row differencing)."""
    dtype, _, scale = FM_TIERS[tier]
    assert dtype == "int16", tier
    flat = np.asarray(frame, dtype=np.float32).reshape(250, 750)
    scaled = flat * np.float32(scale)
    if scale == 1:
        scaled = np.trunc(scaled)  # the x1 tier truncates toward zero
    else:
        scaled = np.rint(scaled)  # round half to even
    return np.clip(scaled, -32767, 32767).astype(np.int16)


def fm_encode(frame: np.ndarray, tier: str) -> np.ndarray:
    """Encode one (250,250,3) frame into its 187500-value stored form."""
    dtype, _, _ = FM_TIERS[tier]
    if dtype == "float32":
        return np.asarray(frame, dtype=np.float32).reshape(-1).copy()
    q = fm_quantize(frame, tier)
    d = np.empty_like(q)
    d[:, 0] = q[:, 0]
    with np.errstate(over="ignore"):
        d[:, 1:] = q[:, 1:] - q[:, :-1]  # int16 arithmetic wraps around
    return d.reshape(-1)


def fm_expected(frame: np.ndarray, tier: str) -> np.ndarray:
    """What a correct decoder returns for `frame` stored at `tier` (float32, (250,250,3))."""
    dtype, _, scale = FM_TIERS[tier]
    if dtype == "float32":
        return np.asarray(frame, dtype=np.float32).reshape(FM_SHAPE).copy()
    q = fm_quantize(frame, tier)
    return (q.astype(np.float32) / np.float32(scale)).reshape(FM_SHAPE)


def fm_spec(tier: str, scale: Any = "tier") -> dict:
    """The feature / force_matrix_specs description of a tier."""
    dtype, encoding, tier_scale = FM_TIERS[tier]
    spec = {"dtype": dtype, "shape": list(FM_SHAPE), "encoding": encoding}
    if scale is not None:
        spec["scale"] = tier_scale if scale == "tier" else scale
    return spec


def make_force_frame(seed: int) -> np.ndarray:
    """A deterministic (250,250,3) float32 frame in mN with the codec's edge cases in it:
    negatives (truncation vs rounding), exact halves (round half to even), values past the
    int16 range (clipping) next to each other (row-difference wraparound)."""
    rng = np.random.default_rng(seed)
    frame = rng.normal(0.0, 40.0, size=FM_SHAPE).astype(np.float32)
    frame[:, :, 2] = np.abs(frame[:, :, 2]) + np.float32(1.0)
    # clipping + int16 wraparound of the row difference: q jumps from +32767 to -32767
    frame[0, 0, 0] = np.float32(40000.0)
    frame[0, 0, 1] = np.float32(-40000.0)
    frame[0, 0, 2] = np.float32(4000.0)
    # exact binary halves after scaling by 1/10/100/1000
    frame[1, 0:8, 2] = np.array([0.25, 0.75, 1.25, -0.25, 0.125, 0.375, 0.0625, 2.5], dtype=np.float32)
    frame[2, 0:4, 0] = np.array([-2.7, -0.5, 0.5, 2.7], dtype=np.float32)
    return frame


@dataclass
class ForceMatrixSpec:
    """One force-matrix column of one episode.

    frames: one entry per data row; None = no sample on that row (stored as []), else a
    (250,250,3) float32 frame. A raw np.ndarray of any length can be given through `raw`
    to write a malformed row (index -> 1-D array stored as-is).
    row_spec: True = write this tier into the episodes row force_matrix_specs; a dict =
    write that dict instead; False = leave the column out of force_matrix_specs.
    column_type: override the Arrow element type (e.g. write float32 for an int16 tier).
    """

    tier: str
    frames: list = field(default_factory=list)
    row_spec: Any = True
    raw: dict = field(default_factory=dict)
    column_type: pa.DataType | None = None

    def stored(self, length: int) -> list:
        out = []
        for i in range(length):
            if i in self.raw:
                out.append(np.asarray(self.raw[i]).tolist())
                continue
            fr = self.frames[i] if i < len(self.frames) else None
            out.append([] if fr is None else fm_encode(fr, self.tier))
        return out

    def arrow_type(self) -> pa.DataType:
        if self.column_type is not None:
            return self.column_type
        dtype = FM_TIERS[self.tier][0]
        return pa.list_(pa.int16() if dtype == "int16" else pa.float32())


# --------------------------------------------------------------------------- episodes


@dataclass
class EpisodeSpec:
    """What one episode N holds.

    length: data rows (frames). videos: image_key -> extension written on disk.
    gloves: sensor names, each an `observation.<sensor>` fixed_size_list<float32>[256]
    column; rows listed in zero_glove_rows are all zeros (they still count in stats).
    imu: samples per row (len == length) -> imu_ts_ns list<int64> + observation.imu
    list<fixed_size_list<float32>[6]>; None = no IMU columns.
    force: column name -> ForceMatrixSpec. slam: trajectory column -> points per row
    (writes the column and its `_ns` twin).
    data / row: write the data parquet / where the episodes row goes ("file" = per-episode
    file, "shard" = the chunk's legacy file-CCC.parquet, "none" = nowhere).
    row_overrides: column -> value, or (value, pa type); row_drop: columns left out;
    row_extra: extra row columns (e.g. {"slam_specs": {...}}; dicts are JSON-encoded).
    extra_columns: data column name -> pa.Array (replaces a column of that name in place,
    else appended); drop_columns: data columns left out.
    """

    n: int
    length: int = 3
    created_at: float | None = None
    videos: dict = field(default_factory=lambda: {"d435_rgb": "mp4", "d435_depth": "mkv"})
    gloves: tuple = ("left_glove",)
    zero_glove_rows: tuple = (1,)
    imu: list | None = None
    hand_pose: bool = True
    force: dict = field(default_factory=dict)
    slam: dict = field(default_factory=dict)
    status: dict = field(default_factory=dict)
    data: bool = True
    row: str = "file"
    row_overrides: dict = field(default_factory=dict)
    row_drop: tuple = ()
    row_extra: dict = field(default_factory=dict)
    extra_columns: dict = field(default_factory=dict)
    drop_columns: tuple = ()
    calibration: dict | None = None
    seed: int | None = None

    def __post_init__(self):
        if self.created_at is None:
            self.created_at = 1_790_000_000.0 + 60.0 * self.n
        if self.imu is not None:
            assert len(self.imu) == self.length, "imu needs one sample count per row"


@dataclass
class BuiltEpisode:
    spec: EpisodeSpec
    table: pa.Table | None
    row: dict | None  # python values as written (JSON columns as the *decoded* objects)
    row_columns: list  # episodes-row column names as written
    data_rel: str
    row_rel: str | None
    videos: dict  # image_key -> relative path written

    @property
    def n(self) -> int:
        return self.spec.n

    @property
    def chunk(self) -> int:
        return chunk_file(self.spec.n)[0]

    @property
    def file(self) -> int:
        return chunk_file(self.spec.n)[1]


@dataclass
class TaskFixture:
    path: Path
    task_name: str
    info: Any
    stats: Any
    episodes: dict  # N -> BuiltEpisode
    fps: float

    def ep(self, n: int) -> BuiltEpisode:
        return self.episodes[n]

    @property
    def numbers(self) -> list:
        return sorted(self.episodes)

    def file(self, rel: str) -> Path:
        return self.path / rel


def _glove_rows(rng: np.random.Generator, length: int, zero_rows: tuple) -> np.ndarray:
    vals = rng.uniform(0.0, 60.0, size=(length, GLOVE_DIM)).astype(np.float32)
    for r in zero_rows:
        if 0 <= r < length:
            vals[r] = 0.0
    return vals


def _imu_rows(rng: np.random.Generator, counts: list, base_ns: int) -> tuple[list, list]:
    ts, samples = [], []
    t = base_ns
    for c in counts:
        row_ts, row_s = [], []
        for _ in range(c):
            t += 2_500_000
            row_ts.append(t)
            row_s.append(rng.normal(0.0, 1.0, size=IMU_DIM).astype(np.float32).tolist())
        ts.append(row_ts)
        samples.append(row_s)
    return ts, samples


def _slam_rows(rng: np.random.Generator, counts: list, base_ns: int) -> tuple[list, list]:
    pts, ns = [], []
    t_ns = base_ns
    for c in counts:
        row_p, row_n = [], []
        for _ in range(c):
            t_ns += 10_000_000
            pose = rng.normal(0.0, 1.0, size=8)
            pose[0] = t_ns / 1e9
            row_p.extend(float(v) for v in pose)
            row_n.append(t_ns)
        pts.append(row_p)
        ns.append(row_n)
    return pts, ns


def build_data_table(spec: EpisodeSpec, fps: float) -> pa.Table:
    """The data parquet table of one episode (contract §7, Appendix C types)."""
    rng = np.random.default_rng(spec.seed if spec.seed is not None else 1000 + spec.n)
    L = spec.length
    frame = np.arange(L, dtype=np.int64)
    cols: dict[str, pa.Array] = {}
    cols["episode_index"] = pa.array(np.full(L, spec.n, dtype=np.int64), pa.int64())
    cols["frame_index"] = pa.array(frame, pa.int64())
    cols["timestamp"] = pa.array((frame / fps).astype(np.float32), pa.float32())
    cols["task_index"] = pa.array(np.zeros(L, dtype=np.int64), pa.int64())
    cols["wall_time"] = pa.array(spec.created_at + frame / fps, pa.float64())
    base_ns = 5_000_000_000 + spec.n * 100_000_000_000
    cols["hardware_ns"] = pa.array(base_ns + frame * 33_333_333, pa.int64())
    cols["action"] = pa.array([[0.0]] * L, pa.list_(pa.float32(), 1))
    if spec.imu is not None:
        ts, samples = _imu_rows(rng, spec.imu, base_ns)
        cols["imu_ts_ns"] = pa.array(ts, pa.list_(pa.int64()))
        cols["observation.imu"] = pa.array(samples, pa.list_(pa.list_(pa.float32(), IMU_DIM)))
    for sensor in spec.gloves:
        vals = _glove_rows(rng, L, spec.zero_glove_rows)
        cols[f"observation.{sensor}"] = pa.FixedSizeListArray.from_arrays(
            pa.array(vals.reshape(-1), pa.float32()), GLOVE_DIM
        )
    if spec.hand_pose:
        for side in ("left", "right"):
            cols[f"observation.{side}_hand_pose"] = pa.FixedSizeListArray.from_arrays(
                pa.array(np.zeros(L * HAND_POSE_DIM, dtype=np.float32), pa.float32()), HAND_POSE_DIM
            )
    for name, fm in spec.force.items():
        cols[name] = pa.array(fm.stored(L), fm.arrow_type())
    for name, counts in spec.slam.items():
        pts, ns = _slam_rows(rng, counts, base_ns)
        cols[name] = pa.array(pts, pa.list_(pa.float64()))
        cols[name + "_ns"] = pa.array(ns, pa.list_(pa.int64()))
    for sid, value in spec.status.items():
        cols[f"status.{sid}"] = pa.array([value] * L, pa.string())
    for name, arr in spec.extra_columns.items():
        cols[name] = arr  # replaces in place (dict keeps order) or appends
    for name in spec.drop_columns:
        cols.pop(name, None)
    return pa.table(cols)


def _row_values(spec: EpisodeSpec, fps: float) -> tuple[dict, dict]:
    """(decoded values, Arrow column types) for the episodes row of `spec`."""
    fm_specs = {}
    for name, fm in spec.force.items():
        if fm.row_spec is True:
            fm_specs[name] = fm_spec(fm.tier)
        elif isinstance(fm.row_spec, dict):
            fm_specs[name] = fm.row_spec
    video_codec = {
        "encoder": "libx264",
        "codec": "h264",
        "crf": 23,
        "ffmpeg": "/usr/bin/ffmpeg",
        "selected_by": "probe",
        "probe": {"libx264": True},
    }
    depth = {s: {"codec": "FFV1 gray16le", "format": "uint16 mm"} for s, e in spec.videos.items() if is_depth_slot(s)}
    if depth:
        video_codec["depth"] = depth
    values = {
        "episode_index": spec.n,
        "task_index": 0,
        "start_frame_index": 0,
        "end_frame_index": spec.length - 1,
        "length": spec.length,
        "created_at": float(spec.created_at),
        "duration_sec": spec.length / fps,
        "drop_stats": {"imu_overflow": 0},
        "video_codec": video_codec,
        "calibration": {"head_stereo": spec.calibration or DEFAULT_CALIBRATION},
        "force_matrix_specs": fm_specs,
    }
    types = dict(EPISODE_ROW_COLUMNS)
    for name, value in spec.row_extra.items():
        values[name] = value
        types.setdefault(name, pa.string())
    for name, value in spec.row_overrides.items():
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], pa.DataType):
            values[name], types[name] = value
        else:
            values[name] = value
    for name in spec.row_drop:
        values.pop(name, None)
    return values, types


def _row_table(values_list: list, types: dict) -> pa.Table:
    names = list(values_list[0].keys())
    arrays = {}
    for name in names:
        vs = []
        for v in values_list:
            x = v[name]
            if isinstance(x, (dict, list)) and types[name] == pa.string():
                x = json.dumps(x, ensure_ascii=False)
            vs.append(x)
        arrays[name] = pa.array(vs, types[name])
    return pa.table(arrays)


def write_parquet(table: pa.Table, path: Path, compression: str = "zstd") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, str(path), compression=compression)


def write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- task-level


def _features(built: list) -> dict:
    """Union over episodes (ascending N); the latest episode's value wins (contract §3, 002 §6.7)."""
    feats: dict[str, dict] = {}
    for b in built:
        if b.table is None:
            continue
        spec = b.spec
        for name in b.table.column_names:
            if name in spec.force:
                feats[name] = fm_spec(spec.force[name].tier)
            elif name in spec.slam:
                feats[name] = {
                    "dtype": "float64",
                    "shape": [8],
                    "encoding": "flat_points_8_txyz_qxyzw",
                    "frame": SLAM_FRAME,
                    "frame_axes": dict(SLAM_FRAME_AXES),
                }
            elif name.endswith("slam_trajectory_ns") and name[: -len("_ns")] in spec.slam:
                feats[name] = {
                    "dtype": "int64",
                    "shape": [1],
                    "encoding": "flat_parallel_to_slam_trajectory",
                    "clock": "host_monotonic_ns",
                }
            elif name == "observation.imu":
                feats[name] = {"dtype": "float32", "shape": [IMU_DIM]}
            elif name.endswith("_hand_pose"):
                feats[name] = {"dtype": "float32", "shape": [21, 3]}
            elif name.startswith("observation.") and name[len("observation."):] in spec.gloves:
                feats[name] = {"dtype": "float32", "shape": [16, 16]}
    feats["action"] = {"dtype": "float32", "shape": [1]}
    return feats


def compute_stats(built: list) -> dict:
    """stats.json from the data written: glove blocks per row (zero rows included), IMU per
    sample, population std, float64; action is the fixed placeholder (contract §4)."""
    glove: dict[str, list] = {}
    imu: list = []
    for b in built:
        if b.table is None:
            continue
        for sensor in b.spec.gloves:
            col = f"observation.{sensor}"
            if col in b.table.column_names and pa.types.is_fixed_size_list(b.table.schema.field(col).type):
                rows = [r for r in b.table.column(col).to_pylist() if r is not None]
                if rows:
                    glove.setdefault(col, []).append(np.asarray(rows, dtype=np.float64))
        if "observation.imu" in b.table.column_names:
            for row in b.table.column("observation.imu").to_pylist():
                imu.extend(row or [])
    stats: dict[str, dict] = {}

    def block(x: np.ndarray) -> dict:
        mean = x.mean(axis=0)
        std = np.sqrt(np.maximum((x * x).mean(axis=0) - mean * mean, 0.0))
        return {
            "count": int(x.shape[0]),
            "mean": [float(v) for v in mean],
            "std": [float(v) for v in std],
            "min": [float(v) for v in x.min(axis=0)],
            "max": [float(v) for v in x.max(axis=0)],
        }

    for col in sorted(glove):
        stats[col] = block(np.concatenate(glove[col], axis=0))
    if imu:
        stats["observation.imu"] = block(np.asarray(imu, dtype=np.float64))
    stats["action"] = {"count": 0, "mean": [0.0], "std": [1.0], "min": [0.0], "max": [0.0]}
    return stats


def build_info(task_name: str, built: list, fps: float, total_episodes: int) -> dict:
    slots: dict[str, str] = {}
    for b in built:
        for slot, ext in b.spec.videos.items():
            slots[slot] = ext  # latest wins
    cameras = {s: {"height": VIDEO_SIZE[1], "width": VIDEO_SIZE[0]} for s in slots if not is_depth_slot(s)}
    sensors = sorted({g for b in built for g in b.spec.gloves})
    devices = []
    device_names = {}
    if slots:
        devices.append({"key": "d435:213622075531", "kind": "d435", "name": "D435_head", "slots": list(slots)})
        device_names.update({s: "D435_head" for s in slots})
    for g in sensors:
        devices.append({"key": f"usbglove:36493359353{len(devices)}", "kind": "data_ble", "name": f"USB 手套_{g.split('_')[0]}", "slots": []})
    has_force = any(b.spec.force for b in built)
    slam_cols = sorted({c for b in built for c in b.spec.slam})
    if has_force or slam_cols:
        gslots = ["gripper_stereo_left", "gripper_rgb", "gripper_pose", "gripper_force_left", "gripper_force_right"]
        devices.append({"key": "gripper:CC:BA:97:25:B4:44", "kind": "gripper", "name": "UMI 夹爪001", "slots": gslots})
        device_names.update({s: "UMI 夹爪001" for s in gslots})
    info = {
        "format": FORMAT,
        "chunks_size": CHUNKS_SIZE,
        "data_path": DATA_PATH,
        "video_path": VIDEO_PATH,
        "episodes_path": EPISODES_PATH,
        "codebase_version": "v3.0",
        "app_version": "1.3.17",
        "fps": float(fps),
        "video": bool(slots),
        "task_name": task_name,
        "features": _features(built),
        "cameras": cameras,
        "video_extensions": slots,
        "devices": devices,
        "device_names": device_names,
        "sensors": sensors,
        "sensor_dim": GLOVE_DIM,
        "created_at": 1_789_999_000.0,
        "calibration": {"head_stereo": copy.deepcopy(DEFAULT_CALIBRATION)},
        "total_episodes": total_episodes,
    }
    gripper_slam = [c for c in slam_cols if not c.startswith("observation.ego")]
    if gripper_slam:
        info["gripper_slam_frame"] = SLAM_FRAME
    if slam_cols:
        info["slam_frames"] = {c: SLAM_FRAME for c in slam_cols}
    return info


_UNSET = object()


def write_task(
    root: os.PathLike | str,
    task_name: str = "pick_cube",
    episodes: list | None = None,
    *,
    fps: float = 30.0,
    total_episodes: int | None = None,
    info_overrides: dict | None = None,
    info_drop: tuple = (),
    features_overrides: dict | None = None,
    info_text: str | None = None,
    write_info: bool = True,
    stats: Any = _UNSET,
    stats_drop_count: tuple = (),
    write_stats: bool = True,
    tasks_text: str | None = None,
    task_text: str | None = None,
    row_compression: str = "snappy",
) -> TaskFixture:
    """Write a complete task directory `root/task_name` and return what was written.

    info_overrides: top-level keys replaced in info.json (a value of None is written as
    null); info_drop: keys removed; features_overrides: feature name -> dict (None
    removes the feature); info_text: raw text written as info.json instead.
    stats: a dict written verbatim instead of the computed stats; stats_drop_count:
    blocks written without their `count`; write_stats=False leaves stats.json out.
    tasks_text: raw text of tasks.jsonl; task_text: the task string of the single line.
    """
    if episodes is None:
        episodes = [EpisodeSpec(1), EpisodeSpec(2)]
    episodes = sorted(episodes, key=lambda e: e.n)
    task = Path(root) / task_name
    task.mkdir(parents=True, exist_ok=True)

    built: list[BuiltEpisode] = []
    shards: dict[int, list] = {}
    for spec in episodes:
        table = build_data_table(spec, fps) if spec.data else None
        if table is not None:
            write_parquet(table, task / data_rel(spec.n), "zstd")
        vids = {}
        for slot, ext in spec.videos.items():
            rel = video_rel(spec.n, slot, ext)
            p = task / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(video_bytes(ext, is_depth_slot(slot), spec.length))
            vids[slot] = rel
        values, types = _row_values(spec, fps)
        rrel = None
        if spec.row == "file":
            rrel = row_rel(spec.n)
            write_parquet(_row_table([values], types), task / rrel, row_compression)
        elif spec.row == "shard":
            c = chunk_file(spec.n)[0]
            shards.setdefault(c, []).append((values, types))
            rrel = shard_rel(c)
        elif spec.row != "none":
            raise ValueError(f"row must be file|shard|none, not {spec.row!r}")
        built.append(
            BuiltEpisode(
                spec=spec,
                table=table,
                row=None if spec.row == "none" else values,
                row_columns=list(values.keys()),
                data_rel=data_rel(spec.n),
                row_rel=rrel,
                videos=vids,
            )
        )
    for c, rows in shards.items():
        rows.sort(key=lambda vt: vt[0]["episode_index"])
        write_parquet(_row_table([v for v, _ in rows], rows[0][1]), task / shard_rel(c), row_compression)

    if total_episodes is None:
        total_episodes = max((e.n for e in episodes), default=0)
    info = build_info(task_name, built, fps, total_episodes)
    for k, v in (features_overrides or {}).items():
        if v is None:
            info["features"].pop(k, None)
        else:
            info["features"][k] = v
    for k, v in (info_overrides or {}).items():
        info[k] = v
    for k in info_drop:
        info.pop(k, None)
    if info_text is not None:
        (task / "meta").mkdir(parents=True, exist_ok=True)
        (task / "meta/info.json").write_text(info_text, encoding="utf-8")
    elif write_info:
        write_json(task / "meta/info.json", info)

    st = compute_stats(built) if stats is _UNSET else stats
    if st is not None and isinstance(st, dict):
        st = copy.deepcopy(st)
        for name in stats_drop_count:
            st[name].pop("count", None)
    if write_stats and st is not None:
        write_json(task / "meta/stats.json", st)

    if tasks_text is None:
        line = {"task_index": 0, "task": task_text if task_text is not None else task_name}
        tasks_text = json.dumps(line, ensure_ascii=False) + "\n"
    (task / "meta").mkdir(parents=True, exist_ok=True)
    (task / "meta/tasks.jsonl").write_text(tasks_text, encoding="utf-8")

    return TaskFixture(
        path=task,
        task_name=task_name,
        info=info,
        stats=st,
        episodes={b.n: b for b in built},
        fps=fps,
    )


# --------------------------------------------------------------------------- other formats


def write_lerobot_v2(root: os.PathLike | str, name: str = "lerobot_v21", version: str = "v2.1") -> Path:
    """A minimal LeRobot v2.x dataset (meta/info.json without `format`)."""
    ds = Path(root) / name
    info = {
        "codebase_version": version,
        "robot_type": "so100",
        "total_episodes": 1,
        "total_frames": 2,
        "total_tasks": 1,
        "total_videos": 0,
        "total_chunks": 1,
        "chunks_size": 1000,
        "fps": 30,
        "splits": {"train": "0:1"},
        "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
        "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
        "features": {
            "action": {"dtype": "float32", "shape": [2], "names": None},
            "timestamp": {"dtype": "float32", "shape": [1], "names": None},
            "frame_index": {"dtype": "int64", "shape": [1], "names": None},
            "episode_index": {"dtype": "int64", "shape": [1], "names": None},
            "index": {"dtype": "int64", "shape": [1], "names": None},
            "task_index": {"dtype": "int64", "shape": [1], "names": None},
        },
    }
    (ds / "meta").mkdir(parents=True, exist_ok=True)
    (ds / "meta/info.json").write_text(json.dumps(info, indent=4), encoding="utf-8")
    (ds / "meta/tasks.jsonl").write_text('{"task_index": 0, "task": "pick"}\n', encoding="utf-8")
    (ds / "meta/episodes.jsonl").write_text('{"episode_index": 0, "tasks": ["pick"], "length": 2}\n', encoding="utf-8")
    t = pa.table(
        {
            "action": pa.array([[0.0, 0.0], [0.1, 0.1]], pa.list_(pa.float32(), 2)),
            "timestamp": pa.array([0.0, 1 / 30], pa.float32()),
            "frame_index": pa.array([0, 1], pa.int64()),
            "episode_index": pa.array([0, 0], pa.int64()),
            "index": pa.array([0, 1], pa.int64()),
            "task_index": pa.array([0, 0], pa.int64()),
        }
    )
    write_parquet(t, ds / "data/chunk-000/episode_000000.parquet", "snappy")
    return ds


def write_bundle_dataset(root: os.PathLike | str, name: str = "bundle_ds") -> Path:
    """A minimal bundle-format dataset (manifest.json, schema_version 1)."""
    ds = Path(root) / name
    ep_id = "ep_" + "0" * 31 + "1"
    manifest = {
        "schema_version": 1,
        "id": "mf_test",
        "name": name,
        "type": "teleop",
        "fps": 20.0,
        "features": {"observation.state": {"dtype": "float32", "shape": [2]}, "action": {"dtype": "float32", "shape": [2]}},
        "episode_count": 1,
        "success_rate": None,
        "episodes": [{"id": ep_id, "length": 2, "task": "pick", "task_description": "pick the cube"}],
    }
    write_json(ds / "manifest.json", manifest)
    b = ds / "episodes" / ep_id
    t = pa.table(
        {
            "step": pa.array([0, 1], pa.int64()),
            "timestamp": pa.array([0, 50_000_000], pa.int64()),
            "observation.state": pa.array([[0.0, 0.0], [0.1, 0.2]], pa.list_(pa.float32())),
            "action": pa.array([[0.0, 0.0], [0.1, 0.2]], pa.list_(pa.float32())),
        }
    )
    write_parquet(t, b / "data.parquet", "zstd")
    write_json(b / "episode.json", {"schema_version": 1, "capture_id": ep_id, "length": 2, "fps": 20.0, "task": "pick"})
    return ds


def write_legacy_v1_0(root: os.PathLike | str, name: str = "legacy_task") -> Path:
    """A v1.0 task: no meta/info.json `format`, per-session `<task>_NNNNNN/` folders."""
    ds = Path(root) / name
    sess = ds / f"{name}_000001"
    write_json(sess / "metadata.json", {"task_name": name, "session": f"{name}_000001", "fps": 30.0})
    write_json(sess / "timestamps.json", {"frames": [0.0, 0.0333]})
    return ds
