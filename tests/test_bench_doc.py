"""bench/_doc.py writes benchmark tables into their sections of docs/benchmarks.md. A re-run of a few models
(``--only``) must replace exactly those models' rows and keep every other row and section as it was."""
from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _doc():
    spec = importlib.util.spec_from_file_location("_doc", HERE.parent / "bench" / "_doc.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


D = _doc()

TEXT = """# Benchmarks

<!-- other:begin -->
| model | x |
|---|---|
| a | 1 |
<!-- other:end -->

<!-- t:begin -->
Some prose, 1 of 3 models.

| model | before (B) | after (B) |
|---|---|---|
| a | 10 | 10 |
| b | 20 | 15 |
| c | - | no fit |
<!-- t:end -->
"""


def test_merge_rows_replaces_only_the_re_measured_models(tmp_path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text(TEXT)
    assert D.section_rows("t", 3, doc) == [["a", "10", "10"], ["b", "20", "15"], ["c", "-", "no fit"]]
    rows = D.merge_rows("t", [["c", 30, 24], ["d", 8, 8]], 3, doc)
    assert rows == [["a", "10", "10"], ["b", "20", "15"], ["c", 30, 24], ["d", 8, 8]]
    lower = sum(1 for r in rows if (a := D.as_int(r[2])) is not None and (b := D.as_int(r[1])) is not None and a < b)
    assert lower == 2
    D.write_section("t", "Prose.\n\n" + D.markdown_table(["model", "before (B)", "after (B)"], rows), doc)
    text = doc.read_text()
    assert "| a | 1 |" in text  # the other section is untouched
    assert D.section_rows("t", 3, doc)[2:] == [["c", "30", "24"], ["d", "8", "8"]]
    assert D.section_rows("missing", 3, doc) == []


def test_as_int_reads_byte_counts_only():
    assert D.as_int("1920") == 1920 and D.as_int(7) == 7
    assert D.as_int("-") is None and D.as_int("no fit") is None and D.as_int("fits (12 B)") is None
