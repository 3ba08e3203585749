"""Copy: reshapes (Reshape/Flatten/Squeeze/Unsqueeze) that move bytes between layouts, and aliases that do not.

Tolerance: these ops move bytes, so C == reference == ORT exactly for float and int8.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

from harness import build_kernels
from ophelp import T, c_runner, graph1, onnx_model, ort_run, phys_inputs, qp, ref_runner, run_op, status_error, \
    to_logical, vinfo
from tigris.ir import TigrisError
from tigris.ops import lower


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["copy.c"], tmp_path_factory.mktemp("copy"))


RESHAPES = [
    # (x shape, x layout, y shape, y layout, alias?)
    ((1, 4, 3, 2), "nhwc", (1, 24), "plain", False),     # Flatten of an NHWC activation
    ((1, 24), "plain", (1, 4, 3, 2), "nhwc", False),     # Reshape of a vector into an image
    ((1, 5, 1, 1), "nhwc", (1, 5), "plain", True),       # after GAP: same byte order
    ((1, 1, 3, 4), "nhwc", (1, 12), "plain", True),      # one channel: NHWC order is logical
    ((1, 6, 7), "nwc", (1, 42), "plain", False),         # 1-D signal flattened
    ((1, 42), "plain", (1, 6, 7), "nwc", False),
    ((2, 3, 4), "plain", (6, 4), "plain", True),         # plain to plain never moves
    ((1, 4, 3, 2), "plain", (1, 2, 3, 4), "nhwc", False),  # after the layout pass's Transpose to logical order
]


@pytest.mark.parametrize("xs,xl,ys,yl,alias", RESHAPES)
@pytest.mark.parametrize("int8", [False, True])
def test_copy_reshape(lib, xs, xl, ys, yl, alias, int8):
    rng = np.random.default_rng(7)
    dt, q = ("int8", qp(0.05, -2)) if int8 else ("float32", None)
    g = graph1("Reshape", [T("x", xs, dt, q, layout=xl)], [T("y", ys, dt, q, layout=yl)])
    low = lower(g, g.ops[0])
    assert low.alias == alias
    x = rng.integers(-128, 128, size=xs).astype(np.int8) if int8 else rng.standard_normal(xs).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(to_logical(g, "y", ref), x.reshape(ys))
    if not alias:
        assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    if not int8:
        shape_c = numpy_helper.from_array(np.array(ys, np.int64), "shape")
        (ort_y,) = ort_run(onnx_model([helper.make_node("Reshape", ["x", "shape"], ["y"])], [vinfo("x", xs)],
                                      [vinfo("y", ys)], [shape_c]), {"x": x})
        assert np.array_equal(to_logical(g, "y", ref), ort_y)


def test_reshape_between_two_channel_last_orders_is_refused():
    g = graph1("Reshape", [T("x", (1, 4, 3, 2))], [T("y", (1, 2, 4, 3))])
    with pytest.raises(TigrisError, match="Transpose"):
        lower(g, g.ops[0])


def test_copy_refuses_bands_and_mismatched_sizes(lib):
    g = graph1("Flatten", [T("x", (1, 4, 3, 2))], [T("y", (1, 24))])
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.zeros((1, 4, 3, 2), np.float32)})
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        run_op(c_runner(lib), g, low, phys, None, lambda a, b: [(0, 2)])
    low.params["S1"] += 1
    with pytest.raises(RuntimeError, match=status_error("ERR_SHAPE")):
        run_op(c_runner(lib), g, low, phys)
