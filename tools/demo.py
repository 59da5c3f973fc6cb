#!/usr/bin/env python3
"""`make demo`: record a multi-device task with the simulated rig, then inspect and check it.

`reel simulate` drives the C++ recorder (reel::TaskWriter) with a virtual rig: two UMI grippers
(force, state, int16x100 force matrices, SLAM), an ego S80C head with a 400 Hz IMU and its own
trajectory, two USB gloves, a D435 and a UVC camera. Then `reel info | ls | show | stats | check`.
Video is not recorded yet (the video issue adds it).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path


def run(reel: str, *args: str) -> int:
    print(f"\n$ reel {' '.join(args)}", flush=True)
    return subprocess.run([reel, *args]).returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reel", required=True, help="path to the reel binary")
    ap.add_argument("--out", default="out/demo", help="folder for the demo task")
    args = ap.parse_args()
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    task = str(out / "桌面抓取_demo")
    rc = 0
    for cmd in (["simulate", task, "--episodes", "3", "--seconds", "3"], ["info", task], ["ls", task],
                ["show", task, "2"], ["stats", task], ["check", task]):
        rc |= run(args.reel, *cmd)
    return rc


if __name__ == "__main__":
    sys.exit(main())
