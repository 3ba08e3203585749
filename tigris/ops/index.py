"""Index ops on the last, small tensors of a classifier, segmenter or detector: ArgMax/ArgMin (kind ``argmax``),
TopK (kind ``topk``) and NonMaxSuppression (kind ``nms``). All are structural (they need the whole tensor).

Index outputs are int32 inside the plan (pass index_ops); a graph output keeps its declared int64 and the host
widens it. Every kernel walks the tensors through per-logical-axis element strides (``IS*``/``OS*``, 0 on an axis of
size 1), so any physical layout of input and output works; ``D0..D3`` are the logical dims padded on the left to 4.

* argmax: along logical axis ``AXIS`` the index of the largest (``MIN`` 0) or smallest (``MIN`` 1) element, the
  first of equal ones (the last with ``LAST``). int8 compares the codes (the scale is positive, so the order is the
  real values' order: bit-exact against the model as written). ``PIXEL`` 1: the reduction runs over the channels
  of an ``nhwc`` image into one channel (``[N, C, H, W] -> [N, 1, H, W]``, pass index_ops rule 2b), per pixel: the
  kernel then reads the views' own dims instead of ``D*``/``IS*``/``OS*``, so the op runs on row bands and column
  tiles like an element-wise op (the one op of the kind that is not structural).
* topk: along ``AXIS`` the ``K`` largest (``LARGEST`` 1) or smallest elements, best first, equal values in index
  order (ONNX's order); ``INDICES`` 0 writes the values (float32, or int8 codes of the input's encoding), 1 their
  int32 indices. Pick j is the best element strictly after pick j-1 in that total order, so no scratch is needed.
* nms: ONNX NonMaxSuppression on boxes ``[B, N, 4]`` and scores ``[B, C, N]`` (float32, or int8 read as their
  dequantized values ``(float)(q - ZP) * SCALE``: ``BQ``/``SQ``, ``BSCALE``/``SSCALE``, ``BZP``/``SZP``), per batch and class in
  score order (equal scores by box index) greedily keeping a box whose IoU with every box kept before in that class
  is not above ``IOU``, at most ``MAXPC`` per class, a candidate only if its score is above ``THR`` (``HAS_THR``).
  The IoU is ONNX's, step by step in float32 (corner or ``CENTER`` boxes). The output ``[B * CT * min(MAXPC, N), 3]``
  holds the selected ``(batch, class, box)`` rows first, then rows of -1: the plan marks it row-counted
  (docs/format.md, "Index outputs"). One op of a per-class split (pass index_ops rule 4b) runs the ``C`` classes of
  its scores as classes ``C0 ..`` of the ``CT`` the output counts; its optional third input holds the rows of the
  classes before (the previous op's output), which it keeps (no copy when it runs in place over them) and appends
  its selected rows after their valid ones.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.layout import to_physical
from tigris.ops._common import TileError, per_tensor
from tigris.ops.base import Lowered, OpKind, TensorView, bits_f32, cols_reason, f32_bits


def logical_strides(t) -> list[int]:
    """Element stride in the stored (physical) order of each logical axis of ``t``; 0 on an axis of size 1."""
    n = int(np.prod(t.shape)) if t.shape else 1
    phys = to_physical(np.arange(n, dtype=np.int64).reshape(t.shape), t.shape, t.layout).reshape(-1)
    pos = np.empty(n, dtype=np.int64)
    pos[phys] = np.arange(n, dtype=np.int64)  # logical flat index -> physical offset
    out = []
    for i, d in enumerate(t.shape):
        if d == 1:
            out.append(0)
            continue
        e = [0] * len(t.shape)
        e[i] = 1
        out.append(int(pos[int(np.ravel_multi_index(e, t.shape))] - pos[0]))
    return out


def _pad4(v: list[int], fill: int) -> list[int]:
    return [fill] * (4 - len(v)) + list(v)


def _act_kind(graph: AnalyzedGraph, name: str) -> str | None:
    """"float", "int8" or "int32" for an activation the index kinds take, else None."""
    t = graph.tensors[name]
    if t.dtype == "float32" and t.quant is None:
        return "float"
    if t.dtype == "int8" and t.quant is not None and not t.quant.per_channel:
        return "int8"
    if t.dtype == "int32" and t.quant is None:
        return "int32"
    return None


class _IndexKind(OpKind):
    TILING = "structural"
    SINGLE_INPUT = False
    DTYPES = ("float32", "int8")

    def unsupported(self, graph: AnalyzedGraph, op: Op) -> str | None:
        why = self.check_operands(graph, op)
        if why:
            return why
        for n in (*op.inputs, *op.outputs):
            if not n:
                continue
            t = graph.tensors[n]
            if len(t.shape) > 4:
                return f"rank-{len(t.shape)} tensor {n} (runtime tensors have at most 4 dimensions)"
            if _act_kind(graph, n) is None:
                return f"activation {n} has dtype {t.dtype}{' with' if t.quant else ' without'} quantization"
        return self.check_dtype(graph, op, any(_act_kind(graph, n) == "int8" for n in op.inputs if n))

    def _geometry(self, x, y, axis: int, out_axis_len: int | None, keep: bool) -> dict[str, int]:
        """D/IS/OS params of the module doc for reducing (``out_axis_len`` None) or selecting along ``axis``."""
        r = len(x.shape)
        xs, ys = logical_strides(x), logical_strides(y)
        os_ = []
        for i in range(r):
            if i == axis:
                os_.append(ys[i] if out_axis_len is not None else 0)
            else:
                os_.append(ys[i if keep or i < axis else i - 1])
        d, is4, os4 = _pad4(list(x.shape), 1), _pad4(xs, 0), _pad4(os_, 0)
        p = {"AXIS": axis + 4 - r}
        for i in range(4):
            p[f"D{i}"], p[f"IS{i}"], p[f"OS{i}"] = int(d[i]), int(is4[i]), int(os4[i])
        return p


def _kept(p: dict) -> list[tuple[int, int]]:
    """(input base, output base) offsets of every position with the axis index 0."""
    ax = p["AXIS"]
    dims = [p[f"D{i}"] if i != ax else 1 for i in range(4)]
    out = []
    for idx in np.ndindex(*dims):
        out.append((sum(idx[i] * p[f"IS{i}"] for i in range(4)), sum(idx[i] * p[f"OS{i}"] for i in range(4))))
    return out


class ArgMax(_IndexKind):
    name = "argmax"
    ir_ops = ("ArgMax", "ArgMin")
    ONNX_OPS = {"ArgMax": "any axis (negative too), keepdims, select_last_index; int64 output stored as int32",
                "ArgMin": "any axis (negative too), keepdims, select_last_index; int64 output stored as int32"}
    INT8_EXACTNESS = "bit-exact (the codes are compared)"
    PARAMS = ("MIN", "LAST", "AXIS", "D0", "D1", "D2", "D3", "IS0", "IS1", "IS2", "IS3", "OS0", "OS1", "OS2", "OS3",
              "PIXEL")
    TILING_DOC = "pointwise when it reduces an nhwc image's channels into one (per pixel), else structural"
    COLS = "pixel"  # PIXEL ops only (col_local): the kernel reads the band's own width

    def _per_pixel(self, graph: AnalyzedGraph, op: Op) -> bool:
        """Over the channels of an nhwc image into one channel: every output pixel reads its own input pixel."""
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        return (x.layout == "nhwc" and y.layout == "nhwc" and len(x.shape) == 4 and len(y.shape) == 4
                and int(op.attrs.get("axis", 0)) % 4 == 1 and tuple(y.shape) == (x.shape[0], 1, *x.shape[2:]))

    def tiling(self, graph: AnalyzedGraph, op: Op):
        return "pointwise" if self._per_pixel(graph, op) else "structural"

    def col_local(self, graph: AnalyzedGraph, op: Op) -> str | None:
        if not self._per_pixel(graph, op):
            return f"{op.op_type} does not reduce the channels pixel by pixel"
        return cols_reason(graph, op, per_pixel=True)

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        if len([i for i in op.inputs if i]) != 1:
            return "expects one input"
        if graph.tensors[op.outputs[0]].dtype != "int32":
            return f"output {op.outputs[0]} is {graph.tensors[op.outputs[0]].dtype} (index_ops states int32)"
        return None

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        axis = int(op.attrs.get("axis", 0)) % max(1, len(x.shape))
        p = self._geometry(x, y, axis, None, bool(int(op.attrs.get("keepdims", 1))))
        p.update(MIN=int(op.op_type == "ArgMin"), LAST=int(op.attrs.get("select_last_index", 0)),
                 PIXEL=int(self._per_pixel(graph, op)))
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=p, macs=x.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        p = low.params
        if p.get("PIXEL"):  # the band's pixels, each over its own channels (index.c argmax_pixels)
            xv = inputs[0]
            lo = out.row0 - xv.row0
            if lo < 0 or out.row0 + out.rows > xv.row0 + xv.rows or xv.data.shape[2] != out.data.shape[2]:
                raise TileError("ArgMax input band misses output pixels")
            v = xv.data[:, lo:lo + out.rows].astype(np.float64)
            best, bi = v[..., 0], np.zeros(v.shape[:3], np.int64)
            for r in range(1, v.shape[3]):  # the kernel's comparisons, in its order
                better = v[..., r] < best if p["MIN"] else v[..., r] > best
                if p["LAST"]:
                    better |= v[..., r] == best
                best, bi = np.where(better, v[..., r], best), np.where(better, r, bi)
            out.data[...] = bi[..., None].astype(out.data.dtype)
            return
        x = inputs[0].data.reshape(-1)
        y = out.data.reshape(-1)
        n, st = p[f"D{p['AXIS']}"], p[f"IS{p['AXIS']}"]
        for ib, ob in _kept(p):
            v = x[ib + st * np.arange(n)]
            if p["MIN"]:
                v = -v.astype(np.float64)
            v = v.astype(np.float64)
            best = v.max()
            hit = np.flatnonzero(v == best)
            y[ob] = (hit[-1] if p["LAST"] else hit[0]) if hit.size else 0


class TopK(_IndexKind):
    name = "topk"
    ir_ops = ("TopKValues", "TopKIndices")
    ONNX_OPS = {"TopK": "constant k, any axis, largest and smallest, sorted (best first, equal values in index "
                        "order); values float32 or int8, indices int64 stored as int32"}
    INT8_EXACTNESS = "bit-exact (the codes are selected and copied)"
    PARAMS = ("INDICES", "LARGEST", "K", "AXIS", "D0", "D1", "D2", "D3", "IS0", "IS1", "IS2", "IS3", "OS0", "OS1",
              "OS2", "OS3")

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        if len([i for i in op.inputs if i]) != 1 or "k" not in op.attrs:
            return "k is not a constant"
        return None

    def check_dtype(self, graph: AnalyzedGraph, op: Op, int8: bool) -> str | None:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if op.op_type == "TopKIndices":
            return None if y.dtype == "int32" else f"indices output {y.name} is {y.dtype}"
        if (_act_kind(graph, x.name) == "int8") != (_act_kind(graph, y.name) == "int8"):
            return "values output and input differ in dtype"
        if int8 and per_tensor(x) != per_tensor(y):
            return "int8 values output has another encoding than its input"
        return None

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        axis = int(op.attrs["axis"]) % len(x.shape)
        k = int(op.attrs["k"])
        if not 1 <= k <= x.shape[axis] or y.shape[axis] != k:
            raise TigrisError(f"TopK k={k} does not fit axis {axis} of {x.shape}", op.name)
        p = self._geometry(x, y, axis, k, True)
        p.update(INDICES=int(op.op_type == "TopKIndices"), LARGEST=int(op.attrs.get("largest", 1)), K=k)
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=p, macs=x.numel * k)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        p = low.params
        x = inputs[0].data.reshape(-1)
        y = out.data.reshape(-1)
        ax = p["AXIS"]
        n, st, ost = p[f"D{ax}"], p[f"IS{ax}"], p[f"OS{ax}"]
        for ib, ob in _kept(p):
            v = x[ib + st * np.arange(n)].astype(np.float64)
            key = -v if p["LARGEST"] else v
            order = np.lexsort((np.arange(n), key))[:p["K"]]  # by value, then by index
            for j, i in enumerate(order):
                y[ob + j * ost] = i if p["INDICES"] else x[ib + st * i]


def _iou_above(a, b, center: int, thr) -> bool:
    """ONNX's suppression test of two boxes, every step a float32 operation (as the C kernel does it)."""
    f = np.float32
    a, b = [f(v) for v in a], [f(v) for v in b]
    if center == 0:
        ax0, ax1 = min(a[1], a[3]), max(a[1], a[3])
        bx0, bx1 = min(b[1], b[3]), max(b[1], b[3])
        ay0, ay1 = min(a[0], a[2]), max(a[0], a[2])
        by0, by1 = min(b[0], b[2]), max(b[0], b[2])
    else:
        ax0, ax1 = f(a[0] - a[2] / f(2)), f(a[0] + a[2] / f(2))
        bx0, bx1 = f(b[0] - b[2] / f(2)), f(b[0] + b[2] / f(2))
        ay0, ay1 = f(a[1] - a[3] / f(2)), f(a[1] + a[3] / f(2))
        by0, by1 = f(b[1] - b[3] / f(2)), f(b[1] + b[3] / f(2))
    ix0, ix1 = max(ax0, bx0), min(ax1, bx1)
    if ix1 <= ix0:
        return False
    iy0, iy1 = max(ay0, by0), min(ay1, by1)
    if iy1 <= iy0:
        return False
    inter = f(f(ix1 - ix0) * f(iy1 - iy0))
    if inter <= 0:
        return False
    area_a = f(f(ax1 - ax0) * f(ay1 - ay0))
    area_b = f(f(bx1 - bx0) * f(by1 - by0))
    union = f(f(area_a + area_b) - inter)
    if area_a <= 0 or area_b <= 0 or union <= 0:
        return False
    return bool(f(inter / union) > thr)


# False: int8 boxes and scores are dequantized by DequantizeLinear ops first (bench/plan_quality.py's earlier rules).
INT8_INPUTS = True


class NonMaxSuppression(_IndexKind):
    name = "nms"
    ir_ops = ("NonMaxSuppression",)
    ONNX_OPS = {"NonMaxSuppression": "constant max_output_boxes_per_class, iou_threshold, score_threshold (each "
                                     "optional), center_point_box 0/1; float32 or int8 boxes and scores; output at its "
                                     "maximum size, row-counted"}
    DTYPES = ("float32", "int8")
    INT8_EXACTNESS = "bit-exact (int8 boxes and scores are read as their dequantized float32 values, as the model " \
                     "states them)"
    PARAMS = ("B", "N", "C", "MAXPC", "CENTER", "HAS_THR", "IOU", "THR", "BS0", "BS1", "BS2", "SS0", "SS1", "SS2",
              "OS0", "OS1", "BQ", "BSCALE", "BZP", "SQ", "SSCALE", "SZP", "C0", "CT")
    # the rows of the classes before (third input) are kept where they are: index.c reads them before it appends
    in_place = True

    @property
    def dequantizes_inputs(self) -> bool:  # type: ignore[override]
        # int8 boxes or scores (BQ / SQ 1) are read as (float)(q - ZP) * SCALE, the dequantize kernel's value, so a
        # quantized model keeps them int8 up to here (pass float_tail, rule 1) instead of a float copy of each
        return INT8_INPUTS

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        n = len([i for i in op.inputs if i])
        if n not in ((2, 3) if "class0" in op.attrs else (2,)) or "max_per_class" not in op.attrs:
            return "max_output_boxes_per_class, iou_threshold or score_threshold is not a constant"
        return None

    def check_dtype(self, graph: AnalyzedGraph, op: Op, int8: bool) -> str | None:
        if any(_act_kind(graph, i) not in ("float", "int8") for i in op.inputs[:2]):
            return "boxes and scores must be float32 or int8"
        b, s, y = (graph.tensors[n] for n in (*op.inputs[:2], op.outputs[0]))
        if len(op.inputs) > 2 and (graph.tensors[op.inputs[2]].shape, graph.tensors[op.inputs[2]].dtype) != \
                (y.shape, y.dtype):
            return f"rows input {op.inputs[2]} is not of the output's shape"

        if len(b.shape) != 3 or b.shape[2] != 4 or len(s.shape) != 3 or s.shape[0] != b.shape[0] or \
                s.shape[2] != b.shape[1]:
            return f"boxes {b.shape} and scores {s.shape} are not [B, N, 4] and [B, C, N]"
        if y.dtype != "int32" or len(y.shape) != 2 or y.shape[1] != 3:
            return f"output {y.name} is not [rows, 3] int32"
        return None

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        bt, st, yt = (graph.tensors[n] for n in (*op.inputs[:2], op.outputs[0]))
        B, N, _ = bt.shape
        C = st.shape[1]
        a = op.attrs
        m = int(a["max_per_class"])
        c0, ct = int(a.get("class0", 0)), int(a.get("classes", C))
        if yt.shape[0] != B * ct * min(m, N) or c0 + C > ct:
            raise TigrisError(f"NonMaxSuppression output {yt.shape} is not its maximum [{B * ct * min(m, N)}, 3]",
                              op.name)
        thr = a.get("score_threshold")
        p = {"B": B, "N": N, "C": C, "MAXPC": m, "CENTER": int(a.get("center_point_box", 0)),
             "HAS_THR": int(thr is not None), "IOU": f32_bits(float(a.get("iou_threshold", 0.0))),
             "THR": f32_bits(float(thr) if thr is not None else 0.0), "C0": c0, "CT": ct}
        for pre, t in (("BS", bt), ("SS", st), ("OS", yt)):
            for i, v in enumerate(logical_strides(t)):
                p[f"{pre}{i}"] = v
        for pre, t in (("B", bt), ("S", st)):
            if t.dtype == "int8":
                scale, zp = per_tensor(t, "NonMaxSuppression input")
                p.update({f"{pre}Q": 1, f"{pre}SCALE": f32_bits(float(np.float32(scale))), f"{pre}ZP": zp})
        return Lowered(self.name, op.name, [i for i in op.inputs if i], [op.outputs[0]], params=p, macs=C * B * N * N)

    @staticmethod
    def _real(x: np.ndarray, p: dict, pre: str) -> np.ndarray:
        """An input's float32 values: int8 codes dequantized as quant.py's Dequantize computes them."""
        if not p.get(f"{pre}Q"):
            return x
        d = (x.astype(np.int32) - np.int32(p[f"{pre}ZP"])).astype(np.float32)
        return d * np.float32(bits_f32(p[f"{pre}SCALE"]))

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        p = low.params
        boxes, scores = (self._real(v.data.reshape(-1), p, pre) for v, pre in zip(inputs, ("B", "S")))
        y = out.data.reshape(-1)
        y[...] = -1
        total = len(y) // 3
        row = 0
        if len(inputs) > 2:  # the rows of the classes before: kept, this op's rows after their valid ones
            prev = inputs[2].data.reshape(-1)
            while row < total and any(prev[row * p["OS0"] + k * p["OS1"]] != -1 for k in range(3)):
                row += 1
            y[...] = prev
            for r in range(row, total):
                for k in range(3):
                    y[r * p["OS0"] + k * p["OS1"]] = -1
        iou, thr = np.float32(bits_f32(p["IOU"])), np.float32(bits_f32(p["THR"]))

        def box(b, i):
            return [boxes[b * p["BS0"] + i * p["BS1"] + k * p["BS2"]] for k in range(4)]

        for b in range(p["B"]):
            for c in range(p["C"]):
                s = [scores[b * p["SS0"] + c * p["SS1"] + i * p["SS2"]] for i in range(p["N"])]
                cand = [i for i in range(p["N"]) if s[i] == s[i] and (not p["HAS_THR"] or s[i] > thr)]
                cand.sort(key=lambda i: (-float(s[i]), i))
                kept: list[int] = []
                for i in cand:
                    if len(kept) >= p["MAXPC"] or row >= total:
                        break
                    if any(_iou_above(box(b, i), box(b, j), p["CENTER"], iou) for j in kept):
                        continue
                    kept.append(i)
                    for k, v in enumerate((b, c + p["C0"], i)):
                        y[row * p["OS0"] + k * p["OS1"]] = v
                    row += 1
