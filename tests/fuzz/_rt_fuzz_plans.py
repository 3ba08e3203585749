"""Base plans for the fuzzer: the runtime tests' small graphs (elementwise, and a conv chain with weights, scratch,
requantization) in every weight mode, untiled and tiled/chained, a conv chain ending in a GlobalAveragePool that
accumulates over tiles, plus a few small real models."""
from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

import _rt_plans as P  # noqa: E402


@lru_cache(maxsize=1)
def _cached() -> tuple[bytes, ...]:
    out: list[bytes] = []
    for int8, u8 in ((False, False), (True, True)):
        g = P.eltwise_graph(int8=int8, uint8_io=u8, h=8, c=4)
        for fast in (1 << 16, 700):
            for xip, comp in ((False, "none"), (True, "none"), (False, "lz4")):
                try:
                    out.append(P.compile_graph(g, fast, xip=xip, compression=comp)[0])
                except Exception:  # a budget this graph cannot meet: the other budgets still give plans
                    continue
    for int8, fasts in ((False, (1 << 16, 2500)), (True, (1 << 16, 1300))):
        g = P.conv_chain_graph(int8=int8, h=8)
        for fast in fasts:
            for xip, comp in ((False, "none"), (True, "none"), (False, "lz4")):
                try:
                    out.append(P.compile_graph(g, fast, xip=xip, compression=comp)[0])
                except Exception:
                    continue
    # GlobalAveragePool accumulating over tiles (unit flag ACCUM): float sums in the output, int8 in scratch.
    for int8, fast, comp in ((False, 2500, "none"), (True, 1000, "none"), (True, 1600, "lz4")):
        try:
            out.append(P.compile_graph(P.conv_gap_graph(int8=int8, h=16), fast, compression=comp)[0])
        except Exception:
            continue
    out += _model_plans()
    return tuple(out)


# Real models reach the kernels the synthetic graphs do not (fully connected, pooling, softmax, reshape copies,
# boundary quantization) and LZ4 units with the byte-plane shuffle (float weights). Skipped silently when ../shared
# is absent: the synthetic plans still fuzz the core.
MODELS = (("onnx_zoo/mnist-8.onnx", "64K", False, "none"), ("onnx_zoo/mnist-8.onnx", "64K", False, "lz4"),
          ("mlperf_tiny/kws_dscnn_int8.onnx", "64K", False, "none"),
          ("mlperf_tiny/ad_autoencoder_int8.onnx", "128K", True, "none"))


def _model_plans() -> list[bytes]:
    from tigris import api

    out = []
    for rel, fast, xip, comp in MODELS:
        path = P.SHARED_MODELS / rel
        if not path.exists():
            continue
        out.append(api.compile_model(path, fast, xip=xip, compression=comp).plan_bytes)
    return out


def base_plans() -> list[bytes]:
    return list(_cached())
