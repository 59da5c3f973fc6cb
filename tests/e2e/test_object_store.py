"""Tasks and datasets on object storage (docs/storage.md): every read command, reel.open,
reel.torch.FrameDataset and reel.daft on ``s3://bucket/prefix/task`` give what they give on the
same task on the local disk. The store is a real S3-compatible server (moto, on a free
127.0.0.1 port, started here and stopped after); nothing inside reel is mocked.

Video is decoded through FileSystem::OpenRandomAccess (FFmpeg's AVIOContext over it), i.e. with
ranged GETs: test_one_random_frame_reads_a_fraction_of_the_file measures the bytes."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import time

import numpy as np
import pyarrow as pa
import pytest

from .cli_run import reel as cli
from .s3_server import free_port, moto_server, recorded_requests, s3_environment, upload_tree

BUCKET = "reel-test"
W, H = 96, 64
TIMEOUT_S = 120


@pytest.fixture(scope="module")
def store(reel_bin, tmp_path_factory):
    """The local tasks, uploaded: {"endpoint", "local": {name: Path}, "uri": {name: str}}."""
    base = tmp_path_factory.mktemp("object_store")
    local = {"video": base / "video", "novideo": base / "novideo", "lerobot": base / "lerobot"}
    cli(reel_bin, "simulate", local["video"], "--count", 3, "--seconds", 1, "--video-size", f"{W}x{H}",
        "--seed", 1)
    cli(reel_bin, "simulate", local["novideo"], "--count", 3, "--seconds", 1, "--no-video", "--seed", 2)
    cli(reel_bin, "export", local["novideo"], "-o", local["lerobot"], "--to", "lerobot-v3")
    # Long enough that one frame's reads (container header, the keyframe's packets) are a
    # small part of the file.
    local["long"] = base / "long"
    cli(reel_bin, "simulate", local["long"], "--count", 1, "--seconds", 20, "--seed", 3)
    with moto_server() as endpoint, s3_environment(endpoint):
        for name, path in local.items():
            upload_tree(endpoint, path, BUCKET, f"prefix/{name}")
        yield {"endpoint": endpoint, "local": local,
               "uri": {name: f"s3://{BUCKET}/prefix/{name}" for name in local}}


def run(reel_bin, *args, env=None):
    """(rc, stdout, stderr) of the CLI, bounded in time; never a crash."""
    t0 = time.monotonic()
    proc = subprocess.run([reel_bin, *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT_S,
                          env=env)
    assert proc.returncode in (0, 1, 2), f"reel {args}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0


def as_local(text: str, uri: str, local: str) -> str:
    """`text` with the URI, and the store's own path of it (messages name files by it), written
    as the local path: the one place the outputs may differ."""
    return text.replace(uri, local).replace(uri[len("s3://"):], local)


def same_json(reel_bin, store, name, *args):
    """Runs `reel ARGS --json` on the local task and on its URI; returns both (see as_local)."""
    local, uri = str(store["local"][name]), store["uri"][name]
    rc_l, out_l, err_l, _ = run(reel_bin, args[0], local, *args[1:], "--json")
    rc_s, out_s, err_s, _ = run(reel_bin, args[0], uri, *args[1:], "--json")
    assert rc_s == rc_l, f"{args}: exit {rc_s} on S3, {rc_l} locally\n{err_s}"
    return json.loads(out_l), json.loads(as_local(out_s, uri, local))


# ---- the CLI ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["video", "novideo"])
@pytest.mark.parametrize("args", [("info",), ("ls",), ("stats",), ("show", 1), ("show", 3)],
                         ids=lambda a: "-".join(map(str, a)))
def test_read_commands_equal_local(reel_bin, store, name, args):
    local, s3 = same_json(reel_bin, store, name, *args)
    assert s3 == local


@pytest.mark.parametrize("args", [("info",), ("ls",), ("show", 0), ("show", 2)], ids=lambda a: "-".join(map(str, a)))
def test_lerobot_dataset_on_s3_equals_local(reel_bin, store, args):
    local, s3 = same_json(reel_bin, store, "lerobot", *args)
    assert s3 == local


def test_check_finds_the_same_without_video(reel_bin, store):
    local, s3 = same_json(reel_bin, store, "novideo", "check")
    assert s3 == local
    assert s3["tasks"][0]["path"] == str(store["local"]["novideo"])


def test_check_finds_the_same_with_video(reel_bin, store):
    local, s3 = same_json(reel_bin, store, "video", "check")
    assert s3 == local


def test_check_finds_a_broken_file_on_s3_too(reel_bin, store, tmp_path):
    """A finding, not only a pass: an episodes row file cut short, locally and in the bucket."""
    import shutil
    broken = tmp_path / "broken"
    shutil.copytree(store["local"]["novideo"], broken)
    rows = sorted((broken / "meta" / "episodes").rglob("*.parquet"))
    rows[1].write_bytes(rows[1].read_bytes()[:100])
    upload_tree(store["endpoint"], broken, BUCKET, "prefix/broken")
    _, out_l, _, _ = run(reel_bin, "check", broken, "--json")
    rc, out_s, err, _ = run(reel_bin, "check", f"s3://{BUCKET}/prefix/broken", "--json")
    local, s3 = json.loads(out_l), json.loads(as_local(out_s, f"s3://{BUCKET}/prefix/broken", str(broken)))
    assert rc == 1 and s3["errors"] >= 1, err
    assert s3 == local


def test_export_from_s3_equals_local_export(reel_bin, store, tmp_path):
    outs = {}
    for where in ("local", "uri"):
        src = store[where]["novideo"]
        outs[where] = tmp_path / where
        cli(reel_bin, "export", src, "-o", outs[where], "--to", "lerobot-v3")
    files = {w: sorted(p.relative_to(outs[w]).as_posix() for p in outs[w].rglob("*") if p.is_file()) for w in outs}
    assert files["uri"] == files["local"]
    import pyarrow.parquet as pq
    for rel in files["local"]:
        a, b = outs["local"] / rel, outs["uri"] / rel
        if rel.endswith(".parquet"):
            assert pq.read_table(b).equals(pq.read_table(a)), rel
        elif rel.endswith(".json") or rel.endswith(".jsonl"):
            assert b.read_text() == a.read_text(), rel


def test_frames_from_s3_equal_local(reel_bin, store, tmp_path):
    for where in ("local", "uri"):
        cli(reel_bin, "frames", store[where]["video"], 2, "--slot", "stereo_left", "--at", "0,7,29",
            "-o", tmp_path / where)
    for png in sorted((tmp_path / "local").iterdir()):
        assert (tmp_path / "uri" / png.name).read_bytes() == png.read_bytes()


def test_endpoint_flag_instead_of_the_environment(reel_bin, store):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL")}
    rc, out, err, _ = run(reel_bin, "info", store["uri"]["novideo"], "--json", "--endpoint-url", store["endpoint"],
                          env=env)
    assert rc == 0, err
    assert json.loads(out)["episodes"] == 3


# ---- hostile input: clear errors naming the URI, exit 2, bounded time ----------------------

@pytest.mark.parametrize("uri", ["s3://", "s3:///task", "nosuchscheme://bucket/task"])
def test_malformed_uri(reel_bin, store, uri):
    rc, _, err, _ = run(reel_bin, "info", uri)
    assert rc == 2 and uri in err, err


def test_missing_bucket(reel_bin, store):
    rc, _, err, _ = run(reel_bin, "ls", "s3://no-such-bucket/task")
    assert rc == 2 and "no-such-bucket" in err and "does not exist" in err, err


def test_missing_task_in_a_bucket(reel_bin, store):
    rc, _, err, _ = run(reel_bin, "info", f"s3://{BUCKET}/prefix/nothing-here")
    assert rc == 2 and f"s3://{BUCKET}/prefix/nothing-here: " in err, err  # named by its URI


def test_unreachable_endpoint_fails_in_bounded_time(reel_bin, store):
    closed = f"http://127.0.0.1:{free_port()}"
    rc, _, err, took = run(reel_bin, "info", store["uri"]["novideo"], "--endpoint-url", closed)
    assert rc == 2 and store["uri"]["novideo"] in err and "127.0.0.1" in err, err
    assert took < 60


def test_stalled_endpoint_fails_in_bounded_time(store, reel_mod):
    """A server that accepts connections and never answers: the request timeout ends it."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        endpoint = f"http://127.0.0.1:{s.getsockname()[1]}"
        t0 = time.monotonic()
        with pytest.raises(reel_mod.IOError, match=r"s3://bucket/task.*127\.0\.0\.1"):
            reel_mod.open("s3://bucket/task", {"endpoint_url": endpoint, "request_timeout_s": 2, "max_attempts": 1})
        assert time.monotonic() - t0 < 30


def test_wrong_credentials(reel_bin, store, tmp_path):
    """A second server that checks credentials (moto's IAM auth on from the first request):
    the test's keys are unknown there, so the bucket check is refused."""
    with moto_server({"INITIAL_NO_AUTH_ACTION_COUNT": "0"}) as endpoint:
        rc, _, err, took = run(reel_bin, "info", f"s3://{BUCKET}/prefix/novideo", "--endpoint-url", endpoint)
    assert rc == 2 and f"s3://{BUCKET}/prefix/novideo" in err, err
    assert "PermissionDenied" in err or "403" in err or "InvalidAccessKeyId" in err.replace(" ", ""), err


# ---- Python --------------------------------------------------------------------------------

def test_reel_open_equals_local(store, reel_mod):
    for name in ("video", "novideo"):
        local = reel_mod.open(str(store["local"][name]))
        s3 = reel_mod.open(store["uri"][name])
        assert s3.root == store["uri"][name]
        assert s3.info == local.info
        assert s3.episodes() == local.episodes()
        assert pa.table(s3.episodes_arrow()).equals(pa.table(local.episodes_arrow()))
        for e in local.episodes():
            assert pa.table(s3.data(e["episode_index"])).equals(pa.table(local.data(e["episode_index"])))
        assert s3.read_file("meta/tasks.jsonl") == local.read_file("meta/tasks.jsonl")
    ds = reel_mod.open(store["uri"]["lerobot"])
    assert isinstance(ds, reel_mod.Dataset)
    assert ds.episodes() == reel_mod.open(str(store["local"]["lerobot"])).episodes()


def test_reel_open_with_storage_options(store, reel_mod, monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3")
    with pytest.raises(reel_mod.Error):
        reel_mod.open(store["uri"]["novideo"], {"endpoint_url": f"http://127.0.0.1:{free_port()}",
                                                "max_attempts": 1, "connect_timeout_s": 2})
    t = reel_mod.open(store["uri"]["novideo"], {"endpoint_url": store["endpoint"]})
    assert len(t.episodes()) == 3
    with pytest.raises(TypeError, match="unknown key"):
        reel_mod.open(store["uri"]["novideo"], {"endpiont_url": store["endpoint"]})


def test_python_check_equals_local(store, reel_mod):
    local = reel_mod.findings(reel_mod.check(str(store["local"]["novideo"])))
    s3 = reel_mod.open(store["uri"]["novideo"]).check()
    for f in s3:
        f["task"] = f["task"].replace(store["uri"]["novideo"], str(store["local"]["novideo"]))
    assert s3 == local


def test_python_errors_name_the_uri(store, reel_mod):
    with pytest.raises(reel_mod.NotFoundError, match="no-such-bucket"):
        reel_mod.open("s3://no-such-bucket/task")
    with pytest.raises(reel_mod.Error, match=r"s3://"):
        reel_mod.open("s3://")


def test_frame_dataset_without_cameras_equals_local(store, reel_mod):
    torch = pytest.importorskip("torch")
    from reel.torch import FrameDataset

    local = FrameDataset(str(store["local"]["video"]), cameras=[])
    s3 = FrameDataset(store["uri"]["video"], cameras=[])
    assert len(s3) == len(local)
    for i in (0, 17, len(local) - 1):
        a, b = local[i], s3[i]
        assert a.keys() == b.keys()
        for k in a:
            if isinstance(a[k], torch.Tensor):
                assert torch.equal(a[k], b[k]), k
            else:
                assert a[k] == b[k], k
    assert s3.meta.tasks == local.meta.tasks


def test_frame_dataset_with_cameras_equals_local(store, reel_mod):
    torch = pytest.importorskip("torch")
    from reel.torch import FrameDataset

    local = FrameDataset(str(store["local"]["video"]), cameras=["stereo_left"])
    s3 = FrameDataset(store["uri"]["video"], cameras=["stereo_left"])
    for i in (0, 40):
        assert torch.equal(local[i]["observation.images.stereo_left"], s3[i]["observation.images.stereo_left"])


def test_daft_episodes_and_columns_equal_local(store, reel_mod):
    pytest.importorskip("daft")
    import reel.daft as rd

    local, uri = str(store["local"]["video"]), store["uri"]["video"]
    a = rd.read_episodes(local, include_meta=True).sort("episode_index").to_pydict()
    b = rd.read_episodes(uri, include_meta=True).sort("episode_index").to_pydict()
    b["task"] = [local for _ in b["task"]]
    assert a == b
    cols = ["timestamp", "observation.gripper_state"]
    fa = rd.read(local, columns=cols).sort(["episode_index", "frame_index"]).to_pydict()
    fb = rd.read(uri, columns=cols).sort(["episode_index", "frame_index"]).to_pydict()
    fb["task"] = [local for _ in fb["task"]]
    assert fa == fb
    assert rd.read_tasks(uri).to_pydict()["task"] == rd.read_tasks(local).to_pydict()["task"]


def test_one_random_frame_reads_a_fraction_of_the_file(store, reel_mod):
    """Video on S3 is read with ranged GETs: one frame (a fresh reader: header, then the
    packets from the keyframe before it) reads well below the file; a second frame from the
    same reader reads less again. The frames equal the local ones."""
    uri, local = store["uri"]["long"], store["local"]["long"]
    so = reel_mod._core.StorageOptions()
    s3, disk = reel_mod.open(uri), reel_mod.open(str(local))
    e = s3.episodes()[0]
    slot = "stereo_left"
    size = (local / e["videos"][slot]).stat().st_size
    reel_mod._core.object_store_counters(uri, so, True)
    a = s3.frames(1, slot, [377])
    first = reel_mod._core.object_store_counters(uri, so, True)
    assert np.array_equal(a, disk.frames(1, slot, [377]))
    print(f"one frame: {first['bytes_read']} of {size} bytes in {first['read_requests']} reads")
    assert first["files_opened"] == 1
    assert first["bytes_read"] < size / 4, (first, size)
    with reel_mod.VideoReader(f"{uri}/{e['videos'][slot]}") as r:
        r.read_rgb([100])
        reel_mod._core.object_store_counters(uri, so, True)
        b = r.read_rgb([511])
        again = reel_mod._core.object_store_counters(uri, so, True)
    assert np.array_equal(b[0], disk.frames(1, slot, [511])[0])
    assert again["bytes_read"] < first["bytes_read"], (again, first)


def test_python_frames_and_daft_cameras_equal_local(store, reel_mod):
    uri, local = store["uri"]["video"], str(store["local"]["video"])
    s3, disk = reel_mod.open(uri), reel_mod.open(local)
    for slot in ("stereo_left", "d435_depth"):
        assert np.array_equal(s3.frames(2, slot, [0, 13, 29]), disk.frames(2, slot, [0, 13, 29])), slot
    pytest.importorskip("daft")
    import reel.daft as rd

    fa = rd.read(local, columns=["timestamp"], load_video_frames=["stereo_left"])
    fb = rd.read(uri, columns=["timestamp"], load_video_frames=["stereo_left"])
    a = fa.sort(["episode_index", "frame_index"]).to_pydict()
    b = fb.sort(["episode_index", "frame_index"]).to_pydict()
    key = "observation.images.stereo_left"
    assert len(a[key]) == len(b[key]) == 90
    for x, y in zip(a[key], b[key]):
        assert np.array_equal(np.asarray(x), np.asarray(y))


RAY_SCRIPT = """
import json, sys
import numpy as np
import ray
ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
         configure_logging=False)
import daft
daft.set_runner_ray(noop_if_initialized=True)
import reel.daft as rd
uri, storage, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
got = rd.read(uri, columns=["timestamp"], load_video_frames=["stereo_left"], storage_options=storage) \\
    .sort(["episode_index", "frame_index"]).to_pydict()
np.savez(out, timestamp=np.asarray(got["timestamp"]),
         frames=np.asarray([np.asarray(v) for v in got["observation.images.stereo_left"]]))
print(json.dumps({"runner": str(daft.get_or_infer_runner_type())}))
ray.shutdown()
"""


def test_daft_on_a_local_ray_cluster_reads_s3(store, reel_mod, tmp_path):
    """The workers get the URI and storage_options as plain values and open the task themselves
    (the endpoint is not in their environment)."""
    pytest.importorskip("ray")
    pytest.importorskip("daft")
    import sys
    import tempfile

    import reel.daft as rd

    local, uri = str(store["local"]["video"]), store["uri"]["video"]
    want = rd.read(local, columns=["timestamp"], load_video_frames=["stereo_left"]) \
        .sort(["episode_index", "frame_index"]).to_pydict()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL")}
    env.update(RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", RAY_TMPDIR=tempfile.mkdtemp(prefix="reel-ray-"))
    out = tmp_path / "ray.npz"
    proc = subprocess.run([sys.executable, "-c", RAY_SCRIPT, uri, json.dumps({"endpoint_url": store["endpoint"]}),
                           str(out)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "ray" in json.loads(proc.stdout.strip().splitlines()[-1])["runner"].lower()
    with np.load(out) as z:
        np.testing.assert_array_equal(z["timestamp"], np.asarray(want["timestamp"]))
        np.testing.assert_array_equal(z["frames"], np.asarray([np.asarray(v) for v in want["observation.images.stereo_left"]]))


def requests_by_kind(log, prefix: str) -> dict:
    """The requests of moto's log below `prefix` (a task's key prefix, ending in "/"), as
    {"get": {relative key: GETs}, "head": {relative key: HEADs}, "list": {relative prefix:
    listings}, "probe": listings of one key (Arrow's "is this a directory?")}."""
    out = {"get": collections.Counter(), "head": collections.Counter(), "list": collections.Counter(), "probe": 0}
    for r in log:
        if r.is_listing:
            if r.query.get("max-keys") == "1":
                out["probe"] += 1
            else:
                out["list"][r.query.get("prefix", "").removeprefix(prefix)] += 1
        elif r.key.startswith(prefix) and r.method in ("GET", "HEAD"):
            out[r.method.lower()][r.key.removeprefix(prefix)] += 1
    return out


def test_check_of_one_episode_on_s3_opens_only_its_objects(store, reel_mod):
    # Issue 31: `reel check --episodes N` on s3:// reads that episode's objects and the task
    # files, not the task: every object read, or asked after, in moto's own request log is one
    # of them. Counted, never timed.
    uri, local = store["uri"]["video"], store["local"]["video"]
    prefix = uri.removeprefix(f"s3://{BUCKET}/") + "/"
    task = reel_mod.open(uri)
    entry = next(e for e in reel_mod.open(str(local)).episodes() if e["episode_index"] == 2)
    own = {f"data/chunk-000/episode-{entry['file']:03d}.parquet",
           f"meta/episodes/chunk-000/episode-{entry['file']:03d}.parquet", *entry["videos"].values()}
    task_files = {"meta/info.json", "meta/stats.json", "meta/tasks.jsonl"}
    with recorded_requests(store["endpoint"], BUCKET) as one_log:
        one = task.check(episodes=[2])
    with recorded_requests(store["endpoint"], BUCKET) as whole_log:
        whole = task.check()
    assert [f for f in one if f["severity"] == "error"] == [] and [f for f in whole if f["severity"] == "error"] == []
    one_cost, whole_cost = requests_by_kind(one_log, prefix), requests_by_kind(whole_log, prefix)
    print(f"check --episodes 2: {len(one_log)} requests {one_cost}\nwhole task: {len(whole_log)} requests {whole_cost}")
    assert own <= set(one_cost["get"]) <= own | task_files, one_cost
    assert set(one_cost["head"]) <= own | task_files | {"manifest.json"}, one_cost  # not a bundle
    assert len(set(whole_cost["get"]) - task_files) == 3 * len(own), whole_cost
    assert len(one_log) < len(whole_log)


def test_open_and_list_cost_the_listings_and_one_index_read(reel_bin, store, reel_mod, tmp_path):
    """Issue 31 item 4: opening and listing a task on s3:// costs its directory listings (whose
    pages carry each object's size and time) and one GET of the episode index that the first
    reader wrote there; no request per episode. Counted in moto's own request log (the server's
    count, not reel's): tasks of 40 and 80 episodes (one chunk, so the same directories) cost the
    same requests, each directory is listed once, and no object but info.json and the index is
    read or even asked after."""
    so = reel_mod._core.StorageOptions()
    costs = {}
    for n in (40, 80):
        local = tmp_path / f"t{n}"
        cli(reel_bin, "simulate", local, "--count", n, "--seconds", 0.2, "--fps", 10, "--no-video", "--seed", 4)
        for cache in (local / "meta").glob(".episode_index*"):
            cache.unlink()  # built by the first reader on the store
        upload_tree(store["endpoint"], local, BUCKET, f"prefix/listing{n}")
        uri = f"s3://{BUCKET}/prefix/listing{n}"
        time.sleep(3)  # settled: S3 keeps whole seconds, and only older objects are remembered
        want = reel_mod.open(str(local)).episodes()
        reel_mod._core.object_store_counters(uri, so, True)
        with recorded_requests(store["endpoint"], BUCKET) as cold_log:
            assert reel_mod.open(uri).episodes() == want
        cold = reel_mod._core.object_store_counters(uri, so, True)
        with recorded_requests(store["endpoint"], BUCKET) as warm_log:
            assert reel_mod.open(uri).episodes() == want
        warm = reel_mod._core.object_store_counters(uri, so, True)
        prefix = f"prefix/listing{n}/"
        first, second = requests_by_kind(cold_log, prefix), requests_by_kind(warm_log, prefix)
        print(f"{n} episodes: first reader {len(cold_log)} requests {first}\n  second {len(warm_log)} requests {second}")
        # The first reader reads every row and data footer once, and writes the index.
        assert sum(1 for k in first["get"] if k.startswith("data/")) == n, first
        assert any(r.method == "PUT" and r.key == prefix + "meta/.episode_index.parquet" for r in cold_log)
        # The second reads info.json and one GET of the index; each directory is listed once.
        assert set(second["get"]) == {"meta/info.json", "meta/.episode_index.parquet"}, second
        assert second["get"]["meta/.episode_index.parquet"] == 1, second
        per_episode = ("data/", "meta/episodes/", "videos/")
        assert not [k for k in second["head"] if k.startswith(per_episode)], second
        assert max(second["list"].values()) == 1, second
        assert {"data/", "data/chunk-000/", "meta/episodes/", "meta/episodes/chunk-000/"} <= set(second["list"])
        assert not any(r.method not in ("GET", "HEAD") for r in warm_log), warm_log
        assert warm["files_opened"] == 0 and cold["files_opened"] >= 2 * n, (cold, warm)
        costs[n] = (len(warm_log), second)
    assert costs[40] == costs[80], costs
    # 6 listings, the index, and 16 for info.json and the index's existence (docs/storage.md):
    # a regression guard for requests that do not grow with the task but cost a round trip each.
    assert costs[40][0] <= 23, costs
