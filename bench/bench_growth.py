#!/usr/bin/env python3
"""reel growth benchmark (issue 31): what each everyday command costs as a task grows.

    .venv/bin/python bench/bench_growth.py                       # 1,000 and 10,000 episodes
    .venv/bin/python bench/bench_growth.py --sizes 1000,10000,100000 --cold

Synthetic pooled tasks of each size (bench_foundation's generator: per episode a data
parquet, an episodes row and a placeholder video; generated once under bench/results/)
and, for each command, warm (best of --reps after one untimed run) and, with --cold, one
run right after dropping the page cache (root only). The table gives seconds per run and
the ratio largest/smallest size: a command whose work does not depend on the task size
(one episode's check, delete, pack, import of a fixed batch) should stay flat (ratio <= 1.5x);
one that reads or sums every episode (check, stats --verify, ls, info, open().episodes(),
push with nothing new, FrameDataset) should grow linearly (per-episode cost ratio <= 1.5x).
Mutating commands run on a hard-linked
copy (reel writes by rename, so the generated task is never changed).
The synthetic videos are placeholders that do not decode, and export (LeRobot or bundle),
report and view stop at the first one (none of them has a flag that leaves videos out): export
of 100 episodes, report and view --save of one run on another hard-linked copy without those
episodes' videos, so they measure everything but the video work (no camera in their output).
upload --status reads that copy's outbox, made once with the jobs of the same 100 episodes
(an upload to a port where nothing listens: every job failed, no server needed).
Results: Markdown on stdout and in bench/results/growth.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_foundation as foundation  # noqa: E402  (the synthetic task generator)

import reel  # noqa: E402

RESULTS = HERE / "results"
REEL = os.environ.get("REEL_BIN") or str(HERE.parent / "build/cmake/tools/reel")
IMPORT_BATCH = 100  # episodes per timed import (issue 31: "import of 100 episodes")
EXPORT_BATCH = 100  # episodes per timed export (issue 31: "export of 100 episodes"), and upload outbox jobs


def run(*args: object, ok: tuple[int, ...] = (0, 1)) -> None:
    proc = subprocess.run([REEL, *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode not in ok:  # 1: check found something (the synthetic videos are placeholders)
        raise RuntimeError(f"reel {' '.join(map(str, args))}: exit {proc.returncode}\n{proc.stderr}")


def timed(fn: Callable[[], None], reps: int, cold: bool) -> dict:
    fn()  # warm-up
    warm = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t0)
    out = {"warm_s": min(warm)}
    if cold and foundation.drop_page_cache():
        t0 = time.perf_counter()
        fn()
        out["cold_s"] = time.perf_counter() - t0
    return out


def import_source() -> Path:
    """A LeRobot export of IMPORT_BATCH small simulated episodes (made once)."""
    src = RESULTS / f"growth_import_{IMPORT_BATCH}"
    if (src / "export/meta/info.json").exists():
        return src / "export"
    shutil.rmtree(src, ignore_errors=True)
    # Named like the synthetic tasks' one task: an import never rewrites a target's tasks.jsonl.
    task = src / foundation.TASK_NAME
    run("simulate", task, "--count", IMPORT_BATCH, "--seconds", 0.5, "--fps", 10, "--video-size", "64x48")
    run("export", "--to", "lerobot-v3", task, src / "export")
    return src / "export"


def work_copy(task: Path, suffix: str = ".work") -> Path:
    """A hard-linked copy of `task` for the commands that change it."""
    copy = task.parent / (task.name + suffix)
    shutil.rmtree(copy, ignore_errors=True)
    subprocess.run(["cp", "-al", str(task), str(copy)], check=True)
    return copy


def shown_copy(task: Path) -> Path:
    """A hard-linked copy of `task` for export, report, view --save and upload --status:
    episodes 1..EXPORT_BATCH without their placeholder videos (unlinked in the copy only),
    and an outbox holding those episodes' upload jobs."""
    copy = work_copy(task, ".shown")
    for e in reel.open(str(copy)).episodes():
        if int(e["episode_index"]) <= EXPORT_BATCH:
            for rel in e["videos"].values():
                (copy / rel).unlink()
    with socket.socket() as port:  # bound, never listening: every connection is refused
        port.bind(("127.0.0.1", 0))
        # Exit 2: every episode failed, as it must with no server; the outbox keeps the jobs.
        run("upload", copy, f"1-{EXPORT_BATCH}", "--server", f"http://127.0.0.1:{port.getsockname()[1]}",
            "--retries", 1, "--delete-after", "keep", "--progress", "none", ok=(2,))
    jobs = len(reel.upload_status(str(copy))["jobs"])
    if jobs != EXPORT_BATCH:
        raise RuntimeError(f"{copy}: {jobs} upload jobs in the outbox, not {EXPORT_BATCH}")
    return copy


def frame_dataset(task: Path) -> None:
    import reel.torch  # noqa: PLC0415 - torch is imported once, in the warm-up run

    reel.torch.FrameDataset(str(task))


def bench_size(size: int, reps: int, cold: bool, only: str | None) -> dict:
    task = foundation.generate_task(RESULTS, size)
    work = work_copy(task)
    source = import_source()
    victims = iter(range(size, 0, -1))
    pushed = RESULTS / f"growth_push_{size}"  # the warm-up run sends everything; the timed ones nothing
    shutil.rmtree(pushed, ignore_errors=True)
    shown: Path | None = None  # shown_copy(task), made below when one of its commands runs
    exported, report, rrd = RESULTS / "growth_export", RESULTS / "growth_report.html", RESULTS / "growth_view.rrd"
    commands: dict[str, tuple[str, Callable[[], None]]] = {
        "reel ls --json": ("linear", lambda: run("ls", task, "--json")),
        # info sums every episode's length and duration: linear here (issue 31 item 3 adds an
        # absolute goal for it at 100,000 episodes, cold).
        "reel info --json": ("linear", lambda: run("info", task, "--json")),
        "reel.open(p).episodes()": ("linear", lambda: reel.open(str(task)).episodes()),
        "reel check (whole task)": ("linear", lambda: run("check", task, "--json", "--progress", "none")),
        "reel check --episodes N (one)": ("flat", lambda: run("check", task, "--episodes", size, "--json")),
        "reel stats --verify": ("linear", lambda: run("stats", task, "--verify", "--progress", "none")),
        "reel delete (one episode)": ("flat", lambda: run("delete", work, next(victims))),
        f"reel import ({IMPORT_BATCH} episodes)": (
            "flat", lambda: run("import", source, work, "--renumber", "--progress", "none")),
        "reel pack (one episode)": ("flat", lambda: run("pack", task, size, "-o", RESULTS / "growth_pack.zip", "--force")),
        # Nothing new still compares every episode with the destination's.
        "reel push (nothing new)": ("linear", lambda: run("push", task, pushed)),
        # Indexes every frame of every episode.
        "reel.torch.FrameDataset(p)": ("linear", lambda: frame_dataset(task)),
    }
    # On shown_copy(task): the first EXPORT_BATCH episodes without videos, an outbox of their jobs.
    on_shown: dict[str, tuple[str, Callable[[], None]]] = {
        f"reel export --episodes ({EXPORT_BATCH}, lerobot-v3)": ("flat", lambda: run(
            "export", "--to", "lerobot-v3", shown, exported, "--episodes", f"1-{EXPORT_BATCH}", "--force",
            "--progress", "none")),
        "reel report (one episode)": ("flat", lambda: run("report", shown, 1, "-o", report, "--progress", "none")),
        "reel view --save (one episode)": ("flat", lambda: run("view", shown, 1, "--save", rrd, "--progress", "none")),
        f"reel upload --status ({EXPORT_BATCH} jobs)": ("flat", lambda: run("upload", shown, "--status")),
    }
    commands.update(on_shown)

    def chosen(name: str) -> bool:
        return not only or any(part in name for part in only.split(","))

    if any(chosen(name) for name in on_shown):
        shown = shown_copy(task)
    out = {}
    for name, (kind, fn) in commands.items():
        if not chosen(name):
            continue
        t = timed(fn, reps, cold)
        out[name] = {"kind": kind, **t}
        print(f"  [{size:,}] {name}: warm {t['warm_s']:.3f} s" + (f", cold {t['cold_s']:.3f} s" if "cold_s" in t else ""),
              flush=True)
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(pushed, ignore_errors=True)
    if shown:
        shutil.rmtree(shown, ignore_errors=True)
    shutil.rmtree(exported, ignore_errors=True)
    report.unlink(missing_ok=True)
    rrd.unlink(missing_ok=True)
    return out


def render(info: dict, sizes: list[int], results: dict[int, dict], load_end: str) -> str:
    lo, hi = sizes[0], sizes[-1]
    out = ["# reel growth benchmark", "",
           f"- date: {info['date']}; machine: {info['nproc']} CPUs, {info['cpu']}; reel {info['reel']}",
           f"- load average at start / end: {info['load']} / {load_end}", "",
           "Seconds per run (warm: best of the reps after one untimed run; cold: one run after dropping the page "
           "cache). Ratio: the largest size's cost over the smallest's, per run for commands whose work should not "
           "grow with the task (flat), per episode for those that read every episode (linear); goal <= 1.5x.", "",
           "| command | kind | " + " | ".join(f"{s:,} warm s" for s in sizes)
           + (" | " + " | ".join(f"{s:,} cold s" for s in sizes) if "cold_s" in results[lo][next(iter(results[lo]))] else "")
           + f" | ratio {hi:,}/{lo:,} | goal |",
           "|---|---|" + "---:|" * len(sizes) * (2 if "cold_s" in results[lo][next(iter(results[lo]))] else 1)
           + "---:|---|"]
    for name, first in results[lo].items():
        kind = first["kind"]
        warm = [results[s][name]["warm_s"] for s in sizes]
        ratio = warm[-1] / warm[0] if kind == "flat" else (warm[-1] / hi) / (warm[0] / lo)
        cells = [f"{w:.3f}" for w in warm]
        if "cold_s" in first:
            cells += [f"{results[s][name].get('cold_s', float('nan')):.3f}" for s in sizes]
        verdict = "met" if ratio <= 1.5 else "NOT met"
        out.append(f"| {name} | {kind} | " + " | ".join(cells) + f" | {ratio:.2f}x | {verdict} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000", help="task sizes in episodes, comma-separated")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="also one run after dropping the page cache (root)")
    ap.add_argument("--out", default=str(RESULTS / "growth.md"))
    ap.add_argument("--only", help="run only the commands whose name contains one of these texts (comma-separated)")
    args = ap.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    info = foundation.machine_info()
    print(f"reel {info['reel']}; {info['nproc']} CPUs; load {info['load']}", flush=True)
    results = {s: bench_size(s, args.reps, args.cold, args.only) for s in sizes}
    load_end = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    text = render(info, sizes, results, load_end)
    print("\n" + text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps({"machine": info, "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
