"""meta/stats.json (contract §4): blocks {count, mean, std, min, max}; a block without count is
the v1.1.0 format and needs a rebuild."""

from __future__ import annotations

import copy

import pytest

from .checks import assert_finding, check_report, findings
from .fixtures import EpisodeSpec, write_json, write_task

GLOVE = "observation.left_glove"


def test_block_without_count(reel_json, run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, imu=[1, 2, 0])], stats_drop_count=(GLOVE,))
    blocks = reel_json("stats", task.path)["blocks"]
    assert blocks[GLOVE]["count"] is None
    assert blocks[GLOVE]["needs_rebuild"] is True
    assert blocks[GLOVE]["dim"] == 256
    assert blocks[GLOVE]["mean"] == pytest.approx(task.stats[GLOVE]["mean"], rel=1e-9)
    assert blocks["observation.imu"]["count"] == 3
    assert blocks["observation.imu"]["needs_rebuild"] is False
    assert blocks["action"]["needs_rebuild"] is False

    rc, report = check_report(run_reel, task.path)
    f = assert_finding(report, "stats.count", "meta/stats.json")
    assert GLOVE in f["message"], f


def test_values_are_reported_as_written(reel_json, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, length=5, zero_glove_rows=(0, 3)), EpisodeSpec(2, length=2)])
    blk = reel_json("stats", task.path)["blocks"][GLOVE]
    exp = task.stats[GLOVE]
    assert blk["count"] == 7 == exp["count"]  # zero-filled rows are counted
    for k in ("mean", "std", "min", "max"):
        assert blk[k] == pytest.approx(exp[k], rel=1e-12, abs=1e-300), k
    assert min(blk["min"]) == 0.0


def test_missing_stats_json(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], write_stats=False)
    rc, report = check_report(run_reel, task.path)
    assert_finding(report, "stats.missing")


def test_block_with_wrong_dimension(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    st = copy.deepcopy(task.stats)
    for k in ("mean", "std", "min", "max"):
        st[GLOVE][k] = st[GLOVE][k][:255]
    write_json(task.path / "meta/stats.json", st)
    rc, report = check_report(run_reel, task.path)
    f = assert_finding(report, "stats.shape", "meta/stats.json")
    assert GLOVE in f["message"], f


def test_correct_stats_have_no_stats_findings(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, imu=[0, 2, 1])])
    rc, report = check_report(run_reel, task.path)
    assert rc == 0
    for rule in ("stats.missing", "stats.count", "stats.shape"):
        assert not findings(report, rule), rule
