#!/usr/bin/env python3
"""FrameDataset with every stream beside a hand-written peer (issue 29's goal: >= 3x, with 0 and
2 DataLoader workers, identical values asserted).

A sample: one camera's frame (uint8), the force vector paired by its _ns, the SLAM pose paired
by its _ns, a window of K IMU samples on the frame clock (through raw_hw_ns), and the force
matrix's fz plane paired by its _ns and decoded. The peer is what a team writes without reel:
pyarrow reads each episode's columns once, numpy's searchsorted pairs the stamps (nearest within
half a frame, ties earlier), numpy decodes the row-diff int16 matrix (cumsum, the episode's
scale), PyAV seeks and decodes the frame. Both read the simulated rig's task
(`reel simulate --count 4 --seconds 4`).

    python bench/bench_loader_streams.py [--samples 256] [--batch 16] [--out /dev/shm/bench_streams]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import time
from pathlib import Path

import av
import numpy as np
import pyarrow.parquet as pq
import torch
from align_peer import pair

import reel
from reel.torch import FrameDataset

FORCE = "observation.gripper_left_force"
SLAM = "observation.slam_trajectory"
IMU = "observation.imu"
MATRIX = "observation.gripper_left_force_matrix"
K = 16


class PeerDataset(torch.utils.data.Dataset):
    """The hand-written loader: per episode the columns and pairings computed once (cached),
    per sample the matrix decoded with numpy and the frame decoded with PyAV."""

    def __init__(self, root: Path, camera: str):
        self.root, self.camera = root, camera
        info = json.loads((root / "meta/info.json").read_text())
        self.fps = float(info["fps"])
        self.episodes = []
        for p in sorted((root / "data/chunk-000").glob("episode-*.parquet")):
            f = int(p.stem.split("-")[1])
            self.episodes.append((f + 1, f, pq.read_metadata(str(p)).num_rows))
        self.starts = np.cumsum([0] + [e[2] for e in self.episodes])
        self.cache: dict[int, dict] = {}

    def __len__(self) -> int:
        return int(self.starts[-1])

    def _episode(self, f: int) -> dict:
        if f in self.cache:
            return self.cache[f]
        t = pq.read_table(str(self.root / f"data/chunk-000/episode-{f:03d}.parquet"),
                          columns=["hardware_ns", "raw_hw_ns", "imu_ts_ns", IMU, FORCE, FORCE + "_ns", SLAM,
                                   SLAM + "_ns", MATRIX, MATRIX + "_ns"])
        row = pq.read_table(str(self.root / f"meta/episodes/chunk-000/episode-{f:03d}.parquet"))
        hw = t["hardware_ns"].to_numpy()
        e = {"hw": hw, "scale": np.float32(json.loads(row["force_matrix_specs"][0].as_py())[MATRIX]["scale"])}
        e["force"] = t[FORCE].combine_chunks().values.to_numpy().reshape(-1, 3)
        e["force_i"] = pair(hw, t[FORCE + "_ns"].to_numpy())
        e["pts"] = t[SLAM].combine_chunks().values.to_numpy().reshape(-1, 8)
        e["slam_i"] = pair(hw, t[SLAM + "_ns"].combine_chunks().values.to_numpy())
        raw, d = t["raw_hw_ns"].to_numpy(), t["imu_ts_ns"].combine_chunks().values.to_numpy()
        pos = np.clip(np.searchsorted(raw, d), 1, len(raw) - 1)
        nf = np.where(np.abs(d - raw[pos - 1]) <= np.abs(raw[pos] - d), pos - 1, pos)
        e["imu_t"] = hw[nf] + (d - raw[nf])
        e["imu_v"] = t[IMU].combine_chunks().values.values.to_numpy().reshape(-1, 6)
        e["matrix"] = t[MATRIX].combine_chunks()
        e["matrix_i"] = pair(hw, t[MATRIX + "_ns"].to_numpy())
        self.cache[f] = e
        return e

    def __getitem__(self, i: int) -> dict:
        ep = int(np.searchsorted(self.starts, i, side="right") - 1)
        n, f, _ = self.episodes[ep]
        r = int(i - self.starts[ep])
        e = self._episode(f)
        out = {}
        j = e["force_i"][r]
        out[FORCE] = torch.from_numpy(e["force"][j].copy() if j >= 0 else np.zeros(3, np.float32))
        j = e["slam_i"][r]
        out[SLAM] = torch.from_numpy((e["pts"][j] if j >= 0 else np.zeros(8)).astype(np.float32))
        last = np.searchsorted(e["imu_t"], e["hw"][r], side="right")
        win = np.zeros((K, 6), np.float32)
        take = e["imu_v"][max(0, last - K):last]
        win[K - len(take):] = take
        out[IMU] = torch.from_numpy(win)
        j = e["matrix_i"][r]
        fz = np.zeros((250, 250), np.float32)
        if j >= 0:
            d = e["matrix"][int(j)].values.to_numpy().reshape(250, 750)
            q = np.cumsum(d.astype(np.int32), axis=1).astype(np.int16)
            fz = (q.astype(np.float32) / e["scale"]).reshape(250, 250, 3)[:, :, 2].copy()
        out[MATRIX] = torch.from_numpy(fz)
        out["image"] = torch.from_numpy(self._frame(f, r)).permute(2, 0, 1)
        return out

    def _frame(self, f: int, r: int) -> np.ndarray:
        path = next((self.root / f"videos/chunk-000/{self.camera}").glob(f"episode-{f:03d}.*"))
        with av.open(str(path)) as c:
            s = c.streams.video[0]
            target = r / self.fps
            c.seek(int(target / s.time_base), stream=s, backward=True, any_frame=False)
            for frame in c.decode(s):
                if frame.pts * s.time_base >= target - 0.5 / self.fps:
                    return frame.to_ndarray(format="rgb24")
        raise RuntimeError(f"frame {r} of {path} not found")


def run(ds, indices: list[int], batch: int, workers: int, collate) -> tuple[float, list]:
    sampler = [indices[i:i + batch] for i in range(0, len(indices), batch)]
    loader = torch.utils.data.DataLoader(ds, batch_sampler=sampler, num_workers=workers, collate_fn=collate)
    t0 = time.perf_counter()
    out = list(loader)
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--out", default="/dev/shm/bench_streams")
    args = ap.parse_args()
    root = Path(args.out)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    binary = os.environ.get("REEL_BIN", "build/cmake/tools/reel")
    subprocess.run([binary, "simulate", str(root / "sim"), "--count", "4", "--seconds", "4"], check=True,
                   capture_output=True)
    task = reel.open(str(root / "sim"))
    camera = sorted(task.info["cameras"])[0]
    ds = FrameDataset(str(root / "sim"), columns=[FORCE, SLAM, IMU, MATRIX], cameras=[camera], imu_window=K,
                      force_matrix="fz", image_dtype="uint8")
    peer = PeerDataset(root / "sim", camera)
    assert len(ds) == len(peer)
    indices = random.Random(29).sample(range(len(ds)), min(args.samples, len(ds)))
    key = "observation.images." + camera
    for i in indices[:24]:  # identical values
        a, b = ds[i], peer[i]
        for name in (FORCE, SLAM, IMU, MATRIX):
            assert torch.equal(a[name], b[name]), (i, name)
        assert torch.equal(a[key], b["image"]), (i, "image")
    print(f"== FrameDataset with a camera + force + SLAM pose + IMU window ({K}) + fz plane: {len(indices)} "
          f"random samples of {len(ds)}, batches of {args.batch}; values identical on 24 samples")
    for workers in (0, 2):  # fresh datasets each time: both start with empty episode caches
        t_reel, _ = run(FrameDataset(str(root / "sim"), columns=[FORCE, SLAM, IMU, MATRIX], cameras=[camera],
                                     imu_window=K, force_matrix="fz", image_dtype="uint8"),
                        indices, args.batch, workers, reel.torch.collate)
        t_peer, _ = run(PeerDataset(root / "sim", camera), indices, args.batch, workers, None)
        print(f"  workers={workers}: reel {len(indices) / t_reel:7.1f} samples/s, peer {len(indices) / t_peer:7.1f} "
              f"samples/s, reel / peer {t_peer / t_reel:.2f}x (goal >= 3x)")


if __name__ == "__main__":
    main()
