"""Helpers for the pass tests: tiny ONNX models built with onnx.helper, loaded through stage 1, and checked by
running ONNX Runtime on the original model and on the exported rewritten IR (tigris.passes.to_onnx)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tigris.ir import AnalyzedGraph
from tigris.load import load_onnx_model
from tigris.passes import PIPELINE, normalize, verify
from tigris.passes._util import PassResult

from tigris_testing import SHARED_FLOAT, SHARED_INT8, shared_model  # noqa: E402,F401 - re-exported

F = TensorProto.FLOAT
I8 = TensorProto.INT8


def model(nodes: Sequence[onnx.NodeProto], inputs: Sequence[tuple[str, int, Sequence[int]]],
          outputs: Sequence[tuple[str, int, Sequence[int] | None]], inits: dict[str, np.ndarray] | None = None,
          opset: int = 17) -> onnx.ModelProto:
    g = helper.make_graph(
        list(nodes), "t",
        [helper.make_tensor_value_info(n, t, list(s)) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, list(s) if s is not None else None) for n, t, s in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def xy_model(nodes: Sequence[onnx.NodeProto], inits: dict[str, np.ndarray], x_shape: Sequence[int],
             y_shape: Sequence[int]) -> onnx.ModelProto:
    """A float model from input ``x`` to output ``y`` (the weight-group and K-group tests' random models)."""
    return model(nodes, [("x", onnx.TensorProto.FLOAT, x_shape)], [("y", onnx.TensorProto.FLOAT, y_shape)], inits)


def load(m: onnx.ModelProto) -> AnalyzedGraph:
    return load_onnx_model(m)


def upto(graph: AnalyzedGraph, name: str, include: bool = False) -> AnalyzedGraph:
    """Run the pipeline up to (excluding, or including) the pass called ``name``, verifying after each pass."""
    idx = [p.name for p in PIPELINE].index(name)
    g, _ = normalize(graph, check=True, passes=PIPELINE[: idx + (1 if include else 0)])
    return g


def run_pass(graph: AnalyzedGraph, name: str) -> PassResult:
    """Run one pass and the IR verifier on its result."""
    p = next(p for p in PIPELINE if p.name == name)
    res = p.run(graph)
    verify(res.graph, f"after {name}")
    return res


def ort_run(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return {o.name: r for o, r in zip(s.get_outputs(), s.run(None, feeds))}


def random_feeds(graph: AnalyzedGraph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for n in graph.inputs:
        b = graph.boundary[n]
        if b.dtype == "float32":
            out[n] = rng.standard_normal(b.shape).astype(np.float32)
        else:
            info = np.iinfo(np.dtype(b.dtype))
            out[n] = rng.integers(info.min, info.max + 1, b.shape).astype(b.dtype)
    return out


def assert_same_as_ort(m: onnx.ModelProto, graph: AnalyzedGraph, tol: float = 0.0, seed: int = 0) -> None:
    """ORT on the original model vs ORT on the exported IR; ``tol`` is relative to max(1, max|ref|)."""
    from tigris.passes.to_onnx import run_ort

    feeds = random_feeds(graph, seed)
    ref = ort_run(m, feeds)
    got = run_ort(graph, feeds)
    for k, r in ref.items():
        a = r.astype(np.float64)
        b = got[k].astype(np.float64)
        assert a.shape == b.shape, (k, a.shape, b.shape)
        bound = tol * max(1.0, float(np.abs(a).max()))
        assert float(np.abs(a - b).max()) <= bound, (k, float(np.abs(a - b).max()), bound)


def assert_reference_matches_ort(m: onnx.ModelProto, tol: float = 1e-5, lsb: int = 1, seed: int = 0) -> None:
    """The issue's numeric check: ONNX Runtime on the original model against the NumPy reference executor on the
    fully normalized IR. Float outputs within ``tol`` x max(1, max|ref|), integer outputs within ``lsb``. Skips, with
    the reason, while the reference executor lacks a kernel the graph needs."""
    import pytest

    from tigris.passes import check_supported
    from tigris.reference import run_reference

    g = load(m)
    g2, _ = normalize(g, check=True)
    check_supported(g2)
    feeds = random_feeds(g, seed)
    ref = ort_run(m, feeds)
    try:
        got = run_reference(g2, feeds)
    except (NotImplementedError, KeyError) as e:
        pytest.skip(f"the reference executor cannot run this graph yet ({type(e).__name__}: {e})")
    for k, r in ref.items():
        a, b = np.asarray(r, np.float64), np.asarray(got[k], np.float64)
        assert a.shape == b.shape, (k, a.shape, b.shape)
        bound = lsb if np.issubdtype(r.dtype, np.integer) else tol * max(1.0, float(np.abs(a).max()))
        assert float(np.abs(a - b).max()) <= bound, (k, float(np.abs(a - b).max()), bound)
