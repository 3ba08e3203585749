"""Write a benchmark's table into its marked section of docs/benchmarks.md, leaving the rest of the file alone."""
from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def write_section(key: str, body: str, doc: Path = DOC) -> None:
    begin, end = f"<!-- {key}:begin -->", f"<!-- {key}:end -->"
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    pat = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    text = pat.sub(lambda _m: block, text) if pat.search(text) else text.rstrip() + "\n\n" + block + "\n"
    doc.write_text(text)


def markdown_table(headers: list[str], rows: list[list[object]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def section_rows(key: str, ncols: int, doc: Path = DOC) -> list[list[str]]:
    """The data rows (cells as text) of the table now in section ``key``: the rows a partial re-run keeps."""
    text = doc.read_text() if doc.exists() else ""
    m = re.search(re.escape(f"<!-- {key}:begin -->") + r"(.*?)" + re.escape(f"<!-- {key}:end -->"), text, re.S)
    rows = []
    for line in (m.group(1).splitlines() if m else []):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == ncols and not set(cells[0]) <= {"-"} and cells[0] != "model":
            rows.append(cells)
    return rows


def merge_rows(key: str, fresh: list[list[object]], ncols: int, doc: Path = DOC) -> list[list[object]]:
    """The table of section ``key`` with each row of ``fresh`` in place of the listed row of the same model (first
    cell), in the listed order; a model not listed yet goes last. ``--only`` re-runs use it so that re-measuring a few
    models leaves the other rows as they were measured."""
    new = {str(r[0]): r for r in fresh}
    out: list[list[object]] = []
    for cells in section_rows(key, ncols, doc):
        out.append(new.pop(cells[0], cells))
    return out + [r for r in fresh if str(r[0]) in new]


def as_int(cell: object) -> int | None:
    """A table cell as a byte count, or None for a cell that is not one (`-`, `no fit`, text)."""
    try:
        return int(str(cell))
    except ValueError:
        return None
