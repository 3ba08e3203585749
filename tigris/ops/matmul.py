"""The ``matmul`` kind: the matrix product of two operands with NumPy batch broadcasting, float32 and int8.

IR ``MatMul`` (ONNX MatMul, and a Gemm the relabel pass could not give a constant ``[OC, K]`` weight) computes::

    Y[b0, b1, m, n] = ALPHA * sum_k A[b0, b1, m, k] * B[b0, b1, k, n]  (+ C[m, n])

for operands of rank 1 to 4. The kind is *strided*: every operand is addressed through element strides of its own
physical view (``AS0, AS1, AM, AK`` for A, ``BS0, BS1, BK, BN`` for B, ``YS0, YS1, YM, YN`` for Y), computed here
from each tensor's logical shape and layout. So any layout pair works, a broadcast batch axis is a zero stride,
a 1-D operand (ONNX's promotion to ``[1, K]`` / ``[K, 1]``) is M or N = 1 with stride 0, and Gemm's ``transA`` /
``transB`` are swapped strides rather than a Transpose. Batch axes are the output's logical axes before the last
two (at most two, the runtime's rank limit). Either operand (not both) may be a constant: the const blob ``K`` in
plain logical order, ``K_POS`` says which (-1 none, 0 A, 1 B). ``C`` (Gemm's bias, constant) is stored broadcast
to ``[M, N]`` with ``beta`` applied. With ``compile --weights fp16`` (the default for a float16 model) a float
constant operand is stored as IEEE halves (``WF16`` = 1), which the kernel widens exactly into its scratch before it
computes (docs/format.md "Float16 weights"); that widened copy is the kind's only scratch.

float32: the dot product in float32 in order of k, then ``acc * ALPHA + C[m, n]`` (``ALPHA`` f32 bits).

int8 (QDQ, each operand with its own per-tensor scale and zero point; a constant B may have one scale per column
n): ``acc = sum_k (a - za) * (b - zb)`` exactly in int32 (``K <= 32767``, so ``|acc| <= 32767 * 255**2 < 2**31``),
plus the int32 bias ``C[m, n]`` (``beta * C / (alpha * s_a * s_b)`` rounded half to even, exact for a bias the
quantizer wrote at scale ``s_a * s_b``), then the multiply-accumulate requantization of ``tigris/ops/_mac.py`` by
``alpha * s_a * s_b[n] / s_y`` (consts ``MULT``/``SHIFT``, ``NMULT`` = 1 or N entries; ``NUMERICS`` as for conv)
plus ``zp_y``, saturated to int8. A zero point of a constant operand is param ``KZP`` (a view carries its own).
An int32 output (ONNX MatMulInteger, scales 1) is the accumulator itself.

Tiling: pointwise along the rows of its first operand when that is an activation whose M axis is the row axis of
its view, and so is the output's (rank-4 ``nhwc`` operands ``[1, B1, M, K]``: a batched product of attention,
queries by keys; ``ROW_BANDS``): output rows ``[a, b)`` read A's rows ``[a, b)`` and all of B
(``OpKind.whole_inputs``), so a tile holds a band of the queries and the whole keys. Any other product is structural
(it reads whole operands).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor, TigrisError
from tigris.layout import perm_of
from tigris.ops import _mac, qmath
from tigris.ops._common import per_tensor
from tigris.ops.base import Lowered, OpKind, TensorView, bits_f32, f32_bits

K_MAX = 32767  # the int8 accumulator bound of the module doc
# False: every product is structural (the earlier rule; bench/plan_quality.py --cols plans its row-tiles baseline so).
ROW_BANDS = True


def logical_strides(shape: Sequence[int], layout: str) -> list[int]:
    """Element stride of every logical axis of a tensor in its physical buffer (``tigris.layout``'s orders)."""
    shape = [int(d) for d in shape]
    perm = perm_of(layout, len(shape))
    strides = [0] * len(shape)
    step = 1
    for ax in reversed(perm):
        strides[ax] = step
        step *= shape[ax]
    return strides


def _trans(op: Op, which: str) -> bool:
    return bool(int(op.attrs.get(which, 0) or 0))


def _operand_geometry(shape: tuple[int, ...], strides: list[int], trans: bool, is_a: bool):
    """(batch shape, batch strides, rows, cols, row stride, col stride) of an operand as a matrix: A is
    rows = M, cols = K; B rows = K, cols = N. A 1-D operand is promoted as ONNX says (A [K] -> [1, K], B [K] ->
    [K, 1]) with stride 0 on the added axis."""
    if len(shape) == 1:
        if is_a:
            return (), [], 1, shape[0], 0, strides[0]
        return (), [], shape[0], 1, strides[0], 0
    r, c = shape[-2], shape[-1]
    sr, sc = strides[-2], strides[-1]
    if trans:
        r, c, sr, sc = c, r, sc, sr
    return tuple(shape[:-2]), list(strides[:-2]), r, c, sr, sc


def _batch_strides(bshape: tuple[int, ...], own: tuple[int, ...], own_strides: list[int]) -> list[int]:
    """Strides of an operand along the two output batch axes (right-aligned; 0 where it broadcasts)."""
    out = [0, 0]
    off = 2 - len(bshape)
    for j in range(len(bshape)):
        i = j - (len(bshape) - len(own))
        if i >= 0 and own[i] == bshape[j] and own[i] != 1:
            out[off + j] = own_strides[i]
    return out


def _broadcast_batch(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(out)


class MatMul(OpKind):
    name = "matmul"
    ir_ops = ("MatMul",)
    ONNX_OPS = {"MatMul": "two activations (or one constant the fc kind does not take), ranks 1-4, NumPy batch "
                          "broadcasting, 1-D operands",
                "Gemm": "non-constant B, transA, transB, alpha, beta, matrix / vector / scalar C (constant)",
                "MatMulInteger": "int8 / uint8 operands (graph inputs or constants), one constant zero point each, "
                                 "int32 output (pass integer_ops)"}
    # a float32 constant operand may be stored as IEEE halves (compile --weights fp16, param WF16)
    DTYPES = {"MatMul": ("float32", "float32 with a float16 constant", "int8"),
              "Gemm": ("float32", "float32 with a float16 constant", "int8"), "MatMulInteger": ("int8/uint8 -> int32",)}
    INT8_EXACTNESS = {"MatMul": "<= 1 LSB", "Gemm": "<= 1 LSB", "MatMulInteger": "bit-exact"}
    PARAMS = ("B0", "B1", "M", "N", "K", "AS0", "AS1", "AM", "AK", "BS0", "BS1", "BK", "BN", "YS0", "YS1", "YM",
              "YN", "K_POS", "KZP", "ALPHA", "NUMERICS", "NMULT",
              "WF16")  # float: 1 when the constant K holds IEEE halves (widened into the scratch by the kernel)
    CONSTS = ("K", "C", "MULT", "SHIFT")
    TILING = "structural"
    TILING_DOC = "pointwise along the rows of A (a rank-4 nhwc product whose M is the row axis, B read whole), " \
                 "else structural"
    SINGLE_INPUT = False

    def _row_local(self, graph: AnalyzedGraph, op: Op) -> bool:
        """The module doc's tiling condition: A an activation ``[1, B1, M, K]`` and Y ``[1, B1, M, N]`` stored nhwc
        (M on the view's row axis), no transA."""
        if not ROW_BANDS or len(op.inputs) < 2 or graph.is_const(op.inputs[0]) or _trans(op, "transA"):
            return False
        a, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if a.layout != "nhwc" or y.layout != "nhwc" or len(a.shape) != 4 or len(y.shape) != 4:
            return False
        if a.shape[0] != 1 or y.shape[0] != 1 or a.shape[2] != y.shape[2]:
            return False
        return not isinstance(self._geometry(graph, op), str)

    def tiling(self, graph: AnalyzedGraph, op: Op) -> str:
        return "pointwise" if self._row_local(graph, op) else "structural"

    def whole_inputs(self, graph: AnalyzedGraph, op: Op) -> tuple[int, ...]:
        return (1,) if self._row_local(graph, op) else ()

    # -- support -------------------------------------------------------------------------------------------------
    def unsupported(self, graph: AnalyzedGraph, op: Op) -> str | None:
        y = graph.tensors[op.outputs[0]]
        if y.dtype != "int32":
            return super().unsupported(graph, op)
        # an int32 output is the raw accumulator (MatMulInteger): int8 operands, unit scales, zero point 0
        why = self.check_operands(graph, op)
        if why:
            return why
        for n in (*op.inputs[:2], y.name):
            t = graph.tensors[n]
            if graph.is_const(n):
                continue
            if t.quant is None or t.quant.scale.size != 1 or t.dtype not in ("int8", "int32"):
                return f"activation {n} has dtype {t.dtype}{' with' if t.quant else ' without'} quantization"
        if float(y.quant.scale[0]) != 1.0 or int(y.quant.zero_point[0]) != 0:
            return "an int32 product output needs scale 1 and zero point 0"
        for n in op.inputs[:2]:
            if float(np.asarray(graph.tensors[n].quant.scale).ravel()[0]) != 1.0:
                return f"an int32 product of operand {n} with a scale other than 1"
        return self.check_dtype(graph, op, True)

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        ins = list(op.inputs)
        if len(ins) < 2 or not ins[0] or not ins[1] or len(ins) > 3:
            return f"MatMul with operands {ins}"
        a, b = ins[0], ins[1]
        if graph.is_const(a) and graph.is_const(b):
            return "both operands are constants (not folded)"
        if len(ins) == 3 and ins[2] and not graph.is_const(ins[2]):
            return "a Gemm bias C that is not a constant"
        geo = self._geometry(graph, op)
        if isinstance(geo, str):
            return geo
        return None

    def check_dtype(self, graph: AnalyzedGraph, op: Op, int8: bool) -> str | None:
        if not int8:
            for n in op.inputs:
                if n and graph.is_const(n) and np.asarray(graph.weights[n]).dtype.kind != "f":
                    return f"float MatMul with a non-float constant {n}"
            return None
        for slot, n in enumerate(op.inputs[:2]):
            if not graph.is_const(n):
                continue
            t = graph.tensors[n]
            w = np.asarray(graph.weights[n])
            if t.quant is None or w.dtype != np.int8:
                return f"int8 MatMul with a constant operand {n} that is not int8-quantized"
            zp = np.asarray(t.quant.zero_point).ravel()
            if zp.size > 1 and np.any(zp != zp[0]):
                return f"constant operand {n} has per-channel zero points"
            if t.quant.scale.size > 1:
                col_axis = (0 if _trans(op, "transB") else len(t.shape) - 1) if slot == 1 else None
                if col_axis is None or len(t.shape) < 2 or t.quant.axis is None or \
                        t.quant.axis % len(t.shape) != col_axis:
                    return f"constant operand {n} is quantized per channel along an axis other than the columns"
        geo = self._geometry(graph, op)
        if not isinstance(geo, str) and geo["K"] > K_MAX:
            return f"int8 MatMul with K = {geo['K']} > {K_MAX} (the int32 accumulator could overflow)"
        return None

    def _geometry(self, graph: AnalyzedGraph, op: Op) -> dict | str:
        a, b = op.inputs[0], op.inputs[1]
        y = graph.tensors[op.outputs[0]]

        def info(n: str) -> tuple[tuple[int, ...], list[int]]:
            t = graph.tensors[n]
            if graph.is_const(n):
                return tuple(t.shape), logical_strides(t.shape, "plain")
            return tuple(t.shape), logical_strides(t.shape, t.layout)

        sa, sta = info(a)
        sb, stb = info(b)
        if len(sa) == 0 or len(sb) == 0:
            return "MatMul of a scalar"
        if op.attrs.get("transA") is not None and (len(sa) != 2 or len(sb) != 2):
            return "Gemm operands must have rank 2"
        ba, bsa, m, k, am, ak = _operand_geometry(sa, sta, _trans(op, "transA"), True)
        bb, bsb, k2, n, bk, bn = _operand_geometry(sb, stb, _trans(op, "transB"), False)
        if k != k2:
            return f"inner dimensions differ ({k} vs {k2})"
        bshape = _broadcast_batch(ba, bb)
        if bshape is None:
            return f"batch shapes {list(ba)} and {list(bb)} do not broadcast"
        if len(bshape) > 2:
            return f"{len(bshape)} batch axes (at most 2)"
        want = list(bshape) + ([m] if len(sa) > 1 else []) + ([n] if len(sb) > 1 else [])
        if tuple(want) != tuple(y.shape):
            return f"output shape {list(y.shape)} is not the product's {want}"
        sty = logical_strides(y.shape, y.layout)
        nb = len(bshape)
        ys = [0, 0]
        ys[2 - nb:] = sty[:nb]
        ym = sty[nb] if len(sa) > 1 else 0
        yn = sty[-1] if len(sb) > 1 else 0
        bpad = (1,) * (2 - nb) + tuple(bshape)
        return {"B0": bpad[0], "B1": bpad[1], "M": m, "N": n, "K": k,
                "AS": _batch_strides(bshape, ba, bsa), "AM": am, "AK": ak,
                "BS": _batch_strides(bshape, bb, bsb), "BK": bk, "BN": bn,
                "YS": ys, "YM": ym, "YN": yn}

    # -- lowering ------------------------------------------------------------------------------------------------
    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        geo = self._geometry(graph, op)
        if isinstance(geo, str):
            raise TigrisError(f"MatMul: {geo}", op.name)
        a, b = op.inputs[0], op.inputs[1]
        cname = op.inputs[2] if len(op.inputs) > 2 and op.inputs[2] else None
        y = graph.tensors[op.outputs[0]]
        ka, kb = graph.is_const(a), graph.is_const(b)
        m, n, k = geo["M"], geo["N"], geo["K"]
        params: dict[str, int] = {"B0": geo["B0"], "B1": geo["B1"], "M": m, "N": n, "K": k,
                                  "AS0": geo["AS"][0], "AS1": geo["AS"][1], "AM": geo["AM"], "AK": geo["AK"],
                                  "BS0": geo["BS"][0], "BS1": geo["BS"][1], "BK": geo["BK"], "BN": geo["BN"],
                                  "YS0": geo["YS"][0], "YS1": geo["YS"][1], "YM": geo["YM"], "YN": geo["YN"],
                                  "K_POS": 0 if ka else (1 if kb else -1), "KZP": 0, "NMULT": 0}
        alpha = float(op.attrs.get("alpha", 1.0))
        beta = float(op.attrs.get("beta", 1.0))
        consts: dict[str, np.ndarray] = {}
        int8 = y.dtype in ("int8", "int32") and y.quant is not None
        kname = a if ka else (b if kb else None)
        if not int8:
            params["ALPHA"] = f32_bits(alpha)
            if kname is not None:
                half: dict[str, int] = {}
                consts["K"] = _mac.stored_float_weight(graph, np.asarray(graph.weights[kname], dtype=np.float32),
                                                       half, op.name)
                params["WF16"] = half.get("wf16", 0)
            if cname is not None:
                c = np.asarray(graph.weights[cname], dtype=np.float32)
                consts["C"] = np.ascontiguousarray(
                    (np.float32(beta) * np.broadcast_to(c, (m, n))).astype(np.float32))
            return Lowered(self.name, op.name, [t for t, kk in ((a, ka), (b, kb)) if not kk], [y.name],
                           params=params, consts=consts, macs=geo["B0"] * geo["B1"] * m * n * k)

        def quant(name: str) -> tuple[np.ndarray, int]:
            t = graph.tensors[name]
            if graph.is_const(name):
                s = np.asarray(t.quant.scale, dtype=np.float64).ravel()
                return s, int(np.asarray(t.quant.zero_point).ravel()[0])
            s1, z1 = per_tensor(t, "MatMul operand")
            return np.array([s1]), z1

        s_a, z_a = quant(a)
        s_b, z_b = quant(b)
        if kname is not None:
            consts["K"] = np.ascontiguousarray(np.asarray(graph.weights[kname], dtype=np.int8))
            params["KZP"] = z_a if ka else z_b
        s_y, z_y = per_tensor(y, "MatMul output")
        if np.any(s_a <= 0) or np.any(s_b <= 0) or not s_y > 0:
            raise TigrisError("MatMul: quantization scales must be positive", op.name)
        acc_scale = alpha * float(s_a[0]) * np.broadcast_to(s_b, (n,)).astype(np.float64)
        if cname is not None:
            ct = graph.tensors[cname]
            cv = np.asarray(graph.weights[cname])
            if ct.quant is not None:
                cs = np.asarray(ct.quant.scale, dtype=np.float64).ravel()
                cz = np.asarray(ct.quant.zero_point, dtype=np.float64).ravel()
                if cs.size not in (1, n) or cz.size not in (1, n) or (cs.size > 1 and cv.shape[-1:] != (n,)):
                    raise TigrisError("MatMul: a bias C quantized per channel along an axis other than N", cname)
                creal = (cv.astype(np.float64) - cz) * cs  # per column n when per channel
            else:
                creal = cv.astype(np.float64)
            bias = np.rint(beta * np.broadcast_to(creal, (m, n)) / acc_scale[None, :]).astype(np.int64)
            if np.any(np.abs(bias) + k * 255 * 255 >= 2**31):
                raise TigrisError("MatMul: int32 accumulator could overflow (bias too large)", op.name)
            consts["C"] = np.ascontiguousarray(bias.astype(np.int32))
        if y.dtype == "int32":
            if not np.allclose(acc_scale, float(s_y)) or z_y != 0:
                raise TigrisError("MatMul with an int32 output needs unit scales", op.name)
            return Lowered(self.name, op.name, [t for t, kk in ((a, ka), (b, kb)) if not kk], [y.name],
                           params=params, consts=consts, macs=geo["B0"] * geo["B1"] * m * n * k)
        eff = acc_scale / float(s_y)
        if np.all(eff == eff[0]):
            eff = eff[:1]
        mult, shift = qmath.quantize_multipliers(eff, f"{op.name}: {a} x {b} / {y.name}", graph.numerics)
        consts["MULT"] = np.asarray(mult, dtype=np.int32)
        consts["SHIFT"] = np.asarray(shift, dtype=np.int32)
        params["NMULT"] = int(eff.size)
        params["NUMERICS"] = qmath.numerics_code(graph.numerics)
        return Lowered(self.name, op.name, [t for t, kk in ((a, ka), (b, kb)) if not kk], [y.name],
                       params=params, consts=consts, macs=geo["B0"] * geo["B1"] * m * n * k)

    def macs(self, graph: AnalyzedGraph, op: Op, out_rows: int | None = None) -> int:
        geo = self._geometry(graph, op)
        if isinstance(geo, str):
            return 0
        return geo["B0"] * geo["B1"] * geo["M"] * geo["N"] * geo["K"]

    def scratch_bytes(self, low: Lowered, graph: AnalyzedGraph | None, out_rows: int) -> int:
        """None, except the float32 copy of an IEEE-half constant (param WF16) the kernel widens it into (16-byte
        aligned, as ``tgrs_f16_view``)."""
        if not low.params.get("WF16"):
            return 0
        return (int(np.asarray(low.consts["K"]).size) * 4 + 15) // 16 * 16

    # -- reference -----------------------------------------------------------------------------------------------
    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        p = low.params
        kpos = p["K_POS"]
        views = list(inputs)
        ops_ = []
        for slot in (0, 1):
            if kpos == slot:
                ops_.append((np.asarray(low.consts["K"]).reshape(-1), p["KZP"]))
            else:
                v = views.pop(0)
                ops_.append((np.asarray(v.data).reshape(-1), v.zero_point))
        (fa, za), (fb, zb) = ops_
        b0, b1, m, n, k = (int(p[x]) for x in ("B0", "B1", "M", "N", "K"))
        # a row band (module doc "Tiling"): output rows [r0, r0 + rows) of M, A's band from its own first row
        r0, rows = (out.row0, out.rows) if out.rows != out.dims[1] else (0, m)
        a0 = inputs[0].row0 if kpos != 0 and out.rows != out.dims[1] else 0
        mr = np.arange(r0, r0 + rows)
        i0, i1, im, ik = np.ix_(range(b0), range(b1), mr - a0, range(k))
        ia = i0 * p["AS0"] + i1 * p["AS1"] + im * p["AM"] + ik * p["AK"]
        j0, j1, jk, jn = np.ix_(range(b0), range(b1), range(k), range(n))
        ib = j0 * p["BS0"] + j1 * p["BS1"] + jk * p["BK"] + jn * p["BN"]
        A, B = fa[ia], fb[ib]
        y0, y1, ym, yn = np.ix_(range(b0), range(b1), mr - r0, range(n))
        iy = (y0 * p["YS0"] + y1 * p["YS1"] + ym * p["YM"] + yn * p["YN"]).reshape(-1)
        flat = out.data.reshape(-1)
        if out.dtype == "float32":
            acc = np.matmul(A.astype(np.float64), B.astype(np.float64)) * np.float64(bits_f32(p["ALPHA"]))
            if "C" in low.consts:
                acc = acc + np.asarray(low.consts["C"], dtype=np.float64).reshape(m, n)[mr]
            flat[iy] = acc.astype(np.float32).reshape(-1)
            return
        acc = np.matmul(A.astype(np.int64) - za, B.astype(np.int64) - zb)
        if "C" in low.consts:
            acc = acc + np.asarray(low.consts["C"], dtype=np.int64).reshape(m, n)[mr]
        if out.dtype == "int32":
            flat[iy] = acc.astype(np.int32).reshape(-1)
            return
        mult = np.broadcast_to(np.asarray(low.consts["MULT"], dtype=np.int64), (n,))
        shift = np.broadcast_to(np.asarray(low.consts["SHIFT"], dtype=np.int64), (n,))
        q = qmath.requantize_nm(acc, mult, shift, int(p.get("NUMERICS", 0))) + out.zero_point
        flat[iy] = qmath.saturate(q).astype(np.int8).reshape(-1)
