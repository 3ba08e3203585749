"""Add / Sub / Mul with broadcasting (scalar, per channel, per pixel, full; constant on either side).

Tolerances: float reference vs ORT and C vs reference within 1e-5 x max(1, max|ref|); int8 C vs reference
bit-exact; int8 reference vs ORT (QDQ model) within 1 LSB.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from harness import HOST_VARIANTS, build_kernels, runnable_host_variants
from ophelp import (T, assert_float_close, c_runner, graph1, max_lsb, onnx_model, ort_run, phys_inputs, qp, rand_q,
                    ref_runner, run_op, split_rows, status_error, to_logical, vinfo)
from tigris.layout import tensor_view_dims
from tigris.ops import lower
from tigris.ops.binary import add_multipliers


# Every host variant (harness.HOST_VARIANTS): the AVX2 build has its own vector loop (target.h), which must give the
# reference's bytes like the plain loops.
@pytest.fixture(scope="module", params=runnable_host_variants())
def lib(request, tmp_path_factory):
    return build_kernels(["binary.c"], tmp_path_factory.mktemp("binary"), extra_flags=HOST_VARIANTS[request.param])


def _bshape(pattern: str, c: int, h: int, w: int) -> tuple[int, ...]:
    return {"full": (1, c, h, w), "chan": (c, 1, 1), "chan4": (1, c, 1, 1), "scalar": (), "one": (1,),
            "pixel": (1, 1, h, w), "row": (1, c, h, 1), "col": (w,)}[pattern]


PATTERNS = ["full", "chan", "chan4", "scalar", "one", "pixel", "row", "col"]


@st.composite
def case(draw):
    c, h, w = draw(st.integers(1, 19)), draw(st.integers(1, 7)), draw(st.integers(1, 6))
    pa = draw(st.sampled_from(PATTERNS))
    pb = draw(st.sampled_from(PATTERNS))
    if "full" not in (pa, pb):
        pa = "full"  # the output shape must be the full one
    const = draw(st.sampled_from(["none", "A", "B"]))
    if const == "A" and pb != "full" or const == "B" and pa != "full":
        const = "none"
    op = draw(st.sampled_from(["Add", "Sub", "Mul"]))
    act = draw(st.sampled_from([None, "relu", "relu6"])) if op != "Mul" else None
    return dict(c=c, h=h, w=w, a=_bshape(pa, c, h, w), b=_bshape(pb, c, h, w), const=const, op=op, act=act)


def _build(cs, int8, rng, qa=None, qb=None, qo=None):
    shape_y = (1, cs["c"], cs["h"], cs["w"])
    specs, data = [], {}
    for nm, shape, q in (("a", cs["a"], qa), ("b", cs["b"], qb)):
        arr = np.asarray(rand_q(rng, shape) if int8 else (rng.standard_normal(shape) * 3).astype(np.float32))
        data[nm] = arr
        is_k = cs["const"] == nm.upper()
        specs.append(T(nm, shape, "int8" if int8 else "float32", q, data=arr if is_k else None))
    g = graph1(cs["op"], specs, [T("y", shape_y, "int8" if int8 else "float32", qo)],
               {"fused_activation": cs["act"]} if cs["act"] else {})
    return g, data


def _onnx(cs, data, int8, scales=None):
    """The same computation as an ONNX model (QDQ when int8), with constant operands as initializers."""
    shape_y = (1, cs["c"], cs["h"], cs["w"])
    nodes, ins, inits, feeds, fnames = [], [], [], {}, []
    for nm, shape in (("a", cs["a"]), ("b", cs["b"])):
        is_k = cs["const"] == nm.upper()
        if is_k:
            inits.append(numpy_helper.from_array(data[nm], nm))
        else:
            ins.append(vinfo(nm, shape, "int8" if int8 else "float32"))
            feeds[nm] = data[nm]
        if int8:
            s, z = scales[nm]
            inits += [helper.make_tensor(f"{nm}_s", TensorProto.FLOAT, [], [s]),
                      helper.make_tensor(f"{nm}_z", TensorProto.INT8, [], [z])]
            nodes.append(helper.make_node("DequantizeLinear", [nm, f"{nm}_s", f"{nm}_z"], [f"{nm}_f"]))
            fnames.append(f"{nm}_f")
        else:
            fnames.append(nm)
    nodes.append(helper.make_node(cs["op"], fnames, ["r"]))
    last = "r"
    if cs["act"] == "relu":
        nodes.append(helper.make_node("Relu", ["r"], ["r2"]))
        last = "r2"
    elif cs["act"] == "relu6":
        inits += [numpy_helper.from_array(np.array(0, np.float32), "lo"),
                  numpy_helper.from_array(np.array(6, np.float32), "hi")]
        nodes.append(helper.make_node("Clip", ["r", "lo", "hi"], ["r2"]))
        last = "r2"
    if int8:
        s, z = scales["y"]
        inits += [helper.make_tensor("y_s", TensorProto.FLOAT, [], [s]),
                  helper.make_tensor("y_z", TensorProto.INT8, [], [z])]
        nodes.append(helper.make_node("QuantizeLinear", [last, "y_s", "y_z"], ["y"]))
    else:
        nodes.append(helper.make_node("Identity", [last], ["y"]))
    m = onnx_model(nodes, ins, [vinfo("y", shape_y, "int8" if int8 else "float32")], inits)
    return m, feeds


def _need(g, low):
    """Input rows per output band: banded operands (the output's row count > 1) the band itself, others all rows."""
    H = tensor_view_dims(g.tensors["y"])[1]

    def need(r0, r1):
        out = []
        for n in low.inputs:
            rows = tensor_view_dims(g.tensors[n])[1]
            dims_key = "A" if n == "a" else "B"
            d1 = low.params[f"{dims_key}_D1"]
            out.append((r0, r1) if d1 == H and H > 1 else (0, rows))
        return out

    return need


@settings(database=None, max_examples=60, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16))
def test_float_binary(lib, cs, seed):
    rng = np.random.default_rng(seed)
    g, data = _build(cs, False, rng)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, data)
    ref = run_op(ref_runner, g, low, phys)
    m, feeds = _onnx(cs, data, False)
    (ort_y,) = ort_run(m, feeds)
    assert_float_close(to_logical(g, "y", ref), ort_y)
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref, rtol=0.0)
    bands = split_rows(cs["h"], [1, cs["h"] // 2])
    assert_float_close(run_op(c_runner(lib), g, low, phys, bands, _need(g, low)), ref, rtol=0.0)


@settings(database=None, max_examples=80, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16), sa=st.floats(1e-3, 1.0), ra=st.floats(0.01, 100.0),
       ro=st.floats(0.2, 5.0), zs=st.lists(st.integers(-128, 127), min_size=3, max_size=3))
def test_int8_binary(lib, cs, seed, sa, ra, ro, zs):
    rng = np.random.default_rng(seed)
    sa = float(np.float32(sa))
    sb = float(np.float32(sa * ra))
    so = float(np.float32((sa + sb if cs["op"] != "Mul" else sa * sb * 60) * ro))
    scales = {"a": (sa, zs[0]), "b": (sb, zs[1]), "y": (so, zs[2])}
    g, data = _build(cs, True, rng, qp(*scales["a"]), qp(*scales["b"]), qp(*scales["y"]))
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, data)
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    bands = split_rows(cs["h"], [1, cs["h"] // 2 + 1])
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, bands, _need(g, low)), ref)
    m, feeds = _onnx(cs, data, True, scales)
    (ort_y,) = ort_run(m, feeds)
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


@settings(database=None, max_examples=80, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16), sa=st.floats(1e-3, 1.0), ra=st.floats(0.01, 100.0),
       ro=st.floats(0.2, 5.0), zs=st.lists(st.integers(-128, 127), min_size=3, max_size=3))
def test_int8_binary_tflm_numerics(lib, cs, seed, sa, ra, ro, zs):
    """TFLM's Add/Sub (20-bit headroom, three double-rounding requantizations) and Mul: C == reference bit for bit,
    whole and banded; within 1 LSB of ONNX Runtime's exact-then-rounded result."""
    rng = np.random.default_rng(seed)
    sa = float(np.float32(sa))
    sb = float(np.float32(sa * ra))
    so = float(np.float32((sa + sb if cs["op"] != "Mul" else sa * sb * 60) * ro))
    scales = {"a": (sa, zs[0]), "b": (sb, zs[1]), "y": (so, zs[2])}
    g, data = _build(cs, True, rng, qp(*scales["a"]), qp(*scales["b"]), qp(*scales["y"]))
    g.numerics = "tflm"
    low = lower(g, g.ops[0])
    assert low.params["NUMERICS"] == 1
    phys = phys_inputs(g, low, data)
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    bands = split_rows(cs["h"], [1, cs["h"] // 2 + 1])
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, bands, _need(g, low)), ref)
    m, feeds = _onnx(cs, data, True, scales)
    (ort_y,) = ort_run(m, feeds)
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


@pytest.mark.parametrize("ra,rb", [(1.0, 1.0), (0.5, 3.0), (1e-9, 2.0), (2.0, 1e-9), (1e4, 1e-3), (3e-7, 5e-7)])
def test_add_multipliers_one_rounding(ra, rb):
    # The integer scheme equals round((qa*ra + qb*rb)) computed exactly whenever neither multiplier was coarsened.
    p = add_multipliers(ra, rb, False, "t")
    qa = np.arange(-255, 256, 17, dtype=np.int64)
    qb = np.arange(-255, 256, 13, dtype=np.int64)[: qa.size]
    acc = qa * (np.int64(p["MA"]) << p["LA"]) + qb * (np.int64(p["MB"]) << p["LB"])
    assert np.all(np.abs(acc) < 2**61)
    from tigris.ops._common import rshift_half_even

    got = rshift_half_even(acc, p["RS"])
    exact = qa * ra + qb * rb
    # Multipliers carry ~31 bits (>= 2**-21 relative to the larger term after coarsening): within 1 of exact.
    assert np.all(np.abs(got - exact) <= 1.0)


def test_relu6_add_clamps_at_the_quantized_six(lib):
    cs = dict(c=3, h=2, w=2, a=(1, 3, 2, 2), b=(1, 3, 2, 2), const="none", op="Add", act="relu6")
    rng = np.random.default_rng(0)
    g, data = _build(cs, True, rng, qp(0.1, 0), qp(0.1, 0), qp(0.05, -10))
    low = lower(g, g.ops[0])
    assert (low.params["LO"], low.params["HI"]) == (-10, 110)  # zp, zp + round(6 / 0.05)
    phys = phys_inputs(g, low, data)
    ref = run_op(ref_runner, g, low, phys)
    assert ref.min() >= -10 and ref.max() <= 110
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)


def test_plain_rank2_add_with_const_vector(lib):
    cs = dict(c=1, h=1, w=1, a=(1, 640), b=(640,), const="B", op="Add", act=None)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((1, 640)).astype(np.float32)
    b = rng.standard_normal(640).astype(np.float32)
    g = graph1("Add", [T("a", (1, 640)), T("b", (640,), data=b)], [T("y", (1, 640))])
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"a": a})
    ref = run_op(ref_runner, g, low, phys)
    assert_float_close(ref.reshape(1, 640), a + b)
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref, rtol=0.0)
    del cs


def test_short_band_is_a_tile_error(lib):
    g = graph1("Add", [T("a", (1, 2, 4, 3)), T("b", (1, 2, 4, 3))], [T("y", (1, 2, 4, 3))])
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"a": np.ones((1, 2, 4, 3), np.float32), "b": np.ones((1, 2, 4, 3), np.float32)})
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        run_op(c_runner(lib), g, low, phys, [(1, 3)], lambda r0, r1: [(r0, r1 - 1), (r0, r1)])


@pytest.mark.parametrize("sa,sb,so", [(1e-6, 10.0, 0.05), (10.0, 1e-6, 0.05), (1e-3, 1e-3, 1e3), (50.0, 40.0, 1e-4),
                                      (0.02, 0.02, 0.02)])
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
def test_int8_extreme_scales_bit_exact(lib, sa, sb, so, op):
    # Exponents far apart exercise the coarsened multiplier and the >= 63 divisor; huge ratios saturate.
    cs = dict(c=5, h=3, w=2, a=(1, 5, 3, 2), b=(5, 1, 1), const="none", op=op, act=None)
    rng = np.random.default_rng(11)
    g, data = _build(cs, True, rng, qp(sa, 7), qp(sb, -9), qp(so, 3))
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, data)
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    # And within 1 LSB of the exact real-number result (float64), wherever it is not saturated.
    a = (data["a"].astype(np.float64) - 7) * np.float32(sa)
    b = (data["b"].astype(np.float64) - (-9)) * np.float32(sb)
    real = {"Add": a + b, "Sub": a - b, "Mul": a * b}[op] / np.float32(so) + 3
    exact = np.clip(np.round(real), -128, 127)
    assert np.max(np.abs(to_logical(g, "y", ref).astype(np.float64) - exact)) <= 1


@pytest.mark.parametrize("op,sa,sb,so", [("Add", 0.125, 0.125, 0.25), ("Sub", 0.5, 0.25, 0.0625),
                                         ("Add", 0.25, 0.5, 1.0), ("Mul", 0.5, 0.25, 0.5), ("Mul", 0.25, 0.25, 0.5)])
def test_int8_ties_round_half_to_even_like_ort(lib, op, sa, sb, so):
    # Power-of-two scales make the exact result land on halves often; ORT's float result is then exact too, and its
    # QuantizeLinear rounds those halves to even. Expected: identical to ORT (0 LSB), C identical to the reference.
    cs = dict(c=6, h=9, w=7, a=(1, 6, 9, 7), b=(1, 6, 9, 7), const="none", op=op, act=None)
    rng = np.random.default_rng(5)
    scales = {"a": (sa, 3), "b": (sb, -5), "y": (so, 1)}
    g, data = _build(cs, True, rng, qp(*scales["a"]), qp(*scales["b"]), qp(*scales["y"]))
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, data)
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    m, feeds = _onnx(cs, data, True, scales)
    (ort_y,) = ort_run(m, feeds)
    assert np.array_equal(to_logical(g, "y", ref), ort_y)
