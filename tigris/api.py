"""The library surface: everything the CLI does is one call here, and tests call the same functions.

* :func:`analyze` — stages 1-6 and the report (plus the plan size, so the flash figure is real).
* :func:`compile_model` — stages 1-7: the ``.tgrs`` bytes, or :class:`DoesNotFitError`.
* :func:`run_plan` — run a plan on the host build of runtime_c.
* :func:`verify` — compile, run on the C runtime, compare with ONNX Runtime and the NumPy reference.
* :func:`inspect` — what an ``.onnx`` or ``.tgrs`` file contains, without compiling or running.
* :func:`firmware_ram` — the RAM a firmware running a plan needs: both arenas, the I/O buffers, the total.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from tigris.ir import AnalyzedGraph, DoesNotFitError, Op, TigrisError, UnsupportedModelError
from tigris.ops import Lowered
from tigris.plan.types import XIP_DEFAULT, MemoryPlan, NoFit, PlanResult

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


# ---------------------------------------------------------------------------------------------------------------
# Sizes and shapes from the command line
# ---------------------------------------------------------------------------------------------------------------
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)(?:i?[bB])?\s*$")


def parse_size(text: str | int | None) -> int | None:
    """``256K``, ``4M``, ``1.5M`` (K = 1024) or plain bytes -> bytes."""
    if text is None or isinstance(text, int):
        return text
    m = _SIZE_RE.match(str(text))
    if not m:
        raise TigrisError(f"cannot read size {text!r}; use e.g. 256K, 4M, 1.5M or bytes", "size")
    mult = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[m.group(2).lower()]
    value = float(m.group(1)) * mult
    if value != int(value):
        raise TigrisError(f"size {text!r} is not a whole number of bytes", "size")
    return int(value)


def format_size(n: int | None) -> str:
    """Bytes as the size options accept them back: ``64K``, ``1G``, ``18.75K`` when exact to two decimals,
    otherwise plain bytes (``30144``). ``parse_size(format_size(n)) == n`` for every n >= 0."""
    if n is None:
        return "-"
    n = int(n)
    for unit, mult in (("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if n >= mult:
            v = n / mult
            if round(v, 2) * mult == n:
                text = f"{v:.2f}".rstrip("0").rstrip(".")
                return f"{text}{unit}"
    return str(n)


def parse_clock(text: str | int | None) -> int | None:
    """``168M``, ``480MHz``, ``32000000`` -> Hz (M = 10**6, k = 10**3: clocks are decimal)."""
    if text is None or isinstance(text, int):
        return text
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)(?:[hH][zZ])?\s*$", str(text))
    if not m:
        raise TigrisError(f"cannot read clock {text!r}; use e.g. 168M, 480MHz or Hz", "--clock")
    value = float(m.group(1)) * {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}[m.group(2).lower()]
    if value <= 0:
        raise TigrisError(f"clock {text!r} must be positive", "--clock")
    return int(round(value))


def parse_bandwidth(text: str | int | None) -> int | None:
    """``--psram-bandwidth``: bytes per second, ``40M`` (= 40 x 2**20 B/s, like sizes) or ``40M/s``."""
    if text is None or isinstance(text, int):
        return text
    value = parse_size(str(text).strip().removesuffix("/s"))
    if not value:
        raise TigrisError(f"bandwidth {text!r} must be positive bytes per second", "--psram-bandwidth")
    return value


# ---------------------------------------------------------------------------------------------------------------
# The JSON envelope every command's --json output shares
# ---------------------------------------------------------------------------------------------------------------
SCHEMA_VERSION = 1  # bumped when a JSON field changes meaning or disappears (adding fields keeps it)


def json_envelope(command: str, body: dict[str, Any]) -> dict[str, Any]:
    """``{"tool": {"name", "version"}, "schema", "command", ...body}``: the first keys of every --json output."""
    from tigris import __version__

    return {"tool": {"name": "tigris", "version": __version__}, "schema": SCHEMA_VERSION, "command": command, **body}


def json_error(command: str, message: str, exit_code: int, **extra: Any) -> dict[str, Any]:
    """What a failing command prints on stdout in --json mode (the one-line error still goes to stderr)."""
    return json_envelope(command, {"error": message, "exit": exit_code, **extra})


def parse_input_shapes(specs: tuple[str, ...] | list[str] | None) -> dict[str, tuple[int, ...]]:
    """``NAME:1x3x96x96`` (repeatable) -> {NAME: (1, 3, 96, 96)}. The name may itself contain ':'."""
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs or ():
        name, sep, dims = str(spec).rpartition(":")
        try:
            if not sep or not name:
                raise ValueError
            shape = tuple(int(d) for d in dims.lower().split("x"))
            if any(d <= 0 for d in shape):
                raise ValueError
        except ValueError:
            raise TigrisError(f"cannot read input shape {spec!r}; use NAME:1x3x96x96", "--input-shape") from None
        shapes[name] = shape
    return shapes


# ---------------------------------------------------------------------------------------------------------------
# Stages 1-2
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Prepared:
    graph: AnalyzedGraph
    reports: list[Any]
    lowered: list[Lowered]
    # the planner's memo of candidate units' band layouts (plan(layouts=)): valid for every plan of this graph,
    # since its scratch sizes come from ``lowered`` alone and the key holds the weight bytes that XIP changes
    layouts: dict = field(default_factory=dict, repr=False, compare=False)
    # the planner's operator order (tigris.plan.plan op_order): "search" (memory-aware, the default) or "spec" (the
    # loader's DFS order only, the baseline)
    op_order: str = "search"
    # column tiles below the row floor (tigris.plan.cols, plan(col_tiles=)); analyze tries them last, after weight
    # groups, so a model that fits without them keeps its plan
    col_tiles: bool = field(default_factory=lambda: _col_tiles_default())
    # one SRAM region (plan(one_region=True), --one-region): the slow arena is the fast arena's memory, so a unit's
    # buffers may use the bytes of the slow homes not live during it; -s then bounds the region's end
    one_region: bool = False


def _col_tiles_default() -> bool:
    from tigris.plan.types import COL_TILES_DEFAULT

    return COL_TILES_DEFAULT


WEIGHT_FORMATS = {"fp32": "float32", "fp16": "float16"}


def weights_dtype(weights: str | None, precision: str) -> str:
    """The stored dtype of float weights for ``--weights`` (fp32, fp16, or None: the model's own precision)."""
    if weights is None:
        return "float16" if precision == "float16" else "float32"
    if weights not in WEIGHT_FORMATS:
        raise TigrisError(f"unknown weight format {weights!r}; use fp32 or fp16", "--weights")
    return WEIGHT_FORMATS[weights]


def prepare(model: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None,
            numerics: str | None = None, weights: str | None = None) -> Prepared:
    """Load (stage 1), normalize (stage 2), refuse unsupported ops (all of them at once), and lower every op.

    ``numerics`` ("onnx" or "tflm", docs/numerics.md) selects the integer arithmetic the int8 ops are lowered for;
    None keeps the loader's default for the model's source (ONNX: onnx, TFLite: tflm). ``weights`` ("fp32" or
    "fp16") is how the float weights of conv, dwconv, fc, convtranspose and matmul are stored; None: fp16 for a float16 model, else fp32.
    """
    from tigris.load import load_model
    from tigris.ops import lower
    from tigris.ops.qmath import numerics_code
    from tigris.passes import check_supported, normalize

    if numerics is not None:
        numerics_code(numerics)  # a bad value is a one-line error before any work
    weights_dtype(weights, "float32")  # likewise
    graph = load_model(model, input_shapes or {})
    if numerics is not None:
        graph = graph.replace(numerics=numerics)
    graph = graph.replace(weights_dtype=weights_dtype(weights, graph.precision))
    graph, reports = normalize(graph)
    check_supported(graph)
    lowered = [lower(graph, op) for op in graph.ops]  # check_supported has refused every op lowering would
    return Prepared(graph, reports, lowered)


def _const_bytes(low: Lowered) -> int:
    """The op's weight bytes, as its kind counts them (the planner's prefix and the report use the same figure)."""
    from tigris.ops import kind

    return kind(low.kind).weight_bytes(low)


# ---------------------------------------------------------------------------------------------------------------
# Stages 3-6 and the report
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Analysis:
    fits: bool
    json: dict[str, Any]
    prepared: Prepared | None = None
    plan: MemoryPlan | None = None
    plan_bytes: bytes | None = None
    reason: str | None = None
    nofit: NoFit | None = None  # the planner's reason when no plan fits the fast/slow budgets (stage, op, bytes)
    min_fast_budget: int | None = None
    notes: list[str] = field(default_factory=list)


def _plan_kwargs(prep: Prepared, xip: bool, recompute_weight: float = 0.0) -> dict[str, Any]:
    """How the lowered ops feed the planner: their weight bytes (the fast prefix when not XIP) and kernel scratch."""
    from tigris.ops import kind

    lowered, graph = prep.lowered, prep.graph
    # the planner asks an op's weight bytes once per stage range it prices (millions of times on a split graph)
    weights = [0 if xip else _const_bytes(low) for low in lowered]

    def weight_bytes_of(i: int) -> int:
        return weights[i]

    def scratch_bytes_of(i: int, out_rows: int, out_cols: int | None = None) -> int:
        low = lowered[i]
        if low.alias:
            return 0
        k = kind(low.kind)
        return int(k.scratch_bytes(low, graph, out_rows) if out_cols is None else
                   k.band_scratch_bytes(low, graph, out_rows, out_cols))

    return {"xip": xip, "weight_bytes_of": weight_bytes_of, "scratch_bytes_of": scratch_bytes_of,
            "recompute_weight": recompute_weight, "layouts": prep.layouts, "op_order": prep.op_order,
            "col_tiles": prep.col_tiles, "one_region": prep.one_region}


def _plan(prep: Prepared, fast: int, slow: int | None, xip: bool, recompute_weight: float = 0.0,
          feasibility: bool = False) -> PlanResult:
    """The plan at these budgets; ``feasibility``: only whether one exists (``tigris.plan.plan``: the same NoFit, a
    Fit that is *a* plan, not the chosen one), for probes that ask nothing else."""
    from tigris.plan import plan

    return plan(prep.graph, fast, slow, feasibility=feasibility and CHEAP_PROBES,
                **_plan_kwargs(prep, xip, recompute_weight))


# The group searches' shortcuts (feasibility probes, the split attempt's early refusal, its rounds that cannot help
# skipped): they change no answer, and tests/passes/test_channel_groups.py checks that by turning them off
CHEAP_PROBES = True


def _fits(prep: Prepared, fast: int, slow: int | None, xip: bool, recompute_weight: float = 0.0) -> bool:
    from tigris.plan import fits

    return fits(prep.graph, fast, slow_budget=slow, **_plan_kwargs(prep, xip, recompute_weight))


def _min_fast(prep: Prepared, slow: int | None, xip: bool, recompute_weight: float = 0.0,
              known_fail: int = 0, failed: dict[int, NoFit] | None = None) -> int | None:
    """Smallest fast budget at which a plan exists (the planner's own search, to 16 bytes); ``known_fail`` is a
    budget already seen not to fit with these options; ``failed`` receives the search's failing probes."""
    from tigris.plan import min_fast_budget

    return min_fast_budget(prep.graph, known_fail=known_fail, failed=failed, slow_budget=slow,
                           **_plan_kwargs(prep, xip, recompute_weight))


OBJECTIVES = ("traffic", "recompute", "latency")
# What the planner minimizes when no --objective is given: the latency estimate of the target (generic when none), so
# a plan that reuses its halos wins over one that recomputes them to save some traffic (docs/cli.md "--objective").
DEFAULT_OBJECTIVE = "latency"
RECOMPUTE_FIRST = 1e6  # the recompute objective: one recomputed MAC outweighs any traffic a plan can save


def objective_weight(prep: Prepared, objective: str, target: str, clock: int | None, bandwidth: int | None) -> float:
    """The planner's ``recompute_weight`` (bytes of slow traffic one recomputed MAC is worth) for an objective."""
    if objective not in OBJECTIVES:
        raise TigrisError(f"unknown objective {objective!r}; use {', '.join(OBJECTIVES)}", "--objective")
    if objective == "traffic":
        return 0.0
    if objective == "recompute":
        return RECOMPUTE_FIRST
    from tigris.cost import recompute_weight

    return recompute_weight(prep.graph, prep.lowered, target, clock, bandwidth)


# SRAM-only plans (docs/memory-planning.md "Boards without slow memory"): the expansions split into channel groups
# (weight_split.split_expansion) are those whose expanded tensor is at least half the largest activation (the
# block that sets the head's buffers), in this many groups (fewer when it has fewer channels)
EXPANSION_GROUPS = 8
# the shares of the largest activation an expanded tensor reaches to be split, tried in turn (the smaller also splits
# the next blocks' expansions, whose units then hold fewer bytes under the head's output home)
EXPANSION_SHARES = (2, 4)
# fast budgets the SRAM-only search probes on the split graph, as fractions of the unsplit graph's best fast budget
EXPANSION_PROBES = (1.0, 0.9, 0.8)


def _expansion_split(prep: Prepared, share: int = EXPANSION_SHARES[0]) -> Prepared | None:
    """``prep`` with the memory-heavy expansions (``EXPANSION_GROUPS``) run as expansion groups, lowered; None when
    the graph has none. Planned in the rewrite's own order (its groups are already interleaved: the order search
    costs several plans on such a graph and finds nothing better)."""
    from tigris.ops import lower
    from tigris.passes.weight_split import expansion_of, output_channels, split_expansion

    g = prep.graph
    largest = max((t.nbytes for t in g.activations()), default=0)
    names = [op.name for op in g.ops if expansion_of(g, op.name) is not None
             and share * g.tensors[op.outputs[0]].nbytes >= largest]
    if not names:
        return None
    for name in names:
        g = split_expansion(g, name, min(EXPANSION_GROUPS, output_channels(g, g.op_by_name(name))))
    kept = {op.name: low for op, low in zip(prep.graph.ops, prep.lowered)}
    lowered = [kept[op.name] if op.name in kept else lower(g, op) for op in g.ops]  # new ops have new names
    return Prepared(g, prep.reports, lowered, op_order="spec", col_tiles=prep.col_tiles, one_region=prep.one_region)


def expansion_sram_only(prep: Prepared, one: Any, xip: bool, weight: float) -> Any:
    """The SRAM-only figure as one region with expansion groups (``_expansion_split``), when it needs fewer bytes
    than ``one`` (``min_sram_only_budget(one_region=True)`` of the plain graph), else None: a few probes
    (``EXPANSION_PROBES``) at fast budgets below ``one``'s, each the least-SRAM plan and then the ordinary plan at
    its region (what ``-m``/``-s --one-region`` give; ``analyze`` plans the split graph there when the plain graph
    does not fit), within ``one``'s recompute or 10% of the MACs, whichever is more. A ``SramOnly``."""
    from tigris.plan.spatial import op_macs

    cap = max(one.recompute_macs, sum(op_macs(prep.graph, op) for op in prep.graph.ops) // 10)
    best = None
    for split in _expansion_splits(prep):
        best = _expansion_region(split, one, best, cap, xip, weight)
    return best


def _expansion_splits(prep: Prepared):
    """The distinct split graphs of ``EXPANSION_SHARES``, in turn (a share with no expansion of its size, or the
    same ones as the share before, gives none)."""
    seen: set[tuple[str, ...]] = set()
    for share in EXPANSION_SHARES:
        split = _expansion_split(prep, share)
        names = None if split is None else tuple(op.name for op in split.graph.ops)
        if names is not None and names not in seen:
            seen.add(names)
            yield split


def _expansion_region(split: Prepared, one: Any, best: Any, cap: int, xip: bool, weight: float) -> Any:
    """``expansion_sram_only`` on one split graph: ``best`` or a plan needing less."""
    from tigris.plan import SramOnly, plan, sram_bytes
    from tigris.plan.types import align_up

    kw = {**_plan_kwargs(split, xip, weight), "one_region": True}
    for frac in EXPANSION_PROBES:
        budget = int(one.fast_budget * frac) // 16 * 16
        probe = plan(split.graph, budget, least_sram=True, **kw)
        if isinstance(probe, NoFit) or probe.plan.recompute_macs > cap:
            continue
        got = plan(split.graph, budget, sram_bytes(probe.plan), **kw)
        if isinstance(got, NoFit) or got.plan.recompute_macs > cap:
            continue
        p = got.plan
        if sram_bytes(p) < (best or one).total_bytes:
            best = SramOnly(sram_bytes(p), budget, p.fast_peak, sram_bytes(p), p.recompute_macs)
    # With a slow budget, each unit of a one-region plan has at most the region less the graph inputs and outputs
    # live across it (plan's Costs.caps): the head is cut to what the input leaves of the region while the later
    # units keep the fast budget. Bisect the region at that fast budget (the plans are ordinary plans at -m/-s).
    budget = (best or one).fast_budget
    lo = sum(align_up(split.graph.tensors[n].nbytes) for n in split.graph.inputs)
    hi = (best or one).total_bytes - 16
    while lo <= hi:
        mid = (lo + hi) // 32 * 16
        got = plan(split.graph, budget, mid, **kw)
        if isinstance(got, NoFit) or got.plan.recompute_macs > cap:
            lo = mid + 16
            continue
        p = got.plan
        best = SramOnly(sram_bytes(p), budget, p.fast_peak, sram_bytes(p), p.recompute_macs)
        hi = sram_bytes(p) - 16
    return best


def _sram_only(prep: Prepared, xip: bool, weight: float) -> dict[str, Any] | None:
    """With a slow budget too small: the least SRAM that holds both arenas (a board without PSRAM gives the runtime
    two SRAM regions), and the -m/-s that plan it; under "one_region" the same search with both arenas in one block
    (``--one-region``) when that needs fewer bytes (else null)."""
    from tigris.plan import min_sram_only_budget

    def figure(r) -> dict[str, Any]:
        return {"total_bytes": r.total_bytes, "total": format_size(r.total_bytes),
                "fast_budget": format_size(r.fast_budget), "fast_budget_bytes": r.fast_budget,
                "fast_bytes": r.fast_bytes, "slow_bytes": r.slow_bytes, "recompute_macs": r.recompute_macs}

    kw = _plan_kwargs(prep, xip, weight)
    kw.pop("one_region")
    two = None if prep.one_region else min_sram_only_budget(prep.graph, **kw)
    one = min_sram_only_budget(prep.graph, one_region=True, **kw)
    if one is not None:
        one = expansion_sram_only(prep, one, xip, weight) or one
    if two is None and one is None:
        return None
    out = figure(two if two is not None else one)
    out["one_region"] = None
    if one is not None and (two is None or one.total_bytes < two.total_bytes):
        out["one_region"] = figure(one)
    if prep.one_region:  # asked for one region: that is the figure
        out["one_region"] = figure(one) if one is not None else None
    return out


def _limiting(prep: Prepared, budget: int, slow: int | None, xip: bool, weight: float,
              failed: dict[int, NoFit] | None = None) -> dict[str, Any] | None:
    """The op that fails just below the smallest budget that fits: the one that sets that budget (from the search's
    own probe of that budget when it made one)."""
    if budget <= 16:
        return None
    # (a feasibility probe refuses exactly as the full plan does, and only the refusal is asked for)
    res = (failed or {}).get(budget - 16) or _plan(prep, budget - 16, slow, xip, weight, feasibility=True)
    if not isinstance(res, NoFit) or res.op is None:
        return None
    return {"stage": res.stage, "op": res.op, "op_type": res.op_type, "need_bytes": res.need_bytes,
            "cause": res.cause, "message": res.message}


MAX_SPLIT_ROUNDS = 8  # re-plans _split_weights may make before it gives up


def _split_weights(prep: Prepared, fast: int, slow: int | None, xip: bool, weight: float, res: PlanResult,
                   max_plans: int = MAX_SPLIT_ROUNDS, detail: dict[str, Any] | None = None,
                   feasibility: bool = False,
                   k_groups: bool = False) -> tuple[Prepared, PlanResult, list[dict[str, Any]]]:
    """Weight and channel groups (docs/memory-planning.md "Weights that do not fit", "Channel groups"): when a plan
    does not fit because single ops need more fast memory than the budget even as units of their own, split those
    ops into channel groups (``tigris.passes.weight_split``) and plan again.

    An op whose lower bound (``tigris.plan.op_lower_bounds``: what it needs as a unit of its own) exceeds the budget
    is split by its weights when it is a Conv/Gemm with independent output channels, its weights are copied (no
    XIP) and the rest of what it needs (the bound less its weights) fits: into the smallest count whose largest
    group fits what the budget leaves. Otherwise (weights in flash, or its activations are what does not fit: a
    depthwise conv's input rows, a conv's output row) it is split by its *channels*: into the fewest groups whose
    largest, planned as a unit of its own (``weight_split.group_op``: a depthwise conv's input Slice and the sub-op),
    fits the budget. When the plan still fails at a split op (or at another op a split can help), its count grows
    (at least by one) and the graph is planned again, at most ``MAX_SPLIT_ROUNDS`` rounds (and at most
    ``max_plans`` plans: a count still over the budget in the split graph's own op bounds grows without a plan).
    Returns the prepared graph the plan is for, the plan result and one record per split op; the input prepared
    graph and result unchanged when no split fits, so a model that fits without groups keeps exactly its plan (the
    split is tried only after a NoFit). ``detail`` receives the last split graph planned and its result
    (``prepared``, ``result``), also when it did not fit, for the minimum-budget search. ``feasibility`` plans each
    split graph as a feasibility probe (the same refusals; a Fit that is only *a* plan): for the searches, which ask
    only whether a budget compiles. ``k_groups``: an op whose output-channel groups cannot fit (its count at one
    group per panel and a group still over the budget) is split along its input channels instead
    (``weight_split.split_k``: partial ops summed by Adds; float only).
    """
    from tigris.ops import lower
    from tigris.passes.weight_split import input_channels, k_splittable, max_groups, split_k, split_op, splittable
    from tigris.plan import op_lower_bounds, ops_over
    from tigris.plan.types import align_up

    if not isinstance(res, NoFit):
        return prep, res, []
    g0 = prep.graph
    index = {op.name: i for i, op in enumerate(g0.ops)}
    splits: dict[str, int] = {}
    by_channels: dict[str, int] = {}  # ops split for their activations -> the largest group's own bound
    tails, head_of = channel_tails(g0)  # channel groups take a reducing channel-local tail along

    def dep(low: Lowered) -> int:
        """The bytes of an op that shrink with its group: its weights, and the float32 copy of float16 weights its
        kernel widens into scratch."""
        from tigris.ops._mac import f16_scratch_bytes

        return align_up(_const_bytes(low)) + f16_scratch_bytes(low)

    def grow(name: str, need: int, w_cur: int) -> bool:
        """Raise the group count of ``name`` so that a group of it fits beside the ``need - w_cur`` bytes that do
        not shrink with it."""
        i = index[name]
        avail = fast - (need - w_cur)
        if xip or w_cur == 0 or avail <= 0 or splittable(g0, g0.ops[i]) is not None:
            return False
        old, limit = splits.get(name, 1), max_groups(g0, g0.ops[i])
        if old >= limit:  # one panel of every input channel is over the budget: input-channel groups
            return k_groups and grow_k(name)
        splits[name] = min(limit, max(old + 1, -(-dep(prep.lowered[i]) // avail)))
        return True

    k_split: set[str] = set()  # ops split along their input channels (summed by Adds)

    def grow_k(name: str) -> bool:
        """Split ``name`` (further) into input-channel (K) groups: the fewest, more than it has, whose largest
        group (its input Slice and partial op) fits the budget as a unit of its own."""
        op = g0.ops[index[name]]
        if k_splittable(g0, op) is not None:
            return False
        least = (splits.get(name, 1) if name in k_split else 1) + 1
        units = input_channels(g0, op)
        if least > units or k_group_need(g0, op, 1, prep, xip, weight, within=fast) > fast:
            return False
        lo, hi = 1, -(-units // least)
        while lo < hi:  # the most input channels whose group fits
            mid = (lo + hi + 1) // 2
            if k_group_need(g0, op, mid, prep, xip, weight, within=fast) <= fast:
                lo = mid
            else:
                hi = mid - 1
        k_split.add(name)
        splits[name] = max(least, -(-units // lo))
        return True

    def grow_channels(name: str) -> bool:
        """Split ``name`` (further) by its channels: the fewest groups, more than it has, whose largest group fits
        the budget as a unit of its own."""
        op = g0.ops[index[name]]
        if splittable(g0, op, channels=True) is not None:
            return False
        least, limit = splits.get(name, 1) + 1, max_groups(g0, op)
        if least > limit:
            return False
        units = output_channels(g0, op)
        step = channel_step(g0, op)
        steps = -(-units // step)
        tail = tails.get(name, ())
        if joining_need(g0, op, prep.col_tiles, tail) > fast or \
                group_need(g0, op, min(step, units), prep, xip, weight, tail, fast) > fast:
            return False  # the joining Concat does not fit, or not even one channel (panel) does
        lo, hi = 1, -(-steps // least)  # the largest group of ``least`` groups has ``hi`` steps
        while lo < hi:  # the most steps whose group fits
            mid = (lo + hi + 1) // 2
            if group_need(g0, op, min(mid * step, units), prep, xip, weight, tail, fast) <= fast:
                lo = mid
            else:
                hi = mid - 1
        splits[name] = min(limit, max(least, -(-steps // lo)))
        by_channels[name] = group_need(g0, op, min(-(-steps // splits[name]) * step, units), prep, xip, weight,
                                       tail)
        return True

    def grow_any(name: str, need: int, w_cur: int) -> bool:
        if name in k_split:
            return grow_k(name)
        if name in head_of:  # an op of a channel tail shrinks with the groups of the op it follows
            return grow_channels(head_of[name])
        return (name not in by_channels and grow(name, need, w_cur)) or grow_channels(name)

    from tigris.passes.weight_split import channel_step, group_bounds, output_channels

    def can_grow(i: int) -> bool:
        """Whether a split can help op ``i`` (nothing is split yet), without the bisection over group sizes of its
        first ``grow_any``: weight groups when ``grow``'s guards pass and one channel step's group fits (a group's
        bound only grows with its channels, so no count fits else), channel groups when one channel step's group
        and the joining Concat fit (the bisection then always finds a count)."""
        op = g0.ops[i]
        if op.name in head_of:  # a channel tail's op: its head's channel groups
            op = g0.op_by_name(head_of[op.name])
        else:
            w_cur = dep(prep.lowered[i])
            # weight groups: their guards, and one channel step's group fitting (no count of groups fits else) or,
            # with k_groups, one input channel's group (grow() then splits it along K)
            if not (xip or w_cur == 0 or fast - (bounds[i] - w_cur) <= 0 or splittable(g0, op) is not None):
                if max_groups(g0, op) > 1 and group_need(g0, op, min(channel_step(g0, op), output_channels(g0, op)),
                                                         prep, xip, weight, within=fast) <= fast:
                    return True
                if k_groups and k_splittable(g0, op) is None and \
                        k_group_need(g0, op, 1, prep, xip, weight, within=fast) <= fast:
                    return True
        tail = tails.get(op.name, ())
        if splittable(g0, op, channels=True) is not None or max_groups(g0, op) < 2 or \
                joining_need(g0, op, prep.col_tiles, tail) > fast:
            return False
        units = output_channels(g0, op)
        return group_need(g0, op, min(channel_step(g0, op), units), prep, xip, weight, tail, fast) <= fast

    bounds = op_lower_bounds(g0, **_plan_kwargs(prep, xip, weight))
    # every op over the budget must be one a split helps, else the attempt gives up at the first that is not: find
    # that op before any bisection over group sizes (the answer and the op named are the loop's below)
    for i, op in enumerate(g0.ops):
        if CHEAP_PROBES and bounds[i] > fast and not can_grow(i):
            if detail is not None:
                detail["need_bytes"] = bounds[i]
            return prep, res, []
    for i, op in enumerate(g0.ops):
        if bounds[i] > fast and head_of.get(op.name) in by_channels:
            continue  # its head's groups were sized with it
        if bounds[i] > fast and not grow_any(op.name, bounds[i], dep(prep.lowered[i])):
            if detail is not None:
                detail["need_bytes"] = bounds[i]
            # an op over the budget that no split helps is over it in every plan of every split graph too: give up
            # before planning anything (a refusal stays as cheap as it was)
            return prep, res, []
    kept = {low.op_name: low for low in prep.lowered}
    # lowered groups, built split graphs and their plans, shared by the attempts at one budget (in the memo of
    # ``prep``, which analyze's attempts share): the attempts with column tiles and with input-channel groups repeat
    # the rounds of the attempts before them until a count differs, and a split graph built before keeps its own
    # memo of band layouts and op bounds. Only the latest budget's entry is kept: the advice searches probe many
    # budgets, whose counts differ, and their split graphs would pile up. The entry holds ``g0``, so its id names
    # no other graph while it lives.
    scope = (fast, slow, xip, weight)
    memo = prep.layouts.get(("split", id(g0)))
    if memo is None or memo[0] is not g0 or memo[4] != scope:
        memo = prep.layouts[("split", id(g0))] = (g0, {}, {}, {}, scope)
    cache: dict[tuple, Lowered] = memo[1]  # lowered groups (a group whose count did not change is reused)
    built: dict[tuple, Prepared] = memo[2]  # split graphs by what build() makes them from
    planned: dict[tuple, PlanResult] = memo[3]  # plans of a graph in ``built`` (which keeps its id alive)

    def build() -> Prepared:
        key = (prep.op_order, prep.col_tiles, prep.one_region, tuple(splits.items()), tuple(sorted(k_split)),
               tuple((n, tails.get(n, ())) for n in sorted(splits) if n in by_channels))
        if key not in built:
            # one split graph at a time: each keeps its own memo of band layouts, and holding every graph an
            # advice search builds costs gigabytes; a plan or bound memoized by a graph's id goes with the graph
            built.clear()
            planned.clear()
            built[key] = _build()
        return built[key]

    def _build() -> Prepared:
        graph = g0
        for name, groups in splits.items():
            if name in k_split:
                graph = split_k(graph, name, groups)
                continue
            graph = split_op(graph, name, groups, tails.get(name, ()) if name in by_channels else ())
        lowered = []
        for op in graph.ops:
            if op.name in kept and op.name not in splits and op.name in index:
                lowered.append(kept[op.name])
                continue
            key = (op.name, op.inputs, op.outputs, op.attrs.get("weight_group"))
            if key not in cache:
                cache[key] = lower(graph, op)
            lowered.append(cache[key])
        return Prepared(graph, prep.reports, lowered, op_order=prep.op_order, col_tiles=prep.col_tiles,
                        one_region=prep.one_region)

    def origin(g: AnalyzedGraph, i: int) -> str:
        return g.ops[i].attrs.get("weight_group", (g.ops[i].name,))[0]

    def least_over(g: AnalyzedGraph, cb: dict[int, int], o: str) -> int | None:
        """The fewest channels of a group of ``o`` (its sub-op, not a Slice, tail op or Concat) that is over the
        budget in the split graph ``g`` (``cb``: the ops over it); None when no sub-op is."""
        kind = g0.ops[index[o]].op_type if o in index else None
        return min((output_channels(g, g.ops[i]) for i in cb if origin(g, i) == o
                    and g.ops[i].op_type == kind and g.ops[i].attrs.get("weight_group", ("", -1))[1] >= 0),
                   default=None)

    def shrinks(o: str, channels: int | None, left: int) -> bool:
        """Whether a count the rounds ``left`` reach (one group more per round: ``grow_channels``) leaves no group
        of ``o`` with ``channels`` channels or more. A group's bound grows with its channels (weights, output
        band, scratch; its input band is the same), so while such a group exists one is over the budget. Weight
        groups are judged once their count grew by one: ``grow`` jumps to the count whose weights fit beside the
        group's other bytes, which only fall as the groups shrink, so from then on it grows by one too. An op that may
        split by input channels instead is judged so too while the rounds left cannot bring its output count to
        its limit (only there does ``grow`` turn to input-channel groups)."""
        if channels is None or (o not in by_channels and splits[o] != before.get(o, 1) + 1):
            return True
        op = g0.ops[index[o]]
        top = max_groups(g0, op)
        # input-channel groups shrink what the output channels cannot; ``grow`` turns to them only once the output
        # count is at its limit, so an op the rounds left cannot bring to that limit keeps output-channel groups
        if o in k_split or (k_groups and o not in by_channels and k_splittable(g0, op) is None
                            and splits[o] + left - 1 >= top):
            return True
        units, step = output_channels(g0, op), channel_step(g0, op)
        limit = min(top, splits[o] + left - 1)
        return any(max(b - a for a, b in group_bounds(units, n, step)) < channels
                   for n in range(splits[o], limit + 1))

    cur, cur_res = prep, res
    rounds = 0
    last_refusal: tuple | None = None
    while rounds < MAX_SPLIT_ROUNDS:
        rounds += 1
        if splits:
            cur = build()
            # the split graph's own op bounds first: a group still over the budget grows without planning anything,
            # and an op over it that splitting cannot help ends the attempt
            # (on demand, in graph order: an attempt that ends at an op bounds none after it, and an op whose
            # bound cannot change the round's outcome is not bounded; see ``skip``)
            key = ("over", id(cur), fast, xip, weight)
            if key not in planned:
                planned[key] = ops_over(cur.graph, fast, **_plan_kwargs(cur, xip, weight))
            bound_over = planned[key]
            cb: dict[int, int] = {}  # the ops over the budget that decide the round -> their bounds
            grown: set[str] = set()
            before = dict(splits)
            least: dict[str, int] = {}  # grown op -> the fewest channels of a group of it over the budget so far
            # an op with no channel tail (nor in one) grows only through its own groups, so once it has grown its
            # count is final for the round: a group of it that stays over in every round left ends the attempt at
            # once when no caller asks why (the refusal and the result are those of the whole round)
            heads = set(head_of.values())
            stop = False
            for i in range(len(cur.graph.ops)):
                o = origin(cur.graph, i)
                c = least_over(cur.graph, {i: 0}, o)  # its channels, when a group of it over counts in least_over
                if CHEAP_PROBES and o in grown and (c is None or c >= least[o]):
                    # over or not, an op of a grown op counts only as a group of fewer channels than one already
                    # over (least_over, shrinks): the round's outcome does not depend on its bound
                    continue
                b = bound_over(i)
                if b is None:
                    continue
                cb[i] = b
                if o not in grown:
                    # a joining Concat holds a whole output band and its inputs' whatever the count
                    joining = cur.graph.ops[i].attrs.get("weight_group", ("", 0))[1] < 0
                    if o not in index or joining or not grow_any(o, b, dep(cur.lowered[i])):
                        if detail is not None:
                            detail["need_bytes"] = b  # what the split graph's op needs, split no further
                        return prep, res, []
                    grown.add(o)
                    least[o] = 1 << 62
                if c is not None and c < least[o]:
                    least[o] = c
                    if CHEAP_PROBES and detail is None and o not in heads and o not in head_of and \
                            not shrinks(o, c, MAX_SPLIT_ROUNDS - rounds):
                        stop = True
                        break
            if cb:
                if stop or (CHEAP_PROBES and any(not shrinks(o, least_over(cur.graph, cb, o),
                                                             MAX_SPLIT_ROUNDS - rounds) for o in grown)):
                    break  # a group over the budget stays over in every round left: no plan is made
                continue
            if max_plans <= 0:
                break
            max_plans -= 1
            # in the graph's own order (the split rewrite's: each group's ops, then its joining Concats); only a
            # split graph that fits so is planned again with the operator-order search, whose plan is kept where it
            # is better (a refusal is the graph order's in either case, and the search costs far more than a plan
            # on a graph of many independent groups)
            pkey = (id(cur), fast, slow, xip, weight, feasibility and CHEAP_PROBES)
            if pkey not in planned:
                got = _plan(replace(cur, op_order="spec"), fast, slow, xip, weight, feasibility)
                if not isinstance(got, NoFit) and not feasibility and cur.op_order != "spec":
                    got = _plan(cur, fast, slow, xip, weight)
                planned[pkey] = got
            cur_res = planned[pkey]
            if detail is not None:
                detail.update(prepared=cur, result=cur_res)
        if not isinstance(cur_res, NoFit) or cur_res.op is None or cur_res.cause not in ("one_row", "untileable"):
            break
        failing = next((i for i, o in enumerate(cur.graph.ops) if o.name == cur_res.op), None)
        if failing is None:
            break
        seen = (cur_res.op, cur_res.cause, cur_res.need_bytes, cur.graph.ops[failing].inputs,
                cur.graph.ops[failing].attrs.get("weight_group", ("", 0))[1], _const_bytes(cur.lowered[failing]))
        if seen == last_refusal:
            break  # the count grew, yet the same op of the same channels fails by the same bytes: growing cannot help
        last_refusal = seen
        o = origin(cur.graph, failing)
        if o not in index or not grow_any(o, cur_res.need_bytes, dep(cur.lowered[failing])):
            break
    if isinstance(cur_res, NoFit) or not splits:
        return prep, res, []
    records = []
    for name, groups in splits.items():
        subs = [i for i, op in enumerate(cur.graph.ops) if op.attrs.get("weight_group", ("",))[0] == name
                and op.attrs["weight_group"][1] >= 0]
        records.append({"op": name, "groups": groups, "cause": "activations" if name in by_channels else "weights",
                        "need_bytes": int(bounds[index[name]]), "max_group_need_bytes": by_channels.get(name),
                        "channels": "input" if name in k_split else "output",
                        "weight_bytes": _const_bytes(prep.lowered[index[name]]),
                        "max_group_bytes": max(_const_bytes(cur.lowered[i]) for i in subs)})
    return cur, cur_res, records


def channel_tails(graph: AnalyzedGraph) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    """The channel tail of every op channel groups may split (``weight_split.channel_tail``: the channel-local ops
    after it up to the last that reduces, a GlobalAveragePool) and, for every op of such a tail, the op it
    follows: a tail op over the budget is helped by splitting that op with the tail (docs/memory-planning.md
    "Channel tails")."""
    from tigris.passes.weight_split import channel_tail, splittable

    tails: dict[str, tuple[str, ...]] = {}
    head_of: dict[str, str] = {}
    for op in graph.ops:
        if splittable(graph, op, channels=True) is None:
            t = channel_tail(graph, op.name)
            if t:
                tails[op.name] = t
                head_of.update((n, op.name) for n in t)
    return tails, head_of


def joining_need(graph: AnalyzedGraph, op: Op, cols: bool = False, tail: tuple[str, ...] = ()) -> int:
    """What the last Concat joining channel groups of ``op`` (with its channel ``tail``: of the tail's last op)
    needs at least, whatever the count: its output band and, beside it, input bands of as many bytes (one row of
    each when the output is a row layout, else whole; with column tiles ``cols``, one pixel of each when the
    joining Concat is column-local)."""
    from tigris.layout import ROW_LAYOUTS
    from tigris.ops import kind_for
    from tigris.passes.weight_split import joining_concat
    from tigris.plan.types import align_up

    from tigris.passes.weight_split import _channel_axis, joins_in_place

    last = graph.op_by_name(tail[-1]) if tail else op  # the op whose output the Concats write
    y = graph.tensors[last.outputs[0]]
    cax = 1 if tail else _channel_axis(op, y)
    if joins_in_place(graph, y.name, cax):  # each join holds the joined vector and one group (lifetime rule 8)
        return align_up(y.nbytes) + align_up(-(-y.nbytes // max(1, int(y.shape[cax]))))
    rows = y.shape[2] if y.layout in ROW_LAYOUTS and len(y.shape) >= 3 else 1
    if cols and rows > 1 and len(y.shape) == 4:
        cat = joining_concat(graph, last)
        if kind_for(cat.op_type).col_local(graph, cat) is None:
            rows *= int(y.shape[3])
    return 2 * align_up(-(-y.nbytes // rows))


def group_need(graph: AnalyzedGraph, op: Op, channels: int, prep: Prepared, xip: bool, weight: float,
               tail: tuple[str, ...] = (), within: int | None = None) -> int:
    """What one group of ``channels`` channels of ``op`` (``weight_split.group_op``, with the copies of its channel
    ``tail``) needs as units of its own: the largest lower bound of its ops, with the weight bytes and scratch its
    lowering gives (memoized per Prepared). ``within``: for a caller that only compares the figure with that
    budget, a figure on the same side of it (``_mini_need``)."""
    from tigris.passes.weight_split import group_op

    return _mini_need(prep, ("group_op", op.name, channels, tail), lambda: group_op(graph, op.name, channels, tail),
                      ("group_need", op.name, channels, xip, prep.col_tiles, tail), xip, weight, within)


def k_group_need(graph: AnalyzedGraph, op: Op, channels: int, prep: Prepared, xip: bool, weight: float,
                 within: int | None = None) -> int:
    """What one input-channel group of ``channels`` channels of ``op`` (``weight_split.k_group_op``: its Slice and
    partial op) needs as units of its own (memoized per Prepared); ``within`` as ``group_need``'s."""
    from tigris.passes.weight_split import k_group_op

    return _mini_need(prep, ("k_group_op", op.name, channels), lambda: k_group_op(graph, op.name, channels),
                      ("k_group_need", op.name, channels, xip, prep.col_tiles), xip, weight, within)


def _mini_need(prep: Prepared, mkey: tuple, make: Callable[[], AnalyzedGraph], key: tuple, xip: bool, weight: float,
               within: int | None) -> int:
    """The largest op lower bound of a one-group graph (``make``), memoized in ``prep``'s memo under ``key``; the
    group and its lowering once under ``mkey`` for every XIP and column-tile setting (neither changes a lowering,
    and the bounds' own memo keys hold both). With ``within`` and no exact figure known yet: the first op bound
    over ``within`` (``tigris.plan.ops_over``), else 0, so a comparison with ``within`` answers as the exact figure
    does without building the layouts that only prove an op within it."""
    from tigris.ops import lower
    from tigris.plan import op_lower_bounds, ops_over

    memo = prep.layouts
    if key in memo:
        return memo[key]
    if mkey not in memo:
        mini = make()
        memo[mkey] = Prepared(mini, prep.reports, [lower(mini, o) for o in mini.ops])
    sub = replace(memo[mkey], col_tiles=prep.col_tiles)
    kw = _plan_kwargs(sub, xip, weight)
    if within is not None:
        wkey = key + ("within", within)
        if wkey not in memo:
            over = ops_over(sub.graph, within, **kw)
            memo[wkey] = next((b for b in map(over, range(len(sub.graph.ops))) if b is not None), 0)
        return memo[wkey]
    memo[key] = max(op_lower_bounds(sub.graph, **kw))
    return memo[key]


def _channel_groups_min(prep: Prepared, slow: int | None, xip: bool, weight: float, upper: int,
                        known_fail: int) -> tuple[int, NoFit | None, Prepared | None] | None:
    """:func:`_split_groups_min`, then the dense-rows fallback's minimum (``_compile_attempt`` tries it last) where
    it is smaller still."""
    ch = _split_groups_min(prep, slow, xip, weight, upper, known_fail)
    dense = _dense_rows_min(prep, slow, xip, weight, ch[0] if ch else upper)
    if dense is not None and dense[0] > known_fail:
        return dense[0], None, dense[1]
    return ch


def _split_groups_min(prep: Prepared, slow: int | None, xip: bool, weight: float, upper: int,
                      known_fail: int) -> tuple[int, NoFit | None, Prepared | None] | None:
    """A small fast budget below ``upper`` (the smallest without groups) at which channel groups make the model
    compile, the split graph's refusal below it and the split graph that fits it; None when groups do not lower
    the minimum. With ``prep.col_tiles`` the groups are planned with column tiles too, as ``analyze`` does.

    The bound with groups is every op's lower bound, a depthwise conv's (with XIP also a Conv's/Gemm's: without
    it weight groups answer separately, ``weight_groups_budget``) cut to what its smallest group needs; it is a lower
    bound over every split graph. The bound is probed first, then, while a probe fails, the bytes its refusal says
    the failing op needs (5% more when that is not above the probe; after such a step that fits, a bisection back
    of at most ``BISECT_PROBES`` probes), at most ``CHANNEL_PROBES`` probes up, below ``upper``. Every probe is what
    ``analyze`` does at that budget (an ordinary plan, then ``_split_weights``), so the answer is a budget that
    compiles (the smallest when the refusal below it names it; else within the last step's bisection, as fitting
    need not be monotone in the budget); the last refusal names what limits it."""
    from tigris.passes.weight_split import CHANNEL_TYPES, channel_step, output_channels, splittable
    from tigris.plan import op_lower_bounds
    from tigris.plan.types import align_up

    g = prep.graph
    bounds = op_lower_bounds(g, **_plan_kwargs(prep, xip, weight))
    lb0 = max(bounds, default=0)
    lb = 0
    tails, head_of = channel_tails(g)
    for i, op in enumerate(g.ops):
        b = bounds[i]
        head = g.op_by_name(head_of[op.name]) if op.name in head_of else op
        if b > lb and splittable(g, head, channels=True) is None and (xip or head.op_type in CHANNEL_TYPES):
            tail = tails.get(head.name, ())
            b = min(b, max(joining_need(g, head, prep.col_tiles, tail),
                           group_need(g, head, min(channel_step(g, head), output_channels(g, head)), prep, xip,
                                      weight, tail)))
        lb = max(lb, b)
    if lb >= lb0:
        return None  # the op that bounds the unsplit graph is not one a split helps

    def probe(budget: int) -> tuple[PlanResult, int]:
        """What analyze gets at ``budget``: the plan, else the split graph's refusal, and the bytes that refusal
        says an op needs."""
        res = _plan(prep, budget, slow, xip, weight, feasibility=True)
        if not isinstance(res, NoFit):
            return res, 0
        d: dict[str, Any] = {}
        unsplit = res
        res = _split_weights(prep, budget, slow, xip, weight, unsplit, detail=d, feasibility=True)[1]
        if isinstance(res, NoFit) and prep.col_tiles:
            # analyze splits on row tiles before it tries column tiles: a split that fits only so compiles too
            d2: dict[str, Any] = {}
            r2 = _split_weights(replace(prep, col_tiles=False), budget, slow, xip, weight, unsplit, detail=d2,
                                feasibility=True)[1]
            if not isinstance(r2, NoFit):
                res, d = r2, d2
        if not isinstance(res, NoFit):
            fitted[budget] = d.get("prepared")
            return res, 0
        if isinstance(res, NoFit) and isinstance(d.get("result"), NoFit):
            res = d["result"]  # what the split graph's plan refuses on, not the unsplit op split away
            sub = next((o for o in d["prepared"].graph.ops if o.name == res.op), None)
            if sub is not None and "weight_group" in sub.attrs:  # named as the model names it
                name = sub.attrs["weight_group"][0]
                res = replace(res, op=name, op_type=next(o.op_type for o in g.ops if o.name == name))
        # what the split graph needs; nothing when the attempt gave up without saying (the unsplit refusal's
        # figure is what groups are there to avoid, so it is no guide)
        return res, int(d.get("need_bytes") or (getattr(res, "need_bytes", 0) if "result" in d else 0) or 0)

    fitted: dict[int, Prepared | None] = {}  # budget -> the split graph that fits it
    budget = max(align_up(max(lb, 16), 16), known_fail + 16)
    below: NoFit | None = None
    last_fail, exact = 0, False
    for _ in range(CHANNEL_PROBES):
        if budget >= upper:
            return None
        r, need = probe(budget)
        if not isinstance(r, NoFit):
            break
        below, last_fail = r, budget
        # the refusal names what the failing op needs: the next budget to try (else 5% more)
        need = align_up(need, 16)
        exact = need > budget
        budget = need if exact else align_up(int(budget * 1.05) + 16, 16)
    else:
        return None
    # a 5% step may overshoot: bisect back towards the last refusal (a jump to what it named needs none)
    lo = last_fail + 16
    for _ in range(0 if exact else BISECT_PROBES):
        if lo >= budget:
            break
        mid = (lo + budget) // 32 * 16
        r, _ = probe(mid)
        if isinstance(r, NoFit):
            below, lo = r, mid + 16
        else:
            budget = mid
    return budget, below, fitted.get(budget)


_ACC_OF = {"GemmAcc": "Gemm", "ConvAcc": "Conv"}  # an int32 partial op -> the op type it sums


def _group_limiting(split: Prepared | None, budget: int, slow: int | None, xip: bool,
                    weight: float) -> dict[str, Any] | None:
    """The op that sets a minimum the channel-group search found: what ``split`` (the split graph that fits
    ``budget``) refuses 16 bytes below it, named as the model names it, with the group count of the op it belongs
    to (``groups``) and the split graph's op that fails (``group_op``: a group, its Slice or a joining Concat);
    None when that plan fits too or names no op."""
    if split is None or budget <= 16:
        return None
    res = _plan(split, budget - 16, slow, xip, weight, feasibility=True)
    if not isinstance(res, NoFit) or res.op is None:
        return None
    sub = next((o for o in split.graph.ops if o.name == res.op), None)
    rec = {"stage": res.stage, "op": res.op, "op_type": res.op_type, "need_bytes": res.need_bytes,
           "cause": res.cause, "message": res.message}
    wg = sub.attrs.get("weight_group") if sub is not None else None
    if wg:
        name, _, groups = wg
        # the op's type is its groups' (a depthwise group's Slice and the joining Concats are the rewrite's own)
        # (a dense-rows group's Reshape too; its int32 partial op is the op's accumulating form)
        kind = next((_ACC_OF.get(o.op_type, o.op_type) for o in split.graph.ops
                     if o.attrs.get("weight_group", ("", -1))[0] == name and o.attrs["weight_group"][1] >= 0
                     and o.op_type not in ("Slice", "Reshape")), None)
        rec.update(op=name, op_type=kind,
                   groups=int(groups), group_op={"name": sub.name, "op_type": sub.op_type})
    return rec


CHANNEL_PROBES = 10  # budgets _channel_groups_min probes at most on its way up
BISECT_PROBES = 4  # and back down after a 5% step


GROUP_LADDER = 4  # budgets _groups_budget probes at most


def _groups_budget(prep: Prepared, slow: int | None, weight: float, upper: int) -> tuple[int, Prepared] | None:
    """For a model that does not fit without XIP: a fast budget below ``upper`` (the smallest that fits without
    weight groups) at which it compiles with weight groups, or None.

    The ladder starts at the bound with groups (every op's lower bound, a splittable op's with its weight bytes cut
    to one group of the most it can be split into; an estimate, not a proof) and climbs by x1.25 for at most
    ``GROUP_LADDER`` probes, each an ordinary plan and ``_split_weights``: the answer is a budget that was compiled,
    not necessarily the smallest."""
    from tigris.ops._mac import f16_scratch_bytes
    from tigris.passes.weight_split import k_splittable, max_groups, splittable
    from tigris.plan import op_lower_bounds
    from tigris.plan.types import align_up

    g = prep.graph
    bounds = op_lower_bounds(g, **_plan_kwargs(prep, False, weight))
    lb = 0
    for i, op in enumerate(g.ops):
        b = bounds[i]
        if splittable(g, op) is None:
            dep = align_up(_const_bytes(prep.lowered[i])) + f16_scratch_bytes(prep.lowered[i])
            b -= dep - align_up(-(-dep // max_groups(g, op)))
        if b > lb and k_splittable(g, op) is None:  # input-channel groups: down to one input channel per group
            b = min(b, k_group_need(g, op, 1, prep, False, weight))
        lb = max(lb, b)
    budget = align_up(max(lb, 16), 16)

    def probe(b: int) -> tuple[Prepared, PlanResult, list]:
        # what analyze does at this budget (output-channel groups, column tiles, input-channel groups), so the
        # budget named is one at which compile fits
        return _compile_attempt(prep, b, slow, False, weight, feasibility=True)[:3]

    last_fail = None
    for _ in range(GROUP_LADDER):
        if budget >= upper:
            return None
        split, res, groups = probe(budget)
        if not isinstance(res, NoFit):
            break
        last_fail = budget
        budget = align_up(int(budget * 1.25), 16)
    else:
        return None
    if not groups:
        return None  # fits without groups below the minimum: the search's answer stands
    # back down towards the last rung that failed (a budget that fits is kept only when it is split too)
    lo = (last_fail or 0) + 16
    for _ in range(BISECT_PROBES if last_fail else 0):
        if lo >= budget:
            break
        mid = (lo + budget) // 32 * 16
        s2, r2, g2 = probe(mid)
        if isinstance(r2, NoFit) or not g2:
            lo = mid + 16
        else:
            budget, split = mid, s2
    return budget, split


# The shapes the dense-rows fallback tries, in order (input end: output groups, K groups per output group; output
# end: output groups): fewer ops first. docs/memory-planning.md "Dense ends as rows".
DENSE_ROWS_SHAPES = ((2, 4, 4), (4, 4, 4), (4, 8, 4))


def _dense_rows_graphs(prep: Prepared) -> list[tuple[Prepared, list[dict[str, Any]]]]:
    """The graphs of the dense-rows fallback (a boundary vector read or written in row bands), one per shape of
    ``DENSE_ROWS_SHAPES``, with their split records; empty when neither end applies."""
    from tigris.ops import lower
    from tigris.passes import dense_rows

    memo = prep.layouts.setdefault(("dense_rows",), [])
    if memo:
        return memo[0]
    g0 = prep.graph
    first, last = dense_rows.input_gemm(g0), dense_rows.output_gemm(g0)
    if last == first:  # one Gemm at both ends: its input end only
        last = None
    out: list[tuple[Prepared, list[dict[str, Any]]]] = []
    index = {op.name: i for i, op in enumerate(g0.ops)}
    for go, gk, go2 in DENSE_ROWS_SHAPES if (first or last) else ():
        g, records = g0, []
        try:
            if first:
                g = dense_rows.split_input(g, first, go, gk)
                records.append({"op": first, "groups": go * gk, "cause": "rows", "channels": "input rows",
                                "need_bytes": None, "max_group_need_bytes": None,
                                "weight_bytes": _const_bytes(prep.lowered[index[first]]), "max_group_bytes": None})
            if last:
                g = dense_rows.split_output(g, last, go2)
                records.append({"op": last, "groups": go2, "cause": "rows", "channels": "output rows",
                                "need_bytes": None, "max_group_need_bytes": None,
                                "weight_bytes": _const_bytes(prep.lowered[index[last]]), "max_group_bytes": None})
        except TigrisError:
            continue
        lowered = [lower(g, op) for op in g.ops]
        out.append((Prepared(g, prep.reports, lowered, op_order=prep.op_order, col_tiles=False,
                             one_region=prep.one_region), records))
    memo.append(out)
    return out


def _dense_rows(prep: Prepared, fast: int, slow: int | None, xip: bool, weight: float,
                feasibility: bool = False) -> tuple[Prepared, PlanResult, list[dict[str, Any]]] | None:
    """The first dense-rows graph that fits the budget, its plan and records; None when none does."""
    for split, records in _dense_rows_graphs(prep):
        r = _plan(split, fast, slow, xip, weight, feasibility)
        if not isinstance(r, NoFit):
            return split, r, records
    return None


def _dense_rows_min(prep: Prepared, slow: int | None, xip: bool, weight: float, upper: int) -> tuple[int, Prepared] | None:
    """The smallest budget below ``upper`` at which a dense-rows graph fits (the planner's own search on each), and
    that graph; None when none lowers it."""
    best = None
    for split, _ in _dense_rows_graphs(prep):
        m = _min_fast(split, slow, xip, weight)
        if m is not None and m < upper and (best is None or m < best[0]):
            best = (m, split)
    return best


def _plan_cost(p: Any, weight: float) -> float:
    """What the planner minimizes, on a finished plan: its slow traffic plus its recompute at ``weight`` bytes per
    MAC (``tigris.plan._cost_of``), to choose between plans of different rewrites of one graph."""
    return p.spill_bytes + p.reload_bytes + weight * p.recompute_macs


def _compile_attempt(prep: Prepared, fast: int, slow: int | None, xip: bool, weight: float,
                     feasibility: bool = False) -> tuple[Prepared, PlanResult, list[dict[str, Any]], bool]:
    """What ``analyze`` (so ``compile``) does at a budget: the plan without column tiles, then with weight groups,
    then (below the row floor) with column tiles, then groups with column tiles, then (one region) expansion
    groups, then (without XIP) input-channel groups; each only when the one before does not fit, so what fits one way keeps that plan. Returns the prepared
    graph the result is for (split or not), the result, the split records and whether the graph is the expansion
    groups' (a one-region board, ``_expansion_split``). ``feasibility``: the same steps as
    feasibility probes (the same refusals; a Fit is *a* plan), for the advice searches, whose answer is then a
    budget at which this very sequence fits."""
    rows_only = replace(prep, col_tiles=False)
    res = _plan(rows_only, fast, slow, xip, weight, feasibility)
    plain = {False: res}  # the plain plans' refusals, for the input-channel groups' attempt below
    split, res, groups = _split_weights(rows_only, fast, slow, xip, weight, res, feasibility=feasibility)
    if isinstance(res, NoFit) and prep.col_tiles:
        with_cols = plain[True] = _plan(prep, fast, slow, xip, weight, feasibility)
        if not isinstance(with_cols, NoFit) or not groups:  # a refusal says what fails with column tiles too
            split, res, groups = prep, with_cols, []
        if isinstance(res, NoFit):
            # neither groups on row tiles nor column tiles alone: groups planned with column tiles, whose per-group
            # need is one output pixel of the group's channels (docs/memory-planning.md "Channel groups")
            split, res, groups = _split_weights(prep, fast, slow, xip, weight, res, feasibility=feasibility)
    expanded = False
    if isinstance(res, NoFit) and slow and prep.one_region:
        # a board without PSRAM (one region, a slow budget): expansion groups keep the head in one unit where the
        # plain graph must cut a boundary the region has no room for (docs/memory-planning.md "Boards without slow
        # memory"). Every split graph is planned and the cheapest plan kept (traffic plus priced recompute, the
        # planner's own objective): the smaller share splits more blocks and may fit the same region with less
        # recompute, so the -m/-s the SRAM-only search prints give the plan it found. A probe takes the first fit.
        for ex in _expansion_splits(prep):
            r3 = _plan(ex, fast, slow, xip, weight, feasibility)
            if isinstance(r3, NoFit):
                continue
            if not expanded or _plan_cost(r3.plan, weight) < _plan_cost(res.plan, weight):
                split, res, groups, expanded = ex, r3, [], True
            if feasibility:
                break
    if isinstance(res, NoFit) and not xip:
        # last, so that every plan that fitted before keeps its shape: input-channel groups where an op's
        # output-channel groups cannot fit (docs/memory-planning.md "Weights that do not fit")
        for cols, r in plain.items():
            s2, r2, g2 = _split_weights(replace(prep, col_tiles=cols), fast, slow, xip, weight, r, k_groups=True,
                                        feasibility=feasibility)
            if not isinstance(r2, NoFit):
                split, res, groups = s2, r2, g2
                break
    if isinstance(res, NoFit):
        # last of all: a Gemm at a graph boundary reading or writing its vector in row bands
        # (docs/memory-planning.md "Dense ends as rows"), so a plan that fitted any other way keeps its shape
        dense = _dense_rows(prep, fast, slow, xip, weight, feasibility)
        if dense is not None:
            split, res, groups = dense
    return split, res, groups, expanded


def _io_json(prep: Prepared, names: list[str]) -> list[dict[str, Any]]:
    out = []
    for n in names:
        b = prep.graph.boundary.get(n)
        t = prep.graph.tensors[n]
        out.append({"name": n, "shape": list(b.shape if b else t.shape), "dtype": b.dtype if b else t.dtype})
    return out


def analyze(
    model: str | Path,
    fast: int | str,
    slow: int | str | None = None,
    flash: int | str | None = None,
    input_shapes: dict[str, tuple[int, ...]] | None = None,
    xip: bool = XIP_DEFAULT,
    compression: str = "none",
    emit: bool = True,
    prepared: Prepared | None = None,
    numerics: str | None = None,
    target: str | None = None,
    clock: int | str | None = None,
    psram_bandwidth: int | str | None = None,
    objective: str | None = None,
    io_buffers: str = "separate",
    tradeoff: bool = True,
    weights: str | None = None,
    groups_advice: bool = False,
    op_order: str | None = None,
    one_region: bool = False,
) -> Analysis:
    """Stages 1-6 and the figures of the JSON contract (docs/cli.md). Unsupported models raise
    :class:`UnsupportedModelError` (the caller reports every node).

    ``target``/``clock``/``psram_bandwidth`` feed the latency estimate (tigris/cost.py; the generic target when
    None), and the emitted plan's weights are arranged for ``target`` (docs/format.md "Weight arrangements"; generic
    and None arrange nothing); ``objective`` chooses what the planner trades (traffic, recompute or latency; None is
    ``DEFAULT_OBJECTIVE``, latency); ``io_buffers`` is ``separate`` (the caller's input/output buffers count in the RAM
    total), ``excluded`` (the application accounts for them) or ``in-arena`` (the firmware exchanges I/O at its homes
    inside the arenas, tgrs_run_in_place, so the total is the two arenas); ``tradeoff`` also plans the other objectives so the
    report shows what was traded. ``groups_advice``: when the model does not fit without XIP and its copied weights
    set the minimum, also look for a budget at which weight groups make it compile (``weight_groups_budget``; a few
    extra plans, so off by default; the CLI's analyze and every compile ask for it). ``op_order`` is the planner's
    operator order (``search``, the default, or ``spec``: the loader's order only; docs/memory-planning.md
    "Operator order"). ``one_region`` plans for a board without PSRAM whose slow arena is the fast arena's memory
    (``plan(one_region=True)``, the header flag ONE_REGION): ``slow`` then bounds the region's end."""
    fast_b = parse_size(fast)
    slow_b = parse_size(slow)
    flash_b = parse_size(flash)
    clock_hz = parse_clock(clock)
    bandwidth = parse_bandwidth(psram_bandwidth)
    assert fast_b is not None
    if io_buffers not in ("separate", "excluded", "in-arena"):
        raise TigrisError(f"unknown --io-buffers {io_buffers!r}; use separate, excluded or in-arena", "--io-buffers")
    if compression not in ("none", "lz4"):
        raise TigrisError(f"unknown compression {compression!r}; use none or lz4", "-c")
    from tigris.cost import TARGETS, load_target

    cost_target = target or "generic"
    if cost_target not in TARGETS:
        raise TigrisError(f"unknown target {cost_target!r}; use one of {', '.join(TARGETS)}", "--target")
    load_target(cost_target)
    prep = prepared if prepared is not None else prepare(model, input_shapes, numerics, weights)
    if op_order is not None:
        from tigris.plan import OP_ORDERS

        if op_order not in OP_ORDERS:
            raise TigrisError(f"unknown operator order {op_order!r}; use {' or '.join(OP_ORDERS)}", "op_order")
        prep = replace(prep, op_order=op_order)  # the same memo of layouts: it holds each order's separately
    if one_region != prep.one_region:
        prep = replace(prep, one_region=one_region)  # the same memo: band layouts do not depend on the slow packing
    obj = objective or DEFAULT_OBJECTIVE
    weight = objective_weight(prep, obj, cost_target, clock_hz, bandwidth)
    graph = prep.graph
    macs = int(sum(low.macs for low in prep.lowered))
    weight_bytes = int(sum(_const_bytes(low) for low in prep.lowered))
    from tigris.plan import unscheduled_peak

    model_json = {
        "name": graph.name,
        "operators": len(graph.ops),
        "tensors": sum(1 for _ in graph.activations()),
        "macs": macs,
        "weight_bytes": weight_bytes,
        "unscheduled_peak_bytes": int(unscheduled_peak(graph)),
        "inputs": _io_json(prep, graph.inputs),
        "outputs": _io_json(prep, graph.outputs),
    }
    result = Analysis(fits=False, json={}, prepared=prep, notes=list(graph.notes))
    plan: MemoryPlan | None = None
    advice: dict[str, Any] = {}
    split, res, groups, expanded = _compile_attempt(prep, fast_b, slow_b, xip, weight)
    if expanded:
        result.notes.append("the memory-heavy inverted-residual expansions run as expansion groups: each "
                            "group's 1x1 expansion and depthwise conv on its channels, joined after the "
                            "depthwise conv")
    prep = replace(split, col_tiles=prep.col_tiles)
    if expanded:
        graph = prep.graph
        result.prepared = prep
    if groups:
        graph = prep.graph
        result.prepared = prep
        for g in groups:
            if g["cause"] == "rows":
                end = "reads its graph input" if g["channels"] == "input rows" else "writes its graph output"
                result.notes.append(
                    f"op {g['op']} {end} in row bands: the vector is stored as rows and the op runs as {g['groups']} "
                    "groups (docs/memory-planning.md \"Dense ends as rows\")")
                continue
            if g["cause"] == "activations":
                result.notes.append(
                    f"op {g['op']} runs as {g['groups']} channel groups: it needs {g['need_bytes']} bytes of fast "
                    f"memory even with one output row per tile, each group at most {g['max_group_need_bytes']}")
                continue
            result.notes.append(
                f"op {g['op']} runs as {g['groups']} {g['channels']}-channel weight groups: its "
                f"{g['weight_bytes']} bytes of weights do not fit the fast budget, each group's at most "
                f"{g['max_group_bytes']} do")
    if isinstance(res, NoFit):
        result.nofit = res
        result.reason = res.message  # already names the stage and the op; the model is named by the caller
        failed: dict[int, NoFit] = {fast_b: res}
        result.min_fast_budget = _min_fast(prep, slow_b, xip, weight, known_fail=fast_b, failed=failed)
        advice = {"min_fast_budget_bytes": result.min_fast_budget,
                  "min_fast_budget": format_size(result.min_fast_budget) if result.min_fast_budget else None,
                  "min_fast_budget_xip_bytes": None, "min_fast_budget_xip": None, "limiting_op": None,
                  "failed_op": {"stage": res.stage, "op": res.op, "op_type": res.op_type,
                                "need_bytes": res.need_bytes, "cause": res.cause}}
        if result.min_fast_budget:
            advice["limiting_op"] = _limiting(prep, result.min_fast_budget, slow_b, xip, weight, failed)
            # channel groups may lower the minimum (docs/memory-planning.md "Channel groups"): then it is the
            # budget at which analyze/compile split ops, and the limiting op is what fails just below it
            ch = None if not groups_advice else _channel_groups_min(prep, slow_b, xip, weight,
                                                                    result.min_fast_budget, fast_b)
            if ch is not None:
                advice["min_fast_budget_without_groups_bytes"] = result.min_fast_budget
                result.min_fast_budget, below, fitted = ch
                advice["min_fast_budget_bytes"] = result.min_fast_budget
                advice["min_fast_budget"] = format_size(result.min_fast_budget)
                # what the split graph that fits refuses 16 bytes below (the same groups), else the search's last
                # refusal (one whose figure is above the minimum found is not what sets it)
                advice["limiting_op"] = _group_limiting(fitted, result.min_fast_budget, slow_b, xip, weight) or (
                    None if below is None or below.op is None or below.need_bytes > result.min_fast_budget else {
                        "stage": below.stage, "op": below.op, "op_type": below.op_type,
                        "need_bytes": below.need_bytes, "cause": below.cause, "message": below.message})
        if not xip:
            m_xip = _min_fast(prep, slow_b, True, weight)
            ch_xip = None if not (groups_advice and m_xip) else _channel_groups_min(prep, slow_b, True, weight,
                                                                                     m_xip, 0)
            if ch_xip is not None:  # with --xip channel groups lower it too
                m_xip = ch_xip[0]
            advice["min_fast_budget_xip_bytes"] = m_xip
            advice["min_fast_budget_xip"] = format_size(m_xip) if m_xip else None
            if m_xip is not None and m_xip <= fast_b:
                result.reason += "; it fits with --xip (weights read from flash instead of copied to SRAM)"
            # weights are what sets the minimum: say where output-channel weight groups make it fit
            m_groups = None
            if groups_advice and result.min_fast_budget and m_xip is not None and m_xip < result.min_fast_budget:
                got = _groups_budget(prep, slow_b, weight, result.min_fast_budget)
                if got is not None:
                    m_groups, fitted = got
                    # the smallest budget found that compiles, weight groups (output or input channels) included:
                    # compile at it fits (the probe is analyze's own sequence), so the advice is monotone
                    advice.setdefault("min_fast_budget_without_groups_bytes", result.min_fast_budget)
                    result.min_fast_budget = m_groups
                    advice["min_fast_budget_bytes"] = m_groups
                    advice["min_fast_budget"] = format_size(m_groups)
                    # the split graph may fit 16 bytes below with the same groups (the search probes budgets, not
                    # every group count): then the op named is the one the model's own plan fails at, which the
                    # groups were made for
                    advice["limiting_op"] = _group_limiting(fitted, m_groups, slow_b, False, weight) or \
                        advice["limiting_op"]
            advice["weight_groups_budget_bytes"] = m_groups
            advice["weight_groups_budget"] = format_size(m_groups) if m_groups else None
        if slow_b == 0 or res.cause == "slow_memory":
            advice["sram_only"] = _sram_only(prep, xip, weight)
    else:
        plan = res.plan
    candidates: dict[str, MemoryPlan | None] = {}

    def weighted(name: str) -> MemoryPlan | None:
        """The plan of one objective's recompute weight at these budgets (each planned once)."""
        if name not in candidates:
            w = objective_weight(prep, name, cost_target, clock_hz, bandwidth)
            r = res if w == weight else _plan(prep, fast_b, slow_b, xip, w)
            candidates[name] = None if isinstance(r, NoFit) else r.plan
        return candidates[name]

    def candidate(name: str) -> MemoryPlan | None:
        """What ``--objective name`` reports. The weighted planner cost is a proxy (it does not see per-tile
        overheads), so the latency objective keeps whichever of the three weighted plans the estimate says is
        fastest (the latency-weighted one on a tie)."""
        if name != "latency":
            return weighted(name)
        from tigris.cost import estimate

        def est_time(p: MemoryPlan) -> float:
            e = estimate(graph, p, prep.lowered, cost_target, compression, clock_hz, bandwidth)
            return e.ms if e.ms is not None else float(e.cycles)

        pool = [q for q in (weighted("latency"), weighted("traffic"), weighted("recompute")) if q is not None]
        return min(pool, key=est_time) if pool else None

    if plan is not None and obj == "latency":
        plan = candidate("latency")
    plan_bytes: bytes | None = None
    if plan is not None and emit:
        from tigris.emit import emit_plan
        from tigris.plan.check import check_plan

        # The overlap proof of every plan that is written: independent of the planner, and a few ms even on the
        # largest shared models. A violation is a planner bug, reported instead of writing an unsafe plan.
        errs = check_plan(graph, plan)
        if errs:
            raise TigrisError(f"internal error: the memory plan fails its proof ({len(errs)} violation(s)): "
                              f"{errs[0]}", graph.name)

        plan_bytes = emit_plan(graph, plan, prep.lowered, xip=xip, compression=compression, target=cost_target)
        if flash_b is not None and len(plan_bytes) > flash_b:
            result.reason = f"plan is {len(plan_bytes)} bytes, flash budget is {flash_b} bytes"
    result.plan = plan
    result.plan_bytes = plan_bytes
    result.fits = plan is not None and result.reason is None
    result.json = _analysis_json(result, model_json, fast_b, slow_b, flash_b, weight_bytes)
    from tigris.report import analysis_details

    settings = {"target": cost_target, "clock_hz": clock_hz, "psram_bandwidth": bandwidth, "objective": obj,
                "recompute_weight": weight, "io_buffers": io_buffers, "xip": xip, "compression": compression,
                "one_region": prep.one_region}
    alternatives: dict[str, MemoryPlan | None] = {}
    if plan is not None and tradeoff:
        for other in OBJECTIVES:
            alternatives[other] = plan if other == obj else candidate(other)
    result.json.update(analysis_details(prep, plan, result.json, settings, alternatives))
    result.json.update(advice)
    result.json["weight_groups"] = groups
    return result


def _analysis_json(
    a: Analysis, model_json: dict, fast: int, slow: int | None, flash: int | None, weight_bytes: int
) -> dict[str, Any]:
    plan = a.plan
    from tigris.plan.describe import stage_table

    stages = stage_table(plan, a.prepared.graph if a.prepared else None) if plan is not None else []
    for row, sp in zip(stages, plan.stages if plan else []):
        row["weight_bytes"] = sp.weight_bytes
        if not sp.tiled:
            row["halo"] = None  # the receptive-field halo means nothing for a stage that is not tiled
    j: dict[str, Any] = {
        "fits": a.fits,
        "model": model_json,
        "fast": {"budget_bytes": fast, "peak_bytes": plan.fast_peak if plan else None},
        "slow": {
            "budget_bytes": slow,
            "peak_bytes": plan.slow_peak if plan else None,
            "spill_bytes": plan.spill_bytes if plan else None,
            "reload_bytes": plan.reload_bytes if plan else None,
        },
        "flash": {
            "budget_bytes": flash,
            "plan_bytes": len(a.plan_bytes) if a.plan_bytes is not None else None,
            "weight_bytes": weight_bytes,
        },
        "tiling": {
            "tiled_stages": sum(1 for s in plan.stages if s.tiled) if plan else 0,
            "tiles": sum(s.tiles for s in plan.stages if s.tiled) if plan else 0,
            "chains": len({s.chain for s in plan.stages if s.chain is not None}) if plan else 0,
            "recompute_macs": plan.recompute_macs if plan else 0,
        },
        "stages": stages,
        "unsupported": [],
    }
    if not a.fits:
        j["reason"] = a.reason
        j["min_fast_budget_bytes"] = a.min_fast_budget
    return j


def unsupported_json(e: UnsupportedModelError, model: str | Path) -> dict[str, Any]:
    return {
        "fits": False,
        "model": {"name": Path(model).stem},
        "unsupported": [
            {"node": n.get("node", ""), "op": n.get("op", ""), "reason": n.get("reason", "")} for n in e.nodes
        ],
    }


# ---------------------------------------------------------------------------------------------------------------
# Stage 7
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Compiled:
    plan_bytes: bytes
    analysis: Analysis


def compile_model(
    model: str | Path,
    fast: int | str,
    slow: int | str | None = None,
    flash: int | str | None = None,
    xip: bool = XIP_DEFAULT,
    compression: str = "none",
    input_shapes: dict[str, tuple[int, ...]] | None = None,
    prepared: Prepared | None = None,
    numerics: str | None = None,
    objective: str | None = None,
    weights: str | None = None,
    target: str | None = None,
    op_order: str | None = None,
    one_region: bool = False,
) -> Compiled:
    """Stages 1-7. Raises :class:`DoesNotFitError` (exit 1) when no plan fits the budgets; nothing is written.
    ``prepared`` reuses stages 1-2 of an earlier call on the same model (tests compile one model many ways).
    ``target`` (cortex-m4, cortex-m55 or generic; None: generic) is the core the plan is for, as in
    :func:`analyze`: the weights are arranged for its kernels and the latency estimate (which the default
    objective, latency, minimizes) is that core's. None is the generic core: no arrangement, generic estimate.
    ``one_region``: both arenas in one SRAM block (as :func:`analyze`; the plan's header flag ONE_REGION)."""
    if compression not in ("none", "lz4"):
        raise TigrisError(f"unknown compression {compression!r}; use none or lz4", "-c")
    a = analyze(model, fast, slow, flash, input_shapes, xip=xip, compression=compression, prepared=prepared,
                numerics=numerics, objective=objective, tradeoff=False, weights=weights, target=target,
                groups_advice=True, op_order=op_order, one_region=one_region)
    if not a.fits or a.plan_bytes is None:
        hint = f"; smallest fast budget that fits: -m {format_size(a.min_fast_budget)}" if a.min_fast_budget else ""
        if a.json.get("min_fast_budget_xip"):
            hint += f" (with --xip: -m {a.json['min_fast_budget_xip']})"
        if a.json.get("weight_groups_budget"):
            hint += f"; with weight groups it compiles at -m {a.json['weight_groups_budget']}"
        if a.json.get("sram_only"):
            so = a.json["sram_only"]
            if not one_region:
                hint += (f"; without PSRAM: -m {so['fast_budget']} -s {so['slow_bytes']} ({so['total_bytes']} bytes "
                         "of SRAM)")
            if so.get("one_region"):
                r1 = so["one_region"]
                hint += (f"{'; without PSRAM' if one_region else ','} as one region: -m {r1['fast_budget']} -s "
                         f"{r1['slow_bytes']} --one-region ({r1['total_bytes']} bytes of SRAM)")
        raise DoesNotFitError(f"does not fit: {a.reason}{hint}", str(model), a.nofit)
    return Compiled(a.plan_bytes, a)


def compile_json(c: Compiled, out: str | Path) -> dict[str, Any]:
    """``compile --json``: the file written and the plan's figures (the analyze JSON under "analysis")."""
    import hashlib

    from tigris.emit.reader import read_plan

    pf = read_plan(c.plan_bytes)
    return {"file": str(out), "plan_bytes": len(c.plan_bytes), "sha256": hashlib.sha256(c.plan_bytes).hexdigest(),
            "target": pf.target_name, "arranged_ops": len(pf.arrangements()), "analysis": c.analysis.json}


def run_json(res: Any, output: str | Path) -> dict[str, Any]:
    """``run --json``: the outputs file, each output's shape and dtype, and the runtime's high-water marks."""
    return {"file": str(output), "outputs": {k: list(v.shape) for k, v in res.outputs.items()},
            "dtypes": {k: str(v.dtype) for k, v in res.outputs.items()},
            "fast_peak_bytes": int(res.fast_peak), "slow_peak_bytes": int(res.slow_peak)}


def codegen_json(plan: str | Path, c_file: str | Path, header: str | Path, name: str, fmt: str,
                 kernels: str, io: str = "separate") -> dict[str, Any]:
    """``codegen --json``: the files written and the arena sizes the generated code declares."""
    from tigris.emit import inspect_plan

    info = inspect_plan(Path(plan).read_bytes())
    io = info["interface"]
    return {"c_file": str(c_file), "header": str(header), "name": name, "format": fmt, "kernels": kernels,
            "io": io, "fast_arena_bytes": info["memory"]["fast_arena_bytes"], "slow_arena_bytes":
            info["memory"]["slow_arena_bytes"], "plan_bytes": info["header"]["file_size"],
            "inputs": [{"name": i["name"], "nbytes": i["nbytes"]} for i in io["inputs"]],
            "outputs": [{"name": o["name"], "nbytes": o["nbytes"]} for o in io["outputs"]]}


# ---------------------------------------------------------------------------------------------------------------
# Running and verifying
# ---------------------------------------------------------------------------------------------------------------
def check_inputs(
    declared: dict[str, tuple[tuple[int, ...], str]], inputs: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The input rule (docs/cli.md) for ``run`` as for ``verify``: every given name is an input of the model, and
    every array is brought to the declared dtype and shape by :func:`tigris.samples.conform` (value-preserving casts
    only) or refused."""
    from tigris.samples import Boundary as SampleBoundary
    from tigris.samples import conform

    unknown = [n for n in inputs if n not in declared]
    if unknown:
        raise TigrisError(f"the model has no input {unknown[0]!r}; its inputs are {list(declared)}", unknown[0])
    return {n: conform(a, SampleBoundary(n, tuple(declared[n][0]), declared[n][1]), n) for n, a in inputs.items()}


def run_plan(plan_bytes: bytes, inputs: dict[str, np.ndarray]):
    """Run a plan on the host build of runtime_c. Returns the Session's RunResult (outputs + high-water marks).
    The inputs follow :func:`check_inputs`."""
    from tigris.host import Session

    sess = Session(plan_bytes)
    return sess.run(check_inputs({s.name: (tuple(s.shape), s.dtype) for s in sess.inputs}, inputs))


def random_inputs(prep: Prepared, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs in the model's declared shapes and dtypes, spread over the range the model can represent."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name in prep.graph.inputs:
        b = prep.graph.boundary.get(name)
        t = prep.graph.tensors[name]
        shape = tuple(b.shape if b else t.shape)
        dtype = b.dtype if b else t.dtype
        if dtype == "uint8":
            out[name] = rng.integers(0, 256, size=shape, dtype=np.uint8)
        elif dtype == "int8":
            out[name] = rng.integers(-128, 128, size=shape, dtype=np.int8)
        else:
            q = _first_quant(prep, name)
            if q is not None:
                scale, zp = q
                lo, hi = (-128 - zp) * scale, (127 - zp) * scale
                out[name] = rng.uniform(lo, hi, size=shape).astype(np.float32)
            else:
                out[name] = rng.standard_normal(size=shape).astype(np.float32)
    return out


def _first_quant(prep: Prepared, name: str) -> tuple[float, int] | None:
    """The (scale, zp) a float graph input is quantized with right away, if any (QDQ models with float inputs)."""
    for op in prep.graph.ops:
        if op.op_type == "QuantizeLinear" and op.inputs and op.inputs[0] == name:
            q = prep.graph.tensors[op.outputs[0]].quant
            if q is not None:
                return float(q.scale.reshape(-1)[0]), int(q.zero_point.reshape(-1)[0])
    return None


def _ort_refuses(e: Exception, model: str | Path) -> TigrisError:
    """A model or input ONNX Runtime refuses (duplicate node names, an opset it lacks) is the user's input: exit 2."""
    first = " ".join(str(e).split())[:300] or type(e).__name__
    return TigrisError(f"ONNX Runtime refuses the model or its inputs: {first}", str(model))


def _ort_session(model: str | Path, optimized: bool = False):
    """An ONNX Runtime session on the original model, one thread (see :func:`run_onnxruntime`)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 4  # its refusals become one TigrisError line (_ort_refuses), not a log on stderr
    if not optimized:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])


def run_onnxruntime(model: str | Path, inputs: dict[str, np.ndarray], optimized: bool = False,
                    session: Any = None) -> dict[str, np.ndarray]:
    """ONNX Runtime on the original model, one thread.

    By default with graph optimizations off: ONNX Runtime then evaluates a QDQ model as written (dequantize, float op,
    quantize), which is the semantics the model states. Its optimizer fuses QDQ groups into integer kernels that round
    differently: on kws_dscnn_int8 the fused and unfused runs of ONNX Runtime itself differ by up to 11 LSB at the
    softmax output. ``optimized=True`` gives the fused execution, for reporting that spread. ``session`` reuses one
    made by :func:`_ort_session` (verify runs many samples).
    """
    try:
        sess = session if session is not None else _ort_session(model, optimized)
        names = [o.name for o in sess.get_outputs()]
        res = sess.run(names, {k: v for k, v in inputs.items()})
    except Exception as e:  # onnxruntime raises its own exception types for models and inputs it refuses
        raise _ort_refuses(e, model) from None
    return dict(zip(names, res))


def compare(got: np.ndarray, ref: np.ndarray, integer: bool) -> dict[str, Any]:
    """Error metrics of ``got`` against ``ref`` over all their elements (verify's table; docs/cli.md).

    ``l2r`` is the relative L2 error ||got - ref|| / ||ref|| (None when ref is all zeros and got is not);
    ``max_lsb`` is the largest integer difference, for integer outputs only."""
    g = np.asarray(got, dtype=np.float64).ravel()
    r = np.asarray(ref, dtype=np.float64).ravel()
    if g.shape != r.shape:
        raise TigrisError(f"output has {g.size} elements, reference has {r.size}")
    d = np.abs(g - r)
    denom = float(np.linalg.norm(g) * np.linalg.norm(r))
    cos = float(np.dot(g, r) / denom) if denom > 0 else (1.0 if np.array_equal(g, r) else 0.0)
    ref_norm = float(np.linalg.norm(r))
    err_norm = float(np.linalg.norm(d))
    l2r = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else None)
    return {
        "max_abs_err": float(d.max()) if d.size else 0.0,
        "rmse": float(math.sqrt(float(np.mean(d * d)))) if d.size else 0.0,
        "mae": float(np.mean(d)) if d.size else 0.0,
        "l2r": l2r,
        "cosine": cos,
        "max_lsb": int(d.max()) if integer and d.size else None,
        "max_abs_ref": float(np.abs(r).max()) if r.size else 0.0,
    }


def is_classifier(shape: tuple[int, ...] | list[int]) -> bool:
    """An output that looks like class scores: exactly one axis longer than 1 (e.g. 1x10), of at least 2."""
    long_axes = [d for d in shape if d > 1]
    return len(long_axes) == 1


def top1_agreement(got: list[np.ndarray], ref: list[np.ndarray]) -> float:
    """Share of samples whose highest-scoring class is the same in ``got`` and ``ref`` (first index on ties)."""
    same = [int(np.argmax(np.asarray(g).ravel())) == int(np.argmax(np.asarray(r).ravel())) for g, r in zip(got, ref)]
    return sum(same) / len(same) if same else 1.0


FLOAT_RTOL = 1e-4  # float outputs: max abs error <= FLOAT_RTOL * max(1, max|ref|) against ONNX Runtime
INT8_MAX_LSB = 1  # int8 outputs: within 1 LSB of ONNX Runtime (and bit-exact against the reference)
QUANT_FLOAT_MIN_COSINE = 0.99  # quantized model with float outputs: end-to-end gross-error check
# float16 model (computed here in float32 on its float16 weights): ONNX Runtime computes in float16, whose unit
# roundoff is 2**-11, so its outputs carry a few of those per layer; within FP16_RTOL x max(1, max|ref|) of it, and
# within FLOAT_RTOL of the NumPy reference, which computes in float32 like the kernels.
FP16_RTOL = 1e-2
# int8 outputs of a .tflite model compiled with --numerics onnx against the TFLite interpreter (reference kernels):
# one rounding per requantization where TFLite rounds twice, and its own ADD, average and softmax arithmetic, which
# differ by 1 LSB inside the network and grow through it (docs/tflite.md gives the figures per model). With the
# default --numerics tflm the tolerance is INT8_MAX_LSB.
TFLITE_ONNX_NUMERICS_MAX_LSB = 64


def _sample_passes(got: np.ndarray, ort_v: np.ndarray, ref_v: np.ndarray, quantized: bool, float_tail: bool,
                   int8_lsb: int = INT8_MAX_LSB, external_rtol: float = FLOAT_RTOL) -> bool:
    """verify's pass criteria for one output of one sample (docs/cli.md, "Pass criteria of verify")."""
    integer = got.dtype.kind in "iu"
    vs_ort = compare(got, ort_v, integer)
    vs_ref = compare(got, ref_v, integer)
    if quantized:
        exact = bool(np.array_equal(got, ref_v))
        if integer:
            return exact and vs_ort["max_lsb"] <= int8_lsb
        if float_tail:
            # computed by float kernels after an in-graph dequantize (e.g. ORT leaves a final Tanh float): float
            # kernels match the reference to the float tolerance, not bit for bit
            tol = FLOAT_RTOL * max(1.0, vs_ref["max_abs_ref"])
            return vs_ref["max_abs_err"] <= tol and vs_ort["cosine"] >= QUANT_FLOAT_MIN_COSINE
        return exact and vs_ort["cosine"] >= QUANT_FLOAT_MIN_COSINE
    tol = FLOAT_RTOL * max(1.0, vs_ort["max_abs_ref"])
    ext = external_rtol * max(1.0, vs_ort["max_abs_ref"])
    return vs_ort["max_abs_err"] <= ext and vs_ref["max_abs_err"] <= tol


def _boundaries(prep: Prepared, names: list[str]):
    from tigris.samples import Boundary

    return [Boundary(d["name"], tuple(d["shape"]), d["dtype"]) for d in _io_json(prep, names)]


def _pad_rows(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A row-counted output's valid rows padded with rows of -1 to its maximum ``shape`` (docs/format.md)."""
    a = np.asarray(a).reshape(-1, *shape[1:]) if np.asarray(a).size else np.zeros((0, *shape[1:]), np.int64)
    out = np.full(shape, -1, dtype=np.int64)
    n = min(a.shape[0], shape[0])
    out[:n] = a[:n]
    if a.shape[0] > shape[0]:  # more rows than the plan can hold: never equal
        out[-1] = -2
    return out


def _metrics(got: list[np.ndarray], ref: list[np.ndarray], integer: bool, classifier: bool) -> dict[str, Any]:
    """compare() over every sample's elements together, plus top-1 agreement for a classifier output."""
    m = compare(np.concatenate([np.ravel(g) for g in got]), np.concatenate([np.ravel(r) for r in ref]), integer)
    m.pop("max_abs_ref")
    m["top1_agreement"] = top1_agreement(got, ref) if classifier else None
    return m


def _worst_sample(got: list[np.ndarray], ref: list[np.ndarray], todo: list[Any]) -> dict[str, Any]:
    """The sample with the largest max abs error (the first of equals): where to look when a data set fails."""
    errs = [float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(r, np.float64)), initial=0.0))
            for g, r in zip(got, ref)]
    i = int(np.argmax(errs)) if errs else 0
    return {"index": i, "source": todo[i].source if todo else "", "max_abs_err": errs[i] if errs else 0.0}


def verify(
    model: str | Path,
    fast: int | str,
    slow: int | str | None = None,
    flash: int | str | None = None,
    xip: bool = XIP_DEFAULT,
    compression: str = "none",
    input_shapes: dict[str, tuple[int, ...]] | None = None,
    inputs: dict[str, np.ndarray] | None = None,
    seed: int = 0,
    progress: Progress = _quiet,
    samples: int | None = None,
    data: str | Path | None = None,
    numerics: str | None = None,
    weights: str | None = None,
    target: str | None = None,
    one_region: bool = False,
) -> dict[str, Any]:
    """Compile, run on the C runtime, compare with the model's own runtime and with the NumPy reference, over many
    samples. The external reference is ONNX Runtime for an ONNX model, and the TFLite interpreter (reference kernels)
    for a TFLite model, which also runs on TFLite Micro's interpreter when that is installed (``tflm`` per output).

    The samples are ``inputs`` (one sample), or those ``data`` holds (tigris.samples: an .npz, a folder of ONNX
    test_data_set_* .pb files or of .npz files; its expected outputs are compared too), or ``samples`` random ones
    (seeds ``seed``, ``seed + 1``, ...). ``samples`` also caps how many of ``data`` are used. Raises
    :class:`DoesNotFitError` when no plan fits the budgets (nothing runs).

    ``target`` compiles for that core as :func:`compile_model` does. The host runtime reads every target's weight
    arrangements (plain C readers, docs/runtime.md), so the packed plan itself runs here and is compared, bit-exact
    for int8, with the NumPy reference of the plain lowered ops; tests/cortex_m runs the same packed plans on the
    cores they are packed for."""
    from tigris.reference import run_reference
    from tigris.samples import Sample, conform, read_samples

    if inputs and data is not None:
        raise TigrisError("give inputs either one by one (--input) or as a data set (--data), not both", "--data")
    if samples is not None and samples < 1:
        raise TigrisError(f"--samples must be at least 1, not {samples}", "--samples")
    if inputs and samples not in (None, 1):
        raise TigrisError("--input gives one sample; use --data for several (or --samples alone for random ones)",
                          "--samples")
    progress("compiling")
    compiled = compile_model(model, fast, slow, flash, xip, compression, input_shapes, numerics=numerics,
                             weights=weights, target=target, one_region=one_region)
    prep = compiled.analysis.prepared
    assert prep is not None
    in_b = _boundaries(prep, prep.graph.inputs)
    out_b = _boundaries(prep, prep.graph.outputs)
    if data is not None:
        todo = read_samples(data, in_b, out_b)[:samples]
        source = str(data)
    elif inputs:
        by_name = {b.name: b for b in in_b}
        unknown = sorted(set(inputs) - set(by_name))
        if unknown:
            raise TigrisError(f"{unknown} name no graph input (inputs: {sorted(by_name)})", "--input")
        todo = [Sample({k: conform(v, by_name[k], k) for k, v in inputs.items()}, {}, "--input")]
        source = "given inputs"
    else:
        todo = [Sample(random_inputs(prep, seed + i), {}, f"random seed {seed + i}") for i in range(samples or 1)]
        source = f"random (seeds {seed}..{seed + len(todo) - 1})" if len(todo) > 1 else f"random (seed {seed})"

    from tigris.host import Session

    session = Session(compiled.plan_bytes)
    tflite = prep.graph.source == "tflite"
    ort_session = None
    int8_lsb = INT8_MAX_LSB
    if tflite:
        # the model's own runtime is the reference: the TFLite interpreter, and TFLite Micro where it runs the model
        from tigris.reference.tflite_run import run_litert, run_tflm

        if prep.graph.numerics != "tflm":
            int8_lsb = TFLITE_ONNX_NUMERICS_MAX_LSB
    else:
        try:
            ort_session = _ort_session(model)
        except Exception as e:  # noqa: BLE001 - see run_onnxruntime
            raise _ort_refuses(e, model) from None
    tflm_all: dict[str, list[np.ndarray]] | None = {n: [] for n in prep.graph.outputs} if tflite else None
    quantized = any(t.dtype == "int8" for t in prep.graph.tensors.values())
    # float outputs of a quantized model written by a float op rather than by the boundary DequantizeLinear
    float_tail = {t for op in prep.graph.ops if op.op_type != "DequantizeLinear" for t in op.outputs
                  if t in prep.graph.outputs}
    names = list(prep.graph.outputs)
    got: dict[str, list[np.ndarray]] = {n: [] for n in names}
    ort_all: dict[str, list[np.ndarray]] = {n: [] for n in names}
    ref_all: dict[str, list[np.ndarray]] = {n: [] for n in names}
    failed: dict[str, int] = {n: 0 for n in names}
    fast_peak = slow_peak = 0
    gb = prep.graph.boundary
    rows_of = {n: tuple(gb[n].shape) for n in names if n in gb and gb[n].rows}
    for i, sample in enumerate(todo):
        tag = f" (sample {i + 1}/{len(todo)})" if len(todo) > 1 else ""
        progress("running the C runtime" + tag)
        res = session.run(sample.inputs)
        fast_peak, slow_peak = max(fast_peak, int(res.fast_peak)), max(slow_peak, int(res.slow_peak))
        if tflite:
            progress("running the TFLite interpreter" + tag)
            ort_out = run_litert(model, sample.inputs)
            if tflm_all is not None:
                progress("running TFLite Micro" + tag)
                try:
                    tflm_out = run_tflm(model, sample.inputs)
                    for n in names:
                        tflm_all[n].append(np.asarray(tflm_out[n]).reshape(np.shape(res.outputs[n])))
                except TigrisError as e:  # not installed, or an operator TFLM lacks: the interpreter decides
                    progress(f"TFLite Micro not compared: {e}")
                    tflm_all = None
        else:
            progress("running ONNX Runtime" + tag)
            ort_out = run_onnxruntime(model, sample.inputs, session=ort_session)
        progress("running the NumPy reference" + tag)
        ref_out = run_reference(prep.graph, sample.inputs, prep.lowered)
        for n in names:
            g, o, r = np.asarray(res.outputs[n]), np.asarray(ort_out[n]), np.asarray(ref_out[n])
            if rows_of.get(n) is not None:  # row-counted: compared at the maximum size, unused rows -1, so a
                g, o, r = (_pad_rows(a, rows_of[n]) for a in (g, o, r))  # different valid count fails
            o = o.reshape(g.shape) if o.size == g.size else o
            got[n].append(g)
            ort_all[n].append(o)
            ref_all[n].append(r)
            if not _sample_passes(g, o, r, quantized, n in float_tail, int8_lsb,
                                  FP16_RTOL if "float16" in (prep.graph.precision, prep.graph.weights_dtype)
                                  else FLOAT_RTOL):
                failed[n] += 1
    outputs = []
    for n, b in zip(names, out_b):
        integer = got[n][0].dtype.kind in "iu"
        cls = is_classifier(b.shape)
        vs_ort = _metrics(got[n], ort_all[n], integer, cls)
        vs_ref = _metrics(got[n], ref_all[n], integer, cls)
        have_exp = [s.expected[n] for s in todo if n in s.expected]
        vs_exp = None
        if have_exp and len(have_exp) == len(todo):
            vs_exp = _metrics(got[n], have_exp, integer, cls)
        elif have_exp:
            raise TigrisError(f"only {len(have_exp)} of {len(todo)} samples give expected output {n}", source)
        outputs.append({
            "name": n,
            "dtype": b.dtype,
            "shape": list(b.shape),
            "classifier": cls,
            **vs_ort,
            "reference_max_abs_err": vs_ref["max_abs_err"],
            "reference_bit_exact": all(np.array_equal(g, r) for g, r in zip(got[n], ref_all[n])),
            "reference": vs_ref,
            "expected": vs_exp,
            "failed_samples": failed[n],
            "worst_sample": _worst_sample(got[n], ort_all[n], todo),
            "pass": failed[n] == 0,
        })
        if tflite:
            outputs[-1]["tflm"] = _metrics(got[n], tflm_all[n], integer, cls) if tflm_all else None
    weights_json = {"dtype": prep.graph.weights_dtype}
    if prep.graph.weights_dtype == "float16" and not quantized:
        # what storing the weights as halves costs: the plan against ONNX Runtime on the model as given (float32
        # for compile --weights fp16), relative to max(1, max|ref|), next to the tolerance verify applies
        weights_json["tolerance_rtol"] = FP16_RTOL
        weights_json["accuracy_cost"] = {
            o["name"]: {"max_abs_err": o["max_abs_err"], "rel_err": o["max_abs_err"] / max(
                1.0, max(float(np.abs(np.asarray(v, np.float64)).max(initial=0.0)) for v in ort_all[o["name"]])),
                        "cosine": o["cosine"]} for o in outputs}
    from tigris.emit.reader import read_plan

    packed = read_plan(compiled.plan_bytes)
    return {
        "pass": all(o["pass"] for o in outputs),
        "target": packed.target_name,
        "arranged_ops": len(packed.arrangements()),
        "samples": len(todo),
        "weights": weights_json,
        "inputs_from": source,
        "against": "tflite" if tflite else "onnxruntime",
        "plan": compiled.analysis.json,
        "outputs": outputs,
        "runtime": {"fast_peak_bytes": fast_peak, "slow_peak_bytes": slow_peak},
    }


def firmware_ram(plan_bytes: bytes, io: str = "separate") -> dict[str, int]:
    """RAM of a firmware running this plan, as the generated header states it: fast and slow arena, the
    input and output bytes, and the total (tigris.codegen.PlanInfo.ram_json): the I/O buffers count with
    ``io="separate"`` and not with ``io="in-arena"`` (the I/O lives in the arenas; codegen --io in-arena)."""
    from tigris.codegen import read_plan_info

    if io not in ("separate", "in-arena"):
        raise TigrisError(f"io must be separate or in-arena, not {io!r}", "--io")
    return read_plan_info(bytes(plan_bytes)).ram_json(io)


def inspect(path: str | Path) -> dict[str, Any]:
    """What an .onnx model or a .tgrs plan contains. Reads only; never compiles or runs."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise TigrisError(f"cannot read file: {e.strerror}", str(p)) from None
    from tigris.emit import inspect_onnx, inspect_plan

    if data[:4] == b"TGRS":
        return inspect_plan(data)
    from tigris.load.tflite.reader import is_tflite

    if is_tflite(data):
        from tigris.emit.inspect import inspect_tflite

        info = inspect_tflite(p)
    else:
        info = inspect_onnx(p)
    info["layers"] = _onnx_layers(p)
    return info


def _onnx_layers(p: Path) -> list[dict[str, Any]] | None:
    """The per-layer view of a model TiGrIS can load (after normalization: the ops the plan would run); None when
    it cannot (inspect still shows the stored graph)."""
    try:
        prep = prepare(p)
    except TigrisError:
        return None
    rows = []
    for op, low in zip(prep.graph.ops, prep.lowered):
        t = prep.graph.tensors.get(op.outputs[0]) if op.outputs else None
        rows.append({"name": op.name, "type": op.op_type, "kernel": "alias" if low.alias else low.kind,
                     "shape": list(t.shape) if t else [], "dtype": t.dtype if t else None, "macs": int(low.macs),
                     "weight_bytes": _const_bytes(low), "activation_bytes": int(t.nbytes) if t else 0})
    return rows
