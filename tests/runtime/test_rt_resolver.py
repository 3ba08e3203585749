"""The op resolver (tgrs_run_kernels / tgrs_check_kernels, docs/deploying.md): host firmware built from `tigris
codegen --format core` output, whose generated table names only the plan's kinds.

Oracles: the host runtime (tigris.host.Session, which runs the full registry through tgrs_run) for the output bytes,
bit-exact (int8 plan: tolerance 0); TGRS_ERR_UNSUPPORTED from tgrs_format.h (F.STATUS) for a table without a kind the
plan uses, at init and at run, never a call through NULL (the build runs under -fsanitize=undefined,address when gcc
supports it, so a NULL call would abort instead of returning).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import _rt_plans as P
from tigris.codegen import generate_c
from tigris.emit import format as F
from tigris.host import Session
from tigris.host.build import c_sources, find_sources

CODES = {s.name: s.code for s in F.STATUS}

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "m.h"
#include "tgrs_op.h"

static unsigned char in0[M_INPUT0_BYTES];
static unsigned char out0[M_OUTPUT0_BYTES];
static unsigned char fast[1u << 20] __attribute__((aligned(16)));
static unsigned char slow[1u << 20] __attribute__((aligned(16)));

/* argv: mode (run | none), input file, output file. Prints "init RC" then "run RC FAILED_OP". */
int main(int argc, char **argv)
{
    static const tgrs_kernel_fn none[TGRS_OP_COUNT + 1u];
    const void *ins[1];
    void *outs[1];
    tgrs_stats st;
    FILE *f;
    int rc;
    if (argc != 4 || (f = fopen(argv[2], "rb")) == NULL || fread(in0, 1, sizeof in0, f) != sizeof in0) {
        return 2;
    }
    fclose(f);
    rc = m_init();
    printf("init %d\n", rc);
    if (rc != TGRS_OK) {
        return 0;
    }
    ins[0] = in0;
    outs[0] = out0;
    if (strcmp(argv[1], "none") == 0) {
        rc = tgrs_run_kernels(m_plan(), none, TGRS_OP_COUNT + 1u, fast, sizeof fast, slow, sizeof slow, ins, outs,
                              &st);
    } else {
        rc = m_run_stats(ins, outs, &st);
    }
    printf("run %d %d\n", rc, (int)st.failed_op);
    if ((f = fopen(argv[3], "wb")) == NULL || fwrite(out0, 1, sizeof out0, f) != sizeof out0) {
        return 3;
    }
    fclose(f);
    return 0;
}
"""


def _sanitize_flags() -> list[str]:
    probe = subprocess.run(["gcc", "-fsanitize=address,undefined", "-x", "c", "-", "-o", "/dev/null"],
                           input="int main(void){return 0;}", capture_output=True, text=True)
    return ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"] if probe.returncode == 0 else []


@pytest.fixture(scope="module")
def plan_and_input():
    graph = P.conv_gap_graph(int8=True)
    data, _ = P.compile_graph(graph, 1 << 20)
    s = Session(data)
    x = P.random_input(graph, seed=3)
    expected = s._to_caller(s.outputs[0], s.run(x).outputs[s.outputs[0].name])
    return data, s._to_caller(s.inputs[0], x[s.inputs[0].name]), expected


def _build_and_run(tmp: Path, data: bytes, x: bytes, mode: str, edit=None) -> tuple[list[str], bytes]:
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    tmp.mkdir(parents=True, exist_ok=True)
    c_src, header = generate_c(data, "m", "core")
    if edit is not None:
        c_src = edit(c_src)
    (tmp / "m.c").write_text(c_src)
    (tmp / "m.h").write_text(header)
    (tmp / "driver.c").write_text(DRIVER)
    (tmp / "in.bin").write_bytes(x)
    rs = find_sources()
    srcs = [str(p) for p in c_sources(rs)]
    cmd = ["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", *_sanitize_flags(),
           f"-I{rs.include}", f"-I{rs.root / 'src'}", f"-I{tmp}", *srcs, str(tmp / "m.c"),
           str(tmp / "driver.c"), "-lm", "-o", str(tmp / "fw")]
    b = subprocess.run(cmd, capture_output=True, text=True)
    assert b.returncode == 0, b.stderr[-3000:]
    r = subprocess.run([str(tmp / "fw"), mode, str(tmp / "in.bin"), str(tmp / "out.bin")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    out = (tmp / "out.bin").read_bytes() if (tmp / "out.bin").exists() else b""
    return r.stdout.split("\n"), out


def test_generated_table_names_exactly_the_plans_kinds(plan_and_input):
    data = plan_and_input[0]
    c_src, _ = generate_c(data, "m", "core")
    used = set(re.findall(r"\[TGRS_OP_([A-Z0-9_]+)\] = tgrs_kernel_", c_src))
    from tigris.codegen.planinfo import read_plan_info
    from tigris.ops import KINDS

    expected = {KINDS[k - 1][0].upper() for k in read_plan_info(data).kinds}
    assert used == expected and {"CONV", "GAP"} <= used and "SOFTMAX" not in used
    c_all, _ = generate_c(data, "m", "core", kernels="all")
    assert len(re.findall(r"\] = tgrs_kernel_", c_all)) == len(KINDS)


def test_resolver_firmware_matches_the_full_registry(plan_and_input, tmp_path):
    data, x, expected = plan_and_input
    lines, out = _build_and_run(tmp_path, data, x, "run")
    assert lines[0] == "init 0" and lines[1] == "run 0 -1", lines
    assert out == expected  # bit-exact: same kernels, only the dispatch table differs


def test_table_without_a_used_kind_is_refused_at_init(plan_and_input, tmp_path):
    data, x, _ = plan_and_input

    def drop_gap(c_src: str) -> str:
        assert "    [TGRS_OP_GAP] = tgrs_kernel_gap_onnx,\n" in c_src  # no op of the plan has TFLM numerics
        return c_src.replace("    [TGRS_OP_GAP] = tgrs_kernel_gap_onnx,\n", "")

    lines, _ = _build_and_run(tmp_path, data, x, "run", drop_gap)
    assert lines[0] == f"init {CODES['ERR_UNSUPPORTED']}", lines


def test_run_with_an_empty_table_is_refused_before_any_op(plan_and_input, tmp_path):
    data, x, _ = plan_and_input
    lines, _ = _build_and_run(tmp_path, data, x, "none")
    assert lines[0] == "init 0"
    assert lines[1] == f"run {CODES['ERR_UNSUPPORTED']} 0", lines  # the first op is named; nothing was called


def test_cli_kernels_option(plan_and_input, tmp_path):
    from click.testing import CliRunner

    from tigris.cli import main
    from tigris.ops import KINDS

    (tmp_path / "p.tgrs").write_bytes(plan_and_input[0])
    counts = {}
    for choice in ("plan", "all"):
        res = CliRunner().invoke(main, ["codegen", str(tmp_path / "p.tgrs"), "-o", str(tmp_path / f"{choice}.c"),
                                        "--kernels", choice])
        assert res.exit_code == 0, res.output
        counts[choice] = len(re.findall(r"\] = tgrs_kernel_", (tmp_path / f"{choice}.c").read_text()))
    assert counts["all"] == len(KINDS) and 0 < counts["plan"] < len(KINDS), counts
    res = CliRunner().invoke(main, ["codegen", str(tmp_path / "p.tgrs"), "-o", str(tmp_path / "x.c"),
                                    "--kernels", "some"])
    assert res.exit_code != 0


@pytest.fixture(scope="module")
def wzp_plan_and_input(tmp_path_factory):
    """A uint8-weight model whose conv, dwconv and fc ops all keep their weight zero points (param wzp = 1)."""
    import numpy as np
    import onnx

    from test_weight_zero_points import _model  # tests/ is on sys.path (its conftest.py)
    from tigris import api

    path = tmp_path_factory.mktemp("wzp") / "wzp.onnx"
    onnx.save(_model(0, narrow=False), path)
    data = api.compile_model(path, "256K").plan_bytes
    s = Session(data)
    x = {"x": np.random.default_rng(5).integers(0, 256, size=(1, 3, 24, 24), dtype=np.uint8)}
    expected = s._to_caller(s.outputs[0], s.run(x).outputs[s.outputs[0].name])
    return data, s._to_caller(s.inputs[0], x["x"]), expected


def test_sym_entries_only_where_no_op_has_weight_zero_points(plan_and_input, wzp_plan_and_input):
    # The symmetric plan's conv gets the entry points without the weight-zero-point path; the wzp plan keeps the
    # full ones for all three multiply-accumulate kinds; --kernels all always names the full ones.
    sym_src, _ = generate_c(plan_and_input[0], "m", "core")
    assert "[TGRS_OP_CONV] = tgrs_kernel_conv_sym," in sym_src and "[TGRS_OP_CONV] = tgrs_check_conv_sym," in sym_src
    wzp_src, _ = generate_c(wzp_plan_and_input[0], "m", "core")
    for k in ("CONV", "DWCONV", "FC"):
        assert f"[TGRS_OP_{k}] = tgrs_kernel_{k.lower()}," in wzp_src
        assert f"[TGRS_OP_{k}] = tgrs_check_{k.lower()}," in wzp_src
    assert "_sym," not in generate_c(plan_and_input[0], "m", "core", kernels="all")[0]


def test_wzp_plan_runs_bit_exact_with_its_full_entries(wzp_plan_and_input, tmp_path):
    data, x, expected = wzp_plan_and_input
    lines, out = _build_and_run(tmp_path, data, x, "run")
    assert lines[0] == "init 0" and lines[1] == "run 0 -1", lines
    assert out == expected


def test_sym_entries_refuse_a_wzp_op_at_init_and_at_run(wzp_plan_and_input, tmp_path):
    # A firmware generated for a symmetric plan and given a wzp plan later: its _sym checks refuse the ops at load,
    # and the _sym kernels (called without those checks) refuse them too instead of computing without the zero
    # points. One build each (every build compiles the runtime under the sanitizers).
    data, x, _ = wzp_plan_and_input

    def to_sym(what: str):
        def edit(c_src: str) -> str:
            for kind in ("conv", "dwconv", "fc"):
                line = f"    [TGRS_OP_{kind.upper()}] = tgrs_{what}_{kind},\n"
                assert line in c_src
                c_src = c_src.replace(line, line.replace(f"_{kind},", f"_{kind}_sym,"))
            return c_src
        return edit

    lines, _ = _build_and_run(tmp_path / "check", data, x, "run", to_sym("check"))
    assert lines[0] == f"init {CODES['ERR_UNSUPPORTED']}", lines
    lines, _ = _build_and_run(tmp_path / "kernel", data, x, "run", to_sym("kernel"))
    assert lines[0] == "init 0" and lines[1] == f"run {CODES['ERR_UNSUPPORTED']} 0", lines


@pytest.fixture(scope="module")
def tflm_plans():
    """kws_dscnn_int8 (its softmax op) compiled with onnx and with TFLM numerics, and one input."""
    import numpy as np

    from tigris import api

    model = str(Path(__file__).resolve().parents[1] / "models" / "kws_dscnn_int8.onnx")
    onnx_plan = api.compile_model(model, "64K").plan_bytes
    tflm_plan = api.compile_model(model, "64K", numerics="tflm").plan_bytes
    s = Session(tflm_plan)
    x = {s.inputs[0].name: np.random.default_rng(7).integers(-128, 128, size=s.inputs[0].shape, dtype=np.int8)}
    expected = s._to_caller(s.outputs[0], s.run(x).outputs[s.outputs[0].name])
    return onnx_plan, tflm_plan, s._to_caller(s.inputs[0], x[s.inputs[0].name]), expected


def test_onnx_entries_only_where_no_op_has_tflm_numerics(tflm_plans):
    # The onnx-numerics plan's softmax and GAP (the model's AveragePool over the whole map is a GAP with either
    # numerics, reducemean_gap rule 6; TFLM's keeps the pool's rounding, TFLM_AVG) get the entry points without the
    # TFLM path; the TFLM plan keeps the full ones; --kernels all always names the full ones.
    onnx_plan, tflm_plan, _, _ = tflm_plans
    onnx_src, _ = generate_c(onnx_plan, "m", "core")
    tflm_src, _ = generate_c(tflm_plan, "m", "core")
    for k in ("softmax", "gap"):
        for what in ("kernel", "check"):
            assert f"[TGRS_OP_{k.upper()}] = tgrs_{what}_{k}_onnx," in onnx_src
            assert f"[TGRS_OP_{k.upper()}] = tgrs_{what}_{k}," in tflm_src
    assert "_onnx," not in generate_c(onnx_plan, "m", "core", kernels="all")[0]


def test_tflm_plan_runs_bit_exact_with_its_full_entries(tflm_plans, tmp_path):
    _, data, x, expected = tflm_plans
    lines, out = _build_and_run(tmp_path, data, x, "run")
    assert lines[0] == "init 0" and lines[1] == "run 0 -1", lines
    assert out == expected


def test_onnx_entries_refuse_a_tflm_op_at_init_and_at_run(tflm_plans, tmp_path):
    # A firmware generated for an onnx-numerics plan and given a TFLM plan later: its _onnx checks refuse the ops at
    # load, and the _onnx kernels (called without those checks) refuse them too instead of computing them with the
    # wrong rounding.
    _, data, x, _ = tflm_plans

    def to_onnx(what: str, kind: str):
        def edit(c_src: str) -> str:
            line = f"    [TGRS_OP_{kind.upper()}] = tgrs_{what}_{kind},\n"
            assert line in c_src
            return c_src.replace(line, line.replace(f"_{kind},", f"_{kind}_onnx,"))
        return edit

    for kind in ("softmax", "gap"):
        lines, _ = _build_and_run(tmp_path / f"check-{kind}", data, x, "run", to_onnx("check", kind))
        assert lines[0] == f"init {CODES['ERR_UNSUPPORTED']}", (kind, lines)
        lines, _ = _build_and_run(tmp_path / f"kernel-{kind}", data, x, "run", to_onnx("kernel", kind))
        assert lines[0] == "init 0" and re.match(rf"run {CODES['ERR_UNSUPPORTED']} \d+$", lines[1]), (kind, lines)
