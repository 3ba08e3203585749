"""Lowering and epilogue helpers shared by the multiply-accumulate kinds (conv, dwconv, fc).

All three compute ``acc = bias + sum(x * w)`` per output channel and then either clamp a float or requantize an
int32 accumulator to int8. The int8 conventions (docs/numerics.md):

* weights are symmetric (zero point 0), per output channel or per tensor;
* the input zero point is folded into the bias at lowering, ``bias' = bias - zp_in * sum_k w[oc, k]``, so the
  kernels accumulate raw int8 products; a padded tap then reads the value ``zp_in`` (real value 0);
* ``effective_scale[oc] = s_in * s_w[oc] / s_out`` becomes ``(mult, shift)`` via ``qmath.quantize_multiplier``;
* the output is ``clamp(requantize(acc, mult, shift) + zp_out, act_min, act_max)`` with the fused activation in
  the bounds.

The lowering proves that no int32 partial sum can overflow (``|bias'| + K * 128 * max|w| < 2**31``), so C may
accumulate in int32 in any order and still equal the reference's exact sum.
"""
from __future__ import annotations

import math

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor, TigrisError
from tigris.ops import qmath
from tigris.ops._geometry import col_window, row_window
from tigris.ops.base import OpKind, cols_reason, f32_bits

INT32_LIMIT = 2**31


class MacKind(OpKind):
    """What the multiply-accumulate kinds share: a constant weight (and bias), a fused activation, int8 weights with
    per-tensor or per-output-channel zero points (carried exactly, ``weight_zero_point_bias``) and an int32 bias, and
    MACs = output elements x weight elements per output channel."""

    SINGLE_INPUT = False

    def fuses_activation(self, op: Op) -> bool:
        return True

    def check_dtype(self, graph: AnalyzedGraph, op: Op, int8: bool) -> str | None:
        if not int8:
            return None
        ins = [i for i in op.inputs if i]
        w = graph.tensors[ins[1]]
        if w.dtype != "int8" or w.quant is None:
            return "int8 op with a non-int8 weight"
        zp = np.asarray(w.quant.zero_point).ravel()
        if zp.size > 1 and (zp.size != w.shape[0] or w.quant.axis not in (None, 0)):
            return "int8 weight zero points not per tensor or per output channel"
        if len(ins) > 2 and (graph.tensors[ins[2]].dtype != "int32" or graph.tensors[ins[2]].quant is None):
            return "int8 op with a non-int32 bias"
        return None

    def macs(self, graph: AnalyzedGraph, op: Op, out_rows: int | None = None) -> int:
        out = graph.tensors[op.outputs[0]]
        wn = op.inputs[1]
        w = graph.tensors[wn].shape if wn in graph.tensors else graph.weights[wn].shape
        per_out = 1
        for d in w[1:]:
            per_out *= int(d)
        total = out.numel * per_out
        if out_rows is None or self.TILING != "spatial":
            return total
        from tigris.layout import tensor_view_dims

        return total * out_rows // max(1, tensor_view_dims(out)[1])


class WindowedMacKind(MacKind):
    """conv and dwconv: a window over the input rows, with constant weight and bias and explicit attributes."""

    TILING = "spatial"

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        ins = [i for i in op.inputs if i]
        if len(ins) < 2 or ins[1] not in graph.weights or (len(ins) > 2 and ins[2] not in graph.weights):
            return "weight or bias is not a constant"
        rank = len(graph.tensors[ins[0]].shape)
        if (op.op_type == "Conv1D") != (rank == 3) or rank not in (3, 4):
            return f"{op.op_type} on a rank-{rank} input"
        if any(k not in op.attrs for k in ("kernel_shape", "strides", "dilations", "pads", "group")):
            return "attributes are not explicit"
        return None

    def window(self, op: Op) -> tuple[int, int, int, int]:
        return row_window(op.attrs)

    def col_local(self, graph: AnalyzedGraph, op: Op) -> str | None:
        # each output pixel is the dot product of its own KHxKW window (all input channels of its group) with the
        # weights: a W window like the row window; a 1-D conv has no W to cut
        if col_window(op.attrs) is None:
            return f"1-D {op.op_type}"
        return cols_reason(graph, op, per_pixel=False)

    def col_window(self, op: Op) -> tuple[int, int, int, int] | None:
        return col_window(op.attrs)


def optional_input(op: Op, i: int) -> str | None:
    return op.inputs[i] if len(op.inputs) > i and op.inputs[i] else None


def is_int8_op(graph: AnalyzedGraph, op: Op) -> bool:
    """True for an int8 op (activation in and out int8 with quantization), False for float32; TigrisError otherwise."""
    x = graph.tensors[op.inputs[0]]
    y = graph.tensors[op.outputs[0]]
    if x.dtype == "float32" and y.dtype == "float32":
        return False
    if x.dtype == "int8" and y.dtype == "int8" and x.quant is not None and y.quant is not None:
        return True
    raise TigrisError(f"unsupported dtypes {x.dtype} -> {y.dtype} (need float32 -> float32 or quantized int8 -> int8)",
                      op.name)


def positive_scales(t: Tensor) -> np.ndarray:
    """The tensor's scales as float64, each checked positive and finite (the error names the tensor)."""
    if t.quant is None:
        raise TigrisError("tensor has no quantization parameters", t.name)
    s = np.asarray(t.quant.scale, dtype=np.float64).ravel()
    bad = ~np.isfinite(s) | (s <= 0)
    if s.size == 0 or bad.any():
        val = s[bad][0] if s.size else "none"
        raise TigrisError(f"quantization scale must be positive and finite, got {val}", t.name)
    return s


def per_tensor(t: Tensor) -> tuple[float, int]:
    """(scale, zero_point) of a per-tensor quantized activation."""
    s = positive_scales(t)
    zp = np.asarray(t.quant.zero_point).ravel()
    if s.size != 1 or zp.size > 1:
        raise TigrisError("activation quantization must be per tensor", t.name)
    z = int(zp[0]) if zp.size else 0
    if not -128 <= z <= 127:
        raise TigrisError(f"int8 zero point {z} out of range", t.name)
    return float(s[0]), z


def int8_weights(graph: AnalyzedGraph, name: str, oc: int) -> tuple[np.ndarray, np.ndarray]:
    """(int8 weights as stored, per-output-channel scales [oc]) of an int8 weight; axis 0 is the OC axis."""
    return int8_weights_zp(graph, name, oc)[:2]


def int8_weights_zp(graph: AnalyzedGraph, name: str, oc: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(int8 weights as stored, per-output-channel scales [oc], per-output-channel zero points [oc] as int64).

    A weight zero point is carried exactly (``weight_zero_point_bias``); it is 0 for symmetric weights."""
    t = graph.tensors[name]
    w = np.asarray(graph.weights[name])
    if t.quant is None or w.dtype != np.int8:
        raise TigrisError(f"int8 op needs int8 quantized weights, got {w.dtype}", name)
    s = positive_scales(t)
    z = np.asarray(t.quant.zero_point, dtype=np.int64).ravel()
    if s.size == 1:
        s = np.full(oc, s[0])
    elif s.size != oc or (t.quant.axis not in (None, 0)):
        raise TigrisError(f"weight scales must be per tensor or per output channel (axis 0), got {s.size}", name)
    if z.size <= 1:
        z = np.full(oc, int(z[0]) if z.size else 0, dtype=np.int64)
    elif z.size != oc:
        raise TigrisError(f"weight zero points must be per tensor or per output channel, got {z.size}", name)
    if np.any((z < -128) | (z > 127)):
        raise TigrisError("int8 weight zero point out of range", name)
    return w, s, z


def weight_zero_point_bias(bias: np.ndarray, w2d: np.ndarray, zp_w: np.ndarray, where: str) -> np.ndarray:
    """The const blob of an op with weight zero points (param ``wzp`` = 1): the unfolded int32 bias ``[OC]``
    followed by the weight zero points ``[OC]``.

    Such an op accumulates ``bias + sum_k (x[k] - zp_in) * (w[oc, k] - zp_w[oc])`` directly (padded taps contribute
    0), so nothing is re-rounded. Both factors lie in [-255, 255]; the lowering proves
    ``|bias| + K * 255 * max|w - zp_w| < 2**31`` so every partial sum fits in int32.
    """
    k = w2d.shape[1]
    d = np.abs(w2d.astype(np.int64) - zp_w[:, None]).max(axis=1) if k else np.zeros(len(bias), dtype=np.int64)
    if np.any(np.abs(bias.astype(np.int64)) + k * 255 * d >= INT32_LIMIT):
        raise TigrisError("int32 accumulator could overflow (bias or reduction too large)", where)
    return np.concatenate([bias.astype(np.int64), zp_w]).astype(np.int32)


def float_weights(graph: AnalyzedGraph, name: str) -> np.ndarray:
    """Float32 weights; an int8 weight behind a DequantizeLinear (weight-only quantization) is dequantized here."""
    t = graph.tensors[name]
    w = np.asarray(graph.weights[name])
    if w.dtype == np.float32:
        return w
    if t.quant is not None and w.dtype in (np.int8, np.uint8):
        s = np.asarray(t.quant.scale, dtype=np.float32).ravel()
        z = np.asarray(t.quant.zero_point, dtype=np.float32).ravel()
        if s.size > 1:
            shape = [1] * w.ndim
            shape[t.quant.axis or 0] = s.size
            s, z = s.reshape(shape), z.reshape(shape)
        return ((w.astype(np.float32) - z) * s).astype(np.float32)
    return w.astype(np.float32)


def stored_float_weight(graph: AnalyzedGraph, w: np.ndarray, params: dict, where: str) -> np.ndarray:
    """A float kernel's weight constant as the plan stores it: float32, or IEEE halves when the graph's weights are
    float16 (``compile --weights fp16``, the default for a float16 model; docs/format.md "Float16 weights"). Halves
    set param ``wf16``; the kernel widens them exactly into the first bytes of its scratch before it computes, so the
    reference (which reads the halves as their float32 values) and the kernel compute with the same numbers."""
    w = np.ascontiguousarray(w, np.float32)
    if getattr(graph, "weights_dtype", "float32") != "float16":
        return w
    with np.errstate(over="ignore"):
        h = w.astype(np.float16)
    if np.any(np.isinf(h) & np.isfinite(w)):
        raise TigrisError(f"a weight of magnitude {float(np.abs(w).max()):.6g} exceeds the float16 range (65504); "
                          "compile with --weights fp32", where)
    params["wf16"] = 1
    return h


def f16_scratch_bytes(low) -> int:
    """Scratch bytes holding the float32 copy of an IEEE-half weight (param wf16), 16-byte aligned, else 0 (mirrors
    ``tgrs_f16_view``)."""
    if not low.params.get("wf16"):
        return 0
    return (int(np.asarray(low.consts["weight"]).size) * 4 + 15) // 16 * 16


def float_bias(graph: AnalyzedGraph, name: str | None, oc: int) -> np.ndarray:
    if name is None:
        return np.zeros(oc, dtype=np.float32)
    b = float_weights(graph, name).astype(np.float32).ravel()
    if b.size != oc:
        raise TigrisError(f"bias has {b.size} values for {oc} output channels", name)
    return b


def int_bias(graph: AnalyzedGraph, name: str | None, acc_scale: np.ndarray) -> np.ndarray:
    """The bias in the int32 accumulator domain (scale ``s_in * s_w[oc]``) as int64; a float bias is quantized."""
    oc = acc_scale.size
    if name is None:
        return np.zeros(oc, dtype=np.int64)
    b = np.asarray(graph.weights[name]).ravel()
    if b.size != oc:
        raise TigrisError(f"bias has {b.size} values for {oc} output channels", name)
    if np.issubdtype(b.dtype, np.integer):
        return b.astype(np.int64)
    return np.rint(b.astype(np.float64) / acc_scale).astype(np.int64)


def requant_params(s_in: float, s_w: np.ndarray, s_out: float, where: str,
                   numerics: str = "onnx") -> tuple[np.ndarray, np.ndarray]:
    """Per-channel Q0.31 (mult, shift) of ``s_in * s_w / s_out`` (in float64 from the float32 scales, as TFLite)."""
    eff = s_in * np.asarray(s_w, dtype=np.float64) / s_out
    return qmath.quantize_multipliers(eff, where, numerics)


def fold_input_zero_point(bias: np.ndarray, w2d: np.ndarray, zp_in: int, where: str) -> np.ndarray:
    """``bias - zp_in * sum_k w[oc, k]`` as int32, after proving that no int32 partial sum can overflow.

    ``w2d`` is [OC, K] int8 (every weight feeding output channel oc).
    """
    w64 = w2d.astype(np.int64)
    folded = bias.astype(np.int64) - int(zp_in) * w64.sum(axis=1)
    k = w2d.shape[1]
    wmax = np.abs(w64).max(axis=1) if k else np.zeros(len(bias), dtype=np.int64)
    bound = np.abs(folded) + k * 128 * wmax
    if np.any(bound >= INT32_LIMIT):
        raise TigrisError("int32 accumulator could overflow (bias or reduction too large)", where)
    return folded.astype(np.int32)


def act_bounds_int8(fused: str | None, zp_out: int, s_out: float, where: str,
                    numerics: str = "onnx") -> tuple[int, int]:
    """int8 clamp bounds of a fused activation (design.md: relu -> [zp, 127], relu6 -> [zp, zp + round(6/s)]).

    ``round(6/s)`` is float64 and half to even for onnx; TFLite's, for tflm: float32 division, half away from zero.
    """
    if fused is None:
        return -128, 127
    lo = max(-128, zp_out)
    if fused == "relu":
        return lo, 127
    if fused == "relu6":
        if numerics == "tflm":
            six = qmath.round_half_away(float(np.float32(6.0) / np.float32(s_out)))
        else:
            six = round(6.0 / s_out)
        return lo, max(lo, min(127, zp_out + six))
    raise TigrisError(f"unsupported fused activation {fused!r}", where or None)


def int8_mac_params(graph: AnalyzedGraph, op: Op, x: Tensor, y: Tensor, wname: str, bname: str | None,
                    w2d: np.ndarray, s_w: np.ndarray, zp_w: np.ndarray, fused: str | None,
                    params: dict[str, int]) -> dict[str, np.ndarray]:
    """The int8 lowering the multiply-accumulate kinds share: the int32 bias with the zero points folded in (the
    weight zero point's correction when a weight zero point is non-zero, flag ``wzp``), the per-channel
    requantization and the clamp bounds. ``w2d`` is [OC, taps] in the order the kernel accumulates; ``params`` gains
    act_min/act_max, zp_in/zp_out, numerics (and wzp). Returns the consts bias, mult and shift."""
    s_in, zp_in = per_tensor(x)
    s_out, zp_out = per_tensor(y)
    bias = int_bias(graph, bname, s_in * s_w)
    if np.any(zp_w):
        folded = weight_zero_point_bias(bias, w2d, zp_w, op.name)
        params["wzp"] = 1
    else:
        folded = fold_input_zero_point(bias, w2d, zp_in, op.name)
    mult, shift = requant_params(s_in, s_w, s_out, f"{op.name}: {x.name} x {wname} / {y.name}", graph.numerics)
    lo, hi = act_bounds_int8(fused, zp_out, s_out, op.name, graph.numerics)
    params.update(act_min=lo, act_max=hi, zp_in=zp_in, zp_out=zp_out, numerics=qmath.numerics_code(graph.numerics))
    return dict(bias=folded, mult=mult, shift=shift)


def act_bounds_f32(fused: str | None, where: str) -> tuple[int, int]:
    """Float clamp bounds of a fused activation, as f32 bit patterns."""
    if fused is None:
        return f32_bits(-math.inf), f32_bits(math.inf)
    if fused == "relu":
        return f32_bits(0.0), f32_bits(math.inf)
    if fused == "relu6":
        return f32_bits(0.0), f32_bits(6.0)
    raise TigrisError(f"unsupported fused activation {fused!r}", where)


def epilogue_int8(acc: np.ndarray, mult: np.ndarray, shift: np.ndarray, zp_out: int, lo: int, hi: int,
                  numerics: int = 0) -> np.ndarray:
    """int8 output of int64 accumulators ``[..., OC]`` (bias already included), exactly like the C kernels.

    ``numerics`` is the op's NUMERICS code: 0 onnx (one rounding), 1 tflm (TFLM's double rounding)."""
    q = qmath.requantize_nm(acc, mult, shift, int(numerics)) + int(zp_out)
    return qmath.saturate(q, lo, hi).astype(np.int8)


def epilogue_f32(acc: np.ndarray, lo_bits: int, hi_bits: int) -> np.ndarray:
    from tigris.ops.base import bits_f32

    return np.clip(acc, bits_f32(lo_bits), bits_f32(hi_bits)).astype(np.float32)
