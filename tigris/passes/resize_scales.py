"""Pass 12, Resize scale extract: integer scale factors of ``Resize``/``Upsample`` become attributes.

Rules:
1. The scale per logical axis is ``out / in`` from the static shapes (which the loader resolved from the ``scales``
   or ``sizes`` operand); every factor must be a positive integer (the runtime kernel repeats or interpolates by
   whole factors), and batch and channel factors must be 1. Otherwise declined.
2. Attributes set: ``scales`` (list of int), ``mode`` (``nearest`` or ``linear``; ``bilinear`` of old Upsample is
   ``linear``), ``coordinate_transformation_mode`` (ONNX default ``half_pixel`` for Resize from opset 11,
   ``asymmetric`` for opset-10 Resize with two operands and for Upsample), ``nearest_mode`` (default
   ``round_prefer_floor``). ``Upsample`` is relabeled ``Resize``.
3. Modes other than nearest/linear (cubic) are declined.

Why here: after the loader resolved shapes and pass 11 folded shape chains into constants; pass 13 then drops the
roi/scales/sizes operands.

Postcondition: every Resize that can run has integer ``scales`` attributes.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph
from tigris.passes._util import Decline, PassResult

NAME = "resize_scales"


def run(graph: AnalyzedGraph) -> PassResult:
    ops = []
    n = 0
    declined: list[Decline] = []
    for op in graph.ops:
        if op.op_type not in ("Resize", "Upsample") or (op.op_type == "Resize" and op.attrs.get("_extracted")):
            ops.append(op)
            continue
        xin = graph.tensors[op.inputs[0]].shape
        yout = graph.tensors[op.outputs[0]].shape
        if any(i == 0 or o % i for i, o in zip(xin, yout)) or xin[:2] != yout[:2]:
            declined.append(Decline(op.name, f"rule 1: {xin} -> {yout} is not an integer spatial upscale"))
            ops.append(op)
            continue
        mode = str(op.attrs.get("mode", "nearest"))
        mode = "linear" if mode == "bilinear" else mode
        if mode not in ("nearest", "linear"):
            declined.append(Decline(op.name, f"rule 3: mode {mode}"))
            ops.append(op)
            continue
        legacy = op.op_type == "Upsample" or len(op.inputs) == 2
        ctm = str(op.attrs.get("coordinate_transformation_mode", "asymmetric" if legacy else "half_pixel"))
        attrs = {"scales": [o // i for i, o in zip(xin, yout)], "mode": mode,
                 "coordinate_transformation_mode": ctm,
                 "nearest_mode": str(op.attrs.get("nearest_mode", "round_prefer_floor")), "_extracted": True}
        ops.append(op.with_(op_type="Resize", attrs=attrs))
        n += 1
    return PassResult(graph.replace(ops=ops), n, tuple(declined))
