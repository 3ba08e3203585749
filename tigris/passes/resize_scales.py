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
   ``(lo, hi)`` input rows its taps read (the kind's row map for banded execution). Cubic, antialiased and
   tf_crop_and_resize resizes always take this form (their taps reach further than an integer factor's rows).
4. Common attributes: ``mode`` (``nearest``, ``linear`` or ``cubic``; ``bilinear`` of old Upsample is ``linear``),
   ``coordinate_transformation_mode`` (ONNX default ``half_pixel`` for Resize from opset 11, ``asymmetric`` for
   opset-10 Resize with two operands and for Upsample), ``nearest_mode`` (default ``round_prefer_floor``),
   ``cubic_coeff_a`` (-0.75), ``exclude_outside`` (0), ``antialias`` (0), ``extrapolation_value`` (0). For
   tf_crop_and_resize the constant ``roi`` operand becomes ``roi_hw``: starts then ends over every axis (axes the
   operand does not name keep 0 and 1). ``Upsample`` is relabeled ``Resize``.
5. Declined: a non-constant ``scales``, ``sizes`` or ``roi``, and a tf_crop_and_resize whose roi crops the batch or
   channel axis.

Why here: after the loader resolved shapes and pass 11 folded shape chains into constants; pass 13 then drops the
roi/scales/sizes operands.

Postcondition: every Resize that can run has ``scales`` attributes.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op
from tigris.ops.resize import axis_tables, row_span
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
        if mode not in ("nearest", "linear", "cubic"):
            declined.append(Decline(op.name, f"rule 5: mode {mode}"))
            ops.append(op)
            continue
        legacy = op.op_type == "Upsample" or len(op.inputs) == 2
        ctm = _s(op.attrs.get("coordinate_transformation_mode", "asymmetric" if legacy else "half_pixel"))
        roi = None
        if ctm == "tf_crop_and_resize":
            roi = _roi(graph, op, xin, yout)
            if isinstance(roi, str):
                declined.append(Decline(op.name, roi))
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
        cubic_a = float(op.attrs.get("cubic_coeff_a", -0.75))
        excl = int(op.attrs.get("exclude_outside", 0))
        anti = int(op.attrs.get("antialias", 0)) if mode != "nearest" else 0
        ints = all(o % i == 0 for i, o in zip(xin, yout)) and (
            scales is None or all(s == o // i for s, i, o in zip(scales, xin, yout)))
        if ints and mode != "cubic" and roi is None:
            attrs = {"scales": [o // i for i, o in zip(xin, yout)]}
        else:
            if scales is None:
                scales = [o / i for i, o in zip(xin, yout)]
            attrs = {"scales": [float(s) for s in scales], "by_sizes": bool(by_sizes)}
            if len(xin) >= 3:
                idx, _ = axis_tables(xin[2], yout[2], scales[2], mode, ctm, nmode, by_sizes, cubic_a, bool(excl),
                                     bool(anti), (0.0, 1.0) if roi is None else (roi[2], roi[len(xin) + 2]))
                attrs["row_src"] = row_span(idx)
        attrs.update({"mode": mode, "coordinate_transformation_mode": ctm, "nearest_mode": nmode, "_extracted": True})
        if mode == "cubic":
            attrs.update({"cubic_coeff_a": cubic_a, "exclude_outside": excl})
        if anti:
            attrs["antialias"] = anti
        if roi is not None:
            attrs.update({"roi_hw": roi, "extrapolation_value": float(op.attrs.get("extrapolation_value", 0.0))})
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


def _roi(graph: AnalyzedGraph, op: Op, xin, yout):
    """tf_crop_and_resize's roi over every axis (starts, then ends), or a decline reason (rule 5)."""
    r = len(xin)
    name = op.inputs[1] if len(op.inputs) > 1 else ""
    if name and name not in graph.weights:
        return "rule 5: roi operand is not constant"
    v = np.asarray(graph.weights[name], dtype=np.float64).reshape(-1) if name else np.zeros(0)
    axes = [int(a) % r for a in op.attrs.get("axes", range(r))]
    roi = [0.0] * r + [1.0] * r
    if v.size:
        if v.size != 2 * len(axes):
            return f"rule 5: roi of {v.size} values for {len(axes)} axes"
        for k, a in enumerate(axes):
            roi[a], roi[r + a] = float(v[k]), float(v[len(axes) + k])
    for a in range(min(2, r)):
        if xin[a] > 1 and (roi[a], roi[r + a]) != (0.0, 1.0):
            return f"rule 5: tf_crop_and_resize crops axis {a} (batch or channels)"
    return roi
