"""Every int8 multiply-accumulate kernel variant on the emulated cores, against the host runtime.

runtime_c/src/kernels/target.h picks the inner loops from the compiler's target: the DSP extension on the
Cortex-M4F (mps2-an386), Helium on the Cortex-M55 (mps3-an547), the plain C99 reference elsewhere. Each case here is
a one-op int8 model (tests/kernels/mac_cases.py) compiled to a plan and run as firmware on both boards, once with the
variant the target selects and once with -DTGRS_FORCE_PLAIN (the reference loops on the same core); the output must
be the host runtime's bytes, which tests/kernels check bit-exact against the NumPy reference. The shapes are the
edges the fast paths treat specially: channel counts and patch lengths that are not multiples of 4 or 16, 1x1
images, odd widths, padding on every side, strides, groups, depth multipliers, 3x3 and 5x5 depthwise windows, and
requantization scales outside the 32-bit form's range (big and tiny), and both numerics (onnx, tflm); for fc, odd
output counts (the two-row loops' last row alone) and K below, at and around multiples of 4 and 16; and a few
randomized depthwise and conv shapes (fixed seed); for Helium's depthwise, pairs of interior pixels over 8-channel
halves with channel tails, vertical pairs (border columns, a column of padding only), odd tap counts, weights of -128
(no two-tap int16 sums), and shifts of -1 and below -31 (the wider vector requantization).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from cm_fixtures import BOARDS, VARIANTS, assert_variant_matches_host, board_objs, harness  # noqa: F401

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kernels"))
from mac_cases import MacCase  # noqa: E402



def _cases() -> dict[str, MacCase]:
    c = {
        # pointwise 1x1: K not a multiple of 4, a 1x1 image, a pixel count that is not a multiple of 4
        "pw_k5_oc7_3x5": MacCase("Conv", 1, 5, 3, 5, 7, seed=1),
        "pw_k20_oc17_1x1": MacCase("Conv", 1, 20, 1, 1, 17, act="relu", seed=2),
        "pw_k64_oc16_4x7": MacCase("Conv", 1, 64, 4, 7, 16, act="relu6", seed=3),
        "pw_k35_oc33_big": MacCase("Conv", 1, 35, 3, 3, 33, scale_mode="big", seed=4),
        "pw_k19_oc5_tiny_n2": MacCase("Conv", 2, 19, 2, 3, 5, scale_mode="tiny", seed=5),
        "pw_k1_oc3": MacCase("Conv", 1, 1, 3, 3, 3, seed=6),
        # general convs: im2col across taps of odd channel counts, padding, strides, dilation, groups
        "conv3x3_c3_oc9_s2": MacCase("Conv", 1, 3, 7, 5, 9, kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1),
                                     seed=7),
        "conv10x4_c1_oc8_kws": MacCase("Conv", 1, 1, 13, 7, 8, kernel=(10, 4), strides=(2, 2), pads=(4, 1, 5, 2),
                                       act="relu", seed=8),
        "conv3x3_g2_c8_oc6": MacCase("Conv", 1, 8, 5, 6, 6, group=2, kernel=(3, 3), pads=(1, 0, 1, 2), seed=9),
        "conv2x3_dil_c6_oc11": MacCase("Conv", 1, 6, 6, 7, 11, kernel=(2, 3), dils=(2, 2), pads=(0, 2, 1, 0),
                                       seed=10),
        "conv1d_k5_c7_oc10": MacCase("Conv1D", 1, 7, 11, 1, 10, kernel=(5, 1), pads=(2, 0, 2, 0), seed=11),
        # depthwise: 3x3 and 5x5, channels not multiples of 4 or 16, odd widths, stride 2, multiplier 2, 1x1 image
        "dw3x3_c19_w9": MacCase("DepthwiseConv", 1, 19, 6, 9, 19, group=19, kernel=(3, 3), pads=(1, 1, 1, 1),
                                act="relu", seed=12),
        "dw3x3_c64_s2_w7": MacCase("DepthwiseConv", 1, 64, 7, 7, 64, group=64, kernel=(3, 3), strides=(2, 2),
                                   pads=(0, 0, 1, 1), seed=13),
        "dw5x5_c21_w5": MacCase("DepthwiseConv", 1, 21, 5, 5, 21, group=21, kernel=(5, 5), pads=(2, 2, 2, 2),
                                seed=14),
        "dw3x3_c5_m2_1x1": MacCase("DepthwiseConv", 1, 5, 1, 1, 10, group=5, kernel=(3, 3), pads=(1, 1, 1, 1),
                                   seed=15),
        "dw3x3_c33_tiny": MacCase("DepthwiseConv", 2, 33, 4, 3, 33, group=33, kernel=(3, 3), pads=(1, 1, 1, 1),
                                  scale_mode="tiny", seed=16),
        # fully connected: K not a multiple of 4 or 16, several rows
        "fc_k37_oc11_n3": MacCase("Gemm", 1, 37, 3, 1, 11, act="relu", seed=17),
        "fc_k640_oc12": MacCase("Gemm", 1, 640, 1, 1, 12, seed=18),
        "fc_k3_oc40_big": MacCase("Gemm", 1, 3, 2, 1, 40, scale_mode="big", seed=19),
        # the two-row loops: an odd OC (one row left), K below 4, K = 4 exactly, K one short of 16, K a multiple of
        # 16 and of neither, tiny scales
        "fc_k1_oc3": MacCase("Gemm", 1, 1, 1, 1, 3, seed=23),
        "fc_k4_oc1_n5": MacCase("Gemm", 1, 4, 5, 1, 1, seed=24),
        "fc_k15_oc9_n2": MacCase("Gemm", 1, 15, 2, 1, 9, act="relu", seed=25),
        "fc_k48_oc6": MacCase("Gemm", 1, 48, 1, 1, 6, seed=26),
        "fc_k83_oc13_tiny": MacCase("Gemm", 1, 83, 2, 1, 13, scale_mode="tiny", seed=27),
        # TFLite Micro's double rounding (--numerics tflm): the fast paths' per-channel fallback
        "pw_k20_oc9_tflm": MacCase("Conv", 1, 20, 3, 3, 9, seed=20),
        "dw3x3_c19_tflm": MacCase("DepthwiseConv", 1, 19, 5, 5, 19, group=19, kernel=(3, 3), pads=(1, 1, 1, 1),
                                  seed=21),
        "fc_k37_oc11_tflm": MacCase("Gemm", 1, 37, 2, 1, 11, seed=22),
    }
    # the fused depthwise paths (a full 8-channel block, 16 + 8, a 1x1 image whose only in-image tap is the centre,
    # a 5x5 window wider than the image) and a patch longer than 256 values
    c.update({
        "dw3x3_c8_w7": MacCase("DepthwiseConv", 1, 8, 5, 7, 8, group=8, kernel=(3, 3), pads=(1, 1, 1, 1), act="relu",
                               seed=23),
        "dw3x3_c24_s2_w9": MacCase("DepthwiseConv", 1, 24, 6, 9, 24, group=24, kernel=(3, 3), strides=(2, 2),
                                   pads=(1, 1, 1, 1), seed=24),
        "dw3x3_c8_1x1": MacCase("DepthwiseConv", 1, 8, 1, 1, 8, group=8, kernel=(3, 3), pads=(1, 1, 1, 1), seed=25),
        "dw5x5_c12_w3": MacCase("DepthwiseConv", 1, 12, 3, 3, 12, group=12, kernel=(5, 5), pads=(2, 2, 2, 2),
                                seed=26),
        "pw_k300_oc6_2x3": MacCase("Conv", 1, 300, 2, 3, 6, seed=27),
    })
    # the Helium depthwise pairs of interior pixels (8-channel halves and a tail, two-tap int16 steps and an odd
    # tap, single taps when a weight is -128), the wider vector requantization (a shift of -1 next to smaller ones;
    # the tiny cases above give shifts below -31), a 5x5 window at stride 2
    c.update({
        "dw3x3_c13_w9_half": MacCase("DepthwiseConv", 1, 13, 5, 9, 13, group=13, kernel=(3, 3), pads=(1, 1, 1, 1),
                                     scale_mode="half", seed=60),
        "dw3x3_c24_w8_wmin": MacCase("DepthwiseConv", 1, 24, 4, 8, 24, group=24, kernel=(3, 3), pads=(1, 1, 1, 1),
                                     act="relu", w_min=True, seed=61),
        "dw5x5_c16_s2_w11": MacCase("DepthwiseConv", 1, 16, 9, 11, 16, group=16, kernel=(5, 5), strides=(2, 2),
                                    pads=(2, 2, 2, 2), act="relu6", seed=62),
        "dw3x3_c40_w6_nopad": MacCase("DepthwiseConv", 1, 40, 4, 6, 40, group=40, kernel=(3, 3), seed=63),
        # vertical pairs: border columns, a column whose taps are all padding (pads wider than the window), odd row
        # counts, a channel tail
        "dw3x3_c11_pad3_6x2": MacCase("DepthwiseConv", 1, 11, 7, 2, 11, group=11, kernel=(3, 3), pads=(1, 3, 1, 3),
                                      seed=66),
        "dw3x3_c24_s2_9x5": MacCase("DepthwiseConv", 1, 24, 9, 5, 24, group=24, kernel=(3, 3), strides=(2, 2),
                                    pads=(1, 1, 1, 1), act="relu", w_min=True, seed=67),
        # the 27-value patch of a 3x3 window over 3 channels against eight channels per patch load (two blocks)
        "conv3x3_c3_oc16_w7": MacCase("Conv", 1, 3, 6, 7, 16, kernel=(3, 3), pads=(1, 1, 1, 1), act="relu", seed=68),
        "pw_k24_oc10_half": MacCase("Conv", 1, 24, 3, 5, 10, scale_mode="half", seed=64),
        "conv3x3_c3_oc8_s2_half": MacCase("Conv", 1, 3, 9, 7, 8, kernel=(3, 3), strides=(2, 2), pads=(0, 0, 1, 1),
                                          scale_mode="half", seed=65),
    })
    # randomized shapes (fixed seed: the same cases every run): channel counts, widths and windows drawn at random
    rng = np.random.default_rng(1111)
    for i in range(4):
        ch, h, w = int(rng.integers(1, 40)), int(rng.integers(1, 9)), int(rng.integers(1, 10))
        k, s = int(rng.choice([1, 3, 5])), int(rng.integers(1, 3))
        p = k // 2
        c[f"rand_dw{i}_c{ch}_{h}x{w}_k{k}s{s}"] = MacCase("DepthwiseConv", 1, ch, h, w, ch, group=ch, kernel=(k, k),
                                                          strides=(s, s), pads=(p, p, p, p), seed=40 + i)
        oc, kc = int(rng.integers(1, 40)), int(rng.choice([1, 3]))
        c[f"rand_conv{i}_c{ch}_oc{oc}_{h}x{w}_k{kc}"] = MacCase("Conv", 1, ch, h, w, oc, kernel=(kc, kc),
                                                                pads=(kc // 2,) * 4, act="relu", seed=50 + i)
    # randomized fully connected shapes (also run packed FC_ROWS4 by test_packed_plans.py): any K, OC and rows
    rng = np.random.default_rng(2222)
    for i in range(3):
        k, oc, n = int(rng.integers(1, 90)), int(rng.integers(1, 30)), int(rng.integers(1, 4))
        c[f"fc_rand{i}_k{k}_oc{oc}_n{n}"] = MacCase("Gemm", 1, k, n, 1, oc, seed=60 + i)
    for v in c.values():
        v.int8 = True
    return {k: v.build() for k, v in c.items()}


CASES = _cases()
_PLANS: dict[str, tuple] = {}


def _plan(key: str, tmp_dir: Path, target: str | None = None):
    """Compile the case once (module cache): plan bytes, the input's caller bytes and the host's output bytes.
    ``target``: compile for that core (its weight arrangements; tests/cortex_m/test_packed_plans.py)."""
    if (key, target) not in _PLANS:
        import onnx
        from onnx import TensorProto, helper

        from tigris import api
        from tigris.host import Session

        case = CASES[key]
        path = tmp_dir / f"{key}.onnx"
        m = case.onnx_model()
        # As exported int8 models are: a float input quantized at the boundary, a float output dequantized.
        g = m.graph
        for node in g.node:
            node.input[:] = ["xq" if i == "x" else i for i in node.input]
            node.output[:] = ["yq" if o == "y" else o for o in node.output]
        nodes = [helper.make_node("QuantizeLinear", ["x", "s_in", "zp_in"], ["xq"]), *g.node,
                 helper.make_node("DequantizeLinear", ["yq", "s_out", "zp_out"], ["y"])]
        del g.node[:]
        g.node.extend(nodes)
        del g.input[:]
        g.input.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, case.x_shape()))
        del g.output[:]
        g.output.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, case.y_shape()))
        onnx.save(m, str(path))
        prep = api.prepare(str(path), numerics="tflm" if key.endswith("_tflm") else None)
        comp = api.compile_model(str(path), "256K", prepared=prep, target=target, objective="traffic")
        s = Session(comp.plan_bytes)
        d = case.data
        # Codes dequantized exactly: quantizing them again gives the case's int8 input.
        xf = ((d["x"].astype(np.float32) - np.float32(d["zp_in"])) * np.float32(d["s_in"])).astype(np.float32)
        inputs = {s.inputs[0].name: xf}
        host = s.run(inputs)
        _PLANS[key, target] = (comp.plan_bytes, s._to_caller(s.inputs[0], inputs[s.inputs[0].name]),
                               s._to_caller(s.outputs[0], host.outputs[s.outputs[0].name]))
    return _PLANS[key, target]


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("key", list(CASES))
def test_variant_matches_host(harness, board_objs, tmp_path, key, board, variant):
    plan, x, expect = _plan(key, tmp_path)
    assert_variant_matches_host(harness, board_objs, tmp_path, key, board, variant, plan, x, expect)
