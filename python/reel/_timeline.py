"""Times shared by the viewer (reel.rerun) and the report (reel.report)."""

from __future__ import annotations

import numpy as np


def imu_time_s(timestamp: np.ndarray, rows: np.ndarray, ts_ns: np.ndarray) -> np.ndarray:
    """Episode-relative seconds of IMU samples: the IMU clock's own spacing, anchored at the
    row of the first sample. imu_ts_ns need not share hardware_ns's origin (a separate SDK
    clock), so no offset between the two is assumed."""
    return timestamp[rows[0]] + (ts_ns - ts_ns[0]) * 1e-9
