"""reel.torch.FrameDataset (issue 6) over tasks recorded by the simulator: every frame
exactly once per epoch with 2 workers (persistent or not), values equal to pyarrow's reading
of the same files, images equal to the video decode, and LeRobot's delta_timestamps /
_is_pad semantics."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch  # pinned in requirements.txt (the CPU wheel); a missing torch fails, never skips

from .fixtures import data_rel
from .recorder_common import memo_task, simulate
from .torch_common import CAM, STATE, lengths


def test_samples_equal_pyarrow_and_the_video_decode(reel_mod, tasks):
    from reel.torch import FrameDataset
    ds = FrameDataset([str(t) for t in tasks], columns=[STATE], cameras=[CAM])
    assert len(ds) == sum(sum(lengths(t).values()) for t in tasks)
    table = pq.read_table(tasks[1] / data_rel(2))
    start = sum(lengths(tasks[0]).values()) + lengths(tasks[1])[1]
    for row in (0, 7, table.num_rows - 1):
        s = ds[start + row]
        assert int(s["task_index"]) == 1 and int(s["episode_index"]) == 2 and int(s["frame_index"]) == row
        want = np.array(table.column(STATE)[row].as_py(), dtype=np.float32)
        assert np.array_equal(s[STATE].numpy(), want)
        assert s["timestamp"].item() == pytest.approx(table.column("timestamp")[row].as_py())
        with reel_mod.VideoReader(str(tasks[1] / f"videos/chunk-000/{CAM}/episode-001.mp4")) as v:
            frame = v.read_rgb([row])[0]
        img = s["observation.images." + CAM]
        assert img.shape == (3, 24, 32) and img.dtype == torch.float32
        assert torch.equal(img, torch.from_numpy(frame).permute(2, 0, 1).float() / 255.0)


@pytest.mark.parametrize("persistent", [False, True])
def test_two_workers_yield_every_frame_once_per_epoch(reel_mod, tasks, persistent):
    from reel.torch import FrameDataset
    ds = FrameDataset([str(t) for t in tasks], columns=[STATE], cameras=[CAM])
    loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, num_workers=2,
                                         persistent_workers=persistent, generator=torch.Generator().manual_seed(0))
    for _ in range(2):
        seen = []
        keys = set()
        for batch in loader:
            seen += batch["index"].tolist()
            keys |= set(zip(batch["task_index"].tolist(), batch["episode_index"].tolist(),
                            batch["frame_index"].tolist()))
            assert batch["observation.images." + CAM].shape[1:] == (3, 24, 32)
        assert sorted(seen) == list(range(len(ds)))
        assert len(keys) == len(ds)


def test_delta_timestamps_and_padding(reel_mod, tasks):
    from reel.torch import FrameDataset
    key = "observation.images." + CAM
    ds = FrameDataset(str(tasks[0]), columns=[STATE], cameras=[CAM],
                      delta_timestamps={STATE: [-0.1, 0.0, 0.1], key: [-0.1, 0.0]})
    table = pq.read_table(tasks[0] / data_rel(1))
    states = np.array(table.column(STATE).to_pylist(), dtype=np.float32)
    first = ds[0]
    assert first[STATE].shape == (3, 3)
    assert first[f"{STATE}_is_pad"].tolist() == [True, False, False]
    assert np.array_equal(first[STATE][0].numpy(), states[0])          # padded: the edge frame
    assert np.array_equal(first[STATE][2].numpy(), states[3])          # 0.1 s = 3 frames at 30 fps
    mid = ds[10]
    assert mid[f"{STATE}_is_pad"].tolist() == [False, False, False]
    assert np.array_equal(mid[STATE].numpy(), states[[7, 10, 13]])
    assert mid[key].shape == (2, 3, 24, 32) and mid[f"{key}_is_pad"].tolist() == [False, False]
    last = ds[len(table) - 1]
    assert last[f"{STATE}_is_pad"].tolist() == [False, False, True]


def test_bad_arguments(reel_mod, tasks):
    from reel.torch import FrameDataset
    with pytest.raises(reel_mod.InvalidError, match="delta_timestamps"):
        FrameDataset(str(tasks[0]), columns=[STATE], delta_timestamps={"action": [0.0]})
    # A variable list that is not a time-stamped stream (the raw IMU stamps) is not a tensor;
    # observation.imu itself is a window of samples (test_torch_streams.py).
    ds = FrameDataset(str(tasks[0]), columns=["imu_ts_ns"])
    with pytest.raises(reel_mod.NotSupportedError, match="imu_ts_ns"):
        ds[0]
    with pytest.raises(IndexError):
        FrameDataset(str(tasks[0]), columns=[STATE])[10**6]


def test_frame_images_and_depth(reel_mod, tasks):
    task = reel_mod.open(str(tasks[0]))
    got = task.frame_images(1, [0, 5, 5], ["stereo_left", "d435_rgb"])
    assert set(got) == {"stereo_left", "d435_rgb"}
    for slot, frames in got.items():
        with reel_mod.VideoReader(str(tasks[0] / f"videos/chunk-000/{slot}/episode-000.mp4")) as v:
            assert np.array_equal(frames, v.read_rgb([0, 5, 5]))
    mm = task.depth(1, [1, 2], "d435_depth")
    assert mm.dtype == np.uint16 and mm.shape == (2, 24, 32)
    with pytest.raises(reel_mod.InvalidError):
        task.depth(1, [0], "stereo_left")
    with pytest.raises(reel_mod.InvalidError):
        task.frame_images(1, [0], ["d435_depth"])


# ---- issue 14: fork/spawn safety, meta, LeRobot shape ------------------------------------------


def reference_frames(task, n, w=32, h=24):
    """Every frame of episode n's CAM video by the ffmpeg CLI (independent of reel)."""
    from .video_ref import cli_rgb
    return cli_rgb(task / f"videos/chunk-000/{CAM}/episode-{n - 1:03d}.mp4", w, h)


@pytest.fixture(scope="module")
def loader_task(reel_bin, tmp_path_factory):
    """Videos larger than FFmpeg's 32 KiB read buffer, so a decoder really reads the file as it goes."""
    def build(root):
        simulate(reel_bin, root / "loader", "--episodes", 2, "--seconds", "3", "--video-size", "160x120",
                 "--preset", "ultrafast", "--depth-preset", "ultrafast")
        return root / "loader"
    return memo_task("torch_loader_task", tmp_path_factory, build)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_loader_after_a_sample_read_in_the_parent(reel_mod, loader_task, context):
    """ds[0] opens decoders in the parent; forked workers must not share them (their file
    positions: the old dataset raised CorruptionError 'frame 58: the stream ended'), spawned ones
    need a picklable dataset. Every image equals the ffmpeg CLI's decode."""
    from reel.torch import FrameDataset
    ds = FrameDataset(str(loader_task), columns=[STATE], cameras=[CAM])
    ds[0]
    ds[len(ds) - 1]
    loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, num_workers=2,
                                         multiprocessing_context=context,
                                         generator=torch.Generator().manual_seed(1))
    refs = {n: reference_frames(loader_task, n, 160, 120) for n in (1, 2)}
    seen = []
    for batch in loader:
        seen += batch["index"].tolist()
        images = batch["observation.images." + CAM]
        for i in range(len(images)):
            n, row = int(batch["episode_index"][i]), int(batch["frame_index"][i])
            want = torch.from_numpy(refs[n][row].copy()).permute(2, 0, 1).float() / 255.0
            assert torch.equal(images[i], want), (n, row)
    assert sorted(seen) == list(range(len(ds)))


def test_meta_task_strings_and_every_column_by_default(reel_mod, tasks):
    """LeRobotDatasetMetadata-like .meta; stats equal numpy over the files (count-weighted across
    tasks); a task string per sample; columns/cameras default to every numeric column and every
    RGB camera of the tasks' info.json."""
    import json
    import pickle

    from reel.torch import FrameDataset
    ds = FrameDataset([str(t) for t in tasks])
    assert FrameDataset.__doc__ and "LeRobot" in FrameDataset.__doc__
    assert "FrameDataset(" in repr(ds) and f"{len(ds)} frames" in repr(ds)
    meta = ds.meta
    info = json.loads((tasks[0] / "meta/info.json").read_text())
    assert meta.fps == info["fps"]
    assert meta.total_frames == len(ds) and meta.total_episodes == 4
    assert meta.camera_keys == ["observation.images." + c for c in info["cameras"]]
    assert meta.features[STATE]["shape"] == info["features"][STATE]["shape"]
    assert meta.features["observation.images." + CAM]["shape"] == [24, 32, 3]
    assert meta.tasks == [json.loads((t / "meta/tasks.jsonl").read_text().splitlines()[0])["task"] for t in tasks]
    assert [e["length"] for e in meta.episodes] == [lengths(t)[n] for t in tasks for n in (1, 2)]
    glove = "observation.left_glove"  # pooled stats.json covers the gloves, imu and action
    values = np.concatenate([np.array(pq.read_table(t / data_rel(n)).column(glove).to_pylist(), np.float64)
                             for t in tasks for n in (1, 2)])
    np.testing.assert_allclose(meta.stats[glove]["mean"], values.mean(axis=0), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(meta.stats[glove]["std"], values.std(axis=0), rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(meta.stats[glove]["max"], values.max(axis=0), rtol=1e-6)
    assert int(meta.stats[glove]["count"][0]) == len(values)
    s = ds[len(ds) - 1]
    assert s["task"] == meta.tasks[1] and int(s["task_index"]) == 1 and int(s["dataset_index"]) == 1
    table = pq.read_table(tasks[0] / data_rel(1))
    numeric = [f.name for f in table.schema if f.name not in ("timestamp", "frame_index", "episode_index", "index",
                                                               "task_index")
               and (pa_numeric(f.type))]
    assert set(numeric) <= set(ds[0]) and STATE in numeric
    assert set(meta.camera_keys) <= set(ds[0])
    again = pickle.loads(pickle.dumps(ds))
    assert torch.equal(again[5][STATE], ds[5][STATE])


def pa_numeric(t):
    import pyarrow as pa
    if pa.types.is_fixed_size_list(t):
        t = t.value_type
    return pa.types.is_integer(t) or pa.types.is_floating(t)


def test_uint8_transforms_tolerance_and_camera_aliases(reel_mod, tasks):
    from reel.torch import FrameDataset
    seen = []

    def flip(img):
        seen.append(img.shape)
        return img.flip(-1)

    ds = FrameDataset(str(tasks[0]), columns=[STATE], cameras=["observation.images." + CAM],
                      image_dtype="uint8", image_transforms=flip)
    s = ds[3]
    img = s["observation.images." + CAM]
    want = torch.from_numpy(reference_frames(tasks[0], 1)[3]).permute(2, 0, 1).flip(-1)
    assert img.dtype == torch.uint8 and torch.equal(img, want) and seen == [(3, 24, 32)]
    # "stereo_left" and "observation.images.stereo_left" name the same camera, here and in reel.daft.
    a = FrameDataset(str(tasks[0]), columns=[], cameras=[CAM])
    assert list(a.meta.camera_keys) == ["observation.images." + CAM]
    # LeRobot's delta check: an offset that is no whole number of frames (30 fps) within tolerance_s.
    with pytest.raises(reel_mod.InvalidError, match="tolerance_s"):
        FrameDataset(str(tasks[0]), columns=[STATE], delta_timestamps={STATE: [-0.05]})
    FrameDataset(str(tasks[0]), columns=[STATE], delta_timestamps={STATE: [-0.05]}, tolerance_s=0.02)
    with pytest.raises(TypeError, match="image_dtype"):
        FrameDataset(str(tasks[0]), image_dtype="float16")


def test_a_lerobot_root_is_a_dataset_too(reel_mod, reel_bin, tasks, tmp_path):
    """FrameDataset over a LeRobot v3 export: values equal pyarrow's reading of the exported files."""
    from reel.torch import FrameDataset

    from .cli_run import reel as cli
    out = tmp_path / "lerobot"
    cli(reel_bin, "export", tasks[0], out)
    ds = FrameDataset(str(out), cameras=["observation.images." + CAM])
    assert len(ds) == sum(lengths(tasks[0]).values())
    table = pq.read_table(next((out / "data").rglob("*.parquet")))
    s = ds[4]
    assert int(s["frame_index"]) == 4 and int(s["episode_index"]) == 0
    assert s["timestamp"].item() == pytest.approx(table.column("timestamp")[4].as_py())
    state = np.array(table.column("observation.state")[4].as_py(), np.float32)
    assert np.array_equal(s["observation.state"].numpy(), state)
    assert s["observation.images." + CAM].shape == (3, 24, 32)
    assert s["task"] == ds.meta.tasks[int(s["task_index"])]
