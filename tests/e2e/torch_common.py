"""What the PyTorch loader tests share about conftest's `tasks` (two small simulated tasks of
two episodes each): a state column, a camera slot, and each episode's length."""

from __future__ import annotations

import pyarrow.parquet as pq

from .fixtures import data_rel

STATE = "observation.gripper_state"
CAM = "stereo_left"


def lengths(task):
    return {n: pq.read_metadata(task / data_rel(n)).num_rows for n in (1, 2)}
