"""`reel pack`: the upload zip slice of one episode (contract §9, reference-behaviour.md "Upload").

Every expectation is computed here from the task directory with zipfile / pyarrow / ffprobe,
straight from the contract: entries in order (videos sorted by image_key, data parquet,
episodes file, meta/info.json, meta/stats.json, meta/tasks.jsonl), arcnames exactly as on
disk, ZIP_STORED, bytes equal to the task's files, no dotfiles, a single-row episodes file
whose episode_index is N (a slice of the legacy shard under the per-episode name when the row
lives in one), HEVC pre-compression of RGB only, clear refusal of a deleted episode, and an
atomic output (no temp left behind, the task untouched).
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from .checks import assert_no_crash, assert_unchanged, snapshot
from .fixtures import EpisodeSpec, data_rel, row_rel, shard_rel, video_rel, write_task
from .recorder_common import delete, memo_task, simulate

META = ["meta/info.json", "meta/stats.json", "meta/tasks.jsonl"]
SIM_ARGS = ("--seconds", 1, "--video-size", "32x24", "--seed", 3)

needs_ffprobe = pytest.mark.skipif(shutil.which("ffprobe") is None, reason="needs the ffprobe CLI")


def pack(reel_bin: str, *args, cwd=None) -> tuple[int, str, str]:
    """Run `reel pack ARGS` (it writes the zip, so not through run_reel); crash checks only."""
    argv = [reel_bin, "pack", *[str(a) for a in args]]
    proc = subprocess.run(argv, capture_output=True, timeout=300, cwd=cwd)
    out = proc.stdout.decode("utf-8", errors="replace")
    err = proc.stderr.decode("utf-8", errors="replace")
    assert_no_crash(proc.returncode, err, " ".join(argv))
    return proc.returncode, out, err


def pack_json(reel_bin: str, *args, cwd=None) -> dict:
    rc, out, err = pack(reel_bin, *args, "--json", cwd=cwd)
    assert rc == 0, f"reel pack {args} exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    return json.loads(out)


def expected_order(task: Path, n: int, rows_rel: str | None = None) -> list[str]:
    """The contract's order, from the files on disk: videos of N by image_key, data, row, meta."""
    c, f = (max(n - 1, 0) // 1000, max(n - 1, 0) % 1000)
    chunk = task / "videos" / f"chunk-{c:03d}"
    videos = []
    if chunk.is_dir():
        for slot in sorted(p.name for p in chunk.iterdir() if not p.name.startswith(".")):
            for p in sorted((chunk / slot).glob(f"episode-{f:03d}.*")):
                videos.append(p.relative_to(task).as_posix())
    return videos + [data_rel(n), rows_rel or row_rel(n)] + META


def rgb_slots(task: Path) -> set:
    return set(json.loads((task / "meta/info.json").read_text())["cameras"])


def assert_slice(zip_path: Path, task: Path, n: int, generated_row: bool = False) -> list[str]:
    """Order, names, ZIP_STORED, bytes and the single-row episodes file; returns the names."""
    with zipfile.ZipFile(zip_path) as zf:
        assert zf.testzip() is None, f"{zip_path}: CRC error"
        infos = zf.infolist()
        names = [i.filename for i in infos]
        assert names == expected_order(task, n)
        for i in infos:
            assert i.compress_type == zipfile.ZIP_STORED, f"{i.filename} is not stored"
            assert not i.is_dir()
            assert not any(part.startswith(".") for part in i.filename.split("/")), i.filename
            if i.filename == row_rel(n) and generated_row:
                continue
            assert zf.read(i) == (task / i.filename).read_bytes(), f"{i.filename} differs from the task's file"
        row = pq.read_table(io.BytesIO(zf.read(row_rel(n))))
    assert row.num_rows == 1
    assert row.column("episode_index").to_pylist() == [n]
    return names


# --------------------------------------------------------------------------- recorded task


@pytest.fixture(scope="module")
def sim_task(reel_bin, tmp_path_factory) -> Path:
    def build(root):
        task = root / "pick_cup"
        simulate(reel_bin, task, "--count", 3, *SIM_ARGS)
        return task

    return memo_task("pack_sim", tmp_path_factory, build)


def test_slice_of_a_recorded_episode(reel_bin, sim_task, tmp_path):
    before = snapshot(sim_task)
    out = tmp_path / "out" / "slice.zip"
    out.parent.mkdir()
    got = pack_json(reel_bin, sim_task, 2, "-o", out)
    assert_unchanged(before, snapshot(sim_task), "reel pack")
    names = assert_slice(out, sim_task, 2)
    assert any(n.startswith("videos/") for n in names), "the simulated episode has videos"
    assert "meta/episodes/.lock" not in names
    assert got["episode_index"] == 2
    assert got["upload_episode_index"] == 1
    assert got["zip_bytes"] == out.stat().st_size
    assert [e["arcname"] for e in got["entries"]] == names
    for e in got["entries"]:
        assert e["size"] == (sim_task / e["arcname"]).stat().st_size
        assert e["recompressed"] is False
    # Atomic: nothing but the zip beside it.
    assert sorted(p.name for p in out.parent.iterdir()) == ["slice.zip"]


def test_default_name_and_text_summary(reel_bin, sim_task, tmp_path):
    rc, out, err = pack(reel_bin, sim_task, 3, cwd=tmp_path)
    assert rc == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pick_cup_ep000002.zip"]
    size = (tmp_path / "pick_cup_ep000002.zip").stat().st_size
    assert f"{len(expected_order(sim_task, 3))} entries, {size} bytes" in out, out
    assert_slice(tmp_path / "pick_cup_ep000002.zip", sim_task, 3)


def test_force_replaces_an_existing_zip_and_a_failure_keeps_it(reel_bin, sim_task, tmp_path):
    out = tmp_path / "x.zip"
    out.write_bytes(b"old contents")  # not a zip: never replaced, --force or not
    rc, _, err = pack(reel_bin, sim_task, 1, "-o", out, "--force")
    assert rc == 2 and "not a zip" in err, err
    assert out.read_bytes() == b"old contents"
    pack_json(reel_bin, sim_task, 2, "-o", tmp_path / "y.zip")
    (tmp_path / "y.zip").rename(out)
    rc, _, err = pack(reel_bin, sim_task, 1, "-o", out)
    assert rc == 2 and "--force" in err, err
    pack_json(reel_bin, sim_task, 1, "-o", out, "--force")
    assert_slice(out, sim_task, 1)
    good = out.read_bytes()
    rc, _, err = pack(reel_bin, sim_task, 99, "-o", out, "--force")
    assert rc == 2, err
    assert out.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.zip"]


def test_missing_output_directory_is_refused(reel_bin, sim_task, tmp_path):
    out = tmp_path / "no" / "such" / "dir" / "x.zip"
    rc, _, err = pack(reel_bin, sim_task, 1, "-o", out)
    assert rc == 2 and "does not exist" in err and str(out.parent) in err, err
    assert list(tmp_path.iterdir()) == []


def test_chunk_rollover_numbering(reel_bin, tmp_path):
    task = tmp_path / "roll"
    eps = simulate(reel_bin, task, "--count", 1, "--watermark", 1001, "--no-video", *SIM_ARGS)
    assert [e["episode_index"] for e in eps] == [1001]
    work = tmp_path / "work"
    work.mkdir()
    got = pack_json(reel_bin, task, 1001, cwd=work)
    assert got["upload_episode_index"] == 0
    zip_path = work / "roll_ep000000.zip"
    names = assert_slice(zip_path, task, 1001)
    assert names[:2] == ["data/chunk-001/episode-000.parquet", "meta/episodes/chunk-001/episode-000.parquet"]


def test_deleted_episode_is_refused(reel_bin, tmp_path):
    task = tmp_path / "del"
    simulate(reel_bin, task, "--count", 2, "--no-video", *SIM_ARGS)
    delete(reel_bin, task, 1)
    out = tmp_path / "out.zip"
    rc, stdout, err = pack(reel_bin, task, 1, "-o", out)
    assert rc == 2, f"exit {rc}\n{stdout}\n{err}"
    assert "episode 1" in err and "data" in err, err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    # The other episode still packs.
    pack_json(reel_bin, task, 2, "-o", out)
    assert_slice(out, task, 2)


def test_a_task_file_an_import_server_refuses_is_not_packed(reel_bin, tmp_path):
    # Writer bound = reader bound (issue 27): an info.json of 17 MiB reads (the readers take 64
    # MiB) but every import server refuses a slice carrying it (max_meta_bytes, 16 MiB,
    # zip.entry_size). Pack refuses it, naming the file, and writes no zip.
    task = write_task(tmp_path, "big", [EpisodeSpec(1, videos={})], info_overrides={"x_notes": "n" * (17 << 20)})
    out = tmp_path / "out.zip"
    rc, stdout, err = pack(reel_bin, task.path, 1, "-o", out)
    assert rc == 2, f"exit {rc}\n{stdout}\n{err}"
    assert "meta/info.json: zip.entry_size:" in err and "over the 16777216 an import server takes" in err, err
    assert not out.exists()


def test_a_linked_file_is_not_packed(reel_bin, tmp_path):
    # Issue 27: a task's files are its own; a video linked to a file outside the task would
    # put that file's bytes into the slice, and so onto a server. Refused, naming the link.
    task = write_task(tmp_path, "lnk", [EpisodeSpec(1)]).path
    video = task / video_rel(1, "d435_rgb", "mp4")
    outside = tmp_path / "outside.mp4"
    outside.write_bytes(video.read_bytes())
    video.unlink()
    video.symlink_to(outside)
    out = tmp_path / "out.zip"
    rc, stdout, err = pack(reel_bin, task, 1, "-o", out)
    assert rc == 2 and f'the symbolic link "{video_rel(1, "d435_rgb", "mp4")}"' in err, err
    assert not out.exists()


# --------------------------------------------------------------------------- legacy shard


def test_legacy_shard_row_becomes_a_single_row_slice(reel_bin, tmp_path):
    eps = [EpisodeSpec(n, length=2 + n, row="shard") for n in (1, 2, 3)]
    fixture = write_task(tmp_path, "legacy_shard", eps)
    task = fixture.path
    before = snapshot(task)
    out = tmp_path / "s.zip"
    pack_json(reel_bin, task, 2, "-o", out)
    assert_unchanged(before, snapshot(task), "reel pack")
    names = assert_slice(out, task, 2, generated_row=True)
    assert row_rel(2) == "meta/episodes/chunk-000/episode-001.parquet"
    assert row_rel(2) in names and shard_rel(0) not in names
    shard = pq.read_table(task / shard_rel(0))
    with zipfile.ZipFile(out) as zf:
        row = pq.read_table(io.BytesIO(zf.read(row_rel(2))))
    assert row.schema.names == shard.schema.names
    assert [f.type for f in row.schema] == [f.type for f in shard.schema]
    want = [r for r in shard.to_pylist() if r["episode_index"] == 2]
    assert row.to_pylist() == want


def test_chinese_task_and_slot_names(reel_bin, tmp_path):
    name, slot = "D435-裸手_3D手部关键点识别", "头部相机_rgb"
    fixture = write_task(tmp_path / "rec", name, [EpisodeSpec(1, videos={slot: "mp4", "d435_depth": "mkv"})])
    work = tmp_path / "work"
    work.mkdir()
    rc, out, err = pack(reel_bin, fixture.path, 1, cwd=work)
    assert rc == 0, err
    zip_path = work / f"{name}_ep000000.zip"
    assert [p.name for p in work.iterdir()] == [zip_path.name]
    names = assert_slice(zip_path, fixture.path, 1)
    assert video_rel(1, slot, "mp4") in names
    with zipfile.ZipFile(zip_path) as zf:
        for i in zf.infolist():
            if not i.filename.isascii():
                assert i.flag_bits & 0x800, f"{i.filename}: UTF-8 name without the UTF-8 flag"


# --------------------------------------------------------------------------- pre-compression


def ffprobe(path: Path) -> dict:
    proc = subprocess.run(
        ["ffprobe", "-v", "error", "-count_frames", "-show_streams", "-of", "json", str(path)],
        capture_output=True, timeout=120, check=True,
    )
    return json.loads(proc.stdout)["streams"][0]


@needs_ffprobe
@pytest.mark.parametrize("depth", ["hevc12", "ffv1"])
def test_precompress_reencodes_rgb_only(reel_bin, tmp_path, depth):
    task = tmp_path / "pc"
    simulate(reel_bin, task, "--count", 1, *SIM_ARGS, *(["--depth-ffv1"] if depth == "ffv1" else []))
    out = tmp_path / "pc.zip"
    got = pack_json(reel_bin, task, 1, "-o", out, "--precompress", "--crf", 30)
    rgb = rgb_slots(task)
    extracted = tmp_path / "x"
    with zipfile.ZipFile(out) as zf:
        assert [i.filename for i in zf.infolist()] == expected_order(task, 1)
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
        zf.extractall(extracted)
    videos = [e for e in got["entries"] if e["arcname"].startswith("videos/")]
    assert {e["arcname"].split("/")[2] for e in videos} & rgb, "no RGB video to re-encode"
    assert {e["arcname"].split("/")[2] for e in videos} - rgb, "no depth video to keep"
    for e in videos:
        slot = e["arcname"].split("/")[2]
        original = task / e["arcname"]
        copy = extracted / e["arcname"]
        if slot in rgb:
            assert e["recompressed"] is True, e
            st, orig = ffprobe(copy), ffprobe(original)
            assert orig["codec_name"] == "h264"
            assert st["codec_name"] == "hevc" and st["codec_tag_string"] == "hvc1", st
            assert st["pix_fmt"] == "yuv420p"
            assert int(st["nb_read_frames"]) == int(orig["nb_read_frames"]) > 0
            assert (st["width"], st["height"]) == (orig["width"], orig["height"])
            assert st["avg_frame_rate"] == orig["avg_frame_rate"]
        else:
            assert e["recompressed"] is False, e
            assert copy.read_bytes() == original.read_bytes(), f"depth {e['arcname']} was changed"
    for e in got["entries"]:
        if not e["arcname"].startswith("videos/"):
            assert (extracted / e["arcname"]).read_bytes() == (task / e["arcname"]).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pc", "pc.zip", "x"]


def test_precompress_keeps_hevc_rgb_untouched(reel_bin, tmp_path):
    task = tmp_path / "hv"
    simulate(reel_bin, task, "--count", 1, "--codec", "hevc", *SIM_ARGS)
    out = tmp_path / "hv.zip"
    got = pack_json(reel_bin, task, 1, "-o", out, "--precompress")
    assert all(e["recompressed"] is False for e in got["entries"])
    assert_slice(out, task, 1)
