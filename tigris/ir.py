"""The compiler's intermediate representation: a small, typed graph.

Every stage after loading reads and returns an :class:`AnalyzedGraph`. Passes are pure: they build a new graph
(``graph.replace(...)``) rather than mutating the one they were given, so a failed pass never leaves a half-rewritten
graph behind and tests can compare before and after.

Conventions (the rest of the compiler relies on them):

* ``Tensor.shape`` is always the ONNX *logical* shape (NCHW for images, NCW for 1-D signals), whatever the memory
  layout. ``Tensor.layout`` says how the runtime stores it: ``"nhwc"`` (rank 4, channels last), ``"nwc"`` (rank 3,
  channels last) or ``"plain"`` (row-major in logical order). Layouts are assigned by the layout pass at the end of
  normalization; before that every tensor is ``"plain"``.
* Constants (weights, biases, folded tables) live in ``AnalyzedGraph.weights`` keyed by tensor name and always in
  ONNX layout (OIHW for conv weights). Stage 7 transposes them for the runtime.
* ``Op.inputs`` may contain ``""`` for an omitted optional input, exactly like ONNX.
* Quantized tensors carry a :class:`QuantParam`; their ``dtype`` is the stored integer type (``int8`` for activations
  and weights, ``int32`` for biases). A float tensor has ``quant is None``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import numpy as np

if TYPE_CHECKING:
    from tigris.plan.types import NoFit

# Element sizes of the dtypes the compiler understands.
DTYPE_SIZE = {
    "float32": 4,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "bool": 1,
}

LAYOUTS = ("plain", "nhwc", "nwc")


@dataclass(frozen=True)
class QuantParam:
    """Affine quantization: real = (q - zero_point) * scale.

    ``scale`` and ``zero_point`` are 1-D arrays: length 1 for per-tensor, length C for per-channel along ``axis``
    (an axis of the logical ONNX shape).
    """

    scale: np.ndarray
    zero_point: np.ndarray
    axis: int | None = None

    @property
    def per_channel(self) -> bool:
        return self.scale.size > 1

    def __eq__(self, other: object) -> bool:  # arrays make the generated __eq__ ambiguous
        if not isinstance(other, QuantParam):
            return NotImplemented
        return (
            self.axis == other.axis
            and np.array_equal(self.scale, other.scale)
            and np.array_equal(self.zero_point, other.zero_point)
        )

    def __hash__(self) -> int:
        return hash((self.axis, self.scale.tobytes(), self.zero_point.tobytes()))


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    quant: QuantParam | None = None
    layout: str = "plain"

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * DTYPE_SIZE[self.dtype]


@dataclass(frozen=True)
class Op:
    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, Any] = field(default_factory=dict)

    def with_(self, **changes: Any) -> "Op":
        return replace(self, **changes)


@dataclass(frozen=True)
class Boundary:
    """What the model declares at one graph input or output, kept so the plan presents the same interface.

    ``dtype`` is the ONNX-declared element type (e.g. ``uint8`` even when the tensor is restated as int8 inside);
    ``quant`` is the declared quantization of that boundary when the model states one.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    quant: QuantParam | None = None
    # a variable row count (NonMaxSuppression): ``shape[0]`` is the maximum; the plan marks it IoFlag.ROWS
    rows: bool = False


@dataclass
class AnalyzedGraph:
    name: str
    tensors: dict[str, Tensor]
    ops: list[Op]
    inputs: list[str]
    outputs: list[str]
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    # Declared interface of the original model, keyed by graph input/output name.
    boundary: dict[str, Boundary] = field(default_factory=dict)
    # Notes a stage wants the user to see (e.g. "input x axis 0 bound to 1").
    notes: list[str] = field(default_factory=list)
    # The integer arithmetic the int8 kernels reproduce (docs/numerics.md, "Numerics contracts"): "onnx" or "tflm".
    # A loader sets its source's default (the TFLite importer: "tflm"); ``api.prepare(numerics=...)`` overrides it.
    numerics: str = "onnx"
    # The format the model was read from: "onnx" or "tflite" (the TFLite importer sets it). Later stages that follow
    # the source's own arithmetic (e.g. the default numerics of a TFLite model) read it here.
    source: str = "onnx"
    # The float precision the model as written computes in: "float32", or "float16" for a float16 model that the
    # loader widened to float32 (tigris/load/float16.py); verify judges such a model at the float16 tolerance.
    precision: str = "float32"
    # How the plan stores the float weights of conv, dwconv, fc, convtranspose and matmul: "float32", or
    # "float16" (IEEE halves, half the flash; the kernels widen them to float32). ``api.prepare(weights=...)`` sets
    # it; a float16 model stores float16 by default (docs/format.md "Float16 weights").
    weights_dtype: str = "float32"

    # -- construction helpers ------------------------------------------------------------------------------------
    def replace(self, **changes: Any) -> "AnalyzedGraph":
        """A shallow copy with some fields replaced; containers not replaced are copied so the result is independent."""
        base = dict(
            name=self.name,
            tensors=dict(self.tensors),
            ops=list(self.ops),
            inputs=list(self.inputs),
            outputs=list(self.outputs),
            weights=dict(self.weights),
            boundary=dict(self.boundary),
            notes=list(self.notes),
            numerics=self.numerics,
            source=self.source,
            precision=self.precision,
            weights_dtype=self.weights_dtype,
        )
        base.update(changes)
        return AnalyzedGraph(**base)

    # -- queries -------------------------------------------------------------------------------------------------
    def is_const(self, name: str) -> bool:
        return name in self.weights

    def producer_map(self) -> dict[str, int]:
        """tensor name -> index of the op that writes it."""
        out: dict[str, int] = {}
        for i, op in enumerate(self.ops):
            for t in op.outputs:
                if t:
                    out[t] = i
        return out

    def consumer_map(self) -> dict[str, list[int]]:
        """tensor name -> indices of ops that read it (in op order, duplicates removed)."""
        out: dict[str, list[int]] = {}
        for i, op in enumerate(self.ops):
            for t in op.inputs:
                if t and (not out.get(t) or out[t][-1] != i):
                    out.setdefault(t, []).append(i)
        return out

    def activations(self) -> Iterator[Tensor]:
        """Every non-constant tensor that some op reads or writes, or that is a graph input/output."""
        seen: set[str] = set()
        names: Iterable[str] = list(self.inputs) + [t for op in self.ops for t in (*op.inputs, *op.outputs)]
        for n in names:
            if n and n not in seen and n not in self.weights:
                seen.add(n)
                yield self.tensors[n]

    def op_by_name(self, name: str) -> Op:
        for op in self.ops:
            if op.name == name:
                return op
        raise KeyError(name)


class TigrisError(Exception):
    """An error the user caused (bad model, bad flag, bad plan). The CLI prints it as one line and exits 2.

    ``where`` names the file, node or tensor.
    """

    exit_code = 2

    def __init__(self, what: str, where: str | None = None):
        self.what = what
        self.where = where
        super().__init__(f"{what} ({where})" if where else what)


class TigrisWarning(UserWarning):
    """Something the user should know that does not stop compilation; the CLI prints it as one ``warning:`` line."""


class UnsupportedModelError(TigrisError):
    """The model uses operators the runtime cannot execute. ``nodes`` lists every one, not just the first."""

    def __init__(self, nodes: list[dict[str, str]], where: str | None = None):
        self.nodes = nodes
        names = ", ".join(f"{n['node']} ({n['op']})" for n in nodes[:5])
        more = f" and {len(nodes) - 5} more" if len(nodes) > 5 else ""
        super().__init__(f"{len(nodes)} unsupported node(s): {names}{more}", where)


class DoesNotFitError(TigrisError):
    """The model cannot be planned or written within a budget. Exit code 1.

    ``nofit`` is the planner's :class:`~tigris.plan.types.NoFit` (stage, op, need_bytes, cause) when the planner is
    what found no plan; None for other budgets (flash, slow memory of a written plan)."""

    exit_code = 1

    def __init__(self, what: str, where: str | None = None, nofit: NoFit | None = None):
        self.nofit = nofit
        super().__init__(what, where)


def valid_rows(a: np.ndarray) -> int:
    """The valid count of a row-counted output (IoFlag ROWS) stored at its maximum size: the rows before the first
    whose elements are all -1."""
    flat = a.reshape(a.shape[0], -1) if a.ndim else a.reshape(1, 1)
    pad = np.all(flat == -1, axis=1)
    return int(np.argmax(pad)) if pad.any() else int(a.shape[0])
