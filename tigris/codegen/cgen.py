"""C source and header that embed a .tgrs plan for firmware (``tigris codegen``).

What the generated code promises (docs/deploying.md explains how firmware uses it):

1. The plan is one ``static const uint8_t`` array, 16-byte aligned, in the flash section ``section`` (default
   ``.rodata.tgrs``): the linker script decides whether that is internal flash, QSPI/XIP flash or a RAM copy.
2. The fast arena is a ``.bss`` array of exactly the plan's ``fast_arena`` bytes (in ``fast_section`` when one is
   given, e.g. ``.bss.dtcm`` for a tightly coupled RAM), the slow arena an array of exactly ``slow_arena`` bytes in
   ``slow_section`` (default ``.bss.tgrs_slow``; on ESP-IDF ``.ext_ram.bss`` puts it in PSRAM). A name beginning
   with ``.bss`` makes the compiler emit it as NOBITS, so it costs no flash.
3. ``NAME_init()`` runs the runtime's loader over the embedded bytes (every byte validated once, on the device) and
   checks the arenas are large enough; ``NAME_run(inputs, outputs)`` runs one inference. Both return TGRS_OK (0) or
   a negative TGRS_ERR_* code. They dispatch through an op resolver table naming only the kinds the plan uses
   (``tgrs_run_kernels``), so ``--gc-sections`` links no other kernel; init refuses a plan needing any other kind
   (TGRS_ERR_UNSUPPORTED). A multiply-accumulate kind none of whose ops has weight zero points gets its ``_sym``
   entry points (``tgrs_kernel_conv_sym``, ``tgrs_check_conv_sym``), which leave the weight-zero-point path out;
   init refuses a plan swapped in later that has such an op (TGRS_ERR_UNSUPPORTED). Likewise a kind with a TFLM
   numerics path of its own (softmax) none of whose ops has TFLM numerics gets its ``_onnx`` entry points.
   ``kernels="all"`` names every kind's full entry points instead.
4. The header states the interface as constants: count, name, dtype, layout, declared shape, byte size and
   quantization of every input and output, the arena sizes, the I/O buffer totals and the total RAM (both arenas
   plus the caller's I/O buffers: :meth:`PlanInfo.total_ram_bytes`). With ``io="in-arena"`` the I/O lives at its
   homes inside the arenas instead (``NAME_input(i)``, ``NAME_run_in_place()``, ``NAME_output(i)``; init refuses
   homes that are not stable) and the total is the two arenas.
5. ``fmt="app"`` adds a ``main()`` for the emulator harness of ``examples/cortex-m`` (semihosting file I/O, SysTick
   tick count, stack peak). ``fmt="core"`` is for firmware that owns its entry point.
6. The output is a pure function of the arguments (no dates, no paths), and compiles without a warning under
   ``-std=c99 -Wall -Wextra -Werror -pedantic``.

Why the .c file repeats the header text instead of ``#include``-ing it: the header's file name is chosen by whoever
writes the files (the CLI names it after the output), and the .c must compile whatever that name is. The repeated
block sits behind the same include guard, so a translation unit that includes both still sees it once.
"""
from __future__ import annotations

import dataclasses
import re

from tigris.codegen.planinfo import (DTYPE_C, DTYPE_NAMES, LAYOUT_C, TFLM_KINDS, WZP_KINDS, IoInfo, PlanInfo,
                                     read_plan_info)
from tigris.emit import format as F
from tigris.ir import TigrisError

FORMATS = ("core", "app")
IO_MODES = ("separate", "in-arena")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECTION = re.compile(r"^[A-Za-z0-9_.$]+$")
_BYTES_PER_LINE = 16
_ALIGN = 16  # the plan and the arenas: every planned offset is 16-aligned, so the bases must be too


def _check_args(name: str, fmt: str, section: str, slow_section: str, fast_section: str | None = None) -> None:
    if not _IDENT.match(name) or len(name) > 40:
        raise TigrisError(f"--name must be a C identifier of at most 40 characters, not {name!r}", "--name")
    if name.lower().startswith("tgrs_"):
        raise TigrisError("--name must not start with tgrs_ (the runtime's prefix)", "--name")
    if fmt not in FORMATS:
        raise TigrisError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}", "--format")
    for flag, sec in (("--section", section), ("--slow-section", slow_section), ("--fast-section", fast_section)):
        if sec is not None and not _SECTION.match(sec):
            raise TigrisError(f"{flag} must be a section name of letters, digits, '_', '.', '$', not {sec!r}", flag)


def _c_string(s: str) -> str:
    """A C string literal for an arbitrary tensor name (escapes quotes, backslashes, non-ASCII, '??' trigraphs)."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 0x20 <= o < 0x7F:
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode("utf-8"))
    return '"' + "".join(out) + '"'


def _c_comment(s: str) -> str:
    """Text safe inside a /* */ comment."""
    return "".join(ch if 0x20 <= ord(ch) < 0x7F else "?" for ch in s).replace("*/", "* /")


def _fmt_float(x: float) -> str:
    # repr() round-trips a double; the value came from a float32, so the float literal is exact after rounding.
    r = repr(float(x))
    if "inf" in r or "nan" in r:
        return "0.0f"
    if "." not in r and "e" not in r:
        r += ".0"
    return r + "f"


def _io_block(prefix: str, kind: str, i: int, io: IoInfo) -> list[str]:
    """Constants of one input/output, describing the caller's buffer (tigris.h: tgrs_io_info)."""
    m = f"{prefix}_{kind}{i}"
    shape = ", ".join(str(d) for d in io.shape) if io.shape else "1"
    lines = [
        f"/* {kind.lower()} {i}: {_c_comment(io.name)} - {DTYPE_NAMES.get(io.caller_dtype, '?')} "
        f"{'x'.join(str(d) for d in io.shape) or 'scalar'}, stored {F.Layout(io.layout).name.lower()} */",
        f"#define {m}_NAME {_c_string(io.name)}",
        f"#define {m}_DTYPE {DTYPE_C[io.caller_dtype]}",
        f"#define {m}_INTERNAL_DTYPE {DTYPE_C[io.dtype]}",
        f"#define {m}_DECL_DTYPE {DTYPE_C[io.decl_dtype]}",
        f"#define {m}_LAYOUT {LAYOUT_C[io.layout]}",
        f"#define {m}_RANK {len(io.shape)}",
        f"#define {m}_SHAPE {{ {shape} }}",
        f"#define {m}_BYTES {io.nbytes}u",
    ]
    q = io.caller_quant
    if q is not None:
        lines += [f"#define {m}_SCALE {_fmt_float(q[0])}", f"#define {m}_ZERO_POINT {q[1]}"]
    return lines


def _header(info: PlanInfo, name: str, section: str, slow_section: str, fast_section: str | None,
            io: str = "separate") -> str:
    P = name.upper()
    in_arena = io == "in-arena"
    guard = f"{P}_TGRS_MODEL_H"
    flags = [f for f, on in (("xip", info.xip), ("lz4", info.lz4)) if on] or ["copy"]
    lines = [
        "/*",
        f" * {name} - generated by `tigris codegen` from a .tgrs plan; regenerate instead of editing.",
        f" * model: {_c_comment(info.model_name)}; plan: {info.size} bytes, sha256 {info.sha256[:16]}, "
        f"weights: {'+'.join(flags)}",
        f" * plan section: {section}; fast arena section: {fast_section or '.bss'}; slow arena section: "
        f"{slow_section}",
        " *",
        f" * {name}_run() exchanges buffers in the runtime's caller form (tigris.h): the dtype _DTYPE,",
        " * the stored layout _LAYOUT (NHWC for images) and _BYTES bytes; _SHAPE is the declared ONNX shape.",
        " */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        '#include "tigris.h"',
        "",
        f"#define {P}_PLAN_BYTES {info.size}u",
        f"#define {P}_FAST_ARENA_BYTES {info.region_bytes}u"
        + ("  /* one region: the fast arena array holds the slow arena too (ONE_REGION) */" if info.one_region else ""),
        f"#define {P}_SLOW_ARENA_BYTES {info.slow_arena}u",
        f"#define {P}_NUM_INPUTS {len(info.inputs)}",
        f"#define {P}_NUM_OUTPUTS {len(info.outputs)}",
        ("/* The I/O bytes (inside the arenas with --io in-arena): every input, every output, both together. */"
         if in_arena else
         "/* The caller's buffers (outside the arenas): every input, every output, both together. */"),
        f"#define {P}_INPUT_BYTES_TOTAL {info.input_bytes}u",
        f"#define {P}_OUTPUT_BYTES_TOTAL {info.output_bytes}u",
        f"#define {P}_IO_BYTES {info.input_bytes + info.output_bytes}u",
        ("/* All the RAM the model needs besides the stack: fast arena + slow arena (I/O lives inside them). */"
         if in_arena else
         "/* All the RAM the model needs besides the stack: fast arena + slow arena + I/O buffers. */"),
        f"#define {P}_TOTAL_RAM_BYTES {info.total_ram(io)}u",
        *([f"#define {P}_IO_IN_ARENA 1"] if in_arena else []),
        "",
    ]
    for i, io in enumerate(info.inputs):
        lines += _io_block(P, "INPUT", i, io) + [""]
    for i, io in enumerate(info.outputs):
        lines += _io_block(P, "OUTPUT", i, io) + [""]
    lines += [
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        "/* Validate the embedded plan (tgrs_load_checks) and check the arenas. TGRS_OK or a negative TGRS_ERR_* code. */",
        f"int {name}_init(void);",
        "",
        f"/* One inference: inputs[i] holds {P}_INPUTi_BYTES bytes, outputs[i] receives {P}_OUTPUTi_BYTES. */",
        f"int {name}_run(const void *const inputs[], void *const outputs[]);",
        "",
        "/* As run, and reports the arenas' high-water marks and the failing op (stats may be NULL). */",
        f"int {name}_run_stats(const void *const inputs[], void *const outputs[], tgrs_stats *stats);",
        "",
        "/* The loaded plan, for the runtime's interface queries (tgrs_input_info, ...); NULL before init. */",
        f"const tgrs_plan *{name}_plan(void);",
        "",
        *(_in_arena_decls(name) if in_arena else []),
        "#ifdef __cplusplus",
        "}",
        "#endif",
        "",
        f"#endif /* {guard} */",
    ]
    return "\n".join(lines) + "\n"


def _in_arena_decls(name: str) -> list[str]:
    P = name.upper()
    return [
        "/*",
        " * I/O inside the arena (zero copy, tigris.h tgrs_input_home): write input i's "
        f"{P}_INPUTi_BYTES bytes at",
        f" * {name}_input(i), call {name}_run_in_place(), read output i at {name}_output(i). The bytes are in the",
        " * stored form: _LAYOUT and _INTERNAL_DTYPE (a uint8 boundary is int8 there: flip bit 7 of each byte).",
        " * An input's home may share bytes with an output's: read the outputs before writing the next inputs.",
        " * NULL before init (init already refused a plan whose homes are not stable: TGRS_ERR_PLACEMENT).",
        " */",
        f"void *{name}_input(int32_t index);",
        f"const void *{name}_output(int32_t index);",
        f"#define {P}_INPUT(i) ((void *){name}_input(i))",
        f"#define {P}_OUTPUT(i) ((const void *){name}_output(i))",
        f"int {name}_run_in_place(void);",
        f"int {name}_run_in_place_stats(tgrs_stats *stats);",
        "",
    ]


def _in_arena_defs(info: PlanInfo, name: str, slow_ptr: str, slow_len: str) -> list[str]:
    """Out of line: firmware that never calls them loses them to --gc-sections."""
    return [
        "",
        f"static void *{name}_home(int output, int32_t index)",
        "{",
        "    void *home = NULL;",
        f"    if (!{name}_loaded) {{",
        "        return NULL;",
        "    }",
        f"    if ((output ? tgrs_output_home : tgrs_input_home)(&{name}_state, {name}_fast_arena,",
        f"            sizeof {name}_fast_arena, {slow_ptr}, {slow_len}, index, &home) != TGRS_OK) {{",
        "        return NULL;",
        "    }",
        "    return home;",
        "}",
        "",
        f"void *{name}_input(int32_t index)",
        "{",
        f"    return {name}_home(0, index);",
        "}",
        "",
        f"const void *{name}_output(int32_t index)",
        "{",
        f"    return {name}_home(1, index);",
        "}",
        "",
        f"int {name}_run_in_place_stats(tgrs_stats *stats)",
        "{",
        f"    if (!{name}_loaded) {{",
        "        return TGRS_ERR_STATE;",
        "    }",
        f"    return tgrs_run_kernels_in_place(&{name}_state, {name}_kernels, TGRS_OP_COUNT + 1u, {name}_fast_arena,",
        f"                                     sizeof {name}_fast_arena, {slow_ptr}, {slow_len}, stats);",
        "}",
        "",
        f"int {name}_run_in_place(void)",
        "{",
        f"    return {name}_run_in_place_stats(NULL);",
        "}",
    ]


def _byte_array(data: bytes) -> list[str]:
    lines = []
    for i in range(0, len(data), _BYTES_PER_LINE):
        chunk = data[i : i + _BYTES_PER_LINE]
        lines.append("    " + " ".join(f"0x{b:02x}," for b in chunk))
    return lines


# The runtime's optional parts (tgrs_internal.h): (whether this plan needs it, the macro that leaves it out, what the
# plan has, the #error's words). A plan that needs a part stops a build without it; the others say it may be left out.
def _features(info: PlanInfo) -> list[tuple[bool, str, str, str]]:
    return [
        (info.rolling, "TGRS_NO_ROLLING", "carries halo rows from tile to tile (ROLLING units)", "has ROLLING units"),
        (info.cols, "TGRS_NO_COLS", "cuts tiles along the width too (COLS units)", "has COLS units")
        if info.cols or not info.narrow_conv else
        (True, "TGRS_NO_COLS", "runs an int8 conv on bands of fewer than 4 output pixels (conv_s8_narrow)",
         "has int8 conv bands of fewer than 4 pixels"),
        (info.accum, "TGRS_NO_ACCUM", "accumulates a GlobalAveragePool over tiles (ACCUM units)", "has ACCUM units"),
        (info.dw_pieces, "TGRS_NO_DW_PIECES", "writes a dwconv's output over its own input in pieces",
         "runs dwconv in place"),
        (info.overwrite, "TGRS_NO_OVERWRITE", "writes outputs over dying inputs' slow homes (OVERWRITE units)",
         "has OVERWRITE units"),
        (info.one_region, "TGRS_NO_REGION", "keeps both arenas in one block of memory (ONE_REGION)",
         "is a ONE_REGION plan"),
        (info.views, "TGRS_NO_VIEWS", "runs Concats and Slices as views of one buffer (VIEW tensors)",
         "has VIEW tensors"),
        (info.acc, "TGRS_NO_ACC", "sums int8 ops over input-channel groups in int32 (kernels/acc.c)",
         "has int32 accumulator ops"),
    ]


def _feature_guards(info: PlanInfo) -> list[str]:
    lines = []
    for needed, macro, what, short in _features(info):
        if needed:
            lines += [f"/* This plan {what}: the runtime needs that part. */", f"#if defined({macro})",
                      f'#error "this plan {short}: build the runtime without -D{macro}"', "#endif"]
        else:
            lines.append(f"/* This plan does not need what -D{macro} leaves out (docs/deploying.md). */")
    return lines


def _core(info: PlanInfo, data: bytes, name: str, section: str, slow_section: str,
          fast_section: str | None, io: str = "separate") -> list[str]:
    P = name.upper()
    has_slow = info.slow_arena > 0 and not info.one_region  # one region: the slow arena is the fast array
    lines = [
        "",
        '#include "tgrs_op.h" /* tgrs_kernel_fn, the kernel entry points, tgrs_run_kernels */',
        "",
        *_feature_guards(info),
        "",
        "/* The plan is read in place and never copied whole to RAM: its records on every run, and with XIP the",
        "   weights as well (otherwise each unit's weights are copied or decompressed into the fast arena). */",
        f"static const uint8_t {name}_plan_bytes[{P}_PLAN_BYTES]",
        f'    __attribute__((aligned({_ALIGN}), section("{section}"))) = {{',
        *_byte_array(data),
        "};",
        "",
        "/*",
        " * The arenas, at exactly the sizes the plan needs. These and the loaded plan are the model's only state:",
        " * static storage is the point (no allocator), and nothing else in the runtime is mutable.",
        " */",
        f"static uint8_t {name}_fast_arena[{P}_FAST_ARENA_BYTES] __attribute__((aligned({_ALIGN})));"
        if fast_section is None else
        f"static uint8_t {name}_fast_arena[{P}_FAST_ARENA_BYTES]\n"
        f'    __attribute__((aligned({_ALIGN}), section("{fast_section}")));',
    ]
    if has_slow:
        lines.append(
            f"static uint8_t {name}_slow_arena[{P}_SLOW_ARENA_BYTES]\n"
            f'    __attribute__((aligned({_ALIGN}), section("{slow_section}")));'
        )
    elif info.one_region:
        lines.append("/* One region (ONE_REGION): the slow arena is the fast arena's memory, passed as both. */")
    else:
        lines.append("/* This plan never spills: it needs no slow arena. */")
    slow_ptr = f"{name}_slow_arena" if has_slow else f"{name}_fast_arena" if info.one_region else "NULL"
    slow_len = f"sizeof {name}_slow_arena" if has_slow else f"sizeof {name}_fast_arena" if info.one_region else "0u"
    # tigris.h: slow may be NULL when unneeded
    lines += [
        "",
        "/* The op resolver: the kernels of exactly the kinds this plan uses, so --gc-sections drops every other",
        "   kernel. A plan swapped in later that needs another kind is refused by init (TGRS_ERR_UNSUPPORTED). */",
        f"static const tgrs_kernel_fn {name}_kernels[TGRS_OP_COUNT + 1u] = {{",
        *_kernel_entries(info.kinds, "kernel", info.wzp_kinds, info.tflm_kinds),
        "};",
        "/* The loader's per-kind checks of the same kinds (tgrs_load_checks). */",
        f"static const tgrs_check_fn {name}_checks[TGRS_OP_COUNT + 1u] = {{",
        *_kernel_entries(info.kinds, "check", info.wzp_kinds, info.tflm_kinds),
        "};",
        "",
        f"static tgrs_plan {name}_state;",
        f"static int {name}_loaded;",
        "",
        f"int {name}_init(void)",
        "{",
        f"    int rc = tgrs_load_checks(&{name}_state, {name}_plan_bytes, sizeof {name}_plan_bytes, {name}_checks,",
        "                              TGRS_OP_COUNT + 1u, NULL);",
        f"    {name}_loaded = 0;",
        "    if (rc == TGRS_OK) {",
        f"        rc = tgrs_check_kernels(&{name}_state, {name}_kernels, TGRS_OP_COUNT + 1u);",
        "    }",
        "    if (rc != TGRS_OK) {",
        "        return rc;",
        "    }",
        "    /* The sizes were baked in at generation time; a plan swapped in later must still fit them. */",
        f"    if (tgrs_fast_size(&{name}_state) > {P}_FAST_ARENA_BYTES ||",
        f"        tgrs_slow_size(&{name}_state) > {P}_SLOW_ARENA_BYTES) {{",
        "        return TGRS_ERR_ARENA_SMALL;",
        "    }",
        *(_init_home_check(name, slow_ptr, slow_len) if io == "in-arena" else []),
        f"    {name}_loaded = 1;",
        "    return TGRS_OK;",
        "}",
        "",
        f"int {name}_run_stats(const void *const inputs[], void *const outputs[], tgrs_stats *stats)",
        "{",
        f"    if (!{name}_loaded) {{",
        "        return TGRS_ERR_STATE;",
        "    }",
        f"    return tgrs_run_kernels(&{name}_state, {name}_kernels, TGRS_OP_COUNT + 1u, {name}_fast_arena,",
        f"                            sizeof {name}_fast_arena, {slow_ptr}, {slow_len}, inputs, outputs, stats);",
        "}",
        "",
        f"int {name}_run(const void *const inputs[], void *const outputs[])",
        "{",
        f"    return {name}_run_stats(inputs, outputs, NULL);",
        "}",
        "",
        f"const tgrs_plan *{name}_plan(void)",
        "{",
        f"    return {name}_loaded ? &{name}_state : NULL;",
        "}",
    ]
    if io == "in-arena":
        lines += _in_arena_defs(info, name, slow_ptr, slow_len)
    return lines


def _init_home_check(name: str, slow_ptr: str, slow_len: str) -> list[str]:
    """Init refuses a plan whose I/O homes are not stable (TGRS_ERR_PLACEMENT), so the accessors never hand out a
    pointer the run would clobber."""
    P = name.upper()
    return [
        "    {",
        "        void *home;",
        "        int32_t i;",
        f"        for (i = 0; rc == TGRS_OK && i < {P}_NUM_INPUTS; ++i) {{",
        f"            rc = tgrs_input_home(&{name}_state, {name}_fast_arena, sizeof {name}_fast_arena, {slow_ptr},",
        f"                                 {slow_len}, i, &home);",
        "        }",
        f"        for (i = 0; rc == TGRS_OK && i < {P}_NUM_OUTPUTS; ++i) {{",
        f"            rc = tgrs_output_home(&{name}_state, {name}_fast_arena, sizeof {name}_fast_arena, {slow_ptr},",
        f"                                  {slow_len}, i, &home);",
        "        }",
        "        if (rc != TGRS_OK) {",
        "            return rc;",
        "        }",
        "    }",
    ]


def _kernel_entries(kinds: tuple[int, ...], what: str = "kernel", wzp_kinds: tuple[int, ...] = (),
                    tflm_kinds: tuple[int, ...] = ()) -> list[str]:
    """Designated initializers `[TGRS_OP_X] = tgrs_kernel_x,` (or `tgrs_check_x`) for the plan's kinds (KINDS fixes
    name and number); `tgrs_kernel_x_sym` for a kind of WZP_KINDS not in ``wzp_kinds``, `tgrs_kernel_x_onnx` for a
    kind of TFLM_KINDS not in ``tflm_kinds``."""
    from tigris.ops import KINDS

    names = {i + 1: kname for i, (kname, _, _) in enumerate(KINDS)}

    def entry(k: int) -> str:
        sym = "_sym" if names[k] in WZP_KINDS and k not in wzp_kinds else ""
        sym += "_onnx" if names[k] in TFLM_KINDS and k not in tflm_kinds else ""
        return f"    [TGRS_OP_{names[k].upper()}] = tgrs_{what}_{names[k]}{sym},"

    entries = [entry(k) for k in kinds if k in names]
    return entries or ["    NULL, /* the plan runs no op */"]


def _app(info: PlanInfo, name: str, io: str = "separate") -> list[str]:
    P = name.upper()
    in_arena = io == "in-arena"
    n_in, n_out = len(info.inputs), len(info.outputs)
    lines = [
        "",
        "/* ---- --format app: main() for the emulator harness (examples/cortex-m board support) ---- */",
        "#include <string.h>",
        "",
        '#include "board.h"',
        '#include "semihost.h"',
        "",
    ]
    for i in range(0 if in_arena else n_in):
        lines.append(f"static uint8_t {name}_in{i}[{P}_INPUT{i}_BYTES] __attribute__((aligned({_ALIGN})));")
    for i in range(0 if in_arena else n_out):
        lines.append(f"static uint8_t {name}_out{i}[{P}_OUTPUT{i}_BYTES] __attribute__((aligned({_ALIGN})));")
    if in_arena:
        lines.append("/* --io in-arena: no I/O buffers; files are read into and written from the arena homes. */")
    default_in = ", ".join(f'"input{i}.bin"' for i in range(n_in)) or '""'
    default_out = ", ".join(f'"output{i}.bin"' for i in range(n_out)) or '""'
    in_list = ", ".join(f"{name}_in{i}" for i in range(n_in)) or "NULL"
    out_list = ", ".join(f"{name}_out{i}" for i in range(n_out)) or "NULL"
    in_sizes = ", ".join(f"{P}_INPUT{i}_BYTES" for i in range(n_in)) or "0u"
    out_sizes = ", ".join(f"{P}_OUTPUT{i}_BYTES" for i in range(n_out)) or "0u"
    lines += [
        "",
        "/* Reads exactly `size` bytes from a host file; a file of any other length is an error. */",
        "static int read_input(const char *path, void *buf, uint32_t size)",
        "{",
        "    int fd = sh_open(path, SH_MODE_RB);",
        "    int rc;",
        "    if (fd < 0) {",
        '        sh_puts("error: cannot open input ");',
        "        sh_puts(path);",
        '        sh_puts("\\n");',
        "        return -1;",
        "    }",
        "    if (sh_flen(fd) != (long)size) {",
        '        sh_puts("error: wrong input size ");',
        "        sh_puts(path);",
        '        sh_puts(" (expected ");',
        "        sh_put_u64(size);",
        '        sh_puts(" bytes)\\n");',
        "        sh_close(fd);",
        "        return -1;",
        "    }",
        "    rc = sh_read_all(fd, buf, size);",
        "    sh_close(fd);",
        "    return rc;",
        "}",
        "",
        "static int write_output(const char *path, const void *buf, uint32_t size)",
        "{",
        "    int fd = sh_open(path, SH_MODE_WB);",
        "    int rc;",
        "    if (fd < 0) {",
        '        sh_puts("error: cannot open output ");',
        "        sh_puts(path);",
        '        sh_puts("\\n");',
        "        return -1;",
        "    }",
        "    rc = sh_write_all(fd, buf, size);",
        "    sh_close(fd);",
        "    return rc;",
        "}",
        "",
        "/*",
        f" * usage: {name} {' '.join(f'[IN{i}]' for i in range(n_in))} {' '.join(f'[OUT{i}]' for i in range(n_out))}",
        " * Files in that order (relative to the emulator's working folder); missing ones default to input<i>.bin and",
        " * output<i>.bin.",
        " * Exit codes: 0 ok, 2 usage, 3 fault, 4 file I/O, 5 runtime error (the status is printed).",
        " */",
        "int main(int argc, char **argv)",
        "{",
        f"    static const char *const default_in[{max(n_in, 1)}] = {{{default_in}}};",
        f"    static const char *const default_out[{max(n_out, 1)}] = {{{default_out}}};",
        *([] if in_arena else [
            f"    void *const in_bufs[{max(n_in, 1)}] = {{{in_list}}};",
            f"    void *const out_bufs[{max(n_out, 1)}] = {{{out_list}}};",
            f"    const void *in_const[{max(n_in, 1)}];",
        ]),
        f"    static const uint32_t in_sizes[{max(n_in, 1)}] = {{{in_sizes}}};",
        f"    static const uint32_t out_sizes[{max(n_out, 1)}] = {{{out_sizes}}};",
        "    tgrs_stats stats;",
        "    uint64_t t0;",
        "    uint64_t t1;",
        "    int rc;",
        "    int i;",
        "",
        f"    if (argc > 1 + {P}_NUM_INPUTS + {P}_NUM_OUTPUTS) {{",
        '        sh_puts("error: too many arguments\\n");',
        "        return BOARD_EXIT_USAGE;",
        "    }",
        f"    rc = {name}_init();",
        "    if (rc != TGRS_OK) {",
        '        sh_puts("error: tgrs_load failed: ");',
        "        sh_puts(tgrs_status_name(rc));",
        '        sh_puts("\\n");',
        "        return BOARD_EXIT_RUNTIME;",
        "    }",
        *([] if in_arena else [
            f"    for (i = 0; i < {P}_NUM_INPUTS; i++) {{",
            "        const char *path = argc > 1 + i ? argv[1 + i] : default_in[i];",
            "        if (read_input(path, in_bufs[i], in_sizes[i]) != 0) {",
            "            return BOARD_EXIT_IO;",
            "        }",
            "        in_const[i] = in_bufs[i];",
            "    }",
        ]),
        "    /* RAM holds garbage after a warm reset on a real device: poison the arenas so every run proves the plan",
        "       never reads a byte it did not write first. */",
        f"    memset({name}_fast_arena, 0xA5, sizeof {name}_fast_arena);",
        *([f"    memset({name}_slow_arena, 0x5A, sizeof {name}_slow_arena);"]
          if info.slow_arena > 0 and not info.one_region else []),
        *([
            f"    for (i = 0; i < {P}_NUM_INPUTS; i++) {{",
            "        const char *path = argc > 1 + i ? argv[1 + i] : default_in[i];",
            "        /* Straight into the input's home in the arena, in the stored form (make_io writes it). */",
            f"        if (read_input(path, {name}_input(i), in_sizes[i]) != 0) {{",
            "            return BOARD_EXIT_IO;",
            "        }",
            "    }",
        ] if in_arena else []),
        "    board_clock_start();",
        "    t0 = board_cycles();",
        (f"    rc = {name}_run_in_place_stats(&stats);" if in_arena else
         f"    rc = {name}_run_stats(in_const, out_bufs, &stats);"),
        "    t1 = board_cycles();",
        "    if (rc != TGRS_OK) {",
        '        sh_puts("error: tgrs_run failed: ");',
        "        sh_puts(tgrs_status_name(rc));",
        '        sh_puts(" at op ");',
        "        sh_put_i32(stats.failed_op);",
        '        sh_puts("\\n");',
        "        return BOARD_EXIT_RUNTIME;",
        "    }",
        f"    for (i = 0; i < {P}_NUM_OUTPUTS; i++) {{",
        f"        const char *path = argc > 1 + {P}_NUM_INPUTS + i ? argv[1 + {P}_NUM_INPUTS + i] : default_out[i];",
        ("        if (write_output(path, {}_output(i), out_sizes[i]) != 0) {{".format(name) if in_arena else
         "        if (write_output(path, out_bufs[i], out_sizes[i]) != 0) {"),
        "            return BOARD_EXIT_IO;",
        "        }",
        "    }",
        "    /* SysTick ticks of the core clock, not cycles on silicon: under QEMU -icount shift=0 one instruction is",
        "       one virtual nanosecond, so ticks * 1e9 / HZ = instructions. */",
        '    board_report("systick_ticks", t1 - t0);',
        '    board_report("instructions", (t1 - t0) * 1000000000u / BOARD_CPU_HZ);',
        '    board_report("stack_peak", board_stack_peak());',
        '    board_report("fast_peak", stats.fast_peak);',
        '    board_report("slow_peak", stats.slow_peak);',
        f'    board_report("fast_arena", {P}_FAST_ARENA_BYTES);',
        f'    board_report("slow_arena", {P}_SLOW_ARENA_BYTES);',
        "    return BOARD_EXIT_OK;",
        "}",
    ]
    return lines


def generate_c(
    plan_bytes: bytes,
    name: str = "model",
    fmt: str = "core",
    section: str = ".rodata.tgrs",
    slow_section: str = ".bss.tgrs_slow",
    kernels: str = "plan",
    fast_section: str | None = None,
    io: str = "separate",
) -> tuple[str, str]:
    """(C source, header) embedding ``plan_bytes``; see the module docstring for what they promise.

    ``kernels``: "plan" links the kernels of the plan's kinds only (the op resolver); "all" links every kind, for
    firmware that must accept any plan later (or to measure the whole runtime)."""
    _check_args(name, fmt, section, slow_section, fast_section)
    if kernels not in ("plan", "all"):
        raise TigrisError(f"--kernels must be plan or all, not {kernels!r}", "--kernels")
    if io not in IO_MODES:
        raise TigrisError(f"--io must be separate or in-arena, not {io!r}", "--io")
    info = read_plan_info(bytes(plan_bytes))
    if kernels == "all":
        from tigris.ops import KINDS

        info = dataclasses.replace(info, kinds=tuple(range(1, len(KINDS) + 1)),
                                   wzp_kinds=tuple(range(1, len(KINDS) + 1)),
                                   tflm_kinds=tuple(range(1, len(KINDS) + 1)))
    header = _header(info, name, section, slow_section, fast_section, io)
    body = [
        f"/* {name}.c - generated by `tigris codegen`; regenerate instead of editing. Interface block first: */",
        "",
        header.rstrip("\n"),
        *_core(info, bytes(plan_bytes), name, section, slow_section, fast_section, io),
    ]
    if fmt == "app":
        body += _app(info, name, io)
    return "\n".join(body) + "\n", header
