"""The kernel registry (runtime_c/src/kernels/registry.c): per-kind dtype dispatch, and the int8-only build.

Built twice from the same sources: as the host runtime builds it, and with -DTGRS_INT8_ONLY (the registry then has no
float entries). Float ops must run in the first and fail with TGRS_ERR_UNSUPPORTED in the second; int8 ops must give
the same bytes in both, equal to the NumPy reference (bit-exact, tolerance 0). Float results are checked against the
reference within 1e-5 x max(1, max|ref|) (assert_float_close).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from harness import build_kernels
from ophelp import T, assert_float_close, c_runner, graph1, phys_inputs, qp, rand_q, ref_runner, run_op, status_error
from tigris.ops import lower

SOURCES = ["conv.c", "dwconv.c", "fc.c", "pool.c", "gap_accum.c", "binary.c", "softmax.c"]  # pool.c calls gap_accum


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    d = tmp_path_factory.mktemp("registry")
    return build_kernels(SOURCES, d / "full"), build_kernels(SOURCES, d / "int8", extra_flags=["-DTGRS_INT8_ONLY"])


def _softmax(dtype):
    if dtype == "float32":
        return graph1("Softmax", [T("x", (1, 10))], [T("y", (1, 10))], {"axis": 1})
    return graph1("Softmax", [T("x", (1, 10), "int8", qp(0.1, 3))], [T("y", (1, 10), "int8", qp(1 / 256, -128))],
                  {"axis": 1})


def _avgpool(dtype):
    shape_in, shape_out = (1, 4, 6, 6), (1, 4, 3, 3)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2], "dilations": [1, 1], "pads": [0, 0, 0, 0], "ceil_mode": 0,
             "count_include_pad": 0}
    if dtype == "float32":
        return graph1("AveragePool", [T("x", shape_in)], [T("y", shape_out)], attrs)
    return graph1("AveragePool", [T("x", shape_in, "int8", qp(0.05, -2))], [T("y", shape_out, "int8", qp(0.04, 1))],
                  attrs)


def _add(dtype):
    shape = (1, 3, 4, 5)
    if dtype == "float32":
        return graph1("Add", [T("a", shape), T("b", shape)], [T("y", shape)])
    return graph1("Add", [T("a", shape, "int8", qp(0.03, 4)), T("b", shape, "int8", qp(0.02, -7))],
                  [T("y", shape, "int8", qp(0.05, 0))])


BUILDERS = {"softmax": _softmax, "avgpool": _avgpool, "add": _add}


def _inputs(g, low, dtype, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for name in low.inputs:
        shape = tuple(g.tensors[name].shape)
        feeds[name] = rng.standard_normal(shape).astype(np.float32) if dtype == "float32" else rand_q(rng, shape)
    return phys_inputs(g, low, feeds)


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_float_op_runs_in_the_full_build_and_is_unsupported_int8_only(libs, kind):
    full, int8 = libs
    g = BUILDERS[kind]("float32")
    low = lower(g, g.ops[0])
    phys = _inputs(g, low, "float32", 1)
    assert_float_close(run_op(c_runner(full), g, low, phys), run_op(ref_runner, g, low, phys))
    with pytest.raises(RuntimeError, match=status_error("ERR_UNSUPPORTED")):
        run_op(c_runner(int8), g, low, phys)


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_int8_op_gives_the_same_bytes_in_both_builds(libs, kind):
    full, int8 = libs
    g = BUILDERS[kind]("int8")
    low = lower(g, g.ops[0])
    phys = _inputs(g, low, "int8", 2)
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(full), g, low, phys), ref)
    assert np.array_equal(run_op(c_runner(int8), g, low, phys), ref)


def test_mixed_dtypes_still_refused_by_the_chosen_variant(libs):
    # The registry picks by the output dtype; the variant checks the rest, as the kind's entry point always did.
    full, _ = libs
    g = graph1("Softmax", [T("x", (1, 6), "int8", qp(0.1, 0))], [T("y", (1, 6), "int8", qp(1 / 256, -128))],
               {"axis": 1})
    low = lower(g, g.ops[0])
    g.tensors["x"] = dataclasses.replace(g.tensors["x"], dtype="float32", quant=None)  # a float input, int8 output
    phys = phys_inputs(g, low, {"x": np.zeros((1, 6), np.float32)})
    with pytest.raises(RuntimeError, match=status_error("ERR_DTYPE")):
        run_op(c_runner(full), g, low, phys)
