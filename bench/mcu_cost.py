"""Cost of one inference on an emulated Cortex-M, and the runtime's footprint (issue 7).

For every model: compile at the stated budget, generate ``--format app`` firmware, run it under QEMU with
``-icount shift=0`` (one guest instruction = one virtual nanosecond) and read the SysTick count the guest prints;
instructions = ticks x 1e9 / SYSCLK. Also reported: peak stack (the startup paints the stack; the guest scans it
after the run) and the arenas' high-water marks. Code size is the runtime's kept .text in the -Os link map of the
Cortex-M4F firmware, with every kernel and with the int8 CNN subset; the allocator check reads the same images.

    python3 bench/mcu_cost.py            # writes the mcu_cost section of docs/benchmarks.md
    python3 bench/mcu_cost.py --no-write

Needs arm-none-eabi-gcc, qemu-system-arm and ../shared/models.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "examples" / "cortex-m"))
from _doc import markdown_table, write_section  # noqa: E402

import numpy as np  # noqa: E402

import qemu_harness as qh  # noqa: E402
from tigris import api  # noqa: E402
from tigris.host import Session  # noqa: E402

SHARED = REPO.parent / "shared" / "models"

# (model, fast budget, xip, compression): the configurations tests/cortex_m/test_models.py runs.
MODELS = [
    ("mlperf_tiny/kws_dscnn_int8.onnx", "32K", False, "lz4"),
    ("mlperf_tiny/vww_mbv1_025_96_int8.onnx", "32K", True, "none"),
    ("torchvision/mobilenet_v2_035_96_int8.onnx", "32K", True, "none"),
    ("mlperf_tiny/resnet8_cifar_int8.onnx", "32K", True, "none"),
    ("tflm/person_detect_int8.onnx", "32K", True, "none"),
    ("mlperf_tiny/ad_autoencoder_int8.onnx", "32K", True, "none"),
    ("mlperf_tiny/kws_dscnn_f32.onnx", "48K", False, "none"),
    ("torchvision/mobilenet_v2_035_96_f32.onnx", "256K", True, "none"),
]
BOARDS = ("mps2-an386", "mps3-an547")
# The models of the per-layer-type table (issue 11's acceptance set), each at a budget where the plan is one untiled
# unit with --xip: every multiply-accumulate of the model runs exactly once (no halo recompute, no spill, no weight
# copy), which is how a layer-by-layer kernel library such as CMSIS-NN is measured on the model. These untiled runs
# give the acceptance figures (whole run instr/MAC); the tiled configurations of MODELS stay in the first table.
UNTILED = {
    "mlperf_tiny/kws_dscnn_int8.onnx": "64K",
    "mlperf_tiny/vww_mbv1_025_96_int8.onnx": "64K",
    "tflm/person_detect_int8.onnx": "64K",
    "mlperf_tiny/resnet8_cifar_int8.onnx": "64K",
    "torchvision/mobilenet_v2_035_96_int8.onnx": "192K",
}
LAYER_MODELS = tuple(Path(rel).stem for rel in UNTILED)
PLAIN_CFLAGS = "-DTGRS_FORCE_PLAIN"  # target.h: the plain C99 kernels on every core (the 'before' figures)
# Layer types of the per-layer table, in column order; "other" is every other kernel (quantize, copy, pad...).
LAYER_TYPES = ("conv", "pointwise", "depthwise", "fc", "pool", "softmax", "elementwise", "other")
MAC_TYPES = ("conv", "pointwise", "depthwise", "fc")
BASELINE = HERE / "mcu_layers_baseline.json"
# The float32 per-layer table (issue 11: float32 kernels on the FPU and MVE-F), each model at a --xip budget: kws
# untiled (one unit), mobilenet_v2 tiled at 256K (its 540K untiled peak does not fit the Cortex-M55's 512 KiB DTCM).
FLOAT_LAYERS = {
    "mlperf_tiny/kws_dscnn_f32.onnx": "64K",
    "torchvision/mobilenet_v2_035_96_f32.onnx": "256K",
}
BASELINE_F32 = HERE / "mcu_layers_f32_baseline.json"

# C for the profiling firmware: every entry of the op resolver table goes through prof_call, which adds the kernel's
# SysTick cycles (and, for the MAC kinds, its multiply-accumulates) to its layer type's counters. A 1x1 conv of one
# group is "pointwise"; every other conv is "conv".
_PROF_C = r"""
#include "board.h" /* board_cycles */

enum { PROF_CONV, PROF_POINTWISE, PROF_DEPTHWISE, PROF_FC, PROF_POOL, PROF_SOFTMAX, PROF_ELEMENTWISE, PROF_OTHER,
       PROF_N };
static uint64_t prof_cycles[PROF_N];
static uint64_t prof_macs[PROF_N];
static uint64_t prof_outs[PROF_N];

static uint64_t prof_out_elems(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *o = ctx->out;
    return o == NULL ? 0u : (uint64_t)o->dims[0] * (uint64_t)o->rows * (uint64_t)o->dims[2] * (uint64_t)o->dims[3];
}

static int prof_call(const tgrs_op_ctx *ctx, tgrs_kernel_fn fn, int type, uint64_t macs_per_out)
{
    const uint64_t t0 = board_cycles();
    const int rc = fn(ctx);
    prof_cycles[type] += board_cycles() - t0;
    prof_macs[type] += prof_out_elems(ctx) * macs_per_out;
    prof_outs[type] += prof_out_elems(ctx);
    return rc;
}
"""

_PROF_WRAP = {  # kind -> (layer type expression, MACs per output element expression)
    "conv": ("(ctx->p[TGRS_P_CONV_KH] == 1 && ctx->p[TGRS_P_CONV_KW] == 1 && ctx->p[TGRS_P_CONV_GROUP] == 1) ? "
             "PROF_POINTWISE : PROF_CONV", "(uint64_t)ctx->p[TGRS_P_CONV_PATCH]"),
    "dwconv": ("PROF_DEPTHWISE", "(uint64_t)ctx->p[TGRS_P_DWCONV_KH] * (uint64_t)ctx->p[TGRS_P_DWCONV_KW]"),
    "fc": ("PROF_FC", "(uint64_t)ctx->p[TGRS_P_FC_K]"),
    "maxpool": ("PROF_POOL", "0u"), "avgpool": ("PROF_POOL", "0u"), "gap": ("PROF_POOL", "0u"),
    "softmax": ("PROF_SOFTMAX", "0u"),
    "add": ("PROF_ELEMENTWISE", "0u"), "sub": ("PROF_ELEMENTWISE", "0u"), "mul": ("PROF_ELEMENTWISE", "0u"),
    "unary": ("PROF_ELEMENTWISE", "0u"), "prelu": ("PROF_ELEMENTWISE", "0u"),
}


def profiling_app(c_src: str) -> str:
    """The generated app source with every kernel of its op resolver timed per layer type (see _PROF_C)."""
    import re

    kinds = re.findall(r"\[TGRS_OP_([A-Z0-9_]+)\] = tgrs_kernel_([a-z0-9_]+),", c_src)
    wrappers = [_PROF_C]
    for _, entry in kinds:  # entry: the kind, kind_sym (no weight zero points) or softmax_onnx (no TFLM softmax)
        kind = entry.removesuffix("_sym").removesuffix("_onnx")
        typ, macs = _PROF_WRAP.get(kind, ("PROF_OTHER", "0u"))
        wrappers.append(f"static int prof_{entry}(const tgrs_op_ctx *ctx)\n{{\n"
                        f"    return prof_call(ctx, tgrs_kernel_{entry}, {typ}, {macs});\n}}\n")
        c_src = c_src.replace(f"= tgrs_kernel_{entry},", f"= prof_{entry},")
    marker = "/* The op resolver:"
    c_src = c_src.replace(marker, "\n".join(wrappers) + "\n" + marker, 1)
    report = "".join(
        f'    board_report("{t}_instructions", prof_cycles[{i}] * 1000000000u / BOARD_CPU_HZ);\n'
        f'    board_report("{t}_macs", prof_macs[{i}]);\n    board_report("{t}_outputs", prof_outs[{i}]);\n'
        for i, t in enumerate(LAYER_TYPES))
    tail = "    return BOARD_EXIT_OK;\n}"
    head, sep, rest = c_src.rpartition(tail)
    assert sep, "generated app has no final return"
    return head + report + sep + rest


def compile_untiled(rel: str, prep=None):
    """The model at its UNTILED budget with --xip; refuses a plan that is not one untiled unit."""
    path = SHARED / rel
    c = api.compile_model(str(path), UNTILED[rel], xip=True, compression="none", prepared=prep)
    units = c.analysis.plan.units
    if len(units) != 1 or c.analysis.json["tiling"]["tiles"] != 0:
        raise RuntimeError(f"{rel} at {UNTILED[rel]} --xip: {len(units)} units, "
                           f"{c.analysis.json['tiling']['tiles']} tiles (the untiled budget must give one unit)")
    return c


def layer_profile(rel: str, work: Path, boards=BOARDS, cflags: str = "", budget: str | None = None) -> dict:
    """Per board: per layer type, instructions, MACs and output elements of one inference of the untiled plan
    (profiling firmware), and the total of the unprofiled firmware. ``cflags``: PLAIN_CFLAGS for the baseline.
    ``budget``: the plan at that budget with --xip instead (tiled or not; the float table)."""
    from tigris.codegen import generate_c

    path = SHARED / rel
    prep = api.prepare(str(path))
    if budget is None:
        c = compile_untiled(rel, prep)
    else:
        c = api.compile_model(str(path), budget, xip=True, compression="none", prepared=prep)
        tiles = c.analysis.json["tiling"]["tiles"]
        config = f"{budget} xip" + (" untiled" if len(c.analysis.plan.units) == 1 and not tiles else
                                    f", {tiles} tiles")
    s = Session(c.plan_bytes)
    inputs = api.random_inputs(prep, seed=0)
    host = s.run(inputs)
    result = {}
    for board in boards:
        res = {}
        for variant in ("plain", "prof"):
            d = work / "layers" / Path(rel).stem / board / variant
            d.mkdir(parents=True, exist_ok=True)
            c_src, header = generate_c(c.plan_bytes, "model", "app")
            if variant == "prof":
                c_src = profiling_app(c_src)
            (d / "model.c").write_text(c_src)
            (d / "model.h").write_text(header)
            elf = qh.build(board, d / "build", model_c=d / "model.c", obj_dir=work / "obj" / board, cflags=cflags)
            ins = [f"in{i}.bin" for i in range(len(s.inputs))]
            outs = [f"out{i}.bin" for i in range(len(s.outputs))]
            for name, spec in zip(ins, s.inputs):
                (d / name).write_bytes(s._to_caller(spec, inputs[spec.name]))
            r = qh.run(board, elf, ins + outs, cwd=d, timeout_s=900)
            if r.returncode != 0:
                raise RuntimeError(f"{rel} on {board}: exit {r.returncode}\n{r.console}")
            for o, spec in zip(outs, s.outputs):
                if (d / o).read_bytes() != s._to_caller(spec, host.outputs[spec.name]) and \
                        spec.caller_dtype != "float32":
                    raise RuntimeError(f"{rel} on {board}: output differs from the host runtime")
            if variant == "plain":
                res["total"] = r.report["instructions"]
            else:
                res["types"] = {t: [r.report[f"{t}_instructions"], r.report[f"{t}_macs"], r.report[f"{t}_outputs"]]
                                for t in LAYER_TYPES}
        result[board] = res
    result["config"] = f"{UNTILED[rel]} xip untiled" if budget is None else config
    return result


def run_model(rel: str, fast: str, xip: bool, comp: str, work: Path, untiled: bool = False) -> list[object]:
    path = SHARED / rel
    prep = api.prepare(str(path))
    c = compile_untiled(rel, prep) if untiled else api.compile_model(str(path), fast, xip=xip, compression=comp,
                                                                    prepared=prep)
    j = c.analysis.json
    s = Session(c.plan_bytes)
    inputs = api.random_inputs(prep, seed=0)
    host = s.run(inputs)
    ins = [f"in{i}.bin" for i in range(len(s.inputs))]
    outs = [f"out{i}.bin" for i in range(len(s.outputs))]
    per_board = {}
    for board in BOARDS:
        d = work / (Path(rel).stem + ("-untiled" if untiled else "")) / board
        elf = qh.build_plan_app(c.plan_bytes, board, d, obj_dir=work / "obj" / board)
        for name, spec in zip(ins, s.inputs):
            (d / name).write_bytes(s._to_caller(spec, inputs[spec.name]))
        r = qh.run(board, elf, ins + outs, cwd=d, timeout_s=900)
        if r.returncode != 0:
            raise RuntimeError(f"{rel} on {board}: exit {r.returncode}\n{r.console}")
        verdicts = [_compare((d / o).read_bytes(), s._to_caller(spec, host.outputs[spec.name]), spec.caller_dtype)
                     for o, spec in zip(outs, s.outputs)]
        per_board[board] = (r.report, "bytes" if all(v == "bytes" for v in verdicts) else
                            ("1e-5" if all(verdicts) else ""))
    m4, m55 = per_board["mps2-an386"][0], per_board["mps3-an547"][0]
    mode = "xip" if xip else ("lz4" if comp == "lz4" else "copy")
    return [
        Path(rel).stem, f"{UNTILED[rel]} xip, untiled" if untiled else f"{fast} {mode}", len(j["stages"]), j["tiling"]["tiles"], j["slow"]["spill_bytes"],
        f"{m4['instructions']:,}", f"{m55['instructions']:,}", m4["stack_peak"], m4["fast_peak"], m4["slow_peak"],
        _worst([v[1] for v in per_board.values()]),
    ]


def _compare(guest: bytes, host: bytes, dtype: str) -> str:
    """"bytes" when identical, "1e-5" when a float output is within 1e-5 relative (the tests' criterion), else ""."""
    if guest == host:
        return "bytes"
    if dtype != "float32" or len(guest) != len(host):
        return ""
    g = np.frombuffer(guest, np.float32).astype(np.float64)
    h = np.frombuffer(host, np.float32).astype(np.float64)
    return "1e-5" if float(np.max(np.abs(g - h))) <= 1e-5 * max(1.0, float(np.max(np.abs(h)))) else ""


def _worst(verdicts: list[str]) -> str:
    if "" in verdicts:
        return "**NO**"
    return "identical bytes" if all(v == "bytes" for v in verdicts) else "within 1e-5 rel."


def weight_modes(work: Path, rel: str = "mlperf_tiny/kws_dscnn_int8.onnx", fast: str = "64K") -> str:
    """The XIP / copy / LZ4 trade-off on one model at one budget, on the Cortex-M4F."""
    path = SHARED / rel
    prep = api.prepare(str(path))
    inputs = api.random_inputs(prep, seed=0)
    rows = []
    for label, xip, comp in (("--xip", True, "none"), ("copy (default)", False, "none"), ("-c lz4", False, "lz4")):
        c = api.compile_model(str(path), fast, xip=xip, compression=comp, prepared=prep)
        j = c.analysis.json
        s = Session(c.plan_bytes)
        d = work / "modes" / label.split()[0].strip("-")
        elf = qh.build_plan_app(c.plan_bytes, "mps2-an386", d, obj_dir=work / "obj" / "mps2-an386")
        (d / "in0.bin").write_bytes(s._to_caller(s.inputs[0], inputs[s.inputs[0].name]))
        r = qh.run("mps2-an386", elf, ["in0.bin", "out0.bin"], cwd=d, timeout_s=900)
        if r.returncode != 0:
            raise RuntimeError(f"{label}: exit {r.returncode}\n{r.console}")
        prefix = max((u.weight_bytes for u in c.analysis.plan.units), default=0)
        rows.append([label, f"{len(c.plan_bytes):,}", f"{prefix:,}", j["fast"]["peak_bytes"], len(j["stages"]),
                     j["slow"]["spill_bytes"] + j["slow"]["reload_bytes"], f"{r.report['instructions']:,}"])
    return (f"Weight placement for {Path(rel).stem} at -m {fast} on the Cortex-M4F:\n\n" + markdown_table(
        ["weights", "plan (flash) B", "weight prefix in fast RAM B", "fast peak B", "stages", "spill+reload B",
         "instructions"], rows))


def subset_runs(work: Path) -> str:
    """Every shared int8 model of MODELS on the int8-subset firmware: must give the host's bytes."""
    ok, bad = [], []
    for rel, fast, xip, comp in MODELS:
        if not rel.endswith("_int8.onnx") or not (SHARED / rel).exists():
            continue
        prep = api.prepare(str(SHARED / rel))
        c = api.compile_model(str(SHARED / rel), fast, xip=xip, compression=comp, prepared=prep)
        s = Session(c.plan_bytes)
        inputs = api.random_inputs(prep, seed=0)
        host = s.run(inputs)
        d = work / "subset" / Path(rel).stem
        # Its own generated op resolver: each model's firmware links exactly its kinds' int8 kernels.
        elf = qh.build_plan_app(c.plan_bytes, "mps2-an386", d, obj_dir=work / "obj-size", opt="-Os",
                                cflags=qh.INT8_ONLY_CFLAGS)
        (d / "in0.bin").write_bytes(s._to_caller(s.inputs[0], inputs[s.inputs[0].name]))
        r = qh.run("mps2-an386", elf, ["in0.bin", "out0.bin"], cwd=d, timeout_s=900)
        same = r.returncode == 0 and (d / "out0.bin").read_bytes() == s._to_caller(
            s.outputs[0], host.outputs[s.outputs[0].name])
        (ok if same else bad).append(Path(rel).stem)
    text = "The int8 subset firmware runs " + ", ".join(ok) + " with output bytes identical to the host runtime"
    return text + (f"; it FAILS on {', '.join(bad)}." if bad else ".")


def footprint(work: Path) -> tuple[str, list[str]]:
    c = api.compile_model(str(REPO / "tests" / "models" / "kws_dscnn_int8.onnx"), "32K")
    rows, alloc = [], []
    # The subset is what kws_dscnn_int8's generated firmware links: every source, int8-only, and the op resolver
    # table of its plan's kinds (docs/deploying.md); the other row's table names every kind.
    for label, res, target, cflags in (("every kernel", "all", 32, ""),
                                       ("int8 CNN subset (op resolver), int8-only", "plan", 16, qh.SUBSET_CFLAGS)):
        elf = qh.build_plan_app(c.plan_bytes, "mps2-an386", work / f"size-{label.split()[0]}",
                                obj_dir=work / "obj-size", opt="-Os", cflags=cflags, kernels=res)
        map_text = (elf.parent / "model.map").read_text()
        rt = qh.runtime_size(map_text)
        used = qh.runtime_sources()
        kept = {k.split("runtime_c_src_kernels_")[-1].split(".")[0] for k in qh.linked_sizes(map_text)
                if "runtime_c_src_kernels_" in k}
        kernels = sorted(kept)
        objs_text = qh.size_text(qh.runtime_objects(work / "obj-size" / qh.flag_dir("-Os", cflags), used))
        rows.append([label, f"{rt.text:,}", f"{rt.text / 1024:.1f} KiB", f"<= {target} KiB",
                     "met" if rt.text <= target * 1024 else "**missed**", f"{rt.rodata:,}", f"{objs_text:,}",
                     ", ".join(kernels)])
        found = sorted(set(qh.allocator_symbols(elf)) | set(qh.map_mentions_allocator(map_text)))
        alloc.append(f"{label}: " + ("none" if not found else ", ".join(found)))
    table = markdown_table(["runtime build (Cortex-M4F, -Os)", "linked .text (B)", "linked .text", "target", "",
                            "linked .rodata (B)", "arm-none-eabi-size text of the objects (B)", "kernel files"], rows)
    return table, alloc


def layer_profiles(work: Path, only: list[str] | None = None, cflags: str = "") -> dict:
    out = {}
    for rel in UNTILED:
        stem = Path(rel).stem
        if (only and stem not in only) or not (SHARED / rel).exists():
            continue
        out[stem] = layer_profile(rel, work, cflags=cflags)
        print(stem, out[stem], flush=True)
    return out


def float_layer_profiles(work: Path, only: list[str] | None = None, cflags: str = "") -> dict:
    """The per-layer profiles of FLOAT_LAYERS (keyed by model stem)."""
    out = {}
    for rel, budget in FLOAT_LAYERS.items():
        stem = Path(rel).stem
        if (only and stem not in only) or not (SHARED / rel).exists():
            continue
        out[stem] = layer_profile(rel, work, cflags=cflags, budget=budget)
        print(stem, out[stem], flush=True)
    return out


def float_layer_text(profiles: dict, baseline: dict | None, tiled: dict | None = None) -> str:
    configs = ", ".join(f"{stem} at {p['config']}" for stem, p in profiles.items())
    return (
        "\n\nFloat32 per layer type, -O2, the same profiling firmware: " + configs + ". Before: the plain C99 "
        f"float kernels (`-DTGRS_FORCE_PLAIN`), `{BASELINE_F32.name}`, recorded with `--float-layers "
        "--record-baseline`; after: the Cortex-M4F's FPU kernels (register blocks in s0-s31 with VMLA, the plain "
        "loops' bits) and the Cortex-M55's MVE-F kernels (vector FMA), docs/runtime.md. The tiled column is the "
        "first table's 48K copy (kws) and 256K xip (mobilenet_v2) rows over the same MACs.\n\n"
        + layer_tables(profiles, baseline, tiled))


def _per_mac(t: list[int]) -> str:
    return f"{t[0] / t[1]:.2f}" if t[1] else "-"


def _per_out(t: list[int]) -> str:
    return f"{t[0] / t[2]:.1f}" if t[2] else "-"


def _was_now(now: str, was: str | None) -> str:
    return now if was in (None, "-") else f"{was} -> {now}"


def layer_tables(profiles: dict, baseline: dict | None, tiled: dict | None = None) -> str:
    """Instructions per MAC per model and core (before -> after when a baseline is given), then every layer type's
    share of the instructions and the instructions per output of the non-MAC types (before -> after). ``tiled``:
    per model and board the whole-run instructions of the tiled configuration of the first table."""
    rows, rows2 = [], []
    for stem, per_board in profiles.items():
        for board, res in per_board.items():
            if board == "config":
                continue
            core = qh.BOARDS[board]
            macs = sum(v[1] for v in res["types"].values())
            b_model = (baseline or {}).get(stem, {})
            base = b_model.get(board) if b_model.get("config") == per_board.get("config") else None
            cells = [_was_now(_per_mac(res["types"][t]), _per_mac(base["types"][t]) if base else None)
                     for t in MAC_TYPES]
            tot = _was_now(f"{res['total'] / macs:.2f}", f"{base['total'] / macs:.2f}" if base else None)
            til = (tiled or {}).get(stem, {}).get(board)
            rows.append([stem, core, f"{macs:,}", *cells, tot, f"{til / macs:.2f}" if til else "-",
                         f"{base['total']:,}" if base else "-", f"{res['total']:,}"])
            kern = {t: v[0] for t, v in res["types"].items()}
            rest = res["total"] - sum(kern.values())
            shares = [f"{kern[t] / res['total'] * 100:.1f}%" for t in LAYER_TYPES] + [f"{rest / res['total'] * 100:.1f}%"]
            per_out = [_was_now(_per_out(res["types"][t]), _per_out(base["types"][t]) if base else None)
                       for t in ("pool", "softmax", "elementwise")]
            rows2.append([stem, core, *shares, *per_out])
    t1 = markdown_table(["model", "core", "MACs", *[f"{t} instr/MAC" for t in MAC_TYPES],
                         "whole run instr/MAC (untiled, acceptance)", "whole run instr/MAC (tiled plan of the first "
                         "table, same MACs)", "instructions before", "instructions after"], rows)
    t2 = markdown_table(["model", "core", *[f"{t} %" for t in LAYER_TYPES], "executor, weights, spills %",
                         "pool instr/output", "softmax instr/output", "element-wise instr/output"], rows2)
    return t1 + "\n\n" + t2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--layers-only", action="store_true", help="only the per-layer-type profiles")
    ap.add_argument("--model", action="append", help="with --layers-only: only this model (stem); repeatable")
    ap.add_argument("--record-baseline", action="store_true",
                    help=f"with --layers-only: profile the plain C99 kernels ({PLAIN_CFLAGS}) and store them as "
                         f"the 'before' figures ({BASELINE.name}; with --float-layers {BASELINE_F32.name}); with "
                         "--model, only those models' entries change")
    ap.add_argument("--float-layers", action="store_true",
                    help="only the float32 per-layer-type profiles (FLOAT_LAYERS; --model filters)")
    args = ap.parse_args()
    if qh.missing_tools():
        sys.exit(f"error: missing tools: {', '.join(qh.missing_tools())}")
    baseline = json.loads(BASELINE.read_text()) if BASELINE.exists() else None
    baseline_f32 = json.loads(BASELINE_F32.read_text()) if BASELINE_F32.exists() else None
    if args.float_layers:
        with tempfile.TemporaryDirectory(prefix="mcu_layers_f32-") as tmp:
            prof = float_layer_profiles(Path(tmp), args.model, cflags=PLAIN_CFLAGS if args.record_baseline else "")
        if args.record_baseline:
            BASELINE_F32.write_text(json.dumps({**(baseline_f32 or {}), **prof}, indent=1, sort_keys=True) + "\n")
        print(float_layer_text(prof, None if args.record_baseline else baseline_f32))
        return
    if args.layers_only:
        with tempfile.TemporaryDirectory(prefix="mcu_layers-") as tmp:
            prof = layer_profiles(Path(tmp), args.model, cflags=PLAIN_CFLAGS if args.record_baseline else "")
        if args.record_baseline:
            BASELINE.write_text(json.dumps({**(baseline or {}), **prof}, indent=1, sort_keys=True) + "\n")
        print(layer_tables(prof, None if args.record_baseline else baseline))
        return
    with tempfile.TemporaryDirectory(prefix="mcu_cost-") as tmp:
        work = Path(tmp)
        profiles = layer_profiles(work)
        rows, tiled = [], {}
        for rel, fast, xip, comp in MODELS:
            if not (SHARED / rel).exists():
                print(f"skip {rel}: not in ../shared/models", flush=True)
                continue
            rows.append(run_model(rel, fast, xip, comp, work))
            tiled[Path(rel).stem] = {b: int(rows[-1][i].replace(",", "")) for b, i in zip(BOARDS, (5, 6))}
            print(rows[-1], flush=True)
        for rel in UNTILED:
            if (SHARED / rel).exists():
                rows.append(run_model(rel, "", True, "none", work, untiled=True))
                print(rows[-1], flush=True)
        for rel, budget in FLOAT_LAYERS.items():  # the float table's plans that MODELS does not run
            if (SHARED / rel).exists() and (rel, budget, True, "none") not in MODELS:
                rows.append(run_model(rel, budget, True, "none", work))
                print(rows[-1], flush=True)
        layers = layer_tables(profiles, baseline, tiled)
        layers += float_layer_text(float_layer_profiles(work), baseline_f32, tiled)
        size_table, alloc = footprint(work)
        modes = weight_modes(work)
        subset = subset_runs(work)
    table = markdown_table(
        ["model", "budget", "stages", "tiles", "spill B", "instructions M4F", "instructions M55", "stack peak B",
         "fast peak B", "slow peak B", "= host"], rows)
    body = (
        "One inference on QEMU `mps2-an386` (Cortex-M4F) and `mps3-an547` (Cortex-M55), firmware from "
        "`tigris codegen --format app` built with `-O2 -std=c99 -ffp-contract=off`; run `python3 bench/mcu_cost.py`. "
        "Instructions come from `-icount shift=0` (one instruction per virtual ns) and a SysTick read in the guest "
        "(ticks x 1e9 / SYSCLK, calibrated by tests/cortex_m/test_board.py to +-2 ticks); QEMU does not model "
        "pipeline or memory wait states, so these are instruction counts, not cycles on silicon. The count covers "
        "the whole `tgrs_run`: kernels, reloads/spills, weight copies or LZ4 decompression. Stack peak is the "
        "painted-stack high water of the whole program (startup, semihosting and the run). "
        "`= host`: outputs on both boards against the host runtime (int8 must be identical bytes; float within "
        "1e-5 relative: newlib's and glibc's expf may round the last bit differently).\n\n"
        + table
        + "\n\nRuntime code size: the `.text` of `runtime_c/src/**` objects kept in the `--gc-sections` link of the "
        "kws_dscnn_int8 firmware (Cortex-M4F, `-Os`). Both compile every runtime source. The every-kernel firmware's "
        "op resolver table names every kind; the int8 subset is the firmware `tigris codegen` generates by default, "
        "whose table names only the plan's kinds (conv, dwconv, avgpool, fc, softmax; the multiply-accumulate kinds "
        "through their `_sym` entries, as no op has weight zero points, and softmax through its `_onnx` entry, as no "
        "op has TFLM numerics), so `--gc-sections` drops every other kernel, the weight-zero-point paths and TFLM's "
        "softmax (docs/deploying.md), and it is built with `-DTGRS_INT8_ONLY -DTGRS_NO_ROLLING -DTGRS_NO_COLS` (the "
        "plan has no ROLLING and no COLS unit, so halo reuse and column tiling are left out too): "
        "the kernel registry (`runtime_c/src/kernels/registry.c`) then names no float variant, so `--gc-sections` "
        "drops every float kernel and libm (float ops fail with TGRS_ERR_UNSUPPORTED). What remains is the loader, "
        "the executor and the int8 kernels. The last size column is `arm-none-eabi-size` (Berkeley text = code + "
        "read-only data) of the same objects before `--gc-sections`, an upper bound.\n\n"
        + size_table
        + "\n\n" + subset
        + "\n\nDynamic allocation (allocator symbols in the image, or allocator objects in the link map): "
        + "; ".join(alloc) + ".\n\n"
        + modes
    )
    body += (
        "\n\nPer layer type (issue 11), -O2, on the untiled plan of each model (the `untiled` rows of the first "
        "table: the budget at which the plan is one untiled unit, `--xip`, so every multiply-accumulate of the model "
        "runs once, with no halo recompute, spill or weight copy, as a kernel library is measured layer by layer "
        "on the model): a profiling build of the same firmware times every kernel call with "
        "SysTick and adds it to its layer type (a conv with a 1x1 window and one group is pointwise). instr/MAC is "
        "the kernel instructions of that type over its multiply-accumulates; the whole-run figure divides the "
        "unprofiled firmware's count (everything in `tgrs_run`) by all MACs, and the untiled one is the acceptance "
        "figure of issue 11 (KWS <= 2.9 on the M4F and <= 0.70 on the M55; VWW <= 3.2 and <= 0.87). The tiled "
        "column divides the whole-run count of the model's tiled configuration in the first table by the same "
        "(model) MACs: it also pays for halo rows computed twice, spills and weight copies. Before: the plain C99 "
        f"kernels (`-DTGRS_FORCE_PLAIN`) on both cores on the same untiled plans, `{BASELINE.name}`, recorded with "
        "`--layers-only --record-baseline`; pool, softmax and element-wise are in instructions per output "
        "element.\n\n"
        + layers)
    print(body)
    if not args.no_write:
        write_section("mcu_cost", body)


if __name__ == "__main__":
    main()
