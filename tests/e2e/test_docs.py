"""docs/check-rules.md is generated from the rule catalog; it must not drift from the binary."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_check_rules_doc_matches_catalog(run_reel):
    rc, out, err = run_reel("check", "--list-rules", "--markdown")
    assert rc == 0, err
    doc = (ROOT / "docs" / "check-rules.md").read_text(encoding="utf-8")
    table = doc[doc.index("| rule |"):]
    assert table.strip() == out.strip(), "docs/check-rules.md is stale: run `make docs`"


def test_rule_ids_are_unique_and_documented(run_reel):
    rc, out, _ = run_reel("check", "--list-rules")
    ids = [line.split("\t")[0] for line in out.splitlines() if line]
    assert len(ids) == len(set(ids))
    for rule in ("format.unknown", "data.column_type", "stats.count", "tasks.jsonl", "video.extension"):
        assert rule in ids
