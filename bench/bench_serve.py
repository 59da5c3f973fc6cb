#!/usr/bin/env python3
"""Load run of the import server: many concurrent clients upload simulator episodes to
`reel serve` over loopback; the run is bounded (a fixed job list) and stops by itself.

    make bench                                  # or: .venv/bin/python bench/bench_serve.py
    .venv/bin/python bench/bench_serve.py --quick

Setup (untimed): `reel simulate` records E episodes with video; each episode's §9 slice is
built with zipfile (ZIP_STORED). Jobs: every (project p, episode N) pair once, P projects, in
a shuffled order, taken from one queue by C client threads (Python `requests`, one HTTP
session each). Reported: uploads/s, bytes/s, latency p50/p99 per upload, errors (must be 0).
Afterwards: every (p, N) answered 201 exactly once, the files on the server equal the
client's byte for byte, and `reel check` passes on every project. Results: a table on stdout,
bench/results/serve.json (+ .md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
WORK = RESULTS / "serve"
TOKEN = "bench-token-" + "0" * 20


def reel(*args, **kw):
    return subprocess.run([os.environ["REEL_BIN"], *map(str, args)], capture_output=True, text=True, check=True, **kw)


def episode_names(task: Path, n: int) -> list[str]:
    c, f = (n - 1) // 1000, (n - 1) % 1000
    vids = sorted(p.relative_to(task).as_posix() for p in (task / f"videos/chunk-{c:03d}").glob(f"*/episode-{f:03d}.*"))
    return vids + [f"data/chunk-{c:03d}/episode-{f:03d}.parquet", f"meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet",
                   "meta/info.json", "meta/stats.json", "meta/tasks.jsonl"]


def build_slice(task: Path, n: int, out: Path) -> Path:
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as z:
        for name in episode_names(task, n):
            z.write(task / name, name)
    return out


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=24)
    ap.add_argument("--projects", type=int, default=4)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=2.0, help="length of each simulated episode")
    ap.add_argument("--video-size", default="160x120")
    ap.add_argument("--workers", type=int, default=8, help="server worker threads")
    ap.add_argument("--no-check", action="store_true", help="server skips the conformance checker (to see its cost)")
    ap.add_argument("--quick", action="store_true", help="8 episodes, 2 projects, 4 clients, 1 s")
    a = ap.parse_args()
    if a.quick:
        a.episodes, a.projects, a.clients, a.seconds = 8, 2, 4, 1.0
    if "REEL_BIN" not in os.environ:
        sys.exit("set REEL_BIN to the built reel CLI (make bench does)")
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)

    task = WORK / "client_task"
    print(f"recording {a.episodes} episodes of {a.seconds} s ({a.video_size} video)...", flush=True)
    reel("simulate", task, "--count", a.episodes, "--seconds", a.seconds, "--video-size", a.video_size,
         "--preset", "ultrafast", "--depth-preset", "ultrafast")
    slices = {n: build_slice(task, n, WORK / f"slice_{n}.zip") for n in range(1, a.episodes + 1)}
    sizes = {n: p.stat().st_size for n, p in slices.items()}

    token_hash = reel("serve", "--hash-token", TOKEN).stdout.strip()
    cfg = WORK / "serve.json"
    cfg.write_text(json.dumps({"tokens": [{"name": "bench", "sha256": token_hash, "projects": ["*"]}],
                               "limits": {"workers": a.workers}}))
    root = WORK / "server_root"
    log = open(WORK / "serve.log", "wb")
    srv = subprocess.Popen([os.environ["REEL_BIN"], "serve", "--root", root, "--config", cfg, "--port", "0",
                            *(["--no-check"] if a.no_check else [])],
                           stdout=subprocess.DEVNULL, stderr=log)
    url = None
    for _ in range(600):
        m = re.findall(r"listening on (http://127\.0\.0\.1:\d+)", (WORK / "serve.log").read_text(errors="replace"))
        if m:
            url = m[-1]
            break
        time.sleep(0.05)
    if not url:
        srv.kill()
        sys.exit("reel serve did not start: " + (WORK / "serve.log").read_text())

    jobs = [(f"load_{p}", n) for p in range(a.projects) for n in range(1, a.episodes + 1)]
    random.Random(1).shuffle(jobs)
    q: queue.Queue = queue.Queue()
    for j in jobs:
        q.put(j)
    results, lock = [], threading.Lock()

    def client():
        s = requests.Session()
        s.headers["Authorization"] = f"Bearer {TOKEN}"
        while True:
            try:
                project, n = q.get_nowait()
            except queue.Empty:
                return
            t0 = time.perf_counter()
            try:
                with open(slices[n], "rb") as f:
                    r = s.post(f"{url}/api/v1/session/upload", timeout=600,
                               data={"name": project, "episode_index": str((n - 1) % 1000)},
                               files={"file": (f"{project}.zip", f, "application/zip")})
                status, body = r.status_code, r.text
            except requests.RequestException as e:
                status, body = -1, str(e)
            with lock:
                results.append((project, n, status, time.perf_counter() - t0, body))

    print(f"{len(jobs)} uploads by {a.clients} clients to {a.projects} projects, server workers {a.workers}...",
          flush=True)
    t0 = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    srv.send_signal(signal.SIGTERM)
    srv.wait(timeout=60)
    log.close()

    errors = [r for r in results if r[2] != 201]
    per_job = {}
    for project, n, status, _, _ in results:
        per_job.setdefault((project, n), []).append(status)
    exactly_once = all(v == [201] for v in per_job.values()) and len(per_job) == len(jobs)
    identical = True
    for project, n in jobs:
        for name in episode_names(task, n)[:-3]:
            if (root / project / name).read_bytes() != (task / name).read_bytes():
                identical = False
    checks = {}
    for p in range(a.projects):
        out = subprocess.run([os.environ["REEL_BIN"], "check", root / f"load_{p}", "--json"], capture_output=True,
                             text=True)
        checks[f"load_{p}"] = out.returncode
    lat = [r[3] for r in results if r[2] == 201]
    total_bytes = sum(sizes[n] for _, n in jobs)
    summary = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_avg": os.getloadavg()},
        "episodes": a.episodes, "projects": a.projects, "clients": a.clients, "server_workers": a.workers,
        "episode_seconds": a.seconds, "video_size": a.video_size, "server_check": not a.no_check,
        "uploads": len(jobs), "wall_s": round(wall, 2),
        "uploads_per_s": round(len(jobs) / wall, 2),
        "mib_per_s": round(total_bytes / wall / 2**20, 2),
        "slice_mib_mean": round(statistics.mean(sizes.values()) / 2**20, 2),
        "latency_p50_s": round(percentile(lat, 50), 3) if lat else None,
        "latency_p99_s": round(percentile(lat, 99), 3) if lat else None,
        "errors": len(errors),
        "exactly_once": exactly_once,
        "byte_identical": identical,
        "reel_check_exit_codes": checks,
    }
    tag = "serve_nocheck" if a.no_check else "serve"
    (WORK.parent / f"{tag}.json").write_text(json.dumps(summary, indent=2))
    md = ["| server check | uploads | clients | uploads/s | MiB/s | p50 s | p99 s | errors | exactly once | reel check |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
          f"| {'off' if a.no_check else 'on'} | {len(jobs)} | {a.clients} | {summary['uploads_per_s']} | {summary['mib_per_s']} | "
          f"{summary['latency_p50_s']} | {summary['latency_p99_s']} | {len(errors)} | {exactly_once and identical} | "
          f"{'pass' if all(v == 0 for v in checks.values()) else checks} |"]
    (WORK.parent / f"{tag}.md").write_text("\n".join(md) + "\n")
    print(json.dumps(summary, indent=2))
    print("\n".join(md))
    for e in errors[:5]:
        print("error:", e[:3], e[4][:300])
    ok = not errors and exactly_once and identical and all(v == 0 for v in checks.values())
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
