"""Video decoding through the CLI: `reel frames` writes PNGs whose pixels equal the ffmpeg CLI's
decode of the same frame, depth PNGs hold millimetres, and `reel check` opens every video
(video.unreadable) and counts its frames against the data rows (video.frame_count).

Every video here is made with the ffmpeg CLI and every expected pixel comes from the ffmpeg CLI,
independently of reel."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from . import video_ref
from .checks import all_findings, assert_fails_naming, assert_finding, check_report, error_rules
from .fixtures import EpisodeSpec, write_task
from .video_ref import code_to_mm, ffmpeg, mm_to_code

W, H = 64, 48
def rgb_frames(path: Path) -> np.ndarray:
    """All frames of a video (or one PNG) as the ffmpeg CLI converts them to RGB24."""
    return video_ref.cli_rgb(path, W, H)


def gray16(path: Path, pix_fmt: str = "gray16le") -> np.ndarray:
    return video_ref.cli_gray16(path, W, H, pix_fmt)


def depth_mm(frames: int) -> np.ndarray:
    y, x = np.mgrid[0:H, 0:W]
    mm = np.stack([120 + 60 * x + 15 * y + 40 * f for f in range(frames)]).astype("<u2")
    mm[:, :3, :3] = 0  # no depth
    return mm


def write_rgb(path: Path, frames: int, *extra) -> None:
    ffmpeg("-f", "lavfi", "-i", f"testsrc2=size={W}x{H}:rate=30", "-frames:v", frames,
           "-c:v", "libx264", "-pix_fmt", "yuv420p", *extra, path)


def write_raw_depth(tmp: Path, array: np.ndarray, pix_fmt: str) -> list:
    raw = tmp / f"depth_{pix_fmt}.raw"
    raw.write_bytes(array.astype("<u2").tobytes())
    return ["-f", "rawvideo", "-pix_fmt", pix_fmt, "-s", f"{W}x{H}", "-r", "30", "-i", raw]


@pytest.fixture
def video_task(tmp_path, tmp_path_factory):
    """Episode 1 (12 rows): RGB H.264 with B-frames and 30-frame GOPs, FFV1 depth .mkv, 12-bit
    HEVC depth .mp4; episode 2 (12 rows): the older dual-stream depth .mkv (H.264 + FFV1)."""
    n = 12
    task = write_task(
        tmp_path,
        "video_task",
        [
            EpisodeSpec(1, length=n, videos={"d435_rgb": "mp4", "d435_depth": "mkv", "stereo_depth": "mp4"}),
            EpisodeSpec(2, length=n, videos={"d435_rgb": "mp4", "d435_depth": "mkv"}),
        ],
        info_overrides={"cameras": {"d435_rgb": {"height": H, "width": W}}},  # the videos written below
    )
    work = tmp_path_factory.mktemp("video_src")
    mm = depth_mm(n)
    ep1, ep2 = task.ep(1).videos, task.ep(2).videos
    write_rgb(task.path / ep1["d435_rgb"], n, "-g", "30", "-bf", "3")
    ffmpeg(*write_raw_depth(work, mm, "gray16le"), "-c:v", "ffv1", "-pix_fmt", "gray16le", task.path / ep1["d435_depth"])
    ffmpeg(*write_raw_depth(work, mm_to_code(mm), "gray12le"), "-c:v", "libx265", "-pix_fmt", "gray12le",
           "-x265-params", "qp=6:range=full:log-level=error", "-tag:v", "hvc1", task.path / ep1["stereo_depth"])
    write_rgb(task.path / ep2["d435_rgb"], n, "-g", "2")
    ffmpeg("-f", "lavfi", "-i", f"testsrc2=size={W}x{H}:rate=30:duration={n / 30}",
           *write_raw_depth(work, mm, "gray16le"), "-map", "0:v", "-map", "1:v",
           "-c:v:0", "libx264", "-pix_fmt:v:0", "yuv420p", "-c:v:1", "ffv1", "-pix_fmt:v:1", "gray16le",
           task.path / ep2["d435_depth"])
    task.depth_mm = mm
    return task


@pytest.fixture
def png_dir(tmp_path_factory):
    # Outside tmp_path: run_reel asserts that nothing under tmp_path changes.
    return tmp_path_factory.mktemp("png")


def frames_json(reel_json, task, n, slot, at, out):
    return reel_json("frames", task.path, n, "--slot", slot, "--at", ",".join(map(str, at)), "-o", out)


# --------------------------------------------------------------------------- reel frames


def test_rgb_pngs_equal_ffmpeg_decode(reel_json, video_task, png_dir):
    at = [0, 7, 3, 7, 11, 1]  # out of order, a repeat, both ends
    got = frames_json(reel_json, video_task, 1, "d435_rgb", at, png_dir)
    assert got["slot"] == "d435_rgb" and got["episode_index"] == 1
    assert (got["codec"], got["width"], got["height"], got["frames"], got["depth"]) == ("h264", W, H, 12, False)
    assert [w["index"] for w in got["written"]] == at
    source = rgb_frames(video_task.path / video_task.ep(1).videos["d435_rgb"])
    assert source.shape[0] == 12
    for w in got["written"]:
        png = Path(w["path"])
        assert png.parent == png_dir and png.suffix == ".png"
        assert ffmpeg("-i", png, "-f", "null", "-") is not None  # a valid image
        pixels = rgb_frames(png)
        assert pixels.shape == (1, H, W, 3)
        assert np.array_equal(pixels[0], source[w["index"]]), f"frame {w['index']} differs from ffmpeg's decode"
        assert w["time_s"] == pytest.approx(w["index"] / 30, abs=1e-6)


def test_rgb_gop2_episode(reel_json, video_task, png_dir):
    got = frames_json(reel_json, video_task, 2, "d435_rgb", [11, 0, 6], png_dir)
    source = rgb_frames(video_task.path / video_task.ep(2).videos["d435_rgb"])
    for w in got["written"]:
        assert np.array_equal(rgb_frames(Path(w["path"]))[0], source[w["index"]])


@pytest.mark.parametrize("n", [1, 2], ids=["single_stream_mkv", "dual_stream_mkv"])
def test_ffv1_depth_png_is_millimetres(reel_json, video_task, png_dir, n):
    got = frames_json(reel_json, video_task, n, "d435_depth", [5, 0, 11], png_dir)
    assert got["depth"] is True and got["codec"] == "ffv1" and got["pix_fmt"] == "gray16le"
    for w in got["written"]:
        png = Path(w["path"])
        probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=pix_fmt", "-of", "json", png],
                               check=True, capture_output=True, text=True).stdout
        assert json.loads(probe)["streams"][0]["pix_fmt"] == "gray16be"  # 16-bit gray PNG
        assert np.array_equal(gray16(png)[0], video_task.depth_mm[w["index"]]), w


def test_hevc_depth_png_is_decoded_log_code(reel_json, video_task, png_dir):
    video = video_task.path / video_task.ep(1).videos["stereo_depth"]
    got = frames_json(reel_json, video_task, 1, "stereo_depth", [3, 9], png_dir)
    assert got["depth"] is True and got["pix_fmt"] == "gray12le"
    codes = gray16(video, "gray12le")
    for w in got["written"]:
        mm = gray16(Path(w["path"]))[0]
        # Exactly the CLI's 12-bit samples through the inverse log code ...
        assert np.array_equal(mm, code_to_mm(codes[w["index"]])), w
        # ... and near what was written (qp=6 is not lossless); holes read as 100 mm.
        want = video_task.depth_mm[w["index"]].astype(np.float64)
        body = want >= 100
        rel = np.abs(mm[body] - want[body]) / want[body]
        assert np.median(rel) < 0.01, np.median(rel)
        assert mm[0, 0] == 100


def test_frames_text_output(run_reel, video_task, png_dir):
    rc, out, err = run_reel("frames", video_task.path, 1, "--slot", "d435_rgb", "--at", "2", "-o", png_dir)
    assert rc == 0, err
    assert "d435_rgb_episode-1_frame-2.png" in out
    assert (png_dir / "d435_rgb_episode-1_frame-2.png").is_file()


def test_frames_index_out_of_range(run_reel, video_task, png_dir):
    result = run_reel("frames", video_task.path, 1, "--slot", "d435_rgb", "--at", "3,12", "-o", png_dir)
    assert result[0] == 2
    assert_fails_naming(result, "episode-000.mp4", "frame 12", "12 frames")


def test_frames_unknown_slot_and_episode(run_reel, video_task, png_dir):
    result = run_reel("frames", video_task.path, 1, "--slot", "nope", "--at", "0", "-o", png_dir)
    assert result[0] == 2
    assert_fails_naming(result, "nope", "d435_rgb")
    rc, _, _ = run_reel("frames", video_task.path, 9, "--slot", "d435_rgb", "--at", "0", "-o", png_dir)
    assert rc == 2


def test_frames_unreadable_video(run_reel, video_task, png_dir):
    video = video_task.path / video_task.ep(1).videos["d435_rgb"]
    data = video.read_bytes()
    video.write_bytes(data[: len(data) // 2])
    result = run_reel("frames", video_task.path, 1, "--slot", "d435_rgb", "--at", "0", "-o", png_dir)
    assert result[0] == 2
    assert_fails_naming(result, "episode-000.mp4")


# --------------------------------------------------------------------------- reel check


def test_check_accepts_real_videos_of_every_kind(run_reel, video_task):
    rc, report = check_report(run_reel, video_task.path)
    assert rc == 0, error_rules(report)
    assert not [f for f in all_findings(report) if f["rule"].startswith("video.")], all_findings(report)


def test_frame_count_differs_from_data_rows(run_reel, video_task):
    rel = video_task.ep(1).videos["d435_rgb"]
    write_rgb(video_task.path / rel, 10)  # the data parquet has 12 rows
    rc, report = check_report(run_reel, video_task.path)
    assert rc == 1
    f = assert_finding(report, "video.frame_count", rel, severity="error")
    assert "10 frames" in f["message"] and "12 rows" in f["message"], f
    assert error_rules(report) == ["video.frame_count"], all_findings(report)


def test_frame_count_of_a_depth_mkv(run_reel, video_task, tmp_path_factory):
    rel = video_task.ep(1).videos["d435_depth"]
    work = tmp_path_factory.mktemp("short_depth")
    ffmpeg(*write_raw_depth(work, depth_mm(13), "gray16le"), "-c:v", "ffv1", "-pix_fmt", "gray16le",
           video_task.path / rel)
    rc, report = check_report(run_reel, video_task.path)
    f = assert_finding(report, "video.frame_count", rel, severity="error")
    assert "13 frames" in f["message"], f


@pytest.mark.parametrize("damage", ["text", "truncated", "empty"])
def test_unreadable_video(run_reel, video_task, damage):
    rel = video_task.ep(2).videos["d435_rgb"]
    video = video_task.path / rel
    if damage == "text":
        video.write_text("not a video\n")
    elif damage == "truncated":
        video.write_bytes(video.read_bytes()[: video.stat().st_size // 2])
    else:
        video.write_bytes(b"")
    rc, report = check_report(run_reel, video_task.path)
    assert rc == 1
    f = assert_finding(report, "video.unreadable", rel, severity="error")
    assert "d435_rgb" in f["message"], f
    assert error_rules(report) == ["video.unreadable"], all_findings(report)


def test_video_rules_are_listed(run_reel):
    rc, out, _ = run_reel("check", "--list-rules")
    ids = [line.split("\t")[0] for line in out.splitlines() if line]
    assert "video.unreadable" in ids and "video.frame_count" in ids
