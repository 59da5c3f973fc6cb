#!/usr/bin/env python3
"""Fails on a function longer than the limit (default 120 lines) in the library and its edges.

Functions "short enough to read" (docs/architecture.md, style): every function defined in
src/reel/, tools/ and python/src/ (tests and fuzz harnesses excepted) spans at most --max lines
from its signature to its closing brace. The scan is lexical, for this code base's layout: a
definition starts at column 0 (namespace bodies are not indented) and ends at the first "}" in
column 0; data tables written as initialised variables are not functions.

Usage: tools/check_function_length.py [repo root] [--max N]   (exit 0 clean, 1 too long)
"""
import pathlib
import sys

NOT_A_FUNCTION = ("//", "#", "}", "namespace", "using", "struct", "class", "enum", "template",
                  "static_assert", "extern", "constexpr", "const ", "static const", "inline constexpr")


def functions(path):
    lines = path.read_text().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line and not line[0].isspace() and "(" in line and not line.startswith(NOT_A_FUNCTION) and "=" not in line.split("(")[0]:
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith(("{", ";")):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                k = j + 1
                while k < len(lines) and lines[k] != "}":
                    k += 1
                yield i + 1, k - i + 1, line.strip()
                i = k
        i += 1


def main():
    args = [a for a in sys.argv[1:]]
    limit = 120
    if "--max" in args:
        limit = int(args[args.index("--max") + 1])
        del args[args.index("--max"):args.index("--max") + 2]
    root = pathlib.Path(args[0] if args else ".").resolve()
    long = []
    for top in ("src/reel", "tools", "python/src"):
        for path in sorted((root / top).rglob("*.cc")):
            if path.name.endswith("_test.cc"):
                continue
            for line, length, signature in functions(path):
                if length > limit:
                    long.append(f"{path.relative_to(root)}:{line}: {length} lines (limit {limit}): {signature[:90]}")
    for p in long:
        print(p)
    if long:
        print(f"check_function_length: {len(long)} function(s) longer than {limit} lines; split them", file=sys.stderr)
        return 1
    print(f"check_function_length: every function is at most {limit} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
