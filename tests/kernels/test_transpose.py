"""Transpose on physical views: any logical permutation of rank 2-4, with layout changes.

Tolerance: these ops move bytes, so C == reference == ORT exactly for float and int8.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper

from harness import build_kernels
from ophelp import T, c_runner, graph1, max_lsb, onnx_model, ort_run, phys_inputs, qdq_model, qp, ref_runner, run_op, \
    status_error, to_logical, vinfo
from tigris.ops import lower


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["transpose.c", "copy.c"], tmp_path_factory.mktemp("transpose"))


@st.composite
def tcase(draw):
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    perm = draw(st.permutations(list(range(rank))))
    # rank-4 outputs may be plain (the layout pass's "to logical order" Transpose) or nhwc
    yl = draw(st.sampled_from(["nhwc", "plain"])) if rank == 4 else None
    xl = draw(st.sampled_from(["nhwc", "plain"])) if rank == 4 else None
    return dict(shape=shape, perm=list(perm), xl=xl, yl=yl)


@settings(database=None, max_examples=80, deadline=None)
@given(cs=tcase(), seed=st.integers(0, 2**16), int8=st.booleans())
def test_transpose(lib, cs, seed, int8):
    rng = np.random.default_rng(seed)
    shape, perm = cs["shape"], cs["perm"]
    yshape = tuple(shape[p] for p in perm)
    dt, q = ("int8", qp(0.1, 3)) if int8 else ("float32", None)
    g = graph1("Transpose", [T("x", shape, dt, q, layout=cs["xl"])], [T("y", yshape, dt, q, layout=cs["yl"])],
               {"perm": perm})
    low = lower(g, g.ops[0])
    x = rng.integers(-128, 128, size=shape).astype(np.int8) if int8 else rng.standard_normal(shape).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(to_logical(g, "y", ref), np.transpose(x, perm))
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    if not int8:
        (ort_y,) = ort_run(onnx_model([helper.make_node("Transpose", ["x"], ["y"], perm=perm)], [vinfo("x", shape)],
                                      [vinfo("y", yshape)]), {"x": x})
        assert np.array_equal(to_logical(g, "y", ref), ort_y)


def test_every_rank4_permutation_on_nhwc(lib):
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    for perm in itertools.permutations(range(4)):
        g = graph1("Transpose", [T("x", x.shape)], [T("y", tuple(x.shape[p] for p in perm))], {"perm": list(perm)})
        low = lower(g, g.ops[0])
        phys = phys_inputs(g, low, {"x": x})
        got = run_op(c_runner(lib), g, low, phys)
        assert np.array_equal(to_logical(g, "y", got), np.transpose(x, perm))


def test_transpose_and_copy_refuse_bands_and_bad_perms(lib):
    g = graph1("Transpose", [T("x", (1, 2, 3, 4))], [T("y", (1, 2, 4, 3))], {"perm": [0, 1, 3, 2]})
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.zeros((1, 2, 3, 4), np.float32)})
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        run_op(c_runner(lib), g, low, phys, [(0, 2)], lambda a, b: [(0, 3)])
    low.params["P1"] = low.params["P0"]
    with pytest.raises(RuntimeError, match=status_error("ERR_PARAM")):
        run_op(c_runner(lib), g, low, phys)


@pytest.mark.parametrize("s_in, z_in, s_out, z_out", [(0.1, 3, 0.05, -128), (0.02, -7, 0.037, 11), (0.1, 3, 0.1, 4),
                                                      (0.25, 0, 0.5, 0)])
def test_int8_transpose_requantizes_between_encodings(lib, s_in, z_in, s_out, z_out):
    """ORT's quantizer gives a Transpose the grid of the Clip/Relu it removed after it, so input and output encodings
    differ: every moved code is requantized (C == reference, within 1 LSB of ONNX Runtime's DQ -> Transpose -> Q;
    the last case puts exact halves on every odd code, which round to even like QuantizeLinear: 0 LSB)."""
    rng = np.random.default_rng(7)
    shape, perm = (1, 5, 4, 6), [0, 2, 3, 1]
    yshape = tuple(shape[p] for p in perm)
    g = graph1("Transpose", [T("x", shape, "int8", qp(s_in, z_in))], [T("y", yshape, "int8", qp(s_out, z_out))],
               {"perm": perm})
    low = lower(g, g.ops[0])
    assert low.params["MULT"] != 0
    x = rng.integers(-128, 128, size=shape).astype(np.int8)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    m = qdq_model(lambda i, o: [helper.make_node("Transpose", [i[0]], [o], perm=perm)],
                  [("x", shape, s_in, z_in)], ("y", yshape, s_out, z_out))
    (ort_y,) = ort_run(m, {"x": x})
    lsb = max_lsb(to_logical(g, "y", ref), ort_y)
    assert lsb <= (0 if (s_in, s_out) == (0.25, 0.5) else 1)
    low.params["SHIFT"] = 40  # beyond the requantization's range: refused by the check
    with pytest.raises(RuntimeError, match=status_error("ERR_PARAM")):
        run_op(c_runner(lib), g, low, phys)


def test_int8_transpose_with_one_encoding_is_a_byte_move():
    g = graph1("Transpose", [T("x", (1, 2, 3, 4), "int8", qp(0.1, 3))], [T("y", (1, 3, 4, 2), "int8", qp(0.1, 3))],
               {"perm": [0, 2, 3, 1]})
    assert lower(g, g.ops[0]).params.get("MULT", 0) == 0
