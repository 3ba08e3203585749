"""Stage 7 step 4: serialize a graph, its memory plan and its lowered ops into .tgrs bytes (docs/format.md).

The writer interprets nothing numeric: parameters and constants come from lowering (weights already in runtime
layout, requantization already in Q0.31, ``tigris/ops``), placements and tiles from the memory plan. Its job is to
number things, lay the bytes out and refuse anything the format cannot say. The result is checked by the reader
before it is returned, so a plan that leaves ``emit_plan`` is one the C loader accepts.

Determinism: tensors are numbered by first mention in the graph, every other table follows the plan's order, lists
keyed by tensor are sorted by tensor index, and constant blobs are placed in first-use order. No dict iteration
order of an input affects the bytes except where that order is itself the plan's order.
"""
from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass, field, replace

import numpy as np

from tigris.emit import format as F
from tigris.emit.weights import WeightGroup, compress_unit_blob, const_bytes
from tigris.ir import AnalyzedGraph, DoesNotFitError, Tensor, TigrisError
from tigris.layout import view_dims
from tigris.ops import KIND_IDS
from tigris.ops import kind as kind_of
from tigris.ops import lower as lower_op
from tigris.ops.base import DTYPE_CODES, MAX_INPUTS, Lowered
from tigris.plan.types import ALIGN, MemoryPlan, Placement, align_up

COMPRESSIONS = ("none", "lz4")


def check_flash(plan_bytes: int, flash_budget: int | None, where: str | None = None) -> None:
    """Refuse a plan larger than the flash budget (``-f``): DoesNotFitError (exit 1) naming both sizes."""
    if flash_budget is not None and plan_bytes > flash_budget:
        raise DoesNotFitError(f"plan is {plan_bytes} bytes, flash budget is {flash_budget} bytes", where)


@dataclass
class _Strings:
    data: bytearray = field(default_factory=bytearray)
    _seen: dict[str, tuple[int, int]] = field(default_factory=dict)

    def add(self, s: str) -> tuple[int, int]:
        if s not in self._seen:
            b = s.encode("utf-8")
            self._seen[s] = (len(self.data), len(b))
            self.data.extend(b + b"\0")
        return self._seen[s]


@dataclass
class _Index:
    values: list[int] = field(default_factory=list)

    def add(self, items: list[int]) -> tuple[int, int]:
        first = len(self.values)
        self.values.extend(items)
        return first, len(items)


def _pack(rec: F.Record, values: dict[str, object], where: str) -> bytes:
    try:
        return rec.pack(values)
    except struct.error as e:
        raise TigrisError(f"value does not fit the plan format's {rec.name} record: {e}", where) from None


def _dtype_code(dtype: str, where: str, declared: bool = False) -> int:
    """The TGRS_DT_* code of a stored dtype; int64 is only a declared boundary dtype (index outputs)."""
    if dtype not in DTYPE_CODES or (dtype == "int64" and not declared):
        raise TigrisError(f"dtype {dtype} cannot be stored in a plan", where)
    return DTYPE_CODES[dtype]


def _per_tensor(t: Tensor) -> tuple[float, int]:
    """Per-tensor (scale, zero point) of an activation; the runtime has no per-channel activations."""
    q = t.quant
    if q is None:
        return 1.0, 0
    if q.scale.size != 1 or q.zero_point.size != 1:
        raise TigrisError("per-channel quantization of an activation cannot be stored", t.name)
    s = float(q.scale.reshape(-1)[0])
    if not math.isfinite(s) or s <= 0.0:
        raise TigrisError(f"quantization scale must be positive and finite, got {s!r}", t.name)
    return s, int(q.zero_point.reshape(-1)[0])


def _shape_field(shape: tuple[int, ...], where: str) -> tuple[int, list[int]]:
    if len(shape) > F.MAX_RANK:
        raise TigrisError(f"rank {len(shape)} exceeds the plan format's {F.MAX_RANK}", where)
    return len(shape), [int(d) for d in shape]


def _roots(plan: MemoryPlan, lowered: list[Lowered]) -> dict[str, str]:
    """alias tensor -> root tensor, from the plan and from alias ops (the plan's table wins)."""
    parent: dict[str, str] = {}
    for low in lowered:
        if low.alias and low.inputs and low.outputs:
            parent[low.outputs[0]] = low.inputs[0]
    parent.update(plan.alias_of)
    out: dict[str, str] = {}
    for name in sorted(parent):
        r, seen = name, {name}
        while r in parent and parent[r] != r:
            r = parent[r]
            if r in seen:
                raise TigrisError("alias cycle", name)
            seen.add(r)
        if r != name:
            out[name] = r
    return out


@dataclass
class _Ctx:
    """What every record builder needs: the inputs, the shared string table and INDEX list, and the numbering
    (tensor index by name, alias root by name). Built once per emit; the builders below only append to it."""

    graph: AnalyzedGraph
    plan: MemoryPlan
    lowered: list[Lowered]
    xip: bool
    compression: str
    tidx: dict[str, int]
    root_of: dict[str, str]
    strings: _Strings = field(default_factory=_Strings)
    index: _Index = field(default_factory=_Index)

    def root(self, name: str) -> str:
        return self.root_of.get(name, name)

    def ti(self, name: str, where: str) -> int:
        if name not in self.tidx:
            raise TigrisError(f"tensor {name!r} is not an activation of the graph", where)
        return self.tidx[name]

    def rows(self, name: str) -> int:
        """Length of the row axis (dims[1]) of a tensor."""
        t = self.graph.tensors[name]
        return view_dims(t.shape, t.layout)[1]


@dataclass
class _Units:
    """The unit-level tables, built together because units own contiguous ranges of each."""

    units: list[dict[str, int]] = field(default_factory=list)
    placements: list[bytes] = field(default_factory=list)
    tile_rows: list[bytes] = field(default_factory=list)
    ops: list[bytes] = field(default_factory=list)
    blobs: list[tuple[int, bytes]] = field(default_factory=list)  # (unit, stored blob) of non-XIP units
    xip_group: WeightGroup = field(default_factory=WeightGroup)
    weight_raw: int = 0
    homes: list[dict[str, Placement]] = field(default_factory=list)  # per unit: root name -> fast placement


def emit_plan(
    graph: AnalyzedGraph,
    plan: MemoryPlan,
    lowered: list[Lowered] | None = None,
    *,
    xip: bool,
    compression: str = "none",
    target: str = "generic",
) -> bytes:
    """The .tgrs bytes of ``plan`` (see docs/format.md). Raises TigrisError for anything the format cannot hold.

    ``target`` (a name of :data:`tigris.emit.format.TARGET_NAMES`) arranges the weights of the ops that have an
    arrangement for that core (:func:`tigris.ops.arrange`) and is recorded in the header; ``generic`` arranges
    nothing, and its plans are exactly those of a writer that knows no targets."""
    if compression not in COMPRESSIONS:
        raise TigrisError(f"unknown compression {compression!r}; use one of {', '.join(COMPRESSIONS)}", "-c")
    if xip and compression != "none":
        raise TigrisError("--xip reads weights in place, so they cannot be compressed", "-c")
    if xip != plan.xip:
        raise TigrisError(f"the memory plan was made for xip={plan.xip}, emitting with xip={xip}", graph.name)
    if lowered is None:
        lowered = [lower_op(graph, op) for op in graph.ops]
    if len(lowered) != len(graph.ops):
        raise TigrisError(f"{len(lowered)} lowered ops for {len(graph.ops)} graph ops", graph.name)
    from tigris.ops import arrange

    lowered = arrange(lowered, target)
    if not plan.units:
        raise TigrisError("the memory plan has no exec units", graph.name)
    for u, unit in enumerate(plan.units):
        # The format says "the unit's last op accumulates" with one flag (UnitFlag.ACCUM); anything else the planner
        # might list cannot be expressed, and running it per tile would compute a wrong result, so refuse it.
        acc = list(getattr(unit, "accumulate", None) or [])
        if acc and (
            acc != [unit.ops[-1]] or lowered[acc[0]].kind != "gap" or not unit.tile_rows
        ):
            raise TigrisError(
                f"accumulating ops {acc}: the format holds one accumulating GlobalAveragePool per tiled unit, its "
                "last op", f"unit {u}",
            )

    names = [t.name for t in graph.activations()]
    ctx = _Ctx(graph, plan, lowered, xip, compression, {n: i for i, n in enumerate(names)}, _roots(plan, lowered))
    tensor_recs = [_tensor_record(ctx, n) for n in names]
    for n in plan.slow:
        ctx.ti(n, "slow arena")
    units = _build_units(ctx)
    weights = _weights_section(ctx, units)
    unit_recs = [_pack(F.UNIT, rec, f"unit {u}") for u, rec in enumerate(units.units)]
    io_recs = [_io_record(ctx, n, F.Direction.INPUT, units.homes[0]) for n in graph.inputs]
    io_recs += [_io_record(ctx, n, F.Direction.OUTPUT, units.homes[-1]) for n in graph.outputs]
    stage_recs = _stage_records(ctx)
    name_off, name_len = ctx.strings.add(graph.name)
    plan_rec = _pack(
        F.PLAN,
        dict(
            fast_arena=plan.fast_peak, slow_arena=plan.slow_peak, fast_budget=plan.fast_budget,
            slow_budget=F.NONE if plan.slow_budget is None else plan.slow_budget, weight_raw=units.weight_raw,
            weight_stored=len(weights), spill_bytes=plan.spill_bytes, reload_bytes=plan.reload_bytes,
            unscheduled_peak=plan.unscheduled_peak,
            max_prefix=0 if xip else max(u.weight_bytes for u in plan.units),
            n_inputs=len(graph.inputs), n_outputs=len(graph.outputs), name_off=name_off, name_len=name_len,
            recompute_macs=plan.recompute_macs,
        ),
        "plan",
    )
    idx = ctx.index.values
    sections: dict[F.SectionId, tuple[bytes, int]] = {
        F.SectionId.PLAN: (plan_rec, 1),
        F.SectionId.STRINGS: (bytes(ctx.strings.data), len(ctx.strings.data)),
        F.SectionId.TENSORS: (b"".join(tensor_recs), len(tensor_recs)),
        F.SectionId.IO: (b"".join(io_recs), len(io_recs)),
        F.SectionId.OPS: (b"".join(units.ops), len(units.ops)),
        F.SectionId.UNITS: (b"".join(unit_recs), len(unit_recs)),
        F.SectionId.PLACEMENTS: (b"".join(units.placements), len(units.placements)),
        F.SectionId.TILE_ROWS: (b"".join(units.tile_rows), len(units.tile_rows)),
        F.SectionId.INDEX: (struct.pack(f"<{len(idx)}I", *idx), len(idx)),
        F.SectionId.STAGES: (b"".join(stage_recs), len(stage_recs)),
        F.SectionId.WEIGHTS: (weights, len(weights)),
    }
    flags = (F.Flag.XIP if xip else 0) | (F.Flag.LZ4 if compression == "lz4" else 0)
    flags |= F.Flag.TFLM if graph.numerics == "tflm" else 0
    flags |= F.Flag.ONE_REGION if getattr(plan, "one_region", False) else 0
    data = assemble(sections, int(flags), int(F.TARGET_NAMES[target]))

    from tigris.emit.reader import PlanFormatError, read_plan  # the self-check: what we return, the loader accepts

    try:
        read_plan(data)
    except PlanFormatError as e:
        # Every input check above passed, so the memory plan itself is inconsistent (a planner bug): say so.
        raise TigrisError(f"the memory plan cannot be written as a valid plan: {e.what}", graph.name) from None
    return data


def _tensor_record(ctx: _Ctx, n: str) -> bytes:
    t = ctx.graph.tensors[n]
    r = ctx.root(n)
    flags = 0
    if n in ctx.graph.inputs:
        flags |= F.TensorFlag.INPUT
    if n in ctx.graph.outputs:
        flags |= F.TensorFlag.OUTPUT
    if r != n:
        flags |= F.TensorFlag.ALIAS
    view_off = ctx.plan.view_offset.get(n, 0) if r != n else 0
    if n in ctx.plan.view_offset and r != n:
        flags |= F.TensorFlag.VIEW  # a run of the root's buffer (lifetime rule 7)
    scale, zp = _per_tensor(t)
    if t.quant is not None:
        flags |= F.TensorFlag.QUANT
    slow_off, slow_size = F.NONE, 0
    if r == n and n in ctx.plan.slow:  # only roots own a slow home; aliases use their root's
        flags |= F.TensorFlag.SLOW
        slow_off, slow_size = ctx.plan.slow[n].offset, ctx.plan.slow[n].size
    if t.layout not in F.LAYOUT_CODES:
        raise TigrisError(f"unknown layout {t.layout!r}", n)
    rank, shape = _shape_field(t.shape, n)
    off, ln = ctx.strings.add(n)
    return _pack(
        F.TENSOR,
        dict(
            name_off=off, name_len=ln, dtype=_dtype_code(t.dtype, n), layout=int(F.LAYOUT_CODES[t.layout]),
            dims=view_dims(t.shape, t.layout), rank=rank, shape=shape, root=ctx.ti(r, n), scale=scale,
            zero_point=zp, nbytes=t.nbytes, slow_offset=slow_off, slow_size=slow_size, flags=int(flags),
            view_off=view_off,
        ),
        n,
    )


def _fast_by_root(ctx: _Ctx, u: int) -> dict[str, Placement]:
    """A unit's fast placements keyed by root (the plan may name an alias; it must then agree with its root)."""
    fast: dict[str, Placement] = {}
    unit = ctx.plan.units[u]
    for key in sorted(unit.fast):
        r, p = ctx.root(key), unit.fast[key]
        if p.arena != "fast":
            raise TigrisError(f"placement of {key} in unit {u} is in the {p.arena} arena", f"unit {u}")
        if r in fast and fast[r] != p:
            raise TigrisError(f"alias {key} placed apart from its root {r}", f"unit {u}")
        fast[r] = p
    return fast


def _bands(ctx: _Ctx, u: int, placed: list[str]) -> list[list[tuple[int, int]]]:
    """(row0, rows) of every placed tensor in every tile of a tiled unit, in placement order. A band the plan names
    by an alias is its root's; a tensor the plan gives no band for is banded whole."""
    out = []
    for tile in ctx.plan.units[u].tile_rows:
        by_root: dict[str, tuple[int, int]] = {}
        for key in sorted(tile):
            r = ctx.root(key)
            if r not in by_root or key == r:
                by_root[r] = tile[key]
        row = []
        for n in placed:
            a, b = by_root.get(n, (0, ctx.rows(n)))
            row.append((int(a), int(b) - int(a)))
        out.append(row)
    return out


def _col_bands(ctx: _Ctx, u: int, placed: list[str]) -> list[list[tuple[int, int]]]:
    """(col0, cols) of every placed tensor in every tile of a COLS unit, in placement order (a tensor the plan gives
    no column band for is banded whole)."""
    out = []
    for tile in ctx.plan.units[u].tile_cols:
        by_root: dict[str, tuple[int, int]] = {}
        for key in sorted(tile):
            r = ctx.root(key)
            if r not in by_root or key == r:
                by_root[r] = tile[key]
        row = []
        for n in placed:
            t = ctx.graph.tensors[n]
            a, b = by_root.get(n, (0, view_dims(t.shape, t.layout)[2]))
            row.append((int(a), int(b) - int(a)))
        out.append(row)
    return out


def _check_cols_unit(ctx: _Ctx, u: int) -> None:
    """What the format can say about a column-split unit (docs/format.md "COLS units"): refuse the rest here, with
    the unit named, rather than as a reader code."""
    unit = ctx.plan.units[u]
    where = f"unit {u}"
    if not unit.tile_rows or len(unit.tile_cols) != len(unit.tile_rows):
        raise TigrisError(f"{len(unit.tile_cols)} column tiles for {len(unit.tile_rows)} row tiles", where)
    if getattr(unit, "rolling", None):
        raise TigrisError("a column-split unit cannot also carry rows", where)


def _build_units(ctx: _Ctx) -> _Units:
    """UNITS, PLACEMENTS, TILE_ROWS and OPS, unit by unit, with each unit's weight group."""
    acc = _Units()
    for u, unit in enumerate(ctx.plan.units):
        where = f"unit {u}"
        fast = _fast_by_root(ctx, u)
        acc.homes.append(fast)
        tiled = bool(unit.tile_rows)
        placed = sorted(fast, key=lambda n: ctx.ti(n, where))
        bands = _bands(ctx, u, placed) if tiled else []
        col_split = bool(getattr(unit, "tile_cols", None))
        if col_split:
            _check_cols_unit(ctx, u)
        cbands = _col_bands(ctx, u, placed) if col_split else []
        place_first = len(acc.placements)
        for j, n in enumerate(placed):
            p = fast[n]
            band_rows = max((b[j][1] for b in bands), default=ctx.rows(n)) if tiled else ctx.rows(n)
            acc.placements.append(
                _pack(F.PLACEMENT, dict(tensor=ctx.ti(n, where), offset=p.offset, size=p.size, band_rows=band_rows),
                      where)
            )
        rows_first = len(acc.tile_rows) if tiled else 0
        for b in bands:
            acc.tile_rows.extend(_pack(F.TILE_ROW, dict(row0=r0, rows=nr), where) for r0, nr in b)
        for b in cbands:  # a COLS unit's column bands follow its row bands
            acc.tile_rows.extend(_pack(F.TILE_COL, dict(col0=c0, cols=nc), where) for c0, nc in b)

        group = acc.xip_group if ctx.xip else WeightGroup()
        op_first = len(acc.ops)
        views = set(ctx.plan.view_ops)
        for i in unit.ops:
            if not ctx.lowered[i].alias and i not in views:  # a view moves no bytes: no op record
                acc.ops.append(_op_record(ctx, i, group, unit.scratch.get(i),
                                          getattr(unit, "in_place_rows", {}).get(ctx.lowered[i].outputs[0], 0)))
        wblob_size = wraw_size = 0
        flags = int(F.UnitFlag.TILED) if tiled else 0
        flags |= int(F.UnitFlag.ACCUM) if getattr(unit, "accumulate", None) else 0
        flags |= int(F.UnitFlag.ROLLING) if tiled and getattr(unit, "rolling", None) else 0
        flags |= int(F.UnitFlag.COLS) if col_split else 0
        flags |= int(F.UnitFlag.OVERWRITE) if getattr(unit, "overwrite", None) else 0
        if not ctx.xip:
            raw = group.image()
            acc.weight_raw += len(raw)
            if len(raw) > unit.weight_bytes:
                raise TigrisError(
                    f"unit {u} needs {len(raw)} bytes of weight prefix, the plan reserved {unit.weight_bytes}", where
                )
            if raw:
                stored, shuffled = raw, False
                if ctx.compression == "lz4":
                    stored, shuffled = compress_unit_blob(raw, F.SHUFFLE_CHUNK)
                acc.blobs.append((u, stored))
                wblob_size, wraw_size = len(stored), len(raw)
                flags |= int(F.UnitFlag.SHUFFLE) if shuffled else 0
        reload_first, reload_count = ctx.index.add([ctx.ti(n, where) for n in unit.reload])
        spill_first, spill_count = ctx.index.add([ctx.ti(n, where) for n in unit.spill])
        stage_first, stage_count = ctx.index.add(list(unit.stages))
        irop_first, irop_count = ctx.index.add(list(unit.ops))
        carry_first = 0
        if flags & F.UnitFlag.ROLLING:  # halo reuse: each placement's line buffer, (NONE, 0) when it carries nothing
            lines = {ctx.root(n): p for n, p in getattr(unit, "carry", {}).items()}
            # (NONE, NONE): its bands overlap but it never carries, its producer computes every band whole (rule 10)
            again = {ctx.root(n) for n in getattr(unit, "recompute", ())}
            carry = [v for n in placed for v in ((lines[n].offset, lines[n].size) if n in lines else
                                                  (F.NONE, F.NONE) if n in again else (F.NONE, 0))]
            carry_first, _ = ctx.index.add(carry)
        acc.units.append(
            dict(
                flags=flags, op_first=op_first, op_count=len(acc.ops) - op_first,
                reload_first=reload_first, reload_count=reload_count, spill_first=spill_first,
                spill_count=spill_count, place_first=place_first, place_count=len(placed),
                tiles=len(unit.tile_rows) if tiled else 1, rows_first=rows_first,
                rows_count=(len(bands) + len(cbands)) * len(placed), stage_first=stage_first, stage_count=stage_count,
                irop_first=irop_first, irop_count=irop_count, weight_bytes=0 if ctx.xip else unit.weight_bytes,
                wblob_off=0, wblob_size=wblob_size, wraw_size=wraw_size, peak_bytes=unit.peak_bytes,
                carry_first=carry_first,
            )
        )
    return acc


def _weights_section(ctx: _Ctx, acc: _Units) -> bytes:
    """WEIGHTS: the XIP group as it is, or the per-unit blobs at 16-byte boundaries (setting each wblob_off)."""
    if ctx.xip:
        image = acc.xip_group.image()
        acc.weight_raw = len(image)
        return image
    wb = bytearray()
    for u, stored in acc.blobs:
        off = align_up(len(wb), ALIGN)
        wb.extend(b"\0" * (off - len(wb)))
        acc.units[u]["wblob_off"] = off
        wb.extend(stored)
    wb.extend(b"\0" * (align_up(len(wb), ALIGN) - len(wb)))
    return bytes(wb)


def _stage_records(ctx: _Ctx) -> list[bytes]:
    unit_of_stage = {s: u for u, unit in enumerate(ctx.plan.units) for s in unit.stages}
    recs = []
    for pos, s in enumerate(ctx.plan.stages):
        where = f"stage {s.index}"
        if s.index != pos:
            raise TigrisError(f"stage at position {pos} has index {s.index}", where)
        if pos not in unit_of_stage:
            raise TigrisError("stage belongs to no exec unit", where)
        ops_first, ops_count = ctx.index.add(list(s.ops))
        in_first, in_count = ctx.index.add([ctx.ti(n, where) for n in s.inputs])
        out_first, out_count = ctx.index.add([ctx.ti(n, where) for n in s.outputs])
        recs.append(
            _pack(
                F.STAGE,
                dict(
                    index=s.index, unit=unit_of_stage[pos], flags=int(F.StageFlag.TILED) if s.tiled else 0,
                    peak_bytes=s.peak_bytes, weight_bytes=s.weight_bytes, tile_h=s.tile_h, tiles=s.tiles,
                    halo=s.halo, chain=-1 if s.chain is None else s.chain, ops_first=ops_first, ops_count=ops_count,
                    in_first=in_first, in_count=in_count, out_first=out_first, out_count=out_count,
                    recompute_macs=s.recompute_macs,
                ),
                where,
            )
        )
    return recs


def _op_record(ctx: _Ctx, i: int, group: WeightGroup, scratch: Placement | None, ip_rows: int = 0) -> bytes:
    low = ctx.lowered[i]
    where = low.op_name or ctx.graph.ops[i].name
    if low.kind not in KIND_IDS:
        raise TigrisError(f"unknown op kind {low.kind!r}", where)
    k = kind_of(low.kind)
    if len(low.outputs) != 1:
        raise TigrisError(f"a kernel call writes exactly one tensor, this one {len(low.outputs)}", where)
    if not 1 <= len(low.inputs) <= MAX_INPUTS:
        raise TigrisError(f"{len(low.inputs)} inputs; a kernel call takes 1..{MAX_INPUTS}", where)
    if ip_rows:
        # the plan runs the op over its own input in pieces (docs/format.md "Window ops in place")
        low = replace(low, params={**low.params, "ip_rows": ip_rows})
    try:
        params = k.param_vector(low)
    except ValueError as e:
        raise TigrisError(str(e), where) from None
    # The zero point reaches every kernel through the tensor records (tgrs_tview.zero_point). The MAC kinds also
    # carry it as zp_in/zp_out parameters (their C ABI reads those); a plan where the two could disagree is refused.
    for pname, tname in (("zp_in", low.inputs[0]), ("zp_out", low.outputs[0])):
        if pname in k.PARAMS and int(low.params.get(pname, 0)) != _per_tensor(ctx.graph.tensors[tname])[1]:
            raise TigrisError(f"{low.kind}: parameter {pname} = {low.params.get(pname, 0)} differs from the zero "
                              f"point of {tname}", where)
    unknown = set(low.consts) - set(k.CONSTS)
    if unknown:
        raise TigrisError(f"{low.kind}: unknown const slots {sorted(unknown)}", where)
    const_off, const_len = [], []
    for slot in k.CONSTS:
        arr = low.consts.get(slot)
        blob = b"" if arr is None else const_bytes(np.asarray(arr))
        const_off.append(group.add(blob) if blob else 0)
        const_len.append(len(blob))
    off, ln = ctx.strings.add(where)
    inputs = [ctx.ti(n, where) for n in low.inputs]
    return _pack(
        F.OP,
        dict(
            kind=KIND_IDS[low.kind], n_in=len(inputs), inputs=inputs + [F.NONE] * (MAX_INPUTS - len(inputs)),
            output=ctx.ti(low.outputs[0], where), ir_index=i, name_off=off, name_len=ln, params=params,
            const_off=const_off, const_len=const_len,
            scratch_off=scratch.offset if scratch and scratch.size else 0,
            scratch_size=scratch.size if scratch else 0,
        ),
        where,
    )


def _io_record(ctx: _Ctx, n: str, direction: F.Direction, homes: dict[str, Placement]) -> bytes:
    """One interface record. The bytes live in the root's slow home when it has one (the caller writes inputs there
    and reads outputs there); otherwise in the first unit's (inputs) or last unit's (outputs) fast placement."""
    t = ctx.graph.tensors[n]
    r = ctx.root(n)
    b = ctx.graph.boundary.get(n)
    decl_dtype = b.dtype if b is not None else t.dtype
    decl_shape = tuple(b.shape) if b is not None else tuple(t.shape)
    flags = 0
    decl_scale, decl_zp = 0.0, 0
    if b is not None and b.quant is not None:
        flags |= F.IoFlag.DECL_QUANT
        decl_scale = float(np.asarray(b.quant.scale).reshape(-1)[0])
        decl_zp = int(np.asarray(b.quant.zero_point).reshape(-1)[0])
    scale, zp = _per_tensor(t)
    if t.quant is not None:
        flags |= F.IoFlag.QUANT
    if b is not None and b.rows:
        flags |= F.IoFlag.ROWS
    if r in ctx.plan.slow:
        arena, offset = F.Arena.SLOW, ctx.plan.slow[r].offset
    elif r in homes:
        arena, offset = F.Arena.FAST, homes[r].offset
    else:
        which = "first" if direction == F.Direction.INPUT else "last"
        raise TigrisError(f"graph {direction.name.lower()} has no home in the slow arena or the {which} unit", n)
    rank, shape = _shape_field(decl_shape, n)
    off, ln = ctx.strings.add(n)
    return _pack(
        F.IO,
        dict(
            name_off=off, name_len=ln, direction=int(direction), tensor=ctx.ti(n, n),
            decl_dtype=_dtype_code(decl_dtype, n, declared=True), dtype=_dtype_code(t.dtype, n),
            layout=int(F.LAYOUT_CODES[t.layout]), rank=rank, shape=shape, decl_scale=decl_scale,
            decl_zero_point=decl_zp, scale=scale, zero_point=zp, flags=int(flags), arena=int(arena), offset=offset,
            nbytes=t.nbytes,
        ),
        n,
    )


def assemble(sections: dict[F.SectionId, tuple[bytes, int]], flags: int, target: int = 0) -> bytes:
    """Header + directory + sections (each at a multiple of 16) + CRC. Exposed for tests that forge plans."""
    body = bytearray(F.DATA_START)
    directory = []
    for spec in F.SECTIONS:
        payload, count = sections[spec.id]
        off = align_up(len(body), ALIGN)
        body.extend(b"\0" * (off - len(body)))
        body.extend(payload)
        directory.append(F.SECTION.pack(dict(id=int(spec.id), offset=off, size=len(payload), count=count)))
    body.extend(b"\0" * (align_up(len(body), ALIGN) - len(body)))
    body[F.DIR_OFFSET : F.DATA_START] = b"".join(directory)
    header = dict(
        magic=list(F.MAGIC), version=F.VERSION, header_size=F.HEADER.size, crc32=0, file_size=len(body),
        flags=flags, section_count=len(F.SECTIONS), dir_offset=F.DIR_OFFSET, target=target,
    )
    body[: F.HEADER.size] = F.HEADER.pack(header)
    return seal(body)


def seal(data: bytes | bytearray) -> bytes:
    """Recompute the CRC field of a plan (tests use it to forge plans that pass the CRC and fail a later check)."""
    b = bytearray(data)
    struct.pack_into("<I", b, F.HEADER.offsets()["crc32"], zlib.crc32(bytes(b[F.CRC_START :])) & 0xFFFFFFFF)
    return bytes(b)


