"""Validate once, compute many: `tgrs_load` refuses a plan whose kind-specific parameters, constants or dims are
inconsistent (docs/format.md step 17), so the run never starts; and a plan it accepts never fails a kernel check
while running.

One small float model per kind is compiled for real; then every parameter slot the kind uses, and the length of
every constant it has, of every op of that kind is overwritten with values that keep the byte rules (the slot stays
inside the kind's parameters, the constant inside its unit's weights, an output tensor's dtype another of the same
size) but change the meaning. Every mutant must
either be refused by the loader (`Session` raises at construction: nothing runs, no output is written) or run to
completion without any kernel refusing it. Each kind must have mutants its check refuses with a kernel code.
The float compiler path reaches 15 kinds this way; quantize, dequantize (int8 boundaries) and copy (a reshape that
moves bytes) do not appear in these small float plans and are covered by the differential and fuzz tests.
"""
from __future__ import annotations

import struct

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import _rt_plans as P
from tigris import api
from tigris.emit import format as F
from tigris.emit.reader import KIND_CHECK_CODES, read_plan
from tigris.emit.writer import seal
from tigris.host.session import PlanError, Session
from tigris.ops.base import DTYPE_CODES

FLOAT = TensorProto.FLOAT
X = (1, 4, 8, 8)


def _w(name: str, shape: tuple[int, ...], seed: int = 0):
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


def _model(nodes, out_shape, inits=(), in_shape=X):
    g = helper.make_graph(nodes, "k", [helper.make_tensor_value_info("x", FLOAT, list(in_shape))],
                          [helper.make_tensor_value_info("y", FLOAT, list(out_shape))], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


N = helper.make_node
MODELS = {
    "conv": _model([N("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], kernel_shape=[3, 3])], (1, 8, 8, 8),
                   [_w("w", (8, 4, 3, 3))]),
    "dwconv": _model([N("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], kernel_shape=[3, 3], group=4)], X,
                     [_w("w", (4, 1, 3, 3))]),
    "fc": _model([N("Flatten", ["x"], ["f"]), N("Gemm", ["f", "w", "b"], ["y"], transB=1)], (1, 10),
                 [_w("w", (10, 256)), _w("b", (10,), 1)]),
    "maxpool": _model([N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], (1, 4, 4, 4)),
    "avgpool": _model([N("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], (1, 4, 4, 4)),
    "gap": _model([N("GlobalAveragePool", ["x"], ["g"]), N("Sigmoid", ["g"], ["y"])], (1, 4, 1, 1)),
    "add": _model([N("Add", ["x", "k"], ["y"])], X, [_w("k", X, 2)]),
    "mul": _model([N("Mul", ["x", "k"], ["y"])], X, [_w("k", (1, 4, 1, 1), 3)]),
    "concat": _model([N("Sigmoid", ["x"], ["s"]), N("Concat", ["x", "s"], ["y"], axis=1)], (1, 8, 8, 8)),
    "resize": _model([N("Resize", ["x", "", "sc"], ["y"], mode="nearest")], (1, 4, 16, 16),
                     [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")]),
    "unary": _model([N("Sigmoid", ["x"], ["y"])], X),
    "prelu": _model([N("PRelu", ["x", "s"], ["y"])], X, [_w("s", (4, 1, 1), 4)]),
    "softmax": _model([N("Softmax", ["x"], ["y"], axis=-1)], (1, 10), in_shape=(1, 10)),
    "pad": _model([N("Pad", ["x", "p"], ["y"])], (1, 4, 10, 10),
                  [numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "p")]),
    "transpose": _model([N("Transpose", ["x"], ["y"], perm=[0, 1, 3, 2])], X),
}
NEAR = (0, 1, -1, 2, 3, 7, 4097, 1 << 20, -(1 << 20), 0x7FFFFFFF, -0x80000000)


def _mutants(data: bytes, kind: str):
    pf = read_plan(data)
    base = P.section_offset(data, F.SectionId.OPS)
    tbase = P.section_offset(data, F.SectionId.TENSORS)
    offs = F.OP.offsets()
    for op in pf.ops:
        if op.kind != kind:
            continue
        rec = base + op.index * F.OP.size
        for slot, cur in enumerate(op.params):
            for v in sorted({cur + 1, cur - 1, *NEAR} - {cur}):
                if -0x80000000 <= v <= 0x7FFFFFFF:
                    b = bytearray(data)
                    struct.pack_into("<i", b, rec + offs["params"] + 4 * slot, v)
                    yield f"{op.name}.p[{slot}]={v}", seal(b)
        for slot, (_off, ln) in enumerate(op.consts):
            for d in (-4, -1):  # a shorter constant stays inside its unit's weights
                if ln + d > 0:
                    b = bytearray(data)
                    struct.pack_into("<I", b, rec + offs["const_len"] + 4 * slot, ln + d)
                    yield f"{op.name}.clen[{slot}]={ln + d}", seal(b)
        t = pf.tensors[op.output]
        other = {"float32": "int32", "int32": "float32", "int8": "uint8", "uint8": "int8"}.get(t.dtype)
        if other is not None and t.zero_point == 0:  # a zero point of 0 is valid for either dtype
            b = bytearray(data)
            struct.pack_into("<I", b, tbase + op.output * F.TENSOR.size + F.TENSOR.offsets()["dtype"],
                             DTYPE_CODES[other])
            yield f"{t.name}.dtype={other}", seal(b)


def _inputs(s: Session) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {i.name: rng.standard_normal(i.shape).astype(np.float32) for i in s.inputs}


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_inconsistent_kind_parameters_are_refused_at_load(kind: str, tmp_path) -> None:
    path = tmp_path / f"{kind}.onnx"
    onnx.save(MODELS[kind], path)
    data = api.compile_model(path, "64K").plan_bytes
    assert kind in {o.kind for o in read_plan(data).ops}, f"the {kind} model lowers to no {kind} op"
    by_kind_check = []
    ran = 0
    for what, m in _mutants(data, kind):
        try:
            s = Session(m)
        except PlanError as e:
            if e.name.removeprefix("TGRS_") in KIND_CHECK_CODES:
                by_kind_check.append(what)
                assert "op " in str(e) and "\n" not in str(e)  # names the op on one line
            continue
        try:  # accepted: it must run through, no kernel refusing what the loader let pass
            s.run(_inputs(s))
        except PlanError as e:
            pytest.fail(f"{kind}: {what} loaded but failed at run time: {e}")
        ran += 1
    assert by_kind_check, f"no mutation of a {kind} op was refused by the kind's check"


def test_int8_interpolating_resize_scales_are_checked_at_load(tmp_path) -> None:
    """An int8 linear Resize (the float island's arithmetic in one kernel, tigris.ops.resize) reads its dequantize
    and quantize scales from params SI and SO: a plan where either is not a finite positive float is refused at
    load by the kind's check (TGRS_ERR_PARAM, naming the op); the plan as compiled runs."""
    from tigris.ops import kind as get_kind

    z = numpy_helper.from_array(np.int8(-3), "z")
    s = numpy_helper.from_array(np.float32(0.05), "s")
    sc = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")
    nodes = [N("QuantizeLinear", ["x", "s", "z"], ["xq"]), N("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             N("Resize", ["xd", "", "sc"], ["u"], mode="linear"), N("QuantizeLinear", ["u", "s", "z"], ["uq"]),
             N("DequantizeLinear", ["uq", "s", "z"], ["y"])]
    path = tmp_path / "resize_s8.onnx"
    onnx.save(_model(nodes, (1, 4, 16, 16), [z, s, sc]), path)
    data = api.compile_model(path, "64K").plan_bytes
    pf = read_plan(data)
    ops = [o for o in pf.ops if o.kind == "resize"]
    assert ops and pf.tensors[ops[0].output].dtype == "int8" and ops[0].params[0] == 1  # MODE 1 on int8
    s0 = Session(data)
    s0.run(_inputs(s0))
    base = P.section_offset(data, F.SectionId.OPS) + ops[0].index * F.OP.size + F.OP.offsets()["params"]
    params = get_kind("resize").PARAMS
    for name in ("SI", "SO"):
        for bad in (0.0, -0.05, float("inf"), float("nan")):
            b = bytearray(data)
            struct.pack_into("<f", b, base + 4 * params.index(name), bad)
            with pytest.raises(PlanError) as e:
                Session(seal(b))
            assert e.value.name == "TGRS_ERR_PARAM" and "op " in str(e.value), (name, bad)
