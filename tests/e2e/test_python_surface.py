"""Python friction (issue 14): one column as a string, one argument order (episode, what, rows)
with the old positional forms kept, force_matrix on a row without a sample, TaskWriter option
checking, the options structs shared with the CLI, and help()/repr on every public class.
Expected values come from pyarrow and the fixtures' own encoder, not from reel."""

from __future__ import annotations

import inspect
import pydoc

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .fixtures import EpisodeSpec, ForceMatrixSpec, data_rel, fm_expected, make_force_frame, write_task

COL = "observation.gripper_left_force_matrix"


# This file's `sim` is the first of conftest's small `tasks` (not the recorder tests' task).
@pytest.fixture
def sim(tasks):
    return tasks[0]


def test_one_column_as_a_string(reel_mod, sim):
    task = reel_mod.open(str(sim))
    want = pq.read_table(sim / data_rel(1), columns=["timestamp"])
    assert pa.table(task.data(1, "timestamp")).equals(want)
    assert task.frames_table([1], "timestamp").column("timestamp").equals(want.column("timestamp"))


def test_episode_then_what_then_rows(reel_mod, sim):
    task = reel_mod.open(str(sim))
    rows = [3, 0, 3]
    want = task.frames(1, "stereo_left", rows)
    new = task.frame_images(1, ["stereo_left"], rows)["stereo_left"]
    old = task.frame_images(1, rows, ["stereo_left"])["stereo_left"]
    kw = task.frame_images(1, rows=rows, slots=["stereo_left"])["stereo_left"]
    assert np.array_equal(new, want) and np.array_equal(old, want) and np.array_equal(kw, want)
    depth = task.frames(1, "d435_depth", [1, 2])
    assert np.array_equal(task.depth(1, "d435_depth", [1, 2]), depth)
    assert np.array_equal(task.depth(1, [1, 2], "d435_depth"), depth)
    with pytest.raises(TypeError, match="list of names"):
        task.frame_images(1, "stereo_left", rows)


def test_force_matrix_without_a_sample_is_none(reel_mod, tmp_path):
    f = make_force_frame(7)
    task = write_task(tmp_path, "t", [EpisodeSpec(1, length=2, force={COL: ForceMatrixSpec("int16x10", [None, f])})])
    t = reel_mod.open(str(task.path))
    assert t.force_matrix(1, 0, COL) is None
    np.testing.assert_array_equal(t.force_matrix(1, 1, COL), fm_expected(f, "int16x10"))
    with pytest.raises(FileNotFoundError):  # a missing column is still a NotFoundError
        t.force_matrix(1, 0, "observation.no_such_column")


def test_task_writer_options_are_checked(reel_mod, tmp_path):
    with pytest.raises(TypeError, match="row_group_byte"):
        reel_mod.TaskWriter(str(tmp_path / "a"), fps=30, row_group_byte=1)
    with pytest.raises(TypeError, match="queue_frame"):
        reel_mod.TaskWriter(str(tmp_path / "b"), fps=30, video={"slots": [], "queue_frame": 4})
    with pytest.raises(TypeError, match="widht"):
        reel_mod.TaskWriter(str(tmp_path / "b"), fps=30, video={"slots": [{"slot": "s", "widht": 4, "height": 4}]})
    w = reel_mod.TaskWriter(str(tmp_path / "c"), fps=30, row_group_rows=1000, row_group_bytes=1 << 10,
                            video={"slots": [], "queue_frames": 2})
    with w.episode() as ep:
        for i in range(6):
            # 256 float32 a row = 1 KiB: with row_group_bytes=1 KiB every row is its own row group.
            ep.append(timestamp=i / 30, fixed={"observation.left_glove": np.full(256, i, np.float32)})
    meta = pq.read_metadata(tmp_path / "c" / data_rel(ep.committed["episode_index"]))
    assert meta.num_rows == 6 and meta.num_row_groups > 1
    assert "TaskWriter(" in repr(w) and "Episode(" in repr(ep)


def test_operations_take_the_cli_options_structs(reel_mod, sim, tmp_path):
    with pytest.raises(TypeError, match="formatt"):
        reel_mod.export(str(sim), str(tmp_path / "x"), formatt="bundle")
    with pytest.raises(TypeError, match="crf"):
        reel_mod.pack(str(sim), 1, str(tmp_path / "x.zip"), crf=20)
    with pytest.raises(reel_mod.InvalidError, match="lerobot-v9"):
        reel_mod.export(str(sim), str(tmp_path / "x"), format="lerobot-v9")
    o = reel_mod.ExportOptions()
    assert o.format == "lerobot-v3" and o.state_columns is None and o.include_depth
    o.list_rules = {"observation.imu": "drop"}
    assert o.list_rules == {"observation.imu": "drop"}
    assert "video_files_size_in_mb=200" in repr(o)
    assert reel_mod.UploadOptions().max_attempts == 5 and reel_mod.SimulateOptions().fps == 30.0
    assert reel_mod.check(str(sim), io_threads=1) == reel_mod.check(str(sim))


PUBLIC = ["Task", "Dataset", "ArrowStream", "VideoReader", "TaskWriter", "Episode", "ExportOptions", "ImportOptions",
          "PackOptions", "PushOptions", "UploadOptions", "CheckOptions", "SimulateOptions", "ServeConfig", "Server"]


def test_help_and_docstrings_everywhere(reel_mod):
    import reel.daft
    import reel.torch

    classes = [getattr(reel_mod, n) for n in PUBLIC] + [reel.torch.FrameDataset, reel.torch.DatasetMeta]
    for cls in classes:
        assert cls.__doc__ and len(cls.__doc__) > 20, cls
        assert cls.__repr__ is not object.__repr__, f"{cls.__name__} has the default repr"
        assert cls.__name__ in pydoc.render_doc(cls)
        for name, member in vars(cls).items():
            if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                assert (member.__doc__ or "").strip(), f"{cls.__name__}.{name} has no docstring"
    for mod in (reel_mod, reel.torch, reel.daft):
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if callable(obj):
                assert (obj.__doc__ or "").strip(), f"{mod.__name__}.{name} has no docstring"


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the raising callback
def test_serve_and_upload_in_python(reel_mod, reel_bin, sim, tmp_path):
    """reel.serve (ServeConfig, the server on a thread) receives reel.upload's slice; the
    episode's data lands byte-identical (pyarrow), and the hashes match hashlib's."""
    import hashlib

    from .serve_common import TOKEN_ALL, write_config
    assert reel_mod.sha256_hex(TOKEN_ALL) == hashlib.sha256(TOKEN_ALL.encode()).hexdigest()
    cfg = write_config(reel_bin, tmp_path / "serve.json")
    with pytest.raises(TypeError, match="prot"):
        reel_mod.serve(str(tmp_path / "srv"), str(cfg), prot=0)
    with reel_mod.serve(str(tmp_path / "srv"), str(cfg), port=0, log_path=str(tmp_path / "log.jsonl")) as server:
        assert server.port > 0 and "listening" in repr(server)
        calls = []
        got = reel_mod.upload(str(sim), [1], server=server.url, token=TOKEN_ALL, name="surface",
                              progress=lambda *a: calls.append(a))

        def boom(*a):
            raise RuntimeError("a progress bar bug")
        again = reel_mod.upload(str(sim), [1], server=server.url, token=TOKEN_ALL, name="surface", progress=boom)
    again, got = again["episodes"], got["episodes"]
    assert again[0]["ok"] and again[0]["already_present"], again  # the callback's error does not stop it
    assert "stopped" in repr(server)
    assert got[0]["ok"] and not got[0]["already_present"], got
    assert calls and calls[-1][0] == 1 and calls[-1][1] == calls[-1][2] == got[0]["bytes"], calls
    landed = tmp_path / "srv" / "surface" / data_rel(1)
    assert pq.read_table(landed).equals(pq.read_table(sim / data_rel(1)))


def test_python_takes_the_cli_grammar_options(reel_mod, tmp_path):
    # The options the one CLI grammar added (--force, --renumber, --recursive) are fields of
    # the same structs in Python; simulate takes count= as the CLI's --count.
    task = tmp_path / "deep" / "a" / "t"
    assert [e["committed"] for e in reel_mod.simulate(task, count=1, seconds=0.3, video=False)["episodes"]] == [True]
    with pytest.raises(reel_mod.Error, match="recursive"):  # the task is two levels down
        reel_mod.check(tmp_path / "deep")
    assert reel_mod.check(tmp_path / "deep", recursive=True)["errors"] == 0
    out = tmp_path / "lr"
    reel_mod.export(task, out)
    with pytest.raises(reel_mod.AlreadyExistsError):
        reel_mod.export(task, out)
    assert reel_mod.export(task, out, replace_existing=True)["episodes"] == 1
    back = tmp_path / "back"
    assert reel_mod.import_dataset(out, back)["episode_indices"] == [1]
    again = reel_mod.import_dataset(out, back)  # identical content: skipped, not imported again
    assert again["episodes"] == 0 and again["skipped"] == [{"source_episode": 0, "episode_index": 1}]
    # The source task's episode 1 holds more than the export carries: different content.
    with pytest.raises(reel_mod.AlreadyExistsError, match="renumber"):
        reel_mod.import_dataset(out, task)
    assert reel_mod.import_dataset(out, task, renumber=True)["episode_indices"] == [2]
    with pytest.raises(TypeError):
        reel_mod.import_dataset(out, task, renumbering=True)


def test_safe_defaults_hold_in_python_too(reel_mod, tmp_path):
    # The CLI's --force and empty-password refusals live in the library, so Python gets them.
    task = tmp_path / "t"
    reel_mod.simulate(task, count=1, seconds=0.3, video=False)
    zip_path = tmp_path / "x.zip"
    reel_mod.pack(task, 1, zip_path)
    with pytest.raises(reel_mod.AlreadyExistsError, match="replace_existing"):
        reel_mod.pack(task, 1, zip_path)
    assert reel_mod.pack(task, 1, zip_path, replace_existing=True)["episode_index"] == 1
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    with pytest.raises(reel_mod.AlreadyExistsError, match="not a zip"):
        reel_mod.pack(task, 1, notes, replace_existing=True)
    assert notes.read_text() == "mine"
    with pytest.raises(reel_mod.InvalidError, match="empty"):
        reel_mod.hash_password("")
