"""`reel import`: LeRobot and bundle datasets into pooled tasks.

Round trips (pooled -> LeRobot v3.0 / v2.1 / bundle -> pooled) are compared value by value with
pyarrow, and frame by frame with the ffmpeg CLI; datasets written by the real LeRobot come in with
the values LeRobotDataset reads from them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from .cli_run import reel
from .lerobot_peer import dump, make_dataset
from .video_ref import cli_gray16, cli_rgb

W, H = 96, 64




@pytest.fixture(scope="module")
def task(reel_bin, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("import") / "pick"
    reel(reel_bin, "simulate", root, "--count", 2, "--seconds", 1.2, "--video-size", f"{W}x{H}", "--seed", 3)
    reel(reel_bin, "delete", root, 1)  # a gap: episode 1 has no data, episodes 2 and 3 export
    reel(reel_bin, "simulate", root, "--count", 1, "--seconds", 1.0, "--video-size", f"{W}x{H}", "--seed", 4)
    return root


def episode_files(root: Path) -> dict[int, Path]:
    return {int(pq.read_table(f, columns=["episode_index"])["episode_index"][0].as_py()): f
            for f in sorted((root / "data").rglob("*.parquet"))}


def video(root: Path, n: int, slot: str) -> Path:
    return root / "videos" / f"chunk-{(n - 1) // 1000:03d}" / slot / f"episode-{(n - 1) % 1000:03d}.mp4"


def assert_same_task(a: Path, b: Path):
    """Every data value, episodes row, task and frame of `a` is in `b` under the same N."""
    fa, fb = episode_files(a), episode_files(b)
    assert sorted(fa) == sorted(fb)
    for n in fa:
        ta, tb = pq.read_table(fa[n]), pq.read_table(fb[n])
        assert sorted(ta.column_names) == sorted(tb.column_names), n
        for col in ta.column_names:
            assert tb.schema.field(col).type == ta.schema.field(col).type, (n, col)
            assert tb[col].to_pylist() == ta[col].to_pylist(), (n, col)
        ra = pq.read_table(a / "meta/episodes/chunk-000" / f"episode-{n - 1:03d}.parquet").to_pylist()[0]
        rb = pq.read_table(b / "meta/episodes/chunk-000" / f"episode-{n - 1:03d}.parquet").to_pylist()[0]
        assert ra == rb, n
        for slot in ("stereo_left", "gripper_rgb", "d435_rgb"):
            np.testing.assert_array_equal(cli_rgb(video(b, n, slot), W, H), cli_rgb(video(a, n, slot), W, H))
        for slot in ("stereo_depth", "d435_depth"):  # the 12-bit codes themselves
            np.testing.assert_array_equal(cli_gray16(video(b, n, slot), W, H, "gray12le"),
                                          cli_gray16(video(a, n, slot), W, H, "gray12le"))
    assert (a / "meta/tasks.jsonl").read_text() == (b / "meta/tasks.jsonl").read_text()
    ia, ib = json.loads((a / "meta/info.json").read_text()), json.loads((b / "meta/info.json").read_text())
    for key in ("fps", "features", "cameras", "video_extensions", "devices", "sensors"):
        assert ia.get(key) == ib.get(key), key


@pytest.mark.parametrize("to", ["lerobot-v3", "lerobot-v2.1", "bundle"])
def test_round_trip_keeps_every_value_and_frame(reel_bin, task, tmp_path, to):
    out = tmp_path / "exported"
    reel(reel_bin, "export", "--to", to, task, out)
    back = tmp_path / "pick"
    p = reel(reel_bin, "import", out, back, "--json")
    report = json.loads(p.stdout)
    assert report["round_trip"] is True and report["episode_indices"] == [2, 3]
    assert report["videos_reencoded"] == 0
    assert_same_task(task, back)
    reel(reel_bin, "check", back)


def test_import_again_skips_identical_episodes(reel_bin, task, tmp_path):
    out = tmp_path / "v3"
    reel(reel_bin, "export", task, out)
    back = tmp_path / "pick"
    reel(reel_bin, "import", out, back)
    p = reel(reel_bin, "import", out, back, "--json")
    report = json.loads(p.stdout)
    assert report["episode_indices"] == [] and report["episodes"] == 0, report
    assert report["skipped"] == [{"source_episode": 0, "episode_index": 2}, {"source_episode": 1, "episode_index": 3}]
    assert sorted(episode_files(back)) == [2, 3]
    text = reel(reel_bin, "import", out, back).stdout
    assert "already present as episode 2" in text and "already present as episode 3" in text, text


def test_import_into_numbers_held_by_other_content_needs_renumber(reel_bin, task, tmp_path):
    out = tmp_path / "v3"
    reel(reel_bin, "export", task, out)
    back = tmp_path / "pick"
    reel(reel_bin, "import", out, back)
    reel(reel_bin, "delete", back, 2)  # 2 and 3 stay taken, their content is gone
    reel(reel_bin, "delete", back, 3)
    p = reel(reel_bin, "import", out, back, ok=2)
    assert "episode 2" in p.stderr and "--renumber" in p.stderr, p.stderr
    assert sorted(episode_files(back)) == []
    report = json.loads(reel(reel_bin, "import", out, back, "--renumber", "--json").stdout)
    assert report["episode_indices"] == [4, 5]
    assert any("taken" in w for w in report["warnings"])
    assert sorted(episode_files(back)) == [4, 5]
    reel(reel_bin, "check", back)


@pytest.mark.parametrize("version", ["v3.0", "v2.1"])
def test_import_lerobot_written_dataset(reel_bin, tmp_path, version):
    src = tmp_path / "ds"
    summary = make_dataset(src, version)
    d = dump(src, version)
    back = tmp_path / "task"
    p = reel(reel_bin, "import", src, back, "--json")
    report = json.loads(p.stdout)
    lengths = summary["lengths"]
    assert report["round_trip"] is False and report["episode_indices"] == list(range(1, len(lengths) + 1))
    assert report["videos_reencoded"] == 0  # LeRobot encodes each episode from a keyframe
    files = episode_files(back)
    start = 0
    for e, n in enumerate(lengths):
        t = pq.read_table(files[e + 1]).to_pydict()
        sl = slice(start, start + n)
        assert t["episode_index"] == [e + 1] * n and t["frame_index"] == list(range(n))
        np.testing.assert_array_equal(np.array(t["observation.state"], np.float32), d["observation.state"][sl])
        # a real action lives beside the pooled placeholder `action` (float32[1], zeros)
        np.testing.assert_array_equal(np.array(t["lerobot_action"], np.float32), d["action"][sl])
        assert t["action"] == [[0.0]] * n
        np.testing.assert_array_equal(np.array(t["timestamp"], np.float32), d["timestamp"][sl])
        for cam in summary["cameras"]:
            slot = cam.split(".")[-1]
            h, w = d[cam].shape[1:3]
            np.testing.assert_array_equal(cli_rgb(video(back, e + 1, slot), w, h), d[cam][sl], err_msg=cam)
        start += n
    tasks = [json.loads(x)["task"] for x in (back / "meta/tasks.jsonl").read_text().splitlines()]
    assert tasks == list(dict.fromkeys(summary["tasks"]))  # LeRobot's order: first appearance
    reel(reel_bin, "check", back)
    # Again: every episode is already there, identically; nothing new.
    again = json.loads(reel(reel_bin, "import", src, back, "--json").stdout)
    assert again["episode_indices"] == [] and [k["episode_index"] for k in again["skipped"]] == report["episode_indices"]
    assert sorted(episode_files(back)) == report["episode_indices"]


def test_import_refuses_a_broken_dataset_and_leaves_no_task(reel_bin, task, tmp_path):
    import pyarrow as pa

    out = tmp_path / "v3"
    reel(reel_bin, "export", task, out)
    # a gap in episode_index: row 1 says 2 (LeRobot would look videos up by position)
    eps = out / "meta/episodes/chunk-000/file-000.parquet"
    t = pq.read_table(eps)
    t = t.set_column(t.schema.get_field_index("episode_index"), "episode_index", pa.array([0, 2], pa.int64()))
    pq.write_table(t, eps)
    back = tmp_path / "pick"
    p = reel(reel_bin, "import", out, back, ok=2)
    assert "file-000.parquet" in p.stderr and "episode_index" in p.stderr, p.stderr
    assert not back.exists() or not list(back.rglob("*.parquet"))


def test_import_refuses_timestamps_off_the_frame_grid(reel_bin, task, tmp_path):
    import pyarrow as pa

    out = tmp_path / "v3"
    reel(reel_bin, "export", task, out)
    data = out / "data/chunk-000/file-000.parquet"
    t = pq.read_table(data)
    ts = t["timestamp"].to_numpy().copy()
    ts[5] += 0.002  # 2 ms off: LeRobot would decode another frame, or raise
    t = t.set_column(t.schema.get_field_index("timestamp"), "timestamp", pa.array(ts, pa.float32()))
    pq.write_table(t, data)
    back = tmp_path / "pick"
    p = reel(reel_bin, "import", out, back, ok=2)
    assert "file-000.parquet" in p.stderr and "row 5" in p.stderr and "episode 0" in p.stderr, p.stderr
    assert not back.exists()  # refused before anything was written


@pytest.mark.parametrize("to,meta", [("lerobot-v3", "meta/info.json"), ("bundle", "manifest.json")])
def test_generic_import_of_pooled_names_checks_clean(reel_bin, task, tmp_path, to, meta):
    """Without reel's block the import maps feature by feature; pooled names keep their family's
    type: a sampled IMU vector becomes one sample a row, SLAM points and stamps lists, scalars
    scalars, key columns key columns (not features)."""
    out = tmp_path / "ds"
    # The row mapping: an aligned export's IMU window [K,6] and canonical left glove are not the
    # pooled family's shape and order, which only the "reel" block and sidecar restore.
    reel(reel_bin, "export", "--to", to, task, out, "--no-depth", "--no-align")
    doc = json.loads((out / meta).read_text())
    del doc["reel"]
    (out / meta).write_text(json.dumps(doc))
    back = tmp_path / "pick"
    report = json.loads(reel(reel_bin, "import", out, back, "--json").stdout)
    assert report["round_trip"] is False and report["episode_indices"] == [1, 2]
    reel(reel_bin, "check", back)  # exit 0: no errors
    files = episode_files(back)
    src = episode_files(task)
    for n_new, n_old in ((1, 2), (2, 3)):
        t = pq.read_table(files[n_new])
        s = pq.read_table(src[n_old]).to_pydict()
        assert t.schema.field("observation.imu").type == pq.read_table(src[n_old]).schema.field("observation.imu").type
        assert t["wall_time"].to_pylist() == s["wall_time"]
        assert t["observation.left_glove"].to_pylist() == s["observation.left_glove"]
        assert t["rgb_dup"].to_pylist() == s["rgb_dup"]


def test_damaged_reel_block_is_an_error_not_a_crash(reel_bin, task, tmp_path):
    out = tmp_path / "v3"
    reel(reel_bin, "export", task, out)
    info = json.loads((out / "meta/info.json").read_text())
    info["reel"]["pooled_rows"][0]["calibration"] = {"not": "a string"}
    (out / "meta/info.json").write_text(json.dumps(info))
    back = tmp_path / "pick"
    p = reel(reel_bin, "import", out, back, ok=2)
    assert "info.json" in p.stderr and '"reel" block' in p.stderr and "pooled_rows" in p.stderr, p.stderr
    assert not back.exists()


def test_a_linked_video_in_the_source_is_not_imported(reel_bin, task, tmp_path):
    # Issue 27: a dataset's own files are its own. A video that is a link to a file outside
    # the dataset would copy that file into the target task: refused, naming the link.
    out = tmp_path / "v21"
    reel(reel_bin, "export", "--to", "lerobot-v2.1", task, out)
    video_file = sorted(out.glob("videos/chunk-000/*/episode_*.mp4"))[0]
    outside = tmp_path / "outside.mp4"
    outside.write_bytes(video_file.read_bytes())
    video_file.unlink()
    video_file.symlink_to(outside)
    back = tmp_path / "pick"
    p = reel(reel_bin, "import", out, back, ok=2)
    assert "symbolic link" in p.stderr and video_file.relative_to(out).as_posix() in p.stderr, p.stderr
    assert not back.exists() or not list(back.rglob("*.mp4"))
