"""`reel export`: pooled task -> LeRobot v3.0 / v2.1 and bundles, read back independently.

Every expected value comes from the pooled task as pyarrow reads it, from the ffmpeg CLI, or
from PyAV: nothing here uses reel to check reel. The real `lerobot` and `daft` packages read the
same exports in test_lerobot_peers.py."""

from __future__ import annotations

import json
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from .cli_run import reel
from .video_ref import cli_rgb

STATE_COLUMNS = [
    "observation.gripper_2_gripper_left_force", "observation.gripper_2_gripper_right_force",
    "observation.gripper_2_gripper_state", "observation.gripper_left_force",
    "observation.gripper_right_force", "observation.gripper_state",
]
W, H = 96, 64




@pytest.fixture(scope="module")
def task(reel_bin, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("export") / "pick"
    reel(reel_bin, "simulate", root, "--count", 3, "--seconds", 1.5, "--video-size", f"{W}x{H}")
    return root


def pooled_rows(task: Path) -> list[dict]:
    """Per episode (N order) the pooled data as pyarrow reads it."""
    files = sorted((task / "data").rglob("*.parquet"))
    return [pq.read_table(f).to_pydict() for f in files]


def pooled_video(task: Path, n: int, slot: str) -> Path:
    return task / "videos" / "chunk-000" / slot / f"episode-{n - 1:03d}.mp4"


def ffprobe_frames(path: Path) -> list[Fraction]:
    """Presentation times of every frame, exact, from ffprobe."""
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
         "stream=time_base:packet=pts", "-of", "json", str(path)],
        check=True, capture_output=True, text=True).stdout
    j = json.loads(out)
    tb = Fraction(j["streams"][0]["time_base"])
    return sorted(Fraction(p["pts"]) * tb for p in j["packets"])


@pytest.fixture(scope="module")
def v3(reel_bin, task, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("v3") / "pick_v3"
    reel(reel_bin, "export", "--to", "lerobot-v3", task, out)
    return out


def test_v3_info_and_episodes(v3, task):
    info = json.loads((v3 / "meta" / "info.json").read_text())
    pooled = pooled_rows(task)
    lengths = [len(r["frame_index"]) for r in pooled]
    assert info["codebase_version"] == "v3.0"
    assert info["total_episodes"] == 3 and info["total_frames"] == sum(lengths)
    assert info["fps"] == 30 and isinstance(info["fps"], int)
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    assert info["splits"] == {"train": "0:3"}
    feats = info["features"]
    assert feats["observation.state"]["shape"] == [18]
    assert feats["observation.state"]["names"][0] == "observation.gripper_2_gripper_left_force.0"
    cam = feats["observation.images.stereo_left"]
    assert cam["dtype"] == "video" and cam["shape"] == [H, W, 3]
    assert cam["info"]["video.codec"] == "h264" and cam["info"]["video.is_depth_map"] is False
    assert feats["observation.depth.stereo_depth"]["info"]["video.is_depth_map"] is True
    for k in ("timestamp", "frame_index", "episode_index", "index", "task_index"):
        assert k in feats
    assert info["reel"]["pooled_episode_index"] == [1, 2, 3]

    eps = pq.read_table(v3 / "meta/episodes/chunk-000/file-000.parquet").to_pydict()
    assert eps["episode_index"] == [0, 1, 2]
    assert eps["length"] == lengths
    assert eps["dataset_from_index"] == [0, lengths[0], lengths[0] + lengths[1]]
    assert eps["dataset_to_index"] == list(np.cumsum(lengths))
    assert eps["tasks"] == [["pick"]] * 3
    tasks = pq.read_table(v3 / "meta/tasks.parquet")
    assert tasks.to_pydict() == {"task_index": [0], "task": ["pick"]}
    # the task string is the pandas index, which is how LeRobot looks tasks up
    assert json.loads(tasks.schema.metadata[b"pandas"])["index_columns"] == ["task"]


def test_v3_data_values_equal_pooled(v3, task):
    data = pq.read_table(v3 / "data/chunk-000/file-000.parquet").to_pydict()
    pooled = pooled_rows(task)
    start = 0
    for ep, rows in enumerate(pooled):
        n = len(rows["frame_index"])
        sl = slice(start, start + n)
        assert data["episode_index"][sl] == [ep] * n
        assert data["frame_index"][sl] == list(range(n))
        assert data["index"][sl] == list(range(start, start + n))
        np.testing.assert_array_equal(np.array(data["timestamp"][sl], np.float32),
                                      (np.arange(n) / 30.0).astype(np.float32))
        state = np.concatenate([np.array(rows[c], np.float32) for c in STATE_COLUMNS], axis=1)
        np.testing.assert_array_equal(np.array(data["observation.state"][sl], np.float32), state)
        np.testing.assert_array_equal(np.array(data["pooled.timestamp"][sl], np.float32),
                                      np.array(rows["timestamp"], np.float32))
        # the left glove in canonical order (multi-device §4.5: raw[::-1, ::-1].T)
        left = np.array(rows["observation.left_glove"], np.float32).reshape(-1, 16, 16)
        np.testing.assert_array_equal(np.array(data["observation.left_glove"][sl], np.float32),
                                      np.stack([m[::-1, ::-1].T.reshape(-1) for m in left]))
        # IMU, force matrices, trajectories: paired by time (values: test_export_aligned.py)
        assert np.array(data["observation.imu"][sl], np.float32).shape == (n, 16, 6)
        assert np.array(data["observation.imu_mask"][sl], np.float32).shape == (n, 16)
        assert np.array(data["observation.gripper_left_force_matrix"][sl], np.float32).shape == (n, 250, 250)
        assert "imu_ts_ns" not in data
        # ... and kept, with every list column, unchanged in the sidecar
        side = pq.read_table(v3 / f"reel/sidecar/chunk-000/episode_{ep:06d}.parquet").to_pydict()
        for col in ("observation.imu", "imu_ts_ns", "observation.slam_trajectory",
                    "observation.gripper_left_force_matrix"):
            assert side[col] == rows[col], col
        start += n


def test_v3_videos_concatenated_with_exact_spans(v3, task):
    eps = pq.read_table(v3 / "meta/episodes/chunk-000/file-000.parquet").to_pydict()
    lengths = eps["length"]
    for key, slot in (("observation.images.stereo_left", "stereo_left"),
                      ("observation.images.head_left_rgb", "head_left_rgb")):
        path = v3 / "videos" / key / "chunk-000" / "file-000.mp4"
        times = ffprobe_frames(path)
        assert len(times) == sum(lengths)
        start = Fraction(0)
        for ep, n in enumerate(lengths):
            assert eps[f"videos/{key}/from_timestamp"][ep] == float(start)
            assert eps[f"videos/{key}/to_timestamp"][ep] == float(start + Fraction(n, 30))
            first = sum(lengths[:ep])
            # every frame's pts is exactly from_timestamp + frame_index / fps
            assert times[first:first + n] == [start + Fraction(i, 30) for i in range(n)]
            start += Fraction(n, 30)
        # stream copy: the concatenated file decodes to the pooled files' frames
        got = cli_rgb(path, W, H)
        want = np.concatenate([cli_rgb(pooled_video(task, n, slot), W, H) for n in (1, 2, 3)])
        np.testing.assert_array_equal(got, want)


def test_v3_stats(v3):
    stats = json.loads((v3 / "meta" / "stats.json").read_text())
    data = pq.read_table(v3 / "data/chunk-000/file-000.parquet").to_pydict()
    state = np.array(data["observation.state"], np.float64)
    s = stats["observation.state"]
    assert s["count"] == [len(state)]
    np.testing.assert_allclose(s["mean"], state.mean(axis=0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(s["std"], state.std(axis=0), rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(s["min"], state.min(axis=0))
    np.testing.assert_array_equal(s["max"], state.max(axis=0))
    for q in ("q01", "q10", "q50", "q90", "q99"):
        assert len(s[q]) == 18
    img = stats["observation.images.stereo_left"]
    assert np.array(img["mean"]).shape == (3, 1, 1)
    assert all(0.0 <= v <= 1.0 for v in np.ravel(img["max"]))
    eps = pq.read_table(v3 / "meta/episodes/chunk-000/file-000.parquet").to_pydict()
    counts = [c[0] for c in eps["stats/observation.state/count"]]
    assert counts == eps["length"]
    # the global mean is the count-weighted mean of the episodes' means
    means = np.array(eps["stats/observation.state/mean"])
    np.testing.assert_allclose(s["mean"], (means * np.array(counts)[:, None]).sum(0) / sum(counts),
                               rtol=1e-9)


def test_v21_layout(reel_bin, task, tmp_path):
    out = tmp_path / "pick_v21"
    reel(reel_bin, "export", "--to", "lerobot-v2.1", task, out)
    info = json.loads((out / "meta/info.json").read_text())
    assert info["codebase_version"] == "v2.1" and info["total_chunks"] == 1
    assert info["total_videos"] == 3 * 8
    lines = [json.loads(x) for x in (out / "meta/episodes.jsonl").read_text().splitlines()]
    pooled = pooled_rows(task)
    assert [x["length"] for x in lines] == [len(r["frame_index"]) for r in pooled]
    assert [json.loads(x) for x in (out / "meta/tasks.jsonl").read_text().splitlines()] == [
        {"task_index": 0, "task": "pick"}]
    stats = [json.loads(x) for x in (out / "meta/episodes_stats.jsonl").read_text().splitlines()]
    assert [s["episode_index"] for s in stats] == [0, 1, 2]
    assert "q01" not in stats[0]["stats"]["observation.state"]
    for ep in range(3):
        t = pq.read_table(out / f"data/chunk-000/episode_{ep:06d}.parquet").to_pydict()
        assert t["episode_index"] == [ep] * lines[ep]["length"]
        v = out / f"videos/chunk-000/observation.images.stereo_left/episode_{ep:06d}.mp4"
        np.testing.assert_array_equal(cli_rgb(v, W, H), cli_rgb(pooled_video(task, ep + 1, "stereo_left"), W, H))
        assert ffprobe_frames(v)[0] == 0


def test_bundle_read_by_independent_reader(reel_bin, task, tmp_path):
    import av  # PyAV: an independent decoder

    out = tmp_path / "pick_bundles"
    reel(reel_bin, "export", "--to", "bundle", task, out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["episode_count"] == 3 and manifest["fps"] == 30.0
    pooled = pooled_rows(task)
    assert [e["length"] for e in manifest["episodes"]] == [len(r["frame_index"]) for r in pooled]
    assert not [p for p in (out / "episodes").iterdir() if p.name.startswith(".")]
    for ep, entry in enumerate(manifest["episodes"]):
        d = out / "episodes" / entry["id"]
        assert len(entry["id"]) == 3 + 32
        sidecar = json.loads((d / "episode.json").read_text())
        assert sidecar["schema_version"] == 1 and sidecar["length"] == entry["length"]
        assert sidecar["task"] == "pick" and sidecar["pooled"]["episode_index"] == ep + 1
        t = pq.read_table(d / "data.parquet")
        assert t.schema.field("timestamp").type == "int64"
        assert str(t.schema.field("observation.state").type) == "list<element: float>"
        rows = t.to_pydict()
        assert rows["step"] == list(range(entry["length"]))
        np.testing.assert_array_equal(
            rows["timestamp"], np.round(np.array(pooled[ep]["timestamp"], np.float32).astype(np.float64) * 1e9))
        for key in manifest["features"]:
            if manifest["features"][key]["dtype"] != "video":
                continue
            with av.open(str(d / f"{key}.mp4")) as c:
                frames = [f for f in c.decode(video=0)]
            assert len(frames) == len(rows["step"]), key  # row i = frame i
            if key == "observation.images.gripper_rgb":
                got = np.stack([f.to_ndarray(format="rgb24") for f in frames])
                want = cli_rgb(pooled_video(task, ep + 1, "gripper_rgb"), W, H)
                np.testing.assert_array_equal(got, want)


def test_export_refuses_existing_and_bad_mapping(reel_bin, task, tmp_path):
    out = tmp_path / "exists"
    out.mkdir()
    p = reel(reel_bin, "export", task, out, ok=2)
    assert "already exists" in p.stderr and str(out) in p.stderr
    bad = tmp_path / "bad"
    p = reel(reel_bin, "export", task, bad, "--state", "observation.nope", ok=2)
    assert "observation.nope" in p.stderr and "state" in p.stderr
    p = reel(reel_bin, "export", task, bad, "--state", "observation.imu", ok=2)
    assert "observation.imu" in p.stderr and "not a fixed-size" in p.stderr
    assert not bad.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "scratch left behind"
    p = reel(reel_bin, "export", task, task / "lerobot", ok=2)
    assert "inside the task" in p.stderr and not (task / "lerobot").exists()


def test_export_action_source_and_episode_choice(reel_bin, task, tmp_path):
    out = tmp_path / "act"
    p = reel(reel_bin, "export", task, out, "--action", "observation.gripper_state", "--episodes", "2,3",
             "--no-depth", "--json")
    report = json.loads(p.stdout)
    assert report["episodes"] == 2 and not any("placeholder" in w for w in report["warnings"])
    info = json.loads((out / "meta/info.json").read_text())
    assert info["features"]["action"]["shape"] == [3]
    assert not any(k.startswith("observation.depth.") for k in info["features"])
    data = pq.read_table(out / "data/chunk-000/file-000.parquet").to_pydict()
    pooled = pooled_rows(task)
    np.testing.assert_array_equal(np.array(data["action"], np.float32),
                                  np.concatenate([np.array(pooled[i]["observation.gripper_state"], np.float32)
                                                  for i in (1, 2)]))
    assert info["reel"]["pooled_episode_index"] == [2, 3]


def test_v3_rollover_and_reencoded_depth(reel_bin, tmp_path):
    """--data-file-mb 0 / --video-file-mb 0 start a new file for every episode; an FFV1 depth .mkv
    cannot go into mp4 and is re-encoded as 12-bit HEVC with the same frame count."""
    task = tmp_path / "ffv1"
    reel(reel_bin, "simulate", task, "--count", 2, "--seconds", 0.5, "--video-size", f"{W}x{H}", "--depth-ffv1")
    out = tmp_path / "rolled"
    p = reel(reel_bin, "export", task, out, "--data-file-mb", 0, "--video-file-mb", 0, "--json")
    report = json.loads(p.stdout)
    assert report["videos_reencoded"] == 2 * 2  # two depth slots, two episodes
    eps = pq.read_table(out / "meta/episodes/chunk-000/file-000.parquet").to_pydict()
    assert eps["data/file_index"] == [0, 1]
    key = "observation.images.stereo_left"
    assert eps[f"videos/{key}/file_index"] == [0, 1]
    assert eps[f"videos/{key}/from_timestamp"] == [0.0, 0.0]  # each file starts its own clock
    for ep, n in enumerate(eps["length"]):
        t = pq.read_table(out / f"data/chunk-000/file-{ep:03d}.parquet").to_pydict()
        assert t["episode_index"] == [ep] * n
        depth = out / "videos/observation.depth.stereo_depth/chunk-000" / f"file-{ep:03d}.mp4"
        probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets",
                                "-show_entries", "stream=codec_name,pix_fmt,nb_read_packets", "-of", "json",
                                str(depth)], check=True, capture_output=True, text=True).stdout
        s = json.loads(probe)["streams"][0]
        assert (s["codec_name"], s["pix_fmt"], int(s["nb_read_packets"])) == ("hevc", "gray12le", n)
