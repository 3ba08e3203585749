"""The contract every runtime op kind follows, in Python and in C.

A normalized IR op is *lowered* to a :class:`Lowered`: the kernel kind, a fixed vector of int32 parameters and up to
``MAX_CONSTS`` constant blobs, all in the runtime's conventions (NHWC, OHWI weights, Q0.31 multipliers, int8 clamp
bounds, lookup tables). Lowering happens once, in Python; three consumers read the same numbers:

* the emitter serializes them into the plan (it never interprets a parameter),
* the NumPy reference executor hands them to the kind's ``reference`` function,
* the C runtime hands them to the kind's kernel through ``tgrs_op_ctx`` (``runtime_c/include/tgrs_op.h``).

So the C kernel and the NumPy reference receive identical inputs, which is what makes int8 bit-exactness testable.

Each kind module (``tigris/ops/<kind>.py``) defines a subclass of :class:`OpKind` and registers it in
``tigris/ops/__init__.py``. Parameter names become ``TGRS_P_<KIND>_<NAME>`` indices in the generated C header, const
slot names become ``TGRS_C_<KIND>_<NAME>``.

Float parameters are stored as their IEEE-754 bit pattern in the int32 slot (``f32_bits``) so the param vector stays
one integer type; the C side reads them back with ``tgrs_p_f32``.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError

MAX_PARAMS = 24
MAX_CONSTS = 4
MAX_INPUTS = 4

# Dtype codes shared with C (tgrs_dtype). Order is part of the plan format.
# int64 is a declared boundary dtype only (an index output the runtime stores as int32, docs/format.md).
DTYPE_CODES = {"float32": 1, "int8": 2, "uint8": 3, "int32": 4, "int16": 5, "int64": 6}


def _align16(n: int) -> int:
    return (n + 15) // 16 * 16


def f32_bits(x: float) -> int:
    """A float parameter as the int32 whose bits are its IEEE-754 single-precision encoding."""
    return struct.unpack("<i", struct.pack("<f", float(x)))[0]


def bits_f32(i: int) -> float:
    return struct.unpack("<f", struct.pack("<i", int(i)))[0]


@dataclass
class Lowered:
    """One runtime op, fully parameterized.

    ``inputs``/``outputs`` are tensor names of the IR (constants are not inputs here; they are ``consts``).
    ``params`` maps the kind's PARAMS names to int32 values (missing names are 0).
    ``consts`` maps the kind's CONSTS slot names to arrays in runtime layout and final dtype.
    ``alias`` marks ops that move no bytes (Reshape/Flatten whose physical order is unchanged): the output shares the
    input's buffer and the emitter writes no op record.
    """

    kind: str
    op_name: str
    inputs: list[str]
    outputs: list[str]
    params: dict[str, int] = field(default_factory=dict)
    consts: dict[str, np.ndarray] = field(default_factory=dict)
    alias: bool = False
    macs: int = 0


class Unsupported(TigrisError):
    """The runtime cannot run this op as the graph states it; ``reason`` says why (the analyze --json contract's
    ``unsupported[].reason``). Raised by :func:`tigris.ops.lower`; :func:`tigris.passes.check_supported` collects
    the reasons of every op at once."""

    def __init__(self, reason: str, where: str | None = None):
        self.reason = reason
        super().__init__(reason, where)


# How the planner may cut an op into row bands (docs/memory-planning.md, spatial rules 1-3):
# spatial: a window over the input rows (input_rows from its geometry, halo); pointwise: an output row needs the
# matching input rows (shifted or scaled for Pad and Resize); structural: it needs its whole input (whole-tensor).
Tiling = Literal["spatial", "pointwise", "structural"]


class OpKind:
    """Base class of a runtime kernel family. Subclasses set the class attributes and implement the methods.

    Besides lowering and the reference, a kind answers every question later stages ask about its ops, so no stage
    matches op-type strings: why an op is unsupported (:meth:`unsupported`), how it tiles (:meth:`tiling`,
    :meth:`window`, :meth:`rows_needed`, :meth:`mixes_rows`, :attr:`accumulates`), its MACs and scratch, and whether
    it takes a fused activation (:meth:`fuses_activation`) or is one (:meth:`as_fused_activation`).
    """

    name: ClassVar[str]  # e.g. "conv"; C enum TGRS_OP_CONV
    ir_ops: ClassVar[tuple[str, ...]]  # normalized IR op types this kind lowers
    PARAMS: ClassVar[tuple[str, ...]] = ()
    CONSTS: ClassVar[tuple[str, ...]] = ()
    TILING: ClassVar[Tiling] = "structural"
    # The activation is the op's only operand: everything else was folded into attributes by the passes.
    SINGLE_INPUT: ClassVar[bool] = True
    # A tiled unit may end with this op and accumulate it over the tiles (spatial rule 7, unit flag ACCUM).
    accumulates: ClassVar[bool] = False
    # The op can be an alias (output shares the input buffer); the layout pass records which ones are.
    may_alias: ClassVar[bool] = False
    # Column tiling (unit flag COLS, docs/format.md "COLS units"): how the kernel runs on a band of columns presented
    # as a standalone tensor of that width. "window": a sliding window along W whose pads the executor replaces by
    # band-relative ones (COL_WINDOW names its kw, sw, dw, pl, pr parameters); "pixel": output column c reads input
    # column c only; None: the kind may not appear in a COLS unit. This is the kind's bound, read by the plan format
    # (gen_header, the readers); whether one op of the kind is column-local (a broadcast along W, a concat axis) is
    # the planner's question.
    COLS: ClassVar[Literal["window", "pixel"] | None] = None
    COL_WINDOW: ClassVar[tuple[str, str, str, str, str]] = ("kw", "sw", "dw", "pl", "pr")
    # "pixel" kinds: parameters that state an operand's or the output's W extent (a binary op's operand dims). In a
    # COLS unit the executor sets each one that equals the output's full W (> 1) to the band's cols; one of 1 (a
    # broadcast along W) stays.
    COL_DIMS: ClassVar[tuple[str, ...]] = ()
    # "pixel" kinds: parameters that must be 0 for an op of the kind in a COLS unit, because a nonzero one indexes a
    # table by the full tensor's column (PRelu's per-position slope stride, a per-element (de)quantization).
    COL_ZERO: ClassVar[tuple[str, ...]] = ()
    # "pixel" kinds: parameters that name an axis of the rank-4 physical view ``{N, H, W, C}`` the op works along
    # (Concat's axis): in a COLS unit it must not be W (2), since a band holds only some of the columns.
    COL_AXIS: ClassVar[tuple[str, ...]] = ()
    # The kernel may run with its output over an input of the same shape, dtype and layout (out == in): it writes
    # every output element only after reading the input elements at that same index, in both dtypes and every target
    # variant. The planner then lets the output take the home of such an input whose last use is this op
    # (docs/memory-planning.md "In-place ops").
    in_place: ClassVar[bool] = False
    # The runtime may run the op with its output over its own (larger or equal) input in row pieces: it computes a
    # few output rows at a time into a temporary at the start of the op's scratch (param ``ip_rows`` rows) and stores
    # each once the input rows under its bytes are no longer read (docs/memory-planning.md "Window ops in place").
    # :meth:`piecewise_over` says for which input, :meth:`piece_rows` how many rows the temporary needs.
    piecewise_in_place: ClassVar[bool] = False
    # The output may take the home of its first input although it is larger: the input's bytes are already the
    # output's leading bytes, so the kernel leaves them where they are and writes only the rest (a Concat whose
    # first input is the output's prefix, docs/memory-planning.md "Joins in place"). :meth:`prefix_over` says when.
    prefix_in_place: ClassVar[bool] = False
    # With :attr:`in_place`: an input that is an alias naming its root's bytes whole (a Reshape of another tensor)
    # may give that root's home too (a structural Transpose after a layout Reshape).
    in_place_alias: ClassVar[bool] = False
    # The kernel reads an int8 (per-tensor) activation input itself as its real values, ``(float)(q - zp) * scale``
    # in float32 exactly as the dequantize kernel computes them, and computes in float from there: pass float_tail
    # then puts no DequantizeLinear in front of it, so no float copy of the input is needed (NonMaxSuppression).
    dequantizes_inputs: ClassVar[bool] = False

    # -- the operator table of docs/operators.md (written from these by ``python -m tigris.ops.doc``) ------------
    # ONNX operator -> the forms and attributes of it this kind runs, as the operator reaches the kind after the
    # passes (a Conv with group == C_in reaches dwconv). Every IR op type of ``ir_ops`` that is an ONNX operator
    # name must appear here, so a new kind cannot be left out of the table.
    ONNX_OPS: ClassVar[dict[str, str]] = {}
    # The activation dtypes the kernels compute in (a dict per ONNX operator where they differ).
    DTYPES: ClassVar[tuple[str, ...] | dict[str, tuple[str, ...]]] = ("float32", "int8")
    # How the int8 result compares with ONNX Runtime evaluating the QDQ model as written, as the kind's tests
    # assert: "bit-exact" or "<= 1 LSB", optionally with a condition (a dict per ONNX operator where they differ).
    INT8_EXACTNESS: ClassVar[str | dict[str, str]] = "<= 1 LSB"
    # The tiling class stated in words when :meth:`tiling`, :meth:`rows_needed` or :meth:`mixes_rows` refine
    # ``TILING`` (None: ``TILING`` says it all).
    TILING_DOC: ClassVar[str | None] = None

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        raise NotImplementedError

    # -- support -------------------------------------------------------------------------------------------------
    def unsupported(self, graph: AnalyzedGraph, op: Op) -> str | None:
        """Why the runtime cannot run ``op`` as stated, or None: first its operands and attributes
        (:meth:`check_operands`), then the dtype and rank of its activations, then dtype-specific limits
        (:meth:`check_dtype`)."""
        why = self.check_operands(graph, op)
        if why:
            return why
        acts = [n for n in (*op.inputs, *op.outputs) if n and n not in graph.weights]
        deep = [n for n in acts if len(graph.tensors[n].shape) > 4]
        if deep:
            return f"rank-{len(graph.tensors[deep[0]].shape)} tensor {deep[0]} (runtime tensors have at most 4 dimensions)"
        kinds = set()
        for n in acts:
            t = graph.tensors[n]
            if t.dtype == "float32" and t.quant is None:
                kinds.add("float")
            elif t.dtype == "int8" and t.quant is not None:
                if t.quant.per_channel:
                    return f"activation {n} is quantized per channel"
                kinds.add("int8")
            else:
                return f"activation {n} has dtype {t.dtype}{' with' if t.quant else ' without'} quantization"
        if len(kinds) > 1:
            floats = [n for n in acts if graph.tensors[n].dtype == "float32"]
            return f"mixes int8 and float activations (float {floats[0]} between quantized ops was not folded)"
        return self.check_dtype(graph, op, "int8" in kinds)

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        """Operands that must be constants or folded, attributes a pass must have made explicit."""
        ins = [i for i in op.inputs if i]
        if self.SINGLE_INPUT and len(ins) != 1:
            return f"operand(s) {ins[1:]} were not folded into attributes"
        return None

    def check_dtype(self, graph: AnalyzedGraph, op: Op, int8: bool) -> str | None:
        """Limits of the float or int8 kernel once the activations are known to be one dtype."""
        return None

    # -- tiling (the planner's questions) ------------------------------------------------------------------------
    def tiling(self, graph: AnalyzedGraph, op: Op) -> Tiling:
        return self.TILING

    def window(self, op: Op) -> tuple[int, int, int, int] | None:
        """(kernel, stride, dilation, leading pad) along the row axis of a spatial op; None for other ops."""
        return None

    def rows_needed(self, op: Op, a: int, b: int) -> tuple[int, int]:
        """Input rows (unclipped) that output rows ``[a, b)`` read: the window for spatial ops, the same rows for
        pointwise ones (spatial rule 5). The planner clips them to the input."""
        win = self.window(op)
        if win is None:
            return a, b
        k, s, d, p = win
        return a * s - p, (b - 1) * s - p + (k - 1) * d + 1

    def input_rows_of(self, graph: AnalyzedGraph, op: Op, name: str, a: int, b: int) -> tuple[int, int] | None:
        """Input rows (unclipped, possibly none) of activation input ``name`` that output rows ``[a, b)`` read when
        they depend on which input it is (a Concat along the rows: each input supplies the rows it covers); None
        when :meth:`rows_needed` states them for every input."""
        return None

    def whole_inputs(self, graph: AnalyzedGraph, op: Op) -> tuple[int, ...]:
        """Positions of the activation inputs a band of the op reads whole, in every tile (a product's second
        operand): their band is every row, whatever the output band. Empty for ops that read rows by
        :meth:`rows_needed` only."""
        return ()

    def same_rows_inputs(self, graph: AnalyzedGraph, op: Op) -> tuple[int, ...]:
        """Positions of the activation inputs a band of the op reads at exactly its output's rows and columns (an
        accumulator the op adds into, ``convacc``'s fourth input), whatever its window: their band is the output's.
        Empty for ops that read every input by :meth:`rows_needed` / :meth:`cols_needed`."""
        return ()

    def piecewise_over(self, graph: AnalyzedGraph, op: Op, x: str) -> bool:
        """Whether the output of ``op`` may take the home of its input ``x`` piecewise (only when
        :attr:`piecewise_in_place`): the planner still checks that ``x`` dies at the op."""
        return False

    def in_place_over(self, graph: AnalyzedGraph, op: Op, x: str) -> bool:
        """Whether the output of ``op`` may take the home of its input ``x`` (only when :attr:`in_place`): by
        default when they have one shape, dtype and layout (the caller checks the byte sizes and that ``x`` dies at
        the op)."""
        tx, ty = graph.tensors[x], graph.tensors[op.outputs[0]]
        return (tx.dtype, tuple(tx.shape), tx.layout) == (ty.dtype, tuple(ty.shape), ty.layout)

    def prefix_over(self, graph: AnalyzedGraph, op: Op, x: str) -> bool:
        """Whether the output of ``op`` may take the home of its input ``x`` as a prefix (only when
        :attr:`prefix_in_place`): ``x``'s bytes are the output's first bytes exactly as the kernel would write them,
        so it writes the rest only. The planner still checks that ``x`` dies at the op."""
        return False

    def piece_rows(self, op: Op, in_band: tuple[int, int], out_band: tuple[int, int], in_row_bytes: int,
                   out_row_bytes: int) -> int:
        """Rows of the temporary with which the output band is written over the input band in pieces, the fewest
        that never stall (``tigris.ops._geometry.piecewise_in_place``)."""
        from tigris.ops._geometry import piece_rows, window_piece_rows

        win = self.window(op)
        if win is not None:  # the schedule depends on the bands only through the stride, their offset and length
            _k, st, _d, pad = win
            return window_piece_rows(st, out_band[0] * st - pad - in_band[0], out_band[1] - out_band[0],
                                     in_row_bytes, out_row_bytes)
        return piece_rows(in_band, out_band, in_row_bytes, out_row_bytes, lambda j: self.rows_needed(op, j, j + 1)[0])

    def mixes_rows(self, graph: AnalyzedGraph, op: Op) -> str | None:
        """Why an otherwise pointwise op cannot run on row bands (an output row reads other rows), or None."""
        return None

    # -- column tiling (the planner's questions about W; docs/memory-planning.md "Column tiles") ------------------
    def col_local(self, graph: AnalyzedGraph, op: Op) -> str | None:
        """Why ``op`` cannot run on column bands (its output column ``c`` does not read only a window of input
        columns around ``c``), or None when it can: per-pixel along W (:meth:`col_window` None) or windowed along W.
        Only kinds whose kernels compute each output pixel from its own window, with nothing indexed by the absolute
        column, answer None."""
        return f"{op.op_type} is not column-local"

    def col_window(self, op: Op) -> tuple[int, int, int, int] | None:
        """(kernel, stride, dilation, leading pad) along the W axis of a windowed column-local op; None for a
        per-pixel one."""
        return None

    def cols_needed(self, op: Op, a: int, b: int) -> tuple[int, int]:
        """Input columns (unclipped) that output columns ``[a, b)`` read: the W window, or the same columns for a
        per-pixel op. The planner clips them to the input (an input of width 1 is read whole)."""
        win = self.col_window(op)
        if win is None:
            return a, b
        k, s, d, p = win
        return a * s - p, (b - 1) * s - p + (k - 1) * d + 1

    # -- channel groups (docs/memory-planning.md "Channel tails") -------------------------------------------------
    def channel_local(self, graph: AnalyzedGraph, op: Op) -> bool:
        """Whether output channel ``c`` (logical axis 1) of ``op`` reads channel ``c`` of its one activation input
        only, by arithmetic that does not depend on which channels or how many there are: the same op on a slice of
        channels ``[a, b)`` of its input then computes exactly channels ``[a, b)`` of its output, with the same
        parameters and constants (per-tensor quantization, no per-channel constant). A channel-group split takes
        such ops after the split op along, one copy per group (``tigris.passes.weight_split.channel_tail``)."""
        return False

    def accumulator_bytes(self, graph: AnalyzedGraph, op: Op) -> int:
        """Scratch an accumulating op keeps from the first tile to the last (only when :attr:`accumulates`)."""
        return 0

    # -- zero-copy views (docs/memory-planning.md "Views") ----------------------------------------------------
    def byte_views(self, graph: AnalyzedGraph, op: Op) -> tuple[str, tuple[tuple[str, int], ...]] | None:
        """When the op moves bytes unchanged between one contiguous buffer and contiguous runs of it: ``(base,
        ((member, byte offset in base), ...))``, every member a run of ``nbytes(member)`` bytes of ``base`` at that
        offset, holding exactly the bytes the op would copy. A Concat's inputs laid side by side in its output (the
        output is the base), a Slice's output as one run of its input (the input is the base). The planner may then
        run the op as a view: no kernel, the members share the base's buffer. None: the op computes or moves
        bytes into a layout of its own."""
        return None

    # -- costs ---------------------------------------------------------------------------------------------------
    def macs(self, graph: AnalyzedGraph, op: Op, out_rows: int | None = None) -> int:
        """Multiply-accumulates of a weighted product for ``out_rows`` output rows (all when None); 0 for ops that
        multiply by no weights."""
        return 0

    # -- activation fusion ---------------------------------------------------------------------------------------
    def fuses_activation(self, op: Op) -> bool:
        """The kernel clamps ``op``'s output with a fused activation (attribute ``fused_activation``, set by the
        pass activation_fuse)."""
        return False

    def as_fused_activation(self, op: Op) -> str | None:
        """The ``fused_activation`` name a producer takes over when it absorbs ``op`` (``relu``, ``relu6``), or
        None when ``op`` is not a fusable activation."""
        return None

    def reference(self, low: Lowered, inputs: Sequence["TensorView"], out: "TensorView") -> None:
        """Compute ``out.rows`` rows of the output into ``out.data`` from the input views, exactly like the C kernel."""
        raise NotImplementedError

    def scratch_bytes(self, low: Lowered, graph: AnalyzedGraph, out_rows: int) -> int:
        """Fast-memory scratch the C kernel needs to produce ``out_rows`` output rows (mirrors the C
        ``tgrs_<kind>_scratch_size``). The planner places it in the fast arena."""
        return 0

    def band_scratch_bytes(self, low: Lowered, graph: AnalyzedGraph, out_rows: int, out_cols: int) -> int:
        """:meth:`scratch_bytes` for an output band of ``out_rows`` rows by ``out_cols`` columns (a COLS unit's
        band, presented to the kernel as a tensor of that width); never more than the full width's."""
        return self.scratch_bytes(low, graph, out_rows)

    # -- weight arrangements (docs/format.md "Weight arrangements") -------------------------------------------------
    def arrange(self, low: Lowered, target: str) -> Lowered:
        """``low`` with its weights in the order ``target``'s kernels read fastest, and the arrangement id in the
        kind's ``arrange`` parameter; ``low`` itself when the kind (or this op) has no arrangement for the target.
        An arrangement only permutes bytes: every constant keeps its length, so the memory plan is the same."""
        return low

    def weight_bytes(self, low: Lowered) -> int:
        """Bytes the op's constants take in a unit's fast weight prefix (and in the plan): every blob rounded up to
        the 16-byte alignment of the format. An alias has none."""
        return 0 if low.alias else sum(_align16(int(np.asarray(c).nbytes)) for c in low.consts.values())

    def param_vector(self, low: Lowered) -> list[int]:
        unknown = set(low.params) - set(self.PARAMS)
        if unknown:
            raise ValueError(f"{self.name}: unknown params {sorted(unknown)}")
        vec = [int(low.params.get(p, 0)) for p in self.PARAMS]
        for v in vec:
            if not -(2**31) <= v < 2**31:
                raise ValueError(f"{self.name}: param out of int32 range in {low.op_name}")
        return vec + [0] * (MAX_PARAMS - len(vec))


def cols_reason(graph: AnalyzedGraph, op: Op, per_pixel: bool) -> str | None:
    """The tensor conditions of a column-local op (``OpKind.col_local``), or why they fail: its output and every
    activation input are single-image ``nhwc`` tensors (the runtime cuts their physical axis 2). A per-pixel op's
    activation inputs also have the output's width or width 1 (read whole), and none of its constants varies along
    W (logical last axis 1): a kernel indexes a broadcast operand from the band's own column 0, so an operand that
    differs from column to column would be read at the wrong columns."""
    out = graph.tensors[op.outputs[0]]
    if out.layout != "nhwc" or len(out.shape) != 4 or out.shape[0] != 1:
        return f"output {out.name} is not a single nhwc image"
    for name in op.inputs:
        if not name:
            continue
        if graph.is_const(name):
            shape = tuple(np.asarray(graph.weights[name]).shape) if name in graph.weights else ()
            if per_pixel and shape and shape[-1] != 1:
                return f"constant {name} varies along W"
            continue
        t = graph.tensors[name]
        if t.layout != "nhwc" or len(t.shape) != 4 or t.shape[0] != 1:
            return f"input {name} is not a single nhwc image"
        if per_pixel and t.shape[3] not in (1, out.shape[3]):
            return f"input {name} has another width"
    return None


@dataclass
class TensorView:
    """A physical buffer holding rows ``[row0, row0 + rows)`` of a tensor (the NumPy twin of ``tgrs_tview``).

    ``data`` has the physical shape with the row axis cut to ``rows``: ``[N, rows, W, C]`` for nhwc; for plain tensors
    the shape padded on the left with ones to rank 4, so the row axis is axis 1 (and untiled: row0 = 0, rows = full).
    ``dims`` is the full physical shape (rank 4). ``scale``/``zero_point`` describe per-tensor quantization (int8).
    """

    data: np.ndarray
    dims: tuple[int, int, int, int]
    row0: int = 0
    rows: int = -1
    dtype: str = "float32"
    scale: float = 1.0
    zero_point: int = 0

    def __post_init__(self) -> None:
        if self.rows < 0:
            self.rows = self.dims[1]
