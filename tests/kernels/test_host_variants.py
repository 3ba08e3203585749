"""Every host (x86-64) variant of the multiply-accumulate kernels against the NumPy reference and against each other.

runtime_c/src/kernels/target.h picks the int8 inner loops from the compiler's target; on the host that is the AVX2
variant when the build has -mavx2 (tigris/host/build.py adds it on a CPU with AVX2) and the plain C99 loops otherwise.
Each variant is built here from the same sources (plain: -DTGRS_FORCE_PLAIN; generic: the compiler's default target,
SSE2 vectorization of the plain loops; avx2: -mavx2 -mfma, the host build's flags on an AVX2 CPU; avxvnni: with
-mavxvnni too) and run on random shapes whose edges the vector paths treat specially: channel counts and patch
lengths that are not multiples of 8 or 16 (and below 16), 1x1 images, odd widths, padding, strides, dilation, groups,
depth multipliers, big, tiny and near-one-half requantization scales and both numerics.
int8 outputs must equal the reference bit for bit. Float outputs must be within the kernel tests' tolerance of the
reference; the generic variant's must also equal the plain variant's bits (GCC's vectorization of the plain loops
neither reassociates nor fuses), while the AVX2 float kernels use fused multiply-adds and may differ in the last bits.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

from harness import HOST_VARIANTS, build_kernels, runnable_host_variants  # noqa: E402
from mac_cases import MacCase  # noqa: E402
from tigris.host.build import _cpu_has_avx2, _cpu_has_avx512, _cpu_has_avxvnni  # noqa: E402
from tigris.ops import kind, lower  # noqa: E402

SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SOURCES = ["conv.c", "dwconv.c", "fc.c"]


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    d = tmp_path_factory.mktemp("host_variants")
    out = {}
    for name in runnable_host_variants():  # a level this CPU lacks is not run; the other variants still are
        out[name] = build_kernels(SOURCES, d / name, extra_flags=HOST_VARIANTS[name])
    return out


def test_avx2_variant_runs_where_the_cpu_has_it(libs):
    if not _cpu_has_avx2():
        pytest.skip("this CPU has no AVX2: only the plain and generic variants can run")
    assert "avx2" in libs
    if _cpu_has_avxvnni():
        assert "avxvnni" in libs
    if _cpu_has_avx512():
        assert "avx512" in libs


@st.composite
def cases(draw, op_type: str, int8: bool | None = None) -> MacCase:
    int8 = draw(st.booleans()) if int8 is None else int8
    common = dict(act=draw(st.sampled_from([None, "relu", "relu6"])), bias=draw(st.booleans()), int8=int8,
                  scale_mode=draw(st.sampled_from(["normal", "normal", "normal", "big", "tiny", "half"])),
                  seed=draw(st.integers(0, 2**31 - 1)), numerics=draw(st.sampled_from(["onnx", "onnx", "tflm"])))
    if op_type == "Gemm":
        return MacCase(op_type="Gemm", n=1, c=draw(st.integers(1, 90)), h=draw(st.integers(1, 5)), w=1,
                       oc=draw(st.integers(1, 40)), **common).build()
    pointwise = op_type == "Conv" and draw(st.booleans())
    kh, kw = (1, 1) if pointwise else (draw(st.integers(1, 5)), draw(st.integers(1, 4)))
    sh, sw = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    dh, dw = (1, 1) if pointwise else (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pads = (0, 0, 0, 0) if pointwise else tuple(draw(st.integers(0, 2)) for _ in range(4))
    span_h, span_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    h = draw(st.integers(max(1, span_h - pads[0] - pads[2]), max(1, span_h - pads[0] - pads[2]) + 7))
    w = draw(st.integers(max(1, span_w - pads[1] - pads[3]), max(1, span_w - pads[1] - pads[3]) + 7))
    if op_type == "DepthwiseConv":
        c = draw(st.integers(1, 70))
        m = draw(st.sampled_from([1, 1, 1, 1, 2]))
        oc, group = c * m, c
    else:
        group = draw(st.sampled_from([1, 1, 1, 2]))
        c = group * draw(st.integers(1, 48))
        oc = group * draw(st.integers(1, 60))  # up to eight float panels (the avx512 level's groups of four and six)
    return MacCase(op_type=op_type, n=draw(st.sampled_from([1, 1, 2])), c=c, h=h, w=w, oc=oc, group=group,
                   kernel=(kh, kw), strides=(sh, sw), dils=(dh, dw), pads=pads, **common).build()


def _check(libs, case: MacCase):
    g = case.graph()
    low = lower(g, g.ops[0])
    ref = case.out_view()
    kind(low.kind).reference(low, [case.in_view()], ref)
    got = {}
    for name, lib in libs.items():
        out = case.out_view()
        assert lib.run(low, [case.in_view()], out) == lib.const["TGRS_OK"], name
        got[name] = out.data
        if case.int8:
            np.testing.assert_array_equal(out.data, ref.data, err_msg=name)
        else:
            tol = 1e-5 * max(1.0, float(np.abs(ref.data).max(initial=0.0)))
            err = float(np.abs(out.data.astype(np.float64) - ref.data.astype(np.float64)).max(initial=0.0))
            assert err <= tol, f"{name}: max abs error {err} > {tol}"
    for name, data in got.items():
        if case.int8 or name == "generic":
            np.testing.assert_array_equal(data, got["plain"], err_msg=f"{name} differs from plain")
    if "avx512" in got and "avx2" in got:  # 16-lane panel groups keep every output's fused multiply-adds in order
        np.testing.assert_array_equal(got["avx512"], got["avx2"], err_msg="avx512 differs from avx2")


@settings(max_examples=150, **SETTINGS)
@given(case=cases("Conv"))
def test_conv_variants(libs, case):
    _check(libs, case)


@settings(max_examples=120, **SETTINGS)
@given(case=cases("DepthwiseConv"))
def test_dwconv_variants(libs, case):
    _check(libs, case)


@settings(max_examples=80, **SETTINGS)
@given(case=cases("Gemm"))
def test_fc_variants(libs, case):
    _check(libs, case)


@pytest.mark.parametrize("op_type,c,h,w,oc,kernel,pads", [
    ("Conv", 64, 5, 5, 64, (1, 1), (0, 0, 0, 0)),      # pointwise, K a multiple of 16
    ("Conv", 17, 1, 1, 3, (1, 1), (0, 0, 0, 0)),       # K = 17: one chunk and a 1-value masked tail, 1x1 image
    ("Conv", 3, 9, 7, 8, (3, 3), (1, 1, 1, 1)),        # K = 27, padded
    ("Conv", 1, 13, 7, 9, (10, 4), (4, 1, 5, 2)),      # K = 40 (the KWS first layer), odd channel count
    ("Conv", 8, 4, 3, 5, (1, 1), (0, 0, 0, 0)),        # K = 8 < 16
    ("Conv", 16, 5, 6, 29, (3, 3), (1, 1, 1, 1)),      # four float panels (two calls of two), 29 = 3 * 8 + 5
    ("Conv", 5, 4, 5, 55, (1, 1), (0, 0, 0, 0)),       # seven float panels (3 + 2 + 2), K = 5
    ("Conv", 9, 3, 5, 13, (1, 1), (0, 0, 0, 0)),       # K = 9: two 4-byte rows and a 1-byte tail; 8 + 5 channels
    ("Conv", 2, 3, 3, 600, (1, 1), (0, 0, 0, 0)),
    ("Conv", 12, 6, 5, 48, (3, 3), (1, 1, 1, 1)),      # six float panels: one 16-lane group of six (avx512)
    ("Conv", 7, 5, 3, 76, (1, 1), (0, 0, 0, 0)),       # ten panels (6 + 4), 76 = 9 * 8 + 4: a partial last group      # K = 2 (a tail only); 600 channels: two bias chunks (512)
    ("Conv", 10, 3, 4, 16, (3, 3), (1, 1, 1, 1)),      # K = 90: taps that start inside a 4-byte row, 2-byte tail
    ("DepthwiseConv", 64, 6, 5, 64, (3, 3), (1, 1, 1, 1)),
    ("DepthwiseConv", 8, 7, 9, 8, (3, 3), (1, 1, 1, 1)),
    ("DepthwiseConv", 29, 5, 5, 29, (5, 5), (2, 2, 2, 2)),  # 25 taps: an odd last tap; 16 + 8 + 5 channels
    ("DepthwiseConv", 7, 1, 1, 7, (3, 3), (1, 1, 1, 1)),
    ("DepthwiseConv", 1, 9, 7, 8, (3, 3), (1, 1, 1, 1)),    # one input channel, multiplier 8 (TFLite's first conv)
    ("DepthwiseConv", 1, 5, 6, 21, (3, 3), (0, 1, 1, 0)),   # multiplier 21: 16 + 5 channels
])
@pytest.mark.parametrize("int8", [True, False])
def test_edge_shapes(libs, op_type, c, h, w, oc, kernel, pads, int8):
    group = c if op_type == "DepthwiseConv" else 1
    # "half": a channel with shift -1, outside the 32-bit form (the vector kernels' 64-bit requantization)
    for seed, mode, nm in ((1, "normal", "onnx"), (2, "big", "onnx"), (3, "tiny", "tflm"), (4, "half", "onnx")):
        _check(libs, MacCase(op_type, 1, c, h, w, oc, group=group, kernel=kernel, pads=pads, act="relu", int8=int8,
                             scale_mode=mode, seed=seed, numerics=nm).build())
