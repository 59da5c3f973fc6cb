#!/usr/bin/env python3
"""reel video benchmark: decode and encode beside PyAV and the ffmpeg CLI, and whether the
simulated rig records in real time, in one run.

    make bench                                    # or: .venv/bin/python bench/bench_video.py
    .venv/bin/python bench/bench_video.py --quick  # fewer files/frames/rounds (~3 min)
    .venv/bin/python bench/bench_video.py --only decode|encode|realtime
    .venv/bin/python bench/bench_video.py --render bench/results/video.json

1. Decode, on test videos made once with the ffmpeg CLI (bench/results/video/): sequential
   (every frame, as a uint8 (H, W, 3) RGB array) and random access (K seeded indices) with
   reel.VideoReader, PyAV (container.decode + to_ndarray("rgb24"); random: seek to the keyframe,
   decode forward, as LeRobot's pyav backend does) and the ffmpeg CLI (rawvideo rgb24 on a pipe;
   random: one accurate `-ss` process per frame). reel's frames are asserted equal to the CLI's,
   byte for byte; PyAV's agreement is measured (another FFmpeg and swscale build).
   The limit beside them (bench/decode_limit.cc, `make build`): plain libav* decoding exactly the
   frames each request needs, converted; reel is printed as a fraction of it.
2. Encode: reel._core.encode_rgb (reel's VideoEncoder) vs `ffmpeg -f rawvideo ... -c:v libx264`
   with the same preset, CRF, GOP and threads; the decoded outputs are compared.
3. Real time: `reel simulate --profile --json` of the standard rig (6 RGB + 2 depth streams) at
   two frame sizes, two RGB presets and two depth presets: record_wall_s <= recorded_s?

Sides take turns within each round after an untimed warm-up; best and median are reported.
Results: tables on stdout, bench/results/video.md and bench/results/video.json.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import av
import numpy as np

import reel
import reel._core

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
WORK = RESULTS / "video"
FF = ["ffmpeg", "-nostdin", "-v", "error"]
BATCH = 30  # reel's sequential read: frames per read_rgb call

# name: (width, height, encoder args). Content: testsrc2 with temporal noise, so that the
# encoder and decoder see camera-like residuals rather than flat colour.
FILES = {
    "640x480_h264_gop2": (640, 480, ["-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-g", "2"]),
    "640x480_h264_gop30": (640, 480, ["-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-g", "30"]),
    "1280x800_h264_gop2": (1280, 800, ["-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-g", "2"]),
    "1280x800_h264_gop30": (1280, 800, ["-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-g", "30"]),
    "640x480_hevc_gop30": (640, 480, ["-c:v", "libx265", "-preset", "veryfast", "-crf", "24",
                                      "-x265-params", "keyint=30:log-level=error", "-tag:v", "hvc1"]),
    # Depth as the recorder writes it (src/reel/video/encoder.cc): 12-bit gray HEVC, qp 6, full
    # range, no B-frames; read as millimetres through the log code (reel read_depth).
    "640x480_depth12_gop30": (640, 480, ["-c:v", "libx265", "-preset", "fast", "-x265-params",
                                         "qp=6:range=full:bframes=0:keyint=30:log-level=error", "-tag:v", "hvc1"]),
}
DEPTH = {"640x480_depth12_gop30"}
QUICK_FILES = ("640x480_h264_gop2", "1280x800_h264_gop30", "640x480_hevc_gop30", "640x480_depth12_gop30")
# The decode limit (bench/decode_limit.cc, built by `make build`): plain libav* calls that decode
# exactly the frames a request needs and convert them; reel is printed as a fraction of it.
LIMIT = os.environ.get("REEL_DECODE_LIMIT") or str(REPO / "build/cmake/bench/reel_decode_limit")
# Depth code -> millimetres (reel/video.h DepthCodeToMm), for the peers' depth frames.
CODE_TO_MM = np.rint(np.exp(np.log(100.0) + np.arange(4096) * np.log(50.0) / 4095)).astype(np.uint16)


# --------------------------------------------------------------------------- timing


def interleaved(funcs: dict[str, Callable[[], Any]], warm: dict[str, Callable[[], Any]], reps: int,
                label: str) -> dict[str, list[float]]:
    """Each side once untimed (warm), then `reps` rounds of all sides in turn. A side that returns
    a float has timed itself (the limit program: its own clock, without process start)."""
    for fn in warm.values():
        fn()
    times: dict[str, list[float]] = {n: [] for n in funcs}
    for r in range(reps):
        for name, fn in funcs.items():
            gc.collect()
            t0 = time.perf_counter()
            own = fn()
            times[name].append(own if isinstance(own, float) else time.perf_counter() - t0)
        print(f"  [{label}] round {r + 1}/{reps}: " + ", ".join(f"{n} {times[n][-1]:.2f} s" for n in funcs),
              flush=True)
    return times


def summary(ts: list[float], frames: int) -> dict:
    return {"times_s": ts, "best_s": min(ts), "median_s": statistics.median(ts), "frames": frames,
            "best_fps": frames / min(ts), "median_fps": frames / statistics.median(ts)}


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


# --------------------------------------------------------------------------- test files


def make_files(names: list[str], frames: int) -> dict[str, Path]:
    WORK.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in names:
        w, h, enc = FILES[name]
        path = WORK / f"{name}_{frames}.mp4"
        if not path.exists():
            tmp = path.with_name("." + path.name)
            pix = "gray12le" if name in DEPTH else "yuv420p"
            subprocess.run([*FF, "-y", "-f", "lavfi", "-i", f"testsrc2=size={w}x{h}:rate=30",
                            "-vf", "noise=alls=12:allf=t", "-frames:v", str(frames), *enc,
                            "-pix_fmt", pix, "-f", "mp4", str(tmp)], check=True)
            tmp.rename(path)
        out[name] = path
    return out


def frame_pts(path: Path) -> tuple[list[int], list[int], Any]:
    """(pts of frame i, pts of the keyframe at or before frame i, time_base), from the packets."""
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        pk = sorted((p.pts, p.is_keyframe) for p in c.demux(s) if p.pts is not None)
        tb = s.time_base
    pts, key, last = [], [], pk[0][0]
    for p, k in pk:
        last = p if k else last
        pts.append(p)
        key.append(last)
    return pts, key, tb


# --------------------------------------------------------------------------- decode sides


def read_frames(v: reel.VideoReader, idx: Any, depth: bool) -> np.ndarray:
    return v.read_depth(idx) if depth else v.read_rgb(idx)


def reel_seq(path: Path, n: int, depth: bool, threads: int = 0) -> None:
    with reel.VideoReader(path, threads=threads) as v:
        for a in range(0, n, BATCH):
            read_frames(v, range(a, min(a + BATCH, n)), depth)


def pyav_frame(f: Any, depth: bool) -> np.ndarray:
    """RGB24, or depth: the 12-bit codes through the log code to millimetres (as reel's)."""
    return CODE_TO_MM[np.minimum(f.to_ndarray(), 4095)] if depth else f.to_ndarray(format="rgb24")


def pyav_seq(path: Path, n: int, thread_type: str | None, depth: bool) -> None:
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        if thread_type:
            s.thread_type = thread_type
        for k, f in enumerate(c.decode(s)):
            if k == n:
                break
            pyav_frame(f, depth)


def cli_pix(depth: bool) -> tuple[str, Any, tuple[int, ...]]:
    """The CLI's output pixel format, numpy dtype and per-frame trailing shape. Depth: the
    12-bit codes as stored (the CLI has no log-code table)."""
    return ("gray12le", np.uint16, ()) if depth else ("rgb24", np.uint8, (3,))


def cli_seq(path: Path, n: int, w: int, h: int, threads: int | None, depth: bool) -> np.ndarray | None:
    t = ["-threads", str(threads)] if threads else []
    pix, dtype, tail = cli_pix(depth)
    p = subprocess.Popen([*FF, *t, "-i", str(path), "-frames:v", str(n), "-f", "rawvideo", "-pix_fmt", pix,
                          "-"], stdout=subprocess.PIPE)
    got = 0
    while True:  # BATCH frames per numpy buffer, as reel's batches
        buf = np.empty((BATCH, h, w, *tail), dtype)
        k = p.stdout.readinto(memoryview(buf).cast("B"))
        got += k
        if k < buf.nbytes:
            break
    p.wait()
    assert p.returncode == 0 and got == n * w * h * np.dtype(dtype).itemsize * (3 if tail else 1), (path, got)
    return None


def limit_run(path: Path, depth: bool, threads: int, idx: list[int] | None = None, n: int = 0,
              dump: Path | None = None) -> dict:
    """One run of the limit program: random (idx) or sequential (n frames). Its JSON result."""
    cmd = [LIMIT, str(path), "--threads", str(threads)]
    cmd += ["--indices", ",".join(map(str, idx))] if idx is not None else ["--sequential", str(n)]
    cmd += ["--depth"] if depth else []
    cmd += ["--dump", str(dump)] if dump else []
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def limit_time(path: Path, depth: bool, threads: int, idx: list[int] | None = None, n: int = 0) -> float:
    return float(limit_run(path, depth, threads, idx, n)["times_s"][0])


def reel_random(path: Path, idx: list[int], one_at_a_time: bool, depth: bool = False,
                stats: dict | None = None) -> list[np.ndarray]:
    with reel.VideoReader(path) as v:
        out = ([read_frames(v, [i], depth)[0] for i in idx] if one_at_a_time
               else list(read_frames(v, idx, depth)))
        if stats is not None:
            stats.update(v.stats())
        return out


def pyav_random(path: Path, idx: list[int], pts: list[int], key: list[int], thread_type: str | None,
                stats: dict | None = None, depth: bool = False) -> list[np.ndarray]:
    """Per target: seek to the keyframe at or before it (backward), decode forward to its pts.
    The frame and keyframe pts tables are built before the clock starts."""
    out = []
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        if thread_type:
            s.thread_type = thread_type
        for i in idx:
            target = pts[i]
            for seek_to in (key[i], 0):  # fall back to the start if the seek lands past the target
                c.seek(seek_to, stream=s, backward=True, any_frame=False)
                f = next((f for f in c.decode(s) if f.pts is not None and f.pts >= target), None)
                if f is not None and f.pts == target:
                    out.append(pyav_frame(f, depth))
                    break
                if stats is not None:
                    stats["fallbacks"] = stats.get("fallbacks", 0) + 1
            else:
                raise RuntimeError(f"{path}: PyAV did not reach frame {i}")
    return out


def cli_random(path: Path, idx: list[int], times: list[float], w: int, h: int, depth: bool = False) -> list[np.ndarray]:
    """One process per frame; -ss before -i with accurate seek (the default): decode from the
    keyframe before, drop frames before the time. 1 ms before the frame's time so that a
    printed time never rounds past it."""
    out = []
    pix, dtype, tail = cli_pix(depth)
    for i in idx:
        raw = subprocess.run([*FF, "-ss", f"{max(0.0, times[i] - 0.001):.6f}", "-i", str(path), "-frames:v", "1",
                              "-f", "rawvideo", "-pix_fmt", pix, "-"], check=True, capture_output=True).stdout
        out.append(np.frombuffer(raw, dtype).reshape(h, w, *tail))
    return out


# --------------------------------------------------------------------------- decode: checks + timing


def check_sequential(path: Path, n: int, w: int, h: int, depth: bool, keep: set[int]) -> tuple[dict, dict]:
    """reel vs CLI over every frame (equal?) and PyAV vs CLI (how far apart?); the CLI's frames
    `keep` are returned for the random-access checks. Depth: millimetres, the CLI's 12-bit codes
    through the log code."""
    pix, dtype, tail = cli_pix(depth)
    p = subprocess.Popen([*FF, "-i", str(path), "-f", "rawvideo", "-pix_fmt", pix, "-"], stdout=subprocess.PIPE)
    frame_bytes = w * h * np.dtype(dtype).itemsize * (3 if tail else 1)
    reel_equal = 0
    diff_px = diff_sum = 0
    diff_max = 0
    kept = {}
    with reel.VideoReader(path) as v, av.open(str(path)) as c:
        frames = c.decode(c.streams.video[0])
        for a in range(0, n, BATCH):
            mine = read_frames(v, range(a, min(a + BATCH, n)), depth)
            for k in range(mine.shape[0]):
                ref = np.frombuffer(p.stdout.read(frame_bytes), dtype).reshape(h, w, *tail)
                if depth:
                    ref = CODE_TO_MM[np.minimum(ref, 4095)]
                if a + k in keep:
                    kept[a + k] = ref.copy()
                reel_equal += int(np.array_equal(mine[k], ref))
                d = np.abs(pyav_frame(next(frames), depth).astype(np.int32) - ref)
                diff_px += int(np.count_nonzero(d))
                diff_sum += int(d.sum())
                diff_max = max(diff_max, int(d.max()))
    rest = p.stdout.read()
    p.wait()
    assert not rest, f"{path}: the CLI decoded more than {n} frames"
    values = n * w * h * (3 if tail else 1)
    return {"reel_equal_frames": reel_equal, "frames": n, "pyav_differing_values": diff_px / values,
            "pyav_mean_abs_diff": diff_sum / values, "pyav_max_abs_diff": diff_max}, kept


def check_random(path: Path, idx: list[int], ref: dict, pts: list[int], key: list[int], times: list[float],
                 k_cli: int, w: int, h: int, depth: bool) -> dict:
    """Every side's random frames against the CLI's sequential decode (reel: asserted equal), the
    limit's included (so it decodes the frames asked), and the decode counts per request."""
    want = [ref[i] for i in idx]
    equal = lambda got: sum(np.array_equal(a, b) for a, b in zip(got, want))  # noqa: E731
    reel_stats: dict = {}
    reel_one = reel_random(path, idx, True, depth, reel_stats)
    reel_batch = reel_random(path, idx, False, depth)
    assert equal(reel_one) == len(idx), f"{path}: reel one-at-a-time differs from the CLI"
    assert equal(reel_batch) == len(idx), f"{path}: reel's batch read differs from the CLI"
    dump = WORK / ".limit_dump.raw"
    lim = limit_run(path, depth, 1, idx, dump=dump)
    _, dtype, tail = cli_pix(depth)
    got_limit = list(np.fromfile(dump, np.uint16 if depth else np.uint8).reshape(len(idx), h, w, *tail))
    dump.unlink()
    pyav_stats: dict = {}
    got_pyav = pyav_random(path, idx, pts, key, None, pyav_stats, depth)
    got_cli = cli_random(path, idx[:k_cli], times, w, h, depth)
    if depth:
        got_cli = [CODE_TO_MM[np.minimum(f, 4095)] for f in got_cli]
    return {
        "reel_one_at_a_time_equal": True,
        "limit_equal": equal(got_limit),
        "cli_ss_equal": sum(np.array_equal(a, b) for a, b in zip(got_cli, want)),
        "cli_ss_frames": len(got_cli),
        "pyav_same_frame_max_abs_diff": max(int(np.abs(a.astype(np.int32) - b).max()) for a, b in zip(got_pyav, want)),
        "pyav_fallbacks": pyav_stats.get("fallbacks", 0),
        "reel_one_stats": reel_stats,
        "limit_counts": {k: lim[k] for k in ("seeks", "packets_sent", "frames_decoded", "frames_converted")},
    }


def bench_decode(paths: dict[str, Path], n: int, k_random: int, k_cli: int, reps: int, seed: int) -> dict:
    if not os.access(LIMIT, os.X_OK):
        raise SystemExit(f"{LIMIT}: the decode-limit program is missing (make build, or set REEL_DECODE_LIMIT)")
    res = {}
    for name, path in paths.items():
        w, h, _ = FILES[name]
        depth = name in DEPTH
        print(f"decode {name} ({path.stat().st_size / 1e6:.1f} MB, {n} frames)", flush=True)
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, n, size=k_random).tolist()
        chk, ref = check_sequential(path, n, w, h, depth, set(idx))
        if chk["reel_equal_frames"] != n:
            raise AssertionError(f"{path}: reel equals the CLI on {chk['reel_equal_frames']} of {n} frames")
        warm_n = min(n, BATCH)
        seq = {
            "reel": lambda: reel_seq(path, n, depth),
            "reel_1t": lambda: reel_seq(path, n, depth, threads=1),
            "pyav": lambda: pyav_seq(path, n, None, depth),
            "pyav_auto": lambda: pyav_seq(path, n, "AUTO", depth),
            "cli": lambda: cli_seq(path, n, w, h, None, depth),
            "cli_1t": lambda: cli_seq(path, n, w, h, 1, depth),
            "limit": lambda: limit_time(path, depth, 0, n=n),
            "limit_1t": lambda: limit_time(path, depth, 1, n=n),
        }
        warm = {
            "reel": lambda: reel_seq(path, warm_n, depth), "pyav": lambda: pyav_seq(path, warm_n, "AUTO", depth),
            "cli": lambda: cli_seq(path, warm_n, w, h, None, depth),
        }
        seq_t = interleaved(seq, warm, reps, f"{name} sequential")

        pts, key, tb = frame_pts(path)
        times = [float(p * tb) for p in pts]
        # Correctness before timing: every side's random frames vs the CLI's sequential decode.
        rand_check = check_random(path, idx, ref, pts, key, times, k_cli, w, h, depth)
        rnd = {
            "reel_batch": lambda: reel_random(path, idx, False, depth),
            "reel_one": lambda: reel_random(path, idx, True, depth),
            "pyav": lambda: pyav_random(path, idx, pts, key, None, depth=depth),
            "pyav_auto": lambda: pyav_random(path, idx, pts, key, "AUTO", depth=depth),
            "cli": lambda: cli_random(path, idx[:k_cli], times, w, h, depth),
            "limit": lambda: limit_time(path, depth, 1, idx),
        }
        rnd_t = interleaved(rnd, {"reel": lambda: reel_random(path, idx[:3], True, depth)}, reps,
                            f"{name} random")
        res[name] = {
            "path": str(path.relative_to(REPO)), "width": w, "height": h, "frames": n, "depth": depth,
            "bytes": path.stat().st_size, "check": chk | rand_check, "random_indices": idx,
            "sequential": {s: summary(t, n) for s, t in seq_t.items()},
            "random": {s: summary(t, k_cli if s == "cli" else k_random) for s, t in rnd_t.items()},
            "load_after": load(),
        }
    return res


# --------------------------------------------------------------------------- encode


def cli_encode(raw: Path, out: Path, w: int, h: int, preset: str, crf: int, gop: int, threads: int) -> None:
    t = ["-threads", str(threads)] if threads else []
    subprocess.run([*FF, "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}", "-r", "30", "-i", str(raw),
                    "-c:v", "libx264", "-preset", preset, "-crf", str(crf), "-g", str(gop), *t, "-pix_fmt", "yuv420p",
                    str(out)], check=True)


def decoded_equal(a: Path, b: Path) -> bool:
    dec = lambda p: subprocess.run([*FF, "-i", str(p), "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],  # noqa: E731
                                   check=True, capture_output=True).stdout
    return dec(a) == dec(b)


def bench_encode(paths: dict[str, Path], n: int, presets: list[str], reps: int, crf: int = 20, gop: int = 2) -> dict:
    res = {}
    out_dir = WORK / "encode"
    out_dir.mkdir(parents=True, exist_ok=True)
    for size in ("640x480", "1280x800"):
        src = next((p for name, p in paths.items() if name.startswith(size + "_h264")), None)
        if src is None:
            continue
        w, h = map(int, size.split("x"))
        frames = reel.VideoReader(src).read_rgb(range(n))  # the input, untimed
        raw = out_dir / f"input_{size}.rgb"
        raw.write_bytes(frames.tobytes())
        for preset in presets:
            for threads in (1, 0):
                key = f"{size}_{preset}_{'1t' if threads == 1 else 'default_threads'}"
                ro, co = out_dir / f"{key}_reel.mp4", out_dir / f"{key}_cli.mp4"
                sides = {
                    "reel": lambda: reel._core.encode_rgb(str(ro), frames, 30.0, "h264", preset, crf, gop, threads),
                    "cli": lambda: cli_encode(raw, co, w, h, preset, crf, gop, threads),
                }
                t = interleaved(sides, {"reel": lambda: reel._core.encode_rgb(
                    str(ro), frames[:10], 30.0, "h264", preset, crf, gop, threads)}, reps, f"encode {key}")
                res[key] = {"size": size, "preset": preset, "threads": threads, "crf": crf, "gop": gop,
                            "reel": summary(t["reel"], n), "cli": summary(t["cli"], n),
                            "reel_bytes": ro.stat().st_size, "cli_bytes": co.stat().st_size,
                            "decoded_equal": decoded_equal(ro, co)}
        raw.unlink()
    return res


# --------------------------------------------------------------------------- real time


def reel_bin() -> str | None:
    cand = os.environ.get("REEL_BIN") or str(REPO / "build/cmake/tools/reel")
    return cand if os.access(cand, os.X_OK) else None


def rt_cmd(binary: str, task: str, seconds: float, size: str, preset: str, depth_preset: str) -> list[str]:
    return [binary, "simulate", task, "--count", "1", "--seconds", f"{seconds:g}", "--video-size", size,
            "--preset", preset, "--depth-preset", depth_preset, "--profile", "--json"]


def bench_realtime(binary: str, seconds: float, sizes: list[str], presets: list[str], depth_presets: list[str]) -> dict:
    runs = []
    for size in sizes:
        for preset in presets:
            for dp in depth_presets:
                task = WORK / "realtime" / f"rig_{size}_{preset}_{dp}"
                shutil.rmtree(task, ignore_errors=True)
                load0 = load()
                out = json.loads(subprocess.run(rt_cmd(binary, str(task), seconds, size, preset, dp), check=True,
                                                stdout=subprocess.PIPE).stdout)
                p = out["profile"]
                slots = sorted(d.name for d in (task / "videos" / "chunk-000").iterdir())
                runs.append({"size": size, "preset": preset, "depth_preset": dp, "cpu_s": p["record_cpu_s"],
                             "wall_s": p["record_wall_s"], "recorded_s": p["recorded_s"],
                             "real_time": p["record_wall_s"] <= p["recorded_s"], "slots": slots,
                             "load_before": load0, "load_after": load()})
                r = runs[-1]
                print(f"  [realtime] {size} {preset}/{dp}: wall {r['wall_s']:.2f} s, CPU {r['cpu_s']:.2f} s for "
                      f"{r['recorded_s']:g} s recorded ({'real time' if r['real_time'] else 'NOT real time'}); "
                      f"load {r['load_after']}", flush=True)
                shutil.rmtree(task, ignore_errors=True)
    return {"seconds": seconds, "cmd": rt_cmd("reel", "TASK", seconds, "WxH", "P", "DP"), "runs": runs}


# --------------------------------------------------------------------------- report


def fps_cell(s: dict) -> str:
    f = (lambda x: f"{x:.1f}") if s["median_fps"] < 10 else (lambda x: f"{x:.0f}")  # noqa: E731
    return f"{f(s['best_fps'])} / {f(s['median_fps'])}"


def ratio_cell(reel_s: dict, peer: dict) -> str:
    return f"{reel_s['best_fps'] / peer['best_fps']:.2f}x / {reel_s['median_fps'] / peer['median_fps']:.2f}x"


def render_decode(dec: dict) -> list[str]:
    out = ["## Decode to numpy arrays (frames/s, best / median; ratio = reel / peer, > 1: reel faster)", "",
           "RGB files: uint8 (H, W, 3) RGB24; the depth file (12-bit log-code HEVC): uint16 (H, W) millimetres "
           "(reel `read_depth`; PyAV's codes through the same table in numpy; the CLI prints the 12-bit codes, "
           "`-pix_fmt gray12le`, with no table). The limit: `bench/decode_limit.cc` (plain libav*, same FFmpeg as "
           "reel): sequential, decode and convert every frame; random, per frame seek to its keyframe, send the "
           "packets up to the target's own (frames nothing refers to skipped), drain, convert.", "",
           "Sequential: every frame in order. reel: `VideoReader.read_rgb` in batches of 30 (decoder threads: "
           "FFmpeg's choice, or 1); PyAV: `container.decode` + `to_ndarray(format=\"rgb24\")` (default "
           "thread_type SLICE, or AUTO); CLI: `ffmpeg -i F -f rawvideo -pix_fmt rgb24 -` read into numpy "
           "(default threads, or `-threads 1`); limit: FFmpeg's threads, or 1.", "",
           "| file | MB | reel | reel 1t | PyAV | PyAV AUTO | CLI | CLI 1t | limit | limit 1t | reel/PyAV "
           "| reel/PyAV AUTO | reel/CLI | reel 1t/CLI 1t | reel/limit | reel 1t/limit 1t | load after |",
           "|---|---:|" + "---:|" * 14 + "---|"]
    for name, d in dec.items():
        s = d["sequential"]
        out.append(f"| {name} | {d['bytes'] / 1e6:.1f} | {fps_cell(s['reel'])} | {fps_cell(s['reel_1t'])} | "
                   f"{fps_cell(s['pyav'])} | {fps_cell(s['pyav_auto'])} | {fps_cell(s['cli'])} | "
                   f"{fps_cell(s['cli_1t'])} | {fps_cell(s['limit'])} | {fps_cell(s['limit_1t'])} | "
                   f"{ratio_cell(s['reel'], s['pyav'])} | {ratio_cell(s['reel'], s['pyav_auto'])} | "
                   f"{ratio_cell(s['reel'], s['cli'])} | {ratio_cell(s['reel_1t'], s['cli_1t'])} | "
                   f"{ratio_cell(s['reel'], s['limit'])} | {ratio_cell(s['reel_1t'], s['limit_1t'])} | "
                   f"{d.get('load_after', '?').split(' / ')[0]} |")
    k = next(iter(dec.values()))
    out += ["", f"Random access: {len(k['random_indices'])} seeded random indices (the CLI: the first "
            f"{k['random']['cli']['frames']}, one process each). reel batch: one `read_rgb(indices)` call; "
            "reel one: `read_rgb([i])` per index on one reader (default threads: a random read decodes on one); "
            "PyAV: per index `container.seek(keyframe pts, backward=True)` then decode forward to the target pts "
            "(pts tables built before timing); CLI: `ffmpeg -ss T -i F -frames:v 1` (accurate seek); limit: one "
            "thread.", "",
            "| file | reel batch | reel one | PyAV | PyAV AUTO | CLI -ss | limit | reel one/PyAV | reel one/PyAV AUTO "
            "| reel one/CLI | reel one/limit |", "|---|" + "---:|" * 10]
    for name, d in dec.items():
        s = d["random"]
        out.append(f"| {name} | {fps_cell(s['reel_batch'])} | {fps_cell(s['reel_one'])} | {fps_cell(s['pyav'])} | "
                   f"{fps_cell(s['pyav_auto'])} | {s['cli']['best_fps']:.1f} / {s['cli']['median_fps']:.1f} | "
                   f"{fps_cell(s['limit'])} | {ratio_cell(s['reel_one'], s['pyav'])} | "
                   f"{ratio_cell(s['reel_one'], s['pyav_auto'])} | {ratio_cell(s['reel_one'], s['cli'])} | "
                   f"{ratio_cell(s['reel_one'], s['limit'])} |")
    out += ["", "Work per random request (reel one: `VideoReader.stats()`; limit: its own counts; averages over "
            f"the {len(k['random_indices'])} requests): seeks, packets sent to the decoder, frames the decoder returned (the limit counts those "
            "up to the target).", "",
            "| file | reel seeks | reel packets | reel skippable | reel frames decoded | reel drains | limit seeks "
            "| limit packets | limit frames out |", "|---|" + "---:|" * 8]
    for name, d in dec.items():
        c, n = d["check"], len(d["random_indices"])
        rs, lc = c.get("reel_one_stats", {}), c.get("limit_counts", {})
        per = lambda v: f"{v / n:.2f}" if isinstance(v, (int, float)) else "?"  # noqa: E731
        out.append(f"| {name} | {per(rs.get('seeks'))} | {per(rs.get('packets_read'))} | "
                   f"{per(rs.get('packets_skippable'))} | {per(rs.get('frames_decoded'))} | {per(rs.get('drains'))} | "
                   f"{per(lc.get('seeks'))} | {per(lc.get('packets_sent'))} | {per(lc.get('frames_decoded'))} |")
    out += ["", "Agreement with the CLI's decode (`-pix_fmt rgb24`; depth: its 12-bit codes through the log "
            "code): ", "",
            "| file | reel: frames equal | limit: random frames equal | CLI -ss frames equal | PyAV: values differing "
            "| PyAV: mean abs diff | PyAV: max abs diff | PyAV seek fallbacks |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, d in dec.items():
        c = d["check"]
        out.append(f"| {name} | {c['reel_equal_frames']} of {c['frames']} | {c.get('limit_equal', '?')} of "
                   f"{len(d['random_indices'])} | {c['cli_ss_equal']} of {c['cli_ss_frames']} | "
                   f"{c['pyav_differing_values'] * 100:.1f}% | {c['pyav_mean_abs_diff']:.3f} "
                   f"| {c['pyav_max_abs_diff']} | {c['pyav_fallbacks']} |")
    out.append("")
    return out


def render(r: dict) -> str:
    m = r["machine"]
    out = [f"# reel video benchmark ({m['date']})", "",
           f"- machine: {m['nproc']} CPUs ({m['cpu']}), Linux {m['kernel']}; Python {m['python']}; "
           f"{m['ffmpeg_cli']}; PyAV {m['pyav']} (its own FFmpeg: libavcodec {m['pyav_libavcodec']}); "
           f"reel links the system FFmpeg", f"- load average at start {m['load']}, at end {r['load_end']}", ""]
    dec = r.get("decode")
    if dec:
        out += render_decode(dec)
    enc = r.get("encode")
    if enc:
        out += ["## Encode RGB24 -> H.264 yuv420p .mp4 (frames/s, best / median; ratio = reel / CLI)", "",
                "reel: `reel._core.encode_rgb` (VideoEncoder, input a numpy array); CLI: `ffmpeg -f rawvideo "
                "-pix_fmt rgb24 -s WxH -r 30 -i input.rgb -c:v libx264 -preset P -crf 20 -g 2 [-threads T] "
                "-pix_fmt yuv420p out.mp4` (input from the page cache). Threads 1: both `threads=1`; default: reel "
                "`threads=0` and the CLI without `-threads` (x264 picks).", "",
                "| size | preset | threads | reel | CLI | reel/CLI | bytes reel / CLI | decoded frames equal |",
                "|---|---|---|---:|---:|---:|---:|---|"]
        for d in enc.values():
            out.append(f"| {d['size']} | {d['preset']} | {'1' if d['threads'] == 1 else 'default'} | "
                       f"{fps_cell(d['reel'])} | {fps_cell(d['cli'])} | {ratio_cell(d['reel'], d['cli'])} | "
                       f"{d['reel_bytes'] / d['cli_bytes']:.3f} | {'yes' if d['decoded_equal'] else 'no'} |")
        out.append("")
    rt = r.get("realtime")
    if rt:
        out += [f"## Real time: the standard simulated rig, {rt['seconds']:g} s episode", "",
                f"`{' '.join(rt['cmd'])}`; streams: {', '.join(rt['runs'][0]['slots'])}. Real time: record_wall_s "
                "<= recorded_s.", "",
                "| video size | RGB preset | depth preset | wall s | CPU s | CPU s per recorded s | real time | load "
                "before / after |", "|---|---|---|---:|---:|---:|---|---|"]
        for x in rt["runs"]:
            out.append(f"| {x['size']} | {x['preset']} | {x['depth_preset']} | {x['wall_s']:.2f} | {x['cpu_s']:.2f} | "
                       f"{x['cpu_s'] / x['recorded_s']:.2f} | {'yes' if x['real_time'] else 'no'} | "
                       f"{x['load_before'].split(' / ')[0]} / {x['load_after'].split(' / ')[0]} |")
        out.append("")
    return "\n".join(out)


def machine_info() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    cli = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout.split("\n")[0]
    return {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"), "nproc": os.cpu_count(),
            "cpu": cpu, "kernel": platform.release(), "python": platform.python_version(), "numpy": np.__version__,
            "pyav": av.__version__, "pyav_libavcodec": ".".join(map(str, av.library_versions["libavcodec"])),
            "ffmpeg_cli": " ".join(cli.split()[:3]), "load": load()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=300, help="frames per test video")
    ap.add_argument("--random", type=int, default=30, help="random-access indices (reel, PyAV)")
    ap.add_argument("--random-cli", type=int, default=8, help="random-access indices for the CLI (a process each)")
    ap.add_argument("--encode-frames", type=int, default=120)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10.0, help="real-time episode length")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--quick", action="store_true", help="3 files, 150 frames, 2 rounds, one size in real time")
    ap.add_argument("--only", choices=("decode", "encode", "realtime"))
    ap.add_argument("--render", metavar="JSON", help="re-print a saved run and exit")
    args = ap.parse_args()
    if args.render:
        print(render(json.loads(Path(args.render).read_text())))
        return 0
    binary = reel_bin()
    if args.only in (None, "realtime") and not binary:
        print("reel CLI not found (set REEL_BIN or build build/cmake/tools/reel)", file=sys.stderr)
        return 1
    if args.quick:
        args.frames, args.reps, args.encode_frames = 150, 2, 60
    m = machine_info()
    print(f"reel {reel.__version__} ({reel._core.__file__}); PyAV {m['pyav']}; {m['ffmpeg_cli']}; "
          f"{m['nproc']} CPUs; load {m['load']}", flush=True)
    names = list(QUICK_FILES if args.quick else FILES)
    res: dict = {"machine": m, "args": vars(args)}
    paths = make_files(names, args.frames) if args.only in (None, "decode", "encode") else {}
    if args.only in (None, "decode"):
        res["decode"] = bench_decode(paths, args.frames, args.random, args.random_cli, args.reps, args.seed)
    if args.only in (None, "encode"):
        res["encode"] = bench_encode(paths, min(args.encode_frames, args.frames), ["ultrafast", "veryfast"], args.reps)
    if args.only in (None, "realtime"):
        res["realtime"] = bench_realtime(binary, args.seconds, ["320x240"] if args.quick else ["320x240", "640x480"],
                                         ["ultrafast", "veryfast"], ["ultrafast", "fast"])
    res["load_end"] = load()
    text = render(res)
    print("\n" + text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "video.md").write_text(text + "\n", encoding="utf-8")
    (RESULTS / "video.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    print(f"\nwritten: {RESULTS / 'video.json'} (+ video.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
