"""Differential test: the C loader (runtime_c, through the host cffi build) and the Python reader give the same
status for the same bytes. Every u32/i32 field of the first records of every section of six valid plans (float
tiled raw, int8 tiled LZ4, float XIP, int8 tiled with halo reuse, float with a column-split unit, float with views)
is overwritten with boundary values and the plan
resealed (so the CRC passes and the field's own check is what decides). docs/format.md fixes one check order, so not only accept/refuse but the
TGRS_ERR_* code must match."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import _emit_handbuilt as H
from tigris_testing import host_session
from tigris.emit import emit_plan, read_plan
from tigris.emit import format as F
from tigris.emit.reader import PlanFormatError
from tigris.emit.writer import seal


@pytest.fixture(scope="module")
def session_cls():
    return host_session()


def _bases() -> list[bytes]:
    out = []
    for int8, xip, comp, mk in (
        (False, False, "none", H.two_unit_tiled_plan),
        (True, False, "lz4", H.two_unit_tiled_plan),
        (False, True, "none", H.single_unit_plan),
        (True, False, "none", H.two_unit_rolling_plan),
        (False, False, "none", H.two_unit_cols_plan),
    ):
        g, lowered = H.graph(int8)
        lowered[0].consts["weight"] = np.zeros_like(lowered[0].consts["weight"])  # compressible for LZ4
        out.append(emit_plan(g, mk(lowered, xip), lowered, xip=xip, compression=comp))
    # views (tensor flag VIEW): the row Concat's inputs are tensors 2 and 3, among the records the mutations reach
    import sys
    import tempfile
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
    import test_rt_views as V

    with tempfile.TemporaryDirectory() as d:
        _p, prep = V._prepared(Path(d), False)
        out.append(emit_plan(prep.graph, V._plan(prep, 1 << 22, True), prep.lowered, xip=True))
    assert any(t.is_view for t in read_plan(out[-1]).tensors[:3])
    return out


def _mutations(base: bytes):
    for spec in F.SECTIONS:
        if spec.record is None:
            continue
        e = F.SECTION.unpack(base, F.DIR_OFFSET + (int(spec.id) - 1) * F.SECTION.size)
        rec = spec.record
        for r in range(min(int(e["count"]), 3)):  # type: ignore[call-overload]
            for f in rec.fields:
                if f.type not in ("u32", "i32"):
                    continue
                for el in sorted({0, f.count - 1}):
                    pos = int(e["offset"]) + r * rec.size + rec.offsets()[f.name] + el * 4  # type: ignore[arg-type]
                    cur = struct.unpack_from("<I", base, pos)[0]
                    near = {(cur + 16) & 0xFFFFFFFF, (cur - 1) & 0xFFFFFFFF}
                    for v in sorted({0, 1, 16, 0xFFFFFFFF, 0x80000000} | near):
                        if v != cur:
                            b = bytearray(base)
                            struct.pack_into("<I", b, pos, v)
                            yield f"{spec.id.name}[{r}].{f.name}[{el}]={v:#x}", seal(b)


def test_c_loader_and_python_reader_agree(session_cls) -> None:
    Session, PlanError = session_cls

    def py(d: bytes) -> str:
        try:
            read_plan(d)
            return "OK"
        except PlanFormatError as e:
            return e.status

    def c(d: bytes) -> str:
        try:
            Session(d)
            return "OK"
        except PlanError as e:
            return e.name.removeprefix("TGRS_")

    disagreements = []
    n = 0
    for base in _bases():
        assert py(base) == c(base) == "OK"
        for what, data in _mutations(base):
            n += 1
            p, cc = py(data), c(data)
            if p != cc:
                disagreements.append((what, p, cc))
    assert n > 1000
    assert not disagreements, f"{len(disagreements)} of {n} disagree, e.g. {disagreements[:5]}"
