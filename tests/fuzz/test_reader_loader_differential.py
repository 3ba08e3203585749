"""Reader = loader: the Python plan reader and the C loader give the same verdict and the same TGRS_ERR_* code on
every plan.

Seeded mutants of real plans (tests/fuzz/_rt_fuzz_plans.py: the runtime tests' graphs in every weight mode, tiled,
chained and accumulating, and small shared models when ../shared is present) go through `read_plan` and through
`tgrs_load_diag` of the host runtime build. docs/format.md fixes one check order, so not only accept/refuse but the
code must match, on every mutant. The reader runs the kind checks (step 17) through the same C functions, so this
compares the two implementations of steps 2-16 and the reader's handling of step 17's verdict.

TIGRIS_DIFF_MUTANTS sets the count (default 5000, a few seconds per thousand), TIGRIS_FUZZ_SEED the sequence.
"""
from __future__ import annotations

import os
import random

import pytest

import _rt_fuzz_plans as FP
from tigris_testing import host_runtime
from tigris.emit import format as F
from tigris.emit.reader import PlanFormatError, read_plan

MUTANTS = int(os.environ.get("TIGRIS_DIFF_MUTANTS", "5000"))
SEED = int(os.environ.get("TIGRIS_FUZZ_SEED", "20261129"))
NAME_BY_CODE = {s.code: s.name for s in F.STATUS}


@pytest.fixture(scope="module")
def c_load():
    rt = host_runtime()
    ffi, lib = rt.ffi, rt.lib

    def load(data: bytes) -> str:
        raw = ffi.new("uint8_t[]", len(data) + 16)
        shift = -int(ffi.cast("uintptr_t", raw)) % 16
        ffi.memmove(raw + shift, data, len(data))
        rc = int(lib.tgrs_load_diag(ffi.new("tgrs_plan *"), raw + shift, len(data), ffi.new("int32_t *")))
        return NAME_BY_CODE.get(rc, f"code {rc}")

    return load


def _py(data: bytes) -> str:
    try:
        read_plan(data)
        return "OK"
    except PlanFormatError as e:
        return e.status


def test_reader_and_loader_agree_on_seeded_mutants(c_load) -> None:
    bases = FP.base_plans()
    for b in bases:  # the bases themselves are valid for both
        assert _py(b) == c_load(b) == "OK"
    rng = random.Random(SEED)
    disagree = []
    codes: dict[str, int] = {}
    for i in range(MUTANTS):
        data = FP.mutate(bases[i % len(bases)], rng)
        py, c = _py(data), c_load(data)
        codes[c] = codes.get(c, 0) + 1
        if py != c:
            disagree.append((i, i % len(bases), py, c))
    assert not disagree, (len(disagree), disagree[:10])
    # The mutants reach deep: many distinct refusals, the kind checks among them, and some still load.
    assert len(codes) >= 12, codes
    assert codes.get("OK", 0) >= MUTANTS // 100, codes
    assert any(k in codes for k in ("ERR_PARAM", "ERR_SHAPE", "ERR_TILE", "ERR_DTYPE")), codes
