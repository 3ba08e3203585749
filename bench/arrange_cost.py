"""What weight arrangements buy on the Cortex-M4F (docs/format.md "Weight arrangements"; issue 11).

For each int8 model of bench/mcu_cost.py, at its configuration there: compile the generic plan and the plan for
``--target cortex-m4`` (both with ``--objective traffic``, so the memory plan is the same and only the weights'
byte order differs), build ``--format app`` firmware at -O2 for ``mps2-an386`` and run it under QEMU with
``-icount shift=0``; instructions are whole-run counts (``tgrs_run``), and a profiling build of the same firmware
(mcu_cost.profiling_app) gives the fully connected layers' instructions per MAC. Every run's outputs must be the host
runtime's bytes (the generic plan's, which the packed plan's host run equals). Also the runtime code size of the
kws_dscnn_int8 int8 CNN subset and every-kernel firmware (the op resolver builds of mcu_cost.py), which carry the
FC_ROWS4 reader.

    python3 bench/arrange_cost.py            # writes the mcu_arrange section of docs/benchmarks.md
    python3 bench/arrange_cost.py --no-write [--model STEM ...]

Needs arm-none-eabi-gcc, qemu-system-arm and ../shared/models.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "examples" / "cortex-m"))
from _doc import markdown_table, write_section  # noqa: E402

import qemu_harness as qh  # noqa: E402
from mcu_cost import MODELS, SHARED, profiling_app  # noqa: E402
from tigris import api  # noqa: E402
from tigris.codegen import generate_c  # noqa: E402
from tigris.emit.reader import read_plan  # noqa: E402
from tigris.host import Session  # noqa: E402

BOARD = "mps2-an386"
TARGETS = ("generic", "cortex-m4")


def _run(plan: bytes, s: Session, inputs: dict, want: list[bytes], d: Path, work: Path, prof: bool) -> dict:
    d.mkdir(parents=True, exist_ok=True)
    c_src, header = generate_c(plan, "model", "app")
    if prof:
        c_src = profiling_app(c_src)
    (d / "model.c").write_text(c_src)
    (d / "model.h").write_text(header)
    elf = qh.build(BOARD, d / "build", model_c=d / "model.c", obj_dir=work / "obj")
    ins = [f"in{i}.bin" for i in range(len(s.inputs))]
    outs = [f"out{i}.bin" for i in range(len(s.outputs))]
    for name, spec in zip(ins, s.inputs):
        (d / name).write_bytes(s._to_caller(spec, inputs[spec.name]))
    r = qh.run(BOARD, elf, ins + outs, cwd=d, timeout_s=900)
    if r.returncode != 0:
        raise RuntimeError(f"{d}: exit {r.returncode}\n{r.console}")
    if [(d / o).read_bytes() for o in outs] != want:
        raise RuntimeError(f"{d}: output differs from the host runtime")
    return r.report


def model_row(rel: str, fast: str, xip: bool, comp: str, work: Path) -> list[object]:
    path = SHARED / rel
    prep = api.prepare(str(path))
    inputs = api.random_inputs(prep, seed=0)
    want: list[bytes] | None = None
    res: dict[str, dict] = {}
    for t in TARGETS:
        c = api.compile_model(str(path), fast, xip=xip, compression=comp, prepared=prep,
                              target=None if t == "generic" else t, objective="traffic")
        s = Session(c.plan_bytes)
        host = s.run(inputs)
        got = [s._to_caller(spec, host.outputs[spec.name]) for spec in s.outputs]
        if want is None:
            want = got
        elif got != want:
            raise RuntimeError(f"{rel}: the {t} plan's host outputs differ from the generic plan's")
        d = work / Path(rel).stem / t
        total = _run(c.plan_bytes, s, inputs, want, d / "plain", work, False)["instructions"]
        p = _run(c.plan_bytes, s, inputs, want, d / "prof", work, True)
        res[t] = {"total": total, "fc": (p["fc_instructions"], p["fc_macs"]),
                  "arranged": len(read_plan(c.plan_bytes).arrangements())}
    g, m = res["generic"], res["cortex-m4"]
    mode = "xip" if xip else ("lz4" if comp == "lz4" else "copy")

    def per_mac(fc: tuple[int, int]) -> str:
        return f"{fc[0] / fc[1]:.2f}" if fc[1] else "-"

    return [Path(rel).stem, f"{fast} {mode}", m["arranged"], f"{g['total']:,}", f"{m['total']:,}",
            f"{(m['total'] - g['total']) / g['total'] * 100:+.2f}%", f"{g['fc'][1]:,}",
            f"{per_mac(g['fc'])} -> {per_mac(m['fc'])}", "identical bytes"]


def code_size(work: Path) -> list[list[object]]:
    c = api.compile_model(str(REPO / "tests" / "models" / "kws_dscnn_int8.onnx"), "32K")
    rows = []
    for label, kernels, opt, cflags in (("every kernel", "all", "-Os", ""),
                                        ("int8 CNN subset, int8-only", "plan", "-Os", qh.SUBSET_CFLAGS),
                                        ("int8 CNN subset, int8-only", "plan", "-O2", qh.SUBSET_CFLAGS)):
        elf = qh.build_plan_app(c.plan_bytes, BOARD, work / f"size-{kernels}{opt}", obj_dir=work / "obj-size",
                                opt=opt, cflags=cflags, kernels=kernels)
        rt = qh.runtime_size((elf.parent / "model.map").read_text())
        rows.append([label, opt, f"{rt.text:,}", f"{rt.text / 1024:.1f} KiB"])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--model", action="append", help="only this model (stem); repeatable")
    args = ap.parse_args()
    if qh.missing_tools():
        sys.exit(f"error: missing tools: {', '.join(qh.missing_tools())}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="arrange_cost-") as tmp:
        work = Path(tmp)
        for rel, fast, xip, comp in MODELS:
            if "int8" not in rel or (args.model and Path(rel).stem not in args.model):
                continue
            if not (SHARED / rel).exists():
                print(f"skip {rel}: not in ../shared/models", flush=True)
                continue
            rows.append(model_row(rel, fast, xip, comp, work))
            print(rows[-1], flush=True)
        sizes = [] if args.model else code_size(work)
    body = (
        "Weight arrangements (docs/format.md): the generic plan against the plan compiled with `--target cortex-m4` "
        "(both `--objective traffic`: the same memory plan, only the weights' byte order differs), one inference on "
        "QEMU `mps2-an386` (Cortex-M4F), `--format app` firmware at `-O2`, instructions from `-icount shift=0` over "
        "the whole `tgrs_run`; run `python3 bench/arrange_cost.py`. The only Cortex-M4 arrangement so far is "
        "FC_ROWS4 (int8 fully connected weights in blocks of four rows, read four rows per pass by "
        "`fc_dot4r_s8_dsp`); `fc instr/MAC` is the fc kernels' instructions over their multiply-accumulates in a "
        "profiling build of the same firmware. Outputs: identical bytes to the host runtime in every run, and the "
        "packed plan's host outputs equal the generic plan's.\n\n"
        + markdown_table(["model", "budget", "arranged ops", "instructions generic", "instructions cortex-m4",
                          "change", "fc MACs", "fc instr/MAC generic -> cortex-m4", "= host"], rows)
    )
    if sizes:
        body += ("\n\nRuntime `.text` of the kws_dscnn_int8 firmware with the FC_ROWS4 reader (the op resolver builds "
                 "of `bench/mcu_cost.py`, Cortex-M4F):\n\n"
                 + markdown_table(["runtime build", "opt", "linked .text (B)", "linked .text"], sizes))
    print(body)
    if not args.no_write and not args.model:
        write_section("mcu_arrange", body)


if __name__ == "__main__":
    main()
