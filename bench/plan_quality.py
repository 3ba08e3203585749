"""Plan quality over every shared model: does it fit, how much fast memory, how much slow traffic, how much recompute.

Runs the same planning the ``analyze`` command does (load, normalize, lower for the weight and scratch sizes, then
``plan_memory`` with ``--xip``) at 256K, 128K, 64K and 32K and at the smallest fitting fast budget, for both planning
strategies: ``spec`` (the spec's greedy partition and chain rule, the baseline) and ``tigris`` (adds the
traffic-minimizing partition of ``tigris/plan/search.py``). Both accumulate a GlobalAveragePool over tiles (the
default); on models with a GAP also ``tigris-noAccGAP`` (``accumulate_gap=False``: GAP needs its whole input), to show
what accumulation buys. Every plan is proven by ``tigris.plan.check`` before it is counted. Writes the table into docs/benchmarks.md between ``<!-- plan_quality:begin -->`` and
``<!-- plan_quality:end -->``.

    python3 bench/plan_quality.py [--models DIR] [--no-write]
    python3 bench/plan_quality.py --scaling   # only the planning-time table (section plan_scaling)
    python3 bench/plan_quality.py --sram-only # only the SRAM-only table (section plan_sram_only)
    python3 bench/plan_quality.py --order     # only the operator-order table (section plan_order)
    python3 bench/plan_quality.py --halo      # only the halo reuse table (section plan_halo_reuse; callgrind)
    python3 bench/plan_quality.py --halo --no-count --shared-only   # its quick form: no callgrind, shared models
    python3 bench/plan_quality.py --cols      # only the column tiles table (section plan_col_tiles)
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _doc import markdown_table, write_section  # noqa: E402

from tigris.ir import DoesNotFitError, TigrisError  # noqa: E402
from tigris.plan import min_fast_budget, plan_memory  # noqa: E402
from tigris.plan.check import check_plan  # noqa: E402
from tigris.plan.spatial import op_macs  # noqa: E402

BUDGETS = [("256K", 256 * 1024), ("128K", 128 * 1024), ("64K", 64 * 1024), ("32K", 32 * 1024)]
STRATEGIES = ("spec", "tigris")
# The default strategy without the accumulating GlobalAveragePool (the earlier rule), on models with a GAP.
NO_ACC_GAP = "tigris-noAccGAP"


def plan_options(variant: str) -> dict[str, object]:
    if variant == NO_ACC_GAP:
        return {"strategy": "tigris", "accumulate_gap": False}
    return {"strategy": variant}
REPO = Path(__file__).resolve().parents[1]


def kib(n: int) -> str:
    return f"{n / 1024:.1f}"


def prepare(path: Path):
    """The analyze pipeline up to planning: normalized graph plus the scratch callback the emitter uses."""
    from tigris.api import prepare as api_prepare
    from tigris.ops import kind

    try:
        prep = api_prepare(path)
    except TigrisError as err:
        # Kernel coverage is not the planner's concern: plan the normalized graph without kernel scratch and say so.
        from tigris.load import load_model
        from tigris.passes import normalize

        graph, _ = normalize(load_model(path))
        return graph, None, f"no scratch sizes ({type(err).__name__})"
    graph, lowered = prep.graph, prep.lowered

    def scratch(i: int, rows: int) -> int:
        low = lowered[i]
        return 0 if low.alias else int(kind(low.kind).scratch_bytes(low, graph, rows))

    return graph, scratch, ""


def row(model: str, label: str, strategy: str, graph, budget: int, scratch, macs: int) -> list[object]:
    t0 = time.perf_counter()
    try:
        plan = plan_memory(graph, budget, xip=True, scratch_bytes_of=scratch, **plan_options(strategy))
    except DoesNotFitError as err:
        dt = time.perf_counter() - t0
        need = getattr(err, "need", None)
        return [model, label, strategy, "no", f"needs {kib(need)} KiB" if need else "-", "", "", "", "", "", f"{dt:.2f}"]
    dt = time.perf_counter() - t0
    errs = check_plan(graph, plan)
    tiles = sum(u.tiles for u in plan.units if u.tile_rows)
    ratio = max(u.peak_bytes / u.timeline_peak for u in plan.units if u.timeline_peak)
    return [
        model,
        label,
        strategy,
        "yes" if not errs else f"CHECK FAILED ({len(errs)})",
        kib(plan.fast_peak),
        f"{ratio:.3f}",
        len(plan.stages),
        tiles,
        kib(plan.spill_bytes + plan.reload_bytes),
        f"{100 * plan.recompute_macs / macs:.1f}" if macs else "0.0",
        f"{dt:.2f}",
    ]


def _find(rows: list[list[object]], model: str, budget: str, strategy: str = "tigris") -> list[object] | None:
    for r in rows:
        if str(r[0]).startswith(model) and r[1] == budget and r[2] == strategy:
            return r
    return None


def check_targets(rows: list[list[object]]) -> str:
    """The issue's acceptance targets, judged on the table (default strategy)."""

    def fits(r) -> bool:
        return r is not None and r[3] == "yes"

    def traffic(r) -> float:
        return float(r[8]) if fits(r) else float("inf")

    mb = "torchvision/mobilenet_v2_035_96_f32"
    en = "torchvision/efficientnet_lite0_128_f32"
    lines = [
        ("mobilenet_v2_035_96_f32 fits at 32K", fits(_find(rows, mb, "32K"))),
        ("mobilenet_v2_035_96_f32 spill+reload <= 560 KiB at 128K", traffic(_find(rows, mb, "128K")) <= 560),
        ("efficientnet_lite0_128_f32 fits at 128K", fits(_find(rows, en, "128K"))),
        ("efficientnet_lite0_128_f32 spill+reload <= 3.6 MiB at 256K", traffic(_find(rows, en, "256K")) <= 3.6 * 1024),
        ("efficientnet_lite0_128_f32 plans in < 2 s at 256K", fits(_find(rows, en, "256K"))
         and float(str(_find(rows, en, "256K")[10]).split()[0]) < 2.0),  # type: ignore[index]
    ]
    int8 = [r for r in rows if "int8" in str(r[0]) and r[1] == "64K" and r[2] == "tigris"]
    lines.append(("every int8 model fits at 64K", bool(int8) and all(fits(r) for r in int8)))
    return "Targets (XIP, default `tigris` strategy):\n\n" + "\n".join(
        f"- {'met' if ok else 'NOT met'}: {what}" for what, ok in lines
    )


TRADEOFF_MODELS = [
    "mlperf_tiny/resnet8_cifar_f32.onnx",
    "torchvision/mobilenet_v2_035_96_f32.onnx",
    "torchvision/efficientnet_lite0_128_f32.onnx",
    "torchvision/efficientnet_lite0_128_int8.onnx",
]
WEIGHTS = [0.0, 0.05, 0.25, 1.0]


def recompute_tradeoff(models: Path) -> str:
    """Slow traffic against halo recompute as ``recompute_weight`` (bytes one recomputed MAC is worth) grows."""
    out: list[list[object]] = []
    for rel in TRADEOFF_MODELS:
        if not (models / rel).exists():
            continue
        graph, scratch, _ = prepare(models / rel)
        macs = sum(op_macs(graph, op) for op in graph.ops) or 1
        for label, budget in BUDGETS[1:3]:
            cells: list[object] = [rel.removesuffix(".onnx"), label]
            for w in WEIGHTS:
                try:
                    p = plan_memory(graph, budget, xip=True, scratch_bytes_of=scratch, recompute_weight=w)
                    cells.append(f"{kib(p.spill_bytes + p.reload_bytes)} KiB / {100 * p.recompute_macs / macs:.0f}%")
                except DoesNotFitError:
                    cells.append("no fit")
            out.append(cells)
    heads = ["model", "fast budget"] + [f"weight {w}" for w in WEIGHTS]
    return (
        "Slow traffic / halo recompute (share of MACs) as `plan_memory(recompute_weight=w)` prices one recomputed MAC "
        "at w bytes of slow traffic (0: traffic only; the planner's default is `DEFAULT_RECOMPUTE_WEIGHT`, 1.0).\n\n" + markdown_table(heads, out)
    )


SCALING = [("relu_chain", [100, 1_000, 10_000, 100_000], "1M"), ("mobilenet_blocks", [1, 10, 100, 300], "64K")]


COUNT_BUDGETS = ("256K", "128K", "64K", "32K")  # where the instruction counts are taken (wherever the plan tiles)


def _callgrind_runner(work: Path):
    """A function plan bytes -> instructions of one host inference (callgrind, counting tgrs_run only), or None when
    valgrind or a C compiler is missing. The runtime is built once from runtime_c/src (plain C99 kernels, -O2)."""
    import shutil
    import subprocess

    if not shutil.which("valgrind") or not shutil.which("gcc"):
        return None
    exe = work / "count_run"
    srcs = sorted(str(p) for p in (REPO / "runtime_c" / "src").rglob("*.c"))
    subprocess.run(["gcc", "-std=c11", "-O2", "-ffp-contract=off", f"-I{REPO / 'runtime_c' / 'include'}",
                    f"-I{REPO / 'runtime_c' / 'src'}", *srcs, str(REPO / "bench" / "count_run.c"), "-lm", "-o",
                    str(exe)], check=True)
    seen: dict[bytes, int] = {}
    # callgrind counts every iteration of a rep-prefixed string instruction as one instruction, and glibc's x86
    # memcpy/memset switch to `rep movsb`/`rep stosb` above a few KiB: a 9 KiB line-buffer copy counts about 9,300
    # instructions where glibc's vector loop for it (what runs below the threshold) counts about 980. The thresholds
    # are raised so every copy counts as the vector loop, whatever its size.
    env = dict(os.environ, GLIBC_TUNABLES="glibc.cpu.x86_rep_movsb_threshold=1073741824:"
                                          "glibc.cpu.x86_rep_stosb_threshold=1073741824")

    def count(data: bytes) -> int:
        import hashlib

        key = hashlib.sha256(data).digest()
        if key not in seen:
            plan = work / "plan.tgrs"
            plan.write_bytes(data)
            out = work / "cg.out"
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no",
                            "--toggle-collect=tgrs_run", str(exe), str(plan)], check=True, capture_output=True,
                           env=env)
            line = next(ln for ln in out.read_text().splitlines() if ln.startswith("summary:"))
            seen[key] = int(line.split()[1])
        return seen[key]

    return count


def _halo_models(models: Path, tmp: Path, extra: bool) -> list[tuple[str, Path]]:
    """Every shared ONNX model; with ``extra`` also the peer comparison's built models (bench/plan_peer.py:
    MobileNetV2-1.0 144, MnasNet-0.5, SqueezeNet-1.1) and every tests/families model, float32 and int8."""
    out = [(str(p.relative_to(models)).removesuffix(".onnx"), p) for p in sorted(models.rglob("*.onnx"))]
    if not extra:
        return out
    import plan_peer

    sys.path.insert(0, str(REPO / "tests" / "families"))
    for label, source, *_ in plan_peer.MODELS:
        if source.startswith("built:"):
            try:
                out.append((label, plan_peer.model_path(source, models, tmp)))
            except Exception:  # noqa: BLE001 - a model that does not build here is left out of the table
                continue
    return out + [m for m in _cols_models(models, tmp) if m[0].startswith("family ")]


def _compiled(path: Path, prep, budget: int, objective: str | None = None):
    """What `tigris compile --xip -m budget` writes (``tigris.api.compile_model``: row tiles, weight and channel
    groups, column tiles), or None when it does not fit."""
    from tigris import api

    try:
        return api.compile_model(path, budget, xip=True, prepared=prep, objective=objective)
    except DoesNotFitError:
        return None


def _shape(c) -> str:
    """How a compiled plan is cut: its channel-group ops and column-split units."""
    groups = len(c.analysis.json.get("weight_groups") or [])
    cols = sum(1 for u in c.analysis.plan.units if u.tile_cols)
    over = sum(1 for u in c.analysis.plan.units if getattr(u, "overwrite", None))
    parts = ([f"{groups} ops in groups"] if groups else []) + ([f"{cols} COLS"] if cols else []) + \
        ([f"{over} OVERWRITE"] if over else [])
    return ", ".join(parts) or "-"


def _kinds(c) -> list[str]:
    """The plan shapes of this stop a compiled plan uses (for the instruction target's breakdown)."""
    plan = c.analysis.plan
    return [k for k, has in (("column-split", any(u.tile_cols for u in plan.units)),
                             ("channel-group", bool(c.analysis.json.get("weight_groups"))),
                             ("OVERWRITE", any(getattr(u, "overwrite", None) for u in plan.units))) if has]


def halo_table(models: Path, count_instructions: bool = True, only: list[str] | None = None,
               extra: bool = True) -> str:
    """Halo reuse (spatial rule 9) and the default objective against the recomputing planner (``halo_reuse=False``
    minimizing traffic, the baseline: the plans before the rule): recompute share, slow traffic (also of the spec
    strategy and of the traffic objective) and fast peak at every budget, and host instructions of one inference of
    the tiled plans against the model's untiled plan (callgrind), all with --xip. The traffic and default plans are
    what ``tigris compile`` writes (``api.compile_model``, so channel groups and column tiles where the model needs
    them); the baseline and the spec strategy plan the graph that plan is for (the split graph where compile splits
    ops)."""
    import tempfile

    from tigris import api

    rows: list[list[object]] = []
    over_rc: list[str] = []
    over_ins: list[str] = []
    over_spec: list[str] = []
    n_fit = n_counted = 0
    by_kind: dict[str, list] = {}  # plan shape -> [plans counted, those over 1.05x]
    with tempfile.TemporaryDirectory() as tmp:
        count = _callgrind_runner(Path(tmp)) if count_instructions else None
        for name, path in _halo_models(models, Path(tmp), extra):
            if only and not any(o in name for o in only):
                continue
            try:
                prep = api.prepare(path)
            except (TigrisError, ImportError, NotImplementedError, KeyError, ValueError):
                continue
            macs = sum(op_macs(prep.graph, op) for op in prep.graph.ops)
            untiled = None
            for label, budget in BUDGETS:
                after = _compiled(path, prep, budget)
                if after is None:
                    rows.append([name, label, "no fit"] + [""] * 7)
                    print(rows[-1], flush=True)
                    continue
                traffic = _compiled(path, prep, budget, "traffic")
                used = after.analysis.prepared  # the graph the plan is for (channel groups split)
                graph = used.graph
                base = {  # the recomputing baseline and the spec strategy on that graph
                    "before": dict(api._plan_kwargs(used, True, 0.0), halo_reuse=False),
                    "spec": dict(api._plan_kwargs(used, True, 0.0), strategy="spec"),
                }
                plans = {"after": after.analysis.plan, "traffic": traffic.analysis.plan if traffic else None}
                for v, kw in base.items():
                    try:
                        plans[v] = plan_memory(graph, budget, **kw)
                    except DoesNotFitError:
                        plans[v] = None
                before, plan = plans["before"], plans["after"]
                assert not check_plan(graph, plan), (name, label)
                n_fit += 1
                pct = lambda p: f"{100 * p.recompute_macs / macs:.1f}" if p and macs else "-"  # noqa: E731
                moved = lambda p: p.spill_bytes + p.reload_bytes  # noqa: E731
                kib_t = lambda p: kib(moved(p)) if p else "-"  # noqa: E731
                if macs and plan.recompute_macs * 20 > macs:
                    over_rc.append(f"{name} {label}")
                if plans["spec"] is not None and moved(plan) > moved(plans["spec"]):
                    over_spec.append(f"{name} {label}")
                tiled = any(u.tile_rows for u in plan.units)
                ins = ""
                if count is not None and label in COUNT_BUDGETS and tiled:
                    from tigris.emit import emit_plan

                    if untiled is None:
                        untiled = count(api.compile_model(path, 1 << 30, xip=True, prepared=prep).plan_bytes)
                    got = {"after": count(after.plan_bytes) / untiled}
                    b_ins = "-"
                    if before is not None:
                        try:
                            b_ins = f"{count(emit_plan(graph, before, used.lowered, xip=True)) / untiled:.3f}"
                        except TigrisError as err:  # shown, not hidden: the baseline planner made a plan the
                            b_ins = f"not written ({str(err)[-40:]})"  # writer refuses
                    ins = f"{b_ins} -> {got['after']:.3f}"
                    n_counted += 1
                    for kind in _kinds(after):
                        by_kind.setdefault(kind, [0, []])[0] += 1
                        if got["after"] > 1.05:
                            by_kind[kind][1].append(f"{name} {label} {got['after']:.3f}")
                    if got["after"] > 1.05:
                        over_ins.append(f"{name} {label} ({got['after']:.3f})")
                rows.append([name, label, f"{pct(before)} -> {pct(plans['traffic'])} -> {pct(plan)}",
                             kib_t(plans["spec"]), f"{kib_t(before)} -> {kib_t(plans['traffic'])} -> {kib_t(plan)}",
                             f"{kib(before.fast_peak) if before else '-'} -> {kib(plan.fast_peak)}",
                             f"{sum(1 for u in plan.units if u.rolling)}/{sum(1 for u in plan.units if u.tile_rows)}",
                             _shape(after), ins, f"{untiled:,}" if ins else ""])
                print(rows[-1], flush=True)
    headers = ["model", "fast budget", "recompute % (before -> traffic -> after)", "spec spill+reload KiB",
               "spill+reload KiB (before -> traffic -> after)", "fast peak KiB", "rolling / tiled units",
               "groups / column tiles / OVERWRITE", "instructions x untiled (before -> after)", "untiled instructions"]
    targets = [
        f"- {'met' if not over_rc else 'NOT met'}: halo recompute <= 5% of the model's MACs at every budget where the "
        f"model compiles ({n_fit - len(over_rc)} of {n_fit}" + (f"; over: {', '.join(over_rc)}" if over_rc else "")
        + ")",
        f"- {'met' if not over_spec else 'NOT met'}: slow traffic of the default plan at or below the spec strategy's "
        f"wherever that fits" + (f" (over: {', '.join(over_spec)})" if over_spec else ""),
    ]
    if count is not None:
        targets.append(
            f"- {'met' if not over_ins else 'NOT met'}: host instructions of every tiled plan <= 1.05x the untiled "
            f"plan at {'/'.join(COUNT_BUDGETS)} ({n_counted - len(over_ins)} of {n_counted}"
            + (f"; over: {', '.join(over_ins)}" if over_ins else "") + ")")
        for kind, (n, over) in sorted(by_kind.items()):
            targets.append(f"  - {kind} plans: {n - len(over)} of {n} within 1.05x"
                           + (f" (over: {', '.join(over)})" if over else ""))
    return (
        "Halo reuse and the objective (`python3 bench/plan_quality.py --halo`; XIP), over every shared model, the peer "
        "comparison's built models (bench/plan_peer.py) and every tests/families model (float32 and int8). after = "
        "the plan `tigris compile --xip` writes (`tigris.api.compile_model`, the default latency objective for the "
        "generic core: row tiles, then weight and channel groups, then column tiles where the model needs them), so "
        "every combination that compiles is a row; traffic = the same with `--objective traffic`; before = the "
        "recomputing planner minimizing traffic, `plan(halo_reuse=False, recompute_weight=0)`, what every plan was "
        "before spatial rule 9, and `spec` = the spec strategy (greedy cuts, recomputed halos), the traffic no plan "
        "may exceed, both on the graph the compiled plan is for (the channel-group split graph where compile splits "
        "ops; `-` where they do not fit it). `rolling / tiled units`: tiled units of the default plan that carry "
        "halo rows from tile to tile; `groups / column tiles / OVERWRITE`: its ops run as channel groups, its column-split "
        "units and its OVERWRITE units. Recompute is a share of the model's MACs. Instructions: one host inference (`bench/count_run.c`, "
        "the runtime's plain C99 kernels at -O2, same input bytes) counted by callgrind inside `tgrs_run`, over the "
        "model's untiled plan, with glibc's `rep movsb`/`rep stosb` copies turned off (callgrind counts one "
        "instruction per byte they move; every copy counts as glibc's vector loop); measured at "
        f"{', '.join(COUNT_BUDGETS)} wherever the default plan tiles; the breakdown counts the plans using each of "
        "this stop's shapes (column-split units, ops run as channel groups, OVERWRITE units: a spilled output "
        "written over the slow home of an input dying in the unit).\n\n"
        + "\n".join(targets) + "\n\n" + markdown_table(headers, rows)
    )


def scaling_table(sizes: dict[str, list[int]] | None = None) -> str:
    """Planning time against graph size on synthetic graphs (bench/scaling_models.py): CPU seconds of the whole
    ``analyze`` (load, passes, lowering, planning, emission) and of planning alone, so a superlinear step shows."""
    import tempfile

    import onnx
    import scaling_models

    from tigris import api

    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for family, default_sizes, budget in SCALING:
            for n in (sizes or {}).get(family, default_sizes):
                path = Path(tmp) / f"{family}_{n}.onnx"
                onnx.save(getattr(scaling_models, family)(n), path)
                t0 = time.process_time()
                prep = api.prepare(path)
                t1 = time.process_time()
                res = api._plan(prep, api.parse_size(budget), None, True)
                units = len(res.plan.units) if hasattr(res, "plan") else "-"
                t2 = time.process_time()
                a = api.analyze(path, budget, xip=True, prepared=prep)
                t3 = time.process_time()
                rows.append([family, n, len(prep.graph.ops), budget, "yes" if a.fits else "no", units,
                             f"{t1 - t0:.2f}", f"{t2 - t1:.2f}", f"{(t1 - t0) + (t3 - t2):.2f}"])
                print(rows[-1], flush=True)
                path.unlink()
    headers = ["graph", "size", "ops", "fast budget", "fits", "units", "load+passes s", "plan s", "analyze s"]
    return (
        "Planning time against graph size (`python3 bench/plan_quality.py --scaling`; CPU seconds of this process, "
        "so the figures do not depend on the machine's other load). `relu_chain` is N Relu ops on `[1, 8]`; "
        "`mobilenet_blocks` is N inverted-residual blocks on `[1, 16, 16, 16]` (6 ops each: expand, Relu, depthwise, "
        "Relu, project, residual Add; the Relus fuse). `analyze s` is what `tigris analyze --xip` spends: load, "
        "passes, lowering, planning and emission.\n\n" + markdown_table(headers, rows)
    )


def _kept_rows(section: str) -> dict[str, list[str]]:
    """The rows of a table section of docs/benchmarks.md, by their first cell."""
    from _doc import DOC

    text = DOC.read_text()
    body = text.split(f"<!-- {section}:begin -->")[1].split(f"<!-- {section}:end -->")[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in body.splitlines()
            if line.startswith("| ") and not line.startswith("| model")]
    return {r[0]: r for r in rows}


def _mbv2_224_int8(tmp: Path) -> Path:
    """MobileNetV2-1.0 224x224 with seeded random weights (tests/families/builders.py), ORT-quantized QDQ int8 with an
    int8 input (TFLite Micro's example model takes int8): the issue's SRAM-only target, not among the shared models."""
    sys.path.insert(0, str(REPO / "tests" / "families"))
    import onnx
    from builders import int8_input, mobilenet_v2_224, quantize

    onnx.save(mobilenet_v2_224(), str(tmp / "f.onnx"))
    quantize(tmp / "f.onnx", tmp / "q.onnx", "int8", per_channel=True)
    out = tmp / "mobilenet_v2_100_224_int8.onnx"
    onnx.save(int8_input(onnx.load(str(tmp / "q.onnx"))), str(out))
    return out


def sram_only_table(models: Path, synthetic: bool = True, only: list[str] | None = None) -> str:
    """Per shared model: the fast budget ``-s 0`` needs today (one untiled unit: any other plan has a slow arena)
    against the least SRAM of both arenas (``min_sram_only_budget``), with the plan proven by the checker. ``only``:
    re-measure the models whose name contains one of these and keep the other rows of the table in
    docs/benchmarks.md as they are."""
    import tempfile

    from tigris.plan import min_sram_only_budget, plan

    paths = [(str(p.relative_to(models)).removesuffix(".onnx"), p) for p in sorted(models.rglob("*.onnx"))]
    rows: list[list[object]] = []
    expansion, macs_224 = None, 1
    kept = _kept_rows("plan_sram_only") if only else {}
    with tempfile.TemporaryDirectory() as tmp:
        if synthetic:
            paths.append(("mobilenet_v2_100_224_int8 (seeded, built)", _mbv2_224_int8(Path(tmp))))
        for name, path in paths:
            if only and not any(o in name for o in only):
                old = next((r for n, r in kept.items() if n.split(" (")[0] == name), None)
                if old is not None:
                    rows.append(old)
                continue
            try:
                graph, scratch, note = prepare(path)
            except (TigrisError, ImportError, NotImplementedError, KeyError, ValueError) as err:
                rows.append([name, f"not planned: {type(err).__name__}"] + [""] * 13)
                continue
            macs = sum(op_macs(graph, op) for op in graph.ops)
            before = plan_memory(graph, 2**30, 0, xip=True, scratch_bytes_of=scratch).fast_peak
            t0 = time.perf_counter()
            r = min_sram_only_budget(graph, xip=True, scratch_bytes_of=scratch)
            dt = time.perf_counter() - t0
            res = plan(graph, r.fast_budget, r.slow_bytes, xip=True, scratch_bytes_of=scratch)
            ok = "yes" if not check_plan(graph, res.plan) else "CHECK FAILED"
            cap = r
            if r.recompute_macs * 10 > macs:  # over 10%: the least SRAM within 10% recompute too
                cap = min_sram_only_budget(graph, max_recompute_macs=macs // 10, xip=True, scratch_bytes_of=scratch)
                if cap is not None:
                    res = plan(graph, cap.fast_budget, cap.slow_bytes, xip=True, scratch_bytes_of=scratch)
                    ok = ok if not check_plan(graph, res.plan) else "CHECK FAILED"
            # the traffic objective (recompute_weight 0): least SRAM over the plans that price no recompute
            free = min_sram_only_budget(graph, xip=True, scratch_bytes_of=scratch, recompute_weight=0.0)
            res = plan(graph, free.fast_budget, free.slow_bytes, xip=True, scratch_bytes_of=scratch, recompute_weight=0.0)
            ok = ok if not check_plan(graph, res.plan) else "CHECK FAILED"
            # one SRAM region (plan(one_region=True)): a unit's buffers may use the bytes of homes not live during it
            one = min_sram_only_budget(graph, xip=True, scratch_bytes_of=scratch, one_region=True)
            res = plan(graph, one.fast_budget, one.slow_bytes, xip=True, scratch_bytes_of=scratch, one_region=True)
            ok = ok if not check_plan(graph, res.plan) else "CHECK FAILED"
            if name.startswith("mobilenet_v2_100_224_int8"):
                # the target: what analyze -s 0 --one-region reports with expansion groups, the plan
                # analyze writes at its -m/-s --one-region proven by the checker
                from tigris import api
                from tigris.plan import DEFAULT_RECOMPUTE_WEIGHT

                prep = api.prepare(path)
                ex = api.expansion_sram_only(prep, one, True, DEFAULT_RECOMPUTE_WEIGHT)
                if ex is not None:
                    a = api.analyze(path, ex.fast_budget, ex.slow_bytes, xip=True, prepared=prep, emit=False,
                                    one_region=True)
                    proven = a.fits and not check_plan(a.prepared.graph, a.plan)
                    expansion, macs_224 = (ex, proven), macs
            dt = time.perf_counter() - t0
            rows.append([name + (f" ({note})" if note else ""), before, r.total_bytes, r.fast_bytes, r.slow_bytes,
                         f"{r.total_bytes / before:.2f}", f"{100 * r.recompute_macs / macs:.1f}" if macs else "0.0",
                         cap.total_bytes if cap else "none",
                         f"{100 * cap.recompute_macs / macs:.1f}" if cap and macs else "0.0", free.total_bytes,
                         f"{100 * free.recompute_macs / macs:.1f}" if macs else "0.0", one.total_bytes,
                         f"{100 * one.recompute_macs / macs:.1f}" if macs else "0.0", ok, f"{dt:.1f}"])
            print(rows[-1], flush=True)
    target = ""
    for r in rows:
        if str(r[0]).startswith("mobilenet_v2_100_224_int8") and r[2] != "":
            within = [int(r[7])] if r[7] != "none" else []
            within += [int(r[11])] if float(r[12]) <= 10.0 else []
            grouped = ""
            if expansion is not None:
                ex, proven = expansion
                pct = 100 * ex.recompute_macs / macs_224
                within += [ex.total_bytes] if pct <= 10.0 and proven else []
                grouped = (f", {ex.total_bytes} bytes as one region with expansion groups at {pct:.1f}% (the "
                           f"search `tigris analyze -s 0` makes, at recompute weight 1.0: `-m {ex.fast_budget} -s "
                           f"{ex.slow_bytes} --one-region`, "
                           f"{'checked' if proven else 'CHECK FAILED'})")
            met = bool(within) and min(within) <= 175_616
            target = (f"\n\nTarget (MobileNetV2-1.0 224 int8 without PSRAM in at most 175,616 bytes with at most 10% "
                      f"recompute): {r[2]} bytes at {r[6]}% recompute, {r[7]} bytes within 10% recompute, {r[11]} "
                      f"bytes as one region at {r[12]}%{grouped}; {'met' if met else 'not met'}.")
    headers = ["model", "-s 0 today (B)", "SRAM-only (B)", "fast arena", "slow arena (in SRAM)", "after/before",
               "recompute %", "SRAM-only, recompute <= 10% (B)", "its recompute %", "traffic objective (B)",
               "its recompute %", "one region (B)", "its recompute %", "checked", "search s"]
    return (
        "SRAM-only plans (`python3 bench/plan_quality.py --sram-only`, XIP): a board with no PSRAM. `-s 0 today` is "
        "the fast budget the planner needs with no slow arena at all, i.e. the one untiled unit; `SRAM-only` is "
        "`tigris.plan.min_sram_only_budget`, the least `fast + slow` arena bytes over the planner's plans, with both "
        "arenas given to the runtime as SRAM regions (`analyze -s 0` prints it with the `-m`/`-s` that plan it). "
        "The graph input and the unit boundaries sit in the slow arena, so a float input (the models quantized "
        "inside the graph) costs 4 bytes per element there. The `<= 10%` column is the same search keeping only plans "
        "within 10% halo recompute (`max_recompute_macs`; the same figure when the first is already within it). Both "
        "price recompute as the planner's default does (`DEFAULT_RECOMPUTE_WEIGHT`), so the plans compared are the "
        "ones that reuse their halos where they fit; `traffic objective` is the search over the traffic-only plans "
        "(`recompute_weight=0`), at most 21% less SRAM (person_detect_int8), bought with 8-67% recompute. A unit's "
        "spilled output may take the slow home of an input dying in it (streaming overwrite, docs/memory-planning.md), "
        "so the slow arena holds the graph input with the boundaries written over it. `one region` is the same search "
        "with both arenas in one block (`one_region=True`, the header flag ONE_REGION): a unit's buffers may use the "
        "bytes of homes not live during it; the figure is that block's size (`analyze -s 0` prints it, with the "
        "`-m`/`-s --one-region` that plan it, where it is below the two arenas'). What any plan of a given shape "
        "needs on the MobileNetV2-1.0 224 target is the `sram_only_bounds` table below.\n\n"
        + markdown_table(headers, rows) + target
    )

# Branched families of tests/families (built with seeded weights): detector heads, a segmentation head with an
# SE-style gate, BiFPN, SSD heads, YOLO heads, SE blocks, residual stems, channel-split units.
ORDER_FAMILIES = ("det_head", "lraspp", "effdet_lite0", "ssd_nms", "yolov8n", "yolo_fastest_v2", "mbv3_small",
                  "resnet18_stem", "shufflenet_v2")
ORDER_BUDGETS = BUDGETS + [("16K", 16 * 1024), ("8K", 8 * 1024)]


def _order_models(models: Path, tmp: Path) -> list[tuple[str, Path]]:
    sys.path.insert(0, str(REPO / "tests" / "families"))
    import logging

    import builders
    import onnx

    logging.getLogger().setLevel(logging.ERROR)  # ORT's quantizer advice
    out = [(str(p.relative_to(models)).removesuffix(".onnx"), p) for p in sorted(models.rglob("*.onnx"))]
    for fam in ORDER_FAMILIES:
        fp = tmp / f"{fam}.onnx"
        onnx.save(builders.FAMILIES[fam](), str(fp))
        qp = tmp / f"{fam}_int8.onnx"
        builders.quantize(fp, qp, "int8", True)
        out += [(f"family {fam} f32", fp), (f"family {fam} int8", qp)]
    return out


def order_table(models: Path) -> str:
    """Per shared model and branched family: the untiled peak of the loader's order and of the memory-aware order
    (tigris/plan/order.py), the smallest fitting fast budget with each (XIP and copied weights), and slow traffic at
    a ladder of budgets and at the budget halfway between the two peaks, the plans proven by the checker. The
    planner keeps the baseline order's plan wherever the new one would move more bytes, so the traffic ratio is at
    most 1."""
    import tempfile

    from tigris import api
    from tigris.plan import plan
    from tigris.plan.order import search_order

    rows: list[list[object]] = []
    worst = 0.0
    gains = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in _order_models(models, Path(tmp)):
            prep = api.prepare(path)
            graph = prep.graph
            t0 = time.perf_counter()
            found = search_order(graph)
            search_ms = 1000 * (time.perf_counter() - t0)
            mins = {}
            for xip in (True, False):
                for order in ("spec", "search"):
                    kw = api._plan_kwargs(prep, xip)
                    kw["op_order"] = order
                    from tigris.plan import min_fast_budget

                    mins[xip, order] = min_fast_budget(graph, **kw)
            mid = (found.peak + found.baseline_peak) // 2 // 16 * 16
            budgets = [b for _, b in ORDER_BUDGETS] + [m for m in (mins[True, "spec"], mid) if m]
            ratio, checked, at_mid = 0.0, "yes", "-"
            for b in budgets:
                got = {}
                for order in ("spec", "search"):
                    kw = api._plan_kwargs(prep, True)
                    kw["op_order"] = order
                    res = plan(graph, b, **kw)
                    got[order] = res.plan if hasattr(res, "plan") else None
                    if got[order] is not None and check_plan(graph, got[order]):
                        checked = "CHECK FAILED"
                p, q = got["spec"], got["search"]
                if p is not None and q is not None:
                    tp, tq = p.spill_bytes + p.reload_bytes, q.spill_bytes + q.reload_bytes
                    ratio = max(ratio, 1.0 if tq == tp else tq / tp if tp else float("inf"))
                if b == mid and found.peak < found.baseline_peak:
                    show = lambda m: "no fit" if m is None else kib(m.spill_bytes + m.reload_bytes)  # noqa: E731
                    at_mid = f"{kib(mid)}: {show(p)} -> {show(q)}"
            worst = max(worst, ratio)
            gains += found.peak < found.baseline_peak
            two = lambda a, b: f"{kib(a)} -> {kib(b)}" if a is not None and b is not None else "-"  # noqa: E731
            rows.append([name, len(graph.ops), two(found.baseline_peak, found.peak),
                         f"{found.peak / found.baseline_peak:.3f}", "yes" if found.exact else "no",
                         f"{search_ms:.1f}", two(mins[True, "spec"], mins[True, "search"]),
                         two(mins[False, "spec"], mins[False, "search"]), at_mid, f"{ratio:.3f}", checked])
            print(rows[-1], flush=True)
    headers = ["model", "ops", "untiled peak KiB (DFS -> searched)", "ratio", "exact", "search ms",
               "min fast budget KiB, XIP", "min fast budget KiB, copied weights", "slow traffic KiB between the peaks",
               "worst traffic searched / DFS", "checked"]
    return (
        "Memory-aware operator order (`python3 bench/plan_quality.py --order`; docs/memory-planning.md \"Operator "
        "order\"): the untiled timeline peak of the loader's DFS order and of the searched order, the smallest "
        "fitting fast budget planned with the DFS order only (`op_order=\"spec\"`) and with the search (the "
        "default), and slow traffic (XIP) at the budget halfway between the two peaks, where the searched order runs "
        "untiled. `worst traffic` is the largest ratio of the default plan's slow traffic to the DFS-order plan's "
        f"over 256K, 128K, 64K, 32K, 16K, 8K, the DFS order's minimum and that middle budget (at most 1: the planner "
        f"keeps the DFS order's plan where the other would move more). The searched order lowers the untiled peak on "
        f"{gains} of {len(rows)} models; worst traffic ratio {worst:.3f}. Families are tests/families models with "
        "seeded weights (int8: ORT QDQ, QInt8 per-channel).\n\n" + markdown_table(headers, rows)
    )


def _cols_models(models: Path, tmp: Path) -> list[tuple[str, Path]]:
    """Every shared model (ONNX and TFLite), then every tests/families model, float32 and ORT-quantized int8."""
    sys.path.insert(0, str(REPO / "tests" / "families"))
    import logging

    import builders
    import onnx

    logging.getLogger().setLevel(logging.ERROR)  # ORT's quantizer advice
    out = [(str(p.relative_to(models)), p) for p in sorted([*models.rglob("*.onnx"), *models.rglob("*.tflite")])]
    for fam in sorted(builders.FAMILIES):
        fp = tmp / f"{fam}.onnx"
        try:
            onnx.save(builders.FAMILIES[fam](), str(fp))
        except Exception:  # noqa: BLE001 - a family that does not build here is left out of the table
            continue
        out.append((f"family {fam} f32", fp))
        qp = tmp / f"{fam}_int8.onnx"
        try:
            builders.quantize(fp, qp, "int8", True)
            out.append((f"family {fam} int8", qp))
        except Exception:  # noqa: BLE001 - ORT cannot quantize every family
            pass
    return out


COLS_TARGET = 0.8  # issue 15: the smallest fitting fast budget at most 0.8x of the row-tile figure
# Op types channel groups split (tigris.passes.weight_split), with the ops a dense layer's groups take along (its
# channel tail: a folded BatchNorm's Add, a QuantizeLinear): for a row above the target set by one, the table also
# gives analyze's minimum with groups.
GROUPS_SPLIT = ("Conv", "DepthwiseConv", "Gemm", "MatMul", "Add", "QuantizeLinear")


class _earlier_rules:
    """The row-tile rules before issue 15's work on the ops that set the row floor, for the ``row tiles`` column: a
    reflect/edge/wrap Pad of the rows needs its whole input (``tigris.ops.pad.ROW_MAPS``), an AveragePool over a whole
    sequence stays a pool (``tigris.passes.reducemean_gap.SEQUENCES``), a conv's full-width band reserves
    ``CONV_MR`` patches (``tigris.ops.conv.NARROW_ROWS``), an int8 linear Resize runs as a float island
    (``tigris.ops.resize.INT8_INTERP``), the Transposes of channels-last islands stay
    (``tigris.passes.transpose_sink.ENABLED``), every Transpose is structural (``tigris.ops.transpose.ROW_BANDS``),
    a dense layer over tokens is a Gemm between layout Transposes (``tigris.passes.matmul_relabel.STRIDED_TOKENS``),
    every product of two activations is structural (``tigris.ops.matmul.ROW_BANDS``), a channel ArgMax writes a
    rank-3 output (``tigris.passes.index_ops.KEEP_PIXELS``), NonMaxSuppression is one op over float boxes and
    scores (``tigris.passes.index_ops.PER_CLASS``, ``tigris.ops.index.INT8_INPUTS``), a join in place needs one
    row and a first input of its own (``tigris.ops.concat.ROW_JOINS``) and a structural Transpose and a
    Dequantize write buffers of their own (``tigris.ops.transpose.IN_PLACE``, ``tigris.ops.quant.WIDEN_IN_PLACE``),
    a rank-3 output Softmax over its last axis runs across the rows (``tigris.passes.softmax_lines.ENABLED``), and a
    float ``[1, C]`` input quantized at the boundary is one row (``tigris.passes.vector_rows.ENABLED``).
    The graph is prepared again inside it."""

    FLAGS = (("tigris.ops.pad", "ROW_MAPS"), ("tigris.passes.reducemean_gap", "SEQUENCES"),
             ("tigris.ops.conv", "NARROW_ROWS"), ("tigris.ops.resize", "INT8_INTERP"),
             ("tigris.passes.transpose_sink", "ENABLED"), ("tigris.ops.transpose", "ROW_BANDS"),
             ("tigris.passes.matmul_relabel", "STRIDED_TOKENS"), ("tigris.ops.matmul", "ROW_BANDS"),
             ("tigris.passes.index_ops", "KEEP_PIXELS"), ("tigris.passes.index_ops", "PER_CLASS"),
             ("tigris.ops.index", "INT8_INPUTS"), ("tigris.ops.concat", "ROW_JOINS"),
             ("tigris.ops.transpose", "IN_PLACE"), ("tigris.ops.quant", "WIDEN_IN_PLACE"),
             ("tigris.passes.softmax_lines", "ENABLED"), ("tigris.passes.vector_rows", "ENABLED"))

    def __enter__(self):
        import importlib

        self.saved = []
        for mod, flag in self.FLAGS:
            m = importlib.import_module(mod)
            self.saved.append((m, flag, getattr(m, flag)))
            setattr(m, flag, False)

    def __exit__(self, *exc):
        for m, flag, v in self.saved:
            setattr(m, flag, v)


def cols_table(models: Path) -> str:
    """Per shared model and tests/families model: the smallest fitting fast budget with --xip before column tiles
    (``col_tiles=False``: row tiles only, the earlier floor) and with them (the default), the ratio against the issue's
    0.8x target, and the op type that sets the new figure (the op whose lower bound it is). Both searches are the
    planner's ``min_fast_budget`` with the analyze command's weight and scratch figures (no weight or channel groups);
    the plan at the new figure is proven by the checker."""
    import tempfile

    from tigris import api
    from tigris.plan import op_lower_bounds, plan

    rows: list[list[object]] = []
    met = cut = grouped = 0
    with tempfile.TemporaryDirectory() as d:
        for name, path in _cols_models(models, Path(d)):
            try:
                prep = api.prepare(path)
            except (TigrisError, ImportError, NotImplementedError, KeyError, ValueError) as err:
                rows.append([name, f"not planned: {type(err).__name__}", "", "", "", "", "", "", ""])
                continue
            kw = api._plan_kwargs(prep, True)
            with _earlier_rules():
                early = api.prepare(path)
                t0 = time.perf_counter()
                before = min_fast_budget(early.graph, **{**api._plan_kwargs(early, True), "col_tiles": False})
            t1 = time.perf_counter()
            after = min_fast_budget(prep.graph, **{**kw, "col_tiles": True})
            t2 = time.perf_counter()
            if before is None or after is None:
                rows.append([name, before or "no fit", after or "no fit", "", "", "", "", "", ""])
                continue
            res = plan(prep.graph, after, **{**kw, "col_tiles": True})
            assert check_plan(prep.graph, res.plan) == [], name
            cols = sum(1 for u in res.plan.units if u.tile_cols)
            bounds = op_lower_bounds(prep.graph, **{**kw, "col_tiles": True})
            top = max(range(len(bounds)), key=lambda i: bounds[i]) if bounds else None
            limit = prep.graph.ops[top].op_type if top is not None and bounds[top] >= after else "(packing)"
            ratio = after / before
            met += ratio <= COLS_TARGET
            cut += after < before
            groups = ""
            if ratio > COLS_TARGET and limit in GROUPS_SPLIT:  # what analyze reports with channel groups
                a = api.analyze(path, 16, xip=True, prepared=prep, emit=False, groups_advice=True, tradeoff=False)
                if a.min_fast_budget:
                    groups = f"{a.min_fast_budget} ({a.min_fast_budget / before:.2f})"
                    grouped += a.min_fast_budget <= COLS_TARGET * before
            rows.append([name, before, after, f"{ratio:.2f}", "yes" if ratio <= COLS_TARGET else "no", cols,
                         limit, f"{t1 - t0:.1f} / {t2 - t1:.1f}", groups])
            print(rows[-1], flush=True)
    headers = ["model", "row tiles B", "column tiles B", "ratio", f"<= {COLS_TARGET}x", "COLS units", "set by",
               "search s (before / after)", "with channel groups B (ratio)"]
    return (
        "Smallest fitting fast budget with `--xip` before and after column tiles (`python3 bench/plan_quality.py "
        "--cols`; docs/memory-planning.md \"Column tiles\"): `row tiles` plans with `col_tiles=False` (one output row "
        "per tile is the floor) and the earlier rules of the ops that set it (a reflect/edge/wrap Pad of the rows "
        "needs its whole input, an AveragePool over a whole sequence stays a pool, a conv's full-width band reserves "
        "CONV_MR patches, an int8 linear Resize runs as a float island, the Transposes of channels-last islands "
        "stay, every Transpose is structural, a dense layer over tokens is a Gemm between layout Transposes, a "
        "product of two activations is structural, a channel ArgMax writes a rank-3 output, NonMaxSuppression is one "
        "op over float boxes and scores, a join in place needs one row and a first input of its own and a structural "
        "Transpose and a Dequantize write buffers of their own, and an output Softmax over the last axis of a rank-3 "
        "`[1, boxes, k]` tensor runs across its rows (stored `nwc`, its rows are the k values; now it runs on the "
        "transposed tensor, rows = boxes: docs/passes.md \"Softmax lines across rows\"), and a float `[1, C]` input "
        "quantized at the boundary is one row (now its C values are rows: docs/passes.md \"Vector inputs as rows\"): "
        "bench/plan_quality.py `_earlier_rules`), `column tiles` with the default. Both are the planner's own search with the analyze "
        "command's weight and scratch figures, without weight or channel groups; `COLS units` counts the column-split "
        "units of the plan at the new figure (proven by the checker); `set by` is the type of the op whose lower "
        "bound is that figure. "
        f"{cut} of {len(rows)} models fit in less; {met} reach the issue's target of {COLS_TARGET}x. Both columns plan "
        "the normalized graph, where an AveragePool over the whole image is a GlobalAveragePool and a channel "
        "shuffle a per-pixel Gather (docs/memory-planning.md \"Column tiles\"), so their row-tile figures are lower "
        "than before those passes too (kws_dscnn int8 8,064 -> 1,280 B, the shuffle family f32 16,384 -> 2,048). "
        "Where the ratio stays above the target an op the tiles do not cut sets the figure: Gemm/MatMul, Transpose, "
        "NonMaxSuppression (ssd_nms f32: the boxes, one class's scores and the rows), "
        "Concat layers, or a depthwise conv whose window spans "
        "its whole input along a width-1 axis (streaming_wakeword). Where that op is a conv, a depthwise conv, a "
        "dense layer (Gemm/MatMul) or an element-wise op after one, `with channel groups` is what `tigris analyze "
        "--xip` reports (weight and channel groups, docs/memory-planning.md \"Weights that do not fit\"; a dense "
        "layer runs as output-feature groups, each reading the whole input vector, and takes the element-wise ops "
        "up to a graph output along, \"Channel tails\"): "
        f"{grouped} more models reach the target that way.\n\n"
        + markdown_table(headers, rows)
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=str(REPO.parent / "shared" / "models"))
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    ap.add_argument("--scaling", action="store_true", help="only the planning-time table (synthetic graphs)")
    ap.add_argument("--sram-only", action="store_true", help="only the SRAM-only table (no PSRAM)")
    ap.add_argument("--order", action="store_true", help="only the operator-order table (plan_order)")
    ap.add_argument("--halo", action="store_true", help="only the halo reuse table (recompute, callgrind counts)")
    ap.add_argument("--only", nargs="*", help="with --halo or --sram-only: models whose name contains one of these "
                    "(--sram-only keeps the other rows of the table)")
    ap.add_argument("--no-count", action="store_true", help="with --halo: skip the instruction counts")
    ap.add_argument("--shared-only", action="store_true",
                    help="with --halo: only the shared models (no built peer or family models)")
    ap.add_argument("--cols", action="store_true", help="only the column tiles table (plan_col_tiles)")
    args = ap.parse_args(argv)
    if args.cols:
        body = cols_table(Path(args.models))
        print(body)
        if not args.no_write:
            write_section("plan_col_tiles", body)
        return 0
    if args.order:
        body = order_table(Path(args.models))
        print(body)
        if not args.no_write:
            write_section("plan_order", body)
        return 0
    if args.halo:
        body = halo_table(Path(args.models), not args.no_count, args.only, not args.shared_only)
        print(body)
        if not args.no_write and not args.only and not args.shared_only:
            write_section("plan_halo_reuse", body)
        return 0
    if args.sram_only:
        body = sram_only_table(Path(args.models), only=args.only)
        print(body)
        if not args.no_write:
            write_section("plan_sram_only", body)
        return 0
    if args.scaling:
        body = scaling_table()
        print(body)
        if not args.no_write:
            write_section("plan_scaling", body)
        return 0
    models = sorted(Path(args.models).rglob("*.onnx"))
    headers = ["model", "fast budget", "strategy", "fits", "fast peak KiB", "arena/timeline", "stages", "tiles",
               "spill+reload KiB", "recompute %", "plan s"]  # fmt: skip
    rows: list[list[object]] = []
    for path in models:
        name = str(path.relative_to(args.models)).removesuffix(".onnx")
        try:
            graph, scratch, note = prepare(path)
            if note:
                name += f" ({note})"
        except (TigrisError, ImportError, NotImplementedError, KeyError, ValueError) as err:
            rows.append([name, "-", "-", f"not planned: {type(err).__name__}: {str(err)[:60]}"] + [""] * 7)
            print(rows[-1], flush=True)
            continue
        macs = sum(op_macs(graph, op) for op in graph.ops)
        variants = list(STRATEGIES)
        if any(op.op_type == "GlobalAveragePool" for op in graph.ops):
            variants.append(NO_ACC_GAP)
        for strategy in variants:
            for label, budget in BUDGETS:
                rows.append(row(name, label, strategy, graph, budget, scratch, macs))
                print(rows[-1], flush=True)
            t0 = time.perf_counter()
            best = min_fast_budget(graph, xip=True, scratch_bytes_of=scratch, **plan_options(strategy))
            search_s = time.perf_counter() - t0
            if best is not None:
                r = row(name, f"min {kib(best)}K", strategy, graph, best, scratch, macs)
                r[-1] = f"{r[-1]} (+{search_s:.1f} search)"
                rows.append(r)
                print(rows[-1], flush=True)
    tradeoff = recompute_tradeoff(Path(args.models))
    targets = check_targets(rows)
    body = (
        "Planning quality per shared model (`python3 bench/plan_quality.py`, XIP, float32 and int8 as stored). "
        "`arena/timeline` is the worst unit's offset-assigned peak over its stage-4 timeline peak (1.000 = the "
        "lower bound is reached). `spill+reload` is slow-memory traffic per inference; `recompute %` is halo "
        "recompute MACs over the model's conv/gemm MACs; `plan s` is the planning time.\n\n"
        + targets
        + "\n\n"
        + markdown_table(headers, rows)
        + "\n\n"
        + tradeoff
    )
    print(body)
    if not args.no_write:
        write_section("plan_quality", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
