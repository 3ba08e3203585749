"""What `tigris analyze` costs when the model does not fit, against a run where it does.

A run that does not fit also searches the smallest fitting fast budget (and, without ``--xip``, the one with it) and
names the op that sets it, so it plans many times; the search shares one memo of unit band layouts between its probes
and jumps to each fitting plan's own peak (tigris/plan/__init__.py ``min_fast_budget``). For every shared model and
for both ``--xip`` settings this measures the CPU seconds of ``tigris.api.analyze`` (load, passes, lowering,
planning, the report; what the command spends) at two fitting budgets — a generous one (the first of 256K, 1M,
4M that fits: usually one untiled stage) and a tight one (1.3x the smallest fitting budget: stages and tiles, as
the family tests plan) — and at half the smallest fitting budget, which does not fit (without ``--xip``, half the
budget at which output-channel weight groups compile, when the report names one, halved again while it fits). CPU seconds of this process, best of ``--runs`` interleaved
runs, so other load on the machine does not enter the ratio.

    python3 bench/analyze_cost.py [--models DIR] [--runs N] [--no-write] [--json OUT]

Writes the table into docs/benchmarks.md between ``<!-- analyze_cost:begin -->`` and ``<!-- analyze_cost:end -->``.
``bench/analyze_cost_baseline.json`` holds the same measurement of the planner before the shared memo and the
lower-bound search (run with ``--json`` on that tree); its figures are shown beside today's.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _doc import markdown_table, write_section  # noqa: E402

from tigris import api  # noqa: E402
from tigris.ir import TigrisError  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BASELINE = Path(__file__).resolve().parent / "analyze_cost_baseline.json"
FITTING = ("256K", "1M", "4M")


def _commit() -> str:
    """The commit measured (with ``+changes`` when the tree differs from it)."""
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "tigris"], cwd=REPO,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "an unknown commit"
    return head + (" +changes" if dirty else "")


def cpu_seconds(path: Path, budget: int | str, xip: bool) -> tuple[float, bool]:
    t0 = time.process_time()
    a = api.analyze(path, budget, xip=xip, emit=False)
    return time.process_time() - t0, a.fits


def measure(path: Path, xip: bool, runs: int) -> dict | None:
    fit_budget = next((b for b in FITTING if api.analyze(path, b, xip=xip, emit=False).fits), None)
    if fit_budget is None:
        return None
    probe = api.analyze(path, 64, xip=xip, emit=False)
    if not probe.min_fast_budget:
        return None
    # without --xip a budget below the minimum may still compile with output-channel weight groups (the minimum is
    # the planner's without them): halve the budget the report names for groups, and again while it fits
    low = probe.json.get("weight_groups_budget_bytes") or probe.min_fast_budget
    nofit = low // 2 // 16 * 16
    while nofit > 64 and api.analyze(path, nofit, xip=xip, emit=False).fits:
        nofit = nofit // 2 // 16 * 16
    tight = int(probe.min_fast_budget * 1.3) // 16 * 16
    best = {"fit_s": float("inf"), "tight_s": float("inf"), "nofit_s": float("inf")}
    for _ in range(runs):  # interleaved: all three see the same machine load
        for key, budget, fits in (("fit_s", fit_budget, True), ("tight_s", tight, True), ("nofit_s", nofit, False)):
            t, ok = cpu_seconds(path, budget, xip)
            assert ok == fits, (path, budget)
            best[key] = min(best[key], t)
    return {"fit_budget": fit_budget, "tight_budget": tight, "nofit_budget": nofit,
            "min_budget": probe.min_fast_budget, **best}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=str(REPO.parent / "shared" / "models"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    ap.add_argument("--json", help="also write the raw figures to this file")
    args = ap.parse_args(argv)
    logging.getLogger().setLevel(logging.ERROR)
    base = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    raw: dict[str, dict] = {}
    rows: list[list[object]] = []
    worst = worst_tight = 0.0
    for path in sorted(Path(args.models).rglob("*.onnx")):
        name = str(path.relative_to(args.models)).removesuffix(".onnx")
        for xip in (False, True):
            key = f"{name}{' --xip' if xip else ''}"
            try:
                m = measure(path, xip, args.runs)
            except TigrisError as err:
                print(f"{key}: not measured: {err}", flush=True)
                continue
            if m is None:
                continue
            raw[key] = m
            ratio, tight = m["nofit_s"] / m["fit_s"], m["nofit_s"] / m["tight_s"]
            worst, worst_tight = max(worst, ratio), max(worst_tight, tight)
            b = base.get(key)
            before = f"{b['nofit_s'] / b['fit_s']:.2f}x / {b['nofit_s'] / b['tight_s']:.2f}x" if b else "-"
            rows.append([key, m["fit_budget"], m["tight_budget"], m["nofit_budget"], f"{m['fit_s']:.2f}",
                         f"{m['tight_s']:.2f}", f"{m['nofit_s']:.2f}", f"{ratio:.2f}x / {tight:.2f}x", before])
            print(rows[-1], flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n")
    headers = ["model", "generous", "tight (1.3x min)", "not fitting (min / 2)", "generous s", "tight s",
               "not fitting s", "ratio to generous / tight", "before"]
    body = (
        f"CPU seconds of `tigris.api.analyze` (what `tigris analyze` spends: load, passes, lowering, planning, the "
        f"report) at a generous and a tight fitting budget and at half the smallest fitting one, where it also "
        f"searches the minimum budget and names the op that sets it (`python3 bench/analyze_cost.py`; best of "
        f"{args.runs} interleaved runs). Without `--xip` a run that does not fit searches twice (without and with "
        f"XIP). `before` is the same measurement of the planner before its probes shared band layouts and the "
        f"search started from the per-op lower bound (bench/analyze_cost_baseline.json). Worst ratio now: "
        f"**{worst:.2f}x** to a generous fitting run, **{worst_tight:.2f}x** to a tight one (target <= 1.5x). "
        f"Measured at {_commit()}.\n\n"
        + markdown_table(headers, rows)
    )
    print(body)
    if not args.no_write:
        write_section("analyze_cost", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
