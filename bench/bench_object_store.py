#!/usr/bin/env python3
"""reel on object storage: the same task read from the local disk and from s3:// (moto's S3
server on 127.0.0.1, so this measures reel's request pattern and the protocol overhead, not a
network), in one run. Not a timed test.

    REEL_BIN=build/cmake/tools/reel .venv/bin/python bench/bench_object_store.py [--quick]

1. open + list: reel.open(task).episodes() (info.json, the listing of data/videos/meta, every
   episodes row and data footer), best and median of R rounds, local vs S3, and the requests it
   took on S3.
2. Random rows: one episode's data parquet read whole (task.data(N)) for K seeded episodes,
   and the bytes read per read vs the file size.
3. Random frames of one camera for K seeded (episode, row) pairs, time and bytes read per
   frame vs the video file's size: with a fresh reader per frame (task.frames(N, slot, [row]):
   container header + the packets from the keyframe) and with a warm reader per file
   (reel.VideoReader(uri), as a DataLoader worker keeps them: the packets only).

Output: a table on stdout and bench/results/object_store.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

import reel  # noqa: E402
import reel._core  # noqa: E402
from tests.e2e.s3_server import BASE_ENV, moto_server, upload_tree  # noqa: E402

BUCKET = "reel-bench"


def timed(fn, rounds: int) -> tuple[float, float]:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def counters(uri: str, reset: bool = False) -> dict:
    return reel._core.object_store_counters(uri, reel._core.StorageOptions(), reset)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a shorter task and fewer rounds")
    ap.add_argument("--keep", help="keep the simulated task in this directory (reused when present)")
    args = ap.parse_args()
    reel_bin = os.environ.get("REEL_BIN") or str(REPO / "build/cmake/tools/reel")
    episodes, seconds = (3, 10) if args.quick else (6, 30)
    rounds, k = (3, 10) if args.quick else (5, 30)
    work = Path(args.keep or tempfile.mkdtemp(prefix="reel-bench-s3-"))
    task = work / "task"
    if not (task / "meta" / "info.json").exists():
        subprocess.run([reel_bin, "simulate", str(task), "--count", str(episodes), "--seconds", str(seconds),
                        "--video-size", "320x240", "--seed", "7", "--progress", "none"], check=True)
    for key, value in BASE_ENV.items():
        os.environ[key] = value
    results: dict = {"episodes": episodes, "seconds_per_episode": seconds, "rounds": rounds, "samples": k}
    with moto_server() as endpoint:
        os.environ["AWS_ENDPOINT_URL_S3"] = endpoint
        upload_tree(endpoint, task, BUCKET, "bench/task")
        uri = f"s3://{BUCKET}/bench/task"
        locations = {"local": str(task), "s3": uri}

        # 1. open + list
        for where, loc in locations.items():
            reel.open(loc).episodes()  # warm-up (S3: the client and its connection)
            if where == "s3":
                counters(uri, reset=True)
            best, med = timed(lambda: reel.open(loc).episodes(), rounds)
            results[f"open_list_{where}_s"] = {"best": best, "median": med}
        c = counters(uri, reset=True)
        results["open_list_s3_requests_per_round"] = {
            key: c[key] / rounds for key in ("metadata_requests", "files_opened", "read_requests", "bytes_read")}

        rng = random.Random(1)
        opened = {w: reel.open(loc) for w, loc in locations.items()}
        eps = [e for e in opened["local"].episodes() if e["has_data"]]
        picks = [rng.choice(eps) for _ in range(k)]

        # 2. data parquet of random episodes
        for where, t in opened.items():
            t.data(picks[0]["episode_index"]).to_arrow()  # warm-up
            counters(uri, reset=True)
            t0 = time.perf_counter()
            for e in picks:
                t.data(e["episode_index"]).to_arrow()
            results[f"data_read_{where}_s_per_episode"] = (time.perf_counter() - t0) / k
        c = counters(uri, reset=True)
        data_size = statistics.mean(p.stat().st_size for p in (task / "data").rglob("*.parquet"))
        results["data_read_s3_bytes_per_episode"] = c["bytes_read"] / k
        results["data_file_mean_size"] = data_size

        # 3. random frames
        slot = "stereo_left" if "stereo_left" in eps[0]["videos"] else sorted(eps[0]["videos"])[0]
        frame_picks = [(e["episode_index"], rng.randrange(int(e["length"]))) for e in picks]
        try:
            for where, t in opened.items():
                t.frames(frame_picks[0][0], slot, [frame_picks[0][1]])  # warm-up
                counters(uri, reset=True)
                t0 = time.perf_counter()
                for n, row in frame_picks:
                    t.frames(n, slot, [row])
                results[f"frame_{where}_s"] = (time.perf_counter() - t0) / k
            c = counters(uri, reset=True)
            results["frame_s3_bytes_per_frame"] = c["bytes_read"] / k
            results["frame_s3_requests_per_frame"] = c["read_requests"] / k
            results["video_file_mean_size"] = statistics.mean(
                (task / e["videos"][slot]).stat().st_size for e in picks)
            # A warm reader per file (a DataLoader worker's cache): random frames after the header.
            for where, loc in locations.items():
                readers = {e["episode_index"]: reel.VideoReader(f"{loc}/{e['videos'][slot]}", threads=1) for e in eps}
                for n, r in readers.items():
                    r.read_rgb([0])
                counters(uri, reset=True)
                t0 = time.perf_counter()
                for n, row in frame_picks:
                    readers[n].read_rgb([row])
                results[f"warm_frame_{where}_s"] = (time.perf_counter() - t0) / k
                for r in readers.values():
                    r.close()
            c = counters(uri, reset=True)
            results["warm_frame_s3_bytes_per_frame"] = c["bytes_read"] / k
            results["warm_frame_s3_requests_per_frame"] = c["read_requests"] / k
        except reel.Error as e:
            results["frame_s3"] = f"n/a: {str(e)[:160]}"

    def ratio(a, b):
        return f"{a / b:.1f}x" if b else "n/a"

    ol, os3 = results["open_list_local_s"], results["open_list_s3_s"]
    print(f"task: {episodes} episodes x {seconds} s at 320x240, {rounds} rounds, {k} samples; S3 = moto on 127.0.0.1")
    print(f"{'':34}{'local':>12}{'s3':>12}{'s3/local':>10}")
    print(f"{'open + list (median s)':34}{ol['median']:12.4f}{os3['median']:12.4f}{ratio(os3['median'], ol['median']):>10}")
    r = results["open_list_s3_requests_per_round"]
    print(f"  s3 per open+list: {r['metadata_requests']:.0f} stat/list, {r['files_opened']:.0f} opens, "
          f"{r['read_requests']:.0f} reads, {r['bytes_read'] / 1024:.1f} KiB")
    dl, ds = results["data_read_local_s_per_episode"], results["data_read_s3_s_per_episode"]
    print(f"{'data parquet, random episode (s)':34}{dl:12.4f}{ds:12.4f}{ratio(ds, dl):>10}")
    print(f"  s3 bytes per episode read: {results['data_read_s3_bytes_per_episode'] / 1024:.1f} KiB "
          f"(file {results['data_file_mean_size'] / 1024:.1f} KiB)")
    if "frame_s3_s" in results:
        fl, fs = results["frame_local_s"], results["frame_s3_s"]
        print(f"{'random frame, fresh reader (s)':34}{fl:12.4f}{fs:12.4f}{ratio(fs, fl):>10}")
        print(f"  s3 bytes per random frame, fresh reader: {results['frame_s3_bytes_per_frame'] / 1024:.1f} KiB in "
              f"{results['frame_s3_requests_per_frame']:.1f} reads, video file "
              f"{results['video_file_mean_size'] / 1024:.1f} KiB "
              f"({100 * results['frame_s3_bytes_per_frame'] / results['video_file_mean_size']:.1f}%)")
        wl, ws = results["warm_frame_local_s"], results["warm_frame_s3_s"]
        print(f"{'random frame, warm reader (s)':34}{wl:12.4f}{ws:12.4f}{ratio(ws, wl):>10}")
        print(f"  s3 bytes per random frame, warm reader: {results['warm_frame_s3_bytes_per_frame'] / 1024:.1f} KiB "
              f"in {results['warm_frame_s3_requests_per_frame']:.1f} reads")
    else:
        print(f"random frame: {results.get('frame_s3')}")
    out = HERE / "results" / "object_store.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
