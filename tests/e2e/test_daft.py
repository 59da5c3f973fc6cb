"""reel.daft: pooled tasks as Daft DataFrames (episodes -> filter -> frames), on Daft's native
runner and on a local Ray cluster started by the test. Expected values come from pyarrow (the data
parquet) and the ffmpeg CLI (the videos), and the Ray results must equal the native ones."""

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

from .cli_run import reel as cli
from .video_ref import cli_rgb

daft = pytest.importorskip("daft")
W, H = 96, 64
COLUMNS = ["observation.gripper_state", "timestamp", "observation.left_glove"]
CAMERAS = ["stereo_left", "gripper_rgb"]




@pytest.fixture(scope="module")
def tasks(reel_bin, tmp_path_factory) -> list[Path]:
    base = tmp_path_factory.mktemp("daft")
    out = []
    for name, seed in (("pick", 1), ("place", 2)):
        root = base / name
        cli(reel_bin, "simulate", root, "--count", 3, "--seconds", 1, "--video-size", f"{W}x{H}", "--seed", seed)
        out.append(root)
    cli(reel_bin, "delete", out[1], 2)  # data gone: has_data false, never read
    return out


def expected(task: Path, n: int) -> dict:
    data = pq.read_table(task / "data/chunk-000" / f"episode-{n - 1:03d}.parquet").to_pydict()
    for slot in CAMERAS:
        data[slot] = cli_rgb(task / "videos/chunk-000" / slot / f"episode-{n - 1:03d}.mp4", W, H)
    return data


def test_episodes_then_frames_equal_the_files(tasks, reel_mod):
    import reel.daft as rd

    eps = rd.read_episodes([str(t) for t in tasks])
    rows = eps.to_pylist()
    assert [(Path(r["task"]).name, r["episode_index"], r["has_data"]) for r in rows] == [
        ("pick", 1, True), ("pick", 2, True), ("pick", 3, True),
        ("place", 1, True), ("place", 2, False), ("place", 3, True)]
    kept = eps.where(daft.col("episode_index") != 1)  # filter before any frame is read
    got = rd.load_frames(kept, columns=COLUMNS, cameras=CAMERAS).sort(["task", "episode_index", "frame_index"]).to_pydict()
    want_keys = [(str(t), n) for t in tasks for n in (2, 3) if (t.name, n) != ("place", 2)]
    i = 0
    for task, n in want_keys:
        exp = expected(Path(task), n)
        length = len(exp["frame_index"])
        sl = slice(i, i + length)
        assert got["task"][sl] == [task] * length and got["episode_index"][sl] == [n] * length
        assert got["frame_index"][sl] == list(range(length))
        for c in COLUMNS:
            assert [np.asarray(v).tolist() for v in got[c][sl]] == np.asarray(exp[c]).tolist(), (task, n, c)
        for slot in CAMERAS:  # image columns are named as in reel.torch and LeRobot
            np.testing.assert_array_equal(np.stack(got["observation.images." + slot][sl]), exp[slot],
                                          err_msg=f"{task} {n} {slot}")
        i += length
    assert i == len(got["frame_index"])  # every kept frame exactly once, nothing else


def test_unknown_column_is_named(tasks, reel_mod):
    import reel.daft as rd

    with pytest.raises(reel_mod.NotFoundError, match="observation.nope"):
        rd.read(str(tasks[0]), columns=["observation.nope"])


RAY_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import ray
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, configure_logging=False)
    import daft
    daft.set_runner_ray(noop_if_initialized=True)
    import reel.daft as rd
    cols, cams = json.loads(sys.argv[2]), json.loads(sys.argv[3])
    got = rd.read(json.loads(sys.argv[1]), columns=cols, cameras=cams) \\
        .sort(["task", "episode_index", "frame_index"]).to_pydict()
    np.savez(sys.argv[4], episode_index=np.asarray(got["episode_index"]), frame_index=np.asarray(got["frame_index"]),
             **{c: np.asarray([np.asarray(v) for v in got[c]]) for c in cols + ["observation.images." + k for k in cams]})
    print(json.dumps({"runner": str(daft.get_or_infer_runner_type()), "tasks": sorted(set(got["task"]))}))
    ray.shutdown()
""")


def test_ray_runner_gives_the_native_result(tasks, reel_mod, tmp_path):
    pytest.importorskip("ray")
    import reel.daft as rd

    paths = [str(t) for t in tasks]
    native = rd.read(paths, columns=COLUMNS, cameras=CAMERAS).sort(["task", "episode_index", "frame_index"]).to_pydict()
    out = tmp_path / "ray.npz"
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0",
               RAY_TMPDIR=tempfile.mkdtemp(prefix="reel-ray-"))
    proc = subprocess.run([sys.executable, "-c", RAY_SCRIPT, json.dumps(paths), json.dumps(COLUMNS),
                           json.dumps(CAMERAS), str(out)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "ray" in report["runner"].lower() and report["tasks"] == sorted(paths)
    with np.load(out) as z:
        np.testing.assert_array_equal(z["episode_index"], native["episode_index"])
        np.testing.assert_array_equal(z["frame_index"], native["frame_index"])
        for c in COLUMNS + ["observation.images." + k for k in CAMERAS]:
            np.testing.assert_array_equal(z[c], np.asarray([np.asarray(v) for v in native[c]]), err_msg=c)


@pytest.mark.parametrize("to", ["lerobot-v3", "bundle"])
def test_lerobot_and_bundle_datasets_too(reel_bin, tasks, reel_mod, tmp_path, to):
    """Anything reel.open reads: the same frames from a LeRobot v3.0 export and from bundles."""
    import reel.daft as rd

    out = tmp_path / to
    cli(reel_bin, "export", "--to", to, tasks[0], out)
    keys = ["observation.images.stereo_left"]
    got = rd.read(str(out), columns=["observation.state"], cameras=keys) \
        .sort(["episode_index", "frame_index"]).to_pydict()
    assert sorted(set(got["episode_index"])) == [0, 1, 2]
    i = 0
    for e in range(3):
        exp = expected(tasks[0], e + 1)
        n = len(exp["frame_index"])
        assert got["frame_index"][i:i + n] == list(range(n))
        np.testing.assert_array_equal(np.stack(got[keys[0]][i:i + n]), exp["stereo_left"])
        state = np.concatenate([np.asarray(exp[c], np.float32) for c in (
            "observation.gripper_2_gripper_left_force", "observation.gripper_2_gripper_right_force",
            "observation.gripper_2_gripper_state", "observation.gripper_left_force",
            "observation.gripper_right_force", "observation.gripper_state")], axis=1)
        np.testing.assert_array_equal(np.asarray(got["observation.state"][i:i + n], np.float32), state)
        i += n
    assert i == len(got["frame_index"])


def test_daft_reader_names_and_flags(tasks, reel_bin, reel_mod, tmp_path):
    """Daft's own API on reel: read_tasks, read_episodes' include_* flags, load_episode_frames
    (join on the kept episodes), read(load_video_frames=...), the camera alias; expectations
    from the files (pyarrow, tasks.jsonl, the exported episodes parquet)."""
    import reel.daft as rd

    tasks_df = rd.read_tasks(str(tasks[0])).to_pylist()
    line = json.loads((tasks[0] / "meta/tasks.jsonl").read_text().splitlines()[0])
    assert tasks_df == [{"task_index": line["task_index"], "task": line["task"], "root": str(tasks[0])}]
    plain = rd.read_episodes(str(tasks[0]))
    assert not [c for c in plain.column_names if "/" in c]           # bookkeeping hidden by default
    assert plain.to_pydict()["tasks"] == [[line["task"]]] * 3
    eps = rd.read_episodes(str(tasks[0]), include_meta=True, include_video_metadata=True).to_pylist()
    assert eps[1]["data/path"] == "data/chunk-000/episode-001.parquet"
    assert eps[1]["videos/observation.images.stereo_left/path"] == "videos/chunk-000/stereo_left/episode-001.mp4"
    # Daft's two-stage flow: filter episodes, then expand; a bare episode_index frame plus the uri works too.
    kept = rd.read_episodes(str(tasks[0])).where(daft.col("episode_index") == 2)
    frames = rd.load_episode_frames(kept, columns=["timestamp"], load_video_frames="stereo_left").to_pydict()
    exp = expected(tasks[0], 2)
    assert frames["frame_index"] == list(range(len(exp["frame_index"]))) and set(frames["episode_index"]) == {2}
    np.testing.assert_array_equal(np.stack(frames["observation.images.stereo_left"]), exp["stereo_left"])
    bare = rd.load_episode_frames(daft.from_pydict({"episode_index": [3]}), str(tasks[0]), columns=["timestamp"])
    assert bare.to_pydict()["timestamp"] == pytest.approx(expected(tasks[0], 3)["timestamp"])
    # load_video_frames=True: every RGB camera of info.json, named observation.images.<slot>.
    info = json.loads((tasks[0] / "meta/info.json").read_text())
    df = rd.read(str(tasks[0]), columns=["timestamp"], load_video_frames=True)
    assert [c for c in df.column_names if c.startswith("observation.images.")] == [
        "observation.images." + c for c in info["cameras"]]
    # read broadcasts each episode's columns to its frames (Daft's read), never the locators.
    row = rd.read(str(tasks[0]), columns=["timestamp"]).where(daft.col("episode_index") == 3).limit(1).to_pylist()[0]
    assert row["length"] == len(expected(tasks[0], 3)["frame_index"]) and row["tasks"] == [line["task"]]
    assert not [c for c in row if c.startswith(("data/", "meta/", "videos/"))]
    # LeRobot v3 export: include_stats gives the episodes parquet's stats/* columns.
    out = tmp_path / "v3"
    cli(reel_bin, "export", tasks[0], out)
    table = pq.read_table(next((out / "meta/episodes").rglob("*.parquet")))
    stats_cols = [c for c in table.column_names if c.startswith("stats/")]
    got = rd.read_episodes(str(out), include_stats=True).sort("episode_index").to_pydict()
    assert stats_cols and got[stats_cols[0]] == table.column(stats_cols[0]).to_pylist()
    # LeRobot v2.1: the same columns from meta/episodes_stats.jsonl.
    out21 = tmp_path / "v21"
    cli(reel_bin, "export", "--to", "lerobot-v2.1", tasks[0], out21)
    line21 = json.loads((out21 / "meta/episodes_stats.jsonl").read_text().splitlines()[0])
    feature, stats = next(iter(line21["stats"].items()))
    got21 = rd.read_episodes(str(out21), include_stats=True).sort("episode_index").to_pydict()
    assert got21[f"stats/{feature}/mean"][0] == stats["mean"]
