"""Task.align, Task.imu_table, Task.glove and the time.* check rules (issue 29): every stream
paired with the frames by its own clock (multi-device §5.3-§5.5, §8.2.4).

The fixtures are written by pyarrow (tests/e2e/fixtures.py) with stamps chosen here; the
expected pairings are recomputed below by brute force with numpy from the parquet files, not
through reel: for each frame, every stamped sample of the frame's clock segment is a candidate,
the nearest wins (ties: the earlier stamp), within the tolerance."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .checks import all_findings, check_report, findings
from .fixtures import EpisodeSpec, data_rel, write_task

FPS = 30.0
T = 33_333_333  # ns per frame at 30 fps
TOL = 16_666_667  # the default tolerance: half a frame period, rounded to ns
FORCE = "observation.gripper_left_force"
SLAM = "observation.slam_trajectory"
BASE = 5_000_000_000 + 1 * 100_000_000_000  # the fixture's hardware_ns of episode 1, row 0


def fsl(values: np.ndarray, width: int, typ=pa.float32()) -> pa.Array:
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1), typ), width)


# ---- The reference: brute force over every candidate ---------------------------------------

def segments(frame_ns: np.ndarray) -> np.ndarray:
    seg, s, last = [], 0, 0
    for t in frame_ns:
        if t != 0:
            if last != 0 and t < last:
                s += 1
            last = t
        seg.append(s)
    return np.array(seg)


def candidates(frame_ns, sample_ns, sample_row, r):
    """(stamp, sample index) of the samples that may pair with frame r, repeated stamps once."""
    seg = segments(frame_ns)
    seen, out = set(), []
    for i, (ns, row) in enumerate(zip(sample_ns, sample_row)):
        if ns != 0 and seg[min(row, len(seg) - 1)] == seg[r] and ns not in seen:
            seen.add(ns)
            out.append((int(ns), i))
    return out


def ref_nearest(frame_ns, sample_ns, sample_row, tol):
    """Per frame: the paired sample's index, or -1."""
    out = []
    for r, t in enumerate(frame_ns):
        c = candidates(frame_ns, sample_ns, sample_row, r) if t != 0 else []
        if not c:
            out.append(-1)
            continue
        ns, i = min(c, key=lambda x: (abs(x[0] - int(t)), x[0]))
        out.append(i if abs(ns - int(t)) <= tol else -1)
    return out


def ref_interpolate(frame_ns, sample_ns, sample_row, tol):
    """Per frame: (a, b, w) with b = -1 for a nearest pairing, a = -1 for none."""
    out = []
    nearest = ref_nearest(frame_ns, sample_ns, sample_row, tol)
    for r, t in enumerate(frame_ns):
        c = candidates(frame_ns, sample_ns, sample_row, r) if t != 0 else []
        before = [x for x in c if x[0] < t]
        after = [x for x in c if x[0] > t]
        if before and after and not any(x[0] == t for x in c):
            b0, a0 = max(before), min(after)
            if a0[0] - b0[0] <= 2 * tol:
                out.append((b0[1], a0[1], (int(t) - b0[0]) / (a0[0] - b0[0])))
                continue
        out.append((nearest[r], -1, 0.0))
    return out


def col(t: pa.Table, name: str) -> list:
    return t.column(name).to_pylist()


# ---- A hand-made episode ------------------------------------------------------------------

def force_episode(n=1, length=16, seed=7):
    """hardware_ns every T with no stamp on row 5; a force sample per row at an offset drawn in
    +-15 ms (so the stream never steps back), none on rows 2 and 9, row 12 repeating row 11's sample; gloves and hand pose."""
    rng = np.random.default_rng(seed)
    base = 5_000_000_000 + n * 100_000_000_000
    hw = base + np.arange(length, dtype=np.int64) * T
    hw[5] = 0
    off = rng.integers(-15_000_000, 15_000_000, size=length)
    ns = base + np.arange(length, dtype=np.int64) * T + off
    ns[[2, 9]] = 0
    ns[12] = ns[11]
    force = rng.normal(0, 100, size=(length, 3)).astype(np.float32)
    force[[2, 9]] = 0
    force[12] = force[11]
    extra = {"hardware_ns": pa.array(hw, pa.int64()), FORCE: fsl(force, 3), FORCE + "_ns": pa.array(ns, pa.int64())}
    return EpisodeSpec(n, length=length, gloves=("left_glove", "right_glove"), zero_glove_rows=(1,),
                       extra_columns=extra)


FEATURES = {FORCE: {"dtype": "float32", "shape": [3]},
            FORCE + "_ns": {"dtype": "int64", "shape": [1], "encoding": "host_monotonic_ns"}}


@pytest.fixture
def force_task(tmp_path):
    return write_task(tmp_path, "align_task", [force_episode()], features_overrides=FEATURES)


def test_nearest_pairs_each_frame_with_the_nearest_sample_within_half_a_frame(reel_mod, force_task, unchanged):
    task = reel_mod.open(str(force_task.path))
    with unchanged("Task.align"):
        got = task.align(1, [FORCE])
    t = pq.read_table(force_task.path / data_rel(1))
    hw, ns, force = (np.array(col(t, c)) for c in ("hardware_ns", FORCE + "_ns", FORCE))
    want = ref_nearest(hw, ns, np.arange(len(hw)), TOL)
    assert got.column_names == ["frame_index", "hardware_ns", FORCE, FORCE + "_ns", FORCE + "_dt_ns"]
    assert col(got, "hardware_ns") == [int(v) if v else None for v in hw]
    assert col(got, FORCE) == [force[i].tolist() if i >= 0 else None for i in want]
    assert col(got, FORCE + "_ns") == [int(ns[i]) if i >= 0 else None for i in want]
    assert col(got, FORCE + "_dt_ns") == [int(ns[i] - hw[r]) if i >= 0 else None for r, i in enumerate(want)]
    # Stated from the rules rather than recomputed: the unstamped frame 5 gets nothing, and a
    # sample of 0 (rows 2, 9) is never anyone's.
    assert col(got, FORCE)[5] is None
    assert 2 not in want and 9 not in want and 12 not in want  # row 12 repeats row 11: one sample
    assert sum(i >= 0 for i in want) >= 8  # the draw pairs most frames (a test that can fail)
    meta = got.schema.metadata
    assert meta[b"reel.method"] == b"nearest" and meta[b"reel.tolerance_ns"] == str(TOL).encode()


def test_tolerance_edges(reel_mod, tmp_path):
    """A sample exactly tolerance_s away is paired; one nanosecond further is not."""
    hw = BASE + np.arange(3, dtype=np.int64) * T
    ns = np.array([hw[0] + 5_000_000, hw[1] - 5_000_001, 0], dtype=np.int64)
    extra = {FORCE: fsl(np.arange(9, dtype=np.float32), 3), FORCE + "_ns": pa.array(ns, pa.int64())}
    task_dir = write_task(tmp_path, "edges", [EpisodeSpec(1, length=3, extra_columns=extra)],
                          features_overrides=FEATURES)
    got = reel_mod.open(str(task_dir.path)).align(1, FORCE, tolerance_s=0.005)
    assert col(got, FORCE) == [[0.0, 1.0, 2.0], None, None]
    assert col(got, FORCE + "_dt_ns") == [5_000_000, None, None]
    assert int(got.schema.metadata[b"reel.tolerance_ns"]) == 5_000_000


def test_interpolation_is_linear_between_the_samples_either_side(reel_mod, force_task):
    task = reel_mod.open(str(force_task.path))
    got = task.align(1, [FORCE], method="interpolate", tolerance_s=0.025)
    t = pq.read_table(force_task.path / data_rel(1))
    hw, ns = (np.array(col(t, c)) for c in ("hardware_ns", FORCE + "_ns"))
    force = np.array(col(t, FORCE), dtype=np.float32)
    values = col(got, FORCE)
    lerped = 0
    for r, (a, b, w) in enumerate(ref_interpolate(hw, ns, np.arange(len(hw)), 25_000_000)):
        if a < 0:
            assert values[r] is None, r
            continue
        x, y = force[a].astype(np.float64), force[b if b >= 0 else a].astype(np.float64)
        assert values[r] == (x + w * (y - x)).astype(np.float32).tolist(), r
        lerped += b >= 0
    assert lerped >= 5


def test_the_left_glove_is_remapped_and_zero_rows_are_no_sample(reel_mod, force_task):
    task = reel_mod.open(str(force_task.path))
    t = pq.read_table(force_task.path / data_rel(1))
    raw = {s: np.array(col(t, f"observation.{s}"), dtype=np.float32).reshape(-1, 16, 16)
           for s in ("left_glove", "right_glove")}
    # multi-device §4.5, the reference's canonical_pressure_matrix: values[::-1, ::-1].T
    want_left = np.stack([m[::-1, ::-1].T for m in raw["left_glove"]])
    assert np.array_equal(task.glove(1, "observation.left_glove"), want_left)
    assert np.array_equal(task.glove(1, "observation.left_glove", canonical=False), raw["left_glove"])
    assert np.array_equal(task.glove(1, "observation.right_glove"), raw["right_glove"])
    assert not np.array_equal(want_left, raw["left_glove"])
    got = task.align(1, ["observation.left_glove", "observation.right_glove", "observation.left_hand_pose"])
    assert "observation.left_glove_ns" not in got.column_names  # no clock in the contract
    left = col(got, "observation.left_glove")
    assert left[1] is None  # the fixture's all-zero row: no sample (§5.5)
    assert np.array_equal(np.array(left[3], dtype=np.float32).reshape(16, 16), want_left[3])
    assert col(got, "observation.right_glove")[4] == raw["right_glove"][4].reshape(-1).tolist()
    assert set(col(got, "observation.left_hand_pose")) == {None}  # the zero placeholder
    raw_left = task.align(1, ["observation.left_glove"], canonical_gloves=False)
    assert col(raw_left, "observation.left_glove")[3] == raw["left_glove"][3].reshape(-1).tolist()


def test_no_pairing_across_a_hardware_ns_wrap(reel_mod, tmp_path, run_reel):
    """hardware_ns steps back at row 4 (a device reset). Sample 1, hung on row 1, has a stamp
    within tolerance of frame 5's after the reset: pairing by stamp alone would give it to
    frame 5, but it belongs to the stretch before."""
    hw = np.array([BASE + r * T for r in range(4)] + [BASE + r * T for r in range(4)], dtype=np.int64)
    ns = np.array([hw[0] + 1000, hw[5] - 2000, 0, 0, 0, 0, 0, hw[7] + 3000], dtype=np.int64)
    force = np.arange(24, dtype=np.float32).reshape(8, 3)
    extra = {"hardware_ns": pa.array(hw, pa.int64()), FORCE: fsl(force, 3), FORCE + "_ns": pa.array(ns, pa.int64())}
    task_dir = write_task(tmp_path, "wrap", [EpisodeSpec(1, length=8, extra_columns=extra)],
                          features_overrides=FEATURES)
    got = reel_mod.open(str(task_dir.path)).align(1, FORCE)
    want = ref_nearest(hw, ns, np.arange(8), TOL)
    assert want == [0, 1, -1, -1, -1, -1, -1, 7]
    assert col(got, FORCE) == [force[i].tolist() if i >= 0 else None for i in want]
    assert got.schema.metadata[b"reel.clock_resets"] == b"4"
    rc, report = check_report(run_reel, task_dir.path)
    (f,) = findings(report, "time.clock_reset")
    assert f["severity"] == "warning" and "hardware_ns steps back at row 4" in f["message"]
    assert f["path"].endswith(data_rel(1))


def test_slam_nearest_and_slerp(reel_mod, tmp_path):
    """Points every 20 ms hung on rows, one without a stamp; frames every T. Interpolation is
    linear in t, x, y, z and slerp for the quaternion (recomputed here)."""
    rng = np.random.default_rng(3)
    length = 10
    hw = BASE + np.arange(length, dtype=np.int64) * T
    stamps = BASE - 5_000_000 + np.arange(17, dtype=np.int64) * 20_000_000
    stamps[6] = 0
    rows = np.minimum((stamps - BASE + T) // T, length - 1)
    rows[6] = 3
    q = rng.normal(size=(17, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    pts = np.concatenate([(stamps / 1e9)[:, None], rng.normal(size=(17, 3)), q], axis=1)
    per_row_p = [[float(v) for i in np.flatnonzero(rows == r) for v in pts[i]] for r in range(length)]
    per_row_n = [[int(stamps[i]) for i in np.flatnonzero(rows == r)] for r in range(length)]
    order = np.concatenate([np.flatnonzero(rows == r) for r in range(length)])  # file order
    extra = {SLAM: pa.array(per_row_p, pa.list_(pa.float64())), SLAM + "_ns": pa.array(per_row_n, pa.list_(pa.int64()))}
    feats = {SLAM: {"dtype": "float64", "shape": [8], "encoding": "flat_points_8_txyz_qxyzw"},
             SLAM + "_ns": {"dtype": "int64", "shape": [1], "encoding": "flat_parallel_to_slam_trajectory",
                            "clock": "host_monotonic_ns"}}
    task_dir = write_task(tmp_path, "slam", [EpisodeSpec(1, length=length, extra_columns=extra)],
                          features_overrides=feats)
    task = reel_mod.open(str(task_dir.path))
    s_ns, s_row, s_pts = stamps[order], rows[order], pts[order]
    got = task.align(1, SLAM)
    want = ref_nearest(hw, s_ns, s_row, TOL)
    assert col(got, SLAM) == [s_pts[i].tolist() if i >= 0 else None for i in want]
    got = task.align(1, SLAM, method="interpolate", tolerance_s=0.015)
    values = col(got, SLAM)
    slerped = 0
    for r, (a, b, w) in enumerate(ref_interpolate(hw, s_ns, s_row, 15_000_000)):
        if a < 0:
            assert values[r] is None
            continue
        if b < 0:
            assert values[r] == s_pts[a].tolist()
            continue
        pa_, pb = s_pts[a], s_pts[b].copy()
        lin = pa_[:4] + w * (pb[:4] - pa_[:4])
        qa, qb = pa_[4:], pb[4:]
        if qa @ qb < 0:
            qb = -qb
        theta = np.arccos(min(qa @ qb, 1.0))
        qs = (np.sin((1 - w) * theta) * qa + np.sin(w * theta) * qb) / np.sin(theta)
        qs /= np.linalg.norm(qs)
        assert np.allclose(values[r], np.concatenate([lin, qs]), rtol=0, atol=1e-12), r
        slerped += 1
    assert slerped >= 4


def test_imu_on_the_device_clock_through_raw_hw_ns(reel_mod, tmp_path):
    """IMU stamps on a device clock near 7 s, raw_hw_ns the frames' stamps on that clock (with
    jitter), hardware_ns on the host clock near 105 s: each sample goes to the frame clock by
    the nearest frame's raw stamp, then pairs like any stream."""
    length = 6
    dev0 = 7_000_000_000
    hw = BASE + np.arange(length, dtype=np.int64) * T
    raw = dev0 + np.arange(length, dtype=np.int64) * T + np.array([0, 200_000, -150_000, 0, 90_000, 0])
    imu_ns = dev0 + np.arange(0, length * T, 2_500_000 * 5, dtype=np.int64)  # 80 Hz
    imu_row = np.minimum((imu_ns - dev0) // T, length - 1)
    imu_vals = np.arange(len(imu_ns) * 6, dtype=np.float32).reshape(-1, 6)
    per_row_ts = [[int(v) for v in imu_ns[imu_row == r]] for r in range(length)]
    per_row_v = [imu_vals[imu_row == r].tolist() for r in range(length)]
    extra = {"raw_hw_ns": pa.array(raw, pa.int64()), "imu_ts_ns": pa.array(per_row_ts, pa.list_(pa.int64())),
             "observation.imu": pa.array(per_row_v, pa.list_(pa.list_(pa.float32(), 6)))}
    task_dir = write_task(tmp_path, "imu", [EpisodeSpec(1, length=length, extra_columns=extra)],
                          features_overrides={"observation.imu": {"dtype": "float32", "shape": [6]}})
    task = reel_mod.open(str(task_dir.path))
    # Reference mapping: the nearest frame by raw stamp (ties earlier), then its host offset.
    f = np.array([int(np.argmin(np.abs(raw - d))) for d in imu_ns])
    mapped = hw[f] + (imu_ns - raw[f])
    table = task.imu_table(1)
    assert table.schema.metadata[b"reel.imu_clock"] == b"raw_hw_ns"
    assert col(table, "imu_ts_ns") == imu_ns.tolist()
    assert col(table, "ns") == mapped.tolist()
    assert col(table, "row") == imu_row.tolist()
    frame = [int(np.argmin(np.abs(hw - m))) for m in mapped]
    assert col(table, "frame") == frame
    assert col(table, "dt_ns") == [int(m - hw[k]) for m, k in zip(mapped, frame)]
    assert col(table, "imu") == imu_vals.tolist()
    got = task.align(1, "observation.imu", tolerance_s=0.004)
    want = ref_nearest(hw, mapped, imu_row, 4_000_000)
    assert col(got, "observation.imu") == [imu_vals[i].tolist() if i >= 0 else None for i in want]
    assert col(got, "observation.imu_ns") == [int(mapped[i]) if i >= 0 else None for i in want]
    assert got.schema.metadata[b"reel.imu_clock"] == b"raw_hw_ns"


def test_the_simulated_rig_aligns_every_stream(reel_mod, reel_bin, tmp_path):
    from .cli_run import reel

    reel(reel_bin, "simulate", tmp_path / "sim", "--count", 1, "--seconds", 2)
    task = reel_mod.open(str(tmp_path / "sim"))
    got = task.align(1)
    names = set(got.column_names)
    for stream in (FORCE, "observation.gripper_left_force_matrix", SLAM, "observation.ego_slam_trajectory",
                   "observation.imu"):
        assert {stream, stream + "_ns", stream + "_dt_ns"} <= names, stream
    assert got.schema.metadata[b"reel.imu_clock"] == b"raw_hw_ns"
    assert got.num_rows == 60
    # The force sample is 3 ms before each frame (the simulator's stamps): all paired.
    assert set(col(got, FORCE + "_dt_ns")) == {-3_000_000}
    # The matrix pump runs at half the frame rate: every other frame is 1 ms after a sample,
    # the others 34.3 ms away, beyond half a frame.
    dts = col(got, "observation.gripper_left_force_matrix_dt_ns")
    assert dts[0::2] == [-1_000_000] * 30 and dts[1::2] == [None] * 30


def test_align_refuses_what_is_not_a_stream(reel_mod, force_task):
    task = reel_mod.open(str(force_task.path))
    with pytest.raises(reel_mod.NotFoundError, match="no column"):
        task.align(1, ["observation.nope"])
    with pytest.raises(reel_mod.InvalidError, match="not a stream"):
        task.align(1, [FORCE + "_ns"])
    with pytest.raises(reel_mod.InvalidError, match="nearest"):
        task.align(1, [FORCE], method="linear")
    with pytest.raises(reel_mod.InvalidError, match="tolerance_s"):
        task.align(1, [FORCE], tolerance_s=0)
    with pytest.raises(reel_mod.NotFoundError):
        task.align(99)


def test_check_reports_repeated_stamps_and_a_stream_that_stops(run_reel, tmp_path):
    """The force stream of force_episode repeats a stamp (row 12); a second episode's stream
    stops 2 s before the end (a disconnect)."""
    length = 90
    hw = 5_000_000_000 + 2 * 100_000_000_000 + np.arange(length, dtype=np.int64) * T
    ns = hw - 1_000_000
    ns[30:] = 0
    extra = {FORCE: fsl(np.ones((length, 3), dtype=np.float32), 3), FORCE + "_ns": pa.array(ns, pa.int64())}
    task_dir = write_task(tmp_path, "times", [force_episode(), EpisodeSpec(2, length=length, extra_columns=extra)],
                          features_overrides=FEATURES)
    rc, report = check_report(run_reel, task_dir.path)
    assert rc == 0  # warnings only
    (rep,) = findings(report, "time.repeated_stamp")
    assert rep["path"].endswith(data_rel(1)) and f"{FORCE}_ns repeats the stamp" in rep["message"]
    assert "row 12" in rep["message"]
    (gap,) = findings(report, "time.stream_gap")
    assert gap["path"].endswith(data_rel(2))
    # From the last sample (row 29, 1 ms before its frame) to the last frame (row 89): 60 T + 1 ms.
    assert f"{FORCE}_ns has no sample from row 29 to row 90 (2.001 s)" in gap["message"]
    assert sorted(f["rule"] for f in all_findings(report) if f["rule"].startswith("time.")) == [
        "time.repeated_stamp", "time.stream_gap"]


def test_the_slam_frame_follows_the_authority_order(reel_mod, tmp_path):
    """Episode 1's row declares its own frame; episode 2 has none and falls back to info.json's
    feature (multi-device §7.3). The aligned table carries the frame in the field's metadata."""
    feats = {SLAM: {"dtype": "float64", "shape": [8], "encoding": "flat_points_8_txyz_qxyzw",
                    "frame": "down_left_forward", "frame_axes": {"+X": "down", "+Y": "left", "+Z": "forward"}}}
    own = {SLAM: {"frame": "ego_cam_optical", "time": {"t": "sensor_s", "clock": "camera_sensor"}}}
    task_dir = write_task(tmp_path, "frames", [EpisodeSpec(1, slam={SLAM: [1, 1, 1]}, row_extra={"slam_specs": own}),
                                               EpisodeSpec(2, slam={SLAM: [1, 0, 1]})],
                          features_overrides=feats)
    task = reel_mod.open(str(task_dir.path))
    one, two = task.slam_spec(1, SLAM), task.slam_spec(2, SLAM)
    assert (one["frame"], one["source"], one["time"]) == ("ego_cam_optical", "episode_row", own[SLAM]["time"])
    assert (two["frame"], two["source"]) == ("down_left_forward", "info_features")
    assert two["frame_axes"] == {"+X": "down", "+Y": "left", "+Z": "forward"}
    field = task.align(2, SLAM).schema.field(SLAM)
    assert field.metadata == {b"reel.frame": b"down_left_forward", b"reel.frame_source": b"info_features"}


def test_daft_gets_the_same_aligned_columns(reel_mod, reel_bin, tmp_path):
    import pyarrow.compute  # noqa: F401

    import reel.daft as reel_daft

    from .cli_run import reel as run

    run(reel_bin, "simulate", tmp_path / "sim", "--count", 2, "--seconds", 1)
    streams = [FORCE, SLAM, "observation.imu", "observation.left_glove"]
    frames = reel_daft.read(str(tmp_path / "sim"), columns=[], aligned=streams).to_arrow()
    task = reel_mod.open(str(tmp_path / "sim"))
    for n in (1, 2):
        want = task.align(n, streams)
        mine = frames.filter(pa.compute.equal(frames["episode_index"], n)).sort_by("frame_index")
        for name in want.column_names[2:]:
            assert mine[name].to_pylist() == want[name].to_pylist(), (n, name)
