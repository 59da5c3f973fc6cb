"""Episodes as rerun recordings (docs/view.md): ``reel view`` and ``reel.rerun.log_episode``.

One recording per episode (application id ``reel``, recording id ``<task>/episode_NNNNNN``),
on two timelines: ``timestamp`` (the data's episode-relative seconds) and ``hardware_ns``
(the device clock, so IMU samples and SLAM points sit at their own stamps). Entities:

    cameras/<slot>              RGB: the H.264/HEVC file as an AssetVideo with one frame
                                reference per data row (no decode, no re-encode); decoded
                                frames for a file rerun cannot play (not MP4, not H.264/HEVC)
    cameras/<slot>              depth: DepthImage in millimetres (meter=1000), turbo colormap;
                                a Pinhole on the slot where info.json declares its calibration
    signals/<column>            *_force, *_state, action and other fixed-size float columns
    imu/<column>                observation.imu samples at imu_ts_ns (6 series)
    gloves/<column>             16x16 pressure images, one per kept row
    force_matrix/<column>       the fz plane (250x250, mN at the episode's scale) per kept sample
    world/<frame>/<column>      SLAM poses (Transform3D) at their _ns stamp, the path as a line
    status/<column>             status.* changes as text events
    check                       the episode's `reel check` findings (static text log)

Decoded content (depth, fallback RGB, glove and force-matrix images) is capped by
``max_frames`` per entity, by keeping every k-th row; video assets and scalar series are
always whole (their cost is the video file's size and a few bytes per row).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
from typing import Any, Callable, Iterable

import numpy as np

from ._errors import NotFoundError
from ._viewing import decode_frames, episode_findings, float_rows, imu_time_s, written_whole

try:
    import rerun as rr
except ImportError as _e:  # an optional dependency: say how to get it
    raise ImportError("reel.rerun needs the rerun SDK: pip install rerun-sdk (requirements.txt pins it)") from _e

DEFAULT_MAX_FRAMES = 300
# The frame a trajectory is in when nothing declares one: the contract's old frame (002 §6.6,
# "键不在 = 旧帧", the checker's features.slam_frame warning).
_VIDEO_CODECS = {"h264": rr.VideoCodec.H264, "hevc": rr.VideoCodec.H265}


def _open(task: Any):
    if isinstance(task, (str, os.PathLike)):
        import reel
        return reel.open(os.fspath(task))
    return task


def _is_pooled(task: Any) -> bool:
    return hasattr(task, "frames") and hasattr(task, "imu")


def _entries(task: Any, episodes: Iterable[int] | None) -> dict[int, dict[str, Any]]:
    """The `reel ls` entries of `episodes` (None: every episode, one listing; else each found
    on its own, not by listing the task); KeyError naming the first the task does not hold."""
    if episodes is None:
        return {int(e["episode_index"]): e for e in task.episodes()}
    wanted = [int(n) for n in episodes]
    try:
        return {int(e["episode_index"]): e for e in task.episodes(episodes=wanted)}
    except NotFoundError:
        held = {int(e["episode_index"]) for e in task.episodes()}
        missing = next((n for n in wanted if n not in held), None)
        if missing is None:
            raise
        raise KeyError(f"{task.root}: episode {missing} is not in the task") from None


def _findings_of(task: Any, episodes: list[int] | None) -> list[dict[str, Any]]:
    """`reel check` findings for what is shown: a pooled task's chosen episodes and its
    task-level files (check --episodes: no walk over the whole task), else everything."""
    if episodes and _is_pooled(task):
        return task.check(episodes=episodes)
    return task.check()


def _task_name(task: Any) -> str:
    return str(task.info.get("task_name") or os.path.basename(str(task.root).rstrip("/")) or "task")


def recording_id(task: Any, episode: int) -> str:
    return f"{_task_name(task)}/episode_{int(episode):06d}"


def _stride(n: int, max_frames: int | None) -> int:
    return 1 if not max_frames or n <= max_frames else math.ceil(n / max_frames)


class _Episode:
    """What one episode's logging needs: its data table, row times and episode row."""

    def __init__(self, task: Any, episode: int, entry: dict[str, Any] | None = None):
        import pyarrow as pa
        self.task, self.n = task, int(episode)
        self.entry = entry if entry is not None else _entries(task, [self.n])[self.n]
        self.table = pa.table(task.data(self.n))
        names = self.table.column_names
        self.rows = self.table.num_rows
        ts = self.table["timestamp"] if "timestamp" in names else None
        self.timestamp = (ts.to_numpy().astype(np.float64) if ts is not None and pa.types.is_floating(ts.type)
                          else np.arange(self.rows, dtype=np.float64) / float(task.info.get("fps") or 30))
        # A foreign dataset may hold hardware_ns as another type (a list): then no device timeline.
        hw = self.table["hardware_ns"] if "hardware_ns" in names else None
        self.hardware_ns = (hw.to_numpy(zero_copy_only=False).astype(np.int64)
                            if hw is not None and pa.types.is_integer(hw.type) and hw.null_count == 0 else None)
        self.row = _episode_row(task, self.n) if _is_pooled(task) else {}

    def indexes(self, rows: np.ndarray) -> list:
        out = [rr.TimeColumn("timestamp", duration=self.timestamp[rows])]
        if self.hardware_ns is not None:
            out.append(rr.TimeColumn("hardware_ns", sequence=self.hardware_ns[rows].astype(np.int64)))
        return out

    def set_time(self, rec: Any, row: int, hardware_ns: int | None = None) -> None:
        rec.set_time("timestamp", duration=float(self.timestamp[row]))
        if hardware_ns is not None:
            rec.set_time("hardware_ns", sequence=int(hardware_ns))
        elif self.hardware_ns is not None:
            rec.set_time("hardware_ns", sequence=int(self.hardware_ns[row]))


def _episode_row(task: Any, n: int) -> dict[str, Any]:
    """The episode's meta row (slam_specs, force_matrix_specs, calibration), {} when absent."""
    import pyarrow.parquet as pq
    info = task.info
    size = int(info.get("chunks_size") or 1000)
    chunk, file = divmod(max(n - 1, 0), size)
    try:  # the contract's placeholders; a template with others gives no row, not an error
        rel = str(info.get("episodes_path", "")).format(c=chunk, f=file, chunk=chunk, file=file,
                                                         episode_chunk=chunk, episode_index=n)
    except (KeyError, ValueError, IndexError):
        return {}
    data = task.read_file(rel) if rel else None
    if data is None:
        return {}
    rows = [r for r in pq.read_table(io.BytesIO(data)).to_pylist() if r.get("episode_index") == n]
    return rows[0] if rows else {}


def _json_field(row: dict[str, Any], key: str) -> dict[str, Any]:
    try:
        value = json.loads(row.get(key) or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# ---- cameras ------------------------------------------------------------------------------

def _calibration_for(slot: str, calibration: dict[str, Any]) -> dict[str, Any] | None:
    """The intrinsics of `slot` from a calibration dict (contract: calibration/head_stereo.json
    for the head stereo slots, <slot-prefix>_calibration for the others): {"intrinsic":
    [fx, fy, cx, cy], "resolution": [w, h]} or None when the task declares none."""
    if slot.startswith("stereo_") and isinstance(calibration.get("head_stereo"), dict):
        entry, side = calibration["head_stereo"], "right_camera" if slot == "stereo_right" else "left_camera"
    else:
        prefix = slot.rsplit("_", 1)[0]
        entry = next((v for k, v in calibration.items() if isinstance(v, dict) and k.endswith("_calibration")
                      and k[: -len("_calibration")].rsplit("_", 1)[0] == prefix), None)
        side = "left_camera"
    camera = entry.get(side) if isinstance(entry, dict) else None
    if not isinstance(camera, dict) or len(camera.get("intrinsic") or []) != 4:
        return None
    return {"intrinsic": [float(v) for v in camera["intrinsic"]], "resolution": entry.get("resolution")}


def _log_pinhole(rec: Any, entity: str, calib: dict[str, Any] | None, width: int, height: int) -> None:
    if calib is None:
        return
    fx, fy, cx, cy = calib["intrinsic"]
    res = calib.get("resolution") or [width, height]
    sx, sy = width / float(res[0]), height / float(res[1])  # intrinsics at the video's size
    rec.log(entity, rr.Pinhole(focal_length=[fx * sx, fy * sy], principal_point=[cx * sx, cy * sy],
                               resolution=[width, height]), static=True)


def _video_codec(ep: _Episode, slot: str, depth: bool) -> str:
    codec = _json_field(ep.row, "video_codec")
    if depth:
        codec = (codec.get("depth") or {}).get(slot) or {}
    return str(codec.get("codec") or "") if isinstance(codec, dict) else ""


def _log_video_asset(rec: Any, ep: _Episode, slot: str, rel: str) -> int | None:
    """The file as an AssetVideo with a frame reference per data row; None when rerun cannot
    play it (the caller decodes instead)."""
    codec = _video_codec(ep, slot, depth=False)
    if not rel.endswith(".mp4") or codec not in _VIDEO_CODECS:
        return None
    data = ep.task.read_file(rel)
    if data is None:
        return None
    asset = rr.AssetVideo(contents=data, media_type="video/mp4")
    stamps = asset.read_frame_timestamps_nanos()
    rows = np.arange(min(len(stamps), ep.rows))  # row i = frame i
    frames = rows
    if len(stamps) and _is_pooled(ep.task) and ep.task.slot_fps(slot) != float(ep.task.info.get("fps") or 0):
        # A slot with its own fps: every row shows its frame by that rate, the last one held.
        rows = np.arange(ep.rows)
        frames = np.minimum(ep.task.slot_frames(slot, rows), len(stamps) - 1)
    entity = f"cameras/{slot}"
    rec.log(entity, asset, static=True)
    rec.send_columns(entity, indexes=ep.indexes(rows), columns=rr.VideoFrameReference.columns_nanos(stamps[frames]))
    return len(rows)


def _decoded_rows(ep: _Episode, max_frames: int | None) -> np.ndarray:
    return np.arange(0, ep.rows, _stride(ep.rows, max_frames))


def _log_decoded(rec: Any, ep: _Episode, slot: str, max_frames: int | None, batch: int = 32) -> int | None:
    """Decoded frames of a slot: RGB images, or depth images in mm with a colormap; None for a
    foreign depth stream (nothing logged)."""
    rows = _decoded_rows(ep, max_frames)
    entity = f"cameras/{slot}"
    for start in range(0, len(rows), batch):
        part = [int(r) for r in rows[start:start + batch]]
        frames = decode_frames(ep.task, ep.n, slot, part)
        if frames is None:
            return None
        for row, frame in zip(part, frames):
            ep.set_time(rec, row)
            if frame.dtype == np.uint16:
                rec.log(entity, rr.DepthImage(frame, meter=1000.0, colormap="turbo"))
            else:
                rec.log(entity, rr.Image(frame))
    return len(rows)


def _camera_slots(task: Any, entry: dict[str, Any]) -> list[tuple[str, str]]:
    """(slot, file relative to the root) of every video of the episode."""
    videos = entry.get("videos") or {}
    if isinstance(videos, dict) and videos:  # a foreign dataset's value is {path, from_timestamp, ...}
        return sorted((k, v if isinstance(v, str) else "") for k, v in videos.items())
    features = task.info.get("features") or {}
    return [(k, "") for k, v in features.items() if isinstance(v, dict) and v.get("dtype") == "video"]


def _log_cameras(rec: Any, ep: _Episode, max_frames: int | None, summary: dict[str, Any]) -> None:
    info = ep.task.info
    cameras = info.get("cameras") or {}
    calibration = _json_field(ep.row, "calibration") or info.get("calibration") or {}
    for slot, rel in _camera_slots(ep.task, ep.entry):
        is_rgb = slot in cameras or not _is_pooled(ep.task)
        frames = _log_video_asset(rec, ep, slot, rel) if is_rgb and rel else None
        kind = "video_asset"
        if frames is None:
            frames, kind = _log_decoded(rec, ep, slot, max_frames), ("decoded_rgb" if is_rgb else "depth")
        if frames is None:
            summary["cameras"][slot] = {"kind": "skipped_depth_map", "frames": 0}
            continue
        size = cameras.get(slot) or {}
        if not size and _is_pooled(ep.task):
            first = ep.task.frames(ep.n, slot, [0])[0]
            size = {"width": first.shape[1], "height": first.shape[0]}
        if size:
            _log_pinhole(rec, f"cameras/{slot}", _calibration_for(slot, calibration),
                         int(size["width"]), int(size["height"]))
        summary["cameras"][slot] = {"kind": kind, "frames": int(frames)}


# ---- signals --------------------------------------------------------------------------------

_SERIES_NAMES = {"_force": ["fx", "fy", "fz"], "observation.imu": ["ax", "ay", "az", "gx", "gy", "gz"]}


def _series_names(name: str, width: int) -> list[str]:
    for suffix, names in _SERIES_NAMES.items():
        if name.endswith(suffix) and len(names) == width:
            return names
    return [str(i) for i in range(width)]


def _log_signals(rec: Any, ep: _Episode, summary: dict[str, Any]) -> None:
    """Small fixed-size float columns (force, state, action, ...) and plain float observation
    columns as scalar series."""
    for name in ep.table.column_names:
        if not (name.startswith("observation.") or name == "action") or name.endswith("_hand_pose"):
            continue
        got = float_rows(ep.table, name)
        limit = 64 if name in ("observation.state", "action") else 8  # LeRobot's state vector
        if got is None or got[1].shape[1] > limit or len(got[0]) == 0:
            continue
        rows, values = got
        entity = f"signals/{name}"
        rec.log(entity, rr.SeriesLines(names=_series_names(name, values.shape[1])), static=True)
        rec.send_columns(entity, indexes=ep.indexes(rows), columns=rr.Scalars.columns(scalars=values))
        summary["signals"][name] = int(len(rows))


def _log_imu(rec: Any, ep: _Episode, summary: dict[str, Any]) -> None:
    """observation.imu samples at their own imu_ts_ns on the hardware_ns timeline (the SDK's
    device clock, 002 §4.2); on the timestamp timeline by imu_time_s."""
    if not _is_pooled(ep.task) or "observation.imu" not in ep.table.column_names:
        return
    imu = ep.task.imu(ep.n)
    if len(imu["ts_ns"]) == 0:
        return
    rows, ts_ns = imu["row"].astype(np.int64), imu["ts_ns"].astype(np.int64)
    entity = "imu/observation.imu"
    rec.log(entity, rr.SeriesLines(names=_SERIES_NAMES["observation.imu"]), static=True)
    rec.send_columns(entity, indexes=[rr.TimeColumn("timestamp", duration=imu_time_s(ep.timestamp, rows, ts_ns)),
                                      rr.TimeColumn("hardware_ns", sequence=ts_ns)],
                     columns=rr.Scalars.columns(scalars=imu["values"].astype(np.float64)))
    summary["imu"] = int(len(ts_ns))


def _log_gloves(rec: Any, ep: _Episode, max_frames: int | None, summary: dict[str, Any]) -> None:
    """Glove pressure (observation.<glove>, 256 values) as a 16x16 image per kept row, the
    left glove of a pooled task in canonical order (Task.glove; multi-device §4.5)."""
    for name in ep.table.column_names:
        if not name.endswith("_glove"):
            continue
        got = float_rows(ep.table, name)
        if got is None or got[1].shape[1] != 256:
            continue
        rows, values = got
        if _is_pooled(ep.task):
            values = ep.task.glove(ep.n, name).reshape(-1, 256)[rows]
        keep = np.arange(0, len(rows), _stride(len(rows), max_frames))
        for i in keep:
            ep.set_time(rec, int(rows[i]))
            rec.log(f"gloves/{name}", rr.Tensor(values[i].reshape(16, 16).astype(np.float32), dim_names=["row", "col"]))
        summary["gloves"][name] = int(len(keep))


def _log_force_matrices(rec: Any, ep: _Episode, max_frames: int | None, summary: dict[str, Any]) -> None:
    """The fz plane of each kept force-matrix sample, in mN at the episode's own scale."""
    if not _is_pooled(ep.task):
        return
    for name in ep.table.column_names:
        if not name.endswith("_force_matrix"):
            continue
        lengths = ep.table[name].combine_chunks().value_lengths().to_numpy(zero_copy_only=False)
        rows = np.nonzero(np.nan_to_num(lengths.astype(np.float64)) > 0)[0]
        stamps = ep.table[name + "_ns"].to_numpy(zero_copy_only=False) if name + "_ns" in ep.table.column_names else None
        keep = rows[np.arange(0, len(rows), _stride(len(rows), max_frames))]
        for row in keep:
            matrix = ep.task.force_matrix(ep.n, int(row), name)
            if matrix is None:
                continue
            ep.set_time(rec, int(row), int(stamps[row]) if stamps is not None and stamps[row] > 0 else None)
            rec.log(f"force_matrix/{name}", rr.Tensor(matrix[:, :, 2], dim_names=["y", "x"]))
        summary["force_matrices"][name] = int(len(keep))


# ---- SLAM, status, findings ----------------------------------------------------------------

def _log_slam(rec: Any, ep: _Episode, summary: dict[str, Any]) -> None:
    """Each trajectory's poses at their own _ns stamp (the row's time on the timestamp
    timeline) and the whole path as a static line strip, under world/<frame>/."""
    if not _is_pooled(ep.task):
        return
    for name in ep.table.column_names:
        if not name.endswith("slam_trajectory"):
            continue
        slam = ep.task.slam(ep.n, name)
        points = slam["points"]
        if len(points) == 0:
            continue
        rows, ns = slam["row"].astype(np.int64), slam["ns"].astype(np.int64)
        hw = np.where(ns > 0, ns, ep.hardware_ns[rows] if ep.hardware_ns is not None else 0)
        # The frame by the contract's authority order (Task.slam_spec, reel/decode.h ResolveSlamSpec).
        entity = f"world/{ep.task.slam_spec(ep.n, name)['frame']}/{name}"
        rec.send_columns(entity, indexes=[rr.TimeColumn("timestamp", duration=ep.timestamp[rows]),
                                          rr.TimeColumn("hardware_ns", sequence=hw)],
                         columns=rr.Transform3D.columns(translation=points[:, 1:4], quaternion=points[:, 4:8]))
        rec.log(entity + "/path", rr.LineStrips3D([points[:, 1:4]]), static=True)
        summary["slam"][name] = {"points": int(len(points)), "entity": entity}


def _log_status(rec: Any, ep: _Episode, summary: dict[str, Any]) -> None:
    """status.* columns as a text event at each change of value."""
    for name in ep.table.column_names:
        if not name.startswith("status."):
            continue
        values = ep.table[name].to_pylist()
        last, events = None, 0
        for row, value in enumerate(values):
            if value is None or value == last:
                continue
            ep.set_time(rec, row)
            rec.log(f"status/{name[len('status.'):]}", rr.TextLog(str(value)))
            last, events = value, events + 1
        summary["status"][name] = events


def _log_findings(rec: Any, ep: _Episode, findings: list[dict[str, Any]] | None, summary: dict[str, Any]) -> None:
    """The `reel check` findings about this episode's files (and the task-wide ones)."""
    if findings is None:
        findings = _findings_of(ep.task, [ep.n])
    levels = {"error": rr.TextLogLevel.ERROR, "warning": rr.TextLogLevel.WARN}
    mine = episode_findings(findings, ep.entry, with_task_metadata=True)
    for f in mine:
        text = f"[{f.get('rule')}] {f.get('path')}: {f.get('message')}"
        rec.log("check", rr.TextLog(text, level=levels.get(str(f.get("severity")), rr.TextLogLevel.INFO)), static=True)
    summary["findings"] = len(mine)


# ---- entry points ----------------------------------------------------------------------------

def log_episode(task: Any, episode: int, recording: Any = None, *, max_frames: int | None = DEFAULT_MAX_FRAMES,
                findings: list[dict[str, Any]] | None = None, entry: dict[str, Any] | None = None) -> dict[str, Any]:
    """Logs episode N of `task` (a path, a reel.Task or a reel.Dataset) into `recording`
    (a rerun.RecordingStream; None = a new one with recording id <task>/episode_NNNNNN,
    not connected to any sink). Returns a summary of what was logged: per camera slot its kind
    and frame count, per signal its row count, IMU samples, SLAM points, findings.
    `max_frames` caps decoded images per entity (None = every row); `findings` are the task's
    check findings when already known (else this episode and the task-level files are
    checked); `entry` is the episode's `reel ls` entry when the caller listed the task already
    (else it is listed)."""
    task = _open(task)
    ep = _Episode(task, episode, entry)
    rec = recording if recording is not None else rr.RecordingStream("reel", recording_id=recording_id(task, episode))
    summary: dict[str, Any] = {"task": _task_name(task), "episode": ep.n, "rows": ep.rows, "cameras": {},
                               "signals": {}, "imu": 0, "gloves": {}, "force_matrices": {}, "slam": {}, "status": {}}
    summary["labels"] = device_labels(task)
    rec.send_recording_name(recording_id(task, episode))
    _log_cameras(rec, ep, max_frames, summary)
    _log_signals(rec, ep, summary)
    _log_imu(rec, ep, summary)
    _log_gloves(rec, ep, max_frames, summary)
    _log_force_matrices(rec, ep, max_frames, summary)
    _log_slam(rec, ep, summary)
    _log_status(rec, ep, summary)
    _log_findings(rec, ep, findings, summary)
    rec.send_blueprint(blueprint(summary), make_active=True, make_default=True)
    summary["recording"] = rec
    return summary


def device_labels(task: Any) -> dict[str, str]:
    """Who wrote what, for the viewer's labels: each slot (device_names) and each column bound
    to a device (devices[].sensor_column / sensor_columns, multi-device §6.4) -> the device's
    name. A column bound to two devices keeps the first (`reel check` warns devices.binding)."""
    info = task.info if _is_pooled(task) else {}
    labels = {str(k): str(v) for k, v in (info.get("device_names") or {}).items() if v}
    for d in info.get("devices") or []:
        bound = ([d["sensor_column"]] if isinstance(d.get("sensor_column"), str) else []) + \
            [c for c in d.get("sensor_columns") or [] if isinstance(c, str)]
        for c in bound:
            column = c if c.startswith("observation.") else "observation." + c
            if d.get("name"):
                labels.setdefault(column, str(d["name"]))
    return labels


def _label(summary: dict[str, Any], key: str) -> str:
    device = summary.get("labels", {}).get(key)
    return f"{key} ({device})" if device else key


def blueprint(summary: dict[str, Any]) -> Any:
    """The default layout for a summary of log_episode: cameras in a grid, the SLAM world in
    3D, then signals, IMU, glove and force-matrix images, and the text events. Camera, glove
    and force-matrix views are labelled with the device that wrote them (device_labels)."""
    import rerun.blueprint as rrb
    cameras = [rrb.Spatial2DView(origin=f"cameras/{slot}", name=_label(summary, slot)) for slot in summary["cameras"]]
    tensors = [rrb.TensorView(origin=f"gloves/{c}", name=_label(summary, c)) for c in summary["gloves"]]
    tensors += [rrb.TensorView(origin=f"force_matrix/{c}", name=_label(summary, c)) for c in summary["force_matrices"]]
    left = [rrb.Grid(*cameras, name="cameras")] if cameras else []
    if summary["slam"]:
        left.append(rrb.Spatial3DView(origin="world", name="SLAM"))
    right = [rrb.TimeSeriesView(origin="signals", name="signals")]
    if summary["imu"]:
        right.append(rrb.TimeSeriesView(origin="imu", name="IMU"))
    if tensors:
        right.append(rrb.Tabs(*tensors, name="gloves and force matrices"))
    right.append(rrb.TextLogView(origin="/", contents=["status/**", "check"], name="status and check"))
    return rrb.Blueprint(rrb.Horizontal(rrb.Vertical(*left), rrb.Vertical(*right), column_shares=[3, 2]),
                         collapse_panels=False)


def _save_path(save: str, task: Any, episode: int, many: bool) -> str:
    if not many and save.endswith(".rrd"):
        return save
    os.makedirs(save, exist_ok=True)
    return os.path.join(save, f"{_task_name(task)}_episode_{episode:06d}.rrd")


def view(task: Any, episodes: Iterable[int] | None = None, *, save: str | None = None, serve: bool = False,
         spawn: bool = False, bind: str = "127.0.0.1", web_port: int | None = None, grpc_port: int | None = None,
         max_frames: int | None = DEFAULT_MAX_FRAMES,
         progress: Callable[[int, int, int], None] | None = None) -> dict[str, Any]:
    """Builds one recording per episode (all episodes when None) and sends it to the sinks
    asked for: `save` (an .rrd file for one episode, else a directory of
    <task>_episode_NNNNNN.rrd), `spawn` (the native viewer), `serve` (rerun's gRPC server and
    web viewer on `bind`, 127.0.0.1 by default, serving the saved files; a temporary directory
    holds them when `save` is not given). Returns {"task", "episodes": [summary, ...], "files",
    "url"}, and with `serve` "server": the rerun process (a subprocess.Popen) to wait on or
    terminate, and "scratch": the temporary directory to remove after it, if one was made."""
    task = _open(task)
    # One lookup of the episodes shown (no listing of the task when they are given) and one
    # check, whatever the number of episodes shown.
    entries = _entries(task, None if episodes is None else [int(e) for e in episodes])
    chosen = list(entries)
    findings = _findings_of(task, None if episodes is None else chosen)
    out: dict[str, Any] = {"task": _task_name(task), "episodes": [], "files": [], "url": None}
    if serve and not save:  # the caller removes out["scratch"] once the server is done
        import tempfile
        save = out["scratch"] = tempfile.mkdtemp(prefix="reel-view-")
    for i, n in enumerate(chosen):
        rec = rr.RecordingStream("reel", recording_id=recording_id(task, n))
        path = _save_path(save, task, n, len(chosen) > 1 or serve) if save else None
        # Written whole or not at all: an episode that fails half-way (a damaged video)
        # leaves no partial .rrd, and an older one stays.
        with written_whole(path) if path else contextlib.nullcontext() as temp:
            if temp:
                rec.save(temp)
            if spawn:
                rec.spawn(connect=True)
            try:
                summary = log_episode(task, n, rec, max_frames=max_frames, findings=findings, entry=entries[n])
            finally:
                rec.disconnect()  # flushes, and closes a file with its footer (RrdReader needs it)
        if path:
            out["files"].append(path)
        summary.pop("recording")
        out["episodes"].append(summary)
        if progress:
            progress(i + 1, len(chosen), n)
    if serve:
        out["server"], out["url"] = _serve(out["files"], bind, grpc_port or 9876, web_port or 9090)
    return out


def _serve(files: list[str], bind: str, grpc_port: int, web_port: int) -> tuple[Any, str]:
    """rerun's own server (the `rerun --serve-web` program) over the saved files: unlike the
    SDK's serve_grpc it takes a bind address, so nothing listens beyond `bind`. The program
    is started directly (`python -m rerun` would put a wrapper process between us and it, and
    a wrapper killed leaves the server running), and on Linux it is told to end with us."""
    import subprocess

    import rerun_cli
    exe = os.path.join(os.path.dirname(rerun_cli.__file__), "rerun")
    argv = [exe, "--serve-web", "--bind", bind, "--port", str(grpc_port), "--web-viewer-port", str(web_port), *files]
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_end_with_parent)
    return server, f"http://{bind}:{web_port}/?url=rerun%2Bhttp%3A%2F%2F{bind}%3A{grpc_port}%2Fproxy"


def _end_with_parent() -> None:
    """In the child, before exec: SIGTERM when the parent dies (Linux prctl PR_SET_PDEATHSIG)."""
    import ctypes
    import signal
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass  # not Linux: the caller's terminate() is the only way
