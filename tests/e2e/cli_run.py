"""Runs the reel CLI for tests that write outside pytest's tmp_path guard (exports, imports,
simulated tasks): `reel(reel_bin, *args, ok=0)` asserts the exit status and returns the process;
`run_measured` also gives the child's peak RSS."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def reel(reel_bin: str, *args, ok: int = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([reel_bin, *map(str, args)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == ok, (f"reel {' '.join(map(str, args))}: exit {proc.returncode}, expected {ok}\n"
                                   f"{proc.stderr}")
    return proc


def run_measured(argv: list, where: Path) -> tuple[int, str, str, int]:
    """Runs argv (output kept in files under `where`); returns (exit code, stdout, stderr, the
    child's own peak RSS in bytes, from wait4's rusage): for tests of bounded memory."""
    with open(where / "measured.out", "w+") as out, open(where / "measured.err", "w+") as err:
        proc = subprocess.Popen([str(a) for a in argv], stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # reaped here, with its own rusage
        out.seek(0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), out.read(), err.read(), usage.ru_maxrss * 1024
