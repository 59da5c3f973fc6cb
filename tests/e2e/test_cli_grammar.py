"""One grammar for every command (issue 14 item 4): usage errors exit 2 with `reel: ` and a
"did you mean", --json and --version everywhere, -o/--output, --episodes/--at lists `1,3,5-9`,
simulate --count, shell completion generated from the command model."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from .cli_run import reel
from .fixtures import EpisodeSpec, write_task

COMMANDS = ["info", "ls", "show", "stats", "check", "simulate", "delete", "frames", "pack", "serve",
            "upload", "export", "import", "completion", "view", "report"]


def run(reel_bin, *args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([reel_bin, *map(str, args)], capture_output=True, text=True, timeout=120, **kw)


@pytest.mark.parametrize("argv", [
    ["infoo", "x"],
    [],
    ["info"],
    ["check", "x", "--jsn"],
    ["pack", "t", "1", "--crf", "99"],
    ["frames", "t", "1", "--slot", "s"],
], ids=["unknown-command", "no-command", "missing-argument", "unknown-option", "out-of-range", "missing-option"])
def test_usage_errors_exit_2_with_the_reel_prefix(reel_bin, argv):
    p = run(reel_bin, *argv)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.startswith("reel: "), p.stderr
    assert "--help" in p.stderr, p.stderr


def test_a_mistyped_command_gets_a_suggestion(reel_bin):
    p = run(reel_bin, "infoo", "x")
    assert 'unknown command "infoo"; did you mean "info"?' in p.stderr, p.stderr
    assert "A subcommand is required" not in p.stderr


def test_a_mistyped_option_gets_a_suggestion(reel_bin):
    p = run(reel_bin, "check", "x", "--jsn")
    assert p.returncode == 2 and "did you mean --json?" in p.stderr, p.stderr
    p = run(reel_bin, "export", "t", "--outptu", "x")
    assert p.returncode == 2 and "did you mean --output?" in p.stderr, p.stderr


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_command_takes_json_and_version(reel_bin, cmd):
    p = run(reel_bin, cmd, "--help")
    assert p.returncode == 0, p.stderr
    assert "--json" in p.stdout and "--version" in p.stdout, p.stdout
    p = run(reel_bin, cmd, "--version")
    assert p.returncode == 0 and p.stdout.startswith("reel "), (p.stdout, p.stderr)


def test_serve_and_delete_answer_json(reel_bin, tmp_path):
    p = run(reel_bin, "serve", "--hash-token", "abc", "--json")
    assert p.returncode == 0, p.stderr
    assert len(json.loads(p.stdout)["token_sha256"]) == 64
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2)])
    p = run(reel_bin, "delete", task.path, "2", "--json")
    assert p.returncode == 0, p.stderr
    assert [e["episode_index"] for e in json.loads(p.stdout)["episodes"]] == [2]


def test_episode_lists_take_ranges(reel_bin, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(n) for n in (1, 2, 3, 4, 5)])
    p = run(reel_bin, "delete", task.path, "1,3-5", "--dry-run", "--json")
    assert p.returncode == 0, p.stderr
    assert [e["episode_index"] for e in json.loads(p.stdout)["episodes"]] == [1, 3, 4, 5]


@pytest.mark.parametrize("at, hint", [("0:10", "0-10"), ("5-2", "write 2-5"), ("0-99999999999", "more than"),
                                      ("1,,2", "empty item")])
def test_bad_lists_are_usage_errors_with_the_right_spelling(reel_bin, tmp_path, at, hint):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, length=10, videos={"d435_rgb": "mp4"})])
    p = run(reel_bin, "frames", task.path, 1, "--slot", "d435_rgb", "--at", at, "-o", tmp_path / "png")
    assert p.returncode == 2 and p.stderr.startswith("reel: --at ") and hint in p.stderr, p.stderr
    assert not (tmp_path / "png").exists()


def test_frames_at_a_range_and_output_spelled_like_everywhere(reel_bin, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1, length=10, videos={"d435_rgb": "mp4"})])
    out = tmp_path / "png"
    p = run(reel_bin, "frames", task.path, 1, "--slot", "d435_rgb", "--at", "0,4-6", "--output", out, "--json")
    assert p.returncode == 0, p.stderr
    assert [w["index"] for w in json.loads(p.stdout)["written"]] == [0, 4, 5, 6]
    assert len(list(out.glob("*.png"))) == 4


def test_simulate_counts_with_count_and_export_writes_to_output(reel_bin, tmp_path):
    task = tmp_path / "sim"
    p = reel(reel_bin, "simulate", task, "--count", 3, "--seconds", 0.3, "--no-video", "--json")
    assert len(json.loads(p.stdout)["episodes"]) == 3
    p = reel(reel_bin, "simulate", task, "--episodes", 1, "--seconds", 0.3, "--no-video", "--json")
    assert len(json.loads(p.stdout)["episodes"]) == 1 and "--count" in p.stderr  # the old spelling, warned
    out = tmp_path / "v3"
    p = reel(reel_bin, "export", task, "-o", out, "--episodes", "2-3", "--json")
    assert json.loads(p.stdout)["episodes"] == 2
    p = reel(reel_bin, "export", task, tmp_path / "a", "-o", tmp_path / "b", ok=2)
    assert "two outputs" in p.stderr


def test_bash_completion_is_generated_from_the_commands(reel_bin):
    script = reel(reel_bin, "completion", "bash").stdout
    probe = script + (
        '\nCOMP_WORDS=(reel che); COMP_CWORD=1; _reel; echo "1:${COMPREPLY[*]}"'
        '\nCOMP_WORDS=(reel check --rec); COMP_CWORD=2; _reel; echo "2:${COMPREPLY[*]}"'
        '\nCOMP_WORDS=(reel export --episo); COMP_CWORD=2; _reel; echo "3:${COMPREPLY[*]}"\n')
    p = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert "1:check" in p.stdout and "2:--recursive" in p.stdout and "3:--episodes" in p.stdout, p.stdout


def test_zsh_completion_names_every_command(reel_bin):
    script = reel(reel_bin, "completion", "zsh").stdout
    assert script.startswith("#compdef reel")
    for cmd in COMMANDS:
        assert f"'{cmd}:" in script
    assert "'--recursive[" in script
    if shutil.which("zsh"):
        p = subprocess.run(["zsh", "-n"], input=script, capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
