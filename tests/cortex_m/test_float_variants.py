"""Every float32 multiply-accumulate kernel variant on the emulated cores, against ONNX Runtime and each other.

runtime_c/src/kernels/target.h picks the float loops from the compiler's target (TGRS_FISA): register blocks with
VMLA on the Cortex-M4F's FPU (mps2-an386; conv_fpu.h, dwconv_fpu.h, fc_fpu.h), vector FMA blocks on the Cortex-M55's
MVE-F (mps3-an547; conv_mvef.h, dwconv_mvef.h, fc_mvef.h), the plain C99 loops elsewhere. Each case is a one-op
float model (tests/kernels/mac_cases.py) compiled to a plan and run as firmware on both boards, once with the
variant the target selects and once with -DTGRS_FORCE_PLAIN (the reference loops on the same core). Both outputs
must be within the float kernels' tolerance of ONNX Runtime (1e-5 * max(1, max|ref|), docs/numerics.md), and on the
Cortex-M4F the FPU variant must give exactly the plain variant's bytes: VMLA rounds like the plain loop's
uncontracted multiply and add, and the blocks sum in its order. The shapes are the blocks' edges: channel counts not
a multiple of 4 or 8 (a short weight panel, a depthwise tail), pixel counts not a multiple of 4, 1x1 images, odd
widths, padding on every side (border pixels' own tap tables, windows wider than the image), strides, dilations,
groups, depth multipliers (the plain depthwise), batches, every activation; fc with K below, at and around
multiples of 8 and odd output counts (the two-row lanes' last row alone); and randomized conv and depthwise shapes
(fixed seed).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from cm_fixtures import board_objs, harness  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kernels"))
from mac_cases import MacCase  # noqa: E402

BOARDS = ["mps2-an386", "mps3-an547"]
# The object folder names of test_kernel_variants.py: the same flags, so one session compiles the runtime once.
VARIANTS = {"target": "", "plain": "-DTGRS_FORCE_PLAIN"}


def _cases() -> dict[str, MacCase]:
    c = {
        # pointwise 1x1: K odd / below 8, OC not a multiple of 8 (short panel), pixel counts 1, 2, 3 mod 4, batches
        "pw_k5_oc7_3x5": MacCase("Conv", 1, 5, 3, 5, 7, seed=1),
        "pw_k20_oc17_1x1": MacCase("Conv", 1, 20, 1, 1, 17, act="relu", seed=2),
        "pw_k64_oc16_4x7": MacCase("Conv", 1, 64, 4, 7, 16, act="relu6", seed=3),
        "pw_k35_oc33_n2": MacCase("Conv", 2, 35, 3, 3, 33, seed=4),
        "pw_k1_oc3_nobias": MacCase("Conv", 1, 1, 3, 3, 3, bias=False, seed=5),
        "pw_k300_oc9_2x3": MacCase("Conv", 1, 300, 2, 3, 9, act="relu", seed=6),
        "pw_k8_oc8_s2": MacCase("Conv", 1, 8, 5, 6, 8, strides=(2, 2), seed=7),
        # general convs (im2col): odd channel counts, padding, strides, dilation, groups, Conv1D
        "conv3x3_c3_oc9_s2": MacCase("Conv", 1, 3, 7, 5, 9, kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1),
                                     seed=8),
        "conv10x4_c1_oc64_kws": MacCase("Conv", 1, 1, 13, 7, 64, kernel=(10, 4), strides=(2, 2),
                                        pads=(4, 1, 5, 2), act="relu", seed=9),
        "conv3x3_g2_c8_oc6": MacCase("Conv", 1, 8, 5, 6, 6, group=2, kernel=(3, 3), pads=(1, 0, 1, 2), seed=10),
        "conv2x3_dil_c6_oc11": MacCase("Conv", 1, 6, 6, 7, 11, kernel=(2, 3), dils=(2, 2), pads=(0, 2, 1, 0),
                                       act="relu6", seed=11),
        "conv1d_k5_c7_oc10": MacCase("Conv1D", 1, 7, 11, 1, 10, kernel=(5, 1), pads=(2, 0, 2, 0), seed=12),
        # depthwise: 3x3 / 5x5, channels 8, 16, 64 (whole blocks) and 5, 19, 21, 33 (tails), odd widths, stride 2,
        # dilation, a 1x1 image, windows wider than the image, multiplier 2 (the plain loop), batches
        "dw3x3_c19_w9": MacCase("DepthwiseConv", 1, 19, 6, 9, 19, group=19, kernel=(3, 3), pads=(1, 1, 1, 1),
                                act="relu", seed=13),
        "dw3x3_c64_s2_w7": MacCase("DepthwiseConv", 1, 64, 7, 7, 64, group=64, kernel=(3, 3), strides=(2, 2),
                                   pads=(0, 0, 1, 1), act="relu6", seed=14),
        "dw5x5_c21_w5": MacCase("DepthwiseConv", 1, 21, 5, 5, 21, group=21, kernel=(5, 5), pads=(2, 2, 2, 2),
                                seed=15),
        "dw3x3_c8_1x1": MacCase("DepthwiseConv", 1, 8, 1, 1, 8, group=8, kernel=(3, 3), pads=(1, 1, 1, 1), seed=16),
        "dw5x5_c16_w3": MacCase("DepthwiseConv", 1, 16, 3, 3, 16, group=16, kernel=(5, 5), pads=(2, 2, 2, 2),
                                act="relu", seed=17),
        "dw3x3_c33_n2": MacCase("DepthwiseConv", 2, 33, 4, 3, 33, group=33, kernel=(3, 3), pads=(1, 1, 1, 1),
                                bias=False, seed=18),
        "dw3x3_c24_dil2_w8": MacCase("DepthwiseConv", 1, 24, 7, 8, 24, group=24, kernel=(3, 3), dils=(2, 2),
                                     pads=(2, 1, 2, 2), seed=19),
        "dw3x3_c5_m2": MacCase("DepthwiseConv", 1, 5, 4, 5, 10, group=5, kernel=(3, 3), pads=(1, 1, 1, 1), seed=20),
        "dw3x3_c40_s2_w9": MacCase("DepthwiseConv", 1, 40, 9, 9, 40, group=40, kernel=(3, 3), strides=(2, 2),
                                   pads=(1, 1, 1, 1), act="relu6", seed=21),
        # fully connected: K below, at and around multiples of 8; odd OC; several rows
        "fc_k37_oc11_n3": MacCase("Gemm", 1, 37, 3, 1, 11, act="relu", seed=22),
        "fc_k640_oc12": MacCase("Gemm", 1, 640, 1, 1, 12, seed=23),
        "fc_k1_oc3": MacCase("Gemm", 1, 1, 1, 1, 3, seed=24),
        "fc_k8_oc1_n5": MacCase("Gemm", 1, 8, 5, 1, 1, seed=25),
        "fc_k15_oc9_n2": MacCase("Gemm", 1, 15, 2, 1, 9, seed=26),
        "fc_k1280_oc10": MacCase("Gemm", 1, 1280, 1, 1, 10, seed=27),
    }
    # randomized shapes (fixed seed: the same cases every run)
    rng = np.random.default_rng(2222)
    for i in range(4):
        ch, h, w = int(rng.integers(1, 40)), int(rng.integers(1, 9)), int(rng.integers(1, 10))
        k, s = int(rng.choice([1, 3, 5])), int(rng.integers(1, 3))
        p = k // 2
        act = [None, "relu", "relu6"][i % 3]
        c[f"rand_dw{i}_c{ch}_{h}x{w}_k{k}s{s}"] = MacCase("DepthwiseConv", 1, ch, h, w, ch, group=ch, kernel=(k, k),
                                                          strides=(s, s), pads=(p, p, p, p), act=act, seed=60 + i)
        oc, kc = int(rng.integers(1, 40)), int(rng.choice([1, 3]))
        c[f"rand_conv{i}_c{ch}_oc{oc}_{h}x{w}_k{kc}"] = MacCase("Conv", 1, ch, h, w, oc, kernel=(kc, kc),
                                                                pads=(kc // 2,) * 4, act=act, seed=70 + i)
    return {k: v.build() for k, v in c.items()}


CASES = _cases()
_PLANS: dict[str, tuple] = {}


def _plan(key: str, tmp_dir: Path):
    """Compile the case once (module cache): plan bytes, the input's caller bytes and ONNX Runtime's output."""
    if key not in _PLANS:
        import onnx
        import onnxruntime as ort

        from tigris import api
        from tigris.host import Session

        case = CASES[key]
        path = tmp_dir / f"{key}.onnx"
        m = case.onnx_model()
        del m.graph.output[:]
        m.graph.output.append(onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, case.y_shape()))
        onnx.save(m, str(path))
        comp = api.compile_model(str(path), "256K")
        s = Session(comp.plan_bytes)
        x = case.data["x"].astype(np.float32)
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        ref = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(
            None, {"x": x})[0].astype(np.float32)
        # the reference in the firmware's output byte order (the caller layout the host session writes)
        ref_caller = np.frombuffer(s._to_caller(s.outputs[0], ref), np.float32)
        _PLANS[key] = (comp.plan_bytes, s._to_caller(s.inputs[0], x), ref_caller)
    return _PLANS[key]


@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("key", list(CASES))
def test_float_variant_matches_ort(harness, board_objs, tmp_path, key, board):
    plan, x, ref = _plan(key, tmp_path)
    got = {}
    for variant, flags in VARIANTS.items():
        d = tmp_path / variant
        elf = harness.build_plan_app(plan, board, d / "fw", obj_dir=board_objs[board] / f"variants-{variant}",
                                     cflags=flags)
        (d / "in0.bin").write_bytes(x)
        r = harness.run(board, elf, ["in0.bin", "out0.bin"], cwd=d, timeout_s=120)
        assert r.returncode == harness.EXIT_OK, r.console
        got[variant] = (d / "out0.bin").read_bytes()
    flat = ref.reshape(-1).astype(np.float64)
    tol = 1e-5 * max(1.0, float(np.max(np.abs(flat))))
    for variant, raw in got.items():
        y = np.frombuffer(raw, np.float32).astype(np.float64)
        assert y.size == flat.size
        err = float(np.max(np.abs(y - flat)))
        assert err <= tol, f"{key} on {board} ({variant}): max |err| {err:.3g} > {tol:.3g}"
    if board == "mps2-an386":
        # the FPU variant (VMLA, the plain order) is the plain variant's bits
        assert got["target"] == got["plain"], f"{key}: the FPU variant's bytes differ from the plain loops'"
