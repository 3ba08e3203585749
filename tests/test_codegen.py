"""tigris codegen without a compiled model: argument checks, the interface it reads, determinism, bad plans.

The plans here are built directly from the record definitions of tigris.emit.format (only the sections codegen
reads are filled), so these tests do not depend on the compiler pipeline. The end-to-end checks (generated code
compiled and run on the host and under QEMU) are in tests/test_codegen_build.py and tests/cortex_m/.
"""
from __future__ import annotations

import re
import struct
import zlib

import pytest

from tigris.codegen import codegen_command, generate_c, read_plan_info
from tigris.emit import format as F
from tigris.ir import TigrisError


def synthetic_plan(fast: int = 4096, slow: int = 1024, flags: int = 0, name: str = "tiny",
                   uint8_input: bool = False, input_dtype: int = 2) -> bytes:
    """A structurally valid v1 plan: header, full directory, PLAN + STRINGS + IO filled, other sections empty."""
    strings = bytearray()

    def s(text: str) -> tuple[int, int]:
        off = len(strings)
        strings.extend(text.encode() + b"\0")
        return off, len(text)

    n_off, n_len = s(name)
    io_recs = []
    for direction, nm, shape, dt, nbytes, quant in (
        (F.Direction.INPUT, 'in"put?', (1, 3, 4, 4), input_dtype, 48, (0.5, -3)),
        (F.Direction.OUTPUT, "logits", (1, 10), 1, 40, None),
    ):
        o, ln = s(nm)
        # A uint8 boundary on an int8 tensor: declared (scale, zp + 128), stored int8 (tigris.h converts).
        decl_u8 = uint8_input and direction == F.Direction.INPUT
        io_recs.append(F.IO.pack({
            "name_off": o, "name_len": ln, "direction": direction, "tensor": len(io_recs),
            "decl_dtype": 3 if decl_u8 else dt, "dtype": dt,
            "layout": F.Layout.NHWC if len(shape) == 4 else F.Layout.PLAIN, "rank": len(shape),
            "shape": shape, "scale": quant[0] if quant else 1.0, "zero_point": quant[1] if quant else 0,
            "decl_scale": quant[0] if decl_u8 else 0.0, "decl_zero_point": quant[1] + 128 if decl_u8 else 0,
            "flags": (F.IoFlag.QUANT if quant else 0) | (F.IoFlag.DECL_QUANT if decl_u8 else 0), "nbytes": nbytes,
        }))
    plan_rec = F.PLAN.pack({"fast_arena": fast, "slow_arena": slow, "fast_budget": fast, "slow_budget": F.NONE,
                            "n_inputs": 1, "n_outputs": 1, "name_off": n_off, "name_len": n_len})
    payload = {F.SectionId.PLAN: plan_rec, F.SectionId.STRINGS: bytes(strings), F.SectionId.IO: b"".join(io_recs)}
    off = F.DATA_START
    directory, body = [], bytearray()
    for spec in F.SECTIONS:
        off = (off + F.ALIGN - 1) // F.ALIGN * F.ALIGN
        data = payload.get(spec.id, b"")
        count = len(data) // spec.record.size if spec.record else len(data)
        directory.append(F.SECTION.pack({"id": spec.id, "offset": off, "size": len(data), "count": count}))
        body.extend(b"\0" * (off - F.DATA_START - len(body)))
        body.extend(data)
        off += len(data)
    size = F.DATA_START + len(body)
    head = F.HEADER.pack({"magic": F.MAGIC, "version": F.VERSION, "header_size": F.HEADER.size, "file_size": size,
                          "flags": flags, "section_count": len(F.SECTIONS), "dir_offset": F.DIR_OFFSET})
    blob = bytearray(head + b"".join(directory) + body)
    struct.pack_into("<I", blob, 8, zlib.crc32(blob[F.CRC_START:]))
    return bytes(blob)


def test_reads_interface_and_arenas():
    info = read_plan_info(synthetic_plan(fast=8192, slow=512))
    assert (info.fast_arena, info.slow_arena, info.model_name) == (8192, 512, "tiny")
    assert [io.name for io in info.inputs] == ['in"put?'] and [io.name for io in info.outputs] == ["logits"]
    assert info.inputs[0].shape == (1, 3, 4, 4) and info.inputs[0].zero_point == -3
    assert info.outputs[0].scale is None


def test_header_constants_match_the_plan():
    c_src, header = generate_c(synthetic_plan(fast=8192, slow=512), "kws")
    assert "#define KWS_FAST_ARENA_BYTES 8192u" in header
    assert "#define KWS_SLOW_ARENA_BYTES 512u" in header
    assert "#define KWS_INPUT0_SHAPE { 1, 3, 4, 4 }" in header
    assert "#define KWS_INPUT0_DTYPE TGRS_DT_S8" in header
    assert "#define KWS_INPUT0_ZERO_POINT -3" in header
    assert "#define KWS_OUTPUT0_BYTES 40u" in header
    # The tensor name is escaped into a valid literal (quote and '?' cannot end the string or form a trigraph).
    assert '#define KWS_INPUT0_NAME "in\\"put\\?"' in header
    assert "int kws_init(void);" in header and "int kws_run(const void *const inputs[]" in header
    # The .c repeats the header verbatim (see cgen docstring) and defines the functions.
    assert header.rstrip("\n") in c_src
    assert re.search(r"^int kws_init\(void\)$", c_src, re.M) and "int main(" not in c_src


def test_uint8_boundary_is_exchanged_as_uint8_with_the_declared_quantization():
    _, header = generate_c(synthetic_plan(uint8_input=True), "m")
    assert "#define M_INPUT0_DTYPE TGRS_DT_U8" in header  # what the caller passes (the runtime flips bit 7)
    assert "#define M_INPUT0_INTERNAL_DTYPE TGRS_DT_S8" in header
    assert "#define M_INPUT0_ZERO_POINT 125" in header and "#define M_INPUT0_SCALE 0.5f" in header
    assert "#define M_INPUT0_BYTES 48u" in header


def test_plan_bytes_embedded_exactly_in_the_named_section():
    plan = synthetic_plan()
    c_src, _ = generate_c(plan, "m", "core", ".rodata.flash_plan", ".ext_ram.bss")
    assert 'section(".rodata.flash_plan")' in c_src and 'section(".ext_ram.bss")' in c_src
    body = c_src.split("m_plan_bytes[M_PLAN_BYTES]", 1)[1].split("};", 1)[0]
    values = bytes(int(v, 16) for v in re.findall(r"0x([0-9a-f]{2}),", body))
    assert values == plan


def test_fast_arena_section_only_when_asked():
    c_src, header = generate_c(synthetic_plan(), "m")
    arena = next(ln for ln in c_src.splitlines() if "m_fast_arena[M_FAST_ARENA_BYTES]" in ln)
    assert "section(" not in arena and "fast arena section: .bss;" in header
    c_src, header = generate_c(synthetic_plan(), "m", fast_section=".bss.dtcm")
    i = c_src.index("static uint8_t m_fast_arena[M_FAST_ARENA_BYTES]")
    assert c_src[i:].split(";", 1)[0].endswith('section(".bss.dtcm")))')
    assert "fast arena section: .bss.dtcm;" in header
    with pytest.raises(TigrisError, match="--fast-section"):
        generate_c(synthetic_plan(), "m", fast_section='.x") evil')


def test_header_states_io_buffers_and_total_ram():
    """The caller's buffers are RAM too: the header and PlanInfo.ram_json give them and the total."""
    plan = synthetic_plan(fast=8192, slow=512)
    _, header = generate_c(plan, "m")
    info = read_plan_info(plan)
    # the synthetic plan's input is 48 bytes, its output 40
    assert info.ram_json() == {"fast_arena_bytes": 8192, "slow_arena_bytes": 512, "input_bytes": 48,
                               "output_bytes": 40, "total_ram_bytes": 8192 + 512 + 48 + 40}
    for line in ("#define M_INPUT_BYTES_TOTAL 48u", "#define M_OUTPUT_BYTES_TOTAL 40u", "#define M_IO_BYTES 88u",
                 f"#define M_TOTAL_RAM_BYTES {8192 + 512 + 88}u"):
        assert line in header


def test_no_slow_arena_when_the_plan_never_spills():
    c_src, header = generate_c(synthetic_plan(slow=0), "m")
    assert "#define M_SLOW_ARENA_BYTES 0u" in header
    assert "m_slow_arena" not in c_src and "NULL, 0u" in c_src


def test_deterministic():
    plan = synthetic_plan()
    assert generate_c(plan, "m", "app") == generate_c(plan, "m", "app")


def test_app_format_adds_main():
    c_src, _ = generate_c(synthetic_plan(), "m", "app")
    assert "int main(int argc, char **argv)" in c_src and '"input0.bin"' in c_src and '"output0.bin"' in c_src


@pytest.mark.parametrize("name", ["1abc", "a-b", "", "tgrs_model", "x" * 41])
def test_rejects_bad_names(name):
    with pytest.raises(TigrisError, match="--name"):
        generate_c(synthetic_plan(), name)


@pytest.mark.parametrize("flag,section", [("--section", '.x") evil'), ("--slow-section", "a b")])
def test_rejects_bad_sections(flag, section):
    kwargs = {"section": ".rodata.tgrs", "slow_section": ".bss.tgrs_slow"}
    kwargs["section" if flag == "--section" else "slow_section"] = section
    with pytest.raises(TigrisError, match=flag):
        generate_c(synthetic_plan(), "m", "core", **kwargs)


def test_rejects_unknown_interface_dtype():
    # A CRC-valid plan from a newer writer with a dtype this codegen cannot spell: a clear error, not a KeyError.
    with pytest.raises(TigrisError, match="unknown dtype 99"):
        generate_c(synthetic_plan(input_dtype=99), "m")


def test_rejects_bad_format():
    with pytest.raises(TigrisError, match="--format"):
        generate_c(synthetic_plan(), "m", "exe")


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda b: b"XXXX" + b[4:], "magic"),
        (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "CRC"),
        (lambda b: b[:100], "header says|shorter"),
        (lambda b: b[:4] + struct.pack("<H", 99) + b[6:], "version"),
    ],
)
def test_rejects_bad_plans(mutate, match):
    with pytest.raises(TigrisError, match=match):
        generate_c(mutate(synthetic_plan()), "m")


def test_codegen_command_writes_source_and_header(tmp_path):
    plan = tmp_path / "p.tgrs"
    plan.write_bytes(synthetic_plan())
    c_path, h_path = codegen_command(plan, tmp_path / "out.c", "net", "core")
    assert h_path == tmp_path / "out.h"
    assert (c_path.read_text(), h_path.read_text()) == generate_c(synthetic_plan(), "net", "core")
    with pytest.raises(TigrisError, match="cannot read plan"):
        codegen_command(tmp_path / "missing.tgrs", tmp_path / "o.c")


def test_cli_command_writes_files_and_reports_errors(tmp_path):
    from click.testing import CliRunner

    from tigris.cli import main

    plan = tmp_path / "p.tgrs"
    plan.write_bytes(synthetic_plan())
    runner = CliRunner()
    ok = runner.invoke(main, ["codegen", str(plan), "-o", str(tmp_path / "m.c"), "--name", "m", "--format", "app",
                              "--slow-section", ".ext_ram.bss"])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "m.c").read_text() == generate_c(synthetic_plan(), "m", "app", ".rodata.tgrs", ".ext_ram.bss")[0]
    assert (tmp_path / "m.h").exists()
    bad = runner.invoke(main, ["codegen", str(plan), "-o", str(tmp_path / "b.c"), "--name", "9bad"])
    assert bad.exit_code == 2 and not (tmp_path / "b.c").exists()
    corrupt = tmp_path / "c.tgrs"
    good = synthetic_plan()
    corrupt.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    bad = runner.invoke(main, ["codegen", str(corrupt), "-o", str(tmp_path / "c.c")])
    assert bad.exit_code == 2 and not (tmp_path / "c.c").exists()


def test_api_firmware_ram_is_what_the_header_states():
    from tigris import api

    plan = synthetic_plan(fast=4096, slow=0)
    assert api.firmware_ram(plan) == read_plan_info(plan).ram_json()
    assert f"#define M_TOTAL_RAM_BYTES {api.firmware_ram(plan)['total_ram_bytes']}u" in generate_c(plan, "m")[1]
