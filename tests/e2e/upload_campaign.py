"""The upload kill campaign (issue 28; docs/upload.md "How it is tested"): `reel simulate` keeps
recording into a task while `reel upload --watch` sends it through a TCP fault proxy (resets,
stalls, blackouts, rate caps) to `reel serve`; the uploader is SIGKILLed at random moments and
restarted, the server too. Then a second phase runs with `--delete-after confirmed` and more
kills. At the end both sides are compared file by file (SHA-256) with a snapshot the campaign
took itself, independently of the outbox:

    lost        an episode recorded here that the server does not hold byte for byte
    duplicated  an episode the server holds that was not recorded here (or held twice)
    deleted_unconfirmed  a local episode deleted although the server does not hold its bytes

`reel check` must be clean on the server task. This module holds no tests: test_upload_campaign.py
runs a short campaign in `make test`; `make soak-upload` runs the full one
(python -m tests.e2e.upload_campaign --uploader-kills 200 --server-kills 50).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .fault_proxy import FaultProxy
from .serve_common import TOKEN_ALL, ReelServer, episode_files, write_config


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run(cmd: list, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)


def local_episodes(task: Path) -> dict[int, dict[str, str]]:
    """{N: {relative path: sha256}} of the episodes that still have their data parquet here."""
    out = {}
    for data in sorted((task / "data").glob("chunk-*/episode-*.parquet")):
        c = int(data.parent.name.split("-")[1])
        n = c * 1000 + int(data.stem.split("-")[1]) + 1
        files = {}
        for rel in episode_files(task, n):
            if (task / rel).is_file() and not rel.startswith("meta/"):
                files[rel] = sha(task / rel)
        out[n] = files
    return out


class Uploader:
    """`reel upload --watch` restarted after each SIGKILL."""

    def __init__(self, reel_bin: str, task: Path, url: str, log: Path, extra=()):
        self.cmd = [reel_bin, "upload", task, "--watch", "--server", url, "--token", TOKEN_ALL, "--no-progress",
                    "--resumable-threshold", 32 * 1024, "--chunk", 16 * 1024, "--rescan", 2, "--parallel", 2,
                    "--events", log, *extra]
        self.proc: subprocess.Popen | None = None
        self.kills = 0

    def start(self):
        self.proc = subprocess.Popen([str(c) for c in self.cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
            self.kills += 1
        elif self.proc:
            # It exited by itself: that must never happen under --watch (exit code < 128 asserted).
            raise AssertionError(f"reel upload --watch exited {self.proc.returncode} by itself")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


def kill_phase(rng: random.Random, uploader: Uploader, server: ReelServer, uploader_kills: int, server_kills: int,
               min_seconds: float, max_seconds: float, say) -> None:
    """Kills the uploader (every 0.2-1.5 s) and, now and then, the server, until both counts and
    min_seconds are reached (or max_seconds passed: then the counts are what they are)."""
    start = time.time()
    server_kills_done = 0
    uploader.start()
    while time.time() - start < max_seconds:
        done = uploader.kills >= uploader_kills and server_kills_done >= server_kills
        if done and time.time() - start >= min_seconds:
            break
        time.sleep(rng.uniform(0.2, 1.5))
        uploader.kill()
        if server_kills_done < server_kills and rng.random() < max(0.25, server_kills / max(1, uploader_kills)):
            server.kill()
            server.start()
            server_kills_done += 1
        uploader.start()
        if uploader.kills % 25 == 0:
            say(f"  {uploader.kills} uploader kills, {server_kills_done} server kills, {time.time() - start:.0f} s")
    server.kills = getattr(server, "kills", 0) + server_kills_done


def drain(reel_bin: str, task: Path, url: str, *extra, rounds: int = 10) -> dict:
    """`reel upload` without --watch until every job settled (bounded rounds)."""
    doc = {}
    for _ in range(rounds):
        p = run([reel_bin, "upload", task, "--server", url, "--token", TOKEN_ALL, "--no-progress", "--json",
                 "--retries", 20, *extra], timeout=600)
        assert p.returncode < 128, p.stderr
        doc = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
        if p.returncode == 0:
            return doc
    return doc


def run_campaign(reel_bin: str, work: Path, uploader_kills: int, server_kills: int, min_seconds: float = 0,
                 max_seconds: float = 3600, seed: int = 1, say=print) -> dict:
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    config = write_config(reel_bin, work / "serve.json", project_a="pick_cup")
    server = ReelServer(reel_bin, work / "root", config, work / "serve.log").start()
    server.port = int(server.url.rsplit(":", 1)[1])  # restarts keep the address
    proxy = FaultProxy(server.port, seed=seed).start()
    task = work / "client" / "pick_cup"
    sim = [reel_bin, "simulate", task, "--count", 1, "--seconds", 1, "--video-size", "64x48"]
    assert run(sim).returncode == 0
    recording = threading.Event()
    recording.set()
    recorded = [1]

    def record():
        while recording.is_set():
            p = run(sim)
            assert p.returncode == 0, p.stderr
            recorded[0] += 1
            time.sleep(rng.uniform(0.1, 0.8))

    recorder = threading.Thread(target=record, daemon=True)
    recorder.start()
    proxy.chaos({"stall_s": 2.0, "blackout_s": 1.5, "rate_bps": 200_000, "rate_s": 3.0}, period_s=1.0)
    events = work / "events.jsonl"
    t0 = time.time()
    try:
        # Phase 1: recording, uploading, kills on both sides, faults on the wire.
        say(f"phase 1: {uploader_kills} uploader kills, {server_kills} server kills while recording")
        up = Uploader(reel_bin, task, proxy.url, events)
        kill_phase(rng, up, server, uploader_kills, server_kills, min_seconds, max_seconds, say)
        recording.clear()
        recorder.join(timeout=300)
        up.stop()
        proxy.stop_chaos()
        drain(reel_bin, task, proxy.url)
        # Phase 2: the snapshot, then deletes after confirmation under kills.
        snapshot = local_episodes(task)
        say(f"phase 2: --delete-after confirmed over {len(snapshot)} episodes")
        proxy.chaos({"stall_s": 1.0, "blackout_s": 1.0, "rate_bps": 400_000, "rate_s": 2.0}, period_s=1.0)
        up2 = Uploader(reel_bin, task, proxy.url, events, extra=("--delete-after", "confirmed"))
        kill_phase(rng, up2, server, max(10, uploader_kills // 4), max(2, server_kills // 4), 0, max_seconds, say)
        up2.stop()
        proxy.stop_chaos()
        final = drain(reel_bin, task, proxy.url, "--delete-after", "confirmed")
    finally:
        recording.clear()
        proxy.stop()
    served = work / "root" / "pick_cup"
    lost = duplicated = deleted_unconfirmed = 0
    here = local_episodes(task)
    for n, files in snapshot.items():
        held = all((served / rel).is_file() and sha(served / rel) == digest for rel, digest in files.items())
        lost += not held
        deleted_unconfirmed += (n not in here) and not held
    server_ns = set(local_episodes(served))
    duplicated = len(server_ns - set(snapshot))
    p = run([reel_bin, "ls", served, "--json"])
    listed = json.loads(p.stdout) if p.returncode == 0 else {}
    listed_n = [e["episode_index"] for e in listed.get("episodes", [])] if isinstance(listed, dict) else []
    duplicated += len(listed_n) - len(set(listed_n))
    check = run([reel_bin, "check", served])
    status = json.loads(run([reel_bin, "upload", task, "--status", "--json"]).stdout)
    states: dict[str, int] = {}
    for j in status["jobs"]:
        states[j["state"]] = states.get(j["state"], 0) + 1
    ev = [json.loads(line) for line in events.read_text().splitlines() if line.startswith("{")]
    server.stop()
    result = {
        "seconds": round(time.time() - t0, 1),
        "episodes_recorded": len(snapshot),
        "uploader_kills": up.kills + up2.kills,
        "server_kills": getattr(server, "kills", 0),
        "proxy_resets": proxy.resets,
        "lost": lost,
        "duplicated": duplicated,
        "deleted_unconfirmed": deleted_unconfirmed,
        "deleted_confirmed": len(snapshot) - len(here),
        "check_exit": check.returncode,
        "check_output": check.stdout[-2000:] + check.stderr[-2000:],
        "job_states": states,
        "packed": sum(1 for e in ev if e["event"] == "packed"),
        "retries": sum(1 for e in ev if e["event"] == "retry"),
        "final_all_landed": bool(final.get("all_landed")),
    }
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reel", default=os.environ.get("REEL_BIN", "build/cmake/tools/reel"))
    ap.add_argument("--work", default="out/upload-campaign")
    ap.add_argument("--uploader-kills", type=int, default=200)
    ap.add_argument("--server-kills", type=int, default=50)
    ap.add_argument("--min-seconds", type=float, default=0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    result = run_campaign(a.reel, Path(a.work), a.uploader_kills, a.server_kills, a.min_seconds, seed=a.seed)
    print(json.dumps(result, indent=1))
    bad = result["lost"] or result["duplicated"] or result["deleted_unconfirmed"] or result["check_exit"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
