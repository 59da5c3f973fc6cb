"""reel.TaskWriter (issue 6): the C++ recorder driven from Python. What it writes is read
back with pyarrow and json and compared with the values handed in; `reel check` is a second
opinion. An exception inside an episode's `with` block leaves no file of the episode and a
recycled number (contract §7.5)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from .fixtures import data_rel, row_rel
from .recorder_common import check_clean

GLOVE = "observation.left_glove"
STATE = "observation.gripper_state"
MARKER = "meta/recycled_episode.json"


def record(ep, rows, rng, t0=1_700_000_000.0):
    gloves, imus = [], []
    for i in range(rows):
        g = rng.uniform(0, 60, 256).astype(np.float32)
        k = int(rng.integers(0, 4))
        ts = np.arange(k, dtype=np.int64) + 1000 * i
        samples = rng.normal(size=(k, 6)).astype(np.float32)
        ep.append(timestamp=i / 30, wall_time=t0 + i / 30, hardware_ns=10**9 + i,
                  fixed={GLOVE: g, STATE: [0.1 * i, 0.0, 1.0]}, imu=(ts, samples))
        gloves.append(g)
        imus.append(samples)
    return np.stack(gloves), imus


def test_episodes_written_from_python_read_back_exactly(reel_mod, reel_bin, tmp_path):
    rng = np.random.default_rng(4)
    task = tmp_path / "py_task"
    w = reel_mod.TaskWriter(str(task), fps=30.0, task_name="py_task")
    wrote = {}
    for _ in range(2):
        with w.episode() as ep:
            wrote[ep.episode_index] = record(ep, 7, rng)
        assert ep.committed["length"] == 7
    assert sorted(wrote) == [1, 2]
    for n, (gloves, imus) in wrote.items():
        t = pq.read_table(task / data_rel(n))
        assert t.column("episode_index").to_pylist() == [n] * 7
        assert t.column("frame_index").to_pylist() == list(range(7))
        got = np.array(t.column(GLOVE).to_pylist(), dtype=np.float32)
        assert np.array_equal(got, gloves)
        got_imu = t.column("observation.imu").to_pylist()
        for row, want in zip(got_imu, imus):
            assert np.array_equal(np.array(row, dtype=np.float32).reshape(-1, 6), want)
        assert pq.read_table(task / row_rel(n)).column("length").to_pylist() == [7]
    stats = json.loads((task / "meta/stats.json").read_text())
    assert stats[GLOVE]["count"] == 14
    all_gloves = np.concatenate([g for g, _ in wrote.values()]).astype(np.float64)
    assert np.allclose(stats[GLOVE]["mean"], all_gloves.mean(axis=0), rtol=1e-6, atol=1e-6)
    check_clean(reel_bin, task)


def test_exception_in_episode_leaves_nothing_and_recycles_the_number(reel_mod, reel_bin, tmp_path):
    rng = np.random.default_rng(5)
    task = tmp_path / "py_task"
    w = reel_mod.TaskWriter(str(task), fps=30.0)
    with w.episode() as ep:
        record(ep, 3, rng)
    with pytest.raises(RuntimeError, match="operator stopped"):
        with w.episode() as ep:
            n = ep.episode_index
            record(ep, 4, rng)
            raise RuntimeError("operator stopped the recording")
    assert n == 2
    assert not (task / data_rel(2)).exists() and not (task / row_rel(2)).exists()
    assert json.loads((task / MARKER).read_text())["episode_index"] == 2
    with w.episode() as ep:
        assert ep.episode_index == 2, "the aborted number was not reused"
        record(ep, 2, rng)
    assert not (task / MARKER).exists()
    check_clean(reel_bin, task)


def test_bad_rows_raise_and_write_nothing(reel_mod, tmp_path):
    task = tmp_path / "py_task"
    w = reel_mod.TaskWriter(str(task), fps=30.0)
    ep = w.episode()
    with pytest.raises(reel_mod.InvalidError):
        ep.append(timestamp=0.0, fixed={"observation.Left_Glove": np.zeros(256)})
    with pytest.raises(ValueError):
        ep.append(timestamp=0.0, fixed={STATE: [1.0, 2.0, 3.0]}, imu=(np.arange(2), np.zeros(6)))
    assert ep.rows == 0
    ep.abort()
    assert not (task / data_rel(1)).exists()


def test_video_slots_from_python(reel_mod, tmp_path):
    task = tmp_path / "py_video"
    w = reel_mod.TaskWriter(str(task), fps=30.0,
                            devices=[{"key": "uvc:cam0", "kind": "uvc", "name": "wrist", "slots": ["wrist_rgb"]}],
                            video={"slots": [{"slot": "wrist_rgb", "width": 32, "height": 24}], "preset": "ultrafast"})
    frames = []
    with w.episode() as ep:
        for i in range(6):
            f = np.zeros((24, 32, 3), np.uint8)
            f[:, :, 0] = 40 * i
            f[:, :, 1] = 128
            ep.push_rgb("wrist_rgb", f)
            frames.append(f)
            ep.append(timestamp=i / 30, fixed={STATE: [0.0, 0.0, 0.0]})
    info = json.loads((task / "meta/info.json").read_text())
    assert info["video"] is True and "wrist_rgb" in info["cameras"]
    path = task / "videos/chunk-000/wrist_rgb/episode-000.mp4"
    with reel_mod.VideoReader(str(path)) as v:
        assert len(v) == 6
        got = v.read_rgb(range(6)).astype(np.int16)
    err = np.abs(got - np.stack(frames).astype(np.int16)).mean(axis=(1, 2, 3))
    assert (err < 8).all(), err


def test_unstamped_ns_columns_are_not_written_and_a_glove_brings_hand_pose(reel_mod, reel_bin, tmp_path):
    # Multi-device §8.1.3: an episode none of whose stamps is set has no _ns column (nor a
    # feature for it). Contract §7.2 / multi-device §4.5: a glove brings both hand-pose
    # columns as [0]*63 placeholders, declared, and kept out of stats.
    task = tmp_path / "t"
    w = reel_mod.TaskWriter(str(task), fps=30.0)
    with w.episode() as ep:
        for i in range(4):
            point = np.array([[i / 30, 1, 2, 3, 0, 0, 0, 1]], dtype=np.float64)
            ep.append(timestamp=i / 30, wall_time=1.7e9 + i / 30, hardware_ns=10**9 + i,
                      fixed={GLOVE: np.full(256, 5.0, np.float32), STATE: [0, 0, 1]},
                      scalars={"observation.gripper_state_ns": 0},
                      slam={"observation.slam_trajectory": (point, [0])})
    t = pq.read_table(task / data_rel(1))
    assert "observation.slam_trajectory" in t.column_names
    assert "observation.slam_trajectory_ns" not in t.column_names
    assert "observation.gripper_state_ns" not in t.column_names
    for side in ("left", "right"):
        col = f"observation.{side}_hand_pose"
        assert np.array(t.column(col).to_pylist()).shape == (4, 63)
        assert not np.any(np.array(t.column(col).to_pylist()))
    info = json.loads((task / "meta/info.json").read_text())
    assert info["features"]["observation.left_hand_pose"]["shape"] == [21, 3]  # 21 joints x xyz
    assert not [k for k in info["features"] if k.endswith("_ns")], info["features"].keys()
    stats = json.loads((task / "meta/stats.json").read_text())
    assert "observation.left_hand_pose" not in stats
    check_clean(reel_bin, task)


def test_episodes_with_and_without_a_sparse_column_export_and_train(reel_mod, reel_bin, tmp_path):
    # One episode stamps gripper_state_ns, the next does not (so it has no such column):
    # export and the training readers give the second episode the "no sample" value 0.
    task = tmp_path / "t"
    w = reel_mod.TaskWriter(str(task), fps=30.0)
    for stamped in (True, False):
        with w.episode() as ep:
            for i in range(3):
                ep.append(timestamp=i / 30, wall_time=1.7e9 + i / 30, hardware_ns=10**9 + i,
                          fixed={STATE: [i, 0, 1]}, scalars={"observation.gripper_state_ns": (100 + i) * stamped})
    assert "observation.gripper_state_ns" in pq.read_table(task / data_rel(1)).column_names
    assert "observation.gripper_state_ns" not in pq.read_table(task / data_rel(2)).column_names
    check_clean(reel_bin, task)
    out = tmp_path / "lr"
    reel_mod.export(task, out)
    frames = pq.read_table(sorted((out / "data").rglob("*.parquet"))[0])
    ns = [c for c in frames.column_names if "gripper_state_ns" in c]
    assert ns and frames.column(ns[0]).to_pylist() == [[100], [101], [102], [0], [0], [0]] or \
        frames.column(ns[0]).to_pylist() == [100, 101, 102, 0, 0, 0], frames.column(ns[0]).to_pylist()
    from reel.torch import FrameDataset
    ds = FrameDataset(str(task))
    assert [int(ds[i]["observation.gripper_state_ns"]) for i in range(6)] == [100, 101, 102, 0, 0, 0]
    import reel.daft as rd
    got = rd.read([str(task)], columns=["observation.gripper_state_ns"]).sort(["episode_index", "frame_index"])
    assert got.to_pydict()["observation.gripper_state_ns"] == [100, 101, 102, 0, 0, 0]


def test_rerecord_a_number_from_python(reel_mod, reel_bin, tmp_path):
    """writer.episode(n, replace=True): docs/recorder.md "Re-recording a number"."""
    rng = np.random.default_rng(6)
    task = tmp_path / "py_task"
    w = reel_mod.TaskWriter(str(task), fps=30.0)
    for _ in range(2):
        with w.episode() as ep:
            record(ep, 3, rng)
    stats = (task / "meta/stats.json").read_bytes()
    with pytest.raises(reel_mod.AlreadyExistsError, match="episode 2 is live"):
        w.episode(2)
    with pytest.raises(TypeError, match="needs the number"):
        w.episode(replace=True)
    with w.episode(2, replace=True) as ep:
        assert ep.episode_index == 2
        record(ep, 5, rng)
    assert pq.read_table(task / data_rel(2)).column("episode_index").to_pylist() == [2] * 5
    assert pq.read_table(task / row_rel(2)).column("length").to_pylist() == [5]
    assert (task / "meta/stats.json").read_bytes() == stats
    check_clean(reel_bin, task)
