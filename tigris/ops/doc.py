"""The operator table of ``docs/operators.md``, written from the kind registry.

Usage: ``python -m tigris.ops.doc docs/operators.md`` rewrites the part of the file between the ``ops:begin`` and
``ops:end`` markers (appending it when the markers are missing) and leaves everything else, the conformance section
included, as it is; ``--check`` writes nothing and exits 1 when that part is stale.

Every fact comes from the code that implements it, so the table cannot drift from the compiler:

* the kernels table has one row per (ONNX operator, kind) pair from each registered kind's ``ONNX_OPS``, with the
  kind's ``DTYPES``, ``INT8_EXACTNESS`` and tiling class (``TILING_DOC``, else ``TILING``); the kernel file is the C
  source under ``runtime_c/src/kernels`` that defines the kind's ``tgrs_check_<kind>``;
* the rewrites table lists the ONNX operators that a load step or a pass turns into other operators before lowering,
  from the ``ONNX_REWRITES`` dict of the module doing it (any module of ``tigris.load`` or ``tigris.passes``).

A kind whose ``ir_ops`` names an ONNX operator that its ``ONNX_OPS`` does not describe is an error, so a new kind
cannot be left out of the table.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
from pathlib import Path

BEGIN = "<!-- ops:begin (written by python -m tigris.ops.doc docs/operators.md) -->"
END = "<!-- ops:end -->"

_KERNELS = Path(__file__).resolve().parent.parent / "_runtime_c" / "src" / "kernels"


class TableError(Exception):
    """A kind or rewrite declaration the table cannot be written from."""


def _is_onnx_op(name: str) -> bool:
    import onnx.defs

    return onnx.defs.has(name)


def _per_op(value, op: str):
    return value.get(op, "") if isinstance(value, dict) else value


def kernel_file(kind_name: str) -> str:
    """The C file (relative to the repository) that defines ``tgrs_check_<kind_name>``."""
    pat = re.compile(rf"^int\s+tgrs_check_{re.escape(kind_name)}\s*\(", re.M)
    hits = sorted(p.name for p in _KERNELS.glob("*.c") if pat.search(p.read_text()))
    if len(hits) != 1:
        raise TableError(f"kind {kind_name}: tgrs_check_{kind_name} is defined in {len(hits)} files under "
                         f"runtime_c/src/kernels ({', '.join(hits) or 'none'})")
    return f"runtime_c/src/kernels/{hits[0]}"


def kernel_rows() -> list[tuple[str, ...]]:
    """(ONNX operator, kind, dtypes, attributes, tiling, int8 exactness, kernel file), sorted by operator then kind
    registry order."""
    from tigris.ops import KINDS, kind

    rows = []
    for order, (kname, _, _) in enumerate(KINDS):
        k = kind(kname)
        missing = [t for t in k.ir_ops if _is_onnx_op(t) and t not in k.ONNX_OPS]
        if missing:
            raise TableError(f"kind {kname} lowers {', '.join(missing)} but its ONNX_OPS does not describe "
                             f"{'it' if len(missing) == 1 else 'them'} (tigris/ops/base.py, the operator table)")
        unknown = [t for t in k.ONNX_OPS if not _is_onnx_op(t)]
        if unknown:
            raise TableError(f"kind {kname}: ONNX_OPS names {', '.join(unknown)}, not ONNX operators")
        kfile = kernel_file(kname)
        tiling = k.TILING_DOC or k.TILING
        for op, attrs in k.ONNX_OPS.items():
            dtypes = _per_op(k.DTYPES, op) or ("float32", "int8")
            exact = _per_op(k.INT8_EXACTNESS, op) if any("int8" in d for d in dtypes) else ""
            rows.append((op, order, kname, ", ".join(dtypes), attrs or "as ONNX defines it", tiling,
                         exact or "-", f"`{kfile}`"))
    rows.sort(key=lambda r: (r[0], r[1]))
    return [(r[0], r[2], *r[3:]) for r in rows]


def rewrite_rows() -> list[tuple[str, str, str]]:
    """(ONNX operator, what it becomes, the module that rewrites it), sorted by operator then module."""
    import tigris.load
    import tigris.passes

    rows = []
    for pkg in (tigris.load, tigris.passes):
        for info in pkgutil.iter_modules(pkg.__path__):
            mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
            table = getattr(mod, "ONNX_REWRITES", None)
            if not table:
                continue
            where = f"`{mod.__name__.replace('.', '/')}.py`"
            for op, becomes in table.items():
                rows.append((op, becomes, where))
    rows.sort()
    return rows


def _cell(s: str) -> str:
    return s.replace("|", "/")


def section() -> str:
    lines = [
        BEGIN,
        "### Kernels",
        "",
        "One row per ONNX operator and the kind that runs it. *int8 vs ONNX Runtime* is how the int8 result compares "
        "with ONNX Runtime evaluating the QDQ model as written (the C kernel is always bit-exact against the NumPy "
        "reference).",
        "",
        "| ONNX operator | kind | dtypes | attributes and forms covered | tiling | int8 vs ONNX Runtime | kernel |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in kernel_rows()]
    lines += [
        "",
        "### Rewritten before lowering",
        "",
        "ONNX operators that a load step or a pass turns into the operators above (or removes).",
        "",
        "| ONNX operator | becomes | rewritten by |",
        "|---|---|---|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rewrite_rows()]
    lines.append(END)
    return "\n".join(lines)


def render(text: str) -> str:
    """``text`` (the current docs/operators.md) with its operator table replaced by the current one."""
    new = section()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + new + rest.split(END, 1)[1]
    return text.rstrip("\n") + "\n\n" + new + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tigris.ops.doc", description=__doc__.split("\n\n")[0])
    ap.add_argument("path", type=Path, help="the Markdown file holding the table (docs/operators.md)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when the table is stale")
    args = ap.parse_args(argv)
    try:
        text = args.path.read_text() if args.path.exists() else ""
        new = render(text)
    except (OSError, TableError) as e:
        print(f"error: {args.path}: {e}", file=sys.stderr)
        return 2
    if args.check:
        if new != text:
            print(f"{args.path}: the operator table is stale (run python -m tigris.ops.doc {args.path})",
                  file=sys.stderr)
            return 1
        return 0
    if new != text:
        tmp = args.path.with_name(args.path.name + ".tmp")
        tmp.write_text(new)
        tmp.replace(args.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
