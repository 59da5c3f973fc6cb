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
from .test_recorder_common import memo_task, simulate

STATE = "observation.gripper_state"
CAM = "stereo_left"


@pytest.fixture(scope="module")
def tasks(reel_bin, tmp_path_factory):
    def build(root):
        out = []
        for name, seed in (("torch_a", 1), ("torch_b", 2)):
            simulate(reel_bin, root / name, "--count", 2, "--seconds", "1", "--video-size", "32x24",
                     "--seed", seed, "--preset", "ultrafast", "--depth-preset", "ultrafast")
            out.append(root / name)
        return out
    return memo_task("torch_tasks", tmp_path_factory, build)


def lengths(task):
    return {n: pq.read_metadata(task / data_rel(n)).num_rows for n in (1, 2)}


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
    ds = FrameDataset(str(tasks[0]), columns=["observation.imu"])
    with pytest.raises(reel_mod.NotSupportedError, match="observation.imu"):
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
