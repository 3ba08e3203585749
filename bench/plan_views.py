"""Zero-copy Concat and Slice (docs/memory-planning.md "Views"): what they save on every shared model and every
tests/families model (float32 and ORT-quantized int8) that has an op able to run as a view.

Per model, with views off (``tigris.plan.VIEWS = False``: every Concat and Slice copies into a buffer of its own,
the earlier plans) and on (the default), with the analyze command's weight and scratch figures and ``--xip``: the
ops that run as views and the bytes of copies they no longer make (each view op's output bytes, once per
inference), the untiled plan's fast arena (the single-unit plan, what a board without slow memory needs when nothing
is tiled) and the smallest fitting fast budget (the planner's ``min_fast_budget``). Every plan at a figure after is
proven by the checker. Models where no op can run as a view (lifetime rule 7) are counted, not listed. Writes the
table into docs/benchmarks.md between ``<!-- plan_views:begin -->`` and ``<!-- plan_views:end -->``.

    python3 bench/plan_views.py [--models DIR] [--no-write] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _doc import markdown_table, write_section  # noqa: E402
from plan_quality import REPO, _cols_models  # noqa: E402

import tigris.plan as planner  # noqa: E402
from _rule_plans import rule_plans  # noqa: E402
from tigris.ir import TigrisError  # noqa: E402
from tigris.plan import lifetime  # noqa: E402


def figures(path: Path, views: bool) -> tuple[int | None, int | None, int, int, int]:
    """(untiled arena, smallest fitting fast budget, view ops in the untiled plan, bytes of copies they remove,
    view ops the least plan runs)."""
    r = rule_plans(path, planner, "VIEWS", views)
    nleast = len(r.at_least.view_ops) if r.at_least is not None else 0
    vops = r.whole.view_ops if r.whole is not None else []
    saved = sum(r.prep.graph.tensors[r.prep.graph.ops[i].outputs[0]].nbytes for i in vops)
    return r.untiled_arena, r.least, len(vops), saved, nleast


def candidates(path: Path) -> int:
    from tigris import api

    return len(lifetime.buffers(api.prepare(path).graph, views=True).view_ops)


def table(models: Path, only: list[str] | None) -> str:
    rows: list[list[object]] = []
    lower_untiled = lower_least = none = 0
    with tempfile.TemporaryDirectory() as d:
        for name, path in _cols_models(models, Path(d)):
            if only and not any(o in name for o in only):
                continue
            t0 = time.perf_counter()
            try:
                if not candidates(path):
                    none += 1
                    continue
                ub, lb, _, _, _ = figures(path, False)
                ua, la, n, saved, nl = figures(path, True)
            except (TigrisError, ImportError, NotImplementedError, KeyError, ValueError) as err:
                rows.append([name, f"not planned: {type(err).__name__}", "", "", "", "", "", "", "", ""])
                continue
            lower_untiled += ua is not None and ub is not None and ua < ub
            lower_least += la is not None and lb is not None and la < lb
            ratio = f"{ua / ub:.3f}" if ua and ub else ""
            lratio = f"{la / lb:.3f}" if la and lb else ""
            rows.append([name, n, saved, ub or "no fit", ua or "no fit", ratio, lb or "no fit", la or "no fit",
                         lratio, nl, f"{time.perf_counter() - t0:.1f}"])
            print(rows[-1], flush=True)
    head = ["model", "view ops (untiled)", "copy bytes removed", "untiled arena before (B)", "after (B)",
            "after/before", "smallest fast budget before (B)", "after (B)", "after/before", "view ops at it", "s"]
    return (
        "Zero-copy Concat and Slice (`python3 bench/plan_views.py`, `--xip`, analyze's weight and scratch figures; "
        "before: `tigris.plan.VIEWS = False`, every Concat and Slice copies). A view op's producers write straight "
        "into their run of the joined buffer (Concat), or its readers read their run in place (Slice); copy bytes "
        "removed are the view ops' output bytes in the untiled plan, per inference. The untiled arena is the "
        "single-unit plan's fast peak; the smallest fast budget is `min_fast_budget`'s; every plan after is "
        f"proven by the checker. {len(rows)} models have an op that can run as a view ({none} others have none); "
        f"views lower the untiled arena of {lower_untiled} and the smallest fast budget of {lower_least}.\n\n"
        + markdown_table(head, rows) + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=REPO.parent / "shared" / "models")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args(argv)
    body = table(a.models, a.only)
    print(body)
    if not a.no_write:
        write_section("plan_views", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
