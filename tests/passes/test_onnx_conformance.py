"""ONNX operator conformance cases (from the installed onnx package) through stage 1 and stage 2.

For the operator families the runtime covers, every case either fails with a TigrisError (an unsupported model, a
zero-size tensor, ...) or normalizes to supported ops; in the latter case ONNX Runtime on the exported normalized IR
must reproduce the case's stored expected outputs (tolerance: the case's own rtol/atol, at least 1e-4). No case may
crash the loader or a pass with a Python exception. The cases are built in memory, nothing is written.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from tigris.ir import TigrisError
from tigris.load import load_onnx_model
from tigris.passes import normalize, unsupported_nodes
from tigris.passes.to_onnx import run_ort

FAMILIES = {"Conv", "AveragePool", "MaxPool", "GlobalAveragePool", "Gemm", "MatMul", "Relu", "Clip", "Sigmoid",
            "Tanh", "HardSigmoid", "HardSwish", "LeakyRelu", "PRelu", "Softmax", "Pad", "Transpose", "Reshape",
            "Flatten", "Squeeze", "Unsqueeze", "Concat", "Resize", "Add", "Mul", "Sub", "Div", "BatchNormalization",
            "ReduceMean", "Identity", "Dropout", "Upsample", "QuantizeLinear", "DequantizeLinear"}


@pytest.fixture(scope="module")
def cases():
    try:
        import onnx.backend.test.case.node as node_cases
    except ImportError:
        pytest.skip("this onnx build has no backend test cases")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        all_cases = node_cases.collect_testcases()
    return [c for c in all_cases if c.model.graph.node and {n.op_type for n in c.model.graph.node} <= FAMILIES]


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
