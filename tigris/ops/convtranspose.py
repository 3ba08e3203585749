"""The ``convtranspose`` kind: ConvTranspose (transposed convolution) in 1-D and 2-D, float32 and int8, any group
count (depthwise included), strides, dilations, pads and output padding.

Geometry. With pads and output padding explicit (pass explicit_attrs resolves ``auto_pad`` and ``output_shape``),
output row ``oh`` is row ``oh + pt`` of the un-cropped result, to which input row ``ih`` contributes through kernel
row ``kh`` exactly when ``ih * sh + kh * dh == oh + pt``. The kernel is output-stationary: every output pixel gathers
the taps that land on it, so nothing is scattered and any band of output rows can be computed from the input rows
it reads (:meth:`ConvTranspose.rows_needed`, the kind's own row map)::

    input rows of output rows [a, b):  [ceil((a + pt - (KH - 1) * dh) / sh), floor((b - 1 + pt) / sh) + 1)

Params ``pb``/``pr`` are the end pads minus the output padding, so ``OH = sh * (H - 1) + (KH - 1) * dh + 1 - pt - pb``
(they may be negative: output padding adds rows that only the bias reaches).

Runtime form (C: ``runtime_c/src/kernels/convtranspose.c``). NHWC activations (a 1-D signal is ``{N, L, 1, C}``, the
L axis being the row axis). The ONNX weight ``[C_in, OC/G, KH, KW]`` is rearranged at lowering to
``[G][OCg][KH][KW][ICg]``: for one output channel and one tap, the ``ICg`` weights are contiguous and line up with the
input pixel's channels of the group, so the kernel takes plain dot products and shuffles nothing. No scratch, except
for float16 weights: with ``compile --weights fp16`` (the default for a float16 model) a float op's weight constant
holds IEEE halves (param ``wf16``), which the kernel widens exactly into the first bytes of its scratch
(docs/format.md "Float16 weights"; ``_mac.stored_float_weight``).

float: ``y = clamp(bias + sum x * w)`` accumulated in float32 (taps in (kh, kw) order, channels ascending).
int8: ``acc = bias + sum (x - zp_in) * (w - zp_w[oc])`` over the taps that land (exact; a tap that does not land
contributes nothing, so the input zero point cannot be folded into the bias), then the per-channel Q0.31
requantization and clamp of ``tigris/ops/_mac.py``. The bias blob is ``[bias[OC], zp_w[OC]]`` int32. The lowering
proves ``|bias| + KH*KW*ICg * 255 * max|w - zp_w| < 2**31`` so the int32 result is exact.

Weight quantization: per tensor, per output channel (ONNX Runtime's axis 1, ``OC/G`` scales repeated over the
groups), or along axis 0 when every group has one input channel (depthwise), where an input channel is a group.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.layout import tensor_view_dims
from tigris.ops import _mac
from tigris.ops._geometry import TileError
from tigris.ops.base import Lowered, TensorView

CT_MAX_K = 64  # kernel taps per axis the C kernel's tap lists hold (CT_MAX_K in convtranspose.c)
CT_MAX_ICG = 32768  # input channels per group: one tap's int8 dot product stays below 2**31 (convtranspose.c)


def out_len(n: int, k: int, s: int, d: int, p0: int, p1: int) -> int:
    """Output length along one axis with effective pads ``p0`` (begin) and ``p1`` (end minus output padding)."""
    return s * (n - 1) + (k - 1) * d + 1 - p0 - p1


def input_rows(a: int, b: int, k: int, s: int, d: int, p0: int) -> tuple[int, int]:
    """Input rows (unclipped, half-open) that output rows ``[a, b)`` read; the C twin is ``ct_rows`` in
    convtranspose.c."""
    lo = -((-(a + p0 - (k - 1) * d)) // s)  # ceil division
    hi = (b - 1 + p0) // s + 1
    return lo, hi


def _geometry(attrs: dict, one_d: bool) -> dict[str, int]:
    ks = [int(v) for v in attrs["kernel_shape"]]
    st = [int(v) for v in attrs["strides"]]
    dl = [int(v) for v in attrs["dilations"]]
    pd = [int(v) for v in attrs["pads"]]
    op_ = [int(v) for v in attrs.get("output_padding") or [0] * len(ks)]
    n = len(ks)
    if one_d:
        return dict(kh=ks[0], kw=1, sh=st[0], sw=1, dh=dl[0], dw=1, pt=pd[0], pl=0, pb=pd[1] - op_[0], pr=0)
    return dict(kh=ks[0], kw=ks[1], sh=st[0], sw=st[1], dh=dl[0], dw=dl[1], pt=pd[0], pl=pd[1],
                pb=pd[n] - op_[0], pr=pd[n + 1] - op_[1])


class ConvTranspose(_mac.MacKind):
    name = "convtranspose"
    ir_ops = ("ConvTranspose",)
    ONNX_OPS = {"ConvTranspose": "2-D and 1-D ([N, C, L]), group (grouped, depthwise), kernel_shape, strides, "
                                 "dilations, pads, output_padding, output_shape, auto_pad; bias; fused Relu/Relu6; "
                                 "int8 weights per channel (axis 1) or per tensor, weight zero points"}
    INT8_EXACTNESS = "<= 1 LSB"
    TILING = "spatial"
    # float32 kernels whose weights the plan may store as IEEE halves (compile --weights fp16, param wf16)
    DTYPES = ("float32", "float32 with float16 weights", "int8")
    TILING_DOC = "spatial (its own row map: output rows [a, b) read input rows ceil((a + pt - (KH-1)*dh) / sh) to "\
                 "floor((b - 1 + pt) / sh))"
    PARAMS = (
        "kh", "kw", "sh", "sw", "dh", "dw", "pt", "pl", "pb", "pr",  # pb/pr: end pads minus output padding
        "group",
        "act_min", "act_max",  # int8 clamp bounds (fused activation included)
        "fmin", "fmax",  # float clamp bounds as f32 bits
        "zp_in", "zp_out",
        "numerics",  # int8: 0 onnx, 1 tflm requantization (docs/numerics.md)
        "wf16",  # float: 1 when the weight const holds IEEE halves (widened into the scratch by the kernel)
    )
    CONSTS = ("weight", "bias", "mult", "shift")

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        ins = [i for i in op.inputs if i]
        if len(ins) < 2 or ins[1] not in graph.weights or (len(ins) > 2 and ins[2] not in graph.weights):
            return "weight or bias is not a constant"
        rank = len(graph.tensors[ins[0]].shape)
        if rank not in (3, 4):
            return (f"ConvTranspose on a rank-{rank} input (1-D and 2-D are supported; a 3-D one needs rank-5 "
                    "tensors, and runtime tensors have at most 4 dimensions)")
        if any(k not in op.attrs for k in ("kernel_shape", "strides", "dilations", "pads", "group")):
            return "attributes are not explicit (auto_pad or output_shape left unresolved)"
        ks = [int(v) for v in op.attrs["kernel_shape"]]
        if len(ks) != rank - 2:
            return f"a {len(ks)}-D kernel on a rank-{rank} input"
        if max(ks) > CT_MAX_K:
            return f"kernel of {max(ks)} taps along an axis (the runtime holds at most {CT_MAX_K})"
        g = _geometry(op.attrs, rank == 3)
        if any(abs(g[k]) > 4096 for k in g) or min(g[k] for k in ("kh", "kw", "sh", "sw", "dh", "dw")) < 1:
            return "kernel, stride, dilation or pad out of the runtime's range"
        return None

    def check_dtype(self, graph: AnalyzedGraph, op: Op, int8: bool) -> str | None:
        if not int8:
            return None
        ins = [i for i in op.inputs if i]
        w = graph.tensors[ins[1]]
        if w.dtype != "int8" or w.quant is None:
            return "int8 op with a non-int8 weight"
        if len(ins) > 2 and (graph.tensors[ins[2]].dtype != "int32" or graph.tensors[ins[2]].quant is None):
            return "int8 op with a non-int32 bias"
        g = int(op.attrs.get("group", 1))
        for what, v in (("scales", w.quant.scale), ("zero points", w.quant.zero_point)):
            n = np.asarray(v).size
            if n <= 1 or (w.quant.axis == 1 and n == w.shape[1]) or \
                    (w.quant.axis in (0, None) and n == w.shape[0] == g):
                continue
            return f"int8 weight {what} along axis {w.quant.axis} ({n} values) are not per output channel"
        return None

    def rows_needed(self, op: Op, a: int, b: int) -> tuple[int, int]:
        g = _geometry(op.attrs, len(op.attrs["kernel_shape"]) == 1)
        return input_rows(a, b, g["kh"], g["sh"], g["dh"], g["pt"])

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x = graph.tensors[op.inputs[0]]
        y = graph.tensors[op.outputs[0]]
        one_d = len(x.shape) == 3
        wname = op.inputs[1]
        bname = _mac.optional_input(op, 2)
        geo = _geometry(op.attrs, one_d)
        group = int(op.attrs.get("group", 1))
        int8 = _mac.is_int8_op(graph, op)
        w_raw = np.asarray(graph.weights[wname])
        if one_d:
            w_raw = w_raw[..., None]
        cin, ocg, kh, kw = w_raw.shape
        oc = ocg * group
        n, h, wd, c = tensor_view_dims(x)
        _, oh, ow, yc = tensor_view_dims(y)
        if (kh, kw) != (geo["kh"], geo["kw"]) or group < 1 or c != cin or cin % group or yc != oc:
            raise TigrisError(f"inconsistent ConvTranspose shapes: X {x.shape}, W {w_raw.shape}, group {group}",
                              op.name)
        if (oh, ow) != (out_len(h, kh, geo["sh"], geo["dh"], geo["pt"], geo["pb"]),
                        out_len(wd, kw, geo["sw"], geo["dw"], geo["pl"], geo["pr"])):
            raise TigrisError(f"ConvTranspose output {list(y.shape)} does not follow from input {list(x.shape)} "
                              "and the attributes", op.name)
        if max(h, wd, oh, ow) > 2**30:  # CT_MAX_DIM in convtranspose.c: its index arithmetic stays in int32
            raise TigrisError("ConvTranspose extent above 2**30", op.name)
        icg = cin // group
        if icg > CT_MAX_ICG:
            raise TigrisError(f"ConvTranspose with {icg} input channels per group exceeds the runtime's {CT_MAX_ICG}",
                              op.name)
        params = dict(geo, group=group)
        fused = op.attrs.get("fused_activation")

        def arrange(w: np.ndarray) -> np.ndarray:
            # [G*ICg, OCg, KH, KW] -> [G, OCg, KH, KW, ICg]
            return np.ascontiguousarray(w.reshape(group, icg, ocg, kh, kw).transpose(0, 2, 3, 4, 1))

        if int8:
            w_q, s_w, zp_w = self._int8_weights(graph, wname, group, ocg)
            if one_d:
                w_q = w_q[..., None]
            wr = arrange(w_q.astype(np.int8))
            s_in, zp_in = _mac.per_tensor(x)
            s_out, zp_out = _mac.per_tensor(y)
            bias = _mac.int_bias(graph, bname, s_in * s_w)
            d = np.abs(wr.reshape(oc, -1).astype(np.int64) - zp_w[:, None]).max(axis=1)
            if np.any(np.abs(bias) + kh * kw * icg * 255 * d >= _mac.INT32_LIMIT):
                raise TigrisError("int32 accumulator could overflow (bias or reduction too large)", op.name)
            mult, shift = _mac.requant_params(s_in, s_w, s_out, f"{op.name}: {x.name} x {wname} / {y.name}",
                                              graph.numerics)
            lo, hi = _mac.act_bounds_int8(fused, zp_out, s_out, op.name, graph.numerics)
            from tigris.ops import qmath

            params.update(act_min=lo, act_max=hi, zp_in=zp_in, zp_out=zp_out,
                          numerics=qmath.numerics_code(graph.numerics))
            consts = dict(weight=wr, bias=np.concatenate([bias, zp_w]).astype(np.int32), mult=mult, shift=shift)
        else:
            w_f = _mac.float_weights(graph, wname)
            if one_d:
                w_f = w_f[..., None]
            lo, hi = _mac.act_bounds_f32(fused, op.name)
            params.update(fmin=lo, fmax=hi)
            consts = dict(weight=_mac.stored_float_weight(graph, arrange(w_f.astype(np.float32)), params, op.name),
                          bias=_mac.float_bias(graph, bname, oc))
        return Lowered(kind=self.name, op_name=op.name, inputs=[x.name], outputs=[y.name], params=params,
                       consts=consts, macs=int(n * h * wd * cin * ocg * kh * kw))

    @staticmethod
    def _int8_weights(graph: AnalyzedGraph, name: str, group: int, ocg: int):
        """(int8 weights as stored, scales [OC], zero points [OC] int64), the output channel being ``g * OCg + j``."""
        t = graph.tensors[name]
        w = np.asarray(graph.weights[name])
        if t.quant is None or w.dtype != np.int8:
            raise TigrisError(f"int8 op needs int8 quantized weights, got {w.dtype}", name)
        s = _mac.positive_scales(t)
        z = np.asarray(t.quant.zero_point, dtype=np.int64).ravel()
        oc = group * ocg
        if z.size <= 1:
            z = np.full(s.size, int(z[0]) if z.size else 0, dtype=np.int64)
        if s.size == 1:
            s_oc, z_oc = np.full(oc, s[0]), np.full(oc, z[0])
        elif t.quant.axis == 1 and s.size == ocg:
            s_oc, z_oc = np.tile(s, group), np.tile(z, group)
        elif s.size == group and w.shape[0] == group:  # one input channel per group: channel i is group i
            s_oc, z_oc = np.repeat(s, ocg), np.repeat(z, ocg)
        else:
            raise TigrisError(f"weight scales must be per tensor or per output channel, got {s.size}", name)
        if np.any((z_oc < -128) | (z_oc > 127)):
            raise TigrisError("int8 weight zero point out of range", name)
        return w, s_oc.astype(np.float64), z_oc.astype(np.int64)

    def macs(self, graph: AnalyzedGraph, op: Op, out_rows: int | None = None) -> int:
        x = graph.tensors[op.inputs[0]]
        wn = op.inputs[1]
        w = graph.tensors[wn].shape if wn in graph.tensors else graph.weights[wn].shape
        total = int(np.prod(x.shape)) * int(np.prod(w[1:]))  # every input element meets OC/G x KH x KW weights
        if out_rows is None:
            return total
        return total * out_rows // max(1, tensor_view_dims(graph.tensors[op.outputs[0]])[1])

    def scratch_bytes(self, low: Lowered, graph: AnalyzedGraph | None, out_rows: int) -> int:
        """None, except the float32 copy of IEEE-half weights (param wf16) the kernel widens them into."""
        return _mac.f16_scratch_bytes(low)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        x = inputs[0]
        p = {k: int(v) for k, v in low.params.items()}
        if out.rows == 0:
            return
        g = p["group"]
        n, h, wd, c = x.dims
        _, _, ow, oc = out.dims
        icg, ocg = c // g, oc // g
        kh, kw = p["kh"], p["kw"]
        r0, r1 = out.row0, out.row0 + out.rows
        lo, hi = input_rows(r0, r1, kh, p["sh"], p["dh"], p["pt"])
        lo, hi = max(lo, 0), min(hi, h)
        if lo < hi and (lo < x.row0 or hi > x.row0 + x.rows):
            raise TileError(f"input band rows [{x.row0}, {x.row0 + x.rows}) miss needed rows [{lo}, {hi})")
        int8 = out.dtype == "int8"
        xd = np.asarray(x.data).reshape(n, x.rows, wd, c)
        xd = xd.astype(np.int64) - p.get("zp_in", 0) if int8 else xd.astype(np.float64)
        w = np.asarray(low.consts["weight"]).reshape(g, ocg, kh, kw, icg)
        w = w.astype(np.int64) if int8 else w.astype(np.float64)
        bias = np.asarray(low.consts["bias"])
        if int8:
            w = w - bias[oc:].astype(np.int64).reshape(g, ocg, 1, 1, 1)
        acc = np.zeros((n, out.rows, ow, oc), dtype=np.int64 if int8 else np.float64)
        ohs = np.arange(r0, r1)
        ows = np.arange(ow)
        for i in range(kh):
            th = ohs + p["pt"] - i * p["dh"]
            vh = (th % p["sh"] == 0) & (th >= 0) & (th // p["sh"] < h)
            if not vh.any():
                continue
            ih = th[vh] // p["sh"] - x.row0
            for j in range(kw):
                tw = ows + p["pl"] - j * p["dw"]
                vw = (tw % p["sw"] == 0) & (tw >= 0) & (tw // p["sw"] < wd)
                if not vw.any():
                    continue
                iw = tw[vw] // p["sw"]
                patch = xd[:, ih][:, :, iw]  # [N, R', W', C]
                for gi in range(g):
                    part = patch[..., gi * icg:(gi + 1) * icg] @ w[gi, :, i, j, :].T  # [N, R', W', OCg]
                    sub = acc[:, vh][:, :, vw]
                    sub[..., gi * ocg:(gi + 1) * ocg] += part
                    acc[np.ix_(np.arange(n), np.flatnonzero(vh), np.flatnonzero(vw))] = sub
        if int8:
            res = _mac.epilogue_int8(acc + bias[:oc].astype(np.int64), low.consts["mult"], low.consts["shift"],
                                     p["zp_out"], p["act_min"], p["act_max"], p.get("numerics", 0))
        else:
            res = _mac.epilogue_f32(acc + bias.astype(np.float64), p["fmin"], p["fmax"])
        out.data[...] = res.reshape(out.data.shape)
