"""Video decoding from Python: reel.VideoReader (.info, .read_rgb, .read_depth, .read_rgb_at),
Task.frames, and reel._core.encode_rgb.

Every video here is made with the ffmpeg CLI, and every expected pixel comes from the ffmpeg CLI's
decode (`ffmpeg -i f -f rawvideo -pix_fmt rgb24 -`), independently of reel: RGB must equal it byte
for byte, FFV1 depth must equal the millimetres written."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from . import video_ref
from .fixtures import EpisodeSpec, write_task
from .video_ref import code_to_mm, ffmpeg, mm_to_code

W, H = 96, 64
N = 75  # frames: several GOPs of 30, so random access seeks both ways
def cli_rgb(path: Path) -> np.ndarray:
    return video_ref.cli_rgb(path, W, H)


def cli_gray(path: Path, pix_fmt: str) -> np.ndarray:
    return video_ref.cli_gray16(path, W, H, pix_fmt)


def depth_mm(frames: int) -> np.ndarray:
    y, x = np.mgrid[0:H, 0:W]
    mm = np.stack([120 + 40 * x + 20 * y + 30 * f for f in range(frames)]).astype("<u2")
    mm[:, :4, :4] = 0  # no depth
    return mm


def raw_input(tmp: Path, array: np.ndarray, pix_fmt: str) -> list:
    raw = tmp / f"in_{pix_fmt}.raw"
    raw.write_bytes(array.astype("<u2").tobytes())
    return ["-f", "rawvideo", "-pix_fmt", pix_fmt, "-s", f"{W}x{H}", "-r", "30", "-i", raw]


def write_rgb(path: Path, *codec) -> Path:
    ffmpeg("-f", "lavfi", "-i", f"testsrc2=size={W}x{H}:rate=30", "-frames:v", N, *codec, "-pix_fmt", "yuv420p", path)
    return path


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> dict:
    """Files written with the ffmpeg CLI, with the CLI's decode of each."""
    d = tmp_path_factory.mktemp("python_video")
    files = {
        "h264_gop30_bframes": write_rgb(d / "gop30.mp4", "-c:v", "libx264", "-g", "30", "-bf", "3"),
        "h264_gop2": write_rgb(d / "gop2.mp4", "-c:v", "libx264", "-g", "2"),
        "hevc": write_rgb(d / "hevc.mp4", "-c:v", "libx265", "-x265-params", "keyint=25:log-level=error",
                          "-tag:v", "hvc1"),
    }
    mm = depth_mm(N)
    ffv1 = d / "depth_ffv1.mkv"
    ffmpeg(*raw_input(d, mm, "gray16le"), "-c:v", "ffv1", "-pix_fmt", "gray16le", ffv1)
    hevc12 = d / "depth_hevc12.mp4"
    ffmpeg(*raw_input(d, mm_to_code(mm), "gray12le"), "-c:v", "libx265", "-pix_fmt", "gray12le",
           "-x265-params", "qp=6:range=full:log-level=error", "-tag:v", "hvc1", hevc12)
    return {"dir": d, "rgb": {k: (p, cli_rgb(p)) for k, p in files.items()}, "mm": mm, "ffv1": ffv1,
            "hevc12": hevc12, "hevc12_codes": cli_gray(hevc12, "gray12le")}


RNG = np.random.default_rng(7)
INDEX_SETS = {
    "sequential": list(range(N)),
    "reversed": list(range(N - 1, -1, -1)),
    "repeated": [5, 5, 5, 40, 40, 0, 0, N - 1, N - 1],
    "random": RNG.integers(0, N, size=40).tolist(),
    "strided_back_and_forth": [60, 2, 59, 31, 30, 29, 74, 1],
}


# --------------------------------------------------------------------------- RGB by index


@pytest.mark.parametrize("kind", ["h264_gop30_bframes", "h264_gop2", "hevc"])
@pytest.mark.parametrize("order", list(INDEX_SETS))
def test_read_rgb_equals_ffmpeg_cli(reel_mod, videos, kind, order):
    path, want = videos["rgb"][kind]
    assert want.shape[0] == N
    idx = INDEX_SETS[order]
    got = reel_mod.VideoReader(path).read_rgb(idx)
    assert got.dtype == np.uint8 and got.shape == (len(idx), H, W, 3)
    for k, i in enumerate(idx):
        assert np.array_equal(got[k], want[i]), f"{kind}: frame {i} (position {k}) differs from the ffmpeg CLI"


def test_one_reader_many_calls(reel_mod, videos):
    """The decoder is kept between calls: single-frame reads in a random order still match."""
    path, want = videos["rgb"]["h264_gop30_bframes"]
    with reel_mod.VideoReader(path) as v:
        for i in INDEX_SETS["random"][:20] + [0, N - 1, 0]:
            assert np.array_equal(v.read_rgb([i])[0], want[i]), i
        # Index types: numpy ints of any width, ranges, empty.
        assert np.array_equal(v.read_rgb(np.array([3, 1], np.int32)), want[[3, 1]])
        assert np.array_equal(v.read_rgb(range(2, 5)), want[2:5])
        assert v.read_rgb([]).shape == (0, H, W, 3)


def test_info(reel_mod, videos):
    v = reel_mod.VideoReader(videos["rgb"]["h264_gop2"][0])
    info = v.info
    assert {k: info[k] for k in ("width", "height", "frames", "codec", "pix_fmt", "depth")} == {
        "width": W, "height": H, "frames": N, "codec": "h264", "pix_fmt": "yuv420p", "depth": False}
    assert info["fps"] == pytest.approx(30.0)
    num, den = info["time_base"]
    assert num > 0 and den > 0
    assert len(v) == N
    assert v.frame_time(30) == pytest.approx(1.0, abs=1e-6)
    assert reel_mod.VideoReader(videos["rgb"]["hevc"][0]).info["codec"] == "hevc"
    d = reel_mod.VideoReader(videos["ffv1"]).info
    assert (d["codec"], d["pix_fmt"], d["depth"], d["frames"]) == ("ffv1", "gray16le", True, N)
    assert reel_mod.VideoReader(videos["hevc12"]).info["pix_fmt"] == "gray12le"


def test_output_is_a_new_numpy_array(reel_mod, videos):
    path, want = videos["rgb"]["h264_gop2"]
    v = reel_mod.VideoReader(path)
    a = v.read_rgb([1, 2])
    assert a.flags.c_contiguous and a.flags.writeable and a.flags.owndata
    a[:] = 0  # the caller's to change; the next read is unaffected
    assert np.array_equal(v.read_rgb([1, 2]), want[[1, 2]])


# --------------------------------------------------------------------------- RGB by time


def test_read_rgb_at(reel_mod, videos):
    path, want = videos["rgb"]["h264_gop30_bframes"]
    v = reel_mod.VideoReader(path)
    frames = [10, 0, 74, 33, 33, 50]
    times = [f / 30 + 0.004 for f in frames]  # within half a frame period (16.7 ms)
    got = v.read_rgb_at(times)
    assert got.shape == (len(frames), H, W, 3)
    for k, f in enumerate(frames):
        assert np.array_equal(got[k], want[f]), f
    # An explicit tolerance; a target outside every frame's tolerance names the file and target.
    assert np.array_equal(v.read_rgb_at(np.array([1.0 + 0.01]), tolerance_s=0.02)[0], want[30])
    with pytest.raises(ValueError) as e:
        v.read_rgb_at([10.0])
    assert isinstance(e.value, reel_mod.Error) and path.name in str(e.value)
    with pytest.raises(ValueError):
        v.read_rgb_at([0.5], tolerance_s=-1)


# --------------------------------------------------------------------------- depth


def test_ffv1_depth_is_exact_millimetres(reel_mod, videos):
    v = reel_mod.VideoReader(videos["ffv1"])
    idx = INDEX_SETS["random"][:20] + INDEX_SETS["reversed"][:5]
    got = v.read_depth(idx)
    assert got.dtype == np.uint16 and got.shape == (len(idx), H, W)
    assert np.array_equal(got, videos["mm"][idx])
    assert np.array_equal(v.read_depth(range(N)), videos["mm"])


def test_hevc12_depth_is_the_cli_codes_through_the_inverse_log(reel_mod, videos):
    idx = [40, 3, 3, 74, 0]
    got = reel_mod.VideoReader(videos["hevc12"]).read_depth(idx)
    assert np.array_equal(got, code_to_mm(videos["hevc12_codes"][idx]))
    want = videos["mm"][idx].astype(np.float64)
    body = want >= 100
    assert np.median(np.abs(got[body] - want[body]) / want[body]) < 0.01


def test_wrong_kind_of_read(reel_mod, videos):
    with pytest.raises(ValueError, match="not a depth stream"):
        reel_mod.VideoReader(videos["rgb"]["h264_gop2"][0]).read_depth([0])
    with pytest.raises(ValueError, match="depth stream"):
        reel_mod.VideoReader(videos["ffv1"]).read_rgb([0])


# --------------------------------------------------------------------------- errors


def test_missing_file(reel_mod, tmp_path):
    missing = tmp_path / "nope" / "episode-000.mp4"
    with pytest.raises(FileNotFoundError) as e:
        reel_mod.VideoReader(missing)
    assert isinstance(e.value, reel_mod.Error) and isinstance(e.value, reel_mod.NotFoundError)
    assert str(missing) in str(e.value)


@pytest.mark.parametrize("bad", [[N], [0, N + 100], [-1]])
def test_index_out_of_range_names_the_file(reel_mod, videos, bad):
    path = videos["rgb"]["h264_gop30_bframes"][0]
    with pytest.raises((IndexError, ValueError)) as e:
        reel_mod.VideoReader(path).read_rgb(bad)
    assert isinstance(e.value, reel_mod.Error)
    assert path.name in str(e.value) and f"{N} frames" in str(e.value), str(e.value)


def test_bad_index_types(reel_mod, videos):
    v = reel_mod.VideoReader(videos["rgb"]["h264_gop2"][0])
    with pytest.raises(TypeError):
        v.read_rgb([1.5])
    with pytest.raises(TypeError):
        v.read_rgb([[0, 1]])


def test_unreadable_files(reel_mod, videos, tmp_path):
    data = videos["rgb"]["h264_gop30_bframes"][0].read_bytes()
    truncated = tmp_path / "truncated.mp4"
    truncated.write_bytes(data[: len(data) // 2])
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video" * 100)
    for p in (truncated, junk):
        with pytest.raises(reel_mod.Error) as e:
            reel_mod.VideoReader(p).read_rgb(range(N))
        assert isinstance(e.value, ValueError) and p.name in str(e.value), str(e.value)
    with pytest.raises(reel_mod.Error):
        reel_mod.VideoReader(tmp_path)  # a directory


def test_closed_reader(reel_mod, videos):
    path = videos["rgb"]["h264_gop2"][0]
    with reel_mod.VideoReader(path) as v:
        v.read_rgb([0])
    assert v.closed and v.info["frames"] == N
    with pytest.raises(ValueError, match="closed"):
        v.read_rgb([0])


def test_reading_writes_nothing(reel_mod, videos, tmp_path, unchanged):
    src, want = videos["rgb"]["h264_gop30_bframes"]
    path = tmp_path / "v.mp4"
    path.write_bytes(src.read_bytes())
    with unchanged("reel.VideoReader"):
        with reel_mod.VideoReader(path) as v:
            assert np.array_equal(v.read_rgb([9, 8]), want[[9, 8]])


# --------------------------------------------------------------------------- threads (GIL released)


def test_threads_share_a_reader_and_use_their_own(reel_mod, videos):
    path, want = videos["rgb"]["h264_gop30_bframes"]
    shared = reel_mod.VideoReader(path)
    errors = []

    def work(seed: int, own: bool) -> None:
        try:
            v = reel_mod.VideoReader(path) if own else shared
            idx = np.random.default_rng(seed).integers(0, N, size=12)
            for i in idx:
                if not np.array_equal(v.read_rgb([i])[0], want[i]):
                    errors.append(f"thread {seed}: frame {i}")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(s, s % 2 == 0)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# --------------------------------------------------------------------------- Task.frames


@pytest.fixture
def video_task(tmp_path, videos):
    n = 12
    task = write_task(tmp_path, "video_task", [
        EpisodeSpec(1, length=n, videos={"d435_rgb": "mp4", "d435_depth": "mkv", "stereo_depth": "mp4"})])
    vids = task.ep(1).videos
    write_rgb_n = lambda p: ffmpeg("-f", "lavfi", "-i", f"testsrc2=size={W}x{H}:rate=30",  # noqa: E731
                                   "-frames:v", n, "-c:v", "libx264", "-g", "30", "-bf", "3", "-pix_fmt", "yuv420p", p)
    write_rgb_n(task.path / vids["d435_rgb"])
    d = videos["dir"]
    ffmpeg(*raw_input(d, videos["mm"][:n], "gray16le"), "-c:v", "ffv1", "-pix_fmt", "gray16le",
           task.path / vids["d435_depth"])
    ffmpeg(*raw_input(d, mm_to_code(videos["mm"][:n]), "gray12le"), "-c:v", "libx265", "-pix_fmt", "gray12le",
           "-x265-params", "qp=6:range=full:log-level=error", "-tag:v", "hvc1", task.path / vids["stereo_depth"])
    return task


def test_task_frames_rgb_and_depth(reel_mod, video_task, unchanged):
    vids = video_task.ep(1).videos
    want = cli_rgb(video_task.path / vids["d435_rgb"])
    with unchanged("Task.frames"):
        task = reel_mod.open(video_task.path)
        assert set(task.episodes()[0]["videos"]) == {"d435_rgb", "d435_depth", "stereo_depth"}
        rows = [11, 0, 6, 6]
        rgb = task.frames(1, "d435_rgb", rows)
        assert rgb.dtype == np.uint8 and rgb.shape == (4, H, W, 3)
        assert np.array_equal(rgb, want[rows])
        mm = task.frames(1, "d435_depth", rows)
        assert mm.dtype == np.uint16 and mm.shape == (4, H, W)
        assert np.array_equal(mm, depth_mm(12)[rows])
        codes = cli_gray(video_task.path / vids["stereo_depth"], "gray12le")
        assert np.array_equal(task.frames(1, "stereo_depth", rows), code_to_mm(codes[rows]))


def test_task_frames_errors(reel_mod, video_task):
    task = reel_mod.open(video_task.path)
    with pytest.raises(FileNotFoundError) as e:
        task.frames(1, "nope", [0])
    assert isinstance(e.value, reel_mod.Error)
    assert "nope" in str(e.value) and "d435_rgb" in str(e.value)
    with pytest.raises(reel_mod.NotFoundError):
        task.frames(9, "d435_rgb", [0])
    with pytest.raises(ValueError) as e:
        task.frames(1, "d435_rgb", [12])
    assert "episode-000.mp4" in str(e.value) and "12 frames" in str(e.value)


# --------------------------------------------------------------------------- encode_rgb


@pytest.mark.parametrize("codec", ["h264", "hevc"])
def test_encode_rgb_round_trip(reel_mod, videos, tmp_path, codec):
    src = videos["rgb"]["h264_gop2"][1][:20].copy()
    out = tmp_path / f"enc_{codec}.mp4"
    assert reel_mod._core.encode_rgb(str(out), src, 30.0, codec, "ultrafast", 18, 5, 1) == 20
    want = cli_rgb(out)
    v = reel_mod.VideoReader(out)
    assert (v.info["codec"], v.info["frames"], v.info["pix_fmt"]) == (codec, 20, "yuv420p")
    assert np.array_equal(v.read_rgb(range(19, -1, -1)), want[::-1])
    # Lossy, but close to what went in.
    assert np.mean(np.abs(want.astype(int) - src.astype(int))) < 6
    with pytest.raises(ValueError):
        reel_mod._core.encode_rgb(str(tmp_path / "bad.mp4"), src[..., :2].copy(), 30.0, codec, "ultrafast", 18, 5, 1)


# --------------------------------------------------------------------------- loading


def test_openssl_users_work_after_import(reel_mod):
    """pyarrow's libparquet exports its own OpenSSL; the extension also loads the system libcrypto
    (through FFmpeg). `import reel` first, then hashlib/ssl, must not crash (it did: segfault)."""
    code = ("import reel, hashlib, ssl; assert hashlib.sha256(b'x').hexdigest().startswith('2d711642'); "
            "ssl.create_default_context(); import numpy.random; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stderr[-2000:])


def test_stats_count_seeks_and_frames(reel_mod, videos):
    """VideoReader.stats(): a sequential read seeks once; a random frame is one seek, no more
    frames decoded than from its keyframe, on frame threads when that run is long (frame 37:
    8 frames from the keyframe at 30) and on one thread when it is short (frame 61: 2 frames
    from 60); reset=True zeroes the counts."""
    path, want = videos["rgb"]["h264_gop30_bframes"]
    with reel_mod.VideoReader(path) as v:
        assert np.array_equal(v.read_rgb(range(N)), want)
        s = v.stats(reset=True)
        assert (s["requests"], s["seeks"], s["frames_converted"], s["drains"]) == (1, 1, N, 0)
        assert v.stats()["seeks"] == 0
        assert np.array_equal(v.read_rgb([N // 2])[0], want[N // 2])
        s = v.stats(reset=True)
        assert s["seeks"] == 1 and s["threaded_seeks"] == 1 and s["drains"] == 1
        assert 1 <= s["frames_decoded"] <= s["packets_read"] <= N
        assert np.array_equal(v.read_rgb([61])[0], want[61])
        s = v.stats()
        assert s["seeks"] == 1 and s["threaded_seeks"] == 0 and s["drains"] == 1
