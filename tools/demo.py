#!/usr/bin/env python3
"""`make demo`: a multi-device task, then `reel info | ls | show | stats | check` on it.

Until the recorder lands (issue 3), the task is written by the test suite's independent
pyarrow builder (tests/e2e/fixtures.py): a head stereo camera with IMU and depth, two
tactile gloves, a UMI gripper with int16x100 force matrices and a SLAM trajectory.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from fixtures import EpisodeSpec, ForceMatrixSpec, make_force_frame, write_task  # noqa: E402


def build(out: Path) -> Path:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    episodes = []
    for n in (1, 2, 3):
        length = 30
        frames = [make_force_frame(100 * n + i) if i % 3 == 0 else None for i in range(length)]
        episodes.append(
            EpisodeSpec(
                n,
                length=length,
                videos={"stereo_left": "mp4", "stereo_right": "mp4", "stereo_depth": "mp4",
                        "gripper_rgb": "mp4"},
                gloves=("left_glove", "right_glove"),
                imu=[(i % 4) for i in range(length)],
                force={"observation.gripper_left_force_matrix": ForceMatrixSpec("int16x100", frames)},
                slam={"observation.slam_trajectory": [(i % 2) for i in range(length)]},
                seed=n,
            )
        )
    task = write_task(out, "demo_桌面抓取", episodes)
    return task.path


def run(reel: str, *args: str) -> int:
    print(f"\n$ reel {' '.join(args)}", flush=True)
    return subprocess.run([reel, *args]).returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reel", required=True, help="path to the reel binary")
    ap.add_argument("--out", default="out/demo", help="where to write the demo task")
    args = ap.parse_args()
    task = str(build(Path(args.out)))
    print(f"demo task written to {task}")
    rc = 0
    for cmd in (["info", task], ["ls", task], ["show", task, "1"], ["stats", task], ["check", task]):
        rc |= run(args.reel, *cmd)
    return rc


if __name__ == "__main__":
    sys.exit(main())
