"""Plans packed for the Cortex-M4 (`--target cortex-m4`, docs/format.md "Weight arrangements") on the emulated
cores: on the Cortex-M4F (mps2-an386) the DSP kernels read the arranged weights and every output is the host
runtime's bytes, which equal the generic plan's (the host reads the arrangement with plain readers, checked
bit-exact against the NumPy reference in tests/emit/test_arrangements.py); the Cortex-M55 (mps3-an547) and a
Cortex-M4 build forced to the plain loops read no Cortex-M4 arrangement, so their init refuses the packed plan with
TGRS_ERR_TARGET before anything runs. The fc shapes are those of test_kernel_variants.py: row counts that leave 1-3
rows past the last block of four, K below, at and around multiples of 4, several input rows, tiny and big scales."""
from __future__ import annotations

from pathlib import Path

import pytest

from cm_fixtures import board_objs, harness  # noqa: F401  (fixtures)
from test_kernel_variants import CASES, _plan

REPO = Path(__file__).resolve().parents[2]
FC_CASES = [k for k in CASES if k.startswith("fc_")]


def _run(harness, board_objs, tmp_path: Path, plan: bytes, x: bytes, board: str, cflags: str = "", tag: str = "t"):
    elf = harness.build_plan_app(plan, board, tmp_path / "fw", obj_dir=board_objs[board] / f"arrange-{tag}",
                                 cflags=cflags)
    (tmp_path / "in0.bin").write_bytes(x)
    return harness.run(board, elf, ["in0.bin", "out0.bin"], cwd=tmp_path, timeout_s=120)


@pytest.mark.parametrize("key", FC_CASES)
def test_packed_fc_on_cortex_m4_matches_host_and_generic(harness, board_objs, tmp_path, key):
    from tigris.emit.reader import read_plan

    plan, x, expect = _plan(key, tmp_path, "cortex-m4")
    generic, gx, gexpect = _plan(key, tmp_path)
    assert x == gx and expect == gexpect  # the host runs the packed plan with the generic plan's bytes
    packed = bool(read_plan(plan).arrangements())
    assert packed == (CASES[key].oc >= 4 and CASES[key].c >= 4), key  # packed exactly when a block of 4 exists
    r = _run(harness, board_objs, tmp_path, plan, x, "mps2-an386")
    assert r.returncode == harness.EXIT_OK, r.console
    assert (tmp_path / "out0.bin").read_bytes() == expect


@pytest.mark.parametrize("board,cflags", [("mps3-an547", ""), ("mps2-an386", "-DTGRS_FORCE_PLAIN")])
def test_other_cores_refuse_the_packed_plan(harness, board_objs, tmp_path, board, cflags):
    plan, x, _ = _plan("fc_k37_oc11_n3", tmp_path, "cortex-m4")
    r = _run(harness, board_objs, tmp_path, plan, x, board, cflags, tag="plain" if cflags else "t")
    assert r.returncode == harness.EXIT_RUNTIME, r.console
    assert "TGRS_ERR_TARGET" in r.console


@pytest.mark.parametrize("model", ["tests/models/kws_dscnn_int8.onnx",
                                   "../shared/models/mlperf_tiny/ad_autoencoder_int8.onnx"])
def test_packed_model_on_cortex_m4_matches_host(harness, board_objs, tmp_path, model):
    from tigris import api
    from tigris.host import Session

    path = (REPO / model).resolve()
    if not path.exists():
        pytest.skip(f"needs {model}")
    prep = api.prepare(str(path))
    xip = "autoencoder" in model
    generic = api.compile_model(str(path), "32K", xip=xip, prepared=prep, objective="traffic").plan_bytes
    plan = api.compile_model(str(path), "32K", xip=xip, prepared=prep, target="cortex-m4",
                             objective="traffic").plan_bytes
    assert plan != generic
    s = Session(plan)
    inputs = api.random_inputs(prep, seed=0)
    host = s.run(inputs)
    want = Session(generic).run(inputs).outputs
    elf = harness.build_plan_app(plan, "mps2-an386", tmp_path / "fw", obj_dir=board_objs["mps2-an386"] / "model")
    ins = [f"in{i}.bin" for i in range(len(s.inputs))]
    outs = [f"out{i}.bin" for i in range(len(s.outputs))]
    for name, spec in zip(ins, s.inputs):
        (tmp_path / name).write_bytes(s._to_caller(spec, inputs[spec.name]))
    r = harness.run("mps2-an386", elf, ins + outs, cwd=tmp_path, timeout_s=600)
    assert r.returncode == harness.EXIT_OK, r.console
    for o, spec in zip(outs, s.outputs):
        assert (tmp_path / o).read_bytes() == s._to_caller(spec, host.outputs[spec.name]) == \
            s._to_caller(spec, want[spec.name])
