#!/usr/bin/env python3
"""`make demo`: record a multi-device task with the simulated rig, then inspect and check it.

`reel simulate` drives the C++ recorder (reel::TaskWriter) with a virtual rig: two UMI grippers
(force, state, int16x100 force matrices, SLAM), an ego S80C head with a 400 Hz IMU and its own
trajectory, two USB gloves, a D435 and a UVC camera, with eight video streams (six RGB H.264, two
12-bit HEVC depth). Then `reel info | ls | show | stats | check`, `reel frames` decodes a few
frames of two cameras to PNG, and `reel export` writes the task as a LeRobot v3.0 dataset, which
`reel info` and `reel check` then read like any dataset.
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
    frames = str(out / "frames")
    for cmd in (["simulate", task, "--count", "3", "--seconds", "3"], ["info", task], ["ls", task],
                ["show", task, "2"], ["stats", task], ["check", task],
                ["frames", task, "2", "--slot", "stereo_left", "--at", "0,45,89", "-o", frames],
                ["frames", task, "2", "--slot", "stereo_depth", "--at", "45", "-o", frames],
                ["export", "--to", "lerobot-v3", task, str(out / "lerobot_v3")],
                ["info", str(out / "lerobot_v3")], ["check", str(out / "lerobot_v3")],
                ["report", task, "-o", str(out / "report.html")],
                ["view", task, "2", "--save", str(out / "episode_2.rrd")]):
        rc |= run(args.reel, *cmd)
    return rc


if __name__ == "__main__":
    sys.exit(main())
