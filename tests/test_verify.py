"""`tigris verify` like a validation run: many samples, data sets from files, every metric, distinct exit codes.

Metrics are checked against values computed here independently from the C runtime's and ONNX Runtime's outputs;
the exit codes against docs/cli.md (0 pass, 1 mismatch, 2 bad input, 4 does not fit)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import numpy_helper

from tigris import api
from tigris.cli import EXIT_MISMATCH, EXIT_VERIFY_NO_FIT, main

REPO = Path(__file__).resolve().parents[1]
MNIST = REPO / "examples" / "mnist-8.onnx"
MNIST_SETS = REPO / "tests" / "models" / "mnist-8_data"
KWS = REPO / "tests" / "models" / "kws_dscnn_int8.onnx"
OUT = "Plus214_Output_0"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_compare_metrics_on_known_arrays():
    got = np.array([1.0, 2.0, 3.0, 4.0])
    ref = np.array([1.0, 2.0, 3.0, 2.0])
    m = api.compare(got, ref, integer=False)
    assert m["max_abs_err"] == 2.0
    assert m["mae"] == 0.5
    assert m["rmse"] == pytest.approx(1.0)
    assert m["l2r"] == pytest.approx(2.0 / np.sqrt(1 + 4 + 9 + 4))
    assert m["cosine"] == pytest.approx(float(got @ ref / np.linalg.norm(got) / np.linalg.norm(ref)))
    assert m["max_lsb"] is None
    mi = api.compare(np.array([3, -5], np.int8), np.array([1, -5], np.int8), integer=True)
    assert mi["max_lsb"] == 2
    assert api.compare(np.zeros(3), np.zeros(3), False)["l2r"] == 0.0
    assert api.compare(np.ones(3), np.zeros(3), False)["l2r"] is None  # no relative error against all zeros


def test_classifier_and_top1():
    assert api.is_classifier((1, 10)) and api.is_classifier((1, 1, 12)) and api.is_classifier((10,))
    assert not api.is_classifier((1, 3, 8, 8)) and not api.is_classifier((1, 1))
    a = [np.array([[0, 5, 1]]), np.array([[9, 0, 0]]), np.array([[0, 0, 1]])]
    b = [np.array([[0, 4, 1]]), np.array([[0, 9, 0]]), np.array([[0, 0, 2]])]
    assert api.top1_agreement(a, b) == pytest.approx(2 / 3)


def test_many_random_samples_metrics_match_an_independent_computation():
    res = api.verify(MNIST, "32K", samples=3, seed=7)
    assert res["pass"] and res["samples"] == 3
    (o,) = res["outputs"]
    assert o["name"] == OUT and o["classifier"] and o["failed_samples"] == 0
    # the same three samples, run here through the plan and ONNX Runtime
    c = api.compile_model(MNIST, "32K")
    prep = c.analysis.prepared
    got, ref = [], []
    for s in (7, 8, 9):
        x = api.random_inputs(prep, s)
        got.append(api.run_plan(c.plan_bytes, x).outputs[OUT].astype(np.float64).ravel())
        ref.append(api.run_onnxruntime(MNIST, x)[OUT].astype(np.float64).ravel())
    g, r = np.concatenate(got), np.concatenate(ref)
    assert o["max_abs_err"] == pytest.approx(np.abs(g - r).max())
    assert o["mae"] == pytest.approx(np.abs(g - r).mean())
    assert o["rmse"] == pytest.approx(np.sqrt(np.mean((g - r) ** 2)))
    assert o["l2r"] == pytest.approx(np.linalg.norm(g - r) / np.linalg.norm(r))
    assert o["top1_agreement"] == np.mean([np.argmax(a) == np.argmax(b) for a, b in zip(got, ref)])
    assert o["max_lsb"] is None and o["expected"] is None
    errs = [np.abs(a - b).max() for a, b in zip(got, ref)]
    w = o["worst_sample"]
    assert w["index"] == int(np.argmax(errs)) and w["source"] == f"random seed {7 + w['index']}"
    assert w["max_abs_err"] == pytest.approx(max(errs))


def test_onnx_test_data_sets_with_expected_outputs(tmp_path):
    # two sets: the stored one and a second one, so the natural order and the per-set expected outputs are exercised
    sets = tmp_path / "model_data"
    for i, src in ((0, MNIST_SETS / "test_data_set_0"), (10, MNIST_SETS / "test_data_set_0")):
        d = sets / f"test_data_set_{i}"
        d.mkdir(parents=True)
        for f in src.iterdir():
            (d / f.name).write_bytes(f.read_bytes())
    res = api.verify(MNIST, "32K", data=sets)
    assert res["pass"] and res["samples"] == 2
    (o,) = res["outputs"]
    t = onnx.TensorProto()
    t.ParseFromString((MNIST_SETS / "test_data_set_0" / "output_0.pb").read_bytes())
    expected = numpy_helper.to_array(t).astype(np.float64)
    t.ParseFromString((MNIST_SETS / "test_data_set_0" / "input_0.pb").read_bytes())
    got = api.run_plan(api.compile_model(MNIST, "32K").plan_bytes, {"Input3": numpy_helper.to_array(t)})
    assert o["expected"]["max_abs_err"] == pytest.approx(np.abs(got.outputs[OUT] - expected).max())
    assert o["expected"]["top1_agreement"] == 1.0
    # one set folder on its own is one sample
    assert api.verify(MNIST, "32K", data=sets / "test_data_set_0")["samples"] == 1


def test_pb_input_file_on_the_command_line():
    """An ONNX TensorProto .pb as --input (np.load used to fail on it with a pickling error)."""
    res = invoke("verify", MNIST, "-m", "32K", "--input", f"Input3={MNIST_SETS / 'test_data_set_0' / 'input_0.pb'}")
    assert res.exit_code == 0, res.output
    assert "pass" in res.stdout


def test_npz_of_stacked_samples_and_expected_outputs(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, size=(5, 1, 49, 10, 1)).astype(np.int8)
    ort = [api.run_onnxruntime(KWS, {"input_1": x[i]})["Identity"] for i in range(5)]
    npz = tmp_path / "kws.npz"
    np.savez(npz, input_1=x, Identity=np.concatenate(ort))
    res = invoke("verify", KWS, "-m", "32K", "--data", npz, "--json")
    assert res.exit_code == 0, res.output
    j = json.loads(res.stdout)
    (o,) = j["outputs"]
    assert j["samples"] == 5 and o["dtype"] == "int8" and o["classifier"]
    assert o["max_lsb"] <= 1 and o["reference_bit_exact"]
    assert o["expected"]["max_lsb"] == o["max_lsb"]  # the expected outputs are ONNX Runtime's
    assert set(o) >= {"max_abs_err", "rmse", "mae", "l2r", "cosine", "max_lsb", "top1_agreement", "reference",
                      "expected", "failed_samples", "pass"}
    res = invoke("verify", KWS, "-m", "32K", "--data", npz, "--samples", "2", "--json")
    assert json.loads(res.stdout)["samples"] == 2


@pytest.mark.parametrize("arrays, words", [
    ({"nope": np.zeros((1, 1, 28, 28), np.float32)}, "name no graph input"),
    ({"Input3": np.zeros((2, 1, 28, 28), np.float32), OUT: np.zeros((3, 10), np.float32)}, "different numbers"),
    ({"Input3": np.zeros((1, 1, 27, 28), np.float32)}, "expected [1, 1, 28, 28]"),
])
def test_bad_npz_is_one_line_exit_2(tmp_path, arrays, words):
    npz = tmp_path / "bad.npz"
    np.savez(npz, **arrays)
    res = invoke("verify", MNIST, "-m", "32K", "--data", npz)
    assert res.exit_code == 2, res.output
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and words in err[0] and "bad.npz" in err[0]


def test_samples_with_one_given_input_is_refused():
    res = invoke("verify", MNIST, "-m", "32K", "--samples", "3",
                 "--input", f"Input3={MNIST_SETS / 'test_data_set_0' / 'input_0.pb'}")
    assert res.exit_code == 2 and res.stderr.startswith("error: --input gives one sample")


def test_does_not_fit_has_its_own_exit_code():
    res = invoke("verify", MNIST, "-m", "1K")
    assert res.exit_code == EXIT_VERIFY_NO_FIT == 4
    assert res.stderr.strip().startswith("error: does not fit")
    res = invoke("verify", MNIST, "-m", "1K", "--json")
    j = json.loads(res.stdout)
    assert j.pop("tool")["name"] == "tigris" and j.pop("schema") >= 1 and j.pop("command") == "verify"  # envelope
    assert res.exit_code == 4 and j == {
        "pass": False, "fits": False, "error": res.stderr.strip()[len("error: "):], "exit": 4}


def test_mismatch_is_exit_1(monkeypatch):
    """A reference that disagrees with the C runtime (here ONNX Runtime's outputs shifted by 1) is a mismatch in
    every sample, exit 1 (and only a mismatch is 1)."""
    real = api.run_onnxruntime

    def shifted(*a, **k):
        return {n: v + 1.0 for n, v in real(*a, **k).items()}

    monkeypatch.setattr(api, "run_onnxruntime", shifted)
    res = invoke("verify", MNIST, "-m", "32K", "--samples", "2", "--json")
    assert res.exit_code == EXIT_MISMATCH == 1, res.output
    (o,) = json.loads(res.stdout)["outputs"]
    assert not o["pass"] and o["failed_samples"] == 2 and o["max_abs_err"] == pytest.approx(1.0, abs=1e-3)


def test_report_prints_full_output_names_on_a_narrow_pipe():
    env = dict(os.environ, COLUMNS="40")
    r = subprocess.run([sys.executable, "-m", "tigris.cli", "verify", str(MNIST), "-m", "32K"], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"output {OUT} (float32 1x10, classifier): pass" in r.stdout
    assert "…" not in r.stdout
    for label in ("max abs error", "RMSE", "MAE", "L2 relative", "cosine", "max LSB", "top-1 agreement"):
        assert label in r.stdout


def test_onnxruntime_refusing_the_model_is_exit_2_in_one_line(monkeypatch):
    """ONNX Runtime failing on the model (a model it cannot load or run) is the model's problem: exit 2 with its
    message in one line, not an internal error."""
    def refuse(*a, **k):
        raise RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running "
                           "DequantizeLinear node. Name:'q' Status Message: scale must be\n a 1D tensor")

    monkeypatch.setattr(api, "_ort_session", refuse)
    res = invoke("verify", MNIST, "-m", "32K")
    assert res.exit_code == 2, res.output
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ONNX Runtime refuses the model") and str(MNIST) in err[0]
    assert "scale must be a 1D tensor" in err[0]
