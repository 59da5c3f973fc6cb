#!/usr/bin/env python3
"""Writes the seed corpora fuzz/corpus/<name>/ from the e2e test fixtures (and, with
--reel, from tasks recorded by `reel simulate` and slices made by `reel pack`).

Run from the repository root with the project venv:
    .venv/bin/python fuzz/make_seeds.py [--reel build/cmake/tools/reel]
Seeds are small (tiny videos, 3-6 rows); the whole tree stays well under 5 MB. The
"tree" format packs a directory as parts "<relative path>\\n<bytes>" joined by SEP
(fuzz/harness_util.h UnpackTree).
"""
import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from tests.e2e import fixtures as fx  # noqa: E402
from tests.e2e.fixtures import EpisodeSpec, ForceMatrixSpec  # noqa: E402

SEP = b"\n#%REEL-FILE%#\n"
OUT = REPO / "fuzz" / "corpus"
MAX_SEED = 256 * 1024  # bytes; larger seeds are skipped


def put(name: str, data: bytes) -> None:
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reel", help="a reel binary: adds seeds from `reel simulate` and `reel pack`")
    ap.add_argument("--clean", action="store_true", help="remove fuzz/corpus first")
    a = ap.parse_args()
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
        foreign_seeds(fx.write_bundle_dataset(tmp / "f"))
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
