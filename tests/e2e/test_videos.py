"""Video slots (contract §8, multi-device §4.8/§6.3): slots may be renamed between episodes,
file types follow info.json video_extensions, depth slots stay out of `cameras`."""

from __future__ import annotations

import pytest

from .checks import all_findings, assert_finding, check_report, error_rules, norm_path
from .fixtures import EpisodeSpec, write_task


@pytest.fixture
def renamed(tmp_path):
    eps = [EpisodeSpec(1, videos={"D435_depth_rgb": "mp4"}), EpisodeSpec(2, videos={"D435_head_rgb": "mp4"})]
    task = write_task(tmp_path, "renamed", eps)
    assert set(task.info["cameras"]) == {"D435_depth_rgb", "D435_head_rgb"}
    return task


def test_ls_lists_each_episodes_own_slots(reel_json, renamed):
    eps = {e["episode_index"]: e for e in reel_json("ls", renamed.path)["episodes"]}
    assert {k: norm_path(v) for k, v in eps[1]["videos"].items()} == {
        "D435_depth_rgb": "videos/chunk-000/D435_depth_rgb/episode-000.mp4"
    }
    assert {k: norm_path(v) for k, v in eps[2]["videos"].items()} == {
        "D435_head_rgb": "videos/chunk-000/D435_head_rgb/episode-001.mp4"
    }


def test_info_video_slots_union(reel_json, renamed):
    assert reel_json("info", renamed.path)["video_slots"] == ["D435_depth_rgb", "D435_head_rgb"]


def test_check_accepts_renamed_slots(run_reel, renamed):
    """Also: D435_depth_rgb is an RGB slot (suffix _rgb) even though its name contains 'depth'."""
    rc, report = check_report(run_reel, renamed.path)
    assert rc == 0, error_rules(report)
    assert not [f for f in all_findings(report) if f["rule"].startswith("video.")], all_findings(report)


def test_depth_as_mp4_is_valid(run_reel, tmp_path):
    """12-bit HEVC depth is written as .mp4 (contract-decisions); video_extensions says so."""
    task = write_task(tmp_path, "depth_mp4", [EpisodeSpec(1, videos={"d435_rgb": "mp4", "d435_depth": "mp4"})])
    rc, report = check_report(run_reel, task.path)
    assert rc == 0, error_rules(report)
    assert not [f for f in all_findings(report) if f["rule"].startswith("video.")]


def test_extension_disagreeing_with_video_extensions(run_reel, tmp_path):
    # the depth file is .mp4 on disk while video_extensions says mkv
    task = write_task(
        tmp_path,
        "t",
        [EpisodeSpec(1, videos={"d435_rgb": "mp4", "d435_depth": "mp4"})],
        info_overrides={"video_extensions": {"d435_rgb": "mp4", "d435_depth": "mkv"}},
    )
    # contract-decisions: a slot may mix mp4 and mkv (its depth codec changed between
    # episodes); readers open the file it has, and check warns with its own rule.
    rc, report = check_report(run_reel, task.path)
    assert_finding(report, "video.extension_mix", "videos/chunk-000/d435_depth/episode-000.mp4")
    mix = [f for f in all_findings(report) if f["rule"] == "video.extension_mix"]
    assert all(f["severity"] == "warning" for f in mix), mix
    assert not [f for f in all_findings(report) if f["rule"] == "video.extension"], all_findings(report)


def test_extension_outside_mp4_and_mkv_is_an_error(run_reel, tmp_path):
    task = write_task(
        tmp_path,
        "t",
        [EpisodeSpec(1, videos={"d435_rgb": "mp4", "d435_depth": "mp4"})],
        info_overrides={"video_extensions": {"d435_rgb": "mp4", "d435_depth": "avi"}},
    )
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    assert_finding(report, "video.extension", "videos/chunk-000/d435_depth/episode-000.mp4")


def test_slot_missing_from_video_extensions(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_overrides={"video_extensions": {"d435_rgb": "mp4"}})
    rc, report = check_report(run_reel, task.path)
    hits = [f for f in all_findings(report) if f["rule"] == "video.extension"]
    assert hits, all_findings(report)
    assert any("d435_depth" in f["path"] + f["message"] for f in hits), hits


def test_depth_slot_listed_in_cameras(run_reel, tmp_path):
    cams = {"d435_rgb": {"height": 480, "width": 640}, "d435_depth": {"height": 480, "width": 640}}
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_overrides={"cameras": cams})
    rc, report = check_report(run_reel, task.path)
    f = assert_finding(report, "video.depth_in_cameras", "meta/info.json")
    assert "d435_depth" in f["message"] + f["path"], f


def test_ls_uses_video_extensions_not_mp4_guess(reel_json, tmp_path):
    """A .mkv depth file is found because video_extensions says mkv."""
    task = write_task(tmp_path, "t", [EpisodeSpec(1, videos={"stereo_left": "mp4", "stereo_depth": "mkv"})])
    (e,) = reel_json("ls", task.path)["episodes"]
    assert norm_path(e["videos"]["stereo_depth"]) == "videos/chunk-000/stereo_depth/episode-000.mkv"
    assert norm_path(e["videos"]["stereo_left"]) == "videos/chunk-000/stereo_left/episode-000.mp4"
