"""Tables across the Python boundary through the Arrow C stream interface (issue 6):
Task.data(N, columns) and Task.episodes_arrow() are read by pyarrow through
``__arrow_c_stream__`` and compared with what pyarrow reads from the same files directly.
Tasks are written by fixtures.py with pyarrow, independently of reel."""

from __future__ import annotations

import gc

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .fixtures import EpisodeSpec, data_rel, write_task


@pytest.fixture
def task_dir(tmp_path):
    return write_task(
        tmp_path,
        "arrow_task",
        [EpisodeSpec(1, length=5, imu=[2, 0, 1, 3, 1]), EpisodeSpec(2, length=4, imu=[1, 1, 0, 3]),
         EpisodeSpec(3, length=2, data=False, videos={}), EpisodeSpec(4, length=3, row="shard")],
    )


def test_data_stream_equals_pyarrow(reel_mod, task_dir, unchanged):
    task = reel_mod.open(str(task_dir.path))
    for n in (1, 2, 4):
        with unchanged("Task.data"):
            got = pa.table(task.data(n))
        want = pq.read_table(task_dir.path / data_rel(n))
        assert got.schema == want.schema, n
        assert got.equals(want), n


def test_projection_and_repeated_reads(reel_mod, task_dir):
    task = reel_mod.open(str(task_dir.path))
    stream = task.data(1, ["frame_index", "observation.imu"])
    first = pa.table(stream)
    assert first.column_names == ["frame_index", "observation.imu"]
    want = pq.read_table(task_dir.path / data_rel(1), columns=["frame_index", "observation.imu"])
    assert first.equals(want)
    # Every __arrow_c_stream__ call opens a fresh stream: the object reads again.
    assert pa.table(stream).equals(first)
    assert stream.to_arrow().equals(first)
    reader = pa.RecordBatchReader.from_stream(task.data(2))
    assert reader.read_all().num_rows == 4


def test_unconsumed_capsule_is_released(reel_mod, task_dir):
    task = reel_mod.open(str(task_dir.path))
    for _ in range(200):
        capsule = task.data(1).__arrow_c_stream__()
        assert type(capsule).__name__ == "PyCapsule"
        del capsule
    gc.collect()
    assert pa.table(task.data(1)).num_rows == 5


def test_data_errors(reel_mod, task_dir):
    task = reel_mod.open(str(task_dir.path))
    with pytest.raises(reel_mod.NotFoundError, match="no_such_column"):
        pa.table(task.data(1, ["no_such_column"]))
    with pytest.raises(reel_mod.NotFoundError, match="episode 3"):
        task.data(3).__arrow_c_stream__()
    with pytest.raises(reel_mod.NotFoundError):
        task.data(99).__arrow_c_stream__()
    with pytest.raises(reel_mod.NotSupportedError):
        task.data(1).__arrow_c_stream__(requested_schema=object())


def test_episodes_arrow(reel_mod, task_dir):
    task = reel_mod.open(str(task_dir.path))
    t = pa.table(task.episodes_arrow())
    assert t.column("episode_index").to_pylist() == [1, 2, 3, 4]
    assert t.column("length").to_pylist() == [5, 4, 2, 3]
    assert t.column("has_data").to_pylist() == [True, True, False, True]
    assert t.column("row_source").to_pylist() == ["episode_file", "episode_file", "episode_file", "legacy_shard"]
    assert t.column("data_path").to_pylist() == [data_rel(1), data_rel(2), None, data_rel(4)]
    assert t.column("video_slots").to_pylist()[0] == ["d435_depth", "d435_rgb"]
    assert t.column("video_slots").to_pylist()[2] == []
    # The same facts as the dict listing.
    dicts = task.episodes()
    assert [d["episode_index"] for d in dicts] == t.column("episode_index").to_pylist()
    assert [d["length"] for d in dicts] == t.column("length").to_pylist()
    # Filter with Arrow, then load only the kept episodes.
    import pyarrow.compute as pc
    kept = t.filter(pc.and_(t.column("has_data"), pc.greater(t.column("length"), 3)))
    rows = sum(pa.table(task.data(n)).num_rows for n in kept.column("episode_index").to_pylist())
    assert rows == 5 + 4


def test_frames_table_across_episodes(reel_mod, reel_bin, tmp_path):
    """Task.frames_table: episodes -> filter -> the kept episodes' rows, equal to pyarrow's read."""
    import subprocess

    root = tmp_path / "pick"
    subprocess.run([reel_bin, "simulate", str(root), "--count", "3", "--seconds", "0.5", "--no-video"],
                   check=True, capture_output=True)
    task = reel_mod.open(str(root))
    kept = [e["episode_index"] for e in task.episodes() if e["episode_index"] != 2]
    t = task.frames_table(kept, ["observation.gripper_state"])
    assert t.column_names == ["episode_index", "frame_index", "observation.gripper_state"]
    want = [pq.read_table(root / "data/chunk-000" / f"episode-{n - 1:03d}.parquet",
                          columns=["episode_index", "frame_index", "observation.gripper_state"]) for n in kept]
    assert t.to_pylist() == [r for w in want for r in w.to_pylist()]
    assert task.frames_table().num_rows == sum(pq.read_metadata(f).num_rows for f in (root / "data").rglob("*.parquet"))
    with pytest.raises(reel_mod.NotFoundError):
        task.frames_table([1], ["observation.nope"])
