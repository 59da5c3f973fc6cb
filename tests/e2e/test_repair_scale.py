"""reel repair-scale (docs/maintenance.md; contract §7.2.1): the scale of int16 force-matrix
episodes without a spec in their episodes row, inferred from Σ(fz plane) ≈ the force sensor's
fz. Simulated tasks of every int16 tier have their specs stripped here with pyarrow (row
force_matrix_specs "{}", info.json's scale overwritten by a later float32-like 1, as the
contract describes); the tool must find the true tier and refuse episodes without contact."""

from __future__ import annotations

import glob
import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .checks import check_report

TIERS = {"int16": 1, "int16x10": 10, "int16x100": 100, "int16x1000": 1000}
MATRICES = ("observation.gripper_left_force_matrix", "observation.gripper_2_gripper_left_force_matrix")


def reel(reel_bin, *args, timeout=300):
    p = subprocess.run([reel_bin, *[str(a) for a in args]], capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def reel_json(reel_bin, *args):
    rc, out, err = reel(reel_bin, *args, "--json")
    assert rc == 0, f"reel {' '.join(map(str, args))} exited {rc}\n{out}\n{err}"
    return json.loads(out)


def row_files(task: Path) -> list:
    return sorted(glob.glob(str(task / "meta" / "episodes" / "chunk-*" / "episode-*.parquet")))


def data_digest(task: Path) -> dict:
    return {p: hashlib.sha256(open(p, "rb").read()).hexdigest()
            for p in sorted(glob.glob(str(task / "data" / "**" / "*.parquet"), recursive=True))}


def strip_specs(task: Path) -> None:
    """Old episodes: no force_matrix_specs in the rows; info.json's scale says 1."""
    for path in row_files(task):
        t = pq.read_table(path)
        i = t.schema.get_field_index("force_matrix_specs")
        t = t.set_column(i, "force_matrix_specs", pa.array(["{}"] * t.num_rows, pa.string()))
        pq.write_table(t, path)
    info_path = task / "meta" / "info.json"
    info = json.loads(info_path.read_text(encoding="utf-8"))
    for name in MATRICES:
        if name in info["features"]:
            info["features"][name]["scale"] = 1
    info_path.write_text(json.dumps(info, indent=2, ensure_ascii=False), encoding="utf-8")


def simulate(reel_bin, task: Path, tier: str, count: int = 2) -> None:
    rc, out, err = reel(reel_bin, "simulate", task, "--count", count, "--seconds", "2", "--no-video",
                        "--tier", tier)
    assert rc == 0, err


def row_specs(path: str) -> dict:
    return json.loads(pq.read_table(path).column("force_matrix_specs")[0].as_py())


@pytest.mark.parametrize("tier", list(TIERS))
def test_decides_the_true_tier_and_apply_writes_only_the_specs(reel_bin, run_reel, tmp_path, tier):
    task = tmp_path / f"sim_{tier}"
    simulate(reel_bin, task, tier)
    strip_specs(task)
    data_before = data_digest(task)
    rows_before = {p: pq.read_table(p) for p in row_files(task)}

    dry = reel_json(reel_bin, "repair-scale", task)
    assert not dry["applied"] and dry["rows_written"] == 0
    decisions = dry["decisions"]
    assert {(d["episode_index"], d["column"]) for d in decisions} == {(n, c) for n in (1, 2) for c in MATRICES}
    for d in decisions:
        assert d["decided"] and d["scale"] == TIERS[tier], d
        assert d["contact_frames"] >= 3 and d["current_source"] == "info_features"
    for p, t in rows_before.items():
        assert pq.read_table(p).equals(t), "a dry run writes nothing"
    rc, out, err = reel(reel_bin, "repair-scale", task)  # the human report shows the evidence
    assert rc == 0 and "ratio" in out and f"-> x{TIERS[tier]}" in out, out

    applied = reel_json(reel_bin, "repair-scale", task, "--apply")
    assert applied["rows_written"] == 2 and all(d["written"] for d in applied["decisions"])
    assert data_digest(task) == data_before, "data bytes are never written"
    for p, t in rows_before.items():
        now = pq.read_table(p)
        for name in t.column_names:
            if name != "force_matrix_specs":
                assert now.column(name).equals(t.column(name)), (p, name)
        specs = row_specs(p)
        assert set(specs) == set(MATRICES)
        for spec in specs.values():
            assert spec == {"dtype": "int16", "shape": [250, 250, 3], "encoding": "row_diff_quantized",
                            "scale": TIERS[tier]}
    # Idempotent: nothing is left without a spec.
    assert reel_json(reel_bin, "repair-scale", task)["decisions"] == []
    rc, report = check_report(run_reel, task)
    assert rc == 0, report


def zero_contact(task: Path, n: int) -> None:
    """Episode n without contact: force sensors read fz 0, matrices all zero."""
    path = glob.glob(str(task / "data" / "chunk-*" / f"episode-{n - 1:03d}.parquet"))[0]
    t = pq.read_table(path)
    for matrix in MATRICES:
        force = matrix[: -len("_matrix")]
        i = t.schema.get_field_index(force)
        zeros = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(3 * t.num_rows, np.float32)), 3)
        t = t.set_column(i, t.schema.field(i), zeros)
        j = t.schema.get_field_index(matrix)
        cells = [None if len(c) == 0 else np.zeros(187500, np.int16)
                 for c in t.column(matrix).to_numpy(zero_copy_only=False)]
        arr = pa.array([[] if c is None else c for c in cells], pa.list_(pa.int16()))
        t = t.set_column(j, t.schema.field(j), arr)
    pq.write_table(t, path, compression="zstd")


def test_refuses_episodes_without_contact(reel_bin, tmp_path):
    task = tmp_path / "sim_nocontact"
    simulate(reel_bin, task, "int16x100")
    strip_specs(task)
    zero_contact(task, 2)
    applied = reel_json(reel_bin, "repair-scale", task, "--apply")
    by = {(d["episode_index"], d["column"]): d for d in applied["decisions"]}
    for c in MATRICES:
        assert by[(1, c)]["scale"] == 100 and by[(1, c)]["written"]
        refused = by[(2, c)]
        assert refused["scale"] is None and not refused["decided"] and not refused["written"], refused
        assert refused["contact_frames"] == 0 and "no contact" in refused["reason"]
    assert applied["refused"] == 2
    rows = row_files(task)
    assert set(row_specs(rows[0])) == set(MATRICES)
    assert row_specs(rows[1]) == {}, "a refused episode's row is left as it was"


def test_python_repair_scale(reel_mod, reel_bin, tmp_path):
    task = tmp_path / "sim_py"
    simulate(reel_bin, task, "int16x10", count=1)
    strip_specs(task)
    r = reel_mod.repair_scale(task)
    assert not r["applied"] and {d["scale"] for d in r["decisions"]} == {10}
    r = reel_mod.repair_scale(task, apply=True, episodes=[1])
    assert r["rows_written"] == 1
    assert reel_mod.repair_scale(task)["decisions"] == []


def test_refuses_a_ratio_between_tiers(reel_bin, tmp_path):
    """x100 matrices against a force sensor reading 25x higher: ratio ~4, between x1 and x10."""
    task = tmp_path / "sim_between"
    simulate(reel_bin, task, "int16x100", count=1)
    strip_specs(task)
    path = glob.glob(str(task / "data" / "chunk-*" / "episode-000.parquet"))[0]
    t = pq.read_table(path)
    for matrix in MATRICES:
        force = matrix[: -len("_matrix")]
        i = t.schema.get_field_index(force)
        values = np.array(t.column(force).to_pylist(), np.float32) * 25
        t = t.set_column(i, t.schema.field(i), pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), 3))
    pq.write_table(t, path, compression="zstd")
    rows_before = {p: open(p, "rb").read() for p in row_files(task)}
    r = reel_json(reel_bin, "repair-scale", task, "--apply")
    assert len(r["decisions"]) == 2 and r["refused"] == 2 and r["rows_written"] == 0
    for d in r["decisions"]:
        assert d["scale"] is None and d["ratio"] == pytest.approx(4, rel=0.05) and "refused" in d["reason"], d
    assert {p: open(p, "rb").read() for p in row_files(task)} == rows_before
