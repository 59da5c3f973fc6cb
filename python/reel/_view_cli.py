"""The Python half of ``reel view`` and ``reel report`` (tools/reel/view_cmd.cc parses the
options and runs ``python -m reel._view_cli '<options JSON>'``). Prints what the command
prints and exits with the CLI's codes: 0 done, 2 an input that could not be read or a
missing dependency (docs/cli.md)."""

from __future__ import annotations

import json
import shutil
import signal
import sys
import time
from typing import Any


def _progress(mode: str, stage: str):
    if mode == "none" or (mode == "auto" and not sys.stderr.isatty()):
        return None

    def show(done: int, total: int, item: Any) -> None:
        if mode == "json":
            sys.stderr.write(json.dumps({"progress": stage, "done": done, "total": total, "item": str(item)}) + "\n")
        else:
            sys.stderr.write(f"\r{stage}: {done}/{total}  (episode {item})" + ("\n" if done == total else ""))
        sys.stderr.flush()
    return show


def _view(o: dict[str, Any]) -> dict[str, Any]:
    from . import rerun as view
    max_frames = o.get("max_frames", view.DEFAULT_MAX_FRAMES) or None
    out = view.view(o["task"], o.get("episodes"), save=o.get("save") or None, serve=bool(o.get("serve")),
                     spawn=bool(o.get("spawn")), bind=o.get("bind") or "127.0.0.1", web_port=o.get("web_port") or None,
                     grpc_port=o.get("grpc_port") or None, max_frames=max_frames,
                     progress=_progress(o.get("progress", "auto"), "episodes logged"))
    return out


def _print_view(out: dict[str, Any]) -> None:
    for ep in out["episodes"]:
        cams = ", ".join(f"{s} {c['frames']} ({c['kind']})" for s, c in ep["cameras"].items())
        print(f"episode {ep['episode']}: {ep['rows']} rows; cameras: {cams or 'none'}; "
              f"{len(ep['signals'])} signals, {ep['imu']} IMU samples, {len(ep['slam'])} trajectories, "
              f"{ep['findings']} findings")
    for path in out["files"]:
        print(f"wrote {path}")
    if out.get("url"):
        print(f"serving the web viewer at {out['url']}; Ctrl-C to stop")


def _report(o: dict[str, Any]) -> dict[str, Any]:
    from . import report
    kwargs = {"episodes": o.get("episodes"), "progress": _progress(o.get("progress", "auto"), "episodes reported")}
    if "max_frames" in o:
        kwargs["thumbnails"] = int(o["max_frames"]) or None
    return report.write_report(o["task"], o["output"], **kwargs)


_STOP: list[int] = []


def _catch_stop_signals() -> None:
    """For --serve, before the server starts: SIGINT/SIGTERM then stop it rather than end
    this process with rerun's server left running."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: _STOP.append(1))


def _serve_until_interrupted(server) -> int:
    """Waits on rerun's server process until SIGINT/SIGTERM, then stops it. Its exit on its
    own (a port in use) is reported with the end of its stderr."""
    while not _STOP and server.poll() is None:
        time.sleep(0.2)
    if server.poll() is None:
        server.terminate()
        server.wait(timeout=10)
        return 0
    tail = server.stderr.read().decode("utf-8", "replace").strip().splitlines()[-3:]
    sys.stderr.write("reel: the rerun server stopped: " + " / ".join(tail) + "\n")
    return 2


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("reel: usage: python -m reel._view_cli '<options JSON>' (run by `reel view` / `reel report`)\n")
        return 2
    o = json.loads(argv[0])
    if o.get("serve"):
        _catch_stop_signals()
    try:
        out = _view(o) if o["command"] == "view" else _report(o)
    except ImportError as e:
        sys.stderr.write(f"reel: {o['command']} needs {e.name or 'a package'}: {e}\n")
        return 2
    except Exception as e:  # noqa: BLE001 - the CLI's edge: one line, exit 2
        sys.stderr.write(f"reel: {type(e).__name__}: {e}\n")
        return 2
    server, scratch = out.pop("server", None), out.pop("scratch", None)  # reel view --serve
    if o.get("json"):
        print(json.dumps(out, ensure_ascii=False, indent=2, default=str))
    elif o["command"] == "view":
        _print_view(out)
    else:
        print(f"wrote {out['output']} ({out['episodes']} episodes, {out['bytes']} bytes)")
    sys.stdout.flush()
    if server is not None:
        try:
            return _serve_until_interrupted(server)
        finally:
            if scratch:
                shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
