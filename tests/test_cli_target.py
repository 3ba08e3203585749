"""`--target` on compile, verify and codegen (docs/cli.md): one option, one meaning set with analyze's: the core the
plan is for, whose latency estimate it is and whose kernels' weight arrangement it carries (docs/format.md)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from tigris.cli import main
from tigris.emit.reader import read_plan

REPO = Path(__file__).resolve().parents[1]
KWS = REPO / "tests" / "models" / "kws_dscnn_int8.onnx"


def invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _compile(tmp: Path, name: str, *extra: str) -> bytes:
    out = tmp / f"{name}.tgrs"
    res = invoke("compile", KWS, "-m", "32K", "-o", out, "-q", *extra)
    assert res.exit_code == 0, res.output
    return out.read_bytes()


def test_compile_target_packs_and_generic_is_the_default(tmp_path: Path) -> None:
    default = _compile(tmp_path, "default")
    generic = _compile(tmp_path, "generic", "--target", "generic")
    packed = _compile(tmp_path, "m4", "--target", "cortex-m4", "--objective", "traffic")
    assert default == generic  # generic arranges nothing: the plans of a compiler without targets
    assert read_plan(default).target_name == "generic" and read_plan(default).arrangements() == {}
    p = read_plan(packed)
    assert p.target_name == "cortex-m4" and set(p.arrangements().values()) == {"fc_rows4"}
    assert _compile(tmp_path, "m4b", "--target", "cortex-m4", "--objective", "traffic") == packed


def test_run_executes_the_packed_plan_on_the_host(tmp_path: Path) -> None:
    _compile(tmp_path, "g")
    _compile(tmp_path, "p", "--target", "cortex-m4", "--objective", "traffic")
    x = np.random.default_rng(0).integers(-128, 128, (1, 49, 10, 1)).astype(np.int8)
    np.save(tmp_path / "x.npy", x)
    got = {}
    for k in ("g", "p"):
        name = read_plan((tmp_path / f"{k}.tgrs").read_bytes()).inputs[0].name
        res = invoke("run", tmp_path / f"{k}.tgrs", "--input", f"{name}={tmp_path / 'x.npy'}", "--output",
                     tmp_path / f"{k}.npz", "-q")
        assert res.exit_code == 0, res.output
        got[k] = dict(np.load(tmp_path / f"{k}.npz"))
    assert got["g"].keys() == got["p"].keys()
    for n in got["g"]:
        assert np.array_equal(got["g"][n], got["p"][n])


def test_codegen_target_refuses_a_plan_packed_for_another_core(tmp_path: Path) -> None:
    _compile(tmp_path, "g")
    _compile(tmp_path, "p", "--target", "cortex-m4", "--objective", "traffic")
    res = invoke("codegen", tmp_path / "p.tgrs", "-o", tmp_path / "a.c", "--target", "cortex-m55")
    assert res.exit_code == 2, res.output
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "cortex-m4" in err[0] and "p.tgrs" in err[0]
    assert not (tmp_path / "a.c").exists() and not (tmp_path / "a.h").exists()
    for plan, target in (("p", "cortex-m4"), ("g", "cortex-m55"), ("p", None)):
        extra = ["--target", target] if target else []
        res = invoke("codegen", tmp_path / f"{plan}.tgrs", "-o", tmp_path / f"{plan}{target}.c", "-q", *extra)
        assert res.exit_code == 0, res.output


def test_verify_target_runs_and_compares_the_packed_plan() -> None:
    res = invoke("verify", KWS, "-m", "32K", "--target", "cortex-m4", "--json")
    assert res.exit_code == 0, res.output
    j = json.loads(res.stdout)
    assert j["pass"] is True and j["target"] == "cortex-m4" and j["arranged_ops"] == 1
    assert all(o["reference_bit_exact"] for o in j["outputs"])


def test_unknown_target_is_a_usage_error() -> None:
    for cmd in ("compile", "verify"):
        res = invoke(cmd, KWS, "-m", "32K", "--target", "cortex-m7")
        assert res.exit_code == 2 and "Traceback" not in res.output


def test_inspect_names_the_target(tmp_path: Path) -> None:
    _compile(tmp_path, "p", "--target", "cortex-m4", "--objective", "traffic")
    _compile(tmp_path, "g")
    j = json.loads(invoke("inspect", tmp_path / "p.tgrs", "--json").stdout)
    assert j["header"]["target"] == "cortex-m4" and j["header"]["arranged_ops"] == 1
    assert "target cortex-m4 (1 ops with arranged weights)" in invoke("inspect", tmp_path / "p.tgrs").stdout
    j = json.loads(invoke("inspect", tmp_path / "g.tgrs", "--json").stdout)
    assert j["header"]["target"] == "generic" and j["header"]["arranged_ops"] == 0
    assert "target" not in invoke("inspect", tmp_path / "g.tgrs").stdout.splitlines()[0]
