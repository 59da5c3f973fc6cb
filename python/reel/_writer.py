"""reel.TaskWriter: the C++ recorder (include/reel/recorder.h, docs/recorder.md) for Python.

    w = reel.TaskWriter("out/pick_cup", fps=30, devices=[{"key": "usb_glove:L1", "kind": "usb_glove",
                        "name": "left glove", "slots": []}])
    with w.episode() as ep:                      # commits on success, aborts on an exception
        for i in range(90):
            ep.append(timestamp=i / 30, wall_time=t0 + i / 30, hardware_ns=ns,
                      fixed={"observation.left_glove": glove_256_floats},
                      imu=(ts_ns_array, samples_k_by_6))
    ep.committed                                 # {"episode_index", "length", "data_path"}

An aborted episode leaves none of its files; its number is recycled for the next episode
(contract §7.5). Appends, video pushes, commits and aborts release the GIL.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np

from . import _core


class Episode:
    """One episode being recorded; use it as a context manager (TaskWriter.episode())."""

    def __init__(self, core: _core.EpisodeWriter):
        """Use :meth:`TaskWriter.episode`."""
        self._core = core
        self._open = True
        self.committed: dict[str, Any] | None = None

    @property
    def episode_index(self) -> int:
        """N, chosen when the episode began (contract §2, §7.5)."""
        return self._core.episode_index

    @property
    def rows(self) -> int:
        """Rows appended so far."""
        return self._core.rows

    def append(self, *, timestamp: float, wall_time: float = 0.0, hardware_ns: int = 0,
               raw_hw_ns: int | None = None, fixed: Mapping[str, Iterable[float]] | None = None,
               scalars: Mapping[str, int] | None = None, status: Mapping[str, str] | None = None,
               imu: tuple | None = None, slam: Mapping[str, tuple] | None = None,
               force: Mapping[str, tuple] | None = None) -> None:
        """Appends one row (a frame of every video slot; a slot with its own fps only at the
        rows where its next frame is due).

        fixed: column -> float32 vector (glove [256], *_state/*_force [3], action [1], ...);
        scalars: *_ns and forensic int columns; status: status.<id> -> text;
        imu: (ts_ns int64 (k,), samples float32 (k, 6)); slam: column -> (points float64
        (k, 8) [t,x,y,z,qx,qy,qz,qw], host ns int64 (k,)); force: column -> (frame float32
        250x250x3 in mN, ns). Raises InvalidError for a name or length the contract forbids
        (the row is then not written)."""
        row: dict[str, Any] = {"timestamp": float(timestamp), "wall_time": float(wall_time),
                               "hardware_ns": int(hardware_ns), "raw_hw_ns": raw_hw_ns}
        if fixed:
            row["fixed"] = {k: _f32(v) for k, v in fixed.items()}
        if scalars:
            row["scalars"] = {k: int(v) for k, v in scalars.items()}
        if status:
            row["status"] = {k: str(v) for k, v in status.items()}
        if imu is not None:
            ts, samples = imu
            row["imu"] = (np.ascontiguousarray(ts, dtype=np.int64).reshape(-1), _f32(samples))
        if slam:
            row["slam"] = {k: (np.ascontiguousarray(p, dtype=np.float64).reshape(-1),
                               np.ascontiguousarray(ns, dtype=np.int64).reshape(-1)) for k, (p, ns) in slam.items()}
        if force:
            row["force"] = {k: (_f32(frame), int(ns)) for k, (frame, ns) in force.items()}
        self._core.append(row)

    def push_rgb(self, slot: str, rgb: np.ndarray) -> None:
        """The slot's latest RGB frame, uint8 (H, W, 3); written at the next append."""
        self._core.push_rgb(slot, np.ascontiguousarray(rgb, dtype=np.uint8))

    def push_depth(self, slot: str, mm: np.ndarray) -> None:
        """The slot's latest depth frame, uint16 (H, W) millimetres (0 = no depth)."""
        self._core.push_depth(slot, np.ascontiguousarray(mm, dtype=np.uint16))

    def count_drop(self, key: str, n: int = 1) -> None:
        """Counts samples the caller had to drop into the episode's drop_stats[key]."""
        self._core.count_drop(key, int(n))

    def commit(self) -> dict[str, Any]:
        """Writes every file of the episode and the task files atomically."""
        self._open = False
        self.committed = self._core.commit()
        return self.committed

    def abort(self) -> None:
        """Discards the episode: no file of it remains, its number is recycled."""
        if self._open:
            self._open = False
            self._core.abort()

    def __enter__(self) -> "Episode":
        return self

    def __repr__(self) -> str:
        state = "committed" if self.committed is not None else ("open" if self._open else "aborted")
        return f"reel.Episode(episode_index={self.episode_index}, rows={self._core.rows}, {state})"

    def __exit__(self, exc_type, exc, tb) -> bool:
        if not self._open:
            return False
        if exc_type is not None:
            self.abort()
            return False
        self.commit()
        return False


class TaskWriter:
    """Opens (creating if new) a pooled task for recording.

    Keyword options mirror TaskWriterOptions (include/reel/recorder.h): task_name, fps,
    app_version, devices [{key, kind, name, slots, calibration_json}], force_matrix_tiers
    {column: "int16" | "int16x10" | "int16x100" | "int16x1000" | "float32"},
    slam_trajectories [{column, frame, frame_axes_json, time_json, owner_json, source_slot}],
    progress_watermark, row_group_rows, row_group_bytes, and video {slots: [{slot, width,
    height, depth, master_slot, fps}], codec, preset, crf, gop, depth_ffv1, keep_task_depth_codec,
    depth_preset, queue_drop, queue_frames}. An unknown option (also inside ``video``) raises TypeError naming the known
    ones."""

    def __init__(self, root: str, **options: Any):
        self._core = _core.TaskWriter.open(str(root), dict(options))

    @property
    def root(self) -> str:
        """The task directory."""
        return self._core.root

    def episode(self, n: int | None = None, replace: bool = False) -> Episode:
        """Begins an episode: a new N chosen under the task lock, or, with ``n``, that number
        recorded again (contract §6.1; docs/recorder.md "Re-recording a number"): one whose data
        was deleted, or a live one with ``replace=True`` (its old files replaced in the commit;
        stats.json keeps counting N once). Raises for a live N without ``replace`` or a number
        never recorded."""
        if replace and n is None:
            raise TypeError("episode(replace=True) needs the number to re-record: episode(n, replace=True)")
        return Episode(self._core.begin_episode(None if n is None else int(n), bool(replace)))

    def __repr__(self) -> str:
        return f"reel.TaskWriter({self.root!r})"


def _f32(v) -> np.ndarray:
    return np.ascontiguousarray(v, dtype=np.float32).reshape(-1)
