"""Assertion helpers shared by the reel end-to-end tests (no reel import, no fixtures)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# --------------------------------------------------------------------------- tree snapshots


def snapshot(root: Path) -> dict:
    """Every path under root (dirs included) -> (kind, size, mtime_ns)."""
    snap = {}
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            kind = "d" if os.path.isdir(p) and not os.path.islink(p) else "f"
            snap[os.path.relpath(p, root)] = (kind, st.st_size if kind == "f" else 0, st.st_mtime_ns)
    st = os.lstat(root)
    snap["."] = ("d", 0, st.st_mtime_ns)
    return snap


def diff_snapshots(before: dict, after: dict) -> str:
    lines = []
    for k in sorted(set(before) | set(after)):
        if before.get(k) != after.get(k):
            lines.append(f"  {k}: {before.get(k)} -> {after.get(k)}")
    return "\n".join(lines)


def assert_unchanged(before: dict, after: dict, what: str) -> None:
    assert before == after, f"{what} modified the tree it only had to read:\n{diff_snapshots(before, after)}"


# --------------------------------------------------------------------------- crash checks


def assert_no_crash(rc: int, stderr: str, what: str) -> None:
    assert rc >= 0, f"{what} was killed by signal {-rc}\nstderr:\n{stderr}"
    assert rc < 128, f"{what} exited with {rc} (crash/abort?)\nstderr:\n{stderr}"
    assert "Traceback (most recent call last)" not in stderr, f"{what} printed a Python traceback:\n{stderr}"
    for marker in ("terminate called", "Segmentation fault", "AddressSanitizer", "Assertion `"):
        assert marker not in stderr, f"{what} crashed ({marker!r}):\n{stderr}"


# --------------------------------------------------------------------------- report helpers


def norm_path(p: str) -> str:
    return str(p).replace("\\", "/").rstrip("/")


def all_findings(report: dict) -> list:
    return [f for t in report.get("tasks", []) for f in t.get("findings", [])]


def findings(report: dict, rule: str, path_suffix: str | None = None) -> list:
    out = []
    for f in all_findings(report):
        if f.get("rule") != rule:
            continue
        if path_suffix is not None and not norm_path(f.get("path", "")).endswith(norm_path(path_suffix)):
            continue
        out.append(f)
    return out


def assert_finding(report: dict, rule: str, path_suffix: str | None = None, severity: str | None = None) -> dict:
    hits = findings(report, rule, path_suffix)
    listing = "\n".join(f"  {f.get('severity')} {f.get('rule')} {f.get('path')}: {f.get('message')}" for f in all_findings(report))
    where = f" at ...{path_suffix}" if path_suffix else ""
    assert hits, f"expected a {rule!r} finding{where}; got:\n{listing or '  (none)'}"
    if severity is not None:
        assert any(f.get("severity") == severity for f in hits), f"{rule} finding{where} is not {severity}: {hits}"
    return hits[0]


def assert_check_consistent(report: dict, rc: int | None = None) -> None:
    """Counts agree with the findings, and the exit code with the error count."""
    total_e = total_w = 0
    for t in report["tasks"]:
        sev = [f["severity"] for f in t["findings"]]
        assert all(s in ("error", "warning", "info") for s in sev), sev
        assert t["errors"] == sev.count("error"), t
        assert t["warnings"] == sev.count("warning"), t
        for f in t["findings"]:
            assert set(f) >= {"rule", "severity", "path", "message"}, f
        total_e += t["errors"]
        total_w += t["warnings"]
    assert report["errors"] == total_e
    assert report["warnings"] == total_w
    if rc is not None:
        assert rc == (1 if total_e else 0), f"exit code {rc} with {total_e} error finding(s)"


def check_report(run_reel, path) -> tuple[int, dict]:
    """`reel check PATH --json`, expecting exit 0 or 1; returns (rc, report) after consistency checks."""
    rc, out, err = run_reel("check", path, "--json")
    assert rc in (0, 1), f"reel check exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    try:
        report = json.loads(out)
    except ValueError as e:
        pytest.fail(f"reel check --json did not print valid JSON ({e}):\n{out[:2000]}")
    assert_check_consistent(report, rc)
    return rc, report


def error_rules(report: dict) -> list:
    return sorted({f["rule"] for f in all_findings(report) if f["severity"] == "error"})


def assert_fails_naming(result: tuple, *needles: str) -> None:
    """Non-zero exit and each needle named on stderr or in a finding (path/message) of JSON stdout."""
    rc, out, err = result
    assert rc != 0, f"expected a non-zero exit\nstdout:\n{out}\nstderr:\n{err}"
    text = err
    try:
        report = json.loads(out) if out.strip() else None
    except ValueError:
        report = None
    if isinstance(report, dict):
        for f in all_findings(report):
            text += "\n" + str(f.get("path", "")) + " " + str(f.get("message", ""))
    for n in needles:
        assert n in text, f"the error does not name {n!r}\nstdout:\n{out}\nstderr:\n{err}"
    assert err.strip() or report, "no error message on stderr and no finding"


def assert_json_close(actual, expected, path="$", rel=1e-9):
    """Deep equality with a relative tolerance for floats (ints and floats compare as numbers)."""
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"
    elif isinstance(expected, (int, float)):
        assert isinstance(actual, (int, float)) and not isinstance(actual, bool), f"{path}: {actual!r} is not a number"
        assert actual == pytest.approx(expected, rel=rel, abs=1e-12), f"{path}: {actual!r} != {expected!r}"
    elif isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: {actual!r} is not an object"
        assert set(actual) == set(expected), f"{path}: keys {sorted(actual)} != {sorted(expected)}"
        for k in expected:
            assert_json_close(actual[k], expected[k], f"{path}.{k}", rel)
    elif isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)), f"{path}: {actual!r} is not a list"
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_json_close(a, e, f"{path}[{i}]", rel)
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"
