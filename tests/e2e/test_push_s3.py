"""reel push onto a real S3-compatible server (moto on 127.0.0.1; docs/storage.md).

The kill campaign SIGKILLs `reel push s3://...` at random moments (REEL_PUSH_S3_KILLS kills,
8 in make test, 50 in make soak), onto an empty prefix and onto one holding an older push, and
checks after each:
`reel ls` on the URI lists exactly the episodes an independent listing (boto3) finds
published (episodes row present, no push journal), every file of them equal to the source
(size and MD5 ETag), and a re-run completes the copy.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from .cli_run import reel
from .kill_campaign import kill_rounds, run_killed_after
from .s3_server import BASE_ENV, moto_server, s3_environment
from .test_push import episode_files, files_of

BUCKET = "pushed"
JOURNAL_RE = re.compile(r"meta/\.push-(\d+)\.json")
ROW_RE = re.compile(r"meta/episodes/chunk-(\d{3})/episode-(\d{3})\.parquet")


def md5s(root: Path) -> dict:
    """Relative path -> the ETag S3 gives the file as Arrow uploads it: one part of a multipart
    upload (MD5 of the part's MD5, "-1"); a plain PUT's ETag (its MD5) is accepted by same()."""
    return {rel: hashlib.md5(hashlib.md5((root / rel).read_bytes()).digest()).hexdigest() + "-1"
            for rel in files_of(root)}


def plain_md5(root: Path, rel: str) -> str:
    return hashlib.md5((root / rel).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def s3(reel_bin, tmp_path_factory):
    import boto3

    base = tmp_path_factory.mktemp("push_s3")
    task, older = base / "task", base / "older"
    reel(reel_bin, "simulate", task, "--count", 4, "--seconds", 1, "--video-size", "96x64", "--seed", 4)
    shutil.copytree(task, older)
    files = episode_files(task, reel_bin)
    for n, rels in files.items():  # `older`: the same task when it had 2 episodes
        if n > 2:
            for rel in rels:
                (older / rel).unlink()
    with moto_server() as endpoint, s3_environment(endpoint):
        client = boto3.client("s3", endpoint_url=endpoint, region_name=BASE_ENV["AWS_DEFAULT_REGION"])
        client.create_bucket(Bucket=BUCKET)
        yield {"client": client, "task": task, "older": older, "files": files}


def objects(client, prefix: str, bucket: str = BUCKET) -> dict:
    """Relative key -> (size, ETag without quotes) under s3://bucket/prefix/."""
    out, token = {}, None
    while True:
        kw = {"Bucket": bucket, "Prefix": prefix + "/"}
        if token:
            kw["ContinuationToken"] = token
        page = client.list_objects_v2(**kw)
        for o in page.get("Contents", []):
            if not o["Key"].endswith("/"):  # Arrow's empty directory markers (after a delete)
                out[o["Key"][len(prefix) + 1:]] = (o["Size"], o["ETag"].strip('"'))
        if not page.get("IsTruncated"):
            return out
        token = page["NextContinuationToken"]


def etags(objs: dict, source: Path) -> dict:
    """Relative key -> ETag in md5s()'s form (a plain PUT's MD5 of the same bytes mapped to it)."""
    out = {}
    for k, (size, etag) in objs.items():
        if "-" not in etag and (source / k).is_file() and etag == plain_md5(source, k):
            etag = hashlib.md5(bytes.fromhex(etag)).hexdigest() + "-1"
        out[k] = etag
    return out


def published(objs: dict, committed: frozenset = frozenset()) -> set:
    """Episodes whose row is stored and whose push journal is gone, plus `committed`: those a
    whole change journal names (docs/storage.md: past a staged change's commit point they are
    shown while their journals are deleted one by one)."""
    rows = {int(m.group(1)) * 1000 + int(m.group(2)) + 1 for k in objs if (m := ROW_RE.fullmatch(k))}
    return rows - ({int(m.group(1)) for k in objs if (m := JOURNAL_RE.fullmatch(k))} - committed)


def test_push_to_s3_mirrors_and_reads_back(reel_bin, s3):
    uri = f"s3://{BUCKET}/whole/task"
    first = json.loads(reel(reel_bin, "push", s3["task"], uri, "--json").stdout)
    assert first["sent"] == [1, 2, 3, 4] and first["bytes_sent"] > 0
    sums = md5s(s3["task"])
    objs = objects(s3["client"], "whole/task")
    assert etags(objs, s3["task"]) == sums, "every object equals its source file, nothing else"
    local_ls = json.loads(reel(reel_bin, "ls", s3["task"], "--json").stdout)
    remote_ls = json.loads(reel(reel_bin, "ls", uri, "--json").stdout)
    assert remote_ls["episodes"] == local_ls["episodes"]
    reel(reel_bin, "check", uri)
    again = json.loads(reel(reel_bin, "push", s3["task"], uri, "--json").stdout)
    assert again["sent"] == [] and again["present"] == 4 and again["task_files_sent"] == []


def test_a_second_push_is_refused_on_s3(reel_bin, s3):
    client = s3["client"]
    client.put_object(Bucket=BUCKET, Key="locked/task/meta/.push-lock.json",
                      Body=json.dumps({"holder": "elsewhere:1:2", "expires_at": time.time() + 600}).encode())
    proc = reel(reel_bin, "push", s3["task"], f"s3://{BUCKET}/locked/task", ok=2)
    assert "being pushed by elsewhere:1:2" in proc.stderr
    assert "s3://" in proc.stderr, "the error names the object by its URI"
    assert set(objects(client, "locked/task")) == {"meta/.push-lock.json"}


def test_killed_push_to_s3_never_shows_a_torn_episode(reel_bin, s3):
    kills_wanted = kill_rounds("REEL_PUSH_S3_KILLS", quick=8, soak=50)
    client, task, files = s3["client"], s3["task"], s3["files"]
    sums = md5s(task)
    started = time.monotonic()
    reel(reel_bin, "push", task, f"s3://{BUCKET}/probe/task")
    duration = time.monotonic() - started
    rng = random.Random(150)
    kills = rounds = partial = 0
    while kills < kills_wanted and rounds < 4 * kills_wanted:
        rounds += 1
        prefix = f"round{rounds}/task"
        uri = f"s3://{BUCKET}/{prefix}"
        older = rng.random() < 0.6
        if older:
            reel(reel_bin, "push", s3["older"], uri)
        delay = rng.uniform(0.0, duration * 1.1)
        rc, err = run_killed_after([reel_bin, "push", str(task), uri], delay)
        context = f"round {rounds} ({'older' if older else 'empty'}, killed after {delay:.3f} s, exit {rc})"
        assert rc in (0, -9), f"{context}: {err}"
        kills += rc == -9
        objs = objects(client, prefix)
        proc = subprocess.run([reel_bin, "ls", uri, "--json"], capture_output=True, text=True, timeout=120)
        if "meta/info.json" not in objs:
            assert proc.returncode == 2, f"{context}: {proc.stderr}"
        else:
            assert proc.returncode == 0, f"{context}: {proc.stderr}"
            listed = {e["episode_index"] for e in json.loads(proc.stdout)["episodes"]}
            assert listed == published(objs), f"{context}: reel lists {sorted(listed)}, published {sorted(published(objs))}"
            for n in listed:
                for rel in files[n]:
                    assert rel in objs and etags({rel: objs[rel]}, task)[rel] == sums[rel], \
                        f"{context}: episode {n} listed, {rel} torn"
            partial += 0 < len(listed) < len(files)
        reel(reel_bin, "push", task, uri)
        objs = objects(client, prefix)
        assert etags(objs, task) == sums, f"{context}: the re-run did not complete the copy"
    print(f"{kills} kills in {rounds} rounds; {partial} left a partly pushed copy")
    assert kills >= kills_wanted, f"only {kills} of {rounds} pushes were still running when killed"
    assert partial > 0, "no kill left a partly pushed copy: the campaign did not reach the middle"


def test_python_push_to_s3(reel_mod, s3):
    uri = f"s3://{BUCKET}/python/task"
    dry = reel_mod.push(s3["task"], uri, dry_run=True)
    assert dry["dry_run"] and dry["sent"] == [1, 2, 3, 4] and not objects(s3["client"], "python/task")
    report = reel_mod.push(s3["task"], uri)
    assert report["sent"] == [1, 2, 3, 4] and report["task_files_sent"][-1] == "meta/stats.json"
    assert etags(objects(s3["client"], "python/task"), s3["task"]) == md5s(s3["task"])
    assert reel_mod.push(s3["task"], uri, verify=True)["present"] == 4
    assert reel_mod.open(uri).episodes() == reel_mod.open(str(s3["task"])).episodes()
    with pytest.raises(TypeError, match="lock_lease_s"):
        reel_mod.push(s3["task"], uri, lease=5)
