"""`reel view` / `reel.rerun` (docs/view.md): the .rrd a task becomes, read back with rerun's
own reading API (rerun.chunk.RrdReader) and compared with the task as pyarrow, numpy and
PyAV read it, never with reel's readers:

- each RGB slot is its file byte for byte (an AssetVideo, no re-encode) with one frame
  reference per data row at the frame's own pts;
- depth slots are DepthImages in millimetres (meter 1000), one per row, capped by --max-frames;
- a force value, an IMU sample at its imu_ts_ns, a SLAM point at its _ns stamp in the frame
  the episode declares, the fz plane of a force-matrix sample (decoded here with numpy from
  the contract's row_diff_quantized rule), a glove pressure image and status events;
- one file per episode for several episodes; a LeRobot dataset works too; bad input exits 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .recorder_common import reel_exec, simulate

rerun_chunk = pytest.importorskip("rerun.chunk", reason="rerun-sdk is in requirements.txt; `make venv` installs it")

SIM = ("--seconds", 1.0, "--fps", 30, "--video-size", "64x48", "--count", 2)


@pytest.fixture(scope="module")
def task(tmp_path_factory, reel_bin) -> Path:
    root = tmp_path_factory.mktemp("view") / "pick"
    simulate(reel_bin, root, *SIM)
    return root


def view(reel_bin: str, *args) -> dict:
    rc, out, err = reel_exec(reel_bin, "view", *args, "--json", "--progress", "none", timeout=300)
    assert rc == 0, f"reel view {args} exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    return json.loads(out)


class Rrd:
    """The chunks of the first recording of an .rrd file, by entity path."""

    def __init__(self, path: Path):
        reader = rerun_chunk.RrdReader(str(path))
        self.recordings = reader.recordings()
        self.batches: dict[str, list[pa.RecordBatch]] = {}
        for chunk in reader.store().stream():
            self.batches.setdefault(chunk.entity_path, []).append(chunk.to_record_batch())

    def column(self, entity: str, name: str, index: str | None = None) -> tuple[list, list]:
        """(values of component column `name`, values of timeline `index`) over the entity's
        chunks; a row's batch of one instance is that instance (rerun stores lists per row)."""
        values, times = [], []
        for b in self.batches.get(entity, []):
            if name in b.schema.names:
                values += [v[0] if isinstance(v, list) and len(v) == 1 else v for v in b.column(name).to_pylist()]
                if index:
                    times += b.column(index).cast(pa.int64()).to_pylist()
        return values, times


def data(task: Path, n: int) -> pa.Table:
    return pq.read_table(task / f"data/chunk-000/episode-{n - 1:03d}.parquet")


def episode_row(task: Path, n: int) -> dict:
    return pq.read_table(task / f"meta/episodes/chunk-000/episode-{n - 1:03d}.parquet").to_pylist()[0]


def test_videos_are_the_files_with_a_frame_reference_per_row(task, reel_bin, tmp_path):
    out = view(reel_bin, task, "1", "--save", tmp_path / "ep1.rrd")
    rrd = Rrd(tmp_path / "ep1.rrd")
    info = json.loads((task / "meta/info.json").read_text())
    rows = data(task, 1).num_rows
    assert out["episodes"][0]["rows"] == rows
    assert set(info["cameras"]), "the simulated rig has RGB cameras"
    for slot in info["cameras"]:
        path = task / f"videos/chunk-000/{slot}/episode-000.mp4"
        blob, _ = rrd.column(f"/cameras/{slot}", "AssetVideo:blob")
        assert len(blob) == 1 and bytes(blob[0]) == path.read_bytes(), f"{slot}: the asset is not the file"
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            pts_ns = sorted(round(float(p.pts * stream.time_base) * 1e9) for p in container.demux(stream) if p.pts is not None)
        refs, stamps = rrd.column(f"/cameras/{slot}", "VideoFrameReference:timestamp", "timestamp")
        assert len(refs) == rows == len(pts_ns), f"{slot}: {len(refs)} references, {rows} rows, {len(pts_ns)} frames"
        assert [int(r) for r in refs] == pts_ns
        want = np.round(data(task, 1)["timestamp"].to_numpy().astype(np.float64) * 1e9).astype(np.int64)
        assert np.abs(np.array(stamps) - want).max() <= 1, f"{slot}: frame i is not at row i's timestamp"


def test_depth_images_in_millimetres_capped_by_max_frames(task, reel_bin, tmp_path):
    view(reel_bin, task, "1", "--save", tmp_path / "all.rrd", "--max-frames", 0)
    view(reel_bin, task, "1", "--save", tmp_path / "cap.rrd", "--max-frames", 10)
    info = json.loads((task / "meta/info.json").read_text())
    depth_slots = [s for s in info["video_extensions"] if s not in info["cameras"]]
    assert depth_slots
    rows = data(task, 1).num_rows
    for path, want in ((tmp_path / "all.rrd", rows), (tmp_path / "cap.rrd", 10)):
        rrd = Rrd(path)
        for slot in depth_slots:
            meters, _ = rrd.column(f"/cameras/{slot}", "DepthImage:meter")
            assert len(meters) == want and set(meters) == {1000.0}, f"{path.name} {slot}: {len(meters)} images"


def test_signals_imu_slam_force_matrix_glove_and_status_equal_the_data(task, reel_bin, tmp_path):
    view(reel_bin, task, "2", "--save", tmp_path / "ep2.rrd", "--max-frames", 0)
    rrd, table, row = Rrd(tmp_path / "ep2.rrd"), data(task, 2), episode_row(task, 2)
    # A force value at its row's time.
    force = table["observation.gripper_left_force"].to_pylist()
    got, times = rrd.column("/signals/observation.gripper_left_force", "Scalars:scalars", "timestamp")
    k = int(np.argmax([abs(v[2]) if v else 0 for v in force]))
    assert got[k] == [float(np.float32(x)) for x in force[k]]
    assert abs(times[k] - table["timestamp"][k].as_py() * 1e9) <= 1
    # An IMU sample at its own imu_ts_ns.
    ts = [t for r in table["imu_ts_ns"].to_pylist() for t in (r or [])]
    samples = [s for r in table["observation.imu"].to_pylist() for s in (r or [])]
    got, stamps = rrd.column("/imu/observation.imu", "Scalars:scalars", "hardware_ns")
    assert stamps == ts and len(got) == len(samples)
    j = len(ts) // 2
    assert got[j] == [float(np.float32(x)) for x in samples[j]]
    # A SLAM point at its _ns stamp, under the frame the episode's slam_specs declares.
    frame = json.loads(row["slam_specs"])["observation.slam_trajectory"]["frame"]
    flat = [(p, ns) for r, n in zip(table["observation.slam_trajectory"].to_pylist(),
                                   table["observation.slam_trajectory_ns"].to_pylist()) if r
            for p, ns in zip(np.reshape(r, (-1, 8)), n)]
    got, stamps = rrd.column(f"/world/{frame}/observation.slam_trajectory", "Transform3D:translation", "hardware_ns")
    assert stamps == [ns for _, ns in flat]
    point, _ = flat[len(flat) // 2]
    assert got[len(flat) // 2] == pytest.approx(list(point[1:4]), rel=1e-6)
    # The fz plane of the first force-matrix sample: row_diff_quantized decoded here (§7.2.1).
    col = "observation.gripper_left_force_matrix"
    scale = json.loads(row["force_matrix_specs"])[col]["scale"]
    first = next(i for i, v in enumerate(table[col].to_pylist()) if v)
    diff = np.asarray(table[col][first].as_py(), np.int16).reshape(250, 750).astype(np.int32)
    fz = (np.cumsum(diff, axis=1).astype(np.int16).astype(np.float32) / np.float32(scale)).reshape(250, 250, 3)[:, :, 2]
    tensors, _ = rrd.column(f"/force_matrix/{col}", "Tensor:data")
    assert np.array_equal(np.asarray(tensors[0]["buffer"], np.float32).reshape(250, 250), fz)
    # A glove pressure image, and the status events (a change of value each).
    # The left glove in canonical order (multi-device §4.5: values[::-1, ::-1].T of the stored frame).
    glove = np.asarray(table["observation.left_glove"][5].as_py(), np.float32).reshape(16, 16)[::-1, ::-1].T
    tensors, _ = rrd.column("/gloves/observation.left_glove", "Tensor:data")
    assert np.array_equal(np.asarray(tensors[5]["buffer"], np.float32).reshape(16, 16), glove)
    for name in [c for c in table.column_names if c.startswith("status.")]:
        values = [v for v in table[name].to_pylist() if v is not None]
        changes = [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]
        texts, _ = rrd.column(f"/status/{name[len('status.'):]}", "TextLog:text")
        assert texts == changes


def test_several_episodes_one_file_each_and_python_log_episode(task, reel_bin, tmp_path, reel_mod):
    out = view(reel_bin, task, "--save", tmp_path / "out")
    assert [e["episode"] for e in out["episodes"]] == [1, 2]
    assert sorted(Path(f).name for f in out["files"]) == ["pick_episode_000001.rrd", "pick_episode_000002.rrd"]
    import rerun as rr

    import reel.rerun
    rec = rr.RecordingStream("reel", recording_id="mine")
    rec.save(str(tmp_path / "py.rrd"))
    summary = reel.rerun.log_episode(str(task), 2, rec, max_frames=5)
    rec.disconnect()
    assert summary["cameras"] and all(c["frames"] in (5, data(task, 2).num_rows) for c in summary["cameras"].values())
    assert "/imu/observation.imu" in Rrd(tmp_path / "py.rrd").batches


def test_a_lerobot_dataset_is_viewed_with_decoded_frames(task, reel_bin, tmp_path):
    out_dir = tmp_path / "lerobot"
    rc, out, err = reel_exec(reel_bin, "export", task, "-o", out_dir, "--to", "lerobot-v3")
    assert rc == 0, err
    out = view(reel_bin, out_dir, "0", "--save", tmp_path / "le.rrd", "--max-frames", 0)
    cams = out["episodes"][0]["cameras"]
    rows = data(task, 1).num_rows
    rgb = [k for k in cams if k.startswith("observation.images.")]
    assert rgb and all(cams[k] == {"kind": "decoded_rgb", "frames": rows} for k in rgb), cams
    assert all(cams[k]["kind"] == "skipped_depth_map" for k in cams if k not in rgb), cams
    rrd = Rrd(tmp_path / "le.rrd")
    for key in rgb:
        images, _ = rrd.column(f"/cameras/{key}", "Image:buffer")
        assert len(images) == rows, key
    action, _ = rrd.column("/signals/action", "Scalars:scalars")
    assert len(action) == rows


def test_bad_input_exits_2_with_a_message(task, reel_bin, tmp_path):
    for args, words in (((task, "9", "--save", tmp_path / "x.rrd"), "episode 9"),
                        ((tmp_path / "missing", "--save", tmp_path / "y.rrd"), "missing")):
        rc, out, err = reel_exec(reel_bin, "view", *args)
        assert rc == 2 and err.startswith("reel: ") and words in err, (rc, out, err)


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_answers_on_loopback_until_terminated(task, reel_bin):
    import signal
    import subprocess
    import time
    import urllib.request
    web, grpc = free_port(), free_port()
    proc = subprocess.Popen([reel_bin, "view", str(task), "1", "--serve", "--web-port", str(web),
                             "--grpc-port", str(grpc), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        status, deadline = None, time.monotonic() + 120
        while status is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                status = urllib.request.urlopen(f"http://127.0.0.1:{web}/", timeout=2).status
            except OSError:
                time.sleep(0.5)
        assert status == 200, f"no web viewer on 127.0.0.1:{web} (exit {proc.poll()})"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()
    try:  # rerun's server went with it
        urllib.request.urlopen(f"http://127.0.0.1:{web}/", timeout=2)
        pytest.fail(f"the web viewer still answers on 127.0.0.1:{web} after reel view ended")
    except OSError:
        pass
    summary = json.loads(out)
    assert summary["url"].startswith(f"http://127.0.0.1:{web}/") and len(summary["files"]) == 1


def test_calibration_is_a_pinhole_scaled_to_the_video_and_findings_are_logged(task, reel_bin, tmp_path):
    import shutil
    copy = tmp_path / "pick"
    shutil.copytree(task, copy)
    info = json.loads((copy / "meta/info.json").read_text())
    # The head stereo calibration is declared at its sensor's resolution; the video is 64x48.
    calib = info["calibration"]["head_stereo"]
    fx, fy, cx, cy = calib["left_camera"]["intrinsic"]
    sx, sy = 64 / calib["resolution"][0], 48 / calib["resolution"][1]
    # A task-level finding: a trajectory feature without its frame (002 §6.6, a warning).
    del info["features"]["observation.slam_trajectory"]["frame"]
    (copy / "meta/info.json").write_text(json.dumps(info))
    view(reel_bin, copy, "1", "--save", tmp_path / "c.rrd", "--max-frames", 1)
    rrd = Rrd(tmp_path / "c.rrd")
    matrix, _ = rrd.column("/cameras/stereo_left", "Pinhole:image_from_camera")
    m = np.asarray(matrix[0], np.float64).reshape(3, 3).T  # rerun stores it column-major
    assert m[0, 0] == pytest.approx(fx * sx) and m[1, 1] == pytest.approx(fy * sy)
    assert m[0, 2] == pytest.approx(cx * sx) and m[1, 2] == pytest.approx(cy * sy)
    texts, _ = rrd.column("/check", "TextLog:text")
    assert any("features.slam_frame" in t and "meta/info.json" in t for t in texts), texts


def test_a_bundle_is_viewed_too(task, reel_bin, tmp_path):
    out_dir = tmp_path / "bundle"
    rc, _, err = reel_exec(reel_bin, "export", task, "-o", out_dir, "--to", "bundle")
    assert rc == 0, err
    out = view(reel_bin, out_dir, "0", "--save", tmp_path / "b.rrd", "--max-frames", 2)
    assert out["episodes"][0]["rows"] == data(task, 1).num_rows
    assert any(c["kind"] == "decoded_rgb" and c["frames"] == 2 for c in out["episodes"][0]["cameras"].values())


class _Counting:
    """A reel.Task that counts its listings (episodes() of the whole task), records which
    episodes were looked up on their own and what each check was asked for."""

    def __init__(self, task):
        self._task, self.listings, self.found, self.checks = task, 0, [], []

    def episodes(self, episodes=None):
        if episodes is None:
            self.listings += 1
        else:
            self.found.append(list(episodes))
        return self._task.episodes(episodes=episodes)

    def check(self, episodes=None):
        self.checks.append(None if episodes is None else sorted(episodes))
        return self._task.check(episodes=episodes)

    def __getattr__(self, name):
        return getattr(self._task, name)


def test_a_view_lists_once_and_checks_only_what_it_shows(task, tmp_path, reel_mod):
    # Issue 31: viewing episodes listed the task again per episode and checked every episode;
    # then it listed the task once, which grew with the task (bench_growth): now the episodes
    # shown are looked up once, on their own, and the task is not listed.
    import reel.rerun
    counted = _Counting(reel_mod.open(str(task)))
    out = reel.rerun.view(counted, [2, 1], save=str(tmp_path / "two"), max_frames=2)
    assert [e["episode"] for e in out["episodes"]] == [2, 1]
    assert (counted.listings, counted.found, counted.checks) == (0, [[2, 1]], [[1, 2]])
    one = _Counting(reel_mod.open(str(task)))
    summary = reel.rerun.log_episode(one, 2, max_frames=1)
    assert (one.listings, one.found, one.checks) == (0, [[2]], [[2]]) and summary["episode"] == 2
    with pytest.raises(KeyError, match="episode 9 is not in the task"):
        reel.rerun.view(_Counting(reel_mod.open(str(task))), [9], save=str(tmp_path / "none"))


def test_a_failed_view_leaves_no_partial_file(task, tmp_path, reel_mod):
    """An episode that fails half-way (its video damaged) leaves neither a partial .rrd nor a
    temp beside it, and a file saved before stays as it was (helper's finding, issue 31)."""
    import shutil

    import reel.rerun
    copy = tmp_path / "copy"
    shutil.copytree(task, copy)
    out = tmp_path / "out.rrd"
    reel.rerun.view(reel_mod.open(str(copy)), [1], save=str(out), max_frames=1)
    before = out.read_bytes()
    video = next(iter(reel_mod.open(str(copy)).episodes(episodes=[1])[0]["videos"].values()))
    (copy / video).write_bytes(b"not a video")
    with pytest.raises(reel_mod.Error):
        reel.rerun.view(reel_mod.open(str(copy)), [1], save=str(out), max_frames=1)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "out.rrd"]


def test_check_of_some_episodes_judges_them_and_the_task_files_only(task, reel_bin, tmp_path, reel_mod):
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(task, copy)
    # Episode 1's data is torn (a truncated parquet); a stray file sits in the task.
    bad = copy / "data/chunk-000/episode-000.parquet"
    bad.write_bytes(bad.read_bytes()[:100])
    (copy / "data/stray.txt").write_text("x")
    whole = json.loads(reel_exec(reel_bin, "check", copy, "--json")[1])["tasks"][0]
    assert whole["episodes"] == 2 and {f["path"] for f in whole["findings"]} >= {
        "data/chunk-000/episode-000.parquet", "data/stray.txt"}
    rc, out, _ = reel_exec(reel_bin, "check", copy, "--episodes", "2", "--json")
    two = json.loads(out)["tasks"][0]
    assert (rc, two["episodes"]) == (0, 1) and [f for f in two["findings"] if f["severity"] == "error"] == []
    rc, out, _ = reel_exec(reel_bin, "check", copy, "--episodes", "1", "--json")
    one = json.loads(out)["tasks"][0]
    assert rc == 1 and {f["path"] for f in one["findings"] if f["severity"] == "error"} == {
        "data/chunk-000/episode-000.parquet"}
    py = reel_mod.open(str(copy))
    assert [f for f in py.check(episodes=[2]) if f["severity"] == "error"] == []
    assert "data/chunk-000/episode-000.parquet" in {f["path"] for f in py.check(episodes=[1])}
    rc, _, err = reel_exec(reel_bin, "check", copy, "--episodes", "7")
    assert rc == 2 and "episode 7" in err
