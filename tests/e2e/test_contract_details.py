"""Contract details found by cross-checking reel's output against the reference collector
(issue 14): how `scale` is typed, an unknown `codebase_version`, and a depth slot whose
codec family changed between episodes. Expected values come from the contract and
contract-decisions.md, read back with json/pyarrow, not through reel."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from .fixtures import row_rel
from .recorder_common import check_clean, reel_exec, simulate

SECONDS = "0.4"  # each simulate records its default two episodes
DEPTH_SLOTS = ("stereo_depth", "d435_depth")


def depth_files(task: Path, slot: str) -> dict[int, str]:
    """episode N -> extension of the slot's file, from the file names on disk (chunk 0:
    episode-FFF holds N = FFF + 1)."""
    out = {}
    for f in (task / "videos").rglob(f"{slot}/episode-*"):
        out[int(f.stem.split("-")[1]) + 1] = f.suffix[1:]
    return out


def check_report(reel_bin: str, task: Path) -> tuple[int, list[dict]]:
    rc, out, err = reel_exec(reel_bin, "check", task, "--json", timeout=300)
    assert rc in (0, 1), err
    report = json.loads(out)
    findings = report.get("findings") or [f for t in report.get("tasks", []) for f in t.get("findings", [])]
    return rc, findings


# ---- scale: the collector writes int(scale); a strictly typed reader rejects 100.0 ----------------


def test_force_matrix_scale_is_written_as_an_integer(reel_bin, tmp_path):
    for tier, want in (("int16x100", 100), ("float32", 1)):
        task = tmp_path / tier
        simulate(reel_bin, task, "--seconds", SECONDS, "--no-video", "--tier", tier)
        info = json.loads((task / "meta/info.json").read_text(encoding="utf-8"))
        fm = {k: v for k, v in info["features"].items() if k.endswith("_force_matrix")}
        assert fm, "the simulated rig records force matrices"
        for name, spec in fm.items():
            assert type(spec["scale"]) is int and spec["scale"] == want, (tier, name, spec)
        specs = json.loads(pq.read_table(task / row_rel(1)).column("force_matrix_specs")[0].as_py())
        for name, spec in specs.items():
            assert type(spec["scale"]) is int and spec["scale"] == want, (tier, name, spec)
        check_clean(reel_bin, task)


# ---- codebase_version: informational for a pooled task (issue 27 compatibility) ----------------


@pytest.mark.parametrize("version", ["1.0.14", "v9.9"])
def test_a_pooled_task_with_another_codebase_version_is_read_and_warned(reel_bin, tmp_path, version):
    # The collector's v1.0 migration writes its app version ("1.0.14") into codebase_version
    # (contract-decisions.md); the contract identifies the layout by `format` (§8.2.1). Every
    # reading command reads such a task; check warns with its rule id, naming the value.
    task = tmp_path / "t"
    simulate(reel_bin, task, "--seconds", SECONDS, "--no-video")
    info_path = task / "meta/info.json"
    info = json.loads(info_path.read_text(encoding="utf-8"))
    assert info["codebase_version"] == "v3.0"
    info["codebase_version"] = version
    info_path.write_text(json.dumps(info), encoding="utf-8")
    for command in ("info", "ls"):
        rc, out, err = reel_exec(reel_bin, command, task)
        assert rc == 0, (command, out, err)
    rc, findings = check_report(reel_bin, task)
    assert rc == 0, findings
    warned = [f for f in findings if f["rule"] == "info.codebase_version"]
    assert len(warned) == 1 and version in warned[0]["message"] and warned[0]["severity"] == "warning", findings


# ---- one depth slot, mp4 in some episodes and mkv in others ---------------------------------------


def test_recorder_keeps_a_depth_slots_codec_family(reel_bin, tmp_path):
    task = tmp_path / "ffv1_task"
    simulate(reel_bin, task, "--seconds", SECONDS, "--depth-ffv1")
    simulate(reel_bin, task, "--seconds", SECONDS)  # not told otherwise: stays FFV1
    for slot in DEPTH_SLOTS:
        assert depth_files(task, slot) == {1: "mkv", 2: "mkv", 3: "mkv", 4: "mkv"}, slot
    codec = json.loads(pq.read_table(task / row_rel(4)).column("video_codec")[0].as_py())
    assert "task" in codec["depth"]["stereo_depth"]["selected_by"], codec
    check_clean(reel_bin, task)
    # Told otherwise: 12-bit HEVC again, and the slot now mixes (a warning, not an error).
    simulate(reel_bin, task, "--seconds", SECONDS, "--depth-hevc")
    for slot in DEPTH_SLOTS:
        assert depth_files(task, slot) == {1: "mkv", 2: "mkv", 3: "mkv", 4: "mkv", 5: "mp4", 6: "mp4"}, slot
    rc, findings = check_report(reel_bin, task)
    assert rc == 0 and {f["rule"] for f in findings if f["severity"] != "info"} == {"video.extension_mix"}, findings
    rc, out, err = reel_exec(reel_bin, "simulate", task, "--depth-hevc", "--depth-ffv1")
    assert rc == 2 and "excludes" in err, err


def test_a_mixed_depth_slot_is_read_and_only_warned_about(reel_bin, tmp_path):
    task = tmp_path / "mixed"
    simulate(reel_bin, task, "--seconds", SECONDS)  # 12-bit HEVC .mp4
    simulate(reel_bin, task, "--seconds", SECONDS, "--depth-ffv1")  # told otherwise: .mkv
    info = json.loads((task / "meta/info.json").read_text(encoding="utf-8"))
    for slot in DEPTH_SLOTS:
        assert depth_files(task, slot) == {1: "mp4", 2: "mp4", 3: "mkv", 4: "mkv"}, slot
        assert info["video_extensions"][slot] == "mkv"  # one entry per slot, latest wins
    rc, findings = check_report(reel_bin, task)
    assert rc == 0, findings
    assert not [f for f in findings if f["severity"] == "error"], findings
    mix = [f for f in findings if f["rule"] == "video.extension_mix"]
    assert {Path(f["path"]).name for f in mix} == {"episode-000.mp4", "episode-001.mp4"}, mix
    assert all(f["severity"] == "warning" for f in mix)
    # Both kinds of file decode through reel: the .mp4 the info no longer declares too.
    for n in (1, 3):
        out = tmp_path / f"frames{n}"
        rc, stdout, err = reel_exec(reel_bin, "frames", task, n, "--slot", "stereo_depth", "--at", "0,5",
                                    "-o", out, "--json")
        assert rc == 0, err
        assert len(list(out.glob("*.png"))) == 2, stdout
