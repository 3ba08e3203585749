"""Small graph-editing helpers the passes share. All of them return new values; none mutates its argument."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from tigris.ir import AnalyzedGraph, Op, QuantParam, Tensor


@dataclass(frozen=True)
class Decline:
    """A rewrite a pass considered and did not make: which node, and why (tests assert the reason)."""

    node: str
    reason: str

    def __str__(self) -> str:
        return f"{self.node}: {self.reason}"


@dataclass(frozen=True)
class PassResult:
    """What one pass returns: the new graph, how many nodes it rewrote, and the rewrites it declined."""

    graph: AnalyzedGraph
    rewritten: int = 0
    declined: tuple[Decline, ...] = ()

    @property
    def changed(self) -> bool:
        return self.rewritten > 0


def consumers(graph: AnalyzedGraph, name: str) -> list[int]:
    return [i for i, op in enumerate(graph.ops) if name in op.inputs]


def producer(graph: AnalyzedGraph, name: str) -> int | None:
    for i, op in enumerate(graph.ops):
        if name in op.outputs:
            return i
    return None


def is_boundary(graph: AnalyzedGraph, name: str) -> bool:
    return name in graph.inputs or name in graph.outputs


def const_value(graph: AnalyzedGraph, name: str) -> np.ndarray | None:
    return graph.weights.get(name) if name else None


def fresh_name(graph: AnalyzedGraph, base: str, taken: Iterable[str] = ()) -> str:
    used = set(graph.tensors) | {op.name for op in graph.ops} | set(taken)
    if base not in used:
        return base
    k = 1
    while f"{base}_{k}" in used:
        k += 1
    return f"{base}_{k}"


def set_const(graph: AnalyzedGraph, name: str, value: np.ndarray, quant: QuantParam | None = None) -> None:
    """Add or replace a constant in ``graph`` (a copy the caller owns)."""
    value = np.asarray(value)
    graph.weights[name] = value
    dt = "bool" if value.dtype == np.bool_ else str(value.dtype)
    graph.tensors[name] = Tensor(name, tuple(int(d) for d in value.shape), dt, quant)


def replace_uses(ops: list[Op], old: str, new: str) -> list[Op]:
    """Every op input ``old`` now reads ``new``."""
    out = []
    for op in ops:
        if old in op.inputs:
            op = op.with_(inputs=tuple(new if t == old else t for t in op.inputs))
        out.append(op)
    return out


def rename_tensor(ops: list[Op], old: str, new: str) -> list[Op]:
    """Rename a tensor everywhere it appears (as an input or an output)."""
    out = []
    for op in ops:
        if old in op.inputs or old in op.outputs:
            op = op.with_(inputs=tuple(new if t == old else t for t in op.inputs),
                          outputs=tuple(new if t == old else t for t in op.outputs))
        out.append(op)
    return out


def bypass(graph: AnalyzedGraph, index: int, data_input: int = 0) -> tuple[AnalyzedGraph, str | None]:
    """Remove the op at ``index``, whose output equals its input ``data_input`` (Identity-like).

    Returns the new graph and None, or the unchanged graph and the reason it could not be removed: when the output
    is a graph output the *input* must be renamed instead, which is impossible when the input is itself a graph
    input or output (both names are part of the model's interface).
    """
    op = graph.ops[index]
    src, dst = op.inputs[data_input], op.outputs[0]
    ops = graph.ops[:index] + graph.ops[index + 1:]
    g = graph.replace(ops=ops)
    if dst not in graph.outputs:
        g.ops = replace_uses(ops, dst, src)
    elif src in graph.inputs or src in graph.outputs or src in graph.weights:
        return graph, "its input and output are both part of the model interface"
    else:
        g.ops = rename_tensor(ops, src, dst)
        t = graph.tensors[dst]
        s = graph.tensors[src]
        g.tensors[dst] = Tensor(dst, t.shape, s.dtype, s.quant, s.layout) if s.shape == t.shape else t
    return tidy(g), None


def tidy(graph: AnalyzedGraph) -> AnalyzedGraph:
    """Forget tensor entries nothing refers to (constants stay: pass 17 decides about those)."""
    used = {t for op in graph.ops for t in (*op.inputs, *op.outputs) if t}
    used |= set(graph.inputs) | set(graph.outputs) | set(graph.weights)
    if all(n in used for n in graph.tensors):
        return graph
    return graph.replace(tensors={k: v for k, v in graph.tensors.items() if k in used})


def remove_dead_ops(graph: AnalyzedGraph, candidates: Iterable[str] | None = None) -> tuple[AnalyzedGraph, int]:
    """Drop ops none of whose outputs is read or is a graph output (repeatedly, so chains go too).

    ``candidates`` limits removal to ops of those types (None: any op).
    """
    allowed = set(candidates) if candidates is not None else None
    ops = list(graph.ops)
    removed = 0
    while True:
        read = {t for op in ops for t in op.inputs if t} | set(graph.outputs)
        keep = [op for op in ops if any(t in read for t in op.outputs if t)
                or (allowed is not None and op.op_type not in allowed)]
        if len(keep) == len(ops):
            break
        removed += len(ops) - len(keep)
        ops = keep
    if not removed:
        return graph, 0
    return tidy(graph.replace(ops=ops)), removed


def attr_ints(op: Op, key: str, default: list[int] | None = None) -> list[int] | None:
    v = op.attrs.get(key, default)
    return None if v is None else [int(x) for x in v]


def scalar(arr: np.ndarray | None) -> float | None:
    """The single value of a constant when it has exactly one element (any shape), else None."""
    if arr is None or arr.size != 1:
        return None
    return float(arr.reshape(-1)[0])


def all_equal(arr: np.ndarray, value: float, tol: float = 0.0) -> bool:
    return bool(np.all(np.abs(arr.astype(np.float64) - value) <= tol))


def tensor(graph: AnalyzedGraph, name: str) -> Tensor:
    return graph.tensors[name]


def with_attrs(op: Op, **changes: Any) -> Op:
    return op.with_(attrs={**op.attrs, **changes})


def is_float(graph: AnalyzedGraph, name: str) -> bool:
    return graph.tensors[name].dtype == "float32"


def is_quantized(graph: AnalyzedGraph, name: str) -> bool:
    return graph.tensors[name].quant is not None
