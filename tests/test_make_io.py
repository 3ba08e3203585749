"""examples/cortex-m/make_io.py writes the firmware's input files in the caller form of tigris.h and the outputs the
host runtime gives for them (the QEMU run of the example README compares against these: tests/cortex_m)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from tigris import api
from tigris.host import Session
from tigris.samples import read_pb

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "examples" / "cortex-m" / "make_io.py"
MNIST = REPO / "examples" / "mnist-8.onnx"
PB = REPO / "tests" / "models" / "mnist-8_data" / "test_data_set_0" / "input_0.pb"


def test_pb_input_and_host_expected_output(tmp_path):
    plan = tmp_path / "mnist.tgrs"
    plan.write_bytes(api.compile_model(MNIST, "32K").plan_bytes)
    r = subprocess.run([sys.executable, str(SCRIPT), str(plan), "-o", str(tmp_path / "io"), "--input",
                        f"Input3={PB}"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    s = Session(plan.read_bytes())
    x = read_pb(PB)[1]
    # float32 NCHW 1x1x28x28 is stored NHWC: with one channel the bytes are the same, the length is 28*28*4
    assert (tmp_path / "io" / "input0.bin").read_bytes() == s.caller_bytes("Input3", x) == x.tobytes()
    y = s.run({"Input3": x}).outputs["Plus214_Output_0"]
    assert (tmp_path / "io" / "expected0.bin").read_bytes() == y.astype(np.float32).tobytes()


def test_bad_input_is_one_line_exit_2(tmp_path):
    plan = tmp_path / "mnist.tgrs"
    plan.write_bytes(api.compile_model(MNIST, "32K").plan_bytes)
    bad = tmp_path / "x.npy"
    np.save(bad, np.zeros((1, 1, 27, 28), np.float32))
    r = subprocess.run([sys.executable, str(SCRIPT), str(plan), "-o", str(tmp_path / "io"), "--input",
                        f"Input3={bad}"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1
