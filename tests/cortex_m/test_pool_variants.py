"""The int8 average pool's target variants on the emulated cores, against the host runtime.

target.h picks the per-tap channel sums of the int8 average (TGRS_POOL_ADD_S8): four channels per Helium vector on
the Cortex-M55 (mps3-an547), the plain loop on the Cortex-M4F and with -DTGRS_FORCE_PLAIN. Each case is a one-op
QDQ model (float input quantized, AveragePool, quantized again, dequantized) compiled to a plan and run as firmware
on both boards with both variants; the output must be the host runtime's bytes (tests/kernels/test_pool.py checks
the host against the NumPy reference). The shapes: channel counts that are not a multiple of 4 (the predicated
tail) or above the 32-channel chunk, padding counted in the divisor or not, strides, a 1x1 image, a window as large
as the image (KWS's pool: that one lowers to the GlobalAveragePool kernel with the pool's codes, reducemean_gap rule
6) and one a column short of it, TFLM numerics, and random shapes (fixed seed).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cm_fixtures import BOARDS, VARIANTS, assert_variant_matches_host, board_objs, harness  # noqa: F401



def _cases() -> dict[str, dict]:
    c = {
        "c7_5x6_k3_pad": dict(c=7, h=5, w=6, k=(3, 3), s=(1, 1), pads=(1, 1, 1, 1), cip=0),
        "c37_6x5_k2_s2": dict(c=37, h=6, w=5, k=(2, 2), s=(2, 2), pads=(0, 0, 0, 0), cip=0),
        "c13_4x4_k3_s2_cip": dict(c=13, h=4, w=4, k=(3, 3), s=(2, 2), pads=(1, 1, 1, 1), cip=1),
        "c66_1x1_k1": dict(c=66, h=1, w=1, k=(1, 1), s=(1, 1), pads=(0, 0, 0, 0), cip=0),
        "c64_25x5_whole": dict(c=64, h=25, w=5, k=(25, 5), s=(1, 1), pads=(0, 0, 0, 0), cip=0),
        "c64_25x5_k25x4": dict(c=64, h=25, w=5, k=(25, 4), s=(1, 1), pads=(0, 0, 0, 0), cip=0),
        "c9_5x5_k3_tflm": dict(c=9, h=5, w=5, k=(3, 3), s=(1, 1), pads=(1, 1, 1, 1), cip=0, tflm=True),
    }
    rng = np.random.default_rng(2222)
    for i in range(3):
        ch, h, w = int(rng.integers(1, 70)), int(rng.integers(1, 9)), int(rng.integers(1, 9))
        k = int(rng.integers(1, min(h, w) + 1))
        p = int(rng.integers(0, (k + 1) // 2)) if k > 1 else 0
        c[f"rand{i}_c{ch}_{h}x{w}_k{k}p{p}"] = dict(c=ch, h=h, w=w, k=(k, k), s=(int(rng.integers(1, 3)),) * 2,
                                                   pads=(p, p, p, p), cip=int(rng.integers(0, 2)))
    for i, v in enumerate(c.values()):
        v["seed"] = 70 + i
    return c


CASES = _cases()
_PLANS: dict[str, tuple] = {}


def _model(case: dict):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(case["seed"])
    s_in, zp_in = float(rng.uniform(0.01, 0.1)), int(rng.integers(-100, 100))
    s_out, zp_out = float(s_in * rng.uniform(0.5, 2.0)), int(rng.integers(-100, 100))
    if case.get("tflm"):  # TFLM's average keeps the input's quantization
        s_out, zp_out = s_in, zp_in
    shape = [1, case["c"], case["h"], case["w"]]
    (kh, kw), (sh, sw), (pt, pl, pb, pr) = case["k"], case["s"], case["pads"]
    oshape = [1, case["c"], (case["h"] + pt + pb - kh) // sh + 1, (case["w"] + pl + pr - kw) // sw + 1]
    inits = [numpy_helper.from_array(np.array(s_in, np.float32), "s_in"),
             numpy_helper.from_array(np.array(zp_in, np.int8), "zp_in"),
             numpy_helper.from_array(np.array(s_out, np.float32), "s_out"),
             numpy_helper.from_array(np.array(zp_out, np.int8), "zp_out")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s_in", "zp_in"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s_in", "zp_in"], ["xf"]),
             helper.make_node("AveragePool", ["xf"], ["yf"], kernel_shape=list(case["k"]), strides=list(case["s"]),
                              pads=[pt, pl, pb, pr],
                              count_include_pad=case["cip"]),
             helper.make_node("QuantizeLinear", ["yf", "s_out", "zp_out"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "s_out", "zp_out"], ["y"])]
    g = helper.make_graph(nodes, "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, oshape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    codes = rng.integers(-128, 128, shape).astype(np.float32)
    x = ((codes - np.float32(zp_in)) * np.float32(s_in)).astype(np.float32)  # dequantized codes: exact
    return m, x


def _plan(key: str, tmp_dir: Path):
    """Compile the case once (module cache): plan bytes, the input's caller bytes and the host's output bytes."""
    if key not in _PLANS:
        import onnx

        from tigris import api
        from tigris.host import Session

        m, x = _model(CASES[key])
        path = tmp_dir / f"{key}.onnx"
        onnx.save(m, str(path))
        prep = api.prepare(str(path), numerics="tflm" if CASES[key].get("tflm") else None)
        c = CASES[key]
        # a window over the whole unpadded map is a GlobalAveragePool (reducemean_gap rule 6) with the pool's codes
        whole = tuple(c["k"]) == (c["h"], c["w"]) and not any(c["pads"])
        want = "gap" if whole else "avgpool"
        assert any(lw.kind == want for lw in prep.lowered), f"the pool did not lower to an int8 {want}"
        comp = api.compile_model(str(path), "256K", prepared=prep)
        s = Session(comp.plan_bytes)
        inputs = {s.inputs[0].name: x}
        host = s.run(inputs)
        _PLANS[key] = (comp.plan_bytes, s._to_caller(s.inputs[0], x),
                       s._to_caller(s.outputs[0], host.outputs[s.outputs[0].name]))
    return _PLANS[key]


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("key", list(CASES))
def test_avgpool_variant_matches_host(harness, board_objs, tmp_path, key, board, variant):
    plan, x, expect = _plan(key, tmp_path)
    assert_variant_matches_host(harness, board_objs, tmp_path, key, board, variant, plan, x, expect)
