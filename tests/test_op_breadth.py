"""Operator breadth end to end: small models of the unary, element-wise, reduction and slicing operators through
``api.verify`` (compile, C runtime, NumPy reference, ONNX Runtime): float within verify's tolerance of ONNX Runtime;
int8 QDQ bit-exact against the reference and within 1 LSB of ONNX Runtime evaluated as written."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tigris import api

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits=None, opset=20):
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, F, s) for n, s in outputs],
                          initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    onnx.checker.check_model(m)
    return m


def _qdq(x: str, tag: str, scale: float, zp: int, inits: dict) -> tuple[list, str]:
    """QuantizeLinear -> DequantizeLinear of ``x`` on (scale, zp), as ORT's static quantizer writes activations."""
    inits[f"s_{tag}"], inits[f"z_{tag}"] = np.float32(scale), np.int8(zp)
    return [helper.make_node("QuantizeLinear", [x, f"s_{tag}", f"z_{tag}"], [f"{tag}_q"]),
            helper.make_node("DequantizeLinear", [f"{tag}_q", f"s_{tag}", f"z_{tag}"], [f"{tag}_d"])], f"{tag}_d"


def _verify(tmp_path, m, seeds=2, budget="1M"):
    p = tmp_path / "m.onnx"
    p.write_bytes(m.SerializeToString())
    for seed in range(seeds):
        r = api.verify(p, budget, seed=seed)
        assert r["pass"], r["outputs"]
    return api.compile_model(p, budget)


# -- unary ------------------------------------------------------------------------------------------------------------
# (op, attrs, int8 input (scale, zp), int8 output (scale, zp)); verify's random inputs are standard normal
UNARY = [
    ("Exp", {}, (0.03, 0), (0.05, -100)),
    ("Log", {}, (0.03, -128), (0.03, 60)),  # zero point -128: every code is >= 0, log(0) saturates
    ("Sqrt", {}, (0.03, -128), (0.01, -128)),
    ("Reciprocal", {}, (0.03, -128), (0.5, -128)),
    ("Neg", {}, (0.03, 5), (0.03, -5)),
    ("Abs", {}, (0.03, 5), (0.02, -128)),
    ("Erf", {}, (0.03, 0), (1 / 128, 0)),
    ("Gelu", {}, (0.03, 0), (0.02, -100)),
    ("Gelu", {"approximate": "tanh"}, (0.03, 0), (0.02, -100)),
    ("Softplus", {}, (0.03, 0), (0.02, -128)),
    ("Elu", {"alpha": 0.8}, (0.03, 0), (0.02, -20)),
    ("Selu", {}, (0.03, 0), (0.025, -40)),
]


@pytest.mark.parametrize("op,attrs,qin,qout", UNARY, ids=[f"{u[0]}{'-' + str(u[1]) if u[1] else ''}" for u in UNARY])
@pytest.mark.parametrize("quantized", [False, True])
def test_unary_verifies(tmp_path, op, attrs, qin, qout, quantized):
    shape = [1, 3, 6, 5]
    x = "x"
    nodes: list = []
    inits: dict = {}
    if op in ("Log", "Sqrt", "Reciprocal"):
        # a positive domain from a normal input: Abs first (then Log/Reciprocal of values near 0 are large, as
        # they are in the model)
        nodes.append(helper.make_node("Abs", ["x"], ["xa"]))
        x = "xa"
        if op != "Sqrt":
            inits["eps"] = np.float32(0.25)
            nodes.append(helper.make_node("Add", ["xa", "eps"], ["xe"]))
            x = "xe"
    if quantized:
        q, x = _qdq(x, "in", *qin, inits)
        nodes += q
    nodes.append(helper.make_node(op, [x], ["y0"], **attrs))
    y = "y0"
    if quantized:
        q, y = _qdq(y, "out", *qout, inits)
        nodes += q
    nodes.append(helper.make_node("Identity", [y], ["y"]))
    c = _verify(tmp_path, _model(nodes, [("x", shape)], [("y", shape)], inits))
    _assert_runs_as(c, op, "int8" if quantized else "float32")


def _assert_runs_as(compiled, op_type: str, dtype: str) -> None:
    """The op reached the plan in ``dtype`` (an int8 model's op was folded into an int8 kernel, not left float)."""
    g = compiled.analysis.prepared.graph
    ops = [o for o in g.ops if o.op_type == op_type]
    assert ops and all(g.tensors[o.outputs[0]].dtype == dtype for o in ops), [(o.op_type, g.tensors[o.outputs[0]].dtype)
                                                                              for o in g.ops]



# -- element-wise between activations ---------------------------------------------------------------------------------
# (op, operand shapes, output shape); Max/Min variadic (three operands: a chain of two), broadcasting per channel,
# per row and scalar
EWISE = [
    ("Max", [[1, 4, 5, 6], [1, 4, 1, 1], [1, 1, 5, 6]], [1, 4, 5, 6]),
    ("Min", [[1, 4, 5, 6], [6]], [1, 4, 5, 6]),
    ("Div", [[1, 4, 5, 6], [1, 4, 5, 6]], [1, 4, 5, 6]),
    ("Div", [[2, 7], [1]], [2, 7]),
    ("Pow", [[1, 3, 4, 5]], [1, 3, 4, 5]),  # the exponent is the constant 2
]


@pytest.mark.parametrize("op,shapes,out", EWISE, ids=[f"{e[0]}-{len(e[1])}-{len(e[2])}d" for e in EWISE])
@pytest.mark.parametrize("quantized", [False, True])
def test_ewise_verifies(tmp_path, op, shapes, out, quantized):
    nodes: list = []
    inits: dict = {}
    names = []
    for k, _ in enumerate(shapes):
        x = f"x{k}"
        if op == "Div" and k == 1:  # a divisor away from zero: |x| + 0.5
            inits["half"] = np.float32(0.5)
            nodes += [helper.make_node("Abs", [x], [f"{x}a"]), helper.make_node("Add", [f"{x}a", "half"], [f"{x}e"])]
            x = f"{x}e"
        if quantized:
            q, x = _qdq(x, f"in{k}", 0.02 + 0.011 * k, 3 - 7 * k if op != "Div" or k == 0 else -128, inits)
            nodes += q
        names.append(x)
    if op == "Pow":
        inits["two"] = np.float32(2.0)
        names.append("two")
    nodes.append(helper.make_node(op, names, ["y0"]))
    y = "y0"
    if quantized:
        q, y = _qdq(y, "out", {"Max": 0.03, "Min": 0.025, "Div": 0.05, "Pow": 0.04}[op], -9 if op != "Pow" else -128,
                    inits)
        nodes += q
    nodes.append(helper.make_node("Identity", [y], ["y"]))
    m = _model(nodes, [(f"x{k}", s) for k, s in enumerate(shapes)], [("y", out)], inits)
    c = _verify(tmp_path, m)
    dtype = "int8" if quantized else "float32"
    _assert_runs_as(c, op, dtype)


# -- reductions -------------------------------------------------------------------------------------------------------
def test_se_block_mean_over_nhwc_axes_verifies(tmp_path):
    """An NHWC-exported squeeze-excite gate: the mean over logical axes [1, 2] of an [N, H, W, C] tensor (which the
    compiler lays out as if it were NCHW), a sigmoid, and the broadcast product with the input; float and int8 QDQ."""
    for quantized in (False, True):
        shape = [1, 6, 5, 8]
        inits: dict = {"axes": np.array([1, 2], np.int64)}
        nodes: list = []
        x = "x"
        if quantized:
            q, x = _qdq(x, "in", 0.03, 2, inits)
            nodes += q
        nodes.append(helper.make_node("ReduceMean", [x, "axes"], ["m"], keepdims=1))
        m = "m"
        if quantized:
            q, m = _qdq(m, "mean", 0.01, -3, inits)
            nodes += q
        nodes.append(helper.make_node("Sigmoid", [m], ["g"]))
        gate = "g"
        if quantized:
            q, gate = _qdq(gate, "gate", 1 / 256, -128, inits)
            nodes += q
        nodes.append(helper.make_node("Mul", [x, gate], ["y0"]))
        y = "y0"
        if quantized:
            q, y = _qdq(y, "out", 0.02, 0, inits)
            nodes += q
        nodes.append(helper.make_node("Identity", [y], ["y"]))
        c = _verify(tmp_path, _model(nodes, [("x", shape)], [("y", shape)], inits, opset=18))
        _assert_runs_as(c, "ReduceMean", "int8" if quantized else "float32")


REDUCE = [("ReduceSum", [-1], 0, [1, 4, 5, 6], [1, 4, 5]), ("ReduceMax", [1], 1, [1, 4, 5, 6], [1, 1, 5, 6]),
          ("ReduceL2", [0, 2], 0, [3, 4, 5], [4]), ("ReduceMean", [1, 2, 3], 0, [2, 3, 4, 5], [2])]


@pytest.mark.parametrize("op,axes,keep,shape,out", REDUCE, ids=[r[0] for r in REDUCE])
@pytest.mark.parametrize("quantized", [False, True])
def test_reduce_verifies(tmp_path, op, axes, keep, shape, out, quantized):
    n = int(np.prod([shape[a] for a in axes]))
    inits: dict = {"axes": np.array(axes, np.int64)}
    nodes: list = []
    x = "x"
    if quantized:
        q, x = _qdq(x, "in", 0.03, 2, inits)
        nodes += q
    nodes.append(helper.make_node(op, [x, "axes"], ["y0"], keepdims=keep))
    y = "y0"
    if quantized:
        so = {"ReduceSum": 0.03 * np.sqrt(n), "ReduceMax": 0.03, "ReduceL2": 0.03 * np.sqrt(n), "ReduceMean": 0.01}[op]
        q, y = _qdq(y, "out", float(so), -128 if op == "ReduceL2" else 0, inits)
        nodes += q
    nodes.append(helper.make_node("Identity", [y], ["y"]))
    c = _verify(tmp_path, _model(nodes, [("x", shape)], [("y", out)], inits, opset=18))
    _assert_runs_as(c, op, "int8" if quantized else "float32")
