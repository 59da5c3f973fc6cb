"""reel stats --rebuild / --verify (docs/maintenance.md; contract §4): meta/stats.json recomputed
from data/ with the contract's accumulator. Expected values are computed here with numpy from
the data parquet files (count per row for gloves, zero-filled rows included; per sample for
observation.imu; population std; hand-pose placeholders and action never counted)."""

from __future__ import annotations

import glob
import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .checks import check_report, findings
from .fixtures import EpisodeSpec, write_json, write_task

GLOVE = "observation.left_glove"
IMU = "observation.imu"


def reel(reel_bin, *args, timeout=120):
    p = subprocess.run([reel_bin, *[str(a) for a in args]], capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def reel_json(reel_bin, *args, ok=(0,)):
    rc, out, err = reel(reel_bin, *args, "--json")
    assert rc in ok, f"reel {' '.join(map(str, args))} exited {rc}\n{out}\n{err}"
    return json.loads(out)


def expected_stats(task_dir) -> dict:
    """The contract's blocks, computed from every data file with numpy (independent of reel)."""
    gloves, imu = {}, []
    for path in sorted(glob.glob(os.path.join(task_dir, "data", "chunk-*", "episode-*.parquet"))):
        t = pq.read_table(path)
        for field in t.schema:  # glove columns: observation.<sensor>, fixed_size_list<float32>[256]
            if pa.types.is_fixed_size_list(field.type) and field.type.list_size == 256:
                rows = np.array(t.column(field.name).to_pylist(), dtype=np.float32).reshape(-1, 256)
                gloves.setdefault(field.name, []).append(rows)
        if IMU in t.column_names:
            samples = [s for row in t.column(IMU).to_pylist() for s in row]
            if samples:
                imu.append(np.array(samples, dtype=np.float32).reshape(-1, 6))

    def block(parts):
        v = np.concatenate(parts).astype(np.float64)
        return {"count": len(v), "mean": v.mean(0), "std": v.std(0, ddof=0), "min": v.min(0), "max": v.max(0)}

    out = {name: block(parts) for name, parts in gloves.items()}
    if imu:
        out[IMU] = block(imu)
    return out


def assert_stats_equal(stats: dict, expected: dict):
    for name, exp in expected.items():
        blk = stats[name]
        assert blk["count"] == exp["count"], name
        for k in ("mean", "min", "max"):
            np.testing.assert_allclose(np.array(blk[k]), exp[k], rtol=1e-9, atol=1e-12, err_msg=f"{name}.{k}")
        # The accumulator's std is sqrt(sum_sq/n - mean^2) (contract §4): where the variance
        # is tiny beside mean^2 it carries float64 cancellation of ~sqrt(eps) * |mean|.
        atol = 1e-7 * max(1.0, float(np.abs(exp["mean"]).max()))
        np.testing.assert_allclose(np.array(blk["std"]), exp["std"], rtol=1e-7, atol=atol, err_msg=f"{name}.std")
    assert stats["action"] == {"count": 0, "mean": [0.0], "std": [1.0], "min": [0.0], "max": [0.0]}
    assert not any(k.endswith("hand_pose") for k in stats), "hand-pose placeholders are never counted"


def read_stats(task_dir) -> dict:
    with open(os.path.join(task_dir, "meta", "stats.json"), encoding="utf-8") as f:
        return json.load(f)


def countless_task(tmp_path, name="t"):
    eps = [
        EpisodeSpec(1, length=5, zero_glove_rows=(0, 3), imu=[2, 0, 3, 1, 4]),
        EpisodeSpec(2, length=3, zero_glove_rows=(1,), imu=[0, 0, 5]),
        EpisodeSpec(4, length=4, zero_glove_rows=(), imu=[1, 1, 1, 1]),
    ]
    return write_task(tmp_path, name, eps, stats_drop_count=(GLOVE, IMU))


def test_rebuild_countless_blocks_then_check_passes(reel_bin, run_reel, tmp_path):
    task = countless_task(tmp_path)
    _, report = check_report(run_reel, task.path)
    assert findings(report, "stats.count"), "a v1.1.0 block without count fails check before the rebuild"

    v = reel_json(reel_bin, "stats", task.path, "--verify", ok=(1,))
    assert not v["agrees"] and not v["written"]
    assert {(d["block"], d["what"]) for d in v["diffs"]} >= {(GLOVE, "count"), (IMU, "count")}

    r = reel_json(reel_bin, "stats", task.path, "--rebuild")
    assert r["written"] and r["episodes"] == 3
    stats = read_stats(task.path)
    exp = expected_stats(task.path)
    assert exp[GLOVE]["count"] == 12  # every row, zero-filled ones included
    assert exp[IMU]["count"] == 10 + 5 + 4  # every sample
    assert_stats_equal(stats, exp)

    rc, report = check_report(run_reel, task.path)
    assert not findings(report, "stats.count"), report
    assert rc == 0, report
    assert reel_json(reel_bin, "stats", task.path, "--verify")["agrees"]


def test_rebuild_is_idempotent(reel_bin, tmp_path):
    task = countless_task(tmp_path)
    reel_json(reel_bin, "stats", task.path, "--rebuild")
    before = open(os.path.join(task.path, "meta", "stats.json"), "rb").read()
    again = reel_json(reel_bin, "stats", task.path, "--rebuild")
    assert not again["written"] and again["agrees"]
    assert open(os.path.join(task.path, "meta", "stats.json"), "rb").read() == before


def test_verify_names_each_differing_feature_and_dry_run_writes_nothing(reel_bin, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, length=4, imu=[1, 2, 3, 0]), EpisodeSpec(2, length=2)])
    stats = read_stats(task.path)
    stats[GLOVE]["count"] += 5
    stats[IMU]["mean"][3] += 0.5
    write_json(Path(task.path) / "meta" / "stats.json", stats)
    before = open(os.path.join(task.path, "meta", "stats.json"), "rb").read()

    rc, out, err = reel(reel_bin, "stats", task.path, "--verify")
    assert rc == 1, (out, err)
    assert f"{GLOVE}: count:" in out and f"{IMU}: mean:" in out and "[3]" in out, out
    d = reel_json(reel_bin, "stats", task.path, "--rebuild", "--dry-run")
    assert not d["written"] and len(d["diffs"]) == 2
    assert open(os.path.join(task.path, "meta", "stats.json"), "rb").read() == before

    reel_json(reel_bin, "stats", task.path, "--rebuild")
    assert_stats_equal(read_stats(task.path), expected_stats(task.path))


def test_stored_block_of_uncounted_column_is_removed(reel_bin, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, length=3)])
    stats = read_stats(task.path)
    stats["observation.left_hand_pose"] = {"count": 3, "mean": [0.0] * 63, "std": [1.0] * 63,
                                           "min": [0.0] * 63, "max": [0.0] * 63}
    write_json(Path(task.path) / "meta" / "stats.json", stats)
    v = reel_json(reel_bin, "stats", task.path, "--verify", ok=(1,))
    assert [(d["block"], d["what"]) for d in v["diffs"]] == [("observation.left_hand_pose", "removed")]
    reel_json(reel_bin, "stats", task.path, "--rebuild")
    assert "observation.left_hand_pose" not in read_stats(task.path)


def test_recorder_stats_agree_with_rebuild(reel_bin, tmp_path):
    task = tmp_path / "sim"
    rc, out, err = reel(reel_bin, "simulate", task, "--count", "2", "--seconds", "1", "--no-video")
    assert rc == 0, err
    v = reel_json(reel_bin, "stats", task, "--verify")
    assert v["agrees"], v["diffs"]
    exp = expected_stats(task)
    assert len(exp) >= 2, exp.keys()  # the rig's gloves and its IMU
    assert_stats_equal(read_stats(task), exp)


def test_kill_during_rebuild_leaves_old_or_new(reel_bin, run_reel, tmp_path):
    template = countless_task(tmp_path / "template")
    old = open(os.path.join(template.path, "meta", "stats.json"), "rb").read()
    ref = tmp_path / "ref"
    shutil.copytree(template.path, ref)
    t0 = time.monotonic()
    reel_json(reel_bin, "stats", ref, "--rebuild")
    duration = time.monotonic() - t0  # kill moments spread over a whole run
    new = open(ref / "meta" / "stats.json", "rb").read()
    assert new != old
    rng = random.Random(17)
    for i in range(30):
        work = tmp_path / f"k{i}"
        shutil.copytree(template.path, work)
        p = subprocess.Popen([reel_bin, "stats", str(work), "--rebuild"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, 1.2 * duration))
        p.send_signal(signal.SIGKILL)
        p.wait()
        now = open(work / "meta" / "stats.json", "rb").read()
        assert now in (old, new), f"round {i}: stats.json is neither the old nor the new file"
        reel_json(reel_bin, "stats", work, "--rebuild")  # rolls forward / finishes the job
        assert open(work / "meta" / "stats.json", "rb").read() == new
        if i % 10 == 0:
            rc, report = check_report(run_reel, work)
            assert rc == 0, report
        shutil.rmtree(work)


def test_python_rebuild_stats(reel_mod, tmp_path):
    task = countless_task(tmp_path)
    v = reel_mod.rebuild_stats(task.path, verify=True)
    assert not v["agrees"] and not v["written"]
    d = reel_mod.rebuild_stats(task.path, dry_run=True)
    assert not d["written"]
    r = reel_mod.rebuild_stats(task.path)
    assert r["written"] and r["stats"] == read_stats(task.path)
    assert_stats_equal(read_stats(task.path), expected_stats(task.path))
    assert reel_mod.rebuild_stats(task.path, verify=True)["agrees"]
