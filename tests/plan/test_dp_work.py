"""The unit DP's work on a split graph (docs/memory-planning.md "Planning time"): how many op steps its ranges take
and how many band layouts it asks for, counted, not timed (bench/analyze_cost.py has the CPU seconds). A change
that re-scans every range's inputs and outputs (cubic on a split graph of thousands of ops), or grows tiled ranges
past the point where their copied weights alone exceed the budget, fails here."""
from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from tigris import api
from tigris.plan import search
from tigris.plan.temporal import stage_io

MNIST = Path(__file__).resolve().parents[2] / "examples" / "mnist-8.onnx"


def test_dp_work_on_a_split_graph_is_bounded(monkeypatch):
    c: Counter = Counter()
    bands, extend, dp, io = search.unit_bands, search._RangeIO.extend, search.dp_units, stage_io
    inside = [False]

    def counted_bands(*a, **k):
        c["bands"] += inside[0]
        return bands(*a, **k)

    def counted_extend(self, stop):
        c["steps"] += stop - self.stop
        return extend(self, stop)

    def counted_dp(graph, *a):
        c["dps"] += 1
        c["ops"] = max(c["ops"], len(graph.ops))
        inside[0] = True
        try:
            return dp(graph, *a)
        finally:
            inside[0] = False

    def counted_io(bufs, u, start, stop):
        c["io_ops"] += (stop - start) * inside[0]  # a range re-scanned by the DP
        return io(bufs, u, start, stop)

    monkeypatch.setattr(search, "unit_bands", counted_bands)
    monkeypatch.setattr(search._RangeIO, "extend", counted_extend)
    monkeypatch.setattr(search, "dp_units", counted_dp)
    # (the DP keeps its ranges' I/O itself: a stage_io it imports again is counted here)
    monkeypatch.setattr(search, "stage_io", counted_io, raising=False)
    logging.getLogger().setLevel(logging.ERROR)
    # 1,952 B without XIP: the 16-channel conv and the classifier run as input-channel groups (a 50-op split graph)
    a = api.analyze(MNIST, 1952, emit=False, tradeoff=False)
    monkeypatch.undo()
    assert a.fits and any(g["channels"] == "input" for g in a.json["weight_groups"])
    assert c["ops"] == 50 and c["dps"] == 9
    # measured 903 steps and 1,291 layouts (1,783 steps and 1,359 layouts without the weight bound; a re-scan of
    # every range was quadratic in its length on top)
    assert c["steps"] <= 1000
    assert c["bands"] <= 1400
    assert c["io_ops"] == 0
