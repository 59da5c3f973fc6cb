"""What the viewer (reel.rerun) and the report (reel.report) share."""

from __future__ import annotations

from typing import Any

import numpy as np


def imu_time_s(timestamp: np.ndarray, rows: np.ndarray, ts_ns: np.ndarray) -> np.ndarray:
    """Episode-relative seconds of IMU samples: the IMU clock's own spacing, anchored at the
    row of the first sample. imu_ts_ns need not share hardware_ns's origin (a separate SDK
    clock), so no offset between the two is assumed."""
    return timestamp[rows[0]] + (ts_ns - ts_ns[0]) * 1e-9


def is_foreign_depth_map(task: Any, key: str) -> bool:
    """A LeRobot depth-map video key (features[key].info["video.is_depth_map"]): reel's
    foreign reader decodes RGB only, so the viewer and the report leave these out."""
    if hasattr(task, "frames"):
        return False
    import json
    raw = task.read_file("meta/info.json")  # Dataset.info keeps dtype and shape only
    try:
        feature = (json.loads(raw or b"{}").get("features") or {}).get(key) or {}
    except (ValueError, AttributeError):
        return False
    return isinstance(feature, dict) and bool((feature.get("info") or {}).get("video.is_depth_map"))
