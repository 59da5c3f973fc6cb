"""The keypoints mirror's hand_pose_3d files (contract §10), written with pyarrow from the
contract's description: shared by the keypoints, contract-writer and CLI-vs-Python tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def landmarks(seed: int) -> list:
    return np.random.default_rng(seed).normal(0.0, 0.1, 63).astype(np.float32).tolist()


ZERO = [0.0] * 63


def write_3d(path: Path, rows: list, label_type=pa.string(), width: int = 63) -> None:
    """rows: (frame, (present0, label0, seed0), (present1, label1, seed1))."""
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = {"frame_index": pa.array([r[0] for r in rows], pa.int32())}
    for h in (0, 1):
        cols[f"hand_{h}_present"] = pa.array([r[1 + h][0] for r in rows], pa.bool_())
        lm = [(landmarks(r[1 + h][2]) if r[1 + h][2] is not None else ZERO)[:width] + [0.0] * max(0, width - 63)
              for r in rows]
        cols[f"hand_{h}_landmarks_3d"] = pa.array(lm, pa.list_(pa.float32(), width))
        labels = [r[1 + h][1] for r in rows]
        cols[f"hand_{h}_label"] = pa.array(labels if label_type == pa.string() else [len(x) for x in labels], label_type)
    pq.write_table(pa.table(cols), path)


def ep_dir(mirror: Path, n: int) -> Path:
    return mirror / f"episode_{n:06d}"
