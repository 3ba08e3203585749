"""conv and dwconv kinds: NumPy reference vs ONNX Runtime, C kernels vs the reference, banded execution, errors.

Tolerances (stated once, used below):
* float reference vs ORT: max abs error <= 1e-5 * max(1, max|ref|);
* float C vs reference:   max abs error <= 1e-5 * max(1, max|ref|) (float32 accumulation vs float64);
* int8 reference vs ORT:  <= 1 LSB (ORT rounds the float result half to even; we requantize in integers);
* int8 C vs reference:    bit-exact;
* banded vs whole:        bit-exact, float included (each output pixel's arithmetic does not depend on the band).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

from harness import build_kernels, split_rows  # noqa: E402
from mac_cases import MacCase, conv_cases  # noqa: E402
from harness import ort_run  # noqa: E402
from tigris.ir import TigrisError  # noqa: E402
from tigris.ops import kind, lower  # noqa: E402
from tigris.ops._geometry import TileError, rows_needed, window_from_attrs  # noqa: E402

SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FLOAT_TOL = 1e-5


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["conv.c", "dwconv.c"], tmp_path_factory.mktemp("conv_kernels"))


def lowered(case: MacCase):
    g = case.graph()
    return lower(g, g.ops[0])


def reference(case: MacCase, low, row0: int = 0, rows: int | None = None, in_band=None):
    out = case.out_view(row0, rows)
    kind(low.kind).reference(low, [in_band or case.in_view()], out)
    return out.data


def run_c(lib, case: MacCase, low, row0: int = 0, rows: int | None = None, in_band=None, scratch=None):
    out = case.out_view(row0, rows)
    st = lib.run(low, [in_band or case.in_view()], out, scratch=scratch)
    return st, out.data


def assert_float_close(got, ref):
    tol = FLOAT_TOL * max(1.0, float(np.abs(ref).max(initial=0.0)))
    err = float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).max(initial=0.0))
    assert err <= tol, f"max abs error {err} > {tol}"


# -- reference vs ONNX Runtime ----------------------------------------------------------------------------------------
@settings(max_examples=60, **SETTINGS)
@given(case=conv_cases())
def test_reference_matches_onnxruntime(case: MacCase):
    low = lowered(case)
    ref = case.logical_y(reference(case, low))
    (expected,) = ort_run(case.onnx_model(), {"x": case.data["x"]})
    if case.int8:
        diff = np.abs(ref.astype(np.int32) - expected.astype(np.int32)).max()
        assert diff <= 1, f"int8 reference differs from ORT by {diff} LSB"
    else:
        assert_float_close(ref, expected)


# -- C vs reference ----------------------------------------------------------------------------------------------------
@settings(max_examples=120, **SETTINGS)
@given(case=conv_cases())
def test_c_kernel_matches_reference(lib, case: MacCase):
    low = lowered(case)
    ref = reference(case, low)
    st, got = run_c(lib, case, low)
    assert st == lib.const["TGRS_OK"]
    if case.int8:
        np.testing.assert_array_equal(got, ref)
    else:
        assert_float_close(got, ref)
    if low.kind == "conv":  # the planner's scratch figure is exactly what the kernel asks for
        oh, ow = case.out_hw()
        assert kind("conv").band_scratch_bytes(low, None, oh, ow) == lib.scratch_size(low, [case.in_view()],
                                                                                       case.out_view())
        assert kind("conv").scratch_bytes(low, None, oh) >= kind("conv").band_scratch_bytes(low, None, oh, ow)


# -- banded execution --------------------------------------------------------------------------------------------------
@settings(max_examples=60, **SETTINGS)
@given(case=conv_cases(max_hw=12), bands=st.integers(2, 5), margin=st.integers(0, 2))
def test_bands_equal_whole(lib, case: MacCase, bands: int, margin: int):
    """Output computed band by band, each from an input band holding just the rows it needs (plus ``margin`` extra
    rows where they exist), equals the whole output bit for bit, in C and in the reference."""
    low = lowered(case)
    whole_c = run_c(lib, case, low)[1]
    whole_ref = reference(case, low)
    win = window_from_attrs(case.attrs(), case.one_d)
    oh = case.out_hw()[0]
    for row0, rows in split_rows(oh, bands):
        lo, hi = rows_needed(win, row0, row0 + rows, case.h) if rows else (0, 0)
        lo = min(max(0, lo - margin), case.h)  # a band reading only padding rows may hold no rows at all
        hi = min(case.h, max(hi, lo) + margin)
        band = case.in_view(lo, hi - lo)
        st, got = run_c(lib, case, low, row0, rows, in_band=band)
        assert st == lib.const["TGRS_OK"]
        np.testing.assert_array_equal(got, whole_c[:, row0:row0 + rows])
        np.testing.assert_array_equal(reference(case, low, row0, rows, in_band=band), whole_ref[:, row0:row0 + rows])


@pytest.mark.parametrize("op_type", ["Conv", "DepthwiseConv"])
@pytest.mark.parametrize("int8", [False, True])
def test_missing_input_row_is_a_tile_error(lib, op_type, int8):
    case = MacCase(op_type=op_type, n=1, c=3, h=9, w=5, oc=3 if op_type == "DepthwiseConv" else 4,
                   group=3 if op_type == "DepthwiseConv" else 1, kernel=(3, 3), strides=(2, 1), pads=(1, 1, 1, 1),
                   int8=int8, seed=3).build()
    low = lowered(case)
    # output rows [2, 4) read input rows [3, 8); give bands that miss the first or the last of them
    for lo, hi in ((4, 8), (3, 7)):
        band = case.in_view(lo, hi - lo)
        st, _ = run_c(lib, case, low, 2, 2, in_band=band)
        assert st == lib.const["TGRS_ERR_TILE"]
        with pytest.raises(TileError):
            reference(case, low, 2, 2, in_band=band)
    st, _ = run_c(lib, case, low, 2, 2, in_band=case.in_view(3, 5))
    assert st == lib.const["TGRS_OK"]


# -- scratch -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("int8", [False, True])
def test_scratch_is_checked(lib, int8):
    case = MacCase(op_type="Conv", n=1, c=5, h=6, w=6, oc=7, kernel=(3, 3), pads=(1, 1, 1, 1), int8=int8).build()
    low = lowered(case)
    need = kind("conv").scratch_bytes(low, None, 6)
    assert need == 4 * 3 * 3 * 5 * (2 if int8 else 4)  # CONV_MR patches of KH*KW*C float32 or int16 elements
    assert run_c(lib, case, low, scratch=need - 1)[0] == lib.const["TGRS_ERR_SCRATCH"]
    assert run_c(lib, case, low, scratch=0)[0] == lib.const["TGRS_ERR_SCRATCH"]
    assert run_c(lib, case, low, scratch=need)[0] == lib.const["TGRS_OK"]


@pytest.mark.parametrize("int8", [False, True])
@pytest.mark.parametrize("w", [1, 2, 3, 5])
def test_a_band_of_few_pixels_needs_fewer_patch_rows(lib, int8, w):
    """A float im2col stores one patch row per pixel of its block, and int8 widens one per pixel
    (conv_s8_narrow): an output band of fewer than CONV_MR pixels (a COLS unit's one-pixel column tile) runs with
    that many rows of scratch, and one byte less is refused."""
    case = MacCase(op_type="Conv", n=1, c=5, h=3, w=w, oc=7, kernel=(3, 3), pads=(1, 1, 1, 1), int8=int8).build()
    low = lowered(case)
    rows = min(4, w)  # one output row of w pixels
    need = kind("conv").band_scratch_bytes(low, None, 1, w)
    assert need == rows * 3 * 3 * 5 * (2 if int8 else 4)
    band = case.in_view(0, 2)  # output row 0 reads input rows [0, 2)
    st, got = run_c(lib, case, low, 0, 1, in_band=band, scratch=need)
    assert st == lib.const["TGRS_OK"]
    np.testing.assert_array_equal(got, run_c(lib, case, low, 0, 1, in_band=band, scratch=4096)[1])
    assert run_c(lib, case, low, 0, 1, in_band=band, scratch=need - 1)[0] == lib.const["TGRS_ERR_SCRATCH"]


@pytest.mark.parametrize("w,rows", [(1, 1), (3, 1), (1, 3), (2, 1)])
def test_int8_band_of_few_pixels_needs_a_patch_row_per_pixel(lib, w, rows):
    """An int8 band of npix < CONV_MR output pixels (a column tile) runs with scratch for npix widened patches
    (conv.c conv_s8_narrow, Conv.band_scratch_bytes): the bytes of the full-scratch run, padded taps included;
    one byte less is refused. Four pixels or more still need CONV_MR rows."""
    case = MacCase(op_type="Conv", n=2, c=5, h=4, w=w, oc=7, kernel=(3, 3), pads=(1, 1, 1, 1), int8=True).build()
    low = lowered(case)
    npix = rows * w
    row = 3 * 3 * 5 * 2
    assert kind("conv").band_scratch_bytes(low, None, rows, w) == min(4, npix) * row
    st, full = run_c(lib, case, low, 1, rows, scratch=4 * row)
    assert st == lib.const["TGRS_OK"]
    np.testing.assert_array_equal(full, reference(case, low, 1, rows))
    st, narrow = run_c(lib, case, low, 1, rows, scratch=min(4, npix) * row)
    assert st == lib.const["TGRS_OK"] and narrow.tobytes() == full.tobytes()
    assert run_c(lib, case, low, 1, rows, scratch=min(4, npix) * row - 1)[0] == lib.const["TGRS_ERR_SCRATCH"]


def test_pointwise_needs_no_scratch(lib):
    case = MacCase(op_type="Conv", n=1, c=6, h=5, w=3, oc=11, strides=(2, 2)).build()
    low = lowered(case)
    assert kind("conv").scratch_bytes(low, None, 3) == 0
    st, got = run_c(lib, case, low, scratch=0)
    assert st == lib.const["TGRS_OK"]
    assert_float_close(got, reference(case, low))


# -- corrupted parameters ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op_type", ["Conv", "DepthwiseConv"])
def test_bad_params_are_refused(lib, op_type):
    case = MacCase(op_type=op_type, n=1, c=4, h=5, w=5, oc=4, group=4 if op_type == "DepthwiseConv" else 1,
                   kernel=(3, 3), pads=(1, 1, 1, 1), int8=True, seed=5).build()
    good = lowered(case)

    def status(**changes):
        low = lowered(case)
        for key, v in changes.items():
            if key in low.params:
                low.params[key] = v
            else:
                low.consts[key] = v
        return run_c(lib, case, low, scratch=4096)[0]

    assert status() == lib.const["TGRS_OK"]
    assert status(sh=0) == lib.const["TGRS_ERR_PARAM"]
    assert status(kh=-1) == lib.const["TGRS_ERR_PARAM"]
    assert status(act_min=-129) == lib.const["TGRS_ERR_PARAM"]
    assert status(act_min=10, act_max=5) == lib.const["TGRS_ERR_PARAM"]
    assert status(shift=np.full(4, 32, np.int32)) == lib.const["TGRS_ERR_PARAM"]
    assert status(kw=2) == lib.const["TGRS_ERR_SHAPE"]  # output width no longer follows from the window
    assert status(bias=np.zeros(3, np.int32)) == lib.const["TGRS_ERR_SHAPE"]
    assert status(weight=good.consts["weight"].ravel()[:-1].copy()) == lib.const["TGRS_ERR_SHAPE"]
    if op_type == "Conv":
        assert status(pack_nr=4) == lib.const["TGRS_ERR_PARAM"]
        assert status(patch=35) == lib.const["TGRS_ERR_PARAM"]
    else:
        assert status(depth_mult=2) == lib.const["TGRS_ERR_SHAPE"]


def test_dtype_mismatch_is_refused(lib):
    case = MacCase(op_type="Conv", n=1, c=2, h=3, w=3, oc=2).build()
    low = lowered(case)
    out = case.out_view()
    out.dtype = "int8"
    assert lib.run(low, [case.in_view()], out) == lib.const["TGRS_ERR_DTYPE"]


# -- lowering ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["x", "w", "y"])
@pytest.mark.parametrize("bad", [0.0, -0.5, float("nan"), float("inf")])
def test_bad_scale_is_an_error_naming_the_tensor(which, bad):
    case = MacCase(op_type="Conv", n=1, c=2, h=4, w=4, oc=3, kernel=(3, 3), int8=True).build()
    g = case.graph()
    t = g.tensors[which]
    s = np.array(t.quant.scale, dtype=np.float32)
    s[-1] = bad
    g.tensors[which] = type(t)(t.name, t.shape, t.dtype, type(t.quant)(s, t.quant.zero_point, t.quant.axis), t.layout)
    with pytest.raises(TigrisError) as e:
        lower(g, g.ops[0])
    assert which in (e.value.where or "") or f"'{which}'" in str(e.value) or f"({which})" in str(e.value)


def test_fused_activation_bounds():
    """relu -> [zp_out, 127]; relu6 -> [zp_out, zp_out + round(6 / s_out)] (design.md); no activation -> full range."""
    base = dict(op_type="Conv", n=1, c=2, h=3, w=3, oc=2, int8=True)
    for act in (None, "relu", "relu6"):
        case = MacCase(act=act, **base).build()
        case.data["s_out"], case.data["zp_out"] = 0.05, -20
        p = lowered(case).params
        expect = {None: (-128, 127), "relu": (-20, 127), "relu6": (-20, -20 + 120)}[act]
        assert (p["act_min"], p["act_max"]) == expect


def test_input_zero_point_is_folded_into_bias():
    """bias' = bias - zp_in * sum(w) per output channel, so the kernel accumulates raw int8 products."""
    case = MacCase(op_type="Conv", n=1, c=3, h=4, w=4, oc=5, kernel=(2, 2), int8=True, seed=9).build()
    low = lowered(case)
    d = case.data
    expect = d["b"].astype(np.int64) - d["zp_in"] * d["w"].reshape(5, -1).astype(np.int64).sum(axis=1)
    np.testing.assert_array_equal(low.consts["bias"], expect)


def test_accumulator_overflow_is_refused():
    case = MacCase(op_type="Conv", n=1, c=2, h=3, w=3, oc=1, int8=True).build()
    case.data["b"] = np.array([2**31 - 10], np.int32)
    g = case.graph()
    with pytest.raises(TigrisError, match="overflow"):
        lower(g, g.ops[0])


@pytest.mark.parametrize("mode", ["big", "tiny"])
def test_extreme_effective_scales(lib, mode):
    """Effective scales >= 1 (positive shift, saturating outputs) and tiny ones (outputs collapse to zp_out)."""
    case = MacCase(op_type="Conv", n=1, c=7, h=6, w=5, oc=9, kernel=(3, 3), pads=(1, 1, 1, 1), int8=True,
                   scale_mode=mode, seed=11).build()
    low = lowered(case)
    shifts = low.consts["shift"]
    assert (shifts > 0).all() if mode == "big" else (shifts < -10).all()
    ref = reference(case, low)
    st, got = run_c(lib, case, low)
    assert st == lib.const["TGRS_OK"]
    np.testing.assert_array_equal(got, ref)
    if mode == "big":
        assert np.isin(ref, [-128, 127]).mean() > 0.5  # mostly saturated
    else:
        assert (np.abs(ref.astype(int) - case.data["zp_out"]) <= 1).all()


def test_weight_only_quantized_float_conv_dequantizes_weights():
    """A float graph whose weights are int8 behind a DequantizeLinear: the lowering dequantizes them."""
    case = MacCase(op_type="Conv", n=1, c=3, h=5, w=5, oc=4, kernel=(3, 3), seed=2).build()
    g = case.graph()
    from harness import qparam
    from tigris.ir import Tensor

    s = np.full(4, 0.01, np.float32)
    wq = np.clip(np.rint(case.data["w"] / 0.01), -127, 127).astype(np.int8)
    g.weights["w"] = wq
    g.tensors["w"] = Tensor("w", wq.shape, "int8", qparam(s, 0, axis=0))
    low = lower(g, g.ops[0])
    case.data["w"] = (wq.astype(np.float32) * 0.01).astype(np.float32)
    low2 = lowered(case)
    np.testing.assert_array_equal(low.consts["weight"], low2.consts["weight"])


@pytest.mark.parametrize("int8", [False, True])
@pytest.mark.parametrize("c, kernel, strides, dils, pads", [
    (32, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    (48, (5, 5), (2, 2), (1, 1), (2, 1, 2, 2)),
    (40, (3, 3), (1, 2), (2, 1), (2, 0, 1, 2)),  # 16 + 16 + a tail block of 8
    (16, (9, 9), (1, 1), (1, 1), (4, 4, 4, 4)),  # more taps than the fast path's table: generic path only
])
def test_depthwise_full_channel_blocks(lib, int8, c, kernel, strides, dils, pads):
    """Channel counts that fill the kernel's 16-channel blocks take the interior fast path (hypothesis rarely draws
    them); it must equal the reference and be independent of banding. Tolerances as in the module doc."""
    case = MacCase(op_type="DepthwiseConv", n=1, c=c, h=13, w=11, oc=c, group=c, kernel=kernel, strides=strides,
                   dils=dils, pads=pads, act="relu6", int8=int8, seed=c).build()
    low = lowered(case)
    ref = reference(case, low)
    st, got = run_c(lib, case, low)
    assert st == lib.const["TGRS_OK"]
    if int8:
        np.testing.assert_array_equal(got, ref)
    else:
        assert_float_close(got, ref)
    oh = case.out_hw()[0]
    win = window_from_attrs(case.attrs())
    for row0, rows in split_rows(oh, 3):
        lo, hi = rows_needed(win, row0, row0 + rows, case.h)
        st, band = run_c(lib, case, low, row0, rows, in_band=case.in_view(lo, hi - lo))
        assert st == lib.const["TGRS_OK"]
        np.testing.assert_array_equal(band, got[:, row0:row0 + rows])


@pytest.mark.parametrize("int8", [False, True])
@pytest.mark.parametrize("c, oc, kernel, pads", [(96, 40, (1, 1), (0, 0, 0, 0)), (20, 17, (3, 3), (1, 1, 1, 1)),
                                                  (3, 16, (3, 3), (0, 0, 1, 1))])
def test_conv_real_layer_sizes(lib, int8, c, oc, kernel, pads):
    """Channel counts of real layers (many 16-value chunks, odd output channel counts); C vs reference."""
    case = MacCase(op_type="Conv", n=1, c=c, h=10, w=9, oc=oc, kernel=kernel, strides=(2, 2) if c == 3 else (1, 1),
                   pads=pads, act="relu", int8=int8, seed=oc).build()
    low = lowered(case)
    ref = reference(case, low)
    st, got = run_c(lib, case, low)
    assert st == lib.const["TGRS_OK"]
    if int8:
        np.testing.assert_array_equal(got, ref)
    else:
        assert_float_close(got, ref)


@pytest.mark.parametrize("int8", [False, True])
@pytest.mark.parametrize("w", [5, 6, 7])
@pytest.mark.parametrize("oc, kernel, pads", [(64, (1, 1), (0, 0, 0, 0)), (40, (3, 3), (1, 1, 1, 1)),
                                               (17, (1, 1), (0, 0, 0, 0))])
def test_conv_one_row_bands_equal_whole(lib, int8, w, oc, kernel, pads):
    """One-row bands of a narrow image end every pixel block in a tail of 1-3 pixels (the float GEMM's one-row,
    four-panel tail kernel, and its one-panel kernel for the panels left over); each band equals the whole output's
    rows bit-exactly, and the whole output matches the reference. Tolerances as in the module doc."""
    case = MacCase(op_type="Conv", n=1, c=24, h=4, w=w, oc=oc, kernel=kernel, pads=pads, act="relu6", int8=int8,
                   seed=oc + w).build()
    low = lowered(case)
    ref = reference(case, low)
    st, got = run_c(lib, case, low)
    assert st == lib.const["TGRS_OK"]
    if int8:
        np.testing.assert_array_equal(got, ref)
    else:
        assert_float_close(got, ref)
    win = window_from_attrs(case.attrs())
    for row0 in range(case.out_hw()[0]):
        lo, hi = rows_needed(win, row0, row0 + 1, case.h)
        st, band = run_c(lib, case, low, row0, 1, in_band=case.in_view(lo, hi - lo))
        assert st == lib.const["TGRS_OK"]
        np.testing.assert_array_equal(band, got[:, row0:row0 + 1])


@pytest.mark.parametrize("op_type", ["Conv", "DepthwiseConv", "Gemm"])
def test_per_tensor_weight_scale_equals_uniform_per_channel(op_type):
    """A per-tensor weight scale lowers exactly like per-channel scales that are all equal (exact equality)."""
    from harness import qparam
    from tigris.ir import Tensor

    dw = op_type == "DepthwiseConv"
    case = MacCase(op_type=op_type, n=1, c=4, h=5, w=5, oc=4, group=4 if dw else 1,
                   kernel=(1, 1) if op_type == "Gemm" else (3, 3), int8=True, seed=12).build()
    case.data["s_w"] = np.full(4, 0.0123, np.float32)
    g = case.graph()
    per_channel = lower(g, g.ops[0])
    t = g.tensors["w"]
    g.tensors["w"] = Tensor("w", t.shape, "int8", qparam(0.0123, 0))
    per_tensor = lower(g, g.ops[0])
    assert per_channel.params == per_tensor.params
    for name in per_channel.consts:
        np.testing.assert_array_equal(per_channel.consts[name], per_tensor.consts[name])
