"""`pip install .` is the whole product (issue 14 item 2): a wheel built from this checkout,
installed into a fresh venv (no access to the build tree or the dev venv), gives the `reel`
command and Python's reel.simulate / check / pack / export / import_dataset / upload, bound to
the CLI's own options structs. The README tour runs through both, and their results agree.

The wheel is built by the dev venv's pip with --no-build-isolation, reusing the build tree of
`make python`: $REEL_WHEEL_CONFIG holds the Makefile's scikit-build settings (the shared tree
build/cmake), and without it pyproject's own tree (build/py-<tag>) is used; the fresh venv takes pyarrow and
numpy from the local pip configuration (find-links, warm cache)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow
import pytest

from .serve_common import TOKEN_ALL, ReelServer, write_config

ROOT = Path(__file__).resolve().parents[2]


def run(*argv, ok=0, **kw):
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=900, **kw)
    assert proc.returncode == ok, f"{' '.join(map(str, argv))}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("install")
    env = dict(os.environ)
    if shutil.which("ccache"):
        env.setdefault("CMAKE_CXX_COMPILER_LAUNCHER", "ccache")
    shared_tree = os.environ.get("REEL_WHEEL_CONFIG", "").split()
    # The shared tree holds the CLI the other tests run: `make e2e` brings it up to date first,
    # so building the wheel must not relink it.
    cli = ROOT / next((a.split("=", 1)[1] for a in shared_tree if a.startswith("-Cbuild-dir=")), "build/cmake") / "tools/reel"
    before = cli.stat().st_mtime_ns if shared_tree and cli.exists() else None
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", *shared_tree, ROOT,
        "-w", base / "wheel", cwd=ROOT, env=env)
    if before is not None and cli.stat().st_mtime_ns != before:
        pytest.fail(f"building the wheel relinked {cli}, which the other tests run: the tree was older than "
                    "the sources (run `make python` before the tests)", pytrace=False)
    wheels = list((base / "wheel").glob("reel-*.whl"))
    assert len(wheels) == 1, wheels
    venv = base / "venv"
    run(sys.executable, "-m", "venv", venv)
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    run(venv / "bin/python", "-m", "pip", "install", "-q", wheels[0], env=clean)
    return venv


def test_wheel_metadata_pins_the_arrow_abi_not_one_version(venv):
    """Runtime pyarrow: the build pin's major.minor (Arrow's SO version, major*100 + minor, is
    the ABI), not one exact release."""
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    build_pin = [r for r in meta["build-system"]["requires"] if r.startswith("pyarrow==")][0]
    major, minor = (int(x) for x in build_pin.split("==")[1].split(".")[:2])
    assert f"pyarrow>={major}.{minor},<{major}.{minor + 1}" in meta["project"]["dependencies"]
    sonames = list((Path(pyarrow.__file__).parent).glob("libarrow.so.*"))
    assert [p.name for p in sonames] == [f"libarrow.so.{major * 100 + minor}"], sonames
    assert {"torch", "daft"} <= set(meta["project"]["optional-dependencies"])
    assert meta["project"]["scripts"]["reel"] == "reel._cli:main"


def test_one_version_source(venv):
    """CMakeLists.txt's project() is the version: the wheel's metadata, `reel --version` and
    reel.__version__ all read it."""
    import re

    want = re.search(r"project\(reel VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
    meta = run(venv / "bin/python", "-c", "import importlib.metadata as m; print(m.version('reel'))").stdout.strip()
    module = run(venv / "bin/python", "-c", "import reel; print(reel.__version__)").stdout.strip()
    cli = run(venv / "bin/reel", "--version").stdout.strip()
    assert (meta, module, cli) == (want, want, f"reel {want}"), (meta, module, cli)


def test_cli_and_extension_find_arrow_in_site_packages(venv):
    """RPATH: the installed pyarrow, relative to the file; no path of the build machine."""
    site = Path(run(venv / "bin/python", "-c", "import reel, os; print(os.path.dirname(reel.__file__))").stdout.strip())
    cli = site / "bin/reel"
    ext = next(site.glob("_core.*.so"))
    for path, want in ((cli, "$ORIGIN/../../pyarrow"), (ext, "$ORIGIN/../pyarrow")):
        dyn = run("readelf", "-d", path).stdout
        rpath = [line for line in dyn.splitlines() if "RUNPATH" in line or "RPATH" in line]
        assert rpath and want in rpath[0] and str(ROOT) not in dyn, (path, rpath)
    ldd = run("ldd", cli).stdout
    arrow = [line for line in ldd.splitlines() if "libarrow.so" in line][0].split("=>")[1].split("(")[0].strip()
    assert os.path.realpath(arrow).startswith(os.path.realpath(site.parent / "pyarrow")) and "not found" not in ldd, ldd


def test_readme_tour_through_the_installed_cli_and_python(venv, tmp_path):
    reel = venv / "bin/reel"
    task = tmp_path / "cli" / "桌面抓取_demo"
    run(reel, "--help")
    sim = json.loads(run(reel, "simulate", task, "--episodes", 2, "--seconds", 1, "--video-size", "32x24",
                         "--preset", "ultrafast", "--depth-preset", "ultrafast", "--json").stdout)
    assert [e["episode_index"] for e in sim["episodes"]] == [1, 2]
    run(reel, "info", task)
    run(reel, "ls", task)
    run(reel, "show", task, 2)
    run(reel, "frames", task, 2, "--slot", "stereo_left", "--at", "0,5", "-o", tmp_path / "frames")
    assert len(list((tmp_path / "frames").glob("*.png"))) == 2
    run(reel, "stats", task)
    assert json.loads(run(reel, "check", tmp_path / "cli", "--json").stdout)["errors"] == 0
    cli_pack = json.loads(run(reel, "pack", task, 2, "-o", tmp_path / "cli_ep2.zip", "--json").stdout)
    cli_export = json.loads(run(reel, "export", task, tmp_path / "cli_lerobot", "--json").stdout)
    run(reel, "info", tmp_path / "cli_lerobot")
    run(reel, "import", tmp_path / "cli_lerobot", tmp_path / "cli_back" / task.name)
    run(reel, "delete", task, 1)

    # The same tour in Python, in the fresh venv; the reports must match the CLI's.
    cfg = write_config(str(reel), tmp_path / "serve.json")
    server = ReelServer(str(reel), tmp_path / "server", cfg, tmp_path / "serve.log").start()
    try:
        script = textwrap.dedent(f"""
            import json, sys
            import pyarrow as pa
            import reel
            out = {{}}
            t = {str(tmp_path / "py" / task.name)!r}
            out["simulate"] = reel.simulate(t, count=2, seconds=1.0, video_width=32, video_height=24)
            out["findings"] = [f for f in reel.findings(reel.check({str(tmp_path / "py")!r}, io_threads=1))
                               if f["severity"] == "error"]
            task = reel.open(t)
            out["repr"] = repr(task)
            out["timestamps"] = pa.table(task.data(1, "timestamp")).column("timestamp").to_pylist()
            out["pack"] = reel.pack(t, 2, {str(tmp_path / "py_ep2.zip")!r})
            out["export"] = reel.export(t, {str(tmp_path / "py_lerobot")!r}, format="lerobot-v3")
            out["import"] = reel.import_dataset({str(tmp_path / "py_lerobot")!r}, {str(tmp_path / "py_back" / task.name)!r})
            out["upload"] = reel.upload(t, [1], server={server.url!r}, token={TOKEN_ALL!r})
            try:
                reel.export(t, "x", formatt="bundle")
            except TypeError as e:
                out["typo"] = str(e)
            out["options"] = repr(reel.PackOptions())
            print(json.dumps(out))
        """)
        clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        got = json.loads(run(venv / "bin/python", "-c", script, cwd=tmp_path, env=clean).stdout.strip().splitlines()[-1])
    finally:
        server.stop()
    assert got["simulate"]["episodes"] == [{"episode_index": n, "length": 30, "committed": True} for n in (1, 2)]
    assert got["findings"] == []
    assert got["repr"].startswith("reel.Task(") and len(got["timestamps"]) == 30
    assert [e["arcname"] for e in got["pack"]["entries"]] == [e["arcname"] for e in cli_pack["entries"]]
    assert got["pack"]["upload_episode_index"] == cli_pack["upload_episode_index"] == 1
    assert {k: got["export"][k] for k in ("format", "episodes", "frames", "features")} == {
        k: cli_export[k] for k in ("format", "episodes", "frames", "features")}
    assert got["import"]["episodes"] == 2 and got["import"]["round_trip"]
    assert got["upload"]["all_landed"] and got["upload"]["episodes"][0]["episode_index"] == 1, got["upload"]
    assert "formatt" in got["typo"] and "format" in got["typo"]
    assert got["options"].startswith("reel.PackOptions(") and "precompress_crf=30" in got["options"]
