#!/usr/bin/env python3
"""Fails on an #include that breaks the layer table of docs/architecture.md.

Each directory under src/reel/ is an area; the layers table lists the areas each may include
(public reel/*.h headers belong to the area the headers table names). tools/ and python/src/
may include public headers only. Tests (*_test.cc) and fuzz harnesses are not checked.

Usage: tools/check_layers.py [repo root]   (exit 0 clean, 1 violations, 2 bad tables)
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def table_rows(doc, name):
    m = re.search(rf"<!-- {name}:begin -->(.*?)<!-- {name}:end -->", doc, re.S)
    if not m:
        sys.exit(f"check_layers: docs/architecture.md has no {name}:begin/end table")
    rows = []
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or set(cells[0]) <= set("-") or cells[0] in ("layer", "header"):
            continue
        rows.append(cells)
    return rows


def load_rules(root):
    doc = (root / "docs/architecture.md").read_text()
    allowed = {}
    for layer, area, may, *_ in table_rows(doc, "layers"):
        allowed[area] = set(may.split())
    header_area = {}
    for headers, area in table_rows(doc, "headers"):
        for h in headers.split():
            header_area[h] = area
    for area, may in allowed.items():
        unknown = may - allowed.keys()
        if unknown:
            sys.exit(f"check_layers: area {area} may include unknown area(s) {sorted(unknown)}")
    return allowed, header_area


def target_area(inc, header_area):
    """The area of an included header, or None for a header outside the library."""
    if inc.startswith("reel/"):
        return header_area.get(inc[len("reel/"):], "?public")
    head = inc.split("/")[0]
    return head if "/" in inc else None


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    allowed, header_area = load_rules(root)
    problems = []
    src = root / "src/reel"
    for area_dir in sorted(p for p in src.iterdir() if p.is_dir()):
        if area_dir.name not in allowed and area_dir.name != "testing":
            problems.append(f"src/reel/{area_dir.name}/: an area missing from docs/architecture.md's layers table")
    files = [(p, p.relative_to(src).parts[0]) for p in src.rglob("*") if p.suffix in (".h", ".cc", ".inc")]
    for h in (root / "include/reel").glob("*.h"):
        if h.name not in header_area:
            problems.append(f"include/reel/{h.name}: a public header missing from the headers table")
            continue
        files.append((h, header_area[h.name]))
    for path, area in sorted(files):
        if path.name.endswith("_test.cc") or area == "testing":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = target_area(m.group(1), header_area)
            if target is None or target == area:
                continue
            if target not in allowed.get(area, set()):
                problems.append(f"{path.relative_to(root)}:{n}: {area} may not include {m.group(1)} (area {target})")
    for edge in ("tools", "python/src"):
        for path in sorted((root / edge).rglob("*")):
            if path.suffix not in (".h", ".cc"):
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                m = INCLUDE.match(line)
                if m and "/" in m.group(1) and not m.group(1).startswith("reel/"):
                    problems.append(f"{path.relative_to(root)}:{n}: {edge}/ includes the private header {m.group(1)}; "
                                    "only public reel/*.h headers")
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} include(s) break docs/architecture.md's layers", file=sys.stderr)
        return 1
    print(f"check_layers: {len(files)} files, every include follows docs/architecture.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
