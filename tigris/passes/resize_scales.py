"""Pass 12, Resize scale extract: the scale factors of ``Resize``/``Upsample`` become attributes.

Rules:
1. The output size per logical axis is the static shape (which the loader resolved from the ``scales`` or ``sizes``
   operand); batch and channel sizes must not change. Otherwise declined.
2. Integer upscale (every ``out / in`` a whole number, and a ``scales`` operand, if any, states exactly those
   numbers): ``scales`` is the list of int factors.
3. Any other resize: ``scales`` is the list of float factors ONNX's coordinate formulas use: the constant ``scales``
   operand as given (mapped through ``axes``), or for ``sizes`` ``out / in`` (with ``keep_aspect_ratio_policy``
   ``not_larger``/``not_smaller`` the min/max of those over the resized axes); ``by_sizes`` is set when the scales
   are the size ratios so an ONNX export restates the sizes, and ``row_src`` lists per output row of logical axis 2 the
   ``(lo, hi)`` input rows it reads (the kind's row map for banded execution).
4. Common attributes: ``mode`` (``nearest`` or ``linear``; ``bilinear`` of old Upsample is ``linear``),
   ``coordinate_transformation_mode`` (ONNX default ``half_pixel`` for Resize from opset 11, ``asymmetric`` for
   opset-10 Resize with two operands and for Upsample), ``nearest_mode`` (default ``round_prefer_floor``).
   ``Upsample`` is relabeled ``Resize``.
5. Declined: modes other than nearest/linear (cubic), ``tf_crop_and_resize``, an antialiased linear downscale, and
   a non-constant ``scales``.

Why here: after the loader resolved shapes and pass 11 folded shape chains into constants; pass 13 then drops the
roi/scales/sizes operands.

Postcondition: every Resize that can run has ``scales`` attributes.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op
from tigris.ops.resize import axis_tables
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
        if any(i == 0 for i in xin) or xin[:2] != yout[:2] or len(xin) != len(yout):
            declined.append(Decline(op.name, f"rule 1: {xin} -> {yout} resizes batch or channels"))
            ops.append(op)
            continue
        mode = _s(op.attrs.get("mode", "nearest"))
        mode = "linear" if mode == "bilinear" else mode
        if mode not in ("nearest", "linear"):
            declined.append(Decline(op.name, f"rule 5: mode {mode}"))
            ops.append(op)
            continue
        legacy = op.op_type == "Upsample" or len(op.inputs) == 2
        ctm = _s(op.attrs.get("coordinate_transformation_mode", "asymmetric" if legacy else "half_pixel"))
        if ctm == "tf_crop_and_resize":
            declined.append(Decline(op.name, "rule 5: coordinate_transformation_mode tf_crop_and_resize"))
            ops.append(op)
            continue
        given = _given_scales(graph, op, legacy, xin, yout)
        if isinstance(given, str):
            declined.append(Decline(op.name, given))
            ops.append(op)
            continue
        scales, _ = given
        by_sizes = scales is None
        nmode = _s(op.attrs.get("nearest_mode", "round_prefer_floor"))
        ints = all(o % i == 0 for i, o in zip(xin, yout)) and (
            scales is None or all(s == o // i for s, i, o in zip(scales, xin, yout)))
        if ints:
            attrs = {"scales": [o // i for i, o in zip(xin, yout)]}
        else:
            if scales is None:
                scales = [o / i for i, o in zip(xin, yout)]
            if mode == "linear" and int(op.attrs.get("antialias", 0)) and any(s < 1 for s in scales):
                declined.append(Decline(op.name, "rule 5: antialiased linear downscale"))
                ops.append(op)
                continue
            attrs = {"scales": [float(s) for s in scales], "by_sizes": bool(by_sizes)}
            if len(xin) >= 3:
                idx, _ = axis_tables(xin[2], yout[2], scales[2], mode, ctm, nmode, by_sizes)
                attrs["row_src"] = [int(v) for v in idx]
        attrs.update({"mode": mode, "coordinate_transformation_mode": ctm, "nearest_mode": nmode, "_extracted": True})
        ops.append(op.with_(op_type="Resize", attrs=attrs))
        n += 1
    return PassResult(graph.replace(ops=ops), n, tuple(declined))


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _given_scales(graph: AnalyzedGraph, op: Op, legacy: bool, xin, yout):
    """(float scales per axis or None, stated by sizes) of rule 3, or a decline reason."""
    r = len(xin)
    axes = [int(a) % r for a in op.attrs.get("axes", range(r))]
    si = 1 if legacy else 2
    sc = op.inputs[si] if len(op.inputs) > si else ""
    sz = op.inputs[3] if not legacy and len(op.inputs) > 3 else ""
    if sc and (sc not in graph.weights or np.asarray(graph.weights[sc]).size == 0):
        if sc not in graph.weights:
            return "rule 5: scales operand is not constant"
        sc = ""
    if sc:
        v = np.asarray(graph.weights[sc], dtype=np.float64).reshape(-1)
        if v.size != len(axes):
            return f"rule 5: {v.size} scales for {len(axes)} axes"
        out = [1.0] * r
        for a, s in zip(axes, v):
            out[a] = float(np.float32(s))
        return out, False
    if not sz:
        return None, False
    policy = _s(op.attrs.get("keep_aspect_ratio_policy", "stretch"))
    if policy == "stretch":
        return None, True
    # the loader resolved the output shape from the policy; the coordinate scale is the one ratio ONNX picks
    if sz not in graph.weights:
        return "rule 5: sizes operand is not constant"
    want = np.asarray(graph.weights[sz], dtype=np.float64).reshape(-1)
    ratios = [w / xin[a] for a, w in zip(axes, want)]
    s = min(ratios) if policy == "not_larger" else max(ratios)
    out = [1.0] * r
    for a in axes:
        out[a] = s
    return out, True
