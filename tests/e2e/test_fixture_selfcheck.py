"""Checks on the fixture builders themselves (no reel involved): the files they write must
match the contract, or every other test in this suite asserts against a wrong picture."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .fixtures import (
    EPISODE_ROW_COLUMNS,
    FM_FLAT,
    FM_TIERS,
    EpisodeSpec,
    ForceMatrixSpec,
    chunk_file,
    data_rel,
    fm_encode,
    fm_expected,
    make_force_frame,
    row_rel,
    shard_rel,
    write_task,
)

INFO_KEYS = {
    "format", "chunks_size", "data_path", "video_path", "episodes_path", "codebase_version",
    "app_version", "fps", "video", "task_name", "features", "cameras", "video_extensions",
    "devices", "device_names", "sensors", "sensor_dim", "created_at", "calibration", "total_episodes",
}


@pytest.mark.parametrize("n,chunk,file", [(1, 0, 0), (2, 0, 1), (1000, 0, 999), (1001, 1, 0), (2500, 2, 499)])
def test_numbering(n, chunk, file):
    assert chunk_file(n) == (chunk, file)
    assert data_rel(n) == f"data/chunk-{chunk:03d}/episode-{file:03d}.parquet"
    assert row_rel(n) == f"meta/episodes/chunk-{chunk:03d}/episode-{file:03d}.parquet"


def independent_decode(stored: np.ndarray, scale: float) -> np.ndarray:
    """The reader side of the codec, written separately from fm_encode."""
    d = stored.astype(np.int32).reshape(250, 750)
    q = np.cumsum(d, axis=1, dtype=np.int32).astype(np.int16)  # int32 accumulator, int16 wrap
    return (q.astype(np.float32) / np.float32(scale)).reshape(250, 250, 3)


@pytest.mark.parametrize("tier", sorted(FM_TIERS))
def test_force_codec_round_trip(tier):
    frame = make_force_frame(7)
    dtype, encoding, scale = FM_TIERS[tier]
    stored = fm_encode(frame, tier)
    assert stored.shape == (FM_FLAT,)
    assert stored.dtype == np.dtype(dtype)
    if dtype == "float32":
        assert encoding == "row_flat_raw"
        np.testing.assert_array_equal(stored.reshape(250, 250, 3), frame)
        np.testing.assert_array_equal(fm_expected(frame, tier), frame)
        return
    got = independent_decode(stored, scale)
    np.testing.assert_array_equal(got, fm_expected(frame, tier))
    # clipping at +-32767 and the wraparound pair at the start of row 0
    q = np.cumsum(stored.astype(np.int32).reshape(250, 750), axis=1).astype(np.int16)
    np.testing.assert_array_equal(q[0, :2], np.array([32767, -32767], dtype=np.int16))
    assert stored[1] == np.int16(2)  # -32767 - 32767 wraps to 2


def test_force_codec_rounding_rules():
    frame = make_force_frame(7)
    # x1 truncates toward zero: -2.7 -> -2, 2.7 -> 2, -0.5 -> 0
    got1 = fm_expected(frame, "int16")
    np.testing.assert_array_equal(got1[2, 0:4, 0], np.array([-2, 0, 0, 2], dtype=np.float32))
    # x10 rounds half to even: 0.25*10=2.5 -> 2, 0.75*10=7.5 -> 8, 1.25*10=12.5 -> 12, -2.5 -> -2
    got10 = fm_expected(frame, "int16x10") * np.float32(10)
    np.testing.assert_array_equal(got10[1, 0:4, 2], np.array([2, 8, 12, -2], dtype=np.float32))


def test_written_files_follow_the_contract(tmp_path):
    frame = make_force_frame(3)
    task = write_task(
        tmp_path,
        "t",
        [
            EpisodeSpec(1, imu=[0, 1, 3], force={"observation.gripper_left_force_matrix": ForceMatrixSpec("int16x10", [None, frame, None])}),
            EpisodeSpec(1001, length=2, row="shard"),
            EpisodeSpec(1002, length=4, row="shard"),
        ],
    )
    info_text = (task.path / "meta/info.json").read_text(encoding="utf-8")
    info = json.loads(info_text)
    assert set(info) >= INFO_KEYS
    assert info["format"] == "pooled_episodes_v1" and info["codebase_version"] == "v3.0"
    assert info_text.startswith('{\n  "format"')  # indent 2
    assert info["total_episodes"] == 1002

    # the episodes row: 11 columns, contract order and types
    row = pq.read_table(task.path / row_rel(1))
    assert [(f.name, f.type) for f in row.schema] == EPISODE_ROW_COLUMNS
    assert row.num_rows == 1
    # legacy shard: several rows, sorted by episode_index
    shard = pq.read_table(task.path / shard_rel(1))
    assert shard.column("episode_index").to_pylist() == [1001, 1002]
    assert shard.column("length").to_pylist() == [2, 4]
    assert not (task.path / row_rel(1001)).exists()

    t = pq.read_table(task.path / data_rel(1))
    types = {f.name: f.type for f in t.schema}
    assert types["episode_index"] == pa.int64() and types["frame_index"] == pa.int64()
    assert types["timestamp"] == pa.float32() and types["wall_time"] == pa.float64()
    assert types["hardware_ns"] == pa.int64() and types["task_index"] == pa.int64()
    assert types["action"] == pa.list_(pa.float32(), 1)
    assert types["observation.left_glove"] == pa.list_(pa.float32(), 256)
    assert types["imu_ts_ns"] == pa.list_(pa.int64())
    assert types["observation.imu"] == pa.list_(pa.list_(pa.float32(), 6))
    assert types["observation.gripper_left_force_matrix"] == pa.list_(pa.int16())
    assert t.column("episode_index").to_pylist() == [1, 1, 1]
    assert [len(x) for x in t.column("observation.imu").to_pylist()] == [0, 1, 3]
    assert [len(x) for x in t.column("observation.gripper_left_force_matrix").to_pylist()] == [0, FM_FLAT, 0]
    meta = pq.ParquetFile(task.path / data_rel(1)).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert pq.read_table(task.path / data_rel(1001)).column("episode_index").to_pylist() == [1001, 1001]


def test_stats_population_per_row_and_per_sample(tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, length=3, imu=[0, 1, 3]), EpisodeSpec(2, length=2, imu=[2, 0])])
    st = json.loads((task.path / "meta/stats.json").read_text(encoding="utf-8"))
    gl = np.concatenate([np.asarray(task.ep(n).table.column("observation.left_glove").to_pylist(), np.float64) for n in (1, 2)])
    assert st["observation.left_glove"]["count"] == 5  # zero-filled rows counted
    assert (gl == 0).all(axis=1).sum() == 2
    np.testing.assert_allclose(st["observation.left_glove"]["std"], gl.std(axis=0, ddof=0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(st["observation.left_glove"]["mean"], gl.mean(axis=0), rtol=1e-12)
    assert st["observation.imu"]["count"] == 6
    assert len(st["observation.imu"]["mean"]) == 6
    assert st["action"] == {"count": 0, "mean": [0.0], "std": [1.0], "min": [0.0], "max": [0.0]}
