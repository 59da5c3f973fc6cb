"""The LeRobotDataset side of bench/bench_interop.py; run with .venv-lerobot's python (lerobot 0.4.4).

    lerobot_read_peer.py <root> <job.json> <out.npz>

job.json: {"indices": [...], "reps": R, "check": K}. Opens LeRobotDataset(repo_id="local/bench",
root=<root>) offline (default video backend and tolerance), reads dataset[i] for every index once
untimed (warm-up: decoder cache, page cache), then R timed passes over the indices, timing its own
loop. Writes to out.npz the video frames of the first K indices as uint8 HWC = round(x * 255)
(for the frame check) and "__meta__": a JSON string {open_s, times_s, video_keys, backend,
lerobot, torch, torchcodec}. Exit 1 with the traceback on stderr on failure.
"""

import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def main(argv):
    root, job_path, out = argv
    job = json.loads(open(job_path).read())

    import lerobot
    import numpy as np
    import torch
    import torchcodec
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    t0 = time.perf_counter()
    ds = LeRobotDataset(repo_id="local/bench", root=root)
    open_s = time.perf_counter() - t0
    keys = list(ds.meta.video_keys)
    idx = [int(i) for i in job["indices"]]
    check = {k: [] for k in keys}
    for n, i in enumerate(idx):  # warm-up, and the frames to check
        item = ds[i]
        if n < job["check"]:
            for k in keys:
                check[k].append((item[k].permute(1, 2, 0) * 255.0).round().clamp(0, 255).to(torch.uint8).numpy())
    times = []
    for _ in range(job["reps"]):
        t0 = time.perf_counter()
        for i in idx:
            ds[i]
        times.append(time.perf_counter() - t0)
    meta = {"open_s": open_s, "times_s": times, "video_keys": keys, "backend": getattr(ds, "video_backend", None),
            "lerobot": getattr(lerobot, "__version__", None), "torch": torch.__version__,
            "torchcodec": getattr(torchcodec, "__version__", None), "torch_threads": torch.get_num_threads()}
    np.savez(out, __meta__=np.array(json.dumps(meta)), **{k: np.stack(v) for k, v in check.items() if v})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
