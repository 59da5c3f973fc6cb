"""FrameDataset over every stream of a multi-device recording (issue 29 item 4): forces and
SLAM poses paired with each frame by their own _ns, IMU windows on the device clock, decoded
force matrices, the left glove in canonical order, each with ``<col>_is_pad``.

Expected values are computed here from the parquet files with pyarrow and numpy (brute-force
nearest stamps, numpy's own row-diff decode), not through reel."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from .cli_run import reel
from .fixtures import data_rel, row_rel

FORCE = "observation.gripper_left_force"
MATRIX = "observation.gripper_left_force_matrix"
SLAM = "observation.slam_trajectory"
IMU = "observation.imu"
GLOVE = "observation.left_glove"
TOL = 16_666_667  # half a frame period at 30 fps
K = 8


@pytest.fixture(scope="module")
def sim(reel_bin, tmp_path_factory):
    root = tmp_path_factory.mktemp("streams") / "sim"
    reel(reel_bin, "simulate", root, "--count", 2, "--seconds", 1.5)
    return root


def nearest(frame_ns, sample_ns, tol=TOL):
    """Per frame the index of the nearest stamped sample within tol (ties: earlier stamp;
    a repeated stamp counts once, its first occurrence), else -1."""
    seen, cands = set(), []
    for i, s in enumerate(sample_ns):
        if s != 0 and s not in seen:
            seen.add(int(s))
            cands.append((int(s), i))
    out = []
    for t in frame_ns:
        if t == 0 or not cands:
            out.append(-1)
            continue
        s, i = min(cands, key=lambda c: (abs(c[0] - int(t)), c[0]))
        out.append(i if abs(s - int(t)) <= tol else -1)
    return out


def expected(sim, n):
    t = pq.read_table(sim / data_rel(n))
    hw = np.array(t.column("hardware_ns").to_pylist(), dtype=np.int64)
    out = {}
    # Force: one latest-wins sample per row stamped by the scalar _ns.
    f_ns = np.array(t.column(FORCE + "_ns").to_pylist(), dtype=np.int64)
    force = np.array(t.column(FORCE).to_pylist(), dtype=np.float32)
    pick = nearest(hw, f_ns)
    out[FORCE] = np.stack([force[i] if i >= 0 else np.zeros(3, np.float32) for i in pick])
    out[FORCE + "_is_pad"] = np.array([i < 0 for i in pick])
    # SLAM: points in per-row lists with a parallel _ns list.
    pts = np.array([p for row in t.column(SLAM).to_pylist() for p in row], dtype=np.float64).reshape(-1, 8)
    p_ns = np.array([x for row in t.column(SLAM + "_ns").to_pylist() for x in row], dtype=np.int64)
    pick = nearest(hw, p_ns)
    out[SLAM] = np.stack([pts[i] if i >= 0 else np.zeros(8) for i in pick]).astype(np.float32)
    out[SLAM + "_is_pad"] = np.array([i < 0 for i in pick])
    # IMU: device stamps to the frame clock through the nearest frame's raw_hw_ns, then the K
    # newest samples at or before each frame, oldest first, padding first.
    raw = np.array(t.column("raw_hw_ns").to_pylist(), dtype=np.int64)
    ts = np.array([x for row in t.column("imu_ts_ns").to_pylist() for x in row], dtype=np.int64)
    vals = np.array([s for row in t.column(IMU).to_pylist() for s in row], dtype=np.float32)
    f = np.array([int(np.argmin(np.abs(raw - d))) for d in ts])
    mapped = hw[f] + (ts - raw[f])
    order = np.argsort(mapped, kind="stable")
    win = np.zeros((len(hw), K, 6), np.float32)
    pad = np.ones((len(hw), K), bool)
    for r, tr in enumerate(hw):
        before = [i for i in order if mapped[i] <= tr][-K:]
        for slot, i in enumerate(before, start=K - len(before)):
            win[r, slot], pad[r, slot] = vals[i], False
    out[IMU], out[IMU + "_is_pad"] = win, pad
    # Force matrix: row-diff int16 decoded with numpy, the episode's scale, the fz plane.
    specs = json.loads(pq.read_table(sim / row_rel(n)).column("force_matrix_specs")[0].as_py())
    scale = np.float32(specs[MATRIX]["scale"])
    m_ns = np.array(t.column(MATRIX + "_ns").to_pylist(), dtype=np.int64)
    cells = t.column(MATRIX).to_pylist()
    pick = nearest(hw, m_ns)
    fz = np.zeros((len(hw), 250, 250), np.float32)
    for r, i in enumerate(pick):
        if i >= 0:
            d = np.array(cells[i], dtype=np.int16).reshape(250, 750)
            q = np.cumsum(d.astype(np.int32), axis=1).astype(np.int16)
            fz[r] = (q.astype(np.float32) / scale).reshape(250, 250, 3)[:, :, 2]
    out[MATRIX], out[MATRIX + "_is_pad"] = fz, np.array([i < 0 for i in pick])
    # The left glove in canonical order: values[::-1, ::-1].T (multi-device §4.5).
    g = np.array(t.column(GLOVE).to_pylist(), dtype=np.float32).reshape(-1, 16, 16)
    out[GLOVE] = np.stack([m[::-1, ::-1].T.reshape(-1) for m in g])
    return out


COLUMNS = [FORCE, SLAM, IMU, MATRIX, GLOVE]


def test_every_stream_paired_by_its_own_clock(reel_mod, sim):
    from reel.torch import FrameDataset

    ds = FrameDataset(str(sim), columns=COLUMNS, cameras=[], imu_window=K)
    assert ds.meta.features[IMU]["shape"] == [K, 6] and ds.meta.features[MATRIX]["shape"] == [250, 250]
    assert ds.meta.features[SLAM]["shape"] == [8]
    length = ds.meta.episodes[0]["length"]
    for n, start in ((1, 0), (2, length)):
        want = expected(sim, n)
        batch = torch.utils.data.default_collate(ds.__getitems__(list(range(start, start + length))))
        for key, value in want.items():
            got = batch[key].numpy()
            assert got.shape == value.shape, key
            assert np.array_equal(got, value), (n, key, np.argwhere(got != value)[:3])
    # The streams are not row-aligned: the matrix pump samples every other frame, and a frame
    # between two of its samples is padding, not the neighbour's value.
    assert want[MATRIX + "_is_pad"].any() and not want[MATRIX + "_is_pad"].all()
    assert want[IMU + "_is_pad"][0].any()  # the first frame has fewer than K samples before it


def test_workers_and_options(reel_mod, sim):
    from reel.torch import FrameDataset, collate

    ds = FrameDataset(str(sim), columns=COLUMNS, cameras=[], imu_window=K)
    loader = torch.utils.data.DataLoader(ds, batch_size=16, num_workers=2, collate_fn=collate)
    batches = list(loader)
    alone = [collate(ds.__getitems__(list(range(i, min(i + 16, len(ds)))))) for i in range(0, len(ds), 16)]
    for a, b in zip(batches, alone):
        for key in COLUMNS:
            assert torch.equal(a[key], b[key]), key
    full = FrameDataset(str(sim), columns=[MATRIX], cameras=[], force_matrix="full", force_matrix_downsample=5)
    sample = full[0]
    assert sample[MATRIX].shape == (50, 50, 3)
    fz = expected(sim, 1)[MATRIX][0]
    assert np.allclose(sample[MATRIX][:, :, 2].numpy(), fz.reshape(50, 5, 50, 5).mean(axis=(1, 3)), rtol=1e-5,
                       atol=1e-4)
    raw = FrameDataset(str(sim), columns=[GLOVE], cameras=[], canonical_gloves=False)
    t = pq.read_table(sim / data_rel(1))
    assert raw[3][GLOVE].tolist() == t.column(GLOVE)[3].as_py()


def test_delta_timestamps_on_a_stream(reel_mod, sim):
    from reel.torch import FrameDataset

    ds = FrameDataset(str(sim), columns=[FORCE, MATRIX], cameras=[],
                      delta_timestamps={FORCE: [-1 / 30, 0.0], MATRIX: [-1 / 30, 0.0]})
    want = expected(sim, 1)
    s = ds[0]
    assert s[FORCE].shape == (2, 3) and s[FORCE + "_is_pad"].tolist() == [True, False]
    assert np.array_equal(s[FORCE][1].numpy(), want[FORCE][0])
    s = ds[4]
    assert np.array_equal(s[FORCE].numpy(), want[FORCE][3:5])
    assert s[MATRIX + "_is_pad"].tolist() == want[MATRIX + "_is_pad"][3:5].tolist()


def test_a_frame_without_a_sample_is_zeros_and_padding(reel_mod, tmp_path):
    """Force samples on rows 0 and 3 only (0 = no new sample): frames 1 and 2 have none within
    half a frame, so their value is zeros (never NaN) and _is_pad is True."""
    import pyarrow as pa

    from .fixtures import EpisodeSpec, write_task

    base = 5_000_000_000 + 100_000_000_000
    ns = np.array([base + 1_000_000, 0, 0, base + 3 * 33_333_333 - 1_000_000], np.int64)
    force = np.array([[1, 2, 3], [0, 0, 0], [0, 0, 0], [4, 5, 6]], np.float32)
    extra = {FORCE: pa.FixedSizeListArray.from_arrays(pa.array(force.reshape(-1)), 3),
             FORCE + "_ns": pa.array(ns)}
    feats = {FORCE: {"dtype": "float32", "shape": [3]},
             FORCE + "_ns": {"dtype": "int64", "shape": [1], "encoding": "host_monotonic_ns"}}
    task_dir = write_task(tmp_path, "sparse", [EpisodeSpec(1, length=4, extra_columns=extra)],
                          features_overrides=feats)
    from reel.torch import FrameDataset

    ds = FrameDataset(str(task_dir.path), columns=[FORCE], cameras=[])
    got = torch.utils.data.default_collate(ds.__getitems__([0, 1, 2, 3]))
    assert got[FORCE].tolist() == [[1, 2, 3], [0, 0, 0], [0, 0, 0], [4, 5, 6]]
    assert got[FORCE + "_is_pad"].tolist() == [False, True, True, False]


def test_an_episode_without_the_stream_is_all_padding(reel_mod, tmp_path):
    """Columns are sparse (contract §7.2): episode 2 never had the force stream, so each of its
    frames is zeros with _is_pad True, while episode 1's are paired."""
    import pyarrow as pa

    from .fixtures import EpisodeSpec, write_task

    base = 5_000_000_000 + 100_000_000_000
    ns = base + np.arange(3, dtype=np.int64) * 33_333_333
    extra = {FORCE: pa.FixedSizeListArray.from_arrays(pa.array(np.ones(9, np.float32)), 3), FORCE + "_ns": pa.array(ns)}
    feats = {FORCE: {"dtype": "float32", "shape": [3]},
             FORCE + "_ns": {"dtype": "int64", "shape": [1], "encoding": "host_monotonic_ns"}}
    task_dir = write_task(tmp_path, "sparse2", [EpisodeSpec(1, length=3, extra_columns=extra), EpisodeSpec(2, length=2)],
                          features_overrides=feats)
    from reel.torch import FrameDataset

    ds = FrameDataset(str(task_dir.path), columns=[FORCE], cameras=[])
    got = torch.utils.data.default_collate(ds.__getitems__([0, 1, 2, 3, 4]))
    assert got[FORCE].tolist() == [[1, 1, 1]] * 3 + [[0, 0, 0]] * 2
    assert got[FORCE + "_is_pad"].tolist() == [False, False, False, True, True]


def test_deltas_on_a_frame_clock_with_a_hole_fall_back_to_timestamp(reel_mod, tmp_path):
    """hardware_ns has no stamp on row 2, so a nearest search on it would be meaningless: the
    offsets are taken on timestamp. Row 2 itself pairs with nothing (no stamp), row 3 with its
    sample."""
    import pyarrow as pa

    from .fixtures import EpisodeSpec, write_task

    base = 5_000_000_000 + 100_000_000_000
    hw = base + np.arange(5, dtype=np.int64) * 33_333_333
    hw[2] = 0
    ns = base + np.arange(5, dtype=np.int64) * 33_333_333 - 1_000_000
    force = np.arange(15, dtype=np.float32).reshape(5, 3)
    extra = {"hardware_ns": pa.array(hw), FORCE: pa.FixedSizeListArray.from_arrays(pa.array(force.reshape(-1)), 3),
             FORCE + "_ns": pa.array(ns)}
    feats = {FORCE: {"dtype": "float32", "shape": [3]},
             FORCE + "_ns": {"dtype": "int64", "shape": [1], "encoding": "host_monotonic_ns"}}
    task_dir = write_task(tmp_path, "hole", [EpisodeSpec(1, length=5, extra_columns=extra)], features_overrides=feats)
    from reel.torch import FrameDataset

    ds = FrameDataset(str(task_dir.path), columns=[FORCE], cameras=[], delta_timestamps={FORCE: [-1 / 30, 0.0]})
    s = ds[3]
    assert s[FORCE].tolist() == [[0, 0, 0], force[3].tolist()]
    assert s[FORCE + "_is_pad"].tolist() == [True, False]


@pytest.mark.parametrize("layout", ["reel", "pyarrow_defaults", "pyarrow_page_index"])
def test_matrix_frames_decode_only_what_is_asked_whatever_the_file_layout(reel_mod, sim, tmp_path, layout):
    """Task.force_matrix_frames (what the loader holds per episode) decodes any rows, in any
    order and repeated, to the values numpy computes: from reel's own files (an offset index,
    no dictionary: only the pages asked for are read), from pyarrow's defaults (the reference
    collector's writer: dictionary pages, no offset index: row groups read whole) and from
    pyarrow with an offset index and dictionary pages (the dictionary read before each run)."""
    import shutil

    root = tmp_path / "task"
    shutil.copytree(sim, root)
    if layout != "reel":
        table = pq.read_table(root / data_rel(1))
        pq.write_table(table, root / data_rel(1), row_group_size=16, data_page_size=4096,
                       write_page_index=layout == "pyarrow_page_index")
    want = expected(root, 1)
    frames = reel_mod.open(str(root)).force_matrix_frames(1, MATRIX, plane="fz")
    assert frames.rows == len(want[MATRIX])
    assert np.array_equal(~frames.paired, want[MATRIX + "_is_pad"])
    rows = np.array([40, 3, 3, 0, 44, 17, 2, 1, 40, 29], dtype=np.int64)
    got = frames.decode(rows)
    assert np.array_equal(got["values"], want[MATRIX][rows])
    assert np.array_equal(~got["valid"], want[MATRIX + "_is_pad"][rows])
    whole = frames.decode(np.arange(frames.rows, dtype=np.int64))
    assert np.array_equal(whole["values"], want[MATRIX])
    with pytest.raises(reel_mod.InvalidError, match="outside the episode"):
        frames.decode(np.array([frames.rows], dtype=np.int64))
    one = reel_mod.open(str(root)).force_matrix(1, 40, MATRIX)  # the one-row read behind Task.force_matrix
    cells = pq.read_table(root / data_rel(1)).column(MATRIX)[40].as_py()
    assert (one is None) == (len(cells) == 0)
