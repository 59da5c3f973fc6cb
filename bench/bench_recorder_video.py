#!/usr/bin/env python3
"""reel recorder benchmark with video: the simulated rig's 8 camera slots recorded by reel's
in-process encoders beside the collector's way (one `ffmpeg` CLI process per camera, fed raw
frames on its stdin), with the same codec, preset, CRF and GOP, in one run (issue 31 item 5).

    make bench                                     # or: REEL_BIN=build/cmake/tools/reel \\
                                                   #     .venv/bin/python bench/bench_recorder_video.py
    .venv/bin/python bench/bench_recorder_video.py --quick                 # 1 x 3 s per side (~3-4 min)
    .venv/bin/python bench/bench_recorder_video.py --episodes 2 --seconds 10 --sizes 640x480
    .venv/bin/python bench/bench_recorder_video.py --only realtime --presets ultrafast/ffv1
    .venv/bin/python bench/bench_recorder_video.py --render bench/results/recorder_video.json

The frames: `reel simulate`'s own (src/reel/sim/rig.cc: 6 RGB slots with moving gradients and a
square, 2 depth slots with a plane and a passing box, the D435 depth source missing every 29th
frame, which is repeated), regenerated here in numpy before any clock starts. The warm-up checks
that they are the same frames: the peer run there with one encoder thread (as reel's) must give
files that decode to exactly reel's frames, slot by slot.

1. CPU per recorded second, as fast as possible, the sides alternating episode by episode after
   one untimed warm-up each, for every video size x preset pair.
   reel: reel.TaskWriter in this process (the C++ recorder) with the rig's 8 slots and
   `reel simulate`'s video options (--video-size, --codec, --preset, --crf, --gop, --depth-preset
   or --depth-ffv1), fed the same pre-generated frames as the peer: per row 8 pushes and an append
   (one float column), then the commit. CPU: getrusage (all threads) from opening the writer (the
   encoders open with the episode) to the end of the commit (videos finished, fsyncs).
   --with-simulate adds one `reel simulate TASK --count 1 --seconds S --video-size WxH ...
   --json --profile` episode per configuration: the whole rig, which also pays its data path
   (parquet, force matrices; measured alone with --no-video) and draws each camera frame at
   append time.
   peer: per slot one `/usr/bin/ffmpeg -f rawvideo -pix_fmt rgb24|gray12le -s WxH -r FPS -i -
   -c:v libx264|libx265 -preset P -crf Q -g G ... -f mp4 OUT` (the collector's
   core/egodata_writer.py: rawvideo on stdin, yuv420p RGB, depth as 12-bit log codes in gray12le
   to libx265 with qp=6:range=full; the x265 extras reel sets, bframes=0 and keyint=G, are passed
   too); the encoders' thread count left to ffmpeg as the collector does (--peer-threads to set
   it). Depth preset "ffv1": reel --depth-ffv1 against the collector's fallback, `-pix_fmt gray16le
   ... -c:v ffv1 -level 3` into .mkv (lossless millimetres, no quantisation). One feeder thread
   per camera writes the frames (the depth slots' log-code quantisation, which the collector does
   in numpy per frame, is timed with the peer and shown apart). CPU = the ffmpeg processes'
   rusage (os.wait4: user + sys, process start included) + this process's CPU while feeding.
2. Quality of the last timed episode of each side, against the raw frames: RGB through ffmpeg's
   psnr filter (the raw rgb24 converted to yuv420p as the encoder's input was: PSNR of Y and the
   average), depth as 12-bit code PSNR (peak 4095) and mean |code error|, and the bitrate per slot.
3. Real time: one episode per side at the rig's pace (frame i due at t0 + i/fps), for each
   configuration whose reel CPU in 1. was at most twice the machine (--rt-all: every one).
   reel: reel.TaskWriter in this process with the rig's 8 slots and the same video options,
   queue_drop on: the loop sleeps until each row is due, pushes the 8 frames, appends a row;
   dropped frames = the episodes row's drop_stats "queue:*". peer: each feeder thread sleeps until
   its frame is due, then writes it (a blocking pipe, as the collector's write_video_frame);
   "late" = frames written more than one frame period after they were due (a camera with a
   one-frame buffer would have lost them).

Results: tables on stdout, bench/results/recorder_video.md and .json; work files in
bench/results/recorder_video/ (rewritten by every run).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_recorder import start  # noqa: E402  (the same REEL_BIN lookup and work folder reset)
from collector_peer import chunk_file  # noqa: E402

RESULTS = HERE / "results"
WORK = RESULTS / "recorder_video"
FFMPEG = "/usr/bin/ffmpeg" if os.access("/usr/bin/ffmpeg", os.X_OK) else (shutil.which("ffmpeg") or "ffmpeg")
TASK = "桌面抓取_video"

# The rig's video slots in src/reel/sim/rig.cc order (the index is the frame pattern):
# (slot, depth, master slot).
SLOTS = [("stereo_left", False, ""), ("stereo_right", False, ""), ("stereo_depth", True, "stereo_left"),
         ("gripper_rgb", False, ""), ("gripper_2_rgb", False, ""), ("d435_rgb", False, ""),
         ("d435_depth", True, "d435_rgb"), ("head_left_rgb", False, "")]
MISSING_DEPTH = "d435_depth"  # its source misses row i when i % 29 == 28 (the recorder repeats)

# The 12-bit log depth code (shared/docs/reference-behaviour.md "Depth"; reel's depth_code.cc).
DEPTH_MIN_MM, DEPTH_MAX_MM, DEPTH_QMAX = 100.0, 5000.0, 4095
LOG_LO, LOG_STEP = np.log(DEPTH_MIN_MM), DEPTH_QMAX / np.log(DEPTH_MAX_MM / DEPTH_MIN_MM)
# "Quality within the peer's": RGB PSNR-Y at most this far below the peer's at the reference
# presets; depth mean |code error| at most this far above (the collector's depth_codec.py accepted
# +0.26 codes as the cost of x265 preset fast over medium).
RGB_PSNR_TOL_DB, DEPTH_MAE_TOL = 0.5, 0.26


# --------------------------------------------------------------------------- the rig's frames


def rig_frames(w: int, h: int, n: int) -> dict[str, np.ndarray]:
    """Frame i of every slot as reel simulate --profile draws it (RgbFrame / DepthFrame of
    src/reel/sim/rig.cc, episode phase 0), as fed: the missing D435 depth rows repeat the last."""
    x = np.arange(w, dtype=np.int64)[None, :]
    y = np.arange(h, dtype=np.int64)[:, None]
    out = {}
    for pattern, (slot, depth, _) in enumerate(SLOTS):
        if depth:
            frames = np.empty((n, h, w), np.uint16)
            plane = np.broadcast_to(4000 - 3300 * y // max(1, h - 1), (h, w)).astype(np.uint16)
            border = (x < 4) | (y < 4)
            for i in range(n):
                k = i - 1 if slot == MISSING_DEPTH and i % 29 == 28 else i
                if k != i:
                    frames[i] = frames[k]
                    continue
                bx = ((k + pattern * 7) * 4) % (w + 60) - 60
                f = frames[i]
                f[:] = plane
                f[(x >= bx) & (x < bx + 60) & (y > h // 4) & (y < h // 4 + 60)] = 450
                f[border] = 0
        else:
            frames = np.empty((n, h, w, 3), np.uint8)
            c0 = ((x + pattern * 40) & 255).astype(np.uint8)
            c1 = ((y * 2 + pattern * 25) & 255).astype(np.uint8)
            c2 = (((x + y) // 2) & 255).astype(np.uint8)
            sy = h // 3 + (pattern * 9) % (h // 2)
            for i in range(n):
                f = frames[i]
                f[..., 0] = c0 + np.uint8(i & 255)
                f[..., 1] = c1
                f[..., 2] = c2 + np.uint8((3 * i) & 255)
                sx = (i * 3 + pattern * 37) % (w + 40) - 40
                f[max(sy, 0):max(sy + 40, 0), max(sx, 0):max(sx + 40, 0)] = (250, 240, 60)
        out[slot] = frames
    return out


def depth_codes(mm: np.ndarray) -> np.ndarray:
    """uint16 mm -> 12-bit log codes, in numpy per frame as the collector's quantize_depth does
    (float64 log, round half to even, 0 = no depth)."""
    codes = np.zeros(mm.shape, "<u2")
    valid = mm > 0
    codes[valid] = np.clip(np.rint((np.log(mm[valid].astype(np.float64)) - LOG_LO) * LOG_STEP), 0, DEPTH_QMAX)
    return codes


# --------------------------------------------------------------------------- configurations


class Config:
    def __init__(self, size: str, preset: str, depth_preset: str, a: argparse.Namespace):
        self.w, self.h = map(int, size.split("x"))
        self.size, self.preset, self.depth_preset = size, preset, depth_preset
        self.codec, self.crf, self.gop, self.fps = a.codec, a.crf, a.gop, a.fps
        self.ffv1 = depth_preset == "ffv1"  # depth as lossless FFV1 gray16le mm (.mkv), not 12-bit HEVC

    @property
    def name(self) -> str:
        return f"{self.size}_{self.preset}_{self.depth_preset}"

    def ext(self, depth: bool) -> str:
        return "mkv" if depth and self.ffv1 else "mp4"

    def reel_video_args(self) -> list[str]:
        return ["--video-size", self.size, "--codec", self.codec, "--preset", self.preset, "--crf", str(self.crf),
                "--gop", str(self.gop)] + (["--depth-ffv1"] if self.ffv1 else ["--depth-preset", self.depth_preset])

    def ffmpeg_cmd(self, depth: bool, out: Path, threads: int | None) -> list[str]:
        gop = str(self.gop)
        x265 = f"log-level=error:bframes=0:keyint={gop}"
        cmd = [FFMPEG, "-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo",
               "-pix_fmt", ("gray16le" if self.ffv1 else "gray12le") if depth else "rgb24",
               "-s", f"{self.w}x{self.h}", "-r", f"{self.fps:g}", "-i", "-"]
        if depth and self.ffv1:  # the collector's fallback without a 12-bit x265
            cmd += ["-c:v", "ffv1", "-level", "3", "-pix_fmt", "gray16le"]
        elif depth:
            cmd += ["-c:v", "libx265", "-preset", self.depth_preset, "-g", gop, "-pix_fmt", "gray12le",
                    "-color_range", "pc", "-tag:v", "hvc1", "-x265-params", f"qp=6:range=full:{x265}"]
        elif self.codec == "hevc":
            cmd += ["-c:v", "libx265", "-preset", self.preset, "-crf", str(self.crf), "-g", gop, "-tag:v", "hvc1",
                    "-x265-params", x265, "-pix_fmt", "yuv420p"]
        else:
            cmd += ["-c:v", "libx264", "-preset", self.preset, "-crf", str(self.crf), "-g", gop, "-pix_fmt", "yuv420p"]
        if threads is not None:
            cmd += ["-threads", str(threads)]
        return cmd + ["-f", "matroska" if depth and self.ffv1 else "mp4", str(out)]


# --------------------------------------------------------------------------- reel side


def sleep_until(due: float) -> None:
    """Waits until time.perf_counter() reaches `due` (a frame's time at real pace)."""
    d = due - time.perf_counter()
    if d > 0:
        time.sleep(d)


def reel_simulate(binary: str, task: Path, seconds: float, fps: float, extra: list[str]) -> dict:
    cmd = [binary, "simulate", str(task), "--count", "1", "--seconds", f"{seconds:g}", "--fps", f"{fps:g}",
           *extra, "--json", "--profile"]
    out = json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout)
    p = out["profile"]
    n = out["episodes"][0]["episode_index"]
    return {"n": n, "cpu_s": p["record_cpu_s"], "wall_s": p["record_wall_s"], "recorded_s": p["recorded_s"],
            "drops": queue_drops(task, n)}


def episode_row(task: Path, n: int) -> dict:
    import pyarrow.parquet as pq
    c, f = chunk_file(n)
    return pq.read_table(task / f"meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet").to_pylist()[0]


def queue_drops(task: Path, n: int) -> dict:
    d = json.loads(episode_row(task, n)["drop_stats"] or "{}")
    return {k: v for k, v in d.items() if k.startswith("queue:")}


def reel_videos(task: Path, n: int, cfg: Config) -> dict[str, Path]:
    c, f = chunk_file(n)
    return {slot: task / f"videos/chunk-{c:03d}/{slot}/episode-{f:03d}.{cfg.ext(d)}" for slot, d, _ in SLOTS}


def peer_videos(out_dir: Path, cfg: Config) -> dict[str, Path]:
    return {slot: out_dir / f"{slot}.{cfg.ext(d)}" for slot, d, _ in SLOTS}


def reel_record(task: Path, cfg: Config, frames: dict[str, np.ndarray], n: int, paced: bool) -> dict:
    """One episode with reel.TaskWriter in this process, fed the same frames as the peer: per row
    the 8 slots' frames pushed (the D435 depth skipped where its source misses, as in the rig),
    then a row appended. Unpaced: as fast as possible, the encoder queues blocking (no frame is
    lost). Paced: row i due at t0 + i/fps, queue_drop on (see the docstring, 3). CPU: this
    process's getrusage (all threads) from opening the writer (the encoders open with the
    episode) to the commit."""
    import reel
    period = 1.0 / cfg.fps
    r0, t_start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    w = reel.TaskWriter(str(task), fps=cfg.fps, task_name=task.name,
                        devices=[{"key": "sim:rig", "kind": "uvc", "name": "rig", "slots": [s for s, _, _ in SLOTS]}],
                        video={"slots": [{"slot": s, "width": cfg.w, "height": cfg.h, "depth": d, "master_slot": m}
                                         for s, d, m in SLOTS],
                               "codec": cfg.codec, "preset": cfg.preset, "crf": cfg.crf, "gop": cfg.gop,
                               "queue_drop": paced,
                               **({"depth_ffv1": True} if cfg.ffv1 else {"depth_preset": cfg.depth_preset})})
    ep = w.episode()
    late, wall0 = 0, time.time()
    t0 = time.perf_counter() + (0.05 if paced else 0.0)
    for i in range(n):
        due = t0 + i * period
        if paced:
            sleep_until(due)
        for s, depth, _ in SLOTS:
            if depth:
                if not (s == MISSING_DEPTH and i % 29 == 28):
                    ep.push_depth(s, frames[s][i])
            else:
                ep.push_rgb(s, frames[s][i])
        ep.append(timestamp=i * period, wall_time=wall0 + i * period, hardware_ns=10**9 + int(i * period * 1e9),
                  fixed={"observation.gripper_state": [float(i % 100), 0.0, 1.0]})
        if paced and time.perf_counter() > due + period:
            late += 1
    t_last = time.perf_counter()
    committed = ep.commit()
    del ep, w
    t_end = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    drops = queue_drops(task, committed["episode_index"])
    return {"n": committed["episode_index"], "frames": n, "recorded_s": n * period,
            "cpu_s": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), "wall_s": t_end - t_start,
            "commit_s": t_end - t_last, "late_rows": late, "queue_drops": drops,
            "dropped": sum(drops.values())}


# --------------------------------------------------------------------------- peer side


def peer_episode(out_dir: Path, cfg: Config, frames: dict[str, np.ndarray], n: int, threads: int | None,
                 paced: bool) -> dict:
    """One ffmpeg per slot, one feeder thread per slot; CPU = children's rusage + ours."""
    out_dir.mkdir(parents=True, exist_ok=True)
    period = 1.0 / cfg.fps
    stats = {s: {"quantize_s": 0.0, "late": 0, "late_after_1s": 0, "lag_s": 0.0} for s, _, _ in SLOTS}
    errors: list[str] = []
    c0, t_start = time.process_time(), time.perf_counter()
    procs = {}
    for s, depth, _ in SLOTS:
        with open(out_dir / f"{s}.log", "wb") as log:
            procs[s] = subprocess.Popen(cfg.ffmpeg_cmd(depth, out_dir / f"{s}.{cfg.ext(depth)}", threads),
                                        stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, stderr=log)
    # Paced: the first frame is due half a second after the processes were started (the collector
    # starts its ffmpegs in start_episode, before the first frame arrives).
    t0 = time.perf_counter() + (0.5 if paced else 0.0)

    def feed(slot: str, depth: bool) -> None:
        st, p, fr = stats[slot], procs[slot], frames[slot]
        try:
            for i in range(n):
                due = t0 + i * period
                if paced:
                    sleep_until(due)
                if depth and not cfg.ffv1:
                    q0 = time.thread_time()
                    buf = depth_codes(fr[i])
                    st["quantize_s"] += time.thread_time() - q0
                else:
                    buf = fr[i]
                p.stdin.write(memoryview(buf).cast("B"))
                if paced:
                    lag = time.perf_counter() - due
                    st["lag_s"] = lag
                    if lag > period:
                        st["late"] += 1
                        st["late_after_1s"] += i >= cfg.fps  # past the encoders' start
        except Exception as e:  # a broken pipe: ffmpeg failed (its log says why)
            errors.append(f"{slot}: {e!r}")
        finally:
            try:
                p.stdin.close()  # EOF, also after an error: ffmpeg must not wait for more
            except OSError:
                pass

    threads_ = [threading.Thread(target=feed, args=(s, d)) for s, d, _ in SLOTS]
    for t in threads_:
        t.start()
    for t in threads_:
        t.join()
    feed_cpu = time.process_time() - c0
    t_fed = time.perf_counter()
    child_cpu, rcs = 0.0, {}
    for s, p in procs.items():
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = rcs[s] = os.waitstatus_to_exitcode(status)
        child_cpu += ru.ru_utime + ru.ru_stime
    t_end = time.perf_counter()
    bad = {s: (out_dir / f"{s}.log").read_text(errors="replace")[-400:] for s, rc in rcs.items() if rc != 0}
    if bad or errors:
        raise RuntimeError(f"peer ffmpeg failed: {errors} {bad}")
    quant = sum(st["quantize_s"] for st in stats.values())
    return {"frames": n, "recorded_s": n * period, "cpu_s": child_cpu + feed_cpu, "ffmpeg_cpu_s": child_cpu,
            "feeder_cpu_s": feed_cpu, "quantize_cpu_s": quant, "wall_s": t_end - t_start,
            "drain_s": t_end - t_fed, "late": sum(st["late"] for st in stats.values()),
            "late_after_1s": sum(st["late_after_1s"] for st in stats.values()),
            "late_by_slot": {s: st["late"] for s, st in stats.items() if st["late"]},
            "lag_end_s": max(st["lag_s"] for st in stats.values()) if paced else None}


# --------------------------------------------------------------------------- quality


def decode(path: Path, fmt: str) -> list[np.ndarray]:
    import av
    with av.open(str(path)) as c:
        return [f.to_ndarray(format=fmt) for f in c.decode(video=0)]


PSNR_RE = re.compile(r"PSNR y:(\S+) u:(\S+) v:(\S+) average:(\S+)")


def rgb_psnr(path: Path, cfg: Config, raw: np.ndarray) -> dict:
    """ffmpeg's psnr filter: the file against the raw rgb24 frames (converted to yuv420p by the
    filter graph's swscale, bicubic, as the encoders' input was)."""
    cmd = [FFMPEG, "-hide_banner", "-nostats", "-i", str(path), "-f", "rawvideo", "-pix_fmt", "rgb24",
           "-s", f"{cfg.w}x{cfg.h}", "-r", f"{cfg.fps:g}", "-i", "-", "-lavfi", "[0:v][1:v]psnr", "-f", "null", "-"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err: list[bytes] = []
    reader = threading.Thread(target=lambda: err.append(p.stderr.read()))
    reader.start()
    try:
        for f in raw:
            p.stdin.write(memoryview(f).cast("B"))
        p.stdin.close()
    except BrokenPipeError:
        pass
    reader.join()
    p.wait()
    m = PSNR_RE.search(err[0].decode(errors="replace"))
    if not m:
        raise RuntimeError(f"no PSNR for {path}: {err[0][-400:]!r}")
    y, u, v, avg = (float(x) if x != "inf" else float("inf") for x in m.groups())
    return {"psnr_y": y, "psnr_avg": avg}


def depth_quality(path: Path, raw_mm: np.ndarray, ffv1: bool) -> dict:
    """12-bit HEVC: the decoded codes against the raw frames' codes. FFV1: the decoded millimetres
    against the raw ones (0 error: lossless, as it should be; the "code" figures are then in mm)."""
    dec = decode(path, "gray16le" if ffv1 else "gray12le")
    if len(dec) != len(raw_mm):
        raise RuntimeError(f"{path}: {len(dec)} frames, expected {len(raw_mm)}")
    se, ae, mx = 0.0, 0.0, 0
    for d, mm in zip(dec, raw_mm):
        diff = d.astype(np.int32) - (mm if ffv1 else depth_codes(mm)).astype(np.int32)
        se += float(np.mean(diff.astype(np.float64) ** 2))
        ae += float(np.mean(np.abs(diff)))
        mx = max(mx, int(np.abs(diff).max()))
    mse = se / len(dec)
    return {"code_psnr": 10 * np.log10(DEPTH_QMAX**2 / mse) if mse else float("inf"),
            "code_mae": ae / len(dec), "code_max_err": mx}


def quality(files: dict[str, Path], cfg: Config, frames: dict[str, np.ndarray], seconds: float) -> dict:
    rgb, depth = [], []
    for s, d, _ in SLOTS:
        kbps = files[s].stat().st_size * 8 / seconds / 1000
        if d:
            depth.append({"kbps": kbps, **depth_quality(files[s], frames[s], cfg.ffv1)})
        else:
            rgb.append({"kbps": kbps, **rgb_psnr(files[s], cfg, frames[s])})
    mean = lambda rows, k: statistics.fmean(r[k] for r in rows)  # noqa: E731
    return {"rgb_kbps": mean(rgb, "kbps"), "rgb_psnr_y": mean(rgb, "psnr_y"), "rgb_psnr_avg": mean(rgb, "psnr_avg"),
            "rgb_psnr_y_min": min(r["psnr_y"] for r in rgb), "depth_kbps": mean(depth, "kbps"),
            "depth_code_psnr": mean(depth, "code_psnr"), "depth_code_mae": mean(depth, "code_mae"),
            "depth_code_max_err": max(r["code_max_err"] for r in depth)}


def same_frames(a: dict[str, Path], b: dict[str, Path], cfg: Config) -> dict[str, bool]:
    """Whether each slot's two files decode to the same frames (RGB as rgb24, depth as stored)."""
    out = {}
    for s, d, _ in SLOTS:
        fmt = ("gray16le" if cfg.ffv1 else "gray12le") if d else "rgb24"
        fa, fb = decode(a[s], fmt), decode(b[s], fmt)
        out[s] = len(fa) == len(fb) and all(np.array_equal(x, y) for x, y in zip(fa, fb))
    return out


# --------------------------------------------------------------------------- main


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def machine() -> dict:
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    ff = subprocess.run([FFMPEG, "-version"], capture_output=True, text=True).stdout.split("\n", 1)[0]
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "nproc": os.cpu_count(), "cpu": cpu, "kernel": platform.release(), "python": platform.python_version(),
            "numpy": np.__version__, "ffmpeg": ff, "ffmpeg_path": FFMPEG, "load": load(),
            "mem_gib": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30}


def fmt_drops(d: dict) -> str:
    return ", ".join(f"{k[6:]} {v}" for k, v in sorted(d.items())) or "none"


def per_s(runs: list[dict], key: str = "cpu_s") -> float:
    return sum(e[key] for e in runs) / sum(e["recorded_s"] for e in runs)


def depth_q(q: dict) -> str:
    return "lossless" if q["depth_code_mae"] == 0 else f"{q['depth_code_psnr']:.2f} ({q['depth_code_mae']:.3f})"


def cpu_table(r: dict) -> list[str]:
    sim = any(c.get("simulate") for c in r["configs"])
    out = ["### CPU per recorded second (as fast as possible) and quality at equal settings", "",
           "| video size | RGB / depth preset | reel CPU s per rec. s | peer CPU s per rec. s (ffmpeg + feeder) | "
           "reel / peer | peer without the depth quantise | reel / that | wall s per rec. s reel / peer | "
           + ("reel simulate --profile (whole rig) CPU s per rec. s | " if sim else "")
           + "RGB kbit/s per slot reel / peer | RGB PSNR-Y dB reel / peer | depth kbit/s per slot reel / peer | "
           "depth code PSNR dB (mean abs code error) reel / peer |",
           "|---|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if sim else "") + "---:|---:|---:|---:|"]
    for c in r["configs"]:
        reel_cpu, peer_cpu = per_s(c["reel"]), per_s(c["peer"])
        ff, feed = per_s(c["peer"], "ffmpeg_cpu_s"), per_s(c["peer"], "feeder_cpu_s")
        quant = per_s(c["peer"], "quantize_cpu_s")
        qr, qp = c["quality"]["reel"], c["quality"]["peer"]
        out.append(
            f"| {c['size']} | {c['preset']} / {c['depth_preset']} | {reel_cpu:.2f} | {peer_cpu:.2f} "
            f"({ff:.2f} + {feed:.2f}) | **{reel_cpu / peer_cpu:.2f}x** | {peer_cpu - quant:.2f} | "
            f"{reel_cpu / (peer_cpu - quant):.2f}x | {per_s(c['reel'], 'wall_s'):.2f} / "
            f"{per_s(c['peer'], 'wall_s'):.2f} | "
            + (f"{per_s(c['simulate']):.2f} | " if sim else "")
            + f"{qr['rgb_kbps']:.0f} / {qp['rgb_kbps']:.0f} | {qr['rgb_psnr_y']:.2f} / {qp['rgb_psnr_y']:.2f} | "
            f"{qr['depth_kbps']:.0f} / {qp['depth_kbps']:.0f} | {depth_q(qr)} / {depth_q(qp)} |")
    if r.get("novideo"):
        out += ["", f"`reel simulate --profile --no-video` (the rig's data path alone): {per_s(r['novideo']):.2f} "
                "CPU s per recorded s."]
    pairs = [f"{c['size']} {c['preset']}/{c['depth_preset']}: "
             + ", ".join(f"{x['cpu_s']:.2f}/{y['cpu_s']:.2f}" for x, y in zip(c["reel"], c["peer"]))
             for c in r["configs"]]
    quant = [f"{c['size']} {per_s(c['peer'], 'quantize_cpu_s'):.3f}" for c in r["configs"]
             if c["preset"] == r["configs"][0]["preset"] and c["depth_preset"] == r["configs"][0]["depth_preset"]]
    return out + ["", "Per episode, reel / peer CPU s: " + "; ".join(pairs) + ". reel / peer < 1: reel uses less CPU.",
                  "Depth quantise: the collector's per-frame numpy log code in the peer's feeder threads "
                  + ", ".join(quant) + " CPU s per recorded s.", ""]


def render(r: dict) -> str:
    m, a = r["machine"], r["args"]
    out = [f"# reel recorder benchmark, video on ({m['date']})", "",
           f"- machine: {m['nproc']} CPUs ({m['cpu']}), Linux {m['kernel']}, {m['mem_gib']:.0f} GiB; Python "
           f"{m['python']}, numpy {m['numpy']}; peer: {m['ffmpeg']} ({m['ffmpeg_path']})",
           f"- load average at start {m['load']}, at end {r['load_end']}; run took {r['elapsed_s'] / 60:.1f} min",
           f"- the rig's 8 slots (6 RGB, 2 depth), {a['codec']} CRF {a['crf']} GOP {a['gop']}, depth 12-bit HEVC "
           f"qp 6, {a['fps']:g} fps; CPU: {a['episodes']} x {a['seconds']:g} s episodes per side and configuration, "
           f"as fast as possible, alternating; peer encoder threads: "
           f"{'ffmpeg default (the collector)' if a['peer_threads'] is None else a['peer_threads']}",
           "- reel: reel.TaskWriter in the benchmark process with the rig's 8 slots, fed the same pre-generated "
           "frames as the peer; CPU from opening the writer to the commit (getrusage, all threads)", ""]
    ident = r.get("identity", {})
    if ident:
        for size, res in ident.items():
            ok = [s for s, v in res.items() if v]
            out.append(f"Same frames ({size}, warm-up: the peer with one encoder thread against `reel simulate "
                       f"--profile`): {len(ok)} of {len(res)} slots decode to exactly reel's frames"
                       + ("" if len(ok) == len(res) else f" (differ: {[s for s, v in res.items() if not v]})") + ".")
        out.append("")
    if r["configs"]:
        out += cpu_table(r)
    if r.get("realtime") or r.get("not_paced"):
        out += [f"### Real time: one {a['rt_seconds']:g} s episode per side at {a['fps']:g} fps pace", "",
                "| video size | RGB / depth preset | reel CPU s per rec. s | reel dropped frames (queue) "
                "| reel late rows | reel commit s | peer CPU s per rec. s | peer late frames (> 1 period; after "
                "the first second) | peer lag at the end s | peer drain s | real time: reel / peer |",
                "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|"]
        for c in r["realtime"]:
            e, p = c["reel"], c["peer"]
            frames = e["frames"] * len(SLOTS)
            rt_reel = e["dropped"] == 0
            rt_peer = p["late"] == 0
            after = f"; {p['late_after_1s']}" if "late_after_1s" in p else ""
            out.append(f"| {c['size']} | {c['preset']} / {c['depth_preset']} | {e['cpu_s'] / e['recorded_s']:.2f} | "
                       f"{e['dropped']} of {frames} ({fmt_drops(e['queue_drops'])}) | {e['late_rows']} | "
                       f"{e['commit_s']:.2f} | {p['cpu_s'] / p['recorded_s']:.2f} | {p['late']} of {frames}{after} | "
                       f"{p['lag_end_s']:.2f} | {p['drain_s']:.2f} | {'yes' if rt_reel else 'no'} / "
                       f"{'yes' if rt_peer else 'no'} |")
        for c in r.get("not_paced", []):
            out.append(f"| {c['size']} | {c['preset']} / {c['depth_preset']} | not paced: reel needs "
                       f"{c['cpu_per_s']:.2f} CPU s per recorded s (as fast as possible), more than twice the machine "
                       "| | | | | | | | no / no |")
        out.append("")
    out += ["### Goals (issue 31 item 5)", ""] + [f"- {g}" for g in goals(r)]
    return "\n".join(out)


def goals(r: dict) -> list[str]:
    g = []
    for c in r["configs"]:
        rs = sum(e["recorded_s"] for e in c["reel"])
        ratio = sum(e["cpu_s"] for e in c["reel"]) / sum(e["cpu_s"] for e in c["peer"])
        no_q = per_s(c["reel"]) / (per_s(c["peer"]) - per_s(c["peer"], "quantize_cpu_s"))
        g.append(f"reel <= 0.8x the peer's CPU, {c['size']} {c['preset']}/{c['depth_preset']}: {ratio:.2f}x "
                 f"({'met' if ratio <= 0.8 else f'missed by {ratio / 0.8 - 1:.1%}'}; reel "
                 f"{sum(e['cpu_s'] for e in c['reel']) / rs:.2f}, peer {sum(e['cpu_s'] for e in c['peer']) / rs:.2f} "
                 f"CPU s per recorded s; {no_q:.2f}x against the peer without its numpy depth quantise)")
    for c in r.get("realtime", []):
        e = c["reel"]
        met = e["dropped"] == 0  # late rows: the producer loop woke late; no frame was lost
        g.append(f"0 drops at real pace, {c['size']} {c['preset']}/{c['depth_preset']}: reel {e['dropped']} "
                 f"dropped, {e['late_rows']} late rows ({'met' if met else 'missed'})")
    for c in r.get("not_paced", []):
        g.append(f"not run at pace, {c['size']} {c['preset']}/{c['depth_preset']}: reel needs {c['cpu_per_s']:.2f} "
                 f"CPU s per recorded s, more than twice the {r['machine']['nproc']} cores (no real time possible)")
    if not r["configs"]:
        return g
    # The fastest preset pair whose quality stays within the peer's at the reference presets.
    ref = r["configs"][0]
    big = max((c for c in r["configs"]), key=lambda c: c["w"] * c["h"])
    size = big["size"]
    refq = next((c["quality"]["peer"] for c in r["configs"] if c["size"] == size
                 and c["preset"] == ref["preset"] and c["depth_preset"] == ref["depth_preset"]), None)
    if refq:
        rows = []
        for c in r["configs"]:
            if c["size"] != size:
                continue
            q = c["quality"]["reel"]
            ok = (q["rgb_psnr_y"] >= refq["rgb_psnr_y"] - RGB_PSNR_TOL_DB
                  and q["depth_code_mae"] <= refq["depth_code_mae"] + DEPTH_MAE_TOL)
            rt = next((x for x in r.get("realtime", []) if x["size"] == size and x["preset"] == c["preset"]
                       and x["depth_preset"] == c["depth_preset"]), None)
            cpu = sum(e["cpu_s"] for e in c["reel"]) / sum(e["recorded_s"] for e in c["reel"])
            rows.append((cpu, c, ok, rt))
        for cpu, c, ok, rt in sorted(rows, key=lambda t: t[0]):
            rtxt = ("not run at pace" if rt is None else
                    f"{rt['reel']['dropped']} dropped / {rt['reel']['late_rows']} late rows at pace")
            q = c["quality"]["reel"]
            g.append(f"8 slots at {size} on {r['machine']['nproc']} cores, reel {c['preset']}/{c['depth_preset']}: "
                     f"{cpu:.2f} CPU s per recorded s, {rtxt}; quality {'within' if ok else 'below'} the peer's at "
                     f"{ref['preset']}/{ref['depth_preset']} (RGB PSNR-Y {q['rgb_psnr_y']:.2f} vs "
                     f"{refq['rgb_psnr_y']:.2f} dB, depth mean |code error| {q['depth_code_mae']:.3f} vs "
                     f"{refq['depth_code_mae']:.3f}; within = RGB at most {RGB_PSNR_TOL_DB} dB below, depth at most "
                     f"{DEPTH_MAE_TOL} codes above; RGB kbit/s per slot {q['rgb_kbps']:.0f} vs {refq['rgb_kbps']:.0f})")
    return g


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=2, help="timed episodes per side and configuration")
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds per episode")
    ap.add_argument("--rt-seconds", type=float, default=None, help="seconds of the paced episode (default --seconds)")
    ap.add_argument("--sizes", default="320x240,640x480")
    ap.add_argument("--presets", default="veryfast/fast,ultrafast/ultrafast,ultrafast/ffv1",
                    help="RGB/depth preset pairs (depth ffv1: lossless FFV1 instead of 12-bit HEVC); the first "
                         "is the reference for quality")
    ap.add_argument("--codec", default="h264", choices=("h264", "hevc"))
    ap.add_argument("--crf", type=int, default=20)
    ap.add_argument("--gop", type=int, default=2)
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--peer-threads", type=int, default=None, help="ffmpeg -threads for the peer (default: ffmpeg's)")
    ap.add_argument("--no-realtime", action="store_true", help="skip the paced runs")
    ap.add_argument("--only", choices=("cpu", "realtime"), help="run one part (realtime: paces every configuration)")
    ap.add_argument("--with-simulate", action="store_true",
                    help="also one `reel simulate --profile` episode per configuration (the whole rig: data path and "
                         "frames drawn at append time) and one with --no-video")
    ap.add_argument("--rt-all", action="store_true",
                    help="pace every configuration (default: those whose reel CPU was at most twice the machine)")
    ap.add_argument("--quick", action="store_true", help="1 episode x 3 s per side, paced 3 s")
    ap.add_argument("--render", help="re-print a saved results JSON")
    a = ap.parse_args()
    if a.render:
        print(render(json.loads(Path(a.render).read_text())))
        return 0
    if a.quick:
        a.episodes, a.seconds = 1, 3.0
    a.rt_seconds = a.rt_seconds or a.seconds
    binary = start(WORK)
    if not binary:
        return 1
    started = time.perf_counter()
    m = machine()
    print(f"reel {binary}; peer {FFMPEG}; {m['nproc']} CPUs; load {m['load']}", flush=True)
    sizes = a.sizes.split(",")
    presets = [p.split("/") for p in a.presets.split(",")]
    configs = [Config(s, p, dp, a) for s in sizes for p, dp in presets]
    n = int(round(a.seconds * a.fps))
    n_rt = int(round(a.rt_seconds * a.fps))
    res: dict = {"machine": m, "args": vars(a), "configs": [], "identity": {}, "realtime": [], "not_paced": []}
    warm_s = 2.0
    n_warm = int(round(warm_s * a.fps))

    for size in sizes:
        cfgs = [c for c in configs if c.size == size]
        frames = rig_frames(cfgs[0].w, cfgs[0].h, max(n, n_rt, n_warm))
        # Warm-up (untimed), and the check that these are the rig's frames: the peer with one
        # encoder thread must write files that decode to exactly `reel simulate`'s frames.
        wt = WORK / "warm" / size / TASK
        e = reel_simulate(binary, wt, warm_s, a.fps, cfgs[0].reel_video_args())
        peer_episode(WORK / "warm" / size / "peer", cfgs[0], frames, n_warm, 1, False)
        res["identity"][size] = same_frames(reel_videos(wt, e["n"], cfgs[0]),
                                            peer_videos(WORK / "warm" / size / "peer", cfgs[0]), cfgs[0])
        reel_record(WORK / "warm" / size / "writer" / TASK, cfgs[0], frames, n_warm, False)
        peer_episode(WORK / "warm" / size / "peer_default", cfgs[0], frames, n_warm, a.peer_threads, False)
        print(f"{size}: warm-up done; same frames: {sum(res['identity'][size].values())} of {len(SLOTS)} slots",
              flush=True)

        for cfg in cfgs if a.only != "realtime" else []:
            task = WORK / "cpu" / cfg.name / TASK
            c = {"size": cfg.size, "w": cfg.w, "h": cfg.h, "preset": cfg.preset, "depth_preset": cfg.depth_preset,
                 "reel": [], "peer": [], "simulate": []}
            for k in range(a.episodes):
                c["reel"].append(reel_record(task, cfg, frames, n, False))
                c["peer"].append(peer_episode(WORK / "cpu" / cfg.name / f"peer_{k + 1}", cfg, frames, n,
                                              a.peer_threads, False))
                print(f"  {cfg.name} episode {k + 1}/{a.episodes}: reel {c['reel'][-1]['cpu_s']:.2f} CPU s "
                      f"(wall {c['reel'][-1]['wall_s']:.2f}), peer {c['peer'][-1]['cpu_s']:.2f} CPU s "
                      f"(wall {c['peer'][-1]['wall_s']:.2f}); load {load()}", flush=True)
            if a.with_simulate:  # the whole rig: its data path and the frames drawn at append time too
                c["simulate"].append(reel_simulate(binary, WORK / "sim" / cfg.name / TASK, a.seconds, a.fps,
                                                   cfg.reel_video_args()))
            sub = {s: f[:n] for s, f in frames.items()}
            c["quality"] = {"reel": quality(reel_videos(task, c["reel"][-1]["n"], cfg), cfg, sub, a.seconds),
                            "peer": quality(peer_videos(WORK / "cpu" / cfg.name / f"peer_{a.episodes}", cfg), cfg,
                                            sub, a.seconds)}
            res["configs"].append(c)

        if not a.no_realtime and a.only != "cpu":
            for cfg in cfgs:
                c = next((x for x in res["configs"] if x["size"] == cfg.size and x["preset"] == cfg.preset
                          and x["depth_preset"] == cfg.depth_preset), None)
                if c and not a.rt_all and per_s(c["reel"]) > 2 * (os.cpu_count() or 1):
                    res["not_paced"].append({"size": cfg.size, "preset": cfg.preset,
                                             "depth_preset": cfg.depth_preset, "cpu_per_s": per_s(c["reel"])})
                    continue
                e = reel_record(WORK / "rt" / cfg.name / TASK, cfg, frames, n_rt, True)
                p = peer_episode(WORK / "rt" / cfg.name / "peer", cfg, frames, n_rt, a.peer_threads, True)
                res["realtime"].append({"size": cfg.size, "preset": cfg.preset, "depth_preset": cfg.depth_preset,
                                        "reel": e, "peer": p})
                print(f"  paced {cfg.name}: reel {e['dropped']} dropped, {e['late_rows']} late rows, "
                      f"{e['cpu_s'] / e['recorded_s']:.2f} CPU s/s; peer {p['late']} late frames, lag at end "
                      f"{p['lag_end_s']:.2f} s, {p['cpu_s'] / p['recorded_s']:.2f} CPU s/s; load {load()}", flush=True)
        del frames

    if a.with_simulate:  # the data path alone
        res["novideo"] = [reel_simulate(binary, WORK / "novideo" / TASK, a.seconds, a.fps, ["--no-video"])]
    res["load_end"] = load()
    res["elapsed_s"] = time.perf_counter() - started
    res["goals"] = goals(res)
    text = render(res)
    print("\n" + text)
    (RESULTS / "recorder_video.md").write_text(text + "\n", encoding="utf-8")
    (RESULTS / "recorder_video.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    print(f"\nwritten: {RESULTS / 'recorder_video.json'} (+ recorder_video.md)")
    return 0 if all(all(v.values()) for v in res["identity"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
