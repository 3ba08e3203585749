"""convtranspose kind: 1-D and 2-D transposed convolution on random shapes (groups, depthwise, strides, dilations,
pads, output padding), float32 and int8 with per-tensor and per-channel weights and weight zero points.

Tolerances: float reference vs ORT and C vs reference within 1e-5 x max(1, max|ref|) (float64 vs float32 sums);
int8 C vs reference bit-exact, reference vs ORT's QDQ evaluation within 1 LSB; banded output equals the whole output
bit for bit (float included: a pixel's arithmetic does not depend on the band).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper

from harness import build_kernels
from ophelp import (T, assert_float_close, c_runner, graph1, max_lsb, onnx_model, ort_run, phys_inputs, qdq_model,
                    rand_q, ref_runner, run_op, split_rows, status_error, to_logical, vinfo)
from tigris.ir import QuantParam
from tigris.layout import tensor_view_dims
from tigris.ops import kind, lower
from tigris.ops._geometry import TileError
from tigris.ops.convtranspose import out_len

SETTINGS = dict(database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["convtranspose.c"], tmp_path_factory.mktemp("convtranspose"))


@st.composite
def case(draw, max_hw: int = 6):
    nd = draw(st.sampled_from([2, 2, 1]))
    g = draw(st.sampled_from([1, 1, 2, 3]))
    depthwise = draw(st.booleans()) and g > 1
    icg = 1 if depthwise else draw(st.integers(1, 3))
    ocg = 1 if depthwise and draw(st.booleans()) else draw(st.integers(1, 3))
    n = draw(st.integers(1, 2))
    sp = [draw(st.integers(1, max_hw)) for _ in range(nd)]
    k = [draw(st.integers(1, 4)) for _ in range(nd)]
    s = [draw(st.integers(1, 3)) for _ in range(nd)]
    d = [draw(st.integers(1, 2)) for _ in range(nd)]
    pads, opad = [0] * (2 * nd), [0] * nd
    for i in range(nd):
        span = (k[i] - 1) * d[i] + 1
        opad[i] = draw(st.integers(0, s[i] - 1))  # ORT requires output_padding < stride
        full = s[i] * (sp[i] - 1) + span + opad[i]
        pads[i] = draw(st.integers(0, min(span - 1, full - 1)))
        pads[nd + i] = draw(st.integers(0, min(span - 1, full - 1 - pads[i])))
    out = [out_len(sp[i], k[i], s[i], d[i], pads[i], pads[nd + i] - opad[i]) for i in range(nd)]
    return dict(nd=nd, g=g, icg=icg, ocg=ocg, n=n, sp=sp, k=k, s=s, d=d, pads=pads, opad=opad, out=out,
                bias=draw(st.booleans()), act=draw(st.sampled_from([None, None, "relu"])))


def _shapes(cs):
    x = (cs["n"], cs["g"] * cs["icg"], *cs["sp"])
    w = (cs["g"] * cs["icg"], cs["ocg"], *cs["k"])
    y = (cs["n"], cs["g"] * cs["ocg"], *cs["out"])
    return x, w, y


def _attrs(cs):
    return dict(kernel_shape=cs["k"], strides=cs["s"], dilations=cs["d"], pads=cs["pads"], output_padding=cs["opad"],
                group=cs["g"], fused_activation=cs["act"])


def _onnx_attrs(cs):
    return dict(kernel_shape=cs["k"], strides=cs["s"], dilations=cs["d"], pads=cs["pads"],
                output_padding=cs["opad"], group=cs["g"])


def _float_weights(rng, cs):
    x, w, y = _shapes(cs)
    wf = (rng.standard_normal(w) * 0.5).astype(np.float32)
    bf = (rng.standard_normal(y[1]) * 0.3).astype(np.float32)
    return wf, bf


def _ort_nodes(cs, names):
    def fn(i, o):
        if cs["act"] == "relu":
            return [helper.make_node("ConvTranspose", [i[0], *names], ["lin"], **_onnx_attrs(cs)),
                    helper.make_node("Relu", ["lin"], [o])]
        return [helper.make_node("ConvTranspose", [i[0], *names], [o], **_onnx_attrs(cs))]
    return fn


@settings(max_examples=80, **SETTINGS)
@given(cs=case(), seed=st.integers(0, 2**16))
def test_float_convtranspose(lib, cs, seed):
    rng = np.random.default_rng(seed)
    xs, ws, ys = _shapes(cs)
    wf, bf = _float_weights(rng, cs)
    ins = [T("x", xs), T("w", ws, data=wf)] + ([T("b", (ys[1],), data=bf)] if cs["bias"] else [])
    g = graph1("ConvTranspose", ins, [T("y", ys)], _attrs(cs))
    low = lower(g, g.ops[0])
    x = rng.standard_normal(xs).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    names = ["w", "b"] if cs["bias"] else ["w"]
    inits = [numpy_helper.from_array(wf, "w")] + ([numpy_helper.from_array(bf, "b")] if cs["bias"] else [])
    (want,) = ort_run(onnx_model(_ort_nodes(cs, names)(["x"], "y"), [vinfo("x", xs)], [vinfo("y", ys)], inits),
                      {"x": x})
    assert_float_close(to_logical(g, "y", ref), want)
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref)


def _int8_graph(rng, cs, per_channel: bool, wzp: bool):
    xs, ws, ys = _shapes(cs)
    s_in, z_in = float(np.float32(rng.uniform(0.01, 0.05))), int(rng.integers(-40, 40))
    nsc = cs["ocg"] if per_channel else 1
    s_w = rng.uniform(0.002, 0.02, nsc).astype(np.float32)
    z_w = (rng.integers(-20, 20, nsc) if wzp else np.zeros(nsc)).astype(np.int64)
    w_q = rng.integers(-127, 128, ws).astype(np.int8)
    oc = ys[1]
    s_b = (np.float32(s_in) * (np.tile(s_w, cs["g"]) if per_channel else s_w)).astype(np.float32)
    b_q = rng.integers(-3000, 3000, oc).astype(np.int32)
    # output scale near the typical accumulator magnitude so results spread over the int8 range
    taps = max(1, int(np.prod(cs["k"])) * cs["icg"])
    s_out = float(np.float32(s_in * float(s_w.mean()) * 60 * np.sqrt(taps)))
    z_out = int(rng.integers(-30, 30))
    wq = QuantParam(s_w, z_w, 1 if per_channel else None)
    bq = QuantParam(s_b, np.zeros(s_b.size, np.int64), 0 if per_channel else None)
    qx = QuantParam(np.array([s_in], np.float32), np.array([z_in]), None)
    qy = QuantParam(np.array([s_out], np.float32), np.array([z_out]), None)
    ins = [T("x", xs, "int8", qx), T("w", ws, "int8", wq, data=w_q)]
    if cs["bias"]:
        ins.append(T("b", (oc,), "int32", bq, data=b_q))
    g = graph1("ConvTranspose", ins, [T("y", ys, "int8", qy)], _attrs(cs))
    # the model as written: dequantized weights and bias, float ConvTranspose between DQ and Q
    shp = [1, nsc] + [1] * cs["nd"]
    wf = ((w_q.astype(np.float32) - z_w.reshape(shp).astype(np.float32)) * s_w.reshape(shp)).astype(np.float32)
    bf = (b_q.astype(np.float32) * np.broadcast_to(s_b, (oc,))).astype(np.float32)
    return g, (s_in, z_in, s_out, z_out), wf, bf


@pytest.mark.parametrize("per_channel,wzp", [(True, False), (False, False), (True, True)])
@settings(max_examples=40, **SETTINGS)
@given(cs=case(), seed=st.integers(0, 2**16))
def test_int8_convtranspose(lib, cs, seed, per_channel, wzp):
    rng = np.random.default_rng(seed)
    xs, ws, ys = _shapes(cs)
    g, (s_in, z_in, s_out, z_out), wf, bf = _int8_graph(rng, cs, per_channel, wzp)
    low = lower(g, g.ops[0])
    x = rand_q(rng, xs)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    names = ["wf", "bf"] if cs["bias"] else ["wf"]
    inits = [numpy_helper.from_array(wf, "wf")] + ([numpy_helper.from_array(bf, "bf")] if cs["bias"] else [])
    m = qdq_model(_ort_nodes(cs, names), [("x", xs, s_in, z_in)], ("y", ys, s_out, z_out), inits)
    (want,) = ort_run(m, {"x": x})
    assert max_lsb(to_logical(g, "y", ref), want) <= 1


def _need(low, g):
    p = low.params
    h = tensor_view_dims(g.tensors["x"])[1]

    def need(r0, r1):
        a, b = kind("convtranspose").rows_needed(g.ops[0], r0, r1)
        a, b = max(a, 0), min(b, h)
        return [(a, b) if b > a else (0, 0)]

    assert p["kh"] >= 1
    return need


@pytest.mark.parametrize("int8", [False, True])
@settings(max_examples=40, **SETTINGS)
@given(cs=case(max_hw=9), seed=st.integers(0, 2**16), cuts=st.lists(st.integers(1, 30), max_size=3))
def test_bands_equal_whole(lib, cs, seed, cuts, int8):
    """Output row bands, each computed from an input band holding exactly the rows the kind's row map names, equal
    the whole output bit for bit, in C and in the reference."""
    rng = np.random.default_rng(seed)
    xs, ws, ys = _shapes(cs)
    if int8:
        g = _int8_graph(rng, cs, True, False)[0]
        x = rand_q(rng, xs)
    else:
        wf, bf = _float_weights(rng, cs)
        ins = [T("x", xs), T("w", ws, data=wf)] + ([T("b", (ys[1],), data=bf)] if cs["bias"] else [])
        g = graph1("ConvTranspose", ins, [T("y", ys)], _attrs(cs))
        x = rng.standard_normal(xs).astype(np.float32)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": x})
    oh = tensor_view_dims(g.tensors["y"])[1]
    bands = split_rows(oh, cuts)
    for runner in (ref_runner, c_runner(lib)):
        whole = run_op(runner, g, low, phys)
        assert np.array_equal(run_op(runner, g, low, phys, bands, _need(low, g)), whole)


@pytest.mark.parametrize("int8", [False, True])
def test_missing_input_row_is_a_tile_error(lib, int8):
    cs = dict(nd=2, g=1, icg=2, ocg=3, n=1, sp=[6, 4], k=[3, 3], s=[2, 1], d=[1, 1], pads=[1, 1, 1, 1],
              opad=[1, 0], out=[12, 4], bias=True, act=None)
    rng = np.random.default_rng(0)
    xs, ws, ys = _shapes(cs)
    if int8:
        g = _int8_graph(rng, cs, True, False)[0]
        x = rand_q(rng, xs)
    else:
        wf, bf = _float_weights(rng, cs)
        g = graph1("ConvTranspose", [T("x", xs), T("w", ws, data=wf), T("b", (3,), data=bf)], [T("y", ys)],
                   _attrs(cs))
        x = rng.standard_normal(xs).astype(np.float32)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": x})
    a, b = kind("convtranspose").rows_needed(g.ops[0], 4, 8)
    assert (a, b) == (2, 5)  # (oh + 1) in [5, 9) = 2 * ih + kh: ih from ceil(3 / 2) to 8 // 2
    short = lambda r0, r1: [(a, b - 1)]  # noqa: E731
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        run_op(c_runner(lib), g, low, phys, [(4, 8)], short)
    with pytest.raises(TileError):
        run_op(ref_runner, g, low, phys, [(4, 8)], short)


@pytest.mark.parametrize("field,delta,err", [("pt", 1, "ERR_SHAPE"), ("group", 5, "ERR_SHAPE"), ("kh", 100, "ERR_PARAM"),
                                             ("sh", -2, "ERR_PARAM"), ("zp_in", 300, "ERR_PARAM")])
def test_bad_params_are_refused(lib, field, delta, err):
    cs = dict(nd=2, g=1, icg=2, ocg=3, n=1, sp=[4, 4], k=[2, 2], s=[2, 2], d=[1, 1], pads=[0, 0, 0, 0],
              opad=[0, 0], out=[8, 8], bias=True, act=None)
    g = _int8_graph(np.random.default_rng(1), cs, True, False)[0]
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.zeros((1, 2, 4, 4), np.int8)})
    low.params[field] = low.params.get(field, 0) + delta
    with pytest.raises(RuntimeError, match=status_error(err)):
        run_op(c_runner(lib), g, low, phys)


def test_bad_const_lengths_are_refused(lib):
    cs = dict(nd=2, g=1, icg=2, ocg=3, n=1, sp=[4, 4], k=[2, 2], s=[2, 2], d=[1, 1], pads=[0, 0, 0, 0],
              opad=[0, 0], out=[8, 8], bias=True, act=None)
    g = _int8_graph(np.random.default_rng(1), cs, True, False)[0]
    phys = phys_inputs(g, lower(g, g.ops[0]), {"x": np.zeros((1, 2, 4, 4), np.int8)})
    for slot in ("weight", "bias", "mult"):
        low = lower(g, g.ops[0])
        low.consts[slot] = low.consts[slot][:-1]
        with pytest.raises(RuntimeError, match=status_error("ERR_SHAPE")):
            run_op(c_runner(lib), g, low, phys)


@pytest.mark.parametrize("auto_pad", ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("int8", [False, True])
def test_output_shape_and_auto_pad_verify(tmp_path, auto_pad, int8):
    """explicit_attrs resolves output_shape / auto_pad into pads as ONNX defines them (the extra row of an odd total
    padding at the end for SAME_UPPER, at the start otherwise); the compiled plan verifies against ONNX Runtime,
    float and int8 QDQ, untiled and at 1.3x the smallest budget, where the ConvTranspose runs on row bands."""
    import onnx
    from tigris import api

    rng = np.random.default_rng(5)
    w = (rng.standard_normal((2, 3, 3, 3)) * 0.4).astype(np.float32)
    attrs = dict(strides=[2, 2])
    if auto_pad != "VALID":
        attrs["output_shape"] = [10, 12]
    if auto_pad != "NOTSET":
        attrs["auto_pad"] = auto_pad
    out_hw = [11, 13] if auto_pad == "VALID" else [10, 12]
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)]
    m = onnx_model(nodes, [vinfo("x", (1, 2, 5, 6))], [vinfo("y", (1, 3, *out_hw))], [numpy_helper.from_array(w, "w")])
    path = tmp_path / "ct.onnx"
    onnx.save(m, str(path))
    if int8:
        qdq = tmp_path / "ct_qdq.onnx"
        import sys
        from pathlib import Path
        sys.path.insert(0, str(Path(__file__).parents[1] / "families"))
        import builders

        builders.quantize(path, qdq, "uint8", True)
        path = qdq
    r = api.verify(path, "4M")
    assert r["pass"], r["outputs"]
    small = int(api.analyze(path, 64, emit=False).min_fast_budget * 1.3)
    r = api.verify(path, small)
    assert r["pass"], (small, r["outputs"])
    assert any(st["tiled"] and any(n.startswith("ConvTranspose") or "convtranspose" in n.lower()
                                   for n in st["op_names"]) for st in r["plan"]["stages"]), r["plan"]["stages"]
