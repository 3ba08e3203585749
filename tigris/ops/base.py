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
from typing import ClassVar, Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op

MAX_PARAMS = 24
MAX_CONSTS = 4
MAX_INPUTS = 4

# Dtype codes shared with C (tgrs_dtype). Order is part of the plan format.
DTYPE_CODES = {"float32": 1, "int8": 2, "uint8": 3, "int32": 4, "int16": 5}


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


class OpKind:
    """Base class of a runtime kernel family. Subclasses set the class attributes and implement the methods."""

    name: ClassVar[str]  # e.g. "conv"; C enum TGRS_OP_CONV
    ir_ops: ClassVar[tuple[str, ...]]  # normalized IR op types this kind lowers
    PARAMS: ClassVar[tuple[str, ...]] = ()
    CONSTS: ClassVar[tuple[str, ...]] = ()

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        raise NotImplementedError

    def reference(self, low: Lowered, inputs: Sequence["TensorView"], out: "TensorView") -> None:
        """Compute ``out.rows`` rows of the output into ``out.data`` from the input views, exactly like the C kernel."""
        raise NotImplementedError

    def scratch_bytes(self, low: Lowered, graph: AnalyzedGraph, out_rows: int) -> int:
        """Fast-memory scratch the C kernel needs to produce ``out_rows`` output rows (mirrors the C
        ``tgrs_<kind>_scratch_size``). The planner places it in the fast arena."""
        return 0

    def param_vector(self, low: Lowered) -> list[int]:
        unknown = set(low.params) - set(self.PARAMS)
        if unknown:
            raise ValueError(f"{self.name}: unknown params {sorted(unknown)}")
        vec = [int(low.params.get(p, 0)) for p in self.PARAMS]
        for v in vec:
            if not -(2**31) <= v < 2**31:
                raise ValueError(f"{self.name}: param out of int32 range in {low.op_name}")
        return vec + [0] * (MAX_PARAMS - len(vec))


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
