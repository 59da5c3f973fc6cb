"""reel.Dataset: LeRobot v2.x / v3.x and bundle datasets, read by reel's C++ core.

``reel.open(path)`` returns one for such a dataset (and a :class:`reel.Task` for a pooled
task); ``reel.Dataset(path)`` opens one directly."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from . import _core
from ._errors import NotFoundError
from ._ops import findings
from ._storage import storage as _storage


class Dataset:
    """A LeRobot v2.x / v3.x or bundle dataset opened read-only. Reading never writes.

    Opening reads ``meta/info.json`` (bundle: ``manifest.json``) and the tasks. The episode
    index (episodes metadata plus a stat of every file it names) is read and checked once, at
    the first call that needs it, and kept: open the dataset again after it changed on disk.
    Episodes are addressed by ``episode_index`` (bundles: the position in manifest.json's
    ``episodes``), rows by their 0-based position within the episode.

    Errors raise :class:`reel.Error` subclasses naming the file: NotFoundError for a missing
    file, episode or video key; InvalidError for metadata that contradicts itself or the data
    and for a row outside the episode; CorruptionError for a file that cannot be decoded;
    NotSupportedError for a version reel does not know. Long calls release the GIL."""

    def __init__(self, path: str, storage_options: dict[str, Any] | None = None):
        self._root = str(path).rstrip("/") if _core.is_uri(str(path)) else str(path)
        self._storage_options = dict(storage_options or {})
        self._core = _core.ForeignDataset.open(str(path), _storage(storage_options))
        self._info: dict[str, Any] | None = None

    @property
    def root(self) -> str:
        """The dataset directory or URI, as given."""
        return self._root

    @property
    def storage_options(self) -> dict[str, Any]:
        """The ``storage_options`` the dataset was opened with (a copy)."""
        return dict(self._storage_options)

    def read_file(self, relative: str) -> bytes | None:
        """A file of the dataset (e.g. "meta/stats.json") as bytes; None when it does not exist."""
        return _core.read_file(f"{self.root}/{relative}", _storage(self._storage_options))

    @property
    def info(self) -> dict[str, Any]:
        """The dataset-level metadata as reel reads it: format ("lerobot_v2", "lerobot_v3",
        "bundle"), version, fps, robot_type, name (bundle), total_episodes, total_frames (-1
        when not declared), chunks_size, data_path / video_path templates, features
        {name: {dtype, shape}}, video_keys (sorted) and tasks (by task_index)."""
        if self._info is None:
            self._info = self._core.info()
        return self._info

    def episodes(self, episodes: Iterable[int] | None = None) -> list[dict[str, Any]]:
        """One dict per episode in episode_index order (what ``reel ls --json`` prints):
        episode_index, length, tasks, data_path, from_row / to_row (the episode's rows in
        data_path), dataset_from_index / dataset_to_index (its global ``index`` range), videos
        {key: {path, from_timestamp, to_timestamp}}; bundles add bundle_id and
        task_description. Raises on the first violation of the metadata rules
        (docs/foreign-read.md); :meth:`check` collects them all instead. With ``episodes``, only
        those N in the order given (the metadata is read whole either way); NotFoundError for
        an N the dataset does not hold."""
        listed = self._core.episodes()
        if episodes is None:
            return listed
        by_n = {int(e["episode_index"]): e for e in listed}
        missing = [int(n) for n in episodes if int(n) not in by_n]
        if missing:
            raise NotFoundError(f"{self.root}: episode {missing[0]} is not in the dataset")
        return [by_n[int(n)] for n in episodes]

    def data(self, episode_index: int, columns: str | Iterable[str] | None = None):
        """Episode N's rows of its data parquet as a :class:`reel.ArrowStream` (projected to
        ``columns``, file order; None = all; one column may be a plain string). Only the row
        groups holding the episode are read, and the rows are checked to be the episode's
        (episode_index / index columns). A column the file lacks raises NotFoundError or
        InvalidError."""
        from . import ArrowStream, _column_names

        cols = _column_names(columns) or []
        n = int(episode_index)
        return ArrowStream(lambda: self._core.data_stream(n, cols), f"episode {n} of {self.root}")

    def frame_images(self, episode_index: int, keys: Iterable[str], rows: Iterable[int]) -> dict[str, np.ndarray]:
        """Rows ``rows`` of episode N for each video key: {key: uint8 (n, H, W, 3) RGB24},
        decoded by reel (byte-identical to the ffmpeg CLI's rgb24 conversion). Arguments in the
        order episode, keys, rows, like :meth:`reel.Task.frame_images` (the older
        ``frame_images(N, rows, keys)`` still works). ``rows`` may come in any order and
        repeat. LeRobot: row i is the frame nearest to the episode's from_timestamp + its
        ``timestamp`` value, within half a frame period (InvalidError otherwise); bundles: row i
        is frame i. One call per episode decodes each file once, forward, seeking back only
        when that is cheaper. ``keys`` must be a list (TypeError for one string)."""
        from . import _indices, _names_then_rows

        keys, rows = _names_then_rows(keys, rows, "keys")
        return self._core.frame_images(int(episode_index), _indices(rows), keys)

    def overlays(self) -> list[dict[str, Any]]:
        """Bundles: every overlay (seed 004 annotations beside the episodes,
        ``overlays/<name>/<bundle id>.parquet``) as dicts {name, kind ("dense" | "spans"),
        columns (value columns), episodes (bundle ids with a file)}; [] when there are none.
        NotSupportedError for a LeRobot dataset. Files are not read here: :meth:`check` does."""
        return self._core.overlays()

    def overlay(self, name: str, episode: int | str):
        """Overlay ``name`` of one episode (a manifest position or a bundle id) as a
        :class:`reel.ArrowStream` (``pyarrow.table(...)`` reads it), checked on read: dense
        overlays hold ``step`` 0..length-1, span overlays ``start_step`` < ``end_step`` <=
        length, each beside value columns. NotFoundError when the episode has none."""
        from . import ArrowStream

        ep = str(episode)
        return ArrowStream(lambda: self._core.overlay_stream(ep, str(name)), f"overlay {name} of episode {ep} of {self.root}")

    def check(self) -> list[dict[str, Any]]:
        """Every foreign.* rule over the whole dataset (metadata, each episode's rows, each
        video's frame count), as dicts {task, rule, severity, path, message}, like
        :meth:`reel.Task.check`."""
        return findings(_core.check(self.root, _core.CheckOptions(), _storage(self._storage_options)))

    def __repr__(self) -> str:
        i = self.info
        return f"reel.Dataset({self.root!r}, {i['format']} {i['version']}, {i['total_episodes']} episodes)"
