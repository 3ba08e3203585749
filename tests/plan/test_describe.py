"""The report helpers: stage table rows, totals, and the 'why it does not fit' diagnosis."""
from __future__ import annotations

from plan_graphs import G

from tigris.plan import plan_memory
from tigris.plan.describe import diagnose, plan_summary, stage_table


def three_convs():
    g = G()
    x = g.input("x", (1, 1, 16, 16))
    return g.graph([g.conv(g.conv(g.conv(x, 1), 1), 1)])


def test_stage_table_and_summary_of_a_chain():
    graph = three_convs()
    plan = plan_memory(graph, 500, strategy="spec", xip=True)
    rows = stage_table(plan, graph)
    assert [r["op_names"] for r in rows] == [["op0"], ["op1"], ["op2"]]
    assert [r["tile_h"] for r in rows] == [15, 14, 13] and all(r["tiles"] == 2 and r["chain"] == 0 for r in rows)
    assert [r["halo"] for r in rows] == [2, 2, 2]
    s = plan_summary(plan, graph)
    assert s["chains"] == 1 and s["tiled_stages"] == 3 and s["tiles"] == 2
    assert s["fast_peak_bytes"] == s["timeline_peak_bytes"] == 496
    assert s["spill_bytes"] == 256 and s["recompute_share"] == (4 + 2) * 16 * 9 / (3 * 256 * 9)


def test_diagnosis_names_the_op_and_finds_the_smallest_budget():
    graph = three_convs()
    d = diagnose(graph, 48, xip=True, col_tiles=False)
    assert not d.fits and d.stage == 0 and d.op == "op0" and d.op_type == "Conv"
    # one output row per tile: a 3x3 conv reads 3 input rows (48 B) and writes 1 row (16 B)
    assert d.need_bytes == 64 and "64 bytes" in d.message
    assert d.min_fast_budget == 64
    assert diagnose(graph, d.min_fast_budget, xip=True, col_tiles=False).fits
    assert not diagnose(graph, d.min_fast_budget - 16, search=False, xip=True, col_tiles=False).fits


def test_diagnosis_with_column_tiles():
    """Below the row floor the width is cut too: one output pixel of the first 3x3 conv reads a 3x3 window (9 B,
    a 16-byte buffer) and writes one byte (16 B)."""
    graph = three_convs()
    assert diagnose(graph, 48, xip=True).fits
    d = diagnose(graph, 16, xip=True)
    assert not d.fits and d.op == "op0" and d.need_bytes == 32
    assert "one output row of 1 column per tile" in d.message
    assert d.min_fast_budget == 32
