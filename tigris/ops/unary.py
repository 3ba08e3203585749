"""Elementwise activations (Unary) and PRelu, float32 and int8, band-aware (an output row reads the same input row).

Unary, float: the function selected by ``FUNC`` (see :data:`FUNCS`) computed in float32, with ``ALPHA``/``BETA`` as
float32 bit patterns (clip bounds, hard-sigmoid/hard-swish slope and offset, leaky-relu and elu slope, selu alpha
and gamma).

Unary, int8: a 256-entry int8 table ``LUT`` built here: entry ``q + 128`` is ``quantize(f((q - zp_in) * s_in))``
with ``f`` evaluated in float64 (codes 1-8) or, like ONNX Runtime's DequantizeLinear -> f -> QuantizeLinear, in
float32 (codes 9-21: exp, log, sqrt, reciprocal, neg, abs, erf, gelu, gelu-tanh, softplus, elu, selu, pow), and the
quantization of :func:`tigris.ops.qmath.quantize_float` (round half to even
of ``x / s_out`` in float32, plus ``zp_out``, saturated). The kernel is then a table lookup, bit-identical in C and
NumPy by construction, and as close to ONNX Runtime's float evaluation as one final rounding allows.

Numerics ``tflm``: Sigmoid and Tanh tables hold TFLM's integer results instead (``tflm_table``): the input code
minus its zero point is scaled into a fixed-point value with 4 integer bits by ``s_in * 2**27`` as
``(mult, shift)`` (TFLM's ``frexp`` decomposition, without renormalizing a mantissa that rounds up to 1), codes at
or beyond TFLM's input radius saturate, and the rest go through ``qmath.logistic_q31`` / ``qmath.tanh_q31``,
divided by ``2**23`` (logistic, output zero point -128) or ``2**24`` (tanh, zero point 0) with ``rdbpot``. TFLM
requires output scale 1/256, zero point -128 (logistic) and 1/128, 0 (tanh). The kernel is the same lookup.

PRelu, float: ``x >= 0 ? x : slope[k] * x`` with a per-channel (last physical axis) or scalar slope ``SLOPE``
(``k = c`` or 0), or, for any other slope shape that broadcasts against the input (``COUNT`` > 0 values), the slope
in the input's physical order with broadcast axes left out: ``k = n * SN + h * SH + w * SW + (NCH > 1 ? c : 0)``,
``h`` the global row (so a band reads the slope rows of its own rows).
PRelu, int8: two requantization paths from ``d = q - zp_in``::

    d >= 0:  zp_out + requant(d, PMULT, PSHIFT)          PMULT/PSHIFT encode s_in / s_out
    d <  0:  zp_out + requant(d, NMULT[k], NSHIFT[k])    NMULT/NSHIFT encode s_in * slope[k] / s_out

where ``slope[c]`` is the real (dequantized) slope; a negative slope is a negated multiplier and a zero slope is
``(0, 0)``. Both paths clamp to ``[LO, HI]``. One rounding each: qmath.requantize's exact product, rounded halves to
even (``_common.requantize_even``, docs/numerics.md).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.layout import tensor_view_dims
from tigris.ops._common import broadcast_phys_dims, const_to_phys, dtype_kind, per_tensor, requantize_even, same_rows
from tigris.ops.base import Lowered, OpKind, TensorView, bits_f32, cols_reason, f32_bits
from tigris.ops.qmath import quantize_float, quantize_multiplier

# FUNC codes shared with unary.c (Gelu with approximate="tanh" takes GELU_TANH).
FUNCS = {"Relu": 1, "Relu6": 2, "Clip": 3, "Sigmoid": 4, "Tanh": 5, "HardSigmoid": 6, "HardSwish": 7, "LeakyRelu": 8,
         "Exp": 9, "Log": 10, "Sqrt": 11, "Reciprocal": 12, "Neg": 13, "Abs": 14, "Erf": 15, "Gelu": 16,
         "Softplus": 18, "Elu": 19, "Selu": 20}
GELU_TANH = 17
POW = 21  # x ** ALPHA: a Pow with a scalar constant exponent (lowered by the ewise kind, tigris/ops/binary.py)
N_FUNCS = 21
# Functions whose int8 table is built in float32 (dequantize, function and quantize as ONNX Runtime evaluates the
# model as written); the first eight keep their float64 tables so existing plans stay byte-identical.
_F32_TABLES = frozenset(range(9, N_FUNCS + 1))


def _attr_str(v, default: str) -> str:
    if v is None:
        return default
    return v.decode() if isinstance(v, bytes) else str(v)


def func_code(op: Op) -> int:
    """The FUNC code of ``op`` (Gelu's approximation picks between two)."""
    if op.op_type == "Gelu" and _attr_str(op.attrs.get("approximate"), "none") == "tanh":
        return GELU_TANH
    return FUNCS[op.op_type]


def _alpha_beta(op: Op) -> tuple[float, float]:
    a = op.attrs
    if op.op_type == "Clip":
        lo = a.get("min")
        hi = a.get("max")
        return (float("-inf") if lo is None else float(lo)), (float("inf") if hi is None else float(hi))
    if op.op_type == "HardSigmoid":
        return float(a.get("alpha", 0.2)), float(a.get("beta", 0.5))
    if op.op_type == "HardSwish":
        return 1.0 / 6.0, 0.5
    if op.op_type == "LeakyRelu":
        return float(a.get("alpha", 0.01)), 0.0
    if op.op_type == "Elu":
        return float(a.get("alpha", 1.0)), 0.0
    if op.op_type == "Selu":
        return float(a.get("alpha", 1.67326319217681884765625)), float(a.get("gamma", 1.05070102214813232421875))
    return 0.0, 0.0


def _erf(x: np.ndarray) -> np.ndarray:
    # NumPy has no erf; math.erf per element in float64 (tables have 256 entries, tests small tensors)
    return np.vectorize(math.erf, otypes=[np.float64])(np.asarray(x, dtype=np.float64))


def float_fn(func: int, alpha: float, beta: float, dtype=np.float32) -> Callable[[np.ndarray], np.ndarray]:
    """The activation as a NumPy function in ``dtype`` (float32 for the float kernel, float64 for int8 tables)."""
    al, be = dtype(alpha), dtype(beta)
    one, zero, six = dtype(1), dtype(0), dtype(6)
    fns: dict[int, Callable[[np.ndarray], np.ndarray]] = {
        1: lambda x: np.maximum(x, zero),
        2: lambda x: np.minimum(np.maximum(x, zero), six),
        3: lambda x: np.minimum(np.maximum(x, al), be),
        4: lambda x: one / (one + np.exp(-x)),
        5: np.tanh,
        6: lambda x: np.maximum(zero, np.minimum(one, al * x + be)),
        7: lambda x: x * np.maximum(zero, np.minimum(one, al * x + be)),
        8: lambda x: np.where(x >= zero, x, al * x),
        9: np.exp,
        10: np.log,
        11: np.sqrt,
        12: lambda x: one / x,
        13: np.negative,
        14: np.abs,
        15: lambda x: _erf(x).astype(dtype),
        16: lambda x: dtype(0.5) * x * (one + _erf(x / dtype(math.sqrt(2.0))).astype(dtype)),
        17: lambda x: dtype(0.5) * x * (one + np.tanh(dtype(math.sqrt(2.0 / math.pi)) * (x + dtype(0.044715) * x * x * x))),
        18: lambda x: np.log1p(np.exp(x)),
        19: lambda x: np.where(x >= zero, x, al * (np.exp(x) - one)),
        20: lambda x: be * np.where(x > zero, x, al * (np.exp(x) - one)),
        21: lambda x: np.power(x, al),
    }
    if func not in fns:
        raise TigrisError(f"unknown unary function code {func}")
    f = fns[func]

    def run(x):
        with np.errstate(all="ignore"):  # log(0), 1/0, exp overflow: infinities and NaNs as in float32 C
            return np.asarray(f(np.asarray(x, dtype=dtype)), dtype=dtype)
    return run


def int8_table(func: int, alpha: float, beta: float, s_in: float, zp_in: int, s_out: float, zp_out: int) -> np.ndarray:
    """The 256-entry table of an int8 activation (see the module doc): entry i is the output for input code i - 128."""
    q = np.arange(-128, 128, dtype=np.int64)
    if func in _F32_TABLES:
        real32 = (q - zp_in).astype(np.float32) * np.float32(s_in)
        y = float_fn(func, alpha, beta, np.float32)(real32)
    else:
        real = (q - zp_in).astype(np.float64) * float(np.float32(s_in))
        y = float_fn(func, alpha, beta, np.float64)(real)
    return quantize_float(y, s_out, zp_out).astype(np.int8)


TFLM_IN_BITS = 4  # integer bits of the fixed-point input of TFLM's logistic and tanh


def tflm_table(func: int, s_in: float, zp_in: int, s_out: float, zp_out: int, where: str) -> np.ndarray:
    """TFLM's int8 logistic (func 4) or tanh (func 5) for every input code, as a 256-entry table (module doc)."""
    import math

    from tigris.ops import qmath

    want = (1.0 / 256, -128) if func == 4 else (1.0 / 128, 0)
    if (float(np.float32(s_out)), zp_out) != want:
        raise TigrisError(f"{'Sigmoid' if func == 4 else 'Tanh'} with numerics tflm needs output scale 1/"
                          f"{round(1 / want[0])} and zero point {want[1]} (TFLM's rule), got {s_out:g}, {zp_out}",
                          where)
    real = float(np.float32(s_in)) * float(1 << (31 - TFLM_IN_BITS))
    m, shift = math.frexp(real)
    mult = int(qmath.wrap32(np.int64(qmath.round_half_away(m * (1 << 31)))))
    if shift > 31:
        raise TigrisError(f"input scale {s_in:g} is too large for TFLM's fixed-point activation", where)
    radius = math.floor(((1 << TFLM_IN_BITS) - 1) * (1 << (31 - TFLM_IN_BITS)) / 2.0**shift)
    d = np.arange(-128, 128, dtype=np.int64) - zp_in
    x = qmath.requantize_tflm(d, mult, shift) if shift >= -31 else np.zeros_like(d)
    if func == 4:
        y = qmath.rdbpot(qmath.logistic_q31(x, TFLM_IN_BITS), 31 - 8) - 128
    else:
        y = qmath.rdbpot(qmath.tanh_q31(x, TFLM_IN_BITS), 31 - 7)
    y = np.where(d <= -radius, -128, np.where(d >= radius, 127, np.clip(y, -128, 127)))
    return y.astype(np.int8)


class Unary(OpKind):
    COLS = "pixel"
    name = "unary"
    ir_ops = tuple(FUNCS)
    ONNX_OPS = {"Relu": "", "Clip": "constant min/max (Relu6 when 0/6)", "Sigmoid": "", "Tanh": "",
                "HardSigmoid": "alpha, beta (also the Relu6(x + 3) / 6 pattern)",
                "HardSwish": "(also the x * Relu6(x + 3) / 6 pattern)", "LeakyRelu": "alpha",
                "PRelu": "a slope with one value: LeakyRelu", "Exp": "", "Log": "", "Sqrt": "", "Reciprocal": "",
                "Neg": "", "Abs": "", "Erf": "", "Gelu": "approximate none and tanh", "Softplus": "", "Elu": "alpha",
                "Selu": "alpha, gamma"}
    TILING = "pointwise"
    in_place = True  # unary.c: y[i] = f(x[i]) (float) or lut[x[i]] (int8), one index at a time

    def col_local(self, graph: AnalyzedGraph, op: Op) -> str | None:
        # per pixel along W: output element (h, w, c) reads its operands at (h, w) (or their broadcast 1)
        return cols_reason(graph, op, per_pixel=True)

    def channel_local(self, graph: AnalyzedGraph, op: Op) -> bool:
        # one input element per output element, one function (or one int8 table) for every channel
        return len([i for i in op.inputs if i]) == 1

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        why = super().check_operands(graph, op)
        if why is None and op.op_type == "Clip" and ("min" not in op.attrs or "max" not in op.attrs):
            why = "bounds are not constants"
        if why is None and op.op_type == "Gelu":
            approx = _attr_str(op.attrs.get("approximate"), "none")
            if approx not in ("none", "tanh"):
                why = f"Gelu approximate={approx!r} (none and tanh are defined)"
        return why

    def as_fused_activation(self, op: Op) -> str | None:
        return {"Relu": "relu", "Relu6": "relu6"}.get(op.op_type)
    PARAMS = ("FUNC", "ALPHA", "BETA")
    CONSTS = ("LUT",)

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        func = func_code(op)
        alpha, beta = _alpha_beta(op)
        params = {"FUNC": func, "ALPHA": f32_bits(alpha), "BETA": f32_bits(beta)}
        consts = {}
        if dtype_kind(graph, op) == "int8":
            s_in, zp_in = per_tensor(x, f"{op.op_type} input")
            s_out, zp_out = per_tensor(y, f"{op.op_type} output")
            if graph.numerics == "tflm" and func in (4, 5):
                consts["LUT"] = tflm_table(func, s_in, zp_in, s_out, zp_out, op.name)
            else:
                consts["LUT"] = int8_table(func, alpha, beta, s_in, zp_in, s_out, zp_out)
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, consts=consts,
                       macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        x = same_rows(inputs[0], out)
        if out.dtype == "float32":
            p = low.params
            out.data[...] = float_fn(p["FUNC"], bits_f32(p["ALPHA"]), bits_f32(p["BETA"]))(x)
            return
        out.data[...] = low.consts["LUT"][x.astype(np.int64) + 128]


class PRelu(OpKind):
    COLS = "pixel"
    COL_ZERO = ("SW",)  # a slope that varies along W is indexed by the full tensor's column
    name = "prelu"
    ir_ops = ("PRelu",)

    def col_local(self, graph: AnalyzedGraph, op: Op) -> str | None:
        # per pixel; a slope that varies along W (per position) is indexed by the absolute column: not column-local
        return cols_reason(graph, op, per_pixel=True)
    ONNX_OPS = {"PRelu": "constant slope of any shape that broadcasts to the input (scalar, per channel, per "
                         "position)"}
    SINGLE_INPUT = False
    TILING = "pointwise"

    # No int8 check of the slope: the int8 kernel takes its real values (float or dequantized) into its multipliers.
    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        ins = [i for i in op.inputs if i]
        return None if len(ins) == 2 and ins[1] in graph.weights else "slope is not a constant"
    PARAMS = ("NCH", "PMULT", "PSHIFT", "LO", "HI", "COUNT", "SN", "SH", "SW")
    CONSTS = ("SLOPE", "NMULT", "NSHIFT")

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        xn, sn = op.inputs[0], op.inputs[1]
        if not graph.is_const(sn):
            raise TigrisError("PRelu needs a constant slope", op.name)
        x, y = graph.tensors[xn], graph.tensors[op.outputs[0]]
        slope = np.asarray(graph.weights[sn])
        dims = broadcast_phys_dims(slope.shape, x)
        c = tensor_view_dims(x)[3]
        st = graph.tensors.get(sn)
        if slope.dtype.kind in "iu":
            if st is None or st.quant is None:
                raise TigrisError("integer PRelu slope without quantization", sn)
            real = (slope.astype(np.float64) - st.quant.zero_point.astype(np.float64)) * st.quant.scale
        else:
            real = slope.astype(np.float64)
        params = {"LO": -128, "HI": 127}
        if dims[:3] == (1, 1, 1):
            real = real.reshape(-1)
            if real.size not in (1, c):
                real = np.broadcast_to(real, (c,))
            params["NCH"] = int(real.size)
        else:  # a slope varying along N, H or W: its values in x's physical order, broadcast axes left out
            real = const_to_phys(real, x).reshape(-1)
            params.update(NCH=dims[3], COUNT=int(real.size), SW=dims[3] if dims[2] > 1 else 0,
                          SH=dims[2] * dims[3] if dims[1] > 1 else 0,
                          SN=dims[1] * dims[2] * dims[3] if dims[0] > 1 else 0)
        consts: dict[str, np.ndarray] = {}
        if dtype_kind(graph, op) == "int8":
            s_in, _ = per_tensor(x, "PRelu input")
            s_out, _ = per_tensor(y, "PRelu output")
            params["PMULT"], params["PSHIFT"] = quantize_multiplier(s_in / s_out, op.name)
            mults, shifts = [], []
            for r in real:
                if r == 0.0:
                    m, s = 0, 0
                else:
                    m, s = quantize_multiplier(abs(s_in * r / s_out), op.name)
                    m = -m if r < 0 else m
                mults.append(m)
                shifts.append(s)
            consts["NMULT"] = np.array(mults, dtype=np.int32)
            consts["NSHIFT"] = np.array(shifts, dtype=np.int32)
        else:
            consts["SLOPE"] = real.astype(np.float32)
        return Lowered(self.name, op.name, [xn], [op.outputs[0]], params=params, consts=consts, macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        xv = inputs[0]
        x = same_rows(xv, out)
        p = low.params
        k: np.ndarray | slice = slice(None)
        if p.get("COUNT", 0):
            n, _, w, c = out.dims
            k = (np.arange(n)[:, None, None, None] * p["SN"]
                 + np.arange(out.row0, out.row0 + out.rows)[None, :, None, None] * p["SH"]
                 + np.arange(w)[None, None, :, None] * p["SW"]
                 + (np.arange(c)[None, None, None, :] if p["NCH"] > 1 else 0))
        if out.dtype == "float32":
            s = low.consts["SLOPE"].astype(np.float32)[k]
            out.data[...] = np.where(x >= 0, x, x * s)
            return
        d = x.astype(np.int64) - xv.zero_point
        pos = requantize_even(d, p["PMULT"], p["PSHIFT"])
        neg = requantize_even(d, low.consts["NMULT"].astype(np.int64)[k], low.consts["NSHIFT"].astype(np.int64)[k])
        q = np.where(d >= 0, pos, neg) + out.zero_point
        out.data[...] = np.clip(q, p["LO"], p["HI"]).astype(out.data.dtype)
