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


def pooled_tasks(root: str) -> list[str]:
    """meta/tasks.jsonl of a pooled task as task strings by task_index; [] without the file."""
    out: dict[int, str] = {}
    try:
        with open(os.path.join(str(root), "meta", "tasks.jsonl"), encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    t = json.loads(line)
                    out[int(t["task_index"])] = str(t["task"])
    except FileNotFoundError:
        return []
    return [out[i] for i in sorted(out)]
