"""The real LeRobot and Daft as peers: prove that the peer venvs (`make peers`) write and read
LeRobot v3.0 (lerobot 0.4.4) and v2.1 (lerobot 0.3.3) datasets with video, and that Daft's LeRobot
reader (in the main venv) decodes the same frames, on its native runner and on a local Ray
cluster. Later interop tests use these helpers to check reel's exports (tests/e2e/lerobot_peer.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

from .lerobot_peer import dump, expected, make_dataset

FILES = {
    "v3.0": ["meta/info.json", "meta/stats.json", "meta/tasks.parquet",
             "meta/episodes/chunk-000/file-000.parquet", "data/chunk-000/file-000.parquet",
             "videos/{cam}/chunk-000/file-000.mp4"],
    "v2.1": ["meta/info.json", "meta/episodes.jsonl", "meta/episodes_stats.jsonl", "meta/tasks.jsonl",
             "data/chunk-000/episode_{ep:06d}.parquet", "videos/chunk-000/{cam}/episode_{ep:06d}.mp4"],
}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """{(version, vcodec): (root, summary, dump)} made on first use."""
    cache = {}

    def get(version, vcodec=None):
        if (version, vcodec) not in cache:
            root = tmp_path_factory.mktemp(f"lerobot-{version}-{vcodec or 'default'}") / "ds"
            summary = make_dataset(root, version, vcodec=vcodec)
            cache[(version, vcodec)] = (root, summary, dump(root, version))
        return cache[(version, vcodec)]

    return get


def check_dump(d, summary, version):
    meta = d["__meta__"]
    lengths = summary["lengths"]
    n = sum(lengths)
    assert meta["codebase_version"] == version
    assert meta["fps"] == expected.FPS
    assert meta["episode_lengths"] == lengths
    assert meta["num_frames"] == n
    assert meta["video_keys"] == summary["cameras"]
    assert meta["video_backend"] == "torchcodec"
    ep = np.repeat(np.arange(len(lengths)), lengths)
    fi = np.concatenate([np.arange(k) for k in lengths])
    np.testing.assert_array_equal(d["episode_index"], ep)
    np.testing.assert_array_equal(d["frame_index"], fi)
    np.testing.assert_array_equal(d["index"], np.arange(n))
    np.testing.assert_array_equal(d["timestamp"], (fi / expected.FPS).astype(np.float32))
    assert [str(t) for t in d["task"]] == [summary["tasks"][e] for e in ep]
    for key, fn in (("observation.state", expected.expected_state), ("action", expected.expected_action)):
        assert d[key].dtype == np.float32 and d[key].shape == (n, 6)
        np.testing.assert_array_equal(d[key], np.stack([fn(e, i) for e, i in zip(ep, fi)]))
    for c, cam in enumerate(summary["cameras"]):
        frames = d[cam]
        assert frames.dtype == np.uint8 and frames.shape == (n, expected.HEIGHT, expected.WIDTH, 3)
        for row, (e, i) in enumerate(zip(ep, fi)):
            # lossy codecs: close to the frame written, and closer to it than to any other frame
            # of the episode (the decoder returned the right frame, not a neighbour)
            errs = [np.abs(frames[row].astype(int) - expected.expected_image(e, j, c)).mean()
                    for j in range(lengths[e])]
            assert errs[i] < 10, (cam, e, i, errs[i])
            assert int(np.argmin(errs)) == i, (cam, e, i, errs)


@pytest.mark.parametrize("version", ["v3.0", "v2.1"])
def test_lerobot_writes_and_reads_its_format(made, version):
    root, summary, d = made(version)
    assert summary["codebase_version"] == version
    assert summary["lerobot"] == {"v3.0": "0.4.4", "v2.1": "0.3.3"}[version]
    # LeRobot's default encoder is libsvtav1 (in PyAV's wheel); torchcodec decodes it with
    # Debian's FFmpeg 5.1 (libdav1d).
    assert set(summary["codecs"].values()) == {"av1"}
    for pattern in FILES[version]:
        for cam in summary["cameras"]:
            for e in range(len(summary["lengths"])):
                path = root / pattern.format(cam=cam, ep=e)
                assert path.is_file(), path
    info = json.loads((root / "meta" / "info.json").read_text())
    assert info["total_frames"] == sum(summary["lengths"])
    check_dump(d, summary, version)


@pytest.mark.parametrize("vcodec", ["h264", "hevc"])
def test_lerobot_v30_h264_hevc(made, vcodec):
    root, summary, d = made("v3.0", vcodec)
    assert set(summary["codecs"].values()) == {vcodec}
    check_dump(d, summary, "v3.0")


def _daft_or_skip():
    return pytest.importorskip("daft", reason="daft is not installed in this venv (requirements.txt pins it)")


@pytest.mark.parametrize("version,vcodec", [("v3.0", None), ("v3.0", "h264"), ("v2.1", None)])
def test_daft_reads_lerobot_frames(made, version, vcodec):
    _daft_or_skip()
    from daft.datasets import lerobot as daft_lerobot

    root, summary, d = made(version, vcodec)
    got = daft_lerobot.read(str(root), load_video_frames=True).sort("index").to_pydict()
    n = sum(summary["lengths"])
    np.testing.assert_array_equal(np.asarray(got["index"]), d["index"])
    np.testing.assert_array_equal(np.asarray(got["observation.state"], dtype=np.float32), d["observation.state"])
    for cam in summary["cameras"]:
        frames = np.stack([np.asarray(f) for f in got[cam]])
        assert frames.shape == (n, expected.HEIGHT, expected.WIDTH, 3)
        # Daft (PyAV, FFmpeg 7.1 in the av wheel) and LeRobot (torchcodec, Debian's FFmpeg 5.1)
        # decode the same pixels: AV1/H.264 decoding is bit-exact and both convert with swscale.
        np.testing.assert_array_equal(frames, d[cam])


RAY_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import ray
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, configure_logging=False)
    import daft
    from daft.datasets import lerobot as daft_lerobot
    daft.set_runner_ray(noop_if_initialized=True)
    got = daft_lerobot.read(sys.argv[1], load_video_frames=True).sort("index").to_pydict()
    runner = daft.get_or_infer_runner_type()
    np.savez(sys.argv[2], index=np.asarray(got["index"]),
             **{k: np.stack([np.asarray(f) for f in got[k]]) for k in sys.argv[3:]})
    ray.shutdown()
    print(json.dumps({"runner": str(runner)}))
""")


def test_daft_on_local_ray_cluster(made, tmp_path):
    _daft_or_skip()
    pytest.importorskip("ray", reason="ray is not installed in this venv (requirements.txt pins it)")
    root, summary, d = made("v3.0")
    out = tmp_path / "ray.npz"
    # Ray's unix sockets live under RAY_TMPDIR: keep the path short (pytest's tmp_path may not be).
    ray_tmp = tempfile.mkdtemp(prefix="reel-ray-")
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", RAY_TMPDIR=ray_tmp)
    try:
        proc = subprocess.run([sys.executable, "-c", RAY_SCRIPT, str(root), str(out), *summary["cameras"]],
                              capture_output=True, text=True, timeout=600, env=env)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-6000:]
    assert "ray" in json.loads(proc.stdout.strip().splitlines()[-1])["runner"]
    with np.load(out) as z:
        np.testing.assert_array_equal(z["index"], d["index"])
        for cam in summary["cameras"]:
            np.testing.assert_array_equal(z[cam], d[cam])
