"""Pass 17, unreferenced constant drop: constants no remaining op reads are forgotten.

Rules:
1. A weight is kept when some op reads it; everything else (BatchNorm parameters after the fold, Reshape targets
   after the strip, absorbed scales) is removed with its tensor entry.

Why last of the seventeen: every ``weights`` entry is written into the plan blob, and only after all rewiring is the
set of readers final.

Postcondition: every constant is read by at least one op.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph
from tigris.passes._util import PassResult

NAME = "drop_constants"


def run(graph: AnalyzedGraph) -> PassResult:
    read = {t for op in graph.ops for t in op.inputs if t}
    dead = [k for k in graph.weights if k not in read and k not in graph.outputs]
    if not dead:
        return PassResult(graph)
    weights = {k: v for k, v in graph.weights.items() if k not in dead}
    tensors = {k: v for k, v in graph.tensors.items() if k not in dead}
    return PassResult(graph.replace(weights=weights, tensors=tensors), len(dead))
