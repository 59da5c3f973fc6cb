#!/usr/bin/env python3
"""Soak (b): `reel serve` under concurrent clients that upload slices and hang up mid-body
(docs/reliability.md "Soak").

A source task is recorded with `reel simulate` and every episode packed with `reel pack`.
`reel serve` runs on 127.0.0.1 (a free port). SOAK_CLIENTS threads loop until
SOAK_SERVE_SECONDS have passed; each iteration picks one of the SOAK_PROJECTS newest
projects and an episode at random (with probability SOAK_NEW_PROJECT it first opens a new
project, so fresh imports keep coming, not only identical re-uploads), and
  - with probability SOAK_ABORT: opens a socket, sends the headers and a random part of the
    multipart body (never all of it), and closes: a client that disconnects mid-body;
  - with probability SOAK_CLI: runs `reel upload` (the real client, with its retries) for it;
  - otherwise: POSTs it with python `requests`.
Every answer is counted (201 imported, 200 already present, other codes, transport
errors). The server's RSS is sampled every second. At the end the server is stopped and,
per project: the set of episodes must equal the set answered 201/200 (none lost, none extra),
no (project, N) may have been answered 201 twice (a duplicate import), every served
episode's files must equal the source's byte for byte, and `reel check` must find no error.

    REEL_BIN=build/cmake/tools/reel .venv/bin/python tests/soak/serve_clients.py
Environment: SOAK_SERVE_SECONDS (600), SOAK_CLIENTS (8), SOAK_EPISODES (24), SOAK_PROJECTS
(2), SOAK_NEW_PROJECT (0.01), SOAK_ABORT (0.3), SOAK_CLI (0.05), SOAK_SEED (1), SOAK_WORK,
SOAK_OUT (JSON summary).
"""
from __future__ import annotations

import collections
import hashlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

import requests

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.e2e.serve_common import ReelServer, episode_files  # noqa: E402

TOKEN = "soak-token-0123456789abcdef"


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def multipart(fields: dict, filename: str, data: bytes) -> tuple[bytes, str]:
    boundary = "soak" + uuid.uuid4().hex
    parts = []
    for k, v in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode())
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
                 f'Content-Type: application/zip\r\n\r\n'.encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), boundary


def main() -> int:
    reel = os.path.abspath(os.environ["REEL_BIN"])
    seconds = float(os.environ.get("SOAK_SERVE_SECONDS", "600"))
    n_clients = int(os.environ.get("SOAK_CLIENTS", "8"))
    n_episodes = int(os.environ.get("SOAK_EPISODES", "24"))
    n_projects = int(os.environ.get("SOAK_PROJECTS", "2"))
    p_abort = float(os.environ.get("SOAK_ABORT", "0.3"))
    p_cli = float(os.environ.get("SOAK_CLI", "0.05"))
    p_new = float(os.environ.get("SOAK_NEW_PROJECT", "0.01"))
    seed = int(os.environ.get("SOAK_SEED", "1"))
    work = Path(os.environ.get("SOAK_WORK") or tempfile.mkdtemp(prefix="reel-soak-serve-"))
    work.mkdir(parents=True, exist_ok=True)

    # Source task and its slices.
    src = work / "source"
    if not (src / "meta/info.json").exists():
        subprocess.run([reel, "simulate", str(src), "--count", str(n_episodes), "--seconds", "0.5", "--fps", "10",
                        "--video-size", "32x24", "--seed", str(seed), "--depth-ffv1"],
                       check=True, capture_output=True, timeout=1800)
    slices = {}
    for n in range(1, n_episodes + 1):
        z = work / f"slice{n}.zip"
        if not z.exists():
            subprocess.run([reel, "pack", str(src), str(n), "-o", str(z)], check=True, capture_output=True, timeout=300)
        slices[n] = z.read_bytes()
    projects = [f"soak_{i}" for i in range(n_projects)]

    root = work / "root"
    shutil.rmtree(root, ignore_errors=True)
    cfg = work / "serve.json"
    cfg.write_text(json.dumps({
        "tokens": [{"name": "soak", "sha256": hashlib.sha256(TOKEN.encode()).hexdigest(), "projects": ["*"]}],
        "limits": {"read_timeout_s": 5, "request_timeout_s": 120, "workers": 8,
                   "max_connections": int(os.environ.get("SOAK_MAX_CONNECTIONS", "128"))}}))
    (work / "serve.log").unlink(missing_ok=True)  # ReelServer finds its URL in the log
    srv = ReelServer(reel, root, cfg, work / "serve.log").start()
    u = urlparse(srv.url)
    pid = srv.proc.pid
    print(f"serve soak: {seconds:.0f} s, {n_clients} clients, {n_episodes} episodes x {n_projects} projects, "
          f"abort {p_abort}, reel upload {p_cli}, server {srv.url} pid {pid}, work {work}", flush=True)

    lock = threading.Lock()
    counts = collections.Counter()
    answered = collections.defaultdict(collections.Counter)  # (project, N) -> status -> count
    rss = [rss_kb(pid)]
    stop_at = time.monotonic() + seconds
    done = threading.Event()

    def sampler():
        while not done.wait(1.0):
            rss.append(rss_kb(pid))

    def aborted_upload(rng, project, n):
        body, boundary = multipart({"name": project, "episode_index": str((n - 1) % 1000), "project_id": ""},
                                   f"{project}.zip", slices[n])
        cut = rng.randrange(0, len(body))
        head = (f"POST /api/v1/session/upload HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n"
                f"Authorization: Bearer {TOKEN}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        try:
            with socket.create_connection((u.hostname, u.port), timeout=30) as s:
                s.sendall(head + body[:cut])
                if rng.random() < 0.5:  # a reset rather than an orderly close
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        except OSError:
            pass
        with lock:
            counts["aborted"] += 1

    def requests_upload(session, project, n):
        try:
            r = session.post(f"{srv.url}/api/v1/session/upload",
                             data={"name": project, "episode_index": str((n - 1) % 1000), "project_id": ""},
                             files={"file": (f"{project}.zip", slices[n], "application/zip")},
                             headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)
            code = r.status_code
        except requests.RequestException as e:
            code = f"transport:{type(e).__name__}"
        with lock:
            counts[f"requests:{code}"] += 1
            if isinstance(code, int):
                answered[(project, n)][code] += 1

    def cli_upload(project, n, client_id):
        # Each client uploads from its own copy of the task: the copy holds that client's upload
        # outbox (meta/.upload-outbox, one uploader at a time per task, docs/upload.md).
        p = subprocess.run([reel, "upload", str(work / f"cli{client_id}" / src.name), str(n), "--server", srv.url,
                            "--token", TOKEN, "--name", project, "--no-progress", "--json"],
                           capture_output=True, text=True, timeout=600)
        with lock:
            counts[f"reel_upload:exit{p.returncode}"] += 1
            if p.returncode == 0:
                # The client reports imported or already present; count it as a 2xx.
                answered[(project, n)]["cli_ok"] += 1

    def client(i):
        rng = random.Random(seed * 1000 + i)
        session = requests.Session()
        (work / f"cli{i}").mkdir(exist_ok=True)
        if not (work / f"cli{i}" / src.name).exists():
            shutil.copytree(src, work / f"cli{i}" / src.name)
        while time.monotonic() < stop_at:
            with lock:
                if rng.random() < p_new:
                    projects.append(f"soak_{len(projects)}")
                project = rng.choice(projects[-n_projects:])
            n = rng.randint(1, n_episodes)
            x = rng.random()
            if x < p_abort:
                aborted_upload(rng, project, n)
            elif x < p_abort + p_cli:
                cli_upload(project, n, i)
            else:
                requests_upload(session, project, n)

    t_sampler = threading.Thread(target=sampler, daemon=True)
    t_sampler.start()
    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(n_clients)]
    for t in threads:
        t.start()
    last_report = started
    while any(t.is_alive() for t in threads):
        time.sleep(1)
        if time.monotonic() - last_report >= 60:
            last_report = time.monotonic()
            with lock:
                print(f"  {time.monotonic() - started:.0f} s: {dict(counts)} rss {rss[-1] // 1024} MiB", flush=True)
    for t in threads:
        t.join()
    # Health after the storm, then stop.
    health = requests.get(f"{srv.url}/health", timeout=30).status_code
    done.set()
    srv.stop()
    elapsed = time.monotonic() - started

    problems = []
    # The real client retries what the server refuses for a while; it must end with exit 0
    # (a usage error, exit 2, once hid here: the soak passed without running it).
    failed_cli = {k: v for k, v in counts.items() if k.startswith("reel_upload:exit") and k != "reel_upload:exit0"}
    if failed_cli:
        problems.append(f"reel upload runs that failed: {failed_cli}")
    duplicates = lost = extra = differing = check_errors = 0
    for project in projects:
        task = root / project
        served = set()
        if task.exists():
            for p in (task / "data").rglob("episode-*.parquet"):
                c, f = int(p.parent.name.split("-")[1]), int(p.stem.split("-")[1])
                served.add(c * 1000 + f + 1)
        landed = {n for (pr, n), codes in answered.items() if pr == project and (codes[200] or codes[201] or codes["cli_ok"])}
        for n in range(1, n_episodes + 1):
            if answered[(project, n)][201] > 1:
                duplicates += 1
                problems.append(f"{project} N={n}: answered 201 {answered[(project, n)][201]} times")
        for n in sorted(landed - served):
            lost += 1
            problems.append(f"{project} N={n}: acknowledged but not in the task")
        for n in sorted(served - landed):
            extra += 1  # an upload whose answer was lost (e.g. a later abort of the same N): not an error by itself
        for n in sorted(served):
            for rel in episode_files(src, n):
                if (task / rel).read_bytes() != (src / rel).read_bytes():
                    differing += 1
                    problems.append(f"{project} N={n}: {rel} differs from the source")
        if task.exists():
            p = subprocess.run([reel, "check", str(task), "--json"], capture_output=True, text=True, timeout=600)
            rep = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
            errs = [f for t in rep.get("tasks", []) for f in t.get("findings", []) if f.get("severity") == "error"]
            if p.returncode not in (0,) or errs:
                check_errors += max(1, len(errs))
                problems.append(f"{project}: reel check exited {p.returncode}: {errs[:3]}")
    staging_left = [str(p) for p in (root / ".staging").rglob("*")] if (root / ".staging").exists() else []
    uploads_2xx = sum(v for k, v in counts.items() if k in ("requests:200", "requests:201")) + counts["reel_upload:exit0"]
    summary = {
        "seconds": round(elapsed, 1), "clients": n_clients, "episodes": n_episodes, "projects": len(projects),
        "counts": dict(counts), "uploads_2xx": uploads_2xx,
        "served_episodes": sum(len(list((root / pr / "data").rglob("episode-*.parquet"))) if (root / pr).exists() else 0
                               for pr in projects),
        "lost": lost, "duplicates": duplicates, "differing_files": differing, "check_errors": check_errors,
        "unacknowledged_but_present": extra, "health_after": health, "staging_left": len(staging_left),
        "rss_mib": {"start": round(rss[0] / 1024, 1), "max": round(max(rss) / 1024, 1), "end": round(rss[-1] / 1024, 1)},
        "problems": problems[:50],
    }
    print(json.dumps(summary, indent=2))
    if os.environ.get("SOAK_OUT"):
        Path(os.environ["SOAK_OUT"]).write_text(json.dumps(summary, indent=2))
    if not os.environ.get("SOAK_WORK"):
        shutil.rmtree(work, ignore_errors=True)
    bad = lost + duplicates + differing + check_errors + (health != 200) + len(staging_left)
    print("OK" if bad == 0 else f"FAILED: {bad} problem(s)")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
