"""Footprint of the runtime on a Cortex-M4F at -Os, from the link map of real firmware: code size with every kernel
and with the int8 CNN subset, and no dynamic allocation anywhere in the image.

"Every kernel": firmware generated with `kernels="all"` (its op resolver table names every kind). "The int8 CNN
subset": what an int8 CNN's firmware really links: every runtime source given to the build, built int8-only
(-DTGRS_INT8_ONLY: the registry has no float entries, so no float kernel code and no libm) and without halo reuse
(-DTGRS_NO_ROLLING: the plan has no ROLLING unit), without column tiling (-DTGRS_NO_COLS: no COLS unit) and
without the in-place depthwise pieces (-DTGRS_NO_DW_PIECES: no dwconv of the plan runs in place), and the op
resolver
`tigris codegen` generates by default, which names only the plan's kinds. For kws_dscnn_int8 those are conv,
dwconv, gap (its AveragePool over the whole image is a GlobalAveragePool, tigris/passes/reducemean_gap.py rule 6),
fc and softmax (INT8_CNN_PLAN_KINDS below, checked against the image); the loader, the executor with the
accumulating GAP, LZ4 and the unshuffle are always in.

Sizes are the .text input sections of runtime_c/src/** objects the linker kept (--gc-sections), so they count what
a product would flash. The model is the repository's own kws_dscnn_int8 (tests/models), compiled at 32 KiB.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cm_fixtures import assert_feature_off_refuses, board_objs, harness, run_plan  # noqa: F401  (fixtures)

TEST_MODELS_DIR = Path(__file__).resolve().parents[1] / "models"  # small models kept in the repository

KIB = 1024
# The kinds of the kws_dscnn_int8 plan: the int8 CNN subset measured below links exactly their kernels.
INT8_CNN_PLAN_KINDS = ("conv", "dwconv", "gap", "fc", "softmax")


@pytest.fixture(scope="module")
def kws_plan(harness):
    from tigris import api

    return api.compile_model(str(TEST_MODELS_DIR / "kws_dscnn_int8.onnx"), "32K").plan_bytes


@pytest.fixture(scope="module")
def images(harness, kws_plan, board_objs, tmp_path_factory):
    """(elf, map text) of the -Os model firmware with all kernels and with the int8-only int8 CNN subset."""
    out = {}
    from tigris.emit.reader import read_plan
    from tigris.ops import kind

    # The subset's plan has no ROLLING, COLS or OVERWRITE unit, is not ONE_REGION and runs no dwconv in place (at 32K
    # it would not lower the arena, so the planner leaves them out), so its firmware leaves those parts out too.
    from tigris.emit import format as F

    assert not any(u.rolling or u.col_split or u.flags & F.UnitFlag.OVERWRITE for u in read_plan(kws_plan).units)
    assert not read_plan(kws_plan).flags & F.Flag.ONE_REGION
    assert not any(op.kind == "dwconv" and op.params[kind("dwconv").PARAMS.index("ip_rows")]
                   for op in read_plan(kws_plan).ops)
    for label, kernels, cflags in (("all", "all", ""), ("int8", "plan", harness.SUBSET_CFLAGS)):
        d = tmp_path_factory.mktemp(f"size-{label}")
        elf = harness.build_plan_app(kws_plan, "mps2-an386", d, obj_dir=board_objs["mps2-an386"] / "size",
                                     opt="-Os", cflags=cflags, kernels=kernels)
        out[label] = (elf, (elf.parent / "model.map").read_text())
    return out


# The int8 CNN subset's bound is the 16 KiB target; it measures 15,966 B at -Os on Cortex-M4F (DSP kernels, with the
# FC_ROWS4 reader), with the weight-zero-point paths, TFLM's softmax and the maxpool code left out by the op resolver
# (docs/runtime.md "Building and size"). The every-kernel image is over its 32 KiB target (51,134 B: every kind's
# full paths, the element-wise, reduction, unary, matmul, layernorm, cast, convtranspose, slice, depthspace and index
# (ArgMax/TopK/NonMaxSuppression) families, the requantizing int8 Transpose, per-element quantize, the tap-table
# Resize, the Pad modes, any-shape PRelu slopes, the FPU float conv/dwconv/fc blocks, about 1.9 KiB, the rolling
# units' line-buffer moves and loader checks, about 1.1 KiB, and the COLS units' strided band copies, band-relative
# parameters and loader checks (accumulating grids included), about 1.5 KiB, and the in-place depthwise pieces, about
# 0.5 KiB, and the kernels' derive-only path for contexts the loader proved with the float depthwise channel tails,
# about 0.3 KiB, and the loader's proofs of OVERWRITE units and ONE_REGION plans, column-split branch points, the
# whole-image TFLM average and the narrow int8 conv bands, about 4.7 KiB: 58,754 B; then the int8 interpolating
# Resize and the row-band check of the Pad modes among others: 59,468 B; then the int32 accumulator family of int8
# input-channel groups, kernels/acc.c, about 2 KiB, and the int8 inputs of NonMaxSuppression among others: 62,490 B);
# its bound is the measured figure plus a small margin, so growth fails.
EVERY_KERNEL_BOUND = 62 * KIB
INT8_CNN_SUBSET_BOUND = 16 * KIB


def test_runtime_text_with_every_kernel_within_bound(harness, images):
    size = harness.runtime_size(images["all"][1])
    assert 4 * KIB < size.text <= EVERY_KERNEL_BOUND, size  # lower bound: the kernels really were linked and counted


def test_runtime_text_int8_cnn_subset_within_bound(harness, images):
    size = harness.runtime_size(images["int8"][1])
    assert size.text <= INT8_CNN_SUBSET_BOUND, size


def test_op_resolver_links_only_the_plans_kinds(harness, images):
    # What the int8 CNN subset figure contains: the kernels of the plan's kinds and no other kernel entry point or variant.
    from tigris.host.build import KERNELS

    int8, full = _defined_code(images["int8"][0]), _defined_code(images["all"][0])
    entries = {f"tgrs_kernel_{k}" for k in KERNELS}
    sym = {f"tgrs_kernel_{k}_sym" for k in ("conv", "dwconv", "fc")}  # no op of the plan has weight zero points
    onnx = {"tgrs_kernel_softmax_onnx", "tgrs_kernel_gap_onnx"}  # nor TFLM numerics
    assert entries <= full and not (sym | onnx) & full  # the check can fail: the every-kernel image defines them all
    want = {f"tgrs_kernel_{k}" + ("_sym" if f"tgrs_kernel_{k}_sym" in sym else "") +
            ("_onnx" if f"tgrs_kernel_{k}_onnx" in onnx else "") for k in INT8_CNN_PLAN_KINDS}
    assert (entries | sym | onnx) & int8 == want, sorted((entries | sym | onnx) & int8)
    # Nor the other pools and the element-wise kernels.
    others = {"tgrs_maxpool_s8", "tgrs_add_s8", "tgrs_avgpool_s8"}
    assert others <= full and not others & int8, sorted(others & int8)
    # Nor the paths the plan does not need: weight zero points (the _sym entries), TFLM's softmax (the _onnx
    # entry), the maxpool pixel loop, and (in the int8-only build) the float16 weight view of the float checks.
    unused = {"conv_s8_wzp", "dw_s8_wzp", "fc_s8_wzp", "sm_line_tflm", "sm_check_tflm",
              "pool_px_max_s8", "tgrs_f16_view"}
    assert unused <= full and not unused & int8, sorted(unused & int8)


def _defined_code(elf: Path) -> set[str]:
    res = subprocess.run(["arm-none-eabi-nm", "--defined-only", str(elf)], capture_output=True, text=True, check=True)
    return {ln.split()[-1] for ln in res.stdout.splitlines() if len(ln.split()) == 3 and ln.split()[1] in "tTwW"}


def test_int8_only_image_has_no_float_kernels_and_no_libm(harness, images):
    from tigris.host.build import VARIANTS

    int8, full = _defined_code(images["int8"][0]), _defined_code(images["all"][0])
    f32 = {f"tgrs_{v}" for v in VARIANTS if v.endswith("_f32")}
    s8 = {f"tgrs_{v}" for v in VARIANTS if v.endswith(("_s8", "_s8_sym", "_s8_onnx"))}
    # The check can fail: the every-kernel image of the same plan does hold the float variants and expf.
    assert f32 <= full and "expf" in full
    assert not f32 & int8, sorted(f32 & int8)
    assert {"tgrs_conv_s8_sym", "tgrs_dwconv_s8_sym", "tgrs_fc_s8_sym", "tgrs_gap_s8_onnx",
            "tgrs_softmax_s8_onnx"} <= int8 & s8
    libm = sorted(s for s in int8 if s.rstrip("f") in ("exp", "__ieee754_exp", "log", "tanh", "sqrt", "expm1",
                                                          "__ieee754_log", "__ieee754_sqrt", "pow", "floor", "round"))
    assert libm == []


def test_int8_subset_is_smaller_and_still_runs_an_int8_cnn(harness, images, kws_plan, tmp_path):
    from tigris import api
    from tigris.host import Session

    subset, full = harness.runtime_size(images["int8"][1]).text, harness.runtime_size(images["all"][1]).text
    assert 4 * KIB < subset < full  # lower bound: the subset's runtime objects were found in the map and counted
    # The subset must be enough for an int8 CNN: same output bytes as the host runtime.
    prep = api.prepare(str(TEST_MODELS_DIR / "kws_dscnn_int8.onnx"))
    inputs = api.random_inputs(prep, seed=1)
    s = Session(kws_plan)
    host = s.run(inputs)
    (tmp_path / "in0.bin").write_bytes(s._to_caller(s.inputs[0], inputs[s.inputs[0].name]))
    r = harness.run("mps2-an386", images["int8"][0], ["in0.bin", "out0.bin"], cwd=tmp_path, timeout_s=300)
    assert r.returncode == 0, r.console
    assert (tmp_path / "out0.bin").read_bytes() == s._to_caller(s.outputs[0], host.outputs[s.outputs[0].name])


@pytest.mark.parametrize("label", ["all", "int8"])
def test_no_allocator_in_the_image(harness, images, label):
    elf, map_text = images[label]
    assert harness.allocator_symbols(elf) == []
    assert harness.map_mentions_allocator(map_text) == []


def test_allocator_check_catches_malloc(harness, board_objs, tmp_path):
    # Force newlib's malloc into the hello image (-u malloc, with the nosys heap stubs it needs to link): the same
    # checks must flag it, so their silence above means something.
    elf = harness.build("mps2-an386", tmp_path, app="hello", obj_dir=board_objs["mps2-an386"] / "hello",
                        extra_ldflags="-Wl,-u,malloc --specs=nosys.specs -Wl,--defsym=end=_ebss")
    assert "malloc" in harness.allocator_symbols(elf)
    assert "malloc" in harness.map_mentions_allocator((tmp_path / "hello.map").read_text())


def test_no_rolling_firmware_refuses_a_rolling_plan(harness, board_objs, tmp_path):
    # A -DTGRS_NO_ROLLING build must not run a plan that carries halo rows: the generated file stops the build, and
    # a runtime built that way whose firmware skips that guard (a plan swapped in later) refuses it at init.
    from tigris import api
    from tigris.emit.reader import read_plan
    from tigris.host import Session

    plan = api.compile_model(str(TEST_MODELS_DIR / "kws_dscnn_int8.onnx"), "16K").plan_bytes
    assert any(u.rolling for u in read_plan(plan).units)
    prep = api.prepare(str(TEST_MODELS_DIR / "kws_dscnn_int8.onnx"))
    s = Session(plan)
    inputs = api.random_inputs(prep, seed=1)
    host = s.run(inputs)
    x = s._to_caller(s.inputs[0], inputs[s.inputs[0].name])
    assert_feature_off_refuses(harness, board_objs, tmp_path / "norolling", plan, x, "TGRS_NO_ROLLING", "size-nr",
                               build_match="ROLLING", opt="-Os",
                               # its GAP accumulates and its units write over dying inputs
                               cflags=harness.SUBSET_CFLAGS.replace("-DTGRS_NO_ACCUM", "").replace(
                                   "-DTGRS_NO_OVERWRITE", ""))
    # the same plan on a build with halo reuse: the host's bytes
    got = run_plan(harness, board_objs, tmp_path / "rolling", plan, "mps2-an386", x, "size-r", opt="-Os",
                   cflags=harness.INT8_ONLY_CFLAGS)
    assert got == s._to_caller(s.outputs[0], host.outputs[s.outputs[0].name])
