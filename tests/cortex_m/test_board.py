"""The board support of examples/cortex-m on both QEMU boards, before any model: console and argv over
semihosting, a host file round trip, the exit code, the fault path, and the cycle clock the cost figures rely on."""
from __future__ import annotations

import pytest

from cm_fixtures import board_objs, harness  # noqa: F401  (fixtures)

BOARDS = ["mps2-an386", "mps3-an547"]


@pytest.fixture(scope="module")
def hello(harness, board_objs, tmp_path_factory):
    out = {}
    for board in BOARDS:
        d = tmp_path_factory.mktemp(f"hello-{board}")
        out[board] = harness.build(board, d, app="hello", obj_dir=board_objs[board] / "hello")
    return out


@pytest.mark.parametrize("board", BOARDS)
def test_hello_file_round_trip_and_exit_code(harness, hello, board, tmp_path):
    payload = bytes(range(256))[:200]
    (tmp_path / "in.bin").write_bytes(payload)
    r = harness.run(board, hello[board], ["in.bin", "out.bin"], cwd=tmp_path, timeout_s=60)
    assert r.returncode == harness.EXIT_OK, r.console
    assert "hello from the guest" in r.console
    assert (tmp_path / "out.bin").read_bytes() == payload
    assert r.report["fpu"] == 6  # 1.5f * 4.0f computed with the FPU enabled by the startup code


@pytest.mark.parametrize("board", BOARDS)
def test_exit_code_reaches_the_host(harness, hello, board, tmp_path):
    # Three arguments: hello.c returns BOARD_EXIT_USAGE after the copy, and QEMU must exit with exactly that code.
    (tmp_path / "a").write_bytes(b"x")
    r = harness.run(board, hello[board], ["a", "b", "c"], cwd=tmp_path, timeout_s=60)
    assert r.returncode == harness.EXIT_USAGE, r.console


@pytest.mark.parametrize("board", BOARDS)
def test_fault_prints_registers_and_exits_nonzero(harness, hello, board, tmp_path):
    r = harness.run(board, hello[board], ["fault"], cwd=tmp_path, timeout_s=60)
    assert r.returncode == harness.EXIT_FAULT, r.console
    assert "fault: exception 3" in r.console  # HardFault (the bus fault escalates: no handler enabled)
    assert "bfar = 0xf0000000" in r.console  # the unmapped address hello.c reads
    assert "pc = 0x" in r.console and "cfsr = 0x" in r.console


@pytest.mark.parametrize("board,hz", [("mps2-an386", 25_000_000), ("mps3-an547", 32_000_000)])
def test_cycle_clock_counts_instructions_under_icount(harness, hello, board, hz, tmp_path):
    # hello.c spins 1,000,000 iterations of (subs, bne): 2,000,000 instructions. With -icount shift=0 each takes one
    # virtual ns, so SysTick at `hz` must count 2e6 * hz / 1e9 ticks; tolerance: 2 ticks of loop entry/exit.
    r = harness.run(board, hello[board], [], cwd=tmp_path, timeout_s=60)
    assert r.returncode == 0, r.console
    expected = 2_000_000 * hz // 1_000_000_000
    assert abs(r.report["spin_ticks"] - expected) <= 2, r.report
    assert r.report["cpu_hz"] == hz


def test_stack_painting_measures_use(harness, hello, tmp_path):
    r = harness.run("mps2-an386", hello["mps2-an386"], [], cwd=tmp_path, timeout_s=60)
    # Some stack is used (startup's argv buffer alone is 512 bytes), far less than the 32 KiB reserved.
    assert 512 < r.report["stack_peak"] < 32 * 1024, r.report
