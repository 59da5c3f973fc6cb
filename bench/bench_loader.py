#!/usr/bin/env python3
"""Training-style loader benchmark (issue 6): random frames, batch 32, the state vector plus one
or two cameras, in samples/s, with the same worker count for every loader, in one run.

- reel: ``reel.torch.FrameDataset`` over the pooled task, in a torch DataLoader.
- LeRobot: ``LeRobotDataset`` (lerobot 0.4.4, torchcodec, in .venv-lerobot) over the LeRobot v3.0
  export of the same task (``reel export``), in a torch DataLoader: same frames, same batches.
- Daft: ``daft.datasets.lerobot.read(..., load_video_frames=[keys])`` on the same export, the same
  frames selected by ``index``, collected in batches of 32 (Daft is a query engine, not a torch
  loader: its native runner uses its own threads).

Memory per worker: the peak RSS of DataLoader worker processes (getrusage of the reaped
children) and of the main process. Run: ``.venv/bin/python bench/bench_loader.py`` (``make bench``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
REEL = os.environ.get("REEL_BIN", str(ROOT / "build/cmake/tools/reel"))
LEROBOT_PY = ROOT / ".venv-lerobot/bin/python"
STATE = ["observation.gripper_2_gripper_left_force", "observation.gripper_2_gripper_right_force",
         "observation.gripper_2_gripper_state", "observation.gripper_left_force",
         "observation.gripper_right_force", "observation.gripper_state"]

# One loader run in a fresh process: prints {"samples_per_s", "seconds", "worker_maxrss_mb",
# "main_maxrss_mb"}. argv: kind, root, indices.json, cameras (comma), workers, batch.
TORCH_RUN = textwrap.dedent("""
    import json, resource, sys, time
    import torch
    kind, root, idx_path, cams, workers, batch = sys.argv[1:7]
    cams = [c for c in cams.split(",") if c]
    workers, batch = int(workers), int(batch)
    indices = json.load(open(idx_path))
    if kind == "reel":
        from reel.torch import FrameDataset
        state = json.loads(sys.argv[7])
        ds = FrameDataset(root, columns=state, cameras=cams)
        keys = ["observation.images." + c for c in cams]
    else:
        import os
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from lerobot.datasets.lerobot_dataset import LeRobotDataset
        ds = LeRobotDataset("local/bench", root=root)
        keys = ["observation.images." + c for c in cams]
        drop = [k for k in ds.meta.video_keys if k not in keys]
        # decode only the cameras asked for, as the reel loader does
        ds.meta.info["features"] = {k: v for k, v in ds.meta.info["features"].items() if k not in drop}
    loader = torch.utils.data.DataLoader(ds, batch_size=batch, sampler=indices, num_workers=workers,
                                         persistent_workers=False)
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
    import json, resource, sys, time
    import numpy as np
    import daft
    from daft.datasets import lerobot as daft_lerobot
    root, idx_path, cams, batch = sys.argv[1:5]
    keys = ["observation.images." + c for c in cams.split(",") if c]
    indices = json.load(open(idx_path))
    t0 = time.perf_counter()
    df = daft_lerobot.read(root, load_video_frames=keys)
    df = df.where(daft.col("index").is_in(indices)).select("index", "observation.state", *keys)
    n = 0
    for part in df.iter_partitions():
        d = part.to_pydict()
        for k in keys:
            np.stack([np.asarray(f) for f in d[k]])
        n += len(d["index"])
    dt = time.perf_counter() - t0
    print(json.dumps({"samples": n, "seconds": dt, "samples_per_s": n / dt, "worker_maxrss_mb": 0,
                      "main_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""")


def run_json(argv, env=None) -> dict:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=3600, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--size", default="320x240")
    ap.add_argument("--samples", type=int, default=512)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--workers", default="0,2")
    ap.add_argument("--out", default=str(ROOT / "bench/results/bench_loader.md"))
    args = ap.parse_args()
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
    rows = []
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               HF_HOME=str(work / "hf"), PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    for cams in (["stereo_left"], ["stereo_left", "gripper_rgb"]):
        cam_arg = ",".join(cams)
        for workers in [int(w) for w in args.workers.split(",")]:
            reel_r = run_json([sys.executable, "-c", TORCH_RUN, "reel", str(task), str(idx_path), cam_arg,
                               str(workers), str(args.batch), json.dumps(STATE)])
            lr = run_json([str(LEROBOT_PY), "-c", TORCH_RUN, "lerobot", str(export), str(idx_path), cam_arg,
                           str(workers), str(args.batch)], env=env)
            rows.append((len(cams), workers, reel_r, lr))
        daft_r = run_json([sys.executable, "-c", DAFT_RUN, str(export), str(idx_path), cam_arg, str(args.batch)])
        rows.append((len(cams), "daft", daft_r, None))

    lines = [
        "| cameras | workers | reel FrameDataset samples/s | LeRobotDataset samples/s | reel / LeRobot | reel worker RSS MB | LeRobot worker RSS MB |",
        "| --- | --- | --- | --- | --- | --- | --- |"]
    daft_lines = ["| cameras | Daft LeRobot reader samples/s | main RSS MB |", "| --- | --- | --- |"]
    for cams, workers, a, b in rows:
        if workers == "daft":
            daft_lines.append(f"| {cams} | {a['samples_per_s']:.1f} | {a['main_maxrss_mb']:.0f} |")
            continue
        w_a = a["worker_maxrss_mb"] if workers else a["main_maxrss_mb"]
        w_b = b["worker_maxrss_mb"] if workers else b["main_maxrss_mb"]
        lines.append(f"| {cams} | {workers} | {a['samples_per_s']:.1f} | {b['samples_per_s']:.1f} | "
                     f"{a['samples_per_s'] / b['samples_per_s']:.2f}x | {w_a:.0f} | {w_b:.0f} |")
    import torch  # noqa: PLC0415
    header = (f"bench_loader: {args.samples} random frames of {total} ({args.episodes} episodes x {args.seconds} s, "
              f"{args.size}, H.264 GOP 2), batch {args.batch}, state float32[18] + cameras; "
              f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, torch {torch.__version__}")
    text = header + "\n\n" + "\n".join(lines) + "\n\n" + "\n".join(daft_lines) + "\n"
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
