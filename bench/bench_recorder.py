#!/usr/bin/env python3
"""reel recorder benchmark: recording the simulated rig (video off) beside a pyarrow writer that
writes the same rows the way the reference collector does, in one run.

    make bench                                   # or: .venv/bin/python bench/bench_recorder.py
    .venv/bin/python bench/bench_recorder.py --episodes 1 --seconds 5     # a quick try

CPU: per episode, the sides take turns (reel, peer, reel, peer, ...) after one untimed warm-up
episode each. reel: `reel simulate --count 1 --profile` pre-generates the rows and reports the
CPU/wall seconds of AppendFrame + Commit (fsyncs included). peer: the reference collector's
write path (write_frame_row per frame, end_episode), fed from reel's own data parquet of the same
episode; the inputs are built before the clock starts. The force-matrix encode of the collector's
pump thread is timed with the peer, since reel's recorder encodes the float frames itself.
Memory: peak RSS of separate processes recording one episode: reel without --profile (rows
streamed), the peer streaming its inputs from parquet, and the same peer process that only
builds the inputs (baseline). Results: a table on stdout, bench/results/recorder.json (+ .md).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
WORK = RESULTS / "recorder"
sys.path.insert(0, str(HERE))
from collector_peer import EXTRA, MATRIX_SHAPE, SENSOR_DIM, TASK, PeerWriter, chunk_file, encode_force_matrix  # noqa: E402

# --------------------------------------------------------------------------- inputs from reel's rows


def task_setup(reel_task: str) -> dict:
    """What the capture application hands the collector at start_episode, taken from reel's task."""
    info = json.load(open(os.path.join(reel_task, "meta", "info.json"), encoding="utf-8"))
    row = pq.read_table(os.path.join(reel_task, "meta/episodes/chunk-000/episode-000.parquet")).to_pylist()[0]
    schema = pq.read_schema(os.path.join(reel_task, "data/chunk-000/episode-000.parquet"))
    sensors = [f.name[12:] for f in schema if f.name.startswith("observation.")
               and pa.types.is_fixed_size_list(f.type) and f.type.list_size == SENSOR_DIM]
    specs = json.loads(row["force_matrix_specs"])
    return {"fps": info["fps"], "sensors": sensors, "devices": info["devices"],
            "device_ids": [f.name[7:] for f in schema if f.name.startswith("status.")],
            "calibration": json.loads(row["calibration"]),
            "matrix_scale": {k[12:]: int(v["scale"]) for k, v in specs.items()}}


def frame_inputs(batch: pa.RecordBatch, setup: dict) -> list[dict]:
    """reel's rows turned back into what the device threads hand the collector per frame: numpy
    float32 arrays for gloves, (ts, 6 floats) IMU tuples, Python lists/ints for gripper values,
    and the force matrix as the float32 (250, 250, 3) frame the pump thread encodes."""
    sensors, matrices = setup["sensors"], {}
    for name in batch.schema.names:
        if name.endswith("_force_matrix"):
            col = batch.column(name)
            lens = col.value_lengths().to_numpy(zero_copy_only=False)
            q = col.flatten().to_numpy().reshape(-1, MATRIX_SHAPE[0], 750)
            scale = np.float32(setup["matrix_scale"][name[12:]])
            frames = iter((np.cumsum(q, axis=2, dtype=np.int32).astype(np.int16).astype(np.float32) / scale)
                          .reshape(-1, *MATRIX_SHAPE))
            matrices[name[12:]] = [next(frames) if n else None for n in lens]
    skip = {f"observation.{sn}{s}" for sn in sensors for s in ("", "_imu_quat", "_imu_valid")}
    skip |= {"observation.imu", "observation.left_hand_pose", "observation.right_hand_pose"}
    plain = batch.select([n for n in batch.schema.names if not n.endswith("_force_matrix")]).to_pylist()
    out = []
    for i, r in enumerate(plain):
        gripper = {}
        for name, v in r.items():
            if name.startswith("observation.") and name not in skip and v not in (0, []):
                gripper[name[12:]] = v  # no key when there is no new sample
        gripper_mats = {k: fr[i] for k, fr in matrices.items() if fr[i] is not None}
        out.append({
            "frame_index": r["frame_index"], "timestamp_s": r["timestamp"], "wall_time": r["wall_time"],
            "hardware_ns": r["hardware_ns"], "extra": {k: r[k] for k in EXTRA if k in r},
            "sensors": {sn: np.asarray(r[f"observation.{sn}"], np.float32) for sn in sensors},
            "imu_samples": [(t, *s) for t, s in zip(r.get("imu_ts_ns") or [], r.get("observation.imu") or [])],
            "glove_imu": {sn: (np.asarray(r[f"observation.{sn}_imu_quat"], np.float32),
                               np.asarray(r[f"observation.{sn}_imu_valid"], np.float32))
                          for sn in sensors if f"observation.{sn}_imu_quat" in r},
            "gripper": gripper, "matrices": gripper_mats})
    return out


def data_path(task: str, n: int) -> str:
    c, f = chunk_file(n)
    return os.path.join(task, f"data/chunk-{c:03d}/episode-{f:03d}.parquet")


def peer_frame(w: PeerWriter, f: dict, scales: dict) -> float:
    """One frame: the pump thread's matrix encode, then write_frame_row. Returns the encode's CPU s."""
    e0 = time.process_time()
    gripper = dict(f["gripper"])
    for key, frame in f["matrices"].items():
        gripper[key] = encode_force_matrix(frame, scales[key])
    enc = time.process_time() - e0
    w.write_frame_row(f["frame_index"], f["timestamp_s"], f["wall_time"], f["hardware_ns"], f["sensors"],
                      f["imu_samples"], f["glove_imu"], gripper, f["extra"])
    return enc


def peer_episode(reel_task: str, peer_task: str, n: int) -> dict:
    """Records episode n on the peer from reel's rows of episode n; times the recording only."""
    setup = task_setup(reel_task)
    inputs = frame_inputs(pq.read_table(data_path(reel_task, n)).combine_chunks().to_batches()[0], setup)
    w = PeerWriter(peer_task, **setup)
    w.start_episode(n)
    gc.collect()
    c0, t0, enc = time.process_time(), time.perf_counter(), 0.0
    for f in inputs:
        enc += peer_frame(w, f, setup["matrix_scale"])
    w.end_episode()
    return {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0, "encode_cpu_s": enc}


def peer_child(reel_task: str, peer_task: str, n: int, load_only: bool) -> None:
    """The memory run: inputs streamed from parquet a few rows at a time, as a live rig delivers them."""
    setup = task_setup(reel_task)
    w = PeerWriter(peer_task, **setup)
    w.start_episode(n)
    for batch in pq.ParquetFile(data_path(reel_task, n)).iter_batches(batch_size=16):
        for f in frame_inputs(batch, setup):
            if not load_only:
                peer_frame(w, f, setup["matrix_scale"])
    if not load_only:
        w.end_episode()


# --------------------------------------------------------------------------- reel side, processes


def reel_bin() -> str | None:
    cand = os.environ.get("REEL_BIN") or str(REPO / "build/cmake/tools/reel")
    return cand if os.access(cand, os.X_OK) else None


# A fork of this (large) process would start with its high-water RSS, so the measured command is
# started by a small fresh Python that reports the grandchild's own peak RSS (os.wait4).
WRAPPER = ("import os, subprocess, sys; p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL); "
           "_, st, ru = os.wait4(p.pid, 0); print(ru.ru_maxrss, os.waitstatus_to_exitcode(st))")


def run_peak(cmd: list[str]) -> float:
    """Runs cmd; returns its peak RSS in MiB."""
    r = subprocess.run([sys.executable, "-c", WRAPPER, *cmd], capture_output=True, text=True, check=True)
    maxrss_kib, rc = map(int, r.stdout.split()[-2:])
    if rc != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {rc}:\n{r.stderr}")
    return maxrss_kib / 1024


def has_no_video(binary: str) -> bool:
    """--no-video is passed only where this build has it (older builds record no video anyway)."""
    return "--no-video" in subprocess.run([binary, "simulate", "--help"], capture_output=True, text=True).stdout


def reel_cmd(binary: str, task: Path, seconds: float, fps: float, profile: bool, no_video: bool) -> list[str]:
    return ([binary, "simulate", str(task), "--count", "1", "--seconds", f"{seconds:g}", "--fps", f"{fps:g}",
             "--json"] + ["--no-video"] * no_video + ["--profile"] * profile)


def reel_episode(binary: str, task: Path, seconds: float, fps: float, no_video: bool) -> dict:
    out = json.loads(subprocess.run(reel_cmd(binary, task, seconds, fps, True, no_video), check=True,
                                    stdout=subprocess.PIPE).stdout)
    p = out["profile"]
    return {"n": out["episodes"][0]["episode_index"], "cpu_s": p["record_cpu_s"], "wall_s": p["record_wall_s"],
            "recorded_s": p["recorded_s"]}


# --------------------------------------------------------------------------- same rows?


def compare(reel_task: str, peer_task: str, ns: list[int]) -> dict:
    """Rows, column sets and values of each episode's data parquet; the episodes row's columns."""
    res = {"rows": [], "only_reel": set(), "only_peer": set(), "value_mismatch": set(), "type_diffs": set(),
           "nullable_diffs": set()}
    for n in ns:
        a, b = pq.read_table(data_path(reel_task, n)), pq.read_table(data_path(peer_task, n))
        res["rows"].append((a.num_rows, b.num_rows))
        res["only_reel"] |= set(a.column_names) - set(b.column_names)
        res["only_peer"] |= set(b.column_names) - set(a.column_names)
        for name in set(a.column_names) & set(b.column_names):
            ta, tb = a.schema.field(name).type, b.schema.field(name).type
            if str(ta) != str(tb):
                res["type_diffs"].add(f"{ta} vs {tb}")
            if a.schema.field(name).nullable != b.schema.field(name).nullable:
                res["nullable_diffs"].add(name)
            if not a[name].combine_chunks().equals(b[name].cast(ta).combine_chunks()):
                res["value_mismatch"].add(name)
    res["columns"] = a.column_names
    c, f = chunk_file(ns[0])
    row = f"meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet"
    ra, rb = pq.read_schema(os.path.join(reel_task, row)).names, pq.read_schema(os.path.join(peer_task, row)).names
    res["row_only_reel"], res["row_only_peer"] = sorted(set(ra) - set(rb)), sorted(set(rb) - set(ra))
    (ia, sa), (ib, sb) = ([json.load(open(os.path.join(t, "meta", m), encoding="utf-8")) for m in ("info.json", "stats.json")]
                          for t in (reel_task, peer_task))
    res["info_only_reel"], res["info_only_peer"] = sorted(set(ia) - set(ib)), sorted(set(ib) - set(ia))
    res["stats_blocks_differ"] = sorted(set(sa) ^ set(sb)) + [k for k in sa if k in sb and sa[k]["count"] != sb[k]["count"]]
    res["stats_max_rel_diff"] = max(float(np.max(np.abs(np.subtract(sa[k][f], sb[k][f])) / np.maximum(1, np.abs(sa[k][f]))))
                                    for k in set(sa) & set(sb) for f in ("mean", "std", "min", "max"))
    return {k: sorted(v) if isinstance(v, set) else v for k, v in res.items()}


# --------------------------------------------------------------------------- main


def render(r: dict) -> str:
    m, rs = r["machine"], r["recorded_s"]
    reel_cpu, peer_cpu = sum(e["cpu_s"] for e in r["reel"]), sum(e["cpu_s"] for e in r["peer"])
    enc = sum(e["encode_cpu_s"] for e in r["peer"])
    reel_wall, peer_wall = sum(e["wall_s"] for e in r["reel"]), sum(e["wall_s"] for e in r["peer"])
    per_ep = [p["cpu_s"] / q["cpu_s"] for p, q in zip(r["peer"], r["reel"])]
    mem = r["memory"]
    cpus = lambda runs: ", ".join(f"{e['cpu_s']:.2f}" for e in runs)  # noqa: E731
    out = [f"# reel recorder benchmark ({m['date']})", "",
           f"- machine: {m['nproc']} CPUs, Linux {m['kernel']}; Python {m['python']}, pyarrow {m['pyarrow']}, "
           f"numpy {m['numpy']}; load average at start {m['load']}, at end {r['load_end']}",
           f"- {len(r['reel'])} episodes x {r['seconds']:g} s at {r['fps']:g} fps = {rs:g} recorded s per side "
           f"(video off); command: `{' '.join(r['reel_cmd'])}`", "",
           "| recorder | CPU s | CPU s per recorded s | wall s | peak RSS MiB (1 episode) | peer/reel CPU |",
           "|---|---:|---:|---:|---:|---:|",
           f"| reel (append + commit, fsyncs included) | {reel_cpu:.2f} | {reel_cpu / rs:.3f} | {reel_wall:.2f} | "
           f"{mem['reel_mib']:.0f} | (reference) |",
           f"| peer: collector's way (pump encode + rows + table + parquet + meta) | {peer_cpu:.2f} | "
           f"{peer_cpu / rs:.3f} | {peer_wall:.2f} | {mem['peer_mib']:.0f} (inputs only: {mem['peer_load_mib']:.0f}) | "
           f"{peer_cpu / reel_cpu:.2f}x |",
           f"| peer without the pump thread's matrix encode | {peer_cpu - enc:.2f} | {(peer_cpu - enc) / rs:.3f} | "
           f"| | {(peer_cpu - enc) / reel_cpu:.2f}x |", "",
           f"Per episode, peer/reel CPU: best {min(per_ep):.2f}x, median {statistics.median(per_ep):.2f}x "
           f"(reel {cpus(r['reel'])} s; peer {cpus(r['peer'])} s). peer/reel > 1: reel uses less CPU.", ""]
    c = r["compare"]
    out.append(f"Same rows: rows (reel, peer) per episode {c['rows']}; columns only in reel: {c['only_reel'] or 'none'}; "
               f"only in peer: {c['only_peer'] or 'none'}; value mismatches: {c['value_mismatch'] or 'none'}; "
               f"episodes-row columns only in reel: {c['row_only_reel'] or 'none'}; types differ: {c['type_diffs'] or 'none'}; "
               f"nullable in peer, not null in reel: {len(c['nullable_diffs'])} of {len(c['columns'])} columns; "
               f"info.json keys only in reel: {c['info_only_reel'] or 'none'}, only in peer: {c['info_only_peer'] or 'none'}; "
               f"stats.json blocks/counts differing: {c['stats_blocks_differ'] or 'none'}, "
               f"largest relative difference of a value: {c['stats_max_rel_diff']:.1e}.")
    return "\n".join(out)


def start(work: Path) -> str | None:
    """The reel CLI (None, said on stderr, when there is none) and `work` made empty."""
    binary = reel_bin()
    if not binary:
        print("reel CLI not found (set REEL_BIN or build build/cmake/tools/reel)", file=sys.stderr)
        return None
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return binary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=3, help="timed episodes per side")
    ap.add_argument("--seconds", type=float, default=20.0, help="seconds per episode")
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--child", choices=("record", "load"), help=argparse.SUPPRESS)  # the memory runs
    ap.add_argument("--src", help=argparse.SUPPRESS)
    ap.add_argument("--dst", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        peer_child(args.src, args.dst, 1, args.child == "load")
        return 0

    binary = start(WORK)
    if not binary:
        return 1
    m = {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"), "nproc": os.cpu_count(),
         "kernel": platform.release(), "python": platform.python_version(), "pyarrow": pa.__version__,
         "numpy": np.__version__, "load": " / ".join(f"{x:.2f}" for x in os.getloadavg())}
    no_video = has_no_video(binary)
    print(f"reel {binary} (--no-video: {'passed' if no_video else 'not in this build'}); "
          f"{m['nproc']} CPUs; load {m['load']}", flush=True)

    # Warm-up (untimed): page cache, lazy imports, allocator.
    wr, wp = WORK / "warm/reel" / TASK, WORK / "warm/peer" / TASK
    peer_episode(str(wr), str(wp), reel_episode(binary, wr, 2.0, args.fps, no_video)["n"])

    # CPU: the sides take turns, one episode each per round.
    reel_task, peer_task = WORK / "cpu/reel" / TASK, WORK / "cpu/peer" / TASK
    reel_runs, peer_runs = [], []
    for k in range(args.episodes):
        reel_runs.append(reel_episode(binary, reel_task, args.seconds, args.fps, no_video))
        peer_runs.append(peer_episode(str(reel_task), str(peer_task), reel_runs[-1]["n"]))
        print(f"  episode {k + 1}/{args.episodes}: reel {reel_runs[-1]['cpu_s']:.2f} CPU s, "
              f"peer {peer_runs[-1]['cpu_s']:.2f} CPU s", flush=True)

    # Memory: one episode per process; reel streams its rows (no --profile).
    cmd = reel_cmd(binary, WORK / "mem/reel" / TASK, args.seconds, args.fps, False, no_video)
    mem = {"reel_mib": run_peak(cmd)}
    child = [sys.executable, __file__, "--src", str(reel_task)]
    mem["peer_mib"] = run_peak(child + ["--child", "record", "--dst", str(WORK / "mem/peer" / TASK)])
    mem["peer_load_mib"] = run_peak(child + ["--child", "load", "--dst", str(WORK / "mem/load" / TASK)])

    res = {"machine": m, "load_end": " / ".join(f"{x:.2f}" for x in os.getloadavg()), "fps": args.fps,
           "seconds": args.seconds, "recorded_s": args.seconds * args.episodes, "reel_cmd": reel_cmd(
               "reel", Path("TASK"), args.seconds, args.fps, True, no_video), "reel": reel_runs, "peer": peer_runs,
           "memory": mem, "compare": compare(str(reel_task), str(peer_task), [r["n"] for r in reel_runs])}
    text = render(res)
    print("\n" + text)
    (RESULTS / "recorder.md").write_text(text + "\n", encoding="utf-8")
    (RESULTS / "recorder.json").write_text(json.dumps(res, indent=2) + "\n")
    print(f"\nwritten: {RESULTS / 'recorder.json'} (+ recorder.md)")
    bad = any(a != b for a, b in res["compare"]["rows"]) or res["compare"]["only_reel"] or res["compare"]["only_peer"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
