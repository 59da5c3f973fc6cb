"""Helpers to run the real LeRobot in its peer venvs (`make peers`; docs/lerobot-peers.md).

- `peer_python(version)`: "v3.0" -> .venv-lerobot (lerobot 0.4.4), "v2.1" -> .venv-lerobot21
  (lerobot 0.3.3); fails the test with a message naming `make peers` when the venv is missing.
- `make_dataset(dir, version, vcodec=None, episodes=3, cameras=2)`: writes a dataset with
  LeRobot's own writer (tests/e2e/peers/lerobot_make.py) and returns its JSON summary.
- `dump(root, version, video_backend=None)`: reads every frame with LeRobotDataset
  (tests/e2e/peers/lerobot_dump.py) -> dict of stacked numpy arrays, plus "__meta__" (a dict).
- `expected`: the generator module (expected_state/expected_action/expected_image, LENGTHS, ...).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess

import numpy as np
import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PEERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers")
VENVS = {"v3.0": ".venv-lerobot", "v2.1": ".venv-lerobot21"}
TIMEOUT_S = 600


def _load_expected():
    spec = importlib.util.spec_from_file_location("reel_lerobot_make", os.path.join(PEERS, "lerobot_make.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # lerobot itself is imported only inside main()
    return mod


expected = _load_expected()


def peer_python(version: str) -> str:
    if version not in VENVS:
        raise ValueError(f"unknown LeRobot format version {version!r}; expected one of {sorted(VENVS)}")
    venv = os.path.join(REPO, VENVS[version])
    py = os.path.join(venv, "bin", "python")
    if not (os.path.isfile(os.path.join(venv, ".stamp")) and os.access(py, os.X_OK)):
        pytest.fail(
            f"the LeRobot {version} peer venv {venv} is missing or incomplete: run `make peers` "
            f"(`make e2e` and `make test` do it)",
            pytrace=False,
        )
    return py


def _env():
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    # datasets (v2.1 loading) writes an Arrow cache; keep it away from the user's home.
    env.setdefault("HF_HOME", os.path.join(os.environ.get("TMPDIR", "/tmp"), "reel-lerobot-peer-hf"))
    return env


def _run(version, script, args):
    argv = [peer_python(version), os.path.join(PEERS, script), *[str(a) for a in args]]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, env=_env())
    except subprocess.TimeoutExpired:
        pytest.fail(f"{script} {version} did not finish within {TIMEOUT_S} s")
    if proc.returncode != 0:
        pytest.fail(f"{script} ({version}) failed, exit {proc.returncode}:\n{proc.stderr[-6000:]}", pytrace=False)
    return proc


def make_dataset(root, version: str, vcodec: str | None = None, episodes: int = 3, cameras: int = 2) -> dict:
    args = [root, "--episodes", episodes, "--cameras", cameras]
    if vcodec:
        args += ["--vcodec", vcodec]
    proc = _run(version, "lerobot_make.py", args)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def dump(root, version: str, video_backend: str | None = None, out=None) -> dict:
    out = str(out) if out else os.path.join(str(root) + f".dump-{version}.npz")
    args = [root, out] + (["--video-backend", video_backend] if video_backend else [])
    _run(version, "lerobot_dump.py", args)
    with np.load(out) as z:
        d = {k: z[k] for k in z.files}
    d["__meta__"] = json.loads(str(d["__meta__"]))
    return d
