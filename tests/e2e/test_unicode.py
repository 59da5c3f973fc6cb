"""A Chinese task name (contract §1: <task> may contain Chinese; task_name = directory name)."""

from __future__ import annotations

import os

import pytest

from .checks import check_report, error_rules, norm_path
from .fixtures import EpisodeSpec, write_task

NAME = "D435-裸手_3D手部关键点识别"
SLOT = "头部相机_rgb"


@pytest.fixture
def cn_task(tmp_path):
    eps = [EpisodeSpec(1, videos={SLOT: "mp4", "d435_depth": "mkv"}), EpisodeSpec(2, videos={SLOT: "mp4"})]
    return write_task(tmp_path / "recordings", NAME, eps, task_text=NAME + "_AI标注")


def test_info_round_trips_the_name(reel_json, cn_task):
    got = reel_json("info", cn_task.path)
    assert got["task_name"] == NAME
    assert os.path.basename(norm_path(got["path"])) == NAME
    assert got["video_slots"] == sorted([SLOT, "d435_depth"])
    assert [d["name"] for d in got["devices"]] == [d["name"] for d in cn_task.info["devices"]]
    assert "USB 手套_left" in [d["name"] for d in got["devices"]]


def test_ls_paths_keep_the_slot_name(reel_json, cn_task):
    eps = reel_json("ls", cn_task.path)["episodes"]
    assert [e["episode_index"] for e in eps] == [1, 2]
    assert norm_path(eps[1]["videos"][SLOT]) == f"videos/chunk-000/{SLOT}/episode-001.mp4"


def test_check_task_and_parent_folder(run_reel, cn_task):
    rc, report = check_report(run_reel, cn_task.path)
    assert rc == 0, error_rules(report)
    assert os.path.basename(norm_path(report["tasks"][0]["path"])) == NAME

    write_task(cn_task.path.parent, "second_task", [EpisodeSpec(1)])
    rc, report = check_report(run_reel, cn_task.path.parent)
    assert rc == 0, error_rules(report)
    names = sorted(os.path.basename(norm_path(t["path"])) for t in report["tasks"])
    assert names == sorted([NAME, "second_task"])


def test_error_message_names_the_chinese_path(run_reel, cn_task):
    (cn_task.path / "meta/info.json").write_text("{broken", encoding="utf-8")
    rc, out, err = run_reel("info", cn_task.path, "--json")
    assert rc != 0
    assert NAME in err, err
