"""Read and validate a .tgrs plan: the Python twin of the C loader (docs/format.md, "What a reader must check").

``read_plan`` checks every byte the runtime would rely on, in the documented order, and raises
:class:`PlanFormatError` (a TigrisError, so the CLI prints one line and exits 2) naming the first failure and the
``TGRS_ERR_*`` code the C loader returns for it. On success it returns a :class:`PlanFile`: a complete, typed view
of the plan for ``tigris inspect``, for tests, and for tools that compare a plan with the memory plan it came from.
"""
from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass, field
from functools import lru_cache

from tigris.emit import format as F
from tigris.emit.weights import decompress_block, unshuffle_planes
from tigris.ir import DTYPE_SIZE, TigrisError
from tigris.layout import view_dims
from tigris.ops import KINDS, kind
from tigris.ops.base import DTYPE_CODES, MAX_CONSTS, MAX_INPUTS, MAX_PARAMS
from tigris.plan.overwrite import overwrite_ok, read_bands
from tigris.plan.spatial import carried_rows

# A ROLLING unit's line-buffer entry for a placement whose bands overlap but which never carries: its producer
# computes every band whole (spatial rule 10; docs/format.md "ROLLING units")
NEVER_CARRIES = (F.NONE, F.NONE)
from tigris.plan.types import ExecUnit, MemoryPlan, Placement, StagePlan

DTYPE_NAMES = {v: k for k, v in DTYPE_CODES.items()}
LAYOUT_NAMES = {int(v): k for k, v in F.LAYOUT_CODES.items()}


class PlanFormatError(TigrisError):
    """A plan that fails a reader check. ``status`` is the TGRS_ERR_* name (without the TGRS_ prefix)."""

    def __init__(self, status: str, what: str):
        self.status = status
        super().__init__(f"invalid plan: {what} [TGRS_{status}]", "plan")


def _fail(status: str, what: str) -> PlanFormatError:
    assert status in F.STATUS_BY_NAME, status
    return PlanFormatError(status, what)


@lru_cache(maxsize=None)
def kind_limits() -> tuple[tuple[str, int, int], ...]:
    """(kind name, params used, consts used) per kind id - 1, from the same kind tables the header is generated
    from."""
    from tigris.emit.gen_header import _kind_tables

    return tuple((name, len(params), len(consts)) for name, params, consts in _kind_tables())


def arrange_slots() -> tuple[int, ...]:
    """Per kind id - 1, the slot of its ARRANGE parameter or -1 (the header's tgrs_op_arrange_slot)."""
    from tigris.emit.gen_header import _kind_tables

    return tuple([p.lower() for p in params].index("arrange") if "arrange" in [p.lower() for p in params] else -1
                 for _n, params, _c in _kind_tables())


@lru_cache(maxsize=None)
def cols_table() -> tuple[tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...]:
    """Per kind id - 1: (column class, W-window param slots, W-extent param slots, slots that must be 0, slots
    naming an axis that must not be W), the header's tgrs_op_cols_class, tgrs_op_col_window, tgrs_op_col_dims,
    tgrs_op_col_zero and tgrs_op_col_axis."""
    from tigris.emit.gen_header import kind_cols

    return tuple(kind_cols())


def numerics_slots() -> tuple[int, ...]:
    """Per kind id - 1, the slot of its NUMERICS parameter or -1 (the header's tgrs_op_numerics_slot)."""
    from tigris.emit.gen_header import _kind_tables

    return tuple([p.lower() for p in params].index("numerics") if "numerics" in [p.lower() for p in params] else -1
                 for _n, params, _c in _kind_tables())


# --------------------------------------------------------------------------------------------------------------------
# The parsed view
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorInfo:
    index: int
    name: str
    dtype: str
    layout: str
    dims: tuple[int, int, int, int]
    shape: tuple[int, ...]
    root: int
    scale: float
    zero_point: int
    nbytes: int
    slow: Placement | None
    flags: int
    view_off: int = 0  # VIEW: byte offset of its bytes in the root's buffer

    @property
    def is_view(self) -> bool:
        return bool(self.flags & F.TensorFlag.VIEW)

    @property
    def is_alias(self) -> bool:
        return bool(self.flags & F.TensorFlag.ALIAS)

    @property
    def quantized(self) -> bool:
        return bool(self.flags & F.TensorFlag.QUANT)

    @property
    def row_bytes(self) -> int:
        return self.nbytes // self.dims[1]


@dataclass(frozen=True)
class IoInfo:
    name: str
    direction: str  # "input" / "output"
    tensor: int
    decl_dtype: str
    dtype: str
    layout: str
    shape: tuple[int, ...]
    decl_quant: tuple[float, int] | None
    quant: tuple[float, int] | None
    arena: str  # "fast" / "slow"
    offset: int
    nbytes: int
    rows: bool = False  # IoFlag.ROWS: a variable row count, the unused rows all -1


@dataclass(frozen=True)
class OpInfo:
    index: int
    kind: str
    kind_id: int
    inputs: tuple[int, ...]
    output: int
    ir_index: int
    name: str
    params: tuple[int, ...]
    consts: tuple[tuple[int, int], ...]  # (offset, length) per const slot
    scratch: Placement | None


@dataclass(frozen=True)
class PlacementInfo:
    tensor: int
    offset: int
    size: int
    band_rows: int


@dataclass(frozen=True)
class UnitInfo:
    index: int
    tiled: bool
    op_first: int
    op_count: int
    reload: tuple[int, ...]
    spill: tuple[int, ...]
    placements: tuple[PlacementInfo, ...]
    tiles: int
    tile_rows: tuple[tuple[tuple[int, int], ...], ...]  # [tile][placement] = (row0, rows); empty when untiled
    stages: tuple[int, ...]
    ir_ops: tuple[int, ...]
    weight_bytes: int
    wblob_off: int
    wblob_size: int
    wraw_size: int
    peak_bytes: int
    flags: int = 0  # UnitFlag bits as stored
    carry: tuple[tuple[int, int], ...] = ()  # ROLLING: per placement, its line buffer (offset, size) or (NONE, 0)
    tile_cols: tuple[tuple[tuple[int, int], ...], ...] = ()  # COLS: [tile][placement] = (col0, cols)

    @property
    def shuffled(self) -> bool:
        return bool(self.flags & F.UnitFlag.SHUFFLE)

    @property
    def accumulates(self) -> bool:
        return bool(self.flags & F.UnitFlag.ACCUM)

    @property
    def rolling(self) -> bool:
        return bool(self.flags & F.UnitFlag.ROLLING)

    @property
    def col_split(self) -> bool:
        return bool(self.flags & F.UnitFlag.COLS)

    @property
    def overwrites(self) -> bool:
        return bool(self.flags & F.UnitFlag.OVERWRITE)


@dataclass(frozen=True)
class StageInfo:
    index: int
    unit: int
    tiled: bool
    peak_bytes: int
    weight_bytes: int
    tile_h: int
    tiles: int
    halo: int
    chain: int | None
    ops: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    recompute_macs: int


@dataclass
class PlanFile:
    version: int
    flags: int
    file_size: int
    crc32: int
    name: str
    fast_arena: int
    slow_arena: int
    fast_budget: int
    slow_budget: int | None
    weight_raw: int
    weight_stored: int
    spill_bytes: int
    reload_bytes: int
    unscheduled_peak: int
    max_prefix: int
    recompute_macs: int
    tensors: list[TensorInfo]
    inputs: list[IoInfo]
    outputs: list[IoInfo]
    ops: list[OpInfo]
    units: list[UnitInfo]
    stages: list[StageInfo]
    weights: bytes  # the WEIGHTS section as stored
    unit_images: list[bytes] = field(default_factory=list)  # decoded prefix image per unit (empty with XIP)
    sections: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (offset, size)
    target: int = 0  # header field target (tigris.emit.format.Target)

    @property
    def target_name(self) -> str:
        """The core the weights are arranged for (``tigris compile --target``)."""
        return next(n for n, t in F.TARGET_NAMES.items() if t == self.target)

    def arrangements(self) -> dict[int, str]:
        """Op index -> the name of its weight arrangement, for every op whose weights are not in the plain layout."""
        slots = arrange_slots()
        out: dict[int, str] = {}
        for op in self.ops:
            s = slots[op.kind_id - 1]
            if s >= 0 and op.params[s]:
                out[op.index] = F.Arrange(op.params[s]).name.lower()
        return out

    @property
    def xip(self) -> bool:
        return bool(self.flags & F.Flag.XIP)

    @property
    def compression(self) -> str:
        return "lz4" if self.flags & F.Flag.LZ4 else "none"

    @property
    def numerics(self) -> str:
        """The numerics contract the plan was compiled for (header flag TFLM)."""
        return "tflm" if self.flags & F.Flag.TFLM else "onnx"

    def tensor(self, name: str) -> TensorInfo:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def unit_of_op(self, op: int) -> int:
        for u in self.units:
            if u.op_first <= op < u.op_first + u.op_count:
                return u.index
        raise IndexError(op)

    def const(self, op: int, slot: int) -> bytes:
        """The bytes of one constant of one op (XIP: in WEIGHTS; otherwise in its unit's decoded prefix image)."""
        off, ln = self.ops[op].consts[slot]
        src = self.weights if self.xip else self.unit_images[self.unit_of_op(op)]
        return src[off : off + ln]

    def _in_place_pairs(self, u, fast: dict[str, Placement]) -> tuple[dict[str, str], dict[str, int]]:
        """The unit's in-place pairs (output -> the input whose home it takes) and the piecewise ones' temporary rows.
        The format does not list them: an op's output and one of its inputs live at the same step, so in a proven
        plan they share an offset only when the op runs in place; the op record's ``ip_rows`` marks the piecewise
        ones."""
        pairs, rows = {}, {}
        for op in self.ops[u.op_first : u.op_first + u.op_count]:
            k = kind(op.kind)
            if not (k.in_place or k.piecewise_in_place or k.prefix_in_place):
                continue
            y = self.tensors[self.tensors[op.output].root].name
            for i in op.inputs[:1] if k.prefix_in_place else op.inputs:  # a join takes its first input's home only
                x = self.tensors[self.tensors[i].root].name
                if x != y and x in fast and y in fast and fast[x].offset == fast[y].offset:
                    pairs[y] = x
                    if "ip_rows" in k.PARAMS and op.params[k.PARAMS.index("ip_rows")]:
                        rows[y] = op.params[k.PARAMS.index("ip_rows")]
        return pairs, rows

    def _overwrite_pairs(self, u: UnitInfo) -> dict[str, str]:
        """An OVERWRITE unit's spilled outputs over reloaded inputs: the pairs whose slow homes share bytes."""
        if not u.flags & F.UnitFlag.OVERWRITE:
            return {}
        ts = self.tensors
        pairs = {}
        for y in dict.fromkeys(ts[i].root for i in u.spill):
            for x in dict.fromkeys(ts[i].root for i in u.reload):
                py, px = ts[y].slow, ts[x].slow
                if x != y and py is not None and px is not None and px.offset < py.end and py.offset < px.end:
                    pairs[ts[y].name] = ts[x].name
        return pairs

    def to_memory_plan(self) -> MemoryPlan:
        """The memory plan as the writer saw it, by tensor name (figures the format does not store stay default)."""
        name = [t.name for t in self.tensors]
        stages = [
            StagePlan(
                index=s.index, ops=list(s.ops), inputs=[name[i] for i in s.inputs],
                outputs=[name[i] for i in s.outputs], peak_bytes=s.peak_bytes, weight_bytes=s.weight_bytes,
                tiled=s.tiled, tile_h=s.tile_h, tiles=s.tiles, halo=s.halo, chain=s.chain,
                recompute_macs=s.recompute_macs,
            )
            for s in self.stages
        ]
        units = []
        for u in self.units:
            fast = {name[p.tensor]: Placement("fast", p.offset, p.size) for p in u.placements}
            scratch = {
                op.ir_index: op.scratch
                for op in self.ops[u.op_first : u.op_first + u.op_count]
                if op.scratch is not None
            }
            tile_rows = [
                {name[p.tensor]: (r0, r0 + n) for p, (r0, n) in zip(u.placements, tile)} for tile in u.tile_rows
            ]
            last = self.ops[u.op_first + u.op_count - 1] if u.op_count else None
            acc_out = name[self.tensors[last.output].root] if u.accumulates and last is not None else None
            never = {name[p.tensor] for p, entry in zip(u.placements, u.carry) if entry == NEVER_CARRIES}
            rolling = sorted({
                n for prev, tile in zip(tile_rows, tile_rows[1:]) for n in tile
                if n != acc_out and n not in never and carried_rows(prev[n], tile[n])
            }) if u.rolling else []
            in_place, in_place_rows = self._in_place_pairs(u, fast)
            units.append(
                ExecUnit(
                    stages=list(u.stages), ops=list(u.ir_ops), reload=[name[i] for i in u.reload],
                    spill=[name[i] for i in u.spill], fast=fast, scratch=scratch, weight_bytes=u.weight_bytes,
                    tiles=u.tiles, tile_rows=tile_rows, peak_bytes=u.peak_bytes,
                    accumulate=[last.ir_index] if u.accumulates and last is not None else [],
                    rolling=rolling, recompute=sorted(never),
                    carry={name[p.tensor]: Placement("fast", off, size) for p, (off, size) in zip(u.placements, u.carry)
                           if off != F.NONE},
                    tile_cols=[
                        {name[p.tensor]: (c0, c0 + n) for p, (c0, n) in zip(u.placements, tile)} for tile in u.tile_cols
                    ],
                    in_place=in_place, in_place_rows=in_place_rows, overwrite=self._overwrite_pairs(u),
                )
            )
        return MemoryPlan(
            fast_budget=self.fast_budget, slow_budget=self.slow_budget, xip=self.xip, stages=stages, units=units,
            slow={t.name: t.slow for t in self.tensors if t.slow is not None},
            alias_of={t.name: name[t.root] for t in self.tensors if t.is_alias},
            view_offset={t.name: t.view_off for t in self.tensors if t.is_view},
            one_region=bool(self.flags & F.Flag.ONE_REGION),
            unscheduled_peak=self.unscheduled_peak, fast_peak=self.fast_arena, slow_peak=self.slow_arena,
            spill_bytes=self.spill_bytes, reload_bytes=self.reload_bytes, recompute_macs=self.recompute_macs,
        )


# --------------------------------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------------------------------


def _finite_pos(x: float) -> bool:
    return math.isfinite(x) and x > 0.0


@dataclass
class _Sections:
    """A plan whose header and directory passed (steps 2-9): section bytes plus the accessors every later step
    uses. Each accessor raises the code docs/format.md assigns to a bad reference."""

    flags: int
    sec: dict[F.SectionId, bytes]
    counts: dict[F.SectionId, int]
    where: dict[str, tuple[int, int]]
    index_vals: tuple[int, ...] = ()
    _records: dict[F.SectionId, list[dict]] = field(default_factory=dict)  # unpacked once, read by several steps

    @property
    def xip(self) -> bool:
        return bool(self.flags & F.Flag.XIP)

    @property
    def lz4(self) -> bool:
        return bool(self.flags & F.Flag.LZ4)

    def string(self, off: int, ln: int, what: str) -> str:
        strings = self.sec[F.SectionId.STRINGS]
        if off + ln >= len(strings) or strings[off + ln] != 0:
            raise _fail("ERR_STRING", f"{what}: string {off}+{ln} outside STRINGS or not NUL-terminated")
        # Names are diagnostics: the C loader checks their bounds and NUL, never their bytes, and so does the reader
        # (the writer always writes UTF-8; anything else is shown with replacement characters).
        return strings[off : off + ln].decode("utf-8", "replace")

    def records(self, sid: F.SectionId) -> list[dict]:
        if sid not in self._records:
            rec = next(s.record for s in F.SECTIONS if s.id == sid)
            assert rec is not None
            self._records[sid] = [rec.unpack(self.sec[sid], k * rec.size) for k in range(self.counts[sid])]
        return self._records[sid]

    def ilist(self, first: int, count: int, what: str) -> tuple[int, ...]:
        n = len(self.index_vals)
        if first > n or count > n - first:
            raise _fail("ERR_INDEX", f"{what}: list {first}+{count} outside INDEX ({n})")
        return tuple(self.index_vals[first : first + count])


# Step 17's codes: a kind check refused an op (the kernel codes of docs/format.md).
KIND_CHECK_CODES = frozenset({"ERR_PARAM", "ERR_DTYPE", "ERR_TILE", "ERR_SCRATCH", "ERR_SHAPE", "ERR_UNSUPPORTED"})


@lru_cache(maxsize=1)
def _runtime():
    """The host build of runtime_c, or None where it cannot be built (no C compiler)."""
    try:
        from tigris.host.build import runtime

        return runtime()
    except Exception:  # noqa: BLE001 - any build failure means the same thing here: no runtime on this machine
        return None


def _check_kinds(buf: bytes, ops: list[OpInfo]) -> None:
    """Step 17: every op's kind-specific check in every tile.

    The kind semantics (what a conv's parameters, dims, constants and bands must satisfy) have one implementation,
    next to each kernel in runtime_c (tgrs_check_<kind>); the reader runs it through the host build of the runtime
    instead of keeping a second copy. A plan reaches this step only when every structural check above passed, so the
    C loader's verdict here is step 17's. Where the runtime cannot be built the reader checks the structure only."""
    rt = _runtime()
    if rt is None:
        return
    ffi, lib = rt.ffi, rt.lib
    raw = ffi.new("uint8_t[]", len(buf) + F.PLAN_ALIGN)
    shift = -int(ffi.cast("uintptr_t", raw)) % F.PLAN_ALIGN
    ffi.memmove(raw + shift, buf, len(buf))
    plan = ffi.new("tgrs_plan *")
    failed = ffi.new("int32_t *")
    rc = int(lib.tgrs_load_diag(plan, raw + shift, len(buf), failed))
    if rc == 0:
        return
    name = next((s.name for s in F.STATUS if s.code == rc), f"code {rc}")
    if name not in KIND_CHECK_CODES or not 0 <= failed[0] < len(ops):
        # The structural steps above are the loader's; a structural refusal here means the two disagree: a bug.
        raise AssertionError(f"the Python reader accepted a plan the C loader refuses with TGRS_{name}")
    op = ops[failed[0]]
    raise _fail(name, f"op {op.index} {op.name!r} ({op.kind}): the kind's check refuses its parameters, constants, "
                      "dims or bands")


def read_plan(data: bytes | bytearray | memoryview) -> PlanFile:
    """Parse and fully validate a plan (docs/format.md); raises PlanFormatError on the first failed check.

    The steps run in the documented order, which is also the C loader's, so both report the same code."""
    buf = bytes(data)
    h = _check_header(buf)
    c = _check_directory(buf, int(h["flags"]))  # type: ignore[arg-type]
    p = c.records(F.SectionId.PLAN)[0]
    model_name = _check_plan_record(c, p)
    fast_arena, slow_arena = int(p["fast_arena"]), int(p["slow_arena"])
    tensors = _check_tensors(c, slow_arena)
    units_raw = c.records(F.SectionId.UNITS)
    ios = _check_io(c, int(p["n_inputs"]), tensors, units_raw, fast_arena, slow_arena)
    images = _check_unit_records(c, units_raw, fast_arena)
    if p["max_prefix"] != max(int(u["weight_bytes"]) for u in units_raw):
        raise _fail("ERR_PLAN", "max_prefix is not the largest unit weight_bytes")
    units = [_check_unit_buffers(c, ui, u, tensors, fast_arena) for ui, u in enumerate(units_raw)]
    _check_overwrite(units, tensors)
    ops = _check_ops(c, units, tensors, fast_arena, int(h["target"]))  # type: ignore[arg-type]
    if c.flags & F.Flag.ONE_REGION:
        _check_one_region(units, ops, tensors)
    stages = _check_stages(c, len(units), len(tensors))
    _check_kinds(buf, ops)
    n_in = int(p["n_inputs"])
    return PlanFile(
        version=int(h["version"]), flags=c.flags, file_size=len(buf), crc32=int(h["crc32"]), name=model_name,
        fast_arena=fast_arena, slow_arena=slow_arena, fast_budget=int(p["fast_budget"]),
        slow_budget=None if p["slow_budget"] == F.NONE else int(p["slow_budget"]),
        weight_raw=int(p["weight_raw"]), weight_stored=int(p["weight_stored"]), spill_bytes=int(p["spill_bytes"]),
        reload_bytes=int(p["reload_bytes"]), unscheduled_peak=int(p["unscheduled_peak"]),
        max_prefix=int(p["max_prefix"]), recompute_macs=int(p["recompute_macs"]), tensors=tensors,
        inputs=ios[:n_in], outputs=ios[n_in:], ops=ops, units=units, stages=stages,
        weights=c.sec[F.SectionId.WEIGHTS], unit_images=images, sections=c.where, target=int(h["target"]),
    )


def _check_header(buf: bytes) -> dict[str, object]:
    """Steps 2-7: length, magic, version, file_size, CRC, then the header's own fields."""
    n = len(buf)
    if n < F.HEADER.size:
        raise _fail("ERR_TRUNCATED", f"{n} bytes, shorter than the {F.HEADER.size}-byte header")
    h = F.HEADER.unpack(buf)
    if bytes(h["magic"]) != F.MAGIC:  # type: ignore[arg-type]
        raise _fail("ERR_MAGIC", f"magic {bytes(h['magic'])!r} is not {F.MAGIC!r}")  # type: ignore[arg-type]
    if h["version"] != F.VERSION:
        raise _fail("ERR_VERSION", f"format version {h['version']}, this reader knows {F.VERSION}")
    size = int(h["file_size"])  # type: ignore[arg-type]
    if size > n:
        raise _fail("ERR_TRUNCATED", f"file_size {size} but only {n} bytes present")
    if size != n or size < F.DATA_START:
        raise _fail("ERR_SIZE", f"file_size {size} does not match the {n}-byte buffer")
    crc = zlib.crc32(buf[F.CRC_START :]) & 0xFFFFFFFF
    if crc != h["crc32"]:
        raise _fail("ERR_CRC", f"CRC-32 is {crc:#010x}, header says {h['crc32']:#010x}")
    flags = int(h["flags"])  # type: ignore[arg-type]
    if (
        h["header_size"] != F.HEADER.size
        or h["section_count"] != len(F.SECTIONS)
        or h["dir_offset"] != F.DIR_OFFSET
        or h["target"] not in set(F.Target)
        or flags & ~int(F.FLAGS_KNOWN)
        or (flags & F.Flag.XIP and flags & F.Flag.LZ4)
    ):
        raise _fail("ERR_HEADER", "bad header_size, section_count, dir_offset, target or flags")
    return h


def _check_directory(buf: bytes, flags: int) -> _Sections:
    """Steps 8-9: every section present once, in order, sized by its records (step 8 for every entry first, as the
    C loader does, so a malformed directory is reported before any bound), aligned, inside the file (step 9)."""
    size = len(buf)
    c = _Sections(flags, {}, {}, {})
    prev_end = F.DATA_START
    entries = []
    for i, spec in enumerate(F.SECTIONS):
        e = F.SECTION.unpack(buf, F.DIR_OFFSET + i * F.SECTION.size)
        sid, off, sz, cnt = (int(e[k]) for k in ("id", "offset", "size", "count"))  # type: ignore[call-overload]
        if sid != int(spec.id):
            raise _fail("ERR_SECTION", f"directory entry {i} has id {sid}, expected {int(spec.id)}")
        recsize = spec.record.size if spec.record else 1
        if sz != cnt * recsize:
            raise _fail("ERR_SECTION", f"section {spec.id.name}: size {sz} is not {cnt} x {recsize}")
        if spec.id == F.SectionId.PLAN and cnt != 1:
            raise _fail("ERR_SECTION", "PLAN must hold exactly one record")
        if spec.id == F.SectionId.UNITS and cnt == 0:
            raise _fail("ERR_SECTION", "UNITS is empty")
        entries.append((spec, off, sz, cnt))
    for spec, off, sz, cnt in entries:
        if off % F.ALIGN or off < prev_end or off > size or sz > size - off:
            raise _fail("ERR_SECTION_BOUNDS", f"section {spec.id.name} at {off}+{sz} is misplaced")
        prev_end = off + sz
        c.sec[spec.id] = buf[off : off + sz]
        c.counts[spec.id] = cnt
        c.where[spec.id.name] = (off, sz)
    c.index_vals = struct.unpack(f"<{c.counts[F.SectionId.INDEX]}I", c.sec[F.SectionId.INDEX])
    return c


def _check_plan_record(c: _Sections, p: dict) -> str:
    """Step 10 (max_prefix against the units comes after step 13). Returns the model name."""
    if (
        p["n_inputs"] == 0
        or p["n_outputs"] == 0
        or p["n_inputs"] + p["n_outputs"] != c.counts[F.SectionId.IO]
        or p["max_prefix"] > p["fast_arena"]
        or p["weight_stored"] != len(c.sec[F.SectionId.WEIGHTS])
    ):
        raise _fail("ERR_PLAN", "PLAN record inconsistent with the sections (io counts, max_prefix, weight_stored)")
    return c.string(int(p["name_off"]), int(p["name_len"]), "model name")


def _check_tensors(c: _Sections, slow_arena: int) -> list[TensorInfo]:
    """Step 11: each record on its own, then alias roots and slow homes (which look at other records)."""
    traw = c.records(F.SectionId.TENSORS)
    nt = len(traw)
    tnames: list[str] = []
    known_tflags = sum(int(f) for f in F.TensorFlag)
    for i, t in enumerate(traw):
        what = f"tensor {i}"
        tname = c.string(int(t["name_off"]), int(t["name_len"]), what)
        tnames.append(tname)
        dims = tuple(int(d) for d in t["dims"])
        rank = int(t["rank"])
        if (
            t["dtype"] not in DTYPE_NAMES
            or t["dtype"] == DTYPE_CODES["int64"]  # a declared boundary dtype only
            or t["layout"] not in LAYOUT_NAMES
            or rank > F.MAX_RANK
            or int(t["flags"]) & ~known_tflags
            or any(s != 0 for s in t["shape"][rank:])
            or any(s < 1 for s in t["shape"][:rank])
        ):
            raise _fail("ERR_TENSOR", f"{what} ({tname}): bad dtype, layout, rank, shape or flags")
        shape = tuple(int(s) for s in t["shape"][:rank])
        try:
            want = view_dims(shape, LAYOUT_NAMES[int(t["layout"])])
        except ValueError:
            want = None
        if want != dims:
            raise _fail("ERR_TENSOR", f"{what} ({tname}): dims {dims} are not the view of shape {shape}")
        nbytes = dims[0] * dims[1] * dims[2] * dims[3] * DTYPE_SIZE[DTYPE_NAMES[int(t["dtype"])]]
        if nbytes != t["nbytes"]:
            raise _fail("ERR_TENSOR", f"{what} ({tname}): nbytes {t['nbytes']} should be {nbytes}")
        if int(t["flags"]) & F.TensorFlag.QUANT and not _finite_pos(float(t["scale"])):
            raise _fail("ERR_TENSOR", f"{what} ({tname}): quantization scale {t['scale']} is not positive")
        dname = DTYPE_NAMES[int(t["dtype"])]
        zlo, zhi = {"int8": (-128, 127), "uint8": (0, 255)}.get(dname, (0, 0))
        if not zlo <= int(t["zero_point"]) <= zhi:
            raise _fail("ERR_TENSOR", f"{what} ({tname}): zero point {t['zero_point']} outside [{zlo}, {zhi}]")
        if int(t["root"]) >= nt:
            raise _fail("ERR_TENSOR_INDEX", f"{what} ({tname}): root {t['root']} out of range ({nt})")
    tensors: list[TensorInfo] = []
    for i, t in enumerate(traw):
        what = f"tensor {i} ({tnames[i]})"
        flags_t, root_i = int(t["flags"]), int(t["root"])
        r = traw[root_i]
        voff = int(t["view_off"])
        if flags_t & F.TensorFlag.VIEW:
            # a run of the root's buffer: aligned, inside it (docs/format.md "Views")
            if not flags_t & F.TensorFlag.ALIAS or voff % F.ALIGN or voff + int(t["nbytes"]) > int(r["nbytes"]):
                raise _fail("ERR_VIEW", f"{what}: view run {voff}+{t['nbytes']} of root {root_i} "
                                        f"({r['nbytes']} bytes) misaligned, outside it or without ALIAS")
        elif voff != 0:
            raise _fail("ERR_VIEW", f"{what}: view_off {voff} without the VIEW flag")
        if flags_t & F.TensorFlag.ALIAS:
            if root_i == i or r["root"] != root_i or flags_t & F.TensorFlag.SLOW \
                    or (r["nbytes"] != t["nbytes"] and not flags_t & F.TensorFlag.VIEW):
                raise _fail("ERR_TENSOR", f"{what}: inconsistent alias root {root_i}")
        elif root_i != i:
            raise _fail("ERR_TENSOR", f"{what}: root {root_i} without the ALIAS flag")
        slow = None
        so, ss = int(t["slow_offset"]), int(t["slow_size"])
        if flags_t & F.TensorFlag.SLOW:
            if so % F.ALIGN or ss < t["nbytes"]:
                raise _fail("ERR_TENSOR", f"{what}: slow home {so}+{ss} misaligned or too small")
            if so > slow_arena or ss > slow_arena - so:
                raise _fail("ERR_ARENA_BOUNDS", f"{what}: slow home {so}+{ss} outside {slow_arena}")
            slow = Placement("slow", so, ss)
        elif so != F.NONE or ss != 0:
            raise _fail("ERR_TENSOR", f"{what}: slow fields set without the SLOW flag")
        tensors.append(
            TensorInfo(
                i, tnames[i], DTYPE_NAMES[int(t["dtype"])], LAYOUT_NAMES[int(t["layout"])],
                tuple(int(d) for d in t["dims"]), tuple(int(x) for x in t["shape"][: int(t["rank"])]), root_i,
                float(t["scale"]), int(t["zero_point"]), int(t["nbytes"]), slow, flags_t, voff,
            )
        )
    return tensors


def _check_io(
    c: _Sections, n_in: int, tensors: list[TensorInfo], units_raw: list[dict], fast_arena: int, slow_arena: int
) -> list[IoInfo]:
    """Step 12, before the units like the C loader: placements are not proven yet, so a FAST home is looked up with
    a bounds-checked linear search."""
    place_raw = c.records(F.SectionId.PLACEMENTS)
    nt = len(tensors)
    ios: list[IoInfo] = []
    for k, io in enumerate(c.records(F.SectionId.IO)):
        what = f"interface record {k}"
        ioname = c.string(int(io["name_off"]), int(io["name_len"]), what)
        direction = F.Direction.INPUT if k < n_in else F.Direction.OUTPUT
        io_flags, rank = int(io["flags"]), int(io["rank"])
        if (
            io["direction"] != direction
            or io["decl_dtype"] not in DTYPE_NAMES
            or io["dtype"] not in DTYPE_NAMES
            or io_flags & ~(int(F.IoFlag.DECL_QUANT) | int(F.IoFlag.QUANT) | int(F.IoFlag.ROWS))
            or (io["decl_dtype"] == DTYPE_CODES["int64"]
                and (io["dtype"] != DTYPE_CODES["int32"] or direction != F.Direction.OUTPUT))
            or (io_flags & F.IoFlag.ROWS and (io["dtype"] != DTYPE_CODES["int32"] or direction != F.Direction.OUTPUT))
            or rank > F.MAX_RANK
        ):
            raise _fail("ERR_IO", f"{what} ({ioname}): bad direction, dtype codes, flags or rank")
        ti = int(io["tensor"])
        if ti >= nt:
            raise _fail("ERR_TENSOR_INDEX", f"{what} ({ioname}): tensor {ti} out of range ({nt})")
        t = tensors[ti]
        if t.is_view:
            raise _fail("ERR_VIEW", f"{what} ({ioname}): tensor {t.name} is a view (the interface names whole buffers)")
        declared = tuple(int(s) for s in io["shape"][:rank])
        numel = 1
        for s in declared:
            numel *= s
        need_flag = F.TensorFlag.INPUT if direction == F.Direction.INPUT else F.TensorFlag.OUTPUT
        off = int(io["offset"])
        if (
            io["dtype"] != DTYPE_CODES[t.dtype]
            or io["layout"] != F.LAYOUT_CODES[t.layout]
            or io["nbytes"] != t.nbytes
            or any(s < 1 for s in declared)
            or any(s != 0 for s in io["shape"][rank:])
            or numel * DTYPE_SIZE[t.dtype] != t.nbytes
            or (io_flags & F.IoFlag.DECL_QUANT and not _finite_pos(float(io["decl_scale"])))
            or io["arena"] not in (int(F.Arena.FAST), int(F.Arena.SLOW))
            or off % F.ALIGN
            or not t.flags & need_flag
        ):
            raise _fail("ERR_IO", f"{what} ({ioname}): fields disagree with tensor {t.name}")
        root = tensors[t.root]
        if io["arena"] == F.Arena.SLOW:
            if root.slow is None or root.slow.offset != off:
                raise _fail("ERR_IO", f"{what} ({ioname}): slow offset {off} is not the tensor's slow home")
            limit = slow_arena
        else:
            u = units_raw[0 if direction == F.Direction.INPUT else -1]
            pf, pc = int(u["place_first"]), int(u["place_count"])
            if pf > len(place_raw) or pc > len(place_raw) - pf:
                raise _fail("ERR_UNIT", f"{what} ({ioname}): the unit's placement range is out of bounds")
            home = next((place_raw[j] for j in range(pf, pf + pc) if place_raw[j]["tensor"] == root.index), None)
            if home is None or home["offset"] != off or home["size"] < t.nbytes:
                raise _fail("ERR_IO", f"{what} ({ioname}): fast offset {off} is not the tensor's placement")
            if int(u["flags"]) & F.UnitFlag.COLS:  # its buffers hold dense column bands, not the caller's bytes
                raise _fail("ERR_IO", f"{what} ({ioname}): a fast interface home in a column-split unit")
            limit = fast_arena
        if off > limit or t.nbytes > limit - off:
            raise _fail("ERR_ARENA_BOUNDS", f"{what} ({ioname}): {off}+{t.nbytes} outside its arena")
        ios.append(
            IoInfo(
                ioname, "input" if direction == F.Direction.INPUT else "output", ti,
                DTYPE_NAMES[int(io["decl_dtype"])], t.dtype, t.layout, declared,
                (float(io["decl_scale"]), int(io["decl_zero_point"])) if io_flags & F.IoFlag.DECL_QUANT else None,
                (float(io["scale"]), int(io["zero_point"])) if io_flags & F.IoFlag.QUANT else None,
                "slow" if io["arena"] == F.Arena.SLOW else "fast", off, t.nbytes, bool(io_flags & F.IoFlag.ROWS),
            )
        )
    return ios


def _check_unit_records(c: _Sections, units_raw: list[dict], fast_arena: int) -> list[bytes]:
    """Step 13: each unit's own fields, its INDEX lists and its weight blob. Returns the decoded prefix images."""
    n_ops = c.counts[F.SectionId.OPS]
    n_place = c.counts[F.SectionId.PLACEMENTS]
    n_rows = c.counts[F.SectionId.TILE_ROWS]
    n_stages = c.counts[F.SectionId.STAGES]
    weights = c.sec[F.SectionId.WEIGHTS]
    images: list[bytes] = []
    next_op = 0
    for ui, u in enumerate(units_raw):
        what = f"unit {ui}"
        uflags, tiles = int(u["flags"]), int(u["tiles"])
        tiled = bool(uflags & F.UnitFlag.TILED)
        pf, pc = int(u["place_first"]), int(u["place_count"])
        rf, rc = int(u["rows_first"]), int(u["rows_count"])
        of, oc = int(u["op_first"]), int(u["op_count"])
        if (
            uflags & ~int(F.UNIT_FLAGS_KNOWN)
            or (u["carry_first"] != 0 and not uflags & F.UnitFlag.ROLLING)
            or tiles == 0
            or (uflags & F.UnitFlag.ACCUM and (not tiled or oc == 0))
            or (uflags & F.UnitFlag.ROLLING and not tiled)
            or (uflags & F.UnitFlag.COLS and (not tiled or uflags & F.UnitFlag.ROLLING))
            or (uflags & F.UnitFlag.COLS and uflags & F.UnitFlag.OVERWRITE)
            or (not tiled and (tiles != 1 or rf != 0 or rc != 0))
            or (tiled and rc != (2 if uflags & F.UnitFlag.COLS else 1) * tiles * pc)
            or of != next_op
            or of > n_ops
            or oc > n_ops - of
            or pf > n_place
            or pc > n_place - pf
            or rf > n_rows
            or rc > n_rows - rf
            or u["peak_bytes"] > fast_arena
            or (ui == len(units_raw) - 1 and of + oc != n_ops)
        ):
            raise _fail("ERR_UNIT", f"{what}: bad flags, tiles, op/placement/row ranges or peak")
        next_op = of + oc
        c.ilist(int(u["reload_first"]), int(u["reload_count"]), f"{what} reload")
        c.ilist(int(u["spill_first"]), int(u["spill_count"]), f"{what} spill")
        stages_u = c.ilist(int(u["stage_first"]), int(u["stage_count"]), f"{what} stages")
        c.ilist(int(u["irop_first"]), int(u["irop_count"]), f"{what} graph ops")
        if uflags & F.UnitFlag.ROLLING:
            c.ilist(int(u["carry_first"]), 2 * pc, f"{what} line buffers")
        if any(s >= n_stages for s in stages_u):
            raise _fail("ERR_STAGE", f"{what}: stage index out of range ({n_stages})")
        wbytes, wo, ws, wr = (int(u[k]) for k in ("weight_bytes", "wblob_off", "wblob_size", "wraw_size"))
        shuffled = bool(uflags & F.UnitFlag.SHUFFLE)
        if c.xip:
            if wbytes or wo or ws or wr or shuffled:
                raise _fail("ERR_WEIGHTS", f"{what}: weight prefix fields set in an XIP plan")
        elif (
            wo > len(weights)
            or ws > len(weights) - wo
            or wo % F.ALIGN
            or wr > wbytes
            or wbytes > fast_arena
            or (not c.lz4 and ws != wr)
            or (c.lz4 and (ws == 0) != (wr == 0))
            or (shuffled and (not c.lz4 or wr == 0))
        ):
            raise _fail("ERR_WEIGHTS", f"{what}: weight blob {wo}+{ws} -> {wr} (prefix {wbytes}) is inconsistent")
        image = b""
        if not c.xip and wr:
            blob = weights[wo : wo + ws]
            if c.lz4:
                try:
                    image = decompress_block(blob, wr)
                except ValueError as e:
                    raise _fail("ERR_LZ4", f"{what}: {e}") from None
                if shuffled:
                    image = unshuffle_planes(image, F.SHUFFLE_CHUNK)
            else:
                image = blob
        images.append(image)
    return images


def _check_unit_buffers(c: _Sections, ui: int, u: dict, tensors: list[TensorInfo], fast_arena: int) -> UnitInfo:
    """Step 14 for one unit: placements, tile rows, reload and spill lists."""
    what = f"unit {ui}"
    nt = len(tensors)
    place_raw = c.records(F.SectionId.PLACEMENTS)
    rows_raw = c.records(F.SectionId.TILE_ROWS)
    tiled = bool(int(u["flags"]) & F.UnitFlag.TILED)
    col_split = bool(int(u["flags"]) & F.UnitFlag.COLS)
    pf, pc, rf, tiles = int(u["place_first"]), int(u["place_count"]), int(u["rows_first"]), int(u["tiles"])
    wbytes = int(u["weight_bytes"])
    placements: list[PlacementInfo] = []
    prev = -1
    for k in range(pf, pf + pc):
        pl = place_raw[k]
        ti, off, psz, band = (int(pl[x]) for x in ("tensor", "offset", "size", "band_rows"))
        if ti >= nt:
            raise _fail("ERR_TENSOR_INDEX", f"{what}: placement of tensor {ti} out of range ({nt})")
        if tensors[ti].root != ti or ti <= prev:
            raise _fail("ERR_PLACEMENT", f"{what}: placement of tensor {ti} is not a root or out of order")
        prev = ti
        if off % F.ALIGN or off < wbytes or off > fast_arena or psz > fast_arena - off:
            raise _fail("ERR_ARENA_BOUNDS", f"{what}: placement {off}+{psz} of {tensors[ti].name} outside fast")
        t = tensors[ti]
        # A COLS unit's buffers hold dense column bands: their capacity is checked per tile below.
        if band < 1 or band > t.dims[1] or (not tiled and band != t.dims[1]) or (
                not col_split and band * t.row_bytes > psz):
            raise _fail("ERR_TILE_ROWS", f"{what}: {t.name} band of {band} rows does not fit {psz} bytes")
        placements.append(PlacementInfo(ti, off, psz, band))
    tile_rows: list[tuple[tuple[int, int], ...]] = []
    if tiled:
        for tile in range(tiles):
            row = []
            for j, pl in enumerate(placements):
                r = rows_raw[rf + tile * pc + j]
                r0, nr = int(r["row0"]), int(r["rows"])
                t = tensors[pl.tensor]
                if r0 < 0 or nr < 0 or nr > pl.band_rows or r0 + nr > t.dims[1]:
                    raise _fail("ERR_TILE_ROWS", f"{what}: tile {tile} band {r0}+{nr} of {t.name} is invalid")
                row.append((r0, nr))
            tile_rows.append(tuple(row))
    tile_cols: list[tuple[tuple[int, int], ...]] = []
    if col_split:
        for tile in range(tiles):
            row = []
            for j, pl in enumerate(placements):
                r = rows_raw[rf + (tiles + tile) * pc + j]
                c0, nc = int(r["row0"]), int(r["rows"])
                t = tensors[pl.tensor]
                pixel = t.nbytes // (t.dims[1] * t.dims[2])
                if (t.dims[0] != 1 or c0 < 0 or nc < 1 or c0 + nc > t.dims[2]
                        or tile_rows[tile][j][1] * nc * pixel > pl.size):
                    raise _fail("ERR_TILE_COLS", f"{what}: tile {tile} column band {c0}+{nc} of {t.name} is outside "
                                                 f"the tensor or its {pl.size}-byte buffer")
                row.append((c0, nc))
            tile_cols.append(tuple(row))
    placed = {pl.tensor for pl in placements}
    reload = c.ilist(int(u["reload_first"]), int(u["reload_count"]), f"{what} reload")
    spill = c.ilist(int(u["spill_first"]), int(u["spill_count"]), f"{what} spill")
    for lst, kind in ((reload, "reload"), (spill, "spill")):
        for ti in lst:
            if ti >= nt:
                raise _fail("ERR_TENSOR_INDEX", f"{what}: {kind} tensor {ti} out of range ({nt})")
            rt = tensors[ti].root
            if tiled and tensors[ti].is_view:
                raise _fail("ERR_VIEW", f"{what}: {kind} tensor {tensors[ti].name} is a view in a tiled unit")
            if tensors[rt].slow is None:
                raise _fail("ERR_TENSOR", f"{what}: {kind} tensor {tensors[ti].name} has no slow home")
            if rt not in placed:
                raise _fail("ERR_PLACEMENT", f"{what}: {kind} tensor {tensors[ti].name} has no placement")
    return UnitInfo(
        ui, tiled, int(u["op_first"]), int(u["op_count"]), reload, spill, tuple(placements), tiles,
        tuple(tile_rows), c.ilist(int(u["stage_first"]), int(u["stage_count"]), what),
        c.ilist(int(u["irop_first"]), int(u["irop_count"]), what), wbytes, int(u["wblob_off"]),
        int(u["wblob_size"]), int(u["wraw_size"]), int(u["peak_bytes"]), int(u["flags"]),
        _carry_list(c, u) if int(u["flags"]) & F.UnitFlag.ROLLING else (), tuple(tile_cols),
    )


def _check_overwrite(units: list[UnitInfo], tensors: list[TensorInfo]) -> None:
    """Step 14, end (docs/format.md "OVERWRITE units"): in a unit with the OVERWRITE flag, every spilled tensor whose
    slow home shares bytes with a reloaded tensor's is born in the unit (no earlier unit spills it, no graph input),
    the reloaded one dies there (no later unit reloads it, no graph output), and no tile writes a byte of the spilled
    tensor's bands that a later tile still reads of the reloaded one (``tigris.plan.overwrite``; an ACCUM unit's reads
    count whole bands, as the C loader counts them without reading op records)."""
    flagged = lambda r, f: any(t.root == r and t.flags & f for t in tensors)  # noqa: E731
    for u in units:
        if not u.flags & F.UnitFlag.OVERWRITE:
            continue
        what = f"unit {u.index}"
        pos = {pl.tensor: j for j, pl in enumerate(u.placements)}
        for y in {tensors[i].root for i in u.spill}:
            for x in {tensors[i].root for i in u.reload}:
                py, px = tensors[y].slow, tensors[x].slow
                if x == y or py is None or px is None or not (px.offset < py.end and py.offset < px.end):
                    continue
                later = any(tensors[i].root == x for v in units[u.index + 1:] for i in v.reload)
                earlier = any(tensors[i].root == y for v in units[: u.index] for i in v.spill)
                if later or earlier or flagged(x, F.TensorFlag.OUTPUT) or flagged(y, F.TensorFlag.INPUT):
                    raise _fail("ERR_OVERWRITE", f"{what}: {tensors[y].name} shares slow bytes with "
                                                 f"{tensors[x].name}, which is not dying in this unit")
                if not u.tiled:
                    continue
                band = lambda j, t: (u.tile_rows[t][j][0], u.tile_rows[t][j][0] + u.tile_rows[t][j][1])  # noqa
                reads = read_bands([band(pos[x], t) for t in range(u.tiles)], u.rolling and not u.accumulates)
                writes = [band(pos[y], t) for t in range(u.tiles)]
                bad = overwrite_ok(reads, writes, px.offset, tensors[x].row_bytes, py.offset, tensors[y].row_bytes)
                if bad is not None:
                    raise _fail("ERR_OVERWRITE", f"{what}: tile {bad} writes bytes of {tensors[y].name} that a later "
                                                 f"tile still reads of {tensors[x].name}")


def _check_one_region(units: list[UnitInfo], ops: list[OpInfo], tensors: list[TensorInfo]) -> None:
    """Step 15, end (ONE_REGION, docs/format.md "One region"): unit by unit, its weight prefix, every placement, line
    buffer and op scratch end at or below its peak_bytes; then tensor by tensor, every SLOW root live across a unit
    (from 0 when a tensor of it is a graph input, else from its first spill; to the last unit when one is a graph
    output, else to its last reload) has its home at or above that unit's peak_bytes."""
    for u in units:
        ends = [u.weight_bytes] + [pl.offset + pl.size for pl in u.placements]
        ends += [off + size for off, size in u.carry if off != F.NONE]
        ends += [op.scratch.end for op in ops[u.op_first : u.op_first + u.op_count] if op.scratch is not None
                 and op.scratch.size]
        if max(ends) > u.peak_bytes:
            raise _fail("ERR_REGION", f"unit {u.index}: a buffer ends at {max(ends)}, past the unit's peak "
                                      f"{u.peak_bytes}")
    for t in tensors:
        if t.root != t.index or t.slow is None or not t.slow.size:
            continue
        group = [x for x in tensors if x.root == t.index]
        spills = [u.index for u in units if any(tensors[i].root == t.index for i in u.spill)]
        reloads = [u.index for u in units if any(tensors[i].root == t.index for i in u.reload)]
        moves = sorted(spills + reloads)
        birth = death = None
        if any(x.flags & F.TensorFlag.INPUT for x in group):
            birth = 0
        elif moves:
            birth = (spills or moves)[0]
        if any(x.flags & F.TensorFlag.OUTPUT for x in group):
            death = len(units) - 1
        elif moves:
            death = (reloads or moves)[-1]
        elif birth == 0:
            death = 0
        if birth is None or death is None:
            continue  # never moved and no interface: no run touches its home
        for u in units[birth : death + 1]:
            if t.slow.offset < u.peak_bytes:
                raise _fail("ERR_REGION", f"unit {u.index}: {t.name}'s slow home at {t.slow.offset} is live and "
                                          f"below the unit's peak {u.peak_bytes}")


def _carry_list(c: _Sections, u: dict) -> tuple[tuple[int, int], ...]:
    flat = c.ilist(int(u["carry_first"]), 2 * int(u["place_count"]), "line buffers")
    return tuple(zip(flat[0::2], flat[1::2]))


def _check_ops(c: _Sections, units: list[UnitInfo], tensors: list[TensorInfo], fast_arena: int,
               target: int = 0) -> list[OpInfo]:
    """Step 15: every op of every unit, against the unit's placements and weight area. ``target`` is the header's:
    an arranged op must carry an arrangement of that target. This reader is the host runtime's twin, which reads
    every target's arrangements, so it never refuses one with TGRS_ERR_TARGET (docs/format.md)."""
    ops_raw = c.records(F.SectionId.OPS)
    n_weights = len(c.sec[F.SectionId.WEIGHTS])
    nt = len(tensors)
    limits = kind_limits()
    nslots = numerics_slots()
    aslots = arrange_slots()
    want_nm = int(F.Numerics.TFLM) if c.flags & F.Flag.TFLM else int(F.Numerics.ONNX)
    ops: list[OpInfo] = []
    for u in units:
        placed = {pl.tensor for pl in u.placements}
        for k in range(u.op_first, u.op_first + u.op_count):
            o = ops_raw[k]
            what = f"op {k}"
            op_name = c.string(int(o["name_off"]), int(o["name_len"]), what)
            kid = int(o["kind"])
            if not 1 <= kid <= len(KINDS):
                raise _fail("ERR_OP_KIND", f"{what} ({op_name}): kind {kid} outside 1..{len(KINDS)}")
            kname, nparams, nconsts = limits[kid - 1]
            n_in = int(o["n_in"])
            if not 1 <= n_in <= MAX_INPUTS or any(x != F.NONE for x in o["inputs"][n_in:]):
                raise _fail("ERR_OP", f"{what} ({op_name}): {n_in} inputs or unused input slots not NONE")
            tins = tuple(int(x) for x in o["inputs"][:n_in])
            for x in (*tins, int(o["output"])):
                if x >= nt:
                    raise _fail("ERR_TENSOR_INDEX", f"{what} ({op_name}): tensor {x} out of range ({nt})")
                rt = tensors[x].root
                if rt not in placed:
                    raise _fail("ERR_PLACEMENT", f"{what} ({op_name}): {tensors[x].name} not placed in unit {u.index}")
                if u.tiled and tensors[x].is_view:
                    # a view's run is a part of its root's whole buffer, which a tiled unit holds only in bands
                    raise _fail("ERR_VIEW", f"{what} ({op_name}): view {tensors[x].name} in a tiled unit")
                if u.tiled and rt != x and tensors[x].dims[1] != tensors[rt].dims[1]:
                    # Bands are per root buffer: an alias whose rows differ has no band in a tile.
                    raise _fail("ERR_TILE_ROWS", f"{what} ({op_name}): alias {tensors[x].name} rows differ from root")
            acc_gap = u.accumulates and k == u.op_first + u.op_count - 1 and kname == "gap"
            if u.col_split and ((cols_table()[kid - 1][0] == 0 and not acc_gap)
                                or any(tensors[x].root != x for x in (*tins, int(o["output"])))
                                or any(o["params"][z] != 0 for z in cols_table()[kid - 1][3])
                                or any(o["params"][z] == 2 for z in cols_table()[kid - 1][4])):
                raise _fail("ERR_COLS_OP", f"{what} ({op_name}): a {kname} op (or this one's per-column table, its "
                                           "axis W, or an alias operand) cannot run on column bands")
            if any(v != 0 for v in o["params"][nparams:]):
                raise _fail("ERR_BAD_PARAM", f"{what} ({kname}): parameter past its {nparams} is not zero")
            nm = int(o["params"][nslots[kid - 1]]) if nslots[kid - 1] >= 0 else want_nm
            if nm != want_nm:
                raise _fail("ERR_BAD_PARAM", f"{what} ({kname}): numerics code {nm} is not the plan's ({want_nm})")
            arr = int(o["params"][aslots[kid - 1]]) if aslots[kid - 1] >= 0 else 0
            spec = F.ARRANGE_BY_ID.get(arr)  # type: ignore[call-overload]
            if arr != 0 and (spec is None or spec.kind != kname or int(spec.target) != target):
                raise _fail("ERR_BAD_PARAM", f"{what} ({kname}): weight arrangement {arr} is not one of this kind "
                                             f"for the plan's target ({target})")
            limit = n_weights if c.xip else u.wraw_size
            consts = []
            for s in range(MAX_CONSTS):
                co, cl = int(o["const_off"][s]), int(o["const_len"][s])
                if cl == 0:
                    if co != 0:
                        raise _fail("ERR_CONST", f"{what} ({kname}): unused const slot {s} has offset {co}")
                elif s >= nconsts or co % F.ALIGN or co > limit or cl > limit - co:
                    raise _fail("ERR_CONST", f"{what} ({kname}): const slot {s} at {co}+{cl} outside {limit}")
                consts.append((co, cl))
            so, ss = int(o["scratch_off"]), int(o["scratch_size"])
            if (
                (ss == 0 and so != 0)
                or so % F.ALIGN
                or (ss and so < u.weight_bytes)
                or so > fast_arena
                or ss > fast_arena - so
            ):
                raise _fail("ERR_ARENA_BOUNDS", f"{what}: scratch {so}+{ss} outside the fast arena")
            if ss:
                # Kernels copy from their operands into their scratch (im2col, widened weights): never shared bytes.
                homes = {pl.tensor: pl for pl in u.placements}
                for x in (*tins, int(o["output"])):
                    pl = homes[tensors[x].root]
                    if pl.offset < so + ss and so < pl.offset + pl.size:
                        raise _fail("ERR_SCRATCH_OVERLAP", f"{what} ({op_name}): scratch {so}+{ss} overlaps the "
                                                           f"buffer of {tensors[x].name} at {pl.offset}+{pl.size}")
            ops.append(
                OpInfo(
                    k, kname, kid, tins, int(o["output"]), int(o["ir_index"]), op_name,
                    tuple(int(v) for v in o["params"]), tuple(consts), Placement("fast", so, ss) if ss else None,
                )
            )
        if u.accumulates:
            _check_accumulate(u, ops[-1], tensors)
        if u.rolling:
            _check_rolling(u, ops[-1] if u.accumulates else None, tensors, fast_arena)
        if u.col_split:
            _check_cols(u, ops[u.op_first : u.op_first + u.op_count], tensors)
    return ops


def col_need(win: tuple[int, int, int, int, int], a: int, b: int, width: int) -> tuple[int, int]:
    """Input columns [c0, c1) output columns [a, b) of a window (kw, sw, dw, pl, pr) read, clipped to the input's
    width: a COLS unit's input band must be exactly this."""
    kw, sw, dw, pl, _pr = win
    return max(0, a * sw - pl), min(width, (b - 1) * sw - pl + (kw - 1) * dw + 1)


def _check_cols(u: UnitInfo, ops: list[OpInfo], tensors: list[TensorInfo]) -> None:
    """Step 15, end of a COLS unit: in every tile, a windowed op's input band is exactly the columns its output band
    reads, clipped to the input (so the band-relative pads the executor derives are >= 0 and > 0 only at the
    tensor's real edges), its further inputs (convacc's accumulator added into) hold exactly its output's band, and a
    per-pixel op's operands of the output's width hold the output's band (a wider one, a branch buffer's hull, is
    read row by row through sub-band views)."""
    what = f"unit {u.index}"
    pos = {pl.tensor: j for j, pl in enumerate(u.placements)}
    table = cols_table()
    if u.accumulates:
        ops = ops[:-1]  # the accumulating GAP: its bands were proven by _check_accumulate
    for t, tile in enumerate(u.tile_cols):
        for op in ops:
            code, win_slots = table[op.kind_id - 1][:2]
            o0, on = tile[pos[op.output]]
            out_w = tensors[op.output].dims[2]
            if code == 2:
                win = tuple(op.params[s] for s in win_slots)
                if not (all(1 <= v <= F.COLS_WINDOW_MAX for v in win[:3])
                        and all(0 <= v <= F.COLS_WINDOW_MAX for v in win[3:])):
                    continue  # out of the kernels' range: the kind check refuses the op (step 17)
                for a in op.inputs[1:]:  # an accumulator added into (convacc): read at the output's pixels
                    if tile[pos[a]] != (o0, on):
                        raise _fail("ERR_TILE_COLS", f"{what}: tile {t} op {op.index} ({op.kind}) adds into "
                                                     f"columns {tile[pos[a]]} of {tensors[a].name}, not its output "
                                                     f"band {(o0, on)}")
                x = op.inputs[0]
                i0, i_n = tile[pos[x]]
                if win[0] == 1 and win[1] == 1 and win[3] == 0 and win[4] == 0 and tensors[x].dims[2] == out_w:
                    # a 1x1 window reads its output's columns; a wider band is read row by row
                    if not (i0 <= o0 and o0 + on <= i0 + i_n):
                        raise _fail("ERR_TILE_COLS", f"{what}: tile {t} op {op.index} ({op.kind}) reads columns "
                                                     f"{i0}+{i_n} of {tensors[x].name}, which do not hold its "
                                                     f"output band {o0}+{on}")
                    continue
                if (i0, i0 + i_n) != col_need(win, o0, o0 + on, tensors[x].dims[2]):  # type: ignore[arg-type]
                    raise _fail("ERR_TILE_COLS", f"{what}: tile {t} op {op.index} ({op.kind}) reads columns "
                                                 f"{i0}+{i_n} of {tensors[x].name}, not what its output band "
                                                 f"{o0}+{on} needs")
            else:
                for x in op.inputs:
                    c0, cn = tile[pos[x]]
                    if tensors[x].dims[2] == out_w and not (c0 <= o0 and o0 + on <= c0 + cn):
                        raise _fail("ERR_TILE_COLS", f"{what}: tile {t} op {op.index} ({op.kind}) reads columns "
                                                     f"{tile[pos[x]]} of {tensors[x].name}, which do not hold its "
                                                     f"output band {(o0, on)}")


def _check_rolling(u: UnitInfo, last: OpInfo | None, tensors: list[TensorInfo], fast_arena: int) -> None:
    """Step 15, end of a ROLLING unit: every line buffer lies in the fast arena after the weight prefix; a
    placement whose band overlaps its band in the tile before (other than an ACCUM unit's accumulator) carries those
    rows, so its band must not move backwards and its line buffer (if it has one: without, they stay in the band
    buffer) must hold them: the executor keeps them there from one tile's producer (or reload) to the next tile's,
    which computes (or loads) only the rows after them."""
    what = f"unit {u.index}"
    reloaded = set(u.reload)
    for j, (off, size) in enumerate(u.carry):
        if (off, size) == NEVER_CARRIES:  # rule 10: computed whole every tile; a reload would read other rows
            if u.placements[j].tensor in reloaded or any(tensors[i].root == u.placements[j].tensor for i in u.reload):
                raise _fail("ERR_ARENA_BOUNDS", f"{what}: {tensors[u.placements[j].tensor].name} is reloaded but "
                                                "its line-buffer entry says it never carries")
            continue
        if (off, size) != (F.NONE, 0) and (
            off == F.NONE or size == 0 or off % F.ALIGN or off < u.weight_bytes or off > fast_arena
            or size > fast_arena - off
        ):
            raise _fail("ERR_ARENA_BOUNDS", f"{what}: line buffer {off}+{size} of "
                                            f"{tensors[u.placements[j].tensor].name} outside the fast arena")
    acc = tensors[last.output].root if last is not None else None
    for t in range(1, u.tiles):
        for j, pl in enumerate(u.placements):
            (r0, n0), (r1, n1) = u.tile_rows[t - 1][j], u.tile_rows[t][j]
            if pl.tensor == acc or n0 == 0 or r1 >= r0 + n0 or u.carry[j] == NEVER_CARRIES:
                continue
            name = tensors[pl.tensor].name
            if r1 < r0 or r1 + n1 < r0 + n0:
                raise _fail("ERR_TILE_ROWS", f"{what}: tile {t} band {r1}+{n1} of {name} moves back from {r0}+{n0} "
                                             "while carrying rows")
            if u.carry[j][0] != F.NONE and (r0 + n0 - r1) * tensors[pl.tensor].row_bytes > u.carry[j][1]:
                raise _fail("ERR_TILE_ROWS", f"{what}: tile {t} carries {r0 + n0 - r1} rows of {name}, its line "
                                             f"buffer holds {u.carry[j][1]} bytes")


def _check_accumulate(u: UnitInfo, last: OpInfo, tensors: list[TensorInfo]) -> None:
    """Step 15, end of an ACCUM unit: its last op is a GlobalAveragePool reading another buffer than it writes; the
    output's band is the whole tensor in every tile (every tile adds into it), and the input's bands cut its rows into
    consecutive pieces in tile order, each row exactly once (so the sum, and its float order, is the untiled one)."""
    what = f"unit {u.index}"
    r_in, r_out = tensors[last.inputs[0]].root, tensors[last.output].root
    if last.kind != "gap" or r_in == r_out:
        raise _fail("ERR_UNIT", f"{what}: ACCUM unit does not end with a GlobalAveragePool between two buffers")
    pos = {pl.tensor: j for j, pl in enumerate(u.placements)}
    w_in, w_out = tensors[r_in].dims[2], tensors[r_out].dims[2]
    # In a COLS unit each piece of rows is cut into consecutive column bands, tile after tile, before the next piece.
    nxt, col, cur = 0, w_in, (0, 0)
    for t, tile in enumerate(u.tile_rows):
        if tile[pos[r_out]] != (0, tensors[r_out].dims[1]):
            raise _fail("ERR_TILE_ROWS", f"{what}: tile {t} does not hold the whole accumulator")
        (oc0, ocn), (c0, nc) = (u.tile_cols[t][pos[r_out]], u.tile_cols[t][pos[r_in]]) if u.col_split else \
            ((0, w_out), (0, w_in))
        if (oc0, ocn) != (0, w_out):
            raise _fail("ERR_TILE_COLS", f"{what}: tile {t} does not hold the whole accumulator's columns")
        r0, nr = tile[pos[r_in]]
        if col == w_in:  # a new piece of rows, from column 0
            if r0 != nxt:
                raise _fail("ERR_TILE_ROWS", f"{what}: tile {t} accumulates rows from {r0}, expected {nxt}")
            if c0 != 0:
                raise _fail("ERR_TILE_COLS", f"{what}: tile {t} starts rows {r0}+{nr} at column {c0}")
            cur, nxt, col = (r0, nr), r0 + nr, nc
        else:
            if (r0, nr) != cur:
                raise _fail("ERR_TILE_ROWS", f"{what}: tile {t} accumulates rows {r0}+{nr} within the piece {cur}")
            if c0 != col:
                raise _fail("ERR_TILE_COLS", f"{what}: tile {t} accumulates columns from {c0}, expected {col}")
            col += nc
    if col != w_in:
        raise _fail("ERR_TILE_COLS", f"{what}: the last piece of rows accumulates {col} of {w_in} columns")
    if nxt != tensors[r_in].dims[1]:
        raise _fail("ERR_TILE_ROWS", f"{what}: the tiles accumulate {nxt} of {tensors[r_in].dims[1]} rows")


def _check_stages(c: _Sections, n_units: int, nt: int) -> list[StageInfo]:
    """Step 16: stages are for reports, but a malformed one is still refused."""
    stages: list[StageInfo] = []
    for k, s in enumerate(c.records(F.SectionId.STAGES)):
        what = f"stage {k}"
        if (
            s["index"] != k
            or s["unit"] >= n_units
            or int(s["flags"]) & ~int(F.StageFlag.TILED)
            or s["tiles"] == 0
            or s["chain"] < -1
            or s["reserved"] != 0
        ):
            raise _fail("ERR_STAGE", f"{what}: bad index, unit, flags, tiles or chain")
        sops = c.ilist(int(s["ops_first"]), int(s["ops_count"]), f"{what} ops")
        sin = c.ilist(int(s["in_first"]), int(s["in_count"]), f"{what} inputs")
        sout = c.ilist(int(s["out_first"]), int(s["out_count"]), f"{what} outputs")
        if any(x >= nt for x in (*sin, *sout)):
            raise _fail("ERR_TENSOR_INDEX", f"{what}: tensor out of range ({nt})")
        stages.append(
            StageInfo(
                k, int(s["unit"]), bool(int(s["flags"]) & F.StageFlag.TILED), int(s["peak_bytes"]),
                int(s["weight_bytes"]), int(s["tile_h"]), int(s["tiles"]), int(s["halo"]),
                None if s["chain"] == -1 else int(s["chain"]), sops, sin, sout, int(s["recompute_macs"]),
            )
        )
    return stages
