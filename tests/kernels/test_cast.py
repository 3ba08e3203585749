"""The cast kind: float32 -> int32, truncating toward zero, NaN -> 0, saturated; on row bands like the tiled runtime
gives it. C equals the reference exactly; the reference equals ONNX Runtime's Cast on in-range values."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from harness import build_kernels
from ophelp import T, c_runner, graph1, onnx_model, ort_run, phys_inputs, ref_runner, run_op, split_rows, \
    status_error, to_logical, vinfo
from tigris.ops import lower, unsupported_reason


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["cast.c"], tmp_path_factory.mktemp("cast"))


@pytest.mark.parametrize("shape", [(1, 3, 5, 4), (2, 7), (1, 4, 9)])
def test_cast_matches_ort_and_reference(lib, shape):
    rng = np.random.default_rng(len(shape))
    g = graph1("Cast", [T("x", shape)], [T("y", shape, "int32")], {"to": TensorProto.INT32})
    low = lower(g, g.ops[0])
    x = (rng.standard_normal(shape) * 1000).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    m = onnx_model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT32)], [vinfo("x", shape)],
                   [helper.make_tensor_value_info("y", TensorProto.INT32, list(shape))])
    (ort_y,) = ort_run(m, {"x": x})
    assert np.array_equal(to_logical(g, "y", ref), ort_y)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    h = ref.shape[1]
    bands = split_rows(h, [1, h // 2])
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, bands=bands, need=lambda a, b: [(a, b)]), ref)


def test_cast_saturates_and_maps_nan_to_zero(lib):
    g = graph1("Cast", [T("x", (1, 5))], [T("y", (1, 5), "int32")], {"to": TensorProto.INT32})
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.array([[np.nan, 1e20, -1e20, -2.7, 2.7]], np.float32)})
    ref = run_op(ref_runner, g, low, phys)
    assert ref.reshape(-1).tolist() == [0, 2**31 - 128, -2**31, -2, 2]
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)


def test_cast_band_missing_rows_is_refused(lib):
    g = graph1("Cast", [T("x", (1, 2, 6, 3))], [T("y", (1, 2, 6, 3), "int32")], {"to": TensorProto.INT32})
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.zeros((1, 2, 6, 3), np.float32)})
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        run_op(c_runner(lib), g, low, phys, bands=[(0, 6)], need=lambda a, b: [(0, 3)])


def test_cast_support():
    g = graph1("Cast", [T("x", (1, 5))], [T("y", (1, 5), "int8")], {"to": TensorProto.INT8})
    assert "float32 to int32" in unsupported_reason(g, g.ops[0])
