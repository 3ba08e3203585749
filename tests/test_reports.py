"""What a user reads (docs/cli.md): the analyze report (golden text, wide and 80 columns), the JSON of every command
(envelope and fields), errors in JSON mode, the "does not fit" advice, the memory picture, the latency estimate and
the planning objective. Runs on the small models of the repository (mnist-8, kws_dscnn_int8)."""
from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from tigris import __version__, api
from tigris.cli import main

REPO = Path(__file__).resolve().parents[1]
MNIST = REPO / "examples" / "mnist-8.onnx"
KWS = REPO / "tests" / "models" / "kws_dscnn_int8.onnx"
GOLDEN = REPO / "tests" / "golden"
# The golden text pins its cost coefficients: recalibrating tigris/cost_model.json must not change it.
PINNED = {"TIGRIS_COST_MODEL": str(GOLDEN / "cost_model.json")}
UPDATE = os.environ.get("TIGRIS_UPDATE_GOLDEN") == "1"  # regenerate the golden files instead of comparing


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False, env=env)


def envelope_ok(j: dict, command: str) -> None:
    assert j["tool"] == {"name": "tigris", "version": __version__}
    assert j["schema"] == api.SCHEMA_VERSION
    assert j["command"] == command


# ---------------------------------------------------------------------------------------------------------------
# Sizes as the options accept them
# ---------------------------------------------------------------------------------------------------------------
@given(st.integers(min_value=0, max_value=2**34))
@settings(max_examples=300, deadline=None)
def test_format_size_reads_back(n):
    assert api.parse_size(api.format_size(n)) == n


def test_format_size_examples():
    assert api.format_size(1024**3) == "1G"
    assert api.format_size(19200) == "18.75K"
    assert api.format_size(64 * 1024) == "64K"
    assert api.format_size(30144) == "30144"  # 29.4375K: not exact to two decimals, so bytes
    assert api.format_size(1536 * 1024) == "1.5M"


# ---------------------------------------------------------------------------------------------------------------
# Golden text
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("width,golden", [(None, "analyze_mnist_wide.txt"), (80, "analyze_mnist_80.txt")])
def test_analyze_text_golden(width, golden):
    args = ["analyze", MNIST, "-m", "16K", "--xip", "-v", "--target", "cortex-m4", "--clock", "168M"]
    if width:
        args += ["--width", str(width)]
    res = invoke(*args, env=PINNED)
    assert res.exit_code == 0, res.output
    text = res.stdout
    path = GOLDEN / golden
    if UPDATE:
        path.write_text(text)
    assert text == path.read_text()
    lines = text.splitlines()
    if width:
        # a wide table is split into column groups and prose is wrapped, instead of being cut
        assert max(len(line) for line in lines) <= width
    else:
        assert any(len(line) > 120 for line in lines)  # not cut at 80 columns when not a terminal
    assert "…" not in text
    for name in ("Convolution28", "Plus30", "Pooling66", "Convolution110", "Pooling160", "Times212", "Plus214"):
        assert name in text
    assert [line for line in lines if line.startswith("fits: ")] and "PSRAM (slow arena)" in text


def test_analyze_text_has_no_unlimited_for_zero_slow_and_no_halo_untiled():
    res = invoke("analyze", MNIST, "-m", "96K", "-s", "0", "-v")
    assert res.exit_code == 0, res.output
    assert "0 (no PSRAM)" in res.stdout
    assert "unlimited" not in res.stdout.split("slow arena")[1].splitlines()[0]
    assert res.stdout.strip().splitlines()[-1].startswith("fits: ") and "no PSRAM" in res.stdout.splitlines()[-1]
    j = json.loads(invoke("analyze", MNIST, "-m", "96K", "-s", "0", "--json").stdout)
    assert j["slow"]["budget_bytes"] == 0
    assert all(s["halo"] is None for s in j["stages"] if not s["tiled"])
    assert all(r["halo_rows"] is None and r["tile_rows"] is None for r in j["layers"] if not r["tiled"])


def test_sizes_in_text_are_accepted_inputs():
    res = invoke("analyze", KWS, "-m", "1G")
    assert res.exit_code == 0, res.output
    assert "1G" in res.stdout and "MiB" not in res.stdout and "KiB" not in res.stdout


def test_unscheduled_peak_explained_and_weight_copies_shown():
    res = invoke("analyze", KWS, "-m", "64K")
    assert res.exit_code == 0
    assert "weight copies" in res.stdout and "unscheduled peak" in res.stdout
    j = json.loads(invoke("analyze", KWS, "-m", "64K", "--json").stdout)
    fb = j["fast_breakdown"]
    assert fb["weight_prefix_bytes"] > 0
    assert fb["weight_prefix_bytes"] + fb["activation_and_scratch_bytes"] == j["fast"]["peak_bytes"]


# ---------------------------------------------------------------------------------------------------------------
# Analyze JSON
# ---------------------------------------------------------------------------------------------------------------
def test_analyze_json_layers_and_totals():
    res = invoke("analyze", MNIST, "-m", "16K", "--xip", "--json")
    assert res.exit_code == 0, res.output
    j = json.loads(res.stdout)
    envelope_ok(j, "analyze")
    prep = api.prepare(MNIST)
    assert [r["name"] for r in j["layers"]] == [op.name for op in prep.graph.ops]
    for r in j["layers"]:
        assert set(r) == {"index", "name", "type", "kernel", "output", "shape", "dtype", "macs", "weight_bytes",
                          "activation_bytes", "stage", "tiled", "tile_rows", "tile_cols", "halo_rows", "recompute_macs",
                          "instructions", "cycles"}
    assert sum(r["macs"] for r in j["layers"]) == j["model"]["macs"]
    assert sum(r["recompute_macs"] for r in j["layers"]) == j["tiling"]["recompute_macs"]
    ram = j["ram"]
    # caller buffers: float32 1x1x28x28 in, float32 1x10 out
    assert ram["io_input_bytes"] == 28 * 28 * 4 and ram["io_output_bytes"] == 40
    assert ram["total_ram_bytes"] == ram["fast_arena_bytes"] + ram["slow_arena_bytes"] + 3136 + 40
    assert ram["fast_arena_bytes"] == j["fast"]["peak_bytes"] and ram["slow_arena_bytes"] == j["slow"]["peak_bytes"]
    assert ram["flash_bytes"] == j["flash"]["plan_bytes"]
    assert j["verdict"] == (f"fits: {api.format_size(ram['fast_arena_bytes'])} SRAM (fast arena) + "
                            f"{api.format_size(ram['slow_arena_bytes'])} PSRAM (slow arena) + 3176 I/O buffers; "
                            f"{api.format_size(ram['flash_bytes'])} flash (plan)")
    excluded = json.loads(invoke("analyze", MNIST, "-m", "16K", "--xip", "--json", "--io-buffers", "excluded").stdout)
    assert excluded["ram"]["total_ram_bytes"] == ram["fast_arena_bytes"] + ram["slow_arena_bytes"]
    assert "I/O" not in excluded["verdict"]
    # in-arena: the firmware exchanges I/O at its homes inside the arenas (codegen --io in-arena), nothing is added
    in_arena = json.loads(invoke("analyze", MNIST, "-m", "16K", "--xip", "--json", "--io-buffers", "in-arena").stdout)
    assert in_arena["ram"]["io_buffers"] == "in-arena"
    assert in_arena["ram"]["total_ram_bytes"] == ram["fast_arena_bytes"] + ram["slow_arena_bytes"]
    assert in_arena["ram"]["sram_bytes"] == ram["fast_arena_bytes"]
    assert in_arena["verdict"].endswith("I/O inside the arena; " + f"{api.format_size(ram['flash_bytes'])} flash (plan)")
    assert api.firmware_ram(api.compile_model(MNIST, "16K", xip=True).plan_bytes, io="in-arena")["total_ram_bytes"] \
        == in_arena["ram"]["total_ram_bytes"]


def test_analyze_output_file_quiet_and_html(tmp_path):
    report = tmp_path / "report.json"
    page = tmp_path / "report.html"
    res = invoke("analyze", MNIST, "-m", "64K", "-q", "-o", report, "--html", page)
    assert res.exit_code == 0
    assert res.stdout == ""
    j = json.loads(report.read_text())
    envelope_ok(j, "analyze")
    assert j["fits"] is True
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text and "Convolution28" in text


def test_does_not_fit_suggestions_fit():
    res = invoke("analyze", KWS, "-m", "512", "--json")
    assert res.exit_code == 1
    j = json.loads(res.stdout)
    envelope_ok(j, "analyze")
    assert j["fits"] is False and j["verdict"].startswith("does not fit: ")
    lim = j["limiting_op"]
    assert lim["op"] in [op.name for op in api.prepare(KWS).graph.ops] and lim["need_bytes"] > j["min_fast_budget_bytes"] - 16
    for key, extra in (("min_fast_budget", []), ("min_fast_budget_xip", ["--xip"])):
        suggestion = j[key]
        assert api.parse_size(suggestion) == j[key + "_bytes"]
        assert invoke("analyze", KWS, "-m", suggestion, *extra, "-q").exit_code == 0, (key, suggestion)
    assert j["min_fast_budget_xip_bytes"] <= j["min_fast_budget_bytes"]  # --xip never needs more
    text = invoke("analyze", KWS, "-m", "512").stdout
    assert f"-m {j['min_fast_budget']}" in text and f"with --xip: -m {j['min_fast_budget_xip']}" in text
    assert f"set by op {lim['op']}" in text


# ---------------------------------------------------------------------------------------------------------------
# JSON on every command, errors too
# ---------------------------------------------------------------------------------------------------------------
def test_json_of_every_command(tmp_path):
    plan = tmp_path / "m.tgrs"
    res = invoke("compile", MNIST, "-m", "64K", "-o", plan, "--json")
    assert res.exit_code == 0, res.output
    j = json.loads(res.stdout)
    envelope_ok(j, "compile")
    assert j["file"] == str(plan) and j["plan_bytes"] == plan.stat().st_size and len(j["sha256"]) == 64
    assert j["analysis"]["fits"] is True
    assert invoke("compile", MNIST, "-m", "64K", "-o", plan, "-q").stdout == ""

    res = invoke("codegen", plan, "-o", tmp_path / "m.c", "--json")
    assert res.exit_code == 0, res.output
    j = json.loads(res.stdout)
    envelope_ok(j, "codegen")
    assert j["c_file"] == str(tmp_path / "m.c") and Path(j["header"]).exists()
    assert j["fast_arena_bytes"] > 0 and j["inputs"] == [{"name": "Input3", "nbytes": 3136}]

    for f, kind in ((plan, "plan"), (MNIST, "onnx")):
        res = invoke("inspect", f, "--json")
        assert res.exit_code == 0, res.output
        j = json.loads(res.stdout)
        envelope_ok(j, "inspect")
        assert j["kind"] == kind
    assert [r["name"] for r in j["layers"]][:2] == ["Convolution28", "Plus30"]

    np.save(tmp_path / "x.npy", np.zeros((1, 1, 28, 28), np.float32))
    res = invoke("run", plan, "--input", f"Input3={tmp_path / 'x.npy'}", "--output", tmp_path / "o.npz", "--json")
    assert res.exit_code == 0, res.output
    j = json.loads(res.stdout)
    envelope_ok(j, "run")
    assert j["outputs"] == {"Plus214_Output_0": [1, 10]} and j["dtypes"] == {"Plus214_Output_0": "float32"}
    assert 0 < j["fast_peak_bytes"] <= 64 * 1024


@pytest.mark.parametrize("args,command,code", [
    (["analyze", "missing.onnx", "-m", "64K", "--json"], "analyze", 2),
    (["analyze", str(MNIST), "-m", "12Q", "--json"], "analyze", 2),
    (["compile", str(MNIST), "-m", "1K", "--json"], "compile", 1),
    (["inspect", "missing.tgrs", "--json"], "inspect", 2),
    (["codegen", "missing.tgrs", "-o", "x.c", "--json"], "codegen", 2),
])
def test_json_errors_on_stdout(tmp_path, args, command, code):
    args = [str(tmp_path / "x.c") if a == "x.c" else a for a in args]
    res = invoke(*args)
    assert res.exit_code == code, res.output
    j = json.loads(res.stdout)
    envelope_ok(j, command)
    assert j["exit"] == code and j["error"] and "\n" not in j["error"]
    assert res.stderr.startswith("error: ")


# ---------------------------------------------------------------------------------------------------------------
# inspect as tables
# ---------------------------------------------------------------------------------------------------------------
def test_inspect_text_is_tables(tmp_path):
    plan = tmp_path / "m.tgrs"
    assert invoke("compile", MNIST, "-m", "16K", "--xip", "-o", plan).exit_code == 0
    text = invoke("inspect", plan).stdout
    assert "{'" not in text and "[{" not in text and "=[" not in text
    assert "stage  unit" in text and "tile 0: Input3 0-" in text
    text = invoke("inspect", MNIST).stdout
    assert "layer" in text and "Convolution110" in text and "op type" in text and "{'" not in text


@pytest.mark.shared
def test_inspect_tflite_text_and_json(shared_models):
    tfl = shared_models / "tflite" / "kws_dscnn_int8.tflite"
    res = invoke("inspect", tfl)
    assert res.exit_code == 0, res.output
    assert "TFLite schema" in res.stdout and "op type" in res.stdout and "{'" not in res.stdout
    j = json.loads(invoke("inspect", tfl, "--json").stdout)
    envelope_ok(j, "inspect")
    assert j["kind"] == "tflite" and j["layers"]


# ---------------------------------------------------------------------------------------------------------------
# The memory picture
# ---------------------------------------------------------------------------------------------------------------
def test_plot_svg_lists_every_tensor(tmp_path):
    pytest.importorskip("matplotlib", reason="the [plot] extra is part of the test extra")
    svg = tmp_path / "t.svg"
    res = invoke("analyze", MNIST, "-m", "16K", "--xip", "--plot", svg, "-q")
    assert res.exit_code == 0, res.output
    root = ET.parse(svg).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    titles = [t.text for t in root.iter(f"{ns}title")]
    ids = [g.get("id") for g in root.iter(f"{ns}g") if (g.get("id") or "").startswith("tensor-")]
    a = api.analyze(MNIST, "16K", xip=True, tradeoff=False)
    buffers = {n for u in a.plan.units for n in u.fast} | set(a.plan.slow)
    named = {t.split(":")[0].split(" (also")[0] for t in titles if t}
    assert buffers <= named
    assert len(ids) == sum(len(u.fast) for u in a.plan.units) + len(a.plan.slow)
    # deterministic bytes
    svg2 = tmp_path / "t2.svg"
    invoke("analyze", MNIST, "-m", "16K", "--xip", "--plot", svg2, "-q")
    assert svg.read_bytes() == svg2.read_bytes()


def test_plot_without_matplotlib_is_one_line_exit_2(tmp_path, monkeypatch):
    import tigris.plot

    monkeypatch.setattr(tigris.plot, "have_matplotlib", lambda: False)
    res = invoke("analyze", MNIST, "-m", "64K", "--plot", tmp_path / "t.svg")
    assert res.exit_code == 2
    assert res.stderr.strip() == f"error: {tigris.plot.MISSING} (--plot)"
    assert not (tmp_path / "t.svg").exists()


# ---------------------------------------------------------------------------------------------------------------
# Latency estimate and objective
# ---------------------------------------------------------------------------------------------------------------
def test_latency_estimate_in_ms():
    res = invoke("analyze", KWS, "-m", "64K", "--target", "cortex-m4", "--clock", "168M", "--json")
    assert res.exit_code == 0
    lat = json.loads(res.stdout)["latency"]
    assert lat["target"] == "cortex-m4" and lat["clock_hz"] == 168_000_000
    assert lat["ms"] == pytest.approx(lat["cycles"] / 168e6 * 1e3, rel=1e-3)
    assert lat["instructions"] == lat["kernel_instructions"] + lat["overhead_instructions"]
    text = invoke("analyze", KWS, "-m", "64K", "--target", "cortex-m4", "--clock", "168M").stdout
    assert f"{lat['ms']:.2f} ms at 168 MHz" in text
    slow = json.loads(invoke("analyze", MNIST, "-m", "16K", "--xip", "--target", "cortex-m4", "--clock", "168M",
                             "--psram-bandwidth", "10M", "--json").stdout)["latency"]
    assert slow["slow_memory_ms"] > 0 and slow["psram_bandwidth"] == 10 * 1024 * 1024


def test_objective_trades_recompute_for_traffic():
    """mnist at 16K --xip: with halo reuse (the default) the traffic objective's tiled plan recomputes nothing, so
    the recompute objective pays no traffic for avoiding recompute; the recomputing planner's traffic plan does
    recompute halos, and the recompute objective then pays traffic to avoid them (at 32K the whole model fits as one
    unit since its Adds run in place)."""
    runs = {o: json.loads(invoke("analyze", MNIST, "-m", "16K", "--xip", "--objective", o, "--json").stdout)
            for o in ("traffic", "recompute", "latency")}
    traffic, recompute = runs["traffic"], runs["recompute"]
    assert traffic["tiling"]["recompute_macs"] == recompute["tiling"]["recompute_macs"] == 0
    t_bytes = traffic["slow"]["spill_bytes"] + traffic["slow"]["reload_bytes"]
    r_bytes = recompute["slow"]["spill_bytes"] + recompute["slow"]["reload_bytes"]
    assert t_bytes == r_bytes
    from tigris.plan import plan_memory

    prep = api.prepare(MNIST)
    kw = api._plan_kwargs(prep, True, 0.0)
    rec_traffic = plan_memory(prep.graph, 16 * 1024, halo_reuse=False, **kw)
    rec_recompute = plan_memory(prep.graph, 16 * 1024, halo_reuse=False, **api._plan_kwargs(prep, True, 1e6))
    assert rec_traffic.recompute_macs > 0 == rec_recompute.recompute_macs
    assert rec_traffic.spill_bytes + rec_traffic.reload_bytes < rec_recompute.spill_bytes + rec_recompute.reload_bytes
    assert t_bytes < rec_traffic.spill_bytes + rec_traffic.reload_bytes  # reuse also reloads no halo row twice
    trade = {t["objective"]: t for t in traffic["objective"]["tradeoff"]}
    assert set(trade) == {"traffic", "recompute", "latency"} and trade["traffic"]["chosen"]
    assert trade["recompute"]["recompute_macs"] == 0 and trade["traffic"]["slow_traffic_bytes"] == t_bytes
    # the default is latency, with a target and without one (the generic core's estimate)
    j = json.loads(invoke("analyze", MNIST, "-m", "32K", "--xip", "--target", "cortex-m4", "--json").stdout)
    assert j["objective"]["name"] == "latency"
    j = json.loads(invoke("analyze", MNIST, "-m", "32K", "--json").stdout)
    assert j["objective"]["name"] == "latency" and j["objective"]["recompute_weight"] > 0


@pytest.mark.parametrize("model,budget", [(MNIST, "16K"), (MNIST, "32K"), (MNIST, "96K"), (KWS, "16K"), (KWS, "1G")])
def test_estimate_prices_the_executor_calls(model, budget):
    """The calls the estimate prices follow the executor (bench/latency_model.py also checks them against the
    guest's log): one per op and tile with a non-empty band (in a rolling unit: with fresh rows, halo reuse); untiled,
    they compute exactly the model's MACs; a tiled plan that recomputes no halo computes no more (rows no later op
    reads, such as those a 3x3/3 pool drops, are not computed at all)."""
    from tigris import cost
    from tigris.plan.spatial import fresh_rows

    a = api.analyze(model, budget, xip=True, tradeoff=False, objective="traffic")
    prep = a.prepared
    calls = list(cost.calls(prep.graph, a.plan, prep.lowered))
    want = 0
    for unit in a.plan.units:
        tiles = unit.tile_rows or [None]
        for t, band in enumerate(tiles):
            for i in unit.ops:
                if prep.lowered[i].alias:
                    continue
                out = a.plan.alias_of.get(prep.graph.ops[i].outputs[0], prep.graph.ops[i].outputs[0])
                r = band and (fresh_rows(tiles[t - 1][out] if t else None, band[out]) if out in unit.rolling
                              else band[out])
                want += band is None or r[1] > r[0]
    assert len(calls) == want
    assert {c.op for c in calls} == {i for i, low in enumerate(prep.lowered) if not low.alias}
    if not any(u.tile_rows for u in a.plan.units):
        assert sum(c.macs for c in calls) == a.json["model"]["macs"]
    elif a.plan.recompute_macs == 0:
        assert sum(c.macs for c in calls) <= a.json["model"]["macs"]


def test_html_without_matplotlib_says_how_to_get_the_picture(tmp_path, monkeypatch):
    import tigris.plot

    monkeypatch.setattr(tigris.plot, "have_matplotlib", lambda: False)
    page = tmp_path / "r.html"
    res = invoke("analyze", MNIST, "-m", "64K", "--html", page, "-q")
    assert res.exit_code == 0, res.output
    text = page.read_text()
    assert "<svg" not in text and "pip install &#x27;tigris[plot]&#x27;" in text and "Convolution28" in text


def test_verify_json_has_the_envelope():
    res = invoke("verify", MNIST, "-m", "64K", "--json")
    assert res.exit_code == 0, res.output
    j = json.loads(res.stdout)
    envelope_ok(j, "verify")
    assert j["pass"] is True and j["plan"]["fits"] is True


def test_latency_objective_is_never_slower_than_the_others():
    """mobilenet-like trade-offs in small: kws_dscnn_int8 at a budget that forces tiling, with slow memory priced."""
    j = json.loads(invoke("analyze", KWS, "-m", "12K", "--xip", "--target", "cortex-m4", "--clock", "168M",
                          "--psram-bandwidth", "20M", "--json").stdout)
    assert j["objective"]["name"] == "latency"
    rows = [t for t in j["objective"]["tradeoff"] if t["fits"]]
    chosen = [t for t in rows if t["chosen"]]
    assert len(chosen) == 1 and chosen[0]["ms"] == min(t["ms"] for t in rows)
    assert chosen[0]["ms"] == j["latency"]["ms"]
