"""Depthwise convs in place (docs/memory-planning.md "Window ops in place"): what they save on every shared model and
every tests/families model (float32 and ORT-quantized int8).

Per model, with the piecewise rule off (``tigris.plan.lifetime.PIECEWISE = False``: every window op with its own
output buffer, the earlier plans) and on (the default), with the analyze command's weight and scratch figures and
``--xip``: the untiled plan's fast arena (the single-unit plan, what a board without slow memory needs when nothing
is tiled: ``-s 0``) and the smallest fitting fast budget (the planner's ``min_fast_budget``, default options). Every
plan at a figure after is proven by the checker; the count of depthwise convs the untiled plan runs in place is
listed. Writes the table into docs/benchmarks.md between ``<!-- plan_in_place:begin -->`` and
``<!-- plan_in_place:end -->``.

    python3 bench/plan_in_place.py [--models DIR] [--no-write] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _doc import as_int, markdown_table, merge_rows, write_section  # noqa: E402
from plan_quality import REPO, _cols_models  # noqa: E402

from _rule_plans import rule_plans  # noqa: E402
from tigris.ir import TigrisError  # noqa: E402
from tigris.plan import lifetime  # noqa: E402


def figures(path: Path, piecewise: bool) -> tuple[int | None, int | None, int]:
    """(untiled arena, smallest fitting fast budget, depthwise convs in place in the untiled plan)."""
    r = rule_plans(path, lifetime, "PIECEWISE", piecewise)
    n = sum(len(u.in_place_rows) for u in r.whole.units) if r.whole is not None else 0
    return r.untiled_arena, r.least, n


def _lower(after: object, before: object) -> bool:
    a, b = as_int(after), as_int(before)
    return a is not None and b is not None and a < b


def table(models: Path, only: list[str] | None) -> str:
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as d:
        for name, path in _cols_models(models, Path(d)):
            if only and not any(o in name for o in only):
                continue
            t0 = time.perf_counter()
            try:
                ub, lb, _ = figures(path, False)
                ua, la, n = figures(path, True)
            except (TigrisError, ImportError, NotImplementedError, KeyError, ValueError) as err:
                rows.append([name, f"not planned: {type(err).__name__}", "", "", "", "", "", ""])
                continue
            ratio = f"{ua / ub:.3f}" if ua and ub else ""
            rows.append([name, ub or "no fit", ua or "no fit", ratio, n, lb or "no fit", la or "no fit",
                         f"{time.perf_counter() - t0:.1f}"])
            print(rows[-1], flush=True)
    if only:  # re-measured rows replace theirs; the other models keep the rows they were measured with
        rows = merge_rows("plan_in_place", rows, 8)
    lower_untiled = sum(1 for r in rows if _lower(r[2], r[1]))
    lower_least = sum(1 for r in rows if _lower(r[6], r[5]))
    head = ["model", "untiled arena before (B)", "after (B)", "after/before", "dwconv in place",
            "smallest fast budget before (B)", "after (B)", "s"]
    return (
        "Depthwise convs in place (`python3 bench/plan_in_place.py`, `--xip`, analyze's weight and scratch figures; "
        "before: `tigris.plan.lifetime.PIECEWISE = False`). The untiled arena is the single-unit plan's fast peak "
        "(what `-s 0` needs untiled); the smallest fast budget is `min_fast_budget` with the default options. "
        f"Lower untiled arena on {lower_untiled} of {len(rows)} models, lower smallest budget on {lower_least}.\n\n"
        + markdown_table(head, rows)
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=str(REPO.parent / "shared" / "models"))
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    ap.add_argument("--only", nargs="*", help="models whose name contains one of these")
    args = ap.parse_args()
    body = table(Path(args.models), args.only)
    print(body)
    if not args.no_write:
        write_section("plan_in_place", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
