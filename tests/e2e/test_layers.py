"""tools/check_layers.py: the repository follows docs/architecture.md, and a breaking include fails."""
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "check_layers.py"


def run(root):
    return subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, timeout=60)


def test_repository_follows_the_layers():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def make_tree(tmp_path):
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "architecture.md", tmp_path / "docs" / "architecture.md")
    for d in ("src/reel/util", "src/reel/read", "src/reel/write", "include/reel", "tools", "python/src"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "include/reel/task.h").write_text('#include "reel/status.h"\n')
    (tmp_path / "src/reel/write/w.cc").write_text('#include "read/r.h"\n#include "reel/task.h"\n')
    (tmp_path / "src/reel/read/r.h").write_text('#include "util/u.h"\n')
    return tmp_path


def test_a_clean_tree_passes(tmp_path):
    r = run(make_tree(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr


def test_an_upward_include_fails_naming_file_line_and_edge(tmp_path):
    root = make_tree(tmp_path)
    (root / "src/reel/read/r.h").write_text('#include "util/u.h"\n#include "write/transaction.h"\n')
    r = run(root)
    assert r.returncode == 1
    assert "src/reel/read/r.h:2: read may not include write/transaction.h (area write)" in r.stdout


def test_a_public_header_reaching_up_fails(tmp_path):
    root = make_tree(tmp_path)
    (root / "include/reel/task.h").write_text('#include "reel/recorder.h"\n')
    r = run(root)
    assert r.returncode == 1
    assert "include/reel/task.h:1: read may not include reel/recorder.h (area write)" in r.stdout


def test_the_edges_use_public_headers_only(tmp_path):
    root = make_tree(tmp_path)
    (root / "tools/main.cc").write_text('#include "reel/task.h"\n#include "write/transaction.h"\n')
    r = run(root)
    assert r.returncode == 1
    assert "tools/main.cc:2: tools/ includes the private header write/transaction.h" in r.stdout


def test_an_area_or_header_missing_from_the_tables_fails(tmp_path):
    root = make_tree(tmp_path)
    (root / "src/reel/newarea").mkdir()
    (root / "include/reel/new.h").write_text("\n")
    r = run(root)
    assert r.returncode == 1
    assert "src/reel/newarea/: an area missing" in r.stdout
    assert "include/reel/new.h: a public header missing" in r.stdout


LENGTH = ROOT / "tools" / "check_function_length.py"


def test_no_function_is_longer_than_the_limit():
    r = subprocess.run([sys.executable, str(LENGTH), str(ROOT)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_long_function_fails_and_a_data_table_does_not(tmp_path):
    (tmp_path / "src/reel/x").mkdir(parents=True)
    body = "".join(f"  f({i});\n" for i in range(130))
    (tmp_path / "src/reel/x/a.cc").write_text(
        "namespace reel {\n\nStatus Long(int a,\n            int b) {\n" + body + "}\n\n"
        "const std::vector<int> kTable = {\n" + "".join(f"    {i},\n" for i in range(200)) + "};\n\n"
        "void Short() {\n  g();\n}\n\n}  // namespace reel\n")
    (tmp_path / "src/reel/x/a_test.cc").write_text("TEST(A, B) {\n" + body + "}\n")
    r = subprocess.run([sys.executable, str(LENGTH), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stdout.splitlines() == ["src/reel/x/a.cc:3: 133 lines (limit 120): Status Long(int a,"]
