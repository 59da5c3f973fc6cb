"""Episode numbering (contract §2): N -> chunk=(N-1)//1000, file=(N-1)%1000; gaps are allowed."""

from __future__ import annotations

import pyarrow as pa
import pytest

from .checks import assert_finding, check_report, error_rules, norm_path
from .fixtures import EpisodeSpec, write_task

ROLLOVER = [1, 2, 1000, 1001]  # N=3..999 missing is a gap
EXPECTED_CF = {1: (0, 0), 2: (0, 1), 1000: (0, 999), 1001: (1, 0)}


@pytest.fixture
def rollover(tmp_path):
    return write_task(tmp_path, "rollover", [EpisodeSpec(n, length=2) for n in ROLLOVER])


def test_ls_maps_numbers_to_chunk_and_file(reel_json, rollover):
    eps = reel_json("ls", rollover.path)["episodes"]
    assert [e["episode_index"] for e in eps] == ROLLOVER
    for e in eps:
        n = e["episode_index"]
        c, f = EXPECTED_CF[n]
        assert (e["chunk"], e["file"]) == (c, f), n
        assert e["has_data"] is True and e["row_source"] == "episode_file"
        assert norm_path(e["videos"]["d435_rgb"]) == f"videos/chunk-{c:03d}/d435_rgb/episode-{f:03d}.mp4"
        assert norm_path(e["videos"]["d435_depth"]) == f"videos/chunk-{c:03d}/d435_depth/episode-{f:03d}.mkv"


@pytest.mark.parametrize("n", ROLLOVER)
def test_show_each_number(reel_json, rollover, n):
    c, f = EXPECTED_CF[n]
    got = reel_json("show", rollover.path, n)
    assert got["episode_index"] == n
    assert (got["chunk"], got["file"]) == (c, f)
    assert norm_path(got["data_path"]).endswith(f"data/chunk-{c:03d}/episode-{f:03d}.parquet")
    assert got["row"]["episode_index"] == n


def test_info_counts_across_the_gap(reel_json, rollover):
    got = reel_json("info", rollover.path)
    assert got["episodes"] == 4
    assert got["total_episodes"] == 1001
    assert got["frames"] == 8
    assert got["duration_sec"] == pytest.approx(8 / 30.0, rel=1e-9)


@pytest.mark.parametrize("n", [3, 999, 1002])
def test_show_missing_number_fails(run_reel, rollover, n):
    rc, out, err = run_reel("show", rollover.path, n, "--json")
    assert rc != 0, out
    assert err.strip(), "no error message on stderr"


def test_check_gap_and_rollover_is_not_an_error(run_reel, rollover):
    rc, report = check_report(run_reel, rollover.path)
    assert rc == 0, error_rules(report)
    assert report["tasks"][0]["episodes"] == 4


def test_deleted_episode_keeps_its_row(reel_json, run_reel, tmp_path):
    """Upload-delete removes data + videos but keeps the episodes row (contract §9, decisions)."""
    task = write_task(tmp_path, "deleted", [EpisodeSpec(1), EpisodeSpec(2, data=False, videos={}), EpisodeSpec(3)])
    eps = {e["episode_index"]: e for e in reel_json("ls", task.path)["episodes"]}
    assert set(eps) == {1, 2, 3}
    assert eps[2]["has_data"] is False
    assert eps[2]["row_source"] == "episode_file"
    assert eps[2]["videos"] == {}
    assert eps[2]["columns"] == []
    assert eps[3]["has_data"] is True


def test_data_episode_index_must_equal_n(run_reel, tmp_path):
    # N=2 (episode-001) whose data says 1: the classic 0/1-based mix-up
    task = write_task(
        tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2, extra_columns={"episode_index": pa.array([1, 1, 1], pa.int64())})]
    )
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    assert_finding(report, "numbering.episode_index", "data/chunk-000/episode-001.parquet", severity="error")


def test_row_episode_index_must_equal_n(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2, row_overrides={"episode_index": 1})])
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    assert_finding(report, "numbering.episode_index", "meta/episodes/chunk-000/episode-001.parquet")


def test_zero_based_data_in_first_file(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, extra_columns={"episode_index": pa.array([0, 0, 0], pa.int64())})])
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    assert_finding(report, "numbering.episode_index", "data/chunk-000/episode-000.parquet")


def test_total_episodes_below_highest_number(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2)], total_episodes=1)
    rc, report = check_report(run_reel, task.path)
    assert_finding(report, "numbering.total_episodes", "meta/info.json")


def test_total_episodes_above_count_is_fine(run_reel, tmp_path):
    """total_episodes never decreases after deletes, so it may exceed the files present."""
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(5)], total_episodes=7)
    rc, report = check_report(run_reel, task.path)
    assert rc == 0, error_rules(report)
