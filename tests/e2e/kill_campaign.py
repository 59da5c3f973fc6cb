"""Kill campaigns: SIGKILL a reel command at random moments, then check what it left.

Every campaign runs in two sizes. `make test` runs the quick size: enough rounds to reach the
start, the middle and the end of the work on every run, in seconds. `make soak` sets
REEL_SOAK=1 and runs the full size, the campaign an issue asked for. A campaign's own variable
(REEL_PUSH_S3_KILLS=..., named in its test) overrides both.
"""

from __future__ import annotations

import os
import signal
import subprocess


def kill_rounds(variable: str, quick: int, soak: int) -> int:
    """The number of rounds (or kills) a campaign runs: $variable, else the soak or quick size."""
    if variable in os.environ:
        return int(os.environ[variable])
    return soak if os.environ.get("REEL_SOAK") == "1" else quick


def kill_delays(rng, span: float, strata: int):
    """Delays in [0, span): the first `strata` one in each of `strata` equal slices of the span,
    in random order, then uniform. A quick campaign then reaches every part of the work, the
    short stretch where a change is half-published included, which uniform draws can miss."""
    order = list(range(strata))
    rng.shuffle(order)
    for i in order:
        yield span * (i + rng.random()) / strata
    while True:
        yield rng.uniform(0.0, span)


def run_killed_after(argv: list, delay: float) -> tuple[int, str]:
    """Runs argv and SIGKILLs it after `delay` seconds unless it ended first; (returncode, stderr)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    err = proc.stderr.read().decode("utf-8", errors="replace")
    proc.stderr.close()
    return proc.returncode, err
