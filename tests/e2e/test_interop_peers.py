"""reel's LeRobot exports read by the real clients: LeRobotDataset (lerobot 0.4.4 for v3.0,
0.3.3 for v2.1, in their peer venvs) iterates every frame with video decoding at its default
tolerance, and Daft's LeRobot reader decodes the v3.0 export, on its native runner and on a local
Ray cluster. Expected values come from the pooled task through pyarrow and the ffmpeg CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from .cli_run import reel
from .lerobot_peer import dump
from .video_ref import cli_rgb

W, H = 96, 64
RGB_SLOTS = ["d435_rgb", "gripper_2_rgb", "gripper_rgb", "head_left_rgb", "stereo_left", "stereo_right"]
STATE = ["observation.gripper_2_gripper_left_force", "observation.gripper_2_gripper_right_force",
         "observation.gripper_2_gripper_state", "observation.gripper_left_force",
         "observation.gripper_right_force", "observation.gripper_state"]




@pytest.fixture(scope="module")
def task(reel_bin, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("peer-task") / "pick"
    reel(reel_bin, "simulate", root, "--count", 3, "--seconds", 1.2, "--video-size", f"{W}x{H}",
         "--seed", 7)
    return root


@pytest.fixture(scope="module")
def pooled(task):
    """Per episode: the pooled data (pyarrow) and every RGB slot's frames (ffmpeg CLI)."""
    out = []
    for n, f in enumerate(sorted((task / "data").rglob("*.parquet")), start=1):
        rows = pq.read_table(f).to_pydict()
        frames = {s: cli_rgb(task / "videos/chunk-000" / s / f"episode-{n - 1:03d}.mp4", W, H) for s in RGB_SLOTS}
        out.append((rows, frames))
    return out


@pytest.fixture(scope="module")
def exported(reel_bin, task, tmp_path_factory):
    cache = {}

    def get(version):
        if version not in cache:
            root = tmp_path_factory.mktemp(f"export-{version}") / "ds"
            reel(reel_bin, "export", "--to", {"v3.0": "lerobot-v3", "v2.1": "lerobot-v2.1"}[version], task, root)
            cache[version] = root
        return cache[version]

    return get


def expected_columns(pooled):
    ep = np.concatenate([np.full(len(r["frame_index"]), e) for e, (r, _) in enumerate(pooled)])
    fi = np.concatenate([np.arange(len(r["frame_index"])) for r, _ in pooled])
    state = np.concatenate([np.concatenate([np.array(r[c], np.float32) for c in STATE], axis=1) for r, _ in pooled])
    # the export's left glove is in canonical order (multi-device §4.5: raw[::-1, ::-1].T)
    glove = np.concatenate([np.array(r["observation.left_glove"], np.float32) for r, _ in pooled])
    glove = np.stack([m.reshape(16, 16)[::-1, ::-1].T.reshape(-1) for m in glove])
    wall = np.concatenate([np.array(r["wall_time"], np.float64) for r, _ in pooled])
    return ep, fi, state, glove, wall


@pytest.mark.parametrize("version", ["v3.0", "v2.1"])
def test_lerobot_dataset_reads_every_frame(exported, pooled, version):
    d = dump(exported(version), version)
    meta = d["__meta__"]
    ep, fi, state, glove, wall = expected_columns(pooled)
    n = len(ep)
    assert meta["codebase_version"] == version and meta["num_frames"] == n
    assert meta["episode_lengths"] == [len(r["frame_index"]) for r, _ in pooled]
    np.testing.assert_array_equal(d["episode_index"], ep)
    np.testing.assert_array_equal(d["frame_index"], fi)
    np.testing.assert_array_equal(d["index"], np.arange(n))
    np.testing.assert_array_equal(d["timestamp"], (fi / 30.0).astype(np.float32))
    np.testing.assert_array_equal(d["observation.state"], state)
    np.testing.assert_array_equal(d["observation.left_glove"], glove)
    # The parquet holds wall_time as float64, but LeRobot turns a float64 scalar into a float32
    # tensor (torch.tensor of a Python float): what it hands out is the float32 rounding.
    np.testing.assert_array_equal(d["wall_time"], wall.astype(np.float32))
    assert [str(t) for t in d["task"]] == ["pick"] * n
    for slot in RGB_SLOTS:
        want = np.concatenate([frames[slot] for _, frames in pooled])
        got = d[f"observation.images.{slot}"]
        assert got.shape == (n, H, W, 3)
        # LeRobot asked for from_timestamp + timestamp and got exactly frame i of the episode
        np.testing.assert_array_equal(got, want, err_msg=slot)
    for slot in ("stereo_depth", "d435_depth"):
        assert d[f"observation.depth.{slot}"].shape == (n, H, W, 3)


def _daft_frames(root: str, keys: list[str]) -> dict:
    from daft.datasets import lerobot as daft_lerobot

    return daft_lerobot.read(root, load_video_frames=keys).sort("index").to_pydict()


def test_daft_reads_v30_export(exported, pooled):
    pytest.importorskip("daft")
    root = str(exported("v3.0"))
    keys = [f"observation.images.{s}" for s in RGB_SLOTS]
    got = _daft_frames(root, keys)
    ep, fi, state, _, _ = expected_columns(pooled)
    np.testing.assert_array_equal(np.asarray(got["index"]), np.arange(len(ep)))
    np.testing.assert_array_equal(np.asarray(got["observation.state"], np.float32), state)
    for slot in RGB_SLOTS:
        want = np.concatenate([frames[slot] for _, frames in pooled])
        frames = np.stack([np.asarray(f) for f in got[f"observation.images.{slot}"]])
        np.testing.assert_array_equal(frames, want, err_msg=slot)


RAY_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import ray
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, configure_logging=False)
    import daft
    from daft.datasets import lerobot as daft_lerobot
    daft.set_runner_ray(noop_if_initialized=True)
    keys = sys.argv[3:]
    got = daft_lerobot.read(sys.argv[1], load_video_frames=keys).sort("index").to_pydict()
    np.savez(sys.argv[2], index=np.asarray(got["index"]),
             **{k: np.stack([np.asarray(f) for f in got[k]]) for k in keys})
    ray.shutdown()
    print(json.dumps({"runner": str(daft.get_or_infer_runner_type())}))
""")


def test_daft_on_ray_reads_v30_export(exported, pooled, tmp_path):
    pytest.importorskip("daft")
    pytest.importorskip("ray")
    keys = [f"observation.images.{s}" for s in ("gripper_rgb", "stereo_left")]
    out = tmp_path / "ray.npz"
    ray_tmp = tempfile.mkdtemp(prefix="reel-ray-")
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", RAY_TMPDIR=ray_tmp)
    proc = subprocess.run([sys.executable, "-c", RAY_SCRIPT, str(exported("v3.0")), str(out), *keys],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "ray" in json.loads(proc.stdout.strip().splitlines()[-1])["runner"].lower()
    with np.load(out) as z:
        for key in keys:
            want = np.concatenate([frames[key.rsplit(".", 1)[1]] for _, frames in pooled])
            np.testing.assert_array_equal(z[key], want, err_msg=key)


def test_lerobot_reads_rolled_over_files(reel_bin, task, pooled, tmp_path):
    """One data file and one mp4 per camera per episode (rollover at 0 MB): LeRobot still finds
    every frame through the episodes rows' chunk/file indices and from/to timestamps."""
    root = tmp_path / "rolled"
    reel(reel_bin, "export", task, root, "--data-file-mb", 0, "--video-file-mb", 0, "--no-depth")
    d = dump(root, "v3.0")
    ep, fi, state, _, _ = expected_columns(pooled)
    np.testing.assert_array_equal(d["episode_index"], ep)
    np.testing.assert_array_equal(d["observation.state"], state)
    for slot in ("stereo_left", "gripper_rgb"):
        want = np.concatenate([frames[slot] for _, frames in pooled])
        np.testing.assert_array_equal(d[f"observation.images.{slot}"], want, err_msg=slot)
