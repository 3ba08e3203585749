"""The ``conv`` kind: regular and grouped 2-D convolution, and Conv1D run as a conv whose L axis is the row axis.

Runtime form (C: ``runtime_c/src/kernels/conv.c``). Activations are NHWC (a 1-D signal is ``{N, L, 1, C}``).
The convolution is a GEMM per group: output pixels x (KH*KW*ICg patch) times (patch x OCg). The weights are
prepacked at lowering into *panels* of ``NR`` output channels so the C micro-kernel streams them in order::

    weight[g][panel][k][j] = W[oc = g*OCg + panel*NR + j][kh][kw][ic],   k = (kh*KW + kw)*ICg + ic

with output channels beyond OCg zero-filled. Blob shape ``[G, ceil(OCg/NR), K, NR]``. Float uses ``NR = 8``
(``PACK_NR``: the C kernel broadcasts one patch value against 8 weights); int8 uses ``NR = 1`` (``PACK_NR_S8``),
which is exactly OHWI, because its kernel takes dot products of patch rows with weight rows. Param ``pack_nr``
records it. A 1x1 unpadded conv reads its patch rows straight from the input; any other float conv copies
``CONV_MR`` patches at a time into the planned scratch (blocked im2col), ``CONV_MR * K * 4`` bytes; int8 always
gathers ``CONV_MR`` patches widened to int16, ``CONV_MR * K * 2`` bytes (mirrors ``tgrs_conv_scratch_size``).

int8: see ``tigris/ops/_mac.py`` (zero point folded into the bias, per-channel Q0.31 requantization, clamp).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.layout import tensor_view_dims
from tigris.ops import _mac
from tigris.ops._geometry import Window, padded_band, window_from_attrs, window_patches
from tigris.ops.base import Lowered, TensorView

PACK_NR = 8  # float output channels per weight panel; the C kernel checks the `pack_nr` param equals its CONV_NR
PACK_NR_S8 = 1  # int8 weights are plain OHWI rows (panels of one channel)
# A row band of a narrow output (a 1-D conv, a width-1 image) counts its own pixels for the scratch, as a column
# band does; False counts CONV_MR for every full-width band (the earlier rule, a baseline of bench/plan_quality.py).
NARROW_ROWS = True
CONV_MR = 4  # output pixels per micro-kernel call (rows of the im2col block); CONV_MR in conv.c
CONV_MAX_PATCH = 65536  # keeps every int8 dot product below 2**30 whatever the plan holds; CONV_MAX_PATCH in conv.c


def pack_panels(w_g: np.ndarray, nr: int = PACK_NR) -> np.ndarray:
    """``[G, OCg, K]`` -> ``[G, ceil(OCg/nr), K, nr]`` with zero-filled tail channels."""
    g, ocg, k = w_g.shape
    npan = -(-ocg // nr)
    padded = np.zeros((g, npan * nr, k), dtype=w_g.dtype)
    padded[:, :ocg] = w_g
    return np.ascontiguousarray(padded.reshape(g, npan, nr, k).transpose(0, 1, 3, 2))


def unpack_panels(blob: np.ndarray, g: int, ocg: int, k: int, nr: int = PACK_NR) -> np.ndarray:
    """Inverse of :func:`pack_panels`: ``[G, OCg, K]``."""
    npan = -(-ocg // nr)
    return blob.reshape(g, npan, k, nr).transpose(0, 1, 3, 2).reshape(g, npan * nr, k)[:, :ocg]


def is_direct(win: Window) -> bool:
    """A 1x1 unpadded conv: each output pixel's patch is one contiguous input pixel, so no im2col is needed."""
    return win.kh == 1 and win.kw == 1 and win.pt == 0 and win.pl == 0 and win.pb == 0 and win.pr == 0


class Conv(_mac.WindowedMacKind):
    name = "conv"
    COLS = "window"
    ir_ops = ("Conv", "Conv1D")
    ONNX_OPS = {"Conv": "2-D and 1-D ([N, C, L]), group (grouped), kernel_shape, strides, dilations, pads, auto_pad; "
                        "bias; fused Relu/Relu6/Clip(0, 6); int8 weights per channel or per tensor, weight zero points"}
    # float32 kernels whose weights the plan may store as IEEE halves (compile --weights fp16, param wf16)
    DTYPES = ("float32", "float32 with float16 weights", "int8")
    PARAMS = (
        "kh", "kw", "sh", "sw", "dh", "dw", "pt", "pl", "pb", "pr",
        "group",
        "act_min", "act_max",  # int8 clamp bounds (fused activation included)
        "fmin", "fmax",  # float clamp bounds as f32 bits (-inf/inf when no activation)
        "zp_in", "zp_out",
        "pack_nr",  # PACK_NR the weights were packed with
        "patch",  # K = KH*KW*ICg, the patch length of one group
        "numerics",  # int8: 0 onnx, 1 tflm requantization (docs/numerics.md)
        "wzp",  # int8: 1 when the weights have zero points (the bias const is [bias, zp_w])
        "wf16",  # float: 1 when the weight const holds IEEE halves (widened into the scratch by the kernel)
    )
    CONSTS = ("weight", "bias", "mult", "shift")

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        one_d = op.op_type == "Conv1D" or len(op.attrs["kernel_shape"]) == 1
        x = graph.tensors[op.inputs[0]]
        y = graph.tensors[op.outputs[0]]
        wname = op.inputs[1]
        bname = _mac.optional_input(op, 2)
        win = window_from_attrs(op.attrs, one_d)
        group = int(op.attrs.get("group", 1))
        int8 = _mac.is_int8_op(graph, op)
        w_raw = np.asarray(graph.weights[wname])
        if one_d:
            w_raw = w_raw[..., None]  # [OC, ICg, K] -> [OC, ICg, K, 1]: the L axis is the row (H) axis
        oc, icg, kh, kw = w_raw.shape
        cin = x.shape[1]
        if (kh, kw) != (win.kh, win.kw) or group < 1 or cin != icg * group or oc % group:
            raise TigrisError(f"inconsistent conv shapes: X {x.shape}, W {w_raw.shape}, group {group}", op.name)
        ocg = oc // group
        k = kh * kw * icg
        if k > CONV_MAX_PATCH:
            raise TigrisError(f"conv patch of {k} values exceeds the runtime's {CONV_MAX_PATCH}", op.name)
        params = dict(win.params(), group=group, pack_nr=PACK_NR_S8 if int8 else PACK_NR, patch=k)
        fused = op.attrs.get("fused_activation")

        if int8:
            w_q, s_w, zp_w = _mac.int8_weights_zp(graph, wname, oc)
            if one_d:
                w_q = w_q[..., None]
            w2d = w_q.transpose(0, 2, 3, 1).reshape(oc, k)  # OHWI rows: the patch order (kh, kw, ic)
            rq = _mac.int8_mac_params(graph, op, x, y, wname, bname, w2d, s_w, zp_w, fused, params)
            consts = dict(
                weight=pack_panels(w2d.reshape(group, ocg, k).astype(np.int8), PACK_NR_S8),
                **rq,
            )
        else:
            w_f = _mac.float_weights(graph, wname)
            if one_d:
                w_f = w_f[..., None]
            w2d = w_f.transpose(0, 2, 3, 1).reshape(oc, k).astype(np.float32)
            lo, hi = _mac.act_bounds_f32(fused, op.name)
            params.update(fmin=lo, fmax=hi)
            consts = dict(weight=_mac.stored_float_weight(graph, pack_panels(w2d.reshape(group, ocg, k)), params, op.name),
                          bias=_mac.float_bias(graph, bname, oc))

        n = x.shape[0]
        out_pixels = int(np.prod(y.shape)) // oc
        return Lowered(
            kind=self.name, op_name=op.name, inputs=[x.name], outputs=[y.name], params=params, consts=consts,
            macs=int(out_pixels * oc * k) if n else 0,
        )

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        x = inputs[0]
        p = low.params
        if out.rows == 0:
            return
        win = Window.from_params(p)
        g = int(p["group"])
        n, _, ow, oc = out.dims
        cin = x.dims[3]
        icg, ocg = cin // g, oc // g
        k = win.kh * win.kw * icg
        int8 = out.dtype == "int8"
        oh0, oh1 = out.row0, out.row0 + out.rows
        xp = padded_band(x, win, oh0, oh1, int(p.get("zp_in", 0)) if int8 else 0)
        pt = window_patches(xp, win, out.rows, ow)  # [N, R, OW, KH, KW, C]
        pt = pt.reshape(n * out.rows * ow, win.kh, win.kw, g, icg).transpose(3, 0, 1, 2, 4)
        pt = pt.reshape(g, n * out.rows * ow, k)
        w = unpack_panels(np.asarray(low.consts["weight"]), g, ocg, k, int(p["pack_nr"]))
        # float64 products are exact for int8 (|acc| < 2**31 is proven at lowering), and accurate for float32.
        if int8 and p.get("wzp", 0):
            # exact zero points: sum (x - zp_in) * (w - zp_w), padded taps (value zp_in) contribute 0
            bz = np.asarray(low.consts["bias"], dtype=np.int64)
            zw = bz[oc:].reshape(g, ocg)
            xs = pt.astype(np.int64) - int(p["zp_in"])
            acc = np.concatenate([xs[i] @ (w[i].astype(np.int64) - zw[i][:, None]).T for i in range(g)],
                                 axis=1) + bz[:oc]
            res = _mac.epilogue_int8(acc, low.consts["mult"], low.consts["shift"], p["zp_out"], p["act_min"],
                                     p["act_max"], p.get("numerics", 0))
            out.data[...] = res.reshape(out.data.shape)
            return
        acc = np.concatenate([pt[i].astype(np.float64) @ w[i].astype(np.float64).T for i in range(g)], axis=1)
        if int8:
            acc = acc.astype(np.int64) + np.asarray(low.consts["bias"], dtype=np.int64)
            res = _mac.epilogue_int8(acc, low.consts["mult"], low.consts["shift"], p["zp_out"], p["act_min"],
                                     p["act_max"], p.get("numerics", 0))
        else:
            acc = acc + np.asarray(low.consts["bias"], dtype=np.float64)
            res = _mac.epilogue_f32(acc, p["fmin"], p["fmax"])
        out.data[...] = res.reshape(out.data.shape)

    def scratch_bytes(self, low: Lowered, graph: AnalyzedGraph | None, out_rows: int) -> int:
        """``CONV_MR`` patch rows of ``patch`` elements: float32 im2col rows (none for a direct 1x1 unpadded conv),
        or int16-widened int8 rows (always). Mirrors ``tgrs_conv_scratch_size``."""
        return self.band_scratch_bytes(low, graph, out_rows, None)

    def band_scratch_bytes(self, low: Lowered, graph: AnalyzedGraph | None, out_rows: int,
                           out_cols: int | None) -> int:
        """A float im2col stores one patch row per pixel of its block, and an int8 band of fewer than ``CONV_MR``
        pixels widens one patch at a time (conv.c ``conv_s8_narrow``): a band of fewer than ``CONV_MR`` pixels
        (``out_rows * out_cols``, a COLS unit's one- or two-pixel tile) needs only that many patch rows (the C
        kernel checks the same per tile). ``out_cols`` None: the full width, whose pixels a row band of a narrow
        output (a 1-D conv's one pixel per row, a width-1 image) may count too; counted as ``CONV_MR`` without the
        graph."""
        k = int(low.params["patch"])
        if out_cols is None and NARROW_ROWS and graph is not None and low.outputs and low.outputs[0] in graph.tensors:
            out_cols = int(tensor_view_dims(graph.tensors[low.outputs[0]])[2])
        rows = CONV_MR if out_cols is None else max(1, min(CONV_MR, out_rows * out_cols))
        if np.asarray(low.consts["weight"]).dtype == np.int8:
            return rows * k * 2
        wide = _mac.f16_scratch_bytes(low)  # the widened weights come first (tgrs_f16_view)
        if is_direct(Window.from_params(low.params)):
            return wide
        return wide + rows * k * 4
