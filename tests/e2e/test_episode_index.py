"""The episode index (meta/.episode_index.parquet): a validated cache of the episodes rows and
data footers, never the truth (docs/architecture.md "The episode index").

The task is written here with pyarrow alone (no reel), 40 episodes so that listings use the index
(batches of 32 or more); the expected values come from the same pyarrow tables. Every case
compares `reel ls --json` and `reel.open(...).episodes()` with them: no index, the index as
written, deleted, corrupted, of another version, stale because pyarrow appended episodes or
rewrote a row in place, and an episode's data removed.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .checks import assert_unchanged, snapshot
from .cli_run import reel

FPS = 30
INDEX = "meta/.episode_index.parquet"
LISTING = "meta/.episode_index.listing.parquet"
COLUMNS = ["episode_index", "frame_index", "timestamp", "task_index", "action"]
ROW_SCHEMA = pa.schema([
    ("episode_index", pa.int64()), ("task_index", pa.int64()), ("start_frame_index", pa.int64()),
    ("end_frame_index", pa.int64()), ("length", pa.int64()), ("created_at", pa.float64()),
    ("duration_sec", pa.float64()), ("drop_stats", pa.string()), ("video_codec", pa.string()),
    ("calibration", pa.string()), ("force_matrix_specs", pa.string()),
])


def paths(n: int) -> tuple[str, str]:
    c, f = (n - 1) // 1000, (n - 1) % 1000
    return f"data/chunk-{c:03d}/episode-{f:03d}.parquet", f"meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet"


def write_episode(task: Path, n: int, length: int, extra_column: bool = False) -> None:
    data, row = paths(n)
    cols = {"episode_index": pa.array([n] * length, pa.int64()), "frame_index": pa.array(range(length), pa.int64()),
            "timestamp": pa.array([i / FPS for i in range(length)], pa.float32()),
            "task_index": pa.array([0] * length, pa.int64()),
            "action": pa.FixedSizeListArray.from_arrays(pa.array([0.0] * length, pa.float32()), 1)}
    if extra_column:
        cols["observation.extra"] = pa.array([1.0] * length, pa.float64())
    (task / data).parent.mkdir(parents=True, exist_ok=True)
    (task / row).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(cols), task / data)
    values = [[n], [0], [0], [length - 1], [length], [1.79e9 + n], [length / FPS],
              ["{}"], ['{"cam": "h264"}'], [json.dumps({"episode": n})], ["{}"]]
    pq.write_table(pa.Table.from_arrays([pa.array(v, f.type) for v, f in zip(values, ROW_SCHEMA)],
                                        schema=ROW_SCHEMA), task / row)


def settle(task: Path, age_s: int) -> None:
    """Sets every file and directory's mtime to `age_s` ago, as for a task recorded earlier: the
    index remembers only what was last modified more than 2 s before it looked. Each call in a
    test uses another age, so that what changed in between never gets back an old mtime."""
    t = time.time_ns() - age_s * 1_000_000_000
    for p in [task, *task.rglob("*")]:
        if not p.name.startswith(".episode_index"):
            os.utime(p, ns=(t, t))


def expected(task: Path) -> dict:
    """N -> (length, duration_sec, data columns or None), read with pyarrow from the files."""
    out = {}
    for row in sorted((task / "meta/episodes").rglob("episode-*.parquet")):
        t = pq.read_table(row)
        n = t["episode_index"][0].as_py()
        data = task / paths(n)[0]
        out[n] = (t["length"][0].as_py(), t["duration_sec"][0].as_py(),
                  pq.read_schema(data).names if data.exists() else None)
    return out


def listed(reel_bin: str, task: Path) -> dict:
    eps = json.loads(reel(reel_bin, "ls", task, "--json").stdout)["episodes"]
    return {e["episode_index"]: (e["length"], e["duration_sec"], e["columns"] if e["has_data"] else None)
            for e in eps}


def python_listed(reel_mod, task: Path) -> dict:
    return {e["episode_index"]: (e["length"], e["duration_sec"], e["columns"] if e["has_data"] else None)
            for e in reel_mod.open(str(task)).episodes()}


@pytest.fixture()
def task(tmp_path):
    root = tmp_path / "task"
    for n in range(1, 41):
        write_episode(root, n, 20 + n % 7, extra_column=n % 5 == 0)
    info = {"format": "pooled_episodes_v1", "chunks_size": 1000, "codebase_version": "v3.0", "fps": FPS,
            "data_path": "data/chunk-{c:03d}/episode-{f:03d}.parquet",
            "video_path": "videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext}",
            "episodes_path": "meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet",
            "task_name": "pick", "video": False, "features": {"action": {"dtype": "float32", "shape": [1]}},
            "total_episodes": 40}
    (root / "meta/info.json").write_text(json.dumps(info))
    (root / "meta/tasks.jsonl").write_text('{"task_index": 0, "task": "pick"}\n')
    settle(root, 3600)
    return root


def test_the_index_is_written_and_agrees(reel_bin, reel_mod, task):
    want = expected(task)
    assert not (task / INDEX).exists()
    assert listed(reel_bin, task) == want
    assert (task / INDEX).is_file(), "the first listing of 40 episodes writes the index"
    index = pq.read_table(task / INDEX)
    assert sorted(index["episode_index"].to_pylist()) == list(range(1, 41))
    dirs = pq.read_table(task / LISTING).to_pydict()
    assert {"data/chunk-000", "meta/episodes/chunk-000", "data", "meta/episodes"} <= set(dirs["dir"])
    at = dirs["dir"].index("data/chunk-000")
    assert dirs["names"][at] == sorted(os.listdir(task / "data/chunk-000"))
    assert listed(reel_bin, task) == want
    assert python_listed(reel_mod, task) == want
    # A dotfile: not part of the task. (This hand-made task breaks other rules; the findings
    # must be the same with and without the index.)
    with_index = reel(reel_bin, "check", task, "--json", ok=1).stdout
    assert ".episode_index" not in with_index
    (task / INDEX).unlink()
    assert reel(reel_bin, "check", task, "--json", ok=1).stdout == with_index


def test_a_hit_is_served_from_the_index(reel_bin, task):
    """White box: a row rewritten in place is not re-read by a listing while its directory keeps
    its modification time (the index's blind spot, which no contract writer hits: they rename a
    new file in, which moves the directory's time). reel check stats every file and reads the
    rewritten one; the listings after it show what it read; a rename in the directory makes a
    listing stat its files again."""
    listed(reel_bin, task)
    listed(reel_bin, task)  # the second listing remembers the files' stamps with their directory
    _, row = paths(7)
    row_dir = (task / row).parent
    st, dir_st = os.stat(task / row), os.stat(row_dir)
    t = pq.read_table(task / row)
    t = t.set_column(4, "length", pa.array([t["length"][0].as_py() + 1], pa.int64()))  # same size
    pq.write_table(t, task / row)
    assert os.stat(task / row).st_size == st.st_size
    assert os.stat(row_dir).st_mtime_ns == dir_st.st_mtime_ns, "rewritten in place"
    os.utime(task / row, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert listed(reel_bin, task)[7][0] == expected(task)[7][0] - 1, "the remembered length"
    reel(reel_bin, "check", task, "--json", ok=1)
    assert listed(reel_bin, task) == expected(task), "read again by check"
    # The same rewrite followed by a rename in its directory (as any contract writer makes).
    pq.write_table(t.set_column(4, "length", pa.array([t["length"][0].as_py() + 1], pa.int64())), task / row)
    (row_dir / ".other.tmp").write_bytes(b"x")
    os.rename(row_dir / ".other.tmp", row_dir / ".other")
    (row_dir / ".other").unlink()
    settle(task, 3000)
    assert listed(reel_bin, task)[7][0] == expected(task)[7][0], "its directory changed: stat-ed and read again"


def test_episodes_of_some_n(reel_mod, task, unchanged):
    """Task.episodes(episodes=[...]): those N in the order given, the same dicts as the whole
    listing's, each found without listing the task (reel report / view of one episode); 40
    rows read would write the index of this settled task, one does not. NotFoundError for an N
    the task does not hold."""
    t = reel_mod.open(str(task))
    with unchanged("Task.episodes(episodes=[7, 3])"):
        some = t.episodes(episodes=[7, 3])
    whole = {e["episode_index"]: e for e in t.episodes()}
    assert some == [whole[7], whole[3]]
    with pytest.raises(reel_mod.NotFoundError, match="41"):
        t.episodes(episodes=[3, 41])


def test_check_leaves_a_settled_task_as_it_found_it(reel_bin, task):
    """reel check only reads: on a settled task with no index, or a stale one, it writes none
    (stop 42's CI: check, which stats every file, wrote an index it had no need to write). It
    writes the index only to correct a file rewritten in place (test_a_hit_is_served_from_the_index)."""
    def check_unchanged(what: str) -> None:
        before = snapshot(task)
        reel(reel_bin, "check", task, "--json", ok=1)  # the fixture's info.json is minimal: errors
        assert_unchanged(before, snapshot(task), f"reel check ({what})")

    check_unchanged("no index")
    listed(reel_bin, task)
    for n in (41, 42):
        write_episode(task, n, 25)
    info = json.loads((task / "meta/info.json").read_text())
    (task / "meta/info.json").write_text(json.dumps({**info, "total_episodes": 42}))
    settle(task, 1800)
    check_unchanged("an index without episodes 41 and 42")


@pytest.mark.parametrize("which", [INDEX, LISTING])
@pytest.mark.parametrize("damage", ["deleted", "garbage", "truncated", "empty", "other_version", "other_columns"])
def test_a_damaged_index_is_rebuilt(reel_bin, reel_mod, task, damage, which):
    want = expected(task)
    listed(reel_bin, task)
    path = task / which
    if damage == "deleted":
        path.unlink()
    elif damage == "garbage":
        path.write_bytes(os.urandom(4096))
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:-100])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "other_version":
        t = pq.read_table(path)
        t = t.replace_schema_metadata({"reel.episode_index": "999"})
        if which == INDEX:
            t = t.set_column(t.schema.get_field_index("length"), "length", pa.array([1] * t.num_rows, pa.int64()))
        else:
            t = t.set_column(t.schema.get_field_index("names"), "names", pa.array([[]] * t.num_rows, t["names"].type))
        pq.write_table(t, path)
    else:
        pq.write_table(pa.table({"episode_index": pa.array([1], pa.int64())}).replace_schema_metadata(
            {"reel.episode_index": "1"}), path)
    assert listed(reel_bin, task) == want
    assert python_listed(reel_mod, task) == want
    if which == INDEX:
        assert pq.read_table(task / INDEX).num_rows == 40, "rewritten whole"
    else:
        assert "data/chunk-000" in pq.read_table(task / LISTING)["dir"].to_pylist(), "rewritten"


@pytest.mark.parametrize("forgery", ["unsorted", "parent", "slash", "duplicate", "bad_kind"])
def test_a_forged_listing_is_listed_again(reel_bin, reel_mod, task, forgery):
    """A remembered listing whose names a listing could not give (out of order, "..", a
    path, a name twice, a kind other than file or directory) is not served: the directory
    is listed again, and no name from the forged file reaches a path."""
    want = expected(task)
    listed(reel_bin, task)
    t = pq.read_table(task / LISTING)
    rows = t.to_pylist()
    for row in rows:
        names, kinds = row["names"], row["kinds"]
        if forgery == "unsorted":
            row["names"], row["kinds"] = names[::-1], kinds[::-1]
        elif forgery == "parent":
            row["names"] = [".."] + names[1:]
        elif forgery == "slash":
            row["names"] = ["../../outside/" + names[0]] + names[1:]
        elif forgery == "duplicate":
            row["names"] = [names[0]] + names[:-1]
        else:
            row["kinds"] = "x" + kinds[1:]
    pq.write_table(pa.Table.from_pylist(rows, schema=t.schema), task / LISTING)
    assert listed(reel_bin, task) == want
    # Listed again, so remembered again as the directories give it: a forged listing that
    # was served instead would have been kept as written.
    for row in pq.read_table(task / LISTING).to_pylist():
        names = row["names"]
        assert names == sorted(set(names)) and ".." not in names, (forgery, row["dir"], names[:3])
        assert not any("/" in n for n in names) and set(row["kinds"]) <= {"f", "d"}, (forgery, row["dir"])
    assert python_listed(reel_mod, task) == want


def test_a_stale_index_sees_what_pyarrow_wrote(reel_bin, reel_mod, task):
    listed(reel_bin, task)
    write_episode(task, 41, 33, extra_column=True)  # appended the way another writer would
    write_episode(task, 42, 12)
    write_episode(task, 3, 55)                      # a row and data rewritten in place
    (task / paths(9)[0]).unlink()                   # data removed (deleted after upload)
    want = expected(task)
    assert want[41][0] == 33 and want[3][0] == 55 and want[9][2] is None
    assert listed(reel_bin, task) == want
    assert python_listed(reel_mod, task) == want
    settle(task, 1800)
    assert listed(reel_bin, task) == want
    index = pq.read_table(task / INDEX).to_pylist()
    by_n = {r["episode_index"]: r for r in index}
    assert by_n[41]["length"] == 33 and by_n[3]["length"] == 55, "refreshed by the listing"


def test_an_index_that_cannot_be_read_or_written_changes_nothing(reel_bin, task):
    """Runs as root too (CI): a directory where the index would be can be neither read as
    parquet nor replaced by a rename."""
    (task / INDEX).mkdir()
    assert listed(reel_bin, task) == expected(task)
    assert (task / INDEX).is_dir()


def test_an_unwritable_task_is_listed_without_an_index(reel_bin, task):
    if os.geteuid() == 0:
        pytest.skip("root writes into a read-only directory")
    meta = task / "meta"
    meta.chmod(0o555)
    try:
        assert listed(reel_bin, task) == expected(task)
        assert not (task / INDEX).exists()
    finally:
        meta.chmod(0o755)


def test_python_modes(reel_mod, task):
    want = expected(task)
    assert python_listed_mode(reel_mod, task, "off") == want and not (task / INDEX).exists()
    assert python_listed_mode(reel_mod, task, "read") == want and not (task / INDEX).exists()
    assert python_listed_mode(reel_mod, task, "update") == want and (task / INDEX).exists()
    write_episode(task, 41, 30)
    before = (task / INDEX).read_bytes()
    assert python_listed_mode(reel_mod, task, "read") == expected(task)
    assert (task / INDEX).read_bytes() == before, "'read' uses a stale index without rewriting it"
    with pytest.raises(reel_mod.InvalidError, match="episode_index"):
        reel_mod.open(str(task), episode_index="sometimes")


def python_listed_mode(reel_mod, task: Path, mode: str) -> dict:
    return {e["episode_index"]: (e["length"], e["duration_sec"], e["columns"] if e["has_data"] else None)
            for e in reel_mod.open(str(task), episode_index=mode).episodes()}


def test_a_listing_is_served_while_its_directory_is_unchanged(reel_bin, task):
    """White box: an episode added with every directory's mtime put back (the listings' one
    blind spot, like the rows'; no writer does that) is not seen; another mtime lists again."""
    listed(reel_bin, task)
    dirs = [task / "data/chunk-000", task / "meta/episodes/chunk-000"]
    before = [os.stat(d) for d in dirs]
    write_episode(task, 41, 30)
    for d, st in zip(dirs, before):
        os.utime(d, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert 41 not in listed(reel_bin, task), "both directories answered from the listings"
    settle(task, 1800)
    assert listed(reel_bin, task) == expected(task)


def test_fresh_files_and_directories_are_not_remembered(reel_bin, task, tmp_path):
    """What was modified less than 2 s before it was looked at may change again within the same
    mtime tick: it is read every time until it settles."""
    write_episode(task, 41, 30)  # fresh: its row, data and both directories
    want = expected(task)
    assert listed(reel_bin, task) == want
    by_n = {r["episode_index"]: r for r in pq.read_table(task / INDEX).to_pylist()}
    assert 41 not in by_n and 40 in by_n
    dirs = pq.read_table(task / LISTING)["dir"].to_pylist()
    assert "data/chunk-000" not in dirs and "meta/episodes/chunk-000" not in dirs and "data" in dirs
    write_episode(task, 42, 31)  # unseen by an index that had remembered chunk-000
    assert listed(reel_bin, task) == expected(task)


def _hide_a_new_episode(reel_bin, task: Path, garbage: bool) -> None:
    """Episode 41 added behind the listing cache: its directories' mtimes put back, as a copy
    made with them kept (tar, rsync -a) would show a cache that omits it."""
    listed(reel_bin, task)
    dirs = [task / "data/chunk-000", task / "meta/episodes/chunk-000"]
    before = [os.stat(d) for d in dirs]
    write_episode(task, 41, 30)
    if garbage:
        (task / paths(41)[0]).write_bytes(b"garbage, not a parquet file")
    for d, st in zip(dirs, before):
        os.utime(d, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert 41 not in listed(reel_bin, task), "the cache answers ls (the test's premise)"


def test_a_listing_cache_hides_nothing_from_check(reel_bin, task):
    """Issue 27 finding 10: check said OK on a task whose garbage data file the listing cache
    hid. It lists every directory (TaskOptions::listing_cache = false)."""
    _hide_a_new_episode(reel_bin, task, garbage=True)
    proc = reel(reel_bin, "check", task, "--json", ok=1)
    report = json.loads(proc.stdout)
    findings = report.get("findings") or [f for t in report.get("tasks", []) for f in t.get("findings", [])]
    assert any(paths(41)[0] in f["path"] and f["severity"] == "error" for f in findings), findings


def test_a_listing_cache_hides_nothing_from_push(reel_bin, task, tmp_path):
    _hide_a_new_episode(reel_bin, task, garbage=False)
    dest = tmp_path / "pushed"
    reel(reel_bin, "push", task, dest)
    assert (dest / paths(41)[0]).exists() and (dest / paths(41)[1]).exists()
