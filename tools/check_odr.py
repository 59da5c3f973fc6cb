#!/usr/bin/env python3
"""Fails on two definitions of one class, struct, union or enum in one program.

C++'s one-definition rule: a type with external linkage (any type at namespace scope outside
an anonymous namespace, and the types nested in it) may be defined once per program, or in
identical copies. Two different `reel::ImportOptions` in two headers linked into one binary
compile and link without a word, and then the linker keeps one copy constructor for both
(a segfault at -O0, a latent one at -O2). The compiler only sees this with -flto -Wodr,
a whole extra build; this scan reads the sources instead, in about a second.

What is scanned, per program (docs/architecture.md, "One definition per name"): the library
(include/reel/, src/reel/ without its tests) together with each program's own sources: the
CLI (tools/reel/), the unit tests (src/reel/**/*_test.cc, src/reel/testing/), the Python
extension (python/src/), and each fuzz harness and benchmark on its own. Types in anonymous
namespaces and in function bodies have no linkage and are skipped; forward declarations are
not definitions.

Usage: tools/check_odr.py [repo root]   (exit 0 clean, 1 duplicate definitions)
"""
import collections
import pathlib
import re
import sys

TYPE_DEF = re.compile(
    r"^(?:template\s*<.*>\s*)?(?:struct|class|union|enum(?:\s+(?:class|struct))?)\s+"
    r"(?:\[\[[^\]]*\]\]\s*)?(?:alignas\s*\([^)]*\)\s*)?((?:\w+\s*::\s*)*\w+)\s*(?:final\s*)?(?::(?!:)[^{]*)?$",
    re.S,
)
NAMESPACE = re.compile(r"^(?:inline\s+)?namespace\s*([\w:]*)\s*(?:\[\[[^\]]*\]\]\s*)?$")
EXTERN_C = re.compile(r'^extern\s*""\s*$')


def strip_code(text):
    """Comments, string and character literals and preprocessor lines made blank (line
    numbers are kept)."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
            continue
        m = re.match(r'R"([^(\s]*)\(', text[i:i + 20]) if c == "R" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) else None
        if m:
            close = ")" + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append('""' if c == '"' else "0")
            i = j + 1
            continue
        if c == "\n":
            at_line_start = True
        elif not c.isspace():
            at_line_start = False
        out.append(c)
        i += 1
    return "".join(out)


def type_definitions(path):
    """(qualified name, line) of each type defined with linkage in the file."""
    text = strip_code(path.read_text(errors="replace"))
    found = []
    # scope stack: ("ns", name) | ("anon",) | ("type", name) | ("other",) | ("extern",)
    stack = []
    pending_start = 0
    line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        if c not in "{};":
            continue
        pending = " ".join(text[pending_start:i].split())
        pending_start = i + 1
        if c == ";":
            continue
        if c == "}":
            if stack:
                stack.pop()
            continue
        hidden = any(s[0] in ("anon", "other") for s in stack)
        m_ns = NAMESPACE.match(pending)
        m_type = TYPE_DEF.match(pending) if "=" not in pending and "(" not in pending.split(":")[0] else None
        if m_ns:
            stack.append(("ns", m_ns.group(1)) if m_ns.group(1) else ("anon",))
        elif EXTERN_C.match(pending):
            stack.append(("extern",))
        elif m_type:
            name = re.sub(r"\s+", "", m_type.group(1))
            qualified = "::".join([s[1] for s in stack if s[0] in ("ns", "type")] + [name])
            stack.append(("type", name))
            if not hidden:
                found.append((qualified, line))
        else:
            stack.append(("other",))
    return found


def programs(root):
    lib = [p for p in sorted((root / "include/reel").glob("*.h"))]
    lib += [p for p in sorted((root / "src/reel").rglob("*")) if p.suffix in (".h", ".cc")
            and not p.name.endswith("_test.cc") and "testing" not in p.relative_to(root / "src/reel").parts]
    tests = [p for p in sorted((root / "src/reel").rglob("*")) if p.name.endswith("_test.cc")
             or (p.suffix in (".h", ".cc") and "testing" in p.relative_to(root / "src/reel").parts)]
    progs = {
        "reel CLI": sorted(p for p in (root / "tools/reel").rglob("*") if p.suffix in (".h", ".cc")),
        "unit tests": tests,
        "python extension": sorted(p for p in (root / "python/src").rglob("*") if p.suffix in (".h", ".cc")),
    }
    for d in ("fuzz", "bench"):
        shared = sorted(p for p in (root / d).glob("*.h")) + sorted((root / d).glob("*util*.cc"))
        for p in sorted((root / d).glob("*.cc")):
            if p not in shared:
                progs[f"{d}/{p.name}"] = shared + [p]
    return lib, progs


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    lib, progs = programs(root)
    cache = {}

    def defs(p):
        if p not in cache:
            cache[p] = type_definitions(p)
        return cache[p]

    problems = collections.defaultdict(list)  # message -> programs
    for prog, files in progs.items():
        where = collections.defaultdict(list)
        for p in lib + files:
            for name, line in defs(p):
                where[name].append(f"{p.relative_to(root)}:{line}")
        for name, places in sorted(where.items()):
            files_of = {pl.rsplit(":", 1)[0] for pl in places}
            if len(files_of) > 1:
                problems[f"{name} is defined {len(places)} times: {', '.join(places)}"].append(prog)
    for p, in_progs in sorted(problems.items()):
        shown = ", ".join(in_progs[:3]) + (f" and {len(in_progs) - 3} more" if len(in_progs) > 3 else "")
        print(f"check_odr: {p} (linked together in {shown})")
    if problems:
        print("check_odr: one definition per name (C++ ODR); rename one of them (docs/architecture.md)")
        return 1
    print(f"check_odr: {sum(len(v) for v in cache.values())} type definitions in {len(cache)} files, one each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
