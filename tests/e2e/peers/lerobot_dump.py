"""Read a LeRobot dataset with the installed lerobot and dump every frame to an .npz file.

Run with a peer venv's python (.venv-lerobot: lerobot 0.4.x, v3.0; .venv-lerobot21: 0.3.3, v2.1):

    lerobot_dump.py <root> <out.npz> [--video-backend torchcodec|pyav]

Opens LeRobotDataset(repo_id="local/x", root=<root>) offline with the default tolerance, reads
dataset[i] for every i, and saves every returned key stacked over frames: tensors as numpy arrays,
video frames (CHW float in [0,1]) as uint8 HWC = round(x*255), strings as numpy str arrays. The
key "__meta__" holds a JSON string: lerobot version, codebase_version, fps, features, episode
lengths, tasks, video keys and the video backend used. Exit status 1 with the exception text on
stderr on any failure.
"""

import argparse
import json
import os
import sys
import time
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def _episode_lengths(meta):
    eps = meta.episodes
    if isinstance(eps, dict):  # lerobot 0.3.x (v2.1): {episode_index: {"length": ...}}
        return [int(eps[k]["length"]) for k in sorted(eps)]
    return [int(x) for x in eps["length"]]  # lerobot 0.4.x (v3.0): a datasets.Dataset


def _tasks(meta):
    t = meta.tasks
    if isinstance(t, dict):  # 0.3.x: {task_index: task}
        return [t[k] for k in sorted(t)]
    return [str(x) for x in t.sort_values("task_index").index]  # 0.4.x: DataFrame indexed by task


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("out")
    ap.add_argument("--video-backend", default=None)
    args = ap.parse_args(argv)

    import lerobot
    import numpy as np
    import torch
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    kwargs = {}
    if args.video_backend:
        kwargs["video_backend"] = args.video_backend
    t0 = time.perf_counter()
    ds = LeRobotDataset(repo_id="local/x", root=args.root, **kwargs)
    video_keys = list(ds.meta.video_keys)
    cols = {}
    for i in range(len(ds)):
        item = ds[i]
        for k, v in item.items():
            if isinstance(v, torch.Tensor):
                if k in video_keys:
                    v = (v.permute(1, 2, 0).float() * 255.0).round().clamp(0, 255).to(torch.uint8)
                v = v.numpy()
            elif isinstance(v, str):
                v = np.str_(v)
            else:
                v = np.asarray(v)
            cols.setdefault(k, []).append(v)
    seconds = time.perf_counter() - t0
    out = {k: np.stack(v) for k, v in cols.items()}
    meta = {
        "lerobot": getattr(lerobot, "__version__", None),
        "codebase_version": ds.meta.info["codebase_version"],
        "fps": ds.meta.fps,
        "features": ds.meta.features,
        "episode_lengths": _episode_lengths(ds.meta),
        "tasks": _tasks(ds.meta),
        "video_keys": video_keys,
        "video_backend": getattr(ds, "video_backend", None),
        "num_frames": len(ds),
        "seconds": seconds,
    }
    out["__meta__"] = np.array(json.dumps(meta, default=list))
    np.savez(args.out, **out)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001
        traceback.print_exc()
        print(f"lerobot_dump: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
