"""The .tgrs plan format, version 2: the single source of truth for the writer, the reader and the C header.

Everything the C runtime needs to know about the byte layout is declared here as data (records of typed fields with
explicit offsets, section ids, enums, flags, status codes). ``tigris.emit.gen_header`` turns it into
``runtime_c/include/tgrs_format.h``; ``tigris.emit.writer`` and ``tigris.emit.reader`` pack and unpack through the
same :class:`Record` objects, so the three can only disagree if the header is stale, which a test catches.

Design rules (docs/format.md says the same in prose, byte by byte):

1. Little-endian, fixed-size records, natural alignment: a field of size k sits at an offset that is a multiple of
   k, and a record's size is a multiple of its largest field. Padding is never implicit; it is a named
   ``reserved`` field that must be zero. So a C struct with the same members has exactly this layout, and a reader
   may also fetch fields with ``memcpy`` at ``TGRS_<REC>_OFF_<FIELD>`` without casting unaligned pointers.
2. The file starts with a 32-byte header, then a section directory, then sections. Every section starts at a
   multiple of 16 bytes, sections appear in the file in directory order (id order) without overlapping, and every
   section id of :data:`SECTIONS` is present exactly once (possibly empty).
3. The CRC-32 (zlib's polynomial, ``zlib.crc32``) covers bytes ``[CRC_START, file_size)``: everything after the
   CRC field. Magic and version sit before it so a reader can reject a foreign or newer file with a precise code
   before checksumming.
4. Indices are u32; "none" is ``NONE`` (0xFFFFFFFF). Byte offsets into arenas and the weights section are
   multiples of 16.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

# MAX_* are part of the op contract (tigris/ops/base.py); the OP record's array sizes follow them.
from tigris.ops.base import MAX_CONSTS, MAX_INPUTS, MAX_PARAMS

MAGIC = b"TGRS"
VERSION = 2  # 2: the TENSOR record gained view_off (views, docs/format.md "Views")
ALIGN = 16  # section starts, arena offsets, weight blobs
NONE = 0xFFFFFFFF  # "no index" / "no offset" in u32 fields
MAX_RANK = 6  # logical rank stored in tensor and interface records
CRC_START = 12  # the CRC covers [CRC_START, file_size)
# The plan buffer and both arenas must be at least 4-byte aligned (float/int32 constants are read in place with
# XIP, and kernels load 32-bit words from the arenas); 16 is recommended so every planned offset is 16-aligned too.
PLAN_ALIGN = 4
ARENA_ALIGN = 4


class Flag(IntEnum):
    """Header ``flags`` bits. Unknown bits are an error (TGRS_ERR_HEADER)."""

    XIP = 1  # const refs are offsets into the WEIGHTS section, read in place
    LZ4 = 2  # per-unit weight blobs are LZ4 blocks (never together with XIP)
    TFLM = 4  # compiled for the tflm numerics contract (docs/numerics.md); 0: the onnx contract
    # The fast and slow arenas are one region (a board without PSRAM): the caller passes the same memory as both, of
    # max(fast_arena, slow_arena) bytes. Each unit's buffers lie below its peak_bytes and every slow home live across
    # the unit at or above it, which a reader proves (docs/format.md "One region").
    ONE_REGION = 8


FLAGS_KNOWN = Flag.XIP | Flag.LZ4 | Flag.TFLM | Flag.ONE_REGION


class Target(IntEnum):
    """The core a plan's weights are arranged for (header field ``target``; ``tigris compile --target``). The names
    are the cost model's targets (tigris/cost.py TARGETS): one option packs for and estimates for the same core."""

    GENERIC = 0  # no arrangement: every constant in the runtime's plain layout (docs/design.md section 2)
    CORTEX_M4 = 1  # Cortex-M4/M7/M33 with the DSP extension (runtime_c/src/kernels/target.h TGRS_ISA_DSP)
    CORTEX_M55 = 2  # Cortex-M55/M85 with Helium (TGRS_ISA_MVE)


TARGET_NAMES = {"generic": Target.GENERIC, "cortex-m4": Target.CORTEX_M4, "cortex-m55": Target.CORTEX_M55}


class Arrange(IntEnum):
    """Weight arrangement ids, stored in the ARRANGE parameter of the kinds that have one (docs/format.md "Weight
    arrangements"). Append, never renumber: a runtime refuses an id it does not read (TGRS_ERR_TARGET) or know."""

    PLAIN = 0  # the generic layout of the kind's weight constant
    # fc, int8, Cortex-M4: rows in blocks of four, each block's 4-k groups interleaved (16 bytes: 4 bytes of each row)
    FC_ROWS4 = 1


@dataclass(frozen=True)
class ArrangeSpec:
    id: Arrange
    target: Target  # the target whose runtime reads it (a host build reads every one, docs/runtime.md)
    kind: str  # the op kind whose weight constant it rearranges


ARRANGEMENTS: tuple[ArrangeSpec, ...] = (
    ArrangeSpec(Arrange.FC_ROWS4, Target.CORTEX_M4, "fc"),
)
ARRANGE_BY_ID = {a.id: a for a in ARRANGEMENTS}


class Numerics(IntEnum):
    """Numerics contract codes, stored in the NUMERICS parameter of every int8 op whose arithmetic depends on it
    (docs/numerics.md). The loader checks each such op's code against the header's TFLM flag."""

    ONNX = 0
    TFLM = 1


class Layout(IntEnum):
    """How a tensor is stored; see docs/design.md (layouts)."""

    PLAIN = 0
    NHWC = 1
    NWC = 2


LAYOUT_CODES = {"plain": Layout.PLAIN, "nhwc": Layout.NHWC, "nwc": Layout.NWC}


class Direction(IntEnum):
    INPUT = 0
    OUTPUT = 1


class Arena(IntEnum):
    FAST = 0
    SLOW = 1


class TensorFlag(IntEnum):
    INPUT = 1  # a graph input
    OUTPUT = 2  # a graph output
    SLOW = 4  # has a slow-arena home (slow_offset/slow_size valid)
    ALIAS = 8  # shares the buffer of tensor `root` (root != own index)
    QUANT = 16  # scale/zero_point are a real quantization (int8)
    # With ALIAS: the tensor's bytes are the run [view_off, view_off + nbytes) of its root's buffer (a Concat input
    # its producer writes straight into the Concat's output, a Slice output read in place from its input); only in
    # untiled units (docs/format.md "Views").
    VIEW = 32


class IoFlag(IntEnum):
    DECL_QUANT = 1  # decl_scale/decl_zero_point are the declared quantization of the boundary
    QUANT = 2  # scale/zero_point are the internal tensor's quantization
    ROWS = 4  # variable row count: at most shape[0] rows, the valid ones first, every later row all -1 (int32)


class UnitFlag(IntEnum):
    """Unit ``flags`` bits. Unknown bits are an error (TGRS_ERR_UNIT), so a reader that predates a bit refuses a plan
    using it instead of misreading it: that is why SHUFFLE and ACCUM did not need a new format version."""

    TILED = 1  # the unit runs `tiles` tiles; TILE_ROWS holds tiles x place_count row bands
    # The unit's LZ4 blob decodes to the byte-plane shuffle of its prefix image (every whole SHUFFLE_CHUNK-byte chunk
    # stored as its 4 byte planes; the tail as it is). Only with the LZ4 header flag and a nonzero wraw_size.
    SHUFFLE = 2
    # The unit's last op is a GlobalAveragePool that accumulates over all tiles: its accumulator is cleared before
    # the first tile, every tile adds its input band, the average is formed after the last tile (before the spill).
    # Only on TILED units; docs/format.md lists what a reader checks.
    ACCUM = 4
    # Halo reuse (line-buffer execution): a placement whose band in tile t overlaps its band in tile t-1 carries the
    # overlapping rows instead of recomputing (or reloading) them: they wait in its line buffer (the unit's
    # carry_first list) from its producer in tile t-1 to its producer in tile t, which then computes (or its reload
    # loads) only the rows after them. Only on TILED units; the bands of a carrying placement never move backwards
    # (docs/format.md "ROLLING units").
    ROLLING = 8
    # Column tiling (2-D tiles): the tiles also cut the unit's tensors along W (dims[2]). The unit owns twice the
    # TILE_ROWS records: the row bands, then the column bands (TILE_COL records). Every band is stored dense as a
    # [rows, cols, C] block; kernels see it as a standalone tensor of width cols whose windowed ops take band-relative
    # W pads. Only on TILED units, never with ROLLING or ACCUM (docs/format.md "COLS units").
    COLS = 16
    # Streaming overwrite: a spilled output's slow home may share bytes with the home of a reloaded input that dies
    # in this unit (no later unit reloads it, no graph output); a reader proves, tile by tile, that no tile writes a
    # byte of the output that a later tile still reads of the input (rolling units read only their fresh rows).
    # Never with COLS (docs/format.md "OVERWRITE units"). Execution is unchanged: reloads start a tile, spills end it.
    OVERWRITE = 32


UNIT_FLAGS_KNOWN = (UnitFlag.TILED | UnitFlag.SHUFFLE | UnitFlag.ACCUM | UnitFlag.ROLLING | UnitFlag.COLS
                    | UnitFlag.OVERWRITE)
# The largest kernel extent, stride, dilation or pad of a windowed op whose COLS band-relative pads a reader proves
# (the kernels' own window limit, TGRS_WINDOW_MAX; a larger one is the kind check's to refuse).
COLS_WINDOW_MAX = 4096
# Bytes per byte-plane shuffle chunk (UnitFlag.SHUFFLE): chunk byte 4*i + p is stored at p * (CHUNK / 4) + i. The
# runtime undoes it in place through a stack buffer of this size.
SHUFFLE_CHUNK = 256


class StageFlag(IntEnum):
    TILED = 1


class SectionId(IntEnum):
    """Section ids, in the order the sections appear in the directory and in the file."""

    PLAN = 1  # one PLAN record: memory figures and counts
    STRINGS = 2  # bytes: names, each NUL-terminated, referenced by (offset, length)
    TENSORS = 3  # TENSOR records, indexed by tensor index
    IO = 4  # IO records: graph inputs in order, then graph outputs in order
    OPS = 5  # OP records, in execution order (units own contiguous ranges)
    UNITS = 6  # UNIT records, in execution order
    PLACEMENTS = 7  # PLACEMENT records (units own contiguous ranges)
    TILE_ROWS = 8  # TILE_ROW records (tiled units own tiles x place_count, tile-major; COLS units then as many TILE_COL)
    INDEX = 9  # u32 lists referenced by (first, count) from units and stages
    STAGES = 10  # STAGE records (reporting)
    WEIGHTS = 11  # bytes: constant blobs (XIP) or one raw/LZ4 blob per unit


# --------------------------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------------------------

# type name -> (struct code, size, C type)
_TYPES: dict[str, tuple[str, int, str]] = {
    "u8": ("B", 1, "uint8_t"),
    "u16": ("H", 2, "uint16_t"),
    "u32": ("I", 4, "uint32_t"),
    "i32": ("i", 4, "int32_t"),
    "f32": ("f", 4, "float"),
    "u64": ("Q", 8, "uint64_t"),
}


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # a key of _TYPES
    count: int = 1  # > 1: a fixed array
    doc: str = ""

    @property
    def elem_size(self) -> int:
        return _TYPES[self.type][1]

    @property
    def size(self) -> int:
        return self.elem_size * self.count

    @property
    def ctype(self) -> str:
        return _TYPES[self.type][2]


@dataclass(frozen=True)
class Record:
    """A fixed-size little-endian record. Offsets are computed in field order and checked for natural alignment."""

    name: str  # C: tgrs_<name>, macros TGRS_<NAME>_*
    fields: tuple[Field, ...]
    doc: str = ""

    def __post_init__(self) -> None:
        off = 0
        biggest = 1
        for f in self.fields:
            if f.type not in _TYPES:
                raise ValueError(f"{self.name}.{f.name}: unknown type {f.type}")
            if off % f.elem_size:
                raise ValueError(f"{self.name}.{f.name}: offset {off} breaks natural alignment")
            off += f.size
            biggest = max(biggest, f.elem_size)
        if off % biggest:
            raise ValueError(f"{self.name}: size {off} is not a multiple of its largest field ({biggest})")
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: duplicate field names")

    @property
    def size(self) -> int:
        return sum(f.size for f in self.fields)

    def offsets(self) -> dict[str, int]:
        out: dict[str, int] = {}
        off = 0
        for f in self.fields:
            out[f.name] = off
            off += f.size
        return out

    @property
    def fmt(self) -> str:
        return "<" + "".join(f"{f.count}{_TYPES[f.type][0]}" for f in self.fields)

    def pack(self, values: dict[str, object]) -> bytes:
        """Pack a dict of field values; missing fields are 0 (arrays: zeros), unknown names are an error."""
        unknown = set(values) - {f.name for f in self.fields}
        if unknown:
            raise KeyError(f"{self.name}: unknown fields {sorted(unknown)}")
        flat: list[object] = []
        for f in self.fields:
            v = values.get(f.name, 0)
            if f.count == 1:
                flat.append(v)
            else:
                conv = float if f.type == "f32" else int
                seq = [] if isinstance(v, int) and v == 0 else [conv(x) for x in v]  # type: ignore[union-attr]
                if len(seq) > f.count:
                    raise ValueError(f"{self.name}.{f.name}: {len(seq)} values for {f.count} slots")
                flat.extend(seq + [0] * (f.count - len(seq)))
        return struct.pack(self.fmt, *flat)

    def unpack(self, data: bytes | memoryview, offset: int = 0) -> dict[str, object]:
        flat = struct.unpack_from(self.fmt, data, offset)
        out: dict[str, object] = {}
        i = 0
        for f in self.fields:
            if f.count == 1:
                out[f.name] = flat[i]
            else:
                out[f.name] = tuple(flat[i : i + f.count])
            i += f.count
        return out


def _u32(name: str, doc: str = "") -> Field:
    return Field(name, "u32", 1, doc)


def _i32(name: str, doc: str = "") -> Field:
    return Field(name, "i32", 1, doc)


HEADER = Record(
    "header",
    (
        Field("magic", "u8", 4, "'T','G','R','S'"),
        Field("version", "u16", 1, "format version, VERSION"),
        Field("header_size", "u16", 1, "size of this header (32)"),
        _u32("crc32", "CRC-32 of bytes [CRC_START, file_size)"),
        _u32("file_size", "total size of the plan in bytes"),
        _u32("flags", "Flag bits"),
        _u32("section_count", "entries in the section directory (= number of SectionId)"),
        _u32("dir_offset", "byte offset of the section directory (= header_size)"),
        _u32("target", "Target the weights are arranged for (0 generic; older readers required 0 here)"),
    ),
    "File header at offset 0.",
)

SECTION = Record(
    "section",
    (
        _u32("id", "SectionId"),
        _u32("offset", "byte offset from the file start, multiple of 16"),
        _u32("size", "bytes"),
        _u32("count", "records (= size / record size), or bytes for byte sections"),
    ),
    "One section directory entry.",
)

PLAN = Record(
    "plan",
    (
        _u32("fast_arena", "fast arena bytes the caller must provide (plan fast peak)"),
        _u32("slow_arena", "slow arena bytes the caller must provide (plan slow peak)"),
        _u32("fast_budget", "budget the plan was made for"),
        _u32("slow_budget", "NONE = unlimited"),
        _u32("weight_raw", "bytes of all constant blobs, uncompressed"),
        _u32("weight_stored", "bytes of the WEIGHTS section payload"),
        _u32("spill_bytes", "bytes written to slow memory per inference"),
        _u32("reload_bytes", "bytes read from slow memory per inference"),
        _u32("unscheduled_peak", "stage-4 peak of the whole graph as one stage"),
        _u32("max_prefix", "largest unit weight_bytes (0 with XIP)"),
        _u32("n_inputs", "graph inputs (first n_inputs IO records)"),
        _u32("n_outputs", "graph outputs (the IO records after the inputs)"),
        _u32("name_off", "model name in STRINGS"),
        _u32("name_len", ""),
        Field("recompute_macs", "u64", 1, "extra MACs spent on tile halos"),
    ),
    "The single record of the PLAN section.",
)

TENSOR = Record(
    "tensor",
    (
        _u32("name_off", "name in STRINGS"),
        _u32("name_len", ""),
        _u32("dtype", "TGRS_DT_*"),
        _u32("layout", "Layout"),
        Field("dims", "i32", 4, "physical rank-4 view dims {N, H, W, C}"),
        _u32("rank", "logical rank, 0..MAX_RANK"),
        Field("shape", "i32", MAX_RANK, "logical (ONNX) shape, unused entries 0"),
        _u32("root", "tensor whose buffer this one uses (own index unless ALIAS)"),
        Field("scale", "f32", 1, "per-tensor scale (QUANT), else 1"),
        _i32("zero_point", "per-tensor zero point (QUANT), else 0"),
        _u32("nbytes", "dims product x element size"),
        _u32("slow_offset", "slow-arena offset of the root's home, NONE if not SLOW"),
        _u32("slow_size", "bytes reserved there, 0 if not SLOW"),
        _u32("flags", "TensorFlag bits"),
        _u32("view_off", "VIEW: byte offset of this tensor's bytes in its root's buffer, multiple of 16; else 0"),
    ),
    "Every activation tensor the runtime touches, indexed by tensor index.",
)

IO = Record(
    "io",
    (
        _u32("name_off", "boundary name in STRINGS (= tensor name)"),
        _u32("name_len", ""),
        _u32("direction", "Direction"),
        _u32("tensor", "tensor index"),
        _u32("decl_dtype", "TGRS_DT_* the model declares (e.g. U8 or F32)"),
        _u32("dtype", "TGRS_DT_* stored in the arena"),
        _u32("layout", "Layout of the stored bytes"),
        _u32("rank", "declared logical rank"),
        Field("shape", "i32", MAX_RANK, "declared logical shape"),
        Field("decl_scale", "f32", 1, "declared quantization (DECL_QUANT)"),
        _i32("decl_zero_point", ""),
        Field("scale", "f32", 1, "internal quantization (QUANT)"),
        _i32("zero_point", ""),
        _u32("flags", "IoFlag bits"),
        _u32("arena", "Arena holding the bytes before the first / after the last unit"),
        _u32("offset", "byte offset in that arena"),
        _u32("nbytes", "bytes of the stored tensor"),
    ),
    "Graph interface: inputs first, then outputs.",
)

OP = Record(
    "op",
    (
        _u32("kind", "TGRS_OP_*"),
        _u32("n_in", "inputs used, 1..MAX_INPUTS"),
        Field("inputs", "u32", MAX_INPUTS, "tensor indices; unused slots NONE"),
        _u32("output", "tensor index"),
        _u32("ir_index", "index of the op in the compiled graph (diagnostics)"),
        _u32("name_off", "op name in STRINGS"),
        _u32("name_len", ""),
        Field("params", "i32", MAX_PARAMS, "OpKind.param_vector: meaning per kind (TGRS_P_*)"),
        Field("const_off", "u32", MAX_CONSTS, "XIP: offset in WEIGHTS; else offset in the unit's prefix"),
        Field("const_len", "u32", MAX_CONSTS, "bytes; 0 = slot unused (offset then 0)"),
        _u32("scratch_off", "fast-arena offset of the kernel scratch (0 if none)"),
        _u32("scratch_size", "bytes, 0 = no scratch"),
    ),
    "One kernel invocation. Alias ops have no record.",
)

UNIT = Record(
    "unit",
    (
        _u32("flags", "UnitFlag bits"),
        _u32("op_first", "first OP record"),
        _u32("op_count", ""),
        _u32("reload_first", "INDEX list of tensors copied slow -> fast at unit start (tiled: per tile)"),
        _u32("reload_count", ""),
        _u32("spill_first", "INDEX list of tensors copied fast -> slow at unit end (tiled: per tile)"),
        _u32("spill_count", ""),
        _u32("place_first", "first PLACEMENT record"),
        _u32("place_count", ""),
        _u32("tiles", "tiles run (1 when untiled)"),
        _u32("rows_first", "first TILE_ROW record (tiled only)"),
        _u32("rows_count", "tiles x place_count when TILED (COLS: twice that), else 0"),
        _u32("stage_first", "INDEX list of stage indices in this unit"),
        _u32("stage_count", ""),
        _u32("irop_first", "INDEX list of graph op indices (alias ops included), execution order"),
        _u32("irop_count", ""),
        _u32("weight_bytes", "reserved fast prefix [0, weight_bytes) for this unit's weights (0 with XIP)"),
        _u32("wblob_off", "offset of this unit's blob in WEIGHTS (non-XIP)"),
        _u32("wblob_size", "stored bytes of the blob (LZ4: compressed size)"),
        _u32("wraw_size", "bytes the blob expands to in the prefix, <= weight_bytes"),
        _u32("peak_bytes", "fast high water of the unit"),
        _u32("carry_first", "ROLLING: INDEX list of 2 x place_count u32, each placement's line buffer (offset, "
                            "size), (NONE, 0) when it carries nothing; 0 otherwise"),
    ),
    "An exec unit: what the runtime runs as one piece.",
)

PLACEMENT = Record(
    "placement",
    (
        _u32("tensor", "root tensor index"),
        _u32("offset", "fast-arena offset, multiple of 16, >= unit weight_bytes"),
        _u32("size", "bytes reserved"),
        _u32("band_rows", "rows (axis 1 of dims) the buffer holds; dims[1] when untiled"),
    ),
    "Fast buffer of one tensor in one unit (sorted by tensor within the unit).",
)

TILE_ROW = Record(
    "tile_row",
    (
        _i32("row0", "first row of axis 1 in the band"),
        _i32("rows", "rows in the band"),
    ),
    "Row band of one placement in one tile.",
)

# A COLS unit's column bands live in the TILE_ROWS section after its row bands, one record per (tile, placement):
# the same 8 bytes, read as (col0, cols) along W.
TILE_COL = Record(
    "tile_col",
    (
        _i32("col0", "first column of axis 2 in the band"),
        _i32("cols", "columns in the band"),
    ),
    "Column band of one placement in one tile of a COLS unit (stored in TILE_ROWS after the unit's row bands).",
)

STAGE = Record(
    "stage",
    (
        _u32("index", "stage index"),
        _u32("unit", "unit running it"),
        _u32("flags", "StageFlag bits"),
        _u32("peak_bytes", ""),
        _u32("weight_bytes", ""),
        _u32("tile_h", "output rows per tile (0 when untiled)"),
        _u32("tiles", ""),
        _u32("halo", ""),
        _i32("chain", "chain id, -1 = none"),
        _u32("ops_first", "INDEX list of graph op indices"),
        _u32("ops_count", ""),
        _u32("in_first", "INDEX list of input tensor indices"),
        _u32("in_count", ""),
        _u32("out_first", "INDEX list of output tensor indices"),
        _u32("out_count", ""),
        _u32("reserved", "0"),
        Field("recompute_macs", "u64", 1, ""),
    ),
    "A temporal stage (reporting; the runtime does not need it to execute).",
)

INDEX_ENTRY = Record("index_entry", (_u32("value"),), "One u32 of the INDEX section.")


@dataclass(frozen=True)
class SectionSpec:
    id: SectionId
    record: Record | None  # None: a byte section (count = size)
    doc: str


SECTIONS: tuple[SectionSpec, ...] = (
    SectionSpec(SectionId.PLAN, PLAN, "exactly one record"),
    SectionSpec(SectionId.STRINGS, None, "NUL-terminated names"),
    SectionSpec(SectionId.TENSORS, TENSOR, ""),
    SectionSpec(SectionId.IO, IO, "n_inputs + n_outputs records"),
    SectionSpec(SectionId.OPS, OP, ""),
    SectionSpec(SectionId.UNITS, UNIT, "at least one"),
    SectionSpec(SectionId.PLACEMENTS, PLACEMENT, ""),
    SectionSpec(SectionId.TILE_ROWS, TILE_ROW, ""),
    SectionSpec(SectionId.INDEX, INDEX_ENTRY, ""),
    SectionSpec(SectionId.STAGES, STAGE, ""),
    SectionSpec(SectionId.WEIGHTS, None, "16-aligned constant blobs"),
)

RECORDS: tuple[Record, ...] = (HEADER, SECTION, PLAN, TENSOR, IO, OP, UNIT, PLACEMENT, TILE_ROW, TILE_COL, STAGE)

DIR_OFFSET = HEADER.size  # the directory follows the header directly
DATA_START = DIR_OFFSET + SECTION.size * len(SECTIONS)  # first section offset (before alignment)


# --------------------------------------------------------------------------------------------------------------------
# Status codes (C: TGRS_OK / TGRS_ERR_*). Values are part of the contract: append, never renumber.
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Status:
    name: str  # C: TGRS_<name>
    code: int
    message: str


STATUS: tuple[Status, ...] = (
    Status("OK", 0, "success"),
    # Loader (tgrs_load): each check of docs/format.md "What a reader must check" has its own code.
    Status("ERR_NULL", -1, "a required pointer argument is NULL"),
    Status("ERR_ALIGN", -2, "plan or arena buffer is not aligned"),
    Status("ERR_TRUNCATED", -3, "buffer shorter than the header or than file_size"),
    Status("ERR_MAGIC", -4, "bad magic (not a .tgrs plan)"),
    Status("ERR_VERSION", -5, "unsupported format version"),
    Status("ERR_SIZE", -6, "file_size does not match the buffer length"),
    Status("ERR_CRC", -7, "CRC-32 mismatch"),
    Status("ERR_HEADER", -8, "bad header field (header_size, flags, directory, target)"),
    Status("ERR_SECTION", -9, "section directory malformed (id, order, record count)"),
    Status("ERR_SECTION_BOUNDS", -10, "section out of bounds, misaligned or overlapping"),
    Status("ERR_STRING", -11, "string reference out of bounds or not NUL-terminated"),
    Status("ERR_TENSOR_INDEX", -12, "tensor index out of range"),
    Status("ERR_TENSOR", -13, "bad tensor record (dtype, layout, dims, size, root, slow home)"),
    Status("ERR_OP_KIND", -14, "unknown op kind"),
    Status("ERR_OP", -15, "bad op record (input count, unused slots)"),
    Status("ERR_BAD_PARAM", -16, "op parameter slot beyond the kind's parameters is not zero"),
    Status("ERR_CONST", -17, "constant reference outside the weights area or misaligned"),
    Status("ERR_ARENA_BOUNDS", -18, "offset or size outside its arena"),
    Status("ERR_ARENA_SMALL", -19, "caller arena smaller than the plan needs"),
    Status("ERR_UNIT", -20, "bad unit record (ranges, tiles, flags)"),
    Status("ERR_STAGE", -21, "bad stage record"),
    Status("ERR_TILE_ROWS", -22, "tile row band outside the tensor or the buffer capacity"),
    Status("ERR_IO", -23, "bad interface record"),
    Status("ERR_LZ4", -24, "malformed LZ4 block"),
    Status("ERR_WEIGHTS", -25, "weight blob out of bounds or larger than its prefix"),
    Status("ERR_INDEX", -26, "INDEX list out of bounds"),
    Status("ERR_PLACEMENT", -27, "tensor used in a unit has no placement there"),
    Status("ERR_PLAN", -28, "bad PLAN record"),
    Status("ERR_STATE", -29, "API called out of order (e.g. run before load)"),
    Status("ERR_INPUT", -30, "bad input/output index or size passed to the API"),
    # Kernels (docs/design.md section 4).
    Status("ERR_PARAM", -40, "kernel parameter out of range"),
    Status("ERR_DTYPE", -41, "unsupported dtype combination"),
    Status("ERR_TILE", -42, "input band misses rows the output band needs"),
    Status("ERR_SCRATCH", -43, "scratch too small"),
    Status("ERR_SHAPE", -44, "inconsistent dims"),
    Status("ERR_UNSUPPORTED", -45, "no kernel for this kind / variant"),
    # Loader, after the kernel codes: appended, so the numbers above stay.
    Status("ERR_TARGET", -46, "weights arranged for another target than this runtime's"),
    Status("ERR_TILE_COLS", -47, "tile column band outside the tensor, the buffer capacity or the op's window"),
    Status("ERR_COLS_OP", -48, "op not allowed in a column-split unit (its kind, or an alias operand)"),
    Status("ERR_SCRATCH_OVERLAP", -49, "an op's scratch overlaps the buffer of one of its operands"),
    Status("ERR_OVERWRITE", -50, "an output written over an input's slow home that is still read, or not dying there"),
    Status("ERR_REGION", -51, "one-region plan: a unit's buffers reach a live slow home, or the arenas passed differ"),
    Status("ERR_VIEW", -52, "a view's run lies outside its root's buffer, is misaligned, or is used in a tiled unit"),
)

STATUS_BY_NAME = {s.name: s for s in STATUS}


def status_code(name: str) -> int:
    return STATUS_BY_NAME[name].code


def _check_status_table() -> None:
    codes = [s.code for s in STATUS]
    if len(set(codes)) != len(codes) or any(c > 0 for c in codes):
        raise AssertionError("status codes must be distinct and <= 0")


_check_status_table()
