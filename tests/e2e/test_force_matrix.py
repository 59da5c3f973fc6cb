"""Force-matrix columns (contract §7.2.1, reference-behaviour "Force matrix codec").

Scale authority: (1) the episode's own episodes-row force_matrix_specs, (2) info.json
features[col].scale, (3) 1. Expected decoded values come from the numpy encoder in
fixtures.py: int16 tiers decode to float32(q) / float32(scale), float32 is the raw frame."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from .checks import assert_finding, check_report, error_rules, findings
from .fixtures import (
    FM_TIERS,
    EpisodeSpec,
    ForceMatrixSpec,
    fm_expected,
    fm_quantize,
    fm_spec,
    make_force_frame,
    write_task,
)

COL = "observation.gripper_left_force_matrix"


def expected_summary(frames, tier):
    """(samples, first_row, decoded first non-empty frame)."""
    nonempty = [i for i, f in enumerate(frames) if f is not None]
    first = nonempty[0] if nonempty else -1
    return len(nonempty), first, (fm_expected(frames[first], tier) if nonempty else None)


def assert_fm_entry(entry, frames, tier, *, scale, scale_source):
    dtype, encoding, _ = FM_TIERS[tier]
    samples, first, dec = expected_summary(frames, tier)
    assert entry["column"] == COL
    assert entry["encoding"] == encoding
    assert entry["dtype"] == dtype
    assert entry["scale"] == scale
    assert entry["scale_source"] == scale_source
    assert entry["samples"] == samples
    assert entry["first_row"] == first
    fz = float(dec[:, :, 2].astype(np.float64).sum())
    assert entry["fz_sum"] == pytest.approx(fz, rel=1e-5, abs=1e-3)
    assert entry["min"] == pytest.approx(float(dec.min()), rel=1e-6)
    assert entry["max"] == pytest.approx(float(dec.max()), rel=1e-6)


def fm_entry(show, column=COL):
    hits = [e for e in show["force_matrices"] if e["column"] == column]
    assert len(hits) == 1, show["force_matrices"]
    return hits[0]


# --------------------------------------------------------------------------- tier change


TIER_CHANGE_FRAMES = {
    1: [None, make_force_frame(11), make_force_frame(12)],
    2: [make_force_frame(21), None, make_force_frame(22)],
}


@pytest.fixture
def tier_change(tmp_path):
    """ep1 int16x10 (list<int16>), ep2 float32 (list<float32>); info.json holds the latest (float32, 1)."""
    eps = [
        EpisodeSpec(1, force={COL: ForceMatrixSpec("int16x10", TIER_CHANGE_FRAMES[1])}),
        EpisodeSpec(2, force={COL: ForceMatrixSpec("float32", TIER_CHANGE_FRAMES[2])}),
    ]
    task = write_task(tmp_path, "tier_change", eps)
    assert task.info["features"][COL] == fm_spec("float32")
    return task


def test_tier_change_each_episode_uses_its_own_scale(reel_json, tier_change):
    s1 = reel_json("show", tier_change.path, 1)
    assert_fm_entry(fm_entry(s1), TIER_CHANGE_FRAMES[1], "int16x10", scale=10, scale_source="episode_row")
    s2 = reel_json("show", tier_change.path, 2)
    assert_fm_entry(fm_entry(s2), TIER_CHANGE_FRAMES[2], "float32", scale=1, scale_source="episode_row")


def test_tier_change_info_reports_latest_feature(reel_json, tier_change):
    feat = reel_json("info", tier_change.path)["features"][COL]
    assert feat["dtype"] == "float32"
    assert feat["encoding"] == "row_flat_raw"
    assert feat["scale"] == 1


def test_tier_change_passes_check(run_reel, tier_change):
    rc, report = check_report(run_reel, tier_change.path)
    assert rc == 0, error_rules(report)
    assert not findings(report, "data.force_matrix")


# --------------------------------------------------------------------------- scale fallbacks


@pytest.mark.parametrize("how", ["column_missing", "column_empty_object"])
def test_scale_falls_back_to_info_features(reel_json, run_reel, tmp_path, how):
    """Episodes recorded before v1.3.x: no force_matrix_specs column (10 columns), or a
    force_matrix_specs without this column -> info.json features[col].scale (here 100)."""
    frames = [make_force_frame(31), None]
    if how == "column_missing":
        spec = EpisodeSpec(1, length=2, force={COL: ForceMatrixSpec("int16x100", frames)}, row_drop=("force_matrix_specs",))
    else:
        spec = EpisodeSpec(1, length=2, force={COL: ForceMatrixSpec("int16x100", frames, row_spec=False)})
    task = write_task(tmp_path, "fallback", [spec])
    assert task.info["features"][COL]["scale"] == 100

    show = reel_json("show", task.path, 1)
    assert_fm_entry(fm_entry(show), frames, "int16x100", scale=100, scale_source="info_features")
    if how == "column_missing":
        assert "force_matrix_specs" in show["row"]["missing_columns"]
    else:
        assert "force_matrix_specs" not in show["row"]["missing_columns"]
    assert show["row"]["force_matrix_specs"] == {}

    rc, report = check_report(run_reel, task.path)
    assert rc == 0, error_rules(report)


def test_scale_defaults_to_one(reel_json, run_reel, tmp_path):
    """Neither the row nor info.json has a scale -> 1 (and check flags the feature)."""
    frames = [make_force_frame(41), make_force_frame(42)]
    spec = EpisodeSpec(1, length=2, force={COL: ForceMatrixSpec("int16x10", frames, row_spec=False)})
    task = write_task(tmp_path, "no_scale", [spec], features_overrides={COL: fm_spec("int16x10", scale=None)})
    show = reel_json("show", task.path, 1)
    e = fm_entry(show)
    assert e["scale"] == 1
    assert e["scale_source"] == "default"
    assert e["samples"] == 2 and e["first_row"] == 0
    # decoded at scale 1: the quantized integers themselves (10x the true values)
    q = fm_quantize(frames[0], "int16x10").astype(np.float32).reshape(250, 250, 3)
    assert e["fz_sum"] == pytest.approx(float(q[:, :, 2].astype(np.float64).sum()), rel=1e-5)
    assert e["min"] == float(q.min()) and e["max"] == float(q.max())
    rc, report = check_report(run_reel, task.path)
    assert_finding(report, "features.force_matrix_spec", "meta/info.json")


def test_row_scale_wins_over_info_scale(reel_json, tmp_path):
    """info.json says 1000, the episode row says 10: the row wins."""
    frames = [make_force_frame(51)]
    spec = EpisodeSpec(1, length=1, force={COL: ForceMatrixSpec("int16x10", frames)})
    task = write_task(tmp_path, "row_wins", [spec], features_overrides={COL: fm_spec("int16x1000")})
    e = fm_entry(reel_json("show", task.path, 1))
    assert e["scale"] == 10 and e["scale_source"] == "episode_row"
    assert_fm_entry(e, frames, "int16x10", scale=10, scale_source="episode_row")


# --------------------------------------------------------------------------- all tiers


@pytest.mark.parametrize("tier", sorted(FM_TIERS))
def test_each_tier_summary(reel_json, run_reel, tmp_path, tier):
    frames = [None, make_force_frame(60), None, make_force_frame(61)]
    task = write_task(tmp_path, f"tier_{tier}", [EpisodeSpec(1, length=4, force={COL: ForceMatrixSpec(tier, frames)})])
    e = fm_entry(reel_json("show", task.path, 1))
    assert_fm_entry(e, frames, tier, scale=FM_TIERS[tier][2], scale_source="episode_row")
    rc, report = check_report(run_reel, task.path)
    assert rc == 0, error_rules(report)


def test_two_columns_two_tiers_in_one_episode(reel_json, tmp_path):
    right = "observation.gripper_right_force_matrix"
    lf = [make_force_frame(70), None]
    rf = [None, make_force_frame(71)]
    spec = EpisodeSpec(1, length=2, force={COL: ForceMatrixSpec("int16x100", lf), right: ForceMatrixSpec("int16x1000", rf)})
    task = write_task(tmp_path, "two_cols", [spec])
    show = reel_json("show", task.path, 1)
    assert_fm_entry(fm_entry(show, COL), lf, "int16x100", scale=100, scale_source="episode_row")
    e = fm_entry(show, right)
    assert e["scale"] == 1000 and e["first_row"] == 1 and e["samples"] == 1


def test_column_without_samples(reel_json, tmp_path):
    task = write_task(tmp_path, "empty", [EpisodeSpec(1, length=2, force={COL: ForceMatrixSpec("int16x10", [None, None])})])
    e = fm_entry(reel_json("show", task.path, 1))
    assert e["samples"] == 0
    assert e["first_row"] == -1


# --------------------------------------------------------------------------- check rules


def test_check_flags_wrong_row_length(run_reel, tmp_path):
    fm = ForceMatrixSpec("int16x10", [make_force_frame(80), None], raw={1: np.zeros(100, dtype=np.int16)})
    task = write_task(tmp_path, "short_row", [EpisodeSpec(1, length=2, force={COL: fm})])
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    assert_finding(report, "data.force_matrix", "data/chunk-000/episode-000.parquet", severity="error")


def test_check_flags_dtype_disagreeing_with_encoding(run_reel, tmp_path):
    """Spec says row_diff_quantized (int16) but the column is list<float32>."""
    fm = ForceMatrixSpec("int16x10", [make_force_frame(81)], column_type=pa.list_(pa.float32()))
    task = write_task(tmp_path, "wrong_dtype", [EpisodeSpec(1, length=1, force={COL: fm})])
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    assert_finding(report, "data.force_matrix", "data/chunk-000/episode-000.parquet")


def test_check_flags_feature_without_encoding(run_reel, tmp_path):
    spec = EpisodeSpec(1, length=1, force={COL: ForceMatrixSpec("int16x10", [make_force_frame(82)])})
    feat = {"dtype": "int16", "shape": [250, 250, 3], "scale": 10}
    task = write_task(tmp_path, "no_encoding", [spec], features_overrides={COL: feat})
    rc, report = check_report(run_reel, task.path)
    assert_finding(report, "features.force_matrix_spec", "meta/info.json")


def test_old_tier_without_row_spec_does_not_borrow_the_latest_tier(reel_json, run_reel, tmp_path):
    """An int16x10 episode recorded before force_matrix_specs existed, followed by a float32
    episode that rewrote info.json: the float32 declaration says nothing about episode 1, so
    reel decodes it as row_diff_quantized with scale 1 (uncalibrated) and check warns."""
    f1 = [make_force_frame(41)]
    f2 = [make_force_frame(42)]
    task = write_task(tmp_path, "old_tier", [
        EpisodeSpec(1, length=1, force={COL: ForceMatrixSpec("int16x10", f1)}, row_drop=("force_matrix_specs",)),
        EpisodeSpec(2, length=1, force={COL: ForceMatrixSpec("float32", f2)}),
    ])
    assert task.info["features"][COL]["encoding"] == "row_flat_raw"
    e = fm_entry(reel_json("show", task.path, 1))
    assert (e["encoding"], e["dtype"], e["scale"], e["scale_source"]) == ("row_diff_quantized", "int16", 1, "default")
    rc, report = check_report(run_reel, task.path)
    assert rc == 0, error_rules(report)
    assert_finding(report, "features.force_matrix_spec", "meta/episodes/chunk-000/episode-000.parquet", severity="warning")


# --------------------------------------------------------------------------- fast and deep check

def _findings(run_reel, path, *flags):
    rc, out, err = run_reel("check", path, "--json", *flags)
    assert rc in (0, 1), err
    return rc, sorted((f["rule"], f["path"], f["message"]) for t in json.loads(out)["tasks"] for f in t["findings"])


@pytest.mark.parametrize("case", ["clean", "short_row", "null_row", "wrong_dtype", "empty_rows"])
def test_check_counts_cells_from_levels_like_the_deep_read(run_reel, tmp_path, case):
    """`reel check` counts force-matrix cells from the column's levels; `--deep` reads the
    values through Arrow. Same exit code and findings, bad cells included."""
    frames = [make_force_frame(90), None, make_force_frame(91)]
    kw = {}
    if case == "short_row":
        kw["raw"] = {1: np.arange(-50, 50, dtype=np.int16)}
    elif case == "wrong_dtype":
        kw["column_type"] = pa.list_(pa.float32())
    elif case == "empty_rows":
        frames = [None, None, None]
    fm = ForceMatrixSpec("int16x100", frames, **kw)
    task = write_task(tmp_path, case, [EpisodeSpec(1, length=3, force={COL: fm})])
    if case == "null_row":  # a null cell (not []), written over the fixture's column
        import pyarrow.parquet as pq
        path = task.path / "data/chunk-000/episode-000.parquet"
        t = pq.read_table(path)
        cells = t.column(COL).to_pylist()
        cells[1] = None
        t = t.set_column(t.schema.get_field_index(COL), COL, pa.array(cells, t.schema.field(COL).type))
        pq.write_table(t, path, compression="zstd")
    fast = _findings(run_reel, task.path)
    deep = _findings(run_reel, task.path, "--deep")
    assert fast == deep
    if case in ("short_row", "wrong_dtype"):
        assert any(r == "data.force_matrix" for r, _, _ in fast[1]), fast
    if case == "null_row":
        assert any(r == "data.null_list" for r, _, _ in fast[1]), fast


def test_check_fast_and_deep_agree_on_the_simulated_rig(run_reel, reel_bin, tmp_path):
    from .recorder_common import simulate
    task = tmp_path / "rig"
    simulate(reel_bin, task, "--count", "2", "--seconds", "1", "--video-size", "32x24", "--depth-ffv1")
    fast = _findings(run_reel, task)
    assert fast == _findings(run_reel, task, "--deep")
    assert fast[0] == 0, fast
