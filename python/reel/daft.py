"""Pooled tasks, LeRobot and bundle datasets as Daft DataFrames: episodes first, filter, then
frames for the kept episodes.

The shape and names are Daft's own LeRobot reader (``daft.datasets.lerobot``: ``read``,
``read_episodes``, ``load_episode_frames``, ``read_tasks``, ``include_stats`` / ``include_meta`` /
``include_video_metadata``, ``load_video_frames``)::

    import daft, reel.daft
    eps = reel.daft.read_episodes(["tasks/pick", "tasks/place"])      # one row per episode
    eps = eps.where(daft.col("length") >= 90)                          # filter before any frame I/O
    frames = reel.daft.load_episode_frames(eps, columns=["observation.gripper_state"],
                                           load_video_frames=["stereo_left"])  # one row per frame
    reel.daft.read("tasks/pick", load_video_frames=True)               # every camera

Frames are read inside Daft batch UDFs: a batch's rows are grouped by (task, episode), which is
one data file and one video file per camera, and each group is served by one reel call (the data
parquet through the Arrow C stream, the frames by reel's decoder with the GIL released). Nothing
is read on the driver but the episodes rows, so the same code runs on Daft's native runner or on
a Ray cluster (``daft.set_runner_ray(address=...)``) over many tasks, as long as every worker
sees the task paths: a shared file system, or an object store (``s3://bucket/prefix/task``, with
``storage_options`` as for :func:`reel.open`; the URI and the options travel to the workers as
plain values and each worker opens the URI itself). Workers keep opened tasks in a per-process
cache.

Any path ``reel.open`` reads works: a pooled task or a LeRobot v2.x/v3.x or bundle dataset
(episode_index is LeRobot's, or the bundle's position in manifest.json). Cameras are named as in
reel.torch and LeRobot, ``observation.images.<slot>`` (the image column's name); a bare slot name
("stereo_left") is accepted as an alias. Values are exactly what ``reel.open(path).data(N)`` and
``.frame_images`` return. The ``task`` column of episodes and frames is the dataset's path;
``read_tasks`` gives the task strings by ``task_index``.
"""

from __future__ import annotations

import functools
from typing import Iterable, Sequence

import daft
import numpy as np
import pyarrow as pa
from daft import DataType, Series, col

import reel
from reel._names import IMAGE_PREFIX, camera_key, pooled_tasks
from reel._sparse import read_filling

__all__ = ["read", "read_episodes", "load_episode_frames", "read_tasks", "load_frames"]

_EPISODE_FIELDS = ("task", "episode_index", "length", "duration_sec", "task_index", "tasks", "has_data",
                   "video_slots")


# storage_options travel as a sorted tuple of items: hashable (the caches below key on
# it) and picklable (Daft ships the UDFs to its workers).
Storage = tuple


def _storage_key(storage_options: dict | None) -> Storage:
    return tuple(sorted((storage_options or {}).items()))


@functools.lru_cache(maxsize=64)
def _task(path: str, storage: Storage = ()):
    """reel.Task or reel.Dataset, opened once per process."""
    return reel.open(path, dict(storage))


def _episode_rows(path: str, include_meta: bool, include_stats: bool, include_video_metadata: bool,
                  storage: Storage = ()) -> list[dict]:
    """The episodes of one path in read_episodes' columns (plus the optional groups)."""
    opened = _task(path, storage)
    out = []
    if isinstance(opened, reel.Task):
        tasks = pooled_tasks(opened)
        for e in pa.table(opened.episodes_arrow()).to_pylist():
            ti = e["task_index"]
            row = {"task": path, "episode_index": int(e["episode_index"]), "length": e["length"],
                   "duration_sec": e["duration_sec"], "task_index": ti,
                   "tasks": [tasks[ti]] if ti is not None and 0 <= ti < len(tasks) else [],
                   "has_data": bool(e["has_data"]), "video_slots": list(e["video_slots"] or [])}
            if include_meta:
                row.update({"meta/episodes/chunk_index": e["chunk"], "meta/episodes/file_index": e["file"],
                            "meta/row_source": e["row_source"], "meta/created_at": e["created_at"],
                            "data/path": e["data_path"]})
            out.append(row)
        if include_video_metadata:
            videos = {int(e["episode_index"]): e["videos"] for e in opened.episodes()}
            slots = sorted({s for v in videos.values() for s in v})
            for row in out:
                for slot in slots:
                    rel = videos.get(row["episode_index"], {}).get(slot)
                    key = f"videos/{camera_key(slot)}"
                    row[f"{key}/path"] = rel
                    row[f"{key}/from_timestamp"] = 0.0 if rel else None  # one file per episode
        return out
    fps = float(opened.info["fps"]) or 1.0
    tasks = list(opened.info.get("tasks") or [])
    for e in opened.episodes():
        row = {"task": path, "episode_index": int(e["episode_index"]), "length": int(e["length"]),
               "duration_sec": int(e["length"]) / fps,
               "task_index": tasks.index(e["tasks"][0]) if e.get("tasks") and e["tasks"][0] in tasks else None,
               "tasks": list(e.get("tasks") or []), "has_data": True, "video_slots": sorted(e.get("videos", {}))}
        if include_meta:
            row.update({"data/path": e.get("data_path"), "data/from_row": e.get("from_row"),
                        "data/to_row": e.get("to_row"), "dataset_from_index": e.get("dataset_from_index"),
                        "dataset_to_index": e.get("dataset_to_index")})
        if include_video_metadata:
            for key, v in sorted(e.get("videos", {}).items()):
                row[f"videos/{key}/path"] = v.get("path")
                row[f"videos/{key}/from_timestamp"] = v.get("from_timestamp")
                row[f"videos/{key}/to_timestamp"] = v.get("to_timestamp")
        out.append(row)
    if include_stats:
        stats = _lerobot_episode_stats(str(path)) if not reel._core.is_uri(str(path)) else {}
        for row in out:
            row.update(stats.get(row["episode_index"], {}))
    return out


def _lerobot_episode_stats(root: str) -> dict[int, dict]:
    """Per-episode ``stats/<feature>/<stat>`` of a LeRobot dataset, as Daft's include_stats: v3
    from the episodes parquet files, v2.1 from meta/episodes_stats.jsonl; {} when absent."""
    import glob
    import json
    import os

    out: dict[int, dict] = {}
    files = sorted(glob.glob(os.path.join(root, "meta", "episodes", "**", "*.parquet"), recursive=True))
    if files:
        import pyarrow.parquet as pq
        for f in files:
            names = pq.read_schema(f).names
            cols = [c for c in names if c.startswith("stats/")]
            if cols:
                for r in pq.read_table(f, columns=["episode_index", *cols]).to_pylist():
                    out[int(r.pop("episode_index"))] = r
        return out
    path = os.path.join(root, "meta", "episodes_stats.jsonl")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    e = json.loads(line)
                    out[int(e["episode_index"])] = {f"stats/{k}/{s}": v for k, st in e.get("stats", {}).items()
                                                    for s, v in st.items()}
    return out


@functools.lru_cache(maxsize=8)
def _episode_table(path: str, episode_index: int, fields: tuple[pa.Field, ...], storage: Storage = ()) -> pa.Table:
    """The episode's columns; one it never supplied reads as "no sample" (reel._sparse)."""
    return read_filling(_task(path, storage), episode_index, fields)


def read_episodes(paths: str | Iterable[str], include_meta: bool = False, include_stats: bool = False,
                  include_video_metadata: bool = False, storage_options: dict | None = None) -> daft.DataFrame:
    """One row per episode of each path: task (the path), episode_index, length, duration_sec,
    task_index, tasks (the task strings), has_data, video_slots. Reads metadata only.

    As Daft's reader: ``include_meta`` adds the bookkeeping columns (pooled:
    meta/episodes/chunk_index, meta/episodes/file_index, meta/row_source, meta/created_at,
    data/path; LeRobot: data/path, data/from_row, data/to_row, dataset_from_index,
    dataset_to_index); ``include_stats`` the per-episode ``stats/<feature>/<stat>`` columns
    (LeRobot v3 episodes parquet, v2.1 episodes_stats.jsonl; pooled tasks keep task-level stats
    only, so none); ``include_video_metadata`` ``videos/<camera>/path`` and
    ``videos/<camera>/from_timestamp`` (pooled: 0, one file per episode) and, for LeRobot,
    ``/to_timestamp``. ``storage_options``: as for :func:`reel.open`, for URIs (LeRobot
    per-episode stats are read from local datasets only)."""
    if isinstance(paths, str) or hasattr(paths, "__fspath__"):
        paths = [paths]
    rows = []
    for path in paths:
        rows.extend(_episode_rows(str(path), include_meta, include_stats, include_video_metadata,
                                  _storage_key(storage_options)))
    if not rows:
        return daft.from_pydict({k: [] for k in _EPISODE_FIELDS})
    keys = list(dict.fromkeys(k for r in rows for k in r))
    return daft.from_pydict({k: [r.get(k) for r in rows] for k in keys})


def read_tasks(paths: str | Iterable[str], storage_options: dict | None = None) -> daft.DataFrame:
    """The task strings of each path, as Daft's ``read_tasks``: task_index, task (the string),
    root (the path). Pooled: meta/tasks.jsonl; LeRobot/bundle: the tasks reel reads."""
    if isinstance(paths, str) or hasattr(paths, "__fspath__"):
        paths = [paths]
    out = {"task_index": [], "task": [], "root": []}
    for path in paths:
        opened = _task(str(path), _storage_key(storage_options))
        strings = pooled_tasks(opened) if isinstance(opened, reel.Task) else list(opened.info.get("tasks") or [])
        for i, t in enumerate(strings):
            out["task_index"].append(i)
            out["task"].append(str(t))
            out["root"].append(str(path))
    return daft.from_pydict(out)


@daft.func.batch(return_dtype=DataType.list(DataType.int64()))
def _frame_indices(length: Series) -> list:
    return [list(range(int(n or 0))) for n in length.to_pylist()]


def _groups(tasks: list, episodes: list):
    """(task, N) -> positions in the batch, in batch order."""
    groups: dict[tuple[str, int], list[int]] = {}
    for i, key in enumerate(zip(tasks, episodes)):
        groups.setdefault((str(key[0]), int(key[1])), []).append(i)
    return groups


def _gather(task: Series, episode_index: Series, frame_index: Series, table_of) -> pa.Array:
    """The rows of a batch as one struct array, in batch order: each (task, N) group's rows
    taken from table_of(path, N), the episode's table with a row per frame."""
    tasks, eps, rows = task.to_pylist(), episode_index.to_pylist(), frame_index.to_pylist()
    order: list[int] = []
    pieces: list[pa.Table] = []
    for (path, n), positions in _groups(tasks, eps).items():
        pieces.append(table_of(path, n).take(pa.array([rows[p] for p in positions], pa.int64())))
        order.extend(positions)
    joined = pa.concat_tables(pieces).combine_chunks()
    back = np.empty(len(order), np.int64)
    back[np.asarray(order)] = np.arange(len(order))
    return joined.take(pa.array(back)).to_struct_array().combine_chunks()


def _data_udf(fields: tuple[pa.Field, ...], dtype: DataType, batch_size: int, storage: Storage = ()):
    @daft.func.batch(return_dtype=dtype, unnest=True, batch_size=batch_size)
    def read_columns(task: Series, episode_index: Series, frame_index: Series) -> pa.Array:
        return _gather(task, episode_index, frame_index, lambda path, n: _episode_table(path, n, fields, storage))

    return read_columns


@functools.lru_cache(maxsize=8)
def _aligned_table(path: str, episode_index: int, names: tuple[str, ...], storage: Storage = ()) -> pa.Table:
    """Episode N's streams paired with its frames by time (Task.align), without its key columns."""
    table = _task(path, storage).align(episode_index, list(names))
    return table.drop_columns(["frame_index", "hardware_ns"])


def _aligned_udf(names: tuple[str, ...], dtype: DataType, batch_size: int, storage: Storage = ()):
    @daft.func.batch(return_dtype=dtype, unnest=True, batch_size=batch_size)
    def read_aligned(task: Series, episode_index: Series, frame_index: Series) -> pa.Array:
        return _gather(task, episode_index, frame_index, lambda path, n: _aligned_table(path, n, names, storage))

    return read_aligned


def _source_camera(path: str, key: str, storage: Storage = ()) -> str:
    """The name ``path``'s reader knows camera ``key`` (observation.images.<slot>) by: the slot
    for a pooled task, the video key for LeRobot/bundle."""
    if isinstance(_task(path, storage), reel.Task) and key.startswith(IMAGE_PREFIX):
        return key[len(IMAGE_PREFIX):]
    return key


def _camera_udf(slot: str, height: int, width: int, batch_size: int, storage: Storage = ()):
    @daft.func.batch(return_dtype=DataType.tensor(DataType.uint8(), (height, width, 3)), batch_size=batch_size)
    def read_camera(task: Series, episode_index: Series, frame_index: Series) -> np.ndarray:
        tasks, eps, rows = task.to_pylist(), episode_index.to_pylist(), frame_index.to_pylist()
        out = np.empty((len(rows), height, width, 3), np.uint8)
        # One group = one video file: decoded in frame order by one reel call.
        for (path, n), positions in _groups(tasks, eps).items():
            name = _source_camera(path, slot, storage)
            frames = _task(path, storage).frame_images(n, [name], [rows[p] for p in positions])[name]
            out[np.asarray(positions)] = frames
        return out

    return read_camera


def _camera_size(episodes: list[dict], slot: str, storage: Storage = ()) -> tuple[int, int]:
    for e in episodes:
        info = _task(e["task"], storage).info
        cam = (info.get("cameras") or {}).get(_source_camera(e["task"], slot, storage))  # pooled: info.json cameras
        if cam:
            return int(cam["height"]), int(cam["width"])
        feature = (info.get("features") or {}).get(slot)  # LeRobot / bundle: [H, W, C]
        if feature and feature.get("dtype") == "video" and len(feature.get("shape", [])) == 3:
            return int(feature["shape"][0]), int(feature["shape"][1])
    raise reel.NotFoundError(f"no dataset of these episodes declares camera {slot!r} "
                             f"(pooled: info.json cameras; LeRobot/bundle: a video feature)")


def load_frames(episodes: daft.DataFrame, columns: Sequence[str] | None = None,
                cameras: Sequence[str] | str | bool = (), batch_size: int = 64,
                storage_options: dict | None = None, aligned: Sequence[str] = ()) -> daft.DataFrame:
    """One row per frame of the kept episodes (``has_data``): task, episode_index, frame_index,
    then ``columns`` of the data parquet (default: every column of the first episode's file but
    the bookkeeping ones), then one uint8 (H, W, 3) tensor column per camera, named
    ``observation.images.<slot>`` (``cameras``: names or aliases, True = every camera).

    Reads the first kept episode's schema on the driver to type the columns (Daft needs the
    types before it runs); a column another episode lacks (a sparse column it never supplied)
    reads as the contract's "no sample" value: 0, [0]*d, [] or "connected". ``storage_options``:
    as for :func:`reel.open`, when the tasks are URIs.

    ``aligned``: streams of pooled tasks paired with each frame by time, as
    :meth:`reel.Task.align` gives them (docs/python.md "Aligned samples"): per stream X the
    columns X, X_ns and X_dt_ns (null where no sample is near the frame), the left glove in
    canonical order. Every kept episode must have those columns."""
    storage = _storage_key(storage_options)
    kept = episodes.where(col("has_data"))
    first = kept.select("task", "episode_index").limit(1).to_pylist()
    if not first:
        raise reel.NotFoundError("load_frames: no episode with data among the episodes given")
    probe = pa.table(_task(first[0]["task"], storage).data(first[0]["episode_index"]))
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
        udf = _data_udf(tuple(probe.schema.field(c) for c in names), struct, batch_size, storage)
        frames = frames.select("task", "episode_index", "frame_index",
                               udf(col("task"), col("episode_index"), col("frame_index")))
    if aligned:
        names_a = tuple(str(c) for c in aligned)
        probe_a = _aligned_table(first[0]["task"], int(first[0]["episode_index"]), names_a, storage)
        udf = _aligned_udf(names_a, DataType.from_arrow_type(pa.struct(list(probe_a.schema))), batch_size, storage)
        frames = frames.select(*[col(c) for c in frames.column_names],
                               udf(col("task"), col("episode_index"), col("frame_index")))  # unnested
    eps = kept.select("task").distinct().to_pylist()
    for key in _camera_keys(cameras, eps, storage):
        h, w = _camera_size(eps, key, storage)
        udf = _camera_udf(key, h, w, batch_size, storage)
        frames = frames.with_column(key, udf(col("task"), col("episode_index"), col("frame_index")))
    return frames


def _camera_keys(cameras: Sequence[str] | str | bool | None, episodes: list[dict],
                 storage: Storage = ()) -> list[str]:
    """load_video_frames / cameras as camera keys: False/None/() none, True every RGB camera of
    the datasets, a name or a list of names (slot names are aliases)."""
    if cameras is None or cameras is False:
        return []
    if cameras is True:
        keys: list[str] = []
        for e in episodes:
            info = _task(e["task"], storage).info
            found = [IMAGE_PREFIX + c for c in info.get("cameras") or {}] if "cameras" in info else [
                k for k in info.get("video_keys") or [] if not k.startswith("observation.depth.")]
            keys += [k for k in found if k not in keys]
        return keys
    if isinstance(cameras, str):
        cameras = [cameras]
    return [camera_key(c) for c in cameras]


def load_episode_frames(episodes: daft.DataFrame, dataset_uri: str | None = None,
                        columns: Sequence[str] | None = None,
                        load_video_frames: Sequence[str] | str | bool = False,
                        batch_size: int = 64, storage_options: dict | None = None,
                        aligned: Sequence[str] = ()) -> daft.DataFrame:
    """Daft's ``load_episode_frames``: the frames of the episodes left in ``episodes`` (one row
    per frame, each episode's kept columns broadcast to its frames, joined on episode_index and
    the task path). ``dataset_uri`` names the dataset when ``episodes`` has no ``task`` column
    (e.g. a frame built by hand with episode_index only). ``load_video_frames`` as in
    :func:`read`; ``storage_options`` as for :func:`reel.open`; ``aligned`` as for
    :func:`load_frames`."""
    if "task" not in episodes.column_names:
        if dataset_uri is None:
            raise TypeError("load_episode_frames: episodes has no 'task' column; pass dataset_uri")
        episodes = episodes.with_column("task", daft.lit(str(dataset_uri)))
    if "has_data" not in episodes.column_names or "length" not in episodes.column_names:
        full = read_episodes(str(dataset_uri) if dataset_uri is not None else
                             [r["task"] for r in episodes.select("task").distinct().to_pylist()],
                             storage_options=storage_options)
        extra = [c for c in episodes.column_names if c not in full.column_names]
        episodes = full.join(episodes.select("task", "episode_index", *extra), on=["task", "episode_index"])
    frames = load_frames(episodes, columns=columns, cameras=load_video_frames, batch_size=batch_size,
                         storage_options=storage_options, aligned=aligned)
    # Daft's semantics: each episode's columns are broadcast to its frames, but the internal
    # locator columns (data/*, meta/*, videos/*) are not.
    extra = [c for c in episodes.column_names if c not in frames.column_names and c != "has_data"
             and not c.startswith(("data/", "meta/", "videos/"))]
    if extra:
        frames = frames.join(episodes.select("task", "episode_index", *extra), on=["task", "episode_index"])
    return frames


def read(paths: str | Iterable[str], columns: Sequence[str] | None = None,
         cameras: Sequence[str] = (), include_stats: bool = False,
         load_video_frames: Sequence[str] | str | bool = False, batch_size: int = 64,
         storage_options: dict | None = None, aligned: Sequence[str] = ()) -> daft.DataFrame:
    """Daft's ``read``: one row per frame of every episode with data, each episode's columns
    (length, duration_sec, task_index, tasks, video_slots; with ``include_stats`` the
    per-episode stats, see :func:`read_episodes`) broadcast to its frames.
    ``load_video_frames``: False (default) no images, True every RGB camera, a camera name or a
    list (``cameras`` is the older spelling of the same). ``storage_options``: as for
    :func:`reel.open`, for URIs (s3://bucket/prefix/task). ``aligned``: streams paired with
    each frame by time (:func:`load_frames`)."""
    wanted: Sequence[str] | str | bool = load_video_frames
    if cameras:
        wanted = list(cameras) if wanted is False else wanted
    episodes = read_episodes(paths, include_stats=include_stats, storage_options=storage_options)
    return load_episode_frames(episodes, columns=columns, load_video_frames=wanted, batch_size=batch_size,
                               storage_options=storage_options, aligned=aligned)
