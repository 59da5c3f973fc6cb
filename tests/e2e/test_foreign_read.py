"""Reading LeRobot v3.0 / v2.1 and bundle datasets with `reel info|ls|show|frames|check`.

Every fixture is written here with pyarrow, json and the ffmpeg CLI from the formats as
docs/foreign-read.md and the LeRobot/bundle docs describe them, independently of reel: data
values are known, and expected pixels come from the ffmpeg CLI's rgb24 decode."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from . import video_ref
from .checks import assert_fails_naming, assert_finding, check_report, error_rules
from .video_ref import ffmpeg

W, H = 64, 48
FPS = 10
CAM = "observation.images.top"
V3_LENGTHS = [5, 7, 4]
V2_LENGTHS = [4, 6]
BUNDLE_LENGTHS = [6, 3]
BUNDLE_CAM = "observation.images.wrist"
BUNDLE_IDS = ["ep_" + "a" * 32, "ep_" + "b" * 32]


def state(global_index: int) -> list[float]:
    """observation.state of one global frame: exact in float32."""
    return [global_index + 0.5, -2.0 * global_index]


def encode(path: Path, frames: int, fps: float, start: int = 0) -> None:
    """H.264 yuv420p from testsrc2 (every frame differs: it draws a running clock)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ffmpeg("-f", "lavfi", "-i", f"testsrc2=size={W}x{H}:rate={fps}", "-vf", f"trim=start_frame={start},setpts=PTS-STARTPTS",
           "-frames:v", frames, "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "2", path)


def concat(parts: list[Path], out: Path) -> None:
    """LeRobot v3's way: per-episode mp4s joined by stream copy."""
    lst = out.parent / "concat.txt"
    lst.write_text("".join(f"file '{p}'\n" for p in parts))
    ffmpeg("-f", "concat", "-safe", "0", "-i", lst, "-c", "copy", out)
    lst.unlink()


def frames_table(lengths: list[int], ep_offset: int = 0) -> pa.Table:
    """LeRobot data rows: features, then timestamp, frame_index, episode_index, index, task_index."""
    rows = {"observation.state": [], "action": [], "timestamp": [], "frame_index": [],
            "episode_index": [], "index": [], "task_index": []}
    g = 0
    for e, n in enumerate(lengths):
        for i in range(n):
            rows["observation.state"].append(state(g))
            rows["action"].append([float(g), 1.0])
            rows["timestamp"].append(i / FPS)
            rows["frame_index"].append(i)
            rows["episode_index"].append(e + ep_offset)
            rows["index"].append(g)
            rows["task_index"].append(e % 2)
            g += 1
    vec = pa.list_(pa.float32(), 2)
    return pa.table({
        "observation.state": pa.array(rows["observation.state"], vec),
        "action": pa.array(rows["action"], vec),
        "timestamp": pa.array(rows["timestamp"], pa.float32()),
        "frame_index": pa.array(rows["frame_index"], pa.int64()),
        "episode_index": pa.array(rows["episode_index"], pa.int64()),
        "index": pa.array(rows["index"], pa.int64()),
        "task_index": pa.array(rows["task_index"], pa.int64()),
    })


def features() -> dict:
    f = {
        "observation.state": {"dtype": "float32", "shape": [2], "names": ["x", "y"]},
        "action": {"dtype": "float32", "shape": [2], "names": ["a", "b"]},
        CAM: {"dtype": "video", "shape": [H, W, 3], "names": ["height", "width", "channels"],
              "info": {"video.height": H, "video.width": W, "video.codec": "h264",
                       "video.pix_fmt": "yuv420p", "video.is_depth_map": False, "video.fps": FPS,
                       "video.channels": 3, "has_audio": False}},
    }
    for k in ("timestamp",):
        f[k] = {"dtype": "float32", "shape": [1], "names": None}
    for k in ("frame_index", "episode_index", "index", "task_index"):
        f[k] = {"dtype": "int64", "shape": [1], "names": None}
    return f


TASKS = ["pick the cube", "place the cube"]


# --------------------------------------------------------------------------- v3.0


def v3_episode_rows(lengths: list[int]) -> list[dict]:
    rows, start, t = [], 0, 0.0
    for e, n in enumerate(lengths):
        rows.append({
            "episode_index": e, "tasks": [TASKS[e % 2]], "length": n,
            "data/chunk_index": 0, "data/file_index": 0,
            "dataset_from_index": start, "dataset_to_index": start + n,
            f"videos/{CAM}/chunk_index": 0, f"videos/{CAM}/file_index": 0,
            f"videos/{CAM}/from_timestamp": t, f"videos/{CAM}/to_timestamp": t + n / FPS,
            "meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0,
        })
        start += n
        t += n / FPS
    return rows


def write_v3(root: Path, work: Path, edit_rows=None, task_index=(0, 1), version="v3.0") -> Path:
    """3 episodes in one data file (row groups of 4 rows) and one concatenated mp4."""
    (root / "meta/episodes/chunk-000").mkdir(parents=True)
    (root / "data/chunk-000").mkdir(parents=True)
    info = {"codebase_version": version, "robot_type": "so100", "total_episodes": len(V3_LENGTHS),
            "total_frames": sum(V3_LENGTHS), "total_tasks": 2, "chunks_size": 1000,
            "data_files_size_in_mb": 100, "video_files_size_in_mb": 200, "fps": FPS,
            "splits": {"train": f"0:{len(V3_LENGTHS)}"},
            "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
            "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
            "features": features()}
    (root / "meta/info.json").write_text(json.dumps(info, indent=4))
    pq.write_table(pa.table({"task_index": pa.array(list(task_index), pa.int64()), "task": TASKS}),
                   root / "meta/tasks.parquet")
    rows = v3_episode_rows(V3_LENGTHS)
    if edit_rows:
        edit_rows(rows)
    pq.write_table(pa.Table.from_pylist(rows), root / "meta/episodes/chunk-000/file-000.parquet")
    pq.write_table(frames_table(V3_LENGTHS), root / "data/chunk-000/file-000.parquet", row_group_size=4)
    parts, start = [], 0
    for e, n in enumerate(V3_LENGTHS):
        p = work / f"v3_ep{e}.mp4"
        encode(p, n, FPS, start)
        parts.append(p)
        start += n
    out = root / f"videos/{CAM}/chunk-000/file-000.mp4"
    out.parent.mkdir(parents=True)
    concat(parts, out)
    return root


@pytest.fixture
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("work")


@pytest.fixture
def png_dir(tmp_path_factory):
    # Outside tmp_path: run_reel asserts that nothing under tmp_path changes.
    return tmp_path_factory.mktemp("png")


@pytest.fixture
def v3(tmp_path, work):
    return write_v3(tmp_path / "v3", work)


def test_v3_info_and_ls(reel_json, v3):
    info = reel_json("info", v3)
    assert (info["format"], info["version"], info["fps"]) == ("lerobot_v3", "v3.0", FPS)
    assert (info["episodes"], info["frames"]) == (3, sum(V3_LENGTHS))
    assert info["video_keys"] == [CAM] and info["tasks"] == TASKS
    assert info["features"]["observation.state"] == {"dtype": "float32", "shape": [2]}
    eps = reel_json("ls", v3)["episodes"]
    assert [e["episode_index"] for e in eps] == [0, 1, 2]
    assert [e["length"] for e in eps] == V3_LENGTHS
    assert [(e["from_row"], e["to_row"]) for e in eps] == [(0, 5), (5, 12), (12, 16)]
    assert [e["tasks"] for e in eps] == [[TASKS[0]], [TASKS[1]], [TASKS[0]]]
    assert {e["data_path"] for e in eps} == {"data/chunk-000/file-000.parquet"}
    spans = [t for e in eps for t in (e["videos"][CAM]["from_timestamp"], e["videos"][CAM]["to_timestamp"])]
    assert spans == pytest.approx([0, 0.5, 0.5, 1.2, 1.2, 1.6])
    assert eps[1]["videos"][CAM]["path"] == f"videos/{CAM}/chunk-000/file-000.mp4"


def sample_values(show: dict, name: str) -> list:
    col = next(c for c in show["columns"] if c["name"] == name)
    return col["sample"]


def parse_list(text: str) -> list[float]:
    return [float(v) for v in text.strip("[]").split(",")]


@pytest.mark.parametrize("ep", [0, 1, 2])
def test_v3_show_reads_only_the_episode_rows(reel_json, v3, ep):
    show = reel_json("show", v3, ep)
    start = sum(V3_LENGTHS[:ep])
    assert show["rows"] == V3_LENGTHS[ep]
    assert [c["name"] for c in show["columns"]] == frames_table([1]).column_names
    assert [int(v) for v in sample_values(show, "index")] == list(range(start, start + 3))
    assert [int(v) for v in sample_values(show, "episode_index")] == [ep] * 3
    assert [int(v) for v in sample_values(show, "frame_index")] == [0, 1, 2]
    assert [parse_list(v) for v in sample_values(show, "observation.state")] == [state(start + i) for i in range(3)]


def test_v3_frames_equal_ffmpeg_decode(reel_json, v3, png_dir):
    source = video_ref.cli_rgb(v3 / f"videos/{CAM}/chunk-000/file-000.mp4", W, H)
    assert source.shape[0] == sum(V3_LENGTHS)
    # Each frame differs from its neighbours, so a wrong span would be caught.
    assert all(not np.array_equal(source[i], source[i + 1]) for i in range(len(source) - 1))
    for ep, rows in [(1, [6, 0, 3, 3]), (2, [0, 3]), (0, [4])]:
        got = reel_json("frames", v3, ep, "--slot", CAM, "--at", ",".join(map(str, rows)), "-o", png_dir)
        assert got["addressed_by"] == "timestamp" and (got["width"], got["height"]) == (W, H)
        start = sum(V3_LENGTHS[:ep])
        for w, r in zip(got["written"], rows):
            assert w["index"] == r
            assert w["time_s"] == pytest.approx(start / FPS + r / FPS, abs=1e-6)
            png = video_ref.cli_rgb(Path(w["path"]), W, H)
            assert np.array_equal(png[0], source[start + r]), f"episode {ep} row {r}"


def test_v3_check_is_clean(run_reel, v3):
    rc, report = check_report(run_reel, v3)
    assert rc == 0, report
    assert report["tasks"][0]["format"] == "lerobot_v3" and report["tasks"][0]["episodes"] == 3


def test_v3_frames_past_the_episode_fails(run_reel, v3, png_dir):
    assert_fails_naming(run_reel("frames", v3, 0, "--slot", CAM, "--at", "5", "-o", png_dir), "row 5")
    assert_fails_naming(run_reel("frames", v3, 0, "--slot", "nope", "--at", "0", "-o", png_dir), "nope", CAM)


# ---- v3 bad inputs: one per rule -------------------------------------------------


def expect_unreadable(run_reel, root, *needles, cmd="info"):
    rc, out, err = run_reel(cmd, root) if cmd != "show" else run_reel("show", root, 1)
    assert rc == 2, f"reel {cmd} exited {rc}\n{out}\n{err}"
    assert_fails_naming((rc, out, err), *needles)


def test_v3_unknown_codebase_version(run_reel, tmp_path, work):
    root = write_v3(tmp_path / "d", work, version="v3a")
    expect_unreadable(run_reel, root, "meta/info.json", "v3a")
    rc, out, err = run_reel("check", root)
    assert rc == 2 and "v3a" in err


def test_v2_minor_unknown_is_refused(run_reel, tmp_path, work):
    root = write_v3(tmp_path / "d", work)
    info = json.loads((root / "meta/info.json").read_text())
    info["codebase_version"] = "v2.7"
    (root / "meta/info.json").write_text(json.dumps(info))
    expect_unreadable(run_reel, root, "meta/info.json", "v2.7")


def test_v3_episode_rows_out_of_order(run_reel, tmp_path, work):
    def swap(rows):
        rows[1]["episode_index"], rows[2]["episode_index"] = 2, 1
    root = write_v3(tmp_path / "d", work, edit_rows=swap)
    expect_unreadable(run_reel, root, "meta/episodes/chunk-000/file-000.parquet", "row 1",
                      "episode_index 2", "expected 1")
    rc, report = check_report(run_reel, root)
    assert rc == 1 and "foreign.episode_order" in error_rules(report)


def test_v3_episode_index_gap(run_reel, tmp_path, work):
    def gap(rows):
        rows[2]["episode_index"] = 3
    root = write_v3(tmp_path / "d", work, edit_rows=gap)
    expect_unreadable(run_reel, root, "file-000.parquet", "episode_index 3", "expected 2")


def test_v3_dataset_index_not_contiguous(run_reel, tmp_path, work):
    def shift(rows):
        rows[1]["dataset_from_index"] = 6
    root = write_v3(tmp_path / "d", work, edit_rows=shift)
    expect_unreadable(run_reel, root, "file-000.parquet", "episode 1", "dataset_from_index 6")
    rc, report = check_report(run_reel, root)
    assert rc == 1 and "foreign.index_contiguous" in error_rules(report)


def test_v3_data_index_disagrees_with_episodes(run_reel, tmp_path, work):
    root = write_v3(tmp_path / "d", work)
    t = frames_table(V3_LENGTHS)
    index = t.column("index").to_pylist()
    index[7] = 99  # episode 1, row 2
    t = t.set_column(t.schema.get_field_index("index"), "index", pa.array(index, pa.int64()))
    pq.write_table(t, root / "data/chunk-000/file-000.parquet", row_group_size=4)
    rc, out, err = run_reel("show", root, 1)
    assert rc == 2
    assert_fails_naming((rc, out, err), "data/chunk-000/file-000.parquet", "episode 1 row 2", "index 99")
    rc, report = check_report(run_reel, root)
    assert rc == 1
    assert_finding(report, "foreign.index_contiguous", "data/chunk-000/file-000.parquet", "error")


def test_v3_data_rows_fewer_than_episodes_claim(run_reel, tmp_path, work):
    root = write_v3(tmp_path / "d", work)
    pq.write_table(frames_table(V3_LENGTHS).slice(0, 14), root / "data/chunk-000/file-000.parquet")
    rc, out, err = run_reel("show", root, 2)
    assert rc == 2
    assert_fails_naming((rc, out, err), "file-000.parquet", "14 rows", "episode 2")
    rc, report = check_report(run_reel, root)
    assert rc == 1 and "foreign.data_rows" in error_rules(report)


def test_v3_tasks_out_of_order(run_reel, tmp_path, work):
    root = write_v3(tmp_path / "d", work, task_index=(1, 0))
    expect_unreadable(run_reel, root, "meta/tasks.parquet", "task_index 1", "expected 0")


def test_v3_missing_data_file(run_reel, tmp_path, work):
    root = write_v3(tmp_path / "d", work)
    (root / "data/chunk-000/file-000.parquet").unlink()
    expect_unreadable(run_reel, root, "data/chunk-000/file-000.parquet", "missing", "episode 0")
    rc, report = check_report(run_reel, root)
    assert rc == 1
    assert_finding(report, "foreign.file_missing", "data/chunk-000/file-000.parquet", "error")


def test_v3_missing_video_file(run_reel, tmp_path, work):
    root = write_v3(tmp_path / "d", work)
    (root / f"videos/{CAM}/chunk-000/file-000.mp4").unlink()
    expect_unreadable(run_reel, root, f"videos/{CAM}/chunk-000/file-000.mp4", "missing")


def test_v3_video_span_disagrees_with_length(run_reel, tmp_path, work):
    def stretch(rows):
        rows[1][f"videos/{CAM}/to_timestamp"] = 1.5  # 1.0 s span for 7 frames at 10 fps
        rows[2][f"videos/{CAM}/from_timestamp"] = 1.5
        rows[2][f"videos/{CAM}/to_timestamp"] = 1.9
    root = write_v3(tmp_path / "d", work, edit_rows=stretch)
    expect_unreadable(run_reel, root, "file-000.parquet", "episode 1", "to_timestamp", "1.5", "0.7")
    rc, report = check_report(run_reel, root)
    # Episode 2 now ends at 1.9 s: past the 16 frames of the file too.
    assert rc == 1 and error_rules(report) == ["foreign.video_frames", "foreign.video_span"]


def test_v3_video_spans_overlap(run_reel, tmp_path, work):
    def overlap(rows):
        rows[2][f"videos/{CAM}/from_timestamp"] = 1.0
        rows[2][f"videos/{CAM}/to_timestamp"] = 1.4
    root = write_v3(tmp_path / "d", work, edit_rows=overlap)
    expect_unreadable(run_reel, root, "episode 2", "from_timestamp 1", "overlaps")


def test_v3_half_frame_tolerance(reel_json, tmp_path, work):
    def nudge(rows):  # float drift under half a frame (0.05 s) is accepted
        rows[1][f"videos/{CAM}/to_timestamp"] += 0.04
        rows[2][f"videos/{CAM}/from_timestamp"] += 0.04
        rows[2][f"videos/{CAM}/to_timestamp"] += 0.04
    root = write_v3(tmp_path / "d", work, edit_rows=nudge)
    assert len(reel_json("ls", root)["episodes"]) == 3


# --------------------------------------------------------------------------- v2.1


def write_v2(root: Path, work: Path, episodes=None, version="v2.1") -> Path:
    info = {"codebase_version": version, "robot_type": "aloha", "total_episodes": len(V2_LENGTHS),
            "total_frames": sum(V2_LENGTHS), "total_tasks": 2, "total_videos": len(V2_LENGTHS),
            "total_chunks": 1, "chunks_size": 1000, "fps": FPS, "splits": {"train": "0:2"},
            "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
            "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
            "features": features()}
    (root / "meta").mkdir(parents=True)
    (root / "meta/info.json").write_text(json.dumps(info, indent=4))
    (root / "meta/tasks.jsonl").write_text(
        "".join(json.dumps({"task_index": i, "task": t}) + "\n" for i, t in enumerate(TASKS)))
    eps = episodes or [{"episode_index": e, "tasks": [TASKS[e % 2]], "length": n} for e, n in enumerate(V2_LENGTHS)]
    (root / "meta/episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in eps))
    all_rows = frames_table(V2_LENGTHS)
    start = 0
    for e, n in enumerate(V2_LENGTHS):
        d = root / f"data/chunk-000/episode_{e:06d}.parquet"
        d.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(all_rows.slice(start, n), d)
        encode(root / f"videos/chunk-000/{CAM}/episode_{e:06d}.mp4", n, FPS, start)
        start += n
    return root


@pytest.fixture
def v2(tmp_path, work):
    return write_v2(tmp_path / "v2", work)


def test_v2_read(reel_json, v2, png_dir):
    info = reel_json("info", v2)
    assert (info["format"], info["version"], info["episodes"], info["frames"]) == ("lerobot_v2", "v2.1", 2, 10)
    eps = reel_json("ls", v2)["episodes"]
    assert [e["length"] for e in eps] == V2_LENGTHS
    assert [e["data_path"] for e in eps] == [f"data/chunk-000/episode_{e:06d}.parquet" for e in (0, 1)]
    assert [(e["dataset_from_index"], e["dataset_to_index"]) for e in eps] == [(0, 4), (4, 10)]
    assert eps[1]["videos"][CAM] == {"path": f"videos/chunk-000/{CAM}/episode_000001.mp4",
                                      "from_timestamp": 0.0, "to_timestamp": pytest.approx(0.6)}
    show = reel_json("show", v2, 1)
    assert show["rows"] == 6
    assert [int(v) for v in sample_values(show, "index")] == [4, 5, 6]
    assert [parse_list(v) for v in sample_values(show, "observation.state")] == [state(4 + i) for i in range(3)]
    got = reel_json("frames", v2, 1, "--slot", CAM, "--at", "5,0,2", "-o", png_dir)
    source = video_ref.cli_rgb(v2 / f"videos/chunk-000/{CAM}/episode_000001.mp4", W, H)
    for w in got["written"]:
        assert np.array_equal(video_ref.cli_rgb(Path(w["path"]), W, H)[0], source[w["index"]])


def test_v2_check_is_clean(run_reel, v2):
    rc, report = check_report(run_reel, v2)
    assert rc == 0, report


def test_v2_episode_gap(run_reel, tmp_path, work):
    eps = [{"episode_index": 0, "tasks": [TASKS[0]], "length": 4}, {"episode_index": 2, "tasks": [TASKS[1]], "length": 6}]
    root = write_v2(tmp_path / "d", work, episodes=eps)
    expect_unreadable(run_reel, root, "meta/episodes.jsonl", "line 2", "episode_index 2", "expected 1")


def test_v2_length_disagrees_with_data(run_reel, tmp_path, work):
    eps = [{"episode_index": 0, "tasks": [TASKS[0]], "length": 4}, {"episode_index": 1, "tasks": [TASKS[1]], "length": 5}]
    root = write_v2(tmp_path / "d", work, episodes=eps)
    rc, out, err = run_reel("show", root, 1)
    assert rc == 2
    assert_fails_naming((rc, out, err), "episode_000001.parquet", "6 rows", "length 5")
    rc, report = check_report(run_reel, root)
    assert rc == 1 and "foreign.data_rows" in error_rules(report)


def test_v2_tasks_out_of_order(run_reel, v2):
    (v2 / "meta/tasks.jsonl").write_text(json.dumps({"task_index": 1, "task": "x"}) + "\n")
    expect_unreadable(run_reel, v2, "meta/tasks.jsonl", "task_index 1")


# --------------------------------------------------------------------------- bundle


def write_bundle(root: Path, work: Path, lengths=BUNDLE_LENGTHS, schema_version=1) -> Path:
    bfps = 20.0
    manifest = {"id": "mf_1", "name": "libero-spatial", "type": "teleop", "fps": bfps,
                "features": {"observation.state": {"dtype": "float32", "shape": [2]},
                             "action": {"dtype": "float32", "shape": [2]},
                             BUNDLE_CAM: {"dtype": "video", "shape": [H, W, 3]}},
                "episode_count": len(lengths), "success_rate": None,
                "episodes": [{"id": i, "length": n, "task": f"task {k}", "task_description": f"do task {k}"}
                             for k, (i, n) in enumerate(zip(BUNDLE_IDS, lengths))]}
    root.mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2))
    g = 0
    for k, (ep_id, n) in enumerate(zip(BUNDLE_IDS, lengths)):
        d = root / "episodes" / ep_id
        d.mkdir(parents=True)
        (d / "episode.json").write_text(json.dumps({
            "schema_version": schema_version, "capture_id": f"cap{k}", "recorded_at": "2026-01-01T00:00:00Z",
            "length": n, "fps": bfps, "record_hz": bfps, "task": f"task {k}", "task_description": f"do task {k}",
            "collection_mode": "teleop", "features": manifest["features"], "encoding": {"codec": "libx264"}}))
        vec = pa.list_(pa.float32())
        pq.write_table(pa.table({
            "step": pa.array(range(n), pa.int64()),
            "timestamp": pa.array([int(i * 1e9 / bfps) for i in range(n)], pa.int64()),
            "observation.state": pa.array([state(g + i) for i in range(n)], vec),
            "action": pa.array([[float(g + i), 0.0] for i in range(n)], vec),
        }), d / "data.parquet")
        encode(d / f"{BUNDLE_CAM}.mp4", n, 30, g)  # encoded fps need not match: frames go by index
        g += n
    return root


@pytest.fixture
def bundle(tmp_path, work):
    return write_bundle(tmp_path / "b", work)


def test_bundle_read(reel_json, run_reel, bundle, png_dir):
    info = reel_json("info", bundle)
    assert (info["format"], info["version"], info["episodes"], info["frames"]) == ("bundle", "1", 2, 9)
    assert info["video_keys"] == [BUNDLE_CAM] and info["name"] == "libero-spatial"
    eps = reel_json("ls", bundle)["episodes"]
    assert [e["bundle_id"] for e in eps] == BUNDLE_IDS
    assert [e["length"] for e in eps] == BUNDLE_LENGTHS and [e["tasks"] for e in eps] == [["task 0"], ["task 1"]]
    assert eps[1]["data_path"] == f"episodes/{BUNDLE_IDS[1]}/data.parquet"
    show = reel_json("show", bundle, 1)
    assert show["rows"] == 3
    assert [int(v) for v in sample_values(show, "step")] == [0, 1, 2]
    assert [parse_list(v) for v in sample_values(show, "observation.state")] == [state(6 + i) for i in range(3)]
    got = reel_json("frames", bundle, 0, "--slot", BUNDLE_CAM, "--at", "5,0,3", "-o", png_dir)
    assert got["addressed_by"] == "frame_index"
    source = video_ref.cli_rgb(bundle / f"episodes/{BUNDLE_IDS[0]}/{BUNDLE_CAM}.mp4", W, H)
    for w in got["written"]:
        assert np.array_equal(video_ref.cli_rgb(Path(w["path"]), W, H)[0], source[w["index"]])
    rc, report = check_report(run_reel, bundle)
    assert rc == 0, report


def test_bundle_unknown_schema_version(run_reel, tmp_path, work):
    root = write_bundle(tmp_path / "d", work, schema_version=2)
    expect_unreadable(run_reel, root, "episode.json", "schema_version 2")


def test_bundle_missing_directory(run_reel, bundle, reel_mod):
    """Seed 004: "length per episode means a reader can build its whole sampling index from
    this file alone — no bundle I/O at startup". Opening lists every episode of the manifest;
    reading the missing one fails naming it; check reports it."""
    shutil.rmtree(bundle / "episodes" / BUNDLE_IDS[1])
    rc, out, err = run_reel("info", bundle)
    assert rc == 0, err
    manifest = json.loads((bundle / "manifest.json").read_text())
    listed = reel_mod.open(str(bundle)).episodes()
    assert [int(e["length"]) for e in listed] == [e["length"] for e in manifest["episodes"]]
    expect_unreadable(run_reel, bundle, "manifest.json", BUNDLE_IDS[1], "missing", cmd="show")
    rc, report = check_report(run_reel, bundle)
    assert rc == 1
    assert_finding(report, "foreign.bundle_episode", f"episodes/{BUNDLE_IDS[1]}", "error")


def test_bundle_missing_episode_json(run_reel, bundle):
    # The second: the first episode.json is where DetectFormat looks for schema_version.
    (bundle / "episodes" / BUNDLE_IDS[1] / "episode.json").unlink()
    expect_unreadable(run_reel, bundle, f"{BUNDLE_IDS[1]}/episode.json", "missing", "episode 1", cmd="show")


def test_bundle_length_manifest_vs_episode_json(run_reel, bundle):
    side = bundle / "episodes" / BUNDLE_IDS[1] / "episode.json"
    doc = json.loads(side.read_text())
    doc["length"] = 4
    side.write_text(json.dumps(doc))
    expect_unreadable(run_reel, bundle, f"{BUNDLE_IDS[1]}/episode.json", "length 4", "manifest.json says 3",
                      cmd="show")


def test_bundle_length_vs_data_rows(run_reel, bundle):
    m = json.loads((bundle / "manifest.json").read_text())
    m["episodes"][0]["length"] = 5
    (bundle / "manifest.json").write_text(json.dumps(m))
    side = bundle / "episodes" / BUNDLE_IDS[0] / "episode.json"
    doc = json.loads(side.read_text())
    doc["length"] = 5
    side.write_text(json.dumps(doc))
    rc, out, err = run_reel("show", bundle, 0)
    assert rc == 2
    assert_fails_naming((rc, out, err), f"{BUNDLE_IDS[0]}/data.parquet", "6 rows", "length 5")
    rc, report = check_report(run_reel, bundle)
    assert rc == 1 and "foreign.length" in error_rules(report)


def test_bundle_step_not_0_to_n(run_reel, bundle):
    p = bundle / "episodes" / BUNDLE_IDS[1] / "data.parquet"
    t = pq.read_table(p)
    t = t.set_column(0, "step", pa.array([0, 2, 1], pa.int64()))
    pq.write_table(t, p)
    rc, out, err = run_reel("show", bundle, 1)
    assert rc == 2
    assert_fails_naming((rc, out, err), f"{BUNDLE_IDS[1]}/data.parquet", "row 1", "step 2", "0..n-1")
    rc, report = check_report(run_reel, bundle)
    assert rc == 1
    assert_finding(report, "foreign.step", f"episodes/{BUNDLE_IDS[1]}/data.parquet", "error")


def test_pooled_tasks_still_use_the_pooled_reader(reel_json, tmp_path):
    from .fixtures import EpisodeSpec, write_task
    task = write_task(tmp_path, "pooled", [EpisodeSpec(1, length=3)])
    assert reel_json("info", task.path)["format"] == "pooled_episodes_v1"


def test_bundle_video_shorter_than_length(run_reel, bundle, work):
    encode(bundle / "episodes" / BUNDLE_IDS[1] / f"{BUNDLE_CAM}.mp4", 2, 30)  # 3 rows, 2 frames
    rc, report = check_report(run_reel, bundle)
    assert rc == 1
    f = assert_finding(report, "foreign.video_frames", f"episodes/{BUNDLE_IDS[1]}/{BUNDLE_CAM}.mp4", "error")
    assert "2 frames" in f["message"] and "exactly 3" in f["message"] and "episode 1" in f["message"]


def test_v3_video_shorter_than_last_span(run_reel, tmp_path, work):
    root = write_v3(tmp_path / "d", work)
    encode(root / f"videos/{CAM}/chunk-000/file-000.mp4", 14, FPS)  # spans reach 1.6 s = 16 frames
    rc, report = check_report(run_reel, root)
    assert rc == 1
    f = assert_finding(report, "foreign.video_frames", f"videos/{CAM}/chunk-000/file-000.mp4", "error")
    assert "14 frames" in f["message"] and "at least 16" in f["message"]


def test_check_a_folder_of_mixed_datasets(run_reel, tmp_path, work):
    folder = tmp_path / "all"
    write_v3(folder / "a_v3", work)
    write_v2(folder / "b_v2", work)
    write_bundle(folder / "c_bundle", work)
    from .fixtures import EpisodeSpec, write_task
    write_task(folder, "d_pooled", [EpisodeSpec(1, length=3)])
    rc, report = check_report(run_reel, folder)
    assert [t["format"] for t in report["tasks"]] == ["lerobot_v3", "lerobot_v2", "bundle", "pooled_episodes_v1"]
    assert [t["errors"] for t in report["tasks"][:3]] == [0, 0, 0]


@pytest.mark.parametrize("version", ["v2.0", "v2.1"])
def test_shared_fixtures_read_clean(reel_json, run_reel, tmp_path, version):
    """The suite's other minimal LeRobot/bundle fixtures (tests/e2e/fixtures.py) read and check clean."""
    from .fixtures import write_bundle_dataset, write_lerobot_v2
    lr = write_lerobot_v2(tmp_path, "lr", version=version)
    show = reel_json("show", lr, 0)
    assert show["rows"] == 2 and [int(v) for v in sample_values(show, "index")] == [0, 1]
    b = write_bundle_dataset(tmp_path)
    eps = reel_json("ls", b)["episodes"]
    assert [(e["bundle_id"], e["length"], e["videos"]) for e in eps] == [("ep_" + "0" * 31 + "1", 2, {})]
    for root in (lr, b):
        rc, report = check_report(run_reel, root)
        assert rc == 0, report


def test_bundle_first_episode_json_missing(run_reel, bundle):
    """Without the first sidecar the schema_version is unknown: refused, naming the sidecar."""
    (bundle / "episodes" / BUNDLE_IDS[0] / "episode.json").unlink()
    expect_unreadable(run_reel, bundle, "manifest.json", f"{BUNDLE_IDS[0]}/episode.json")
