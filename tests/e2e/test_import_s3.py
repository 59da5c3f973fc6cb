"""reel import into a task on a real S3-compatible server (moto on 127.0.0.1; docs/storage.md
"Changing a task on an object store").

The import runs as a staged change: under the task's push lock, into a local staging directory
that reads through to the stored task, then published with the push protocol. The expected
values come from the same import into a local directory, and from an independent listing of
the bucket (boto3). The kill campaign SIGKILLs `reel import ... s3://...` at random moments
(REEL_IMPORT_S3_KILLS kills: 10 in make test, 15 in make soak; one in each tenth of the
import's duration first: the half-published stretch is about a tenth of it) and checks after each that `reel ls` on the URI lists
exactly the published episodes, all of the change or none (a staged change publishes its
episodes together), each equal to the local import's, and that a re-run leaves the bucket
holding exactly the local import's files (a killed change is rolled back before its commit
point and forward after it).
"""

from __future__ import annotations

import json
import random
import subprocess
import time
from pathlib import Path

import pytest

from .cli_run import reel
from .kill_campaign import kill_delays, kill_rounds, run_killed_after
from .s3_server import BASE_ENV, moto_server, s3_environment, upload_tree
from .test_push import episode_files, files_of
from .test_push_s3 import objects as bucket_objects
from .test_push_s3 import published

BUCKET = "imported"


def objects(client, prefix: str) -> dict:
    return bucket_objects(client, prefix, BUCKET)


def committed(client, prefix: str, objs: dict) -> frozenset:
    """The episodes named by the change journal, when it is stored whole (valid JSON)."""
    if "meta/.push-change.json" not in objs:
        return frozenset()
    body = client.get_object(Bucket=BUCKET, Key=f"{prefix}/meta/.push-change.json")["Body"].read()
    try:
        return frozenset(json.loads(body)["episodes"])
    except (ValueError, KeyError, TypeError):
        return frozenset()


def stored(client, prefix: str) -> dict:
    """Relative key -> bytes of every object under s3://BUCKET/prefix/ but dotfiles."""
    return {k: client.get_object(Bucket=BUCKET, Key=f"{prefix}/{k}")["Body"].read()
            for k in objects(client, prefix) if not any(p.startswith(".") for p in k.split("/"))}


def same_as_local(got: dict, local: Path) -> list:
    """The keys whose bytes differ from the local import (info.json without created_at)."""
    want = {rel: (local / rel).read_bytes() for rel in files_of(local)}
    if set(got) != set(want):
        return sorted(set(got) ^ set(want))
    bad = []
    for rel, data in got.items():
        if rel == "meta/info.json":
            a, b = json.loads(data), json.loads(want[rel])
            a.pop("created_at", None), b.pop("created_at", None)
            if a != b:
                bad.append(rel)
        elif data != want[rel]:
            bad.append(rel)
    return bad


@pytest.fixture(scope="module")
def s3(reel_bin, tmp_path_factory):
    import boto3

    base = tmp_path_factory.mktemp("import_s3")
    task, ds, local = base / "task", base / "ds", base / "local" / "task"
    reel(reel_bin, "simulate", task, "--count", 3, "--seconds", 1, "--video-size", "96x64", "--seed", 7)
    reel(reel_bin, "export", task, "-o", ds)
    reel(reel_bin, "import", ds, local)
    with moto_server() as endpoint, s3_environment(endpoint):
        client = boto3.client("s3", endpoint_url=endpoint, region_name=BASE_ENV["AWS_DEFAULT_REGION"])
        client.create_bucket(Bucket=BUCKET)
        yield {"client": client, "endpoint": endpoint, "task": task, "ds": ds, "local": local,
               "files": episode_files(local, reel_bin)}


def test_import_to_s3_equals_the_local_import(reel_bin, s3):
    uri = f"s3://{BUCKET}/whole/task"
    report = json.loads(reel(reel_bin, "import", s3["ds"], uri, "--json").stdout)
    assert report["episode_indices"] == [1, 2, 3] and report["pushed"]["files_sent"] > 0
    assert same_as_local(stored(s3["client"], "whole/task"), s3["local"]) == []
    assert not [k for k in objects(s3["client"], "whole/task") if k.startswith("meta/.push")], \
        "no lock or journal is left"
    reel(reel_bin, "check", uri)
    local_ls = json.loads(reel(reel_bin, "ls", s3["local"], "--json").stdout)["episodes"]
    assert json.loads(reel(reel_bin, "ls", uri, "--json").stdout)["episodes"] == local_ls
    again = json.loads(reel(reel_bin, "import", s3["ds"], uri, "--json").stdout)
    assert [k["episode_index"] for k in again["skipped"]] == [1, 2, 3], "identical episodes are found at the store"
    assert again["episodes"] == 0 and again["pushed"] == {"files_sent": 0, "bytes_sent": 0}


def test_import_of_a_dataset_on_s3(reel_bin, s3, tmp_path):
    upload_tree(s3["endpoint"], s3["ds"], BUCKET, "datasets/ds")
    source = f"s3://{BUCKET}/datasets/ds"
    local = tmp_path / "task"
    reel(reel_bin, "import", source, local)
    assert {rel: (local / rel).read_bytes() for rel in files_of(local) if rel != "meta/info.json"} == \
        {rel: (s3["local"] / rel).read_bytes() for rel in files_of(s3["local"]) if rel != "meta/info.json"}
    reel(reel_bin, "import", source, f"s3://{BUCKET}/from_s3/task")
    assert same_as_local(stored(s3["client"], "from_s3/task"), s3["local"]) == []


def test_import_into_a_pushed_task_continues_its_numbering(reel_bin, s3):
    uri = f"s3://{BUCKET}/grown/task"
    reel(reel_bin, "push", s3["task"], uri)
    proc = reel(reel_bin, "import", s3["ds"], uri, "--renumber", "--json")
    report = json.loads(proc.stdout)
    assert report["episode_indices"] == [4, 5, 6], "the staging directory sees 1-3 at the store"
    assert any("is taken in s3://" in w for w in report["warnings"]), \
        f"messages name the stored task, not the staging directory: {report['warnings']}"
    listed = [e["episode_index"] for e in json.loads(reel(reel_bin, "ls", uri, "--json").stdout)["episodes"]]
    assert listed == [1, 2, 3, 4, 5, 6]
    reel(reel_bin, "check", uri)
    before = {k: v for k, v in objects(s3["client"], "grown/task").items() if "/episode-00" in k
              and int(k.rsplit("-", 1)[1][:3]) < 3}
    after = objects(s3["client"], "grown/task")
    assert all(after[k] == v for k, v in before.items()), "the pushed episodes are untouched"


def test_import_to_s3_is_refused_while_another_writer_holds_the_task(reel_bin, s3):
    client = s3["client"]
    client.put_object(Bucket=BUCKET, Key="locked/task/meta/.push-lock.json",
                      Body=json.dumps({"holder": "elsewhere:1:2", "expires_at": time.time() + 600}).encode())
    proc = reel(reel_bin, "import", s3["ds"], f"s3://{BUCKET}/locked/task", ok=2)
    assert "being pushed by elsewhere:1:2" in proc.stderr
    assert set(objects(client, "locked/task")) == {"meta/.push-lock.json"}


def test_killed_import_to_s3_never_shows_a_torn_episode(reel_bin, s3):
    kills_wanted = kill_rounds("REEL_IMPORT_S3_KILLS", quick=10, soak=15)
    client, files, local = s3["client"], s3["files"], s3["local"]
    want = {rel: (local / rel).read_bytes() for rel in files_of(local)}
    started = time.monotonic()
    reel(reel_bin, "import", s3["ds"], f"s3://{BUCKET}/probe/task")
    duration = time.monotonic() - started
    delays = kill_delays(random.Random(170), duration * 1.1, kills_wanted)
    kills = rounds = middle = 0
    while kills < kills_wanted and rounds < 4 * kills_wanted:
        rounds += 1
        prefix = f"round{rounds}/task"
        uri = f"s3://{BUCKET}/{prefix}"
        delay = next(delays)
        rc, err = run_killed_after([reel_bin, "import", str(s3["ds"]), uri], delay)
        context = f"round {rounds} (killed after {delay:.3f} s, exit {rc})"
        assert rc in (0, -9), f"{context}: {err}"
        kills += rc == -9
        objs = objects(client, prefix)
        proc = subprocess.run([reel_bin, "ls", uri, "--json"], capture_output=True, text=True, timeout=120)
        if "meta/info.json" in objs:
            assert proc.returncode == 0, f"{context}: {proc.stderr}"
            listed = {e["episode_index"] for e in json.loads(proc.stdout)["episodes"]}
            shown = published(objs, committed(client, prefix, objs))
            assert listed == shown, f"{context}: reel lists {sorted(listed)}, published {sorted(shown)}"
            assert listed in (set(), set(files)), f"{context}: a change's episodes appear together, not {sorted(listed)}"
            got = stored(client, prefix)
            for n in listed:
                for rel in files[n]:
                    assert got.get(rel) == want[rel], f"{context}: episode {n} listed, {rel} torn"
        else:
            assert proc.returncode == 2, f"{context}: {proc.stderr}"
        middle += any(k.startswith("meta/.push-") and k != "meta/.push-lock.json" for k in objs)
        reel(reel_bin, "import", s3["ds"], uri)
        assert same_as_local(stored(client, prefix), local) == [], f"{context}: the re-run did not complete it"
        assert not [k for k in objects(client, prefix) if k.startswith("meta/.push")], f"{context}: lock or journal left"
    print(f"{kills} kills in {rounds} rounds; {middle} left a change half-published")
    assert kills >= kills_wanted, f"only {kills} of {rounds} imports were still running when killed"
    assert middle > 0 or kills_wanted < 5, "no kill left a change half-published: the campaign missed the middle"


def test_python_import_to_s3(reel_mod, s3):
    uri = f"s3://{BUCKET}/python/task"
    storage = {"endpoint_url": s3["endpoint"], "region": BASE_ENV["AWS_DEFAULT_REGION"]}
    report = reel_mod.import_dataset(s3["ds"], uri, storage_options=storage)
    assert report["episode_indices"] == [1, 2, 3] and report["pushed"]["files_sent"] > 0
    assert same_as_local(stored(s3["client"], "python/task"), s3["local"]) == []
    assert reel_mod.open(uri, storage_options=storage).episodes() == reel_mod.open(str(s3["local"])).episodes()


def test_python_import_of_a_dataset_on_s3(reel_mod, s3, tmp_path):
    upload_tree(s3["endpoint"], s3["ds"], BUCKET, "datasets/py_ds")
    storage = {"endpoint_url": s3["endpoint"], "region": BASE_ENV["AWS_DEFAULT_REGION"]}
    report = reel_mod.import_dataset(f"s3://{BUCKET}/datasets/py_ds", tmp_path / "task", storage_options=storage)
    assert report["episode_indices"] == [1, 2, 3] and "pushed" not in report
