"""meta/ files written by the recorder: episodes rows (§6), info.json (§3, 002 §6), stats.json (§4),
tasks.jsonl (§5). Shared task: `reel simulate pick_cube --count 3 --seconds 2 --seed 1`."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from .fixtures import row_rel
from .recorder_common import (
    ACTION_PLACEHOLDER,
    EPISODE_ROW_TYPES,
    FM_COL,
    KEY_TYPES,
    ROW_JSON_COLUMNS,
    expected_feature,
    fixed_matrix,
    fm_spec_of,
    info,
    list_rows,
    paths_info,
    row_dict,
    row_json,
    row_table,
    simulate,
    spec_mismatch,
    stats,
    type_str,
)

# --------------------------------------------------------------------------- episodes rows


def test_episode_row_schema(sim):
    for n in sim.numbers:
        t = row_table(sim.path, n)
        names = t.column_names
        want = [c for c, _ in EPISODE_ROW_TYPES]
        assert names[:11] == want, f"{row_rel(n)}: columns {names}, expected the 11 in contract order {want}"
        assert names in (want, want + ["slam_specs"]), f"{row_rel(n)}: columns {names}; only slam_specs may follow the 11"
        types = {f.name: type_str(f.type) for f in t.schema}
        bad = [f"{c}: {types[c]} != {ty}" for c, ty in EPISODE_ROW_TYPES if types[c] != ty]
        if "slam_specs" in types and types["slam_specs"] != "string":
            bad.append(f"slam_specs: {types['slam_specs']} != string")
        assert not bad, f"{row_rel(n)} types: {bad}"
        assert t.num_rows == 1, f"{row_rel(n)}: {t.num_rows} rows, expected exactly 1"


def test_episode_row_values(sim, tables):
    for n in sim.numbers:
        row = row_dict(sim.path, n)
        rows = tables[n].num_rows
        assert row["episode_index"] == n
        assert row["task_index"] == 0
        assert row["start_frame_index"] == 0
        assert row["length"] == rows, f"N={n}: length {row['length']} != data rows {rows}"
        assert row["end_frame_index"] == rows - 1, f"N={n}: end_frame_index {row['end_frame_index']} != length-1 = {rows - 1}"
        assert row["duration_sec"] == pytest.approx(rows / sim.fps, rel=1e-9), f"N={n}: duration_sec {row['duration_sec']} != length/fps = {rows / sim.fps}"
        assert 1.5e9 < row["created_at"] < 4e9, f"N={n}: created_at {row['created_at']} is not Unix seconds"
        wt0 = float(tables[n].column("wall_time")[0].as_py())
        assert abs(row["created_at"] - wt0) < 10.0, f"N={n}: created_at {row['created_at']} (episode start) is {row['created_at'] - wt0:+.3f} s from wall_time[0] {wt0}"


def test_episode_row_json_columns_parse(sim):
    for n in sim.numbers:
        row = row_dict(sim.path, n)
        for c in ROW_JSON_COLUMNS:
            if c in row:
                v = row_json(row, c)
                assert isinstance(v, dict), f"N={n} {c}: JSON {type(v).__name__}, expected an object"


def test_episode_row_force_matrix_specs(sim):
    for n in sim.numbers:
        specs = row_json(row_dict(sim.path, n), "force_matrix_specs")
        assert FM_COL in specs, f"N={n}: force_matrix_specs {specs} lacks {FM_COL}"
        bad = spec_mismatch(specs[FM_COL], fm_spec_of(sim.tier))
        assert not bad, f"N={n} force_matrix_specs[{FM_COL}] at tier {sim.tier}: {bad}"
        extra = [k for k in specs if not k.endswith("_force_matrix")]
        assert not extra, f"N={n}: force_matrix_specs names non-force-matrix columns {extra}"


def test_episode_row_slam_specs_match_data(sim, tables):
    """slam_specs (002 §7.2, implemented per contract-decisions): one entry per trajectory of this episode."""
    inf = info(sim.path)
    for n in sim.numbers:
        row = row_dict(sim.path, n)
        if "slam_specs" not in row:
            continue
        specs = row_json(row, "slam_specs")
        traj = sorted(c for c in tables[n].column_names if c.endswith("slam_trajectory"))
        assert sorted(specs) == traj, f"N={n}: slam_specs keys {sorted(specs)} != trajectory columns of the episode {traj}"
        for c in traj:
            assert specs[c].get("frame") == inf["features"][c].get("frame"), f"N={n} {c}: slam_specs frame {specs[c].get('frame')!r} != features frame {inf['features'][c].get('frame')!r}"


# --------------------------------------------------------------------------- info.json


def test_info_fixed_keys(sim):
    inf = info(sim.path)
    assert inf.get("format") == "pooled_episodes_v1"
    assert inf.get("chunks_size") == 1000 and not isinstance(inf.get("chunks_size"), bool)
    for k, v in paths_info().items():
        assert inf.get(k) == v, f"info.json {k} = {inf.get(k)!r}, expected {v!r}"
    assert inf.get("codebase_version") == "v3.0"
    assert isinstance(inf.get("app_version"), str) and inf["app_version"], inf.get("app_version")
    assert isinstance(inf.get("fps"), float) and inf["fps"] == sim.fps, f"fps {inf.get('fps')!r}"
    assert inf.get("video") is False, f"video is off in this slice, info.json video = {inf.get('video')!r}"
    assert inf.get("task_name") == "pick_cube"
    assert inf.get("sensor_dim") == 256
    assert set(inf.get("sensors", [])) >= {"left_glove", "right_glove"}, inf.get("sensors")
    assert inf.get("total_episodes") == max(sim.numbers) == 3
    assert isinstance(inf.get("created_at"), (int, float)) and 1.5e9 < inf["created_at"] < 4e9, inf.get("created_at")
    assert inf.get("cameras") == {}, f"no video recorded, yet cameras = {inf.get('cameras')}"
    assert inf.get("video_extensions") == {}, f"no video recorded, yet video_extensions = {inf.get('video_extensions')}"
    assert isinstance(inf.get("calibration"), dict), inf.get("calibration")
    assert isinstance(inf.get("device_names"), dict), inf.get("device_names")


def test_info_is_utf8_without_escapes(sim):
    text = (sim.path / "meta/info.json").read_text(encoding="utf-8")
    assert "\\u" not in text, "info.json holds \\u escapes; the reference writes UTF-8 as is"
    json.loads(text)


def test_info_features_declare_every_observation_column(sim, tables):
    feats = info(sim.path)["features"]
    union = set().union(*(set(t.column_names) for t in tables.values()))
    missing = sorted(c for c in union if c.startswith("observation.") and c not in feats)
    assert not missing, f"observation.* columns without a feature (002 §6.8.2): {missing}"
    forbidden = sorted(c for c in feats if c.startswith("status.") or c in KEY_TYPES)
    assert not forbidden, f"features must not declare status.* or key columns: {forbidden}"
    phantom = sorted(c for c in feats if c != "action" and c not in union)
    assert not phantom, f"features declare columns that appear in no data file (§3 只声明实际存在的列): {phantom}"
    assert spec_mismatch(feats.get("action"), {"dtype": "float32", "shape": [1]}) == [], feats.get("action")


def test_info_feature_declarations_by_family(sim):
    feats = info(sim.path)["features"]
    bad = []
    for name, feat in sorted(feats.items()):
        want = expected_feature(name, sim.tier)
        if want is None:
            continue
        for m in spec_mismatch(feat, want):
            bad.append(f"{name}: {m}")
        if name.endswith("slam_trajectory"):
            if not (isinstance(feat.get("frame"), str) and feat["frame"]):
                bad.append(f"{name}: frame missing or empty: {feat.get('frame')!r}")
            axes = feat.get("frame_axes")
            if not (isinstance(axes, dict) and set(axes) == {"+X", "+Y", "+Z"}):
                bad.append(f"{name}: frame_axes {axes!r}, expected {{'+X','+Y','+Z'}} -> direction")
    assert not bad, "info.json features (002 §6.2 / reference 'Feature declarations'):\n  " + "\n  ".join(bad)


def test_info_glove_and_imu_and_matrix_shapes(sim):
    feats = info(sim.path)["features"]
    assert feats["observation.left_glove"]["shape"] == [16, 16]
    assert feats["observation.right_glove"]["shape"] == [16, 16]
    assert feats["observation.imu"]["shape"] == [6]
    assert spec_mismatch(feats[FM_COL], fm_spec_of(sim.tier)) == [], feats[FM_COL]


def test_info_slam_frames(sim):
    inf = info(sim.path)
    feats = inf["features"]
    traj = sorted(c for c in feats if c.endswith("slam_trajectory"))
    assert "observation.slam_trajectory" in traj, traj
    assert "gripper_slam_frame" in inf, "a gripper trajectory exists, so info.json needs gripper_slam_frame"
    assert inf["gripper_slam_frame"] == feats["observation.slam_trajectory"].get("frame"), (
        f"gripper_slam_frame {inf['gripper_slam_frame']!r} != rig 1 frame {feats['observation.slam_trajectory'].get('frame')!r}"
    )
    sf = inf.get("slam_frames")
    assert isinstance(sf, dict), f"slam_frames {sf!r}"
    assert sorted(sf) == traj, f"slam_frames keys {sorted(sf)} != trajectory columns {traj}"
    bad = {c: (sf[c], feats[c].get("frame")) for c in traj if sf[c] != feats[c].get("frame")}
    assert not bad, f"slam_frames disagree with features[...].frame (col: (slam_frames, features)): {bad}"


def test_info_devices(sim):
    inf = info(sim.path)
    devs = inf.get("devices")
    assert isinstance(devs, list) and devs, f"devices {devs!r}"
    keys = []
    for d in devs:
        assert isinstance(d, dict) and {"key", "kind", "name", "slots"} <= set(d), f"device entry {d!r} lacks key/kind/name/slots"
        assert all(isinstance(d[k], str) and d[k] for k in ("key", "kind", "name")), d
        assert isinstance(d["slots"], list) and all(isinstance(s, str) for s in d["slots"]), d
        keys.append(d["key"])
    assert len(keys) == len(set(keys)), f"duplicate device keys: {keys}"
    kinds = [d["kind"] for d in devs]
    assert kinds.count("gripper") == 2, f"two gripper rigs were simulated; device kinds: {kinds}"


def test_info_device_names_cover_every_slot(sim):
    inf = info(sim.path)
    dn = inf["device_names"]
    missing = {s: d["name"] for d in inf["devices"] for s in d["slots"] if dn.get(s) != d["name"]}
    assert not missing, f"device_names must map every slot of every device to its name (002 §6.4); wrong/missing: {missing}"


# --------------------------------------------------------------------------- info.json across runs


@pytest.fixture
def two_runs(reel_bin, tmp_path):
    """One episode, hand-added unknown keys, a second episode. Returns (path, info before edit, edited, after)."""
    task = tmp_path / "two_runs"
    simulate(reel_bin, task, "--count", 1, "--seconds", 0.5)
    before = info(task)
    edited = {}
    for k, v in before.items():
        edited[k] = v
        if k == "fps":
            edited["zz_inserted_after_fps"] = {"operator": "张三", "n": [1, 2.5, None]}
    edited["lab_note"] = "keep me"
    edited["features"]["observation.imu"]["x_vendor_note"] = "keep me too"
    (task / "meta/info.json").write_text(json.dumps(edited, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    simulate(reel_bin, task, "--count", 1, "--seconds", 0.5)
    return task, before, edited, info(task)


def test_created_at_set_once(two_runs):
    _task, before, _edited, after = two_runs
    assert after["created_at"] == before["created_at"], f"info.json created_at changed {before['created_at']} -> {after['created_at']} (task creation time, set once)"
    assert after["total_episodes"] == 2


def test_unknown_info_keys_survive(two_runs):
    _task, _before, edited, after = two_runs
    for k in ("zz_inserted_after_fps", "lab_note"):
        assert k in after, f"unknown top-level key {k!r} was dropped by the second simulate"
        assert after[k] == edited[k], f"unknown key {k!r}: {after[k]!r} != {edited[k]!r}"


def test_unknown_info_keys_keep_their_place(two_runs):
    _task, _before, edited, after = two_runs
    order = [k for k in after if k in edited]
    assert order == list(edited), f"info.json key order changed:\n  before: {list(edited)}\n  after:  {list(after)}"


def test_unknown_key_inside_a_feature_survives(two_runs):
    _task, _before, _edited, after = two_runs
    got = after["features"]["observation.imu"].get("x_vendor_note")
    assert got == "keep me too", f"features['observation.imu'] = {after['features']['observation.imu']}: the hand-added key was dropped"


def test_tasks_jsonl_written_once(two_runs):
    task = two_runs[0]
    text = (task / "meta/tasks.jsonl").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) == 1, f"tasks.jsonl must be one line: {text!r}"
    assert json.loads(lines[0]) == {"task_index": 0, "task": "two_runs"}


# --------------------------------------------------------------------------- stats.json


def _close_block(name, got, x: np.ndarray) -> list:
    """Compare a stats block with the float64 recomputation from the data (x: samples x dim)."""
    bad = []
    n, d = x.shape
    mean = x.mean(axis=0)
    var2 = x.var(axis=0)  # population variance (ddof=0)
    if got.get("count") != n:
        bad.append(f"{name}.count {got.get('count')} != {n}")
    for k in ("mean", "std", "min", "max"):
        if not (isinstance(got.get(k), list) and len(got[k]) == d):
            bad.append(f"{name}.{k}: expected a list of {d} numbers, got {str(got.get(k))[:80]}")
    if bad:
        return bad
    gm, gs = np.asarray(got["mean"], float), np.asarray(got["std"], float)
    gmin, gmax = np.asarray(got["min"], float), np.asarray(got["max"], float)
    scale = np.abs(mean) + np.sqrt(np.maximum(var2, 0)) + 1e-300
    i = np.where(np.abs(gm - mean) > 1e-9 * scale + 1e-12)[0]
    if i.size:
        bad.append(f"{name}.mean[{i[0]}] {float(gm[i[0]])!r} != {float(mean[i[0]])!r} ({i.size} dims differ)")
    # std: compare variances relative to the second moment (cancellation of sum_sq/n - mean^2)
    second = (x * x).mean(axis=0) + 1e-300
    i = np.where(np.abs(gs * gs - var2) > 1e-9 * second + 1e-12)[0]
    if i.size:
        j = i[0]
        bad.append(
            f"{name}.std[{j}] {float(gs[j])!r} != population std {float(np.sqrt(max(var2[j], 0)))!r} "
            f"(sample std would be {float(np.sqrt(var2[j] * n / max(n - 1, 1)))!r}; {i.size} dims differ)"
        )
    for k, g, w in (("min", gmin, x.min(axis=0)), ("max", gmax, x.max(axis=0))):
        i = np.where(np.abs(g - w) > 1e-9 * np.abs(w) + 1e-12)[0]
        if i.size:
            bad.append(f"{name}.{k}[{i[0]}] {float(g[i[0]])!r} != {float(w[i[0]])!r} ({i.size} dims differ)")
    return bad


def test_stats_blocks_have_count(sim):
    st = stats(sim.path)
    no_count = [k for k, v in st.items() if not (isinstance(v, dict) and isinstance(v.get("count"), int))]
    assert not no_count, f"stats blocks without an integer count (§4 MUST): {no_count}"


def test_stats_block_set(sim):
    st = stats(sim.path)
    assert set(st) == {"observation.left_glove", "observation.right_glove", "observation.imu", "action"}, (
        f"stats.json blocks {sorted(st)}; §4/reference: only observation.<sensor>, observation.imu and the action placeholder"
    )


def test_stats_action_placeholder(sim):
    st = stats(sim.path)
    assert st.get("action") == ACTION_PLACEHOLDER, f"action block {st.get('action')}"
    a = st["action"]
    assert all(isinstance(v, float) for k in ("mean", "std", "min", "max") for v in a[k]), f"placeholder values must be JSON floats (0.0/1.0): {a}"


@pytest.mark.parametrize("col", ["observation.left_glove", "observation.right_glove"])
def test_stats_glove_recomputed(sim, tables, col):
    x = np.concatenate([fixed_matrix(tables[n].column(col)) for n in sim.numbers if col in tables[n].column_names])
    zero_rows = int((~x.any(axis=1)).sum())
    st = stats(sim.path)
    assert col in st, f"stats.json lacks {col}"
    bad = _close_block(col, st[col], x)
    hint = f" (data: {x.shape[0]} rows, of which {zero_rows} all-zero rows that must be counted)"
    assert not bad, "stats.json vs numpy over all data files" + hint + ":\n  " + "\n  ".join(bad)


def test_stats_imu_recomputed_per_sample(sim, tables):
    samples = []
    rows = 0
    for n in sim.numbers:
        for r in list_rows(tables[n].column("observation.imu")):
            rows += 1
            if len(r):
                samples.append(np.asarray(r, dtype=np.float64))
    x = np.concatenate(samples)
    st = stats(sim.path)
    assert "observation.imu" in st, "stats.json lacks observation.imu"
    bad = _close_block("observation.imu", st["observation.imu"], x)
    assert not bad, f"observation.imu stats vs numpy ({x.shape[0]} samples on {rows} rows; count is per sample):\n  " + "\n  ".join(bad)


def test_stats_doubles_are_plain_json(sim):
    text = (sim.path / "meta/stats.json").read_text(encoding="utf-8")
    for bad in ("NaN", "Infinity"):
        assert bad not in text, f"stats.json holds {bad}"
    assert re.search(r"\d", text)
