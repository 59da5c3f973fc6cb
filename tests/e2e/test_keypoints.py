"""The keypoints mirror (contract §10; docs/maintenance.md "keypoints" and
"backfill-hand-pose"): keypoints_output/<task>/episode_{N:06d}/{hand_pose, hand_pose_3d,
auto_labels} read, validated and aligned to the data by frame_index (`reel ls/show`,
`Task.keypoints`), and `reel backfill-hand-pose` writing hand_pose_3d into the data's
observation.left_hand_pose / right_hand_pose placeholders through the episode transaction.

Tasks and keypoint files are written with pyarrow/numpy (tests/e2e/fixtures.py), independently
of reel, in the reference collector's layout BASE/data/recordings/<task> beside
BASE/keypoints_output/<task>. The kill test runs REEL_BACKFILL_KILLS rounds (10 in make test, 100 in make soak):

    REEL_BACKFILL_KILLS=100 REEL_BIN=build/cmake/tools/reel .venv/bin/python -m pytest -q -s \\
        -p no:cacheprovider tests/e2e/test_keypoints.py -k kill
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .cli_run import run_measured
from .fixtures import EpisodeSpec, data_rel, write_task
from .keypoints_common import ZERO, ep_dir, landmarks, write_3d
from .kill_campaign import kill_rounds, run_killed_after
from .recorder_common import check_clean, reel_exec

LENGTHS = {1: 6, 2: 4, 3: 5}


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def make_task(base: Path, hand_pose: bool = True) -> Path:
    eps = [EpisodeSpec(n, length=L, videos={}, hand_pose=hand_pose) for n, L in LENGTHS.items()]
    return write_task(base / "data" / "recordings", "pick", eps).path


def write_2d(path: Path, frames: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = len(frames)
    pq.write_table(pa.table({
        "frame_index": pa.array(frames, pa.int32()),
        "num_hands": pa.array([1] * n, pa.int32()),
        "hand_data": pa.array([[float(i)] * 92 for i in range(n)], pa.list_(pa.float32(), 92)),
        "track_ids": pa.array([[0, -1]] * n, pa.list_(pa.int32(), 2)),
    }), path)


def write_labels(path: Path, frames: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = len(frames)
    s = lambda v: pa.array([v] * n, pa.string())  # noqa: E731
    f = lambda v: pa.array([v] * n, pa.float32())  # noqa: E731
    b = lambda v: pa.array([v] * n, pa.bool_())  # noqa: E731
    i = lambda v: pa.array([v] * n, pa.int32())  # noqa: E731
    ext = pa.array([["Index"]] * n, pa.list_(pa.string()))
    pq.write_table(pa.table({
        "frame_index": pa.array(frames, pa.int32()), "hand_0_gesture": s("point"), "hand_0_extended": ext,
        "hand_0_extended_count": i(1), "hand_0_fist": b(False), "hand_0_pinch": b(False),
        "hand_0_center_x": f(0.5), "hand_0_center_y": f(0.25), "hand_0_motion": f(1.5),
        "hand_1_gesture": s("fist"), "hand_1_extended": ext, "hand_1_extended_count": i(0),
        "hand_1_fist": b(True), "hand_1_pinch": b(False), "hand_1_motion": f(0.0),
        "two_hand_distance": f(120.0), "contact": s("none"),
    }), path)


# Episode 1 (6 data rows): every case of contract-decisions.md "keypoints backfill".
ROWS_1 = [
    (0, (True, "Left", 10), (True, "Right", 11)),     # both sides
    (1, (True, "Right", 12), (False, "Left", 13)),    # hand 1 absent: right only
    (2, (True, "Unknown", 14), (True, "Left", 15)),   # Unknown fills nothing; left from hand 1
    (3, (True, "Left", 16), (True, "Left", 17)),      # same label twice: ambiguous, nothing
    (5, (False, "", None), (False, "", None)),        # no hand
    (9, (True, "Left", 18), (True, "Right", 19)),     # no data row 9: ignored, counted
]


def expected_sides(rows: list, length: int) -> tuple[list, list]:
    left, right = [ZERO] * length, [ZERO] * length
    for frame, h0, h1 in rows:
        if frame >= length:
            continue
        hands = [h for h in (h0, h1) if h[0] and h[1] in ("Left", "Right")]
        labels = [h[1] for h in hands]
        for h in hands:
            if labels.count(h[1]) > 1:
                continue
            row = landmarks(h[2])
            if h[1] == "Left":
                left = left[:frame] + [row] + left[frame + 1:]
            else:
                right = right[:frame] + [row] + right[frame + 1:]
    return left, right


@pytest.fixture
def task(tmp_path) -> Path:
    t = make_task(tmp_path / "BASE")
    mirror = tmp_path / "BASE" / "keypoints_output" / "pick"
    write_3d(ep_dir(mirror, 1) / "hand_pose_3d/chunk-000.parquet", ROWS_1)
    write_2d(ep_dir(mirror, 1) / "hand_pose/chunk-000.parquet", [0, 1, 2, 3, 4, 5])
    write_labels(ep_dir(mirror, 1) / "auto_labels/auto_labels.parquet", [1, 4, 7])
    write_3d(ep_dir(mirror, 2) / "hand_pose_3d/chunk-000.parquet", [(3, (True, "Right", 20), (False, "", None))])
    return t


def run_json(reel_bin, *args, ok=0) -> dict:
    rc, out, err = reel_exec(reel_bin, *args, "--json")
    assert rc == ok, f"reel {args}: exit {rc}\n{out}\n{err}"
    return json.loads(out)


def backfill(reel_bin, task: Path, *args, ok=0):
    rc, out, err = reel_exec(reel_bin, "backfill-hand-pose", task, *args)
    assert rc == ok, f"reel backfill-hand-pose {task} {args}: exit {rc}\n{out}\n{err}"
    return json.loads(out) if "--json" in args and rc == 0 else err


# --------------------------------------------------------------------------- reading


def test_ls_and_show_list_the_mirror(reel_bin, task):
    ls = run_json(reel_bin, "ls", task)
    parts = {e["episode_index"]: e["keypoints"] for e in ls["episodes"]}
    assert parts == {1: ["hand_pose", "hand_pose_3d", "auto_labels"], 2: ["hand_pose_3d"], 3: []}
    show = run_json(reel_bin, "show", task, 1)["keypoints"]
    files = {f["part"]: f for f in show["files"]}
    assert show["data_rows"] == 6
    assert (files["hand_pose_3d"]["rows"], files["hand_pose_3d"]["matched_rows"],
            files["hand_pose_3d"]["unmatched_frames"]) == (6, 5, 1)
    assert (files["hand_pose"]["rows"], files["hand_pose"]["unmatched_frames"]) == (6, 0)
    assert (files["auto_labels"]["rows"], files["auto_labels"]["unmatched_frames"]) == (3, 1)
    rc, out, _ = reel_exec(reel_bin, "show", task, 1)
    assert rc == 0 and "hand_pose_3d: 6 rows, 5 aligned to data, 1 without a data row" in out


def test_no_mirror_no_keypoints_key_and_an_explicit_folder(reel_bin, tmp_path):
    t = make_task(tmp_path / "B2")
    ls = run_json(reel_bin, "ls", t)
    assert all("keypoints" not in e for e in ls["episodes"])
    elsewhere = tmp_path / "kp_elsewhere"
    write_3d(ep_dir(elsewhere, 2) / "hand_pose_3d/chunk-000.parquet", [(0, (True, "Left", 1), (False, "", None))])
    ls = run_json(reel_bin, "ls", t, "--keypoints", elsewhere)
    assert {e["episode_index"]: e["keypoints"] for e in ls["episodes"]} == {1: [], 2: ["hand_pose_3d"], 3: []}
    rc, _, err = reel_exec(reel_bin, "ls", t, "--keypoints", tmp_path / "nowhere")
    assert rc == 2 and "nowhere" in err


def test_python_keypoints_are_aligned_tables(reel_mod, task):
    t = reel_mod.open(str(task))
    k = t.keypoints(1)
    assert set(k) == {"hand_pose", "hand_pose_3d", "auto_labels"}
    h3 = k["hand_pose_3d"]
    assert h3.column("frame_index").to_pylist() == [0, 1, 2, 3, 5, 9]
    assert h3.column("data_row").to_pylist() == [0, 1, 2, 3, 5, None]
    ts = pq.read_table(task / data_rel(1)).column("timestamp").to_pylist()
    assert h3.column("timestamp").to_pylist() == [ts[0], ts[1], ts[2], ts[3], ts[5], None]
    assert h3.schema.field("hand_0_landmarks_3d").type == pa.list_(pa.float32(), 63)
    assert h3.column("hand_1_landmarks_3d")[0].as_py() == pytest.approx(landmarks(11))
    assert k["auto_labels"].column("data_row").to_pylist() == [1, 4, None]
    assert t.keypoints(3) == {"hand_pose": None, "hand_pose_3d": None, "auto_labels": None}
    only_3d = t.keypoints(2)
    assert only_3d["hand_pose"] is None and only_3d["hand_pose_3d"].num_rows == 1


def test_variable_lists_of_the_right_length_are_accepted(reel_mod, tmp_path):
    t = make_task(tmp_path / "B3")
    mirror = tmp_path / "B3" / "keypoints_output" / "pick"
    path = ep_dir(mirror, 1) / "hand_pose_3d/chunk-000.parquet"
    write_3d(path, [(0, (True, "Left", 1), (False, "", None))])
    table = pq.read_table(path)
    for h in (0, 1):
        name = f"hand_{h}_landmarks_3d"
        table = table.set_column(table.schema.get_field_index(name), name,
                                 pa.array(table.column(name).to_pylist(), pa.list_(pa.float32())))
    pq.write_table(table, path)
    k = reel_mod.open(str(t)).keypoints(1)
    assert k["hand_pose_3d"].schema.field("hand_0_landmarks_3d").type == pa.list_(pa.float32(), 63)


@pytest.mark.parametrize("case", ["label_type", "short_landmarks", "duplicate_frame", "missing_column", "not_parquet"])
def test_hostile_files_are_refused_naming_file_and_rule(reel_bin, tmp_path, case):
    t = make_task(tmp_path / "B4")
    path = tmp_path / "B4" / "keypoints_output" / "pick" / "episode_000001" / "hand_pose_3d/chunk-000.parquet"
    rows = [(0, (True, "Left", 1), (False, "", None)), (1, (True, "Right", 2), (False, "", None))]
    expect = []
    if case == "label_type":
        write_3d(path, rows, label_type=pa.int32())
        expect = ["hand_0_label", "int32", "expected string"]
    elif case == "short_landmarks":
        write_3d(path, rows, width=62)
        expect = ["hand_0_landmarks_3d", "62", "expected 63"]
    elif case == "duplicate_frame":
        write_3d(path, [rows[0], rows[0]])
        expect = ["frame_index 0 appears more than once"]
    elif case == "missing_column":
        write_3d(path, rows)
        pq.write_table(pq.read_table(path).drop_columns(["hand_1_label"]), path)
        expect = ["hand_1_label is missing", "expected string"]
    else:
        path.parent.mkdir(parents=True)
        path.write_bytes(b"PAR1 not really")
        expect = ["not a readable parquet file"]
    before = sha(t / data_rel(1))
    err = backfill(reel_bin, t, "--json", ok=2)
    assert str(path) in err, err
    for e in expect:
        assert e in err, err
    assert sha(t / data_rel(1)) == before
    show = run_json(reel_bin, "show", t, 1)["keypoints"]  # show reports, never fails
    assert str(path) in show["error"]


def test_a_file_beyond_the_row_bound_is_refused(reel_mod, tmp_path):
    # The row bound is 10,000,000 (include/reel/keypoints.h); a file claiming more rows
    # than that is refused from its footer, before any column is read.
    t = make_task(tmp_path / "B5")
    path = tmp_path / "B5" / "keypoints_output" / "pick" / "episode_000001" / "hand_pose_3d/chunk-000.parquet"
    n = 10_000_001
    path.parent.mkdir(parents=True)
    z = pa.array(np.zeros(n, np.int32))
    pq.write_table(pa.table({"frame_index": z}), path, row_group_size=n)
    with pytest.raises(reel_mod.InvalidError, match="more than the keypoints row limit"):
        reel_mod.open(str(t)).keypoints(1)


# --------------------------------------------------------------------------- backfill


def test_backfill_fills_by_label_and_keeps_everything_else(reel_bin, task):
    data = task / data_rel(1)
    old = pq.read_table(data)
    old_meta = pq.ParquetFile(data).metadata
    stats_before = (task / "meta/stats.json").read_bytes()
    info_before = (task / "meta/info.json").read_bytes()
    dry = backfill(reel_bin, task, "--dry-run", "--json")
    assert dry["dry_run"] and dry["episodes_written"] == 0
    assert pq.read_table(data).equals(old)  # nothing written by the dry run
    report = backfill(reel_bin, task, "--json")
    e1, e2, e3 = report["episodes"]
    assert (e1["left_rows"], e1["right_rows"], e1["ambiguous_rows"], e1["unlabelled_hands"],
            e1["unmatched_rows"], e1["written"]) == (2, 2, 1, 1, 1, True)
    assert (e2["left_rows"], e2["right_rows"], e2["written"]) == (0, 1, True)
    assert e3["skipped"] == "no hand_pose_3d file" and not e3["written"]
    assert report["episodes_written"] == 2

    new = pq.read_table(data)
    left, right = expected_sides(ROWS_1, 6)
    # float32 values written by pyarrow and copied by reel: exact equality.
    assert new.column("observation.left_hand_pose").to_pylist() == left
    assert new.column("observation.right_hand_pose").to_pylist() == right
    assert new.schema.equals(old.schema, check_metadata=True)
    for name in old.column_names:
        if not name.endswith("_hand_pose"):
            assert new.column(name).equals(old.column(name)), name
    new_meta = pq.ParquetFile(data).metadata
    assert new_meta.num_row_groups == old_meta.num_row_groups
    assert [new_meta.row_group(0).column(i).compression for i in range(new_meta.num_columns)] == \
           [old_meta.row_group(0).column(i).compression for i in range(old_meta.num_columns)]
    e2_right = pq.read_table(task / data_rel(2)).column("observation.right_hand_pose").to_pylist()
    assert e2_right == [ZERO, ZERO, ZERO, landmarks(20)]
    # stats.json is unaffected (hand pose is never counted, contract §4), info.json too.
    assert (task / "meta/stats.json").read_bytes() == stats_before
    assert (task / "meta/info.json").read_bytes() == info_before
    assert reel_exec(reel_bin, "stats", task, "--verify")[0] == 0
    check_clean(reel_bin, task)

    # Idempotent: a second run writes nothing.
    hashes = {n: sha(task / data_rel(n)) for n in LENGTHS}
    again = backfill(reel_bin, task, "--json")
    assert again["episodes_written"] == 0 and not any(e["changed"] for e in again["episodes"])
    assert {n: sha(task / data_rel(n)) for n in LENGTHS} == hashes


def test_listed_episodes_and_an_explicit_mirror(reel_bin, tmp_path):
    t = make_task(tmp_path / "B6")
    mirror = tmp_path / "mirror_elsewhere"
    write_3d(ep_dir(mirror, 1) / "hand_pose_3d/chunk-000.parquet", [(0, (True, "Left", 5), (False, "", None))])
    write_3d(ep_dir(mirror, 3) / "hand_pose_3d/chunk-000.parquet", [(4, (True, "Right", 6), (False, "", None))])
    r = backfill(reel_bin, t, "3-3", "--keypoints", mirror, "--json")
    assert [e["episode_index"] for e in r["episodes"]] == [3] and r["episodes_written"] == 1
    assert pq.read_table(t / data_rel(3)).column("observation.right_hand_pose")[4].as_py() == pytest.approx(landmarks(6))
    assert pq.read_table(t / data_rel(1)).column("observation.left_hand_pose")[0].as_py() == ZERO
    err = backfill(reel_bin, t, "7", "--keypoints", mirror, "--json", ok=2)
    assert "7" in err


def test_a_task_without_hand_pose_columns_is_refused(reel_bin, tmp_path):
    t = make_task(tmp_path / "B7", hand_pose=False)
    mirror = tmp_path / "B7" / "keypoints_output" / "pick"
    write_3d(ep_dir(mirror, 1) / "hand_pose_3d/chunk-000.parquet", [(0, (True, "Left", 5), (False, "", None))])
    before = sha(t / data_rel(1))
    err = backfill(reel_bin, t, "--json", ok=2)
    assert "never adds a column" in err and str(t / data_rel(1)) in err
    assert sha(t / data_rel(1)) == before
    assert "observation.left_hand_pose" not in pq.read_table(t / data_rel(1)).column_names


def test_a_nan_landmark_is_refused_and_nothing_written(reel_bin, tmp_path):
    # Issue 27 (low): backfill wrote a NaN pose, which `reel check` then passed. A present,
    # labelled hand's landmark that is NaN (or infinite) is refused naming the file and frame.
    t = make_task(tmp_path / "B8")
    src = ep_dir(tmp_path / "B8" / "keypoints_output" / "pick", 1) / "hand_pose_3d/chunk-000.parquet"
    write_3d(src, [(0, (True, "Left", 5), (False, "", None)), (2, (True, "Right", 6), (False, "", None))])
    table = pq.read_table(src)
    lm = table.column("hand_0_landmarks_3d").to_pylist()
    lm[1][7] = float("nan")
    table = table.set_column(table.schema.get_field_index("hand_0_landmarks_3d"), "hand_0_landmarks_3d",
                             pa.array(lm, pa.list_(pa.float32(), 63)))
    pq.write_table(table, src)
    before = {n: sha(t / data_rel(n)) for n in LENGTHS}
    err = backfill(reel_bin, t, ok=2)
    assert f"{src}: frame_index 2: hand_0_landmarks_3d holds a NaN or an infinity" in err, err
    assert {n: sha(t / data_rel(n)) for n in LENGTHS} == before


def test_python_backfill(reel_mod, task):
    r = reel_mod.backfill_hand_pose(str(task), episodes=[1], dry_run=True)
    assert r["dry_run"] and r["episodes"][0]["changed"] and not r["episodes"][0]["written"]
    r = reel_mod.backfill_hand_pose(str(task), episodes=[1])
    assert r["episodes_written"] == 1
    left, _ = expected_sides(ROWS_1, 6)
    assert pq.read_table(task / data_rel(1)).column("observation.left_hand_pose").to_pylist() == left


# --------------------------------------------------------------------------- kill test


def test_kill_leaves_the_old_or_the_new_file(reel_bin, tmp_path):
    rounds = kill_rounds("REEL_BACKFILL_KILLS", quick=10, soak=100)
    base = tmp_path / "T"
    template = make_task(base)
    mirror = base / "keypoints_output" / "pick"
    write_3d(ep_dir(mirror, 1) / "hand_pose_3d/chunk-000.parquet", ROWS_1)
    write_3d(ep_dir(mirror, 2) / "hand_pose_3d/chunk-000.parquet", [(3, (True, "Right", 20), (False, "", None))])
    old = {n: sha(template / data_rel(n)) for n in LENGTHS}

    times = []
    for i in range(3):  # the fastest of three runs: the first one pays for cold caches
        timing = tmp_path / f"timing{i}"
        shutil.copytree(base, timing)
        t0 = time.monotonic()
        backfill(reel_bin, timing / "data/recordings/pick")
        times.append(time.monotonic() - t0)
    full_s = min(times)
    new = {n: sha(timing / "data/recordings/pick" / data_rel(n)) for n in LENGTHS}
    assert new[1] != old[1] and new[2] != old[2] and new[3] == old[3]

    rng = random.Random(1710)
    states: dict = {}
    for rnd in range(rounds):
        root = tmp_path / f"round{rnd}"
        shutil.copytree(base, root)
        task = root / "data/recordings/pick"
        delay = rng.uniform(0.0, full_s)
        rc, _ = run_killed_after([reel_bin, "backfill-hand-pose", str(task)], delay)
        what = f"round {rnd} (SIGKILL after {delay * 1000:.1f} ms of ~{full_s * 1000:.1f} ms)"
        assert rc in (0, -signal.SIGKILL), f"{what}: exit {rc}"
        for n in LENGTHS:
            assert sha(task / data_rel(n)) in (old[n], new[n]), f"{what}: episode {n} is neither old nor new"
        state = "".join("n" if sha(task / data_rel(n)) == new[n] else "o" for n in (1, 2))
        state += "+journal" if any(p.name.startswith(".commit") for p in (task / "meta").iterdir()) else ""
        states[state] = states.get(state, 0) + 1
        backfill(reel_bin, task)  # the re-run rolls an interrupted commit forward and finishes
        assert {n: sha(task / data_rel(n)) for n in LENGTHS} == new, what
        check_clean(reel_bin, task)
        temps = [p for p in task.rglob(".*") if p.name != ".lock" and not p.name.startswith(".episode_index")]
        assert temps == [], f"{what}: {temps} left"
        shutil.rmtree(root)
    print(f"\nbackfill-hand-pose kill test: {rounds} rounds, full run ~{full_s * 1000:.1f} ms, "
          f"episodes 1/2 after the kill (o old, n new): {dict(sorted(states.items()))}")


def test_a_small_file_that_decodes_to_gigabytes_is_refused_in_bounded_memory(reel_bin, tmp_path):
    # Issue 27 finding 8: a few-KB keypoints file whose dictionary-encoded columns decode to
    # gigabytes took `reel show` to 3.2 GB and backfill to 4.4 GB. Every parquet read is now
    # held to 32768 times the file's size plus 256 MiB plus what its footer declares of
    # fixed-width values (io/bounded_pool.h): refused, named, well under the 3.2 GB.
    t = make_task(tmp_path / "B6")
    path = ep_dir(tmp_path / "B6" / "keypoints_output" / "pick", 1) / "hand_pose_3d/chunk-000.parquet"
    path.parent.mkdir(parents=True)
    n = 100_000
    zeros = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(n * 63, np.float32)), 63)
    cols = {"frame_index": pa.array(np.zeros(n, np.int32))}
    for h in (0, 1):
        cols[f"hand_{h}_present"] = pa.array(np.zeros(n, np.bool_))
        cols[f"hand_{h}_landmarks_3d"] = zeros
        cols[f"hand_{h}_label"] = pa.array([""] * n, pa.string())
    # The extra column: one 32 KiB string, every row, dictionary-encoded: 3.2 GB decoded (written
    # without the Arrow schema, a reader sees a plain string column).
    cols["note"] = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array(["x" * 32768]))
    pq.write_table(pa.table(cols), path, row_group_size=n, compression="zstd", store_schema=False)
    assert path.stat().st_size < 8 * 1024, path.stat().st_size  # so its budget is under 512 MiB
    rc, out, err, rss = run_measured([reel_bin, "backfill-hand-pose", str(t), "--json"], tmp_path)
    assert rc == 2 and str(path) in err and "decode to" in err, err
    assert rss < 2 << 30, f"backfill peaked at {rss / 2**20:.0f} MiB"  # the column alone is 3.2 GB
    rc, out, err, rss = run_measured([reel_bin, "show", str(t), "1", "--json"], tmp_path)
    assert rc == 0 and rss < 2 << 30, (rc, rss, err)
    assert str(path) in json.loads(out)["keypoints"]["error"]
