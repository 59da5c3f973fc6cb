"""Shared helpers for the recorder tests (test_recorder_*.py); this module holds no tests.

The recorder is driven through `reel simulate` / `reel delete`, which WRITE, so they cannot
go through conftest's `run_reel` (that one asserts the tree under tmp_path is unchanged).
`reel_exec` runs them with the same crash checks instead. Every expected value in the
recorder tests is computed here with pyarrow / json / numpy straight from the contract
(shared/seeds/000_* §2-§7, 002_* §4-§8 + Appendix B/C, shared/docs/reference-behaviour.md,
shared/docs/contract-decisions.md); reel's own readers are never used for values, `reel
check` only as a second opinion.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .checks import all_findings, assert_no_crash, assert_unchanged, check_report, snapshot
from .fixtures import CHUNKS_SIZE, DATA_PATH, EPISODES_PATH, FM_FLAT, FM_TIERS, VIDEO_PATH, data_rel, row_rel

SIM_TIMEOUT_S = 600
MAIN_SECONDS = 2.0
MAIN_FPS = 30.0

FM_COL = "observation.gripper_left_force_matrix"
FZ_COL = "observation.gripper_left_force"

# §7.1 key columns (恒有) and their Arrow types; raw_hw_ns is Appendix C.
KEY_TYPES = {
    "episode_index": "int64",
    "frame_index": "int64",
    "timestamp": "float",
    "task_index": "int64",
    "wall_time": "double",
    "hardware_ns": "int64",
}
# Appendix C / 002 §4.3: D435 forensic columns.
FORENSIC_TYPES = {
    "depth_ns": "int64",
    "host_ns": "int64",
    "rgb_dup": "int8",
    "depth_dup": "int8",
    "ts_src": "int8",
    "rgb_gap": "int32",
    "depth_gap": "int32",
}

# What the simulated rig records (the brief for `reel simulate`, named as in 002 §4.6 / Appendix C).
SIM_COLUMNS = [
    *KEY_TYPES,
    "raw_hw_ns",
    "action",
    # gripper rig 1
    "observation.gripper_left_force",
    "observation.gripper_right_force",
    "observation.gripper_left_force_ns",
    "observation.gripper_right_force_ns",
    "observation.gripper_state",
    "observation.gripper_left_force_matrix",
    "observation.gripper_left_force_matrix_ns",
    "observation.slam_trajectory",
    "observation.slam_trajectory_ns",
    # gripper rig 2
    "observation.gripper_2_gripper_left_force",
    "observation.gripper_2_gripper_state",
    "observation.gripper_2_slam_trajectory",
    "observation.gripper_2_slam_trajectory_ns",
    # ego head stereo + IMU + ego trajectory
    "imu_ts_ns",
    "observation.imu",
    "observation.ego_slam_trajectory",
    "observation.ego_slam_trajectory_ns",
    # gloves + hand pose
    "observation.left_glove",
    "observation.right_glove",
    "observation.left_glove_imu_quat",
    "observation.left_glove_imu_valid",
    "observation.left_hand_pose",
    "observation.right_hand_pose",
    "status.left_glove",
    "status.right_glove",
    # D435 forensic
    *FORENSIC_TYPES,
]
# Columns every episode must carry (§7.1 恒有, §7.2 action / hand pose 恒写).
ALWAYS_COLUMNS = [*KEY_TYPES, "action", "observation.left_hand_pose", "observation.right_hand_pose"]

SLAM_ENCODING = "flat_points_8_txyz_qxyzw"
SLAM_NS_ENCODING = "flat_parallel_to_slam_trajectory"
NS_ENCODING = "host_monotonic_ns"

EPISODE_ROW_TYPES = [
    ("episode_index", "int64"),
    ("task_index", "int64"),
    ("start_frame_index", "int64"),
    ("end_frame_index", "int64"),
    ("length", "int64"),
    ("created_at", "double"),
    ("duration_sec", "double"),
    ("drop_stats", "string"),
    ("video_codec", "string"),
    ("calibration", "string"),
    ("force_matrix_specs", "string"),
]
ROW_JSON_COLUMNS = ("drop_stats", "video_codec", "calibration", "force_matrix_specs", "slam_specs")

ACTION_PLACEHOLDER = {"count": 0, "mean": [0.0], "std": [1.0], "min": [0.0], "max": [0.0]}

# Arrow types by column family (reference-behaviour "data parquet", 002 Appendix C).
F32 = "float"
FSL = "fixed_size_list<float>[{}]"


# --------------------------------------------------------------------------- running reel


def reel_exec(reel_bin: str, *args, timeout: int = SIM_TIMEOUT_S) -> tuple[int, str, str]:
    """Run reel (a writing command); crash checks as in conftest, no read-only check."""
    argv = [reel_bin, *[str(a) for a in args]]
    what = "reel " + " ".join(str(a) for a in args)
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} did not finish within {timeout} s")
    out = proc.stdout.decode("utf-8", errors="replace")
    err = proc.stderr.decode("utf-8", errors="replace")
    assert_no_crash(proc.returncode, err, what)
    return proc.returncode, out, err


def simulate(reel_bin: str, task: Path, *args) -> list[dict]:
    """`reel simulate TASK ARGS --json` must exit 0; returns the validated `episodes` list."""
    what = f"reel simulate {task} " + " ".join(str(a) for a in args) + " --json"
    rc, out, err = reel_exec(reel_bin, "simulate", task, *args, "--json")
    assert rc == 0, f"{what} exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    try:
        got = json.loads(out)
    except ValueError as e:
        pytest.fail(f"{what} did not print valid JSON ({e}):\n{out[:2000]}\nstderr:\n{err}")
    assert isinstance(got, dict) and isinstance(got.get("episodes"), list), f"{what}: expected {{'episodes': [...]}}, got {out[:2000]}"
    for e in got["episodes"]:
        assert isinstance(e, dict) and {"episode_index", "length", "committed"} <= set(e), f"{what}: episode entry {e!r} lacks episode_index/length/committed"
        assert isinstance(e["committed"], bool), f"{what}: committed must be a JSON bool: {e!r}"
        assert isinstance(e["episode_index"], int) and isinstance(e["length"], int), f"{what}: {e!r}"
    return got["episodes"]


def delete(reel_bin: str, task: Path, n: int) -> None:
    rc, out, err = reel_exec(reel_bin, "delete", task, n)
    assert rc == 0, f"reel delete {task} {n} exited {rc}\nstdout:\n{out}\nstderr:\n{err}"


def check_clean(reel_bin: str, task: Path) -> dict:
    """`reel check TASK --json` exits 0 with no error finding, and changes nothing in TASK."""
    before = snapshot(task)
    rc, report = check_report(lambda *args: reel_exec(reel_bin, *args, timeout=300), task)
    assert_unchanged(before, snapshot(task), f"reel check {task}")
    errs = [f for f in all_findings(report) if f.get("severity") == "error"]
    listing = "\n".join(f"  {f['severity']} {f['rule']} {f['path']}: {f['message']}" for f in all_findings(report))
    assert rc == 0 and not errs, f"reel check {task} found errors in what simulate wrote (rc={rc}):\n{listing}"
    return report


# --------------------------------------------------------------------------- the shared task


_MEMO: dict = {}


def memo_task(key: str, tmp_path_factory, build):
    """Build a task once per session (build(root) -> value); a failure is remembered and re-raised."""
    if key not in _MEMO:
        root = tmp_path_factory.mktemp(key)
        try:
            _MEMO[key] = ("ok", build(root))
        except BaseException as e:  # noqa: BLE001 - remembered, re-reported by every user
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            _MEMO[key] = ("fail", f"building the shared task {key!r} failed: {type(e).__name__}: {e}")
    status, value = _MEMO[key]
    if status == "fail":
        pytest.fail(value, pytrace=False)
    return value


class SimTask:
    """A task recorded by simulate: path, the JSON episode entries, when it was run."""

    def __init__(self, path: Path, episodes: list, t0: float, t1: float, tier: str, fps: float, seconds: float):
        self.path = path
        self.episodes = episodes
        self.t0, self.t1 = t0, t1
        self.tier = tier
        self.fps = fps
        self.seconds = seconds

    @property
    def numbers(self) -> list:
        return [e["episode_index"] for e in self.episodes if e["committed"]]


def main_task(reel_bin: str, tmp_path_factory) -> SimTask:
    """3 episodes, 2 s at 30 fps, default tier (int16x100), fixed seed, video off, into a fresh task."""

    def build(root):
        path = root / "pick_cube"
        t0 = time.time()
        # Video off: this slice is about the parquet and JSON files (test_recorder_video.py
        # covers the streams).
        eps = simulate(reel_bin, path, "--count", 3, "--seconds", MAIN_SECONDS, "--seed", 1, "--no-video")
        return SimTask(path, eps, t0, time.time(), "int16x100", MAIN_FPS, MAIN_SECONDS)

    return memo_task("main", tmp_path_factory, build)


# --------------------------------------------------------------------------- reading files


def read_json(path: Path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        pytest.fail(f"cannot read {path} as JSON: {e}", pytrace=False)


def info(task: Path) -> dict:
    return read_json(Path(task) / "meta/info.json")


def stats(task: Path) -> dict:
    return read_json(Path(task) / "meta/stats.json")


def data_table(task: Path, n: int) -> pa.Table:
    p = Path(task) / data_rel(n)
    assert p.is_file(), f"data file of N={n} is missing: {data_rel(n)} (have: {listing(task, 'data')})"
    return pq.read_table(p)


def row_table(task: Path, n: int) -> pa.Table:
    p = Path(task) / row_rel(n)
    assert p.is_file(), f"episodes row of N={n} is missing: {row_rel(n)} (have: {listing(task, 'meta/episodes')})"
    return pq.read_table(p)


def listing(task: Path, sub: str) -> list:
    """Every file (dotfiles included) under task/sub, relative to the task, sorted."""
    root = Path(task) / sub
    out = []
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            out.append(os.path.relpath(os.path.join(dirpath, f), task).replace(os.sep, "/"))
    return sorted(out)


def visible(paths: list) -> list:
    return [p for p in paths if not any(part.startswith(".") for part in p.split("/"))]


def leftover_dotfiles(task: Path) -> list:
    """Every dot entry in the task except the meta/episodes/.lock anchor."""
    out = []
    for dirpath, dirs, files in os.walk(task):
        for name in dirs + files:
            rel = os.path.relpath(os.path.join(dirpath, name), task).replace(os.sep, "/")
            if name.startswith(".") and rel != "meta/episodes/.lock":
                out.append(rel)
    return sorted(out)


def _numbers_under(task: Path, folder: str) -> list:
    """N of every <folder>/chunk-CCC/episode-FFF.parquet (contract §2); any other visible file fails."""
    out = []
    for rel in visible(listing(task, folder)):
        m = re.fullmatch(re.escape(folder) + r"/chunk-(\d{3})/episode-(\d{3})\.parquet", rel)
        assert m, f"unexpected file under {folder}/: {rel}"
        out.append(int(m.group(1)) * CHUNKS_SIZE + int(m.group(2)) + 1)
    return sorted(out)


def data_numbers(task: Path) -> list:
    """N of every data/chunk-CCC/episode-FFF.parquet (contract §2)."""
    return _numbers_under(task, "data")


def row_numbers(task: Path) -> list:
    """N of every episodes row meta/episodes/chunk-CCC/episode-FFF.parquet."""
    return _numbers_under(task, "meta/episodes")


def row_dict(task: Path, n: int) -> dict:
    t = row_table(task, n)
    assert t.num_rows == 1, f"{row_rel(n)} has {t.num_rows} rows, the contract says exactly 1 (§6.1)"
    return {name: t.column(name)[0].as_py() for name in t.column_names}


def row_json(row: dict, name: str):
    raw = row.get(name)
    assert isinstance(raw, str), f"episodes row column {name} is {raw!r}, expected a JSON string"
    try:
        return json.loads(raw)
    except ValueError as e:
        pytest.fail(f"episodes row column {name} is not JSON ({e}): {raw[:500]!r}", pytrace=False)


# --------------------------------------------------------------------------- types


def type_str(t: pa.DataType) -> str:
    """Arrow type without child-field names: list<float>, fixed_size_list<float>[6]."""
    if pa.types.is_fixed_size_list(t):
        return f"fixed_size_list<{type_str(t.value_type)}>[{t.list_size}]"
    if pa.types.is_list(t):
        return f"list<{type_str(t.value_type)}>"
    if pa.types.is_large_list(t):
        return f"large_list<{type_str(t.value_type)}>"
    return str(t)


def fm_arrow(tier: str) -> str:
    return "list<int16>" if FM_TIERS[tier][0] == "int16" else "list<float>"


def expected_type(name: str, tier: str) -> str | None:
    """Arrow type the contract gives column `name` (None: the contract has no such family)."""
    if name in KEY_TYPES:
        return KEY_TYPES[name]
    if name == "raw_hw_ns":
        return "int64"
    if name in FORENSIC_TYPES:
        return FORENSIC_TYPES[name]
    if name == "action":
        return FSL.format(1)
    if name == "imu_ts_ns":
        return "list<int64>"
    if name == "observation.imu":
        return "list<fixed_size_list<float>[6]>"
    if name.startswith("status."):
        return "string"
    if not name.startswith("observation."):
        return None
    # gripper suffix order (reference "data parquet"): slam_trajectory_ns, _ns, _force_matrix, slam_trajectory, _state/_force
    if name.endswith("slam_trajectory_ns"):
        return "list<int64>"
    if name.endswith("_ns"):
        return "int64"
    if name.endswith("_force_matrix"):
        return fm_arrow(tier)
    if name.endswith("slam_trajectory"):
        return "list<double>"
    if name.endswith(("_state", "_force")):
        return FSL.format(3)
    if name.endswith("_imu_quat"):
        return FSL.format(64)
    if name.endswith("_imu_valid"):
        return FSL.format(16)
    if name.endswith("_hand_pose"):
        return FSL.format(63)
    if re.fullmatch(r"observation\.[a-z0-9_]+_glove", name):
        return FSL.format(256)
    return None


def expected_feature(name: str, tier: str) -> dict | None:
    """Keys info.json features[name] must have, with these values (002 §6.2, reference "info.json")."""
    if name == "action":
        return {"dtype": "float32", "shape": [1]}
    if name == "observation.imu":
        return {"dtype": "float32", "shape": [6]}
    if name.endswith("slam_trajectory_ns"):
        return {"dtype": "int64", "shape": [1], "encoding": SLAM_NS_ENCODING, "clock": NS_ENCODING}
    if name.endswith("_ns"):
        return {"dtype": "int64", "shape": [1], "encoding": NS_ENCODING}
    if name.endswith("_force_matrix"):
        return fm_spec_of(tier)
    if name.endswith("slam_trajectory"):
        return {"dtype": "float64", "shape": [8], "encoding": SLAM_ENCODING}
    if name.endswith(("_state", "_force")):
        return {"dtype": "float32", "shape": [3]}
    if name.endswith("_imu_quat"):
        return {"dtype": "float32", "shape": [16, 4]}
    if name.endswith("_imu_valid"):
        return {"dtype": "float32", "shape": [16]}
    if name.endswith("_hand_pose"):
        return {"dtype": "float32", "shape": [21, 3]}
    if re.fullmatch(r"observation\.[a-z0-9_]+_glove", name):
        return {"dtype": "float32", "shape": [16, 16]}
    return None


def fm_spec_of(tier: str) -> dict:
    dtype, encoding, scale = FM_TIERS[tier]
    return {"dtype": dtype, "shape": [250, 250, 3], "encoding": encoding, "scale": scale}


def spec_mismatch(got, want: dict) -> list:
    """['key: got X, want Y', ...] for the keys of `want` (numbers compare as numbers)."""
    if not isinstance(got, dict):
        return [f"not an object: {got!r}"]
    bad = []
    for k, v in want.items():
        if k not in got:
            bad.append(f"{k}: missing (want {v!r})")
        elif got[k] != v or isinstance(got[k], bool) != isinstance(v, bool):
            bad.append(f"{k}: got {got[k]!r}, want {v!r}")
    return bad


# --------------------------------------------------------------------------- column values (numpy)


def list_rows(col: pa.ChunkedArray) -> list:
    """Variable-length list column -> one numpy array per row (values of the child, no pylist)."""
    rows = []
    for chunk in col.chunks:
        offs = chunk.offsets.to_numpy()
        vals = chunk.values
        if pa.types.is_fixed_size_list(vals.type):
            flat = vals.flatten().to_numpy(zero_copy_only=False).reshape(-1, vals.type.list_size)
        else:
            flat = vals.to_numpy(zero_copy_only=False)
        for i in range(len(chunk)):
            rows.append(flat[offs[i] : offs[i + 1]])
    return rows


def fixed_matrix(col: pa.ChunkedArray) -> np.ndarray:
    """fixed_size_list<float>[d] column -> (rows, d) float64."""
    d = col.type.list_size
    parts = [c.flatten().to_numpy(zero_copy_only=False).reshape(-1, d) for c in col.chunks]
    if not parts:
        return np.zeros((0, d))
    return np.concatenate(parts).astype(np.float64)


def fm_decode(stored: np.ndarray, tier: str) -> np.ndarray:
    """Independent decoder (contract §7.2.1): int16 -> int32 cumsum along the (250,750) row,
    back to int16 (wraparound), reshape (250,250,3), / scale; float32 is the raw frame."""
    dtype, _, scale = FM_TIERS[tier]
    assert stored.size == FM_FLAT, stored.size
    if dtype == "float32":
        return np.asarray(stored, dtype=np.float32).reshape(250, 250, 3)
    d = np.asarray(stored, dtype=np.int16).reshape(250, 750)
    q = np.cumsum(d.astype(np.int32), axis=1).astype(np.int16)
    return (q.astype(np.float32) / np.float32(scale)).reshape(250, 250, 3)


def paths_info():
    return {"data_path": DATA_PATH, "video_path": VIDEO_PATH, "episodes_path": EPISODES_PATH}
