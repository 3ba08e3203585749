"""The QOperator -> QDQ rewrite at load (tigris/load/qoperator.py) states the same arithmetic: ONNX Runtime computes
bit-identical outputs on the original QOperator model and on the rewritten QDQ model."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from tigris.load.qoperator import has_qoperator_nodes, qoperator_to_qdq

sys.path.insert(0, str(Path(__file__).parent / "families"))
import builders  # noqa: E402

logging.getLogger().setLevel(logging.ERROR)


def _ort(model: onnx.ModelProto, x: np.ndarray) -> list[np.ndarray]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})


# every QOperator op ORT writes for these: QLinearConv, QLinearMatMul, QGemm, QLinearAdd/Mul, QLinearConcat,
# QLinearSigmoid, QLinearSoftmax, QLinearLeakyRelu, QLinearAveragePool, QLinearGlobalAveragePool; MaxPool, Reshape,
# Transpose and nearest Resize on 8-bit tensors
@pytest.mark.parametrize("family", ["mbv3_small", "resnet18_stem", "dscnn1d", "tiny_unet", "mlp", "acts",
                                    "effnet_lite", "det_head", "shuffle", "softmax_c", "tf_head"])
@pytest.mark.parametrize("activation", ["uint8", "int8"])
def test_rewrite_is_exact_under_onnxruntime(tmp_path, family, activation):
    fp = tmp_path / "f.onnx"
    onnx.save(builders.FAMILIES[family](), str(fp))
    qp = tmp_path / "q.onnx"
    builders.quantize(fp, qp, activation, per_channel=True, qoperator=True)
    m = onnx.load(str(qp))
    assert has_qoperator_nodes(m)
    r = qoperator_to_qdq(m)
    onnx.checker.check_model(r)
    assert not has_qoperator_nodes(r)
    assert all(n.domain in ("", "ai.onnx") for n in r.graph.node)
    shape = builders.input_shape(m)
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        for a, b in zip(_ort(m, x), _ort(r, x)):
            np.testing.assert_array_equal(a, b)


def test_model_without_qoperator_nodes_is_untouched():
    m = builders.FAMILIES["mbv2"]()
    assert qoperator_to_qdq(m) is m
