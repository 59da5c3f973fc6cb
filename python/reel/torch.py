"""reel.torch: a map-style PyTorch dataset shaped like LeRobot's ``LeRobotDataset``, over one
or many pooled tasks, LeRobot v2.x/v3.x datasets or bundles.

    from reel.torch import FrameDataset
    ds = FrameDataset(["data/pick_cup", "data/place_cup"],          # every column, every camera
                      delta_timestamps={"observation.gripper_state": [-0.1, 0.0],
                                        "observation.images.stereo_left": [-0.1, 0.0]})
    ds.meta.fps, ds.meta.features, ds.meta.stats, ds.meta.episodes, ds.meta.tasks
    loader = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True, num_workers=2)

docs/python.md has the table of what maps to what in ``LeRobotDataset``.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa

# Imported here, not lazily by the first column conversion (0.3 s): forked DataLoader workers
# inherit it instead of each paying it on its first batch.
import pyarrow.compute  # noqa: F401
import torch

import reel
from reel import _core
from reel._names import IMAGE_PREFIX, camera_key, pooled_tasks
from reel._sparse import read_filling
from reel._storage import storage as _storage

# Always in a sample; never one of the default columns.
_BOOKKEEPING = ("timestamp", "frame_index", "episode_index", "index", "task_index")

__all__ = ["FrameDataset", "DatasetMeta", "collate", "camera_key", "IMAGE_PREFIX"]


class DatasetMeta:
    """The dataset-level metadata of a :class:`FrameDataset`, shaped like LeRobot's
    ``LeRobotDatasetMetadata``.

    Attributes: ``fps``; ``robot_type``; ``features`` {key: {dtype, shape, names}} for the
    returned columns and cameras (cameras: dtype "video", shape [H, W, 3]) and the bookkeeping
    keys; ``stats`` {key: {"mean", "std", "min", "max", "count"} numpy arrays} from each source's
    stats (pooled meta/stats.json; several sources are aggregated count-weighted, population
    variance); ``episodes`` (one dict per kept episode: dataset_index, root, episode_index,
    length, tasks, dataset_from_index, dataset_to_index); ``tasks`` (task strings by task_index);
    ``total_episodes``, ``total_frames``, ``camera_keys``, ``video_keys``, ``roots``, ``info``
    (the first source's info dict)."""

    def __init__(self, **fields: Any):
        self.__dict__.update(fields)

    @property
    def shapes(self) -> dict[str, tuple]:
        """{key: shape} of every feature (LeRobotDatasetMetadata.shapes)."""
        return {k: tuple(v["shape"]) for k, v in self.features.items()}

    @property
    def names(self) -> dict[str, Any]:
        """{key: names} of every feature (LeRobotDatasetMetadata.names)."""
        return {k: v.get("names") for k, v in self.features.items()}

    def __repr__(self) -> str:
        return (f"reel.torch.DatasetMeta(fps={self.fps:g}, {self.total_episodes} episodes, {self.total_frames} frames, "
                f"{len(self.tasks)} tasks, cameras={self.camera_keys}, features={list(self.features)})")


class _Source:
    """One path as the dataset reads it: a pooled task or a reel.Dataset (LeRobot, bundle)."""

    def __init__(self, path: str, storage_options: dict[str, Any] | None = None):
        self.path = path
        opened = reel.open(path, storage_options)
        self.pooled = isinstance(opened, reel.Task)
        self.info = opened.info
        self.fps = float(self.info.get("fps") or 0)
        if self.pooled:
            self.tasks = pooled_tasks(opened)
            rows = {int(r["episode_index"]): r for r in pa.table(opened.episodes_arrow()).to_pylist()}
            declared = self.info.get("cameras") or {}
            cameras = {c: (int(v["height"]), int(v["width"])) for c, v in declared.items()}
            self.cameras = {IMAGE_PREFIX + c: hw for c, hw in cameras.items()}
            # A slot with its own fps (multi-device §4.2) maps rows to frames (reel.Task.frames).
            own_rate = {IMAGE_PREFIX + c for c in declared if opened.slot_fps(c) != self.fps}
            self.episodes = []
            for e in opened.episodes():
                n = int(e["episode_index"])
                if not e["has_data"] or not e["length"]:
                    continue
                ti = rows.get(n, {}).get("task_index")
                self.episodes.append({
                    "episode_index": n, "length": int(e["length"]),
                    "tasks": [self.tasks[ti]] if ti is not None and 0 <= ti < len(self.tasks) else [],
                    "videos": {IMAGE_PREFIX + s: None if IMAGE_PREFIX + s in own_rate else f"{opened.root}/{rel}"
                               for s, rel in e["videos"].items()}})
            self.stats = _read_stats(opened.read_file("meta/stats.json"))
        else:
            self.tasks = [str(t) for t in self.info.get("tasks") or []]
            features = self.info.get("features") or {}
            self.cameras = {}
            for key in self.info.get("video_keys") or []:
                if key.startswith("observation.depth."):
                    continue  # depth videos are not decoded for LeRobot datasets yet
                shape = (features.get(key) or {}).get("shape") or [0, 0, 3]
                self.cameras[key] = (int(shape[0]), int(shape[1]))
            self.episodes = [{"episode_index": int(e["episode_index"]), "length": int(e["length"]),
                              "tasks": list(e.get("tasks") or []), "videos": {k: None for k in e.get("videos", {})}}
                             for e in opened.episodes() if int(e["length"])]
            self.stats = _read_stats(opened.read_file("meta/stats.json"))
        self.storage_options = storage_options

    def schema(self, episode_index: int) -> pa.Schema:
        return pa.RecordBatchReader.from_stream(reel.open(self.path, self.storage_options).data(episode_index)).schema


def _read_stats(raw_bytes: bytes | None) -> dict[str, dict[str, np.ndarray]]:
    """stats.json's bytes {feature: {stat: value}} as numpy arrays; {} when there is none."""
    if raw_bytes is None:
        return {}
    try:
        raw = json.loads(raw_bytes.decode("utf-8"))
    except ValueError:
        return {}
    if not isinstance(raw, dict):
        return {}
    out = {}
    for key, stats in raw.items():
        if isinstance(stats, dict):
            out[key] = {k: np.asarray(v) for k, v in stats.items()
                        if k in ("mean", "std", "min", "max", "count") and v is not None}
    return out


def _aggregate_stats(all_stats: list[dict[str, dict[str, np.ndarray]]]) -> dict[str, dict[str, np.ndarray]]:
    """LeRobot's aggregation: count-weighted mean, parallel-variance std, elementwise min/max."""
    out = {}
    keys = [k for k in all_stats[0] if all(k in s for s in all_stats)] if all_stats else []
    for key in keys:
        parts = [s[key] for s in all_stats]
        if len(parts) == 1:
            out[key] = dict(parts[0])
            continue
        if not all({"mean", "std", "count"} <= set(p) for p in parts):
            continue
        n = np.array([float(np.asarray(p["count"]).reshape(-1)[0]) for p in parts])
        means = [np.asarray(p["mean"], np.float64) for p in parts]
        total = n.sum()
        if not total > 0:
            continue
        mean = sum(w * m for w, m in zip(n, means)) / total
        var = sum(w * (np.asarray(p["std"], np.float64) ** 2 + (m - mean) ** 2) for w, p, m in zip(n, parts, means)) / total
        agg = {"mean": mean, "std": np.sqrt(var), "count": np.array([int(total)])}
        if all("min" in p for p in parts):
            agg["min"] = np.minimum.reduce([np.asarray(p["min"]) for p in parts])
        if all("max" in p for p in parts):
            agg["max"] = np.maximum.reduce([np.asarray(p["max"]) for p in parts])
        out[key] = agg
    return out


class FrameDataset(torch.utils.data.Dataset):
    """A map-style dataset of frames, shaped like LeRobot's ``LeRobotDataset``.

    ``FrameDataset(tasks, columns=None, cameras=None, delta_timestamps=None, episodes=None,
    image_transforms=None, tolerance_s=1e-4, image_dtype="float32", cache_episodes=8,
    storage_options=None, decode_threads=0)``

    - ``tasks``: one path or a list: pooled tasks, LeRobot v2.x/v3.x datasets or bundles
      (anything :func:`reel.open` reads), local or URIs (``s3://bucket/prefix/task``).
    - ``storage_options``: how to reach URIs, as for :func:`reel.open` (a dict; it pickles to
      the workers, which open the URIs themselves).
    - ``columns``: data columns to return; None = every numeric column (fixed-size vectors and
      numbers) of the first episode, [] = none.
    - ``cameras``: None = every RGB camera (pooled: info.json ``cameras``; LeRobot: its video
      keys), [] = none. A camera is named ``observation.images.<slot>`` (LeRobot's naming, also
      reel.daft's); the bare slot name is accepted as an alias.
    - ``delta_timestamps``: LeRobot's {key: [offsets in s]}; each offset must be a whole number
      of frame periods within ``tolerance_s`` (LeRobot's check, InvalidError otherwise).
    - ``episodes``: {source position: [episode_index, ...]} to keep (default every one with data).
    - ``image_transforms``: a callable applied to each camera's tensor (as LeRobot does).
    - ``image_dtype``: "float32" (C, H, W) in [0, 1] (LeRobot's; value / 255 in float32) or
      "uint8" (C, H, W), written by the decoder straight into the batch tensor either way.
    - ``decode_threads``: C++ threads that decode a batch's frames (0 = the cores, divided
      among the DataLoader's workers).

    Batches: torch's DataLoader calls :meth:`__getitems__` with a batch's indices, which
    decodes every frame of the batch in one call (per file its distinct frames in ascending
    order, files spread over ``decode_threads`` threads with the GIL released) into one tensor
    per camera; pass ``collate_fn=reel.torch.collate`` to receive those tensors without the
    copy ``default_collate`` makes. ``ds[i]`` is a batch of one. A camera has one frame size in
    the whole dataset (``meta.features``); a video of another size raises InvalidError.

    A sample (row i of an episode = frame i of its videos): each column as a tensor (vectors
    float32 (dim,), numbers at their type, ()); each camera (C, H, W); ``timestamp``,
    ``frame_index``, ``episode_index``, ``index`` (global sample index), ``task_index`` (into
    ``meta.tasks``), ``task`` (the task string) and ``dataset_index`` (which of ``tasks``).
    With ``delta_timestamps`` a key gets a leading axis, one entry per offset: the frame nearest
    to timestamp + offset in the same episode, and ``<key>_is_pad`` (True where that lies
    outside the episode; the value is then the edge frame).

    Workers and processes: nothing is open after construction; files and decoders are opened
    lazily per process (keyed by the process id), so a dataset used in the parent (``ds[0]``)
    is safe in forked DataLoader workers, and it pickles for ``multiprocessing_context="spawn"``.
    ``meta`` (:class:`DatasetMeta`) holds fps, features, stats, episodes and tasks."""

    def __init__(self, tasks: str | Sequence[str], columns: Iterable[str] | None = None,
                 cameras: Iterable[str] | None = None,
                 delta_timestamps: Mapping[str, Sequence[float]] | None = None,
                 episodes: Mapping[int, Iterable[int]] | None = None, cache_episodes: int = 8,
                 image_transforms: Callable[[torch.Tensor], torch.Tensor] | None = None,
                 tolerance_s: float = 1e-4, image_dtype: str = "float32",
                 storage_options: dict[str, Any] | None = None, decode_threads: int = 0,
                 imu_window: int = 16, force_matrix: str = "fz", force_matrix_downsample: int = 1,
                 align_tolerance_s: float | None = None, canonical_gloves: bool = True):
        if image_dtype not in ("float32", "uint8"):
            raise TypeError(f"image_dtype must be 'float32' or 'uint8', got {image_dtype!r}")
        if force_matrix not in ("fz", "full"):
            raise TypeError(f"force_matrix must be 'fz' or 'full', got {force_matrix!r}")
        if int(imu_window) < 1:
            raise TypeError(f"imu_window must be at least 1, got {imu_window!r}")
        self.imu_window = int(imu_window)
        self.force_matrix = force_matrix
        self.force_matrix_downsample = int(force_matrix_downsample)
        self.align_tolerance_s = None if align_tolerance_s is None else float(align_tolerance_s)
        self.canonical_gloves = bool(canonical_gloves)
        self.tasks = [str(tasks)] if isinstance(tasks, (str, bytes)) or hasattr(tasks, "__fspath__") else [
            str(t) for t in tasks]
        self.image_transforms = image_transforms
        self.image_dtype = image_dtype
        self.decode_threads = int(decode_threads)
        self.tolerance_s = float(tolerance_s)
        self.cache_episodes = int(cache_episodes)
        # A plain dict: it pickles to DataLoader workers, which open the URIs themselves.
        self.storage_options = dict(storage_options or {})
        sources = [_Source(p, self.storage_options) for p in self.tasks]
        # The index, built once: (source, N, length, video paths) per kept episode and cumulative
        # starts, so workers never list a task again.
        self._episodes: list[tuple[int, int, int]] = []
        self._videos: dict[tuple[int, int], dict[str, str | None]] = {}
        self._episode_task: list[int] = []
        task_strings: list[str] = []
        meta_episodes = []
        start = 0
        for si, src in enumerate(sources):
            keep = None if episodes is None else set(int(n) for n in episodes.get(si, ()))
            for e in src.episodes:
                if keep is not None and e["episode_index"] not in keep:
                    continue
                self._episodes.append((si, e["episode_index"], e["length"]))
                self._videos[(si, e["episode_index"])] = e["videos"]
                task = e["tasks"][0] if e["tasks"] else ""
                if task not in task_strings:
                    task_strings.append(task)
                self._episode_task.append(task_strings.index(task))
                meta_episodes.append({"dataset_index": si, "root": src.path, "episode_index": e["episode_index"],
                                      "length": e["length"], "tasks": e["tasks"], "dataset_from_index": start,
                                      "dataset_to_index": start + e["length"]})
                start += e["length"]
        self._starts = np.cumsum([0] + [e[2] for e in self._episodes]).tolist()
        self._task_strings = task_strings
        self._pooled = [s.pooled for s in sources]

        all_cameras: dict[str, tuple[int, int]] = {}
        for s in sources:
            for k, hw in s.cameras.items():
                all_cameras.setdefault(k, hw)
        if cameras is None:
            self.cameras = list(all_cameras)
        else:
            self.cameras = [camera_key(c) for c in cameras]
            unknown = [c for c in self.cameras if c not in all_cameras]
            if unknown:
                raise reel.NotFoundError(f"{', '.join(self.tasks)}: no camera {unknown} (cameras: "
                                         f"{', '.join(all_cameras) or 'none'})")
        schema = sources[self._episodes[0][0]].schema(self._episodes[0][1]) if self._episodes else pa.schema([])
        # Types of the first episode's columns: another episode lacking one of them (a sparse
        # column it never supplied) reads as the contract's "no sample" value (reel._sparse).
        self._fields = {f.name: f for f in schema}
        if columns is None:
            self.columns = [f.name for f in schema if f.name not in _BOOKKEEPING and _numeric(f.type)]
        else:
            self.columns = [str(c) for c in columns]
        sensors = set(sources[0].info.get("sensors") or []) if sources else set()
        # How each column is read (docs/python.md "Aligned samples"): "plain" (its row's
        # value, as stored) or one of the streams paired with the frame by time.
        self._kinds = {name: (_stream_kind(name, schema, sensors) if sources and sources[0].pooled else "plain")
                       for name in self.columns}
        self.delta_timestamps = {k: [float(d) for d in v] for k, v in (delta_timestamps or {}).items()}
        known = set(self.columns) | set(self.cameras)
        fps = sources[0].fps if sources else 0.0
        for key, deltas in self.delta_timestamps.items():
            if key not in known:
                raise reel.InvalidError(f"delta_timestamps names {key!r}, which is neither a requested column "
                                        f"nor observation.images.<camera> of a requested camera")
            for d in deltas:
                if fps and abs(d * fps - round(d * fps)) / fps > self.tolerance_s:
                    raise reel.InvalidError(f"delta_timestamps[{key!r}] offset {d} s is not a whole number of frames "
                                            f"at {fps:g} fps within tolerance_s={self.tolerance_s:g}")

        features: dict[str, dict[str, Any]] = {}
        side = 250 // max(1, self.force_matrix_downsample)
        stream_shapes = {"imu": [self.imu_window, 6], "slam": [8],
                         "force_matrix": [side, side] if self.force_matrix == "fz" else [side, side, 3]}
        for name in self.columns:
            f = schema.field(name) if name in schema.names else None
            kind = self._kinds.get(name)
            if kind in stream_shapes:
                features[name] = {"dtype": "float32", "shape": stream_shapes[kind], "names": None}
            elif f is not None and pa.types.is_fixed_size_list(f.type):
                features[name] = {"dtype": "float32", "shape": [f.type.list_size], "names": None}
            elif f is not None:
                features[name] = {"dtype": _dtype_name(f.type), "shape": [1], "names": None}
        for cam in self.cameras:
            h, w = all_cameras[cam]
            features[cam] = {"dtype": "video", "shape": [h, w, 3], "names": ["height", "width", "channels"]}
        for name, dtype in (("timestamp", "float32"), ("frame_index", "int64"), ("episode_index", "int64"),
                            ("index", "int64"), ("task_index", "int64")):
            features[name] = {"dtype": dtype, "shape": [1], "names": None}
        stats = _aggregate_stats([s.stats for s in sources]) if sources else {}
        self.meta = DatasetMeta(
            fps=fps, robot_type=(sources[0].info.get("robot_type") if sources else None), features=features,
            stats=stats,
            episodes=meta_episodes, tasks=task_strings, total_episodes=len(self._episodes),
            total_frames=self._starts[-1], camera_keys=list(self.cameras), video_keys=list(self.cameras),
            roots=list(self.tasks), info=sources[0].info if sources else {})
        self._reset_process_state()

    # ---- per-process state (never pickled; reopened in every new process) ----

    def _reset_process_state(self) -> None:
        self._pid = os.getpid()
        self._open: dict[int, Any] = {}
        self._decoded: OrderedDict = OrderedDict()
        self._pool = None  # reel._core.FramePool, made on the first batch of this process
        self._frames_memory = _FramesMemory(2 * len(self.cameras) + 2)

    def _check_process(self) -> None:
        # A forked child inherits the parent's open decoders, which share file positions with
        # the parent's and each other's: drop them (without closing: the parent still uses them).
        if self._pid != os.getpid():
            self._reset_process_state()

    def __getstate__(self):
        state = self.__dict__.copy()
        for k in ("_open", "_decoded", "_pool", "_pid", "_frames_memory"):
            state.pop(k)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._reset_process_state()

    def _source(self, si: int):
        if si not in self._open:
            self._open[si] = reel.open(self.tasks[si], self.storage_options)
        return self._open[si]

    def _episode_columns(self, si: int, n: int) -> dict[str, np.ndarray]:
        key = (si, n)
        if key in self._decoded:
            self._decoded.move_to_end(key)
            return self._decoded[key]
        plain = [c for c in self.columns if self._kinds.get(c, "plain") == "plain"]
        names = ["timestamp", "frame_index", *[c for c in plain if c not in ("timestamp", "frame_index")]]
        streams = [c for c in self.columns if self._kinds.get(c, "plain") != "plain"]
        if streams and "hardware_ns" not in names:
            names.append("hardware_ns")
        if all(name in self._fields for name in names):
            table = read_filling(self._source(si), n, [self._fields[name] for name in names])
        else:
            table = pa.table(self._source(si).data(n, names))
        out = {name: _to_numpy(table.column(name), name, self.tasks[si], n) for name in table.column_names}
        if streams:
            out.update(self._stream_columns(si, n, streams, len(out["frame_index"])))
        self._decoded[key] = out
        while len(self._decoded) > self.cache_episodes:
            self._decoded.popitem(last=False)
        return out

    def _stream_columns(self, si: int, n: int, streams: list[str], rows: int) -> dict[str, np.ndarray]:
        """Each stream column of episode N paired with its frames by time, and its
        ``_is_pad`` (True: no sample of it near the frame), through the reel.Task calls."""
        task = self._source(si)
        if not isinstance(task, reel.Task):
            raise reel.InvalidError(f"{self.tasks[si]}: column(s) {streams} are time-stamped streams of a pooled "
                                    f"task; this source is a {type(task).__name__}")
        present = set(pa.RecordBatchReader.from_stream(task.data(n)).schema.names)
        out: dict[str, np.ndarray] = {}
        tol = self.align_tolerance_s
        simple = [c for c in streams if self._kinds[c] in ("stamped", "slam", "glove") and c in present]
        aligned = task.align(n, simple, tolerance_s=tol, canonical_gloves=self.canonical_gloves) if simple else None
        for name in streams:
            kind = self._kinds[name]
            if name not in present:  # a sparse column this episode never supplied: no sample anywhere
                shape = self._meta_shape(name)
                out[name] = np.zeros((rows, *shape), dtype=np.float32)
                out[f"{name}_is_pad"] = np.ones((rows, *shape[:1]) if kind == "imu" else rows, dtype=bool)
            elif kind == "imu":
                w = task.imu_windows(n, self.imu_window)
                out[name], out[f"{name}_is_pad"] = w["values"], ~w["valid"]
            elif kind == "force_matrix":  # decoded per batch, its own frames only (_take)
                m = task.force_matrix_frames(n, name, plane=self.force_matrix,
                                             downsample=self.force_matrix_downsample, tolerance_s=tol)
                out[name], out[f"{name}_is_pad"] = _LazyFrames(m), ~m.paired
            else:
                column = aligned.column(name).combine_chunks()
                pad = column.is_null().to_numpy(zero_copy_only=False)
                width = column.type.list_size
                # The child array holds every slot, zeros under a null (reel writes them so).
                flat = column.values.to_numpy(zero_copy_only=False)[column.offset * width:(column.offset + rows) * width]
                out[name] = flat.astype(np.float32, copy=False).reshape(rows, width)
                if kind != "glove":
                    out[f"{name}_is_pad"] = pad
        return out

    def _meta_shape(self, name: str) -> tuple:
        """The shape meta.features gives column `name` (a sample's value)."""
        return tuple(self.meta.features[name]["shape"]) if hasattr(self, "meta") else ()

    def _source_frames(self, si: int, n: int, camera: str, rows: np.ndarray) -> np.ndarray:
        """Frames of `rows` decoded by the source itself: a LeRobot Dataset (by key), or a pooled
        task for a slot with its own fps (by slot name; reel.Task.frames maps rows to frames)."""
        source = self._source(si)
        name = camera[len(IMAGE_PREFIX):] if isinstance(source, reel.Task) else camera
        return source.frame_images(n, [name], rows)[name]

    def _video_path(self, si: int, n: int, camera: str) -> str | None:
        """The pooled episode's video file of `camera`, whose frame i is row i (None when the
        source decodes the frames: a LeRobot source, or a slot with its own fps)."""
        videos = self._videos[(si, n)]
        if camera not in videos:
            raise reel.NotFoundError(f"{self.tasks[si]}: episode {n} has no video for camera {camera!r} "
                                     f"(its cameras: {', '.join(sorted(videos)) or 'none'})")
        return videos[camera]

    def _frame_pool(self):
        if self._pool is None:
            threads = self.decode_threads
            info = torch.utils.data.get_worker_info()
            if not threads:
                # The cores, shared among the DataLoader's workers.
                threads = max(1, (os.cpu_count() or 1) // (info.num_workers if info is not None else 1))
            # Readers kept open: a few files per camera, each read by up to `threads` jobs at once
            # (FramePool cuts a file at its keyframes when a batch spans few files).
            self._pool = _core.FramePool(threads, max(8, 4 * len(self.cameras)) * threads,
                                         _storage(self.storage_options))
        return self._pool

    # ---- Dataset ----

    def __len__(self) -> int:
        return self._starts[-1]

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.__getitems__([index])[0]

    def __getitems__(self, indices: Sequence[int]) -> list[dict[str, Any]]:
        """The samples ``indices`` (any order, repeats allowed), in the order asked: what
        torch's DataLoader calls with a batch's indices. Each key's values are the rows of one
        batch tensor (a sample holds views), which :func:`collate` hands over without a copy;
        the frames of every camera are decoded by one reel._core.FramePool call (its C++
        threads, the GIL released): per video file its distinct frames in ascending order, no
        frame decoded twice, written straight into the batch tensors as ``image_dtype``."""
        self._check_process()
        idx = np.array([int(i) for i in indices], dtype=np.int64).reshape(-1)
        bad = (idx < -len(self)) | (idx >= len(self))
        if bad.any():
            raise IndexError(f"index {int(idx[bad][0])} outside [0, {len(self)})")
        idx = np.where(idx < 0, idx + len(self), idx)
        eps = np.searchsorted(self._starts, idx, side="right") - 1
        rows = idx - np.asarray(self._starts, dtype=np.int64)[eps]
        where = [(self._episodes[e][0], self._episodes[e][1], int(r)) for e, r in zip(eps.tolist(), rows.tolist())]
        cols = {(si, n): self._episode_columns(si, n) for si, n, _ in where}
        task_index = np.array([self._episode_task[e] for e in eps.tolist()], dtype=np.int64)
        batch: dict[str, Any] = {
            "index": torch.from_numpy(idx),
            "dataset_index": torch.tensor([si for si, _, _ in where], dtype=torch.int64),
            "episode_index": torch.tensor([n for _, n, _ in where], dtype=torch.int64),
            "frame_index": torch.tensor([int(cols[(si, n)]["frame_index"][r]) for si, n, r in where], dtype=torch.int64),
            "timestamp": torch.tensor([float(cols[(si, n)]["timestamp"][r]) for si, n, r in where], dtype=torch.float32),
            "task_index": torch.from_numpy(task_index),
        }
        for name in self.columns:
            if name not in ("timestamp", "frame_index"):
                self._batch_column(name, where, cols, batch)
        self._batch_frames(where, cols, batch)
        # The rows of every batch tensor, made in one call per key (unbind: the same views as
        # values[i]); "task" follows "task_index" as in LeRobot's samples.
        keys = list(batch)
        rows = _BatchRows(batch, {key: batch[key].unbind(0) for key in keys})
        at = keys.index("task_index") + 1
        keys.insert(at, "task")
        tasks = [self._task_strings[ti] for ti in task_index.tolist()]
        per_key = [rows.rows[k] for k in keys[:at]] + [tasks] + [rows.rows[k] for k in keys[at + 1:]]
        samples = [_Sample(zip(keys, values)) for values in zip(*per_key)]
        for sample in samples:
            sample._batch = rows
        if self.image_transforms is not None:
            for sample in samples:
                for cam in self.cameras:
                    sample[cam] = self.image_transforms(sample[cam])
        return samples

    def _batch_column(self, name: str, where: list[tuple[int, int, int]], cols: dict, batch: dict) -> None:
        """Column `name` of every sample into batch[name], and its ``_is_pad`` with deltas or
        for a stream (True where no sample of it is near the frame; with deltas also where the
        offset falls outside the episode). A stream's offsets are taken on hardware_ns, the
        frames' capture clock, its row's timestamp otherwise."""
        pad_key = f"{name}_is_pad"
        deltas = name in self.delta_timestamps
        rows_of, delta_pads = [], []
        for si, n, r in where:
            c = cols[(si, n)]
            if deltas:
                rows, pad = self._rows_for(name, _stream_clock(c) if pad_key in c else c["timestamp"], r)
            else:
                rows, pad = np.array([r], dtype=np.int64), None
            rows_of.append(rows)
            delta_pads.append(pad)
        values, stream_pads = _take(name, pad_key, where, cols, rows_of)
        if not deltas:
            batch[name] = torch.from_numpy(np.stack([v[0] for v in values]))
            if stream_pads is not None:
                batch[pad_key] = torch.from_numpy(np.stack([p[0] for p in stream_pads]))
            return
        pads = []
        for i, pad in enumerate(delta_pads):
            stream_pad = stream_pads[i] if stream_pads is not None else None
            if stream_pad is not None and stream_pad.ndim > 1:  # an IMU window: per slot
                pad = stream_pad | pad[:, None]
            elif stream_pad is not None:
                pad = pad | stream_pad
            pads.append(pad)
        batch[name] = torch.from_numpy(np.stack(values))
        batch[pad_key] = torch.from_numpy(np.stack(pads))

    def _batch_frames(self, where: list[tuple[int, int, int]], cols: dict, batch: dict) -> None:
        """Every camera's frames of the samples into one (B, [T,] C, H, W) tensor per camera,
        decoded by one FramePool call (pooled sources) or by the source (LeRobot ones)."""
        dtype = torch.uint8 if self.image_dtype == "uint8" else torch.float32
        files: dict[str, int] = {}
        targets: list[tuple[int, int, int, int]] = []
        outputs = []
        for o, cam in enumerate(self.cameras):
            h, w = self.meta.features[cam]["shape"][:2]
            steps = len(self.delta_timestamps.get(cam, ())) or None
            out = self._frames_memory.empty((len(where), *((steps,) if steps else ()), 3, h, w), dtype)
            pads = []
            for i, (si, n, r) in enumerate(where):
                rows, pad = self._rows_for(cam, cols[(si, n)]["timestamp"], r)
                pads.append(pad)
                path = self._video_path(si, n, cam)
                if path is None:  # decoded by the source, converted as FramePool does
                    frames = torch.from_numpy(self._source_frames(si, n, cam, rows)).permute(0, 3, 1, 2)
                    (out[i] if steps else out[i:i + 1]).copy_(frames if dtype == torch.uint8 else frames / 255.0)
                    continue
                file = files.setdefault(path, len(files))
                targets += [(file, int(row), o, i * len(rows) + t) for t, row in enumerate(rows.tolist())]
            batch[cam] = out
            outputs.append(out.numpy())
            if steps:
                batch[f"{cam}_is_pad"] = torch.from_numpy(np.stack(pads))
        if targets:
            self._frame_pool().read(list(files), np.array(targets, dtype=np.int64), outputs, True)

    def _rows_for(self, key: str, ts: np.ndarray, row: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Rows of the frames nearest to timestamp + each delta, and the padding mask."""
        deltas = self.delta_timestamps.get(key)
        if deltas is None:
            return np.array([row], dtype=np.int64), None
        targets = float(ts[row]) + np.asarray(deltas, dtype=np.float64)
        first, last = float(ts[0]), float(ts[-1])
        # A target beyond the episode by more than half a frame is padding (LeRobot: outside
        # [first, last]); inside it, the nearest frame.
        half = 0.5 * float(np.median(np.diff(ts))) if len(ts) > 1 else 0.0
        pad = (targets < first - half) | (targets > last + half)
        pos = np.searchsorted(ts, targets).clip(1, len(ts) - 1) if len(ts) > 1 else np.zeros(len(targets), np.int64)
        if len(ts) > 1:
            left = ts[pos - 1]
            pos = np.where(np.abs(targets - left) <= np.abs(ts[pos] - targets), pos - 1, pos)
        return pos.astype(np.int64), pad

    def __repr__(self) -> str:
        return (f"reel.torch.FrameDataset({self.tasks!r}, {len(self)} frames in {len(self._episodes)} episodes, "
                f"{len(self.columns)} columns, cameras={self.cameras}, image_dtype={self.image_dtype!r})")


class _FramesMemory:
    """The memory of a process's batch frame tensors, used again once nothing refers to it.

    A batch's frames are large (29 MB of float32 for 32 frames of 320x240): allocated anew,
    glibc maps them afresh and the kernel faults and zeroes every page, each batch, which
    cost as much CPU as a fifth of the decoding. So in the main process (no DataLoader worker)
    the storages made here are kept (at most `keep`) and one is handed out again only when
    this list holds its only reference (torch's use count 1: no tensor, view or numpy array of
    it is alive anywhere), for a tensor of exactly its size, every element of which the batch
    then overwrites. In a DataLoader worker the tensor is made in shared memory (as
    default_collate allocates its output) and never kept: it leaves for the main process."""

    def __init__(self, keep: int):
        self.keep = keep
        self.storages: list = []
        self.use_count = getattr(torch._C, "_storage_Use_Count", None)

    def empty(self, shape: tuple, dtype: torch.dtype) -> torch.Tensor:
        if torch.utils.data.get_worker_info() is not None or self.use_count is None:
            return _new_batch_tensor(shape, dtype)
        nbytes = int(np.prod(shape)) * torch.empty(0, dtype=dtype).element_size()
        storage = next((s for s in self.storages if s.nbytes() == nbytes and self.use_count(s._cdata) == 1), None)
        if storage is None:
            storage = torch.UntypedStorage(nbytes)
            self.storages.append(storage)
            del self.storages[:-self.keep]
        return torch.empty(0, dtype=dtype).set_(storage, 0, shape)


def _new_batch_tensor(shape: tuple, dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised tensor for a batch; in a DataLoader worker, in shared memory (as
    torch's default_collate allocates its output), so the batch reaches the main process
    without a copy."""
    if torch.utils.data.get_worker_info() is not None:
        nbytes = int(np.prod(shape)) * torch.empty(0, dtype=dtype).element_size()
        return torch.empty(0, dtype=dtype).set_(torch.UntypedStorage._new_shared(nbytes), 0, shape)
    return torch.empty(shape, dtype=dtype)


class _BatchRows:
    """The batch tensors of one :meth:`FrameDataset.__getitems__` call and the row views handed
    out in its samples (rows[key][i] is sample i's value)."""

    __slots__ = ("tensors", "rows")

    def __init__(self, tensors: dict[str, torch.Tensor], rows: dict[str, tuple]):
        self.tensors, self.rows = tensors, rows


class _Sample(dict):
    """A sample of :meth:`FrameDataset.__getitems__`: a plain dict of its values that also
    knows the batch it is a row of, so :func:`collate` recognises untouched rows by identity."""

    _batch: _BatchRows | None = None

    def __reduce__(self):  # pickles (and copies) as the plain dict it is
        return dict, (dict(self),)


def collate(samples: Sequence[Any]) -> Any:
    """torch's ``default_collate``, except that a key whose tensors are the rows, in order, of
    one batch tensor (as :meth:`FrameDataset.__getitems__` returns them) is that tensor, not a
    copy. The values are those default_collate gives. ``DataLoader(ds, collate_fn=collate)``."""
    default = torch.utils.data.default_collate
    if not samples or not isinstance(samples[0], dict):
        return default(samples)
    out, rest = {}, []
    batch = _batch_of(samples)
    for key, first in samples[0].items():
        if batch is not None and key in batch.rows and all(
                s.get(key) is r for s, r in zip(samples, batch.rows[key])):
            # Every value is the very view __getitems__ made of row i: the batch tensor.
            out[key] = batch.tensors[key]
            continue
        base = first._base if isinstance(first, torch.Tensor) else None
        if base is not None and _rows_of(base, [s[key] for s in samples]):
            out[key] = base
        else:
            out[key] = None
            rest.append(key)
    if rest:
        out.update(default([{k: s[k] for k in rest} for s in samples]))
    return out


def _batch_of(samples: Sequence[Any]) -> _BatchRows | None:
    """The batch of which `samples` are all the samples, in order; None when they are not."""
    first = samples[0]
    batch = first._batch if type(first) is _Sample else None
    if batch is None or not all(type(s) is _Sample and s._batch is batch for s in samples):
        return None
    n = next(iter(batch.rows.values()), ())
    return batch if len(n) == len(samples) else None


def _rows_of(base: torch.Tensor, values: list) -> bool:
    """Whether `values` are base[0], base[1], ..., all of base."""
    if base.dim() == 0 or base.shape[0] != len(values) or not base.is_contiguous():
        return False
    step = base[0].numel() if len(values) else 0
    offset = base.storage_offset()
    return all(isinstance(v, torch.Tensor) and v._base is base and v.shape == base.shape[1:] and v.is_contiguous()
               and v.storage_offset() == offset + i * step for i, v in enumerate(values))


class _LazyFrames:
    """An episode's force-matrix stream held undecoded (reel.Task.force_matrix_frames): a
    batch decodes the frames it samples, each episode's in one call (_take)."""

    def __init__(self, frames: Any):
        self.frames = frames


def _take(name: str, pad_key: str, where: list[tuple[int, int, int]], cols: dict,
          rows_of: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    """Column `name`'s values (and ``_is_pad``, None for a column without one) at each
    sample's rows: indexed from an episode's arrays, or, for a lazy stream, decoded once per
    episode of the batch (a sampled cell found empty is padding too)."""
    values: list[Any] = [None] * len(where)
    pads: list[Any] | None = [None] * len(where) if pad_key in cols[where[0][:2]] else None
    members: dict[tuple[int, int], list[int]] = {}
    for i, (si, n, _) in enumerate(where):
        members.setdefault((si, n), []).append(i)
    for key, samples in members.items():
        c = cols[key]
        if isinstance(c[name], _LazyFrames):
            got = c[name].frames.decode(np.concatenate([rows_of[i] for i in samples]))
            at = 0
            for i in samples:
                k = len(rows_of[i])
                values[i], pads[i] = got["values"][at:at + k], ~got["valid"][at:at + k]
                at += k
            continue
        for i in samples:
            values[i] = c[name][rows_of[i]]
            if pads is not None:
                pads[i] = c[pad_key][rows_of[i]]
    return values, pads


def _stream_clock(cols: dict) -> np.ndarray:
    """The frames' times in s on which a stream's delta_timestamps are taken: hardware_ns when
    every frame has a stamp and they increase (one clock segment), else the rows' timestamp
    (a frame without a stamp, or a reset, would make a nearest search on it meaningless)."""
    hw = cols["hardware_ns"]
    if len(hw) and (hw != 0).all() and (np.diff(hw) > 0).all():
        return hw.astype(np.float64) / 1e9
    return cols["timestamp"]


def _stream_kind(name: str, schema: pa.Schema, sensors: set) -> str:
    """How FrameDataset reads column `name` of a pooled task (docs/python.md "Aligned
    samples"): "imu" (a window of samples), "force_matrix" (decoded, paired by its _ns),
    "slam" (the pose paired by its _ns), "stamped" (a vector paired by its scalar _ns),
    "glove" (its row's, the left one canonical) or "plain" (its row's value)."""
    if name not in schema.names or not name.startswith("observation."):
        return "plain"
    t = schema.field(name).type
    stamps = schema.field(name + "_ns").type if name + "_ns" in schema.names else None
    if name == "observation.imu":
        return "imu" if "imu_ts_ns" in schema.names else "plain"
    if name.endswith("slam_trajectory") and stamps is not None and pa.types.is_list(stamps):
        return "slam"
    if name.endswith("_force_matrix") and stamps is not None and pa.types.is_int64(stamps):
        return "force_matrix"
    if pa.types.is_fixed_size_list(t) and stamps is not None and pa.types.is_int64(stamps):
        return "stamped"
    glove = name[len("observation."):] in sensors or name.endswith("_glove")
    if glove and pa.types.is_fixed_size_list(t) and t.list_size == 256:
        return "glove"
    return "plain"


def _dtype_name(t: pa.DataType) -> str:
    """LeRobot's feature dtype: the numpy name of a number type, else Arrow's name."""
    if pa.types.is_floating(t):
        return f"float{t.bit_width}"
    if pa.types.is_integer(t):
        return f"{'' if pa.types.is_signed_integer(t) else 'u'}int{t.bit_width}"
    return str(t)


def _numeric(t: pa.DataType) -> bool:
    if pa.types.is_fixed_size_list(t):
        t = t.value_type
    return pa.types.is_integer(t) or pa.types.is_floating(t)


def _to_numpy(column: pa.ChunkedArray, name: str, task: str, n: int) -> np.ndarray:
    arr = column.combine_chunks()
    t = arr.type
    if pa.types.is_fixed_size_list(t):
        values = arr.flatten().to_numpy(zero_copy_only=False)
        return values.reshape(len(arr), t.list_size).astype(np.float32, copy=False)
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return arr.to_numpy(zero_copy_only=False)
    raise reel.NotSupportedError(f"{task}: episode {n} column {name!r} is {t}; the dataset returns fixed-size "
                                 f"vectors and numbers (read variable-length columns with Task.data)")
