"""An int8 conv on a band of fewer than CONV_MR (4) output pixels with scratch for just those pixels (conv.c
``conv_s8_narrow``, tigris.ops.conv ``Conv.band_scratch_bytes``; docs/memory-planning.md "Channel groups").

A column tile of one output pixel needs one widened patch row, not four: MobileNetV2-1.0 at 144 int8 has a
960-channel 1x1 conv on 5x5 pixels whose four rows (7,680 bytes) alone kept it above 8K. A model whose smallest
budget (``tigris.api.analyze``'s callbacks: a column band's scratch by its rows and columns) plans such a conv on
one-pixel tiles runs on the host runtime, every ISA level, as the untiled plan's bytes, with the high-water mark its
peak; both readers refuse a scratch below the band's patch rows (TGRS_ERR_SCRATCH).
"""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tigris_testing import host_session, saved_model
from tigris import api
from tigris.ops.conv import CONV_MR

from test_host_isa_levels import _levels


@pytest.fixture(scope="module")
def session():
    return host_session()


def _model(tmp_path: Path) -> Path:
    """x [1, 96, 5, 5] -> 1x1 conv to 16 -> Relu -> 3x3 conv to 8, int8 (ORT QDQ): the first conv's patch is 96
    channels, so four widened patch rows are 768 bytes, more than a pixel of its input and output."""
    import sys

    import onnx

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "families"))
    import builders
    import fam_seg

    g = builders._new(11)
    y = g.conv(g.op("Relu", [g.conv("x", 96, 16, 1)]), 16, 8, 3)
    m = fam_seg.finish_typed(g, "narrow", [1, 96, 5, 5], [(y, onnx.TensorProto.FLOAT, [1, 8, 5, 5])], opset=14)
    return saved_model(tmp_path, m, "n", True)


def test_one_pixel_conv_tiles_run_like_untiled(session, tmp_path):
    Session, PlanError = session
    path = _model(tmp_path)
    prep = api.prepare(path)
    m = api.analyze(path, 16, xip=True, prepared=prep, emit=False, tradeoff=False).min_fast_budget
    c = api.compile_model(path, m, xip=True, prepared=prep)
    plan = c.analysis.plan
    g = prep.graph
    narrow = [(u, i) for u in plan.units if u.tile_cols for i in u.ops
              if prep.lowered[i].kind == "conv" and i in u.scratch
              and u.scratch[i].size < CONV_MR * prep.lowered[i].params["patch"] * 2]
    assert narrow, "no conv band with fewer than CONV_MR patch rows of scratch"
    x = api.random_inputs(prep, 0)
    want = api.run_plan(api.compile_model(path, "4M", xip=True, prepared=prep).plan_bytes, x).outputs
    got = api.run_plan(c.plan_bytes, x)
    assert got.fast_peak == plan.fast_peak <= m
    for name, y in want.items():
        assert got.outputs[name].tobytes() == y.tobytes()
    for isa in _levels():  # the narrow loop is every build's: the vector levels give the same bytes
        out = Session(c.plan_bytes, isa=isa).run(x).outputs
        for name, y in want.items():
            assert out[name].tobytes() == y.tobytes(), isa
    # a scratch below one patch row per pixel of the band is refused by both readers
    from tigris.emit import format as TF
    from tigris.emit.reader import read_plan
    from tigris.emit.writer import seal

    import _rt_plans as P

    data = bytearray(c.plan_bytes)
    ops = struct.unpack_from("<I", data, TF.DIR_OFFSET + (int(TF.SectionId.OPS) - 1) * TF.SECTION.size + 4)[0]
    k = next(j for j, op in enumerate(read_plan(bytes(data)).ops) if op.name == g.ops[narrow[0][1]].name)
    off = ops + k * TF.OP.size + TF.OP.offsets()["scratch_size"]
    (size,) = struct.unpack_from("<I", data, off)
    struct.pack_into("<I", data, off, size - 2)
    assert P.assert_readers_refuse(Session, PlanError, [("scratch short of a patch row", seal(data),
                                                         "ERR_SCRATCH")]) == 1
