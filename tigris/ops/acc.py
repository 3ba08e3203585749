"""The int32 accumulator kinds: an int8 product over a slice of its input channels, the sum of such partial sums,
and their requantization to int8 (C: ``runtime_c/src/kernels/acc.c``).

An int8 conv or Gemm whose input channels are split into groups ``K_g`` (input-channel groups,
``tigris.passes.k_acc``, docs/memory-planning.md "Weights that do not fit") runs as::

    y = Requantize(AccAdd(... AccAdd(ConvAcc_0(x[K_0]), ConvAcc_1(x[K_1])) ..., ConvAcc_{G-1}(x[K_{G-1}])))

* ``ConvAcc`` (kind ``convacc``) / ``GemmAcc`` (kind ``gemmacc``): int8 activation, int8 constant weight of its
  channels (OHWI rows, ``[OC, K]``), optional int32 bias; the output is the exact int32 accumulator
  ``bias[oc] + sum (x - zp_in) * (w - zp_w[oc])`` over its slice and window (a padded tap adds 0). No requantization
  and no activation. The lowering proves ``|bias| + K * 255 * max|w - zp_w| < 2**31``.
* ``AccAdd`` (kind ``accadd``): the sum of two int32 accumulators of one shape, saturated to int32 (the builder proves
  the running sums of a chain never saturate, so the result is the exact integer).
* ``Requantize`` (kind ``requantize``): the unsplit op's epilogue on an int32 accumulator: per channel (the last
  physical axis) ``clamp(requantize(acc, mult, shift) + zp_out, lo, hi)``, with ``(mult, shift)`` of the attribute
  ``acc_scale`` (``s_in * s_w[oc]``, float64, as the unsplit lowering computes it first) over the output scale.

The sum over the groups is the integer the unsplit kernel accumulates (its folded bias
``bias - zp_in * sum_k w`` is the same sum rearranged), and the requantization is the same function of it, so the
int8 output is bit-identical to the unsplit op's.

The accumulator tensors are int32 without quantization: the plan format stores per-tensor quantization only, and
the requantization's per-channel scales travel as the Requantize op's ``acc_scale`` attribute instead.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.layout import tensor_view_dims
from tigris.ops import _mac, qmath
from tigris.ops._common import same_rows
from tigris.ops._geometry import Window, col_window, padded_band, row_window, window_from_attrs, window_patches
from tigris.ops.base import Lowered, OpKind, TensorView, cols_reason

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
ACC_MAX_PATCH = 65536  # ACC_MAX_PATCH in acc.c: keeps K * 255 * 255 below 2**32 in the check's arithmetic


def _is_acc(graph: AnalyzedGraph, name: str) -> bool:
    t = graph.tensors.get(name)
    return t is not None and t.dtype == "int32" and t.quant is None and name not in graph.weights


def _is_q8(graph: AnalyzedGraph, name: str) -> bool:
    t = graph.tensors.get(name)
    return t is not None and t.dtype == "int8" and t.quant is not None and not t.quant.per_channel \
        and name not in graph.weights


def _acc_consts(graph: AnalyzedGraph, op: Op, w2d: np.ndarray, zp_w: np.ndarray, bname: str | None,
                acc_scale: np.ndarray) -> dict[str, np.ndarray]:
    """weight (OHWI rows, int8), bias (int32 [OC] or empty), wzp (int32 [OC] or empty), after the overflow proof."""
    oc, k = w2d.shape
    bias = _mac.int_bias(graph, bname, acc_scale) if bname else np.zeros(oc, np.int64)
    d = np.abs(w2d.astype(np.int64) - zp_w[:, None]).max(axis=1) if k else np.zeros(oc, np.int64)
    if k > ACC_MAX_PATCH or np.any(np.abs(bias) + k * 255 * d >= _mac.INT32_LIMIT):
        raise TigrisError("int32 accumulator could overflow (bias or reduction too large)", op.name)
    return dict(weight=np.ascontiguousarray(w2d.reshape(-1), np.int8),
                bias=bias.astype(np.int32) if bname else np.zeros(0, np.int32),
                wzp=zp_w.astype(np.int32) if np.any(zp_w) else np.zeros(0, np.int32))


def _acc_of(x: np.ndarray, w: np.ndarray, zp_in: int, low: Lowered) -> np.ndarray:
    """``bias + (x - zp_in) @ (w - zp_w).T`` exactly (int64): ``x`` [P, K], ``w`` [OC, K]."""
    oc = w.shape[0]
    wz = np.asarray(low.consts["wzp"], np.int64)
    b = np.asarray(low.consts["bias"], np.int64)
    wd = w.astype(np.int64) - (wz[:, None] if wz.size else 0)
    acc = (x.astype(np.int64) - zp_in) @ wd.T
    return acc + (b if b.size else np.zeros(oc, np.int64))


def _add_into(acc: np.ndarray, inputs: Sequence[TensorView], out: TensorView) -> np.ndarray:
    """The partial sum ``acc`` (int64, the output band's shape) plus the accumulator input when there is one, as
    int32 (the C kernel's wrapping int32 sum: the builder proves it never wraps)."""
    if len(inputs) > 1:
        acc = acc + same_rows(inputs[1], out).astype(np.int64)
    return acc.astype(np.int32)


class _AccKind(OpKind):
    """What the accumulator kinds share: int8 or int32 activations, checked here instead of the base rule (which
    knows float32 and quantized int8 only)."""

    DTYPES = ("int8 -> int32",)
    INT8_EXACTNESS = "bit-exact"
    SINGLE_INPUT = False

    def unsupported(self, graph: AnalyzedGraph, op: Op) -> str | None:
        acts = [n for n in (*op.inputs, *op.outputs) if n and n not in graph.weights]
        deep = [n for n in acts if len(graph.tensors[n].shape) > 4]
        if deep:
            return f"rank-{len(graph.tensors[deep[0]].shape)} tensor {deep[0]}"
        return self.check_acc(graph, op)

    def check_acc(self, graph: AnalyzedGraph, op: Op) -> str | None:
        raise NotImplementedError


class _Partial(_AccKind):
    """ConvAcc and GemmAcc: the int8 x int8 -> int32 partial product, plus (optional fourth input) an int32
    accumulator of the output's shape read at the output's own pixels: ``out = acc_in + partial``, so a chain of
    groups adds into one accumulator (in place: each element is stored after its ``acc_in`` element is read)."""

    in_place = True  # only acc_in has the output's dtype and shape

    def check_acc(self, graph: AnalyzedGraph, op: Op) -> str | None:
        ins = list(op.inputs) + ["", "", ""]
        x, w, b, acc_in = ins[0], ins[1], ins[2], ins[3]
        if not _is_q8(graph, x) or len(op.outputs) != 1 or not _is_acc(graph, op.outputs[0]) or len(op.inputs) > 4:
            return "a partial product reads a per-tensor int8 activation and writes an int32 accumulator"
        if acc_in and (not _is_acc(graph, acc_in) or graph.tensors[acc_in].shape != graph.tensors[op.outputs[0]].shape
                       or graph.tensors[acc_in].layout != graph.tensors[op.outputs[0]].layout):
            return "the accumulator added into is not an int32 accumulator of the output's shape and layout"
        if w not in graph.weights or graph.tensors.get(w) is None or graph.tensors[w].dtype != "int8" or \
                graph.tensors[w].quant is None:
            return "its weight is not a constant int8 tensor"
        if b and (b not in graph.weights or graph.tensors.get(b) is None or graph.tensors[b].dtype != "int32"):
            return "its bias is not a constant int32 tensor"
        if op.attrs.get("fused_activation"):
            return "a partial sum takes no activation (Requantize does)"
        return None

    def macs(self, graph: AnalyzedGraph, op: Op, out_rows: int | None = None) -> int:
        return _mac.MacKind.macs(self, graph, op, out_rows)  # type: ignore[arg-type]

    def same_rows_inputs(self, graph: AnalyzedGraph, op: Op) -> tuple[int, ...]:
        return (3,) if len(op.inputs) > 3 and op.inputs[3] else ()

    @staticmethod
    def acc_inputs(op: Op) -> list[str]:
        """The lowered op's activation inputs: x, and the accumulator added into when there is one."""
        return [op.inputs[0]] + ([op.inputs[3]] if len(op.inputs) > 3 and op.inputs[3] else [])


class ConvAcc(_Partial):
    name = "convacc"
    COLS = "window"  # the executor makes the pads of a column band relative (COL_WINDOW: kw, sw, dw, pl, pr)
    ir_ops = ("ConvAcc",)
    ONNX_OPS = {"Conv": "int8, group 1, run as input-channel groups when one output channel's weights do not fit: "
                        "the exact int32 partial sum of one group"}
    TILING = "spatial"
    PARAMS = ("kh", "kw", "sh", "sw", "dh", "dw", "pt", "pl", "pb", "pr", "zp_in", "patch")
    CONSTS = ("weight", "bias", "wzp")

    def check_acc(self, graph: AnalyzedGraph, op: Op) -> str | None:
        why = super().check_acc(graph, op)
        if why:
            return why
        if any(k not in op.attrs for k in ("kernel_shape", "strides", "dilations", "pads")):
            return "attributes are not explicit"
        if int(op.attrs.get("group", 1)) != 1:
            return "a grouped conv's partial sum is not supported"
        rank = len(graph.tensors[op.inputs[0]].shape)
        if rank != (3 if len(op.attrs["kernel_shape"]) == 1 else 4):
            return f"ConvAcc on a rank-{rank} input"
        return None

    def window(self, op: Op) -> tuple[int, int, int, int]:
        return row_window(op.attrs)

    def col_local(self, graph: AnalyzedGraph, op: Op) -> str | None:
        if col_window(op.attrs) is None:
            return "1-D ConvAcc"
        return cols_reason(graph, op, per_pixel=False)

    def col_window(self, op: Op) -> tuple[int, int, int, int] | None:
        return col_window(op.attrs)

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        one_d = len(op.attrs["kernel_shape"]) == 1
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        wname = op.inputs[1]
        bname = _mac.optional_input(op, 2)
        win = window_from_attrs(op.attrs, one_d)
        w_raw = np.asarray(graph.weights[wname])
        if one_d:
            w_raw = w_raw[..., None]
        oc, ic, kh, kw = w_raw.shape
        if (kh, kw) != (win.kh, win.kw) or x.shape[1] != ic or y.shape[1] != oc:
            raise TigrisError(f"inconsistent ConvAcc shapes: X {x.shape}, W {w_raw.shape}, Y {y.shape}", op.name)
        w_q, s_w, zp_w = _mac.int8_weights_zp(graph, wname, oc)
        if one_d:
            w_q = w_q[..., None]
        s_in, zp_in = _mac.per_tensor(x)
        k = kh * kw * ic
        w2d = w_q.transpose(0, 2, 3, 1).reshape(oc, k)  # OHWI rows: the patch order (kh, kw, ic)
        consts = _acc_consts(graph, op, w2d, zp_w, bname, s_in * s_w)
        params = dict(win.params(), zp_in=zp_in, patch=k)
        out_pixels = y.numel // oc if oc else 0
        return Lowered(kind=self.name, op_name=op.name, inputs=self.acc_inputs(op), outputs=[y.name], params=params,
                       consts=consts, macs=int(out_pixels * oc * k))

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        if out.rows == 0:
            return
        x, p = inputs[0], low.params
        win = Window.from_params(p)
        n, _, ow, oc = out.dims
        zp = int(p["zp_in"])
        xp = padded_band(x, win, out.row0, out.row0 + out.rows, zp)  # padded taps hold zp: (x - zp) = 0
        pt = window_patches(xp, win, out.rows, ow).reshape(n * out.rows * ow, -1)
        w = np.asarray(low.consts["weight"]).reshape(oc, -1)
        acc = _acc_of(pt, w, zp, low).reshape(out.data.shape)
        out.data[...] = _add_into(acc, inputs, out)


class GemmAcc(_Partial):
    name = "gemmacc"
    ir_ops = ("GemmAcc",)
    ONNX_OPS = {"Gemm": "int8, run as input-channel groups when one output channel's weights do not fit: the exact "
                        "int32 partial sum of one group"}
    PARAMS = ("zp_in", "k")
    CONSTS = ("weight", "bias", "wzp")

    def check_acc(self, graph: AnalyzedGraph, op: Op) -> str | None:
        why = super().check_acc(graph, op)
        if why:
            return why
        if np.asarray(graph.weights[op.inputs[1]]).ndim != 2:
            return "not a product with a constant [OC, K] weight"
        return None

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        wname = op.inputs[1]
        w_raw = np.asarray(graph.weights[wname])
        oc, k = w_raw.shape
        if k < 1 or x.numel % k or y.numel != x.numel // k * oc:
            raise TigrisError(f"inconsistent GemmAcc shapes: A {x.shape}, W {w_raw.shape}, Y {y.shape}", op.name)
        w_q, s_w, zp_w = _mac.int8_weights_zp(graph, wname, oc)
        s_in, zp_in = _mac.per_tensor(x)
        consts = _acc_consts(graph, op, np.asarray(w_q), zp_w, _mac.optional_input(op, 2), s_in * s_w)
        return Lowered(kind=self.name, op_name=op.name, inputs=self.acc_inputs(op), outputs=[y.name],
                       params=dict(zp_in=zp_in, k=k), consts=consts, macs=x.numel // k * oc * k)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        k = int(low.params["k"])
        w = np.asarray(low.consts["weight"]).reshape(-1, k)
        a = np.asarray(inputs[0].data).reshape(-1, k)
        out.data[...] = _add_into(_acc_of(a, w, int(low.params["zp_in"]), low).reshape(out.data.shape), inputs, out)


class _PerPixel(_AccKind):
    """AccAdd and Requantize: output pixel p reads input pixel p only (column tiles cut them like any per-pixel op)."""

    COLS = "pixel"
    TILING = "pointwise"

    def col_local(self, graph: AnalyzedGraph, op: Op) -> str | None:
        return cols_reason(graph, op, per_pixel=True)


class AccAdd(_PerPixel):
    name = "accadd"
    COLS = "pixel"
    ir_ops = ("AccAdd",)
    ONNX_OPS = {"Conv": "int8 input-channel groups: the int32 running sum", "Gemm": "likewise"}
    DTYPES = ("int32",)
    TILING = "pointwise"
    in_place = True  # out[i] is stored after a[i] and b[i] are read
    PARAMS = ()
    CONSTS = ()

    def check_acc(self, graph: AnalyzedGraph, op: Op) -> str | None:
        if len(op.inputs) != 2 or len(op.outputs) != 1 or not all(_is_acc(graph, n) for n in (*op.inputs, *op.outputs)):
            return "AccAdd adds two int32 accumulators"
        y = graph.tensors[op.outputs[0]]
        if any(graph.tensors[n].shape != y.shape or graph.tensors[n].layout != y.layout for n in op.inputs):
            return "AccAdd's operands differ in shape or layout"
        return None

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        y = graph.tensors[op.outputs[0]]
        return Lowered(kind=self.name, op_name=op.name, inputs=list(op.inputs), outputs=[y.name], params={},
                       consts={}, macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        s = same_rows(inputs[0], out).astype(np.int64) + same_rows(inputs[1], out).astype(np.int64)
        out.data[...] = np.clip(s, INT32_MIN, INT32_MAX).astype(np.int32)


class Requantize(_PerPixel):
    name = "requantize"
    COLS = "pixel"
    ir_ops = ("Requantize",)
    ONNX_OPS = {"Conv": "int8 input-channel groups: the int32 sum to int8 with the op's requantization and "
                        "fused activation", "Gemm": "likewise"}
    DTYPES = ("int32 -> int8",)
    TILING = "pointwise"
    PARAMS = ("zp_out", "act_min", "act_max", "numerics")
    CONSTS = ("mult", "shift")

    def check_acc(self, graph: AnalyzedGraph, op: Op) -> str | None:
        if len(op.inputs) != 1 or len(op.outputs) != 1 or not _is_acc(graph, op.inputs[0]) or \
                not _is_q8(graph, op.outputs[0]):
            return "Requantize maps an int32 accumulator to a per-tensor int8 activation"
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        s = op.attrs.get("acc_scale")
        if x.shape != y.shape or x.layout != y.layout or not s or \
                len(s) not in (1, int(tensor_view_dims(y)[3])):
            return "Requantize needs one accumulator scale per channel (the last physical axis) of its own shape"
        return None

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        y = graph.tensors[op.outputs[0]]
        s_out, zp_out = _mac.per_tensor(y)
        c = int(tensor_view_dims(y)[3])
        acc_scale = np.asarray(op.attrs["acc_scale"], dtype=np.float64)
        if acc_scale.size == 1:
            acc_scale = np.full(c, acc_scale[0])
        if not np.all(np.isfinite(acc_scale)) or np.any(acc_scale <= 0):
            raise TigrisError("accumulator scales must be positive and finite", op.name)
        # _mac.requant_params computes (s_in * s_w) / s_out in float64: acc_scale is that product, so the
        # multipliers are the unsplit op's
        mult, shift = qmath.quantize_multipliers(acc_scale / s_out, f"{op.name}: {op.inputs[0]} / {y.name}",
                                                 graph.numerics)
        lo, hi = _mac.act_bounds_int8(op.attrs.get("fused_activation"), zp_out, s_out, op.name, graph.numerics)
        params = dict(zp_out=zp_out, act_min=lo, act_max=hi, numerics=qmath.numerics_code(graph.numerics))
        return Lowered(kind=self.name, op_name=op.name, inputs=[op.inputs[0]], outputs=[y.name], params=params,
                       consts=dict(mult=mult, shift=shift), macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        p = low.params
        acc = same_rows(inputs[0], out).astype(np.int64)
        res = _mac.epilogue_int8(acc, low.consts["mult"], low.consts["shift"], p["zp_out"], p["act_min"],
                                 p["act_max"], p.get("numerics", 0))
        out.data[...] = res.reshape(out.data.shape)
