"""Writer -> reader round trips on hand-built plans: everything the writer was given comes back (exact equality;
there is no numeric tolerance because nothing is recomputed), and the bytes are deterministic."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

import _emit_handbuilt as H
from _emit_compare import assert_lossless
from tigris.emit import check_flash, emit_plan, inspect_plan, read_plan, weight_bytes_per_op
from tigris.emit import format as F
from tigris.emit.weights import const_bytes
from tigris.ir import DoesNotFitError, TigrisError
from tigris.ops import Lowered

VARIANTS = [(False, "none"), (False, "lz4"), (True, "none")]
PLANS = {"single": H.single_unit_plan, "tiled": H.two_unit_tiled_plan}


@pytest.mark.parametrize("int8", [False, True])
@pytest.mark.parametrize("which", sorted(PLANS))
@pytest.mark.parametrize("xip,compression", VARIANTS)
def test_round_trip_is_lossless(int8: bool, which: str, xip: bool, compression: str) -> None:
    g, lowered = H.graph(int8)
    plan = PLANS[which](lowered, xip)
    data = emit_plan(g, plan, lowered, xip=xip, compression=compression)

    pf = assert_lossless(g, plan, lowered, data, xip, compression)
    names = [t.name for t in pf.tensors]
    assert pf.tensors[pf.tensors[names.index("r")].root].name == "p1"

    # Interface.
    assert [io.name for io in pf.inputs] == g.inputs and [io.name for io in pf.outputs] == g.outputs
    if int8:
        assert pf.inputs[0].decl_dtype == "uint8" and pf.inputs[0].dtype == "int8"
        assert pf.inputs[0].decl_quant == (np.float32(0.05), 125)  # stored as f32: exact after rounding to f32


@pytest.mark.parametrize("xip,compression", VARIANTS)
def test_two_emits_identical_sha256(xip: bool, compression: str) -> None:
    digests = set()
    for _ in range(2):
        g, lowered = H.graph(True)
        digests.add(hashlib.sha256(emit_plan(g, H.two_unit_tiled_plan(lowered, xip), lowered, xip=xip,
                                             compression=compression)).hexdigest())
    assert len(digests) == 1


def test_placement_dict_order_does_not_change_bytes() -> None:
    g, lowered = H.graph()
    plan = H.two_unit_tiled_plan(lowered)
    a = emit_plan(g, plan, lowered, xip=False)
    for u in plan.units:
        u.fast = dict(reversed(list(u.fast.items())))
        u.tile_rows = [dict(reversed(list(t.items()))) for t in u.tile_rows]
    assert emit_plan(g, plan, lowered, xip=False) == a


def test_lz4_blobs_decode_to_the_raw_prefix_image() -> None:
    g, lowered = H.graph()
    # Make the weights compressible so the LZ4 path really shrinks something.
    lowered[0].consts["weight"] = np.zeros_like(lowered[0].consts["weight"])
    plan = H.two_unit_tiled_plan(lowered)
    raw = read_plan(emit_plan(g, plan, lowered, xip=False, compression="none"))
    packed = read_plan(emit_plan(g, plan, lowered, xip=False, compression="lz4"))
    assert packed.unit_images == raw.unit_images
    assert packed.weight_stored < raw.weight_stored
    assert packed.units[0].wblob_size < packed.units[0].wraw_size == raw.units[0].wraw_size
    info = inspect_plan(emit_plan(g, plan, lowered, xip=False, compression="lz4"))
    assert info["weights"]["compression_ratio"] > 1.0


def test_xip_consts_are_offsets_into_weights_and_shared() -> None:
    g, lowered = H.graph()
    lowered[3].consts = {}
    same = lowered[0].consts["weight"]
    plan = H.single_unit_plan(lowered, xip=True)
    pf = read_plan(emit_plan(g, plan, lowered, xip=True))
    assert pf.units[0].weight_bytes == 0 and pf.max_prefix == 0
    off, ln = pf.ops[0].consts[0]
    assert off % F.ALIGN == 0 and pf.weights[off : off + ln] == const_bytes(same)
    # An identical blob used twice is stored once.
    lowered[0].consts["mult"] = same.copy()
    pf2 = read_plan(emit_plan(g, plan, lowered, xip=True))
    assert pf2.ops[0].consts[0] == pf2.ops[0].consts[2]


def test_prefix_too_small_is_refused() -> None:
    g, lowered = H.graph()
    plan = H.single_unit_plan(lowered)
    plan.units[0].weight_bytes -= 16
    with pytest.raises(TigrisError, match="weight prefix"):
        emit_plan(g, plan, lowered, xip=False)


def test_zero_point_params_must_match_the_tensor_records() -> None:
    """The MAC kinds' zp_in/zp_out parameters restate the zero points of their tensors; the writer refuses a plan
    where they differ, so every kernel sees one zero point whichever route it reads."""
    g, lowered = H.graph(int8=True)
    plan = H.single_unit_plan(lowered)
    emit_plan(g, plan, lowered, xip=False)
    for pname, value in (("zp_in", -2), ("zp_out", 3)):
        bad = [Lowered(**{**vars(lowered[0]), "params": {**lowered[0].params, pname: value}})] + lowered[1:]
        with pytest.raises(TigrisError, match=f"{pname} = {value} differs from the zero point"):
            emit_plan(g, plan, bad, xip=False)


def test_bad_options_are_refused() -> None:
    g, lowered = H.graph()
    with pytest.raises(TigrisError, match="compression"):
        emit_plan(g, H.single_unit_plan(lowered), lowered, xip=False, compression="zip")
    with pytest.raises(TigrisError, match="xip"):
        emit_plan(g, H.single_unit_plan(lowered, xip=True), lowered, xip=True, compression="lz4")
    with pytest.raises(TigrisError, match="xip"):
        emit_plan(g, H.single_unit_plan(lowered, xip=True), lowered, xip=False)


def test_weight_bytes_per_op_matches_prefix_rule() -> None:
    g, lowered = H.graph()
    per_op = weight_bytes_per_op(g, lowered, xip=False)
    assert per_op[2] == 0  # alias
    assert per_op[0] == sum(-(-c.nbytes // 16) * 16 for c in lowered[0].consts.values())
    assert weight_bytes_per_op(g, lowered, xip=True) == [0, 0, 0, 0]


def test_flash_budget() -> None:
    check_flash(1000, None)
    check_flash(1000, 1000)
    with pytest.raises(DoesNotFitError, match="1001 bytes, flash budget is 1000"):
        check_flash(1001, 1000)


def test_inconsistent_memory_plan_is_reported_as_such() -> None:
    """A placement too small for its tensor passes the writer's own checks but not the reader's: emit_plan says the
    memory plan is at fault instead of returning bytes the loader would refuse."""
    g, lowered = H.graph()
    plan = H.single_unit_plan(lowered)
    p = plan.units[0].fast["c1"]
    plan.units[0].fast["c1"] = type(p)("fast", p.offset, p.size - 16)
    with pytest.raises(TigrisError, match=r"memory plan cannot be written.*TGRS_ERR_TILE_ROWS"):
        emit_plan(g, plan, lowered, xip=False)


def test_accumulating_gap_units_are_refused() -> None:
    """Format v1 cannot say "accumulate this GAP over the tiles"; writing such a unit as an ordinary one would give
    wrong results at run time, so the writer refuses it by name."""
    g, lowered = H.graph()
    plan = H.two_unit_tiled_plan(lowered)
    plan.units[1].accumulate = [3]
    with pytest.raises(TigrisError, match="accumulating GlobalAveragePool") as e:
        emit_plan(g, plan, lowered, xip=False)
    assert e.value.where == "unit 1"
