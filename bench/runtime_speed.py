"""Time per inference of the C runtime (host build, -O2) against ONNX Runtime on one thread, for every shared model.

Both run in the same process, in turns (one ONNX Runtime run, one TiGrIS run, repeated), and each figure is the median
of its runs, so the ratio holds up on a noisy shared machine. The plan is compiled with a budget large enough for one
untiled stage (the kernels' speed), and again at 64K with --xip where it fits (what tiling and spilling cost).

Targets: issue 6, float MobileNetV2-0.35 and EfficientNet-Lite0 within 5x of ONNX Runtime, int8 within 8x; issue 11,
every shared model within 2x. The host build's ISA level (tigris.host.build.host_isa: generic, avx2, avxvnni or avx512) is
stated with the table, since it selects the kernels.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _doc import markdown_table, write_section  # noqa: E402

from tigris import api  # noqa: E402
from tigris.host import Session  # noqa: E402
from tigris.host.build import ISA_FLAGS, host_isa  # noqa: E402
from tigris.ir import DoesNotFitError  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "models"
MODELS = [
    "mlperf_tiny/kws_dscnn_f32.onnx", "mlperf_tiny/kws_dscnn_int8.onnx",
    "mlperf_tiny/vww_mbv1_025_96_f32.onnx", "mlperf_tiny/vww_mbv1_025_96_int8.onnx",
    "mlperf_tiny/resnet8_cifar_f32.onnx", "mlperf_tiny/resnet8_cifar_int8.onnx",
    "mlperf_tiny/ad_autoencoder_f32.onnx", "mlperf_tiny/ad_autoencoder_int8.onnx",
    "mlperf_tiny/streaming_wakeword_int8.onnx", "tflm/person_detect_int8.onnx", "onnx_zoo/mnist-8.onnx",
    "torchvision/mobilenet_v2_035_96_f32.onnx", "torchvision/mobilenet_v2_035_96_int8.onnx",
    "torchvision/efficientnet_lite0_128_f32.onnx", "torchvision/efficientnet_lite0_128_int8.onnx",
]


def run_times(fns, repeat: int) -> list[list[float]]:
    """The times of each function, run in turns (one call of each per round, after one warm-up call each), so that a
    change of load on the shared machine falls on all of them alike and their ratio holds."""
    for fn in fns:
        fn()  # warm up
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=31)
    ap.add_argument("--models", nargs="*", default=MODELS)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    import onnxruntime as ort

    rows = []
    for rel in args.models:
        path = SHARED / rel
        prep = api.prepare(path)
        inputs = api.random_inputs(prep, seed=0)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        big = api.compile_model(path, "64M", xip=True, prepared=prep)
        s_big = Session(big.plan_bytes)
        ts_ort, ts_big = run_times([lambda: sess.run(None, inputs), lambda: s_big.run(inputs)], args.repeat)
        t_ort, t_big = statistics.median(ts_ort), statistics.median(ts_big)
        min_ratio = min(ts_big) / min(ts_ort)
        try:
            small = api.compile_model(path, "64K", xip=True, prepared=prep)
            s_small = Session(small.plan_bytes)
            t_small = statistics.median(run_times([lambda: s_small.run(inputs)], args.repeat)[0])
            st = len(small.analysis.plan.stages)
            small_txt = f"{t_small * 1e3:.2f} ms ({st} stages)"
        except DoesNotFitError:
            small_txt = "does not fit"
        ratio = t_big / t_ort
        rows.append([rel, f"{t_ort * 1e3:.3f}", f"{t_big * 1e3:.3f}", f"{ratio:.2f}x", f"{min_ratio:.2f}x",
                     small_txt])
        print(f"{rel:48s} ort {t_ort * 1e3:8.3f} ms  tigris {t_big * 1e3:8.3f} ms  {ratio:5.2f}x"
              f"  (fastest {min_ratio:5.2f}x)  64K: {small_txt}", flush=True)
    table = markdown_table(
        ["model", "ONNX Runtime 1 thread (ms)", "TiGrIS untiled (ms)", "ratio", "ratio of fastest runs",
         "TiGrIS at 64K --xip"], rows
    )
    isa = host_isa()
    body = (f"Median of {args.repeat} runs after one warm-up, same process, ONNX Runtime and TiGrIS in turns run by "
            "run. "
            f"Host build of runtime_c at -O2, ISA level {isa} ({' '.join(ISA_FLAGS[isa]) or 'no extra flags'}; "
            "docs/runtime.md), through cffi (the Python call overhead is included). ONNX Runtime uses whatever its CPU "
            "dispatch picks on the same machine. The machine is shared, so single figures move by tens of percent "
            "between runs; the ratio of the medians, run in turns, is the figure to read, and the ratio of each side's "
            "fastest run (the least disturbed) is given beside it.\n\n" + table)
    print(table)
    if not args.no_write:
        write_section("runtime_speed", body)


if __name__ == "__main__":
    main()
