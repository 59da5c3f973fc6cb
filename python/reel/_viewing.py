"""What the viewer (reel.rerun) and the report (reel.report) share."""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any, Iterator

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


def float_rows(table: Any, name: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(rows, values (k, width) float64) of a float column or a fixed-size float list column,
    null rows left out; None for any other type."""
    import pyarrow as pa
    col = table[name].combine_chunks()
    valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_floating(col.type):  # a plain float column (a LeRobot export's action)
        values = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64).reshape(-1, 1)
        return np.nonzero(valid)[0], values[valid]
    if not pa.types.is_fixed_size_list(col.type) or not pa.types.is_floating(col.type.value_type):
        return None
    width = col.type.list_size
    # .values is the whole child array (slots under null rows included), from the offset on.
    flat = col.values.to_numpy(zero_copy_only=False)[col.offset * width:(col.offset + len(col)) * width]
    return np.nonzero(valid)[0], np.asarray(flat, dtype=np.float64).reshape(len(col), width)[valid]


def episode_findings(findings: list[dict[str, Any]], entry: dict[str, Any],
                     with_task_metadata: bool = False) -> list[dict[str, Any]]:
    """The check findings about one episode: its data or video files, or naming it; with
    `with_task_metadata`, meta/info.json's findings too."""
    videos = entry.get("videos") or {}
    files = {str(entry.get("data_path") or "")} | {v if isinstance(v, str) else str(v.get("path", ""))
                                                   for v in (videos.values() if isinstance(videos, dict) else [])}
    files.discard("")
    tag = f"episode {entry['episode_index']}"
    return [f for f in findings if any(str(f.get("path", "")).endswith(p) for p in files)
            or tag in str(f.get("message", ""))
            or (with_task_metadata and str(f.get("path", "")).startswith("meta/info.json"))]


@contextlib.contextmanager
def written_whole(output: str) -> Iterator[str]:
    """A fresh temp beside `output` for the block to write (mkstemp: O_CREAT | O_EXCL, never a
    predictable name that a link placed beside it could redirect; mode 0644, as open() would
    give), renamed over `output` when the block ends and removed when it raises: nobody sees a
    partial file, and an older one stays whole until then (report, view --save)."""
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(output)}.", suffix=".tmp",
                                dir=os.path.dirname(os.path.abspath(output)))
    try:
        os.fchmod(fd, 0o644)
        os.close(fd)
        yield temp
        os.replace(temp, output)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
