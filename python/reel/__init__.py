"""reel: storage engine for robot-learning recordings (pooled_episodes_v1).

This package is a thin layer over the C++ core (``reel._core``)::

    import reel
    task = reel.open("data/recordings/my_task")
    task.info["fps"]                      # parsed meta/info.json
    for ep in task.episodes(): ...        # one dict per episode
    task.force_matrix(1, 0, "observation.gripper_left_force_matrix")  # (250,250,3) float32
    task.frames(1, "cam_rgb", [0, 10, 20])  # (3, H, W, 3) uint8 RGB (depth: (3, H, W) uint16 mm)
    reel.check("data/recordings")         # conformance report (reel.findings: as a list)

    # The CLI's commands, keyword arguments = the fields of the CLI's options structs:
    reel.simulate("out/t", count=2, seconds=1.0)
    reel.export("out/t", "out/lerobot", format="lerobot-v3")
    reel.import_dataset("out/lerobot", "out/back")
    reel.pack("out/t", 1, "ep1.zip")
    with reel.serve("out/server", "serve.json", port=0) as server:
        reel.upload("out/t", server=server.url, token="...")

    ds = reel.open("data/lerobot/pusht")  # LeRobot v2.x/v3.x or bundle -> reel.Dataset
    ds.episodes()[0]["length"]
    pyarrow.table(ds.data(0))             # episode 0's rows
    ds.frame_images(0, ["observation.image"], [0, 1])  # {key: (2, H, W, 3) uint8}

    with reel.VideoReader("episode-000.mp4") as v:
        v.info["frames"]                  # width, height, frames, fps, codec, pix_fmt, depth, ...
        v.read_rgb([5, 0, 5])             # (3, H, W, 3) uint8, frame i = row i of the episode
        v.read_rgb_at([0.5, 1.0])         # nearest frames to these times (s)
"""

from __future__ import annotations

import atexit
import json
import os
from typing import Any, Iterable

import numpy as np

try:
    from . import _core
except ImportError as _e:  # a pyarrow of another major.minor: its libarrow has another SO name
    if "libarrow" in str(_e) or "libparquet" in str(_e):
        raise ImportError(f"reel: the extension loads libarrow/libparquet from the installed pyarrow of the "
                          f"major.minor version it was built with (pyproject.toml: pyarrow>=M.N,<M.N+1); install "
                          f"that pyarrow "
                          f"({_e})") from _e
    raise
from ._dataset import Dataset
from ._errors import (
    AlreadyExistsError,
    CorruptionError,
    Error,
    InvalidError,
    IOError,
    NotFoundError,
    NotSupportedError,
    PermissionDeniedError,
)
from ._ops import (
    Server,
    add_columns,
    backfill_hand_pose,
    check,
    delete,
    export,
    findings,
    import_dataset,
    info,
    migrate,
    pack,
    push,
    rebuild_stats,
    repair_scale,
    serve,
    show,
    simulate,
    split_episodes,
    stats,
    upload,
    upload_status,
    write_overlay,
)
from ._ops import options_repr as _options_repr
from ._storage import STORAGE_OPTION_KEYS  # noqa: F401 - documented keys
from ._storage import storage as _storage
from ._writer import Episode, TaskWriter

__version__ = _core.__version__

# The options structs shared with the CLI (include/reel/*.h), as keyword arguments of
# export / import_dataset / pack / upload / check / simulate.
ExportOptions = _core.ExportOptions
ImportOptions = _core.ImportOptions
PackOptions = _core.PackOptions
PushOptions = _core.PushOptions
UploadOptions = _core.UploadOptions
OutboxOptions = _core.OutboxOptions
CheckOptions = _core.CheckOptions
SimulateOptions = _core.SimulateOptions
ServeConfig = _core.ServeConfig
sha256_hex = _core.sha256_hex
slot_base = _core.slot_base
allocate_slot_names = _core.allocate_slot_names
hash_password = _core.hash_password
for _cls in (ExportOptions, ImportOptions, PackOptions, PushOptions, UploadOptions, OutboxOptions, CheckOptions, SimulateOptions, ServeConfig):
    _cls.__repr__ = _options_repr

__all__ = [
    "Task", "Dataset", "ArrowStream", "VideoReader", "TaskWriter", "Episode", "open", "detect_format",
    "read_file", "export", "import_dataset", "migrate", "pack", "push", "upload", "upload_status", "check", "delete", "findings", "info", "show", "stats", "simulate", "rebuild_stats", "repair_scale", "split_episodes", "backfill_hand_pose", "add_columns", "write_overlay", "serve", "Server", "sha256_hex", "slot_base", "allocate_slot_names",
    "hash_password", "ExportOptions", "ImportOptions", "PackOptions", "PushOptions", "UploadOptions", "OutboxOptions", "CheckOptions",
    "SimulateOptions", "ServeConfig",
    "Error", "NotFoundError", "InvalidError", "CorruptionError", "PermissionDeniedError", "IOError",
    "NotSupportedError", "AlreadyExistsError",
]


# Arrow's S3 support must be finalised before the interpreter goes away (reel does it at
# C exit too; doing it here first keeps it ahead of module teardown).
atexit.register(_core.shutdown_object_stores)


def detect_format(path: str, storage_options: dict[str, Any] | None = None) -> dict[str, str]:
    """Format of the dataset at ``path`` (a path or URI): {"format", "version", "evidence"}."""
    return _core.detect_format(str(path), _storage(storage_options))


def read_file(path: str, storage_options: dict[str, Any] | None = None) -> bytes | None:
    """The whole file at a path or URI (s3://bucket/key) as bytes; None when it does not exist."""
    return _core.read_file(str(path), _storage(storage_options))


class Task:
    """A pooled_episodes_v1 task opened for reading. Reading never changes the task; it may
    refresh the task's episode index, a cache dotfile (see :func:`open`, ``episode_index``)."""

    def __init__(self, core: _core.Task, root: str | None = None,
                 storage_options: dict[str, Any] | None = None):
        """Use :func:`reel.open`; wraps an opened ``reel._core.Task``."""
        self._core = core
        self._root = root
        self._storage_options = dict(storage_options or {})
        self._info: dict[str, Any] | None = None

    @property
    def root(self) -> str:
        """The task directory or URI, as given to :func:`reel.open`."""
        return self._root if self._root is not None else self._core.root

    @property
    def storage_options(self) -> dict[str, Any]:
        """The ``storage_options`` the task was opened with (a copy)."""
        return dict(self._storage_options)

    def read_file(self, relative: str) -> bytes | None:
        """A file of the task (e.g. "meta/tasks.jsonl") as bytes; None when it does not exist."""
        return self._core.read_file(str(relative))

    @property
    def info(self) -> dict[str, Any]:
        """meta/info.json as a dict (key order kept)."""
        if self._info is None:
            self._info = json.loads(self._core.info_json())
        return self._info

    def episodes(self, episodes: Iterable[int] | None = None) -> list[dict[str, Any]]:
        """One dict per episode, sorted by N (the fields of ``reel ls --json``). ``file_group`` is
        "whole", "deleted" (the episodes row alone: deleted after upload, legal) or "partial"
        (a torn delete or lost files: videos without the data parquet, or the data parquet
        without a video slot its row declares; ``missing_files`` names what is missing, and
        ``reel check`` reports it as episode.file_group).

        With ``episodes``, only those N, in the order given, each found without listing the
        whole task (what one episode costs does not grow with the task); NotFoundError for
        an N the task does not hold."""
        return self._core.episodes(None if episodes is None else [int(n) for n in episodes])

    def data(self, episode_index: int, columns: Iterable[str] | None = None) -> "ArrowStream":
        """Episode N's data parquet as an :class:`ArrowStream` (projected to ``columns``).

        ``pyarrow.table(task.data(1))``, ``polars.from_arrow(...)`` or DuckDB read it through
        the Arrow C stream interface, without copies. A column the episode lacks raises
        NotFoundError (which columns exist is decided per episode); an episode whose data was
        deleted after upload raises NotFoundError. One column may be given as a string."""
        cols = _column_names(columns) or []
        n = int(episode_index)
        return ArrowStream(lambda: self._core.data_stream(n, cols), f"episode {n} of {self.root}")

    def frames_table(self, episodes: Iterable[int] | None = None, columns: Iterable[str] | None = None):
        """The rows of several episodes as one ``pyarrow.Table``, in the order given (default:
        every episode with data, by N): ``episode_index`` and ``frame_index`` first, then
        ``columns`` (default: all). The second stage of episodes -> filter -> frames; each
        episode is read through :meth:`data`. Raises NotFoundError for an episode without data
        or a column an episode lacks."""
        import pyarrow as pa  # noqa: PLC0415 - pyarrow is a dependency; kept out of import time

        if episodes is None:
            episodes = [e["episode_index"] for e in self.episodes() if e["has_data"]]
        cols = _column_names(columns)
        keep = None if cols is None else ["episode_index", "frame_index"] + [
            c for c in cols if c not in ("episode_index", "frame_index")]
        tables = [pa.table(self.data(int(n), keep)) for n in episodes]
        if not tables:
            return pa.table({"episode_index": pa.array([], pa.int64()), "frame_index": pa.array([], pa.int64())})
        if keep is None:
            return pa.concat_tables(tables, promote_options="default")
        return pa.concat_tables([t.select(keep) for t in tables])

    def episodes_arrow(self) -> "ArrowStream":
        """One row per episode as an :class:`ArrowStream`: episode_index, chunk, file, length,
        duration_sec, task_index, created_at, has_data, file_group, row_source, data_path, video_slots,
        video_codec, drop_stats (the episodes row's JSON strings as stored). Filter it with any
        Arrow engine, then read the kept episodes' frames with :meth:`data`."""
        return ArrowStream(self._core.episodes_stream, f"episodes of {self.root}")

    def keypoints(self, episode_index: int, keypoints: str | os.PathLike | None = None) -> dict[str, Any]:
        """Episode N's hand-keypoint files from the keypoints mirror (contract §10,
        ``keypoints_output/<task>/episode_{N:06d}/``; ``keypoints`` names the mirror folder,
        default: found beside the task or up to three levels above), each validated against
        the reference writer's schema and aligned to the episode's data by frame_index:
        {"hand_pose": pyarrow.Table | None, "hand_pose_3d": ..., "auto_labels": ...}, None for a
        file that is absent. Each table keeps the file's rows and columns (fixed-size lists as
        ``fixed_size_list``) and adds ``data_row`` (int64, the data row with the same
        frame_index) and ``timestamp`` (the data row's), both null for a keypoint row without
        a data row. Raises NotFoundError when no mirror is found, InvalidError for a file that
        breaks the schema (the message names the file, column, expected and found type)."""
        import pyarrow as pa  # noqa: PLC0415 - pyarrow is a dependency; kept out of import time

        k = self._core.keypoints_tables(int(episode_index), "" if keypoints is None else os.fspath(keypoints))
        out: dict[str, Any] = {}
        for part, capsule in k["parts"].items():
            out[part] = None if capsule is None else pa.table(ArrowStream(lambda c=capsule: c, f"{part} of episode {episode_index}"))
        return out

    def imu(self, episode_index: int) -> dict[str, np.ndarray]:
        """Episode N's IMU samples, flattened: ``row`` int64 (k,) the frame row each sample
        hangs on, ``ts_ns`` int64 (k,) (empty when the episode has no imu_ts_ns), ``values``
        float32 (k, 6). Rows may carry any number of samples (contract §7.2)."""
        return self._core.imu(int(episode_index))

    def slam(self, episode_index: int, column: str) -> dict[str, np.ndarray]:
        """A SLAM trajectory column of episode N: ``points`` float64 (k, 8) [t, x, y, z, qx,
        qy, qz, qw], ``ns`` int64 (k,) host stamps (0 = none), ``row`` int64 (k,) the row each
        point hangs on, ``frame`` int64 (k,) the frame whose hardware_ns is nearest to ns
        (multi-device §8.2.4; -1 without a stamp), within the point's clock segment (no pairing
        across a backward step of hardware_ns)."""
        return self._core.slam(int(episode_index), str(column))

    def align(self, episode_index: int, columns: str | Iterable[str] | None = None, *,
              tolerance_s: float | None = None, method: str = "nearest", canonical_gloves: bool = True):
        """Episode N's streams paired with its frames by time, as a ``pyarrow.Table`` with one
        row per data row (docs/python.md "Aligned samples"; multi-device §5.3-§5.5, §8.2.4).

        Columns: ``frame_index``, ``hardware_ns`` (the frame's time; null where 0), then per
        aligned column X: ``X`` (the paired value, null where no sample is within tolerance),
        and for a stream with a clock ``X_ns`` (the sample's time on the frame clock) and
        ``X_dt_ns`` (``X_ns - hardware_ns``), null where unpaired. Clocks: a column with a
        scalar ``X_ns`` (force, force matrix) by that stamp; a trajectory by its ``X_ns`` list
        (value ``[t, x, y, z, qx, qy, qz, qw]``); ``observation.imu`` by ``imu_ts_ns`` on the
        device clock, mapped through ``raw_hw_ns`` (the metadata's ``reel.imu_clock`` says how);
        any other fixed-size column (gloves, gripper state, hand pose) is its row's, all-zero
        rows null (no sample), the left glove in canonical order unless ``canonical_gloves`` is
        False. A stamp of 0 is "no stamp". ``columns``: default every observation.* stream.

        ``tolerance_s``: the largest |sample - frame| paired (default half a frame period).
        ``method``: "nearest" (ties go to the earlier sample) or "interpolate" (linear between
        the samples either side when at most 2 x tolerance apart, slerp for a pose's
        quaternion, else nearest; force matrices are always nearest). No sample is paired
        across a backward step of hardware_ns (metadata ``reel.clock_resets`` lists the rows).
        Raises NotFoundError for an unknown episode or column, InvalidError for a column that
        is not a stream."""
        import pyarrow as pa  # noqa: PLC0415 - pyarrow is a dependency; kept out of import time

        n = int(episode_index)
        cols = _column_names(columns) or []
        tol = 0.0 if tolerance_s is None else float(tolerance_s)
        if tolerance_s is not None and not tol > 0:
            raise InvalidError(f"tolerance_s must be a positive number of seconds, got {tolerance_s!r}")
        capsule = self._core.align_table(n, cols, tol, str(method), bool(canonical_gloves))
        return pa.table(ArrowStream(lambda: capsule, f"aligned episode {n} of {self.root}"))

    def imu_table(self, episode_index: int):
        """One row per IMU sample of episode N as a ``pyarrow.Table``: ``row`` (the data row it
        hangs on), ``imu_ts_ns`` (device clock), ``ns`` (on the frame clock, null where it
        cannot be mapped), ``frame`` (the nearest frame by time, null without stamps),
        ``dt_ns`` (``ns`` minus that frame's hardware_ns) and ``imu`` (6 float32 values). The
        schema metadata ``reel.imu_clock`` says how device time was mapped: "raw_hw_ns",
        "hardware_ns" or "row_offset" (an estimate; docs/python.md)."""
        import pyarrow as pa  # noqa: PLC0415 - pyarrow is a dependency; kept out of import time

        n = int(episode_index)
        capsule = self._core.imu_table(n)
        return pa.table(ArrowStream(lambda: capsule, f"IMU samples of episode {n} of {self.root}"))

    def slam_spec(self, episode_index: int, column: str) -> dict[str, Any]:
        """A trajectory column's coordinate frame and time declaration for episode N, by the
        contract's authority order (multi-device §7.3, §8.2.5): the episode row's
        ``slam_specs``, then info.json ``features[column]``, then ``slam_frames``, then (rig 1's
        ``observation.slam_trajectory``) ``gripper_slam_frame``, else the old frame
        "right_forward_up". {frame, frame_axes, time, owner (dicts, {} when absent), source}."""
        return self._core.slam_spec(int(episode_index), str(column))

    def imu_windows(self, episode_index: int, window: int = 16, *, max_age_s: float | None = None) -> dict[str, Any]:
        """For every frame of episode N, the ``window`` newest IMU samples at or before the
        frame's time on the frame clock (as :meth:`imu_table` maps them; none across a reset
        of hardware_ns), oldest first: ``values`` float32 (rows, K, 6), ``ns`` int64 (rows, K),
        ``valid`` bool (rows, K) (False = padding, which comes first), ``clock`` (the mapping,
        as ``reel.imu_clock``). ``max_age_s`` drops samples older than that before the frame."""
        return self._core.imu_windows(int(episode_index), int(window), float(max_age_s or 0.0))

    def force_matrices(self, episode_index: int, column: str, *, plane: str = "full", downsample: int = 1,
                       tolerance_s: float | None = None) -> dict[str, np.ndarray]:
        """A force-matrix column of episode N paired with every frame by its ``_ns`` (nearest
        within ``tolerance_s``, default half a frame period) and decoded to mN with the
        episode's own scale: ``values`` float32 (rows, 250/d, 250/d, 3), or (rows, 250/d,
        250/d) for ``plane="fz"``, averaged over d x d cells with ``downsample=d`` (a divisor
        of 250); ``valid`` bool (rows,) (False: no sample near that frame, values 0);
        ``dt_ns`` int64 (rows,) the sample's stamp minus the frame's."""
        return self._core.force_matrices(int(episode_index), str(column), str(plane), int(downsample),
                                         float(tolerance_s or 0.0))

    def force_matrix_frames(self, episode_index: int, column: str, *, plane: str = "full", downsample: int = 1,
                            tolerance_s: float | None = None) -> Any:
        """:meth:`force_matrices`, decoded on demand: the pairing is made now from the stamps
        (``.paired``, bool (rows,)), and ``.decode(rows)`` (int64, any order, repeats allowed)
        returns the same dict for those frames only, reading just the samples they pair with
        (the parquet pages that hold them, where the file has an offset index). What
        :class:`reel.torch.FrameDataset` holds per episode: a batch costs its own frames."""
        return self._core.force_matrix_frames(int(episode_index), str(column), str(plane), int(downsample),
                                              float(tolerance_s or 0.0))

    def glove(self, episode_index: int, column: str, *, canonical: bool = True) -> np.ndarray:
        """Every row of a glove column (``observation.<sensor>``) as (rows, 16, 16) float32.
        The left glove (a column whose name holds "left") is stored in the firmware's channel
        order; ``canonical=True`` returns it in the canonical [x, y] order the right glove
        already has (multi-device §4.5: ``values[::-1, ::-1].T``), False as stored."""
        return self._core.glove(int(episode_index), str(column), bool(canonical))

    def force_matrix(self, episode_index: int, row: int, column: str) -> np.ndarray | None:
        """Decoded (250, 250, 3) float32 force matrix in mN at ``row`` of ``column``, using the
        episode's own scale; None when the row holds no sample (a sparse column's ``[]`` cell,
        which is data, not an error). Raises NotFoundError for an unknown episode or column,
        InvalidError for a column that is not a force matrix or a row outside the episode."""
        return self._core.force_matrix(int(episode_index), int(row), str(column))

    def frames(self, episode_index: int, slot: str, rows: Iterable[int]) -> np.ndarray:
        """Frames ``rows`` of episode N's video for ``slot`` (an image_key, e.g. "cam_rgb").

        Row i of the episode's data is frame i of its videos; a slot with its own fps
        (``info["cameras"][slot]["fps"]``, multi-device §4.2) shows at row i its frame
        round_half_up(i * slot fps / task fps), clamped to its last frame (the collector's
        reader; a depth slot runs at its device's first camera's rate). Returns uint8 (n, H, W, 3) RGB,
        or uint16 (n, H, W) millimetres when the slot's file is a depth stream (12-bit log-code
        HEVC or FFV1). ``rows`` may be in any order and repeat. Opens the file for this call;
        for many calls on one file use :class:`VideoReader`. Raises NotFoundError for an
        unknown episode or slot (the message lists the episode's slots), InvalidError for a
        row outside the video."""
        return self._core.frames(int(episode_index), str(slot), _indices(rows))

    def slot_frames(self, slot: str, rows: Iterable[int]) -> np.ndarray:
        """The frame of ``slot``'s videos that each of ``rows`` shows, int64: the row itself at
        the task's rate; for a slot with its own fps (:meth:`slot_fps`) round_half_up(row *
        slot fps / task fps), not clamped to a file's last frame (docs/format.md "A slot with
        its own frame rate")."""
        return np.asarray(self._core.slot_frames(str(slot), _indices(rows)), dtype=np.int64)

    def slot_fps(self, slot: str) -> float:
        """The frame rate of ``slot``: ``info["cameras"][slot]["fps"]``, for a depth slot the
        rate of its device's first camera, else the task's fps."""
        return float(self._core.slot_fps(str(slot)))

    def frame_images(self, episode_index: int, slots: Iterable[str], rows: Iterable[int]) -> dict[str, np.ndarray]:
        """Frames ``rows`` of several RGB slots of episode N: {slot: uint8 (n, H, W, 3)}.
        Arguments in the order episode, slots, rows, like :meth:`frames` (the older
        ``frame_images(N, rows, slots)`` still works: the list of strings is the slots).
        Raises InvalidError for a depth slot (use :meth:`depth`)."""
        slots, rows = _names_then_rows(slots, rows, "slots")
        idx = _indices(rows)
        out = {}
        for slot in slots:
            frames = self.frames(episode_index, slot, idx)
            if frames.dtype != np.uint8:
                raise InvalidError(f"{self.root}: episode {episode_index} slot {slot!r} is a depth stream; "
                                   f"use Task.depth")
            out[slot] = frames
        return out

    def depth(self, episode_index: int, slot: str, rows: Iterable[int]) -> np.ndarray:
        """Depth frames ``rows`` of episode N's depth slot: uint16 (n, H, W) millimetres.
        Arguments in the order episode, slot, rows (``depth(N, rows, slot)`` still works).
        Raises InvalidError for an RGB slot."""
        if not isinstance(slot, str) and isinstance(rows, str):
            slot, rows = rows, slot
        frames = self.frames(episode_index, slot, rows)
        if frames.dtype != np.uint16:
            raise InvalidError(f"{self.root}: episode {episode_index} slot {slot!r} is an RGB stream, not depth")
        return frames

    def __repr__(self) -> str:
        info = self.info
        return (f"reel.Task({self.root!r}, {info.get('format')}, {info.get('total_episodes')} episodes at "
                f"{info.get('fps')} fps, cameras {list(info.get('cameras') or {})})")

    def check(self, episodes: Iterable[int] | None = None) -> list[dict[str, Any]]:
        """Conformance findings for this task; with ``episodes``, for those episodes and the
        task-level files only (``reel check --episodes``: none of the walks over the whole task,
        so it costs what those episodes cost)."""
        options = _core.CheckOptions()
        if episodes is not None:
            options.episodes = _indices(list(episodes)).tolist()
            if not options.episodes:
                raise ValueError("episodes: an empty list checks nothing (None checks every episode)")
        return findings(_core.check(self.root, options, _storage(self._storage_options)))


class ArrowStream:
    """A table exposed through the Arrow PyCapsule interface (``__arrow_c_stream__``).

    Each call of ``__arrow_c_stream__`` opens a fresh stream, so the object can be read more
    than once. The C++ core exports its record batches as they are; nothing is copied, and
    the extension does not depend on pyarrow's Python API. ``requested_schema`` is not
    supported (the stream has the file's own schema)."""

    def __init__(self, make, what: str):
        self._make = make
        self._what = what

    def __arrow_c_stream__(self, requested_schema=None):
        if requested_schema is not None:
            raise NotSupportedError(f"{self._what}: a requested_schema cast is not supported")
        return self._make()

    def to_arrow(self):
        """The whole stream as a ``pyarrow.Table`` (imports pyarrow)."""
        import pyarrow as pa
        return pa.table(self)

    def __repr__(self) -> str:
        return f"reel.ArrowStream({self._what})"


def _column_names(columns: str | Iterable[str] | None) -> list[str] | None:
    """Column names as a list; one name may come as a plain string (not iterated)."""
    if columns is None:
        return None
    if isinstance(columns, str):
        return [columns]
    return [str(c) for c in columns]


def _names_then_rows(names, rows, what: str):
    """(names, rows) from a call in either order: the names are the list of strings. A bare
    string is refused (it would be iterated letter by letter)."""
    def is_names(x):
        return not isinstance(x, (str, np.ndarray)) and isinstance(x, (list, tuple)) and bool(x) and all(
            isinstance(v, str) for v in x)

    if isinstance(names, str) or isinstance(rows, str):
        raise TypeError(f"{what} must be a list of names, not one string")
    if not is_names(names) and (is_names(rows) or (isinstance(rows, (list, tuple)) and not rows)):
        names, rows = rows, names
    return [str(v) for v in names], rows


def _indices(indices: Iterable[int]) -> np.ndarray:
    """Frame indices as the contiguous int64 array the core takes. Integers only: a float
    index is a caller's mistake, not something to round."""
    a = np.asarray(indices)
    if a.ndim != 1:
        raise TypeError(f"indices must be a 1-D sequence of ints, got an array of shape {a.shape}")
    if a.size and a.dtype.kind not in "iu":
        raise TypeError(f"indices must be ints, got {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.int64)


class VideoReader:
    """One video file opened for decoding, by frame index or by time.

    ``VideoReader(path, threads=0)`` opens the file (threads: decoder threads, 0 = chosen per
    seek by the frames the read decodes from its keyframe: frame threads for a long run,
    one thread or the codec's slice threads for a few frames; 1 = one thread always). The decoder stays open between calls: reading
    forward decodes forward, and it seeks back to a keyframe only when that is cheaper than
    decoding up to the target; :meth:`stats` counts the seeks and decoded frames. Output
    is pixel-identical to ``ffmpeg -i FILE -f rawvideo -pix_fmt rgb24 -``. Decoding releases
    the GIL; one reader serves one call at a time (use one reader per thread for parallelism).
    Errors raise :class:`reel.Error` subclasses whose message names the file: NotFoundError
    (FileNotFoundError) for a missing file, CorruptionError for an unreadable one, InvalidError
    (ValueError) for an index or time outside the video or a read of the wrong kind.
    Usable as a context manager; :meth:`close` releases the file."""

    def __init__(self, path: str, threads: int = 0, storage_options: dict[str, Any] | None = None):
        """``path``: a video file, or its URI (``s3://bucket/key.mp4``, read with ranged reads;
        ``storage_options`` as for :func:`reel.open`)."""
        self._core = _core.VideoReader.open(str(path), int(threads), _storage(storage_options))

    @property
    def path(self) -> str:
        """The video file, as given."""
        return self._core.path

    @property
    def info(self) -> dict[str, Any]:
        """{"width", "height", "frames", "fps", "codec", "pix_fmt", "depth", "time_base",
        "stream_index"}: frames counted from the packet index; fps the average frame rate;
        codec/pix_fmt native (e.g. "h264"/"yuv420p", "hevc"/"gray12le", "ffv1"/"gray16le");
        depth True for a depth stream; time_base (num, den) of the stream; stream_index the
        stream read (the FFV1 one of a dual-stream .mkv)."""
        return self._core.info

    def __len__(self) -> int:
        return int(self._core.info["frames"])

    def read_rgb(self, indices: Iterable[int]) -> np.ndarray:
        """Frames ``indices`` (any order, repeats allowed; no negative indexing) as a new uint8
        array (n, H, W, 3), RGB24, in the order asked. Raises InvalidError on a depth stream."""
        return self._core.read_rgb(_indices(indices))

    def read_depth(self, indices: Iterable[int]) -> np.ndarray:
        """Depth frames ``indices`` as a new uint16 array (n, H, W) in millimetres: 12-bit
        HEVC through the inverse log code (holes read as 100 mm), FFV1 gray16le as stored.
        Raises InvalidError on an RGB stream."""
        return self._core.read_depth(_indices(indices))

    def read_rgb_at(self, times_s: Iterable[float], tolerance_s: float | None = None) -> np.ndarray:
        """The frames nearest to each time in ``times_s`` (seconds of stream time), uint8
        (n, H, W, 3) in the order asked. Raises InvalidError naming the target when no frame
        lies within ``tolerance_s`` (default: half a frame period)."""
        t = np.ascontiguousarray(np.asarray(times_s, dtype=np.float64).reshape(-1))
        tol = -1.0 if tolerance_s is None else float(tolerance_s)
        if tolerance_s is not None and not tol >= 0:
            raise InvalidError(f"{self.path}: tolerance_s must be >= 0, got {tolerance_s}")
        return self._core.read_rgb_at(t, tol)

    def stats(self, reset: bool = False) -> dict[str, int]:
        """What the reads so far did, counted since opening (or the last ``reset=True``):
        ``requests`` (reads served), ``seeks`` (to a keyframe), ``threaded_seeks`` (of those,
        on the multi-threaded decoder: long runs), ``packets_read``, ``packets_skippable``
        (sent with non-reference frames skipped: no target needs them), ``frames_decoded``,
        ``frames_converted``, ``drains`` (reads that let their last target out without
        decoding past it). ``reset=True`` zeroes the counts after reading them."""
        return self._core.stats(bool(reset))

    def frame_time(self, index: int) -> float:
        """Presentation time of frame ``index`` in seconds (pts x time_base)."""
        return self._core.frame_time(int(index))

    def close(self) -> None:
        """Closes the file; ``info`` stays readable, reads raise InvalidError."""
        self._core.close()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._core.closed

    def __enter__(self) -> "VideoReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        i = self._core.info
        return (f"reel.VideoReader({self.path!r}, {i['codec']} {i['pix_fmt']} {i['width']}x{i['height']}, "
                f"{i['frames']} frames at {i['fps']:g} fps{', closed' if self.closed else ''})")


def open(path: str, storage_options: dict[str, Any] | None = None,  # noqa: A001
         episode_index: str = "update") -> "Task | Dataset":
    """Opens the dataset at ``path``: a :class:`Dataset` for LeRobot v2.x / v3.x and bundle
    datasets (by :func:`detect_format`), a :class:`Task` for anything else (a pooled task, or
    the error Task's open raises).

    ``path`` may be a URI: ``s3://bucket/prefix/task`` (or what Arrow's
    ``FileSystemFromUri`` accepts, e.g. ``gs://``). ``storage_options`` says how to reach it,
    as the CLI's flags do: ``{"endpoint_url": "http://127.0.0.1:9000", "region": ...,
    "anonymous": False, "connect_timeout_s": 5, "request_timeout_s": 30, "max_attempts": 3}``;
    missing keys come from $AWS_ENDPOINT_URL(_S3), $AWS_REGION / $AWS_DEFAULT_REGION and
    $AWS_ACCESS_KEY_ID / $AWS_SECRET_ACCESS_KEY (docs/storage.md).

    ``episode_index`` (a task): listing many episodes uses the task's episode index, a
    validated cache of the episodes rows and data footers (``meta/.episode_index.parquet``):
    "update" (default) also rewrites it when it was missing or stale, "read" never writes it,
    "off" reads every file."""
    p = os.fspath(path) if hasattr(path, "__fspath__") else str(path)
    so = _storage(storage_options)
    # A task first: Task.open tells the format itself and refuses every other one, so the
    # common case reads info.json once (on an object store, a format probe is 5-6 requests).
    try:
        core = _core.Task.open(p, so, episode_index)
    except NotSupportedError:
        if _core.is_foreign(p, so):
            return Dataset(p, storage_options=storage_options)
        raise
    return Task(core, root=p.rstrip("/") if _core.is_uri(p) else p, storage_options=storage_options)
