"""The ``dwconv`` kind: depthwise convolution (IR ``DepthwiseConv``, ``group == C_in``), depth multiplier allowed.

Runtime form (C: ``runtime_c/src/kernels/dwconv.c``). NHWC activations; weights ``[KH, KW, C*m]`` so that, for one
tap, the weights of all output channels are contiguous and line up with the input pixel's channels (output channel
``oc`` reads input channel ``oc // m``). No scratch: each output pixel accumulates channel blocks in registers.

int8: the input zero point is folded into the bias over all taps (``bias' = bias - zp_in * sum_taps w``); a padded tap
therefore stands for the input value ``zp_in`` (real 0): the reference pads with it and the C kernel adds
``zp_in * w`` for taps outside the image. See ``tigris/ops/_mac.py`` and docs/numerics.md.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.ops import _mac
from tigris.ops._geometry import Window, padded_band, window_from_attrs, window_patches
from tigris.ops.base import Lowered, TensorView


class DepthwiseConv(_mac.WindowedMacKind):
    name = "dwconv"
    COLS = "window"
    ir_ops = ("DepthwiseConv",)
    ONNX_OPS = {"Conv": "group == C_in > 1 (depthwise, channel multiplier m), kernel_shape, strides, dilations, pads, "
                        "auto_pad; bias; fused Relu/Relu6; int8 weights per channel or per tensor"}
    # float32 kernels whose weights the plan may store as IEEE halves (compile --weights fp16, param wf16)
    DTYPES = ("float32", "float32 with float16 weights", "int8")
    PARAMS = (
        "kh", "kw", "sh", "sw", "dh", "dw", "pt", "pl", "pb", "pr",
        "depth_mult",  # m: output channels per input channel
        "act_min", "act_max",  # int8 clamp bounds (fused activation included)
        "fmin", "fmax",  # float clamp bounds as f32 bits
        "zp_in", "zp_out",
        "numerics",  # int8: 0 onnx, 1 tflm requantization (docs/numerics.md)
        "wzp",  # int8: 1 when the weights have zero points (the bias const is [bias, zp_w])
        "wf16",  # float: 1 when the weight const holds IEEE halves (widened into the scratch by the kernel)
        "ip_rows",  # > 0: the output shares the input's home; rows of the piece temporary at the scratch's start
    )
    CONSTS = ("weight", "bias", "mult", "shift")
    # dwconv.c dw_pieces: with ip_rows > 0 the kernel computes a few output rows at a time into the scratch's first
    # ip_rows * row bytes and stores them over input rows no later output row reads (the planner sets ip_rows).
    piecewise_in_place = True

    def piecewise_over(self, graph: AnalyzedGraph, op: Op, x: str) -> bool:
        """One output channel per input channel, one image, the same dtype and storage, and an output no larger
        than the input (its rows then fit in the input's bytes)."""
        if not op.inputs or op.inputs[0] != x or not op.outputs:
            return False
        tx, ty = graph.tensors[x], graph.tensors[op.outputs[0]]
        return (tx.dtype == ty.dtype and tx.layout == ty.layout and tx.layout in ("nhwc", "nwc")
                and tx.shape[0] == 1 and ty.shape[1] == tx.shape[1] and ty.nbytes <= tx.nbytes)

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        one_d = len(op.attrs["kernel_shape"]) == 1
        x = graph.tensors[op.inputs[0]]
        y = graph.tensors[op.outputs[0]]
        wname = op.inputs[1]
        bname = _mac.optional_input(op, 2)
        win = window_from_attrs(op.attrs, one_d)
        int8 = _mac.is_int8_op(graph, op)
        w_raw = np.asarray(graph.weights[wname])
        if one_d:
            w_raw = w_raw[..., None]
        oc, one, kh, kw = w_raw.shape
        cin = x.shape[1]
        group = int(op.attrs.get("group", cin))
        if one != 1 or group != cin or oc % cin or (kh, kw) != (win.kh, win.kw):
            raise TigrisError(f"not a depthwise conv: X {x.shape}, W {w_raw.shape}, group {group}", op.name)
        params = dict(win.params(), depth_mult=oc // cin)
        fused = op.attrs.get("fused_activation")
        if int8:
            w_q, s_w, zp_w = _mac.int8_weights_zp(graph, wname, oc)
            if one_d:
                w_q = w_q[..., None]
            w2d = w_q.reshape(oc, kh * kw)  # every weight feeding output channel oc
            rq = _mac.int8_mac_params(graph, op, x, y, wname, bname, w2d, s_w, zp_w, fused, params)
            consts = dict(weight=np.ascontiguousarray(w2d.T.reshape(kh, kw, oc).astype(np.int8)), **rq)
        else:
            w_f = _mac.float_weights(graph, wname)
            if one_d:
                w_f = w_f[..., None]
            lo, hi = _mac.act_bounds_f32(fused, op.name)
            params.update(fmin=lo, fmax=hi)
            wf = np.ascontiguousarray(w_f.reshape(oc, kh * kw).T.reshape(kh, kw, oc), np.float32)
            consts = dict(weight=_mac.stored_float_weight(graph, wf, params, op.name),
                          bias=_mac.float_bias(graph, bname, oc))
        out_pixels = int(np.prod(y.shape)) // oc
        return Lowered(kind=self.name, op_name=op.name, inputs=[x.name], outputs=[y.name], params=params,
                       consts=consts, macs=out_pixels * oc * kh * kw)

    def scratch_bytes(self, low: Lowered, graph: AnalyzedGraph | None, out_rows: int) -> int:
        """None, except the float32 copy of IEEE-half weights (param wf16) the kernel widens them into."""
        return _mac.f16_scratch_bytes(low)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        x = inputs[0]
        p = low.params
        if out.rows == 0:
            return
        win = Window.from_params(p)
        m = int(p["depth_mult"])
        n, _, ow, oc = out.dims
        int8 = out.dtype == "int8"
        xp = padded_band(x, win, out.row0, out.row0 + out.rows, int(p.get("zp_in", 0)) if int8 else 0)
        pt = window_patches(xp, win, out.rows, ow)[..., np.arange(oc) // m]  # [N, R, OW, KH, KW, OC]
        w = np.asarray(low.consts["weight"])
        if int8 and p.get("wzp", 0):
            # exact zero points: sum (x - zp_in) * (w - zp_w), padded taps (value zp_in) contribute 0
            bz = np.asarray(low.consts["bias"], dtype=np.int64)
            acc = np.einsum("nrwijc,ijc->nrwc", pt.astype(np.int64) - int(p["zp_in"]), w.astype(np.int64) - bz[oc:])
            res = _mac.epilogue_int8(acc + bz[:oc], low.consts["mult"], low.consts["shift"], p["zp_out"],
                                     p["act_min"], p["act_max"], p.get("numerics", 0))
        elif int8:
            acc = np.einsum("nrwijc,ijc->nrwc", pt.astype(np.int64), w.astype(np.int64))
            acc = acc + np.asarray(low.consts["bias"], dtype=np.int64)
            res = _mac.epilogue_int8(acc, low.consts["mult"], low.consts["shift"], p["zp_out"], p["act_min"],
                                     p["act_max"], p.get("numerics", 0))
        else:
            acc = np.einsum("nrwijc,ijc->nrwc", pt.astype(np.float64), w.astype(np.float64))
            res = _mac.epilogue_f32(acc + np.asarray(low.consts["bias"], dtype=np.float64), p["fmin"], p["fmax"])
        out.data[...] = res.reshape(out.data.shape)
