"""Validation after stage 2: which nodes the runtime cannot run, all of them at once.

The op kinds decide (:meth:`tigris.ops.base.OpKind.unsupported`, the reason lowering raises as
:class:`~tigris.ops.Unsupported`): a node is unsupported when no kind lowers its type, when an operand that must be
constant is not, when an attribute the kernel needs is missing (a pass declined to set it), or when its activations
mix float and int8 (a float op between a DQ and a Q that no pass folded). Each entry names the node, its op type and
the reason, so the user sees everything to fix in one run.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, UnsupportedModelError
from tigris.ops import unsupported_reason


def unsupported_nodes(graph: AnalyzedGraph) -> list[dict[str, str]]:
    """Every node the runtime cannot run, as ``{"node", "op", "reason"}`` (the analyze --json contract)."""
    out = []
    for op in graph.ops:
        r = unsupported_reason(graph, op)
        if r:
            out.append({"node": op.name, "op": op.op_type, "reason": r})
    return out


def check_supported(graph: AnalyzedGraph) -> None:
    """Raise :class:`UnsupportedModelError` listing every unsupported node; return None when all can run."""
    nodes = unsupported_nodes(graph)
    if nodes:
        raise UnsupportedModelError(nodes, graph.name)
