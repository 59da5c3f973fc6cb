"""Legacy v1.1.0 shards (contract §2, §6.1): meta/episodes/chunk-CCC/file-CCC.parquet holds the
rows of many episodes; readers find a row by the episode_index column, never by file name."""

from __future__ import annotations

import pytest

from .checks import check_report, error_rules, findings
from .fixtures import EpisodeSpec, write_task

LENGTHS = {1: 2, 2: 3, 3: 4}


@pytest.fixture
def shard_task(tmp_path):
    eps = [EpisodeSpec(n, length=LENGTHS[n], row="shard", created_at=1_790_000_000.0 + 1000 * n) for n in (1, 2, 3)]
    task = write_task(tmp_path, "legacy_shard", eps)
    assert (task.path / "meta/episodes/chunk-000/file-000.parquet").is_file()
    assert not (task.path / "meta/episodes/chunk-000/episode-000.parquet").exists()
    return task


def test_ls_reads_rows_from_the_shard(reel_json, shard_task):
    eps = reel_json("ls", shard_task.path)["episodes"]
    assert [e["episode_index"] for e in eps] == [1, 2, 3]
    for e in eps:
        assert e["row_source"] == "legacy_shard"
        assert e["length"] == LENGTHS[e["episode_index"]]
        assert e["duration_sec"] == pytest.approx(LENGTHS[e["episode_index"]] / 30.0, rel=1e-9)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_show_picks_the_row_by_episode_index(reel_json, shard_task, n):
    got = reel_json("show", shard_task.path, n)
    row = got["row"]
    assert row["episode_index"] == n
    assert row["length"] == LENGTHS[n]
    assert row["end_frame_index"] == LENGTHS[n] - 1
    assert row["created_at"] == pytest.approx(1_790_000_000.0 + 1000 * n, rel=1e-12)


def test_info_sums_shard_rows(reel_json, shard_task):
    got = reel_json("info", shard_task.path)
    assert got["episodes"] == 3
    assert got["frames"] == sum(LENGTHS.values())


def test_check_accepts_the_shard(run_reel, shard_task):
    rc, report = check_report(run_reel, shard_task.path)
    assert rc == 0, error_rules(report)
    assert not findings(report, "episodes.row_missing")
    assert not findings(report, "episodes.row_count")


def test_shard_plus_newer_per_episode_files(reel_json, run_reel, tmp_path):
    """An old task continued under v1.1.2: N=1,2 in the shard, N=3 in its own file."""
    eps = [EpisodeSpec(1, row="shard"), EpisodeSpec(2, row="shard"), EpisodeSpec(3, length=5, row="file")]
    task = write_task(tmp_path, "mixed", eps)
    got = {e["episode_index"]: e for e in reel_json("ls", task.path)["episodes"]}
    assert got[1]["row_source"] == "legacy_shard"
    assert got[2]["row_source"] == "legacy_shard"
    assert got[3]["row_source"] == "episode_file"
    assert got[3]["length"] == 5
    rc, report = check_report(run_reel, task.path)
    assert rc == 0, error_rules(report)


def test_shard_in_second_chunk(reel_json, tmp_path):
    """The shard is named by its chunk: chunk-001/file-001.parquet holds N=1001.."""
    eps = [EpisodeSpec(1001, length=2, row="shard"), EpisodeSpec(1002, length=3, row="shard")]
    task = write_task(tmp_path, "chunk1", eps)
    assert (task.path / "meta/episodes/chunk-001/file-001.parquet").is_file()
    got = {e["episode_index"]: e for e in reel_json("ls", task.path)["episodes"]}
    assert got[1002]["row_source"] == "legacy_shard"
    assert (got[1002]["chunk"], got[1002]["file"]) == (1, 1)
    assert got[1002]["length"] == 3
    assert reel_json("show", task.path, 1002)["row"]["length"] == 3
