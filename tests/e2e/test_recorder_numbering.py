"""Recorder numbering (contract §2, §7.5; reference "Numbering"; contract-decisions "number reuse").

- N starts at 1; N -> data/chunk-{(N-1)//1000:03d}/episode-{(N-1)%1000:03d}.parquet, same stem
  for meta/episodes; the episode_index column holds N.
- `--watermark W` is the caller's progress watermark = the next number it expects (the
  reference's batch_index): next N = max(W, highest N on disk + 1).
- An aborted episode does not consume its number: meta/recycled_episode.json names it, the
  next recording reuses it (even when the watermark is ahead) and the marker goes.
- A deleted (finished) number is never reused: the scan covers data/videos AND meta/episodes.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest

from .fixtures import data_rel, row_rel
from .recorder_common import (
    check_clean,
    data_numbers,
    data_table,
    delete,
    info,
    leftover_dotfiles,
    listing,
    read_json,
    reel_exec,
    row_dict,
    row_numbers,
    simulate,
    visible,
)

SHORT = ("--seconds", 0.5, "--video-size", "64x48")
MARKER = "meta/recycled_episode.json"
ISO_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def committed(entries):
    return [e["episode_index"] for e in entries if e["committed"]]


def assert_numbers_on_disk(task, expected):
    assert data_numbers(task) == expected, f"data files: {visible(listing(task, 'data'))}, expected N={expected}"
    assert row_numbers(task) == expected, f"episodes rows: {visible(listing(task, 'meta/episodes'))}, expected N={expected}"
    for n in expected:
        col = data_table(task, n).column("episode_index").to_pylist()
        assert set(col) == {n}, f"{data_rel(n)}: episode_index column holds {sorted(set(col))}, expected {n}"
        assert row_dict(task, n)["episode_index"] == n, f"{row_rel(n)}: episode_index != {n}"


def assert_no_dotfiles(task, when):
    left = leftover_dotfiles(task)
    assert not left, f"dotfiles (temp files / journals) left in the task after {when}: {left}"


def test_fresh_task_numbers_from_one(reel_bin, tmp_path):
    task = tmp_path / "fresh"
    eps = simulate(reel_bin, task, "--count", 3, *SHORT)
    assert [(e["episode_index"], e["committed"]) for e in eps] == [(1, True), (2, True), (3, True)], eps
    assert visible(listing(task, "data")) == [f"data/chunk-000/episode-00{i}.parquet" for i in range(3)]
    assert visible(listing(task, "meta/episodes")) == [f"meta/episodes/chunk-000/episode-00{i}.parquet" for i in range(3)]
    assert_numbers_on_disk(task, [1, 2, 3])
    assert info(task)["total_episodes"] == 3
    assert_no_dotfiles(task, "simulate --count 3")


def test_plain_output_one_line_per_episode(reel_bin, tmp_path):
    rc, out, err = reel_exec(reel_bin, "simulate", tmp_path / "plain", "--count", 2, *SHORT)
    assert rc == 0, f"exit {rc}\nstdout:\n{out}\nstderr:\n{err}"
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 2, f"expected one stdout line per episode (2), got {len(lines)}:\n{out}"


def test_watermark_ahead_sets_next_number(reel_bin, tmp_path):
    task = tmp_path / "wm"
    simulate(reel_bin, task, "--count", 3, *SHORT)
    eps = simulate(reel_bin, task, "--count", 1, "--watermark", 10, *SHORT)
    assert committed(eps) == [10], f"--watermark 10 on a task holding 1..3: got {eps}, expected N=10 (watermark = next expected N)"
    assert (task / "data/chunk-000/episode-009.parquet").is_file()
    assert_numbers_on_disk(task, [1, 2, 3, 10])
    assert info(task)["total_episodes"] == 10
    # and the scan continues from there
    eps = simulate(reel_bin, task, "--count", 1, *SHORT)
    assert committed(eps) == [11], eps
    check_clean(reel_bin, task)


def test_watermark_behind_loses_to_the_scan(reel_bin, tmp_path):
    task = tmp_path / "wm_behind"
    simulate(reel_bin, task, "--count", 3, *SHORT)
    eps = simulate(reel_bin, task, "--count", 1, "--watermark", 2, *SHORT)
    assert committed(eps) == [4], f"--watermark 2 on a task holding 1..3 must not overwrite: got {eps}, expected N=4"
    assert_numbers_on_disk(task, [1, 2, 3, 4])


def test_abort_writes_marker_and_next_recording_reuses_it(reel_bin, tmp_path):
    task = tmp_path / "abort"
    eps = simulate(reel_bin, task, "--count", 2, "--abort-last", *SHORT)
    assert [(e["episode_index"], e["committed"]) for e in eps] == [(1, True), (2, False)], eps

    marker = read_json(task / MARKER)
    assert isinstance(marker, dict) and set(marker) >= {"episode_index", "freed_at"}, marker
    assert marker["episode_index"] == 2, f"marker names {marker['episode_index']}, the aborted episode was 2"
    assert isinstance(marker["freed_at"], str) and ISO_RE.match(marker["freed_at"]), f"freed_at is not ISO 8601: {marker['freed_at']!r}"
    dt.datetime.fromisoformat(marker["freed_at"].replace("Z", "+00:00"))

    assert not (task / data_rel(2)).exists(), "the aborted episode's data file exists"
    assert not (task / row_rel(2)).exists(), "the aborted episode's episodes row exists"
    aborted_videos = [p for p in listing(task, "videos") if "/episode-001." in p]
    assert not aborted_videos, f"video files of the aborted episode: {aborted_videos}"
    assert_numbers_on_disk(task, [1])
    assert info(task)["total_episodes"] == 1, "total_episodes counts only committed episodes"
    assert_no_dotfiles(task, "an aborted episode")
    check_clean(reel_bin, task)

    eps = simulate(reel_bin, task, "--count", 1, *SHORT)
    assert committed(eps) == [2], f"the recycled number 2 was not reused: {eps}"
    assert not (task / MARKER).exists(), "the recycled marker survived a completed episode"
    assert_numbers_on_disk(task, [1, 2])
    assert info(task)["total_episodes"] == 2
    assert_no_dotfiles(task, "reusing the recycled number")
    check_clean(reel_bin, task)


def test_recycled_number_wins_over_a_watermark_ahead(reel_bin, tmp_path):
    """§2: 下一次录制优先复用该号（即使进度水位已跑在前面也不跳号）."""
    task = tmp_path / "abort_wm"
    simulate(reel_bin, task, "--count", 2, *SHORT)
    eps = simulate(reel_bin, task, "--count", 1, "--abort-last", *SHORT)
    assert [(e["episode_index"], e["committed"]) for e in eps] == [(3, False)], eps
    assert read_json(task / MARKER)["episode_index"] == 3
    eps = simulate(reel_bin, task, "--count", 1, "--watermark", 50, *SHORT)
    assert committed(eps) == [3], f"with marker 3 and --watermark 50 the recorder took {eps}; the marker must win"
    assert not (task / MARKER).exists()
    assert_numbers_on_disk(task, [1, 2, 3])


def test_abort_leaves_task_files_untouched(reel_bin, tmp_path):
    task = tmp_path / "abort_meta"
    simulate(reel_bin, task, "--count", 2, *SHORT)
    before = {p: (task / p).read_bytes() for p in ("meta/info.json", "meta/stats.json", "meta/tasks.jsonl")}
    eps = simulate(reel_bin, task, "--count", 1, "--abort-last", *SHORT)
    assert [e["committed"] for e in eps] == [False], eps
    for p, b in before.items():
        assert (task / p).read_bytes() == b, f"{p} changed although the only episode of the run was aborted"
    assert_numbers_on_disk(task, [1, 2])


def test_deleted_number_is_never_reused(reel_bin, tmp_path):
    task = tmp_path / "deleted"
    simulate(reel_bin, task, "--count", 3, *SHORT)
    stats_before = (task / "meta/stats.json").read_bytes()
    row3 = row_dict(task, 3)

    delete(reel_bin, task, 3)
    assert not (task / data_rel(3)).exists(), "reel delete left the data parquet of N=3"
    assert (task / row_rel(3)).is_file(), "reel delete removed the episodes row of N=3 (contract: it stays)"
    assert row_dict(task, 3) == row3, "reel delete changed the episodes row of N=3"
    assert (task / "meta/stats.json").read_bytes() == stats_before, "reel delete changed stats.json (it must not roll back)"
    assert info(task)["total_episodes"] == 3, "reel delete lowered total_episodes"
    assert not (task / MARKER).exists(), "reel delete wrote a recycled marker (deleted numbers are never reused)"
    assert data_numbers(task) == [1, 2]
    assert_no_dotfiles(task, "reel delete")
    check_clean(reel_bin, task)

    count_before = read_json(task / "meta/stats.json")["observation.left_glove"]["count"]
    eps = simulate(reel_bin, task, "--count", 1, *SHORT)
    assert committed(eps) == [4], f"after deleting N=3 the recorder took {eps}; 3 is finished and must not come back"
    rows4 = data_table(task, 4).num_rows
    count_after = read_json(task / "meta/stats.json")["observation.left_glove"]["count"]
    assert count_after == count_before + rows4, (
        f"stats.json observation.left_glove count went {count_before} -> {count_after} after adding N=4 with {rows4} rows; "
        "deleting N=3 must not roll the accumulator back (§4), so expected the sum"
    )
    assert data_numbers(task) == [1, 2, 4]
    assert row_numbers(task) == [1, 2, 3, 4]
    assert info(task)["total_episodes"] == 4
    check_clean(reel_bin, task)


@pytest.mark.parametrize("victim", [1, 2])
def test_delete_lower_number_keeps_numbering(reel_bin, tmp_path, victim):
    task = tmp_path / f"deleted_{victim}"
    simulate(reel_bin, task, "--count", 3, *SHORT)
    delete(reel_bin, task, victim)
    eps = simulate(reel_bin, task, "--count", 1, *SHORT)
    assert committed(eps) == [4], eps
    assert data_numbers(task) == [n for n in (1, 2, 3, 4) if n != victim]
    assert row_numbers(task) == [1, 2, 3, 4]
    check_clean(reel_bin, task)


def test_a_task_path_with_a_trailing_slash_records(reel_bin, tmp_path):
    """`reel simulate task/` once reported success and published nothing: the commit's paths
    were cut one character short after a root ending in '/' (EpisodeTransaction::Track)."""
    from .recorder_common import check_clean, data_numbers, row_numbers, simulate

    task = tmp_path / "pick"
    for _ in range(2):
        simulate(reel_bin, f"{task}/", "--count", 1, "--seconds", 0.2, "--fps", 10, "--no-video")
    assert data_numbers(task) == [1, 2] and row_numbers(task) == [1, 2]
    check_clean(reel_bin, task)
