"""Shared fixtures for the reel end-to-end tests.

- `reel_bin`: path of the reel CLI from $REEL_BIN (the suite fails, never skips, without it).
- `run_reel(*args)` -> (returncode, stdout, stderr); every call asserts that reel did not
  crash (no signal, no exit code >= 128, no Python traceback) and that it changed nothing
  under the test's tmp_path (paths, sizes and mtimes before == after): reading never writes.
- `reel_json(*args, ok=(0,))`: runs with `--json`, checks the exit code and parses stdout.
- `unchanged`: context manager with the same read-never-writes check for Python API calls.
- `reel_mod`: the imported `reel` Python package (fails with a clear message when missing).
- `sim`, `tables`: the recorder tests' simulated task (built once per session) and its data tables.
- `server`: a started `reel serve` with the two-project token config (tests/e2e/serve_common.py).
- `tasks`: two small simulated tasks for the PyTorch loader tests.

Helpers live in modules without tests (checks, cli_run, fixtures, kill_campaign,
recorder_common, serve_common, s3_server, torch_common); a test file imports from those, never from another
test file, and fixtures shared by several files are defined here.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess

import pytest

from .checks import assert_no_crash, assert_unchanged, snapshot
from .fixtures import EpisodeSpec, write_task
from .recorder_common import data_table, main_task, memo_task, simulate
from .serve_common import ReelServer, write_config

TIMEOUT_S = 120

# `make e2e` runs the files on every core (pytest-xdist, --dist loadfile: one file stays on one
# worker, so module fixtures are built once). The longest files go first, so the workers
# finish together instead of one running a kill campaign alone at the end.
LONGEST_FIRST = ("test_import_s3.py", "test_object_store.py", "test_interop_peers.py", "test_export_aligned.py",
                 "test_lerobot_peers.py", "test_push_s3.py", "test_import.py", "test_object_store_write.py",
                 "test_export.py", "test_recorder_crash.py", "test_python_install.py", "test_upload_outbox.py",
                 "test_daft.py", "test_serve_hardening.py", "test_upload_campaign.py")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def reel_bin() -> str:
    path = os.environ.get("REEL_BIN")
    if not path:
        pytest.fail(
            "REEL_BIN is not set: export REEL_BIN=/abs/path/to/reel (the built CLI, e.g. "
            "build/cmake/tools/reel; `make e2e` sets it) before running tests/e2e",
            pytrace=False,
        )
    path = os.path.abspath(path)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"REEL_BIN={path} is not an executable file", pytrace=False)
    return path


@pytest.fixture
def run_reel(reel_bin, tmp_path):
    """run_reel(*args, cwd=None) -> (rc, stdout, stderr). Arguments are str()-ed."""

    def run(*args, cwd=None):
        argv = [reel_bin, *[str(a) for a in args]]
        what = "reel " + " ".join(str(a) for a in args)
        before = snapshot(tmp_path)
        try:
            proc = subprocess.run(argv, capture_output=True, timeout=TIMEOUT_S, cwd=cwd)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{what} did not finish within {TIMEOUT_S} s")
        after = snapshot(tmp_path)
        out = proc.stdout.decode("utf-8", errors="replace")
        err = proc.stderr.decode("utf-8", errors="replace")
        assert_no_crash(proc.returncode, err, what)
        assert_unchanged(before, after, what)
        return proc.returncode, out, err

    return run


@pytest.fixture
def reel_json(run_reel):
    """reel_json(*args, ok=(0,)) -> parsed stdout of `reel *args --json`."""

    def run(*args, ok=(0,), cwd=None):
        rc, out, err = run_reel(*args, "--json", cwd=cwd)
        what = "reel " + " ".join(str(a) for a in args) + " --json"
        assert rc in ok, f"{what} exited {rc}, expected one of {ok}\nstdout:\n{out}\nstderr:\n{err}"
        try:
            return json.loads(out)
        except ValueError as e:
            pytest.fail(f"{what} did not print valid JSON ({e}):\n{out[:2000]}")

    return run


@pytest.fixture
def unchanged(tmp_path):
    """`with unchanged("task.open"):` asserts the block changed nothing under tmp_path."""

    @contextlib.contextmanager
    def guard(what="python API call"):
        before = snapshot(tmp_path)
        yield
        assert_unchanged(before, snapshot(tmp_path), what)

    return guard


@pytest.fixture(scope="session")
def reel_mod():
    try:
        import reel  # noqa: PLC0415
    except ImportError as e:  # pragma: no cover - environment problem, reported clearly
        pytest.fail(f"cannot import the reel Python package ({e}); install it into the venv (make python)", pytrace=False)
    return reel


@pytest.fixture
def clean_task(tmp_path):
    """A small, fully correct task: N=1 (with IMU) and N=2, gloves, hand pose, d435 rgb+depth."""
    return write_task(
        tmp_path,
        "pick_cube",
        [EpisodeSpec(1, length=3, imu=[2, 0, 1]), EpisodeSpec(2, length=4, imu=[1, 1, 0, 3])],
    )


@pytest.fixture
def sim(reel_bin, tmp_path_factory):
    return main_task(reel_bin, tmp_path_factory)


@pytest.fixture
def tables(sim):
    return {n: data_table(sim.path, n) for n in sim.numbers}


@pytest.fixture
def server(reel_bin, tmp_path):
    cfg = write_config(reel_bin, tmp_path / "serve.json")
    srv = ReelServer(reel_bin, tmp_path / "root", cfg, tmp_path / "serve.log").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def tasks(reel_bin, tmp_path_factory):
    def build(root):
        out = []
        for name, seed in (("torch_a", 1), ("torch_b", 2)):
            simulate(reel_bin, root / name, "--count", 2, "--seconds", "1", "--video-size", "32x24",
                     "--seed", seed, "--preset", "ultrafast", "--depth-preset", "ultrafast")
            out.append(root / name)
        return out
    return memo_task("torch_tasks", tmp_path_factory, build)
