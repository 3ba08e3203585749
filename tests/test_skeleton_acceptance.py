"""Issue 2 acceptance: the float models compile at a budget that holds their unscheduled peak, run on the C runtime
through `tigris run`, and match ONNX Runtime within 1e-5 x max(1, max|ref|); mnist-8 matches its three stored
reference outputs."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import numpy_helper

from tigris import api
from tigris.cli import main
from tigris_testing import MODELS, shared_model

TOL = 1e-5


def _cli_run(tmp_path, model, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    prep = api.prepare(model)
    from tigris.plan import unscheduled_peak

    budget = unscheduled_peak(prep.graph)
    plan = tmp_path / "m.tgrs"
    runner = CliRunner()
    res = runner.invoke(main, ["compile", str(model), "-m", str(budget), "--xip", "-o", str(plan)])
    assert res.exit_code == 0, res.output
    args = ["run", str(plan), "--output", str(tmp_path / "out.npz")]
    for i, (name, arr) in enumerate(inputs.items()):
        np.save(tmp_path / f"in{i}.npy", arr)
        args += ["--input", f"{name}={tmp_path / f'in{i}.npy'}"]
    res = runner.invoke(main, args)
    assert res.exit_code == 0, res.output
    return dict(np.load(tmp_path / "out.npz"))


@pytest.mark.parametrize("rel", ["mlperf_tiny/vww_mbv1_025_96_f32.onnx", "mlperf_tiny/resnet8_cifar_f32.onnx",
                                 "mlperf_tiny/ad_autoencoder_f32.onnx", "onnx_zoo/mnist-8.onnx"])
def test_float_model_through_tigris_run(tmp_path, rel):
    model = shared_model(rel)
    prep = api.prepare(model)
    inputs = api.random_inputs(prep, seed=11)
    got = _cli_run(tmp_path, model, inputs)
    want = api.run_onnxruntime(model, inputs)
    for name, ref in want.items():
        tol = TOL * max(1.0, float(np.abs(ref).max()))
        assert np.abs(got[name].astype(np.float64) - ref).max() <= tol, name


@pytest.mark.parametrize("case", [0, 1, 2])
def test_mnist_stored_references(tmp_path, case):
    model = shared_model("onnx_zoo/mnist-8.onnx")
    data = MODELS / "onnx_zoo" / "mnist-8_data" / f"test_data_set_{case}"
    x = numpy_helper.to_array(onnx.load_tensor(str(data / "input_0.pb")))
    want = numpy_helper.to_array(onnx.load_tensor(str(data / "output_0.pb")))
    got = _cli_run(tmp_path, model, {"Input3": x})["Plus214_Output_0"]
    assert np.abs(got - want).max() <= TOL * max(1.0, float(np.abs(want).max()))
