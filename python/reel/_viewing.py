"""What the viewer (reel.rerun) and the report (reel.report) share."""

from __future__ import annotations

from typing import Any

import numpy as np


def imu_time_s(timestamp: np.ndarray, rows: np.ndarray, ts_ns: np.ndarray) -> np.ndarray:
    """Episode-relative seconds of IMU samples: the IMU clock's own spacing, anchored at the
    row of the first sample. imu_ts_ns need not share hardware_ns's origin (a separate SDK
    clock), so no offset between the two is assumed."""
    return timestamp[rows[0]] + (ts_ns - ts_ns[0]) * 1e-9


def decode_frames(task: Any, n: int, slot: str, rows: list[int]) -> np.ndarray | None:
    """Rows of a slot's video: a Task's RGB (uint8) or depth (uint16 mm) frames, a foreign
    dataset's RGB frames; None for a foreign dataset's depth stream, which its reader does not
    decode (LeRobot / bundle depth maps): the viewer and the report leave those out."""
    if hasattr(task, "frames"):
        return task.frames(n, slot, rows)
    from ._errors import InvalidError
    try:
        return task.frame_images(n, [slot], rows)[slot]
    except InvalidError as e:
        if "depth stream" in str(e):
            return None
        raise
