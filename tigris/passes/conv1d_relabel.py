"""Pass 8, Conv1D relabel: a Conv on a rank-3 input [N, C, L] (1-D kernel) becomes ``Conv1D``.

Rules:
1. Input rank 3: relabeled, attributes unchanged (``kernel_shape``[1], ``strides``[1], ``dilations``[1],
   ``pads``[2], ``group``).
2. A rank-4 Conv with a K x 1 kernel stays a 2-D Conv: its layout is already NHWC with W = 1, which the 2-D kernels
   handle, and relabeling it would change the tensor's layout class.

Why here: after pass 7 so depthwise detection saw every 2-D conv first; a relabel only.

Postcondition: no Conv with a rank-3 input remains.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph
from tigris.passes._util import PassResult

NAME = "conv1d_relabel"


def run(graph: AnalyzedGraph) -> PassResult:
    ops = []
    n = 0
    for op in graph.ops:
        if op.op_type == "Conv" and len(graph.tensors[op.inputs[0]].shape) == 3:
            op = op.with_(op_type="Conv1D")
            n += 1
        ops.append(op)
    return PassResult(graph.replace(ops=ops), n)
