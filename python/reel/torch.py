"""reel.torch: a map-style PyTorch dataset over one or many pooled tasks.

    from reel.torch import FrameDataset
    ds = FrameDataset(["data/pick_cup", "data/place_cup"],
                      columns=["observation.gripper_state", "action"],
                      cameras=["stereo_left"],
                      delta_timestamps={"observation.gripper_state": [-0.1, 0.0],
                                        "observation.images.stereo_left": [-0.1, 0.0]})
    loader = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True, num_workers=2,
                                         persistent_workers=True)

A sample is one frame (row i of an episode = frame i of its videos):
- each column as a tensor: fixed-size vectors float32 (dim,), numbers at their type as ();
- each camera as ``observation.images.<slot>``: float32 (3, H, W) in [0, 1], LeRobot's layout;
- ``episode_index``, ``frame_index``, ``timestamp``, ``index`` (the global sample index) and
  ``task_index`` (which of the given tasks).
With ``delta_timestamps`` (LeRobot's definition), a key gets a leading axis of one entry per
offset: for offset d the frame nearest to timestamp + d within the same episode, and a bool
``<key>_is_pad`` that is True where timestamp + d falls outside the episode (the value is then
the nearest edge frame).

Workers: the dataset holds no open file until a sample is asked for; each worker (forked
or spawned, persistent or not) opens its own tasks, decoders and an LRU of decoded episode
columns, so ``num_workers > 0`` needs no locking.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import torch

import reel

IMAGE_PREFIX = "observation.images."


class FrameDataset(torch.utils.data.Dataset):
    def __init__(self, tasks: str | Sequence[str], columns: Iterable[str] = (), cameras: Iterable[str] = (),
                 delta_timestamps: Mapping[str, Sequence[float]] | None = None,
                 episodes: Mapping[int, Iterable[int]] | None = None, cache_episodes: int = 8):
        """tasks: one path or a list; columns: data columns to return; cameras: video slots
        (image_keys); episodes: {task position: [N, ...]} to keep (default: every episode
        with data); cache_episodes: decoded episodes each worker keeps."""
        self.tasks = [str(tasks)] if isinstance(tasks, (str, bytes)) or hasattr(tasks, "__fspath__") else [
            str(t) for t in tasks]
        self.columns = list(columns)
        self.cameras = list(cameras)
        self.delta_timestamps = {k: [float(d) for d in v] for k, v in (delta_timestamps or {}).items()}
        known = set(self.columns) | {IMAGE_PREFIX + c for c in self.cameras}
        for key in self.delta_timestamps:
            if key not in known:
                raise reel.InvalidError(f"delta_timestamps names {key!r}, which is neither a requested column "
                                        f"nor observation.images.<camera> of a requested camera")
        self.cache_episodes = int(cache_episodes)
        # The index, built once: (task position, N, length) per kept episode, cumulative
        # starts, and each episode's video paths (so workers never list a task again).
        self._episodes: list[tuple[int, int, int]] = []
        self._videos: dict[tuple[int, int], dict[str, str]] = {}
        for ti, path in enumerate(self.tasks):
            task = reel.open(path)
            keep = None if episodes is None else set(int(n) for n in episodes.get(ti, ()))
            for e in task.episodes():
                n, length = int(e["episode_index"]), e["length"]
                if e["has_data"] and length and (keep is None or n in keep):
                    self._episodes.append((ti, n, int(length)))
                    self._videos[(ti, n)] = {slot: f"{task.root}/{rel}" for slot, rel in e["videos"].items()}
        self._starts = np.cumsum([0] + [e[2] for e in self._episodes]).tolist()
        self._reset_worker_state()

    # ---- per-worker state (never pickled, opened lazily) ----

    def _reset_worker_state(self) -> None:
        self._open_tasks: dict[int, Any] = {}
        self._decoded: OrderedDict = OrderedDict()
        self._readers: OrderedDict = OrderedDict()

    def __getstate__(self):
        state = self.__dict__.copy()
        for k in ("_open_tasks", "_decoded", "_readers"):
            state.pop(k)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._reset_worker_state()

    def _task(self, ti: int):
        if ti not in self._open_tasks:
            self._open_tasks[ti] = reel.open(self.tasks[ti])
        return self._open_tasks[ti]

    def _episode_columns(self, ti: int, n: int) -> dict[str, np.ndarray]:
        key = (ti, n)
        if key in self._decoded:
            self._decoded.move_to_end(key)
            return self._decoded[key]
        table = pa.table(self._task(ti).data(n, ["timestamp", "frame_index", *self.columns]))
        out = {}
        for name in table.column_names:
            out[name] = _to_numpy(table.column(name), name, self.tasks[ti], n)
        self._decoded[key] = out
        while len(self._decoded) > self.cache_episodes:
            self._decoded.popitem(last=False)
        return out

    def _reader(self, ti: int, n: int, slot: str):
        key = (ti, n, slot)
        if key in self._readers:
            self._readers.move_to_end(key)
            return self._readers[key]
        videos = self._videos[(ti, n)]
        if slot not in videos:
            raise reel.NotFoundError(f"{self.tasks[ti]}: episode {n} has no video for camera {slot!r} "
                                     f"(its slots: {', '.join(sorted(videos)) or 'none'})")
        # One decoder thread: random access seeks to a keyframe for nearly every sample, and
        # FFmpeg's frame threads only add pipeline latency there (2x slower measured at 320x240
        # GOP 2); DataLoader workers give the parallelism.
        reader = reel.VideoReader(videos[slot], threads=1)
        self._readers[key] = reader
        while len(self._readers) > 4 * max(1, len(self.cameras)):
            self._readers.popitem(last=False)[1].close()
        return reader

    # ---- Dataset ----

    def __len__(self) -> int:
        return self._starts[-1]

    def __getitem__(self, index: int) -> dict[str, Any]:
        index = int(index)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} outside [0, {len(self)})")
        e = bisect.bisect_right(self._starts, index) - 1
        ti, n, length = self._episodes[e]
        row = index - self._starts[e]
        cols = self._episode_columns(ti, n)
        ts = cols["timestamp"]
        item: dict[str, Any] = {
            "index": torch.tensor(index), "task_index": torch.tensor(ti), "episode_index": torch.tensor(n),
            "frame_index": torch.tensor(int(cols["frame_index"][row])), "timestamp": torch.tensor(float(ts[row])),
        }
        for name in self.columns:
            rows, pad = self._rows_for(name, ts, row)
            values = torch.from_numpy(np.ascontiguousarray(cols[name][rows]))
            item[name] = values if pad is not None else values[0]
            if pad is not None:
                item[f"{name}_is_pad"] = torch.from_numpy(pad)
        for slot in self.cameras:
            key = IMAGE_PREFIX + slot
            rows, pad = self._rows_for(key, ts, row)
            frames = self._reader(ti, n, slot).read_rgb(rows)
            # uint8 HWC -> float32 CHW in [0, 1] in numpy: the same values as torch's
            # .to(float32).div_(255), without waking torch's intra-op threads for each sample
            # (on 2 cores in the main process they cost ~5 ms a 320x240 frame).
            chw = frames.transpose(0, 3, 1, 2).astype(np.float32)
            np.divide(chw, np.float32(255.0), out=chw)
            images = torch.from_numpy(chw)
            item[key] = images if pad is not None else images[0]
            if pad is not None:
                item[f"{key}_is_pad"] = torch.from_numpy(pad)
        return item

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
