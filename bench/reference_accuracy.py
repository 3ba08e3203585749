"""The NumPy reference executor against ONNX Runtime on every shared model (issue 3 figures).

For each model, with seeded random inputs over the representable range:
* end to end against ONNX Runtime run as the model is written (graph optimizations off): float max abs error
  relative to max(1, max|ref|), int8 max LSB, cosine similarity;
* end to end against ONNX Runtime's optimized (fused QDQ) execution, to show how far ONNX Runtime's own two
  executions are apart on the same model;
* for quantized models, the precise check: every int8 op fed ONNX Runtime's own inputs, the largest LSB difference
  of its output over all ops (tigris.reference.ort_compare).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _doc import markdown_table, write_section  # noqa: E402

from tigris import api  # noqa: E402
from tigris.reference import run_reference  # noqa: E402
from tigris.reference.ort_compare import precise_check  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "models"


def figures(got: np.ndarray, ref: np.ndarray) -> tuple[float, float, int | None]:
    g, r = got.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    rel = float(np.abs(g - r).max()) / max(1.0, float(np.abs(r).max()))
    denom = np.linalg.norm(g) * np.linalg.norm(r)
    cos = float(g @ r / denom) if denom else 1.0
    lsb = int(np.abs(g - r).max()) if got.dtype.kind in "iu" else None
    return rel, cos, lsb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    rows = []
    for path in sorted(SHARED.glob("*/*.onnx")):
        rel_name = path.relative_to(SHARED).as_posix()
        prep = api.prepare(path)
        quantized = any(t.dtype == "int8" for t in prep.graph.tensors.values())
        worst_rel, worst_cos, worst_lsb, fused_cos, precise = 0.0, 1.0, None, 1.0, None
        for seed in range(args.seeds):
            x = api.random_inputs(prep, seed)
            ref = run_reference(prep.graph, x, prep.lowered)
            plain = api.run_onnxruntime(path, x)
            fused = api.run_onnxruntime(path, x, optimized=True)
            for name in prep.graph.outputs:
                r, c, lsb = figures(ref[name], plain[name])
                worst_rel, worst_cos = max(worst_rel, r), min(worst_cos, c)
                if lsb is not None:
                    worst_lsb = max(worst_lsb or 0, lsb)
                fused_cos = min(fused_cos, figures(fused[name], plain[name])[1])
            if quantized:
                checks = precise_check(path, prep.graph, prep.lowered, x)
                m = max((c.max_lsb for c in checks), default=0)
                precise = max(precise or 0, m)
        rows.append([
            rel_name, "int8" if quantized else "float", f"{worst_rel:.2e}", f"{worst_cos:.6f}",
            "-" if worst_lsb is None else worst_lsb, "-" if precise is None else precise, f"{fused_cos:.6f}",
        ])
        print(rows[-1], flush=True)
    table = markdown_table(
        ["model", "kind", "max abs err / max(1,max|ref|)", "cosine", "max LSB (int outputs)",
         "precise check: max LSB over every int8 op", "ORT fused vs unfused cosine"], rows)
    body = (f"Worst case over {args.seeds} seeded random inputs per model. The reference is compared with ONNX "
            "Runtime evaluating the model as written (optimizations off); the last column shows how far ONNX "
            "Runtime's own fused execution is from that.\n\n" + table)
    print(table)
    if not args.no_write:
        write_section("reference_accuracy", body)


if __name__ == "__main__":
    main()
