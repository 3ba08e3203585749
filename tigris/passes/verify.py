"""IR verifier: structural invariants every pass must preserve. Tests run it after every pass.

Checks (each problem is reported, not only the first):
1. Op names are unique; every tensor an op or the graph names has an entry in ``graph.tensors``.
2. Every op input is a graph input, a constant, or the output of an *earlier* op (ops are in execution order).
3. Every tensor is produced at most once; graph inputs and constants are not produced by ops; every graph output is
   produced by an op (or is a graph input).
4. No dangling tensors: every ``tensors`` entry is referenced by an op, the graph interface, or ``weights``; every
   op has at least one output that is read or is a graph output (no dead ops).
5. Constants' tensor entries match their arrays (shape and dtype).
6. Shapes agree for the ops whose output shape is determined by the inputs and the normalized attributes
   (elementwise with broadcasting, reshape family, Conv/pool family once their attributes are explicit, Gemm,
   Concat, Transpose, GlobalAveragePool).
7. Quantization parameters are well formed: positive finite scales, zero points in the dtype's range, per-channel
   length equal to the quantized axis.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor

_UNARY = {"Relu", "Relu6", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "Clip", "LeakyRelu", "PRelu", "Softmax",
          "QuantizeLinear", "DequantizeLinear", "Identity", "Dropout", "Neg", "Abs", "Exp", "Sqrt"}
_BINARY = {"Add", "Mul", "Sub", "Div", "Max", "Min", "Pow"}
_RESHAPE = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}
_ZP_RANGE = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-(2**31), 2**31 - 1), "int16": (-32768, 32767)}


class IRVerifyError(AssertionError):
    """The IR broke an invariant; ``problems`` lists them all."""

    def __init__(self, problems: list[str], where: str = ""):
        self.problems = problems
        head = f"{where}: " if where else ""
        more = f" (+{len(problems) - 8} more)" if len(problems) > 8 else ""
        super().__init__(head + "; ".join(problems[:8]) + more)


def verify(graph: AnalyzedGraph, where: str = "") -> None:
    probs = problems(graph)
    if probs:
        raise IRVerifyError(probs, where)


def problems(graph: AnalyzedGraph) -> list[str]:
    out: list[str] = []
    T = graph.tensors
    names = [op.name for op in graph.ops]
    dup = {n for n in names if names.count(n) > 1}
    for n in sorted(dup):
        out.append(f"op name {n!r} is used more than once")

    available = set(graph.inputs) | set(graph.weights)
    produced: set[str] = set()
    read: set[str] = set(graph.outputs)
    for op in graph.ops:
        for t in op.inputs:
            if not t:
                continue
            read.add(t)
            if t not in T:
                out.append(f"{op.name}: input {t!r} has no tensor entry")
            if t not in available:
                out.append(f"{op.name}: input {t!r} is not a graph input, a constant, or produced earlier")
        for t in op.outputs:
            if not t:
                continue
            if t not in T:
                out.append(f"{op.name}: output {t!r} has no tensor entry")
            if t in produced:
                out.append(f"{op.name}: output {t!r} is produced twice")
            if t in graph.inputs or t in graph.weights:
                out.append(f"{op.name}: output {t!r} is a graph input or constant")
            produced.add(t)
            available.add(t)
    for o in graph.outputs:
        if o not in produced and o not in graph.inputs:
            out.append(f"graph output {o!r} is not produced")
        if o not in T:
            out.append(f"graph output {o!r} has no tensor entry")
    for i in graph.inputs:
        if i not in T:
            out.append(f"graph input {i!r} has no tensor entry")
    refd = read | produced | set(graph.inputs) | set(graph.weights)
    for t in T:
        if t not in refd:
            out.append(f"tensor {t!r} is dangling (nothing refers to it)")
    for op in graph.ops:
        outs = [t for t in op.outputs if t]
        if outs and not any(t in read for t in outs):
            out.append(f"{op.name}: no output is read (dead op)")
    for k, v in graph.weights.items():
        t = T.get(k)
        if t is None:
            out.append(f"constant {k!r} has no tensor entry")
            continue
        if tuple(v.shape) != t.shape:
            out.append(f"constant {k!r}: array shape {tuple(v.shape)} != tensor shape {t.shape}")
        dt = "bool" if v.dtype == np.bool_ else str(v.dtype)
        if dt != t.dtype:
            out.append(f"constant {k!r}: array dtype {dt} != tensor dtype {t.dtype}")
    for t in T.values():
        out.extend(_quant_problems(t))
    for op in graph.ops:
        if all((not n) or n in T for n in (*op.inputs, *op.outputs)):
            try:
                msg = _shape_problem(graph, op)
            except Exception as e:  # a malformed attribute is itself a problem worth naming
                msg = f"cannot check shapes ({type(e).__name__}: {e})"
            if msg:
                out.append(f"{op.name} ({op.op_type}): {msg}")
    return out


def _quant_problems(t: Tensor) -> list[str]:
    q = t.quant
    if q is None:
        return []
    out = []
    s = np.asarray(q.scale, dtype=np.float64)
    z = np.asarray(q.zero_point)
    if s.ndim != 1 or z.ndim != 1 or s.size != z.size or s.size == 0:
        out.append(f"tensor {t.name!r}: scale/zero_point must be 1-D of equal length")
        return out
    if not np.all(np.isfinite(s)) or np.any(s <= 0):
        out.append(f"tensor {t.name!r}: scales must be positive and finite")
    lo, hi = _ZP_RANGE.get(t.dtype, (None, None))
    if lo is None:
        out.append(f"tensor {t.name!r}: quantized tensor has non-integer dtype {t.dtype}")
    elif np.any(z < lo) or np.any(z > hi):
        out.append(f"tensor {t.name!r}: zero point outside {t.dtype} range")
    if s.size > 1:
        if q.axis is None or not (0 <= q.axis < len(t.shape)):
            out.append(f"tensor {t.name!r}: per-channel quantization needs a valid axis")
        elif t.shape[q.axis] != s.size:
            out.append(f"tensor {t.name!r}: {s.size} scales for axis {q.axis} of size {t.shape[q.axis]}")
    return out


def _conv_out(x: tuple[int, ...], k: list[int], s: list[int], d: list[int], p: list[int], ceil: bool) -> list[int]:
    n = len(k)
    out = []
    for i in range(n):
        eff = (k[i] - 1) * d[i] + 1
        num = x[i] + p[i] + p[i + n] - eff
        o = (-(-num // s[i]) if ceil else num // s[i]) + 1
        if ceil and (o - 1) * s[i] >= x[i] + p[i]:
            o -= 1  # ONNX: with ceil_mode the last window must start inside the input or the begin pad
        out.append(o)
    return out


def _shape_problem(graph: AnalyzedGraph, op: Op) -> str | None:
    T = graph.tensors
    ins = [T[n].shape if n else None for n in op.inputs]
    outs = [T[n].shape for n in op.outputs if n]
    if not outs:
        return None
    y = outs[0]
    t = op.op_type
    if t in _UNARY and ins and ins[0] is not None and t not in ("QuantizeLinear", "DequantizeLinear", "Dropout"):
        return None if ins[0] == y else f"output shape {y} != input shape {ins[0]}"
    if t in _BINARY and len(ins) == 2 and all(s is not None for s in ins):
        try:
            b = tuple(np.broadcast_shapes(ins[0], ins[1]))
        except ValueError:
            return f"inputs {ins[0]} and {ins[1]} do not broadcast"
        return None if b == y else f"output shape {y} != broadcast shape {b}"
    if t in _RESHAPE:
        n_in, n_out = int(np.prod(ins[0])), int(np.prod(y))
        return None if n_in == n_out else f"reshape changes the element count ({ins[0]} -> {y})"
    if t in ("Conv", "DepthwiseConv", "Conv1D", "MaxPool", "AveragePool") and "pads" in op.attrs \
            and "kernel_shape" in op.attrs and "strides" in op.attrs:
        x = ins[0]
        k = [int(v) for v in op.attrs["kernel_shape"]]
        n = len(k)
        if len(x) != n + 2 or len(op.attrs["pads"]) != 2 * n:
            return f"rank {len(x)} input does not match a {n}-D kernel"
        d = [int(v) for v in op.attrs.get("dilations", [1] * n)]
        sp = _conv_out(x[2:], k, [int(v) for v in op.attrs["strides"]], d, [int(v) for v in op.attrs["pads"]],
                       bool(op.attrs.get("ceil_mode", 0)))
        if t in ("MaxPool", "AveragePool"):
            exp = (x[0], x[1], *sp)
        else:
            w = ins[1]
            exp = (x[0], w[0], *sp)
            g = int(op.attrs.get("group", 1))
            if w[1] * g != x[1]:
                return f"weight {w} with group {g} does not match {x[1]} input channels"
        return None if tuple(exp) == y else f"output shape {y} != computed {tuple(exp)}"
    if t == "GlobalAveragePool":
        exp = (*ins[0][:2], *([1] * (len(ins[0]) - 2)))
        return None if exp == y else f"output shape {y} != {exp}"
    if t == "Gemm" and "fused_activation" in op.attrs and len(ins) >= 2 and ins[1] is not None:
        a, w = ins[0], ins[1]
        if len(a) != 2 or len(w) != 2 or a[1] != w[1]:
            return f"A {a} and W {w} are not [N,K] x [OC,K]"
        return None if y == (a[0], w[0]) else f"output shape {y} != {(a[0], w[0])}"
    if t == "Concat" and "axis" in op.attrs and not op.attrs.get("axis_physical"):
        ax = int(op.attrs["axis"])
        r = len(y)
        ax = ax + r if ax < 0 else ax
        total = sum(s[ax] for s in ins if s is not None)
        return None if total == y[ax] else f"concat sizes sum to {total}, output has {y[ax]}"
    if t == "Transpose" and "perm" in op.attrs:
        exp = tuple(ins[0][p] for p in op.attrs["perm"])
        return None if exp == y else f"output shape {y} != permuted {exp}"
    return None
