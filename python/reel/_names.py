"""Names shared by reel.torch and reel.daft: one camera naming and the task strings of a
pooled task."""

from __future__ import annotations

import json
import os

# LeRobot's camera naming, used by reel.torch and reel.daft for every dataset.
IMAGE_PREFIX = "observation.images."


def camera_key(name: str) -> str:
    """The one camera naming of reel.torch and reel.daft: ``observation.images.<slot>``
    (LeRobot's). A bare slot name ("stereo_left") is accepted as an alias; any other
    ``observation.*`` key (a LeRobot video key) is kept as it is."""
    name = str(name)
    return name if name.startswith("observation.") else IMAGE_PREFIX + name


def pooled_tasks(task) -> list[str]:
    """meta/tasks.jsonl of a pooled task as task strings by task_index; [] without the file.
    ``task``: an opened reel.Task (read through its file system: a local disk or an object
    store), or a local task directory."""
    out: dict[int, str] = {}
    if hasattr(task, "read_file"):
        raw = task.read_file("meta/tasks.jsonl")
        if raw is None:
            return []
        lines = raw.decode("utf-8").splitlines()
    else:
        try:
            with open(os.path.join(str(task), "meta", "tasks.jsonl"), encoding="utf-8") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
    for line in lines:
        if line.strip():
            t = json.loads(line)
            out[int(t["task_index"])] = str(t["task"])
    return [out[i] for i in sorted(out)]
