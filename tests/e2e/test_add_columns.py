"""`reel add-columns` (docs/maintenance.md "add-columns"; multi-device §4.7): columns of a
parquet file appended to an existing episode's data aligned by frame_index, declared in
info.json features, counted in stats.json when the contract counts them, in one commit; the
refusals (existing column, reserved suffix, name rules, _ns lockstep, a type other episodes
declared otherwise, unmatched source rows).

Tasks and source files are written with pyarrow/numpy (tests/e2e/fixtures.py), independently
of reel.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .fixtures import EpisodeSpec, data_rel, write_task
from .recorder_common import check_clean, reel_exec

LENGTHS = {1: 6, 2: 4}
EGO = "observation.ego_slam_trajectory"
EGO_NS = EGO + "_ns"
DECL = {EGO: {"frame": "ego_cam_optical", "frame_axes": {"+X": "right", "+Y": "down", "+Z": "forward"},
              "time": {"t": "sensor_s", "clock": "camera_sensor", "epoch": "first_frame"},
              "owner": {"role": "ego"}, "source_slot": "stereo_left"}}


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture
def task(tmp_path) -> Path:
    eps = [EpisodeSpec(n, length=L, videos={}) for n, L in LENGTHS.items()]
    return write_task(tmp_path, "pick", eps).path


def point(t: float) -> list:
    return [t, 1.0 + t, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]


def ego_source(path: Path, frames=(1, 3, 4), counts=(1, 2, 1), ns_counts=None) -> tuple[list, list]:
    """Source rows for `frames`: `counts` points each; returns (points, ns) per source row."""
    pts, ns = [], []
    t = 0.0
    for c in counts:
        row_p, row_n = [], []
        for _ in range(c):
            t += 0.1
            row_p += point(t)
            row_n.append(int(7_000_000_000 + t * 1e9))
        pts.append(row_p)
        ns.append(row_n)
    if ns_counts is not None:
        ns = [n[:k] for n, k in zip(ns, ns_counts)]
    pq.write_table(pa.table({
        "frame_index": pa.array(list(frames), pa.int64()),
        EGO: pa.array(pts, pa.list_(pa.float64())),
        EGO_NS: pa.array(ns, pa.list_(pa.int64())),
    }), path)
    return pts, ns


def add(reel_bin, task, n, source, *args, ok=0):
    rc, out, err = reel_exec(reel_bin, "add-columns", task, n, "--from", source, *args)
    assert rc == ok, f"reel add-columns {n} {args}: exit {rc}\n{out}\n{err}"
    return json.loads(out) if rc == 0 and "--json" in args else err


def test_ego_slam_trajectory_is_added_declared_and_aligned(reel_bin, task, tmp_path):
    src = tmp_path / "ego.parquet"
    pts, ns = ego_source(src)
    old = pq.read_table(task / data_rel(1))
    stats_before = (task / "meta/stats.json").read_bytes()
    other_before = sha(task / data_rel(2))
    dry = add(reel_bin, task, 1, src, "--features", json.dumps(DECL), "--dry-run", "--json")
    assert dry["dry_run"] and not dry["written"]
    assert pq.read_table(task / data_rel(1)).equals(old)

    r = add(reel_bin, task, 1, src, "--features", json.dumps(DECL), "--json")
    assert (r["data_rows"], r["source_rows"], r["filled_rows"], r["unmatched_rows"], r["written"]) == (6, 3, 3, 0, True)
    assert [c["name"] for c in r["columns"]] == [EGO, EGO_NS] and not any(c["counted"] for c in r["columns"])
    new = pq.read_table(task / data_rel(1))
    assert new.column_names == old.column_names + [EGO, EGO_NS]
    assert new.column(EGO).to_pylist() == [[], pts[0], [], pts[1], pts[2], []]
    assert new.column(EGO_NS).to_pylist() == [[], ns[0], [], ns[1], ns[2], []]
    assert new.schema.field(EGO).type == pa.list_(pa.float64())
    for name in old.column_names:
        assert new.column(name).equals(old.column(name)), name
    assert new.schema.metadata == old.schema.metadata

    features = json.loads((task / "meta/info.json").read_text())["features"]
    assert {k: features[EGO].get(k) for k in DECL[EGO]} == DECL[EGO]
    assert (features[EGO]["dtype"], features[EGO]["shape"], features[EGO]["encoding"]) == \
        ("float64", [8], "flat_points_8_txyz_qxyzw")
    assert features[EGO_NS]["dtype"] == "int64" and features[EGO_NS]["clock"] == "host_monotonic_ns"
    # Not counted (multi-device §4.7 trajectories have no stats block): stats.json unchanged.
    assert json.loads((task / "meta/stats.json").read_bytes()) == json.loads(stats_before)
    assert reel_exec(reel_bin, "stats", task, "--verify")[0] == 0
    assert sha(task / data_rel(2)) == other_before
    check_clean(reel_bin, task)  # episode 2 lacks the columns: sparse columns are allowed

    # Again: the columns exist now.
    err = add(reel_bin, task, 1, src, ok=2)
    assert "already exists" in err and EGO in err
    # --replace with the same values changes nothing; with other values rewrites.
    assert add(reel_bin, task, 1, src, "--replace", "--json")["written"] is False
    pts2, _ = ego_source(src, frames=(0,), counts=(2,))
    r = add(reel_bin, task, 1, src, "--replace", "--json")
    assert r["written"] and all(c["replaced"] for c in r["columns"])
    assert pq.read_table(task / data_rel(1)).column(EGO).to_pylist() == [pts2[0], [], [], [], [], []]
    check_clean(reel_bin, task)


def test_a_counted_glove_column_updates_stats(reel_bin, task, tmp_path):
    rng = np.random.default_rng(7)
    vals = rng.uniform(0, 50, size=(3, 256)).astype(np.float32)
    src = tmp_path / "glove.parquet"
    pq.write_table(pa.table({
        "frame_index": pa.array([0, 2, 3], pa.int32()),
        "observation.right_glove": pa.FixedSizeListArray.from_arrays(pa.array(vals.reshape(-1)), 256),
    }), src)
    r = add(reel_bin, task, 2, src, "--json")
    assert r["columns"][0]["counted"] and r["written"]
    rows = np.zeros((4, 256), np.float32)
    rows[[0, 2, 3]] = vals
    block = json.loads((task / "meta/stats.json").read_text())["observation.right_glove"]
    assert block["count"] == 4
    assert block["mean"] == pytest.approx(rows.astype(np.float64).mean(axis=0).tolist(), rel=1e-6, abs=1e-9)
    assert block["std"] == pytest.approx(rows.astype(np.float64).std(axis=0).tolist(), rel=1e-5, abs=1e-6)
    assert block["max"] == pytest.approx(rows.max(axis=0).tolist())
    features = json.loads((task / "meta/info.json").read_text())["features"]
    assert features["observation.right_glove"] == {"dtype": "float32", "shape": [16, 16]}
    assert "right_glove" in json.loads((task / "meta/info.json").read_text())["sensors"]
    assert reel_exec(reel_bin, "stats", task, "--verify")[0] == 0
    check_clean(reel_bin, task)
    err = add(reel_bin, task, 2, src, "--replace", ok=2)
    assert "counted in stats.json" in err


def write_source(path: Path, name: str, array: pa.Array, frames=None) -> Path:
    frames = list(range(len(array))) if frames is None else frames
    pq.write_table(pa.table({"frame_index": pa.array(frames, pa.int64()), name: array}), path)
    return path


@pytest.mark.parametrize("case", ["reserved_suffix", "bad_name", "retired_name", "not_observation", "ns_mismatch",
                                  "ns_without_trajectory", "unmatched", "null_rows", "force_matrix", "no_frame_index",
                                  "too_wide", "nan", "inf_in_a_list"])
def test_refusals_write_nothing(reel_bin, task, tmp_path, case):
    src = tmp_path / "src.parquet"
    f32 = pa.array([1.0, 2.0], pa.float32())
    expect = {
        "reserved_suffix": ("observation.wrist_force", f32, "reserved suffix"),
        "bad_name": ("observation.Ego_thing", f32, "lower-case"),
        "retired_name": ("observation.gripper_1_width", f32, "gripper_1_"),
        "not_observation": ("ego_thing", f32, "observation."),
        "null_rows": ("observation.ego_score", pa.array([1.0, None], pa.float32()), "null rows"),
        "force_matrix": ("observation.hand_force_matrix", pa.array([[1], [2]], pa.list_(pa.int16())), "force matrix"),
        # Issue 27: what `reel check` refuses (data.row_width) or warns of (data.finite) is not written.
        "too_wide": ("observation.ego_map", pa.FixedSizeListArray.from_arrays(
            pa.array(np.zeros(2 * 65537, np.float32)), 65537),
            "column observation.ego_map is fixed_size_list<element: float>[65537], 65537 values in a row, more than "
            "the 65536 a column holds (check: data.row_width)"),
        "nan": ("observation.ego_score", pa.array([1.0, float("nan")], pa.float32()),
                "column observation.ego_score holds a NaN or an infinity at row 1"),
        "inf_in_a_list": ("observation.ego_vec", pa.FixedSizeListArray.from_arrays(
            pa.array([0, 0, 0, 1, 2, float("-inf")], pa.float64()), 3),
            "column observation.ego_vec holds a NaN or an infinity at row 1"),
    }
    if case in expect:
        name, arr, msg = expect[case]
        write_source(src, name, arr)
    elif case == "ns_mismatch":
        ego_source(src, ns_counts=(1, 1, 1))
        msg = "slam"
    elif case == "ns_without_trajectory":
        write_source(src, EGO_NS, pa.array([[1], [2]], pa.list_(pa.int64())))
        msg = "its trajectory"
    elif case == "unmatched":
        write_source(src, "observation.ego_score", f32, frames=[0, 40])
        msg = "frame_index the episode's data does not have (40)"
    else:
        pq.write_table(pa.table({"frame": pa.array([0]), "observation.ego_score": pa.array([1.0], pa.float32())}), src)
        msg = "no frame_index column"
    files = lambda: {p: sha(p) for p in task.rglob("*") if p.is_file() and not p.name.startswith(".")}  # noqa: E731
    before = files()  # dotfiles: the lock anchor appears when the lock is taken
    err = add(reel_bin, task, 1, src, ok=2)
    assert msg in err, err
    assert files() == before


def test_unmatched_rows_can_be_dropped(reel_bin, task, tmp_path):
    src = write_source(tmp_path / "s.parquet", "observation.ego_score", pa.array([1.5, 2.5, 3.5], pa.float32()),
                       frames=[1, 3, 77])
    r = add(reel_bin, task, 2, src, "--drop-unmatched", "--json")
    assert (r["filled_rows"], r["unmatched_rows"]) == (2, 1)
    assert pq.read_table(task / data_rel(2)).column("observation.ego_score").to_pylist() == [0.0, 1.5, 0.0, 2.5]
    assert json.loads((task / "meta/info.json").read_text())["features"]["observation.ego_score"] == \
        {"dtype": "float32", "shape": [1]}
    check_clean(reel_bin, task)


def test_a_type_other_episodes_declared_otherwise_is_refused(reel_bin, task, tmp_path):
    a = write_source(tmp_path / "a.parquet", "observation.ego_score", pa.array([1.0, 2.0], pa.float32()))
    add(reel_bin, task, 1, a)
    b = write_source(tmp_path / "b.parquet", "observation.ego_score", pa.array([1.0, 2.0], pa.float64()))
    err = add(reel_bin, task, 2, b, ok=2)
    assert "declares it float32[1]" in err and "float64[1]" in err
    c = write_source(tmp_path / "c.parquet", "observation.ego_score", pa.array([3.0], pa.float32()))
    add(reel_bin, task, 2, c)  # the same type is fine
    check_clean(reel_bin, task)


def test_python_add_columns(reel_mod, task, tmp_path):
    src = tmp_path / "ego.parquet"
    pts, _ = ego_source(src)
    r = reel_mod.add_columns(str(task), 1, src, features=DECL)
    assert r["written"] and r["filled_rows"] == 3
    assert pq.read_table(task / data_rel(1)).column(EGO).to_pylist()[1] == pts[0]
    with pytest.raises(reel_mod.AlreadyExistsError):
        reel_mod.add_columns(str(task), 1, src)


def test_a_declaration_the_readers_would_refuse_is_not_written(reel_bin, task, tmp_path):
    # Issue 27 finding 6: --features nested 61 deep made info.json deeper than the readers'
    # 64 levels, and the task unreadable by every command. The writer holds info.json to the
    # readers' bound (json.depth) and writes nothing.
    src = tmp_path / "ego.parquet"
    ego_source(src)
    deep = {EGO: {**DECL[EGO], "owner": {"role": "ego", "note": json.loads("[" * 61 + "]" * 61)}}}
    files = lambda: {p: sha(p) for p in task.rglob("*") if p.is_file() and not p.name.startswith(".")}  # noqa: E731
    before = files()
    err = add(reel_bin, task, 1, src, "--features", json.dumps(deep), ok=2)
    assert "json.depth" in err and "meta/info.json" in err, err
    assert files() == before
    rc, out, err = reel_exec(reel_bin, "info", task)
    assert rc == 0, err


def test_a_column_of_gigabytes_is_refused_from_its_schema_in_bounded_memory(reel_bin, task, tmp_path):
    # Issue 27, finding 9: fixed_size_list<float>[20000000] was accepted (6.4 GB to add, 80 MB
    # of zeros in every row). Refused from the source's schema before a value is decoded.
    from .cli_run import run_measured
    src = tmp_path / "wide.parquet"
    wide = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(20_000_000, np.float32)), 20_000_000)
    pq.write_table(pa.table({"frame_index": pa.array([0], pa.int64()), "observation.ego_map": wide}), src,
                   compression="zstd")
    del wide
    rc, _, err, rss = run_measured([reel_bin, "add-columns", task, 1, "--from", src], tmp_path)
    assert rc == 2 and "20000000 values in a row, more than the 65536 a column holds" in err, err
    assert rss < 200 << 20, f"peak RSS {rss >> 20} MiB"


def test_the_widest_column_reel_writes_is_read_and_checked_clean(reel_bin, reel_mod, task, tmp_path):
    # Writer bound = reader bound: 65,536 values a row is written, read back and passes check.
    values = np.arange(2 * 65536, dtype=np.float32)
    src = write_source(tmp_path / "w.parquet", "observation.ego_map",
                       pa.FixedSizeListArray.from_arrays(pa.array(values), 65536))
    add(reel_bin, task, 1, src)
    check_clean(reel_bin, task)
    col = pq.read_table(task / data_rel(1)).column("observation.ego_map").to_pylist()
    assert col[0] == values[:65536].tolist() and col[1] == values[65536:].tolist()
