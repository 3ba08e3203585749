"""Every reader check fires: each test corrupts one field of a valid plan and expects the TGRS_ERR_* code that
docs/format.md assigns to that check. Corruptions past the CRC are resealed (the CRC recomputed), so the check under
test, not the CRC, is what refuses the plan. A random-mutation test then checks that the reader never fails in any
other way than PlanFormatError."""
from __future__ import annotations

import random
import struct

import numpy as np
import pytest

import _emit_handbuilt as H
from tigris.emit import emit_plan, read_plan
from tigris.emit import format as F
from tigris.emit.reader import PlanFormatError
from tigris.emit.writer import seal


def _plan(xip: bool = False, compression: str = "none", tiled: bool = True) -> bytes:
    g, lowered = H.graph()
    lowered[0].consts["weight"] = np.zeros_like(lowered[0].consts["weight"])  # compressible, so LZ4 blobs are real blocks
    plan = (H.two_unit_tiled_plan if tiled else H.single_unit_plan)(lowered, xip)
    return emit_plan(g, plan, lowered, xip=xip, compression=compression)


def _section(data: bytes, sid: F.SectionId) -> tuple[int, int]:
    e = F.SECTION.unpack(data, F.DIR_OFFSET + (int(sid) - 1) * F.SECTION.size)
    return int(e["offset"]), int(e["size"])  # type: ignore[arg-type]


def _field_pos(data: bytes, sid: F.SectionId, rec: F.Record, index: int, field: str, elem: int = 0) -> int:
    off, _ = _section(data, sid)
    f = next(x for x in rec.fields if x.name == field)
    return off + index * rec.size + rec.offsets()[field] + elem * f.elem_size


def _set(data: bytes, sid, rec, index, field, value, elem=0, reseal=True) -> bytes:
    b = bytearray(data)
    f = next(x for x in rec.fields if x.name == field)
    code = {"u8": "B", "u16": "H", "u32": "I", "i32": "i", "f32": "f", "u64": "Q"}[f.type]
    struct.pack_into("<" + code, b, _field_pos(data, sid, rec, index, field, elem), value)
    return seal(b) if reseal else bytes(b)


def _get(data: bytes, sid, rec, index, field):
    return rec.unpack(data, _section(data, sid)[0] + index * rec.size)[field]


def _expect(data: bytes, status: str) -> None:
    with pytest.raises(PlanFormatError) as ei:
        read_plan(data)
    assert ei.value.status == status, str(ei.value)
    assert f"TGRS_{status}" in str(ei.value)


def test_valid_plans_read() -> None:
    for xip, comp in ((False, "none"), (False, "lz4"), (True, "none")):
        read_plan(_plan(xip, comp))


def test_flipped_byte_anywhere_fails_crc() -> None:
    data = _plan()
    rng = random.Random(1)
    # Bytes 12..15 hold file_size, which is compared with the buffer length before the CRC is computed.
    for pos in [16, 40, 300, len(data) - 1] + [rng.randrange(16, len(data)) for _ in range(50)]:
        b = bytearray(data)
        b[pos] ^= 1 << rng.randrange(8)
        _expect(bytes(b), "ERR_CRC")
    for size, status in ((len(data) - 16, "ERR_SIZE"), (len(data) + 16, "ERR_TRUNCATED")):
        b = bytearray(data)
        struct.pack_into("<I", b, 12, size)
        _expect(bytes(b), status)


def test_header_checks() -> None:
    data = _plan()
    _expect(data[:20], "ERR_TRUNCATED")
    _expect(b"XGRS" + data[4:], "ERR_MAGIC")
    _expect(data[:4] + struct.pack("<H", F.VERSION + 1) + data[6:], "ERR_VERSION")
    _expect(data[:-16], "ERR_TRUNCATED")
    _expect(data + b"\0" * 16, "ERR_SIZE")
    _expect(_hdr(data, "flags", 0x80), "ERR_HEADER")
    _expect(_hdr(data, "flags", int(F.Flag.XIP | F.Flag.LZ4)), "ERR_HEADER")
    _expect(_hdr(data, "target", len(F.Target)), "ERR_HEADER")
    _expect(_hdr(data, "section_count", 10), "ERR_HEADER")


def _hdr(data: bytes, field: str, value: int) -> bytes:
    b = bytearray(data)
    f = next(x for x in F.HEADER.fields if x.name == field)
    struct.pack_into("<" + {"u16": "H", "u32": "I"}[f.type], b, F.HEADER.offsets()[field], value)
    return seal(b)


def _dir(data: bytes, i: int, field: str, value: int) -> bytes:
    b = bytearray(data)
    struct.pack_into("<I", b, F.DIR_OFFSET + i * F.SECTION.size + F.SECTION.offsets()[field], value)
    return seal(b)


def test_directory_checks() -> None:
    data = _plan()
    _expect(_dir(data, 3, "id", 7), "ERR_SECTION")
    _expect(_dir(data, 2, "count", 1 + _section(data, F.SectionId.TENSORS)[1] // F.TENSOR.size), "ERR_SECTION")
    w_off, w_size = _section(data, F.SectionId.WEIGHTS)
    _expect(_dir(_dir(data, 10, "size", len(data)), 10, "count", len(data)), "ERR_SECTION_BOUNDS")
    _expect(_dir(data, 10, "offset", w_off + 4), "ERR_SECTION_BOUNDS")  # misaligned
    _expect(_dir(data, 10, "offset", 0xFFFFFFF0), "ERR_SECTION_BOUNDS")  # far out, no overflow
    s_off, _ = _section(data, F.SectionId.STRINGS)
    _expect(_dir(data, 2, "offset", s_off), "ERR_SECTION_BOUNDS")  # overlaps the previous section


def test_plan_record_checks() -> None:
    data = _plan()
    _expect(_set(data, F.SectionId.PLAN, F.PLAN, 0, "n_inputs", 2), "ERR_PLAN")
    _expect(_set(data, F.SectionId.PLAN, F.PLAN, 0, "weight_stored", 1), "ERR_PLAN")
    _expect(_set(data, F.SectionId.PLAN, F.PLAN, 0, "name_len", 100000), "ERR_STRING")


def test_tensor_checks() -> None:
    data = _plan()
    S, R = F.SectionId.TENSORS, F.TENSOR
    _expect(_set(data, S, R, 1, "dtype", 9), "ERR_TENSOR")
    _expect(_set(data, S, R, 1, "layout", 7), "ERR_TENSOR")
    _expect(_set(data, S, R, 1, "dims", 3, elem=1), "ERR_TENSOR")
    _expect(_set(data, S, R, 1, "nbytes", 4), "ERR_TENSOR")
    _expect(_set(data, S, R, 1, "flags", 1 << 9), "ERR_TENSOR")
    _expect(_set(data, S, R, 1, "root", 99), "ERR_TENSOR_INDEX")
    _expect(_set(data, S, R, 1, "root", 0), "ERR_TENSOR")  # a non-alias pointing elsewhere
    _expect(_set(data, S, R, 0, "slow_offset", 8), "ERR_TENSOR")  # x lives in slow: misaligned home
    _expect(_set(data, S, R, 0, "slow_offset", 1 << 20), "ERR_ARENA_BOUNDS")
    _expect(_set(data, S, R, 1, "name_off", 1 << 20), "ERR_STRING")
    _expect(_set(data, S, R, 1, "zero_point", 5), "ERR_TENSOR")  # a float tensor's zero point is 0


def test_int8_zero_point_range() -> None:
    # Kernels do zero-point arithmetic in fixed-width integers on the strength of this check.
    g, lowered = H.graph(int8=True)
    data = emit_plan(g, H.single_unit_plan(lowered, True), lowered, xip=True)
    S, R = F.SectionId.TENSORS, F.TENSOR
    read_plan(_set(data, S, R, 1, "zero_point", -128))
    read_plan(_set(data, S, R, 1, "zero_point", 127))
    _expect(_set(data, S, R, 1, "zero_point", 128), "ERR_TENSOR")
    _expect(_set(data, S, R, 1, "zero_point", -(2**31)), "ERR_TENSOR")


def test_io_checks() -> None:
    data = _plan()
    S, R = F.SectionId.IO, F.IO
    _expect(_set(data, S, R, 0, "direction", 1), "ERR_IO")
    _expect(_set(data, S, R, 0, "tensor", 99), "ERR_TENSOR_INDEX")
    _expect(_set(data, S, R, 0, "tensor", 1), "ERR_IO")  # c1 is not a graph input
    _expect(_set(data, S, R, 0, "offset", 16), "ERR_IO")  # not x's slow home
    _expect(_set(data, S, R, 0, "offset", 1 << 20), "ERR_IO")  # the home check comes before the arena bound
    _expect(_set(data, S, R, 1, "offset", _get(data, S, R, 1, "offset") + 16), "ERR_IO")  # not y's placement


def test_unit_and_placement_checks() -> None:
    data = _plan()
    S, R = F.SectionId.UNITS, F.UNIT
    _expect(_set(data, S, R, 0, "op_count", 3), "ERR_UNIT")
    _expect(_set(data, S, R, 1, "tiles", 0), "ERR_UNIT")
    _expect(_set(data, S, R, 0, "flags", 2), "ERR_UNIT")
    _expect(_set(data, S, R, 0, "reload_count", 10**6), "ERR_INDEX")
    _expect(_set(data, S, R, 0, "wraw_size", _get(data, S, R, 0, "weight_bytes") + 16), "ERR_WEIGHTS")
    _expect(_set(data, S, R, 0, "wblob_off", 1 << 20), "ERR_WEIGHTS")
    P = F.PLACEMENT
    _expect(_set(data, F.SectionId.PLACEMENTS, P, 0, "tensor", 99), "ERR_TENSOR_INDEX")
    _expect(_set(data, F.SectionId.PLACEMENTS, P, 0, "offset", 1 << 20), "ERR_ARENA_BOUNDS")
    _expect(_set(data, F.SectionId.PLACEMENTS, P, 0, "offset", 0), "ERR_ARENA_BOUNDS")  # inside the weight prefix
    _expect(_set(data, F.SectionId.PLACEMENTS, P, 0, "band_rows", 8), "ERR_TILE_ROWS")  # 8 rows do not fit 5
    _expect(_set(data, F.SectionId.PLACEMENTS, P, 1, "tensor", 0), "ERR_PLACEMENT")  # out of order
    _expect(_set(data, F.SectionId.TILE_ROWS, F.TILE_ROW, 0, "row0", 6), "ERR_TILE_ROWS")
    _expect(_set(data, F.SectionId.TILE_ROWS, F.TILE_ROW, 0, "rows", 6), "ERR_TILE_ROWS")


def test_op_checks() -> None:
    data = _plan()
    S, R = F.SectionId.OPS, F.OP
    _expect(_set(data, S, R, 0, "kind", 0), "ERR_OP_KIND")
    _expect(_set(data, S, R, 0, "kind", 200), "ERR_OP_KIND")
    _expect(_set(data, S, R, 0, "n_in", 0), "ERR_OP")
    _expect(_set(data, S, R, 0, "inputs", 0, elem=1), "ERR_OP")  # unused slot not NONE
    _expect(_set(data, S, R, 0, "inputs", 99), "ERR_TENSOR_INDEX")
    _expect(_set(data, S, R, 0, "output", 99), "ERR_TENSOR_INDEX")
    _expect(_set(data, S, R, 0, "output", 4), "ERR_PLACEMENT")  # y has no placement in unit 0
    _expect(_set(data, S, R, 1, "params", 5, elem=F.MAX_PARAMS - 1), "ERR_BAD_PARAM")  # maxpool uses fewer slots
    _expect(_set(data, S, R, 0, "const_off", 1 << 20), "ERR_CONST")
    _expect(_set(data, S, R, 0, "const_off", 8), "ERR_CONST")  # misaligned
    _expect(_set(data, S, R, 1, "const_off", 16, elem=3), "ERR_CONST")  # unused slot with an offset
    _expect(_set(data, S, R, 0, "scratch_off", 1 << 20), "ERR_ARENA_BOUNDS")


def test_stage_checks() -> None:
    data = _plan()
    _expect(_set(data, F.SectionId.STAGES, F.STAGE, 1, "index", 0), "ERR_STAGE")
    _expect(_set(data, F.SectionId.STAGES, F.STAGE, 1, "unit", 5), "ERR_STAGE")
    _expect(_set(data, F.SectionId.STAGES, F.STAGE, 1, "chain", -2), "ERR_STAGE")
    _expect(_set(data, F.SectionId.STAGES, F.STAGE, 1, "in_count", 10**6), "ERR_INDEX")


def test_malformed_lz4_block() -> None:
    data = _plan(compression="lz4")
    u_off = _get(data, F.SectionId.UNITS, F.UNIT, 0, "wblob_off")
    u_size = _get(data, F.SectionId.UNITS, F.UNIT, 0, "wblob_size")
    w_off, _ = _section(data, F.SectionId.WEIGHTS)
    b = bytearray(data)
    b[w_off + u_off : w_off + u_off + u_size] = b"\xff" * u_size
    _expect(seal(b), "ERR_LZ4")
    # A valid block cut short does not decode to wraw_size bytes.
    _expect(_set(data, F.SectionId.UNITS, F.UNIT, 0, "wblob_size", u_size - 1), "ERR_LZ4")


def test_random_mutations_only_raise_plan_errors() -> None:
    """300 resealed random mutations (bit flips, 32-bit field overwrites, truncations): the reader either accepts the
    plan or raises PlanFormatError; it never crashes with another exception."""
    rng = random.Random(7)
    bases = [_plan(), _plan(False, "lz4"), _plan(True)]
    for k in range(300):
        data = bytearray(rng.choice(bases))
        mode = k % 3
        if mode == 0:
            pos = rng.randrange(F.CRC_START, len(data))
            data[pos] ^= 1 << rng.randrange(8)
        elif mode == 1:
            pos = rng.randrange(F.CRC_START, len(data) - 4) & ~3
            struct.pack_into("<I", data, pos, rng.choice([0, 1, 0xFFFFFFFF, 0x7FFFFFFF, rng.getrandbits(32), 16]))
        else:
            data = data[: rng.randrange(F.HEADER.size, len(data))]
            struct.pack_into("<I", data, 12, len(data))
        try:
            read_plan(seal(data))
        except PlanFormatError:
            pass
