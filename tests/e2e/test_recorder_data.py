"""Data parquet written by the recorder (contract §7, 002 §4.6/§5.5/Appendix C, reference "data parquet").

One shared task: `reel simulate pick_cube --count 3 --seconds 2 --seed 1` (30 fps, force
matrix at the default tier int16x100). Read with pyarrow/numpy only.
"""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq

from .fixtures import FM_FLAT, data_rel
from .recorder_common import (
    ALWAYS_COLUMNS,
    FM_COL,
    SIM_COLUMNS,
    expected_type,
    fixed_matrix,
    list_rows,
    listing,
    type_str,
)


def test_simulate_reported_three_committed_episodes(sim):
    assert [(e["episode_index"], e["committed"]) for e in sim.episodes] == [(1, True), (2, True), (3, True)], sim.episodes


def test_every_column_chunk_is_zstd(sim):
    bad = []
    for n in sim.numbers:
        md = pq.ParquetFile(sim.path / data_rel(n)).metadata
        assert md.num_row_groups >= 1, f"{data_rel(n)} has no row group"
        for i in range(md.num_row_groups):
            rg = md.row_group(i)
            for j in range(rg.num_columns):
                c = rg.column(j)
                if c.compression != "ZSTD":
                    bad.append(f"{data_rel(n)} rg{i} {c.path_in_schema}: {c.compression}")
    assert not bad, "column chunks not zstd-compressed (§7: zstd):\n  " + "\n  ".join(bad[:40])


def test_column_types_by_family(sim, tables):
    bad = []
    for n, t in tables.items():
        for f in t.schema:
            want = expected_type(f.name, sim.tier)
            got = type_str(f.type)
            if want is None:
                bad.append(f"N={n} {f.name}: {got} is no column family of the contract")
            elif got != want:
                bad.append(f"N={n} {f.name}: {got}, expected {want}")
    assert not bad, "data parquet types (reference 'data parquet', Appendix C):\n  " + "\n  ".join(bad)


def test_rig_columns_present(sim, tables):
    union = set().union(*(set(t.column_names) for t in tables.values()))
    missing = [c for c in SIM_COLUMNS if c not in union]
    assert not missing, f"columns the simulated rig records are in no data file: {missing}\nhave: {sorted(union)}"
    for n, t in tables.items():
        miss = [c for c in ALWAYS_COLUMNS if c not in t.column_names]
        assert not miss, f"N={n}: always-present columns missing (§7.1 键列恒有, action/hand pose 恒写): {miss}"


def test_no_video_files(sim):
    assert not listing(sim.path, "videos"), f"video is off in this slice, yet: {listing(sim.path, 'videos')}"


def test_no_nulls_anywhere(tables):
    bad = []
    for n, t in tables.items():
        for name in t.column_names:
            col = t.column(name)
            if col.null_count:
                bad.append(f"N={n} {name}: {col.null_count} null rows")
            for chunk in col.chunks:
                child = chunk
                depth = 0
                while hasattr(child, "flatten") and (child.type.num_fields == 1) and depth < 3:
                    child = child.flatten()
                    depth += 1
                    if child.null_count:
                        bad.append(f"N={n} {name}: {child.null_count} null values at depth {depth}")
                        break
    assert not bad, "nulls in the data (rows without a sample are [0]*d, [], 0 or 'connected', never null):\n  " + "\n  ".join(bad)


def test_length_matches_fps_times_seconds(sim, tables):
    want = sim.fps * sim.seconds
    by_n = {e["episode_index"]: e for e in sim.episodes}
    for n, t in tables.items():
        assert abs(t.num_rows - want) <= 1, f"N={n}: {t.num_rows} rows, expected fps*seconds = {want:g} (±1)"
        assert by_n[n]["length"] == t.num_rows, f"simulate --json says length {by_n[n]['length']} for N={n}, the file has {t.num_rows} rows"


def test_key_columns(sim, tables):
    for n, t in tables.items():
        rows = t.num_rows
        ep = t.column("episode_index").to_numpy()
        assert (ep == n).all(), f"N={n}: episode_index values {sorted(set(ep.tolist()))}"
        fi = t.column("frame_index").to_numpy()
        assert fi.tolist() == list(range(rows)), f"N={n}: frame_index is not 0..{rows - 1} without gaps: {fi.tolist()[:20]}..."
        ti = t.column("task_index").to_numpy()
        assert (ti == 0).all(), f"N={n}: task_index values {sorted(set(ti.tolist()))}, expected 0"
        wt = t.column("wall_time").to_numpy()
        assert (np.diff(wt) > 0).all(), f"N={n}: wall_time not strictly increasing at rows {np.where(np.diff(wt) <= 0)[0].tolist()[:10]}"
        assert 1.5e9 < wt[0] < 4e9, f"N={n}: wall_time[0]={wt[0]} is not absolute Unix seconds"
        ts = t.column("timestamp").to_numpy().astype(np.float64)
        assert (np.diff(ts) >= 0).all(), f"N={n}: timestamp decreases at rows {np.where(np.diff(ts) < 0)[0].tolist()[:10]}"
        assert 0 <= ts[0] <= sim.seconds, f"N={n}: timestamp[0]={ts[0]} is not episode-relative seconds"


def test_action_is_zero_placeholder(tables):
    for n, t in tables.items():
        a = fixed_matrix(t.column("action"))
        assert a.shape == (t.num_rows, 1) and (a == 0.0).all(), f"N={n}: action must be [0.0] on every row; nonzero rows {np.where(a.any(axis=1))[0].tolist()[:10]}"


def test_hand_pose_is_zero_placeholder(tables):
    for n, t in tables.items():
        for col in ("observation.left_hand_pose", "observation.right_hand_pose"):
            m = fixed_matrix(t.column(col))
            assert (m == 0.0).all(), f"N={n} {col}: the placeholder must be all zeros (§7.2)"


def test_gloves_have_zero_and_nonzero_rows(tables):
    for col in ("observation.left_glove", "observation.right_glove"):
        zero = nonzero = 0
        for t in tables.values():
            m = fixed_matrix(t.column(col))
            z = ~m.any(axis=1)
            zero += int(z.sum())
            nonzero += int((~z).sum())
        assert nonzero > 0, f"{col}: every row is zero"
        assert zero > 0, f"{col}: the simulator promises some all-zero rows (needed to test that stats count them); found none"


def test_status_columns_are_strings(tables):
    for n, t in tables.items():
        for name in t.column_names:
            if name.startswith("status."):
                vals = t.column(name).to_pylist()
                assert all(isinstance(v, str) and v for v in vals), f"N={n} {name}: {sorted(set(map(repr, vals)))[:5]}"


def test_slam_ns_lockstep_with_points(tables):
    bad = []
    for n, t in tables.items():
        slam_cols = [c for c in t.column_names if c.endswith("slam_trajectory")]
        assert slam_cols, f"N={n}: no slam trajectory column"
        for col in slam_cols:
            pts = list_rows(t.column(col))
            if col + "_ns" not in t.column_names:
                bad.append(f"N={n} {col}_ns missing")
                continue
            ns = list_rows(t.column(col + "_ns"))
            npts = 0
            for i, (p, s) in enumerate(zip(pts, ns)):
                npts += len(p) // 8
                if len(p) % 8:
                    bad.append(f"N={n} {col} row {i}: {len(p)} values, not a multiple of 8")
                elif len(s) != len(p) // 8:
                    bad.append(f"N={n} {col}_ns row {i}: {len(s)} stamps for {len(p) // 8} points")
            if npts == 0:
                bad.append(f"N={n} {col}: the column exists but holds no point (a column exists only if it has points)")
    assert not bad, "slam_trajectory_ns rows must have len(slam row)/8 entries:\n  " + "\n  ".join(bad[:40])


def test_imu_ts_lockstep_with_samples(tables):
    total = 0
    for n, t in tables.items():
        imu = list_rows(t.column("observation.imu"))
        ts = list_rows(t.column("imu_ts_ns"))
        for i, (a, b) in enumerate(zip(imu, ts)):
            assert len(a) == len(b), f"N={n} row {i}: {len(a)} IMU samples but {len(b)} imu_ts_ns entries"
            total += len(a)
    assert total > 0, "the simulated IMU produced no sample"


def test_force_matrix_rows_are_empty_or_full_frames(tables):
    for n, t in tables.items():
        rows = list_rows(t.column(FM_COL))
        lens = sorted({len(r) for r in rows})
        assert set(lens) <= {0, FM_FLAT}, f"N={n} {FM_COL}: row lengths {lens}, expected 0 or {FM_FLAT}"
        assert FM_FLAT in lens, f"N={n} {FM_COL}: no frame at all"
        ns = t.column(FM_COL + "_ns").to_numpy()
        empty_with_ns = [i for i, r in enumerate(rows) if len(r) == 0 and ns[i] != 0]
        assert not empty_with_ns, f"N={n}: rows without a matrix sample must have {FM_COL}_ns 0 (§5.5): rows {empty_with_ns[:10]}"
