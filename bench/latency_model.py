"""Calibrate and check the latency estimate of `tigris analyze --target` (tigris/cost.py) against QEMU.

    python3 bench/latency_model.py --calibrate   # measure every kernel call, refit tigris/cost_model.json, check
    python3 bench/latency_model.py               # check the current cost_model.json; writes docs/benchmarks.md
    python3 bench/latency_model.py --no-write

Calibration: for each configuration of CALIBRATE, the `--format app` firmware is generated as usual and then
profiled: every entry of its op resolver table becomes a wrapper that reads SysTick before and after the kernel and
logs (kind, ticks) per call; the guest prints the log after the run. Under `-icount shift=0` one instruction is one
virtual nanosecond, so ticks x 1e9 / SYSCLK are instructions. The host replays the executor's call order
(`tigris.cost.calls`), checks the logged kinds against it, and fits per cost key (kernel kind, dtype, 1x1 conv)
instructions = a x MACs + b x taps + c x positions + d x input bytes + e x output bytes + f by non-negative
least squares. What the run spends
outside the kernels (its total less the kernel calls and the wrappers' own cost, measured in the guest) is fitted on
op visits, bytes copied and bytes LZ4-decoded. The `generic` target is the mean of the two cores.

Check: the configurations of CHECK (other budgets and weight modes than the calibration, so the tiling differs) run
as plain firmware (no wrappers) on both boards; the estimate must be within 15% of the QEMU count.

Kernel speed changes with the runtime: rerun with --calibrate after changing a kernel. Needs arm-none-eabi-gcc,
qemu-system-arm and ../shared/models.
"""
from __future__ import annotations

import argparse
import json
import re
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
from tigris import api, cost  # noqa: E402
from tigris.codegen import generate_c  # noqa: E402
from tigris.host import Session  # noqa: E402
from tigris.ops import KIND_IDS  # noqa: E402

SHARED = REPO.parent / "shared" / "models"
BOARDS = {"mps2-an386": ("cortex-m4", 25_000_000), "mps3-an547": ("cortex-m55", 32_000_000)}
TOLERANCE = 0.15
FEW_CALLS = 8  # a cost key measured on fewer calls gets the two-term model (per MAC, per output byte)

# (model, fast budget, xip, compression): the configurations bench/mcu_cost.py runs, and float models.
CALIBRATE = [
    ("mlperf_tiny/kws_dscnn_int8.onnx", "32K", False, "lz4"),
    ("mlperf_tiny/vww_mbv1_025_96_int8.onnx", "32K", True, "none"),
    ("torchvision/mobilenet_v2_035_96_int8.onnx", "32K", True, "none"),
    ("mlperf_tiny/resnet8_cifar_int8.onnx", "32K", True, "none"),
    ("tflm/person_detect_int8.onnx", "32K", True, "none"),
    ("mlperf_tiny/ad_autoencoder_int8.onnx", "32K", True, "none"),
    ("mlperf_tiny/kws_dscnn_f32.onnx", "48K", False, "none"),
    ("onnx_zoo/mnist-8.onnx", "64K", False, "none"),
    ("mlperf_tiny/resnet8_cifar_f32.onnx", "64K", True, "none"),
    ("mlperf_tiny/ad_autoencoder_f32.onnx", "32K", True, "none"),
    ("torchvision/mobilenet_v2_035_96_f32.onnx", "128K", True, "none"),
    ("mlperf_tiny/streaming_wakeword_int8.onnx", "64K", False, "none"),
]
# Other budgets and weight modes: different stages, tiles and traffic than the calibration runs.
CHECK = [
    ("mlperf_tiny/kws_dscnn_int8.onnx", "64K", False, "none"),
    ("mlperf_tiny/vww_mbv1_025_96_int8.onnx", "96K", True, "none"),
    ("torchvision/mobilenet_v2_035_96_int8.onnx", "64K", True, "none"),
    ("mlperf_tiny/resnet8_cifar_int8.onnx", "16K", True, "none"),
    ("tflm/person_detect_int8.onnx", "64K", True, "none"),
    ("mlperf_tiny/ad_autoencoder_int8.onnx", "96K", False, "none"),
    ("mlperf_tiny/kws_dscnn_f32.onnx", "96K", False, "none"),
    ("onnx_zoo/mnist-8.onnx", "16K", True, "none"),
    ("mlperf_tiny/resnet8_cifar_f32.onnx", "32K", True, "none"),
    ("mlperf_tiny/vww_mbv1_025_96_f32.onnx", "64K", True, "none"),
    ("mlperf_tiny/ad_autoencoder_f32.onnx", "128K", True, "none"),
    ("torchvision/mobilenet_v2_035_96_f32.onnx", "64K", True, "none"),
    ("mlperf_tiny/streaming_wakeword_int8.onnx", "32K", True, "none"),
    ("torchvision/efficientnet_lite0_128_int8.onnx", "128K", True, "none"),
    ("torchvision/efficientnet_lite0_128_f32.onnx", "128K", True, "none"),
]
# The plan array must fit the board's flash (examples/cortex-m/boards/*.ld; 4M on MPS2, 8M of QSPI on MPS3) with
# the firmware around it; a larger plan is reported as not run rather than linked and failed.
BOARD_FLASH = {"mps2-an386": 4 * 1024 * 1024 - 256 * 1024, "mps3-an547": 8 * 1024 * 1024 - 256 * 1024}
KIND_NAMES = {v: k for k, v in KIND_IDS.items()}

PROFILE_C = """
/* ---- bench/latency_model.py: per-call kernel profile ---- */
#define PROF_MAX 16384u
static uint32_t prof_ticks[PROF_MAX];
static uint8_t prof_kind[PROF_MAX];
static uint32_t prof_n;
static int prof_noop(const tgrs_op_ctx *ctx) { (void)ctx; return 0; }
#define PROF_WRAP(fn, k) \\
    static int prof_##fn(const tgrs_op_ctx *ctx) \\
    { \\
        uint64_t t0 = board_cycles(); \\
        int rc = fn(ctx); \\
        uint64_t t1 = board_cycles(); \\
        if (prof_n < PROF_MAX) { \\
            prof_ticks[prof_n] = (uint32_t)(t1 - t0); \\
            prof_kind[prof_n] = (uint8_t)(k); \\
        } \\
        prof_n++; \\
        return rc; \\
    }
PROF_WRAP(prof_noop, 0)
"""

DUMP_C = """
static void prof_dump(void)
{
    volatile tgrs_op_ctx ctx;
    uint32_t i;
    uint32_t n = prof_n;
    uint64_t t0;
    uint64_t inner = 0;
    uint32_t keep_ticks = prof_ticks[0];
    uint8_t keep_kind = prof_kind[0];
    memset((void *)&ctx, 0, sizeof ctx);
    t0 = board_cycles();
    for (i = 0; i < 1000u; i++) {
        prof_n = 0;
        (void)prof_prof_noop((const tgrs_op_ctx *)&ctx);
        inner += prof_ticks[0];
    }
    board_report("prof_outer_x1000", board_cycles() - t0);
    board_report("prof_inner_x1000", inner);
    board_report("prof_calls", n);
    prof_ticks[0] = keep_ticks;
    prof_kind[0] = keep_kind;
    for (i = 0; i < n && i < PROF_MAX; i++) {
        board_report("call", ((uint64_t)prof_kind[i] << 32) | prof_ticks[i]);
    }
}
"""


def profiled_source(c_src: str) -> str:
    """The generated app with every op resolver entry wrapped (see module docstring)."""
    entries = re.findall(r"\[TGRS_OP_(\w+)\] = (tgrs_kernel_\w+),", c_src)
    if not entries:
        raise RuntimeError("no op resolver table in the generated source")
    wraps = "".join(f"PROF_WRAP({fn}, TGRS_OP_{k})\n" for k, fn in entries)
    table = c_src.index("static const tgrs_kernel_fn")
    out = c_src[:table] + '#include "board.h"\n#include <string.h>\n' + PROFILE_C + wraps + c_src[table:]
    for k, fn in entries:
        out = out.replace(f"[TGRS_OP_{k}] = {fn},", f"[TGRS_OP_{k}] = prof_{fn},")
    main_at = out.index("int main(int argc")
    out = out[:main_at] + DUMP_C + out[main_at:]
    anchor = '    board_report("slow_peak", stats.slow_peak);\n'
    if anchor not in out:
        raise RuntimeError("cannot find the end of main() in the generated source")
    return out.replace(anchor, anchor + "    prof_dump();\n")


def _build_and_run(c_src: str, header: str, board: str, d: Path, obj: Path, inputs: list[bytes], n_out: int):
    d.mkdir(parents=True, exist_ok=True)
    (d / "model.c").write_text(c_src)
    (d / "model.h").write_text(header)
    elf = qh.build(board, d / "build", model_c=d / "model.c", obj_dir=obj)
    args = []
    for i, data in enumerate(inputs):
        (d / f"in{i}.bin").write_bytes(data)
        args.append(f"in{i}.bin")
    args += [f"out{i}.bin" for i in range(n_out)]
    r = qh.run(board, elf, args, cwd=d, timeout_s=900)
    if r.returncode != 0:
        raise RuntimeError(f"{d}: exit {r.returncode}\n{r.console[-2000:]}")
    return r


def _config(rel: str, fast: str, xip: bool, comp: str):
    path = SHARED / rel
    prep = api.prepare(str(path))
    c = api.compile_model(str(path), fast, xip=xip, compression=comp, prepared=prep)
    s = Session(c.plan_bytes)
    x = api.random_inputs(prep, seed=0)
    ins = [s._to_caller(spec, x[spec.name]) for spec in s.inputs]
    return prep, c, ins, len(s.outputs)


def measure_calls(rel: str, fast: str, xip: bool, comp: str, board: str, work: Path) -> dict:
    """One profiled run: per call (cost key, MACs, in bytes, out bytes, instructions), and the overhead figures."""
    prep, c, ins, n_out = _config(rel, fast, xip, comp)
    hz = BOARDS[board][1]
    c_src, header = generate_c(c.plan_bytes, "model", "app")
    r = _build_and_run(profiled_source(c_src), header, board, work / Path(rel).stem / f"{fast}-{board}",
                       work / "obj" / board, ins, n_out)
    to_instr = 1e9 / hz
    logged = [(int(line.split()[1]) >> 32, int(line.split()[1]) & 0xFFFFFFFF) for line in r.console.splitlines()
              if line.startswith("call ")]
    plan, graph, lowered = c.analysis.plan, prep.graph, prep.lowered
    replay = list(cost.calls(graph, plan, lowered))
    if len(replay) != len(logged) or any(KIND_NAMES[k] != lowered[cl.op].kind for (k, _), cl in zip(logged, replay)):
        raise RuntimeError(f"{rel} on {board}: the guest made {len(logged)} kernel calls, the replay {len(replay)}")
    inner = r.report["prof_inner_x1000"] / 1000.0
    outer = r.report["prof_outer_x1000"] / 1000.0
    rows = []
    for (_k, ticks), cl in zip(logged, replay):
        instr = max(0.0, (ticks - inner)) * to_instr
        rows.append((cost.cost_key(graph, lowered[cl.op]), cl.macs, cl.taps, cl.positions, cl.in_bytes, cl.out_bytes,
                     instr))
    total = (r.report["systick_ticks"] - outer * len(logged)) * to_instr
    visits = sum(max(1, len(u.tile_rows)) * sum(1 for i in u.ops if not lowered[i].alias) for u in plan.units)
    copied, lz4 = cost.moved_bytes(graph, plan, comp)
    return {"rows": rows, "total": total, "kernels": sum(x[-1] for x in rows), "visits": visits,
            "copied": copied, "lz4": lz4}


def nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least squares with non-negative coefficients (columns with a negative solution are dropped and refitted)."""
    scale = np.maximum(np.abs(a).max(axis=0), 1e-12)
    active = [j for j in range(a.shape[1]) if np.abs(a[:, j]).max() > 0]
    x = np.zeros(a.shape[1])
    while active:
        sol, *_ = np.linalg.lstsq(a[:, active] / scale[active], b, rcond=None)
        if (sol >= 0).all():
            x[active] = sol / scale[active]
            break
        active = [j for j, v in zip(active, sol) if v >= 0]
    return x


def fit(runs: list[dict]) -> dict:
    by_key: dict[str, list[tuple]] = {}
    for run in runs:
        for key, *feat in run["rows"]:
            by_key.setdefault(key, []).append(tuple(feat))
    kernels = {}
    for key, rows in sorted(by_key.items()):
        arr = np.array(rows, dtype=np.float64)
        a = np.column_stack([arr[:, :5], np.ones(len(arr))])
        if len(arr) < FEW_CALLS:
            a[:, [1, 2, 3, 5]] = 0.0  # too few calls to separate six terms: MACs and output bytes only
        coef = nnls(a, arr[:, 5])
        kernels[key] = {f: round(float(v), 6) for f, v in zip(cost.FEATURES, coef)}
        kernels[key]["calls_measured"] = len(rows)
    a = np.array([[r["visits"], r["copied"], r["lz4"]] for r in runs], dtype=np.float64)
    b = np.array([r["total"] - r["kernels"] for r in runs])
    ov = nnls(a, b)
    return {"kernels": kernels, "per_op_visit": round(float(ov[0]), 4), "per_moved_byte": round(float(ov[1]), 4),
            "per_lz4_byte": round(float(ov[2]), 4), "cycles_per_instruction": 1.0}


def calibrate(work: Path) -> dict:
    targets = {}
    for board, (target, _hz) in BOARDS.items():
        runs = []
        for rel, fast, xip, comp in CALIBRATE:
            if not (SHARED / rel).exists():
                print(f"skip {rel}: not in ../shared/models", flush=True)
                continue
            runs.append(measure_calls(rel, fast, xip, comp, board, work))
            print(f"{target} {Path(rel).stem}: {len(runs[-1]['rows'])} calls, {runs[-1]['total']:.0f} instructions",
                  flush=True)
        t = fit(runs)
        t["source"] = f"QEMU {board}, {len(runs)} models, bench/latency_model.py --calibrate"
        targets[target] = t
    m4, m55 = targets["cortex-m4"], targets["cortex-m55"]
    generic = {"kernels": {}, "source": "mean of cortex-m4 and cortex-m55 (not measured on one core)"}
    for key in sorted(set(m4["kernels"]) | set(m55["kernels"])):
        a, b = m4["kernels"].get(key), m55["kernels"].get(key)
        both = [x for x in (a, b) if x]
        generic["kernels"][key] = {f: round(sum(x[f] for x in both) / len(both), 6) for f in cost.FEATURES}
    for f in ("per_op_visit", "per_moved_byte", "per_lz4_byte"):
        generic[f] = round((m4[f] + m55[f]) / 2, 4)
    generic["cycles_per_instruction"] = 1.0
    targets["generic"] = generic
    return {"schema": 1, "targets": targets}


def check(work: Path) -> tuple[list[list[object]], bool]:
    rows, ok = [], True
    for rel, fast, xip, comp in CHECK:
        if not (SHARED / rel).exists():
            continue
        prep, c, ins, n_out = _config(rel, fast, xip, comp)
        c_src, header = generate_c(c.plan_bytes, "model", "app")
        row: list[object] = [Path(rel).stem, f"{fast} {'xip' if xip else comp if comp != 'none' else 'copy'}"]
        for board, (target, _hz) in BOARDS.items():
            if len(c.plan_bytes) > BOARD_FLASH[board]:
                row += [f"not run: {len(c.plan_bytes):,} B plan exceeds the board's flash", "", ""]
                continue
            r = _build_and_run(c_src, header, board, work / "check" / Path(rel).stem / board, work / "obj" / board,
                               ins, n_out)
            measured = r.report["instructions"]
            est = cost.estimate(prep.graph, c.analysis.plan, prep.lowered, target, comp).instructions
            err = (est - measured) / measured
            ok = ok and abs(err) <= TOLERANCE
            row += [f"{measured:,}", f"{est:,}", f"{100 * err:+.1f}%" + ("" if abs(err) <= TOLERANCE else " **over**")]
        rows.append(row)
        print(row, flush=True)
    return rows, ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calibrate", action="store_true", help="measure every kernel call and rewrite the data file")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = ap.parse_args()
    if qh.missing_tools():
        sys.exit(f"error: missing tools: {', '.join(qh.missing_tools())}")
    with tempfile.TemporaryDirectory(prefix="latency_model-") as tmp:
        work = Path(tmp)
        if args.calibrate:
            data = calibrate(work)
            cost.DATA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            cost._load.cache_clear()
            print(f"wrote {cost.DATA}")
        rows, ok = check(work)
    table = markdown_table(["model", "budget", "QEMU M4F", "estimate M4F", "error", "QEMU M55", "estimate M55",
                            "error"], rows)
    body = (
        "The latency estimate of `tigris analyze --target` (tigris/cost.py, coefficients in `tigris/cost_model.json`) "
        "against the instruction count of the same plan under QEMU (`-icount shift=0`, plain `--format app` "
        "firmware, `-O2`), on budgets and weight modes other than the calibration runs; run "
        "`python3 bench/latency_model.py`. The coefficients are refitted from per-call kernel profiles by "
        "`python3 bench/latency_model.py --calibrate` (rerun after changing a kernel: the table then shows the "
        f"estimate the shipped data file gives). A plan larger than the board's flash is listed as not run. "
        f"Target: every error within {int(TOLERANCE * 100)}%: "
        + ("**met**." if ok else "**missed**.") + "\n\n" + table
    )
    print(body)
    if not args.no_write:
        write_section("latency_model", body)
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
