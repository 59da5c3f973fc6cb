"""Reference video helpers shared by the video tests; this module holds no tests.

Everything here is independent of reel: frames come from the ffmpeg CLI, and the 12-bit
depth log code is written straight from reference-behaviour.md "Depth"."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np

FF = ["ffmpeg", "-nostdin", "-v", "error", "-y"]
STEP = 4095 / math.log(50.0)


def ffmpeg(*args) -> bytes:
    """Runs the ffmpeg CLI (quiet, overwrite) and returns its stdout."""
    return subprocess.run([*FF, *map(str, args)], check=True, capture_output=True).stdout


def cli_rgb(path: Path, w: int, h: int) -> np.ndarray:
    """All frames of a video (or one PNG) as the ffmpeg CLI converts them to RGB24."""
    raw = ffmpeg("-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-")
    return np.frombuffer(raw, np.uint8).reshape(-1, h, w, 3)


def cli_gray16(path: Path, w: int, h: int, pix_fmt: str = "gray16le") -> np.ndarray:
    """All frames as 16-bit gray (gray16le as stored, or gray12le codes) by the ffmpeg CLI."""
    raw = ffmpeg("-i", path, "-f", "rawvideo", "-pix_fmt", pix_fmt, "-")
    return np.frombuffer(raw, "<u2").reshape(-1, h, w)


def mm_to_code(mm: np.ndarray) -> np.ndarray:
    """code = clip(rint((ln mm - ln 100) * STEP), 0, 4095); 0 mm -> 0."""
    m = mm.astype(np.float64)
    code = np.clip(np.rint((np.log(np.maximum(m, 1)) - math.log(100.0)) * STEP), 0, 4095)
    code[m == 0] = 0
    return code.astype("<u2")


def code_to_mm(code: np.ndarray) -> np.ndarray:
    """mm = rint(exp(ln 100 + code / STEP)), so code 0 reads as 100 mm."""
    return np.rint(np.exp(math.log(100.0) + code.astype(np.float64) / STEP)).astype(np.uint16)
