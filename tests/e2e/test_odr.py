"""tools/check_odr.py: one definition per type name in each program (C++'s one-definition rule)."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "check_odr.py"


def run(root):
    return subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, timeout=60)


def make_tree(tmp_path, files):
    for d in ("include/reel", "src/reel/util", "tools/reel", "python/src", "fuzz", "bench"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_the_repository_defines_each_type_once():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_two_public_structs_of_one_name_fail_naming_both_places(tmp_path):
    # The bug of issue 26: reel::ImportOptions in serve.h and in interop.h.
    root = make_tree(tmp_path, {
        "include/reel/serve.h": "#pragma once\nnamespace reel {\n\nstruct ImportOptions {\n  int fs;\n};\n}\n",
        "include/reel/interop.h": "namespace reel {\n// struct ImportOptions { in a comment }\nstruct ImportOptions {\n"
                                  "  bool renumber = false;\n};\n}  // namespace reel\n",
    })
    r = run(root)
    assert r.returncode == 1, r.stdout
    assert ("reel::ImportOptions is defined 2 times: include/reel/interop.h:3, include/reel/serve.h:4"
            in r.stdout), r.stdout


def test_a_library_type_again_in_one_program_fails_but_not_in_two_programs(tmp_path):
    root = make_tree(tmp_path, {
        "src/reel/util/a.cc": "namespace reel::internal {\nclass Buffer final : public Base {\n};\n}\n",
        "tools/reel/cmd.cc": "namespace reel {\nnamespace internal {\nstruct Buffer { int x; };\n}\n}\n",
        "fuzz/fuzz_a.cc": "namespace h {\nstruct Input {};\n}\n",
        "fuzz/fuzz_b.cc": "namespace h {\nstruct Input { int other; };\n}\n",
    })
    r = run(root)
    assert r.returncode == 1, r.stdout
    assert "reel::internal::Buffer is defined 2 times: src/reel/util/a.cc:2, tools/reel/cmd.cc:3" in r.stdout
    assert "reel CLI" in r.stdout
    assert "h::Input" not in r.stdout  # two fuzz harnesses are two programs


def test_types_without_linkage_and_declarations_pass(tmp_path):
    root = make_tree(tmp_path, {
        "include/reel/a.h": "namespace reel {\nstruct Impl;\nclass Task {\n  struct Impl;\n};\n"
                            "enum class Mode : int { kA, kB };\n}\n",
        "src/reel/util/a.cc": 'namespace reel {\nnamespace {\nstruct Row { int n; };\n}\n'
                              'struct Task::Impl { int x; };\nvoid F() {\n  struct Row { char c; };\n'
                              '  const char* s = "struct Row {";\n}\n}\n',
        "src/reel/util/b.cc": "namespace reel {\nnamespace {\nstruct Row { double d; };\n}  // namespace\n}\n",
    })
    r = run(root)
    assert r.returncode == 0, r.stdout + r.stderr
