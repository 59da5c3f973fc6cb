#!/usr/bin/env python3
"""reel foundation benchmarks: reel beside the Python peer a user would write, in one run.

    make bench                                   # or: .venv/bin/python bench/bench_foundation.py
    .venv/bin/python bench/bench_foundation.py --episodes 500 --reps 3    # a quick try

Two measurements, each side by side in the same process and the same minute (method:
docs/benchmarks.md, shared/docs/performance-and-reliability.md). Machines are shared and
noisy, so the figures that matter are the ratios, not the absolute times.

1. Force-matrix decode (int16x100, row_diff_quantized): reel._core.decode_row_diff_frames
   vs the numpy decode, on k seeded synthetic frames. Outputs are asserted identical. The
   limit beside them: a memcpy of the output's bytes (np.copy into a fresh array).
2. Open + list a synthetic pooled_episodes_v1 task of 10,000 episodes:
   reel.open(p).episodes() vs os.scandir + pyarrow (serial and with 2 threads) vs
   `reel ls --json` as a process. The listings are asserted equal before timing.

The synthetic task is generated once under bench/results/ (gitignored) and reused.
Results: a Markdown table on stdout and in bench/results/foundation.md.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import reel
import reel._core

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"

# --------------------------------------------------------------------------- timing


def interleaved(funcs: dict[str, Callable[[], Any]], reps: int, label: str) -> dict[str, list[float]]:
    """Runs every function once untimed (warm-up: page cache, allocator, imports), then
    `reps` rounds of all of them in turn, timing each call. Interleaving spreads the
    machine's noise over every side instead of over whichever side ran last."""
    for name, fn in funcs.items():
        fn()
        gc.collect()
    times: dict[str, list[float]] = {name: [] for name in funcs}
    for r in range(reps):
        for name, fn in funcs.items():
            gc.collect()
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
        print(f"  [{label}] round {r + 1}/{reps}: "
              + ", ".join(f"{n} {times[n][-1] * 1e3:.1f} ms" for n in funcs), flush=True)
    return times


def best(ts: list[float]) -> float:
    return min(ts)


def med(ts: list[float]) -> float:
    return statistics.median(ts)


# --------------------------------------------------------------------------- 1. force matrix

SIDE, ROW = 250, 750
FLAT = SIDE * ROW  # 187,500 values per frame
SCALE = 100  # the int16x100 tier (the collector UI default)


def make_frames(k: int, seed: int) -> np.ndarray:
    """k smooth-ish (250,250,3) float32 frames in mN: a few Gaussian contact blobs each,
    fz >= 0 up to a few thousand mN, fx/fy a signed shear about a quarter of fz, plus
    a little sensor noise. Values above 327.67 mN clip at the int16x100 range."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:SIDE, 0:SIDE].astype(np.float32)
    frames = np.empty((k, SIDE, SIDE, 3), dtype=np.float32)
    for i in range(k):
        fz = np.zeros((SIDE, SIDE), dtype=np.float32)
        fx = np.zeros_like(fz)
        fy = np.zeros_like(fz)
        for _ in range(int(rng.integers(2, 6))):
            cy, cx = rng.uniform(0, SIDE, size=2)
            sigma = rng.uniform(6.0, 35.0)
            amp = rng.uniform(50.0, 3000.0)
            blob = amp * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2.0 * sigma * sigma))
            fz += blob
            shear = rng.normal(0.0, 0.25, size=2)
            fx += shear[0] * blob
            fy += shear[1] * blob
        noise = rng.normal(0.0, 0.5, size=(SIDE, SIDE, 3)).astype(np.float32)
        frames[i, :, :, 0] = fx + noise[:, :, 0]
        frames[i, :, :, 1] = fy + noise[:, :, 1]
        frames[i, :, :, 2] = fz + np.abs(noise[:, :, 2])
    return frames


def encode_int16(frames: np.ndarray, scale: int) -> tuple[np.ndarray, float]:
    """numpy int16xN encoder (reference-behaviour.md "Force matrix codec"), vectorised over
    frames: q = clip(rint(flat*scale), +-32767) as int16, per-row differences with int16
    wraparound, flattened to (k, 187500). Also returns the clipped fraction."""
    k = frames.shape[0]
    flat = frames.reshape(k, SIDE, ROW).astype(np.float32)
    scaled = np.rint(flat * np.float32(scale))
    clipped = float(np.mean(np.abs(scaled) > 32767))
    q = np.clip(scaled, -32767, 32767).astype(np.int16)
    d = np.empty_like(q)
    d[:, :, 0] = q[:, :, 0]
    with np.errstate(over="ignore"):
        d[:, :, 1:] = q[:, :, 1:] - q[:, :, :-1]  # int16 arithmetic wraps around
    return np.ascontiguousarray(d.reshape(k, FLAT)), clipped


def each(fn: Callable[[np.ndarray], Any], items: list[np.ndarray]) -> None:
    for x in items:
        fn(x)


def numpy_decode(enc: np.ndarray, scale: float) -> np.ndarray:
    """The numpy peer: int32 cumulative sum along each row of 750, cast to int16 (wrap),
    float32 / float32(scale)."""
    k = enc.shape[0]
    acc = enc.reshape(k, SIDE, ROW).astype(np.int32).cumsum(axis=2, dtype=np.int32)
    out = acc.astype(np.int16).astype(np.float32) / np.float32(scale)
    return out.reshape(k, SIDE, SIDE, 3)


def numpy_decode_default(enc: np.ndarray, scale: float) -> np.ndarray:
    """The same without dtype= on cumsum: numpy then accumulates int32 input in int64
    (the platform integer), which is what the one-liner most people write does."""
    k = enc.shape[0]
    acc = enc.reshape(k, SIDE, ROW).astype(np.int32).cumsum(axis=2)
    out = acc.astype(np.int16).astype(np.float32) / np.float32(scale)
    return out.reshape(k, SIDE, SIDE, 3)


def bench_force_matrix(k: int, reps: int, seed: int) -> dict:
    print(f"== force-matrix decode: k={k} frames int16x{SCALE}, {reps} interleaved rounds", flush=True)
    frames = make_frames(k, seed)
    enc, clipped = encode_int16(frames, SCALE)
    assert enc.dtype == np.int16 and enc.flags.c_contiguous and enc.shape == (k, FLAT)

    got = reel._core.decode_row_diff_frames(enc, float(SCALE))
    want = numpy_decode(enc, SCALE)
    want64 = numpy_decode_default(enc, SCALE)
    assert got.dtype == np.float32 and got.shape == (k, SIDE, SIDE, 3), (got.dtype, got.shape)
    assert np.array_equal(got, want), "reel and numpy decodes differ"
    assert np.array_equal(want, want64), "numpy decodes (int32 vs int64 cumsum) differ"
    # and both reproduce the quantised frames (round trip of the encoder)
    q = np.clip(np.rint(frames * np.float32(SCALE)), -32767, 32767).astype(np.int16)
    assert np.array_equal(got, q.astype(np.float32) / np.float32(SCALE)), "decode != quantised input"
    # One frame per call, each result dropped before the next (how a reader consumes rows):
    # the 750 kB outputs come back from the malloc heap, so this variant pays (almost) no
    # first-touch page faults on fresh memory; the 1-call variant pays them on 48 MB.
    singles = [enc[i:i + 1] for i in range(k)]
    assert all(s.flags.c_contiguous for s in singles)
    assert np.array_equal(np.concatenate([reel._core.decode_row_diff_frames(s, float(SCALE)) for s in singles]), want)
    assert np.array_equal(np.concatenate([numpy_decode(s, SCALE) for s in singles]), want)
    del got, want, want64, q

    # The physical limit beside it: a memcpy of the output's bytes into a fresh array from
    # the same allocator (np.copy of a contiguous array is one memcpy; it pays the same
    # first-touch page faults on 48 MB). The decode reads half as many bytes as it writes,
    # so a copy of the output size moves more memory than the decode does.
    out_like = np.ones((k, SIDE, SIDE, 3), dtype=np.float32)
    funcs = {
        "memcpy": lambda: np.copy(out_like),
        "reel": lambda: reel._core.decode_row_diff_frames(enc, float(SCALE)),
        "numpy": lambda: numpy_decode(enc, SCALE),
        "numpy_i64": lambda: numpy_decode_default(enc, SCALE),
        "reel_1": lambda: each(lambda s: reel._core.decode_row_diff_frames(s, float(SCALE)), singles),
        "numpy_1": lambda: each(lambda s: numpy_decode(s, SCALE), singles),
    }
    times = interleaved(funcs, reps, "decode")
    out_bytes = k * FLAT * 4
    res = {"k": k, "reps": reps, "out_bytes": out_bytes, "in_bytes": k * FLAT * 2,
           "clipped_fraction": clipped, "times": times}
    for name, ts in times.items():
        res[name] = {"best_s": best(ts), "median_s": med(ts),
                     "best_gbps": out_bytes / best(ts) / 1e9, "median_gbps": out_bytes / med(ts) / 1e9}
    return res


# --------------------------------------------------------------------------- 2. synthetic task

CHUNKS_SIZE = 1000
FPS = 30.0
TASK_NAME = "bench_10k"
GEN_VERSION = 1  # bump when the generator changes; a mismatch regenerates
DUMMY_MP4 = b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2"

ROW_SCHEMA = pa.schema([
    ("episode_index", pa.int64()), ("task_index", pa.int64()),
    ("start_frame_index", pa.int64()), ("end_frame_index", pa.int64()), ("length", pa.int64()),
    ("created_at", pa.float64()), ("duration_sec", pa.float64()),
    ("drop_stats", pa.string()), ("video_codec", pa.string()),
    ("calibration", pa.string()), ("force_matrix_specs", pa.string()),
])


def chunk_file(n: int) -> tuple[int, int]:
    return (n - 1) // CHUNKS_SIZE, (n - 1) % CHUNKS_SIZE


def episode_length(n: int) -> int:
    return 25 + (n * 7919) % 11  # 25..35 rows, deterministic per N


def created_at(n: int) -> float:
    return 1_790_000_000.0 + 60.0 * n


def data_table(n: int) -> pa.Table:
    L = episode_length(n)
    frame = np.arange(L, dtype=np.int64)
    t0 = created_at(n)
    return pa.table({
        "episode_index": pa.array(np.full(L, n, dtype=np.int64)),
        "frame_index": pa.array(frame),
        "timestamp": pa.array((frame / FPS).astype(np.float32)),
        "task_index": pa.array(np.zeros(L, dtype=np.int64)),
        "wall_time": pa.array(t0 + frame / FPS),
        "hardware_ns": pa.array(5_000_000_000 + n * 100_000_000_000 + frame * 33_333_333),
        "action": pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(L, dtype=np.float32)), 1),
    })


def row_table(n: int) -> pa.Table:
    L = episode_length(n)
    values = [[n], [0], [0], [L - 1], [L], [created_at(n)], [L / FPS], ["{}"], ["{}"], ["{}"], ["{}"]]
    return pa.Table.from_arrays([pa.array(v, f.type) for v, f in zip(values, ROW_SCHEMA)], schema=ROW_SCHEMA)


def write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def generate_task(root: Path, episodes: int) -> Path:
    """Writes the synthetic task once; a marker beside it (not inside: reel lists only
    its templates, but keep the task clean) records what was generated."""
    task = root / f"task_{episodes}"
    marker = root / f"task_{episodes}.complete"
    want = {"generator": GEN_VERSION, "episodes": episodes}
    if marker.exists():
        try:
            if json.loads(marker.read_text()) == want:
                print(f"== reusing synthetic task {task} ({episodes} episodes)", flush=True)
                return task
        except ValueError:
            pass
    if task.exists():
        shutil.rmtree(task)
    print(f"== generating synthetic task {task} ({episodes} episodes, one-off)", flush=True)
    t0 = time.perf_counter()
    made_dirs: set[Path] = set()
    for n in range(1, episodes + 1):
        c, f = chunk_file(n)
        paths = (task / f"data/chunk-{c:03d}/episode-{f:03d}.parquet",
                 task / f"meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet",
                 task / f"videos/chunk-{c:03d}/cam_rgb/episode-{f:03d}.mp4")
        for p in paths:
            if p.parent not in made_dirs:
                p.parent.mkdir(parents=True, exist_ok=True)
                made_dirs.add(p.parent)
        pq.write_table(data_table(n), str(paths[0]), compression="zstd")
        pq.write_table(row_table(n), str(paths[1]))
        paths[2].write_bytes(DUMMY_MP4)
        if n % 1000 == 0 or n == episodes:
            el = time.perf_counter() - t0
            print(f"  {n}/{episodes} episodes written ({el:.0f} s)", flush=True)
    info = {
        "format": "pooled_episodes_v1",
        "chunks_size": CHUNKS_SIZE,
        "data_path": "data/chunk-{c:03d}/episode-{f:03d}.parquet",
        "video_path": "videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext}",
        "episodes_path": "meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet",
        "codebase_version": "v3.0",
        "app_version": "bench",
        "fps": FPS,
        "video": True,
        "task_name": TASK_NAME,
        "features": {"action": {"dtype": "float32", "shape": [1]}},
        "cameras": {"cam_rgb": {"height": 480, "width": 640}},
        "video_extensions": {"cam_rgb": "mp4"},
        "devices": [],
        "device_names": {},
        "sensors": [],
        "sensor_dim": 256,
        "created_at": 1_789_999_000.0,
        "calibration": {},
        "total_episodes": episodes,
    }
    write_json(task / "meta/info.json", info)
    write_json(task / "meta/stats.json",
               {"action": {"count": 0, "mean": [0.0], "std": [1.0], "min": [0.0], "max": [0.0]}})
    (task / "meta/tasks.jsonl").write_text(json.dumps({"task_index": 0, "task": TASK_NAME}) + "\n")
    marker.write_text(json.dumps(want))
    print(f"  done in {time.perf_counter() - t0:.0f} s", flush=True)
    return task


# --------------------------------------------------------------------------- 2. the Python peer

CHUNK_RE = re.compile(r"chunk-(\d{3,})")
DATA_RE = re.compile(r"episode-(\d{3,})\.parquet")
ROW_RE = DATA_RE
SHARD_RE = re.compile(r"file-(\d{3,})\.parquet")
VIDEO_RE = re.compile(r"episode-(\d{3,})\.(.+)")


def _dirs(path: str) -> list[os.DirEntry]:
    try:
        return [e for e in os.scandir(path) if not e.name.startswith(".") and e.is_dir()]
    except FileNotFoundError:
        return []


def _files(path: str) -> list[os.DirEntry]:
    try:
        return [e for e in os.scandir(path) if not e.name.startswith(".") and e.is_file()]
    except FileNotFoundError:
        return []


def peer_scan(root: str) -> dict[int, dict]:
    """The three trees, as reel enumerates them (numbering: N = chunk*1000 + file + 1)."""
    eps: dict[int, dict] = {}

    def entry(c: int, f: int) -> dict:
        n = c * CHUNKS_SIZE + f + 1
        e = eps.get(n)
        if e is None:
            e = eps[n] = {"episode_index": n, "chunk": c, "file": f, "data": None, "row": None,
                          "row_source": "missing", "videos": {}}
        return e

    for cd in _dirs(os.path.join(root, "data")):
        if m := CHUNK_RE.fullmatch(cd.name):
            c = int(m[1])
            for fe in _files(cd.path):
                if fm := DATA_RE.fullmatch(fe.name):
                    entry(c, int(fm[1]))["data"] = f"data/{cd.name}/{fe.name}"
    for cd in _dirs(os.path.join(root, "videos")):
        if m := CHUNK_RE.fullmatch(cd.name):
            c = int(m[1])
            for sd in _dirs(cd.path):
                for fe in _files(sd.path):
                    if fm := VIDEO_RE.fullmatch(fe.name):
                        entry(c, int(fm[1]))["videos"][sd.name] = f"videos/{cd.name}/{sd.name}/{fe.name}"
    shards = []
    for cd in _dirs(os.path.join(root, "meta", "episodes")):
        if m := CHUNK_RE.fullmatch(cd.name):
            c = int(m[1])
            for fe in _files(cd.path):
                if fm := ROW_RE.fullmatch(fe.name):
                    e = entry(c, int(fm[1]))
                    e["row"], e["row_source"] = f"meta/episodes/{cd.name}/{fe.name}", "episode_file"
                elif SHARD_RE.fullmatch(fe.name):
                    shards.append(f"meta/episodes/{cd.name}/{fe.name}")
    for rel in shards:  # legacy multi-row shards: only where no per-episode file exists
        for n in pq.read_table(os.path.join(root, rel), columns=["episode_index"])["episode_index"].to_pylist():
            c, f = chunk_file(n)
            e = entry(c, f)
            if e["row"] is None:
                e["row"], e["row_source"] = rel, "legacy_shard"
    return eps


ROW_COLUMNS = ["episode_index", "length", "duration_sec"]


def read_row_read_table(path: str) -> pa.Table:
    return pq.read_table(path, columns=ROW_COLUMNS)  # what the pyarrow docs show first


def read_schema_read_schema(path: str) -> list[str]:
    return pq.read_schema(path).names


def read_row_parquet_file(path: str) -> pa.Table:
    # ParquetFile skips pyarrow.dataset's discovery/partitioning layer that read_table goes through
    return pq.ParquetFile(path).read(columns=ROW_COLUMNS, use_threads=False)


def read_schema_parquet_file(path: str) -> list[str]:
    return pq.ParquetFile(path).schema_arrow.names


PEER_READERS = {
    "read_table": (read_row_read_table, read_schema_read_schema),
    "parquet_file": (read_row_parquet_file, read_schema_parquet_file),
}


def peer_one(root: str, e: dict, how: str) -> dict:
    """One episode's dict: its episodes row (length, duration_sec) and data schema columns."""
    read_row, read_columns = PEER_READERS[how]
    length = duration = None
    if e["row"] is not None:
        t = read_row(os.path.join(root, e["row"]))
        if e["row_source"] == "episode_file" and t.num_rows == 1:
            i = 0
        else:
            i = t["episode_index"].to_pylist().index(e["episode_index"])
        length, duration = t["length"][i].as_py(), t["duration_sec"][i].as_py()
    columns = read_columns(os.path.join(root, e["data"])) if e["data"] else []
    return {
        "episode_index": e["episode_index"], "chunk": e["chunk"], "file": e["file"],
        "length": length, "duration_sec": duration, "has_data": e["data"] is not None,
        "row_source": e["row_source"], "videos": dict(sorted(e["videos"].items())), "columns": columns,
    }


def peer_episodes(root: str, threads: int = 0, how: str = "read_table") -> list[dict]:
    eps = peer_scan(root)
    ordered = [eps[n] for n in sorted(eps)]
    if threads <= 1:
        return [peer_one(root, e, how) for e in ordered]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda e: peer_one(root, e, how), ordered, chunksize=64))


def reel_bin() -> str | None:
    cand = os.environ.get("REEL_BIN") or str(REPO / "build/cmake/tools/reel")
    return cand if os.access(cand, os.X_OK) else None


def cli_ls(binary: str, root: str) -> bytes:
    return subprocess.run([binary, "ls", root, "--json"], check=True, stdout=subprocess.PIPE).stdout


def cli_info(binary: str, root: str) -> bytes:
    return subprocess.run([binary, "info", root], check=True, stdout=subprocess.PIPE).stdout


def drop_page_cache() -> bool:
    """Empties the page cache (root only): the next read of every file comes from the disk."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def bench_listing(episodes: int, reps: int, all_peers: bool, cold: bool) -> dict:
    RESULTS.mkdir(parents=True, exist_ok=True)
    task = str(generate_task(RESULTS, episodes))
    binary = reel_bin()
    peers = ["peer", "peer_2t", "peer_pf", "peer_pf_2t"] if all_peers else ["peer_pf_2t"]
    print(f"== open + list: {episodes} episodes, {reps} interleaved rounds, peers {peers} "
          f"(CLI: {binary or 'not found, skipped'})", flush=True)

    # Agreement first: the whole list of dicts, field by field, with and without the index.
    index = Path(task) / "meta/.episode_index.parquet"
    listing = Path(task) / "meta/.episode_index.listing.parquet"
    index.unlink(missing_ok=True)
    listing.unlink(missing_ok=True)
    got = reel.open(task, episode_index="off").episodes()
    assert not index.exists() and not listing.exists(), "episode_index='off' writes nothing"
    assert reel.open(task).episodes() == got and index.exists() and listing.exists(), \
        "the first listing writes the index"
    assert reel.open(task).episodes() == got, "a listing through the index agrees"
    how = {"peer": (0, "read_table"), "peer_2t": (2, "read_table"), "peer_pf": (0, "parquet_file"),
           "peer_pf_2t": (2, "parquet_file")}
    want = peer_episodes(task, *how[peers[-1]])
    assert len(got) == len(want) == episodes, (len(got), len(want), episodes)
    assert [e["length"] for e in got] == [episode_length(n) for n in range(1, episodes + 1)]
    assert all(e["columns"] == ["episode_index", "frame_index", "timestamp", "task_index", "wall_time",
                                "hardware_ns", "action"] for e in got)
    if got != want:
        for a, b in zip(got, want):
            if a != b:
                raise AssertionError(f"reel and peer differ:\n reel {a}\n peer {b}")
        raise AssertionError("reel and peer differ")
    for p in peers[:-1]:
        assert peer_episodes(task, *how[p]) == want
    if binary:
        cli = json.loads(cli_ls(binary, task))["episodes"]
        assert cli == got, "reel ls --json differs from reel.open().episodes()"
    del got, want

    funcs: dict[str, Callable[[], Any]] = {
        "reel": lambda: reel.open(task).episodes(),
        "reel_off": lambda: reel.open(task, episode_index="off").episodes(),
    }
    for p in peers:
        funcs[p] = (lambda p=p: peer_episodes(task, *how[p]))
    if binary:
        funcs["cli_info"] = lambda: cli_info(binary, task)
        funcs["cli"] = lambda: cli_ls(binary, task)
    times = interleaved(funcs, reps, "list")
    res = {"episodes": episodes, "reps": reps, "times": times, "cli": binary, "files": 3 * episodes}
    for name, ts in times.items():
        res[name] = {"best_s": best(ts), "median_s": med(ts)}
    if cold:
        res["cold"] = {}
        for name, fn in funcs.items():
            if not drop_page_cache():
                print("   (cold: cannot drop the page cache, not root; skipped)", flush=True)
                res.pop("cold")
                break
            t0 = time.perf_counter()
            fn()
            res["cold"][name] = time.perf_counter() - t0
            print(f"   cold {name}: {res['cold'][name]:.3f} s", flush=True)
    return res


# --------------------------------------------------------------------------- report


def machine_info() -> dict:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": os.cpu_count(),
        "cpu": model,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "pyarrow": pa.__version__,
        "numpy": np.__version__,
        "reel": reel.__version__,
        "load": " / ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def render(info: dict, fm: dict | None, ls: dict | None, load_end: str) -> str:
    out = ["# reel foundation benchmarks", ""]
    out.append(f"- date: {info['date']}")
    out.append(f"- machine: {info['nproc']} CPUs, {info['cpu']}, Linux {info['kernel']}")
    out.append(f"- Python {info['python']}, pyarrow {info['pyarrow']}, numpy {info['numpy']}, reel {info['reel']}")
    out.append(f"- load average (1/5/15 min) at start: {info['load']}; at end: {load_end}")
    out.append("")
    if fm:
        k = fm["k"]
        r = fm["reel"]
        out += [
            f"## Force-matrix decode (int16x{SCALE}, {k} frames, {fm['out_bytes'] / 1e6:.0f} MB float32 out, "
            f"best / median of {fm['reps']}, outputs identical)",
            "",
            "| decoder | best ms | median ms | GB/s (best) | GB/s (median) | peer/reel time, same call pattern (best / median) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        rows = ((f"reel._core.decode_row_diff_frames, 1 call x {k} frames", "reel", "reel"),
                (f"numpy, cumsum(dtype=int32), 1 call x {k} frames", "numpy", "reel"),
                (f"numpy, cumsum default (int64), 1 call x {k} frames", "numpy_i64", "reel"),
                (f"reel._core.decode_row_diff_frames, {k} calls x 1 frame", "reel_1", "reel_1"),
                (f"numpy, cumsum(dtype=int32), {k} calls x 1 frame", "numpy_1", "reel_1"),
                ("memcpy of the output size (np.copy into a fresh array), 1 call", "memcpy", "reel"))
        for label, key, ref in rows:
            if key not in fm:
                continue
            x, r = fm[key], fm[ref]
            out.append(
                f"| {label} | {x['best_s'] * 1e3:.1f} | {x['median_s'] * 1e3:.1f} | {x['best_gbps']:.2f} | "
                f"{x['median_gbps']:.2f} | "
                + ("(reference)" if key == ref else
                   f"{x['best_s'] / r['best_s']:.2f}x / {x['median_s'] / r['median_s']:.2f}x") + " |")
        out.append("")
        out.append("peer/reel > 1: reel is faster. GB/s counts the decoded float32 bytes.")
        out.append("")
        mc = fm.get("memcpy")
        if mc:
            out += [f"Limit (the last row): a memcpy of the {fm['out_bytes'] / 1e6:.0f} MB output into a fresh array (np.copy), "
                    f"{mc['best_s'] * 1e3:.1f} ms best / {mc['median_s'] * 1e3:.1f} ms median = "
                    f"{mc['best_gbps']:.2f} / {mc['median_gbps']:.2f} GB/s. reel 1 call x {k} frames reaches "
                    f"**{fm['reel']['best_gbps'] / mc['best_gbps'] * 100:.0f}%** of it (best) / "
                    f"{fm['reel']['median_gbps'] / mc['median_gbps'] * 100:.0f}% (median).", ""]
        out.append(f"Clipped values in the synthetic frames: {fm['clipped_fraction'] * 100:.1f}% "
                   f"(int16x{SCALE} saturates at 327.67 mN).")
        out.append("")
    if ls:
        e = ls["episodes"]
        out += [
            f"## Open + list a task of {e:,} episodes ({ls['files']:,} files; warm page cache, "
            f"best / median of {ls['reps']}, listings identical)",
            "",
            "| lister | best s | median s | peer/reel time (best / median) |" + (" cold s |" if "cold" in ls else ""),
            "|---|---:|---:|---:|" + ("---:|" if "cold" in ls else ""),
        ]
        rb, rm = ls["reel"]["best_s"], ls["reel"]["median_s"]
        labels = (("reel.open(p).episodes() (episode index)", "reel"),
                  ("reel.open(p, episode_index=\"off\").episodes() (every file read)", "reel_off"),
                  ("`reel info` (process)", "cli_info"),
                  ("peer: scandir + pq.read_table/read_schema, serial", "peer"),
                  ("peer: scandir + pq.read_table/read_schema, ThreadPoolExecutor(2)", "peer_2t"),
                  ("peer: scandir + pq.ParquetFile, serial", "peer_pf"),
                  ("peer: scandir + pq.ParquetFile, ThreadPoolExecutor(2)", "peer_pf_2t"),
                  ("`reel ls --json` (process, incl. JSON output)", "cli"))
        for label, key in labels:
            if key not in ls:
                continue
            x = ls[key]
            ratio = "(reference)" if key == "reel" else f"{x['best_s'] / rb:.2f}x / {x['median_s'] / rm:.2f}x"
            cold = ls.get("cold", {}).get(key)
            out.append(f"| {label} | {x['best_s']:.3f} | {x['median_s']:.3f} | {ratio} |"
                       + (f" {cold:.3f} |" if "cold" in ls else ""))
        out.append("")
        out.append("peer/reel > 1: reel is faster."
                   + (" Last column: one run each right after dropping the page cache (cold)." if "cold" in ls else ""))
        out.append("")
        peer_key = "peer_pf_2t" if "peer_pf_2t" in ls else "peer"
        out.append(f"Per episode, best: reel {rb / e * 1e6:.1f} µs with the index, "
                   f"{ls['reel_off']['best_s'] / e * 1e6:.0f} µs without; "
                   f"best peer ({peer_key}) {ls[peer_key]['best_s'] / e * 1e6:.0f} µs.")
        out.append("")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=64, help="force-matrix frames per decode call")
    ap.add_argument("--decode-reps", type=int, default=7)
    ap.add_argument("--episodes", type=int, default=100_000,
                    help="episodes of the synthetic task (generated once, ~13 min for 100,000)")
    ap.add_argument("--all-peers", action="store_true",
                    help="run every Python peer (default: the strongest, pq.ParquetFile on 2 threads)")
    ap.add_argument("--cold", action="store_true", help="also one cold-cache run per side (root only)")
    ap.add_argument("--reps", type=int, default=3, help="rounds of the listing benchmark")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--only", choices=("decode", "list"), help="run one benchmark only")
    ap.add_argument("--out", default=str(RESULTS / "foundation.md"))
    ap.add_argument("--render", metavar="JSON", help="re-render the table of a saved run's .json and exit")
    args = ap.parse_args()

    if args.render:
        raw = json.loads(Path(args.render).read_text())
        print(render(raw["machine"], raw["decode"], raw["list"], raw["load_end"]))
        return 0

    info = machine_info()
    print(f"reel {info['reel']} ({reel._core.__file__}); {info['nproc']} CPUs, {info['cpu']}; "
          f"load {info['load']}", flush=True)
    fm = bench_force_matrix(args.frames, args.decode_reps, args.seed) if args.only != "list" else None
    ls = bench_listing(args.episodes, args.reps, args.all_peers, args.cold) if args.only != "decode" else None
    load_end = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    text = render(info, fm, ls, load_end)
    print()
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    raw = {"machine": info, "load_end": load_end, "decode": fm, "list": ls}
    out.with_suffix(".json").write_text(json.dumps(raw, indent=2, default=str) + "\n")
    print(f"\nwritten: {out} (+ {out.with_suffix('.json').name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
