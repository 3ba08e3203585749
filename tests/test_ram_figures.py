"""One RAM figure everywhere: the analyze report's RAM totals (computed from the graph and the memory plan), the
generated header's constants (read from the plan file) and api.firmware_ram agree, byte for byte."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tigris import api
from tigris.codegen import generate_c

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("model, budget, xip", [
    ("examples/mnist-8.onnx", "32K", False),      # float, spills to the slow arena
    ("examples/mnist-8.onnx", "256K", True),      # one stage, no slow arena
    ("tests/models/kws_dscnn_int8.onnx", "32K", False),
])
def test_analyze_header_and_api_agree(model, budget, xip):
    a = api.analyze(REPO / model, budget, xip=xip)
    assert a.fits and a.plan_bytes is not None
    ram = a.json["ram"]
    fw = api.firmware_ram(a.plan_bytes)
    assert ram["io_buffers"] == "separate"  # the default: the caller's buffers are counted beside the arenas
    assert (fw["fast_arena_bytes"], fw["slow_arena_bytes"]) == (ram["fast_arena_bytes"], ram["slow_arena_bytes"])
    assert (fw["input_bytes"], fw["output_bytes"]) == (ram["io_input_bytes"], ram["io_output_bytes"])
    assert fw["total_ram_bytes"] == ram["total_ram_bytes"]
    _, header = generate_c(a.plan_bytes, "m")
    consts = {k: int(v) for k, v in re.findall(r"#define M_([A-Z_]+) (\d+)u", header)}
    assert consts["TOTAL_RAM_BYTES"] == ram["total_ram_bytes"]
    assert consts["IO_BYTES"] == ram["io_input_bytes"] + ram["io_output_bytes"]
    assert consts["FAST_ARENA_BYTES"] + consts["SLOW_ARENA_BYTES"] + consts["IO_BYTES"] == consts["TOTAL_RAM_BYTES"]
