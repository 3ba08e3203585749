"""An int8 QDQ ONNX model from a float one, with ONNX Runtime's static quantizer (docs/cli.md, "int8 models").

    python3 examples/quantize_static.py model.onnx model_int8.onnx --data calib.npz [--per-channel]

``--data``: an ``.npz`` whose keys are the graph input names, each holding N calibration samples stacked on the
first axis (N x the input shape, or N along a batch axis of 1), the same layout ``tigris verify --data`` reads.
Calibration needs inputs like the ones the model will see (a few hundred real samples): activation ranges are
measured on them. Without ``--data`` the script calibrates on seeded random normal inputs, which is enough to exercise
the tool chain but gives ranges that mean nothing for a real model (it says so).

What it writes: QuantizeLinear/DequantizeLinear pairs around every quantized op (QuantFormat.QDQ), int8 activations
and int8 weights (symmetric, per channel with ``--per-channel``), MinMax calibration; the graph is first run through
ONNX Runtime's pre-processing (shape inference and graph optimization), as its documentation recommends. Then:

    tigris verify model_int8.onnx -m 64K --data calib.npz      # bit-exact vs the NumPy reference, <= 1 LSB vs ORT
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np


def _input_specs(model_path: Path) -> list[tuple[str, tuple[int, ...], np.dtype]]:
    import onnx
    from onnx import helper

    m = onnx.load(str(model_path))
    inits = {i.name for i in m.graph.initializer}
    specs = []
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        dims = tuple(d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim)  # a free batch dim becomes 1
        specs.append((vi.name, dims, np.dtype(helper.tensor_dtype_to_np_dtype(t.elem_type))))
    return specs


def calibration_samples(model_path: Path, data: Path | None, count: int, seed: int) -> list[dict[str, np.ndarray]]:
    """One dict per calibration sample, {input name: array of the input's shape}."""
    specs = _input_specs(model_path)
    if data is None:
        rng = np.random.default_rng(seed)
        return [{n: rng.standard_normal(shape).astype(dt) for n, shape, dt in specs} for _ in range(count)]
    with np.load(data, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    samples: list[dict[str, np.ndarray]] = []
    for name, shape, dt in specs:
        if name not in arrays:
            raise ValueError(f"{data}: no array for graph input {name!r} (keys: {sorted(arrays)})")
        a = arrays[name]
        if a.shape == shape:
            rows = [a]
        elif a.shape[1:] == shape:
            rows = list(a)
        elif shape and shape[0] == 1 and a.shape[1:] == shape[1:]:
            rows = [a[i : i + 1] for i in range(a.shape[0])]
        else:
            raise ValueError(f"{data}: {name} has shape {list(a.shape)}, expected N x {list(shape)}")
        if not samples:
            samples = [{} for _ in rows]
        if len(rows) != len(samples):
            raise ValueError(f"{data}: inputs hold different numbers of samples")
        for s, r in zip(samples, rows):
            s[name] = np.asarray(r, dtype=dt)
    return samples


MIN_OPSET = 13  # per-axis QuantizeLinear/DequantizeLinear (per-channel weights) need opset 13


def _modern_opset(model_path: Path, tmp: Path) -> Path:
    """A copy of the model the quantizer takes as it is: opset 13 at least (QDQ nodes need opset 10, per-channel
    ones 13), IR version 7 at least (with IR version 3, like mnist-8, every initializer must also be a graph input,
    which the quantizer's new scale and zero-point initializers are not), and initializers no longer listed as graph
    inputs (ONNX Runtime treats those as inputs to override, not as constants, and will not quantize them)."""
    import onnx
    from onnx import version_converter

    m = onnx.load(str(model_path))
    opset = max((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), default=0)
    if opset < MIN_OPSET:
        m = version_converter.convert_version(m, MIN_OPSET)
    m.ir_version = max(m.ir_version, 7)
    inits = {i.name for i in m.graph.initializer}
    keep = [vi for vi in m.graph.input if vi.name not in inits]
    del m.graph.input[:]
    m.graph.input.extend(keep)
    onnx.save(m, str(tmp))
    return tmp


def quantize(float_model: Path, out: Path, samples: list[dict[str, np.ndarray]], per_channel: bool = False) -> Path:
    """Write the int8 QDQ model ``out`` calibrated on ``samples``; returns ``out``."""
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quant_pre_process, quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._it = iter(samples)

        def get_next(self):  # one {input name: array} per call, None at the end
            return next(self._it, None)

    with tempfile.TemporaryDirectory() as tmp:
        src = _modern_opset(float_model, Path(tmp) / "opset.onnx")
        prepped = Path(tmp) / "prepped.onnx"
        # symbolic shape inference needs sympy; the models TiGrIS takes have static shapes, which ONNX infers itself
        quant_pre_process(str(src), str(prepped), skip_symbolic_shape=True)
        # Per channel, ONNX Runtime's step that widens weight scales for an int32 bias fails on a bias that is a
        # separate Add of a (C, 1, 1) constant (mnist-8's convolutions); it only matters for near-zero scales.
        extra = {"QDQDisableWeightAdjustForInt32Bias": True} if per_channel else {}
        quantize_static(str(prepped), str(out), Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=per_channel,
                        calibrate_method=CalibrationMethod.MinMax, extra_options=extra)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", type=Path, help="float ONNX model")
    ap.add_argument("output", type=Path, help="int8 QDQ ONNX model to write")
    ap.add_argument("--data", type=Path, default=None, help="calibration samples (.npz, keys = input names)")
    ap.add_argument("--per-channel", action="store_true", help="per-output-channel weight scales")
    ap.add_argument("--samples", type=int, default=16, help="random calibration samples when --data is absent")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        samples = calibration_samples(args.model, args.data, args.samples, args.seed)
        if args.data is None:
            print("note: calibrating on random inputs; pass --data with real samples for a usable model",
                  file=sys.stderr)
        quantize(args.model, args.output, samples, args.per_channel)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.output} (int8 QDQ, {len(samples)} calibration samples)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
