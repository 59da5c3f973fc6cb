"""Export and pack through object storage (docs/storage.md): `reel export` and `reel pack` of a
task on ``s3://`` (videos included: stream copy, concatenation, re-encoding, precompression all
read the task through its object-store FileSystem) equal the same commands on the local copy
byte for byte; `reel export TASK s3://...` uploads the same files as a local export, the
marker file last, refuses an existing output without --force and replaces it with it; an
upload cut half-way leaves no ``meta/info.json``. The store is a real S3-compatible server (moto
on a free 127.0.0.1 port); the cut is a TCP proxy in front of it that stops forwarding. Nothing
inside reel is mocked."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
import zipfile
from pathlib import Path

import pytest

from .cli_run import reel as cli
from .s3_server import BASE_ENV, list_objects, moto_server, s3_environment, upload_tree

BUCKET = "reel-write"
TIMEOUT_S = 300


@pytest.fixture(scope="module")
def store(reel_bin, tmp_path_factory):
    """Local tasks with videos, uploaded: {"endpoint", "client", "local": {name: Path}, "uri": {name: str}}.
    "video": H.264 RGB and 12-bit HEVC depth (stream-copied by export); "ffv1": FFV1 depth
    .mkv (re-encoded by export)."""
    import boto3

    base = tmp_path_factory.mktemp("object_store_write")
    local = {"video": base / "video", "ffv1": base / "ffv1"}
    cli(reel_bin, "simulate", local["video"], "--count", 2, "--seconds", 0.5, "--video-size", "96x64", "--seed", 5)
    cli(reel_bin, "simulate", local["ffv1"], "--count", 2, "--seconds", 0.5, "--video-size", "96x64", "--seed", 6,
        "--depth-ffv1")
    with moto_server() as endpoint, s3_environment(endpoint):
        for name, path in local.items():
            upload_tree(endpoint, path, BUCKET, f"tasks/{name}")
        client = boto3.client("s3", endpoint_url=endpoint, region_name=BASE_ENV["AWS_DEFAULT_REGION"])
        yield {"endpoint": endpoint, "client": client, "local": local,
               "uri": {name: f"s3://{BUCKET}/tasks/{name}" for name in local}}


def run(reel_bin, *args):
    """(rc, stdout, stderr) of the CLI, bounded in time; never a crash."""
    proc = subprocess.run([reel_bin, *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode in (0, 1, 2), f"reel {args}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    return proc.returncode, proc.stdout, proc.stderr


def tree(root: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file below `root`."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def bucket_tree(client, prefix: str) -> dict[str, bytes]:
    """Relative key -> bytes of every object below s3://BUCKET/prefix/."""
    return {o["Key"][len(prefix) + 1:]: client.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
            for o in list_objects(client, BUCKET, prefix)}


def zip_entries(path: Path) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(path) as z:
        return [(i.filename, z.read(i)) for i in z.infolist()]


def assert_same_tree(got: dict[str, bytes], want: dict[str, bytes]):
    assert sorted(got) == sorted(want)
    for rel in want:
        assert got[rel] == want[rel], f"{rel}: {len(got[rel])} bytes, expected {len(want[rel])}"


# ---- reading a task on s3:// ----------------------------------------------------------------

@pytest.mark.parametrize("name,fmt", [("video", "lerobot-v3"), ("video", "lerobot-v2.1"), ("video", "bundle"),
                                      ("ffv1", "lerobot-v3")])
def test_export_with_videos_from_s3_equals_local(reel_bin, store, tmp_path, name, fmt):
    reports = {}
    for where in ("local", "uri"):
        rc, out, err = run(reel_bin, "export", store[where][name], "-o", tmp_path / where, "--to", fmt, "--json")
        assert rc == 0, err
        reports[where] = json.loads(out)
    assert reports["uri"]["videos_copied"] + reports["uri"]["videos_reencoded"] > 0
    if name == "ffv1":
        assert reports["uri"]["videos_reencoded"] > 0  # the re-encode reads the task's .mkv from the store
    for key in ("episodes", "frames", "videos_copied", "videos_reencoded", "features", "warnings"):
        assert reports["uri"][key] == reports["local"][key], key
    assert_same_tree(tree(tmp_path / "uri"), tree(tmp_path / "local"))


@pytest.mark.parametrize("precompress", [False, True], ids=["plain", "precompress"])
def test_pack_from_s3_equals_local(reel_bin, store, tmp_path, precompress):
    extra = ["--precompress"] if precompress else []
    reports = {}
    for where in ("local", "uri"):
        rc, out, err = run(reel_bin, "pack", store[where]["video"], 2, "-o", tmp_path / f"{where}.zip", "--json", *extra)
        assert rc == 0, err
        reports[where] = json.loads(out)
    assert reports["uri"]["entries"] == reports["local"]["entries"]
    assert any(e["recompressed"] for e in reports["uri"]["entries"]) == precompress
    assert zip_entries(tmp_path / "uri.zip") == zip_entries(tmp_path / "local.zip")


def test_pack_from_s3_default_name(reel_bin, store, tmp_path):
    proc = subprocess.run([reel_bin, "pack", store["uri"]["video"], "1", "--json"], capture_output=True, text=True,
                          timeout=TIMEOUT_S, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["zip_path"] == "video_ep000000.zip"
    assert (tmp_path / "video_ep000000.zip").is_file()


# ---- writing an export to s3:// -------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["lerobot-v3", "lerobot-v2.1", "bundle"])
def test_export_to_s3_equals_local_export(reel_bin, store, tmp_path, fmt):
    local_out = tmp_path / "local"
    cli(reel_bin, "export", store["local"]["video"], "-o", local_out, "--to", fmt)
    uri = f"s3://{BUCKET}/exports/{fmt}"
    rc, out, err = run(reel_bin, "export", store["local"]["video"], "-o", uri, "--to", fmt, "--json")
    assert rc == 0, err
    assert json.loads(out)["out_dir"] == uri
    assert_same_tree(bucket_tree(store["client"], f"exports/{fmt}"), tree(local_out))
    # The uploaded dataset reads like the local one.
    for cmd in ("info", "ls"):
        rc, s3_json, err = run(reel_bin, cmd, uri, "--json")
        assert rc == 0, err
        _, local_json, _ = run(reel_bin, cmd, local_out, "--json")
        assert json.loads(s3_json.replace(uri, str(local_out)).replace(uri[len("s3://"):], str(local_out))) == \
            json.loads(local_json)


def test_export_from_s3_to_s3(reel_bin, store, tmp_path):
    cli(reel_bin, "export", store["local"]["ffv1"], "-o", tmp_path / "local")
    uri = f"s3://{BUCKET}/exports/from-s3"
    cli(reel_bin, "export", store["uri"]["ffv1"], "-o", uri)
    assert_same_tree(bucket_tree(store["client"], "exports/from-s3"), tree(tmp_path / "local"))


def test_export_to_s3_refuses_an_existing_output_and_force_replaces_it(reel_bin, store, tmp_path):
    uri = f"s3://{BUCKET}/exports/replaced"
    cli(reel_bin, "export", store["local"]["video"], "-o", uri, "--to", "lerobot-v2.1", "--episodes", "1")
    old = bucket_tree(store["client"], "exports/replaced")
    rc, _, err = run(reel_bin, "export", store["local"]["video"], "-o", uri, "--to", "lerobot-v2.1")
    assert rc == 2 and "already exists" in err and uri in err and "--force" in err, err
    assert bucket_tree(store["client"], "exports/replaced") == old
    cli(reel_bin, "export", store["local"]["video"], "-o", uri, "--to", "lerobot-v2.1", "--force")
    cli(reel_bin, "export", store["local"]["video"], "-o", tmp_path / "want", "--to", "lerobot-v2.1")
    new = bucket_tree(store["client"], "exports/replaced")
    assert_same_tree(new, tree(tmp_path / "want"))  # nothing of the old export is left over
    assert len(new) > len(old)
    # Not a dataset: refused even with --force.
    store["client"].put_object(Bucket=BUCKET, Key="exports/not-a-dataset/notes.txt", Body=b"mine")
    rc, _, err = run(reel_bin, "export", store["local"]["video"], "-o", f"s3://{BUCKET}/exports/not-a-dataset",
                     "--force")
    assert rc == 2 and "neither" in err, err
    assert bucket_tree(store["client"], "exports/not-a-dataset") == {"notes.txt": b"mine"}


class CuttingProxy:
    """A TCP proxy to `upstream` that forwards `budget` bytes from clients, then closes every
    connection and refuses new ones: the store going away half-way through an upload."""

    def __init__(self, upstream: str, budget: int):
        host, port = upstream.rsplit("//", 1)[1].split(":")
        self.upstream = (host, int(port))
        self.budget = budget
        self.sent = 0
        self.cut = threading.Event()
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            if self.cut.is_set():
                client.close()
                continue
            upstream = socket.create_connection(self.upstream)
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src, dst, counted):
        try:
            while not self.cut.is_set():
                data = src.recv(65536)
                if not data:
                    break
                if counted:
                    with self.lock:
                        self.sent += len(data)
                        if self.sent > self.budget:
                            self.cut.set()
                            break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.sock.close()


def test_upload_cut_half_way_leaves_no_marker(reel_bin, store, tmp_path):
    cli(reel_bin, "export", store["local"]["video"], "-o", tmp_path / "local")
    total = sum(len(b) for b in tree(tmp_path / "local").values())
    proxy = CuttingProxy(store["endpoint"], total // 2)
    try:
        t0 = time.monotonic()
        rc, _, err = run(reel_bin, "export", store["local"]["video"], "-o", f"s3://{BUCKET}/exports/cut",
                         "--endpoint-url", proxy.url)
        assert time.monotonic() - t0 < 120
    finally:
        proxy.close()
    assert proxy.cut.is_set()
    assert rc == 2 and f"s3://{BUCKET}/exports/cut" in err, err
    left = bucket_tree(store["client"], "exports/cut")
    assert left, "the cut came after some files were uploaded (they stay: the store went away)"
    assert "meta/info.json" not in left
    rc, _, err = run(reel_bin, "info", f"s3://{BUCKET}/exports/cut")
    assert rc == 2, err


# ---- Python -----------------------------------------------------------------------------------

def test_python_export_and_pack_with_storage_options(reel_bin, store, reel_mod, tmp_path, monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3")
    so = {"endpoint_url": store["endpoint"]}
    cli(reel_bin, "export", store["local"]["video"], "-o", tmp_path / "want", "--to", "bundle")
    got = reel_mod.export(store["uri"]["video"], tmp_path / "got", storage_options=so, format="bundle")
    assert got["episodes"] == 2
    assert_same_tree(tree(tmp_path / "got"), tree(tmp_path / "want"))
    uri = f"s3://{BUCKET}/exports/python"
    report = reel_mod.export(store["local"]["video"], uri, storage_options=so, format="bundle")
    assert report["out_dir"] == uri
    assert_same_tree(bucket_tree(store["client"], "exports/python"), tree(tmp_path / "want"))
    with pytest.raises(reel_mod.Error, match="already exists"):
        reel_mod.export(store["local"]["video"], uri, storage_options=so, format="bundle")
    reel_mod.export(store["local"]["video"], uri, storage_options=so, format="bundle", replace_existing=True)
    assert reel_mod.open(uri, so).episodes() == reel_mod.open(str(tmp_path / "want")).episodes()

    a = reel_mod.pack(store["local"]["video"], 1, tmp_path / "a.zip")
    b = reel_mod.pack(store["uri"]["video"], 1, tmp_path / "b.zip", storage_options=so)
    assert b["entries"] == a["entries"]
    assert zip_entries(tmp_path / "b.zip") == zip_entries(tmp_path / "a.zip")
    with pytest.raises(TypeError, match="unknown key"):
        reel_mod.pack(store["uri"]["video"], 1, tmp_path / "c.zip", storage_options={"endpiont_url": "x"})
