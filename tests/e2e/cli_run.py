"""Runs the reel CLI for tests that write outside pytest's tmp_path guard (exports, imports,
simulated tasks): `reel(reel_bin, *args, ok=0)` asserts the exit status and returns the process;
`run_measured` also gives the child's peak RSS."""

from __future__ import annotations

import subprocess
from pathlib import Path


def reel(reel_bin: str, *args, ok: int = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([reel_bin, *map(str, args)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == ok, (f"reel {' '.join(map(str, args))}: exit {proc.returncode}, expected {ok}\n"
                                   f"{proc.stderr}")
    return proc


def run_measured(argv: list, where: Path) -> tuple[int, str, str, int]:
    """Runs argv under GNU time (Debian's `time`, installed by `make deps`; output kept in files
    under `where`); returns (exit code, stdout, stderr, the child's peak RSS in bytes): for tests
    of bounded memory. Not wait4's rusage of a child of pytest: Linux carries the forking
    process's high-water RSS into the child's ru_maxrss at exec, so a child of a 1 GB pytest
    reads 1 GB whatever it used. GNU time is a small process, and its child's figure is its own."""
    measure = where / "measured.rss"
    with open(where / "measured.out", "w+") as out, open(where / "measured.err", "w+") as err:
        rc = subprocess.run(["/usr/bin/time", "-o", str(measure), "-f", "%M", *[str(a) for a in argv]],
                            stdout=out, stderr=err, timeout=600).returncode
        out.seek(0)
        err.seek(0)
        lines = measure.read_text().split()
        return rc, out.read(), err.read(), int(lines[-1]) * 1024
