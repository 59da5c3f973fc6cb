"""reel migrate: a v1.0 task (one folder per session) into pooled_episodes_v1.

The v1.0 fixtures are built here with pyarrow, json and the ffmpeg CLI only (fixtures.video_bytes),
from shared/docs/v1.0-layout.md, independently of reel; the expected pooled values are derived
from the same description (one row per frame_index, the frame's first timestamps.json entry and
first sensor row, defaults for a frame a sensor lacks), never from reel's output.

The kill campaigns run REEL_MIGRATE_KILLS rounds of migrate and REEL_RESTORE_KILLS rounds of
--restore (10 each in make test; make soak runs the issue's full campaign, 120 each):
    REEL_MIGRATE_KILLS=120 REEL_RESTORE_KILLS=120 REEL_BIN=$PWD/build/cmake/tools/reel \
        .venv/bin/python -m pytest -q -p no:cacheprovider tests/e2e/test_migrate.py -k kill

Depth PNG16 frames are written by hand here (zlib, the PNG chunk layout) and the encoded .mkv
is decoded both with reel's reader and with PyAV (FFmpeg's own decoder, not reel's code).
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import signal
import struct
import subprocess
import time
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .cli_run import reel, run_measured
from .kill_campaign import kill_rounds, run_killed_after
from .v1_task import FPS, GLOVES, SESSIONS, TASK, make_v1_task, pooled_rel, write_bytes, write_json

KEYS = ("episode_index", "frame_index", "timestamp", "task_index")

# --------------------------------------------------------------------------- what the migration must give


def expected_episodes(v1: Path) -> dict:
    """N -> (session folder, {column: [values]}, {image key: source video path}), from the
    v1.0 files alone."""
    folders = sorted((p for p in v1.iterdir() if (p / "metadata.json").is_file()),
                     key=lambda p: (json.loads((p / "metadata.json").read_text())["episode_index"], p.name))
    out = {}
    for n, s in enumerate(folders, start=1):
        entries = json.loads((s / "timestamps.json").read_text())["timestamps"]
        first = {}
        for e in entries:
            first.setdefault(e["frame_index"], e)
        frames = sorted(first)
        cols = {"episode_index": [n] * len(frames), "frame_index": frames,
                "timestamp": [float(np.float32(first[f]["timestamp"])) for f in frames],
                "task_index": [0] * len(frames), "wall_time": [first[f]["wall_time"] for f in frames]}
        cols["hardware_ns"] = [first[f].get("hardware_ns", 0) for f in frames]  # a key column: 0 when absent
        subs = sorted(p.name for p in (s / "data").iterdir())
        for sub in [x for x in subs if x != "imu"] + [x for x in subs if x == "imu"]:
            t = pq.read_table(next((s / "data" / sub).rglob("*.parquet")))
            rows = {}
            for r, fi in enumerate(t.column("frame_index").to_pylist()):
                rows.setdefault(fi, r)
            for name in t.column_names:
                if name in cols or name == "hardware_ns":
                    continue
                values = t.column(name).to_pylist()
                typ = t.schema.field(name).type
                default = ("connected" if pa.types.is_string(typ) else
                           [] if pa.types.is_list(typ) else [0.0] * typ.list_size)
                cols[name] = [values[rows[f]] if f in rows else default for f in frames]
        videos = {p.stem: p for p in (s / "videos").rglob("*.mp4")}
        if (s / "depth" / "head_depth" / "head_depth.mkv").is_file():  # else a frame sequence, encoded
            videos["head_depth"] = s / "depth" / "head_depth" / "head_depth.mkv"
        out[n] = (s.name, cols, videos)
    return out


def assert_migrated(task: Path, expected: dict, v1: Path):
    """Every column, every frame, every video byte of `task` equals what `expected` derives
    from the v1.0 files at `v1`."""
    info = json.loads((task / "meta" / "info.json").read_text())
    assert info["format"] == "pooled_episodes_v1" and info["codebase_version"] == "v3.0"
    assert info["total_episodes"] == len(expected)
    assert set(info["sensors"]) == set(GLOVES)
    metas = {n: json.loads((v1 / name / "metadata.json").read_text()) for n, (name, _, _) in expected.items()}
    assert info["created_at"] == min(m["created_at"] for m in metas.values())
    assert info["video_extensions"] == {"head_left": "mp4", "head_depth": "mkv", "head_right": "mp4",
                                        "head_left_aux": "mp4"} or set(info["video_extensions"]) == {
        "head_left", "head_depth", "head_right", "head_left_aux"}
    assert info["video_extensions"]["head_depth"] == "mkv"
    assert "head_depth" not in info["cameras"] and info["cameras"]["head_right"]["fps"] == 15
    calibration = {}
    for n, (name, _, _) in sorted(expected.items()):
        for p in sorted((v1 / name / "calibration").glob("*.json")):
            calibration[p.stem] = json.loads(p.read_text())
    assert info["calibration"] == calibration
    for n, (name, cols, videos) in expected.items():
        table = pq.read_table(task / pooled_rel(n, "data"))
        assert sorted(table.column_names) == sorted(cols), (n, table.column_names)
        for c, values in cols.items():
            got = table.column(c).to_pylist()
            if c == "timestamp" or "observation" in c or c == "action":
                np.testing.assert_array_equal(np.array(got, dtype=object), np.array(values, dtype=object), err_msg=f"N={n} {c}")
            else:
                assert got == values, (n, c)
        row = pq.read_table(task / pooled_rel(n, "row")).to_pylist()
        assert len(row) == 1
        row, meta = row[0], metas[n]
        assert row["episode_index"] == n and row["length"] == len(cols["frame_index"])
        assert row["start_frame_index"] == cols["frame_index"][0] and row["end_frame_index"] == cols["frame_index"][-1]
        assert row["created_at"] == meta["created_at"]
        assert json.loads(row["drop_stats"]) == meta["drop_stats"]
        assert json.loads(row["video_codec"]) == meta["video_codec"]
        assert json.loads(row["calibration"]) == {p.stem: json.loads(p.read_text())
                                                  for p in (v1 / name / "calibration").glob("*.json")}
        for slot, src in videos.items():
            ext = src.suffix[1:]
            assert (task / pooled_rel(n, "video", slot, ext)).read_bytes() == src.read_bytes(), (n, slot)


def check_json(reel_bin, task: Path) -> dict:
    proc = subprocess.run([reel_bin, "check", "--json", str(task)], capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def errors(report: dict, allowed=()) -> list:
    return [f for t in report.get("tasks", []) for f in t.get("findings", [])
            if f.get("severity") in ("error", "warning") and f.get("rule") not in allowed]


# --------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def v1_template(tmp_path_factory) -> Path:
    return make_v1_task(tmp_path_factory.mktemp("v1"))


def copy_task(template: Path, where: Path) -> Path:
    dst = where / TASK
    shutil.copytree(template, dst)
    return dst


def test_check_names_the_migrate_command(reel_bin, v1_template):
    report = check_json(reel_bin, v1_template)
    hint = [f for t in report["tasks"] for f in t["findings"] if f["rule"] == "format.unknown"]
    assert hint and "reel migrate" in hint[0]["message"], report


def test_dry_run_writes_nothing(reel_bin, v1_template, tmp_path):
    task = copy_task(v1_template, tmp_path)
    before = sorted(str(p.relative_to(task)) for p in task.rglob("*"))
    out = json.loads(reel(reel_bin, "migrate", "--dry-run", "--json", task).stdout)
    assert [(s["session"], s["episode_index"]) for s in out["sessions"]] == [
        ("pick_000001", 1), ("pick_000002", 2), ("pick_000005", 3)]
    assert sorted(str(p.relative_to(task)) for p in task.rglob("*")) == before


@pytest.mark.parametrize("mode", ["backup", "no-backup", "to"])
def test_round_trip_every_value_and_video_byte(reel_bin, v1_template, tmp_path, mode):
    task = copy_task(v1_template, tmp_path)
    expected = expected_episodes(v1_template)
    args = {"backup": [], "no-backup": ["--no-backup"], "to": ["--to", tmp_path / "pooled"]}[mode]
    out = json.loads(reel(reel_bin, "migrate", "--json", task, *args).stdout)
    dest = tmp_path / "pooled" if mode == "to" else task
    assert out["frames"] == sum(len(c["frame_index"]) for _, c, _ in expected.values())
    reel(reel_bin, "check", dest)  # exit 0: no errors
    assert errors(check_json(reel_bin, dest)) == []
    assert_migrated(dest, expected, v1_template)
    manifest = json.loads((dest / "meta" / ".migrate_manifest.json").read_text())
    assert [(s["session"], s["episode_index"]) for s in manifest["sessions"]] == [
        (name, n) for n, (name, _, _) in sorted(expected.items())]
    leftovers = [p.name for p in dest.iterdir() if p.name.startswith(f"{TASK}_") or p.name.startswith(".reel-")]
    assert leftovers == []
    backups = [p for p in dest.iterdir() if p.name.startswith("_migrate_backup_")]
    if mode == "backup":  # the backup holds every source file, byte for byte
        assert len(backups) == 1
        for src in v1_template.rglob("*"):
            if src.is_file():
                assert (backups[0] / src.relative_to(v1_template)).read_bytes() == src.read_bytes(), src
    else:
        assert backups == []
    if mode == "to":  # the source is left as it was
        for src in v1_template.rglob("*"):
            if src.is_file():
                assert (task / src.relative_to(v1_template)).read_bytes() == src.read_bytes()
    # Idempotent: a second run changes nothing.
    snap = {p: p.stat().st_mtime_ns for p in dest.rglob("*") if p.is_file()}
    again = json.loads(reel(reel_bin, "migrate", "--json", task, *args).stdout)
    assert again["already_pooled"] is True
    assert {p: p.stat().st_mtime_ns for p in dest.rglob("*") if p.is_file()} == snap


def test_python_migrate(reel_mod, reel_bin, v1_template, tmp_path):
    task = copy_task(v1_template, tmp_path)
    plan = reel_mod.migrate(task, dry_run=True)
    assert plan["dry_run"] and [s["episode_index"] for s in plan["sessions"]] == [1, 2, 3]
    out = reel_mod.migrate(task, to=tmp_path / "pooled")
    assert out["frames"] == sum(len(c["frame_index"]) for _, c, _ in expected_episodes(v1_template).values())
    assert_migrated(tmp_path / "pooled", expected_episodes(v1_template), v1_template)
    assert reel_mod.migrate(task, to=tmp_path / "pooled")["already_pooled"] is True
    assert reel_mod.migrate(tmp_path / "pooled")["already_pooled"] is True  # in place on a pooled task: a no-op
    (tmp_path / "empty").mkdir()
    with pytest.raises(Exception, match="not a dataset"):
        reel_mod.migrate(tmp_path / "empty")


# --------------------------------------------------------------------------- depth frame sequences


def png16(mm: np.ndarray) -> bytes:
    """A 16-bit gray PNG of `mm` (H, W) uint16, written by hand: signature, IHDR (bit depth 16,
    colour type 0), one zlib IDAT of filter-0 rows of big-endian samples, IEND."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    h, w = mm.shape
    raw = b"".join(b"\x00" + mm[y].astype(">u2").tobytes() for y in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def png8(h: int, w: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + bytes(w) for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def depth_frames(n: int, frames: int, seed: int) -> np.ndarray:
    """(frames, 24, 32) uint16 millimetres, the full range included (0 = no depth, 65535)."""
    mm = np.random.default_rng(seed).integers(0, 65536, size=(frames, 24, 32), dtype=np.uint16)
    mm[0, 0, 0], mm[0, 0, 1] = 0, 65535
    return mm


def make_depth_sequences(task: Path) -> dict:
    """Replaces each session's head_depth.mkv with a frame sequence: PNG16 in pick_000001 and
    pick_000005, raw little-endian .bin (v1.0.11) in pick_000002. Returns N -> the frames."""
    out = {}
    for n, (idx, frames, _) in enumerate(SESSIONS, start=1):
        d = task / f"{TASK}_{idx:06d}" / "depth" / "head_depth"
        (d / "head_depth.mkv").unlink()
        mm = depth_frames(n, frames, 100 + n)
        for k in range(frames):
            if idx == 2:
                write_bytes(d / f"{k + 1:06d}.bin", mm[k].astype("<u2").tobytes())
            else:
                write_bytes(d / f"{k + 1:06d}.png", png16(mm[k]))
        out[n] = mm
    return out


def decode_ffv1_independently(path: Path) -> np.ndarray:
    import av  # PyAV: FFmpeg's decoder, not reel's reader
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        assert stream.codec_context.name == "ffv1", stream.codec_context.name
        return np.stack([f.to_ndarray(format="gray16le") for f in c.decode(stream)])


@pytest.mark.parametrize("mode", ["backup", "no-backup"])
def test_depth_sequences_become_lossless_ffv1(reel_mod, reel_bin, v1_template, tmp_path, mode):
    task = copy_task(v1_template, tmp_path)
    depth = make_depth_sequences(task)
    source = tmp_path / "source"
    shutil.copytree(task, source)
    expected = expected_episodes(source)
    reel(reel_bin, "migrate", task, *(["--no-backup"] if mode == "no-backup" else []))
    assert errors(check_json(reel_bin, task)) == []
    assert_migrated(task, expected, source)
    info = json.loads((task / "meta" / "info.json").read_text())
    assert info["video_extensions"]["head_depth"] == "mkv" and "head_depth" not in info["cameras"]
    opened = reel_mod.open(task)
    for n, mm in depth.items():
        mkv = task / pooled_rel(n, "video", "head_depth", "mkv")
        np.testing.assert_array_equal(decode_ffv1_independently(mkv), mm, err_msg=f"N={n} (PyAV)")
        got = opened.depth(n, "head_depth", list(range(len(mm))))
        np.testing.assert_array_equal(got, mm, err_msg=f"N={n} (reel)")
    backups = [p for p in task.iterdir() if p.name.startswith("_migrate_backup_")]
    if mode == "backup":  # the frames themselves stay in the backup
        assert (backups[0] / f"{TASK}_000001" / "depth" / "head_depth" / "000001.png").is_file()
    else:
        assert backups == [] and not list(task.glob(f"{TASK}_*"))


def _drop_frame(d: Path):
    (d / "000003.png").unlink()


def _extra_frame(d: Path):
    write_bytes(d / "000007.png", png16(np.zeros((24, 32), np.uint16)))


def _odd_size(d: Path):
    write_bytes(d / "000002.png", png16(np.zeros((24, 31), np.uint16)))


def _eight_bit(d: Path):
    write_bytes(d / "000004.png", png8(24, 32))


def _short_bin(d: Path):
    for p in d.glob("*.png"):
        p.unlink()
    for k in range(6):
        write_bytes(d / f"{k + 1:06d}.bin", bytes(24 * 32 * 2 - (2 if k == 4 else 0)))


def _not_png(d: Path):
    write_bytes(d / "000005.png", b"\x89PNG not really")


def _truncated_interlaced(d: Path):
    """Issue 27, finding 5: an interlaced PNG16 whose image data stops after its first passes,
    in a well-formed zlib stream; FFmpeg's decoder leaves 720 of its 768 pixels unwritten."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = b""
    for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)):
        raw += b"".join(b"\x00" + bytes(2 * len(range(x0, 32, dx))) for _ in range(y0, 24, dy))
    write_bytes(d / "000005.png", b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 32, 24, 16, 0, 0, 0, 1)) +
           chunk(b"IDAT", zlib.compress(raw[:len(raw) // 8])) + chunk(b"IEND", b""))


@pytest.mark.parametrize("damage,message", [
    (_drop_frame, "000003.png: missing; the session has 6 frames"),
    (_extra_frame, "000007.png: depth frame number 7 is outside 1..6"),
    (_odd_size, "000002.png: png.size: 31x24; the depth slot head_depth is 32x24"),
    (_eight_bit, "000004.png: png.pixel_format: gray"),
    (_short_bin, "000005.bin: depth.bin.size: 1534 bytes"),
    (_not_png, "000005.png"),
    (_truncated_interlaced, "000005.png: png.data: the image data inflates to"),
])
def test_a_bad_depth_sequence_is_refused_naming_the_file(reel_bin, v1_template, tmp_path, damage, message):
    task = copy_task(v1_template, tmp_path)
    make_depth_sequences(task)
    damage(task / f"{TASK}_000001" / "depth" / "head_depth")
    before = {p: p.read_bytes() for p in task.rglob("*") if p.is_file()}
    proc = reel(reel_bin, "migrate", task, ok=2)
    assert message in proc.stderr and f"{TASK}_000001" in proc.stderr, proc.stderr
    after = {p: p.read_bytes() for p in task.rglob("*") if p.is_file() and ".lock" not in p.name}
    assert after == before and not (task / ".reel-migrate").exists()


# --------------------------------------------------------------------------- keypoints mirror


def make_mirror(where: Path) -> Path:
    """keypoints_output/pick/<session>/ beside the task at where/pick (contract §10 files)."""
    mirror = where / "keypoints_output" / TASK
    for k, (idx, _, _) in enumerate(SESSIONS):
        s = mirror / f"{TASK}_{idx:06d}"
        write_bytes(s / "hand_pose" / "chunk-000.parquet", f"2d {idx}".encode())
        write_bytes(s / "hand_pose_3d" / "chunk-000.parquet", f"3d {idx}".encode())
        write_bytes(s / "auto_labels" / "auto_labels.parquet", f"labels {idx}".encode())
    return mirror


def tree(root: Path) -> dict:
    """Every file (sha256) and folder under root, by relative path: a tree hash."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel + "/" if p.is_dir() else rel] = None if p.is_dir() else _sha(p)
    return out


def assert_rekeyed(mirror: Path, before: dict):
    """Each <session>/ of `before` (a tree of the mirror) now at episode_{N:06d}/."""
    names = {f"{TASK}_{idx:06d}": f"episode_{n:06d}" for n, (idx, _, _) in enumerate(SESSIONS, start=1)}
    want = {}
    for rel, sha in before.items():
        head, _, rest = rel.partition("/")
        want[names.get(head, head) + ("/" + rest if rest or rel.endswith("/") else "")] = sha
    assert tree(mirror) == want


def test_keypoints_mirror_rekeyed_and_a_rerun_is_a_noop(reel_bin, v1_template, tmp_path):
    task = copy_task(v1_template, tmp_path)
    mirror = make_mirror(tmp_path)
    before = tree(mirror)
    plan = json.loads(reel(reel_bin, "migrate", "--dry-run", "--json", task).stdout)
    assert plan["keypoints"] == str(mirror) and plan["keypoints_moved"] == 3 and tree(mirror) == before
    out = json.loads(reel(reel_bin, "migrate", "--json", task).stdout)
    assert out["keypoints_moved"] == 3
    assert_rekeyed(mirror, before)
    manifest = json.loads((task / "meta" / ".migrate_manifest.json").read_text())
    assert manifest["keypoints"]["moves"] == [{"session": f"{TASK}_{idx:06d}", "episode": f"episode_{n:06d}"}
                                              for n, (idx, _, _) in enumerate(SESSIONS, start=1)]
    again = json.loads(reel(reel_bin, "migrate", "--json", task).stdout)
    assert again["already_pooled"] and again["keypoints_moved"] == 0
    assert_rekeyed(mirror, before)


def test_keypoints_explicit_folder_and_to_leaves_the_mirror(reel_bin, v1_template, tmp_path):
    task = copy_task(v1_template, tmp_path / "a")
    mirror = make_mirror(tmp_path / "elsewhere")
    before = tree(mirror)
    to = tmp_path / "pooled"
    proc = reel(reel_bin, "migrate", task, "--to", to, "--keypoints", mirror, ok=2)
    assert "--keypoints" in proc.stderr
    reel(reel_bin, "migrate", task, "--keypoints", tmp_path / "missing", ok=2)
    out = json.loads(reel(reel_bin, "migrate", "--json", task, "--keypoints", mirror).stdout)
    assert out["keypoints"] == str(mirror) and out["keypoints_moved"] == 3
    assert_rekeyed(mirror, before)


def test_keypoints_both_present_is_a_clear_error_after_the_commit(reel_bin, v1_template, tmp_path):
    task = copy_task(v1_template, tmp_path)
    mirror = make_mirror(tmp_path)
    write_bytes(mirror / "episode_000002" / "hand_pose" / "chunk-000.parquet", b"someone else's")
    proc = reel(reel_bin, "migrate", task, ok=2)
    assert f"both {mirror / (TASK + '_000002')} and {mirror / 'episode_000002'} exist" in proc.stderr, proc.stderr
    assert json.loads((task / "meta" / "info.json").read_text())["format"] == "pooled_episodes_v1"
    assert (mirror / "episode_000001").is_dir() and (mirror / f"{TASK}_000002").is_dir()
    shutil.rmtree(mirror / "episode_000002")
    out = json.loads(reel(reel_bin, "migrate", "--json", task).stdout)  # the re-run finishes the moves
    assert out["already_pooled"] and out["keypoints_moved"] == 2
    assert sorted(p.name for p in mirror.iterdir()) == ["episode_000001", "episode_000002", "episode_000003"]


# --------------------------------------------------------------------------- restore


def test_restore_gives_the_v1_task_byte_for_byte(reel_mod, reel_bin, v1_template, tmp_path):
    task = copy_task(v1_template, tmp_path)
    make_depth_sequences(task)
    mirror = make_mirror(tmp_path)
    original, original_mirror = tree(task), tree(mirror)
    reel(reel_bin, "migrate", task)
    assert tree(task) != original
    plan = json.loads(reel(reel_bin, "migrate", "--restore", "--dry-run", "--json", task).stdout)
    assert plan["restore"] and [s["session"] for s in plan["sessions"]] == [f"{TASK}_{i:06d}" for i, _, _ in SESSIONS]
    assert (task / "meta" / "info.json").is_file()
    out = json.loads(reel(reel_bin, "migrate", "--restore", "--json", task).stdout)
    assert out["restore"] and out["keypoints_moved"] == 3 and len(out["sessions"]) == 3
    assert tree(task) == original
    assert tree(mirror) == original_mirror
    assert check_json(reel_bin, task)["tasks"][0]["format"] == "legacy_v1_0"
    again = json.loads(reel(reel_bin, "migrate", "--restore", "--json", task).stdout)
    assert again["nothing_to_restore"] and tree(task) == original
    # Python, and a second migrate -> restore cycle of the restored task.
    assert reel_mod.migrate(task)["frames"] > 0
    assert reel_mod.migrate(task, restore=True)["restore"]
    assert tree(task) == original and tree(mirror) == original_mirror


def test_restore_refusals_name_the_reason(reel_bin, v1_template, tmp_path):
    nb = copy_task(v1_template, tmp_path / "nb")
    reel(reel_bin, "migrate", nb, "--no-backup")
    before = tree(nb)
    assert "--no-backup" in reel(reel_bin, "migrate", "--restore", nb, ok=2).stderr
    assert tree(nb) == before
    src = copy_task(v1_template, tmp_path / "src")
    reel(reel_bin, "migrate", src, "--to", tmp_path / "pooled")
    assert "--to" in reel(reel_bin, "migrate", "--restore", tmp_path / "pooled", ok=2).stderr
    task = copy_task(v1_template, tmp_path / "bk")
    reel(reel_bin, "migrate", task)
    backup = next(task.glob("_migrate_backup_*"))
    hidden = tmp_path / "hidden"
    backup.rename(hidden)
    assert f"{backup}: missing" in reel(reel_bin, "migrate", "--restore", task, ok=2).stderr
    hidden.rename(backup)
    extra = task / pooled_rel(4, "data")
    shutil.copy(task / pooled_rel(3, "data"), extra)
    assert "not created by the migration" in reel(reel_bin, "migrate", "--restore", task, ok=2).stderr
    extra.unlink()
    # --keypoints with --restore names the mirror when it is not beside the task (the
    # manifest's own path is never followed: issue 27 finding 3); one that is missing is refused.
    assert "keypoints" in reel(reel_bin, "migrate", "--restore", "--keypoints", tmp_path / "no-such-mirror", task,
                               ok=2).stderr
    (task / "meta" / ".migrate_manifest.json").unlink()
    assert ".migrate_manifest.json: missing" in reel(reel_bin, "migrate", "--restore", task, ok=2).stderr


def test_a_broken_session_fails_before_anything_is_published(reel_bin, v1_template, tmp_path):
    task = copy_task(v1_template, tmp_path)
    broken = task / f"{TASK}_000005" / "data" / "left_glove" / "chunk-0000" / "chunk_000000.parquet"
    broken.write_bytes(b"not a parquet file")
    before = {p: p.read_bytes() for p in task.rglob("*") if p.is_file()}
    proc = reel(reel_bin, "migrate", task, ok=2)
    assert "chunk_000000.parquet" in proc.stderr
    after = {p: p.read_bytes() for p in task.rglob("*") if p.is_file() and p.name != ".lock"}
    assert after == before and not (task / ".reel-migrate").exists()
    assert check_json(reel_bin, task)["tasks"][0]["format"] == "legacy_v1_0"



def test_a_file_the_migration_would_replace_is_refused_and_kept(reel_bin, v1_template, tmp_path):
    # Found by fuzz_migrate (issue 26 campaign): a v1.0 folder holding a stray
    # data/chunk-000/episode-000.parquet had it replaced by the migration, and --restore then
    # deleted it. Now nothing is published and the file is kept, byte for byte.
    task = copy_task(v1_template, tmp_path)
    stray = task / "data" / "chunk-000" / "episode-000.parquet"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"the user's own bytes")
    before = {p: p.read_bytes() for p in task.rglob("*") if p.is_file()}
    proc = reel(reel_bin, "migrate", task, ok=2)
    assert "data/chunk-000/episode-000.parquet" in proc.stderr and "would replace" in proc.stderr, proc.stderr
    after = {p: p.read_bytes() for p in task.rglob("*") if p.is_file() and p.name != ".lock"}
    assert after == before and not (task / ".reel-migrate").exists()
    stray.unlink()
    reel(reel_bin, "migrate", task)  # once it is moved away, the migration goes through

# --------------------------------------------------------------------------- kill campaign


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _state_after_kill(reel_bin, task: Path, template: Path, to: Path | None):
    """The task a reader sees after a kill: the v1.0 task exactly (old) or a pooled task
    whose episodes are all there (new). Returns "old" or "new"."""
    dest = to or task
    journal = dest / "meta" / ".commit-task.json"
    info = dest / "meta" / "info.json"
    if info.is_file():
        assert json.loads(info.read_text())["format"] == "pooled_episodes_v1"
        # Every episode complete; session folders may wait for the re-run (empty ones, or the
        # rest of a journal being rolled forward).
        report = check_json(reel_bin, dest)
        bad = errors(report, allowed=("layout.legacy_leftover", "layout.pending_commit"))
        assert bad == [], bad
        return "new"
    renamed = {}
    if journal.is_file():  # decided, not yet rolled forward: a file may be at its journaled place
        renamed = {src: dst for src, dst in json.loads(journal.read_text())["renames"]}
    if to is None:
        for src in template.rglob("*"):
            if not src.is_file():
                continue
            rel = str(src.relative_to(template))
            here = task / rel
            if here.is_file():
                assert _sha(here) == _sha(src), rel
            else:
                assert rel in renamed and _sha(task / renamed[rel]) == _sha(src), f"{rel} is gone, not journaled"
        report = check_json(reel_bin, task)
        assert report["tasks"][0]["format"] == "legacy_v1_0", report
    else:
        for src in template.rglob("*"):
            if src.is_file():
                assert _sha(task / src.relative_to(template)) == _sha(src)
    return "old"


def test_kill_campaign_old_or_new_then_rerun_finishes(reel_bin, v1_template, tmp_path):
    rounds = kill_rounds("REEL_MIGRATE_KILLS", quick=10, soak=120)
    expected = expected_episodes(v1_template)
    rng = random.Random(17)
    # How long a whole migration takes here: kills land uniformly over it.
    probe = copy_task(v1_template, tmp_path / "probe")
    start = time.monotonic()
    reel(reel_bin, "migrate", probe)
    full = time.monotonic() - start
    outcomes = {"old": 0, "new": 0, "finished": 0}
    for r in range(rounds):
        where = tmp_path / f"round{r}"
        task = copy_task(v1_template, where)
        mirror = make_mirror(where)  # re-keyed after the commit (in place), left as it is with --to
        mirror_before = tree(mirror)
        mode = ("backup", "no-backup", "to")[r % 3]
        to = where / "pooled" if mode == "to" else None
        args = {"backup": [], "no-backup": ["--no-backup"], "to": ["--to", to]}[mode]
        argv = [reel_bin, "migrate", str(task), *map(str, args)]
        rc, _ = run_killed_after(argv, rng.uniform(0.0, full * 1.1))
        if rc == 0:
            outcomes["finished"] += 1
        else:
            assert rc == -signal.SIGKILL, f"round {r}: exit {rc}"
            outcomes[_state_after_kill(reel_bin, task, v1_template, to)] += 1
        reel(reel_bin, "migrate", task, *args)
        dest = to or task
        assert errors(check_json(reel_bin, dest)) == [], f"round {r} ({mode})"
        assert_migrated(dest, expected, v1_template)
        assert not (dest / ".reel-migrate").exists()
        if to is None:
            assert_rekeyed(mirror, mirror_before)
        else:
            assert tree(mirror) == mirror_before
        shutil.rmtree(where)
    print(f"\nmigrate kill campaign: {rounds} rounds, {full:.2f} s per migration: {outcomes}")


def _restore_state_after_kill(reel_bin, task: Path, template: Path) -> str:
    """After a killed --restore: the migrated task (pooled, every episode complete; session
    folders may be back already) or the v1.0 task with every source file in place."""
    info = task / "meta" / "info.json"
    if info.is_file():
        assert json.loads(info.read_text())["format"] == "pooled_episodes_v1"
        bad = errors(check_json(reel_bin, task), allowed=("layout.legacy_leftover", "layout.pending_commit"))
        assert bad == [], bad
        return "migrated"
    for src in template.rglob("*"):  # the journal renames every session file before any removal
        if src.is_file():
            assert _sha(task / src.relative_to(template)) == _sha(src), src
    assert check_json(reel_bin, task)["tasks"][0]["format"] == "legacy_v1_0"
    return "v1.0"


def test_restore_kill_campaign_migrated_or_v1_then_rerun_finishes(reel_bin, v1_template, tmp_path):
    rounds = kill_rounds("REEL_RESTORE_KILLS", quick=10, soak=120)
    rng = random.Random(23)
    original = tree(v1_template)
    probe = copy_task(v1_template, tmp_path / "probe")
    reel(reel_bin, "migrate", probe)
    start = time.monotonic()
    reel(reel_bin, "migrate", "--restore", probe)
    full = time.monotonic() - start
    assert tree(probe) == original
    outcomes = {"migrated": 0, "v1.0": 0, "finished": 0}
    for r in range(rounds):
        where = tmp_path / f"round{r}"
        task = copy_task(v1_template, where)
        mirror = make_mirror(where)
        mirror_before = tree(mirror)
        reel(reel_bin, "migrate", task)
        rc, _ = run_killed_after([reel_bin, "migrate", "--restore", str(task)], rng.uniform(0.0, 1.5 * full))
        if rc == 0:
            outcomes["finished"] += 1
        else:
            assert rc == -signal.SIGKILL, f"round {r}: exit {rc}"
            outcomes[_restore_state_after_kill(reel_bin, task, v1_template)] += 1
        reel(reel_bin, "migrate", "--restore", task)
        assert tree(task) == original, f"round {r}"
        assert tree(mirror) == mirror_before, f"round {r}"
        shutil.rmtree(where)
    print(f"\nrestore kill campaign: {rounds} rounds, {full:.2f} s per restore: {outcomes}")


# --------------------------------------------------------------------------- confinement (issue 27)


def _outside_tree(tmp_path: Path) -> Path:
    outside = tmp_path / "elsewhere"
    write_bytes(outside / "victim" / "precious.txt", b"the user's own bytes")
    write_bytes(outside / "notes.txt", b"more of them")
    return outside


@pytest.mark.parametrize("flags", [(), ("--no-backup",)], ids=["backup", "no-backup"])
def test_a_linked_folder_inside_a_session_is_refused_and_its_target_kept(reel_bin, v1_template, tmp_path, flags):
    # Issue 27 finding 2: the session walk followed a symlinked folder; --no-backup deleted
    # everything under the link's target, the backup moved it into the task.
    task = copy_task(v1_template, tmp_path / "a")
    outside = _outside_tree(tmp_path)
    want = tree(outside)
    (task / f"{TASK}_000001" / "extra").symlink_to(outside, target_is_directory=True)
    before = {p: p.read_bytes() for p in task.rglob("*") if p.is_file() and not p.is_symlink()
              and "extra" not in p.parts}
    proc = reel(reel_bin, "migrate", task, *flags, ok=2)
    assert f"{TASK}_000001/extra" in proc.stderr and "symbolic link" in proc.stderr, proc.stderr
    assert tree(outside) == want
    after = {p: p.read_bytes() for p in task.rglob("*") if p.is_file() and not p.is_symlink()
             and "extra" not in p.parts and p.name != ".lock"}
    assert after == before and not (task / ".reel-migrate").exists()


def test_a_session_folder_that_is_a_link_is_refused(reel_bin, v1_template, tmp_path):
    task = copy_task(v1_template, tmp_path / "a")
    moved = tmp_path / "moved_session"
    shutil.move(str(task / f"{TASK}_000002"), moved)
    (task / f"{TASK}_000002").symlink_to(moved, target_is_directory=True)
    want = tree(moved)
    proc = reel(reel_bin, "migrate", task, "--no-backup", ok=2)
    assert f"{TASK}_000002" in proc.stderr and "symbolic link" in proc.stderr, proc.stderr
    assert tree(moved) == want


@pytest.mark.parametrize("command", [("migrate",), ("migrate", "--restore")], ids=["rerun", "restore"])
def test_a_forged_manifest_moves_no_folder_outside_the_mirror(reel_bin, v1_template, tmp_path, command):
    # Issue 27 finding 3: the manifest's keypoints mirror was used as given, so a no-op
    # migrate (or --restore) renamed a folder anywhere on disk. The mirror is now found from
    # where the task is; the manifest's path is not followed.
    task = copy_task(v1_template, tmp_path / "a")
    reel(reel_bin, "migrate", task)
    outside = _outside_tree(tmp_path)
    want = tree(outside)
    manifest_path = task / "meta" / ".migrate_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["keypoints"] = {"mirror": str(outside), "moves": [{"session": "victim", "episode": "episode_000001"}]}
    manifest_path.write_text(json.dumps(manifest))
    proc = reel(reel_bin, *command, task)
    assert tree(outside) == want
    assert "nothing moved" in proc.stderr or "nothing moved" in proc.stdout, (proc.stdout, proc.stderr)


def test_a_linked_video_file_is_refused_and_its_target_kept(reel_bin, v1_template, tmp_path):
    # Issue 27 low finding: a session's video that is a link to a file elsewhere dangled after
    # --no-backup (the link was moved into the pooled task, its target's folder emptied).
    task = copy_task(v1_template, tmp_path / "a")
    outside = _outside_tree(tmp_path)
    video = task / f"{TASK}_000002" / "videos" / "head_left" / "chunk-0000" / "head_left.mp4"
    shutil.move(str(video), outside / "head_left.mp4")
    video.symlink_to(outside / "head_left.mp4")
    want = tree(outside)
    before = tree(task)
    proc = reel(reel_bin, "migrate", task, "--no-backup", ok=2)
    assert f"{video}: is a symbolic link" in proc.stderr and "nothing was changed" in proc.stderr, proc.stderr
    assert tree(outside) == want
    assert {k: v for k, v in tree(task).items() if not k.startswith("meta")} == before
    assert video.is_symlink() and not (task / ".reel-migrate").exists()


def test_a_linked_calibration_file_is_refused_not_embedded(reel_bin, v1_template, tmp_path):
    # Issue 27 low finding: calibration/<stem>.json linking to a file outside the task was
    # read and embedded into info.json and the episodes row.
    task = copy_task(v1_template, tmp_path / "a")
    secret = tmp_path / "elsewhere" / "secret.json"
    write_json(secret, {"token": "the user's own bytes"})
    link = task / f"{TASK}_000005" / "calibration" / "leak.json"
    link.symlink_to(secret)
    before = tree(task)
    proc = reel(reel_bin, "migrate", task, "--to", tmp_path / "pooled", ok=2)
    assert f"{link}: is a symbolic link" in proc.stderr and "nothing was changed" in proc.stderr, proc.stderr
    assert json.loads(secret.read_text()) == {"token": "the user's own bytes"}
    assert tree(task) == before
    assert not (tmp_path / "pooled" / "meta" / "info.json").exists()
    assert not list((tmp_path / "pooled").rglob("*.parquet"))


# --------------------------------------------------------------------------- issue 27: what migrate publishes passes check


def _edit_json(path: Path, edit):
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


def _entries(session: str, edit):
    return lambda task: _edit_json(task / session / "timestamps.json", lambda d: edit(d["timestamps"]))


def _meta(session: str, edit):
    return lambda task: _edit_json(task / session / "metadata.json", edit)


def _shift(es):
    for e in es:
        e["frame_index"] += 1


def _set(es, frame, key, value, nth=0):
    [e for e in es if e["frame_index"] == frame][nth][key] = value


MONO, STEREO = f"{TASK}_000002", f"{TASK}_000001"  # 5 frames, one entry each; 6 frames, two each


@pytest.mark.parametrize("damage,where,message", [
    (_entries(MONO, lambda es: es.pop(3)), f"{MONO}/timestamps.json",
     "frame_index 4 follows 2: a frame is missing (check: data.frame_index)"),
    (_entries(MONO, _shift), f"{MONO}/timestamps.json",
     "the first frame_index is 1: frames are numbered from 0 (check: data.frame_index)"),
    (_entries(MONO, lambda es: _set(es, 0, "frame_index", -1)), f"{MONO}/timestamps.json",
     "the first frame_index is -1: frames are numbered from 0 (check: data.frame_index)"),
    (_entries(STEREO, lambda es: es.insert(5, dict(es[4]))), f"{STEREO}/timestamps.json",
     "frame_index 2 has 3 entries; a frame has one, or two on a stereo session (left and right eye) "
     "(check: data.frame_index)"),
    (_entries(MONO, lambda es: _set(es, 4, "timestamp", 1e39)), f"{MONO}/timestamps.json",
     "frame_index 4: timestamp 1e+39 is not a finite float32 (the timestamp column's type) (check: data.time_order)"),
    (_entries(MONO, lambda es: _set(es, 3, "timestamp", 0.01)), f"{MONO}/timestamps.json",
     "frame_index 3: timestamp 0.01 is less than frame 2's 0.06666666666666667; timestamps never decrease "
     "(check: data.time_order)"),
    # The kept entry (the left eye's) is the one checked.
    (_entries(STEREO, lambda es: _set(es, 4, "wall_time", 1_700_000_000.0)), f"{STEREO}/timestamps.json",
     "frame_index 4: wall_time 1700000000.0 is less than frame 3's 1700000000.1; wall_time never decreases "
     "(check: data.time_order)"),
    (_entries(MONO, lambda es: _set(es, 2, "wall_time", float("nan"))), f"{MONO}/timestamps.json",
     "malformed JSON"),
    (_meta(f"{TASK}_000005", lambda m: m.update(fps=1e-300)), f"{TASK}_000005/metadata.json",
     "fps 1e-300 is not a frame rate (reel migrate takes 0.1 to 10000.0 frames per second)"),
    (_meta(STEREO, lambda m: m["cameras"]["head_right"].update(fps=0)), f"{STEREO}/metadata.json",
     "cameras.head_right: fps 0.0 is not a frame rate"),
], ids=["dropped-frame", "first-frame-1", "negative-frame", "three-entries", "float32-overflow",
        "timestamp-decreases", "wall-time-decreases", "nan", "fps-1e-300", "camera-fps-0"])
def test_a_session_check_would_refuse_is_refused_before_anything_is_staged(reel_bin, v1_template, tmp_path,
                                                                           damage, where, message):
    # Issue 27 finding 4: migrate published, exit 0, tasks its own `reel check` refuses
    # (data.frame_index, data.time_order, episodes.length), and took fps 1e-300.
    task = copy_task(v1_template, tmp_path)
    damage(task)
    before = tree(task)
    proc = reel(reel_bin, "migrate", task, ok=2)
    assert f"{task / where}: {message}" in proc.stderr, proc.stderr
    assert tree(task) == before  # nothing staged either: the lock folder too is gone
    dry = reel(reel_bin, "migrate", "--dry-run", task, ok=2)  # the plan reads every session
    assert message in dry.stderr, dry.stderr


def test_a_stereo_frame_with_both_eyes_and_a_mono_repeat_migrate(reel_bin, v1_template, tmp_path):
    # What finding 4's rule keeps: two entries of one frame_index (the first wins), in any session.
    task = copy_task(v1_template, tmp_path)
    _entries(MONO, lambda es: es.insert(2, dict(es[1], wall_time=es[1]["wall_time"] + 0.001)))(task)
    reel(reel_bin, "migrate", task, "--to", tmp_path / "pooled")
    assert errors(check_json(reel_bin, tmp_path / "pooled")) == []
    table = pq.read_table(tmp_path / "pooled" / pooled_rel(2, "data"))
    assert table.column("frame_index").to_pylist() == [0, 1, 2, 3, 4]
    assert table.column("wall_time").to_pylist() == [1_700_000_100.0 + f / FPS for f in range(5)]


# --------------------------------------------------------------------------- issue 27: a stale staging


def _leave_a_staging(reel_bin, task: Path, tmp_path: Path):
    """A staging left in the task, as a killed or failed run leaves it: here the publish is
    refused because videos/ is a link (no commit writes through one), after ready.json was
    written. (The stale staging a kill leaves complete, then published over the user's edits:
    migrate_session_test.cc, MigrateStaging, made by a file system failing the publish.)"""
    elsewhere = tmp_path / "elsewhere_videos"
    elsewhere.mkdir()
    (task / "videos").symlink_to(elsewhere, target_is_directory=True)
    proc = reel(reel_bin, "migrate", task, ok=2)
    assert "symbolic link" in proc.stderr, proc.stderr
    (task / "videos").unlink()
    assert (task / ".reel-migrate" / "ready.json").is_file() and not (task / "meta" / "info.json").exists()


def test_restore_removes_a_staging_that_was_never_published(reel_bin, v1_template, tmp_path):
    # Issue 27 finding 7: --restore said "nothing to restore" and left .reel-migrate/.
    task = copy_task(v1_template, tmp_path)
    _leave_a_staging(reel_bin, task, tmp_path)
    dry = json.loads(reel(reel_bin, "migrate", "--restore", "--dry-run", "--json", task).stdout)
    assert dry["nothing_to_restore"] and (task / ".reel-migrate").is_dir()
    assert dry["warnings"] == [f"{task / '.reel-migrate'}: a staging an interrupted reel migrate left (not part of "
                               "the task); --restore removes it"]
    out = json.loads(reel(reel_bin, "migrate", "--restore", "--json", task).stdout)
    assert out["nothing_to_restore"]
    assert out["warnings"] == [f"{task / '.reel-migrate'}: a staging an interrupted reel migrate left (not part of "
                               "the task); removed"]
    def files(t):  # without the refused publish's empty data/
        return {k: v for k, v in tree(t).items() if v is not None}

    assert files(task) == files(v1_template) and not (task / ".reel-migrate").exists()


# --------------------------------------------------------------------------- issue 27: memory


def _big_v1_task(root: Path, meta_zeros: int, frames: int) -> Path:
    """Three sessions without sensors or videos; each metadata.json carries a key reel does not
    read holding `meta_zeros` zeros (2 bytes each), and the first session's timestamps.json has
    `frames` entries (stereo-like: with hardware_ns). Written as bytes: fast."""
    task = root / TASK
    for k, idx in enumerate((1, 2, 3)):
        s = task / f"{TASK}_{idx:06d}"
        head = json.dumps({"format": "egodata", "format_version": "1.0", "episode_index": idx, "fps": FPS,
                           "task_name": TASK, "created_at": 1_700_000_000.0 + k, "drop_stats": {"queue": k}})
        write_bytes(s / "metadata.json", head[:-1].encode() + b', "debug_trace": [' + b"0," * meta_zeros + b"0]}")
        n = frames if k == 0 else 3
        body = b",\n".join(b'{"frame_index": %d, "timestamp": %r, "wall_time": %r, "hardware_ns": %d}'
                            % (f, f / FPS, 1.7e9 + f / FPS, 10**9 * f) for f in range(n))
        write_bytes(s / "timestamps.json", b'{"timestamps": [' + body + b'], "total_frames": %d}' % n)
    return task


def test_migrate_holds_one_sessions_big_json_at_a_time(reel_bin, tmp_path):
    # Issue 27 finding 13: 3 sessions x 200 MB metadata.json took 6.4 GB (every session's
    # metadata held at once), one 196 MB timestamps.json 8.5 GB (a document of the whole file).
    # Here 3 x 15 MB of metadata and a 1M-frame timestamps.json of 110 MB: 1245 MiB before,
    # 330 MiB after (metadata keys reel does not read are never built, one session's metadata
    # at a time, timestamps.json parsed entry by entry, a column of defaults one array).
    task = _big_v1_task(tmp_path, meta_zeros=8_000_000, frames=1_000_000)
    rc, out, err, rss = run_measured([reel_bin, "migrate", str(task), "--to", str(tmp_path / "pooled"), "--json"],
                                     tmp_path)
    assert rc == 0, err
    assert json.loads(out)["frames"] == 1_000_006
    assert rss < 640 << 20, f"migrate peaked at {rss / 2**20:.0f} MiB"
    table = pq.read_table(tmp_path / "pooled" / pooled_rel(1, "data"), columns=["frame_index", "action"])
    assert table.num_rows == 1_000_000 and table.column("frame_index")[-1].as_py() == 999_999
    assert table.column("action")[-1].as_py() == [0.0]
