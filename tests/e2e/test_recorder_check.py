"""What simulate writes passes `reel check` (second opinion) and the task-level basics:
tasks.jsonl (§5), no leftover temp files (contract-decisions "durability"), --fps, Chinese task names."""

from __future__ import annotations

import json

import pytest

from .recorder_common import (
    check_clean,
    data_table,
    info,
    leftover_dotfiles,
    listing,
    main_task,
    reel_exec,
    row_dict,
    simulate,
    visible,
)


@pytest.fixture
def sim(reel_bin, tmp_path_factory):
    return main_task(reel_bin, tmp_path_factory)


def test_check_clean_on_simulated_task(reel_bin, sim):
    report = check_clean(reel_bin, sim.path)
    (t,) = report["tasks"]
    assert t["episodes"] == 3, t


def test_tasks_jsonl_is_one_line(sim):
    raw = (sim.path / "meta/tasks.jsonl").read_bytes()
    text = raw.decode("utf-8")
    lines = text.splitlines()
    assert len(lines) == 1, f"tasks.jsonl must be exactly one line (§5), got {len(lines)}: {text!r}"
    assert json.loads(lines[0]) == {"task_index": 0, "task": "pick_cube"}, lines[0]


def test_no_temp_files_left(sim):
    left = leftover_dotfiles(sim.path)
    assert not left, f"dotfiles (temp files / commit journals) left after simulate exited 0: {left}"
    assert (sim.path / "meta/episodes/.lock").is_file(), "meta/episodes/.lock anchor missing (§7.4, contract-decisions: the recorder locks it)"
    assert (sim.path / "meta/episodes/.lock").stat().st_size == 0, "meta/episodes/.lock must be empty"


def test_fps_option(reel_bin, tmp_path):
    task = tmp_path / "fps20"
    eps = simulate(reel_bin, task, "--count", 1, "--seconds", 1, "--fps", 20)
    t = data_table(task, 1)
    assert abs(t.num_rows - 20) <= 1, f"--fps 20 --seconds 1: {t.num_rows} rows"
    assert eps[0]["length"] == t.num_rows
    assert info(task)["fps"] == 20.0
    row = row_dict(task, 1)
    assert row["duration_sec"] == pytest.approx(t.num_rows / 20.0, rel=1e-9), row["duration_sec"]
    check_clean(reel_bin, task)


def test_chinese_task_name(reel_bin, tmp_path):
    name = "夹爪_抓取任务"
    task = tmp_path / name
    simulate(reel_bin, task, "--count", 1, "--seconds", 0.5)
    assert info(task)["task_name"] == name
    lines = (task / "meta/tasks.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and json.loads(lines[0]) == {"task_index": 0, "task": name}, lines
    assert "\\u" not in (task / "meta/info.json").read_text(encoding="utf-8"), "info.json must be UTF-8 without \\u escapes"
    check_clean(reel_bin, task)


def test_refuses_unknown_format(reel_bin, tmp_path):
    """contract-decisions: unknown `format` -> refuse with an error naming the file and value."""
    task = tmp_path / "future"
    (task / "meta").mkdir(parents=True)
    (task / "meta/info.json").write_text(json.dumps({"format": "pooled_episodes_v9", "chunks_size": 1000}), encoding="utf-8")
    rc, out, err = reel_exec(reel_bin, "simulate", task, "--count", 1, "--seconds", 0.5)
    assert rc != 0, f"simulate wrote into a task of format pooled_episodes_v9\nstdout:\n{out}"
    assert "info.json" in err and "pooled_episodes_v9" in err, f"the error must name the file and the value:\n{err}"
    written = visible(listing(task, "data")) + visible(listing(task, "meta/episodes"))
    assert not written, f"simulate created files in a task it refused: {written}"
