"""Add (and Sub), Mul with NumPy broadcasting on physical views, float32 and int8.

Operands: ``A = op.inputs[0]``, ``B = op.inputs[1]``; either (not both) may be a constant, which becomes the const
blob ``K`` in the output's physical layout with its broadcast dims (``K_POS`` says which operand it is: -1 none, 0 A,
1 B; ``KZP`` is its zero point). Each operand's physical dims are params ``A_D*``/``B_D*``: every dim equals the
output's or is 1 (broadcast by a zero stride). An operand with the output's full row count is read band-aware (rows
of the output band); an operand with one row is read at row 0, so per-channel and scalar operands never need a halo.

int8 Add/Sub (three different scales): with ``ra = sa/so`` and ``rb = sb/so`` as Q0.31 ``(ma, ea)``, ``(mb, eb)``
(``mb`` negated for Sub), both terms are brought to the common exponent ``emin = min(ea, eb)`` by LEFT shifts, so no
bit of either product is lost::

    acc = (qa - za) * (ma << (ea - emin)) + (qb - zb) * (mb << (eb - emin))      (exact int64)
    out = clamp(zo + round(acc / 2**(31 - emin)), LO, HI)                        (ONE rounding, halves to even)

The left shifts are limited to 21 bits so ``|acc| < 2**61``; when the exponents differ by more, the smaller
multiplier is rounded at compile time to the coarser grid (a relative change below 2**-21 of the larger term).
A divisor exponent of 63 or more gives 0, like qmath.rounding_rshift. ``LO``/``HI`` carry a fused relu/relu6.

int8 Mul: ``out = clamp(zo + round((qa - za) * (qb - zb) * mult / 2**(31 - shift)), LO, HI)`` with ``mult, shift``
encoding ``sa * sb / so``: the Q0.31 requantization's exact product, but rounded halves to even.

Why halves to even (unlike the conv requantization): whenever the scales are related by powers of two (``sa = sb``,
``so = 2 * sa``: common in exported models) the exact result lands on a half for a quarter of all elements, and the
ONNX model states that rounding as QuantizeLinear's, half to even; rounding away from zero would put a quarter of the
outputs one LSB off ONNX Runtime, and later layers amplify such offsets (docs/numerics.md, pooling).

Float: ``a + b`` / ``a - b`` / ``a * b`` then clamp to ``[F_LO, F_HI]`` (fused activation).

Numerics ``tflm`` (param ``NUMERICS`` = 1; TFLM's reference ADD/SUB/MUL): Add rescales both operands to a common
scale ``2 * max(sa, sb)`` with 20 bits of headroom, adds, then rescales to the output, three TFLM requantizations
(``qmath.requantize_tflm``, double rounding)::

    xa  = requantize_tflm((qa - za) << 20, MA, LA)        (MA, LA) = sa / (2 max(sa, sb))
    xb  = requantize_tflm((qb - zb) << 20, MB, LB)        (MB, LB) = sb / (2 max(sa, sb))
    out = clamp(zo + requantize_tflm(xa +- xb, MULT, SHIFT), LO, HI)      (MULT, SHIFT) = 2 max(sa, sb) / (2**20 so)

and Mul is ``clamp(zo + requantize_tflm((qa - za) * (qb - zb), MULT, SHIFT), LO, HI)``. ``LA``/``LB`` then hold
shifts in the (mult, shift) encoding rather than alignment shifts, and ``RS`` is unused.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.ops._common import (TileError, act_bounds, broadcast_phys_dims, const_to_phys, dtype_kind,
                                float_act_bounds, operand_phys_dims, per_tensor, rshift_half_even)
from tigris.ops.base import Lowered, OpKind, TensorView, bits_f32, cols_reason, f32_bits
from tigris.ops.qmath import numerics_code, quantize_multiplier, requantize_tflm, rounding_rshift

PARAMS = ("K_POS", "A_D0", "A_D1", "A_D2", "A_D3", "B_D0", "B_D1", "B_D2", "B_D3", "SUB", "F_LO", "F_HI",
          "KZP", "MA", "LA", "MB", "LB", "RS", "MULT", "SHIFT", "LO", "HI", "NUMERICS")
MAX_ALIGN_SHIFT = 21
TFLM_LEFT_SHIFT = 20  # TFLM's headroom for int8 Add/Sub


def add_multipliers_tflm(sa: float, sb: float, so: float, where: str) -> dict[str, int]:
    """TFLM's int8 Add parameters: operand ratios to twice the larger input scale, and that to the output scale."""
    twice_max = 2.0 * max(sa, sb)
    ma, la = quantize_multiplier(sa / twice_max, where, "tflm")
    mb, lb = quantize_multiplier(sb / twice_max, where, "tflm")
    mo, so_ = quantize_multiplier(twice_max / ((1 << TFLM_LEFT_SHIFT) * so), where, "tflm")
    return dict(MA=ma, LA=la, MB=mb, LB=lb, RS=0, MULT=mo, SHIFT=so_)


def add_multipliers(ra: float, rb: float, sub: bool, where: str) -> dict[str, int]:
    """The int8 Add parameters MA, LA, MB, LB, RS for real ratios ra = sa/so, rb = sb/so (see the module doc)."""
    ma, ea = quantize_multiplier(ra, where)
    mb, eb = quantize_multiplier(rb, where)
    if ea - eb > MAX_ALIGN_SHIFT:  # B is far smaller: round its multiplier onto A's coarser grid
        mb = int(rounding_rshift(np.int64(mb), ea - MAX_ALIGN_SHIFT - eb))
        eb = ea - MAX_ALIGN_SHIFT
    elif eb - ea > MAX_ALIGN_SHIFT:
        ma = int(rounding_rshift(np.int64(ma), eb - MAX_ALIGN_SHIFT - ea))
        ea = eb - MAX_ALIGN_SHIFT
    emin = min(ea, eb)
    return dict(MA=ma, LA=ea - emin, MB=-mb if sub else mb, LB=eb - emin, RS=31 - emin)


def _lower(graph: AnalyzedGraph, op: Op, kname: str) -> Lowered:
    if len(op.inputs) != 2:
        raise TigrisError(f"{op.op_type} needs two inputs", op.name)
    a, b = op.inputs
    y = graph.tensors[op.outputs[0]]
    ka, kb = graph.is_const(a), graph.is_const(b)
    if ka and kb:
        raise TigrisError(f"{op.op_type} of two constants should have been folded", op.name)
    int8 = dtype_kind(graph, op) == "int8"
    params: dict[str, int] = {"K_POS": 0 if ka else (1 if kb else -1), "SUB": int(op.op_type == "Sub")}
    consts: dict[str, np.ndarray] = {}
    for slot, name, is_k in (("A", a, ka), ("B", b, kb)):
        if is_k:
            w = np.asarray(graph.weights[name])
            dims = broadcast_phys_dims(w.shape, y)
            t = graph.tensors.get(name)
            if int8:
                if t is None or t.quant is None or w.dtype != np.int8:
                    raise TigrisError(f"{op.op_type}: int8 op with a constant that is not int8-quantized", name)
                consts["K"] = const_to_phys(w, y).astype(np.int8)
            else:
                if w.dtype.kind != "f":
                    raise TigrisError(f"{op.op_type}: float op with a non-float constant", name)
                consts["K"] = const_to_phys(w.astype(np.float32), y)
        else:
            dims = operand_phys_dims(graph.tensors[name], y)
        for i, d in enumerate(dims):
            params[f"{slot}_D{i}"] = int(d)
    act = op.attrs.get("fused_activation")
    lo_f, hi_f = float_act_bounds(act)
    params["F_LO"], params["F_HI"] = f32_bits(lo_f), f32_bits(hi_f)
    params["LO"], params["HI"] = -128, 127
    if int8:
        sa, _ = per_tensor(graph.tensors[a], "operand A")
        sb, _ = per_tensor(graph.tensors[b], "operand B")
        so, zo = per_tensor(y, "output")
        tflm = graph.numerics == "tflm"
        params["NUMERICS"] = numerics_code(graph.numerics)
        if kname == "add" and tflm:
            params.update(add_multipliers_tflm(sa, sb, so, op.name))
        elif kname == "add":
            params.update(add_multipliers(sa / so, sb / so, op.op_type == "Sub", op.name))
        else:
            params["MULT"], params["SHIFT"] = quantize_multiplier(sa * sb / so, op.name, graph.numerics)
        params["LO"], params["HI"] = act_bounds(act, so, zo, graph.numerics)
    inputs = [n for n, k in ((a, ka), (b, kb)) if not k]
    return Lowered(kname, op.name, inputs, [op.outputs[0]], params=params, consts=consts, macs=y.numel)


def _operand(low: Lowered, slot: str, inputs: Sequence[TensorView], out: TensorView):
    """The operand as an array broadcastable to the output band [N, rows, W, C], and its zero point."""
    p = low.params
    dims = tuple(p[f"{slot}_D{i}"] for i in range(4))
    kpos = p["K_POS"]
    is_k = (kpos == 0 and slot == "A") or (kpos == 1 and slot == "B")
    if is_k:
        data, zp = low.consts["K"].reshape(dims), p["KZP"]
        if dims[1] > 1:  # whole tensor: take the output band's rows
            data = data[:, out.row0:out.row0 + out.rows]
    else:
        # Lowered.inputs lists the non-constant operands in order (A, B).
        v = inputs[1 if (slot == "B" and kpos == -1) else 0]
        zp = v.zero_point
        banded = dims[1] == out.dims[1] and dims[1] > 1
        if banded:
            if v.dims[1] != dims[1]:
                raise TileError("banded operand's view rows do not match")
            data = v.data.reshape(dims[0], v.rows, dims[2], dims[3])
            lo = out.row0 - v.row0
            if lo < 0 or out.row0 + out.rows > v.row0 + v.rows:
                raise TileError("operand band misses output rows")
            data = data[:, lo:lo + out.rows]
        else:
            data = v.data.reshape(dims)
    return data, zp


class _Binary(OpKind):
    COLS = "pixel"
    COL_DIMS = ("A_D2", "B_D2")
    SINGLE_INPUT = False
    TILING = "pointwise"
    in_place = True  # binary.c: y[i] is stored after x[i] and z[i] are read, dense or broadcast

    def col_local(self, graph: AnalyzedGraph, op: Op) -> str | None:
        # per pixel along W: output element (h, w, c) reads its operands at (h, w) (or their broadcast 1)
        return cols_reason(graph, op, per_pixel=True)

    def check_dtype(self, graph: AnalyzedGraph, op: Op, int8: bool) -> str | None:
        for n in op.inputs:
            if int8 and n and n in graph.weights and graph.tensors[n].quant is None:
                return f"int8 {op.op_type} with an unquantized constant operand {n}"
        return None

    PARAMS = PARAMS
    CONSTS = ("K",)

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        low = _lower(graph, op, self.name)
        if low.params["K_POS"] >= 0:
            kname = op.inputs[low.params["K_POS"]]
            t = graph.tensors.get(kname)
            # The constant has no view, so its zero point travels as param KZP.
            low.params["KZP"] = int(t.quant.zero_point.reshape(-1)[0]) if t is not None and t.quant is not None else 0
        return low

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        p = low.params
        int8 = out.dtype in ("int8", "uint8")
        a, za = _operand(low, "A", inputs, out)
        b, zb = _operand(low, "B", inputs, out)
        shape = out.data.shape
        a = np.broadcast_to(a, shape)
        b = np.broadcast_to(b, shape)
        if not int8:
            if self.name == "add":
                r = a - b if p["SUB"] else a + b
            else:
                r = a * b
            lo, hi = np.float32(bits_f32(p["F_LO"])), np.float32(bits_f32(p["F_HI"]))
            out.data[...] = np.minimum(np.maximum(r.astype(np.float32), lo), hi)
            return
        da = a.astype(np.int64) - za
        db = b.astype(np.int64) - zb
        if p.get("NUMERICS", 0) and self.name == "add":
            xa = requantize_tflm(da << TFLM_LEFT_SHIFT, p["MA"], p["LA"])
            xb = requantize_tflm(db << TFLM_LEFT_SHIFT, p["MB"], p["LB"])
            q = requantize_tflm(xa - xb if p["SUB"] else xa + xb, p["MULT"], p["SHIFT"])
        elif p.get("NUMERICS", 0):
            q = requantize_tflm(da * db, p["MULT"], p["SHIFT"])
        elif self.name == "add":
            acc = da * (np.int64(p["MA"]) << p["LA"]) + db * (np.int64(p["MB"]) << p["LB"])
            q = rshift_half_even(acc, p["RS"])
        else:
            q = rshift_half_even(da * db * np.int64(p["MULT"]), 31 - p["SHIFT"])
        out.data[...] = np.clip(q + out.zero_point, p["LO"], p["HI"]).astype(out.data.dtype)


class Add(_Binary):
    name = "add"
    ir_ops = ("Add", "Sub")
    ONNX_OPS = {"Add": "two activations or one constant, NumPy broadcasting; fused Relu/Relu6",
                "Sub": "two activations or one constant, NumPy broadcasting"}

    def fuses_activation(self, op: Op) -> bool:
        return op.op_type == "Add"  # a Sub's activation stays an op of its own


class Mul(_Binary):
    name = "mul"
    ir_ops = ("Mul",)
    ONNX_OPS = {"Mul": "two activations or one constant, NumPy broadcasting"}


# -- Max, Min, Div, Pow between two operands ------------------------------------------------------------------------
# The operand scheme (K_POS, A_D*, B_D*, KZP at the same indices as add/mul's, so binary.c reads both alike) plus:
EWISE_PARAMS = ("K_POS", "A_D0", "A_D1", "A_D2", "A_D3", "B_D0", "B_D1", "B_D2", "B_D3", "FUNC", "KSCALE", "RSV",
                "KZP")
EWISE_FUNCS = {"Max": 1, "Min": 2, "Div": 3, "Pow": 4}


def _scalar_const(graph: AnalyzedGraph, name: str) -> float | None:
    """The real value of a one-element constant (dequantized when it is quantized), else None."""
    if not name or not graph.is_const(name):
        return None
    w = np.asarray(graph.weights[name])
    if w.size != 1:
        return None
    t = graph.tensors.get(name)
    v = float(w.reshape(-1)[0])
    if t is not None and t.quant is not None:
        v = (v - float(t.quant.zero_point.reshape(-1)[0])) * float(t.quant.scale.reshape(-1)[0])
    return v


def _ewise_quantize(r: np.ndarray, so: float, zo: int) -> np.ndarray:
    """QuantizeLinear of float32 ``r`` like the C kernel: r / so in float32, NaN -> 0, saturated, halves to even."""
    quot = np.asarray(r, dtype=np.float32) / np.float32(so)
    quot = np.clip(np.nan_to_num(quot, nan=0.0), np.float32(-1e9), np.float32(1e9))
    return np.clip(np.rint(quot).astype(np.int64) + zo, -128, 127)


class Ewise(OpKind):
    """Max, Min, Div and Pow with NumPy broadcasting (variadic Max/Min arrive as chains of two-operand ops).

    float: ``max(a, b)`` / ``min(a, b)`` (NaN propagates) / ``a / b`` / ``a ** b`` in float32.
    int8 Max/Min/Div: each operand dequantized in float32 with its own scale (``(q - z) * s``; a constant operand's
    scale is param ``KSCALE``), the operation in float32, then QuantizeLinear (``/ s_out`` in float32, NaN -> 0,
    saturated, halves to even): every step is one IEEE operation, so C, NumPy and ONNX Runtime's DQ -> op -> Q agree
    bit for bit. A Pow whose exponent is a one-element constant is the unary function ``x ** e`` (kind unary, FUNC 21,
    an int8 table); int8 Pow with any other exponent is unsupported.
    """

    name = "ewise"
    ir_ops = tuple(EWISE_FUNCS)
    ONNX_OPS = {"Max": "two operands (variadic: a chain of two), NumPy broadcasting",
                "Min": "two operands (variadic: a chain of two), NumPy broadcasting",
                "Div": "two activations or one constant, NumPy broadcasting (a constant divisor becomes a Mul)",
                "Pow": "a one-element constant exponent (the unary table x ** e); float: any exponent operand"}
    INT8_EXACTNESS = {"Max": "bit-exact", "Min": "bit-exact", "Div": "bit-exact", "Pow": "<= 1 LSB"}
    PARAMS = EWISE_PARAMS
    COLS = "pixel"
    COL_DIMS = ("A_D2", "B_D2")
    CONSTS = ("K",)
    SINGLE_INPUT = False
    TILING = "pointwise"
    in_place = True  # tgrs_kernel_ewise stores out[i] after reading a[ia], b[ib] of the same element

    def col_local(self, graph: AnalyzedGraph, op: Op) -> str | None:
        # per pixel along W: output element (h, w, c) reads its operands at (h, w) (or their broadcast 1)
        return cols_reason(graph, op, per_pixel=True)

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        ins = [i for i in op.inputs if i]
        if len(ins) != 2:
            return f"{op.op_type} with {len(ins)} operands (chains of two are formed by the cleanup pass)"
        if all(graph.is_const(i) for i in ins):
            return "both operands are constants (not folded)"
        return None

    def check_dtype(self, graph: AnalyzedGraph, op: Op, int8: bool) -> str | None:
        if not int8:
            return None
        if op.op_type == "Pow":
            if _scalar_const(graph, op.inputs[1]) is None:
                return "int8 Pow needs a one-element constant exponent"
            return None
        for n in op.inputs:
            if n and graph.is_const(n):
                t = graph.tensors.get(n)
                if t is None or t.quant is None or t.quant.scale.size != 1:
                    return f"int8 {op.op_type} with a constant operand {n} not quantized per tensor"
        return None

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        from tigris.ops.unary import POW, int8_table

        a, b = op.inputs[0], op.inputs[1]
        y = graph.tensors[op.outputs[0]]
        int8 = dtype_kind(graph, op) == "int8"
        e = _scalar_const(graph, b) if op.op_type == "Pow" else None
        if e is not None and not graph.is_const(a):
            params = {"FUNC": POW, "ALPHA": f32_bits(e), "BETA": 0}
            consts = {}
            if int8:
                s_in, zp_in = per_tensor(graph.tensors[a], "Pow input")
                s_out, zp_out = per_tensor(y, "Pow output")
                consts["LUT"] = int8_table(POW, e, 0.0, s_in, zp_in, s_out, zp_out)
            return Lowered("unary", op.name, [a], [op.outputs[0]], params=params, consts=consts, macs=y.numel)
        ka, kb = graph.is_const(a), graph.is_const(b)
        params: dict[str, int] = {"K_POS": 0 if ka else (1 if kb else -1), "FUNC": EWISE_FUNCS[op.op_type], "KZP": 0}
        consts: dict[str, np.ndarray] = {}
        for slot, name, is_k in (("A", a, ka), ("B", b, kb)):
            if is_k:
                w = np.asarray(graph.weights[name])
                dims = broadcast_phys_dims(w.shape, y)
                if int8:
                    t = graph.tensors[name]
                    consts["K"] = const_to_phys(w, y).astype(np.int8)
                    params["KSCALE"] = f32_bits(float(t.quant.scale.reshape(-1)[0]))
                    params["KZP"] = int(t.quant.zero_point.reshape(-1)[0])
                else:
                    consts["K"] = const_to_phys(w.astype(np.float32), y)
            else:
                dims = operand_phys_dims(graph.tensors[name], y)
            for i, d in enumerate(dims):
                params[f"{slot}_D{i}"] = int(d)
        inputs = [n for n, k in ((a, ka), (b, kb)) if not k]
        return Lowered(self.name, op.name, inputs, [op.outputs[0]], params=params, consts=consts, macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        p = low.params
        a, za = _operand(low, "A", inputs, out)
        b, zb = _operand(low, "B", inputs, out)
        a = np.broadcast_to(a, out.data.shape)
        b = np.broadcast_to(b, out.data.shape)
        if out.dtype == "float32":
            fa, fb = a.astype(np.float32), b.astype(np.float32)
        else:
            kpos = p["K_POS"]
            scales = []
            for slot in (0, 1):
                if kpos == slot:
                    scales.append(np.float32(bits_f32(p["KSCALE"])))
                else:
                    v = inputs[1 if (slot == 1 and kpos == -1) else 0]
                    scales.append(np.float32(v.scale))
            fa = (a.astype(np.int64) - za).astype(np.float32) * scales[0]
            fb = (b.astype(np.int64) - zb).astype(np.float32) * scales[1]
        with np.errstate(all="ignore"):
            r = {1: np.maximum, 2: np.minimum, 3: np.divide, 4: np.power}[p["FUNC"]](fa, fb).astype(np.float32)
        if out.dtype == "float32":
            out.data[...] = r
            return
        out.data[...] = _ewise_quantize(r, out.scale, out.zero_point).astype(out.data.dtype)
