"""The writer side of the contract (issue 30), each test written from the seed text and
checked with pyarrow/json, not through reel:

- hand pose on every episode (contract §7.2 "恒写占位零", §4 "不入统计"; multi-device §4.5
  "恒写列，无解算时全零占位", App. C "恒有"), so a bare-hand task can be backfilled;
- slot names as the collector makes them (multi-device §2.4 slot_base(), §4.3
  allocate_slot_names(): "D405_head_rgb", "桌面相机_rgb"), written, checked, packed, served and
  exported to a LeRobot dataset that the real LeRobotDataset loads;
- migration (shared/docs/v1.0-layout.md step 4, contract §6.4): an all-zero v1.0 sensor folder
  is absent (no column, no status, no stats), a device without a name still checks clean;
- the device <-> column binding (multi-device §6.4 proposal: sensor_column, sensor_columns,
  "rig"; §5.2 one writer per column): written, kept, shown, checked, used for labels;
- a column renamed across episodes is a check warning (multi-device §2.4);
- auxiliary streams beside a slot's video (000 §8 "RGB 的 _aux 类辅助流归主 key 同一目录，非主键可忽略"):
  not strays, gone with their episode, taken (and ignored) by the import server;
- a slot with its own frame rate (multi-device §4.2 cameras[slot] = {height, width, fps?}, §6.3
  "fps 仅在该流与默认 fps 不同时才写"): a frame per nominal frame time, declared, checked, read at
  row i as frame round_half_up(i * fps / task fps) clamped to the last (the collector's
  playback `_seek`, tools/tests/test_playback_multifps.py), and re-timed by the export;
- a bundle's videos are "libx264, yuv420p, CRF ≈ 20, short GOP" whatever the task recorded (seed
  004 "Encoding (write-time)"), and a reader indexes a bundle dataset from manifest.json alone;
- a scalar `_ns` stamp declares its "no sample" value (multi-device §6 feature table:
  {"dtype":"int64","shape":[1],"encoding":"host_monotonic_ns","missing_sentinel":0}).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .cli_run import reel
from .fixtures import data_rel
from .keypoints_common import ep_dir, landmarks, write_3d
from .lerobot_peer import dump
from .recorder_common import check_clean, reel_exec, simulate
from .serve_common import ReelServer, build_slice, upload, write_config
from .v1_task import TASK, make_v1_task, pooled_rel

POSES = ("observation.left_hand_pose", "observation.right_hand_pose")


def bare_hand_task(reel_mod, root, rows=5):
    """A head camera and nothing worn: no glove, no gripper (a bare-hand demonstration)."""
    w = reel_mod.TaskWriter(str(root), fps=30.0, task_name="bare",
                            devices=[{"key": "uvc:head", "kind": "uvc", "name": "head", "slots": ["head_left_rgb"]}],
                            video={"slots": [{"slot": "head_left_rgb", "width": 32, "height": 24}],
                                   "preset": "ultrafast"})
    with w.episode() as ep:
        for i in range(rows):
            ep.push_rgb("head_left_rgb", np.full((24, 32, 3), 10 * i, np.uint8))
            ep.append(timestamp=i / 30, wall_time=1.7e9 + i / 30, hardware_ns=10**9 + i * 33_333_333)
    return root


def test_a_bare_hand_episode_has_hand_pose_placeholders_out_of_stats_and_backfills(reel_mod, reel_bin, tmp_path):
    task = bare_hand_task(reel_mod, tmp_path / "data" / "recordings" / "bare")
    t = pq.read_table(task / data_rel(1))
    for col in POSES:
        assert col in t.column_names, col
        assert str(t.schema.field(col).type) == "fixed_size_list<element: float>[63]"
        assert np.array(t.column(col).to_pylist()).tolist() == [[0.0] * 63] * 5
    info = json.loads((task / "meta/info.json").read_text())
    for col in POSES:
        assert info["features"][col] == {"dtype": "float32", "shape": [21, 3]}, info["features"].get(col)
    stats = json.loads((task / "meta/stats.json").read_text())
    assert not set(POSES) & set(stats)
    check_clean(reel_bin, task)
    # backfill-hand-pose works on it (it refused a task without the columns before).
    mirror = tmp_path / "keypoints_output" / "bare"
    write_3d(ep_dir(mirror, 1) / "hand_pose_3d/chunk-000.parquet", [(2, (True, "Left", 7), (True, "Right", 8))])
    rc, out, err = reel_exec(reel_bin, "backfill-hand-pose", task, "--keypoints", mirror, "--json")
    assert rc == 0, out + err
    t = pq.read_table(task / data_rel(1))
    assert np.allclose(t.column(POSES[0])[2].as_py(), landmarks(7))
    assert np.allclose(t.column(POSES[1])[2].as_py(), landmarks(8))
    assert t.column(POSES[0])[1].as_py() == [0.0] * 63
    check_clean(reel_bin, task)


# multi-device §2.4/§4.3, worked out by hand from the rules (not through reel): slot_base keeps
# [0-9A-Za-z_] and U+4E00-U+9FFF, folds every other run into one "_", trims "_", keeps case.
@contextlib.contextmanager
def served(reel_bin, where):
    """An import server on loopback (tests/e2e/serve_common.py), root where/root."""
    srv = ReelServer(reel_bin, where / "root", write_config(reel_bin, where / "serve.json", project_a="names"),
                     where / "serve.log").start()
    try:
        yield srv
    finally:
        srv.stop()


SLOT_BASE_CASES = [
    ("D405_head", "D405_head"), ("桌面相机", "桌面相机"), ("my cam!", "my_cam"), ("  a--b  ", "a_b"),
    ("Kamera ü 1", "Kamera_1"), ("___", "camera"), ("", "camera"), ("左手 D405", "左手_D405"),
]


def test_slot_base_and_allocate_slot_names_follow_the_collector(reel_mod):
    for name, want in SLOT_BASE_CASES:
        assert reel_mod.slot_base(name) == want, name
    a = reel_mod.allocate_slot_names
    assert a("D405_head", "Intel RealSense D405") == ("D405_head_rgb", "D405_head_depth")
    assert a("", "Intel RealSense D435I") == ("d435_rgb", "d435_depth")
    assert a("", "Intel RealSense L515") == ("realsense_rgb", "realsense_depth")
    assert a("", "Intel RealSense D435I", ["d435_rgb"]) == ("d435_rgb_2", "d435_depth_2")
    assert a("wrist_depth", "D405") == ("wrist_depth_rgb", "wrist_depth")


COLLECTOR_SLOTS = ["D405_head_rgb", "D405_head_depth", "桌面相机_rgb"]


def collector_named_task(reel_mod, root, rows=6):
    """A D405 named "D405_head" by its user and a UVC desk camera named in Chinese, the slots
    allocate_slot_names()/slot_base() give them."""
    W, H = 32, 24
    w = reel_mod.TaskWriter(
        str(root), fps=30.0, task_name="collector_names",
        devices=[{"key": "d405:123", "kind": "d405", "name": "D405_head", "slots": COLLECTOR_SLOTS[:2]},
                 {"key": "uvc:desk", "kind": "uvc", "name": "桌面相机", "slots": [COLLECTOR_SLOTS[2]]}],
        video={"slots": [{"slot": "D405_head_rgb", "width": W, "height": H},
                         {"slot": "D405_head_depth", "width": W, "height": H, "depth": True,
                          "master_slot": "D405_head_rgb"},
                         {"slot": "桌面相机_rgb", "width": W, "height": H}],
               "preset": "ultrafast"})
    with w.episode() as ep:
        for i in range(rows):
            ep.push_rgb("D405_head_rgb", np.full((H, W, 3), 20 * i, np.uint8))
            ep.push_depth("D405_head_depth", np.full((H, W), 500 + 10 * i, np.uint16))
            ep.push_rgb("桌面相机_rgb", np.full((H, W, 3), 200 - 20 * i, np.uint8))
            ep.append(timestamp=i / 30, wall_time=1.7e9 + i / 30, hardware_ns=10**9 + i * 33_333_333)
    return root


def test_collector_slot_names_write_check_pack_and_export_to_lerobot(reel_mod, reel_bin, tmp_path):
    task = collector_named_task(reel_mod, tmp_path / "data" / "recordings" / "names")
    info = json.loads((task / "meta/info.json").read_text(encoding="utf-8"))
    # cameras holds the RGB slots, video_extensions every slot (multi-device §6.3)
    assert sorted(info["cameras"]) == sorted(s for s in COLLECTOR_SLOTS if "depth" not in s)
    assert sorted(info["video_extensions"]) == sorted(COLLECTOR_SLOTS)
    for slot in COLLECTOR_SLOTS:
        assert any((task / "videos/chunk-000" / slot).glob("episode-000.*")), slot
    # status.<slot> exists only for UVC slots, not for external sources such as a RealSense
    # (multi-device Appendix: 外部帧源没有 status.<slot>): reel writes none unless asked.
    names = pq.read_schema(task / data_rel(1)).names
    assert not [n for n in names if n.startswith("status.")], names
    check_clean(reel_bin, task)
    t = reel_mod.open(str(task))
    assert t.frames(1, "D405_head_rgb", [5]).shape == (1, 24, 32, 3)
    assert int(t.frames(1, "D405_head_depth", [5])[0, 0, 0]) == 550
    assert abs(int(t.frames(1, "桌面相机_rgb", [5])[0, 0, 0, 0]) - 100) <= 6
    # reel pack's slice names them as they are; the import server takes the slice
    reel(reel_bin, "pack", task, 1, "-o", tmp_path / "ep1.zip")
    with zipfile.ZipFile(tmp_path / "ep1.zip") as z:
        want = {f"videos/chunk-000/{s}/episode-000.{info['video_extensions'][s]}" for s in COLLECTOR_SLOTS}
        assert want <= set(z.namelist()), z.namelist()
    with served(reel_bin, tmp_path) as server:
        assert upload(server.url, tmp_path / "ep1.zip", name="names", episode_index=0).status_code == 201
        check_clean(reel_bin, server.root / "names")
        for slot in COLLECTOR_SLOTS:
            assert any((server.root / "names/videos/chunk-000" / slot).glob("episode-000.*")), slot
    # LeRobot v3.0: the keys keep the slot names and the real LeRobotDataset loads them
    out_dir = tmp_path / "lerobot"
    reel(reel_bin, "export", "--to", "lerobot-v3", task, out_dir)
    d = dump(out_dir, "v3.0")
    assert d["observation.images.D405_head_rgb"].shape == (6, 24, 32, 3)
    assert d["observation.images.桌面相机_rgb"].shape == (6, 24, 32, 3)
    assert abs(int(d["observation.images.D405_head_rgb"][3, 0, 0, 0]) - 60) <= 6
    assert abs(int(d["observation.images.桌面相机_rgb"][3, 0, 0, 0]) - 140) <= 6
    # A LeRobot dataset without reel's block (any other writer's) imports with the names kept:
    # slot_base() keeps case and CJK.
    info_path = out_dir / "meta/info.json"
    foreign = json.loads(info_path.read_text(encoding="utf-8"))
    foreign.pop("reel")
    info_path.write_text(json.dumps(foreign, ensure_ascii=False), encoding="utf-8")
    back = tmp_path / "back"
    reel(reel_bin, "import", out_dir, back)
    assert {"D405_head_rgb", "桌面相机_rgb"} <= set(json.loads((back / "meta/info.json").read_text())["video_extensions"])


def test_migration_drops_an_all_zero_sensor_and_names_an_unnamed_device(reel_bin, tmp_path):
    v1 = make_v1_task(tmp_path / "v1")
    # Session 2 (N = 2): the left glove was never connected, the v1.0 writer zero-filled it.
    path = next((v1 / f"{TASK}_000002" / "data" / "left_glove").rglob("*.parquet"))
    t = pq.read_table(path)
    zeros = pa.array([[0.0] * 256] * t.num_rows, pa.list_(pa.float32(), 256))
    pq.write_table(t.set_column(t.column_names.index("observation.left_glove"), "observation.left_glove", zeros), path)
    # Session 5 (N = 3, the last): its head device has no name and no kind.
    meta_path = v1 / f"{TASK}_000005" / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["devices"][0]["name"] = ""
    meta["devices"][0]["kind"] = ""
    meta_path.write_text(json.dumps(meta))
    out = json.loads(reel(reel_bin, "migrate", "--json", v1, "--to", tmp_path / "pooled").stdout)
    dest = tmp_path / "pooled"
    assert any("every value of observation.left_glove is 0" in w for w in out["warnings"]), out["warnings"]
    assert any("s80m:AB12" in w and "name" in w for w in out["warnings"]), out["warnings"]
    ep2 = pq.read_table(dest / pooled_rel(2, "data"))
    assert "observation.left_glove" not in ep2.column_names and "status.ble_glove:L1" not in ep2.column_names
    assert "observation.right_glove" in ep2.column_names
    # stats over the rows that hold the glove: episodes 1 and 3 only (no zero rows of N = 2)
    rows = np.concatenate([np.array(pq.read_table(dest / pooled_rel(n, "data")).column("observation.left_glove")
                                    .to_pylist(), np.float64) for n in (1, 3)])
    stats = json.loads((dest / "meta/stats.json").read_text())["observation.left_glove"]
    assert np.allclose(np.array(stats["mean"], np.float64).reshape(-1), rows.mean(axis=0), rtol=1e-5)
    info = json.loads((dest / "meta/info.json").read_text())
    head = next(d for d in info["devices"] if d["key"] == "s80m:AB12")
    assert head["name"] and head["kind"] == "s80m"
    assert all(info["device_names"].get(slot) for d in info["devices"] for slot in d["slots"])
    # the v1.0 device's sensor_column is kept as the binding (multi-device §6.4), as a sensor name
    assert next(d for d in info["devices"] if d["key"] == "ble_glove:R1")["sensor_column"] == "right_glove"
    check_clean(reel_bin, dest)


def test_device_binding_written_shown_checked_and_labelled(reel_mod, reel_bin, tmp_path):
    task = tmp_path / "sim"
    simulate(reel_bin, task, "--count", 1, "--seconds", 0.4, "--no-video")
    info = json.loads((task / "meta/info.json").read_text(encoding="utf-8"))
    by_key = {d["key"]: d for d in info["devices"]}
    assert by_key["usbglove:364933593535"]["sensor_column"] == "left_glove"
    assert by_key["usbglove:364133593535"]["sensor_column"] == "right_glove"
    g1, g2 = by_key["gripper:CC:BA:97:25:B4:44"], by_key["gripper:68:EE:8F:C6:0D:BC"]
    assert (g1["rig"], g2["rig"]) == (1, 2)
    assert "gripper_state" in g1["sensor_columns"] and "gripper_2_gripper_state" in g2["sensor_columns"]
    # every bound column is one the episode wrote, and no column has two writers
    columns = set(pq.read_schema(task / data_rel(1)).names)
    bound = [c if c.startswith("observation.") else "observation." + c
             for d in info["devices"] for c in ([d["sensor_column"]] if "sensor_column" in d else []) +
             d.get("sensor_columns", [])]
    assert bound and set(bound) <= columns and len(bound) == len(set(bound)), bound
    report = check_clean(reel_bin, task)
    assert not [f for t in report["tasks"] for f in t["findings"] if f["rule"] == "devices.binding"]
    shown = json.loads(reel(reel_bin, "info", task, "--json").stdout)
    assert shown["column_owners"]["observation.left_glove"] == "usbglove:364933593535"
    assert shown["column_owners"]["observation.gripper_2_gripper_state"] == "gripper:68:EE:8F:C6:0D:BC"
    assert "writes: observation.left_glove" in reel(reel_bin, "info", task).stdout
    from reel.rerun import device_labels
    labels = device_labels(reel_mod.open(str(task)))
    assert labels["observation.left_glove"] == "USB 手套_left" and labels["d435_rgb"] == "D435_wrist"
    # Hand-edited so that two devices claim one column: check warns, naming both.
    info["devices"][-1]["sensor_column"] = "left_glove"
    info["devices"][-1]["serial"] = "kept"
    (task / "meta/info.json").write_text(json.dumps(info, ensure_ascii=False, indent=2), encoding="utf-8")
    report = json.loads(reel_exec(reel_bin, "check", task, "--json")[1])
    found = [f for t in report["tasks"] for f in t["findings"] if f["rule"] == "devices.binding"]
    assert found and "usbglove:364933593535" in found[0]["message"] and found[0]["severity"] == "warning", found


def test_the_writer_refuses_two_writers_and_keeps_a_devices_other_keys(reel_mod, tmp_path):
    devices = [{"key": "usb_glove:A", "kind": "usb_glove", "name": "A", "sensor_column": "left_glove"},
               {"key": "usb_glove:B", "kind": "usb_glove", "name": "B", "sensor_column": "observation.left_glove"}]
    with pytest.raises(reel_mod.InvalidError, match="left_glove.*usb_glove:A.*usb_glove:B"):
        reel_mod.TaskWriter(str(tmp_path / "two"), fps=30.0, devices=devices)  # refused at open
    assert not (tmp_path / "two").exists()
    root = tmp_path / "keep"
    one = [{"key": "usb_glove:A", "kind": "usb_glove", "name": "A", "sensor_column": "left_glove"}]
    with reel_mod.TaskWriter(str(root), fps=30.0, devices=one).episode() as ep:
        ep.append(timestamp=0.0, fixed={"observation.left_glove": [1.0] * 256})
    info = json.loads((root / "meta/info.json").read_text())
    info["devices"][0]["serial"] = "S-1"  # a key the collector may add; reel does not model it
    (root / "meta/info.json").write_text(json.dumps(info))
    with reel_mod.TaskWriter(str(root), fps=30.0, devices=one).episode() as ep:
        ep.append(timestamp=0.0, fixed={"observation.left_glove": [2.0] * 256})
    dev = json.loads((root / "meta/info.json").read_text())["devices"][0]
    assert dev["serial"] == "S-1" and dev["sensor_column"] == "left_glove"


def _findings(reel_bin, task, rule):
    report = json.loads(reel_exec(reel_bin, "check", task, "--json")[1])
    return [f for t in report["tasks"] for f in t["findings"] if f["rule"] == rule]


def test_a_column_renamed_across_episodes_is_a_warning(reel_mod, reel_bin, tmp_path):
    root = tmp_path / "renamed"
    for name in ("observation.gripper_left_force", "observation.gripper_l_force"):  # ep 1, then ep 2
        with reel_mod.TaskWriter(str(root), fps=30.0).episode() as ep:
            for i in range(3):
                ep.append(timestamp=i / 30, fixed={name: [1.0, 2.0, float(i)]})
    found = _findings(reel_bin, root, "data.column_renamed")
    assert len(found) == 1 and found[0]["severity"] == "warning", found
    assert "observation.gripper_left_force" in found[0]["message"] and "observation.gripper_l_force" in found[0]["message"]
    # A glove swapped for the other one (bound to two devices) is not a rename.
    other = tmp_path / "swapped"
    for key, sensor in (("usb_glove:A", "left_glove"), ("usb_glove:B", "right_glove")):
        dev = [{"key": key, "kind": "usb_glove", "name": key, "sensor_column": sensor}]
        with reel_mod.TaskWriter(str(other), fps=30.0, devices=dev).episode() as ep:
            ep.append(timestamp=0.0, fixed={f"observation.{sensor}": [1.0] * 256})
    assert _findings(reel_bin, other, "data.column_renamed") == []
    check_clean(reel_bin, other)


def test_an_aux_stream_beside_its_video_is_accepted_deleted_with_it_and_ignored_by_the_server(reel_bin, tmp_path):
    task = tmp_path / "aux"
    simulate(reel_bin, task, "--count", 2, "--seconds", 0.3, "--video-size", "32x24")
    slot_dir = task / "videos/chunk-000/head_left_rgb"
    main = slot_dir / "episode-000.mp4"
    aux = {slot_dir / "episode-000_aux.mp4", slot_dir / "episode-000_aux_heatmap.mp4"}
    for a in aux:
        shutil.copyfile(main, a)
    assert _findings(reel_bin, task, "layout.stray_file") == []
    check_clean(reel_bin, task)
    # an aux stream whose video is not there is a stray, and says why
    orphan = slot_dir / "episode-007_aux.mp4"
    shutil.copyfile(main, orphan)
    strays = _findings(reel_bin, task, "layout.stray_file")
    assert len(strays) == 1 and "_aux" in strays[0]["message"] and strays[0]["path"].endswith("episode-007_aux.mp4")
    orphan.unlink()
    # the import server takes a slice that carries one, and imports the episode without it
    zip_path = build_slice(task, 1, tmp_path / "s1.zip",
                           extra={"videos/chunk-000/head_left_rgb/episode-000_aux.mp4": main.read_bytes()})
    with served(reel_bin, tmp_path) as server:
        r = upload(server.url, zip_path, name="names", episode_index=0)
        assert r.status_code == 201, r.text
        got = server.root / "names/videos/chunk-000/head_left_rgb"
        assert (got / "episode-000.mp4").read_bytes() == main.read_bytes() and not (got / "episode-000_aux.mp4").exists()
    # reel delete takes the aux streams with the episode's files
    reel(reel_bin, "delete", task, 1)
    assert not main.exists() and not any(a.exists() for a in aux)
    check_clean(reel_bin, task)


def own_rate_task(reel_mod, root, rows=9):
    """A 30 fps task: a head camera at the task's rate and a side UVC camera at 15 fps that
    delivers a frame every other tick, as a 15 fps camera does (values 10, 35, 60, ...)."""
    W, H = 32, 24
    w = reel_mod.TaskWriter(
        str(root), fps=30.0, task_name="rates",
        devices=[{"key": "uvc:head", "kind": "uvc", "name": "head", "slots": ["head_rgb"]},
                 {"key": "uvc:side", "kind": "uvc", "name": "side", "slots": ["side_rgb"]}],
        video={"slots": [{"slot": "head_rgb", "width": W, "height": H},
                         {"slot": "side_rgb", "width": W, "height": H, "fps": 15}],
               "preset": "ultrafast"})
    with w.episode() as ep:
        for i in range(rows):
            ep.push_rgb("head_rgb", np.full((H, W, 3), 20 * i, np.uint8))
            if i % 2 == 0:
                ep.push_rgb("side_rgb", np.full((H, W, 3), 10 + 25 * (i // 2), np.uint8))
            ep.append(timestamp=i / 30, wall_time=1.7e9 + i / 30, hardware_ns=10**9 + i * 33_333_333)
    return root


def _pyav_gray(path) -> list[int]:
    import av
    with av.open(str(path)) as c:
        return [int(f.to_ndarray(format="rgb24")[..., 0].mean().round()) for f in c.decode(video=0)]


def test_a_slot_with_its_own_fps_records_checks_reads_and_exports(reel_mod, reel_bin, tmp_path):
    rows = 9
    task = own_rate_task(reel_mod, tmp_path / "data" / "recordings" / "rates", rows)
    info = json.loads((task / "meta/info.json").read_text(encoding="utf-8"))
    assert info["cameras"]["side_rgb"] == {"height": 24, "width": 32, "fps": 15.0}
    assert "fps" not in info["cameras"]["head_rgb"]  # written only where it differs (§6.3)
    # Frames whose nominal time k / 15 lies within the episode's 8 / 30 s: k = 0..4, each the
    # one the camera delivered, none repeated.
    side_frames = len([k for k in range(100) if k / 15 <= (rows - 1) / 30 + 1e-9])
    side = _pyav_gray(task / "videos/chunk-000/side_rgb/episode-000.mp4")
    assert len(side) == side_frames == 5
    assert all(abs(got - (10 + 25 * k)) <= 6 for k, got in enumerate(side)), side
    assert len(_pyav_gray(task / "videos/chunk-000/head_rgb/episode-000.mp4")) == rows
    drops = json.loads(pq.read_table(task / "meta/episodes/chunk-000/episode-000.parquet")
                       .column("drop_stats")[0].as_py())
    assert not [k for k in drops if "side_rgb" in k], drops
    check_clean(reel_bin, task)

    # Row i shows frame round_half_up(i * 15 / 30), clamped to the last (the collector's _seek).
    want = [side[min(int(i * 15 / 30 + 0.5), len(side) - 1)] for i in range(rows)]
    got = reel_mod.open(str(task)).frames(1, "side_rgb", list(range(rows)))[..., 0].mean(axis=(1, 2))
    assert np.abs(got - np.array(want)).max() <= 1, (got, want)
    from reel.torch import FrameDataset
    ds = FrameDataset(str(task), columns=["observation.left_hand_pose"], cameras=["side_rgb"], image_dtype="uint8")
    for i in (0, 1, 3, 8):
        img = ds[i]["observation.images.side_rgb"]
        assert abs(float(img[0].float().mean()) - want[i]) <= 1, (i, want[i])

    # The viewer references, per row, the presentation time of the frame that row shows.
    import av

    from .test_view import Rrd, view
    view(reel_bin, task, "1", "--save", tmp_path / "ep1.rrd")
    refs, _ = Rrd(tmp_path / "ep1.rrd").column("/cameras/side_rgb", "VideoFrameReference:timestamp", "timestamp")
    with av.open(str(task / "videos/chunk-000/side_rgb/episode-000.mp4")) as c:
        s = c.streams.video[0]
        pts_ns = sorted(round(float(p.pts * s.time_base) * 1e9) for p in c.demux(s) if p.pts is not None)
    assert [int(r) for r in refs] == [pts_ns[min(int(i * 15 / 30 + 0.5), len(pts_ns) - 1)] for i in range(rows)]

    # LeRobot addresses frames by the dataset's fps: the export re-times the slot, and the
    # real LeRobotDataset reads one frame per row.
    out_dir = tmp_path / "lerobot"
    reel(reel_bin, "export", "--to", "lerobot-v3", task, out_dir)
    d = dump(out_dir, "v3.0")
    assert d["observation.images.side_rgb"].shape == (rows, 24, 32, 3)
    exported = d["observation.images.side_rgb"][..., 0].mean(axis=(1, 2))
    assert np.abs(exported - np.array(want)).max() <= 6, (exported, want)
    # ... and comes back with one frame per row, no longer declaring a rate of its own.
    back = tmp_path / "back"
    reel(reel_bin, "import", out_dir, back)
    assert "fps" not in json.loads((back / "meta/info.json").read_text())["cameras"]["side_rgb"]
    check_clean(reel_bin, back)


def test_a_declared_rate_the_video_does_not_have_is_a_frame_count_error(reel_mod, reel_bin, tmp_path):
    task = own_rate_task(reel_mod, tmp_path / "rates", 9)
    path = task / "meta/info.json"
    info = json.loads(path.read_text())
    info["cameras"]["head_rgb"]["fps"] = 15  # 9 frames, but 9 rows at 15 fps span 5
    path.write_text(json.dumps(info))
    findings = _findings(reel_bin, task, "video.frame_count")
    assert len(findings) == 1 and findings[0]["severity"] == "error", findings
    assert "15 fps in a 30 fps task" in findings[0]["message"] and "span 5 frames" in findings[0]["message"]


def test_the_writer_refuses_a_slot_faster_than_the_task_and_a_depth_rate_readers_cannot_find(reel_mod, tmp_path):
    slot = {"slot": "side_rgb", "width": 32, "height": 24, "fps": 60}
    with pytest.raises(reel_mod.InvalidError, match="side_rgb.*fps must be 0"):
        reel_mod.TaskWriter(str(tmp_path / "a"), fps=30.0, video={"slots": [slot]})
    # A 15 fps RGB master that is not its device's first camera: readers would time the depth
    # slot by that first camera.
    devices = [{"key": "d435:1", "kind": "d435", "name": "d435", "slots": ["d435_ir", "d435_rgb", "d435_depth"]}]
    slots = [{"slot": "d435_ir", "width": 32, "height": 24},
             {"slot": "d435_rgb", "width": 32, "height": 24, "fps": 15},
             {"slot": "d435_depth", "width": 32, "height": 24, "depth": True, "master_slot": "d435_rgb"}]
    with pytest.raises(reel_mod.InvalidError, match="d435_depth.*first RGB slot"):
        reel_mod.TaskWriter(str(tmp_path / "b"), fps=30.0, devices=devices, video={"slots": slots})


def test_a_scalar_ns_stamp_declares_its_missing_sentinel(reel_mod, reel_bin, tmp_path):
    root = tmp_path / "ns"
    with reel_mod.TaskWriter(str(root), fps=30.0, task_name="ns").episode() as ep:
        for i in range(3):  # the second row has no force sample: its stamp is the sentinel
            fixed = {} if i == 1 else {"observation.gripper_left_force": [1.0, 2.0, 3.0]}
            scalars = {} if i == 1 else {"observation.gripper_left_force_ns": 10**9 + i}
            ep.append(timestamp=i / 30, fixed=fixed, scalars=scalars)
    feature = json.loads((root / "meta/info.json").read_text())["features"]["observation.gripper_left_force_ns"]
    assert feature == {"dtype": "int64", "shape": [1], "encoding": "host_monotonic_ns", "missing_sentinel": 0}
    stamps = pq.read_table(root / data_rel(1)).column("observation.gripper_left_force_ns").to_pylist()
    assert stamps == [10**9, feature["missing_sentinel"], 10**9 + 2]
    check_clean(reel_bin, root)


def test_a_bundle_holds_h264_yuv420p_whatever_the_task_recorded(reel_mod, reel_bin, tmp_path):
    import av
    root = tmp_path / "hevc"
    w = reel_mod.TaskWriter(str(root), fps=30.0, task_name="hevc",
                            devices=[{"key": "uvc:head", "kind": "uvc", "name": "head", "slots": ["head_rgb"]}],
                            video={"slots": [{"slot": "head_rgb", "width": 64, "height": 48}], "codec": "hevc",
                                   "preset": "ultrafast"})
    with w.episode() as ep:
        for i in range(6):
            ep.push_rgb("head_rgb", np.full((48, 64, 3), 30 * i, np.uint8))
            ep.append(timestamp=i / 30)
    with av.open(str(root / "videos/chunk-000/head_rgb/episode-000.mp4")) as c:
        assert c.streams.video[0].codec_context.name == "hevc"
    out = tmp_path / "bundle"
    reel(reel_bin, "export", "--to", "bundle", root, out)
    (video,) = out.glob("episodes/*/observation.images.head_rgb.mp4")
    with av.open(str(video)) as c:
        s = c.streams.video[0]
        assert (s.codec_context.name, s.codec_context.format.name) == ("h264", "yuv420p")
        frames = [int(f.to_ndarray(format="rgb24")[..., 0].mean().round()) for f in c.decode(video=0)]
    assert len(frames) == 6 and all(abs(v - 30 * i) <= 6 for i, v in enumerate(frames)), frames
    # Overlay annotations beside a bundle and the manifest do not disturb reading or checking.
    (video.parent / "progress.overlay.json").write_text(json.dumps({"progress": [0.0, 0.5, 1.0]}))
    (out / "annotations").mkdir()
    (out / "annotations" / "language_spans.jsonl").write_text("{}\n")
    check_clean(reel_bin, out)
    assert len(reel_mod.open(str(out)).episodes()) == 1


def _tree_bytes(root) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def two_episode_bundle(reel_mod, reel_bin, tmp_path, lengths=(6, 4)):
    """A bundle dataset of two episodes (of `lengths` steps) exported from a reel task."""
    root = tmp_path / "task"
    w = reel_mod.TaskWriter(str(root), fps=30.0, task_name="annotated",
                            devices=[{"key": "uvc:head", "kind": "uvc", "name": "head", "slots": ["head_rgb"]}],
                            video={"slots": [{"slot": "head_rgb", "width": 32, "height": 24}], "preset": "ultrafast"})
    for n in lengths:
        with w.episode() as ep:
            for i in range(n):
                ep.push_rgb("head_rgb", np.full((24, 32, 3), 20 * i, np.uint8))
                ep.append(timestamp=i / 30)
    out = tmp_path / "bundle"
    reel(reel_bin, "export", "--to", "bundle", root, out)
    ids = [e["id"] for e in json.loads((out / "manifest.json").read_text())["episodes"]]
    return out, ids


def test_overlays_attach_annotations_beside_a_bundle_and_never_rewrite_it(reel_mod, reel_bin, tmp_path):
    # Seed 004: "Episodes are immutable once committed; later annotations (dense progress
    # labels, language spans) attach as overlay files, never by rewriting a bundle."
    out, ids = two_episode_bundle(reel_mod, reel_bin, tmp_path)
    bundle_before = _tree_bytes(out)
    progress = np.linspace(0, 1, 6, dtype=np.float32)
    r = reel_mod.write_overlay(out, "progress", 0, {"step": np.arange(6, dtype=np.int64), "progress": progress})
    assert (r["kind"], r["rows"], r["columns"], r["bundle_id"], r["replaced"]) == ("dense", 6, ["progress"], ids[0], False)
    assert r["path"] == f"overlays/progress/{ids[0]}.parquet"
    spans = tmp_path / "spans.parquet"
    pq.write_table(pa.table({"start_step": pa.array([0, 2], pa.int64()), "end_step": pa.array([2, 4], pa.int64()),
                             "text": ["reach the cup", "lift it"]}), spans)
    written = json.loads(reel(reel_bin, "overlay", "write", out, "language", ids[1], "--from", spans, "--json").stdout)
    assert (written["kind"], written["episode_index"], written["rows"]) == ("spans", 1, 2)
    # The bundle and the manifest are byte for byte what the export wrote.
    after = _tree_bytes(out)
    assert {k: v for k, v in after.items() if not k.startswith("overlays/")} == bundle_before
    # Read back independently of reel: plain parquet at the documented place.
    dense = pq.read_table(out / "overlays/progress" / f"{ids[0]}.parquet")
    assert dense.column("step").to_pylist() == list(range(6))
    assert np.array_equal(dense.column("progress").to_numpy(), progress)
    ds = reel_mod.open(str(out))
    assert ds.overlays() == [
        {"name": "language", "kind": "spans", "columns": ["text"], "episodes": [ids[1]]},
        {"name": "progress", "kind": "dense", "columns": ["progress"], "episodes": [ids[0]]}]
    assert pa.table(ds.overlay("language", ids[1])).column("text").to_pylist() == ["reach the cup", "lift it"]
    assert pa.table(ds.overlay("progress", 0)).column("progress").to_pylist() == progress.tolist()
    listed = json.loads(reel(reel_bin, "overlay", "ls", out, "--json").stdout)["overlays"]
    assert listed == ds.overlays()
    shown = json.loads(reel(reel_bin, "overlay", "show", out, "language", "1", "--json").stdout)
    assert (shown["bundle_id"], shown["rows"], [c["name"] for c in shown["columns"]]) == (
        ids[1], 2, ["start_step", "end_step", "text"])
    with pytest.raises(reel_mod.NotFoundError, match="has no overlay"):
        pa.table(ds.overlay("progress", 1))
    check_clean(reel_bin, out)
    # Replacing is explicit and atomic; a reader sees the old file or the new one.
    with pytest.raises(reel_mod.AlreadyExistsError, match="already has overlay"):
        reel_mod.write_overlay(out, "progress", ids[0], {"step": np.arange(6), "progress": progress})
    again = reel_mod.write_overlay(out, "progress", ids[0], {"step": np.arange(6), "progress": progress[::-1].copy()},
                                   replace=True)
    assert again["replaced"] and pa.table(reel_mod.open(str(out)).overlay("progress", 0)).column(
        "progress").to_pylist() == progress[::-1].tolist()
    assert not [p for p in (out / "overlays/progress").iterdir() if p.name.startswith(".")]


def test_overlay_rules_refuse_what_does_not_fit_the_episode(reel_mod, reel_bin, tmp_path):
    out, ids = two_episode_bundle(reel_mod, reel_bin, tmp_path)
    step6 = np.arange(6, dtype=np.int64)
    bad = [  # (name, episode, rows, error, message)
        ("progress", 0, {"step": np.arange(5), "p": np.zeros(5)}, reel_mod.InvalidError, "one row per step, 6"),
        ("progress", 0, {"step": step6[::-1].copy(), "p": np.zeros(6)}, reel_mod.InvalidError, "0..5 in order"),
        ("progress", 0, {"step": step6}, reel_mod.InvalidError, "at least one value column"),
        ("progress", 0, {"step": step6.astype(np.int32), "p": np.zeros(6)}, reel_mod.InvalidError, "must be int64"),
        ("lang", 1, {"start_step": [0], "end_step": [5], "text": ["x"]}, reel_mod.InvalidError, "<= 4"),
        ("lang", 1, {"start_step": [2], "end_step": [2], "text": ["x"]}, reel_mod.InvalidError, "start_step < end_step"),
        ("lang", 1, {"step": [0, 1, 2, 3], "start_step": [0] * 4, "end_step": [1] * 4, "t": ["x"] * 4},
         reel_mod.InvalidError, "either"),
        ("../escape", 0, {"step": step6, "p": np.zeros(6)}, reel_mod.InvalidError, "overlay name"),
        ("progress", "ep_nope", {"step": step6, "p": np.zeros(6)}, reel_mod.NotFoundError, "no episode"),
        ("progress", 7, {"step": step6, "p": np.zeros(6)}, reel_mod.NotFoundError, "no episode"),
    ]
    for name, episode, rows, error, message in bad:
        with pytest.raises(error, match=message):
            reel_mod.write_overlay(out, name, episode, rows)
    assert not (out / "overlays").exists() or not list((out / "overlays").rglob("*.parquet"))
    # One overlay, one set of columns.
    reel_mod.write_overlay(out, "progress", 0, {"step": step6, "progress": np.zeros(6, np.float32)})
    with pytest.raises(reel_mod.InvalidError, match="hold the same columns"):
        reel_mod.write_overlay(out, "progress", 1, {"step": np.arange(4), "progress": np.zeros(4, np.float64)})
    reel(reel_bin, "overlay", "write", out, "progress", "1", "--from", out / "manifest.json", ok=2)
    # A pooled task has no overlays.
    with pytest.raises(reel_mod.NotSupportedError):
        reel_mod.write_overlay(tmp_path / "task", "progress", 0, {"step": step6, "p": np.zeros(6)})


def test_check_and_readers_judge_overlay_files_from_elsewhere(reel_mod, reel_bin, tmp_path):
    out, ids = two_episode_bundle(reel_mod, reel_bin, tmp_path)
    reel_mod.write_overlay(out, "progress", 0, {"step": np.arange(6), "progress": np.zeros(6, np.float32)})
    check_clean(reel_bin, out)
    d = out / "overlays/progress"
    # A file for no episode, a tampered file, a file of other columns, a link out of the dataset.
    pq.write_table(pa.table({"step": pa.array(range(6), pa.int64()), "progress": np.zeros(6, np.float32)}),
                   d / "ep_unknown.parquet")
    pq.write_table(pa.table({"step": pa.array([0, 1, 2, 9], pa.int64()), "progress": np.zeros(4, np.float32)}),
                   d / f"{ids[1]}.parquet")
    outside = tmp_path / "outside"
    outside.mkdir()
    pq.write_table(pa.table({"step": pa.array(range(6), pa.int64()), "x": np.zeros(6)}), outside / f"{ids[0]}.parquet")
    (out / "overlays/linked").symlink_to(outside, target_is_directory=True)
    found = {(f["path"], f["severity"]) for f in _findings(reel_bin, out, "foreign.overlay")}
    assert found == {("overlays/progress/ep_unknown.parquet", "error"), (f"overlays/progress/{ids[1]}.parquet", "error"),
                     ("overlays/linked", "error")}, found
    with pytest.raises(reel_mod.InvalidError, match="0..3 in order"):
        pa.table(reel_mod.open(str(out)).overlay("progress", 1))
    with pytest.raises(reel_mod.InvalidError, match="link"):
        pa.table(reel_mod.open(str(out)).overlay("linked", 0))
    assert [o["name"] for o in reel_mod.open(str(out)).overlays()] == ["progress"]
