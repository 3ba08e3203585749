"""ONNX operator conformance cases (from the installed onnx package) through stage 1 and stage 2.

For the operator families the runtime covers, every case either fails with a TigrisError (an unsupported model, a
zero-size tensor, ...) or normalizes to supported ops; in the latter case ONNX Runtime on the exported normalized IR
must reproduce the case's stored expected outputs (tolerance: the case's own rtol/atol, at least 1e-4). No case may
crash the loader or a pass with a Python exception, whatever its operator. The cases are built in memory; nothing
is written.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from tigris.ir import TigrisError
from tigris.load import load_onnx_model
from tigris.passes import normalize, unsupported_nodes, verify
from tigris.passes.to_onnx import run_ort

FAMILIES = {"Conv", "AveragePool", "MaxPool", "GlobalAveragePool", "Gemm", "MatMul", "Relu", "Clip", "Sigmoid",
            "Tanh", "HardSigmoid", "HardSwish", "LeakyRelu", "PRelu", "Softmax", "Pad", "Transpose", "Reshape",
            "Flatten", "Squeeze", "Unsqueeze", "Concat", "Resize", "Add", "Mul", "Sub", "Div", "BatchNormalization",
            "ReduceMean", "Identity", "Dropout", "Upsample", "QuantizeLinear", "DequantizeLinear"}


@pytest.fixture(scope="module")
def all_cases():
    try:
        import onnx.backend.test.case.node as node_cases
    except ImportError:
        pytest.skip("this onnx build has no backend test cases")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return node_cases.collect_testcases()


@pytest.fixture(scope="module")
def cases(all_cases):
    return [c for c in all_cases if c.model.graph.node and {n.op_type for n in c.model.graph.node} <= FAMILIES]


def test_no_case_crashes_the_front_end(all_cases):
    """Every one of the ~1,900 cases (any operator) loads and normalizes, or is refused with a TigrisError; the
    normalized IR always passes the verifier."""
    crashes = []
    for c in all_cases:
        try:
            g2, _ = normalize(load_onnx_model(c.model, name=c.name))
            verify(g2)
            unsupported_nodes(g2)
        except TigrisError:
            continue
        except Exception as e:  # anything else is a bug in stage 1 or 2
            crashes.append(f"{c.name}: {type(e).__name__}: {str(e)[:120]}")
    assert crashes == []


def test_conformance_cases(cases):
    checked = 0
    refused = 0
    failures = []
    for c in cases:
        try:
            g = load_onnx_model(c.model, name=c.name)
            g2, _ = normalize(g, check=True)
        except TigrisError:
            refused += 1
            continue
        if unsupported_nodes(g2):
            refused += 1
            continue
        inputs, outputs = c.data_sets[0]
        init = {i.name for i in c.model.graph.initializer}
        names = [i.name for i in c.model.graph.input if i.name not in init]
        feeds = {n: np.asarray(v) for n, v in zip(names, inputs) if n in g2.inputs}
        got = run_ort(g2, feeds)
        rtol, atol = max(float(c.rtol), 1e-4), max(float(c.atol), 1e-4)
        for o, want in zip(c.model.graph.output, outputs):
            if not np.allclose(np.asarray(got[o.name], np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol):
                failures.append(c.name)
        checked += 1
    assert failures == []
    assert checked >= 80, (checked, refused)  # most cases of the covered families do normalize
