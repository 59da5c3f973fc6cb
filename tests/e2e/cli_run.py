"""Runs the reel CLI for tests that write outside pytest's tmp_path guard (exports, imports,
simulated tasks): `reel(reel_bin, *args, ok=0)` asserts the exit status and returns the process."""

from __future__ import annotations

import subprocess


def reel(reel_bin: str, *args, ok: int = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([reel_bin, *map(str, args)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == ok, (f"reel {' '.join(map(str, args))}: exit {proc.returncode}, expected {ok}\n"
                                   f"{proc.stderr}")
    return proc
