"""reel: storage engine for robot-learning recordings (pooled_episodes_v1).

This package is a thin layer over the C++ core (``reel._core``)::

    import reel
    task = reel.open("data/recordings/my_task")
    task.info["fps"]                      # parsed meta/info.json
    for ep in task.episodes(): ...        # one dict per episode
    task.force_matrix(1, 0, "observation.gripper_left_force_matrix")  # (250,250,3) float32
    reel.check("data/recordings")         # conformance findings
"""

from __future__ import annotations

import json
from typing import Any

from . import _core
from ._errors import (
    AlreadyExistsError,
    CorruptionError,
    Error,
    InvalidError,
    IOError,
    NotFoundError,
    NotSupportedError,
    PermissionDeniedError,
)

__version__ = _core.__version__

__all__ = [
    "Task", "open", "check", "detect_format", "Error", "NotFoundError", "InvalidError",
    "CorruptionError", "PermissionDeniedError", "IOError", "NotSupportedError",
    "AlreadyExistsError",
]


def detect_format(path: str) -> dict[str, str]:
    """Format of the dataset at ``path``: {"format", "version", "evidence"}."""
    return _core.detect_format(str(path))


def check(path: str) -> list[dict[str, Any]]:
    """Conformance findings for a task or a folder of tasks (see docs/check-rules.md)."""
    return _core.check(str(path))


class Task:
    """A pooled_episodes_v1 task opened for reading. Reading never writes."""

    def __init__(self, core: _core.Task):
        self._core = core
        self._info: dict[str, Any] | None = None

    @property
    def root(self) -> str:
        return self._core.root

    @property
    def info(self) -> dict[str, Any]:
        """meta/info.json as a dict (key order kept)."""
        if self._info is None:
            self._info = json.loads(self._core.info_json())
        return self._info

    def episodes(self) -> list[dict[str, Any]]:
        """One dict per episode, sorted by N (the fields of ``reel ls --json``)."""
        return self._core.episodes()

    def force_matrix(self, episode_index: int, row: int, column: str):
        """Decoded (250, 250, 3) float32 force matrix in mN, using the episode's own scale."""
        return self._core.force_matrix(episode_index, row, column)

    def check(self) -> list[dict[str, Any]]:
        """Conformance findings for this task."""
        return self._core.check()


def open(path: str) -> Task:  # noqa: A001 - the natural name, like io.open
    """Opens the task directory at ``path``."""
    return Task(_core.Task.open(str(path)))
