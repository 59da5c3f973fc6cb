"""The recorder's video streams, read back with the ffmpeg/ffprobe CLI and numpy only.

What the contract says (000 §3, §8; 002 §2.3, §6.3; reference-behaviour.md "Depth",
"meta/episodes row"; contract-decisions.md "depth file type"):
- one file per slot per episode at videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext};
  frame i of every file is row i of the data parquet;
- cameras lists RGB slots only ({height, width}); video_extensions lists every slot
  (RGB mp4; depth mp4 for 12-bit log-code HEVC, mkv for FFV1 gray16le);
- depth code: code = clip(rint((ln mm - ln 100) * 4095 / ln 50), 0, 4095), 0 mm -> 0,
  decoded mm = rint(exp(ln 100 + code * ln 50 / 4095));
- a depth slot follows its master slot; a missing depth frame repeats the previous one;
- the episodes row's video_codec names the encoder, drop_stats counts repeats.

The simulated frames are re-computed here in numpy from the rig's documented pattern
(tools' src/reel/sim/rig.cc RgbFrame/DepthFrame), independently of reel's readers.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from .recorder_common import (
    check_clean,
    data_table,
    info,
    leftover_dotfiles,
    listing,
    memo_task,
    row_dict,
    row_json,
    simulate,
)

W, H = 64, 48
FPS = 10.0
SECONDS = 3.0  # 30 rows: row 28 is a D435 depth gap (i % 29 == 28)
RGB_SLOTS = ["stereo_left", "stereo_right", "gripper_rgb", "gripper_2_rgb", "d435_rgb", "head_left_rgb"]
DEPTH_SLOTS = {"stereo_depth": "stereo_left", "d435_depth": "d435_rgb"}
ALL_SLOTS = ["stereo_left", "stereo_right", "stereo_depth", "gripper_rgb", "gripper_2_rgb", "d435_rgb", "d435_depth", "head_left_rgb"]

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None, reason="needs the ffmpeg CLI")


# --------------------------------------------------------------------------- independent decoding


def ffprobe_stream(path: Path) -> dict:
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-count_packets", "-show_streams", "-of", "json", str(path)],
        capture_output=True, check=True, timeout=60,
    ).stdout
    streams = json.loads(out)["streams"]
    assert len(streams) == 1, f"{path}: expected one stream, found {len(streams)}"
    return streams[0]


def decode(path: Path, pix_fmt: str, dtype, channels: int) -> np.ndarray:
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(path), "-f", "rawvideo", "-pix_fmt", pix_fmt, "-"],
        capture_output=True, check=True, timeout=120,
    ).stdout
    a = np.frombuffer(raw, dtype=dtype)
    return a.reshape(-1, H, W, channels) if channels > 1 else a.reshape(-1, H, W)


def rgb_pattern(i: int, pattern: int, phase: int = 0) -> np.ndarray:
    """The rig's RGB frame i of camera `pattern` (see the module docstring); `phase` shifts
    the blue gradient per episode: ((seed - 1) * 7 + (N - 1) * 29) mod 256, 0 for seed 1's
    episode 1."""
    y, x = np.mgrid[0:H, 0:W]
    sx = (i * 3 + pattern * 37) % (W + 40) - 40
    sy = H // 3 + pattern * 9 % (H // 2)
    square = (x >= sx) & (x < sx + 40) & (y >= sy) & (y < sy + 40)
    r = np.where(square, 250, (x + i + pattern * 40) & 255)
    g = np.where(square, 240, (y * 2 + pattern * 25) & 255)
    b = np.where(square, 60, ((x + y) // 2 + 3 * i + phase) & 255)
    return np.stack([r, g, b], axis=-1).astype(np.uint8)


def depth_pattern(i: int) -> np.ndarray:
    y, x = np.mgrid[0:H, 0:W]
    bx = (i * 4) % (W + 60) - 60
    mm = 4000 - (3300 * y) // max(1, H - 1)
    mm = np.where((x >= bx) & (x < bx + 60) & (y > H // 4) & (y < H // 4 + 60), 450, mm)
    mm = np.where((x < 4) | (y < 4), 0, mm)
    return mm.astype(np.uint16)


def code_to_mm(code: np.ndarray) -> np.ndarray:
    step = 4095 / math.log(50)
    return np.rint(np.exp(math.log(100) + code.astype(np.float64) / step)).astype(np.int64)


def mm_to_code(mm: np.ndarray) -> np.ndarray:
    step = 4095 / math.log(50)
    with np.errstate(divide="ignore"):
        c = np.clip(np.rint((np.log(mm.astype(np.float64)) - math.log(100)) * step), 0, 4095)
    return np.where(mm == 0, 0, c).astype(np.int64)


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return 99.0 if mse == 0 else 10 * math.log10(255 ** 2 / mse)


# --------------------------------------------------------------------------- tasks


@pytest.fixture(scope="module")
def vtask(reel_bin, tmp_path_factory):
    def build(root):
        path = root / "video_task"
        eps = simulate(reel_bin, path, "--count", 2, "--seconds", SECONDS, "--fps", FPS, "--video-size", f"{W}x{H}")
        return path, eps
    return memo_task("video", tmp_path_factory, build)


@pytest.fixture(scope="module")
def ffv1_task(reel_bin, tmp_path_factory):
    def build(root):
        path = root / "ffv1_task"
        simulate(reel_bin, path, "--count", 1, "--seconds", SECONDS, "--fps", FPS, "--video-size", f"{W}x{H}", "--depth-ffv1")
        return path
    return memo_task("video_ffv1", tmp_path_factory, build)


def video_rel(n: int, slot: str, ext: str) -> str:
    return f"videos/chunk-000/{slot}/episode-{n - 1:03d}.{ext}"


# --------------------------------------------------------------------------- files and declarations


def test_one_file_per_slot_per_episode(vtask):
    path, eps = vtask
    expected = sorted(video_rel(e["episode_index"], s, "mp4") for e in eps for s in ALL_SLOTS)
    assert listing(path, "videos") == expected
    assert not leftover_dotfiles(path), leftover_dotfiles(path)


def test_frame_count_equals_rows_for_every_slot(vtask):
    path, eps = vtask
    for e in eps:
        n = e["episode_index"]
        rows = data_table(path, n).num_rows
        assert rows == int(SECONDS * FPS)
        for slot in ALL_SLOTS:
            st = ffprobe_stream(path / video_rel(n, slot, "mp4"))
            assert int(st["nb_read_packets"]) == rows, f"N={n} {slot}: {st['nb_read_packets']} frames for {rows} rows"
            assert (st["width"], st["height"]) == (W, H)
            assert st["avg_frame_rate"] == "10/1", st["avg_frame_rate"]


def test_stream_codecs(vtask):
    path, _ = vtask
    for slot in RGB_SLOTS:
        st = ffprobe_stream(path / video_rel(1, slot, "mp4"))
        assert (st["codec_name"], st["pix_fmt"]) == ("h264", "yuv420p"), (slot, st["codec_name"], st["pix_fmt"])
    for slot in DEPTH_SLOTS:
        st = ffprobe_stream(path / video_rel(1, slot, "mp4"))
        assert (st["codec_name"], st["pix_fmt"], st["codec_tag_string"]) == ("hevc", "gray12le", "hvc1"), (slot, st)
        assert st.get("color_range") == "pc", f"{slot}: range=full expected, got {st.get('color_range')}"


def test_info_declares_cameras_and_extensions(vtask):
    path, _ = vtask
    inf = info(path)
    assert inf["video"] is True
    assert inf["cameras"] == {s: {"height": H, "width": W} for s in RGB_SLOTS}, inf["cameras"]
    assert inf["video_extensions"] == {s: "mp4" for s in ALL_SLOTS}, inf["video_extensions"]
    declared = {slot for d in inf["devices"] for slot in d["slots"]}
    assert set(ALL_SLOTS) <= declared


def test_episode_row_video_codec_and_drop_stats(vtask):
    path, eps = vtask
    row = row_dict(path, eps[0]["episode_index"])
    codec = row_json(row, "video_codec")
    assert codec["encoder"] == "libx264" and codec["codec"] == "h264", codec
    assert codec["crf"] == 20 and codec["gop"] == 2, codec
    assert set(codec["depth"]) == set(DEPTH_SLOTS)
    for slot, master in DEPTH_SLOTS.items():
        d = codec["depth"][slot]
        assert d["codec"] == "HEVC (Rext) gray12le" and d["qp"] == 6 and d["format"] == "12bit log codes", d
        assert d["master_slot"] == master
    drops = row_json(row, "drop_stats")
    # The D435 depth source misses row 28 (the data's depth_dup column says so).
    dup = data_table(path, eps[0]["episode_index"]).column("depth_dup").to_pylist()
    assert drops["imu_overflow"] == 0
    assert drops["ext:d435_depth"] == sum(dup) == 1, drops
    assert drops["d435_depth_gap_ms"] == 200, drops  # two frame periods at 10 fps between real frames
    assert not any(k.startswith("ext:") and k != "ext:d435_depth" for k in drops), drops


# --------------------------------------------------------------------------- pixels


def test_rgb_frame_i_is_row_i(vtask):
    path, _ = vtask
    for n, pattern, slot in [(1, 0, "stereo_left"), (1, 4, "gripper_2_rgb"), (2, 7, "head_left_rgb")]:
        phase = (n - 1) * 29  # seed 1
        frames = decode(path / video_rel(n, slot, "mp4"), "rgb24", np.uint8, 3)
        assert len(frames) == int(SECONDS * FPS)
        for i in range(len(frames)):
            scores = {k: psnr(frames[i], rgb_pattern(k, pattern, phase)) for k in range(max(0, i - 2), min(len(frames), i + 3))}
            assert max(scores, key=scores.get) == i, f"{slot} frame {i} looks like row {max(scores, key=scores.get)}: {scores}"
            assert scores[i] > 24, f"{slot} frame {i}: PSNR {scores[i]:.1f} dB against the pushed frame"


def test_depth_hevc_round_trip_within_the_log_code(vtask):
    path, _ = vtask
    codes = decode(path / video_rel(1, "stereo_depth", "mp4"), "gray12le", np.uint16, 1)
    assert codes.max() <= 4095
    for i in range(len(codes)):
        want = depth_pattern(i + 2 * 7)  # stereo_depth is pattern 2 of the rig (offset 2*7)
        got_codes = codes[i].astype(np.int64)
        # qp=6 is near-lossless on the codes (a few codes of ringing at the no-depth border):
        # compare in the code domain, then in mm.
        err = np.abs(got_codes - mm_to_code(want))
        assert err.mean() < 2.0 and np.percentile(err, 99) <= 8 and err.max() <= 32, f"frame {i}: code error mean {err.mean():.2f} max {err.max()}"
        mm = code_to_mm(got_codes)
        valid = want > 0
        rel = np.abs(mm[valid] - want[valid]) / want[valid]
        assert np.median(rel) < 0.002 and np.percentile(rel, 99) < 0.01, f"frame {i}: depth off by {np.percentile(rel, 99):.4f} relative (p99)"


def test_depth_follows_master_repeating_on_a_gap(vtask):
    path, _ = vtask
    codes = decode(path / video_rel(1, "d435_depth", "mp4"), "gray12le", np.uint16, 1).astype(np.int64)
    pattern = 6 * 7  # d435_depth is pattern 6
    # Row 28 had no new depth frame: it repeats frame 27's content, frame 29 is new again.
    def err(k, j):
        return np.abs(codes[k] - mm_to_code(depth_pattern(j + pattern))).mean()
    assert err(28, 27) < 1.0, err(28, 27)
    assert err(28, 28) > 10 * max(err(28, 27), 0.1), (err(28, 28), err(28, 27))
    assert err(29, 29) < 1.0, err(29, 29)


def test_depth_ffv1_is_lossless_mm(ffv1_task):
    path = ffv1_task
    inf = info(path)
    assert inf["video_extensions"]["stereo_depth"] == "mkv" and inf["video_extensions"]["d435_depth"] == "mkv"
    assert "stereo_depth" not in inf["cameras"]
    st = ffprobe_stream(path / video_rel(1, "stereo_depth", "mkv"))
    assert (st["codec_name"], st["pix_fmt"]) == ("ffv1", "gray16le")
    mm = decode(path / video_rel(1, "stereo_depth", "mkv"), "gray16le", np.uint16, 1)
    assert len(mm) == int(SECONDS * FPS)
    for i in range(len(mm)):
        np.testing.assert_array_equal(mm[i], depth_pattern(i + 2 * 7), err_msg=f"frame {i}")
    codec = row_json(row_dict(path, 1), "video_codec")
    assert codec["depth"]["stereo_depth"]["codec"] == "FFV1 gray16le" and codec["depth"]["stereo_depth"]["format"] == "uint16 mm"


# --------------------------------------------------------------------------- lifecycle


def test_check_passes_on_video_task(reel_bin, vtask):
    check_clean(reel_bin, vtask[0])


def test_abort_leaves_no_video_of_that_episode(reel_bin, tmp_path):
    task = tmp_path / "abort_video"
    simulate(reel_bin, task, "--count", 2, "--abort-last", "--seconds", 0.5, "--video-size", "32x24")
    files = listing(task, "videos")
    assert files and all("/episode-000." in f for f in files), files
    assert not leftover_dotfiles(task), leftover_dotfiles(task)
    assert json.loads((task / "meta/recycled_episode.json").read_text())["episode_index"] == 2


def test_delete_removes_videos_keeps_row(reel_bin, tmp_path):
    from .recorder_common import delete, row_rel

    task = tmp_path / "delete_video"
    simulate(reel_bin, task, "--count", 2, "--seconds", 0.5, "--video-size", "32x24")
    delete(reel_bin, task, 1)
    files = listing(task, "videos")
    assert files and not any("/episode-000." in f for f in files), files
    assert (task / row_rel(1)).is_file()


def test_no_video_flag(reel_bin, tmp_path):
    task = tmp_path / "novideo"
    simulate(reel_bin, task, "--count", 1, "--seconds", 0.3, "--no-video")
    assert not listing(task, "videos")
    inf = info(task)
    assert inf["video"] is False and inf["cameras"] == {} and inf["video_extensions"] == {}
    assert row_json(row_dict(task, 1), "video_codec") == {}


def test_bad_video_options_are_clear_errors(reel_bin, tmp_path):
    from .recorder_common import reel_exec

    for args, needle in [
        (("--video-size", "63x48"), "even width and height"),
        (("--video-size", "0x48"), "size must be positive"),
        (("--codec", "vp9"), "expected h264 or hevc"),
        (("--video-size", "big"), "WIDTHxHEIGHT"),
    ]:
        task = tmp_path / ("bad" + str(abs(hash(args))))
        rc, out, err = reel_exec(reel_bin, "simulate", task, "--count", 1, "--seconds", 0.2, *args)
        assert rc != 0 and needle in err, f"{args}: rc={rc}\n{err}"
        assert not [p for p in listing(task, "") if "/episode-000." in p and not p.startswith("meta/")] if task.exists() else True
