"""`reel report TASK -o report.html` (docs/view.md), opened in headless Chromium (Debian's
`chromium`, installed by `make`): the page renders offline, shows the episodes table, one
plot per episode and colour-mapped depth thumbnails, and the browser console has no error.
The console check is shown to fail on a page with an error first, so it cannot pass vacuously.
"""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from .recorder_common import reel_exec, simulate

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def task(tmp_path_factory, reel_bin) -> Path:
    root = tmp_path_factory.mktemp("report") / "pick"
    simulate(reel_bin, root, "--seconds", 1.0, "--fps", 30, "--video-size", "64x48", "--count", 2)
    return root


def chromium(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    assert CHROMIUM, "chromium is not installed: `make deps` installs Debian's chromium"
    argv = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", *args]
    return subprocess.run(argv, capture_output=True, timeout=timeout, text=True)


def console_errors(stderr: str) -> list[str]:
    """The page's console errors and uncaught exceptions, as Chromium logs them on stderr."""
    return [line for line in stderr.splitlines() if "CONSOLE" in line and
            ("error" in line.lower() or "uncaught" in line.lower())]


def rendered_dom(page: Path) -> tuple[str, list[str]]:
    proc = chromium("--dump-dom", page.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, console_errors(proc.stderr)


def test_the_console_check_sees_an_error(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>console.error('boom'); undefinedFunction();</script></body></html>")
    _, errors = rendered_dom(bad)
    assert errors, "a page with console.error and an uncaught exception must be caught"


def test_report_opens_in_chromium_with_table_plots_and_no_console_error(task, reel_bin, tmp_path):
    out = tmp_path / "report.html"
    rc, stdout, err = reel_exec(reel_bin, "report", task, "-o", out, "--json", "--progress", "none")
    assert rc == 0, err
    summary = json.loads(stdout)
    assert summary["episodes"] == 2 and summary["output"] == str(out)
    page = out.read_text()
    assert "src=\"http" not in page and "src='http" not in page, "the page must not fetch anything"
    dom, errors = rendered_dom(out)
    assert errors == [], errors
    assert "id=\"episodes\"" in dom
    assert len(re.findall(r"<tr>", dom.split("id=\"episodes\"")[1].split("</table>")[0])) == 3  # header + 2
    for n in (1, 2):
        plot = dom.split(f"id=\"plot-episode-{n}\"")[1][:200000]
        assert "main-svg" in plot, f"episode {n}: plotly drew no figure"
    shot = tmp_path / "report.png"
    proc = chromium(f"--screenshot={shot}", "--window-size=1280,2000", "--hide-scrollbars", out.as_uri())
    assert proc.returncode == 0 and shot.stat().st_size > 10000
    pixels = np.asarray(Image.open(shot).convert("RGB"))
    assert pixels.std() > 10, "the screenshot is blank"


def test_depth_thumbnails_are_colour_mapped(task, reel_bin, tmp_path):
    out = tmp_path / "r.html"
    rc, _, err = reel_exec(reel_bin, "report", task, "-o", out, "1", "--max-frames", 3)
    assert rc == 0, err
    page = out.read_text()
    info = json.loads((task / "meta/info.json").read_text())
    depth = [s for s in info["video_extensions"] if s not in info["cameras"]][0]
    thumbs = re.findall(rf"src='data:image/png;base64,([^']+)' alt='{depth} row (\d+)'", page)
    assert [int(r) for _, r in thumbs] == [0, 14, 29]
    rgb = np.asarray(Image.open(io.BytesIO(base64.b64decode(thumbs[0][0]))).convert("RGB")).astype(int)
    assert (np.abs(rgb[..., 0] - rgb[..., 1]) > 30).mean() > 0.2, "depth must be colour-mapped, not grey"


def test_the_report_follows_no_link_beside_its_output(task, reel_bin, tmp_path):
    # Issue 27 (low): the report was written to a predictable ".<name>.tmp" beside its output,
    # following a symbolic link placed there. A fresh temp (mkstemp) is used now.
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's", encoding="utf-8")
    out = tmp_path / "r.html"
    (tmp_path / ".r.html.tmp").symlink_to(outside)
    rc, _, err = reel_exec(reel_bin, "report", task, "-o", out, "1", "--max-frames", 1)
    assert rc == 0, err
    assert outside.read_text(encoding="utf-8") == "the user's"
    assert out.read_text().startswith("<!DOCTYPE html>") and not out.is_symlink()
    assert (out.stat().st_mode & 0o777) == 0o644
    assert not [p for p in tmp_path.glob(".r.html.*.tmp")], "no temp is left"
