"""Every shared model loads, normalizes with the verifier after each pass, and has no unsupported node; the
normalized IR computes what the original model computes.

Two numeric checks:
* ONNX Runtime on the original vs ONNX Runtime on the exported normalized IR (tigris.passes.to_onnx): float within
  1e-5 x max(1, max|ref|); int8 outputs exactly equal (the export restates the same QDQ arithmetic).
* ONNX Runtime on the original vs the NumPy reference executor on the normalized IR (issue 3's acceptance): float
  models within 1e-4 x max(1, max|ref|); int8 outputs within 1 LSB; the float output of an int8 model (QDQ with float
  edges) by cosine similarity >= 0.99, since integer requantization and ONNX Runtime's float QDQ emulation round
  differently along the whole network (the per-op 1 LSB check belongs to the reference executor's own tests).
  Skipped, with the reason, while the executor lacks a kernel the model needs.
"""
from __future__ import annotations

import numpy as np
import pytest

from passes._build import SHARED_FLOAT, SHARED_INT8, ort_run, random_feeds, shared_model
from tigris.load import load_model
from tigris.passes import check_supported, normalize, unsupported_nodes

ALL = SHARED_FLOAT + SHARED_INT8


def _prepared(rel: str):
    import onnx

    path = shared_model(rel)
    g = load_model(path)
    g2, reports = normalize(g, check=True)
    return onnx.load(str(path)), g, g2, reports


def _compare(ref: dict, got: dict, graph, float_tol: float, lsb: int, cosine: float | None = None) -> None:
    int8_graph = any(t.quant is not None for t in graph.activations())
    for k, r in ref.items():
        a, b = r.astype(np.float64), got[k].astype(np.float64)
        assert a.shape == b.shape
        if cosine is not None and int8_graph and not np.issubdtype(r.dtype, np.integer):
            cos = float(np.dot(a.ravel(), b.ravel()) / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))
            assert cos >= cosine, (k, cos)
        elif np.issubdtype(r.dtype, np.integer):
            assert float(np.abs(a - b).max()) <= lsb, k
        else:
            bound = float_tol * max(1.0, float(np.abs(a).max()))
            assert float(np.abs(a - b).max()) <= bound, (k, float(np.abs(a - b).max()), bound)


@pytest.mark.parametrize("rel", ALL)
def test_normalizes_supported_and_matches_ort(rel):
    from tigris.passes.to_onnx import run_ort

    m, g, g2, reports = _prepared(rel)
    assert unsupported_nodes(g2) == []
    check_supported(g2)
    assert [r.name for r in reports][-1] == "layout"
    feeds = random_feeds(g, seed=1)
    _compare(ort_run(m, feeds), run_ort(g2, feeds), g2, 1e-5, 0)


@pytest.mark.parametrize("rel", ALL)
def test_reference_executor_matches_ort(rel):
    from tigris.reference import run_reference

    m, g, g2, _ = _prepared(rel)
    feeds = random_feeds(g, seed=2)
    try:
        got = run_reference(g2, feeds)
    except (NotImplementedError, KeyError) as e:
        pytest.skip(f"the reference executor cannot run this model yet ({type(e).__name__}: {e})")
    _compare(ort_run(m, feeds), got, g2, 1e-4, 1, cosine=0.99)


def test_normalize_is_idempotent_on_a_real_model():
    _, _, g2, _ = _prepared("mlperf_tiny/vww_mbv1_025_96_int8.onnx")
    g3, reports = normalize(g2, check=True)
    assert [r for r in reports if r.rewritten] == []
    assert [op.name for op in g3.ops] == [op.name for op in g2.ops]


def test_int8_boundaries():
    _, _, g2, _ = _prepared("torchvision/mobilenet_v2_035_96_int8.onnx")
    types = [op.op_type for op in g2.ops]
    # float input quantized at the edge, float output dequantized at the edge, int8 everywhere between
    assert types[0] == "QuantizeLinear" and types[-1] == "DequantizeLinear"
    assert types.count("QuantizeLinear") == 1 and types.count("DequantizeLinear") == 1
    for op in g2.ops[1:-1]:
        for t in (*op.inputs[:1], *op.outputs):
            assert g2.tensors[t].dtype == "int8" and g2.tensors[t].quant is not None, op.name
    assert g2.boundary["input"].dtype == "float32" and g2.boundary["output"].dtype == "float32"


def test_int8_input_learns_its_scale_and_nhwc_input_transpose_goes():
    _, _, g2, _ = _prepared("mlperf_tiny/streaming_wakeword_int8.onnx")
    name = g2.inputs[0]
    t = g2.tensors[name]
    assert t.quant is not None and t.layout == "nhwc"
    assert t.shape == (1, 40, 30, 1) and g2.boundary[name].shape == (1, 30, 1, 40)
    assert g2.boundary[name].quant == t.quant
    assert "Transpose" not in [op.op_type for op in g2.ops]


@pytest.mark.parametrize("rel", ["onnx_zoo/mnist-8.onnx", "mlperf_tiny/kws_dscnn_int8.onnx",
                                 "mlperf_tiny/streaming_wakeword_int8.onnx"])
def test_normalize_idempotent_and_every_constant_read(rel):
    _, _, g2, _ = _prepared(rel)
    read = {t for op in g2.ops for t in op.inputs}
    assert set(g2.weights) <= read
    _, reports = normalize(g2, check=True)
    assert [(r.name, r.rewritten) for r in reports if r.rewritten] == []
