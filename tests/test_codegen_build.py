"""Generated C on the host: `--format core` output for a real plan compiles warning-free under the strict flags, links
with runtime_c, and NAME_init()/NAME_run() give exactly the host session's output bytes. (The `--format app` output
runs under QEMU in tests/cortex_m.) Tolerance: int8 outputs must be identical bytes."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tigris.codegen import generate_c

REPO = Path(__file__).resolve().parents[1]
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-ffp-contract=off", "-O1"]

DRIVER = r"""
/* Test driver: argv[1] = input file, argv[2] = output file; one input, one output. */
#include <stdio.h>
#include "net.h"

static unsigned char in0[NET_INPUT0_BYTES];
static unsigned char out0[NET_OUTPUT0_BYTES];

int main(int argc, char **argv)
{
    const void *inputs[1] = {in0};
    void *outputs[1] = {out0};
    FILE *f;
    int rc;
    if (argc != 3 || NET_NUM_INPUTS != 1 || NET_NUM_OUTPUTS != 1) {
        return 90;
    }
    rc = net_run(inputs, outputs);
    if (rc != TGRS_ERR_STATE) { /* running before init must be refused */
        return 91;
    }
    rc = net_init();
    if (rc != TGRS_OK || net_plan() == NULL) {
        fprintf(stderr, "init: %s\n", tgrs_status_name(rc));
        return 92;
    }
    f = fopen(argv[1], "rb");
    if (f == NULL || fread(in0, 1, sizeof in0, f) != sizeof in0) {
        return 93;
    }
    fclose(f);
    rc = net_run(inputs, outputs);
    if (rc != TGRS_OK) {
        fprintf(stderr, "run: %s\n", tgrs_status_name(rc));
        return 94;
    }
    f = fopen(argv[2], "wb");
    if (f == NULL || fwrite(out0, 1, sizeof out0, f) != sizeof out0) {
        return 95;
    }
    fclose(f);
    return 0;
}
"""


@pytest.fixture(scope="module")
def compiled():
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    try:
        from tigris import api
        from tigris.host import Session
    except ImportError as e:
        pytest.skip(f"compiler API / host session not available yet: {e}")
    model = REPO / "tests" / "models" / "kws_dscnn_int8.onnx"
    prep = api.prepare(str(model))
    plan = api.compile_model(str(model), "32K", compression="lz4", prepared=prep).plan_bytes
    return api, Session, prep, plan


def test_core_output_builds_strict_and_matches_host(compiled, tmp_path):
    from tigris.host.build import c_sources, find_sources, kernel_stubs_source, missing_kernels

    api, Session, prep, plan = compiled
    c_src, header = generate_c(plan, "net", "core")
    (tmp_path / "net.c").write_text(c_src)
    (tmp_path / "net.h").write_text(header)
    (tmp_path / "driver.c").write_text(DRIVER)
    rs = find_sources()
    srcs = c_sources(rs)
    (tmp_path / "stubs.c").write_text(kernel_stubs_source(missing_kernels(srcs)))
    inc = [f"-I{rs.include}", f"-I{rs.src}", f"-I{tmp_path}"]
    # The generated code (and the driver) under the strict flags: any warning fails here.
    for name in ("net", "driver"):
        src, obj = tmp_path / f"{name}.c", tmp_path / f"{name}.o"
        res = subprocess.run(["gcc", *STRICT, *inc, "-c", str(src), "-o", str(obj)],
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0 and res.stderr == "", res.stderr
    # The runtime with its own host flags (its strictness is runtime_c's `make check`, not this test's subject).
    cmd = ["gcc", "-std=c99", "-O1", "-ffp-contract=off", *inc, str(tmp_path / "net.o"), str(tmp_path / "driver.o"),
           str(tmp_path / "stubs.c"), *map(str, srcs), "-lm", "-o", str(tmp_path / "net")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr

    session = Session(plan)
    inputs = api.random_inputs(prep, seed=3)
    host = session.run(inputs)
    (tmp_path / "in.bin").write_bytes(session._to_caller(session.inputs[0], inputs[session.inputs[0].name]))
    run = subprocess.run([str(tmp_path / "net"), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    expected = session._to_caller(session.outputs[0], host.outputs[session.outputs[0].name])
    assert (tmp_path / "out.bin").read_bytes() == expected


def test_generated_code_is_identical_for_identical_plans(compiled):
    *_, plan = compiled
    assert generate_c(plan, "net", "app") == generate_c(bytes(plan), "net", "app")


DRIVER_IN_ARENA = r"""
/* Test driver for --io in-arena: the input is read straight into its home in the arena, the run takes no buffers,
   the output is written from its home. */
#include <stdio.h>
#include "net.h"

int main(int argc, char **argv)
{
    FILE *f;
    int rc;
    if (argc != 3 || NET_NUM_INPUTS != 1 || NET_NUM_OUTPUTS != 1 || NET_IO_IN_ARENA != 1) {
        return 90;
    }
    if (net_run_in_place() != TGRS_ERR_STATE || NET_INPUT(0) != NULL) { /* before init: refused */
        return 91;
    }
    rc = net_init();
    if (rc != TGRS_OK || NET_INPUT(0) == NULL || NET_OUTPUT(0) == NULL || NET_INPUT(1) != NULL) {
        fprintf(stderr, "init: %s\n", tgrs_status_name(rc));
        return 92;
    }
    f = fopen(argv[1], "rb");
    if (f == NULL || fread(NET_INPUT(0), 1, NET_INPUT0_BYTES, f) != NET_INPUT0_BYTES) {
        return 93;
    }
    fclose(f);
    rc = net_run_in_place();
    if (rc != TGRS_OK) {
        fprintf(stderr, "run: %s\n", tgrs_status_name(rc));
        return 94;
    }
    f = fopen(argv[2], "wb");
    if (f == NULL || fwrite(NET_OUTPUT(0), 1, NET_OUTPUT0_BYTES, f) != NET_OUTPUT0_BYTES) {
        return 95;
    }
    fclose(f);
    return 0;
}
"""


def test_in_arena_output_builds_strict_and_matches_host(compiled, tmp_path):
    """--io in-arena: NAME_input(i)/NAME_run_in_place()/NAME_output(i) in a strict build give the host's bytes (in
    the stored form), and the header's total RAM is the two arenas alone."""
    from tigris.codegen import read_plan_info
    from tigris.host.build import c_sources, find_sources, kernel_stubs_source, missing_kernels

    api, Session, prep, plan = compiled
    c_src, header = generate_c(plan, "net", "core", io="in-arena")
    info = read_plan_info(plan)
    assert f"#define NET_TOTAL_RAM_BYTES {info.fast_arena + info.slow_arena}u" in header
    assert "net_run_in_place" in header and "net_in0" not in c_src
    sep_header = generate_c(plan, "net", "core")[1]
    assert f"#define NET_TOTAL_RAM_BYTES {info.total_ram_bytes}u" in sep_header and "run_in_place" not in sep_header
    (tmp_path / "net.c").write_text(c_src)
    (tmp_path / "net.h").write_text(header)
    (tmp_path / "driver.c").write_text(DRIVER_IN_ARENA)
    rs = find_sources()
    srcs = c_sources(rs)
    (tmp_path / "stubs.c").write_text(kernel_stubs_source(missing_kernels(srcs)))
    inc = [f"-I{rs.include}", f"-I{rs.src}", f"-I{tmp_path}"]
    for name in ("net", "driver"):
        src, obj = tmp_path / f"{name}.c", tmp_path / f"{name}.o"
        res = subprocess.run(["gcc", *STRICT, *inc, "-c", str(src), "-o", str(obj)],
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0 and res.stderr == "", res.stderr
    cmd = ["gcc", "-std=c99", "-O1", "-ffp-contract=off", *inc, str(tmp_path / "net.o"), str(tmp_path / "driver.o"),
           str(tmp_path / "stubs.c"), *map(str, srcs), "-lm", "-o", str(tmp_path / "net")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr

    session = Session(plan)
    inputs = api.random_inputs(prep, seed=3)
    host = session.run(inputs)
    s_in, s_out = session.inputs[0], session.outputs[0]
    (tmp_path / "in.bin").write_bytes(session._flip(s_in, session._to_caller(s_in, inputs[s_in.name])))
    run = subprocess.run([str(tmp_path / "net"), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    expected = session._flip(s_out, session._to_caller(s_out, host.outputs[s_out.name]))
    assert (tmp_path / "out.bin").read_bytes() == expected
