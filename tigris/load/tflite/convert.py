"""TFLite records -> the IR the ONNX loader builds (docs/tflite.md describes the mapping).

Layout. TFLite stores rank-4 tensors NHWC and rank-3 tensors [N, L, C]; the IR's shapes are ONNX-logical NCHW and
[N, C, L], and the layout pass stores those channels-last. So every rank-3/4 TFLite tensor becomes the IR tensor of the
permuted logical shape (``to_ir``), and its runtime bytes are exactly TFLite's: no transpose at the model boundary,
where ``graph.boundary`` keeps the declared TFLite shape (``tigris.layout.boundary_is_physical``). Tensors of other
ranks keep their shape. Axis attributes are mapped with the same permutation.

Ops whose meaning depends on element order (RESHAPE, SQUEEZE, EXPAND_DIMS, FULLY_CONNECTED's flatten) read their input
in TFLite order: an explicit ``Transpose`` to that order when it moves bytes, nothing when it does not (only unit axes
move), then the reshape, then back. A FULLY_CONNECTED that flattens a channels-last image keeps it flattened in IR
order and permutes the weight columns instead, which the layout pass turns back into a zero-copy read.

Quantization is carried as stored: float32 scales, zero points, the per-channel axis mapped onto the IR weight layout
(OIHW convolutions, [C*m, 1, KH, KW] depthwise, [OC, K] fully connected). uint8 tensors are restated as int8 (value
- 128, zero point - 128), as the QDQ pass does for ONNX, and the boundary keeps the declared uint8 interface.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tigris.ir import AnalyzedGraph, Boundary, Op, QuantParam, Tensor, TigrisError, UnsupportedModelError
from tigris.load.order import dfs_postorder
from tigris.load.validate import check_tensor_limits, warn_non_finite
from tigris.load.tflite.reader import TflModel, TflOp, TflTensor

# TFLite order -> IR logical order, by rank: IR axis i holds TFLite axis PERM[r][i].
PERM = {4: (0, 3, 1, 2), 3: (0, 2, 1)}
ACTIVATIONS = {0: None, 1: "relu", 2: "relu_n1_to_1", 3: "relu6", 4: "tanh", 5: "sign_bit"}
_PADDING = {0: "SAME", 1: "VALID"}


def perm_of(rank: int) -> tuple[int, ...]:
    return PERM.get(rank, tuple(range(rank)))


def inv(p: tuple[int, ...]) -> tuple[int, ...]:
    out = [0] * len(p)
    for i, a in enumerate(p):
        out[a] = i
    return tuple(out)


def to_ir_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    p = perm_of(len(shape))
    return tuple(shape[a] for a in p)


def to_ir_array(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.transpose(a, perm_of(a.ndim)))


def ir_axis(axis: int, rank: int) -> int:
    """A TFLite axis (negative allowed) of a rank-``rank`` tensor -> the IR axis holding it."""
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < max(rank, 1):
        raise ValueError(f"axis {axis} out of range for rank {rank}")
    return inv(perm_of(rank))[a] if rank else 0


def same_order(shape: tuple[int, ...], perm: tuple[int, ...]) -> bool:
    """True when transposing ``shape`` by ``perm`` keeps the element order (only unit axes move)."""
    moved = [a for a in perm if shape[a] != 1]
    return moved == sorted(moved)


def tfl_same_window(n: int, k: int, s: int, d: int, padding: str) -> tuple[int, int, int]:
    """(out, pad_before, pad_after) of one spatial axis exactly as TFLite computes them."""
    ek = (k - 1) * d + 1
    if padding == "SAME":
        out = (n + s - 1) // s
        total = max((out - 1) * s + ek - n, 0)
        return out, total // 2, total - total // 2
    out = (n - ek + s) // s
    return out, 0, 0


class Importer:
    def __init__(self, model: TflModel, name: str, where: str):
        self.m = model
        self.where = where
        self.name = name
        self.tensors: dict[str, Tensor] = {}
        self.weights: dict[str, np.ndarray] = {}
        self.ops: list[Op] = []
        self.notes: list[str] = []
        self.unsupported: list[dict[str, str]] = []
        self.names = self._unique_names()
        self.cur: TflOp | None = None
        self._fresh = 0

    # -- naming and tensors -------------------------------------------------------------------------------------
    def _unique_names(self) -> list[str]:
        seen: set[str] = set()
        out = []
        for t in self.m.tensors:
            n = t.name or f"tensor_{t.index}"
            if n in seen:
                n = f"{n}#{t.index}"
            seen.add(n)
            out.append(n)
        return out

    def fresh(self, base: str) -> str:
        while True:
            self._fresh += 1
            n = f"{base}__{self._fresh}"
            if n not in self.tensors and n not in self.names:
                return n

    def err(self, what: str) -> TigrisError:
        op = self.cur
        where = f"{self.where}: operator {op.index} ({op.builtin})" if op is not None else self.where
        return TigrisError(what, where)

    def tt(self, i: int) -> TflTensor:
        return self.m.tensors[i]

    def quant_of(self, t: TflTensor, ir_axis_of: Callable[[int], int] | None = None) -> QuantParam | None:
        q = t.quant
        if q is None:
            return None
        scale = q.scale.astype(np.float32)
        zp = q.zero_point.astype(np.int64)
        if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
            raise self.err(f"tensor {self.names[t.index]} has a non-positive or non-finite scale")
        if t.dtype is not None and t.dtype.kind in "iu" and t.dtype.itemsize <= 2:
            info = np.iinfo(t.dtype)
            if np.any(zp < info.min) or np.any(zp > info.max):
                raise self.err(f"tensor {self.names[t.index]} has a zero point outside its type {t.dtype}")
        if t.dtype is not None and t.dtype == np.uint8:
            zp = zp - 128
        if scale.size == 1:
            return QuantParam(scale, zp, None)
        rank = len(t.shape)
        dim = q.dim
        if not 0 <= dim < rank or t.shape[dim] != scale.size:
            # old converters wrote quantized_dimension 3 on 1-D biases: the only axis the scales can belong to
            fits = [a for a in range(rank) if t.shape[a] == scale.size]
            if len(fits) != 1:
                raise self.err(f"tensor {self.names[t.index]}: {scale.size} per-channel scales do not match "
                               f"quantized_dimension {dim} of shape {list(t.shape)}")
            dim = fits[0]
        axis = ir_axis_of(dim) if ir_axis_of else ir_axis(dim, rank)
        return QuantParam(scale, zp, axis)

    def ir_dtype(self, t: TflTensor) -> str:
        if t.dtype is None:
            return f"tflite_type_{t.type_code}"
        if t.dtype == np.uint8 and t.quant is not None:
            return "int8"
        if t.dtype == np.float16:
            return "float32"
        return {"<f4": "float32", "<i4": "int32", "<i8": "int64", "<i2": "int16", "<f8": "float64"}.get(
            t.dtype.str, str(t.dtype))

    def declare(self, i: int) -> str:
        """The IR activation tensor of TFLite tensor ``i`` (created on first use)."""
        n = self.names[i]
        if n not in self.tensors:
            t = self.tt(i)
            if 0 in t.shape:
                raise self.err(f"tensor {n} has a zero-size dimension {list(t.shape)}")
            self.tensors[n] = Tensor(n, to_ir_shape(t.shape), self.ir_dtype(t), self.quant_of(t))
        return n

    def new_tensor(self, base: str, shape: tuple[int, ...], like: Tensor) -> str:
        n = self.fresh(base)
        self.tensors[n] = Tensor(n, tuple(int(d) for d in shape), like.dtype, like.quant)
        return n

    def const_values(self, i: int) -> np.ndarray:
        t = self.tt(i)
        if t.data is None:
            raise self.err(f"operand {self.names[i]} must be a constant")
        return t.data

    def is_const(self, i: int) -> bool:
        return i >= 0 and self.tt(i).data is not None

    def add_weight(self, base: str, values: np.ndarray, quant: QuantParam | None) -> str:
        n = self.fresh(base) if base in self.tensors else base
        v = np.ascontiguousarray(values)
        if v.dtype == np.float16:
            v = v.astype(np.float32)
        if v.dtype == np.uint8 and quant is not None:
            v = (v.astype(np.int16) - 128).astype(np.int8)
        self.weights[n] = v
        dt = "bool" if v.dtype == np.bool_ else str(v.dtype)
        self.tensors[n] = Tensor(n, tuple(int(d) for d in v.shape), dt, quant)
        return n

    def const_operand(self, i: int, rank: int | None = None) -> str:
        """A constant TFLite tensor as an IR weight, broadcast-aligned to ``rank`` and permuted like activations."""
        t = self.tt(i)
        v = self.const_values(i)
        r = rank if rank is not None else v.ndim
        if v.ndim > r:
            raise self.err(f"constant {self.names[i]} of rank {v.ndim} does not broadcast to rank {r}")
        full = v.reshape((1,) * (r - v.ndim) + v.shape)
        q = None
        if t.quant is not None:
            q = self.quant_of(t, lambda d, nd=v.ndim: ir_axis(d + (r - nd), r))
        return self.add_weight(self.names[i], to_ir_array(full), q)

    def operand(self, i: int, rank: int | None = None) -> str:
        """An activation or constant operand; constants are aligned to ``rank`` for broadcasting."""
        if self.is_const(i):
            return self.const_operand(i, rank)
        if i in self.m.inputs or self.producer_known(i):
            n = self.declare(i)
            if rank is not None and len(self.tt(i).shape) < rank:
                shape = (1,) * (rank - len(self.tt(i).shape)) + self.tt(i).shape
                return self.reshape_tfl(n, self.tt(i).shape, shape)
            return n
        raise self.err(f"operand {self.names[i]} is neither a constant, a graph input nor computed by an operator")

    def producer_known(self, i: int) -> bool:
        return i in self._produced

    def emit(self, op_type: str, inputs: list[str], outputs: list[str], attrs: dict[str, Any] | None = None,
             suffix: str = "") -> None:
        op = self.cur
        base = f"{op.builtin.lower()}_{op.index}" if op is not None else "op"
        name = base + suffix
        taken = {o.name for o in self.ops}
        k = 1
        while name in taken:
            k += 1
            name = f"{base}{suffix}_{k}"
        self.ops.append(Op(name, op_type, tuple(inputs), tuple(outputs), dict(attrs or {})))

    # -- order-sensitive reshapes --------------------------------------------------------------------------------
    def to_tfl_order(self, n: str, tfl_shape: tuple[int, ...]) -> str:
        """An IR tensor whose logical order is TFLite's element order of ``n`` (``n`` itself for ranks 1, 2, 5+)."""
        r = len(tfl_shape)
        if r not in PERM:
            return n
        x = self.tensors[n]
        back = inv(PERM[r])  # IR order -> TFLite order
        y = self.new_tensor(f"{n}_tfl", tfl_shape, x)
        if same_order(x.shape, back):
            self.emit("Reshape", [n], [y], suffix="_to_tfl")
        else:
            self.emit("Transpose", [n], [y], {"perm": list(back)}, suffix="_to_tfl")
        return y

    def from_tfl_order(self, src: str, tfl_shape: tuple[int, ...], out: str) -> None:
        """Write IR tensor ``out`` (logical IR shape) from ``src`` holding it in TFLite order ``tfl_shape``."""
        r = len(tfl_shape)
        s = self.tensors[src]
        if r not in PERM:
            self.emit("Reshape", [src], [out], suffix="_reshape")
            return
        if tuple(s.shape) != tuple(tfl_shape):
            mid = self.new_tensor(f"{out}_tfl", tfl_shape, s)
            self.emit("Reshape", [src], [mid], suffix="_reshape")
            src = mid
        if same_order(tfl_shape, PERM[r]):
            self.emit("Reshape", [src], [out], suffix="_from_tfl")
        else:
            self.emit("Transpose", [src], [out], {"perm": list(PERM[r])}, suffix="_from_tfl")

    def reshape_tfl(self, n: str, in_shape: tuple[int, ...], out_shape: tuple[int, ...], out: str | None = None) -> str:
        """TFLite reshape semantics (element order of TFLite's layout) on IR tensor ``n``."""
        x = self.tensors[n]
        if out is None:
            out = self.new_tensor(f"{n}_r", to_ir_shape(out_shape), x)
        if self._pure_reshape(in_shape, out_shape):
            self.emit("Reshape", [n], [out], suffix="_reshape")
            return out
        src = self.to_tfl_order(n, in_shape)
        self.from_tfl_order(src, out_shape, out)
        return out

    @staticmethod
    def _pure_reshape(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> bool:
        """True when the IR reshape of the permuted shapes already keeps TFLite's element order."""
        a_in = tuple(in_shape[p] for p in perm_of(len(in_shape)))
        if same_order(a_in, inv(perm_of(len(in_shape)))) and same_order(tuple(out_shape), perm_of(len(out_shape))):
            return True
        n = int(np.prod(in_shape)) if in_shape else 1
        if n > 1 << 20:
            return False
        idx = np.arange(n).reshape(in_shape)  # TFLite element index
        ir_in = np.transpose(idx, perm_of(len(in_shape))).reshape(-1)  # the IR's row-major order of the input
        ir_out = np.transpose(np.arange(n).reshape(out_shape), perm_of(len(out_shape))).reshape(-1)
        return bool(np.array_equal(ir_in, ir_out))

    # -- fused activations ---------------------------------------------------------------------------------------
    def activation(self, code: int) -> str | None:
        if code not in ACTIVATIONS:
            raise self.err(f"unknown fused activation {code}")
        return ACTIVATIONS[code]

    def output_with_act(self, out_i: int, act: str | None, fusable: bool) -> tuple[str, str | None]:
        """(tensor the op writes, fused_activation attr). An activation the op cannot fuse runs as its own op."""
        y = self.declare(out_i)
        if act is None or (fusable and act in ("relu", "relu6")):
            return y, act
        mid = self.new_tensor(f"{y}_pre_act", self.tensors[y].shape, self.tensors[y])
        self._pending_act = (act, mid, y)
        return mid, None

    def flush_act(self) -> None:
        pa = getattr(self, "_pending_act", None)
        if pa is None:
            return
        self._pending_act = None
        act, mid, y = pa
        if act == "relu":
            self.emit("Relu", [mid], [y], suffix="_act")
        elif act == "relu6":
            self.emit("Relu6", [mid], [y], suffix="_act")
        elif act == "relu_n1_to_1":
            self.emit("Clip", [mid], [y], {"min": -1.0, "max": 1.0}, suffix="_act")
        elif act == "tanh":
            self.emit("Tanh", [mid], [y], suffix="_act")
        else:
            self.emit("Sign", [mid], [y], suffix="_act")

    # -- driver --------------------------------------------------------------------------------------------------
    def run(self) -> AnalyzedGraph:
        m = self.m
        self._produced: set[int] = set()
        self._pending_act = None
        # A channels-last boundary whose permuted shape equals its own (e.g. [1, 3, 3, 3]) cannot say by its shape
        # that the caller's bytes are already in storage order (tigris.layout.boundary_is_physical), so it keeps the
        # TFLite shape as a logical tensor and an explicit Transpose converts it.
        edge: dict[int, str] = {}
        for i in dict.fromkeys(list(m.inputs) + list(m.outputs)):
            t = self.tt(i)
            r = len(t.shape)
            if t.data is None and r in PERM and to_ir_shape(t.shape) == tuple(t.shape) \
                    and not same_order(t.shape, PERM[r]) and not (i in m.inputs and i in m.outputs):
                edge[i] = self.names[i]
                self.names[i] = self.fresh(f"{edge[i]}_ir")
        for i in m.inputs:
            if i in edge:
                t = self.tt(i)
                inner = self.declare(i)
                self.tensors[edge[i]] = Tensor(edge[i], tuple(t.shape), self.ir_dtype(t), self.quant_of(t))
                self.ops.append(Op(f"{edge[i]}_to_ir", "Transpose", (edge[i],), (inner,),
                                   {"perm": list(PERM[len(t.shape)])}))
        for op in m.ops:
            self.cur = op
            handler = HANDLERS.get(op.builtin)
            if op.builtin == "CUSTOM":
                self.unsupported.append({"node": f"custom_{op.index}", "op": f"CUSTOM:{op.custom_code}",
                                         "reason": f"custom operator {op.custom_code!r} (only builtin TFLite "
                                                   f"operators are supported)"})
                self._generic(op)
            elif handler is None:
                self._generic(op)
            else:
                try:
                    handler(self, op)
                except (ValueError, IndexError, KeyError) as e:
                    raise self.err(f"cannot import: {type(e).__name__}: {e}") from None
                self.flush_act()
            self._produced.update(op.outputs)
        self.cur = None
        if self.unsupported:
            raise UnsupportedModelError(self.unsupported, self.name)
        inputs = []
        for i in m.inputs:
            t = self.tt(i)
            if t.data is not None:
                continue  # a constant listed as input (old converters)
            if i in edge:
                inputs.append(edge[i])
                continue
            n = self.declare(i)
            x = self.tensors[n]
            if len(x.shape) in PERM:  # the caller's bytes are TFLite's, i.e. the channels-last storage of x
                self.tensors[n] = Tensor(n, x.shape, x.dtype, x.quant, "nhwc" if len(x.shape) == 4 else "nwc")
            inputs.append(n)
        outputs = []
        for i in m.outputs:
            if i not in self._produced and i not in m.inputs:
                raise TigrisError("graph output is not computed by any operator", self.names[i])
            inner = self.declare(i)
            if i in edge:
                t = self.tt(i)
                self.tensors[edge[i]] = Tensor(edge[i], tuple(t.shape), self.ir_dtype(t), self.quant_of(t))
                self.ops.append(Op(f"{edge[i]}_from_ir", "Transpose", (inner,), (edge[i],),
                                   {"perm": list(inv(PERM[len(t.shape)]))}))
                inner = edge[i]
            outputs.append(inner)
        ops = dfs_postorder(self.ops, outputs)
        if len(ops) < len(self.ops):
            self.notes.append(f"{len(self.ops) - len(ops)} IR op(s) from which no graph output is reachable were "
                              f"dropped")
        used = {t for op in ops for t in (*op.inputs, *op.outputs) if t} | set(inputs) | set(outputs)
        tensors = {k: v for k, v in self.tensors.items() if k in used}
        weights = {k: v for k, v in self.weights.items() if k in used}
        for t in tensors.values():  # the plan format's limits, as for ONNX (tigris/load/validate.py rule 5)
            check_tensor_limits(t.name, t.shape, t.dtype)
        warn_non_finite(weights)
        boundary = {}
        for i in list(m.inputs) + list(m.outputs):
            t = self.tt(i)
            name = edge.get(i, self.names[i])
            if name not in tensors or name in weights:
                continue
            decl = "uint8" if t.dtype is not None and t.dtype == np.uint8 else tensors[name].dtype
            q = None
            if t.quant is not None and t.quant.scale.size == 1:
                q = QuantParam(t.quant.scale.astype(np.float32), t.quant.zero_point.astype(np.int64), None)
            boundary[name] = Boundary(name, tuple(t.shape), decl, q)
        return AnalyzedGraph(name=self.name, tensors=tensors, ops=ops, inputs=inputs, outputs=outputs,
                             weights=weights, boundary=boundary, notes=self.notes, source="tflite",
                             numerics="tflm")  # TFLite's own arithmetic by default (docs/numerics.md)

    def _generic(self, op: TflOp) -> None:
        """An operator without an IR mapping: imported under its TFLite name so validation reports it."""
        ins = []
        for i in op.inputs:
            if i < 0:
                ins.append("")
            elif self.is_const(i):
                ins.append(self.const_operand(i))
            else:
                ins.append(self.operand(i))
        outs = [self.declare(i) for i in op.outputs]
        opname = op.builtin if op.builtin != "CUSTOM" else f"CUSTOM:{op.custom_code}"
        self.emit(opname, ins, outs, {"tflite_options": dict(op.options)})


# ---------------------------------------------------------------------------------------------------------------
# Operator handlers: one function per TFLite builtin (or family)
# ---------------------------------------------------------------------------------------------------------------
def _opt(op: TflOp, key: str, default: Any = 0) -> Any:
    return op.options.get(key, default)


def _window(imp: Importer, op: TflOp, x_shape: tuple[int, ...], kh: int, kw: int, pad_key: str = "Padding"):
    sh, sw = int(_opt(op, "StrideH", 1)), int(_opt(op, "StrideW", 1))
    dh, dw = int(_opt(op, "DilationHFactor", 1) or 1), int(_opt(op, "DilationWFactor", 1) or 1)
    if min(sh, sw, dh, dw, kh, kw) < 1:
        raise imp.err(f"invalid window: kernel {kh}x{kw}, strides {sh}x{sw}, dilations {dh}x{dw}")
    padding = _PADDING.get(int(_opt(op, pad_key, 0)))
    if padding is None:
        raise imp.err(f"unknown padding {_opt(op, pad_key)}")
    oh, pt, pb = tfl_same_window(x_shape[1], kh, sh, dh, padding)
    ow, pl, pr = tfl_same_window(x_shape[2], kw, sw, dw, padding)
    return dict(kernel_shape=[kh, kw], strides=[sh, sw], dilations=[dh, dw], pads=[pt, pl, pb, pr]), (oh, ow)


def _expect(imp: Importer, op: TflOp, shape, k: int = 0) -> None:
    """The stored output shape must be what the operator computes: a corrupted file is refused here, by name."""
    got = tuple(imp.tt(op.outputs[k]).shape)
    if got != tuple(int(d) for d in shape):
        raise imp.err(f"output shape {list(got)} disagrees with the operator's result {list(shape)}")


def _same(imp: Importer, op: TflOp) -> None:
    _expect(imp, op, imp.tt(op.inputs[0]).shape)


def _check_out(imp: Importer, op: TflOp, want_hw: tuple[int, int]) -> None:
    shp = imp.tt(op.outputs[0]).shape
    if len(shp) != 4 or tuple(shp[1:3]) != tuple(want_hw):
        raise imp.err(f"output shape {list(shp)} disagrees with the window arithmetic ({want_hw[0]}x{want_hw[1]})")


def _bias(imp: Importer, op: TflOp, k: int) -> list[str]:
    if len(op.inputs) <= k or op.inputs[k] < 0:
        return []
    i = op.inputs[k]
    t = imp.tt(i)
    v = imp.const_values(i).reshape(-1)
    oc = imp.tt(op.outputs[0]).shape[-1] if imp.tt(op.outputs[0]).shape else 1
    if v.size != oc:
        raise imp.err(f"bias {imp.names[i]} has {v.size} values for {oc} output channels")
    q = imp.quant_of(t, lambda d: 0) if t.quant is not None else None
    return [imp.add_weight(imp.names[i], v, q)]


def _weight(imp: Importer, i: int, perm: tuple[int, ...], x_float: bool) -> str:
    """A weight in IR layout; int8 weights of a float op (hybrid / weight-only) are dequantized to float."""
    t = imp.tt(i)
    v = imp.const_values(i)
    q = imp.quant_of(t, lambda d: perm.index(d)) if t.quant is not None else None
    w = np.ascontiguousarray(np.transpose(v, perm))
    if x_float and q is not None and w.dtype.kind in "iu":
        wi = w.astype(np.float64) - (128 if w.dtype == np.uint8 else 0)
        shp = [1] * w.ndim
        if q.axis is not None:
            shp[q.axis] = -1
        real = (wi - q.zero_point.reshape(shp)) * q.scale.astype(np.float64).reshape(shp)
        imp.notes.append(f"{imp.names[i]}: int8 weight of a float operator dequantized (hybrid model runs in float)")
        return imp.add_weight(imp.names[i], real.astype(np.float32), None)
    return imp.add_weight(imp.names[i], w, q)


def _is_float(imp: Importer, i: int) -> bool:
    t = imp.tt(i)
    return t.dtype is not None and t.dtype.kind == "f"


def conv_2d(imp: Importer, op: TflOp) -> None:
    xi, wi = op.inputs[0], op.inputs[1]
    xs, ws = imp.tt(xi).shape, imp.tt(wi).shape
    if len(xs) != 4 or len(ws) != 4:
        raise imp.err(f"CONV_2D needs rank-4 input and filter, got {list(xs)} and {list(ws)}")
    if xs[3] % ws[3]:
        raise imp.err(f"input channels {xs[3]} are not a multiple of the filter's {ws[3]}")
    attrs, hw = _window(imp, op, xs, ws[1], ws[2])
    _check_out(imp, op, hw)
    _expect(imp, op, (xs[0], hw[0], hw[1], ws[0]))
    if ws[0] % (xs[3] // ws[3]):
        raise imp.err(f"{ws[0]} filters do not split into {xs[3] // ws[3]} groups")
    attrs["group"] = xs[3] // ws[3]
    act = imp.activation(int(_opt(op, "FusedActivationFunction")))
    y, fused = imp.output_with_act(op.outputs[0], act, True)
    attrs["fused_activation"] = fused
    w = _weight(imp, wi, (0, 3, 1, 2), _is_float(imp, xi))
    imp.emit("Conv", [imp.operand(xi), w] + _bias(imp, op, 2), [y], attrs)


def depthwise_conv_2d(imp: Importer, op: TflOp) -> None:
    xi, wi = op.inputs[0], op.inputs[1]
    xs, ws = imp.tt(xi).shape, imp.tt(wi).shape
    if len(xs) != 4 or len(ws) != 4 or ws[0] != 1:
        raise imp.err(f"DEPTHWISE_CONV_2D needs a rank-4 input and a [1, KH, KW, C*m] filter, got {list(xs)} and "
                      f"{list(ws)}")
    c_in, c_out = xs[3], ws[3]
    if c_out % c_in:
        raise imp.err(f"filter channels {c_out} are not a multiple of the input channels {c_in}")
    attrs, hw = _window(imp, op, xs, ws[1], ws[2])
    _check_out(imp, op, hw)
    _expect(imp, op, (xs[0], hw[0], hw[1], c_out))
    attrs["group"] = c_in  # one group per input channel, depth multiplier c_out / c_in (options may hold 0)
    act = imp.activation(int(_opt(op, "FusedActivationFunction")))
    y, fused = imp.output_with_act(op.outputs[0], act, True)
    attrs["fused_activation"] = fused
    w = _weight(imp, wi, (3, 0, 1, 2), _is_float(imp, xi))  # [1,KH,KW,C*m] -> [C*m,1,KH,KW]
    imp.emit("Conv", [imp.operand(xi), w] + _bias(imp, op, 2), [y], attrs)


def transpose_conv(imp: Importer, op: TflOp) -> None:
    # inputs: output_shape, weights [O, KH, KW, I], input, bias?
    shp_i, wi, xi = op.inputs[0], op.inputs[1], op.inputs[2]
    xs, ws = imp.tt(xi).shape, imp.tt(wi).shape
    ys = imp.tt(op.outputs[0]).shape
    if len(xs) != 4 or len(ws) != 4 or len(ys) != 4:
        raise imp.err("TRANSPOSE_CONV needs rank-4 tensors")
    sh, sw = int(_opt(op, "StrideH", 1)), int(_opt(op, "StrideW", 1))
    padding = _PADDING.get(int(_opt(op, "Padding", 0)))
    if min(sh, sw) < 1 or padding is None:
        raise imp.err("invalid strides or padding")
    pads, out_pad = [0, 0, 0, 0], [0, 0]
    for ax, (n_out, n_in, k, s) in enumerate(((ys[1], xs[1], ws[1], sh), (ys[2], xs[2], ws[2], sw))):
        _, before, _ = tfl_same_window(n_out, k, s, 1, padding)
        full = s * (n_in - 1) + k
        after = full - before - n_out
        if after < 0:
            out_pad[ax], after = -after, 0
        pads[ax], pads[ax + 2] = before, after
    act = imp.activation(int(_opt(op, "FusedActivationFunction")))
    y, fused = imp.output_with_act(op.outputs[0], act, False)
    w = _weight(imp, wi, (3, 0, 1, 2), _is_float(imp, xi))  # ONNX ConvTranspose: [C_in, C_out, KH, KW]
    attrs = {"kernel_shape": [ws[1], ws[2]], "strides": [sh, sw], "dilations": [1, 1], "pads": pads,
             "output_padding": out_pad, "group": 1, "fused_activation": fused}
    imp.emit("ConvTranspose", [imp.operand(xi), w] + _bias(imp, op, 3), [y], attrs)


def fully_connected(imp: Importer, op: TflOp) -> None:
    xi, wi = op.inputs[0], op.inputs[1]
    xs, ws = imp.tt(xi).shape, imp.tt(wi).shape
    if len(ws) != 2:
        raise imp.err(f"FULLY_CONNECTED weight must be [OC, K], got {list(ws)}")
    if int(_opt(op, "WeightsFormat", 0)) != 0:
        raise imp.err("FULLY_CONNECTED with shuffled weights is not supported")
    oc, k = ws
    numel = int(np.prod(xs)) if xs else 1
    if k == 0 or numel % k:
        raise imp.err(f"input of {numel} elements does not flatten into rows of {k}")
    rows = numel // k
    if not imp.is_const(wi):
        imp.unsupported.append({"node": f"fully_connected_{op.index}", "op": "FULLY_CONNECTED",
                                "reason": "weight is not a constant"})
        imp._generic(op)
        return
    act = imp.activation(int(_opt(op, "FusedActivationFunction")))
    ys = imp.tt(op.outputs[0]).shape
    if int(np.prod(ys)) != rows * oc or (ys and ys[-1] != oc):
        raise imp.err(f"output shape {list(ys)} disagrees with {rows} rows of {oc} outputs")
    y_final, fused = imp.output_with_act(op.outputs[0], act, True)
    x = imp.operand(xi)
    wv = imp.const_values(wi)
    wt = imp.tt(wi)
    wq = imp.quant_of(wt, lambda d: d) if wt.quant is not None else None
    if len(xs) in PERM and rows == xs[0] and not imp._pure_reshape(xs, (rows, k)):
        # Flatten of a channels-last activation: keep the IR (NCHW) flatten and permute the weight columns so
        # column p reads the element TFLite puts at position order[p]; the layout pass then reads NHWC bytes.
        order = np.transpose(np.arange(k).reshape(xs[1:]), [a - 1 for a in perm_of(len(xs))[1:]]).reshape(-1)
        wv = np.ascontiguousarray(wv[:, order])
        x2 = imp.new_tensor(f"{x}_flat", (rows, k), imp.tensors[x])
        imp.emit("Reshape", [x], [x2], suffix="_flatten")
    elif tuple(xs) != (rows, k):
        x2 = imp.reshape_tfl(x, xs, (rows, k))
    else:
        x2 = x
    if _is_float(imp, xi) and wq is not None and wv.dtype.kind in "iu":
        wi_ = wv.astype(np.float64) - (128 if wv.dtype == np.uint8 else 0)
        shp = (-1, 1) if wq.axis == 0 else (1, -1)
        wv = ((wi_ - wq.zero_point.reshape(shp)) * wq.scale.astype(np.float64).reshape(shp)).astype(np.float32)
        wq = None
        imp.notes.append(f"{imp.names[wi]}: int8 weight of a float operator dequantized (hybrid model runs in float)")
    w = imp.add_weight(imp.names[wi], wv, wq)
    b = _bias(imp, op, 2)
    if tuple(ys) == (rows, oc):
        y = y_final
    else:
        y = imp.new_tensor(f"{y_final}_2d", (rows, oc), imp.tensors[y_final])
    imp.emit("Gemm", [x2, w] + b, [y], {"fused_activation": fused})
    if y != y_final:
        imp.reshape_tfl(y, (rows, oc), ys, out=y_final)


def _binary(op_type: str, fusable: bool = True) -> Callable[[Importer, TflOp], None]:
    def handler(imp: Importer, op: TflOp) -> None:
        ai, bi = op.inputs[0], op.inputs[1]
        r = max(len(imp.tt(ai).shape), len(imp.tt(bi).shape), len(imp.tt(op.outputs[0]).shape))
        _expect(imp, op, np.broadcast_shapes(imp.tt(ai).shape, imp.tt(bi).shape))
        act = imp.activation(int(_opt(op, "FusedActivationFunction")))
        y, fused = imp.output_with_act(op.outputs[0], act, fusable)
        attrs = {"fused_activation": fused}
        imp.emit(op_type, [imp.operand(ai, r), imp.operand(bi, r)], [y], attrs)
    return handler


def _pool(op_type: str) -> Callable[[Importer, TflOp], None]:
    def handler(imp: Importer, op: TflOp) -> None:
        xi = op.inputs[0]
        xs = imp.tt(xi).shape
        if len(xs) != 4:
            raise imp.err(f"{op.builtin} needs a rank-4 input, got {list(xs)}")
        attrs, hw = _window(imp, op, xs, int(_opt(op, "FilterHeight", 0)), int(_opt(op, "FilterWidth", 0)))
        _check_out(imp, op, hw)
        _expect(imp, op, (xs[0], hw[0], hw[1], xs[3]))
        attrs.update(ceil_mode=0, count_include_pad=0)
        act = imp.activation(int(_opt(op, "FusedActivationFunction")))
        y, _ = imp.output_with_act(op.outputs[0], act, False)  # pools take no fused activation in the IR
        imp.emit(op_type, [imp.operand(xi)], [y], attrs)
    return handler


def concatenation(imp: Importer, op: TflOp) -> None:
    r = len(imp.tt(op.outputs[0]).shape)
    axis = ir_axis(int(_opt(op, "Axis", 0)), r)
    a = inv(perm_of(r)).index(axis) if r else 0
    shapes = [imp.tt(i).shape for i in op.inputs]
    if any(len(s_) != r or tuple(s_[:a]) + tuple(s_[a + 1:]) != tuple(shapes[0][:a]) + tuple(shapes[0][a + 1:])
           for s_ in shapes):
        raise imp.err(f"inputs {[list(s_) for s_ in shapes]} do not concatenate on axis {a}")
    _expect(imp, op, tuple(shapes[0][:a]) + (sum(s_[a] for s_ in shapes),) + tuple(shapes[0][a + 1:]))
    act = imp.activation(int(_opt(op, "FusedActivationFunction")))
    y, _ = imp.output_with_act(op.outputs[0], act, False)
    imp.emit("Concat", [imp.operand(i) for i in op.inputs], [y], {"axis": axis})


def softmax(imp: Importer, op: TflOp) -> None:
    xi = op.inputs[0]
    r = len(imp.tt(xi).shape)
    _same(imp, op)
    attrs: dict[str, Any] = {"axis": ir_axis(-1, r)}
    beta = float(_opt(op, "Beta", 1.0))
    x = imp.operand(xi)
    if beta != 1.0:
        if imp.tensors[x].dtype == "float32":  # softmax(beta * x): the scaling is an ordinary multiply
            c = imp.add_weight(imp.fresh(f"{x}_beta"), np.array(beta, np.float32), None)
            xb = imp.new_tensor(f"{x}_beta", imp.tensors[x].shape, imp.tensors[x])
            imp.emit("Mul", [x, c], [xb], {"fused_activation": None}, suffix="_beta")
            x = xb
        else:
            attrs["beta"] = beta  # validation reports it: the int8 softmax kernel has no input scaling
    imp.emit("Softmax", [x], [imp.declare(op.outputs[0])], attrs)


def _unary(op_type: str, attrs_of: Callable[[TflOp], dict] | None = None) -> Callable[[Importer, TflOp], None]:
    def handler(imp: Importer, op: TflOp) -> None:
        _same(imp, op)
        attrs = attrs_of(op) if attrs_of else {}
        imp.emit(op_type, [imp.operand(op.inputs[0])], [imp.declare(op.outputs[0])], attrs)
    return handler


def prelu(imp: Importer, op: TflOp) -> None:
    r = len(imp.tt(op.inputs[0]).shape)
    _same(imp, op)
    imp.emit("PRelu", [imp.operand(op.inputs[0]), imp.operand(op.inputs[1], r)], [imp.declare(op.outputs[0])])


def reshape(imp: Importer, op: TflOp) -> None:
    xi = op.inputs[0]
    xs, ys = imp.tt(xi).shape, imp.tt(op.outputs[0]).shape
    if int(np.prod(xs)) != int(np.prod(ys)):
        raise imp.err(f"reshape of {list(xs)} to {list(ys)} changes the element count")
    imp.reshape_tfl(imp.operand(xi), xs, ys, out=imp.declare(op.outputs[0]))


def pad(imp: Importer, op: TflOp) -> None:
    xi = op.inputs[0]
    xs = imp.tt(xi).shape
    p = np.asarray(imp.const_values(op.inputs[1])).reshape(-1, 2)
    r = len(xs)
    if p.shape[0] != r:
        raise imp.err(f"paddings of shape {list(p.shape)} for a rank-{r} input")
    perm = perm_of(r)
    if np.any(p < 0):
        raise imp.err("negative paddings")
    _expect(imp, op, tuple(int(d + p[a, 0] + p[a, 1]) for a, d in enumerate(xs)))
    begins = [int(p[perm[i], 0]) for i in range(r)]
    ends = [int(p[perm[i], 1]) for i in range(r)]
    value = 0.0
    if op.builtin == "PADV2" and len(op.inputs) > 2 and op.inputs[2] >= 0:
        vt = imp.tt(op.inputs[2])
        v = np.asarray(imp.const_values(op.inputs[2])).reshape(-1)
        if v.size != 1:
            raise imp.err("PADV2 constant value must be a scalar")
        if vt.quant is not None:
            value = float((float(v[0]) - float(vt.quant.zero_point[0])) * float(vt.quant.scale[0]))
        else:
            value = float(v[0])
    imp.emit("Pad", [imp.operand(xi)], [imp.declare(op.outputs[0])],
             {"pads": begins + ends, "value": value, "mode": "constant"})


def _axes(imp: Importer, op: TflOp, k: int, rank: int) -> list[int]:
    a = np.asarray(imp.const_values(op.inputs[k])).reshape(-1)
    return sorted({(int(v) + rank) % rank if rank else 0 for v in a})


def reduce(imp: Importer, op: TflOp) -> None:
    xi = op.inputs[0]
    xs, ys = imp.tt(xi).shape, imp.tt(op.outputs[0]).shape
    r = len(xs)
    axes = _axes(imp, op, 1, r)
    keep = bool(_opt(op, "KeepDims", False))
    kept_shape = tuple(1 if a in axes else d for a, d in enumerate(xs))
    _expect(imp, op, kept_shape if keep else tuple(d for a, d in enumerate(xs) if a not in axes))
    x = imp.operand(xi)
    y = imp.declare(op.outputs[0])
    spatial = r == 4 and axes == [1, 2]
    if spatial and op.builtin in ("MEAN", "REDUCE_MAX"):
        kept = (xs[0], 1, 1, xs[3])
        mid = y if keep else imp.new_tensor(f"{y}_keep", to_ir_shape(kept), imp.tensors[y])
        if op.builtin == "MEAN":
            imp.emit("GlobalAveragePool", [x], [mid])
        else:
            imp.emit("MaxPool", [x], [mid], {"kernel_shape": [xs[1], xs[2]], "strides": [1, 1],
                                            "dilations": [1, 1], "pads": [0, 0, 0, 0], "ceil_mode": 0})
        if not keep:
            imp.reshape_tfl(mid, kept, ys, out=y)
        return
    onnx_name = {"MEAN": "ReduceMean", "SUM": "ReduceSum", "REDUCE_MAX": "ReduceMax", "REDUCE_MIN": "ReduceMin",
                 "REDUCE_PROD": "ReduceProd"}[op.builtin]
    ir_axes = sorted(ir_axis(a, r) for a in axes)
    if keep:
        imp.emit(onnx_name, [x], [y], {"axes": ir_axes, "keepdims": 1})
    else:
        kept = tuple(1 if a in axes else d for a, d in enumerate(xs))
        mid = imp.new_tensor(f"{y}_keep", to_ir_shape(kept), imp.tensors[y])
        imp.emit(onnx_name, [x], [mid], {"axes": ir_axes, "keepdims": 1})
        imp.reshape_tfl(mid, kept, ys, out=y)


def resize(imp: Importer, op: TflOp) -> None:
    xi = op.inputs[0]
    xs, ys = imp.tt(xi).shape, imp.tt(op.outputs[0]).shape
    if len(xs) != 4 or len(ys) != 4:
        raise imp.err(f"{op.builtin} needs rank-4 tensors")
    align = bool(_opt(op, "AlignCorners", False))
    half = bool(_opt(op, "HalfPixelCenters", False))
    nearest = op.builtin == "RESIZE_NEAREST_NEIGHBOR"
    size = [int(v) for v in np.asarray(imp.const_values(op.inputs[1])).reshape(-1)]
    _expect(imp, op, (xs[0], *size, xs[3]))
    if align:
        ctm, nmode = "align_corners", "round_prefer_ceil"
    elif half:
        ctm, nmode = ("tf_half_pixel_for_nn" if nearest else "half_pixel"), "floor"
    else:
        ctm, nmode = "asymmetric", "floor"
    attrs: dict[str, Any] = {"mode": "nearest" if nearest else "linear", "coordinate_transformation_mode": ctm,
                             "nearest_mode": nmode}
    ir_in, ir_out = to_ir_shape(xs), to_ir_shape(ys)
    if all(o % i == 0 for i, o in zip(ir_in, ir_out)) and ir_in[:2] == ir_out[:2]:
        attrs["scales"] = [o // i for i, o in zip(ir_in, ir_out)]
        attrs["_extracted"] = True
    imp.emit("Resize", [imp.operand(xi)], [imp.declare(op.outputs[0])], attrs)


def quantize(imp: Importer, op: TflOp) -> None:
    xi, yi = op.inputs[0], op.outputs[0]
    _same(imp, op)
    x, y = imp.operand(xi), imp.declare(yi)
    tx, ty = imp.tensors[x], imp.tensors[y]
    if tx.dtype == "float32":
        imp.emit("QuantizeLinear", [x], [y])
        return
    if tx.quant is not None and ty.quant is not None and tx.quant == ty.quant and tx.dtype == ty.dtype:
        imp.emit("Reshape", [x], [y], suffix="_same_quant")  # uint8 <-> int8 with the zero point 128 apart
        return
    # int8 -> int8 with another scale: a requantization. The int8 unary kernel's table maps every input code
    # through the real value to the output encoding, which is exactly that.
    imp.emit("Clip", [x], [y], {"min": float(np.finfo(np.float32).min), "max": float(np.finfo(np.float32).max),
                                "requantize": True})


def dequantize(imp: Importer, op: TflOp) -> None:
    xi = op.inputs[0]
    _same(imp, op)
    y = imp.declare(op.outputs[0])
    if imp.is_const(xi):
        t = imp.tt(xi)
        v = imp.const_values(xi)
        if t.quant is not None and v.dtype.kind in "iu":
            q = imp.quant_of(t, lambda d: d)
            shp = [1] * v.ndim
            if q.axis is not None:
                shp[q.axis] = -1
            vi = v.astype(np.float64) - (128 if v.dtype == np.uint8 else 0)
            real = (vi - q.zero_point.reshape(shp)) * q.scale.astype(np.float64).reshape(shp)
        else:
            real = v.astype(np.float64)
        # the folded constant replaces the DEQUANTIZE's output everywhere
        imp.tensors.pop(y, None)
        imp.m.tensors[op.outputs[0]].data = real.astype(np.float32)
        imp.m.tensors[op.outputs[0]].quant = None
        return
    imp.emit("DequantizeLinear", [imp.operand(xi)], [y])


def gather(imp: Importer, op: TflOp) -> None:
    xi, ii = op.inputs[0], op.inputs[1]
    r = len(imp.tt(xi).shape)
    if r in PERM or len(imp.tt(op.outputs[0]).shape) in PERM:
        x = imp.to_tfl_order(imp.operand(xi), imp.tt(xi).shape)
        ys = imp.tt(op.outputs[0]).shape
        y = imp.declare(op.outputs[0])
        mid = imp.new_tensor(f"{y}_tfl", ys, imp.tensors[y])
        imp.emit("Gather", [x, imp.operand(ii)], [mid], {"axis": int(_opt(op, "Axis", 0)) % max(r, 1),
                                                         "batch_dims": int(_opt(op, "BatchDims", 0))})
        imp.from_tfl_order(mid, ys, y)
        return
    imp.emit("Gather", [imp.operand(xi), imp.operand(ii)], [imp.declare(op.outputs[0])],
             {"axis": int(_opt(op, "Axis", 0)) % max(r, 1), "batch_dims": int(_opt(op, "BatchDims", 0))})


def transpose(imp: Importer, op: TflOp) -> None:
    xi = op.inputs[0]
    r = len(imp.tt(xi).shape)
    p = [int(v) for v in np.asarray(imp.const_values(op.inputs[1])).reshape(-1)]
    if sorted(p) != list(range(r)):
        raise imp.err(f"perm {p} is not a permutation of rank {r}")
    _expect(imp, op, tuple(imp.tt(xi).shape[a] for a in p))
    pin, pout = perm_of(r), perm_of(r)
    # IR output axis i holds TFLite output axis pout[i] = TFLite input axis p[pout[i]] = IR input axis inv(pin)[...]
    ir_perm = [inv(pin)[p[pout[i]]] for i in range(r)]
    imp.emit("Transpose", [imp.operand(xi)], [imp.declare(op.outputs[0])], {"perm": ir_perm})


def _slice_emit(imp: Importer, op: TflOp, starts: list[int], ends: list[int], steps: list[int],
                tfl_out: tuple[int, ...]) -> None:
    xi = op.inputs[0]
    xs = imp.tt(xi).shape
    r = len(xs)
    # ``ends`` are Python range ends (-1 = stop before index 0 when stepping down); ONNX Slice states that end as
    # a value below every index
    sliced = tuple(len(range(s, e, st)) for s, e, st in zip(starts, ends, steps))
    ends = [e if e >= 0 else -(1 << 31) for e in ends]
    x = imp.operand(xi)
    y = imp.declare(op.outputs[0])
    perm = perm_of(r)
    attrs = {"starts": [starts[perm[i]] for i in range(r)], "ends": [ends[perm[i]] for i in range(r)],
             "axes": list(range(r)), "steps": [steps[perm[i]] for i in range(r)]}
    if tuple(sliced) == tuple(tfl_out):
        imp.emit("Slice", [x], [y], attrs)
    else:
        mid = imp.new_tensor(f"{y}_slice", to_ir_shape(sliced), imp.tensors[y])
        imp.emit("Slice", [x], [mid], attrs)
        imp.reshape_tfl(mid, sliced, tfl_out, out=y)


def strided_slice(imp: Importer, op: TflOp) -> None:
    xs = imp.tt(op.inputs[0]).shape
    r = len(xs)
    b = [int(v) for v in np.asarray(imp.const_values(op.inputs[1])).reshape(-1)]
    e = [int(v) for v in np.asarray(imp.const_values(op.inputs[2])).reshape(-1)]
    s = [int(v) for v in np.asarray(imp.const_values(op.inputs[3])).reshape(-1)] if len(op.inputs) > 3 else [1] * r
    if int(_opt(op, "EllipsisMask", 0)) or int(_opt(op, "NewAxisMask", 0)) or len(b) != r or len(e) != r \
            or len(s) != r:
        imp._generic(op)
        imp.ops[-1] = imp.ops[-1].with_(op_type="StridedSlice")
        return
    bm, em, sm = int(_opt(op, "BeginMask", 0)), int(_opt(op, "EndMask", 0)), int(_opt(op, "ShrinkAxisMask", 0))
    offset = bool(_opt(op, "Offset", False))
    starts, ends, steps = [], [], []
    for a in range(r):
        n, st = xs[a], s[a]
        if st == 0:
            raise imp.err("STRIDED_SLICE stride 0")
        lo = b[a] + n if b[a] < 0 else b[a]
        hi = (e[a] + lo if offset else (e[a] + n if e[a] < 0 else e[a]))
        if bm >> a & 1:
            lo = 0 if st > 0 else n - 1
        if sm >> a & 1:
            hi = lo + 1 if st > 0 else lo - 1
        elif em >> a & 1:
            hi = n if st > 0 else -n - 1
        if st > 0:
            lo, hi = min(max(lo, 0), n), min(max(hi, 0), n)
        else:
            lo, hi = min(max(lo, -1), n - 1), min(max(hi, -1), n - 1)
        starts.append(lo)
        ends.append(hi)
        steps.append(st)
    _slice_emit(imp, op, starts, ends, steps, imp.tt(op.outputs[0]).shape)


def slice_(imp: Importer, op: TflOp) -> None:
    xs = imp.tt(op.inputs[0]).shape
    b = [int(v) for v in np.asarray(imp.const_values(op.inputs[1])).reshape(-1)]
    sz = [int(v) for v in np.asarray(imp.const_values(op.inputs[2])).reshape(-1)]
    if len(b) != len(xs) or len(sz) != len(xs):
        raise imp.err("SLICE begin/size do not match the input rank")
    ends = [n if z == -1 else bb + z for bb, z, n in zip(b, sz, xs)]
    _slice_emit(imp, op, b, ends, [1] * len(xs), imp.tt(op.outputs[0]).shape)


def split(imp: Importer, op: TflOp) -> None:
    if op.builtin == "SPLIT":
        ai, xi = op.inputs[0], op.inputs[1]
    else:
        xi, ai = op.inputs[0], op.inputs[2]
    r = len(imp.tt(xi).shape)
    axis = int(np.asarray(imp.const_values(ai)).reshape(-1)[0])
    a = (axis + r) % r
    sizes = [int(imp.tt(o).shape[a]) for o in op.outputs]
    imp.emit("Split", [imp.operand(xi)], [imp.declare(o) for o in op.outputs],
             {"axis": ir_axis(a, r), "split": sizes})


def _block(op_type: str) -> Callable[[Importer, TflOp], None]:
    def handler(imp: Importer, op: TflOp) -> None:
        bs = int(_opt(op, "BlockSize", 0))
        if bs < 1:
            raise imp.err(f"block size {bs}")
        attrs = {"blocksize": bs}
        if op_type == "DepthToSpace":
            attrs["mode"] = "DCR"  # TensorFlow's depth_to_space orders the channel blocks like ONNX's DCR
        imp.emit(op_type, [imp.operand(op.inputs[0])], [imp.declare(op.outputs[0])], attrs)
    return handler


def _minmax(op_type: str) -> Callable[[Importer, TflOp], None]:
    def handler(imp: Importer, op: TflOp) -> None:
        r = max(len(imp.tt(i).shape) for i in (*op.inputs, op.outputs[0]))
        imp.emit(op_type, [imp.operand(i, r) for i in op.inputs], [imp.declare(op.outputs[0])])
    return handler


HANDLERS: dict[str, Callable[[Importer, TflOp], None]] = {
    "CONV_2D": conv_2d,
    "DEPTHWISE_CONV_2D": depthwise_conv_2d,
    "TRANSPOSE_CONV": transpose_conv,
    "FULLY_CONNECTED": fully_connected,
    "ADD": _binary("Add"),
    # the IR fuses activations into Add only: Sub and Mul get theirs as a following op (activation fuse may merge it)
    "SUB": _binary("Sub", False),
    "MUL": _binary("Mul", False),
    "AVERAGE_POOL_2D": _pool("AveragePool"),
    "MAX_POOL_2D": _pool("MaxPool"),
    "CONCATENATION": concatenation,
    "SOFTMAX": softmax,
    "LOGISTIC": _unary("Sigmoid"),
    "TANH": _unary("Tanh"),
    "RELU": _unary("Relu"),
    "RELU6": _unary("Relu6"),
    "RELU_N1_TO_1": _unary("Clip", lambda op: {"min": -1.0, "max": 1.0}),
    "LEAKY_RELU": _unary("LeakyRelu", lambda op: {"alpha": float(_opt(op, "Alpha", 0.0))}),
    "HARD_SWISH": _unary("HardSwish"),
    "PRELU": prelu,
    "RESHAPE": reshape,
    "SQUEEZE": reshape,
    "EXPAND_DIMS": reshape,
    "PAD": pad,
    "PADV2": pad,
    "MEAN": reduce,
    "SUM": reduce,
    "REDUCE_MAX": reduce,
    "REDUCE_MIN": reduce,
    "REDUCE_PROD": reduce,
    "RESIZE_NEAREST_NEIGHBOR": resize,
    "RESIZE_BILINEAR": resize,
    "QUANTIZE": quantize,
    "DEQUANTIZE": dequantize,
    "GATHER": gather,
    "TRANSPOSE": transpose,
    "STRIDED_SLICE": strided_slice,
    "SLICE": slice_,
    "SPLIT": split,
    "SPLIT_V": split,
    "MAXIMUM": _minmax("Max"),
    "MINIMUM": _minmax("Min"),
    "DEPTH_TO_SPACE": _block("DepthToSpace"),
    "SPACE_TO_DEPTH": _block("SpaceToDepth"),
}
