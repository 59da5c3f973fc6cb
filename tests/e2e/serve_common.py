"""Shared helpers for the import-server tests (test_serve*.py); this module holds no tests.

`ReelServer` runs the real `reel serve` on a free loopback port. Slices are built here with
Python's zipfile straight from the contract (§9: ZIP_STORED, arcnames relative to the task
directory, this episode's files plus the three meta snapshots), independently of
`reel pack`.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import requests

from .fixtures import data_rel, row_rel
from .recorder_common import memo_task, reel_exec, simulate

TOKEN_ALL = "tok-all-0123456789abcdef"
TOKEN_A = "tok-only-a-0123456789abcdef"
USER, PASSWORD = "alice", "correct horse battery staple"


def hash_token(reel_bin: str, token: str) -> str:
    rc, out, err = reel_exec(reel_bin, "serve", "--hash-token", token)
    assert rc == 0, err
    return out.strip()


def hash_password(reel_bin: str, password: str) -> str:
    proc = subprocess.run([reel_bin, "serve", "--hash-password"], input=password + "\n", capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def write_config(reel_bin: str, path: Path, limits: dict | None = None, project_a: str = "task_a") -> Path:
    cfg = {
        "tokens": [
            {"name": "rig-all", "sha256": hash_token(reel_bin, TOKEN_ALL), "projects": ["*"]},
            {"name": "rig-a", "sha256": hash_token(reel_bin, TOKEN_A), "projects": [project_a]},
        ],
        "users": [{"name": USER, "password_hash": hash_password(reel_bin, PASSWORD), "projects": ["*"]}],
    }
    if limits:
        cfg["limits"] = limits
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


class ReelServer:
    """`reel serve --root ROOT --config CFG --port 0`; .url once listening; JSON-lines log in .log_path."""

    def __init__(self, reel_bin: str, root: Path, config: Path, log_path: Path, extra=(), port: int = 0):
        self.reel_bin, self.root, self.config, self.log_path = reel_bin, Path(root), config, log_path
        self.extra = list(extra)
        self.port = port
        self.proc = None
        self.url = None

    def start(self, timeout: float = 30.0) -> "ReelServer":
        """Starts the server (again, after stop(): the log is appended to, and only this run's
        "listening on" line counts)."""
        self.stderr = open(self.log_path, "ab")
        skip = Path(self.log_path).stat().st_size
        self.proc = subprocess.Popen(
            [self.reel_bin, "serve", "--root", str(self.root), "--config", str(self.config), "--port", str(self.port),
             *self.extra],
            stdout=subprocess.DEVNULL, stderr=self.stderr)
        deadline = time.time() + timeout
        while time.time() < deadline:
            text = Path(self.log_path).read_bytes()[skip:].decode(errors="replace")
            m = re.findall(r"listening on (http://127\.0\.0\.1:\d+)", text)
            if m:
                self.url = m[-1]
                return self
            if self.proc.poll() is not None:
                raise AssertionError(f"reel serve exited {self.proc.returncode}:\n{text}")
            time.sleep(0.05)
        raise AssertionError(f"reel serve did not listen within {timeout} s:\n{Path(self.log_path).read_text()}")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        assert self.proc.returncode in (0, -signal.SIGKILL), f"reel serve exited {self.proc.returncode}"
        self.stderr.close()

    def log_lines(self) -> list[dict]:
        out = []
        for line in Path(self.log_path).read_text(errors="replace").splitlines():
            if line.startswith("{"):
                out.append(json.loads(line))
        return out


def episode_files(task: Path, n: int) -> list[str]:
    """Arcnames of episode N's files in the contract's order (videos by key, data, episodes row)."""
    task = Path(task)
    c, f = (max(n - 1, 0)) // 1000, (max(n - 1, 0)) % 1000
    videos = sorted(p.relative_to(task).as_posix()
                    for p in (task / f"videos/chunk-{c:03d}").glob(f"*/episode-{f:03d}.*"))
    return videos + [data_rel(n), row_rel(n)]


def build_slice(task: Path, n: int, out: Path, extra: dict | None = None, drop=(), replace: dict | None = None,
                compression=zipfile.ZIP_STORED) -> Path:
    """The §9 slice of episode N, written with zipfile. `extra` adds {arcname: bytes}; `drop`
    leaves arcnames out; `replace` substitutes {arcname: bytes}."""
    task = Path(task)
    names = episode_files(task, n) + ["meta/info.json", "meta/stats.json", "meta/tasks.jsonl"]
    replace = replace or {}
    with zipfile.ZipFile(out, "w", compression=compression) as z:
        for name in names:
            if name in drop:
                continue
            data = replace[name] if name in replace else (task / name).read_bytes()
            z.writestr(zipfile.ZipInfo(name), data, compress_type=compression)
        for name, data in (extra or {}).items():
            z.writestr(name, data)
    return out


def tree(root: Path) -> dict:
    """{relative path: bytes} of every file under root (dotfiles included)."""
    root = Path(root)
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def data_rows(task: Path, n: int) -> int:
    return pq.read_metadata(Path(task) / data_rel(n)).num_rows


AUTH = {"Authorization": f"Bearer {TOKEN_ALL}"}


def sim_task(reel_bin, tmp_path_factory, key, episodes=3, seed=1):
    def build(root):
        task = root / key
        simulate(reel_bin, task, "--count", episodes, "--seconds", "1", "--video-size", "32x24",
                 "--seed", seed, "--depth-ffv1")
        return task
    return memo_task(key, tmp_path_factory, build)


def upload(url, zip_path, name="task_a", episode_index=None, project_id="", headers=AUTH, session=None):
    fields = {"name": name, "project_id": project_id}
    if episode_index is not None:
        fields["episode_index"] = str(episode_index)
    with open(zip_path, "rb") as f:
        post = (session or requests).post
        return post(f"{url}/api/v1/session/upload", data=fields,
                    files={"file": (f"{name}.zip", f, "application/zip")}, headers=headers, timeout=120)


def assert_same_episode(client: Path, server_task: Path, n: int):
    for rel in episode_files(client, n):
        assert (server_task / rel).read_bytes() == (client / rel).read_bytes(), f"{rel} differs after import"
