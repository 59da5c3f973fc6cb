"""The hand-written peer's pairing, shared by bench_align.py and bench_loader_streams.py: what a
team writes with numpy alone (nearest stamp within a tolerance, ties earlier, a repeated stamp
once, 0 = no stamp)."""

from __future__ import annotations

import numpy as np

TOL = 16_666_667  # half a frame period at 30 fps, in ns


def pair(frames: np.ndarray, stamps: np.ndarray, tol: int = TOL) -> np.ndarray:
    """Per frame the index into `stamps` of the nearest non-zero stamp within tol, else -1."""
    idx = np.flatnonzero(stamps)
    uniq, first = np.unique(stamps[idx], return_index=True)
    src = idx[first]
    pos = np.searchsorted(uniq, frames)
    left, right = np.clip(pos - 1, 0, len(uniq) - 1), np.clip(pos, 0, len(uniq) - 1)
    dl, dr = np.abs(frames - uniq[left]), np.abs(uniq[right] - frames)
    pick = np.where(dl <= dr, left, right)
    return np.where((np.minimum(dl, dr) <= tol) & (frames != 0), src[pick], -1)
