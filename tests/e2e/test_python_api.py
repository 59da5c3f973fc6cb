"""The Python extension: reel.detect_format, reel.open -> Task (.info, .episodes(),
.force_matrix(N, row, column), .check()), reel.check, and reel.Error exceptions.

`reel` is imported through the `reel_mod` fixture so that collection works before the
package is built; a missing package fails these tests (it does not skip them)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from .checks import assert_json_close
from .fixtures import (
    FM_TIERS,
    EpisodeSpec,
    ForceMatrixSpec,
    fm_expected,
    fm_quantize,
    fm_spec,
    make_force_frame,
    write_bundle_dataset,
    write_legacy_v1_0,
    write_lerobot_v2,
    write_task,
)

COL = "observation.gripper_left_force_matrix"


def test_error_hierarchy(reel_mod):
    assert issubclass(reel_mod.Error, Exception)


# --------------------------------------------------------------------------- detect_format


def test_detect_pooled(reel_mod, clean_task, unchanged):
    with unchanged("reel.detect_format"):
        got = reel_mod.detect_format(str(clean_task.path))
    assert set(got) >= {"format", "version", "evidence"}
    assert got["format"] == "pooled_episodes_v1"


@pytest.mark.parametrize("version,fmt", [("v2.1", "lerobot_v2"), ("v2.0", "lerobot_v2"), ("v3.0", "lerobot_v3")])
def test_detect_lerobot(reel_mod, tmp_path, unchanged, version, fmt):
    ds = write_lerobot_v2(tmp_path, "lr", version=version)
    with unchanged("reel.detect_format"):
        got = reel_mod.detect_format(str(ds))
    assert got["format"] == fmt
    assert got["version"] == version


def test_detect_bundle(reel_mod, tmp_path, unchanged):
    ds = write_bundle_dataset(tmp_path)
    with unchanged("reel.detect_format"):
        assert reel_mod.detect_format(str(ds))["format"] == "bundle"


def test_detect_legacy_v1_0(reel_mod, tmp_path, unchanged):
    ds = write_legacy_v1_0(tmp_path, "old_task")
    with unchanged("reel.detect_format"):
        assert reel_mod.detect_format(str(ds))["format"] == "legacy_v1_0"


def test_detect_unknown_format_raises(reel_mod, tmp_path, unchanged):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_overrides={"format": "pooled_episodes_v9"})
    with unchanged("reel.detect_format"):
        with pytest.raises(reel_mod.Error) as ei:
            reel_mod.detect_format(str(task.path))
    assert "pooled_episodes_v9" in str(ei.value)
    assert isinstance(ei.value, ValueError)


def test_detect_unknown_bundle_schema_version_raises(reel_mod, tmp_path, unchanged):
    ds = write_bundle_dataset(tmp_path)
    m = json.loads((ds / "manifest.json").read_text(encoding="utf-8"))
    m["schema_version"] = 99
    (ds / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    with unchanged("reel.detect_format"):
        with pytest.raises(reel_mod.Error) as ei:
            reel_mod.detect_format(str(ds))
    assert "99" in str(ei.value)


# --------------------------------------------------------------------------- Task


def test_open_info_is_info_json(reel_mod, clean_task, unchanged):
    with unchanged("reel.open"):
        task = reel_mod.open(str(clean_task.path))
        info = task.info
    expected = json.loads((clean_task.path / "meta/info.json").read_text(encoding="utf-8"))
    assert_json_close(info, expected)


def test_episodes_match_cli_ls(reel_mod, reel_json, clean_task, unchanged):
    with unchanged("Task.episodes"):
        eps = reel_mod.open(str(clean_task.path)).episodes()
    assert [e["episode_index"] for e in eps] == [1, 2]
    assert_json_close(eps, reel_json("ls", clean_task.path)["episodes"])
    assert eps[1]["length"] == 4 and eps[1]["row_source"] == "episode_file"


def test_episodes_legacy_shard(reel_mod, tmp_path, unchanged):
    task = write_task(tmp_path, "t", [EpisodeSpec(n, length=n + 1, row="shard") for n in (1, 2, 3)])
    with unchanged("Task.episodes"):
        eps = reel_mod.open(str(task.path)).episodes()
    assert [(e["episode_index"], e["length"], e["row_source"]) for e in eps] == [
        (1, 2, "legacy_shard"),
        (2, 3, "legacy_shard"),
        (3, 4, "legacy_shard"),
    ]


def read_fm(reel_mod, task_path, n, row, column=COL):
    t = reel_mod.open(str(task_path))
    arr = t.force_matrix(n, row, column)
    assert isinstance(arr, np.ndarray)
    assert arr.dtype == np.float32
    assert arr.shape == (250, 250, 3)
    return arr


@pytest.mark.parametrize("tier", sorted(FM_TIERS))
def test_force_matrix_each_tier(reel_mod, tmp_path, unchanged, tier):
    frames = [make_force_frame(90), None, make_force_frame(91)]
    task = write_task(tmp_path, "t", [EpisodeSpec(1, force={COL: ForceMatrixSpec(tier, frames)})])
    with unchanged("Task.force_matrix"):
        a0 = read_fm(reel_mod, task.path, 1, 0)
        a2 = read_fm(reel_mod, task.path, 1, 2)
    np.testing.assert_array_equal(a0, fm_expected(frames[0], tier))
    np.testing.assert_array_equal(a2, fm_expected(frames[2], tier))
    if FM_TIERS[tier][0] == "float32":
        np.testing.assert_array_equal(a0, frames[0])


def test_force_matrix_tier_change(reel_mod, tmp_path, unchanged):
    f1, f2 = make_force_frame(101), make_force_frame(102)
    eps = [
        EpisodeSpec(1, length=2, force={COL: ForceMatrixSpec("int16x10", [None, f1])}),
        EpisodeSpec(2, length=2, force={COL: ForceMatrixSpec("float32", [f2, None])}),
    ]
    task = write_task(tmp_path, "t", eps)
    assert task.info["features"][COL]["scale"] == 1  # latest tier
    with unchanged("Task.force_matrix"):
        a1 = read_fm(reel_mod, task.path, 1, 1)
        a2 = read_fm(reel_mod, task.path, 2, 0)
    np.testing.assert_array_equal(a1, fm_expected(f1, "int16x10"))
    np.testing.assert_array_equal(a2, f2)


@pytest.mark.parametrize("how", ["column_missing", "column_empty_object"])
def test_force_matrix_info_fallback(reel_mod, tmp_path, unchanged, how):
    f = make_force_frame(111)
    if how == "column_missing":
        spec = EpisodeSpec(1, length=1, force={COL: ForceMatrixSpec("int16x100", [f])}, row_drop=("force_matrix_specs",))
    else:
        spec = EpisodeSpec(1, length=1, force={COL: ForceMatrixSpec("int16x100", [f], row_spec=False)})
    task = write_task(tmp_path, "t", [spec])
    with unchanged("Task.force_matrix"):
        a = read_fm(reel_mod, task.path, 1, 0)
    np.testing.assert_array_equal(a, fm_expected(f, "int16x100"))


def test_force_matrix_default_scale_one(reel_mod, tmp_path, unchanged):
    f = make_force_frame(121)
    spec = EpisodeSpec(1, length=1, force={COL: ForceMatrixSpec("int16x10", [f], row_spec=False)})
    task = write_task(tmp_path, "t", [spec], features_overrides={COL: fm_spec("int16x10", scale=None)})
    with unchanged("Task.force_matrix"):
        a = read_fm(reel_mod, task.path, 1, 0)
    np.testing.assert_array_equal(a, fm_quantize(f, "int16x10").astype(np.float32).reshape(250, 250, 3))


def test_force_matrix_bad_arguments_raise(reel_mod, tmp_path, unchanged):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, length=2, force={COL: ForceMatrixSpec("int16x10", [make_force_frame(1), None])})])
    with unchanged("Task.force_matrix"):
        t = reel_mod.open(str(task.path))
        with pytest.raises(reel_mod.Error):
            t.force_matrix(1, 0, "observation.no_such_column")
        with pytest.raises(reel_mod.Error):
            t.force_matrix(7, 0, COL)
        with pytest.raises(reel_mod.Error):
            t.force_matrix(1, 99, COL)


# --------------------------------------------------------------------------- check


def comparable(findings):
    return sorted((f["rule"], f["severity"], f["path"].replace("\\", "/")) for f in findings)


def test_check_clean(reel_mod, clean_task, unchanged):
    with unchanged("Task.check / reel.check"):
        a = reel_mod.open(str(clean_task.path)).check()
        b = reel_mod.findings(reel_mod.check(str(clean_task.path)))
    assert isinstance(a, list)
    assert [f for f in a if f["severity"] == "error"] == []
    assert comparable(a) == comparable(b)


def test_check_matches_cli(reel_mod, run_reel, tmp_path, unchanged):
    glove = pa.array(np.zeros((3, 256), np.float32).tolist(), pa.list_(pa.float32()))
    task = write_task(
        tmp_path,
        "t",
        [EpisodeSpec(1, extra_columns={"observation.left_glove": glove}), EpisodeSpec(2)],
        tasks_text='{\n  "task_index": 0,\n  "task": "t"\n}\n',
    )
    with unchanged("Task.check"):
        py = reel_mod.open(str(task.path)).check()
    for f in py:
        assert set(f) >= {"rule", "severity", "path", "message"}, f
    rules = {f["rule"] for f in py}
    assert {"data.column_type", "tasks.jsonl"} <= rules
    rc, out, err = run_reel("check", task.path, "--json")
    assert rc == 1, err
    assert reel_mod.check(str(task.path)) == json.loads(out)
    assert py == reel_mod.findings(json.loads(out))


# --------------------------------------------------------------------------- errors


def test_open_missing_path(reel_mod, tmp_path, unchanged):
    with unchanged("reel.open"):
        with pytest.raises(FileNotFoundError) as ei:
            reel_mod.open(str(tmp_path / "nope"))
    assert isinstance(ei.value, reel_mod.Error)
    assert "nope" in str(ei.value)


def test_open_missing_info_json(reel_mod, tmp_path, unchanged):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], write_info=False)
    with unchanged("reel.open"):
        with pytest.raises(reel_mod.Error) as ei:
            reel_mod.open(str(task.path))
    assert "info.json" in str(ei.value)


@pytest.mark.parametrize("text", ['{"format": ', "[1, 2]", ""], ids=["malformed", "list", "empty"])
def test_open_bad_info_json(reel_mod, tmp_path, unchanged, text):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_text=text)
    with unchanged("reel.open"):
        with pytest.raises(ValueError) as ei:
            reel_mod.open(str(task.path))
    assert isinstance(ei.value, reel_mod.Error)
    assert "info.json" in str(ei.value)


def test_open_unknown_format(reel_mod, tmp_path, unchanged):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_overrides={"format": "pooled_episodes_v9"})
    with unchanged("reel.open"):
        with pytest.raises(reel_mod.Error) as ei:
            reel_mod.open(str(task.path))
    assert "pooled_episodes_v9" in str(ei.value)


def test_open_regular_file(reel_mod, tmp_path, unchanged):
    f = tmp_path / "file.txt"
    f.write_text("x", encoding="utf-8")
    with unchanged("reel.open"):
        with pytest.raises(reel_mod.Error):
            reel_mod.open(str(f))


def test_force_matrix_truncated_data(reel_mod, tmp_path, unchanged):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, length=1, force={COL: ForceMatrixSpec("int16x10", [make_force_frame(3)])})])
    p = task.path / task.ep(1).data_rel
    p.write_bytes(p.read_bytes()[:1000])
    with unchanged("Task.force_matrix"):
        with pytest.raises(reel_mod.Error) as ei:
            reel_mod.open(str(task.path)).force_matrix(1, 0, COL)
    assert "episode-000.parquet" in str(ei.value)


def test_type_stubs_are_generated_and_installed(reel_mod):
    """reel/_core.pyi comes from nanobind's stubgen at build time (python/CMakeLists.txt),
    so it names every binding with its C++-declared signature."""
    from pathlib import Path
    pkg = Path(reel_mod.__file__).parent
    assert (pkg / "py.typed").is_file()
    stub = (pkg / "_core.pyi").read_text(encoding="utf-8")
    for name in ("class Task", "def data_stream(self, episode_index: int", "def episodes_stream",
                 "class TaskWriter", "class EpisodeWriter", "class VideoReader", "def imu(self, episode_index: int)",
                 "def check(path: str, options: CheckOptions", "class ExportOptions", "def export_task(",
                 "class ForeignDataset", "def is_foreign(path: str, storage: StorageOptions", "class StorageOptions",
                 "def frame_images(self, episode_index: int"):
        assert name in stub, name
