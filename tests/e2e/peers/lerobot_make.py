"""Write a small deterministic LeRobot dataset with LeRobot's own writer.

Run with a peer venv's python (.venv-lerobot for v3.0, .venv-lerobot21 for v2.1):

    lerobot_make.py <root> [--vcodec libsvtav1|h264|hevc] [--episodes 3] [--cameras 2]

The format version is whatever the installed lerobot writes. Content is a pure function of
(episode, frame, camera) so that tests can recompute it: see expected_state/expected_action/
expected_image below (tests import this file for those functions; it imports lerobot lazily).
Prints a JSON summary (lerobot version, codebase_version, codec, lengths) on stdout.
"""

import argparse
import json
import os
import sys
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

FPS = 10
WIDTH, HEIGHT = 64, 48
LENGTHS = [12, 17, 9, 14]
TASKS = ["pick the red cube", "place the cube in the bowl", "pick the red cube", "wipe the table"]
CAMERAS = ["observation.images.front", "observation.images.wrist"]


def expected_state(ep, i):
    import numpy as np

    return (np.arange(6, dtype=np.float32) * 0.5 + ep * 10.0 + i * 0.25).astype(np.float32)


def expected_action(ep, i):
    import numpy as np

    return (-(np.arange(6, dtype=np.float32)) + ep * 100.0 - i * 0.125).astype(np.float32)


def expected_image(ep, i, cam):
    """HWC uint8: smooth gradients that move with the frame (codec-friendly), a flat colour per
    camera and episode, and a bright square whose position encodes the frame index."""
    import numpy as np

    y = np.arange(HEIGHT, dtype=np.int32)[:, None]
    x = np.arange(WIDTH, dtype=np.int32)[None, :]
    img = np.empty((HEIGHT, WIDTH, 3), dtype=np.int32)
    img[..., 0] = (x * 3 + i * 6) % 256
    img[..., 1] = (y * 4 + ep * 40) % 256
    img[..., 2] = 60 + 90 * cam + 0 * x
    sq = 8
    x0 = (i * 4) % (WIDTH - sq)
    y0 = (ep * 12 + cam * 8) % (HEIGHT - sq)
    img[y0:y0 + sq, x0:x0 + sq, :] = 250
    return img.astype(np.uint8)


def features(cameras):
    names6 = [f"j{k}" for k in range(6)]
    f = {
        "observation.state": {"dtype": "float32", "shape": (6,), "names": names6},
        "action": {"dtype": "float32", "shape": (6,), "names": names6},
    }
    for key in cameras:
        f[key] = {"dtype": "video", "shape": (HEIGHT, WIDTH, 3), "names": ["height", "width", "channels"]}
    return f


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--vcodec", default=None, help="encoder (v3.0 writer: libsvtav1, h264, hevc); default: LeRobot's")
    ap.add_argument("--episodes", type=int, default=3)
    ap.add_argument("--cameras", type=int, default=2)
    args = ap.parse_args(argv)

    import inspect

    import lerobot
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    cameras = CAMERAS[: args.cameras]
    kwargs = dict(repo_id="local/reel_peer", fps=FPS, features=features(cameras), root=args.root,
                  robot_type="reel_sim", use_videos=True)
    create_params = inspect.signature(LeRobotDataset.create).parameters
    if args.vcodec is not None:
        if "vcodec" in create_params:
            kwargs["vcodec"] = args.vcodec
        else:
            # lerobot 0.3.x has no vcodec parameter: its encode_video_frames default is the codec.
            import lerobot.datasets.lerobot_dataset as ld
            import lerobot.datasets.video_utils as vu

            orig = vu.encode_video_frames

            def encode(*a, **kw):
                kw["vcodec"] = args.vcodec
                return orig(*a, **kw)

            vu.encode_video_frames = encode
            ld.encode_video_frames = encode
    ds = LeRobotDataset.create(**kwargs)

    add_params = inspect.signature(ds.add_frame).parameters
    for ep in range(args.episodes):
        task = TASKS[ep % len(TASKS)]
        for i in range(LENGTHS[ep % len(LENGTHS)]):
            frame = {"observation.state": expected_state(ep, i), "action": expected_action(ep, i)}
            for c, key in enumerate(cameras):
                frame[key] = expected_image(ep, i, c)
            if "task" in add_params:  # lerobot 0.3.x: add_frame(frame, task, timestamp=None)
                ds.add_frame(frame, task=task)
            else:  # lerobot 0.4.x: the task is a key of the frame
                frame["task"] = task
                ds.add_frame(frame)
        ds.save_episode()
    if hasattr(ds, "finalize"):  # v3.0 writer: closes the open parquet writers (footers)
        ds.finalize()

    with open(os.path.join(args.root, "meta", "info.json")) as f:
        info = json.load(f)
    codecs = {k: v.get("info", {}).get("video.codec") for k, v in info["features"].items() if v["dtype"] == "video"}
    print(json.dumps({
        "lerobot": lerobot.__version__ if hasattr(lerobot, "__version__") else None,
        "codebase_version": info["codebase_version"],
        "codecs": codecs,
        "lengths": [LENGTHS[ep % len(LENGTHS)] for ep in range(args.episodes)],
        "tasks": [TASKS[ep % len(TASKS)] for ep in range(args.episodes)],
        "cameras": cameras,
        "fps": FPS,
    }))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001
        traceback.print_exc()
        print(f"lerobot_make: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
