"""Plan size with and without LZ4 weight compression, and the fast RAM that weights take with and without XIP.

Issue 5: `-c lz4` must make every shared float model's plan smaller, and `--xip` plans need no RAM for weights.
Each model is compiled at a budget large enough to hold it in one stage (16M), so the figures compare formats, not
partitionings.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _doc import markdown_table, write_section  # noqa: E402

from tigris import api  # noqa: E402
from tigris.emit import read_plan  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "models"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--budget", default="16M")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    rows = []
    for path in sorted(SHARED.glob("*/*.onnx")):
        rel = path.relative_to(SHARED).as_posix()
        prep = api.prepare(path)
        sizes = {}
        weight_ram = {}
        shuffled = ""
        for xip, comp in ((True, "none"), (False, "none"), (False, "lz4")):
            c = api.compile_model(path, args.budget, xip=xip, compression=comp, prepared=prep)
            sizes[(xip, comp)] = len(c.plan_bytes)
            if comp == "lz4":
                units = [u for u in read_plan(c.plan_bytes).units if u.wraw_size]
                shuffled = f"{sum(u.shuffled for u in units)}/{len(units)}"
            weight_ram[(xip, comp)] = max((u.weight_bytes for u in c.analysis.plan.units), default=0)
        raw, lz = sizes[(False, "none")], sizes[(False, "lz4")]
        rows.append([
            rel, sizes[(True, "none")], raw, lz, f"{raw / lz:.2f}x",
            weight_ram[(True, "none")], weight_ram[(False, "none")], weight_ram[(False, "lz4")], shuffled,
        ])
        print(rows[-1], flush=True)
    table = markdown_table(
        ["model", "plan --xip (B)", "plan copy (B)", "plan -c lz4 (B)", "lz4 ratio",
         "weight RAM --xip (B)", "weight RAM copy (B)", "weight RAM lz4 (B)", "lz4 units shuffled"], rows)
    body = (f"Compiled at -m {args.budget}. Weight RAM is the reserved fast-arena prefix of the largest unit: the "
            "weights a unit reads are copied (or LZ4-decompressed) there before it runs; with --xip kernels read "
            "them from flash and the prefix is empty. `lz4 units shuffled`: units whose LZ4 block the writer stored over "
            "the byte-plane shuffled weights because that block was smaller (docs/format.md, unit flag SHUFFLE); "
            "float weights take it, int8 weights only where it helps.\n\n" + table)
    print(table)
    if not args.no_write:
        write_section("plan_size", body)


if __name__ == "__main__":
    main()
