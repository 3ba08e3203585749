"""I/O inside the arena on an emulated Cortex-M4F: `codegen --io in-arena --format app` firmware reads its input file
straight into the input's home in the arena, runs with tgrs_run_in_place (no I/O buffers in the image) and writes
the output from its home; the bytes must equal the host runtime's (stored form). The same plan built with separate
I/O buffers must not link the in-arena code (io_arena.c is out of line, so --gc-sections drops it)."""
from __future__ import annotations

from pathlib import Path

from cm_fixtures import board_objs, harness  # noqa: F401  (fixtures)

TEST_MODELS_DIR = Path(__file__).resolve().parents[1] / "models"


def test_in_arena_firmware_matches_host_and_separate_firmware_does_not_link_it(harness, board_objs, tmp_path):
    from tigris import api
    from tigris.host import Session

    model = TEST_MODELS_DIR / "kws_dscnn_int8.onnx"
    prep = api.prepare(str(model))
    plan = api.compile_model(str(model), "24K", compression="lz4", prepared=prep).plan_bytes
    s = Session(plan)
    inputs = api.random_inputs(prep, seed=5)
    host = s.run(inputs)
    s_in, s_out = s.inputs[0], s.outputs[0]
    expected = s._flip(s_out, s._to_caller(s_out, host.outputs[s_out.name]))
    objs = board_objs["mps2-an386"] / "in_arena"
    elf = harness.build_plan_app(plan, "mps2-an386", tmp_path / "in_arena", obj_dir=objs, opt="-Os",
                                 io="in-arena")
    (tmp_path / "in0.bin").write_bytes(s._flip(s_in, s._to_caller(s_in, inputs[s_in.name])))
    r = harness.run("mps2-an386", elf, ["in0.bin", "out0.bin"], cwd=tmp_path, timeout_s=300)
    assert r.returncode == 0, r.console
    assert (tmp_path / "out0.bin").read_bytes() == expected
    assert r.report["fast_peak"] == host.fast_peak and r.report["slow_peak"] == host.slow_peak
    linked = harness.linked_sizes((elf.parent / "model.map").read_text())
    assert any("src_io_arena" in k for k in linked), sorted(linked)
    sep = harness.build_plan_app(plan, "mps2-an386", tmp_path / "separate", obj_dir=objs, opt="-Os")
    linked_sep = harness.linked_sizes((sep.parent / "model.map").read_text())
    assert any("src_exec" in k for k in linked_sep)  # the map was read: the check below can fail
    assert not any("src_io_arena" in k for k in linked_sep), sorted(linked_sep)
