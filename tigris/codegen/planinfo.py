"""What code generation needs to know about a plan: arena sizes, flags and the graph interface.

Read straight from the ``.tgrs`` bytes through the record definitions of :mod:`tigris.emit.format` (the single
source of truth of the layout), so codegen depends only on the format, not on the reader or the runtime. Only the
header, the directory and the PLAN / STRINGS / IO sections are interpreted; the runtime's loader validates the rest
on the device (``NAME_init`` returns its status).
"""
from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass

from tigris.emit import format as F
from tigris.emit.gen_header import DTYPE_C_NAMES
from tigris.ir import TigrisError
from tigris.ops.base import DTYPE_CODES

DTYPE_NAMES = {code: name for name, code in DTYPE_CODES.items()}
# C spelling of each dtype code: the TGRS_DT_* macros tgrs_format.h is generated with.
DTYPE_C = {code: f"TGRS_DT_{DTYPE_C_NAMES[name]}" for name, code in DTYPE_CODES.items()}
LAYOUT_C = {int(v): f"TGRS_LAYOUT_{v.name}" for v in F.Layout}
_U8, _S8 = DTYPE_CODES["uint8"], DTYPE_CODES["int8"]


@dataclass(frozen=True)
class IoInfo:
    """One graph input or output as the plan declares it."""

    name: str
    direction: int  # F.Direction
    decl_dtype: int  # TGRS_DT_* the ONNX model declares
    dtype: int  # TGRS_DT_* of the bytes in the arena
    layout: int  # F.Layout of the stored bytes
    shape: tuple[int, ...]  # declared logical (ONNX) shape
    nbytes: int  # bytes of the caller's buffer (same element size as the stored tensor)
    scale: float | None  # internal quantization, None when not quantized
    zero_point: int | None
    decl_scale: float | None = None  # declared quantization of the boundary (e.g. a uint8 input), if any
    decl_zero_point: int | None = None

    @property
    def caller_dtype(self) -> int:
        """TGRS_DT_* of the caller's buffer (tigris.h): the declared dtype only where the runtime converts
        (a uint8 boundary on an int8 tensor), else the stored one."""
        if self.decl_dtype == _U8 and self.dtype == _S8:
            return _U8
        return self.dtype

    @property
    def caller_quant(self) -> tuple[float, int] | None:
        """Quantization of the caller's bytes: the declared one for a converted uint8 boundary, else the internal."""
        if self.caller_dtype != self.dtype and self.decl_scale is not None and self.decl_zero_point is not None:
            return self.decl_scale, self.decl_zero_point
        if self.scale is not None and self.zero_point is not None:
            return self.scale, self.zero_point
        return None


@dataclass(frozen=True)
class PlanInfo:
    size: int
    sha256: str
    flags: int
    model_name: str
    fast_arena: int
    slow_arena: int
    inputs: tuple[IoInfo, ...]
    outputs: tuple[IoInfo, ...]
    # TGRS_OP_* kinds the plan's ops use, ascending: codegen links only their kernels (the op resolver).
    kinds: tuple[int, ...] = ()
    # The multiply-accumulate kinds with at least one op whose weights have zero points (param ``wzp`` = 1): the
    # op resolver names their full kernel; the others get tgrs_kernel_<kind>_sym, which leaves that path out.
    wzp_kinds: tuple[int, ...] = ()
    # The kinds of TFLM_KINDS with at least one op whose NUMERICS parameter is 1 (TFLM's arithmetic): the op
    # resolver names their full kernel; the others get tgrs_kernel_<kind>_onnx, which leaves the TFLM path out.
    tflm_kinds: tuple[int, ...] = ()
    # Whether a unit is ROLLING (halo reuse): the generated file then refuses a -DTGRS_NO_ROLLING build.
    rolling: bool = False
    # Whether a unit is COLS (column tiles): the generated file then refuses a -DTGRS_NO_COLS build.
    cols: bool = False
    # Whether an int8 conv op has scratch for fewer than CONV_MR widened patches (a band of fewer than CONV_MR output
    # pixels: a column tile, or a row band of a 1-D or width-1 conv), which conv.c's conv_s8_narrow runs: the
    # generated file then refuses a -DTGRS_NO_COLS build, which folds that path away.
    narrow_conv: bool = False
    # Whether a unit is ACCUM (a GAP accumulating over tiles): the generated file then refuses a -DTGRS_NO_ACCUM build.
    accum: bool = False
    # Whether a dwconv op runs over its own input in pieces (param ip_rows > 0): the generated file then refuses a
    # -DTGRS_NO_DW_PIECES build.
    dw_pieces: bool = False
    # Whether a unit is OVERWRITE (outputs over dying inputs' slow homes): the generated file then refuses a
    # -DTGRS_NO_OVERWRITE build (and a ONE_REGION plan, ``one_region``, a -DTGRS_NO_REGION one).
    overwrite: bool = False
    # Whether a tensor is a VIEW (a run of its root's buffer): the generated file then refuses a -DTGRS_NO_VIEWS build.
    views: bool = False

    @property
    def acc(self) -> bool:
        """Whether an op is of the int32 accumulator family (an int8 op in input-channel groups, kernels/acc.c): the
        generated file then refuses a -DTGRS_NO_ACC build."""
        from tigris.ops import KIND_IDS

        return any(KIND_IDS[k] in self.kinds for k in ("convacc", "gemmacc", "accadd", "requantize"))

    @property
    def xip(self) -> bool:
        return bool(self.flags & F.Flag.XIP)

    @property
    def one_region(self) -> bool:
        """Both arenas are one block of memory (header flag ONE_REGION): the firmware passes one array twice."""
        return bool(self.flags & F.Flag.ONE_REGION)

    @property
    def region_bytes(self) -> int:
        """The fast arena array's size: the plan's fast arena, or for one region the larger of the two arenas."""
        return max(self.fast_arena, self.slow_arena) if self.one_region else self.fast_arena

    @property
    def input_bytes(self) -> int:
        """Bytes of every input buffer the caller passes (the runtime reads them, never owns them)."""
        return sum(io.nbytes for io in self.inputs)

    @property
    def output_bytes(self) -> int:
        return sum(io.nbytes for io in self.outputs)

    @property
    def total_ram_bytes(self) -> int:
        """All the RAM one model needs besides the stack: both arenas and the caller's input and output buffers
        (those live outside the arenas: the runtime copies inputs in and outputs out)."""
        return self.total_ram("separate")

    def total_ram(self, io: str = "separate") -> int:
        """Total RAM with the I/O exchanged through separate caller buffers, or ``in-arena``: the firmware writes
        inputs and reads outputs at their homes inside the arenas (tgrs_run_in_place), which adds nothing."""
        extra = 0 if io == "in-arena" else self.input_bytes + self.output_bytes
        return (self.region_bytes if self.one_region else self.fast_arena + self.slow_arena) + extra

    def ram_json(self, io: str = "separate") -> dict[str, int]:
        """The RAM figures of a firmware built from this plan (the generated header states the same numbers)."""
        return {
            "fast_arena_bytes": self.fast_arena,
            "slow_arena_bytes": self.slow_arena,
            "input_bytes": self.input_bytes,
            "output_bytes": self.output_bytes,
            "total_ram_bytes": self.total_ram(io),
        }

    @property
    def lz4(self) -> bool:
        return bool(self.flags & F.Flag.LZ4)


def _fail(what: str) -> TigrisError:
    return TigrisError(what, "plan")


def read_plan_info(data: bytes) -> PlanInfo:
    """Parse the parts of a plan codegen needs; raise TigrisError on anything that is not a readable v1 plan."""
    if len(data) < F.HEADER.size:
        raise _fail(f"not a .tgrs plan: {len(data)} bytes is shorter than the header")
    h = F.HEADER.unpack(data)
    if bytes(h["magic"]) != F.MAGIC:  # type: ignore[arg-type]
        raise _fail("not a .tgrs plan (bad magic)")
    if h["version"] != F.VERSION:
        raise _fail(f"unsupported plan format version {h['version']} (this tigris writes {F.VERSION})")
    if h["file_size"] != len(data):
        raise _fail(f"plan is {len(data)} bytes but its header says {h['file_size']}")
    if zlib.crc32(data[F.CRC_START :]) != h["crc32"]:
        raise _fail("plan CRC-32 mismatch (the file is corrupt)")

    sections: dict[int, tuple[int, int]] = {}
    for i in range(int(h["section_count"])):  # type: ignore[call-overload]
        off = int(h["dir_offset"]) + i * F.SECTION.size  # type: ignore[call-overload]
        if off + F.SECTION.size > len(data):
            raise _fail("section directory runs past the end of the plan")
        s = F.SECTION.unpack(data, off)
        start, size = int(s["offset"]), int(s["size"])  # type: ignore[call-overload]
        if start + size > len(data):
            raise _fail(f"section {s['id']} runs past the end of the plan")
        sections[int(s["id"])] = (start, size)  # type: ignore[call-overload]
    for needed in (F.SectionId.PLAN, F.SectionId.STRINGS, F.SectionId.IO):
        if needed not in sections:
            raise _fail(f"plan has no {needed.name} section")

    p_off, p_size = sections[F.SectionId.PLAN]
    if p_size < F.PLAN.size:
        raise _fail("PLAN section is too small")
    plan = F.PLAN.unpack(data, p_off)
    s_off, s_size = sections[F.SectionId.STRINGS]

    def string(off: object, length: object) -> str:
        o, n = int(off), int(length)  # type: ignore[call-overload]
        if o + n > s_size:
            raise _fail("string reference outside the STRINGS section")
        return data[s_off + o : s_off + o + n].decode("utf-8", errors="replace")

    io_off, io_size = sections[F.SectionId.IO]
    n_in, n_out = int(plan["n_inputs"]), int(plan["n_outputs"])  # type: ignore[call-overload]
    if (n_in + n_out) * F.IO.size > io_size:
        raise _fail("IO section holds fewer records than the PLAN record counts")
    ios: list[IoInfo] = []
    for i in range(n_in + n_out):
        r = F.IO.unpack(data, io_off + i * F.IO.size)
        rank = int(r["rank"])  # type: ignore[call-overload]
        if not 0 <= rank <= F.MAX_RANK:
            raise _fail(f"interface record {i} has rank {rank}")
        for field in ("dtype", "decl_dtype"):
            if int(r[field]) not in DTYPE_C:  # type: ignore[call-overload]
                raise _fail(f"interface record {i} has unknown {field} {r[field]}")
        if int(r["layout"]) not in LAYOUT_C:  # type: ignore[call-overload]
            raise _fail(f"interface record {i} has unknown layout {r['layout']}")
        quant = bool(int(r["flags"]) & F.IoFlag.QUANT)  # type: ignore[call-overload]
        decl_quant = bool(int(r["flags"]) & F.IoFlag.DECL_QUANT)  # type: ignore[call-overload]
        ios.append(
            IoInfo(
                name=string(r["name_off"], r["name_len"]),
                direction=int(r["direction"]),  # type: ignore[call-overload]
                decl_dtype=int(r["decl_dtype"]),  # type: ignore[call-overload]
                dtype=int(r["dtype"]),  # type: ignore[call-overload]
                layout=int(r["layout"]),  # type: ignore[call-overload]
                shape=tuple(int(d) for d in r["shape"][:rank]),  # type: ignore[index]
                nbytes=int(r["nbytes"]),  # type: ignore[call-overload]
                scale=float(r["scale"]) if quant else None,  # type: ignore[arg-type]
                zero_point=int(r["zero_point"]) if quant else None,  # type: ignore[call-overload]
                decl_scale=float(r["decl_scale"]) if decl_quant else None,  # type: ignore[arg-type]
                decl_zero_point=int(r["decl_zero_point"]) if decl_quant else None,  # type: ignore[call-overload]
            )
        )
    return PlanInfo(
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        flags=int(h["flags"]),  # type: ignore[call-overload]
        model_name=string(plan["name_off"], plan["name_len"]),
        fast_arena=int(plan["fast_arena"]),  # type: ignore[call-overload]
        slow_arena=int(plan["slow_arena"]),  # type: ignore[call-overload]
        inputs=tuple(ios[:n_in]),
        outputs=tuple(ios[n_in:]),
        kinds=_op_kinds(data, sections.get(F.SectionId.OPS, (0, 0))),
        wzp_kinds=_wzp_kinds(data, sections.get(F.SectionId.OPS, (0, 0))),
        tflm_kinds=_kinds_with_param(data, sections.get(F.SectionId.OPS, (0, 0)), TFLM_KINDS, "numerics", 1),
        rolling=_any_unit_flag(data, sections.get(F.SectionId.UNITS, (0, 0)), F.UnitFlag.ROLLING),
        cols=_any_unit_flag(data, sections.get(F.SectionId.UNITS, (0, 0)), F.UnitFlag.COLS),
        accum=_any_unit_flag(data, sections.get(F.SectionId.UNITS, (0, 0)), F.UnitFlag.ACCUM),
        dw_pieces=_any_dw_pieces(data, sections.get(F.SectionId.OPS, (0, 0))),
        narrow_conv=_any_narrow_conv(data, sections.get(F.SectionId.OPS, (0, 0))),
        overwrite=_any_unit_flag(data, sections.get(F.SectionId.UNITS, (0, 0)), F.UnitFlag.OVERWRITE),
        views=_any_view(data, sections.get(F.SectionId.TENSORS, (0, 0))),
    )


def _any_view(data: bytes, section: tuple[int, int]) -> bool:
    """Whether a TENSOR record of the section has the VIEW flag (its bounds were checked against the file above)."""
    off, size = section
    starts = range(off, off + size - F.TENSOR.size + 1, F.TENSOR.size)
    return any(int(F.TENSOR.unpack(data, o)["flags"]) & F.TensorFlag.VIEW for o in starts)  # type: ignore[call-overload]


def _any_dw_pieces(data: bytes, section: tuple[int, int]) -> bool:
    """Whether an OP record of the section is a dwconv with a nonzero ip_rows (docs/format.md "Window ops in place")."""
    from tigris.ops import KIND_IDS, kind as get_kind

    slot = get_kind("dwconv").PARAMS.index("ip_rows")
    off, size = section
    return any(int(r["kind"]) == KIND_IDS["dwconv"] and int(r["params"][slot]) != 0  # type: ignore[call-overload,index]
               for r in (F.OP.unpack(data, o) for o in range(off, off + size - F.OP.size + 1, F.OP.size)))


def _any_narrow_conv(data: bytes, section: tuple[int, int]) -> bool:
    """Whether an OP record of the section is an int8 conv (its ``mult`` const is present) whose scratch holds fewer
    than CONV_MR int16 patches of its ``patch`` length (conv.c ``conv_patch_rows``)."""
    from tigris.ops import KIND_IDS, kind as get_kind
    from tigris.ops.conv import CONV_MR

    k = get_kind("conv")
    patch, mult = k.PARAMS.index("patch"), k.CONSTS.index("mult")
    off, size = section
    for o in range(off, off + size - F.OP.size + 1, F.OP.size):
        r = F.OP.unpack(data, o)
        if int(r["kind"]) == KIND_IDS["conv"] and int(r["const_len"][mult]) > 0 \
                and int(r["scratch_size"]) < CONV_MR * int(r["params"][patch]) * 2:  # type: ignore[index]
            return True
    return False


def _any_unit_flag(data: bytes, section: tuple[int, int], flag: int) -> bool:
    """Whether a UNIT record of the section has ``flag`` (its bounds were checked against the file above)."""
    off, size = section
    starts = range(off, off + size - F.UNIT.size + 1, F.UNIT.size)
    return any(int(F.UNIT.unpack(data, o)["flags"]) & flag for o in starts)  # type: ignore[call-overload]


def _op_kinds(data: bytes, section: tuple[int, int]) -> tuple[int, ...]:
    """The distinct kinds of the OPS section's records (its bounds were checked against the file above)."""
    off, size = section
    starts = range(off, off + size - F.OP.size + 1, F.OP.size)
    return tuple(sorted({int(F.OP.unpack(data, o)["kind"]) for o in starts}))  # type: ignore[call-overload]


# The kinds whose kernels have a weight-zero-point path that a firmware can leave out (tgrs_kernel_<kind>_sym).
WZP_KINDS = ("conv", "dwconv", "fc")


# The kinds whose kernels have a TFLM-numerics path of their own that a firmware can leave out
# (tgrs_kernel_<kind>_onnx). Not avgpool: its TFLM average is a few instructions of the pixel loop, less than a
# second entry point costs.
TFLM_KINDS = ("softmax", "gap")


def _wzp_kinds(data: bytes, section: tuple[int, int]) -> tuple[int, ...]:
    """The kinds of WZP_KINDS with an op whose ``wzp`` parameter is 1 (the kernels' exact zero-point path)."""
    return _kinds_with_param(data, section, WZP_KINDS, "wzp", 1)


def _kinds_with_param(data: bytes, section: tuple[int, int], kinds: tuple[str, ...], param: str,
                      value: int) -> tuple[int, ...]:
    """The kinds of ``kinds`` with an op whose parameter ``param`` (any case) equals ``value``."""
    from tigris.ops import KINDS, kind as get_kind

    slot = {}
    for i, (kname, _m, _c) in enumerate(KINDS):
        if kname in kinds:
            slot[i + 1] = [n.lower() for n in get_kind(kname).PARAMS].index(param)
    off, size = section
    found = set()
    for o in range(off, off + size - F.OP.size + 1, F.OP.size):
        rec = F.OP.unpack(data, o)
        kind = int(rec["kind"])  # type: ignore[call-overload]
        if kind in slot and int(rec["params"][slot[kind]]) == value:  # type: ignore[index]
            found.add(kind)
    return tuple(sorted(found))
