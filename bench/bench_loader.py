#!/usr/bin/env python3
"""Training-style loader benchmark (issue 6): random frames, batch 32, the state vector plus one
or two cameras, in samples/s, with the same worker count for every loader, in one run.

- reel: ``reel.torch.FrameDataset`` over the pooled task, in a torch DataLoader with
  ``collate_fn=reel.torch.collate`` (its batch path: ``__getitems__`` decodes a batch's frames in
  one C++ call into one tensor per camera, handed over without a copy); "reel, default collate"
  is the same dataset with torch's default_collate (which copies every batch).
- LeRobot: ``LeRobotDataset`` (lerobot 0.4.4, torchcodec, in .venv-lerobot) over the LeRobot v3.0
  export of the same task (``reel export``), in a torch DataLoader: same frames, same batches.
- Daft: ``daft.datasets.lerobot.read(..., load_video_frames=[keys])`` on the same export, the same
  frames selected by ``index``, collected in batches of 32 (Daft is a query engine, not a torch
  loader: its native runner uses its own threads).

Every run is repeated (--reps, 3 rounds) and each loader's best counts; with 0 workers each torch
loader also runs with OMP_NUM_THREADS=1 beside torch's default intra-op threads (see timed_runs).

Memory per worker: the peak RSS of DataLoader worker processes (getrusage of the reaped
children) and of the main process. Run: ``.venv/bin/python bench/bench_loader.py`` (``make bench``).

Same samples: before timing, every loader's 512 samples (2 cameras, 0 workers) are digested in a
fresh process (sha1 of each camera frame as uint8, round(x * 255), exact for x = v / 255; of the
state vector's float32 bytes; index, frame_index and timestamp as values) and the script stops
unless reel's equal LeRobotDataset's sample for sample; Daft's frames are compared the same way by
``index``. The limit: ``bench/decode_limit.cc`` (plain libav*, one thread) decoding the same
frames of the pooled files, one seek per frame, as samples/s (cameras per sample included).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
REEL = os.environ.get("REEL_BIN", str(ROOT / "build/cmake/tools/reel"))
LEROBOT_PY = ROOT / ".venv-lerobot/bin/python"
LIMIT = os.environ.get("REEL_DECODE_LIMIT") or str(ROOT / "build/cmake/bench/reel_decode_limit")
STATE = ["observation.gripper_2_gripper_left_force", "observation.gripper_2_gripper_right_force",
         "observation.gripper_2_gripper_state", "observation.gripper_left_force",
         "observation.gripper_right_force", "observation.gripper_state"]

# One loader run in a fresh process: prints {"samples_per_s", "seconds", "worker_maxrss_mb",
# "main_maxrss_mb"}; with check=1 instead the digests of every sample (no timing).
# argv: kind (reel, reel-default, lerobot), root, indices.json, cameras (comma), workers, batch,
# state columns (json), check.
TORCH_RUN = textwrap.dedent("""
    import hashlib, json, resource, sys, time
    import torch
    kind, root, idx_path, cams, workers, batch, state, check = sys.argv[1:9]
    cams = [c for c in cams.split(",") if c]
    workers, batch, state, check = int(workers), int(batch), json.loads(state), check == "1"
    indices = json.load(open(idx_path))
    keys = ["observation.images." + c for c in cams]
    collate = None
    if kind.startswith("reel"):
        import reel.torch
        ds = reel.torch.FrameDataset(root, columns=state, cameras=cams)
        collate = reel.torch.collate if kind == "reel" else None
        get_state = lambda b: torch.cat([b[c] for c in state], dim=1)
    else:
        import os
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from lerobot.datasets.lerobot_dataset import LeRobotDataset
        ds = LeRobotDataset("local/bench", root=root)
        drop = [k for k in ds.meta.video_keys if k not in keys]
        # decode only the cameras asked for, as the reel loader does
        ds.meta.info["features"] = {k: v for k, v in ds.meta.info["features"].items() if k not in drop}
        get_state = lambda b: b["observation.state"]
    loader = torch.utils.data.DataLoader(ds, batch_size=batch, sampler=indices, num_workers=workers,
                                         persistent_workers=False, collate_fn=collate)
    sha = lambda a: hashlib.sha1(a.numpy().tobytes()).hexdigest()
    if check:
        out = {"index": [], "frame_index": [], "timestamp": [], "state": [], **{k: [] for k in keys}}
        for b in loader:
            out["index"] += b["index"].tolist()
            out["frame_index"] += b["frame_index"].tolist()
            out["timestamp"] += b["timestamp"].tolist()
            out["state"] += [sha(v.contiguous()) for v in get_state(b).to(torch.float32)]
            for k in keys:
                out[k] += [sha((f * 255).round().to(torch.uint8)) for f in b[k]]
        print(json.dumps(out))
        sys.exit(0)
    n = 0
    t0 = time.perf_counter()
    for b in loader:
        for k in keys:
            assert b[k].shape[0] == b["index"].shape[0]
        n += b["index"].shape[0]
    dt = time.perf_counter() - t0
    del loader
    print(json.dumps({"samples": n, "seconds": dt, "samples_per_s": n / dt,
                      "worker_maxrss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                      "main_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""")

DAFT_RUN = textwrap.dedent("""
    import hashlib, json, resource, sys, time
    import numpy as np
    import daft
    from daft.datasets import lerobot as daft_lerobot
    root, idx_path, cams, batch, check = sys.argv[1:6]
    keys = ["observation.images." + c for c in cams.split(",") if c]
    indices = json.load(open(idx_path))
    t0 = time.perf_counter()
    df = daft_lerobot.read(root, load_video_frames=keys)
    df = df.where(daft.col("index").is_in(indices)).select("index", "observation.state", *keys)
    n = 0
    digests = {k: {} for k in keys}
    for part in df.iter_partitions():
        d = part.to_pydict()
        for k in keys:
            frames = np.stack([np.asarray(f) for f in d[k]])
            if check == "1":  # (H, W, 3) uint8 frames, digested as the torch loaders' CHW
                for i, f in zip(d["index"], frames):
                    digests[k][int(i)] = hashlib.sha1(np.ascontiguousarray(f.transpose(2, 0, 1)).tobytes()).hexdigest()
        n += len(d["index"])
    dt = time.perf_counter() - t0
    if check == "1":
        print(json.dumps({k: [v[i] for i in indices] for k, v in digests.items()}))
        sys.exit(0)
    print(json.dumps({"samples": n, "seconds": dt, "samples_per_s": n / dt, "worker_maxrss_mb": 0,
                      "main_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""")


def run_json(argv, env=None) -> dict:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=3600, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def timed_runs(argv: list[str], env: dict | None, workers: int) -> list[dict]:
    """One timed run; with 0 workers two, with torch's default intra-op threads and with
    OMP_NUM_THREADS=1. In the main process default_collate's stack and LeRobot's per-frame
    float conversion run on torch's threads, which on a shared 2-core machine can cost a loader
    several times its speed (OpenMP threads wait on each other while other work holds a core);
    DataLoader workers already run on one torch thread."""
    out = [dict(run_json(argv, env), torch_threads="default")]
    if not workers:
        out.append(dict(run_json(argv, dict(env or os.environ, OMP_NUM_THREADS="1")), torch_threads="1"))
    return out


def check_same_samples(task: Path, export: Path, idx_path: Path, indices: list[int], cams: list[str],
                       env: dict) -> str:
    """Digests of every sample from each loader (fresh processes, 0 workers); stops the run unless
    reel's (both collates) equal LeRobotDataset's and Daft's frames equal them. A summary line."""
    cam_arg = ",".join(cams)
    got = {kind: run_json([sys.executable, "-c", TORCH_RUN, kind, str(task), str(idx_path), cam_arg, "0", "32",
                           json.dumps(STATE), "1"]) for kind in ("reel", "reel-default")}
    got["lerobot"] = run_json([str(LEROBOT_PY), "-c", TORCH_RUN, "lerobot", str(export), str(idx_path), cam_arg,
                               "0", "32", "[]", "1"], env=env)
    daft = run_json([sys.executable, "-c", DAFT_RUN, str(export), str(idx_path), cam_arg, "32", "1"])
    ref = got["lerobot"]
    if ref["index"] != indices:
        raise SystemExit("LeRobotDataset did not return the samples in the order asked")
    for kind in ("reel", "reel-default"):
        for key, want in ref.items():
            if got[kind][key] != want:
                bad = next(i for i, (a, b) in enumerate(zip(got[kind][key], want)) if a != b)
                raise SystemExit(f"{kind}: {key} of sample {bad} (index {indices[bad]}) differs from LeRobotDataset's")
    for key, digests in daft.items():
        if digests != ref[key]:
            raise SystemExit(f"Daft: {key} frames differ from LeRobotDataset's")
    return (f"Same samples: all {len(indices)} samples (index, frame_index, timestamp, state bytes, "
            f"{len(cams)} camera frames) of reel equal LeRobotDataset's, in the order asked; Daft's frames equal them.")


def decode_limit(task: Path, indices: list[int], cams: list[str]) -> float | None:
    """Samples/s of the C++ decode limit (bench/decode_limit.cc, one thread, one seek per frame)
    for the same frames of the pooled files; None without the program."""
    if not (Path(LIMIT).is_file() or shutil.which(LIMIT)):
        return None
    from reel.torch import FrameDataset  # noqa: PLC0415
    ds = FrameDataset(str(task), columns=[], cameras=cams)
    per_file: dict[str, list[int]] = {}
    for i in indices:
        e = int(np.searchsorted(ds._starts, i, side="right")) - 1
        si, n, _ = ds._episodes[e]
        for cam in ds.cameras:
            per_file.setdefault(ds._videos[(si, n)][cam], []).append(i - ds._starts[e])
    seconds = 0.0
    for path, rows in per_file.items():
        out = subprocess.run([LIMIT, path, "--threads", "1", "--indices", ",".join(map(str, rows))],
                             check=True, capture_output=True, text=True).stdout
        seconds += float(json.loads(out)["times_s"][0])
    return len(indices) / seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--size", default="320x240")
    ap.add_argument("--samples", type=int, default=512)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--workers", default="0,2")
    ap.add_argument("--reps", type=int, default=3, help="rounds of every run; the best of each counts")
    ap.add_argument("--out", default=str(ROOT / "bench/results/bench_loader.md"))
    args = ap.parse_args()
    load_start = Path("/proc/loadavg").read_text().split()[:3]
    work = Path(tempfile.mkdtemp(prefix="reel-bench-loader-"))
    task, export = work / "pick", work / "pick_v3"
    subprocess.run([REEL, "simulate", task, "--count", str(args.episodes), "--seconds", str(args.seconds),
                    "--video-size", args.size], check=True, capture_output=True)
    subprocess.run([REEL, "export", task, export], check=True, capture_output=True)
    total = int(json.loads((export / "meta/info.json").read_text())["total_frames"])
    rng = np.random.default_rng(0)
    indices = rng.choice(total, size=min(args.samples, total), replace=False).tolist()
    idx_path = work / "indices.json"
    idx_path.write_text(json.dumps(indices))
    # reel's FrameDataset indexes frames in the same order (episodes by N, rows in order), so the
    # global index i is the same frame in both.
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               HF_HOME=str(work / "hf"), PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    same = check_same_samples(task, export, idx_path, indices, ["stereo_left", "gripper_rgb"], env)
    # Every configuration `reps` times, the rounds one after another, and each loader's best run
    # counts: the machine is shared, and a burst of other work slows whichever run it meets.
    cameras = (["stereo_left"], ["stereo_left", "gripper_rgb"])
    limits = {len(cams): decode_limit(task, indices, cams) for cams in cameras}
    best: dict[tuple, dict] = {}
    for _ in range(args.reps):
        for cams in cameras:
            cam_arg = ",".join(cams)
            for workers in [int(w) for w in args.workers.split(",")]:
                runs = {kind: timed_runs([sys.executable, "-c", TORCH_RUN, kind, str(task), str(idx_path), cam_arg,
                                          str(workers), str(args.batch), json.dumps(STATE), "0"], None, workers)
                        for kind in ("reel", "reel-default")}
                runs["lerobot"] = timed_runs([str(LEROBOT_PY), "-c", TORCH_RUN, "lerobot", str(export), str(idx_path),
                                              cam_arg, str(workers), str(args.batch), "[]", "0"], env, workers)
                runs["daft"] = [] if workers else [run_json([sys.executable, "-c", DAFT_RUN, str(export), str(idx_path),
                                                             cam_arg, str(args.batch), "0"])]
                for kind, results in runs.items():
                    for r in results:
                        key = (len(cams), "daft" if kind == "daft" else workers, kind)
                        if key not in best or r["samples_per_s"] > best[key]["samples_per_s"]:
                            best[key] = r
    rows = []
    for cams in cameras:
        for workers in [*[int(w) for w in args.workers.split(",")], "daft"]:
            runs = {kind: r for (c, w, kind), r in best.items() if c == len(cams) and w == workers}
            rows.append((len(cams), workers, runs, limits[len(cams)]))
    load_end = Path("/proc/loadavg").read_text().split()[:3]
    text = report(args, total, rows, same, load_start, load_end)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    return 0


def report(args, total: int, rows: list, same: str, load_start: list[str], load_end: list[str]) -> str:
    lines = [
        "| cameras | workers | reel samples/s | reel, default collate | LeRobotDataset | reel / LeRobot | "
        "C++ decode limit, 1 thread | reel RSS per worker MB | LeRobot RSS per worker MB |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    daft_lines = ["| cameras | Daft LeRobot reader samples/s | reel (0 workers) / Daft | main RSS MB |",
                  "| --- | --- | --- | --- |"]
    reel0 = {}
    for cams, workers, runs, limit in rows:
        lim = f"{limit:.1f}" if limit else "n/a"
        if workers == "daft":
            d = runs["daft"]
            daft_lines.append(f"| {cams} | {d['samples_per_s']:.1f} | {reel0[cams] / d['samples_per_s']:.2f}x | "
                              f"{d['main_maxrss_mb']:.0f} |")
            continue
        a, a2, b = runs["reel"], runs["reel-default"], runs["lerobot"]
        if workers == 0:
            reel0[cams] = a["samples_per_s"]
        rss = "worker_maxrss_mb" if workers else "main_maxrss_mb"
        th = lambda r: " (1 thread)" if r["torch_threads"] == "1" else ""  # noqa: E731
        lines.append(f"| {cams} | {workers} | {a['samples_per_s']:.1f}{th(a)} | {a2['samples_per_s']:.1f}{th(a2)} | "
                     f"{b['samples_per_s']:.1f}{th(b)} | {a['samples_per_s'] / b['samples_per_s']:.2f}x | {lim} | "
                     f"{a[rss]:.0f} | {b[rss]:.0f} |")
    import torch  # noqa: PLC0415
    header = (f"bench_loader: {args.samples} random frames of {total} ({args.episodes} episodes x {args.seconds} s, "
              f"{args.size}, H.264 GOP 2), batch {args.batch}, state float32[18] + cameras as float32 CHW; "
              f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, torch {torch.__version__}; "
              f"best of {args.reps} rounds; 0 workers: the better of torch's default threads and OMP_NUM_THREADS=1, "
              f"marked (1 thread); "
              f"load average {' '.join(load_start)} at start, {' '.join(load_end)} at end")
    return header + "\n\n" + "\n".join(lines) + "\n\n" + "\n".join(daft_lines) + "\n\n" + same + "\n"


if __name__ == "__main__":
    sys.exit(main())
