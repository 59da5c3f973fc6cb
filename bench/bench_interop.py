#!/usr/bin/env python3
"""reel interop benchmark: LeRobot/bundle export throughput, and reading frames with decoded video
from a LeRobot v3.0 dataset with reel, LeRobotDataset and Daft, side by side in one run.

    make bench                                      # or: .venv/bin/python bench/bench_interop.py
    .venv/bin/python bench/bench_interop.py --quick  # 2 episodes of 5 s, 2 rounds, 100 random frames
    .venv/bin/python bench/bench_interop.py --render bench/results/interop.json

1. A pooled task from the simulated rig (`reel simulate --count 6 --seconds 10 --video-size
   320x240`: 6 RGB + 2 depth streams at 30 fps), made once under bench/results/interop/.
2. Export: `reel export --to lerobot-v3 | lerobot-v2.1 | bundle` of that task, the three formats in
   turn each round; frames/s = data rows / wall seconds, and CPU seconds of the process.
3. Read, on the v3.0 export, cut to 1 camera (observation.images.stereo_left) or 2 (+ d435_rgb):
   info.json/stats.json keep only those video features, data and videos are hard links, so
   LeRobotDataset decodes exactly the cameras the others are asked for. The same frames for every
   reader: all frames in order ("sequential"), and a seeded sample of distinct global indices
   ("random"; LeRobot in the sample's random order, as a shuffling DataLoader asks).
   - reel: `reel.open(root)` (a reel.Dataset), then per episode `data(N)` (the rows, as pyarrow
     reads them) and one `frame_images(N, rows, keys)` call with the episode's wanted rows sorted
     (batched per episode: what the API is for).
   - LeRobotDataset (lerobot 0.4.4, torchcodec, .venv-lerobot): `dataset[i]` for every index, in a
     subprocess that times its own loop after an untimed warm-up pass (bench/lerobot_read_peer.py);
     its construction is timed separately and not counted.
   - Daft: `daft.datasets.lerobot.read(root, load_video_frames=keys)` (random: `.where(index in
     sample)`) then `.to_pydict()`; its native runner; query planning and metadata reads are counted.
   Before timing, the first frames of each reader are compared with reel's, byte for byte (LeRobot's
   float frames as round(x * 255)).

reel and Daft take turns within each round after an untimed warm-up; LeRobot runs its rounds in
its own process right after. Best and median are reported; ratios are reel / peer (> 1: reel faster).
Results: tables on stdout, bench/results/interop.md and bench/results/interop.json.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import reel

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
WORK = RESULTS / "interop"
LEROBOT_PY = REPO / ".venv-lerobot" / "bin" / "python"
FORMATS = {"lerobot-v3": "LeRobot v3.0", "lerobot-v2.1": "LeRobot v2.1", "bundle": "bundle"}
CAMERAS = {1: ["observation.images.stereo_left"],
           2: ["observation.images.stereo_left", "observation.images.d435_rgb"]}
CHECK = 12  # frames compared byte for byte per reader and camera


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def reel_bin() -> str:
    cand = os.environ.get("REEL_BIN") or str(REPO / "build/cmake/tools/reel")
    if not os.access(cand, os.X_OK):
        sys.exit("reel CLI not found (set REEL_BIN or build build/cmake/tools/reel)")
    return cand


def summary(ts: list[float], frames: int) -> dict:
    return {"times_s": ts, "best_s": min(ts), "median_s": statistics.median(ts), "frames": frames,
            "best_fps": frames / min(ts), "median_fps": frames / statistics.median(ts)}


# --------------------------------------------------------------------------- inputs


def make_task(binary: str, episodes: int, seconds: float, size: str) -> Path:
    task = WORK / f"task_e{episodes}_s{seconds:g}_{size}" / "pick"
    if not (task / "meta" / "info.json").is_file():
        shutil.rmtree(task.parent, ignore_errors=True)
        task.parent.mkdir(parents=True)
        print(f"simulating {episodes} x {seconds:g} s at {size} -> {task}", flush=True)
        subprocess.run([binary, "simulate", str(task), "--count", str(episodes), "--seconds", f"{seconds:g}",
                        "--video-size", size, "--seed", "7"], check=True, capture_output=True)
    return task


def cut_to_cameras(src: Path, dst: Path, keys: list[str]) -> Path:
    """A view of the v3 dataset `src` with only the video features `keys` (hard links)."""
    shutil.rmtree(dst, ignore_errors=True)
    info = json.loads((src / "meta/info.json").read_text())
    drop = [k for k, f in info["features"].items() if f["dtype"] == "video" and k not in keys]
    for k in drop:
        del info["features"][k]
    shutil.copytree(src / "meta", dst / "meta")
    (dst / "meta/info.json").write_text(json.dumps(info, indent=4))
    stats_path = dst / "meta/stats.json"
    if stats_path.is_file():
        stats = json.loads(stats_path.read_text())
        stats_path.write_text(json.dumps({k: v for k, v in stats.items() if k not in drop}, indent=4))
    shutil.copytree(src / "data", dst / "data", copy_function=os.link)
    for k in keys:
        shutil.copytree(src / "videos" / k, dst / "videos" / k, copy_function=os.link)
    return dst


# --------------------------------------------------------------------------- export


def bench_export(binary: str, task: Path, reps: int) -> dict:
    out_root = WORK / "export"
    shutil.rmtree(out_root, ignore_errors=True)
    out_root.mkdir(parents=True)
    info = json.loads(subprocess.run([binary, "info", str(task), "--json"], check=True, capture_output=True,
                                     text=True).stdout)
    frames = int(info.get("frames") or info.get("total_frames"))
    res = {fmt: {"wall": [], "cpu": []} for fmt in FORMATS}
    sizes = {}
    for r in range(reps + 1):  # round 0: warm-up (page cache), not counted
        for fmt in FORMATS:
            out = out_root / fmt
            shutil.rmtree(out, ignore_errors=True)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run([binary, "export", "--to", fmt, str(task), str(out)], check=True, capture_output=True)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if r:
                res[fmt]["wall"].append(wall)
                res[fmt]["cpu"].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            files = [p for p in out.rglob("*") if p.is_file()]
            sizes[fmt] = {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}
        if r:
            print(f"  [export] round {r}/{reps}: " + ", ".join(f"{f} {res[f]['wall'][-1]:.2f} s" for f in FORMATS),
                  flush=True)
    task_files = [p for p in task.rglob("*") if p.is_file()]
    return {"frames": frames, "episodes": len(info.get("episodes", [])) if isinstance(info.get("episodes"), list)
            else info.get("episodes"), "task_bytes": sum(p.stat().st_size for p in task_files),
            "formats": {f: {**summary(res[f]["wall"], frames), "cpu_s": statistics.median(res[f]["cpu"]), **sizes[f]}
                        for f in FORMATS}, "v3": str(out_root / "lerobot-v3")}


# --------------------------------------------------------------------------- readers


def episode_map(root: Path) -> list[tuple[int, int, int]]:
    return [(e["episode_index"], e["dataset_from_index"], e["length"]) for e in reel.open(str(root)).episodes()]


def by_episode(eps, indices) -> dict[int, np.ndarray]:
    """Global indices -> {episode_index: sorted rows within the episode}."""
    out: dict[int, list[int]] = {}
    for g in indices:
        for n, start, length in eps:
            if start <= g < start + length:
                out.setdefault(n, []).append(g - start)
                break
    return {n: np.array(sorted(rows), np.int64) for n, rows in sorted(out.items())}


def reel_read(root: Path, keys: list[str], plan: dict[int, np.ndarray]) -> int:
    ds = reel.open(str(root))
    ds.episodes()
    frames = 0
    for n, rows in plan.items():
        pa.table(ds.data(n))
        got = ds.frame_images(n, rows, keys)
        frames += len(got[keys[0]])
    return frames


def daft_read(root: Path, keys: list[str], sample: list[int] | None) -> dict:
    import daft
    from daft.datasets import lerobot as daft_lerobot

    df = daft_lerobot.read(str(root), load_video_frames=keys)
    if sample is not None:
        df = df.where(daft.col("index").is_in(sample))
    return df.to_pydict()


def reel_frames(root: Path, keys: list[str], eps, indices: list[int]) -> dict[str, np.ndarray]:
    ds = reel.open(str(root))
    out = {k: [] for k in keys}
    for g in indices:
        (n, rows), = by_episode(eps, [g]).items()
        got = ds.frame_images(n, rows, keys)
        for k in keys:
            out[k].append(got[k][0])
    return {k: np.stack(v) for k, v in out.items()}


def lerobot_env() -> dict:
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    env.setdefault("HF_HOME", str(WORK / "hf-home"))
    return env


def lerobot_read(root: Path, indices: list[int], reps: int, tag: str) -> tuple[dict, dict]:
    job = WORK / f"lerobot-{tag}.json"
    out = WORK / f"lerobot-{tag}.npz"
    job.write_text(json.dumps({"indices": indices, "reps": reps, "check": CHECK}))
    proc = subprocess.run([str(LEROBOT_PY), str(HERE / "lerobot_read_peer.py"), str(root), str(job), str(out)],
                          capture_output=True, text=True, env=lerobot_env(), timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"lerobot_read_peer.py failed:\n{proc.stderr[-4000:]}")
    with np.load(out) as z:
        frames = {k: z[k] for k in z.files if k != "__meta__"}
        meta = json.loads(str(z["__meta__"]))
    return meta, frames


def compare(want: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> bool:
    return all(k in got and got[k].shape == want[k].shape and np.array_equal(got[k], want[k]) for k in want)


def bench_read(v3: Path, reps: int, sample_n: int, seed: int, cameras: list[int]) -> dict:
    res: dict = {"runs": []}
    for ncam in cameras:
        keys = CAMERAS[ncam]
        root = cut_to_cameras(v3, WORK / f"read-{ncam}cam", keys)
        eps = episode_map(root)
        total = sum(length for _, _, length in eps)
        rng = random.Random(seed)
        for access in ("sequential", "random"):
            indices = list(range(total)) if access == "sequential" else rng.sample(range(total), min(sample_n, total))
            plan = by_episode(eps, indices)
            sample = None if access == "sequential" else indices
            label = f"{ncam} cam {access}"
            # Frame check: each reader's first frames against reel's, byte for byte.
            want = reel_frames(root, keys, eps, indices[:CHECK])
            d = daft_read(root, keys, sample)
            pos = {g: i for i, g in enumerate(d["index"])}
            daft_ok = compare(want, {k: np.stack([np.asarray(d[k][pos[g]]) for g in indices[:CHECK]]) for k in keys})
            del d
            times = {"reel": [], "daft": []}
            reel_read(root, keys, plan)  # warm-up
            for r in range(reps):
                for name, fn in (("reel", lambda: reel_read(root, keys, plan)),
                                 ("daft", lambda: daft_read(root, keys, sample))):
                    gc.collect()
                    t0 = time.perf_counter()
                    fn()
                    times[name].append(time.perf_counter() - t0)
                print(f"  [{label}] round {r + 1}/{reps}: reel {times['reel'][-1]:.2f} s, daft {times['daft'][-1]:.2f} s",
                      flush=True)
            meta, lr_frames = lerobot_read(root, indices, reps, f"{ncam}cam-{access}")
            print(f"  [{label}] lerobot: " + ", ".join(f"{t:.2f} s" for t in meta["times_s"]), flush=True)
            res["runs"].append({
                "cameras": ncam, "keys": keys, "access": access, "frames": len(indices),
                "episodes_touched": len(plan), "reel": summary(times["reel"], len(indices)),
                "daft": summary(times["daft"], len(indices)), "lerobot": summary(meta["times_s"], len(indices)),
                "lerobot_open_s": meta["open_s"], "check": {"daft_equal": daft_ok, "lerobot_equal": compare(want, lr_frames)},
                "load": load()})
            res["lerobot"] = {k: meta[k] for k in ("lerobot", "torch", "torchcodec", "backend", "torch_threads")}
    return res


# --------------------------------------------------------------------------- report


def fps_cell(s: dict) -> str:
    return f"{s['best_fps']:.0f} / {s['median_fps']:.0f}"


def ratio_cell(a: dict, b: dict) -> str:
    return f"{a['best_fps'] / b['best_fps']:.2f}x / {a['median_fps'] / b['median_fps']:.2f}x"


def render(r: dict) -> str:
    m = r["machine"]
    a = r["args"]
    out = [f"# reel interop benchmark ({m['date']})", "",
           f"- machine: {m['nproc']} CPUs ({m['cpu']}), Linux {m['kernel']}; Python {m['python']}; {m['ffmpeg_cli']} "
           f"(reel links the system FFmpeg); daft {m['daft']}; numpy {m['numpy']}",
           f"- load average at start {m['load']}, at end {r['load_end']}",
           f"- input: `reel simulate --count {a['episodes']} --seconds {a['seconds']:g} --video-size {a['size']}` "
           f"(6 RGB + 2 depth streams at 30 fps); {a['reps']} timed rounds after a warm-up", ""]
    ex = r.get("export")
    if ex:
        out += [f"## Export ({ex['frames']} frames, pooled task {ex['task_bytes'] / 1e6:.1f} MB)", "",
                "`reel export --to FORMAT task out`, wall clock of the whole process (frames/s best / median), "
                "CPU seconds (median), output size.", "",
                "| format | frames/s | wall s (median) | CPU s | files | MB |", "|---|---:|---:|---:|---:|---:|"]
        for f, s in ex["formats"].items():
            out.append(f"| {FORMATS[f]} | {fps_cell(s)} | {s['median_s']:.2f} | {s['cpu_s']:.2f} | {s['files']} | "
                       f"{s['bytes'] / 1e6:.1f} |")
        out.append("")
    rd = r.get("read")
    if rd:
        lr = rd.get("lerobot", {})
        out += ["## Reading frames with decoded video from the v3.0 export (frames/s, best / median; "
                "ratio = reel / peer, > 1: reel faster)", "",
                f"reel: `reel.Dataset.data(N)` + `frame_images(N, rows, keys)` per episode; LeRobotDataset: lerobot "
                f"{lr.get('lerobot')}, `dataset[i]` per index, video backend {lr.get('backend')} (torchcodec "
                f"{lr.get('torchcodec')}, torch {lr.get('torch')}, {lr.get('torch_threads')} torch threads), "
                f"construction not counted; Daft: `read(root, load_video_frames=keys).to_pydict()` (random: "
                "`.where(index in sample)`), everything counted. A frame = one index with all its cameras.", "",
                "| cameras | access | frames | episodes | reel | LeRobotDataset | Daft | reel/LeRobot | reel/Daft "
                "| frames equal (LeRobot, Daft) | LeRobot open s |", "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
        for x in rd["runs"]:
            c = x["check"]
            out.append(f"| {x['cameras']} | {x['access']} | {x['frames']} | {x['episodes_touched']} | "
                       f"{fps_cell(x['reel'])} | {fps_cell(x['lerobot'])} | {fps_cell(x['daft'])} | "
                       f"{ratio_cell(x['reel'], x['lerobot'])} | {ratio_cell(x['reel'], x['daft'])} | "
                       f"{'yes' if c['lerobot_equal'] else 'NO'}, {'yes' if c['daft_equal'] else 'NO'} | "
                       f"{x['lerobot_open_s']:.2f} |")
        out.append("")
    return "\n".join(out)


def machine_info() -> dict:
    import daft

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    cli = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout.split("\n")[0]
    return {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"), "nproc": os.cpu_count(),
            "cpu": cpu, "kernel": platform.release(), "python": platform.python_version(), "numpy": np.__version__,
            "daft": daft.__version__, "reel": reel.__version__, "ffmpeg_cli": " ".join(cli.split()[:3]),
            "load": load()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--size", default="320x240")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sample", type=int, default=200, help="random-access sample (distinct global indices)")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--cameras", default="1,2", help="camera counts to read (1, 2)")
    ap.add_argument("--quick", action="store_true", help="2 episodes of 5 s, 2 rounds, 100 random frames")
    ap.add_argument("--only", choices=("export", "read"))
    ap.add_argument("--render", metavar="JSON", help="re-print a saved run and exit")
    args = ap.parse_args()
    if args.render:
        print(render(json.loads(Path(args.render).read_text())))
        return 0
    if args.quick:
        args.episodes, args.seconds, args.reps, args.sample = 2, 5.0, 2, 100
    if not LEROBOT_PY.is_file() and args.only != "export":
        sys.exit(f"{LEROBOT_PY} is missing: run `make peers` (docs/lerobot-peers.md)")
    binary = reel_bin()
    m = machine_info()
    print(f"reel {m['reel']}; daft {m['daft']}; {m['ffmpeg_cli']}; {m['nproc']} CPUs; load {m['load']}", flush=True)
    WORK.mkdir(parents=True, exist_ok=True)
    task = make_task(binary, args.episodes, args.seconds, args.size)
    res: dict = {"machine": m, "args": vars(args)}
    ex = bench_export(binary, task, args.reps) if args.only != "read" else None
    if ex is None:  # --only read: one untimed export for the input
        v3 = WORK / "export" / "lerobot-v3"
        if not (v3 / "meta/info.json").is_file():
            shutil.rmtree(v3, ignore_errors=True)
            v3.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([binary, "export", "--to", "lerobot-v3", str(task), str(v3)], check=True)
    else:
        res["export"] = ex
        v3 = Path(ex["v3"])
    if args.only != "export":
        res["read"] = bench_read(v3, args.reps, args.sample, args.seed, [int(c) for c in args.cameras.split(",")])
    res["load_end"] = load()
    text = render(res)
    print("\n" + text)
    (RESULTS / "interop.md").write_text(text + "\n", encoding="utf-8")
    (RESULTS / "interop.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    print(f"\nwritten: {RESULTS / 'interop.json'} (+ interop.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
