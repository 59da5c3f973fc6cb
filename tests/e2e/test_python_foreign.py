"""reel.Dataset: LeRobot v3.0 / v2.1 and bundle datasets through the Python API
(reel.open -> Dataset, .info, .episodes(), .data(N, columns), .frame_images(N, rows, keys),
.check()).

Inputs: reel's own exports of a simulated pooled task (`reel export`), and a v3.0 dataset
written by the real LeRobot 0.4.4 (tests/e2e/peers/lerobot_make.py). Expected values come
from pyarrow reading the same parquet rows, expected pixels from the ffmpeg CLI's rgb24 decode
of the source videos (the pooled task's per-episode mp4s; LeRobot's shared mp4 by position)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .lerobot_peer import expected, make_dataset
from .video_ref import cli_rgb

W, H = 96, 64
FPS = 30
SLOTS = ["stereo_left", "d435_rgb"]
KEYS = [f"observation.images.{s}" for s in SLOTS]
FORMATS = {"v3.0": "lerobot-v3", "v2.1": "lerobot-v2.1", "bundle": "bundle"}


def reel_cli(reel_bin, *args):
    proc = subprocess.run([reel_bin, *map(str, args)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"reel {' '.join(map(str, args))}: {proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def pooled(reel_bin, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pyforeign") / "pick"
    reel_cli(reel_bin, "simulate", root, "--count", 2, "--seconds", 1, "--video-size", f"{W}x{H}")
    return root


@pytest.fixture(scope="module")
def source_frames(pooled):
    """{(episode_index, slot): all frames of the pooled episode's video}, by the ffmpeg CLI."""
    return {(e, s): cli_rgb(pooled / "videos/chunk-000" / s / f"episode-{e:03d}.mp4", W, H)
            for e in range(2) for s in SLOTS}


@pytest.fixture(scope="module")
def exported(reel_bin, pooled, tmp_path_factory):
    cache = {}

    def get(fmt):
        if fmt not in cache:
            out = tmp_path_factory.mktemp(f"pyforeign-{fmt}") / "ds"
            reel_cli(reel_bin, "export", "--to", FORMATS[fmt], pooled, out)
            cache[fmt] = out
        return cache[fmt]

    return get


@pytest.fixture(scope="module")
def real_v3(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("pyforeign-real") / "ds"
    summary = make_dataset(root, "v3.0", episodes=3, cameras=2)
    return root, summary


def pyarrow_rows(root: Path, ep: dict, columns=None) -> pa.Table:
    """The episode's rows of its data file, as pyarrow reads them."""
    t = pq.read_table(root / ep["data_path"], columns=columns)
    return t.slice(ep["from_row"], ep["to_row"] - ep["from_row"])


# --------------------------------------------------------------------------- open / info / episodes


def test_open_returns_dataset_for_foreign_and_task_for_pooled(reel_mod, exported, pooled):
    ds = reel_mod.open(str(exported("v3.0")))
    assert isinstance(ds, reel_mod.Dataset)
    assert ds.root == str(exported("v3.0"))
    assert isinstance(reel_mod.open(str(pooled)), reel_mod.Task)
    assert isinstance(reel_mod.Dataset(str(exported("bundle"))), reel_mod.Dataset)


def test_dataset_refuses_a_pooled_task(reel_mod, pooled):
    with pytest.raises(reel_mod.NotSupportedError):
        reel_mod.Dataset(str(pooled))


def test_info_matches_info_json(reel_mod, exported):
    root = exported("v3.0")
    info_json = json.loads((root / "meta/info.json").read_text())
    info = reel_mod.open(str(root)).info
    assert info["format"] == "lerobot_v3" and info["version"] == info_json["codebase_version"]
    assert info["fps"] == info_json["fps"]
    assert info["total_episodes"] == info_json["total_episodes"] == 2
    assert info["total_frames"] == info_json["total_frames"]
    assert info["video_keys"] == sorted(k for k, f in info_json["features"].items() if f["dtype"] == "video")
    assert set(KEYS) <= set(info["video_keys"])
    for name, f in info_json["features"].items():
        assert info["features"][name] == {"dtype": f["dtype"], "shape": list(f["shape"])}
    assert info["tasks"] == ["pick"]


def test_episodes_match_episodes_parquet(reel_mod, exported):
    root = exported("v3.0")
    rows = pa.concat_tables([pq.read_table(f) for f in sorted((root / "meta/episodes").rglob("*.parquet"))]).to_pylist()
    eps = reel_mod.open(str(root)).episodes()
    assert [e["episode_index"] for e in eps] == [r["episode_index"] for r in rows] == [0, 1]
    for e, r in zip(eps, rows):
        assert e["length"] == r["length"] == FPS
        assert e["tasks"] == list(r["tasks"])
        assert (e["dataset_from_index"], e["dataset_to_index"]) == (r["dataset_from_index"], r["dataset_to_index"])
        assert e["to_row"] - e["from_row"] == e["length"]
        assert e["data_path"] == f"data/chunk-{r['data/chunk_index']:03d}/file-{r['data/file_index']:03d}.parquet"
        for k in KEYS:
            v = e["videos"][k]
            assert v["path"] == f"videos/{k}/chunk-{r[f'videos/{k}/chunk_index']:03d}/file-{r[f'videos/{k}/file_index']:03d}.mp4"
            assert v["from_timestamp"] == r[f"videos/{k}/from_timestamp"]
            assert v["to_timestamp"] == r[f"videos/{k}/to_timestamp"]


# --------------------------------------------------------------------------- data


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_data_equals_pyarrow(reel_mod, exported, fmt):
    root = exported(fmt)
    ds = reel_mod.open(str(root))
    for ep in ds.episodes():
        got = pa.table(ds.data(ep["episode_index"]))
        want = pyarrow_rows(root, ep)
        assert got.num_rows == ep["length"]
        assert got.schema.names == want.schema.names
        assert got.to_pydict() == want.to_pydict()


def test_data_projection_and_rereading(reel_mod, exported):
    root = exported("v3.0")
    ds = reel_mod.open(str(root))
    ep = ds.episodes()[1]
    s = ds.data(1, ["index", "observation.state"])
    want = pyarrow_rows(root, ep, ["index", "observation.state"])
    assert pa.table(s).equals(want.combine_chunks()) or pa.table(s).to_pydict() == want.to_pydict()
    assert pa.table(s).to_pydict() == want.to_pydict()  # a fresh stream each time
    assert pa.table(s).column("index").to_pylist() == list(range(ep["dataset_from_index"], ep["dataset_to_index"]))


def test_data_on_real_lerobot_dataset(reel_mod, real_v3):
    root, summary = real_v3
    ds = reel_mod.open(str(root))
    eps = ds.episodes()
    assert [e["length"] for e in eps] == summary["lengths"]
    assert [e["tasks"] for e in eps] == [[t] for t in summary["tasks"]]
    for ep in eps:
        got = pa.table(ds.data(ep["episode_index"]))
        assert got.to_pydict() == pyarrow_rows(root, ep).to_pydict()
        state = np.array(got.column("observation.state").to_pylist(), np.float32)
        want = np.stack([expected.expected_state(ep["episode_index"], i) for i in range(ep["length"])])
        np.testing.assert_array_equal(state, want)


# --------------------------------------------------------------------------- frames


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_frame_images_equal_ffmpeg_of_source(reel_mod, exported, source_frames, fmt):
    ds = reel_mod.open(str(exported(fmt)))
    for e in range(2):
        rows = [FPS - 1, 0, 7, 7, 3]  # any order, repeats
        got = ds.frame_images(e, rows, KEYS)
        assert list(got) == KEYS
        for s, k in zip(SLOTS, KEYS):
            assert got[k].dtype == np.uint8 and got[k].shape == (len(rows), H, W, 3)
            np.testing.assert_array_equal(got[k], source_frames[(e, s)][rows], err_msg=f"{fmt} ep {e} {k}")
        every = ds.frame_images(e, range(FPS), KEYS[:1])[KEYS[0]]
        np.testing.assert_array_equal(every, source_frames[(e, SLOTS[0])])


def test_frame_images_on_real_lerobot_dataset(reel_mod, real_v3):
    """LeRobot's shared mp4 per camera: episode e's frames follow the earlier episodes'."""
    root, summary = real_v3
    ds = reel_mod.open(str(root))
    for c, key in enumerate(summary["cameras"]):
        eps = ds.episodes()
        paths = {e["videos"][key]["path"] for e in eps}
        assert len(paths) == 1
        allf = cli_rgb(root / paths.pop(), expected.WIDTH, expected.HEIGHT)
        offset = 0
        for ep in eps:
            n = ep["length"]
            got = ds.frame_images(ep["episode_index"], np.arange(n)[::-1], [key])[key]
            np.testing.assert_array_equal(got, allf[offset:offset + n][::-1], err_msg=f"{key} ep {ep['episode_index']}")
            offset += n
        assert offset == len(allf)


def test_frame_images_empty_rows(reel_mod, exported):
    got = reel_mod.open(str(exported("v3.0"))).frame_images(0, [], KEYS[:1])
    assert got[KEYS[0]].shape == (0, H, W, 3)


# --------------------------------------------------------------------------- errors


def test_errors_map_to_reel_exceptions(reel_mod, exported):
    ds = reel_mod.open(str(exported("v3.0")))
    with pytest.raises(reel_mod.NotFoundError, match="no episode 5"):
        pa.table(ds.data(5))  # streams open when read, like Task.data
    with pytest.raises(reel_mod.NotFoundError):
        ds.frame_images(9, [0], KEYS)
    with pytest.raises(reel_mod.NotFoundError, match="observation.images.nope"):
        ds.frame_images(0, [0], ["observation.images.nope"])
    with pytest.raises(reel_mod.InvalidError, match="row 30"):
        ds.frame_images(0, [30], KEYS)
    with pytest.raises(reel_mod.InvalidError):
        ds.frame_images(0, [-1], KEYS)
    with pytest.raises(TypeError):
        ds.frame_images(0, [0.5], KEYS)
    with pytest.raises(TypeError):
        ds.frame_images(0, [0], KEYS[0])
    with pytest.raises(reel_mod.Error):
        pa.table(ds.data(0, ["no_such_column"]))


def test_unknown_version_is_not_supported(reel_mod, exported, tmp_path):
    import shutil

    root = tmp_path / "ds"
    shutil.copytree(exported("v3.0"), root)
    info = json.loads((root / "meta/info.json").read_text())
    info["codebase_version"] = "v9.0"
    (root / "meta/info.json").write_text(json.dumps(info))
    for open_ in (reel_mod.Dataset, reel_mod.open):
        with pytest.raises(reel_mod.NotSupportedError) as ei:
            open_(str(root))
        assert "v9.0" in str(ei.value) and "info.json" in str(ei.value)


def test_missing_video_raises_and_check_reports_it(reel_mod, exported, tmp_path):
    import shutil

    root = tmp_path / "ds"
    shutil.copytree(exported("v3.0"), root)
    assert [f for f in reel_mod.open(str(root)).check() if f["severity"] == "error"] == []
    video = next((root / "videos" / KEYS[0]).rglob("*.mp4"))
    video.unlink()
    ds = reel_mod.open(str(root))
    with pytest.raises(reel_mod.NotFoundError) as ei:
        ds.episodes()
    assert video.name in str(ei.value)
    findings = ds.check()
    assert any(f["rule"] == "foreign.file_missing" and f["severity"] == "error" for f in findings), findings
    assert set(findings[0]) == {"task", "rule", "severity", "path", "message"}


def test_truncated_data_file_is_corruption(reel_mod, exported, tmp_path):
    import shutil

    root = tmp_path / "ds"
    shutil.copytree(exported("v3.0"), root)
    ds = reel_mod.open(str(root))
    ep = ds.episodes()[0]
    p = root / ep["data_path"]
    p.write_bytes(p.read_bytes()[:200])
    with pytest.raises(reel_mod.Error) as ei:
        pa.table(ds.data(0))
    assert isinstance(ei.value, (reel_mod.CorruptionError, reel_mod.InvalidError)), ei.value
    assert "file-000.parquet" in str(ei.value)
