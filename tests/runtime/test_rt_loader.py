"""tgrs_load (runtime_c/src/loader.c): every corruption is refused, each kind of failure with its own code.

Plans come from the real planner and writer (tests/runtime/_rt_plans.py). Forged plans that must get past the CRC
are re-sealed with tigris.emit.writer.seal; for those the C loader must report exactly the check the Python reader
(tigris.emit.read_plan, which follows the same list in docs/format.md) reports.
"""
from __future__ import annotations

import random
import struct

import pytest

import _rt_plans as P
from tigris.emit import format as F
from tigris.emit.reader import PlanFormatError, read_plan
from tigris.emit.writer import seal
from tigris.host import PlanError, Session
from tigris.host.build import runtime

CODES = {s.name: s.code for s in F.STATUS}


def _load(data: bytes) -> int:
    rt = runtime()
    buf = rt.ffi.new("uint8_t[]", max(1, len(data)) + 16)
    addr = int(rt.ffi.cast("uintptr_t", buf))
    shift = (-addr) % 16
    rt.ffi.memmove(buf + shift, data, len(data))
    plan = rt.ffi.new("tgrs_plan *")
    return int(rt.lib.tgrs_load(plan, buf + shift, len(data)))


@pytest.fixture(scope="module", params=[("float", False, "none"), ("int8", False, "lz4"), ("int8", True, "none")],
                ids=["f32", "int8-lz4", "int8-xip"])
def plan_bytes(request) -> bytes:
    dt, xip, comp = request.param
    g = P.eltwise_graph(int8=dt == "int8", uint8_io=dt == "int8")
    data, _ = P.compile_graph(g, 3000, xip=xip, compression=comp)  # tiled: exercises TILE_ROWS checks
    return data


def test_valid_plan_loads(plan_bytes: bytes) -> None:
    assert _load(plan_bytes) == 0


def test_wrong_magic(plan_bytes: bytes) -> None:
    b = bytearray(plan_bytes)
    b[0:4] = b"TGRX"
    assert _load(bytes(b)) == CODES["ERR_MAGIC"]


def test_wrong_version(plan_bytes: bytes) -> None:
    b = bytearray(plan_bytes)
    struct.pack_into("<H", b, 4, F.VERSION + 1)
    assert _load(bytes(b)) == CODES["ERR_VERSION"]


def test_truncated_and_extended(plan_bytes: bytes) -> None:
    for cut in (0, 1, 31, 32, 100, len(plan_bytes) // 2, len(plan_bytes) - 1):
        code = _load(plan_bytes[:cut])
        assert code == CODES["ERR_TRUNCATED"], (cut, code)
    assert _load(plan_bytes + b"\x00") == CODES["ERR_SIZE"]


def test_every_flipped_byte_is_refused(plan_bytes: bytes) -> None:
    """A flip in magic/version/header_size gets those codes; anywhere else the CRC (or the size checks before it)."""
    allowed_after_magic = {CODES["ERR_CRC"], CODES["ERR_TRUNCATED"], CODES["ERR_SIZE"]}
    for i in range(len(plan_bytes)):
        b = bytearray(plan_bytes)
        b[i] ^= 0x5A
        code = _load(bytes(b))
        if i < 4:
            assert code == CODES["ERR_MAGIC"], i
        elif i < 6:
            assert code == CODES["ERR_VERSION"], i
        elif i < 8:  # header_size sits before the CRC field, outside the CRC
            assert code == CODES["ERR_HEADER"], i
        else:
            assert code in allowed_after_magic, (i, code)


def test_the_four_basic_failures_have_distinct_codes(plan_bytes: bytes) -> None:
    flipped = bytearray(plan_bytes)
    flipped[len(flipped) - 3] ^= 1
    bad_magic = b"XXXX" + plan_bytes[4:]
    bad_version = plan_bytes[:4] + struct.pack("<H", 7) + plan_bytes[6:]
    codes = [_load(bytes(flipped)), _load(plan_bytes[:-5]), _load(bad_magic), _load(bad_version)]
    assert codes == [CODES["ERR_CRC"], CODES["ERR_TRUNCATED"], CODES["ERR_MAGIC"], CODES["ERR_VERSION"]]


def test_session_raises_plan_error_naming_the_failure(plan_bytes: bytes) -> None:
    with pytest.raises(PlanError) as e:
        Session(b"XXXX" + plan_bytes[4:])
    assert e.value.code == CODES["ERR_MAGIC"]
    assert e.value.name == "TGRS_ERR_MAGIC"
    assert "TGRS_ERR_MAGIC" in str(e.value) and "\n" not in str(e.value)


def _field(rec: F.Record, name: str) -> int:
    return rec.offsets()[name]


def _section(data: bytes, sid: F.SectionId) -> tuple[int, int, int]:
    e = F.DIR_OFFSET + (int(sid) - 1) * F.SECTION.size
    _, off, size, count = struct.unpack_from("<4I", data, e)
    return off, size, count


def _forge(data: bytes, sid: F.SectionId, rec: F.Record, index: int, field: str, value: int, fmt: str = "<I") -> bytes:
    off, _, _ = _section(data, sid)
    b = bytearray(data)
    struct.pack_into(fmt, b, off + index * rec.size + _field(rec, field), value)
    return seal(b)


def test_forged_fields_get_their_own_codes(plan_bytes: bytes) -> None:
    cases = [
        (F.SectionId.OPS, F.OP, 0, "kind", 999, "ERR_OP_KIND"),
        (F.SectionId.OPS, F.OP, 0, "n_in", 0, "ERR_OP"),
        (F.SectionId.OPS, F.OP, 0, "output", 10_000, "ERR_TENSOR_INDEX"),
        (F.SectionId.TENSORS, F.TENSOR, 0, "dtype", 77, "ERR_TENSOR"),
        (F.SectionId.UNITS, F.UNIT, 0, "carry_first", 1, "ERR_UNIT"),  # a line-buffer list without ROLLING
        (F.SectionId.PLACEMENTS, F.PLACEMENT, 0, "offset", 0x7FFFFFF0, "ERR_ARENA_BOUNDS"),
        (F.SectionId.TILE_ROWS, F.TILE_ROW, 0, "rows", 10_000, "ERR_TILE_ROWS"),
        (F.SectionId.IO, F.IO, 0, "direction", 1, "ERR_IO"),
        (F.SectionId.PLAN, F.PLAN, 0, "n_inputs", 0, "ERR_PLAN"),
    ]
    seen = set()
    for sid, rec, idx, field, value, expect in cases:
        if _section(plan_bytes, sid)[2] <= idx:
            continue
        code = _load(_forge(plan_bytes, sid, rec, idx, field, value))
        assert code == CODES[expect], (field, code, expect)
        seen.add(code)
    assert len(seen) >= 6


def test_header_flag_rules(plan_bytes: bytes) -> None:
    b = bytearray(plan_bytes)
    struct.pack_into("<I", b, _field(F.HEADER, "flags"), int(F.Flag.XIP | F.Flag.LZ4))
    assert _load(seal(b)) == CODES["ERR_HEADER"]
    struct.pack_into("<I", b, _field(F.HEADER, "flags"), 0x100)
    assert _load(seal(b)) == CODES["ERR_HEADER"]


def test_c_loader_agrees_with_python_reader_on_resealed_mutations(plan_bytes: bytes) -> None:
    """Random byte changes past the header, re-sealed so they reach the structural checks: the C loader and the
    Python reader accept or refuse together. (Which check fires first may differ: the Python reader checks units
    before the interface.) tests/emit/test_reader_loader_differential.py also requires the same code."""
    rng = random.Random(2024)
    disagreements = []
    refused = 0
    for n in range(400):
        b = bytearray(plan_bytes)
        for _ in range(rng.choice([1, 1, 2, 3])):
            i = rng.randrange(F.DATA_START, len(b))
            b[i] = rng.choice([0, 0xFF, b[i] ^ (1 << rng.randrange(8)), rng.randrange(256)])
        data = seal(b)
        c_code = _load(data)
        try:
            read_plan(data)
            py_ok = True
        except PlanFormatError:
            py_ok = False
        refused += c_code != 0
        if (c_code == 0) != py_ok:
            disagreements.append((n, c_code, py_ok))
    assert not disagreements, disagreements[:10]
    assert refused > 100  # the mutations do reach the checks


def test_misaligned_plan_buffer_is_refused(plan_bytes: bytes) -> None:
    rt = runtime()
    buf = rt.ffi.new("uint8_t[]", len(plan_bytes) + 16)
    addr = int(rt.ffi.cast("uintptr_t", buf))
    shift = ((-addr) % 16) + 1
    rt.ffi.memmove(buf + shift, plan_bytes, len(plan_bytes))
    plan = rt.ffi.new("tgrs_plan *")
    assert rt.lib.tgrs_load(plan, buf + shift, len(plan_bytes)) == CODES["ERR_ALIGN"]
    assert rt.lib.tgrs_load(rt.ffi.NULL, buf, len(plan_bytes)) == CODES["ERR_NULL"]


def test_malformed_lz4_block_is_refused_at_load() -> None:
    """The loader decodes every LZ4 block once without output: a block that does not expand to exactly wraw_size
    bytes is TGRS_ERR_LZ4 before anything runs."""
    g = P.conv_chain_graph(int8=True)
    data, _ = P.compile_graph(g, 1 << 20, compression="lz4")
    assert _load(data) == 0
    uoff, _, n_units = _section(data, F.SectionId.UNITS)
    unit = next(k for k in range(n_units)
                if struct.unpack_from("<I", data, uoff + k * F.UNIT.size + _field(F.UNIT, "wblob_size"))[0] > 0)
    raw = struct.unpack_from("<I", data, uoff + unit * F.UNIT.size + _field(F.UNIT, "wraw_size"))[0]
    assert _load(_forge(data, F.SectionId.UNITS, F.UNIT, unit, "wraw_size", raw - 16)) == CODES["ERR_LZ4"]
    size = struct.unpack_from("<I", data, uoff + unit * F.UNIT.size + _field(F.UNIT, "wblob_size"))[0]
    assert _load(_forge(data, F.SectionId.UNITS, F.UNIT, unit, "wblob_size", size - 1)) == CODES["ERR_LZ4"]


def test_tiled_unit_without_placements_is_refused(plan_bytes: bytes) -> None:
    uoff, _, _ = _section(plan_bytes, F.SectionId.UNITS)
    flags = struct.unpack_from("<I", plan_bytes, uoff + _field(F.UNIT, "flags"))[0]
    if not flags & int(F.UnitFlag.TILED):
        pytest.skip("this plan's first unit is not tiled")
    b = bytearray(plan_bytes)
    for f in ("place_count", "rows_count"):
        struct.pack_into("<I", b, uoff + _field(F.UNIT, f), 0)
    assert _load(seal(b)) == CODES["ERR_UNIT"]


def test_numerics_contract_of_every_op_matches_the_header() -> None:
    """A tflm plan has the TFLM header flag and every op's NUMERICS parameter is 1; clearing the flag (resealed)
    makes the C loader and the Python reader refuse it with ERR_BAD_PARAM, as does setting it on an onnx plan."""
    g = P.conv_chain_graph(int8=True)
    onnx_plan, _ = P.compile_graph(g, 1 << 20)
    g.numerics = "tflm"
    tflm_plan, _ = P.compile_graph(g, 1 << 20)
    assert read_plan(tflm_plan).numerics == "tflm" and read_plan(onnx_plan).numerics == "onnx"
    assert _load(tflm_plan) == 0 and _load(onnx_plan) == 0
    for data, flags in ((tflm_plan, 0), (onnx_plan, int(F.Flag.TFLM))):
        b = bytearray(data)
        struct.pack_into("<I", b, _field(F.HEADER, "flags"), flags)
        bad = seal(b)
        assert _load(bad) == CODES["ERR_BAD_PARAM"]
        with pytest.raises(PlanFormatError) as e:
            read_plan(bad)
        assert e.value.status == "ERR_BAD_PARAM"
