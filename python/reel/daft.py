"""Pooled tasks, LeRobot and bundle datasets as Daft DataFrames: episodes first, filter, then
frames for the kept episodes.

The shape is Daft's own LeRobot reader (``daft.datasets.lerobot``)::

    import daft, reel.daft
    eps = reel.daft.read_episodes(["tasks/pick", "tasks/place"])      # one row per episode
    eps = eps.where(daft.col("length") >= 90)                          # filter before any frame I/O
    frames = reel.daft.load_frames(eps, columns=["observation.gripper_state"],
                                   cameras=["stereo_left"])            # one row per frame

Frames are read inside Daft batch UDFs: a batch's rows are grouped by (task, episode), which is
one data file and one video file per camera, and each group is served by one reel call (the data
parquet through the Arrow C stream, the frames by reel's decoder with the GIL released). Nothing
is read on the driver but the episodes rows, so the same code runs on Daft's native runner or on
a Ray cluster (``daft.set_runner_ray(address=...)``) over many tasks, as long as every worker
sees the task paths (a shared file system). Workers keep opened tasks in a per-process cache.

Any path ``reel.open`` reads works: a pooled task (cameras by slot name, e.g. "stereo_left") or
a LeRobot v2.x/v3.x or bundle dataset (cameras by video key, e.g. "observation.images.top";
episode_index is LeRobot's, or the bundle's position in manifest.json). Values are exactly what
``reel.open(path).data(N)`` and ``.frame_images`` return.
"""

from __future__ import annotations

import functools
from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa

import daft
from daft import DataType, Series, col

import reel

__all__ = ["read_episodes", "load_frames", "read"]

_EPISODE_FIELDS = ("task", "episode_index", "length", "duration_sec", "task_index", "has_data", "video_slots")


@functools.lru_cache(maxsize=64)
def _task(path: str):
    """reel.Task or reel.Dataset, opened once per process."""
    return reel.open(path)


def _episode_rows(path: str) -> list[dict]:
    """The episodes of one path in read_episodes' columns."""
    opened = _task(path)
    if isinstance(opened, reel.Task):
        return [{"task": path, "episode_index": int(e["episode_index"]), "length": e["length"],
                 "duration_sec": e["duration_sec"], "task_index": e["task_index"],
                 "has_data": bool(e["has_data"]), "video_slots": list(e["video_slots"] or [])}
                for e in pa.table(opened.episodes_arrow()).to_pylist()]
    fps = float(opened.info["fps"]) or 1.0
    tasks = list(opened.info.get("tasks") or [])
    return [{"task": path, "episode_index": int(e["episode_index"]), "length": int(e["length"]),
             "duration_sec": int(e["length"]) / fps,
             "task_index": tasks.index(e["tasks"][0]) if e.get("tasks") and e["tasks"][0] in tasks else None,
             "has_data": True, "video_slots": sorted(e.get("videos", {}))}
            for e in opened.episodes()]


@functools.lru_cache(maxsize=8)
def _episode_table(path: str, episode_index: int, columns: tuple[str, ...]) -> pa.Table:
    return pa.table(_task(path).data(episode_index, list(columns)))


def read_episodes(paths: str | Iterable[str]) -> daft.DataFrame:
    """One row per episode of each task: task (path), episode_index (N), length, duration_sec,
    task_index, has_data, video_slots (list of image keys). Reads metadata only."""
    if isinstance(paths, str):
        paths = [paths]
    rows = []
    for path in paths:
        rows.extend(_episode_rows(str(path)))
    if not rows:
        return daft.from_pydict({k: [] for k in _EPISODE_FIELDS})
    return daft.from_pylist(rows)


@daft.func.batch(return_dtype=DataType.list(DataType.int64()))
def _frame_indices(length: Series) -> list:
    return [list(range(int(n or 0))) for n in length.to_pylist()]


def _groups(tasks: list, episodes: list):
    """(task, N) -> positions in the batch, in batch order."""
    groups: dict[tuple[str, int], list[int]] = {}
    for i, key in enumerate(zip(tasks, episodes)):
        groups.setdefault((str(key[0]), int(key[1])), []).append(i)
    return groups


def _data_udf(columns: tuple[str, ...], dtype: DataType, batch_size: int):
    @daft.func.batch(return_dtype=dtype, unnest=True, batch_size=batch_size)
    def read_columns(task: Series, episode_index: Series, frame_index: Series) -> pa.Array:
        tasks, eps, rows = task.to_pylist(), episode_index.to_pylist(), frame_index.to_pylist()
        order: list[int] = []
        pieces: list[pa.Table] = []
        for (path, n), positions in _groups(tasks, eps).items():
            table = _episode_table(path, n, columns)
            pieces.append(table.take(pa.array([rows[p] for p in positions], pa.int64())))
            order.extend(positions)
        joined = pa.concat_tables(pieces).combine_chunks()
        back = np.empty(len(order), np.int64)
        back[np.asarray(order)] = np.arange(len(order))
        return joined.take(pa.array(back)).to_struct_array().combine_chunks()

    return read_columns


def _camera_udf(slot: str, height: int, width: int, batch_size: int):
    @daft.func.batch(return_dtype=DataType.tensor(DataType.uint8(), (height, width, 3)), batch_size=batch_size)
    def read_camera(task: Series, episode_index: Series, frame_index: Series) -> np.ndarray:
        tasks, eps, rows = task.to_pylist(), episode_index.to_pylist(), frame_index.to_pylist()
        out = np.empty((len(rows), height, width, 3), np.uint8)
        # One group = one video file: decoded in frame order by one reel call.
        for (path, n), positions in _groups(tasks, eps).items():
            frames = _task(path).frame_images(n, [rows[p] for p in positions], [slot])[slot]
            out[np.asarray(positions)] = frames
        return out

    return read_camera


def _camera_size(episodes: list[dict], slot: str) -> tuple[int, int]:
    for e in episodes:
        info = _task(e["task"]).info
        cam = (info.get("cameras") or {}).get(slot)  # pooled: info.json cameras
        if cam:
            return int(cam["height"]), int(cam["width"])
        feature = (info.get("features") or {}).get(slot)  # LeRobot / bundle: [H, W, C]
        if feature and feature.get("dtype") == "video" and len(feature.get("shape", [])) == 3:
            return int(feature["shape"][0]), int(feature["shape"][1])
    raise reel.NotFoundError(f"no dataset of these episodes declares camera {slot!r} "
                             f"(pooled: info.json cameras; LeRobot/bundle: a video feature)")


def load_frames(episodes: daft.DataFrame, columns: Sequence[str] | None = None,
                cameras: Sequence[str] = (), batch_size: int = 64) -> daft.DataFrame:
    """One row per frame of the kept episodes (``has_data``): task, episode_index, frame_index,
    then ``columns`` of the data parquet (default: every column of the first episode's file but
    the bookkeeping ones), then one uint8 (H, W, 3) tensor column per camera slot.

    Reads the first kept episode's schema on the driver to type the columns (Daft needs the
    types before it runs); every episode must have the columns asked for (NotFoundError names
    the episode otherwise, when the frames are computed)."""
    kept = episodes.where(col("has_data"))
    first = kept.select("task", "episode_index").limit(1).to_pylist()
    if not first:
        raise reel.NotFoundError("load_frames: no episode with data among the episodes given")
    probe = pa.table(_task(first[0]["task"]).data(first[0]["episode_index"]))
    # Pooled and LeRobot files carry these themselves; the frame's own index is frame_index.
    bookkeeping = {"episode_index", "frame_index"}
    names = [c for c in (columns if columns is not None else probe.column_names) if c not in bookkeeping]
    missing = [c for c in names if c not in probe.column_names]
    if missing:
        raise reel.NotFoundError(f"{first[0]['task']}: episode {first[0]['episode_index']} has no column(s) {missing}")
    frames = kept.select("task", "episode_index", "length")
    frames = frames.with_column("frame_index", _frame_indices(col("length"))).explode("frame_index")
    frames = frames.select("task", "episode_index", "frame_index")
    if names:
        struct = DataType.from_arrow_type(pa.struct([probe.schema.field(c) for c in names]))
        udf = _data_udf(tuple(names), struct, batch_size)
        frames = frames.select("task", "episode_index", "frame_index",
                               udf(col("task"), col("episode_index"), col("frame_index")))
    if cameras:
        eps = kept.select("task").limit(1).to_pylist()
        for slot in cameras:
            h, w = _camera_size(eps, slot)
            udf = _camera_udf(slot, h, w, batch_size)
            frames = frames.with_column(slot, udf(col("task"), col("episode_index"), col("frame_index")))
    return frames


def read(paths: str | Iterable[str], columns: Sequence[str] | None = None,
         cameras: Sequence[str] = ()) -> daft.DataFrame:
    """``load_frames(read_episodes(paths), columns, cameras)``."""
    return load_frames(read_episodes(paths), columns=columns, cameras=cameras)
