"""Lower bounds of the SRAM-only schemes on MobileNetV2-1.0 224 int8 (docs/benchmarks.md, section sram_only_bounds).

    python3 bench/sram_only_bounds.py            # prints the table and writes the section

A board without PSRAM holds the 150,528-byte int8 input and the head of the network (the unit from the input to the
first boundary small enough to sit beside it) in one SRAM region. The issue's target, 175,616 bytes, leaves 25,088
bytes beside the input. For each way of running the head this computes what any plan of that shape needs, by
interval arithmetic over the model's own ops (the rows and columns each op reads for a band of its output, the
rows a rolling unit carries from tile to tile), and always granting the scheme the best case:

* the input is read in place (no band buffer of its own) and every byte of it that no later tile reads is free;
* at each op's step only the buffers live across that step count, and the op's own input and output count as the
  larger of the two (as if every op ran in place);
* the head's output may take any input byte that no later tile reads: the smallest address span holding the input
  and the output is found exactly for the scheme's tile order (every output band written against the input bytes
  the tiles after it still read, over every offset of the output relative to the input);
* no alignment, no scratch, no weights (XIP), no accumulator other than the int32 partial sums of a projection
  summed over channel groups.

So a scheme whose bound exceeds the target cannot reach it however it is implemented; one under it may. The
region's bound is the larger of (input still unread at the second tile + buffers at the worst step) and the
span. Recompute is the MACs computed more than once (column or row halos), as a share of the model's MACs.

Schemes: ``rows`` (row tiles, rows carried: today's rolling units), ``rows, recompute`` (row tiles recomputing
halos), ``rows, expansion recomputed`` (rows carried except each inverted-residual block's expanded tensors, whose
overlap rows the expand recomputes), ``strips n`` (n column strips, rows rolled inside each strip, strip-major order: the COLS+ROLLING shape),
``groups G`` (row tiles, rolled, the expanded channels of each inverted-residual block of the head in G groups
through expand, depthwise and project, the project summing int32 over the groups), ``groups G, recompute``
(the same, the depthwise input's overlap rows recomputed instead of carried), ``groups G, recompute, joined before
the projection`` (the depthwise groups' int8 outputs joined by a channel Concat and projected once, as
``weight_split.split_expansion`` builds it: no int32 sums, the joined band instead), ``patches p x p`` (2-D patches of the
head's output, halos recomputed in both directions, patch-row-major order, as MCUNetV2 runs its head)."""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _doc import markdown_table, write_section  # noqa: E402

TARGET = 175_616


@dataclass
class Op:
    kind: str  # "win" (a KxK conv or depthwise conv), "pw" (1x1 conv), "add"
    ins: list[int]  # tensor indices (activations)
    out: int
    k: int = 1
    s: int = 1
    p: int = 0
    macs_px: int = 0  # MACs per output pixel
    expand: bool = False  # a 1x1 conv that widens the channels (the head of an inverted-residual block)
    project: bool = False  # a 1x1 conv that narrows them (its tail)


@dataclass
class Tensor:
    h: int
    w: int
    c: int


def head_chain(graph, last_tensor: str, first_tensor: str | None = None) -> tuple[list[Op], list[Tensor], int]:
    """The ops from ``first_tensor`` (the graph input when None) to ``last_tensor`` as a chain of windowed/1x1/add
    ops; tensor 0 is the first. Returns the ops, tensors and the model's total MACs."""
    from tigris.plan.spatial import op_macs

    index: dict[str, int] = {}
    tensors: list[Tensor] = []

    def t(name: str) -> int:
        if name not in index:
            n, c, h, w = graph.tensors[name].shape
            index[name] = len(tensors)
            tensors.append(Tensor(h, w, c))
        return index[name]

    ops: list[Op] = []
    start = first_tensor or graph.ops[0].inputs[0]
    t(start)
    began = first_tensor is None
    for op in graph.ops:
        began = began or start in op.inputs
        if not began:
            continue
        acts = [x for x in op.inputs if x and x in graph.tensors and not graph.is_const(x)]
        if op.op_type == "Add":
            o = Op("add", [t(x) for x in acts], t(op.outputs[0]))
        else:
            k = (op.attrs["kernel_shape"][0] - 1) * op.attrs.get("dilations", [1])[0] + 1  # the window's span
            o = Op("win" if k > 1 else "pw", [t(acts[0])], t(op.outputs[0]), k, op.attrs["strides"][0],
                   op.attrs["pads"][0])
            ci, co = tensors[o.ins[0]].c, tensors[o.out].c
            o.expand, o.project = o.kind == "pw" and co > ci, o.kind == "pw" and co < ci
        out = tensors[o.out]
        o.macs_px = op_macs(graph, op) // max(1, out.h * out.w)
        ops.append(o)
        if op.outputs[0] == last_tensor:
            break
    macs = sum(op_macs(graph, op) for op in graph.ops)
    return ops, tensors, macs


def _need(op: Op, lo: int, hi: int, extent: int) -> tuple[int, int]:
    """Rows (or columns) of the op's input that output rows [lo, hi) read, clipped to [0, extent)."""
    if op.kind != "win":
        return lo, hi
    return max(0, lo * op.s - op.p), min(extent, (hi - 1) * op.s - op.p + op.k)


def col_bands(ops: list[Op], tensors: list[Tensor], lo: int, hi: int) -> list[tuple[int, int] | None]:
    """Per tensor, the hull of the columns the chain reads for output columns [lo, hi) (columns are recomputed)."""
    out: list[tuple[int, int] | None] = [None] * len(tensors)
    out[ops[-1].out] = (lo, hi)
    for op in reversed(ops):
        b = out[op.out]
        if b is None:
            continue
        for i in op.ins:
            a = _need(op, b[0], b[1], tensors[i].w)
            out[i] = a if out[i] is None else (min(out[i][0], a[0]), max(out[i][1], a[1]))
    return out


def row_bands(ops: list[Op], tensors: list[Tensor], lo: int, hi: int, prev: list | None,
              carried: set[int]) -> list[tuple[int, int] | None]:
    """Per tensor, the rows a tile holds for output rows [lo, hi). A carried tensor's producer computes only its
    fresh rows (those after the previous tile's band), so its inputs' bands follow from those: the rolling walk."""
    out: list[tuple[int, int] | None] = [None] * len(tensors)
    out[ops[-1].out] = (lo, hi)
    for op in reversed(ops):
        b = out[op.out]
        if b is None:
            continue
        if op.out in carried and prev is not None and prev[op.out] is not None:
            b = (max(b[0], prev[op.out][1]), b[1])  # the fresh rows
            if b[0] >= b[1]:
                continue
        for i in op.ins:
            a = _need(op, b[0], b[1], tensors[i].h)
            out[i] = a if out[i] is None else (min(out[i][0], a[0]), max(out[i][1], a[1]))
    for u in range(len(tensors)):  # a carried buffer none of whose consumers needs new rows keeps its band
        if out[u] is None and prev is not None:
            out[u] = prev[u]
    return out


@dataclass
class Scheme:
    name: str
    order: str  # "rows", "strips", "patches"
    n: int = 1  # column strips / patches per side
    groups: int = 1
    roll: bool = True  # rows carried (else recomputed)
    group_roll: bool = True  # the grouped depthwise input's rows carried
    join: bool = False  # the depthwise groups' int8 outputs joined (a channel Concat) before an ordinary projection


def _grouped(ops: list[Op], tensors: list[Tensor]) -> tuple[set[int], set[int]]:
    """The expanded tensors (an expand's output and the depthwise conv's output after it) and the projections."""
    g, proj = set(), set()
    for k, op in enumerate(ops):
        if op.expand and k + 2 < len(ops) and ops[k + 1].kind == "win" and ops[k + 2].project:
            g |= {op.out, ops[k + 1].out}
            proj.add(k + 2)
    return g, proj


def evaluate(ops: list[Op], tensors: list[Tensor], sch: Scheme, total_macs: int) -> dict:
    """The scheme's bound: buffers at the worst step of an interior tile, the input still unread then, the
    smallest span of input and output, and the recompute."""
    y = tensors[ops[-1].out]
    x = tensors[0]
    yi = ops[-1].out
    grouped, projections = _grouped(ops, tensors) if sch.groups > 1 or not sch.group_roll else (set(), set())
    if sch.groups == 1:
        projections = set()  # one group: the projection reads every channel at once, no partial sums
    rolling = sch.roll and sch.order != "patches"
    carried = {u for u in range(len(tensors)) if rolling and not (u in grouped and not sch.group_roll)}
    # the tiles: (row band of y, column band of y), in execution order
    if sch.order == "patches":
        rb = [(i * y.h // sch.n, (i + 1) * y.h // sch.n) for i in range(sch.n)]
        cb = [(j * y.w // sch.n, (j + 1) * y.w // sch.n) for j in range(sch.n)]
        tiles = [(r, c) for r in rb for c in cb]
    elif sch.order == "strips":
        cb = [(j * y.w // sch.n, (j + 1) * y.w // sch.n) for j in range(sch.n)]
        tiles = [((r, r + 1), c) for c in cb for r in range(y.h)]
    else:
        tiles = [((r, r + 1), (0, y.w)) for r in range(y.h)]
    rows: list[list] = []
    for ti, (r, c) in enumerate(tiles):
        same = ti > 0 and tiles[ti - 1][1] == c  # the tile before is in the same strip: its rows carry
        rows.append(row_bands(ops, tensors, *r, rows[-1] if same else None, carried))
    cols = [col_bands(ops, tensors, *c) for _, c in tiles]
    last_use: dict[int, int] = {}
    for k, op in enumerate(ops):
        for i in op.ins:
            last_use[i] = k
    for k2 in projections:  # the groups run expand, depthwise, project in turn: the expand's input waits for all
        last_use[ops[k2 - 2].ins[0]] = max(last_use[ops[k2 - 2].ins[0]], k2)
    prod = {op.out: k for k, op in enumerate(ops)}
    prod[0] = -1

    def chans(u: int) -> int:
        return tensors[u].c // sch.groups if u in grouped else tensors[u].c

    def live_at(ti: int) -> tuple[int, str]:
        """The most bytes of buffers live at one step of tile ``ti``."""
        r_now, c_now = rows[ti], cols[ti]
        nxt = ti + 1 < len(tiles) and tiles[ti + 1][1] == tiles[ti][1]
        r_next = rows[ti + 1] if nxt else None

        def band_bytes(u: int) -> int:
            (a, b), (c0, c1) = r_now[u], c_now[u]
            return (b - a) * (c1 - c0) * chans(u)

        def carry_bytes(u: int) -> int:  # rows this tile holds that the next one keeps (every group's)
            if u not in carried or r_next is None or r_next[u] is None:
                return 0
            a, b = max(r_now[u][0], r_next[u][0]), min(r_now[u][1], r_next[u][1])
            return max(0, b - a) * (c_now[u][1] - c_now[u][0]) * tensors[u].c

        worst, worst_at = 0, ""
        for k, op in enumerate(ops):
            live = 0
            for u in range(1, len(tensors)):
                if u == yi:
                    continue  # the head's output is counted as written (it may sit over input already read)
                others = carry_bytes(u) * (sch.groups - 1) // sch.groups if u in grouped else 0
                if u in op.ins or u == op.out:
                    live += others  # the op's own band is counted below
                elif prod[u] < k < last_use.get(u, -1):
                    live += band_bytes(u) + others  # produced earlier in this tile, read later
                else:
                    live += carry_bytes(u)  # waiting for the next tile (or from the one before)
            own = [band_bytes(i) for i in op.ins if i != 0] + ([band_bytes(op.out)] if op.out != yi else [])
            live += max(own) if own else 0
            for k2 in projections:  # the int32 sums of the projection's output band, over the groups
                if sch.join:  # or the other groups' depthwise outputs waiting for the join, then the joined band
                    d = ops[k2 - 1].out
                    (a, b), (c0, c1) = r_now[d], c_now[d]
                    full = (b - a) * (c1 - c0) * tensors[d].c
                    live += full * (sch.groups - 1) // sch.groups if k2 - 2 <= k < k2 else \
                        full - band_bytes(d) if k == k2 else 0
                    continue
                if k2 - 2 <= k <= k2:
                    o = ops[k2].out
                    (a, b), (c0, c1) = r_now[o], c_now[o]
                    live += 4 * (b - a) * (c1 - c0) * tensors[o].c
            if live > worst:
                worst, worst_at = live, f"op {k} ({'1x1' if op.kind == 'pw' else op.kind} {op.k}x{op.k}/{op.s})"
        return worst, worst_at

    # At every step of tile t three disjoint sets of bytes are live: the input later tiles still read, the output
    # earlier tiles wrote, and the buffers; the bound is the most over the tiles (the first ones hold the input)
    need: dict[int, tuple[int, int]] = {}
    unread = [0] * len(tiles)
    for ti in range(len(tiles) - 1, -1, -1):
        unread[ti] = x.c * sum(c1 - c0 for c0, c1 in need.values())  # what tiles after ti read
        (ra, rb_), (ca, cb_) = rows[ti][0], cols[ti][0]
        for r in range(ra, rb_):
            lo, hi = need.get(r, (ca, cb_))
            need[r] = (min(lo, ca), max(hi, cb_))
    written = 0
    worst, worst_at, unread_x, buffers = 0, "", 0, 0
    for ti, ((ya, yb), (yc0, yc1)) in enumerate(tiles):
        live, at = live_at(ti)
        if unread[ti] + written + live > worst:
            worst, worst_at, unread_x, buffers = unread[ti] + written + live, f"tile {ti}, {at}", unread[ti], live
        written += (yb - ya) * (yc1 - yc0) * y.c
    most_buffers = max(live_at(ti)[0] for ti in range(len(tiles)))
    # recompute: what the tiles compute beyond each output once (a carried tensor's fresh rows only)
    recompute = 0
    for op in ops:
        o, t = op.out, tensors[op.out]
        done = 0
        for ti in range(len(tiles)):
            ra, rb_ = rows[ti][o]
            if o in carried and ti > 0 and tiles[ti - 1][1] == tiles[ti][1]:
                ra = max(ra, rows[ti - 1][o][1])
            done += max(0, rb_ - ra) * (cols[ti][o][1] - cols[ti][o][0])
        recompute += (done - t.h * t.w) * op.macs_px
    span, at_input = _span(tiles, rows, cols, tensors, ops)
    return {"at_input": at_input, "buffers": buffers, "most_buffers": most_buffers, "worst": worst_at, "unread_x": unread_x,
            "step": worst, "span": span, "bound": max(worst, span), "recompute": 100.0 * recompute / total_macs,
            "tiles": len(tiles)}


def _x_needed(rows, cols, later) -> dict[int, tuple[int, int]]:
    """Per input row, the hull of the columns the tiles ``later`` read of it."""
    need: dict[int, tuple[int, int]] = {}
    for tj in later:
        (ra, rb_), (ca, cb_) = rows[tj][0], cols[tj][0]
        for r in range(ra, rb_):
            lo, hi = need.get(r, (ca, cb_))
            need[r] = (min(lo, ca), max(hi, cb_))
    return need


def _span(tiles, rows, cols, tensors, ops) -> tuple[int, bool]:
    """The smallest address span of the input x (NHWC at offset 0) and the head's output y (NHWC at offset B) such
    that no byte of y a tile writes is a byte of x a later tile reads, over every B; and whether B = 0 (the output
    at the input's own offset, as the planner's streaming overwrite places it) is such an offset."""
    x, yi = tensors[0], ops[-1].out
    y = tensors[yi]
    xrow, yrow = x.w * x.c, y.w * y.c
    forbidden: list[tuple[int, int]] = []  # open intervals of B
    for ti in range(len(tiles)):
        (ya, yb), (yc0, yc1) = tiles[ti]
        if ti + 1 == len(tiles):
            break
        need = _x_needed(rows, cols, range(ti + 1, len(tiles)))
        for yr in range(ya, yb):
            ys, ye = yr * yrow + yc0 * y.c, yr * yrow + yc1 * y.c
            for r, (c0, c1) in need.items():
                xs, xe = r * xrow + c0 * x.c, r * xrow + c1 * x.c
                forbidden.append((xs - ye, xe - ys))
    nx, ny = x.h * xrow, y.h * yrow
    cands = {0, nx - ny, -ny, nx}
    for a, b in forbidden:
        cands |= {a, b}

    def ok(b: int) -> bool:
        return all(not (lo < b < hi) for lo, hi in forbidden)

    best = nx + ny
    for b in sorted(cands, key=lambda b: max(nx, b + ny) - min(0, b)):
        s = max(nx, b + ny) - min(0, b)
        if s >= best:
            break
        if ok(b):
            best = s
            break
    return best, ok(0)


def schemes() -> list[Scheme]:
    out = [Scheme("rows (rolling, today's shape)", "rows"), Scheme("rows, recompute", "rows", roll=False)]
    out += [Scheme(f"strips {n} (COLS+ROLLING)", "strips", n=n) for n in (2, 4, 8, 14)]
    out += [Scheme("rows, expansion recomputed", "rows", group_roll=False)]
    out += [Scheme(f"groups {g}", "rows", groups=g) for g in (2, 4, 8, 16)]
    out += [Scheme(f"groups {g}, recompute", "rows", groups=g, group_roll=False) for g in (4, 8, 16)]
    out += [Scheme(f"groups {g}, recompute, joined before the projection", "rows", groups=g, group_roll=False,
                   join=True) for g in (8, 16)]
    out += [Scheme(f"patches {p}x{p}", "patches", n=p) for p in (2, 4, 7)]
    return out


def table(graph) -> str:
    rows = []
    heads = [("input -> 56x56x24", "conv_30_QuantizeLinear_Output", None, schemes()),
             ("input -> 28x28x32", "conv_61_QuantizeLinear_Output", None, schemes()),
             ("56x56x24 -> 28x28x32 (the next unit)", "conv_61_QuantizeLinear_Output",
              "conv_30_QuantizeLinear_Output", schemes()[:1])]
    for label, name, first, kinds in heads:
        ops, tensors, macs = head_chain(graph, name, first)
        for sch in kinds:
            if sch.order == "patches" and tensors[ops[-1].out].h % sch.n:
                continue
            r = evaluate(ops, tensors, sch, macs)
            rows.append([label, sch.name, r["most_buffers"], r["worst"], r["unread_x"], r["buffers"],
                         r["step"], r["span"], "yes" if r["at_input"] else "no", r["bound"], f"{r['recompute']:.1f}",
                         "yes" if r["bound"] <= TARGET and r["recompute"] <= 10 else "no"])
            print(rows[-1], flush=True)
    headers = ["head", "scheme", "most buffers at one step (B)", "worst step", "input unread there (B)",
               "buffers there (B)", "input + output + buffers there (B)", "least span of input + head output (B)",
               "output over the input at its offset", "bound (B)", "recompute %", f"<= {TARGET:,} and <= 10%"]
    return (
        "Lower bounds of the SRAM-only schemes on MobileNetV2-1.0 224 int8 (`python3 bench/sram_only_bounds.py`): "
        "what any plan of each shape needs for the head (the unit from the 150,528-byte input to its first "
        "boundary), granting every best case (input read in place, every op in place, no alignment, scratch or "
        "weights, the head output at the best offset over read input bytes; bench/sram_only_bounds.py says how). "
        "`bound` is the larger of the buffers at the worst step of an interior tile plus the input still unread "
        "then, and the least address span of input and head output for the scheme's tile order (`output over the "
        "input at its offset`: whether the output may start where the input does, as the planner's streaming "
        "overwrite places it). A scheme over "
        f"{TARGET:,} bytes cannot reach the issue's target however it is built.\n\n"
        + markdown_table(headers, rows)
    )


def planned_line(path: Path, prep, fast: int, region: int) -> str:
    """What the planner's plan at ``-m fast -s region --one-region --xip`` needs (proven by the checker)."""
    from tigris import api
    from tigris.plan import sram_bytes
    from tigris.plan.check import check_plan
    from tigris.plan.spatial import op_macs

    a = api.analyze(path, fast, region, xip=True, prepared=prep, emit=False, one_region=True)
    if not a.fits:
        return f"\n\nThe planner at `-m {fast} -s {region} --one-region --xip`: does not fit ({a.reason})."
    macs = sum(op_macs(prep.graph, op) for op in prep.graph.ops)
    ok = "checked" if not check_plan(a.prepared.graph, a.plan) else "CHECK FAILED"
    how = "; ".join(n for n in a.notes if "expansion groups" in n) or "no expansion groups"
    return (f"\n\nThe planner's plan at `tigris analyze -m {fast} -s {region} --one-region --xip`: "
            f"{sram_bytes(a.plan)} bytes as one region at "
            f"{100 * a.plan.recompute_macs / macs:.2f}% recompute ({how}; {ok}); "
            f"{abs(sram_bytes(a.plan) - TARGET):,} bytes {'over' if sram_bytes(a.plan) > TARGET else 'within'} the "
            "target.")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--planned", nargs=2, type=int, metavar=("FAST", "REGION"),
                    help="also plan the model as analyze -m FAST -s REGION --one-region --xip does (the figure "
                         "analyze -s 0 reports) and state what that plan needs")
    args = ap.parse_args(argv)
    import plan_quality
    from tigris import api

    with tempfile.TemporaryDirectory() as tmp:
        path = plan_quality._mbv2_224_int8(Path(tmp))
        prep = api.prepare(path)
        body = table(prep.graph)
        if args.planned:
            body += planned_line(path, prep, *args.planned)
    print(body)
    if not args.no_write:
        write_section("sram_only_bounds", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
