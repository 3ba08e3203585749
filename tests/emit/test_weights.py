"""Weight groups and LZ4 blocks (stage 7 step 3), and the writer's refusals of what the format cannot say."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import _emit_handbuilt as H
from tigris.emit import emit_plan
from tigris.emit.weights import WeightGroup, compress_block, const_bytes, decompress_block, lz4_bound
from tigris.ir import QuantParam, TigrisError


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=70), min_size=1, max_size=12))
def test_group_aligns_and_shares_identical_blobs(blobs: list[bytes]) -> None:
    g = WeightGroup()
    offs = [g.add(b) for b in blobs]
    image = g.image()
    assert len(image) % 16 == 0
    for b, off in zip(blobs, offs):
        assert off % 16 == 0 and image[off : off + len(b)] == b
    # Identical blobs share one offset, distinct blobs never overlap.
    first = {}
    for b, off in zip(blobs, offs):
        assert first.setdefault(b, off) == off
    spans = sorted((off, off + len(b)) for b, off in first.items())
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=3000), st.integers(0, 3))
def test_lz4_round_trip_and_bound(raw: bytes, repeat: int) -> None:
    raw = raw * (repeat + 1)  # repetition gives LZ4 matches to find
    block = compress_block(raw)
    assert len(block) <= lz4_bound(len(raw))
    assert decompress_block(block, len(raw)) == raw


def test_lz4_refuses_bad_blocks() -> None:
    raw = bytes(range(256)) * 8
    block = compress_block(raw)
    with pytest.raises(ValueError):
        decompress_block(block, len(raw) - 1)  # output would overflow
    with pytest.raises(ValueError):
        decompress_block(block, len(raw) + 1)  # decodes short
    with pytest.raises(ValueError):
        decompress_block(block[:-3], len(raw))  # truncated
    with pytest.raises(ValueError):
        decompress_block(b"\x01", 0)  # non-empty block for an empty blob
    assert compress_block(b"") == b"" and decompress_block(b"", 0) == b""


def test_const_bytes_are_little_endian_c_order() -> None:
    a = np.arange(6, dtype=">i4").reshape(2, 3).T  # big-endian and not contiguous
    assert const_bytes(a) == np.ascontiguousarray(a).astype("<i4").tobytes()
    assert const_bytes(np.array([1.5], np.float32)) == b"\x00\x00\xc0\x3f"


def test_writer_refuses_what_the_format_cannot_hold() -> None:
    g, lowered = H.graph()
    plan = H.single_unit_plan(lowered)

    bad = g.replace(tensors=dict(g.tensors))
    bad.tensors["c1"] = bad.tensors["c1"].__class__("c1", (1, 8, 8, 8), "int64", None, "nhwc")
    with pytest.raises(TigrisError, match="dtype int64") as e:
        emit_plan(bad, plan, lowered, xip=False)
    assert e.value.where == "c1"

    bad = g.replace(tensors=dict(g.tensors))
    q = QuantParam(np.array([0.1, 0.2], np.float32), np.array([0, 0]), 1)
    bad.tensors["c1"] = bad.tensors["c1"].__class__("c1", (1, 8, 8, 8), "int8", q, "nhwc")
    with pytest.raises(TigrisError, match="per-channel"):
        emit_plan(bad, plan, lowered, xip=False)

    bad = g.replace(tensors=dict(g.tensors))
    q = QuantParam(np.array([0.0], np.float32), np.array([0]))
    bad.tensors["c1"] = bad.tensors["c1"].__class__("c1", (1, 8, 8, 8), "int8", q, "nhwc")
    with pytest.raises(TigrisError, match="positive") as e:
        emit_plan(bad, plan, lowered, xip=False)
    assert e.value.where == "c1"

    with pytest.raises(TigrisError, match="lowered ops"):
        emit_plan(g, plan, lowered[:2], xip=False)

    unknown = list(lowered)
    unknown[1] = H.Lowered("nosuchkind", "pool0", ["c1"], ["p1"])
    with pytest.raises(TigrisError, match="unknown op kind"):
        emit_plan(g, plan, unknown, xip=False)

    homeless = H.single_unit_plan(lowered)
    del homeless.units[0].fast["y"]
    with pytest.raises(TigrisError, match="no home"):
        emit_plan(g, homeless, lowered, xip=False)
