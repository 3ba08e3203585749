"""One SRAM region on the user surface (``--one-region``, ``tigris.api.analyze(one_region=True)``): with ``-s 0``
analyze reports the SRAM-only figure of both arenas in one block where it needs fewer bytes than two arenas, with the
-m/-s that plan it; compile with those budgets and ``--one-region`` writes a ONE_REGION plan of that size, which the
host runtime runs in one block (high-water marks equal to the plan's peaks, outputs as the untiled plan's) and
``verify --one-region`` passes. The model is the MobileNetV3-Small family (float; tests/families), the smallest model
at hand whose later units' buffers gain from the bytes of homes no longer live."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

from tigris.cli import main
from tigris.emit import format as F
from tigris.emit import read_plan
from tigris_testing import host_runtime

sys.path.insert(0, str(Path(__file__).resolve().parent / "families"))
from builders import mobilenet_v3_small  # noqa: E402


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("one_region") / "mbv3_small.onnx"
    onnx.save(mobilenet_v3_small(), str(p))
    return p


@pytest.fixture(scope="module")
def host():
    host_runtime()


def _analyze(model: Path, *args: str) -> dict:
    res = CliRunner().invoke(main, ["analyze", str(model), *args, "--xip", "--json"])
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)


def test_s0_reports_one_region_and_compile_makes_it(model, host, tmp_path):
    from tigris.api import prepare, random_inputs, run_plan
    from tigris.plan.check import check_plan

    j = _analyze(model, "-m", "2K", "-s", "0")
    assert j["fits"] is False
    so = j["sram_only"]
    assert so["total_bytes"] == so["fast_bytes"] + so["slow_bytes"]
    one = so["one_region"]
    assert one is not None and one["total_bytes"] < so["total_bytes"]
    assert one["total_bytes"] == max(one["fast_bytes"], one["slow_bytes"])
    text = CliRunner().invoke(main, ["analyze", str(model), "-m", "2K", "-s", "0", "--xip"]).stdout
    assert (f"without PSRAM as one SRAM region: {one['total_bytes']} bytes of SRAM, -m {one['fast_budget']} "
            f"-s {one['slow_bytes']} --one-region") in text
    assert f"{so['total_bytes']} bytes of SRAM, -m {so['fast_budget']} -s {so['slow_bytes']}" in text
    # compile refuses -s 0 and names both suggestions
    bad = CliRunner().invoke(main, ["compile", str(model), "-m", "2K", "-s", "0", "--xip", "-o",
                                    str(tmp_path / "no.tgrs")])
    assert bad.exit_code == 1 and not (tmp_path / "no.tgrs").exists()
    assert f"as one region: -m {one['fast_budget']} -s {one['slow_bytes']} --one-region" in bad.output
    # the suggestion as the user passes it
    out = tmp_path / "one.tgrs"
    res = CliRunner().invoke(main, ["compile", str(model), "-m", one["fast_budget"], "-s", str(one["slow_bytes"]),
                                    "--one-region", "--xip", "-o", str(out), "-q"])
    assert res.exit_code == 0, res.output
    data = out.read_bytes()
    assert read_plan(data).flags & F.Flag.ONE_REGION
    fit = _analyze(model, "-m", one["fast_budget"], "-s", str(one["slow_bytes"]), "--one-region")
    assert fit["fits"] and fit["ram"]["one_region"]
    assert (fit["fast"]["peak_bytes"], fit["slow"]["peak_bytes"]) == (one["fast_bytes"], one["slow_bytes"])
    assert fit["ram"]["total_ram_bytes"] == one["total_bytes"] + fit["ram"]["io_input_bytes"] + \
        fit["ram"]["io_output_bytes"]
    assert "SRAM (one region" in fit["verdict"]
    # the same budgets as two arenas do not make a ONE_REGION plan
    two = CliRunner().invoke(main, ["compile", str(model), "-m", one["fast_budget"], "--xip", "-o",
                                    str(tmp_path / "two.tgrs"), "-q"])
    assert two.exit_code == 0 and not read_plan((tmp_path / "two.tgrs").read_bytes()).flags & F.Flag.ONE_REGION
    # it runs in one block: the runtime's high-water marks are the plan's peaks, outputs the untiled plan's
    from tigris.api import compile_model

    prep = prepare(model)
    comp = compile_model(model, one["fast_budget"], one["slow_bytes"], xip=True, prepared=prep, one_region=True)
    assert comp.plan_bytes == data and check_plan(comp.analysis.prepared.graph, comp.analysis.plan) == []
    inp = random_inputs(prep, seed=5)
    got = run_plan(data, inp)
    assert (got.fast_peak, got.slow_peak) == (one["fast_bytes"], one["slow_bytes"])
    untiled = run_plan(compile_model(model, "8M", xip=True, prepared=prep).plan_bytes, inp)
    for k, v in untiled.outputs.items():
        np.testing.assert_allclose(got.outputs[k], v, rtol=1e-5, atol=1e-5)


def test_verify_one_region(model, host):
    j = _analyze(model, "-m", "2K", "-s", "0", "--one-region")
    one = j["sram_only"]["one_region"]
    assert j["settings"]["one_region"] and one is not None
    text = CliRunner().invoke(main, ["analyze", str(model), "-m", "2K", "-s", "0", "--xip", "--one-region"]).stdout
    assert "without PSRAM as one SRAM region" in text and "(both arenas in SRAM)" not in text
    res = CliRunner().invoke(main, ["verify", str(model), "-m", one["fast_budget"], "-s", str(one["slow_bytes"]),
                                    "--one-region", "--xip", "--samples", "2", "--json"])
    assert res.exit_code == 0, res.output
    v = json.loads(res.stdout)
    assert v["pass"] is True
