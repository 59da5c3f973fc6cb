"""reel.export / import_dataset / pack / upload / upload_status / check / simulate / serve: the CLI's commands for
Python.

Each takes the same options struct as its CLI command (reel._core.ExportOptions, ImportOptions,
PackOptions, UploadOptions, CheckOptions, SimulateOptions, ServeConfig: the C++ structs of
include/reel/*.h), filled from keyword arguments named like the struct's fields; an unknown
keyword raises TypeError listing the fields. Each returns what ``reel <command> --json``
prints, and raises a :class:`reel.Error` subclass where the CLI exits with an error.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable

from . import _core
from ._storage import storage as _storage


def _location(path_or_uri: str | os.PathLike) -> str:
    """A path (os.PathLike or str) or a URI string, as the core takes it."""
    return os.fspath(path_or_uri) if hasattr(path_or_uri, "__fspath__") else str(path_or_uri)


def options(cls: type, what: str, kwargs: dict[str, Any], o=None):
    """An instance of the bound options struct ``cls`` (or ``o``) with ``kwargs`` set as its fields."""
    o = cls() if o is None else o
    fields = option_fields(cls)
    for key, value in kwargs.items():
        if key not in fields:
            raise TypeError(f"{what}() got an unexpected keyword argument {key!r} "
                            f"(the fields of {cls.__name__}: {', '.join(fields)})")
        setattr(o, key, value)
    return o


def option_fields(cls: type) -> list[str]:
    """The public fields of a bound options struct, in definition order."""
    return [k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, property)]


def options_repr(o) -> str:
    return f"reel.{type(o).__name__}({', '.join(f'{k}={getattr(o, k)!r}' for k in option_fields(type(o)))})"


def info(path: str | os.PathLike, storage_options: dict | None = None) -> dict[str, Any]:
    """The summary of a pooled task or a LeRobot / bundle dataset (``reel info``): for a task
    {path, format, version, task_name, codebase_version, app_version, fps, chunks_size,
    total_episodes, episodes, frames, duration_sec, devices, cameras, video_extensions,
    video_slots, column_owners, features, sensors}; for a dataset its format's words (docs/cli.md).
    ``path`` is a path or a URI (reached with ``storage_options`` as for :func:`reel.open`).
    :attr:`reel.Task.info` is the task's info.json itself."""
    return _core.info_summary(_location(path), _storage(storage_options))


def show(path: str | os.PathLike, episode_index: int, keypoints: str | os.PathLike | None = None,
         storage_options: dict | None = None) -> dict[str, Any]:
    """One episode as ``reel show`` prints it: pooled N with its row, columns and sample values,
    the decoded force matrices, IMU and SLAM, its videos and (when the mirror is found, or given
    as ``keypoints``) its keypoints files; or a LeRobot episode_index / bundle manifest position."""
    mirror = "" if keypoints is None else os.fspath(keypoints)
    return _core.show_episode(_location(path), int(episode_index), mirror, _storage(storage_options))


def stats(path: str | os.PathLike, storage_options: dict | None = None) -> dict[str, Any]:
    """The task's stats.json blocks as ``reel stats`` prints them: {blocks: {name: {count,
    needs_rebuild, dim, mean, std, min, max}}}; :func:`rebuild_stats` recomputes them."""
    return _core.stats_summary(_location(path), _storage(storage_options))


def export(task: str | os.PathLike, out_dir: str | os.PathLike, storage_options: dict | None = None,
           **kwargs: Any) -> dict[str, Any]:
    """Exports a pooled task to LeRobot v3.0 (default), v2.1, bundles or the flat per-sample table
    (``reel export``).

    ``task`` and ``out_dir`` are paths or URIs (``s3://bucket/prefix``); ``storage_options`` (as
    for :func:`reel.open`) reaches both. A URI output is staged locally and uploaded with its
    ``meta/info.json`` (bundles: ``manifest.json``) last (docs/storage.md "Export to a URI").
    Keywords are the fields of :class:`reel.ExportOptions`: format ("lerobot-v3",
    "lerobot-v2.1", "bundle", "flat"), state_columns, action_columns, list_rules ({column: "last" |
    "drop"}), drop_columns, include_depth, image_prefix, depth_prefix, align, force_matrix
    ("full" | "fz" | "none"), imu_window, align_tolerance_s, canonical_gloves, robot_type,
    data_files_size_in_mb, video_files_size_in_mb, chunks_size, episodes, replace_existing
    (``--force``: without it an existing ``out_dir`` is refused). Returns {out_dir, format,
    episodes, frames, videos_copied, videos_reencoded, features, warnings}."""
    o = options(_core.ExportOptions, "export", kwargs)
    return _core.export_task(_location(task), _location(out_dir), o, _storage(storage_options))


def import_dataset(source: str | os.PathLike, task: str | os.PathLike, storage_options: dict | None = None,
                   **kwargs: Any) -> dict[str, Any]:
    """Imports a LeRobot v2.0/v2.1/v3.x or bundle dataset into a pooled task (``reel import``;
    the task is created if missing). ``source`` and ``task`` are directories or URIs
    (``s3://bucket/prefix/task``, both reached with ``storage_options`` as for :func:`reel.open`):
    on an object store the import runs in a local staging directory that reads through to the
    stored task and is then published with the push protocol (docs/storage.md), so readers
    never see a torn episode.
    Keywords: the fields of :class:`reel.ImportOptions` (task_name, renumber). An episode the
    task already holds with identical content is skipped; one whose number it holds with
    different content is refused unless renumber. Returns {task, episodes, frames,
    episode_indices, videos_copied, videos_reencoded, round_trip, skipped: [{source_episode,
    episode_index}], warnings}, and for a URI also pushed: {files_sent, bytes_sent}."""
    o = options(_core.ImportOptions, "import_dataset", kwargs)
    return _core.import_dataset(_location(source), _location(task), o, _storage(storage_options))


def migrate(task: str | os.PathLike, to: str | os.PathLike | None = None, no_backup: bool = False,
            dry_run: bool = False, keypoints: str | os.PathLike | None = None,
            restore: bool = False) -> dict[str, Any]:
    """Converts a v1.0 task (one ``<task>_NNNNNN/`` folder per session) into pooled_episodes_v1
    (``reel migrate``; docs/maintenance.md "migrate"). In place, the session folders go to
    ``_migrate_backup_<time>/`` unless ``no_backup``; ``to`` writes a new task there and leaves
    the source as it is; ``dry_run`` only plans. Depth PNG16/raw frame sequences become FFV1
    ``.mkv``; in place, the keypoints mirror (``keypoints``, default ``keypoints_output/<task>``
    beside the task) is re-keyed from ``<session>/`` to ``episode_NNNNNN/``. ``restore`` undoes
    an in-place migration made with a backup (``reel migrate --restore``). Safe to kill and to
    run again. Returns {task, already_pooled, dry_run, backup, sessions: [{session,
    episode_index, frames, videos}], frames, restore, nothing_to_restore, keypoints,
    keypoints_moved, warnings}."""
    return _core.migrate(os.fspath(task), os.fspath(to) if to is not None else "", no_backup, dry_run,
                         os.fspath(keypoints) if keypoints is not None else "", restore)


def pack(task: str | os.PathLike, episode_index: int, zip_path: str | os.PathLike | None = None,
         storage_options: dict | None = None, **kwargs: Any) -> dict[str, Any]:
    """Writes the upload zip slice of episode N (contract §9, ``reel pack``) to a local zip;
    ``zip_path`` defaults to ./<task>_ep{(N-1)%1000:06d}.zip. ``task`` is a path or a URI
    (``s3://bucket/prefix/task``, reached with ``storage_options`` as for :func:`reel.open`). Keywords: the fields of
    :class:`reel.PackOptions` (precompress, precompress_crf, precompress_preset,
    precompress_threads, replace_existing: without it an existing file is refused; with it only a
    zip is replaced). Returns {zip_path, episode_index, upload_episode_index, zip_bytes,
    entries: [{arcname, size, recompressed}]}."""
    o = options(_core.PackOptions, "pack", kwargs)
    return _core.pack_episode(_location(task), int(episode_index), "" if zip_path is None else os.fspath(zip_path), o,
                              _storage(storage_options))


def push(task: str | os.PathLike, destination: str | os.PathLike, storage_options: dict | None = None,
         **kwargs: Any) -> dict[str, Any]:
    """Mirrors a local task to ``destination`` (``reel push``; docs/storage.md): a URI
    (``s3://bucket/prefix/task``, reached with ``storage_options`` as for :func:`reel.open`) or a
    directory. Only what is missing is sent; a killed push can be re-run; a reader never sees a
    torn episode. Keywords: the fields of :class:`reel.PushOptions` (dry_run, verify,
    lock_lease_s). Returns {episodes, sent, resumed, present, files_sent, bytes_sent,
    task_files_sent, dry_run}."""
    from ._storage import storage as _storage

    o = options(_core.PushOptions, "push", kwargs)
    dest = os.fspath(destination) if hasattr(destination, "__fspath__") else str(destination)
    return _core.push(os.fspath(task), dest, o, _storage(storage_options))


def upload(task: str | os.PathLike, episodes: Iterable[int] | None = None,
           progress: Callable[[int, int, int, int], Any] | None = None,
           events: Callable[[dict[str, Any]], Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    """Uploads episodes to an import server through the task's outbox (``reel upload``;
    docs/upload.md): every episode that still has data when ``episodes`` is None; nothing is
    sent again that the server already confirmed, and a killed upload resumes.

    Keywords: the fields of :class:`reel.UploadOptions` (server is required; token,
    username/password, project_id, name, precompress, max_attempts, ...) and of
    :class:`reel.OutboxOptions` (watch, parallel, delete_after ("keep" | "confirmed"; True
    means "confirmed"), min_free_bytes, bwlimit_bytes_per_s, bwlimit_recording_bytes_per_s,
    rescan_s, backoff_initial_s, backoff_max_s). With ``watch=True`` it runs until
    interrupted (Ctrl-C raises KeyboardInterrupt once the jobs in flight stopped).

    Returns {episodes: [...], all_landed} with one dict per episode, {episode_index, ok,
    session_id, already_present, attempts, resumable, deleted, bytes} or {episode_index, ok:
    False, code, error, rule}; all_landed is False when any failed (the CLI's exit code 2).
    ``progress(episode_index, sent, total, attempt)`` is called as a slice goes out and
    ``events(dict)`` for each job event (the JSON lines of ``reel upload --events``); an
    exception either raises is reported as unraisable and does not stop the upload."""
    outbox_fields = set(option_fields(_core.OutboxOptions)) - {"upload"}
    ob = _core.OutboxOptions()
    delete_after = kwargs.pop("delete_after", "keep")
    if delete_after is True:
        delete_after = "confirmed"
    elif delete_after is False or delete_after is None:
        delete_after = "keep"
    if delete_after not in ("keep", "confirmed"):
        raise ValueError(f"upload(): delete_after must be 'keep' or 'confirmed', not {delete_after!r}")
    ob.delete_after = getattr(_core.DeleteAfter, delete_after)
    for key in [k for k in kwargs if k in outbox_fields]:
        setattr(ob, key, kwargs.pop(key))
    o = options(_core.UploadOptions, "upload", kwargs)
    if not o.server:
        raise TypeError("upload() needs server='http(s)://host[:port]'")
    ob.upload = o
    eps = [] if episodes is None else [int(n) for n in episodes]
    return _core.drain_outbox(os.fspath(task), eps, ob, progress, events)


def upload_status(task: str | os.PathLike) -> dict[str, Any]:
    """The task's upload outbox (``reel upload --status --json``): {jobs: [{server, project,
    episode_index, state, digest, bytes, zip_bytes, sent, attempts, last_error, rule,
    session_id, age_s, next_try_in_s}], counters: {name: value}}. Raises NotFoundError when
    nothing was ever uploaded from the task."""
    return _core.upload_status(os.fspath(task))


def check(path: str | os.PathLike, **kwargs: Any) -> dict[str, Any]:
    """Conformance report for a task or a folder of tasks (``reel check``; rules in
    docs/check-rules.md): {tasks: [{path, format, episodes, errors, warnings, findings: [{rule,
    severity, path, message}]}], errors, warnings, skipped: [{path, reason}]}. ``errors`` > 0 is
    the CLI's exit code 1; :func:`findings` flattens the report. Keywords: the fields
    of :class:`reel.CheckOptions` (io_threads, recursive, max_depth, deep); ``path`` may be a URI
    (``s3://bucket/prefix``, with ``storage_options`` as for :func:`reel.open`). Raises when the input cannot be read at all
    (the CLI's exit code 2)."""
    storage = _storage(kwargs.pop("storage_options", None))
    o = options(_core.CheckOptions, "check", kwargs)
    p = os.fspath(path) if hasattr(path, "__fspath__") else str(path)
    return _core.check(p, o, storage)


def findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings of a :func:`check` report, one list: dicts {task, rule, severity, path,
    message} (``task``: the task's path as given)."""
    return [{"task": t["path"], **f} for t in report["tasks"] for f in t["findings"]]


def simulate(task: str | os.PathLike, count: int = 2, *, episode_index: int = 0, replace: bool = False,
             abort_last: bool = False, profile: bool = False, **kwargs: Any) -> dict[str, Any]:
    """Records ``count`` episodes of the simulated multi-device rig into the task
    (``reel simulate``; created if missing). ``episode_index`` > 0 records that N once
    (``--episode``; ``replace`` records it again over its files), ``abort_last`` aborts the last
    episode instead of committing it, ``profile`` times the recorder apart from the signal
    generation. Keywords: the fields of :class:`reel.SimulateOptions` (seconds, fps, tier, seed,
    video, video_width, video_height). Returns {episodes: [{episode_index, length, committed}]},
    with profile also {record_cpu_s, record_wall_s, recorded_s}."""
    o = options(_core.SimulateOptions, "simulate", kwargs)
    return _core.simulate(os.fspath(task), int(count), o, int(episode_index), bool(replace), bool(abort_last),
                          bool(profile))


def delete(task: str | os.PathLike, episodes: Iterable[int], dry_run: bool = False) -> dict[str, Any]:
    """Deletes episodes' data and videos from a local task (``reel delete``): their episodes
    rows, stats and numbers stay, and the number can be recorded again. Every episode is looked
    at before the first is deleted, so a wrong number deletes nothing (NotFoundError, also for
    an episode deleted before). ``dry_run`` lists the files only. Returns {dry_run, episodes:
    [{episode_index, files}]}."""
    return _core.delete_episodes(os.fspath(task), [int(n) for n in episodes], bool(dry_run))


def split_episodes(path: str | os.PathLike, dry_run: bool = False) -> dict[str, Any]:
    """Splits the legacy multi-row episodes shards of a local task
    (``meta/episodes/chunk-CCC/file-CCC.parquet``) into one file per episode, rows unchanged, the
    shards removed last (``reel split-episodes``, docs/maintenance.md); crash-safe and idempotent.
    ``dry_run``: the plan only, nothing written. Returns {task, dry_run, episodes_split,
    episodes_kept, shards: [{shard, split, kept, files}]}."""
    return _core.split_episodes(os.fspath(path), bool(dry_run))


class Server:
    """The import server (``reel serve``, docs/serve.md) running on a thread of this process.

    Start it with :func:`reel.serve`; ``url`` is where clients (``reel.upload``, ``reel upload``)
    send slices. ``stop()`` stops accepting, lets in-flight requests finish and joins the
    thread; the server also stops when the object is collected. Usable as a context manager."""

    def __init__(self, core: _core.ServerThread, root: str):
        """Use :func:`reel.serve`."""
        self._core = core
        self.root = root

    @property
    def port(self) -> int:
        """The bound port (useful with port=0)."""
        return self._core.port

    @property
    def url(self) -> str:
        """``http://host:port`` of the server."""
        return f"http://{self._core.host}:{self._core.port}"

    def stop(self) -> None:
        """Stops the server; raises if it ended with an error."""
        self._core.stop()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "listening" if self._core.running else "stopped"
        return f"reel.Server({self.url}, root {self.root!r}, {state})"


def serve(root: str | os.PathLike, config: str | os.PathLike | None = None, **kwargs: Any) -> Server:
    """Starts the import server on a thread of this process and returns once it listens
    (``reel serve --root ROOT --config CONFIG``). ``config`` is the JSON file with tokens, users
    and limits (docs/serve.md; without tokens or users every request is refused); keywords are
    the fields of :class:`reel.ServeConfig` (host, port (0 = any free), workers, check,
    log_path, timeouts and limits) and override the file. ``reel.sha256_hex(token)`` and
    ``reel.hash_password(password)`` make the config's entries."""
    base = _core.load_serve_config(os.fspath(config)) if config is not None else _core.ServeConfig()
    base.root = os.fspath(root)
    o = options(_core.ServeConfig, "serve", kwargs, base)
    return Server(_core.ServerThread.start(o), o.root)


def backfill_hand_pose(task: str | os.PathLike, episodes: Iterable[int] | None = None,
                       keypoints: str | os.PathLike | None = None, dry_run: bool = False) -> dict[str, Any]:
    """Writes the keypoints mirror's hand_pose_3d landmarks into episodes' placeholder columns
    observation.left_hand_pose / observation.right_hand_pose (``reel backfill-hand-pose``,
    docs/maintenance.md): "Left" fills left, "Right" right; absent or "Unknown" hands and rows
    whose two hands carry one label fill nothing; keypoint rows without a data row are
    ignored and counted. Every other column unchanged, stats.json untouched, one episode
    transaction per changed episode; idempotent. ``episodes``: default every episode with a
    hand_pose_3d file; ``keypoints``: the mirror folder. Returns the report ``--json`` prints."""
    return _core.backfill_hand_pose(os.fspath(task), [int(n) for n in (episodes or [])],
                                    "" if keypoints is None else os.fspath(keypoints), bool(dry_run))


def add_columns(task: str | os.PathLike, episode_index: int, source: str | os.PathLike, replace: bool = False,
                drop_unmatched: bool = False, features: dict[str, Any] | str | None = None,
                dry_run: bool = False) -> dict[str, Any]:
    """Appends the columns of the parquet file ``source`` (a ``frame_index`` column and the new
    columns) to episode N's data, aligned by frame_index (``reel add-columns``,
    docs/maintenance.md; multi-device §4.7): data rows without a source row get the column's
    empty value; source rows without a data row are refused unless ``drop_unmatched``. The
    columns are declared in info.json features (``features``: {column: {frame, frame_axes,
    time, owner, source_slot, clock, encoding}}, multi-device §6.6) and counted in stats.json
    when the contract counts them, in one commit. ``replace`` rewrites columns the episode
    already has. Returns the report ``--json`` prints."""
    import json  # noqa: PLC0415

    text = features if isinstance(features, str) else ("" if features is None else json.dumps(features))
    return _core.add_columns(os.fspath(task), int(episode_index), os.fspath(source), bool(replace),
                             bool(drop_unmatched), text, bool(dry_run))


def write_overlay(dataset: str | os.PathLike, name: str, episode: int | str, rows: Any, replace: bool = False,
                  dry_run: bool = False, storage_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Writes overlay ``name`` of one episode of a bundle dataset (``reel overlay write``;
    docs/interop.md "Overlays"): seed 004's annotations that "attach as overlay files, never by
    rewriting a bundle". ``episode``: a manifest position or a bundle id. ``rows``: a parquet
    file path, or anything with ``__arrow_c_stream__`` (a pyarrow Table, a dict of columns is
    turned into one) holding either ``step`` (int64, one row per step 0..length-1: dense, e.g.
    progress labels) or ``start_step`` / ``end_step`` (int64, [start, end) within the episode:
    spans, e.g. language instructions), plus at least one value column. The file is written
    under a temporary name and renamed into place; ``replace`` replaces the episode's file of
    this overlay (else FileExistsError). Returns the report ``--json`` prints."""
    import tempfile  # noqa: PLC0415

    if isinstance(rows, (str, os.PathLike)):
        return _core.write_overlay(os.fspath(dataset), str(name), str(episode), os.fspath(rows), bool(replace),
                                   bool(dry_run), _storage(storage_options))
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.parquet as pq  # noqa: PLC0415

    table = pa.table(rows)
    with tempfile.TemporaryDirectory(prefix="reel-overlay-") as tmp:
        source = os.path.join(tmp, "overlay.parquet")
        pq.write_table(table, source)
        return _core.write_overlay(os.fspath(dataset), str(name), str(episode), source, bool(replace),
                                   bool(dry_run), _storage(storage_options))


def rebuild_stats(task: str | os.PathLike, dry_run: bool = False, verify: bool = False,
                  storage_options: dict | None = None) -> dict[str, Any]:
    """meta/stats.json recomputed from data/ with the contract's accumulator (``reel stats
    --rebuild``; docs/maintenance.md) and written through the episode transaction. ``verify``
    (``--verify``) or ``dry_run`` write nothing; the report's ``agrees`` is False and ``diffs``
    lists per block what differs when the stored file disagrees with the data; ``stats`` is the
    recomputed file. ``task`` is a path or a URI (reached with ``storage_options`` as for
    :func:`reel.open`)."""
    return _core.rebuild_stats(_location(task), dry_run, verify, _storage(storage_options))


def repair_scale(task: str | os.PathLike, apply: bool = False, all: bool = False,
                 episodes: Iterable[int] | None = None) -> dict[str, Any]:
    """Infers the scale of int16 force-matrix columns whose episodes row has no spec, by
    contract §7.2.1 (Σ fz plane ≈ the force sensor's fz; ``reel repair-scale``). A dry run
    unless ``apply``, which writes only force_matrix_specs of the decided rows. Each decision
    carries its ratio evidence; ``scale`` is None where the tool refuses to guess."""
    return _core.repair_scale(os.fspath(task), apply, all, list(episodes or []))
