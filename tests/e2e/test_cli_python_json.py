"""`reel <command> --json` and reel's Python function for the same job give one document.

Both edges are a few lines over one library entry per job (include/reel/jobs.h) and one
ToJson per report; this file holds them to it, command by command: the same input to both,
and the two JSON documents equal, values and key order (compared as JSON text). Where a
value cannot be the same twice (a session id the server makes, seconds of age, CPU time),
it is replaced on both sides before comparing, and the file says which.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .fixtures import EpisodeSpec, write_task
from .keypoints_common import ep_dir, write_3d
from .recorder_common import reel_exec
from .serve_common import TOKEN_ALL
from .v1_task import make_v1_task

SIM = ("--seconds", "0.3", "--no-video")  # 9 rows per episode
SIM_PY = {"seconds": 0.3, "video": False}


def cli(reel_bin, *args, ok=(0,)) -> dict:
    rc, out, err = reel_exec(reel_bin, *args, "--json")
    assert rc in ok, f"reel {' '.join(map(str, args))} --json exited {rc}\n{out}\n{err}"
    return json.loads(out)


def same(cli_doc, py_doc) -> None:
    """Equal values in the same key order: what a reader of either sees."""
    assert json.dumps(cli_doc, indent=1) == json.dumps(py_doc, indent=1)


def masked(doc, keys: set[str]):
    """`doc` with the values of `keys` (at any depth) replaced by their type's name."""
    if isinstance(doc, dict):
        return {k: (type(v).__name__ if k in keys else masked(v, keys)) for k, v in doc.items()}
    if isinstance(doc, list):
        return [masked(v, keys) for v in doc]
    return doc


def simulated(reel_bin, path: Path, *args) -> Path:
    cli(reel_bin, "simulate", path, *SIM, *args)
    return path


@pytest.fixture
def task(reel_bin, tmp_path) -> Path:
    return simulated(reel_bin, tmp_path / "t", "--count", "2")


def test_simulate(reel_bin, reel_mod, tmp_path):
    same(cli(reel_bin, "simulate", tmp_path / "a", *SIM, "--count", "2", "--abort-last"),
         reel_mod.simulate(tmp_path / "b", count=2, abort_last=True, **SIM_PY))
    same(cli(reel_bin, "simulate", tmp_path / "a", *SIM, "--episode", "1", "--replace"),
         reel_mod.simulate(tmp_path / "b", episode_index=1, replace=True, **SIM_PY))
    # Profiled: CPU and wall seconds differ run to run; the shape and recorded_s do not.
    timed = {"record_cpu_s", "record_wall_s"}
    same(masked(cli(reel_bin, "simulate", tmp_path / "a", *SIM, "--count", "1", "--profile"), timed),
         masked(reel_mod.simulate(tmp_path / "b", count=1, profile=True, **SIM_PY), timed))


def test_check(reel_bin, reel_mod, task, tmp_path):
    (tmp_path / "not-a-task").mkdir()  # skipped, and said so
    (task / "data" / "chunk-000" / "episode-001.parquet").write_bytes(b"not parquet")  # episode 2: an error
    doc = cli(reel_bin, "check", tmp_path, ok=(1,))
    assert doc["errors"] > 0 and doc["skipped"] == [{"path": str(tmp_path / "not-a-task"), "reason": "not a task"}]
    same(doc, reel_mod.check(tmp_path))
    same(cli(reel_bin, "check", task, "--episodes", "2", ok=(1,)), reel_mod.check(task, episodes=[2]))


def test_export_import_pack_push(reel_bin, reel_mod, task, tmp_path):
    out = tmp_path / "lerobot"
    doc = cli(reel_bin, "export", task, "-o", out, "--to", "lerobot-v3")
    same(doc, reel_mod.export(task, out, format="lerobot-v3", replace_existing=True))
    # import: the same dataset into two new tasks; `task` names the target as given.
    a = cli(reel_bin, "import", out, tmp_path / "back_a")
    b = reel_mod.import_dataset(out, tmp_path / "back_b")
    assert a["task"] == str(tmp_path / "back_a") and b["task"] == str(tmp_path / "back_b")
    same({**a, "task": "T"}, {**b, "task": "T"})
    zip_path = tmp_path / "ep2.zip"
    same(cli(reel_bin, "pack", task, "2", "-o", zip_path),
         reel_mod.pack(task, 2, zip_path, replace_existing=True))
    same(cli(reel_bin, "push", task, tmp_path / "mirror_a"), reel_mod.push(task, tmp_path / "mirror_b"))
    same(cli(reel_bin, "push", task, tmp_path / "mirror_a", "--dry-run"),
         reel_mod.push(task, tmp_path / "mirror_b", dry_run=True))


def test_stats_rebuild_and_verify(reel_bin, reel_mod, task):
    same(cli(reel_bin, "stats", task, "--verify"), reel_mod.rebuild_stats(task, verify=True))
    same(cli(reel_bin, "stats", task, "--rebuild", "--dry-run"), reel_mod.rebuild_stats(task, dry_run=True))


def test_delete(reel_bin, reel_mod, tmp_path):
    a = simulated(reel_bin, tmp_path / "a", "--count", "3")
    b = simulated(reel_bin, tmp_path / "b", "--count", "3")
    doc = cli(reel_bin, "delete", a, "1,3", "--dry-run")
    assert [e["episode_index"] for e in doc["episodes"]] == [1, 3] and doc["episodes"][0]["files"], doc
    same(doc, reel_mod.delete(a, [1, 3], dry_run=True))
    same(cli(reel_bin, "delete", a, "2"), reel_mod.delete(b, [2]))
    with pytest.raises(reel_mod.NotFoundError, match="deleted before"):
        reel_mod.delete(b, [1, 2])
    assert (b / "data" / "chunk-000" / "episode-000.parquet").is_file()  # nothing deleted


def test_repair_scale(reel_bin, reel_mod, tmp_path):
    t = simulated(reel_bin, tmp_path / "old", "--count", "1", "--tier", "int16x100")
    for row in (t / "meta" / "episodes").rglob("*.parquet"):  # an old episode: no spec in its row
        table = pq.read_table(row)
        i = table.schema.get_field_index("force_matrix_specs")
        pq.write_table(table.set_column(i, "force_matrix_specs", pa.array(["{}"] * table.num_rows)), row)
    doc = cli(reel_bin, "repair-scale", t)
    assert doc["decisions"], doc
    same(doc, reel_mod.repair_scale(t))


def test_split_episodes(reel_bin, reel_mod, tmp_path):
    eps = [EpisodeSpec(n, length=3, videos={}, row="shard") for n in (1, 2, 3)]
    t = write_task(tmp_path, "legacy", eps).path
    doc = cli(reel_bin, "split-episodes", t, "--dry-run")
    assert doc["episodes_split"] == 3, doc
    same(doc, reel_mod.split_episodes(t, dry_run=True))


def test_migrate(reel_bin, reel_mod, tmp_path):
    v1 = make_v1_task(tmp_path)
    doc = cli(reel_bin, "migrate", v1, "--dry-run", "--no-backup")
    assert len(doc["sessions"]) == 3, doc
    same(doc, reel_mod.migrate(v1, dry_run=True, no_backup=True))


def test_backfill_hand_pose_and_add_columns(reel_bin, reel_mod, tmp_path):
    t = write_task(tmp_path / "BASE" / "data" / "recordings", "pick",
                   [EpisodeSpec(n, length=4, videos={}, hand_pose=True) for n in (1, 2)]).path
    write_3d(ep_dir(tmp_path / "BASE" / "keypoints_output" / "pick", 1) / "hand_pose_3d/chunk-000.parquet",
             [(0, (True, "Left", 1), (True, "Right", 2)), (2, (True, "Right", 3), (False, "", None))])
    doc = cli(reel_bin, "backfill-hand-pose", t, "--dry-run")
    assert doc["episodes"][0]["left_rows"] == 1, doc
    same(doc, reel_mod.backfill_hand_pose(t, dry_run=True))
    source = tmp_path / "extra.parquet"
    pq.write_table(pa.table({"frame_index": pa.array([0, 1, 3], pa.int64()),
                             "observation.extra": pa.array([[1.0], [2.0], [3.0]], pa.list_(pa.float64(), 1))}), source)
    doc = cli(reel_bin, "add-columns", t, "1", "--from", source, "--dry-run")
    assert isinstance(doc["columns"][0]["feature"], dict), doc
    same(doc, reel_mod.add_columns(t, 1, source, dry_run=True))


def test_overlays(reel_bin, reel_mod, task, tmp_path):
    bundle = tmp_path / "bundle"
    cli(reel_bin, "export", task, "-o", bundle, "--to", "bundle")
    source = tmp_path / "progress.parquet"
    pq.write_table(pa.table({"step": pa.array(range(9), pa.int64()),
                             "progress": pa.array(np.linspace(0, 1, 9), pa.float32())}), source)
    same(cli(reel_bin, "overlay", "write", bundle, "progress", "0", "--from", source, "--dry-run"),
         reel_mod.write_overlay(bundle, "progress", 0, source, dry_run=True))
    cli(reel_bin, "overlay", "write", bundle, "progress", "0", "--from", source)
    listed = cli(reel_bin, "overlay", "ls", bundle)
    same(listed["overlays"], reel_mod.open(bundle).overlays())


def test_info_show_stats(reel_bin, reel_mod, tmp_path):
    t = simulated(reel_bin, tmp_path / "t", "--count", "2", "--tier", "int16x100")
    same(cli(reel_bin, "info", t), reel_mod.info(t))
    doc = cli(reel_bin, "show", t, "2")
    assert doc["force_matrices"] and doc["imu"]["samples"] > 0 and doc["slam"], doc
    same(doc, reel_mod.show(t, 2))
    same(cli(reel_bin, "stats", t), reel_mod.stats(t))
    bundle = tmp_path / "bundle"
    cli(reel_bin, "export", t, "-o", bundle, "--to", "bundle")
    same(cli(reel_bin, "info", bundle), reel_mod.info(bundle))
    same(cli(reel_bin, "show", bundle, "1"), reel_mod.show(bundle, 1))


def test_show_keypoints(reel_bin, reel_mod, tmp_path):
    t = write_task(tmp_path / "BASE" / "data" / "recordings", "pick",
                   [EpisodeSpec(n, length=4, videos={}, hand_pose=True) for n in (1, 2)]).path
    write_3d(ep_dir(tmp_path / "BASE" / "keypoints_output" / "pick", 1) / "hand_pose_3d/chunk-000.parquet",
             [(0, (True, "Left", 1), (True, "Right", 2))])
    doc = cli(reel_bin, "show", t, "1")
    assert doc["keypoints"]["files"], doc
    same(doc, reel_mod.show(t, 1))


def test_ls(reel_bin, reel_mod, task, tmp_path):
    same(cli(reel_bin, "ls", task)["episodes"], reel_mod.open(task).episodes())
    out = tmp_path / "v21"
    cli(reel_bin, "export", task, "-o", out, "--to", "lerobot-v2.1")
    same(cli(reel_bin, "ls", out)["episodes"], reel_mod.open(out).episodes())


def test_upload_and_status(reel_bin, reel_mod, server, tmp_path):
    # One task uploaded twice, under two names (two projects, two jobs per episode in its
    # outbox). The server names each import with a session id of its own; the outbox's age of
    # a job is seconds on a clock.
    a = simulated(reel_bin, tmp_path / "a", "--count", "2")
    doc = cli(reel_bin, "upload", a, "--server", server.url, "--token", TOKEN_ALL, "--parallel", "1", "--name", "one")
    assert doc["all_landed"], doc
    py = reel_mod.upload(a, server=server.url, token=TOKEN_ALL, parallel=1, name="two")
    same(masked(doc, {"session_id"}), masked(py, {"session_id"}))
    clock = {"age_s", "next_try_in_s"}
    status = cli(reel_bin, "upload", a, "--status")
    assert len(status["jobs"]) == 4, status
    same(masked(status, clock), masked(reel_mod.upload_status(a), clock))


def test_failed_upload_names_code_error_and_rule(reel_bin, reel_mod, tmp_path):
    # Nothing listens on port 9 of loopback: every attempt fails the same way on both edges.
    a = simulated(reel_bin, tmp_path / "a", "--count", "1")
    args = ("--server", "http://127.0.0.1:9", "--token", "t", "--retries", "1")
    doc = cli(reel_bin, "upload", a, *args, ok=(2,))
    assert not doc["all_landed"] and set(doc["episodes"][0]) == {"episode_index", "ok", "code", "error", "rule"}
    shutil.rmtree(a / "meta" / ".upload-outbox")  # a fresh outbox for the second edge
    same(doc, reel_mod.upload(a, server="http://127.0.0.1:9", token="t", max_attempts=1))
