"""reel.torch's batch path (issue 16, goal 3): FrameDataset.__getitems__ decodes a batch's frames
in one reel._core.FramePool call and reel.torch.collate hands its tensors over without a copy.
Samples equal the per-file decode (VideoReader) and pyarrow's columns, in the order asked
(unsorted, repeated, across episodes and tasks); uint8 and float32 agree; two workers give the
same samples; no frame is decoded twice in a batch."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from .fixtures import data_rel
from .torch_common import CAM, STATE, lengths

KEY = "observation.images." + CAM


def frame_of(reel_mod, task, n, row):
    """Frame `row` of episode n's CAM video, read alone by a VideoReader (uint8 CHW)."""
    with reel_mod.VideoReader(str(task / f"videos/chunk-000/{CAM}/episode-{n - 1:03d}.mp4")) as v:
        return torch.from_numpy(v.read_rgb([row])[0]).permute(2, 0, 1)


def where(tasks, ds, index):
    """(task path, episode N, row) of a global index."""
    e = int(np.searchsorted(ds._starts, index, side="right")) - 1
    si, n, _ = ds._episodes[e]
    return tasks[si], n, index - ds._starts[e]


def test_batch_in_the_order_asked_equals_each_file_decode(reel_mod, tasks):
    from reel.torch import FrameDataset
    ds = FrameDataset([str(t) for t in tasks], columns=[STATE], cameras=[CAM])
    last = len(ds) - 1
    asked = [last, 3, 40, 3, 0, last, 17, -1, 31]  # unsorted, repeats, both tasks, a negative index
    samples = ds.__getitems__(asked)
    assert [int(s["index"]) for s in samples] == [i % len(ds) for i in asked]
    for i, s in zip(asked, samples):
        task, n, row = where(tasks, ds, i % len(ds))
        assert int(s["episode_index"]) == n and int(s["frame_index"]) == row
        state = pq.read_table(task / data_rel(n)).column(STATE)[row].as_py()
        assert np.array_equal(s[STATE].numpy(), np.array(state, np.float32))
        assert s[KEY].shape == (3, 24, 32) and s[KEY].dtype == torch.float32
        assert torch.equal(s[KEY], frame_of(reel_mod, task, n, row).float() / 255.0), (i, n, row)
        one = ds[i]
        assert list(one) == list(s)
        for k in s:
            assert (one[k] == s[k]) if k == "task" else torch.equal(one[k], s[k]), k
    with pytest.raises(IndexError):
        ds.__getitems__([0, len(ds)])


def test_uint8_equals_float_and_collate_is_default_collate_without_a_copy(reel_mod, tasks):
    from reel.torch import FrameDataset, collate
    asked = [9, 2, 2, 30, 11]
    f32 = FrameDataset(str(tasks[0]), columns=[STATE], cameras=[CAM])
    u8 = FrameDataset(str(tasks[0]), columns=[STATE], cameras=[CAM], image_dtype="uint8")
    a, b = f32.__getitems__(asked), u8.__getitems__(asked)
    for x, y in zip(a, b):
        assert y[KEY].dtype == torch.uint8 and torch.equal(y[KEY].float() / 255.0, x[KEY])
    mine, theirs = collate(a), torch.utils.data.default_collate(a)
    assert list(mine) == list(theirs)
    for k in theirs:
        assert (mine[k] == theirs[k]) if k == "task" else torch.equal(mine[k], theirs[k]), k
    # The batch tensor itself: the samples are its rows.
    assert mine[KEY].data_ptr() == a[0][KEY].data_ptr() and mine[KEY].shape == (5, 3, 24, 32)
    assert mine[STATE].data_ptr() == a[0][STATE].data_ptr()
    # Tensors that are not the rows of one tensor are stacked as default_collate does.
    mixed = [dict(s) for s in a]
    mixed[1][KEY] = mixed[1][KEY].clone()
    assert torch.equal(collate(mixed)[KEY], theirs[KEY]) and collate(mixed)[KEY].data_ptr() != mine[KEY].data_ptr()
    # A value replaced in a sample itself (as image_transforms does): that key is stacked, the
    # others stay the batch tensors; a sample pickles as the plain dict it is.
    a[2][KEY] = a[2][KEY].clone()
    again = collate(a)
    assert torch.equal(again[KEY], theirs[KEY]) and again[KEY].data_ptr() != mine[KEY].data_ptr()
    assert again[STATE].data_ptr() == mine[STATE].data_ptr()
    assert type(pickle.loads(pickle.dumps(a[0]))) is dict


def test_delta_timestamps_in_a_batch_equal_single_samples(reel_mod, tasks):
    from reel.torch import FrameDataset, collate
    ds = FrameDataset(str(tasks[0]), columns=[STATE], cameras=[CAM],
                      delta_timestamps={STATE: [-0.1, 0.0, 0.1], KEY: [-0.1, 0.0]})
    asked = [0, 10, len(ds) - 1, 10, lengths(tasks[0])[1]]  # the first of episode 2 pads too
    batch = collate(ds.__getitems__(asked))
    assert batch[KEY].shape == (5, 2, 3, 24, 32) and batch[f"{KEY}_is_pad"].shape == (5, 2)
    for j, i in enumerate(asked):
        one = ds[i]
        for k in one:
            if k != "task":
                assert torch.equal(batch[k][j], one[k]), (i, k)
    task, n, row = where(tasks, ds, 10)
    assert torch.equal(batch[KEY][1][0], frame_of(reel_mod, task, n, row - 3).float() / 255.0)
    assert batch[f"{KEY}_is_pad"][0].tolist() == [True, False]
    assert torch.equal(batch[KEY][0][0], batch[KEY][0][1])  # padded: the edge frame


def test_no_frame_decoded_twice_in_a_batch(reel_mod, tasks):
    from reel.torch import FrameDataset
    one = FrameDataset([str(t) for t in tasks], columns=[], cameras=[CAM, "gripper_rgb"], decode_threads=1)
    asked = [5, 5, 1, 44, 44, 2, 1, 30, 33, 38, 12, len(one) - 1]
    frames = {(str(t), n, row) for t, n, row in (where(tasks, one, i) for i in asked)}
    episodes = {(t, n) for t, n, _ in frames}
    one.__getitems__(asked)
    whole = one._pool.stats(reset=True)
    # One thread: per camera one read per episode's file, one conversion per distinct frame.
    assert whole["requests"] == 2 * len(episodes)
    assert whole["frames_converted"] == 2 * len(frames)
    assert one._pool.open_readers == 2 * len(episodes)
    # Four threads may cut a file at its keyframes into up to 4 reads, on as many readers, and
    # still decode exactly the frames of one read per file.
    ds = FrameDataset([str(t) for t in tasks], columns=[], cameras=[CAM, "gripper_rgb"], decode_threads=4)
    ds.__getitems__(asked)
    stats = ds._pool.stats(reset=True)
    assert 2 * len(episodes) < stats["requests"] <= 4 * 2 * len(episodes)
    assert stats["frames_converted"] == 2 * len(frames)
    assert stats["frames_decoded"] == whole["frames_decoded"]
    assert ds._pool.open_readers <= stats["requests"]


def test_two_workers_with_collate_give_the_samples_of_no_workers(reel_mod, tasks):
    from reel.torch import FrameDataset, collate
    ds = FrameDataset([str(t) for t in tasks], columns=[STATE], cameras=[CAM])
    order = torch.randperm(len(ds), generator=torch.Generator().manual_seed(3)).tolist()
    runs = []
    for workers in (0, 2):
        loader = torch.utils.data.DataLoader(ds, batch_size=8, sampler=order, num_workers=workers,
                                             collate_fn=collate)
        runs.append(list(loader))
    assert torch.cat([b["index"] for b in runs[1]]).tolist() == order
    for a, b in zip(*runs):
        assert list(a) == list(b)
        for k in a:
            assert (a[k] == b[k]) if k == "task" else torch.equal(a[k], b[k]), k
    first = runs[1][0]
    task, n, row = where(tasks, ds, order[0])
    assert torch.equal(first[KEY][0], frame_of(reel_mod, task, n, row).float() / 255.0)


def test_frame_pool_refuses_bad_targets(reel_mod, tasks):
    pool = reel_mod._core.FramePool(1)
    path = str(tasks[0] / f"videos/chunk-000/{CAM}/episode-000.mp4")
    out = np.zeros((2, 3, 24, 32), np.uint8)
    with pytest.raises(reel_mod.InvalidError, match="slot"):
        pool.read([path], np.array([[0, 1, 0, 2]], np.int64), [out], True)
    with pytest.raises(reel_mod.InvalidError):
        pool.read([path], np.array([[0, 1, 0, 0]], np.int64), [np.zeros((1, 3, 12, 32), np.uint8)], True)
    with pytest.raises(reel_mod.InvalidError, match="out of range"):
        pool.read([path], np.array([[0, 10**6, 0, 0]], np.int64), [out], True)
    with pytest.raises(reel_mod.NotFoundError):
        pool.read([path + ".missing"], np.array([[0, 1, 0, 0]], np.int64), [out], True)
    pool.read([path], np.array([[0, 4, 0, 1]], np.int64), [out], True)
    assert np.array_equal(out[1], frame_of(reel_mod, tasks[0], 1, 4).numpy()) and not out[0].any()


def test_frame_memory_is_used_again_only_once_nothing_refers_to_it(reel_mod, tasks):
    from reel.torch import FrameDataset, collate
    ds = FrameDataset(str(tasks[0]), columns=[], cameras=[CAM])
    first = collate(ds.__getitems__([1, 2, 3]))
    kept, ptr = first[KEY].clone(), first[KEY].data_ptr()
    second = collate(ds.__getitems__([7, 8, 9]))
    assert second[KEY].data_ptr() != ptr and torch.equal(first[KEY], kept)  # held by the batch
    view = first[KEY][0].numpy()  # only a numpy array of one row left
    del first
    third = collate(ds.__getitems__([10, 11, 12]))
    assert third[KEY].data_ptr() != ptr and np.array_equal(view, kept[0].numpy())
    del view  # nothing refers to the first batch's memory now: the next batch of its size takes it
    fourth = collate(ds.__getitems__([1, 2, 3]))
    assert fourth[KEY].data_ptr() == ptr and torch.equal(fourth[KEY], kept)
    assert torch.equal(second[KEY], collate(ds.__getitems__([7, 8, 9]))[KEY])
