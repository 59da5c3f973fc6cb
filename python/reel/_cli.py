"""The ``reel`` console script of the wheel: execs the CLI binary installed beside the package
(reel/bin/reel, built from tools/reel by the same CMake build as the extension)."""

from __future__ import annotations

import os
import sys


def executable() -> str:
    """Path of the reel CLI inside the installed package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "reel")


def main() -> int:
    exe = executable()
    if not os.access(exe, os.X_OK):
        sys.stderr.write(f"reel: the CLI binary {exe} is missing (this installation was built without "
                         f"REEL_BUILD_TOOLS)\n")
        return 2
    # `reel view` / `reel report` run Python code of this package: this interpreter has it.
    os.environ.setdefault("REEL_PYTHON", sys.executable)
    os.execv(exe, ["reel", *sys.argv[1:]])
    return 2  # not reached


if __name__ == "__main__":
    sys.exit(main())
