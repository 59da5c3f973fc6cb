#!/usr/bin/env python3
"""Writes the seed corpora fuzz/corpus/<name>/ from the e2e test fixtures (and, with
--reel, from tasks recorded by `reel simulate` and slices made by `reel pack`).

Run from the repository root with the project venv:
    .venv/bin/python fuzz/make_seeds.py [--reel build/cmake/tools/reel]
Seeds are small (tiny videos, 3-6 rows); the whole tree stays well under 5 MB. The
"tree" format packs a directory as parts "<relative path>\\n<bytes>" joined by SEP
(fuzz/harness_util.h UnpackTree). fuzz_episode_index's seeds are not written here: they are
the index reel writes for that harness's fixed task (REEL_FUZZ_WRITE_SEEDS, fuzz/fuzz_episode_index.cc).
"""
import argparse
import hashlib
import json
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from tests.e2e import fixtures as fx  # noqa: E402
from tests.e2e import test_keypoints as kp  # noqa: E402
from tests.e2e import test_migrate as mg  # noqa: E402
from tests.e2e.fixtures import EpisodeSpec, ForceMatrixSpec  # noqa: E402

SEP = b"\n#%REEL-FILE%#\n"
OUT = REPO / "fuzz" / "corpus"
MAX_SEED = 256 * 1024  # bytes; larger seeds are skipped
ONLY: set = set()  # --only: the corpora written (empty: all)


def put(name: str, data: bytes) -> None:
    if ONLY and name not in ONLY:
        return
    if len(data) > MAX_SEED:
        print(f"skip {name}: {len(data)} bytes", file=sys.stderr)
        return
    d = OUT / name
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def pack_tree(root: Path, empty_videos: bool = True) -> bytes:
    parts = []
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(root).as_posix()
        data = b"" if empty_videos and p.suffix in (".mp4", ".mkv") else p.read_bytes()
        parts.append(rel.encode() + b"\n" + data)
    return SEP.join(parts)


def slice_zip(task: Path, n: int) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "s.zip"
        names = fx_episode_files(task, n) + ["meta/info.json", "meta/stats.json", "meta/tasks.jsonl"]
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as z:
            for name in names:
                if (task / name).exists():
                    z.writestr(zipfile.ZipInfo(name), (task / name).read_bytes())
        return out.read_bytes()


def fx_episode_files(task: Path, n: int) -> list:
    c, f = max(n - 1, 0) // 1000, max(n - 1, 0) % 1000
    videos = sorted(p.relative_to(task).as_posix() for p in (task / f"videos/chunk-{c:03d}").glob(f"*/episode-{f:03d}.*"))
    return videos + [fx.data_rel(n), fx.row_rel(n)]


def task_seeds(task: Path, slices: bool = True) -> None:
    put("task", pack_tree(task))
    for name, files in (("info_json", ["meta/info.json"]), ("stats_json", ["meta/stats.json"]),
                        ("tasks_jsonl", ["meta/tasks.jsonl"])):
        for f in files:
            if (task / f).exists():
                put(name, (task / f).read_bytes())
    for p in sorted((task / "meta/episodes").rglob("*.parquet")):
        put("episodes_parquet", p.read_bytes())
    info = json.loads((task / "meta/info.json").read_text())
    files = "\n".join(sorted(p.relative_to(task).as_posix() for p in task.rglob("*") if p.is_file()))
    for key in ("data_path", "video_path", "episodes_path"):
        if key in info:
            some = next((l for l in files.splitlines() if l.startswith(info[key].split("/")[0])), "")
            put("path_template", SEP.join([info[key].encode(), some.encode(), files.encode()]))
    if slices:
        for n in sorted({int(p.stem.split("-")[1]) + 1 for p in (task / "data").rglob("episode-*.parquet")})[:2]:
            z = slice_zip(task, n)
            put("slice", z)
            put("import", bytes([0x01 | (((n - 1) % 1000 % 7) << 1)]) + z)
            put("import", bytes([0x0e]) + z)


def foreign_seeds(ds: Path) -> None:
    put("foreign", pack_tree(ds))
    for f in ("meta/info.json", "manifest.json"):
        if (ds / f).exists():
            put("info_json", (ds / f).read_bytes())
    if (ds / "meta/tasks.jsonl").exists():
        put("tasks_jsonl", (ds / "meta/tasks.jsonl").read_bytes())


def with_overlays(ds: Path) -> Path:
    """The bundle dataset `ds` with a dense and a span overlay on its first episode
    (docs/interop.md "Overlays"), for the overlay reader and check."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    first = json.loads((ds / "manifest.json").read_text())["episodes"][0]
    n = int(first["length"])
    for name, table in (("progress", pa.table({"step": pa.array(range(n), pa.int64()),
                                              "progress": pa.array([i / max(n - 1, 1) for i in range(n)], pa.float32())})),
                        ("language", pa.table({"start_step": pa.array([0], pa.int64()),
                                              "end_step": pa.array([n], pa.int64()), "text": ["pick it up"]}))):
        (ds / "overlays" / name).mkdir(parents=True, exist_ok=True)
        pq.write_table(table, ds / "overlays" / name / f"{first['id']}.parquet")
    return ds


def tree(files: dict) -> bytes:
    """Packs {relative path: bytes or JSON-able} in the "tree" format."""
    parts = []
    for rel, data in files.items():
        if not isinstance(data, bytes):
            data = json.dumps(data, separators=(",", ":")).encode()
        parts.append(rel.encode() + b"\n" + data)
    return SEP.join(parts)


def journal_seeds() -> None:
    """fuzz_journal: journals over its fixed task (fuzz/fuzz_journal.cc kSkeleton), as
    CommitWithJournal writes them, and the refusals of ReadJournal."""
    tmp = {"d": "data/chunk-000/.episode-001.parquet.commit.reel-1-2.tmp",
           "r": "meta/episodes/chunk-000/.episode-001.parquet.commit.reel-1-3.tmp",
           "v": "videos/chunk-000/cam/.episode-001.mp4.commit.reel-1-4.tmp",
           "i": "meta/.info.json.commit.reel-1-1.tmp"}
    episode = {"episode_index": 2, "renames": [[tmp["v"], "videos/chunk-000/cam/episode-001.mp4"],
                                               [tmp["d"], "data/chunk-000/episode-001.parquet"],
                                               [tmp["r"], "meta/episodes/chunk-000/episode-001.parquet"],
                                               [tmp["i"], "meta/info.json"]]}
    task = {"renames": [[tmp["i"], "meta/info.json"]],
            "removes": ["videos/chunk-000/cam/episode-000.mp4", "data/chunk-000/episode-000.parquet"]}
    seeds = [
        {"meta/.commit-2.json": episode},
        {"meta/.commit-task.json": task},
        {"meta/.commit-2.json": episode, "meta/.commit-task.json": task},
        {"meta/.commit-7.json": {"episode_index": 7, "renames": [], "removes": ["meta/tasks.jsonl"]}},
        {"meta/.push-3.json": {"episode_index": 3}, "meta/.push-4.json": {},
         "meta/.push-change.json": {"episodes": [3, 5], "info": {}}},
        {"meta/.push-change.json": {"episodes": [1, "2", 1e300, -1]}, "meta/.push-1.json": b""},
        # refused: unsafe paths, wrong shapes, not JSON
        {"meta/.commit-1.json": {"renames": [["../outside/canary", "meta/x"]]}},
        {"meta/.commit-1.json": {"renames": [[tmp["d"], "/tmp/x"]], "removes": ["meta/./info.json"]}},
        {"meta/.commit-task.json": {"removes": ["data//episode-000.parquet", "a\u0000b"]}},
        {"meta/.commit-1.json": {"renames": {"a": "b"}}, "meta/.commit-2.json": [1, 2]},
        {"meta/.commit-999999999999999999.json": b"{\"renames\": [[\"a\"]]"},
        {"meta/.commit-00.json": {"renames": [["meta/info.json", "meta/.commit-5.json"]]}},
    ]
    for files in seeds:
        put("journal", tree(files))


def keypoints_seeds(tmp: Path) -> None:
    """fuzz_keypoints: byte 0 (0 hand_pose, 1 hand_pose_3d, 2 auto_labels) + the file, as
    the reference tracker writes it (tests/e2e/test_keypoints.py) and variants the reader
    accepts (list<float>, int64 frame_index) or refuses (a wrong width, a repeated frame)."""
    d = tmp / "kp"
    kp.write_2d(d / "a.parquet", [0, 1, 2, 3, 4, 5])
    kp.write_2d(d / "b.parquet", [5, 0, 9])  # 9: no data row
    rows3d = [(f, (True, "Left", f), (f % 2 == 0, "Right", None)) for f in range(6)]
    kp.write_3d(d / "c.parquet", rows3d)
    kp.write_3d(d / "d.parquet", rows3d[:2], width=62)
    kp.write_labels(d / "e.parquet", [0, 2, 4])
    kp.write_labels(d / "f.parquet", [1, 1])
    put("keypoints", b"\x00" + (d / "a.parquet").read_bytes())
    put("keypoints", b"\x00" + (d / "b.parquet").read_bytes())
    put("keypoints", b"\x01" + (d / "c.parquet").read_bytes())
    put("keypoints", b"\x01" + (d / "d.parquet").read_bytes())
    put("keypoints", b"\x02" + (d / "e.parquet").read_bytes())
    put("keypoints", b"\x02" + (d / "f.parquet").read_bytes())
    n = 3
    t = pa.table({"frame_index": pa.array([0, 1, 2], pa.int64()), "num_hands": pa.array([1, 2, 0], pa.int32()),
                  "hand_data": pa.array([[0.5] * 92, None, [1.0] * 92], pa.list_(pa.float32())),
                  "track_ids": pa.array([[0, 1]] * n, pa.list_(pa.int32()))})
    pq.write_table(t, d / "g.parquet")
    put("keypoints", b"\x00" + (d / "g.parquet").read_bytes())


def png(width: int, height: int, depth: int, color: int, raw: bytes, extra: bytes = b"", interlace: int = 0) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, interlace)) +
            extra + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def png16_seeds() -> None:
    """fuzz_png16: 16-bit gray PNGs (tests/e2e/test_migrate.py png16) and the kinds the
    decoder refuses: 8-bit gray, 16-bit RGB, gray+alpha, palette."""
    mm = np.arange(12, dtype=np.uint16).reshape(3, 4) * 5000
    put("png16", mg.png16(mm))
    put("png16", mg.png16(np.array([[0, 65535]], np.uint16)))
    put("png16", mg.png8(2, 3))
    rows = lambda w, h, bpp: b"".join(b"\x00" + bytes(range(w * bpp)) for _ in range(h))  # noqa: E731
    put("png16", png(2, 2, 16, 2, rows(2, 2, 6)))            # RGB 16
    put("png16", png(2, 2, 16, 4, rows(2, 2, 4)))            # gray + alpha 16
    plte = struct.pack(">I", 6) + b"PLTE" + bytes(6)
    plte += struct.pack(">I", zlib.crc32(b"PLTE" + bytes(6)) & 0xFFFFFFFF)
    put("png16", png(2, 2, 8, 3, rows(2, 2, 1), plte))       # palette
    put("png16", png(3, 3, 16, 0, bytes(3 * 7 + 3 * 7), interlace=1))  # Adam7, 16-bit gray (rows: the passes')
    # a small file that declares a large frame (IHDR 20000 x 20000, 16-bit gray)
    put("png16", png(20000, 20000, 16, 0, b"\x00" * 16))


def migrate_seeds(tmp: Path) -> None:
    """fuzz_migrate: small v1.0 tasks in the layout of tests/e2e/test_migrate.py
    (make_v1_task), one session of 3 frames: glove and IMU parquets, timestamps.json,
    calibration, an RGB mp4, and a depth slot as .mkv, as PNG16 frames or as raw .bin."""
    rng = np.random.default_rng(3)
    name = "pick"

    def session(idx: int, depth: str, stereo: bool) -> dict:
        s = f"{name}_{idx:06d}/"
        cams = {"head_left": {"height": 24, "width": 32},
                "head_depth": {"height": 3, "width": 4, "type": "depth", "unit": "mm", "format": "png16"}}
        meta = {"format": "egodata", "format_version": "1.0", "episode_index": idx, "fps": 30, "task_name": name,
                "cameras": cams, "sensors": ["right_glove"], "sensor_dim": 256, "created_at": 1.7e9 + idx,
                "codebase_version": "1.0.12", "video_codec": {"codec": "h264"}, "drop_stats": {"queue": 0},
                "devices": [{"key": "s80m:AB", "kind": "s80m", "name": "Head", "slots": list(cams)}]}
        entries = []
        for f in range(3):
            entries.append({"frame_index": f, "timestamp": f / 30, "wall_time": 1.7e9 + f / 30,
                            **({"hardware_ns": 10**9 * f} if stereo else {})})
        files = {s + "metadata.json": meta, s + "timestamps.json": {"timestamps": entries, "total_frames": 3},
                 s + "calibration/head_stereo.json": {"baseline_m": 0.06}}
        buf = pa.BufferOutputStream()
        pq.write_table(mg._glove_table(idx, 3, "right_glove", rng), buf)
        files[s + "data/right_glove/chunk-0000/chunk_000000.parquet"] = buf.getvalue().to_pybytes()
        if stereo:
            buf = pa.BufferOutputStream()
            pq.write_table(mg._imu_table(idx, 3, rng), buf)
            files[s + "data/imu/chunk-0000/chunk_000000.parquet"] = buf.getvalue().to_pybytes()
        files[s + "videos/head_left/chunk-0000/head_left.mp4"] = b""
        mm = np.arange(12, dtype=np.uint16).reshape(3, 4)
        for k in range(3):
            if depth == "png":
                files[s + f"depth/head_depth/{k + 1:06d}.png"] = mg.png16(mm + k)
            elif depth == "bin":
                files[s + f"depth/head_depth/{k + 1:06d}.bin"] = (mm + k).astype("<u2").tobytes()
        if depth == "mkv":
            files[s + "depth/head_depth/head_depth.mkv"] = b""
        return files

    put("migrate", tree(session(1, "mkv", True)))
    put("migrate", tree(session(1, "png", False)))
    put("migrate", tree(session(2, "bin", True)))
    put("migrate", tree({**session(1, "none", False), **session(5, "none", True)}))
    legacy = fx.write_legacy_v1_0(tmp / "legacy")
    put("migrate", pack_tree(legacy))
    # in place, then --restore (a top-level file "in-place" selects it, fuzz/fuzz_migrate.cc)
    put("migrate", tree({**session(1, "png", True), "in-place": b""}))
    # a task already migrated in place, whose manifest --restore reads
    pooled = fx.write_task(tmp / "mp", "pick", [EpisodeSpec(1, length=2, videos={})]).path
    manifest = {"migrated_by": "reel migrate", "source": "pick", "in_place": True, "backup": "_migrate_backup_1",
                "sessions": [{"session": "pick_000001", "episode_index": 1, "source_episode_index": 1}],
                "files": ["meta/.migrate_manifest.json", "meta/info.json", fx.data_rel(1), fx.row_rel(1)],
                "keypoints": {"mirror": "", "moves": []}}
    files = {"in-place": b"", "meta/info.json": (pooled / "meta/info.json").read_bytes(),
             "meta/.migrate_manifest.json": manifest, fx.data_rel(1): (pooled / fx.data_rel(1)).read_bytes(),
             fx.row_rel(1): (pooled / fx.row_rel(1)).read_bytes()}
    files.update({"_migrate_backup_1/" + k: v for k, v in session(1, "none", False).items()})
    put("migrate", tree(files))
    # issue 27, finding 3: a forged manifest whose keypoints mirror is a folder outside the
    # task (the harness keeps <tmp>/outside/victim/ and checks nothing outside changes)
    forged = {**manifest, "keypoints": {"mirror": "../../../../outside",
                                        "moves": [{"session": "victim", "episode": "episode_000001"}]}}
    put("migrate", tree({**files, "meta/.migrate_manifest.json": forged}))


def tus_state_seeds() -> None:
    """fuzz_tus_state: <id>.json as Spool::Create writes it, <id>.result.json as the import
    handler stores it, and the part file ("\x00" + its bytes; no part: imported)."""
    state = {"length": 5, "name": "ep.zip", "project": "task_a", "form_episode_index": -1, "principal": "ci"}
    result = {"status": 201, "body": {"session_id": "task_a/1", "already_present": False, "episode_index": 1}}
    compact = lambda j: json.dumps(j, separators=(",", ":")).encode()  # noqa: E731
    put("tus_state", compact(state) + SEP + SEP + b"\x00PK\x03")
    put("tus_state", compact(state) + SEP + compact(result))
    put("tus_state", compact({**state, "length": 0}) + SEP + SEP + b"\x00")
    put("tus_state", compact({"length": "5", "name": 1, "form_episode_index": 2.5}) + SEP + SEP + b"\x00ab")
    put("tus_state", b"[1, 2]" + SEP + b"{\"status\": 1e400}")
    put("tus_state", compact({"length": -1, "project": None, "principal": ["ci"]}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reel", help="a reel binary: adds seeds from `reel simulate` and `reel pack`")
    ap.add_argument("--clean", action="store_true", help="remove fuzz/corpus first")
    ap.add_argument("--only", nargs="+", default=[], help="write only these corpora (e.g. journal png16)")
    a = ap.parse_args()
    ONLY.update(a.only)
    if a.clean and OUT.exists():
        shutil.rmtree(OUT)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # pooled tasks from the e2e fixtures: default columns; IMU/SLAM/force matrices; a legacy shard
        small = {"d435_rgb": "mp4"}
        fx.write_task(tmp / "a", "pick_cube", [EpisodeSpec(1, videos=small), EpisodeSpec(2, videos={})])
        task_seeds(tmp / "a" / "pick_cube")
        fx.write_task(tmp / "b", "rich", [EpisodeSpec(
            1, length=3, videos={}, imu=[1, 0, 2],
            slam={"observation.slam_trajectory": [1, 0, 2]},
            force={"observation.left_force_matrix": ForceMatrixSpec(
                "int16x100", frames=[None, np.zeros((250, 250, 3), np.float32), None])})])
        task_seeds(tmp / "b" / "rich")
        fx.write_task(tmp / "c", "sharded", [EpisodeSpec(1, videos={}, row="shard"), EpisodeSpec(2, videos={}, row="shard")])
        task_seeds(tmp / "c" / "sharded", slices=False)
        # --episodes / --at lists: accepted forms and each refusal of include/reel/index_list.h
        for text in ("1,3,5-9", " 7 ", "0-999999", "0-1000000", "3-1", "1:5", "1,,2", "-1",
                     "9007199254740993", "2,2,1-3,2"):
            put("index_list", text.encode())
        # foreign datasets
        foreign_seeds(fx.write_lerobot_v2(tmp / "f"))
        foreign_seeds(fx.write_lerobot_v2(tmp / "f", "lerobot_v20", "v2.0"))
        bundle = fx.write_bundle_dataset(tmp / "f")
        foreign_seeds(bundle)
        put("foreign", pack_tree(with_overlays(bundle)))
        v3 = tmp / "f" / "v3"
        (v3 / "meta/episodes/chunk-000").mkdir(parents=True)
        (v3 / "data/chunk-000").mkdir(parents=True)
        v2info = json.loads((tmp / "f/lerobot_v21/meta/info.json").read_text())
        v2info.update(codebase_version="v3.0", total_episodes=2, total_frames=4,
                      data_path="data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
                      video_path="videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4")
        (v3 / "meta/info.json").write_text(json.dumps(v2info, indent=4))
        pq.write_table(pa.table({"task_index": pa.array([0], pa.int64()), "task": ["pick"]}), v3 / "meta/tasks.parquet")
        rows = [{"episode_index": e, "tasks": ["pick"], "length": 2, "data/chunk_index": 0, "data/file_index": 0,
                 "dataset_from_index": 2 * e, "dataset_to_index": 2 * e + 2,
                 "meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0} for e in range(2)]
        pq.write_table(pa.Table.from_pylist(rows), v3 / "meta/episodes/chunk-000/file-000.parquet")
        t = pq.read_table(tmp / "f/lerobot_v21/data/chunk-000/episode_000000.parquet")
        t2 = pa.concat_tables([t, t]).set_column(3, "episode_index", pa.array([0, 0, 1, 1], pa.int64())) \
            .set_column(4, "index", pa.array([0, 1, 2, 3], pa.int64()))
        pq.write_table(t2, v3 / "data/chunk-000/file-000.parquet", row_group_size=2)
        foreign_seeds(v3)
        # videos: RGB H.264 (.mp4/.mkv), depth FFV1 gray16le (.mkv), depth 12-bit HEVC (.mp4)
        for ext, depth in (("mp4", False), ("mkv", False), ("mkv", True), ("mp4", True)):
            put("video", bytes([1 if ext == "mkv" else 0]) + fx.video_bytes(ext, depth, 3))
        if a.reel:
            sim = tmp / "sim"
            subprocess.run([a.reel, "simulate", str(sim), "--episodes", "2", "--seconds", "0.2", "--fps", "10",
                            "--video-size", "32x24", "--seed", "7"], check=True, capture_output=True)
            task_seeds(sim)
            for v in sorted(sim.rglob("*.mp4")) + sorted(sim.rglob("*.mkv")):
                put("video", bytes([1 if v.suffix == ".mkv" else 0]) + v.read_bytes())
            z = tmp / "packed.zip"
            subprocess.run([a.reel, "pack", str(sim), "1", "-o", str(z)], check=True, capture_output=True)
            put("slice", z.read_bytes())
            put("import", b"\x00" + z.read_bytes())
        # parsers of outside bytes added with issue 26
        keypoints_seeds(tmp)
        migrate_seeds(tmp)
    journal_seeds()
    png16_seeds()
    tus_state_seeds()
    # hand-written seeds
    tok = "a" * 64
    for cfg in (
        {"root": "/srv/reel", "host": "127.0.0.1", "port": 8765,
         "tokens": [{"name": "ci", "sha256": tok, "projects": ["*"]}],
         "users": [{"name": "u", "password_hash": "pbkdf2-sha256$1$00ff$" + "b" * 64, "projects": ["task_a"]}],
         "limits": {"max_request_bytes": 1 << 30, "max_field_bytes": 4096, "max_entries": 64,
                    "max_entry_bytes": 1 << 30, "max_total_bytes": 1 << 32, "max_ratio": 100.0,
                    "read_timeout_s": 30, "write_timeout_s": 30, "request_timeout_s": 3600, "workers": 8,
                    "session_ttl_s": 43200},
         "check": True, "log_path": "/tmp/serve.log"},
        {"root": "r", "tokens": []},
    ):
        put("serve_config", json.dumps(cfg, indent=2).encode())
    answers = [
        (201, "", {"session_id": "task/1", "already_present": False, "episode_index": 1}),
        (200, "", {"session_id": "task/1", "already_present": True}),
        (422, "", {"error": {"rule": "zip.traversal", "detail": "entry '../x'", "request_id": "r1"}}),
        (429, "2", {"error": {"rule": "serve.busy", "detail": "busy"}}),
        (503, "1.5", {"error": "unavailable"}),
    ]
    codes = [0, 200, 201, 400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 503, 302, 204]
    for status, retry, body in answers:
        put("upload_answer", bytes([codes.index(status)]) + retry.encode() + SEP + json.dumps(body).encode())
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"corpus: {sum(1 for p in OUT.rglob('*') if p.is_file())} files, {total} bytes")


if __name__ == "__main__":
    main()
