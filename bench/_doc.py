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
