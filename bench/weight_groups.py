"""Weight groups: which shared models and budgets compile with copied or LZ4 weights only because ops whose weights
do not fit run as output-channel groups (tigris/passes/weight_split.py, docs/memory-planning.md), and what it costs.

For every shared model (ONNX and TFLite) at 256K, 128K, 64K and 32K without --xip (copied and LZ4 weights need the
same prefix, so one column answers both): whether the planner fits the model as it is (`before`), and whether
``analyze`` fits it with weight groups (`after`). For a plan that needed groups: the split ops and their group
counts, the fast peak, the weight bytes the units stage per inference against the unsplit model's (the extra is the
zero-filled panel tails and 16-byte alignment of every group's constants), the bytes the joining Concats copy, the
slow traffic of the plan, and whether ``tigris verify`` passes on it. Every plan counted is the one ``tigris
compile`` writes (proven by the checker, read back by the reader). Writes the table into docs/benchmarks.md between
``<!-- weight_groups:begin -->`` and ``<!-- weight_groups:end -->``.

    python3 bench/weight_groups.py [--no-write]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _doc import markdown_table, write_section  # noqa: E402

from tigris import api  # noqa: E402
from tigris.plan import NoFit  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "models"
BUDGETS = ["256K", "128K", "64K", "32K"]


def _weights(prep: api.Prepared) -> int:
    return sum(api._const_bytes(low) for low in prep.lowered)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    rows = []
    refused_before = fixed = 0
    for path in sorted([*SHARED.glob("*/*.onnx"), *SHARED.glob("*/*.tflite")]):
        rel = path.relative_to(SHARED).as_posix()
        prep = api.prepare(path)
        for b in BUDGETS:
            fast = api.parse_size(b)
            before = api._plan(prep, fast, None, False)
            if not isinstance(before, NoFit):
                continue  # fits as it is: no groups, the plan is unchanged
            refused_before += 1
            a = api.analyze(path, b, compression="lz4", prepared=prep, tradeoff=False)
            if not a.fits:
                rows.append([rel, b, f"refused ({before.need_bytes} B)", "refused", "-", "-", "-", "-", "-", "-"])
                continue
            fixed += 1
            split = a.prepared
            concat = sum(split.graph.tensors[op.outputs[0]].nbytes for op in split.graph.ops
                         if op.op_type == "Concat" and "weight_group" in op.attrs)
            wg = a.json["weight_groups"]
            counts = sorted(g["groups"] for g in wg)
            groups = f"{len(wg)} op{'s' if len(wg) > 1 else ''}, " + (
                f"{counts[0]} groups" if counts[0] == counts[-1] else f"{counts[0]}-{counts[-1]} groups")
            w0, w1 = _weights(prep), _weights(split)
            v = api.verify(path, b, compression="lz4")
            rows.append([rel, b, f"refused ({before.need_bytes} B)", f"fits ({a.plan.fast_peak} B)", groups,
                         w1, f"+{w1 - w0} ({100 * (w1 - w0) / w0:.2f}%)", concat,
                         a.plan.spill_bytes + a.plan.reload_bytes, "pass" if v["pass"] else "FAIL"])
        print(rel, flush=True)
    body = (
        "Without `--xip` (copied or `-c lz4` weights need the same prefix). Only model x budget combinations the "
        "planner refuses as the model is are listed (every other plan is unchanged). `before`: the planner alone "
        "(the fast bytes the refusing op needs); `after`: `tigris compile` with weight groups (its fast peak). "
        "`weights staged`: bytes the units copy or decode per inference (the extra over the unsplit model is panel "
        "padding and alignment); `concat copy`: bytes the joining Concats write; `slow traffic`: spill + reload of "
        "the plan; `verify`: `tigris verify -c lz4` at that budget (the C runtime against ONNX Runtime and the NumPy "
        f"reference). {fixed} of {refused_before} refused combinations now compile.\n\n"
        + markdown_table(["model", "budget", "before", "after", "split ops", "weights staged (B)",
                          "extra staged (B)", "concat copy (B)", "slow traffic (B)", "verify"], rows)
    )
    print(body)
    if not args.no_write:
        write_section("weight_groups", body)


if __name__ == "__main__":
    main()
