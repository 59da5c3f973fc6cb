"""A local S3-compatible server for the object-storage tests: moto's server (pinned in
requirements.txt) on a free 127.0.0.1 port, started as a subprocess with a bounded wait and
stopped after. Nothing else on the network is used."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

START_TIMEOUT_S = 30

# What the tests and the reel processes they start see: credentials moto accepts, a region,
# and no lookups of AWS's instance metadata (which would wait on a non-local address).
BASE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def moto_server(extra_env: dict[str, str] | None = None):
    """Yields the endpoint URL ("http://127.0.0.1:PORT") of a fresh moto server."""
    port = free_port()
    recording = tempfile.TemporaryDirectory(prefix="moto_recording_")
    # moto's request log (see recorded_requests), off until a test starts it.
    env = dict(os.environ, **BASE_ENV, MOTO_RECORDER_FILEPATH=os.path.join(recording.name, "requests.jsonl"),
               **(extra_env or {}))
    # SIGUSR1 dumps the server's threads to its stderr (REEL_MOTO_LOG names a file for it).
    script = ("import faulthandler, signal, sys; faulthandler.register(signal.SIGUSR1, all_threads=True); "
              "from moto.server import main; sys.exit(main(sys.argv[1:]))")
    log = open(os.environ["REEL_MOTO_LOG"], "ab") if os.environ.get("REEL_MOTO_LOG") else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, "-c", script, "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=log, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"moto server exited {proc.returncode} (REEL_MOTO_LOG=FILE keeps its log)")
            try:
                urllib.request.urlopen(url + "/moto-api/", timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"moto server not answering on {url} after {START_TIMEOUT_S} s")
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        recording.cleanup()


@dataclasses.dataclass(frozen=True)
class Request:
    """One request as moto's request log recorded it."""
    method: str
    key: str  # the object's key below the bucket; "" for a request on the bucket (a listing)
    query: dict[str, str]

    @property
    def is_listing(self) -> bool:
        return self.method == "GET" and self.key == "" and ("list-type" in self.query or "prefix" in self.query)


def _moto_api(endpoint: str, action: str) -> bytes:
    with urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/recorder/{action}",
                                                       method="POST" if action != "download-recording" else "GET"),
                                timeout=30) as answer:
        return answer.read()


@contextlib.contextmanager
def recorded_requests(endpoint: str, bucket: str):
    """For the block, moto's own request log (its recorder): yields a list that holds, once the
    block ends, every request the server answered on `bucket` in it, whoever sent it. Counts
    made from it are the server's, not reel's own counters."""
    got: list[Request] = []
    _moto_api(endpoint, "reset-recording")
    _moto_api(endpoint, "start-recording")
    try:
        yield got
    finally:
        _moto_api(endpoint, "stop-recording")
    for line in _moto_api(endpoint, "download-recording").decode().splitlines():
        entry = json.loads(line)
        url = urllib.parse.urlsplit(entry["url"])
        path = urllib.parse.unquote(url.path).lstrip("/")
        name, _, key = path.partition("/")
        if name == bucket:
            got.append(Request(entry["method"], key, dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))))


@contextlib.contextmanager
def s3_environment(endpoint: str):
    """For the block: BASE_ENV and AWS_ENDPOINT_URL_S3=endpoint in os.environ (so that reel
    processes and reel.open reach the server), AWS_ENDPOINT_URL unset; restored after."""
    import pytest

    with pytest.MonkeyPatch.context() as mp:
        for k, v in BASE_ENV.items():
            mp.setenv(k, v)
        mp.setenv("AWS_ENDPOINT_URL_S3", endpoint)
        mp.delenv("AWS_ENDPOINT_URL", raising=False)
        yield


def list_objects(client, bucket: str, prefix: str) -> list[dict]:
    """Every object below s3://bucket/prefix/ (boto3's list_objects_v2 entries, all pages),
    without the empty directory markers Arrow may leave."""
    out, token = [], None
    while True:
        kw = {"Bucket": bucket, "Prefix": prefix + "/"}
        if token:
            kw["ContinuationToken"] = token
        page = client.list_objects_v2(**kw)
        out += [o for o in page.get("Contents", []) if not o["Key"].endswith("/")]
        if not page.get("IsTruncated"):
            return out
        token = page["NextContinuationToken"]


def upload_tree(endpoint: str, local: Path, bucket: str, prefix: str) -> int:
    """Copies every file under `local` to s3://bucket/prefix/<relative path>; returns the count.
    The bucket is created when missing."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name=BASE_ENV["AWS_DEFAULT_REGION"],
                      aws_access_key_id="testing", aws_secret_access_key="testing")
    if bucket not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
        s3.create_bucket(Bucket=bucket)
    n = 0
    for path in sorted(local.rglob("*")):
        if path.is_file():
            s3.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(local).as_posix()}")
            n += 1
    return n
