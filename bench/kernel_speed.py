"""Time the conv, dwconv and fc C kernels layer by layer on real models, against ONNX Runtime's whole model.

For each model: stage 1-2 (load, normalize), lower every conv/dwconv/fc op, run its C kernel (host build with the
host runtime's flags) on random data of the right shape, untiled, and report the per-kind totals and their sum next
to ONNX Runtime's time for the whole model on one thread. The sum is a lower bound of the C runtime's time (other
ops are not counted) that does not need the rest of the runtime, so kernel speed can be tracked on its own.

    python3 bench/kernel_speed.py [--repeat 20] [--models torchvision/mobilenet_v2_035_96_f32.onnx ...]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "kernels"))
from harness import build_kernels, empty_band  # noqa: E402

from tigris.ops import kind, lower  # noqa: E402

SHARED = REPO.parent / "shared" / "models"
MODELS = [
    "torchvision/mobilenet_v2_035_96_f32.onnx", "torchvision/mobilenet_v2_035_96_int8.onnx",
    "torchvision/efficientnet_lite0_128_f32.onnx", "torchvision/efficientnet_lite0_128_int8.onnx",
    "mlperf_tiny/vww_mbv1_025_96_f32.onnx", "mlperf_tiny/vww_mbv1_025_96_int8.onnx",
    "mlperf_tiny/resnet8_cifar_f32.onnx", "mlperf_tiny/resnet8_cifar_int8.onnx",
]
HOST_FLAGS = ["-ffp-contract=off", "-fno-fast-math"]  # tigris/host/build.py builds with -O2 and these


def phys_dims(t) -> tuple[int, int, int, int]:
    s = tuple(int(d) for d in t.shape)
    if t.layout == "nhwc":
        return (s[0], s[2], s[3], s[1])
    if t.layout == "nwc":
        return (s[0], s[2], 1, s[1])
    return (1,) * (4 - len(s)) + s


def median_time(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ort_time(path: Path, graph, repeat: int) -> float:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        dt = {"tensor(float)": np.float32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8}[i.type]
        feeds[i.name] = (np.random.default_rng(0).standard_normal(shape) * 10).astype(dt)
    return median_time(lambda: sess.run(None, feeds), repeat)


def bench_model(lib, rel: str, repeat: int) -> dict:
    from tigris.load import load_model
    from tigris.passes import normalize

    path = SHARED / rel
    graph, _ = normalize(load_model(path, {}))
    rng = np.random.default_rng(0)
    per_kind: dict[str, float] = {}
    for op in graph.ops:
        if op.op_type not in ("Conv", "Conv1D", "DepthwiseConv", "Gemm"):
            continue
        low = lower(graph, op)
        tin, tout = graph.tensors[low.inputs[0]], graph.tensors[low.outputs[0]]
        din, dout = phys_dims(tin), phys_dims(tout)
        if tin.dtype == "int8":
            data = rng.integers(-128, 128, din).astype(np.int8)
        else:
            data = rng.standard_normal(din).astype(np.float32)
        from tigris.ops.base import TensorView

        xin = TensorView(data=data, dims=din, dtype=tin.dtype)
        out = empty_band(dout, tout.dtype)
        scratch = kind(low.kind).scratch_bytes(low, graph, dout[1])
        st = lib.run(low, [xin], out, scratch=scratch)
        if st != 0:
            raise RuntimeError(f"{op.name}: kernel status {st}")
        keep: list = []
        ctx = lib._ctx(low, [xin], out, scratch, keep)
        fn = getattr(lib.lib, f"tgrs_kernel_{low.kind}")
        per_kind[low.kind] = per_kind.get(low.kind, 0.0) + median_time(lambda: fn(ctx), repeat)
    return dict(model=rel, kernels=per_kind, ort=ort_time(path, graph, repeat))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--models", nargs="*", default=MODELS)
    ap.add_argument("--opt", default="-O2")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lib = build_kernels(["conv.c", "dwconv.c", "fc.c"], Path(tmp), opt=args.opt, extra_flags=HOST_FLAGS)
        print(f"{'model':48} {'conv ms':>8} {'dwconv':>8} {'fc':>8} {'sum':>8} {'ORT ms':>8} {'ratio':>6}")
        for rel in args.models:
            if not (SHARED / rel).exists():
                print(f"{rel:48} (missing)")
                continue
            r = bench_model(lib, rel, args.repeat)
            k = r["kernels"]
            total = sum(k.values())
            print(f"{rel:48} {k.get('conv', 0) * 1e3:8.3f} {k.get('dwconv', 0) * 1e3:8.3f} "
                  f"{k.get('fc', 0) * 1e3:8.3f} {total * 1e3:8.3f} {r['ort'] * 1e3:8.3f} {total / r['ort']:6.2f}")


if __name__ == "__main__":
    main()
