"""``reel report``: one self-contained static HTML page about a task (docs/view.md).

The page holds the episodes table, then per episode a thumbnail strip per video slot (depth
colour-mapped), plots of the gripper force/state, IMU and action over time (plotly, its
JavaScript inlined once), and the `reel check` findings, with links from the table to each
episode's section. Nothing is fetched when the page is opened: images are PNG data URIs.
"""

from __future__ import annotations

import base64
import html
import io
import os
from typing import Any, Callable, Iterable

import numpy as np

from ._errors import NotFoundError
from ._viewing import decode_frames, episode_findings, float_rows, imu_time_s, written_whole

DEFAULT_THUMBNAILS = 6
THUMB_WIDTH = 160
MAX_PLOT_POINTS = 2000

# Turbo (Google, 2019), as the polynomial fit its authors published: a perceptually ordered
# colormap that keeps near and far depth apart. Index 0 (no depth) is drawn black.
_TURBO_R = (0.13572138, 4.61539260, -42.66032258, 132.13108234, -152.94239396, 59.28637943)
_TURBO_G = (0.09140261, 2.19418839, 4.84296658, -14.18503333, 4.27729857, 2.82956604)
_TURBO_B = (0.10667330, 12.64194608, -60.58204836, 110.36276771, -89.90310912, 27.34824973)


def _turbo_lut() -> np.ndarray:
    x = np.linspace(0.0, 1.0, 256)
    channels = [sum(c * x ** i for i, c in enumerate(coeffs)) for coeffs in (_TURBO_R, _TURBO_G, _TURBO_B)]
    lut = (np.clip(np.stack(channels, axis=1), 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    lut[0] = 0
    return lut


_LUT = _turbo_lut()


def colorize_depth(depth_mm: np.ndarray) -> np.ndarray:
    """uint16 millimetres (H, W) -> uint8 RGB (H, W, 3), turbo over the frame's 2nd-98th
    percentile of valid depth; 0 (no measurement) black."""
    valid = depth_mm[depth_mm > 0]
    if valid.size == 0:
        return np.zeros(depth_mm.shape + (3,), np.uint8)
    lo, hi = np.percentile(valid, [2, 98])
    scaled = np.clip((depth_mm.astype(np.float64) - lo) / max(hi - lo, 1.0), 0.0, 1.0)
    index = (1 + scaled * 254).astype(np.uint8)
    index[depth_mm == 0] = 0
    return _LUT[index]


def _png_data_uri(rgb: np.ndarray) -> str:
    from PIL import Image
    image = Image.fromarray(rgb)
    if image.width > THUMB_WIDTH:
        image = image.resize((THUMB_WIDTH, max(1, round(image.height * THUMB_WIDTH / image.width))))
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _thumbnails(task: Any, n: int, length: int, slots: list[str], count: int | None) -> dict[str, list[tuple[int, str]]]:
    """(row, data URI) per slot, `count` rows spread evenly over the episode."""
    k = length if not count else min(count, length)
    rows = sorted({int(r) for r in np.linspace(0, max(length - 1, 0), k)}) if length else []
    out: dict[str, list[tuple[int, str]]] = {}
    for slot in slots:
        frames = decode_frames(task, n, slot, rows)
        if frames is None:  # a foreign dataset's depth stream
            continue
        out[slot] = [(r, _png_data_uri(colorize_depth(f) if f.dtype == np.uint16 else f)) for r, f in zip(rows, frames)]
    return out


# ---- plots -----------------------------------------------------------------------------------

def _series_groups(table: Any) -> dict[str, list[tuple[str, np.ndarray, np.ndarray]]]:
    """{group: [(name, rows, values (k, width))]}: gripper force, gripper state, action."""
    import pyarrow as pa
    groups: dict[str, list[tuple[str, np.ndarray, np.ndarray]]] = {"gripper force": [], "gripper state": [],
                                                                   "action": []}
    for name in table.column_names:
        group = ("gripper force" if name.endswith("_force") else "gripper state" if name.endswith("_state")
                 else "action" if name == "action" else None)
        got = float_rows(table, name) if group and pa.types.is_fixed_size_list(table.schema.field(name).type) else None
        if got is None or got[1].shape[1] > 8:
            continue
        groups[group].append((name, *got))
    return {g: v for g, v in groups.items() if v}


def _figure_html(task: Any, n: int, table: Any) -> str:
    import plotly.graph_objects as go
    import pyarrow as pa
    from plotly.subplots import make_subplots
    ts = table["timestamp"] if "timestamp" in table.column_names else None
    t = (ts.to_numpy().astype(np.float64) if ts is not None and pa.types.is_floating(ts.type)  # seconds
         else np.arange(table.num_rows, dtype=np.float64) / float(task.info.get("fps") or 30))
    groups = _series_groups(table)
    imu = task.imu(n) if hasattr(task, "imu") and "observation.imu" in table.column_names else None
    if imu is not None and len(imu["ts_ns"]):
        times = imu_time_s(t, imu["row"].astype(np.int64), imu["ts_ns"].astype(np.int64))
        groups["IMU (accelerometer)"] = [("observation.imu", times, imu["values"][:, :3].astype(np.float64))]
    if not groups:
        return "<p>No force, state, IMU or action columns.</p>"
    fig = make_subplots(rows=len(groups), cols=1, shared_xaxes=True, subplot_titles=list(groups), vertical_spacing=0.06)
    for i, series in enumerate(groups.values(), start=1):
        for name, rows, values in series:
            x = rows if name == "observation.imu" else t[rows]
            step = max(1, len(x) // MAX_PLOT_POINTS)
            for c in range(values.shape[1]):
                label = name.removeprefix("observation.") + (f"[{c}]" if values.shape[1] > 1 else "")
                fig.add_trace(go.Scatter(x=x[::step], y=values[::step, c], name=label, mode="lines"), row=i, col=1)
    fig.update_layout(height=220 * len(groups) + 80, margin=dict(l=50, r=20, t=40, b=30), legend=dict(font=dict(size=10)))
    fig.update_xaxes(title_text="timestamp (s)", row=len(groups), col=1)
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"plot-episode-{n}")


# ---- the page ----------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}
th{background:#f0f0f0;text-align:left}.strip{display:flex;gap:4px;flex-wrap:wrap;margin:4px 0 12px}
.strip figure{margin:0}.strip figcaption{font-size:11px;color:#666;text-align:center}
.finding-error{color:#b00020}.finding-warning{color:#a15c00}section{border-top:2px solid #ddd;margin-top:28px}
"""


def _findings_html(findings: list[dict[str, Any]]) -> str:
    if not findings:
        return "<p>No findings.</p>"
    items = "".join(f"<li class='finding-{html.escape(str(f.get('severity')))}'>{html.escape(str(f.get('severity')))} "
                    f"[{html.escape(str(f.get('rule')))}] {html.escape(str(f.get('path')))}: "
                    f"{html.escape(str(f.get('message')))}</li>" for f in findings)
    return f"<ul>{items}</ul>"


def _episodes_table(entries: list[dict[str, Any]], counts: dict[int, int]) -> str:
    head = "<tr><th>episode</th><th>rows</th><th>seconds</th><th>video slots</th><th>findings</th></tr>"
    rows = "".join(
        f"<tr><td><a href='#episode-{e['episode_index']}'>{e['episode_index']}</a></td><td>{e.get('length', '')}</td>"
        f"<td>{float(e.get('duration_sec') or 0):.2f}</td><td>{html.escape(', '.join(sorted(e.get('videos') or {})))}</td>"
        f"<td>{counts.get(int(e['episode_index']), 0)}</td></tr>" for e in entries)
    return f"<table id='episodes'>{head}{rows}</table>"


def _episode_section(task: Any, entry: dict[str, Any], findings: list[dict[str, Any]], thumbnails: int | None) -> str:
    import pyarrow as pa
    n = int(entry["episode_index"])
    table = pa.table(task.data(n))
    strips = _thumbnails(task, n, table.num_rows, sorted(entry.get("videos") or {}), thumbnails)
    parts = [f"<section id='episode-{n}'><h2>Episode {n}</h2>",
             f"<p>{table.num_rows} rows, {float(entry.get('duration_sec') or 0):.2f} s. <a href='#episodes'>back to the table</a></p>"]
    for slot, thumbs in strips.items():
        figures = "".join(f"<figure><img src='{uri}' alt='{html.escape(slot)} row {r}'><figcaption>row {r}</figcaption></figure>"
                          for r, uri in thumbs)
        parts.append(f"<h3>{html.escape(slot)}</h3><div class='strip'>{figures}</div>")
    parts += ["<h3>Signals</h3>", _figure_html(task, n, table), "<h3>Check findings</h3>", _findings_html(findings), "</section>"]
    return "".join(parts)


def _held(task: Any, wanted: list[int]) -> list[dict[str, Any]]:
    """task.episodes(episodes=wanted) without those the task does not hold."""
    try:
        return task.episodes(episodes=wanted)
    except NotFoundError:
        return [e for n in wanted for e in _one(task, n)]


def _one(task: Any, n: int) -> list[dict[str, Any]]:
    try:
        return task.episodes(episodes=[n])
    except NotFoundError:
        return []


def write_report(task: Any, output: str, *, episodes: Iterable[int] | None = None,
                 thumbnails: int | None = DEFAULT_THUMBNAILS,
                 progress: Callable[[int, int, int], None] | None = None) -> dict[str, Any]:
    """Writes the report of `task` (a path or a reel.Task) to `output` (written whole, then
    renamed into place). `thumbnails` per slot and episode (None = every frame). Returns
    {"output", "episodes", "bytes", "findings"}."""
    import plotly.offline

    import reel
    if isinstance(task, (str, os.PathLike)):
        task = reel.open(os.fspath(task))
    wanted = None if episodes is None else {int(e) for e in episodes}
    # The episodes asked for, each found on its own (not by listing the task); one the task
    # does not hold is left out, as the report always did.
    entries = task.episodes() if wanted is None else _held(task, sorted(wanted))
    pooled = hasattr(task, "frames") and hasattr(task, "imu")
    # A report of some episodes checks those and the task-level files (check --episodes).
    findings = task.check(episodes=[int(e["episode_index"]) for e in entries]) if (
        wanted is not None and pooled and entries) else task.check()
    mine = {int(e["episode_index"]): episode_findings(findings, e) for e in entries}
    name = html.escape(str(task.info.get("task_name") or os.path.basename(str(task.root).rstrip("/"))))
    sections = []
    for i, entry in enumerate(entries):
        sections.append(_episode_section(task, entry, mine[int(entry["episode_index"])], thumbnails))
        if progress:
            progress(i + 1, len(entries), int(entry["episode_index"]))
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>reel report: {name}</title>"
            f"<style>{_CSS}</style><script>{plotly.offline.get_plotlyjs()}</script></head><body>"
            f"<h1>Task {name}</h1><p>{len(entries)} episodes, {len(findings)} check findings for the task.</p>"
            f"{_episodes_table(entries, {k: len(v) for k, v in mine.items()})}"
            f"<h2>Task findings</h2>{_findings_html(findings)}{''.join(sections)}</body></html>")
    with written_whole(output) as temp, open(temp, "w", encoding="utf-8") as f:
        f.write(page)
    return {"output": output, "episodes": len(entries), "bytes": len(page.encode("utf-8")), "findings": len(findings)}
