"""Hostile input (issue: "Hostile input never crashes reel"): JSON nested without bound,
numbers out of a double's range, path templates that render gigabytes, duplicate column
names, symlink loops, a damaged mp4 index. Every command exits cleanly (< 128, a message
naming the file and the rule), quickly, and writes nothing.

The fixtures write the hostile bytes directly (raw text, pyarrow), independently of reel.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .checks import assert_fails_naming, assert_finding, check_report
from .cli_run import run_measured
from .fixtures import EpisodeSpec, write_bundle_dataset, write_task

READ_CMDS = [("info", ()), ("ls", ()), ("show", ("1",)), ("stats", ())]
DEEP = 100_000  # the probe's depth: every command crashed at 60k-100k before the bound


def deep_array(levels: int) -> str:
    return "[" * levels + "]" * levels


def replace_value(path, placeholder: str, raw: str) -> None:
    """Swaps the JSON string "placeholder" in a file for raw JSON text."""
    text = path.read_text(encoding="utf-8")
    assert f'"{placeholder}"' in text
    path.write_text(text.replace(f'"{placeholder}"', raw), encoding="utf-8")


def fails_naming(result, *needles):
    """Non-zero exit, and each needle on stdout (findings, plain or JSON) or stderr."""
    rc, out, err = result
    assert rc != 0, f"expected a non-zero exit\nstdout:\n{out[:2000]}\nstderr:\n{err[:2000]}"
    for n in needles:
        assert n in out + err, f"the error does not name {n!r}\nstdout:\n{out[:2000]}\nstderr:\n{err[:2000]}"


def run_all(run_reel, path):
    """Every read command, plain and --json, plus check: (cmd, rc, out, err) each."""
    results = []
    for cmd, extra in READ_CMDS + [("check", ())]:
        for flag in ((), ("--json",)):
            t0 = time.monotonic()
            rc, out, err = run_reel(cmd, path, *extra, *flag)
            assert time.monotonic() - t0 < 20, f"reel {cmd} took {time.monotonic() - t0:.0f} s"
            assert len(out) + len(err) < 4 << 20, f"reel {cmd} printed {len(out) + len(err)} bytes"
            results.append((cmd, rc, out, err))
    return results


# --------------------------------------------------------------------------- nested JSON


def test_deep_calibration_in_info_json(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_overrides={"calibration": "DEEP"})
    replace_value(task.path / "meta/info.json", "DEEP", deep_array(DEEP))
    for cmd, rc, out, err in run_all(run_reel, task.path):
        fails_naming((rc, out, err), "info.json", "json.depth")


@pytest.mark.parametrize("levels", [65, 50_000])
def test_deep_info_json_is_refused_quickly_at_any_depth(run_reel, tmp_path, levels):
    # 50k levels took 48 s and 13 GB before: the output grew with the square of the depth.
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_overrides={"calibration": "DEEP"})
    replace_value(task.path / "meta/info.json", "DEEP", deep_array(levels))
    t0 = time.monotonic()
    assert_fails_naming(run_reel("info", task.path, "--json"), "info.json", "json.depth")
    assert time.monotonic() - t0 < 10


def test_shallow_calibration_still_reads(run_reel, tmp_path):
    # 20 levels is deeper than anything the contract writes and well inside the bound.
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_overrides={"calibration": "DEEP"})
    replace_value(task.path / "meta/info.json", "DEEP", "{\"rig\": " + deep_array(20) + "}")
    rc, out, err = run_reel("info", task.path, "--json")
    assert rc == 0, err


def test_deep_stats_json(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    stats = json.loads((task.path / "meta/stats.json").read_text())
    stats[next(iter(stats))]["extra"] = "DEEP"
    (task.path / "meta/stats.json").write_text(json.dumps(stats))
    replace_value(task.path / "meta/stats.json", "DEEP", deep_array(DEEP))
    for cmd, rc, out, err in run_all(run_reel, task.path):
        if cmd in ("stats", "check"):
            fails_naming((rc, out, err), "stats.json", "json.depth")
        elif rc != 0:
            assert "stats.json" in err


def test_deep_tasks_jsonl(run_reel, tmp_path):
    line = '{"task_index": 0, "task": "t", "extra": ' + deep_array(DEEP) + "}\n"
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], tasks_text=line)
    for cmd, rc, out, err in run_all(run_reel, task.path):
        if cmd == "check":
            fails_naming((rc, out, err), "tasks.jsonl", "json.depth")
        elif rc != 0:
            assert "tasks.jsonl" in err


def test_deep_episodes_row_json_column(run_reel, tmp_path):
    # A JSON-string column of the episodes row (calibration) nested 100k levels.
    task = write_task(tmp_path, "t", [EpisodeSpec(1, row_overrides={"calibration": deep_array(DEEP)})])
    rc, out, err = run_reel("show", task.path, "1", "--json")
    assert rc == 0, err  # shown as the raw string it is
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    assert any("json.depth" in f["message"] for t in report["tasks"] for f in t["findings"]), report
    for cmd, rc, out, err in run_all(run_reel, task.path):
        pass  # no crash, bounded time and output (asserted by run_all and run_reel)


# --------------------------------------------------------------------------- numbers out of range


def test_number_overflow_in_info_json(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_overrides={"fps": "BIG"})
    replace_value(task.path / "meta/info.json", "BIG", "1e999")
    for cmd, rc, out, err in run_all(run_reel, task.path):
        fails_naming((rc, out, err), "info.json", "json.number")


def test_number_overflow_in_stats_json(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    text = (task.path / "meta/stats.json").read_text()
    (task.path / "meta/stats.json").write_text(text.replace('"count"', '"huge": -1e999, "count"', 1))
    for cmd, rc, out, err in run_all(run_reel, task.path):
        if cmd in ("stats", "check"):
            fails_naming((rc, out, err), "stats.json", "json.number")


def test_number_overflow_in_tasks_jsonl(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], tasks_text='{"task_index": 0, "task": "t", "w": 1e999}\n')
    for cmd, rc, out, err in run_all(run_reel, task.path):
        if cmd == "check":
            fails_naming((rc, out, err), "tasks.jsonl", "json.number")


def test_number_overflow_in_episodes_row_column(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, row_overrides={"drop_stats": '{"imu_overflow": 1e999}'})])
    rc, report = check_report(run_reel, task.path)
    assert rc == 1
    assert any("json.number" in f["message"] for t in report["tasks"] for f in t["findings"]), report
    run_all(run_reel, task.path)


def test_number_overflow_in_bundle_episode_json(run_reel, tmp_path):
    root = write_bundle_dataset(tmp_path)
    ep = sorted(root.glob("**/episode.json"))[0]
    doc = json.loads(ep.read_text())
    doc["huge"] = "BIG"
    ep.write_text(json.dumps(doc))
    replace_value(ep, "BIG", "1e999")
    # A reader indexes a bundle dataset from manifest.json alone (seed 004) and meets the sidecar
    # when it reads that episode; check reads every sidecar.
    ids = [e["id"] for e in json.loads((root / "manifest.json").read_text())["episodes"]]
    for argv in (("check", root), ("show", root, ids.index(ep.parent.name))):
        rc, out, err = run_reel(*argv, "--json")
        assert rc != 0
        assert "json.number" in out + err, out + err


# --------------------------------------------------------------------------- path templates


@pytest.mark.parametrize(
    "template,needle",
    [
        ("data/chunk-{c:999999999d}/episode-{f:03d}.parquet", "width"),
        ("data/chunk-{c:99999999999999999999d}/episode-{f:03d}.parquet", "width"),
        ("data/" + "x" * 600 + "/episode-{f:03d}.parquet", "512"),
        ("data/{image_key}a{image_key}b{ext}c/episode-{f:03d}.parquet", "string placeholders"),
    ],
)
def test_hostile_path_template(run_reel, tmp_path, template, needle):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)], info_overrides={"data_path": template})
    for cmd, rc, out, err in run_all(run_reel, task.path):
        fails_naming((rc, out, err), "path template", needle)


# --------------------------------------------------------------------------- data files


def test_duplicate_data_column_names(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    path = task.path / task.ep(1).data_rel
    table = pq.read_table(path)
    table = table.append_column("timestamp", table.column("timestamp"))  # pyarrow allows it
    pq.write_table(table, path)
    for cmd, rc, out, err in run_all(run_reel, task.path):
        if cmd in ("show", "check"):
            fails_naming((rc, out, err), "episode-000.parquet", "timestamp", "appears more than once")


def test_symlink_loops_in_a_folder_of_tasks(run_reel, tmp_path):
    root = tmp_path / "tasks"
    write_task(root, "good", [EpisodeSpec(1)])
    os.symlink("loop", root / "loop")  # loop -> loop
    os.symlink("b", root / "a")
    os.symlink("a", root / "b")
    os.symlink(".", root / "good" / "self")  # a directory loop inside a task
    os.symlink("..", root / "good" / "meta" / "up")
    rc, out, err = run_reel("check", root, "--json")
    assert rc in (0, 1, 2), err
    rc, out, err = run_reel("check", root)
    assert "good" in out + err


def test_scratch_directories_do_not_outlive_an_export(reel_bin, tmp_path):
    # A crash mid-export used to leave reel-export-* directories in $TMPDIR for good.
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    dead = tmpdir / "reel-export-99999999-a1b2c3"  # a pid above pid_max: its owner is gone
    old = tmpdir / "reel-export-a1b2c3"  # unnumbered (older versions), two days old
    live = tmpdir / f"reel-export-{os.getpid()}-a1b2c3"  # its owner (this test) is alive
    for d in (dead, old, live):
        d.mkdir()
        (d / "part.mp4").write_bytes(b"x")
    os.utime(old, (time.time() - 2 * 86400, time.time() - 2 * 86400))
    for d in (dead, live):  # both untouched for an hour: only the dead owner's goes
        os.utime(d, (time.time() - 3600, time.time() - 3600))
    fresh = tmpdir / "reel-export-99999998-d4e5f6"  # owner gone, but touched just now: kept
    fresh.mkdir()
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    env = dict(os.environ, TMPDIR=str(tmpdir))
    proc = subprocess.run([reel_bin, "export", str(task.path), str(tmp_path / "out"), "--to", "lerobot-v3"],
                          env=env, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    assert sorted(p.name for p in tmpdir.iterdir() if p.name.startswith("reel-export")) == sorted([live.name, fresh.name])


# --------------------------------------------------------------------------- a damaged mp4 index


def zero_stco_tail(path, keep: int = 0) -> int:
    """Zeroes the chunk offsets of the mp4's stco/co64 boxes after the first `keep` (small files hold one chunk)."""
    data = bytearray(path.read_bytes())
    zeroed = 0
    for box, width in ((b"stco", 4), (b"co64", 8)):
        at = data.find(box)
        while at >= 0:
            count = struct.unpack(">I", data[at + 8 : at + 12])[0]
            first = at + 12
            if count < 1 << 20 and first + count * width <= len(data):
                for i in range(keep, count):
                    data[first + i * width : first + (i + 1) * width] = b"\0" * width
                    zeroed += 1
            at = data.find(box, at + 4)
    path.write_bytes(bytes(data))
    return zeroed


def test_mp4_with_zeroed_chunk_offsets(run_reel, reel_bin, tmp_path, tmp_path_factory):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, length=30, videos={"d435_rgb": "mp4"})])
    video = task.path / task.ep(1).videos["d435_rgb"]
    assert zero_stco_tail(video) > 0
    out = tmp_path_factory.mktemp("frames")
    for at in ("0", "29", "15,3,29"):
        proc = subprocess.run([reel_bin, "frames", str(task.path), "1", "--slot", "d435_rgb", "--at", at,
                               "-o", str(out)], capture_output=True, text=True, timeout=60)
        assert 0 <= proc.returncode < 128, proc.stderr
        if proc.returncode != 0:
            assert "episode-000.mp4" in proc.stderr, proc.stderr
    rc, report = check_report(run_reel, task.path)
    assert rc == 1, "check must flag a video whose frames cannot all be read"
    assert_finding(report, "video.unreadable")


# --------------------------------------------------------------------------- pack's output


@pytest.mark.parametrize("kind", ["symlink", "dangling", "fifo"])
def test_pack_never_replaces_what_is_not_a_regular_file(reel_bin, tmp_path, kind):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    target = out / "slice.zip"
    if kind == "symlink":
        os.symlink(victim, target)
    elif kind == "dangling":
        os.symlink(tmp_path / "nowhere", target)
    else:
        os.mkfifo(target)
    proc = subprocess.run([reel_bin, "pack", str(task.path), "1", "-o", str(target)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "slice.zip" in proc.stderr
    assert victim.read_text() == "keep me"
    if kind == "fifo":
        assert stat_kind(target) == "fifo"
    else:
        assert os.path.islink(target)
    assert sorted(p.name for p in out.iterdir()) == ["slice.zip"], "no temp left behind"


def stat_kind(path) -> str:
    import stat

    mode = os.lstat(path).st_mode
    return "fifo" if stat.S_ISFIFO(mode) else "link" if stat.S_ISLNK(mode) else "file"


def test_pack_still_replaces_its_own_zip_with_force(reel_bin, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    target = tmp_path / "slice.zip"
    for _ in range(2):
        proc = subprocess.run([reel_bin, "pack", str(task.path), "1", "-o", str(target), "--force"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------- values check accepted


def _check_rules(run_reel, path) -> set:
    rc, report = check_report(run_reel, path)
    return {(f["rule"], f["severity"]) for t in report["tasks"] for f in t["findings"]}


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0])
def test_duration_sec_must_be_finite_and_not_negative(run_reel, tmp_path, value):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, row_overrides={"duration_sec": value})])
    assert ("episodes.values", "error") in _check_rules(run_reel, task.path)


def test_task_index_must_not_be_negative(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, row_overrides={"task_index": -1})])
    assert ("episodes.values", "error") in _check_rules(run_reel, task.path)
    task = write_task(tmp_path, "u", [EpisodeSpec(1, extra_columns={"task_index": pa.array([0, -1, 0], pa.int64())})])
    assert ("data.key_column", "error") in _check_rules(run_reel, task.path)


@pytest.mark.parametrize("values", [[0.0, float("nan"), 0.2], [0.0, 0.2, 0.1], [0.0, float("inf"), 0.2]])
def test_timestamp_must_be_finite_and_in_order(run_reel, tmp_path, values):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, extra_columns={"timestamp": pa.array(values, pa.float32())})])
    assert ("data.time_order", "error") in _check_rules(run_reel, task.path)


def test_wall_time_must_be_in_order(run_reel, tmp_path):
    wall = pa.array([1.79e9 + 0.2, 1.79e9 + 0.1, 1.79e9 + 0.3], pa.float64())
    task = write_task(tmp_path, "t", [EpisodeSpec(1, extra_columns={"wall_time": wall})])
    assert ("data.time_order", "error") in _check_rules(run_reel, task.path)


def test_good_task_has_none_of_the_new_findings(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2)])
    rules = {r for r, _ in _check_rules(run_reel, task.path)}
    assert not rules & {"episodes.values", "data.time_order", "video.stream_kind", "video.resolution"}, rules


def test_rgb_stream_in_a_depth_slot(run_reel, tmp_path):
    from .fixtures import video_bytes

    task = write_task(tmp_path, "t", [EpisodeSpec(1, videos={"d435_rgb": "mp4", "d435_depth": "mp4"})],
                      info_overrides=None)
    depth = task.path / task.ep(1).videos["d435_depth"]
    depth.write_bytes(video_bytes("mp4", False, 3))  # an RGB H.264 stream under the depth slot
    assert ("video.stream_kind", "error") in _check_rules(run_reel, task.path)


def test_video_resolution_differs_from_cameras(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    info = json.loads((task.path / "meta/info.json").read_text())
    cam = info["cameras"]["d435_rgb"]
    cam["width"], cam["height"] = cam["width"] * 2, cam["height"] * 2
    (task.path / "meta/info.json").write_text(json.dumps(info, indent=2))
    assert ("video.resolution", "warning") in _check_rules(run_reel, task.path)


# --------------------------------------------------------------------------- JSON size from stat


@pytest.mark.parametrize("name, commands", [("meta/info.json", ("info", "check")), ("meta/stats.json", ("check",))])
def test_a_huge_json_file_is_refused_from_its_size_before_it_is_read(reel_bin, tmp_path, name, commands):
    # Issue 27 finding 11: a 1 GiB info.json cost 2.1 GB before the parser's 64 MiB bound
    # applied. Its size is known from a stat: refused (json.size) before reading it.
    task = write_task(tmp_path, "t", [EpisodeSpec(1)])
    target = task.path / name
    with open(target, "r+b" if target.exists() else "wb") as f:
        f.truncate(1 << 30)  # sparse: 1 GiB that costs no disk
    for cmd in commands:
        rc, _, err, rss = run_measured([reel_bin, cmd, task.path], tmp_path)
        assert rc in (1, 2), (cmd, rc, err)
        assert rss < 256 << 20, f"reel {cmd} peaked at {rss / 2**20:.0f} MiB"
        if cmd == "info":
            assert "json.size" in err and name in err, err
