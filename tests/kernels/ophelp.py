"""Test helpers for the non-conv op kinds: tiny IR graphs of one normalized op, views, bands, ONNX Runtime oracles.

A test builds the op twice: as a normalized IR graph (what the compiler lowers; layouts already assigned) and as an
ONNX model of the same computation in NCHW (what ONNX Runtime runs). The reference executes the lowered op on
physical views; ONNX Runtime is the oracle for the reference; the C kernel (through ``harness``) must equal the
reference.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper

from tigris.ir import AnalyzedGraph, Op, QuantParam, Tensor
from tigris.layout import from_physical, tensor_view_dims, to_physical
from tigris.ops import Lowered, TensorView, kind

NP = {"float32": np.float32, "int8": np.int8, "uint8": np.uint8, "int32": np.int32}
ONNX_T = {"float32": TensorProto.FLOAT, "int8": TensorProto.INT8, "uint8": TensorProto.UINT8,
          "int64": TensorProto.INT64}

# Float tolerance of every C-vs-reference and reference-vs-ORT comparison here: 1e-5 x max(1, max|ref|).
F32_RTOL = 1e-5


def qp(scale: float, zp: int) -> QuantParam:
    return QuantParam(np.array([scale], dtype=np.float32), np.array([zp], dtype=np.int64), None)


def layout_of(shape: Sequence[int]) -> str:
    return {4: "nhwc", 3: "nwc"}.get(len(shape), "plain")


@dataclass
class T:
    """A tensor spec for :func:`graph1`: logical shape, dtype, quant, and constant data (ONNX layout) if any."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    quant: QuantParam | None = None
    data: np.ndarray | None = None
    layout: str | None = None


def graph1(op_type: str, ins: Sequence[T], outs: Sequence[T], attrs: dict | None = None) -> AnalyzedGraph:
    """An IR graph holding one normalized op (layouts by rank unless given)."""
    tensors = {}
    weights = {}
    for t in list(ins) + list(outs):
        tensors[t.name] = Tensor(t.name, tuple(t.shape), t.dtype, t.quant,
                                 t.layout or ("plain" if t.data is not None else layout_of(t.shape)))
        if t.data is not None:
            weights[t.name] = np.asarray(t.data)
    op = Op("op0", op_type, tuple(t.name for t in ins), tuple(t.name for t in outs), dict(attrs or {}))
    return AnalyzedGraph("g", tensors, [op], [t.name for t in ins if t.data is None], [t.name for t in outs],
                         weights=weights)


def view(t: Tensor, phys: np.ndarray, row0: int = 0, rows: int | None = None) -> TensorView:
    """A band view of rows [row0, row0+rows) of the physical array ``phys`` (a copy, like a band buffer)."""
    dims = tensor_view_dims(t)
    rows = dims[1] - row0 if rows is None else rows
    data = np.ascontiguousarray(phys.reshape(dims)[:, row0:row0 + rows])
    scale, zp = 1.0, 0
    if t.quant is not None:
        scale, zp = float(t.quant.scale[0]), int(t.quant.zero_point[0])
    return TensorView(data=data, dims=dims, row0=row0, rows=rows, dtype=t.dtype, scale=scale, zero_point=zp)


def out_view(t: Tensor, row0: int = 0, rows: int | None = None, fill: int = 0x5A) -> TensorView:
    """An output band filled with garbage so unwritten elements show."""
    dims = tensor_view_dims(t)
    rows = dims[1] - row0 if rows is None else rows
    data = np.empty((dims[0], rows, dims[2], dims[3]), dtype=NP[t.dtype])
    data.view(np.uint8)[...] = fill
    scale, zp = 1.0, 0
    if t.quant is not None:
        scale, zp = float(t.quant.scale[0]), int(t.quant.zero_point[0])
    return TensorView(data=data, dims=dims, row0=row0, rows=rows, dtype=t.dtype, scale=scale, zero_point=zp)


def phys_inputs(g: AnalyzedGraph, low: Lowered, logical: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {n: to_physical(logical[n], g.tensors[n].shape, g.tensors[n].layout) for n in low.inputs}


RowsNeeded = Callable[[int, int], Sequence[tuple[int, int]]]


def run_op(runner, g: AnalyzedGraph, low: Lowered, phys: dict[str, np.ndarray],
           bands: Sequence[tuple[int, int]] | None = None, need: RowsNeeded | None = None) -> np.ndarray:
    """Execute ``low`` with ``runner(low, in_views, out_view)`` over output row bands; returns the physical output.

    ``need(r0, r1)`` gives, per input, the input rows [a, b) an output band needs (default: whole inputs), so each
    call sees input bands cut to exactly those rows, as the tiled runtime provides them.
    """
    out_t = g.tensors[low.outputs[0]]
    dims = tensor_view_dims(out_t)
    result = np.zeros(dims, dtype=NP[out_t.dtype])
    for r0, r1 in bands or [(0, dims[1])]:
        if need is None:
            ins = [view(g.tensors[n], phys[n]) for n in low.inputs]
        else:
            ins = [view(g.tensors[n], phys[n], a, b - a) for n, (a, b) in zip(low.inputs, need(r0, r1))]
        ov = out_view(out_t, r0, r1 - r0)
        st = runner(low, ins, ov)
        if st not in (None, 0):
            raise RuntimeError(f"kernel status {st}")
        result[:, r0:r1] = ov.data
    return result


def ref_runner(low: Lowered, ins: Sequence[TensorView], out: TensorView) -> None:
    kind(low.kind).reference(low, ins, out)


def c_runner(lib) -> Callable:
    return lambda low, ins, out: lib.run(low, ins, out)


def status(name: str) -> int:
    """A kernel status code by its C name without the TGRS_ prefix (from the format definition, the header's source)."""
    from tigris.emit.format import status_code

    return status_code(name)


def status_error(name: str) -> str:
    """The ``match`` pattern of the RuntimeError :func:`run_op` raises for that status."""
    return f"kernel status {status(name)}$"


def split_rows(h: int, cuts: Sequence[int]) -> list[tuple[int, int]]:
    """Row bands of [0, h) cut at the given (clipped, deduplicated) positions."""
    pts = sorted({0, h, *[min(max(c, 0), h) for c in cuts]})
    return [(a, b) for a, b in zip(pts, pts[1:]) if b > a]


def assert_float_close(got: np.ndarray, ref: np.ndarray, rtol: float = F32_RTOL) -> None:
    tol = rtol * max(1.0, float(np.max(np.abs(ref))) if ref.size else 1.0)
    err = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))) if ref.size else 0.0
    assert err <= tol, f"max abs err {err} > {tol}"


# ---------------------------------------------------------------------------------------------------------------------
# ONNX Runtime oracles


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def onnx_model(nodes, inputs, outputs, inits=(), opset: int = 17) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "t", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vinfo(name: str, shape: Sequence[int], dtype: str = "float32"):
    return helper.make_tensor_value_info(name, ONNX_T[dtype], list(shape))


def qdq_model(node_fn, in_specs: Sequence[tuple[str, tuple[int, ...], float, int]],
              out_spec: tuple[str, tuple[int, ...], float, int], inits=(), opset: int = 17) -> onnx.ModelProto:
    """int8 inputs -> DequantizeLinear -> float op(s) -> QuantizeLinear -> int8 output.

    ``node_fn(float_input_names, float_output_name)`` returns the float nodes. This is how an int8 model states the
    op; ONNX Runtime executes it in float, and our int8 result must be within 1 LSB of its output.
    """
    nodes, inputs, init = [], [], list(inits)
    fnames = []
    for name, shape, s, zp in in_specs:
        inputs.append(vinfo(name, shape, "int8"))
        init += [helper.make_tensor(f"{name}_s", TensorProto.FLOAT, [], [s]),
                 helper.make_tensor(f"{name}_z", TensorProto.INT8, [], [zp])]
        nodes.append(helper.make_node("DequantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_f"]))
        fnames.append(f"{name}_f")
    oname, oshape, os_, ozp = out_spec
    nodes += node_fn(fnames, f"{oname}_f")
    init += [helper.make_tensor(f"{oname}_s", TensorProto.FLOAT, [], [os_]),
             helper.make_tensor(f"{oname}_z", TensorProto.INT8, [], [ozp])]
    nodes.append(helper.make_node("QuantizeLinear", [f"{oname}_f", f"{oname}_s", f"{oname}_z"], [oname]))
    return onnx_model(nodes, inputs, [vinfo(oname, oshape, "int8")], init, opset)


def to_logical(g: AnalyzedGraph, name: str, phys: np.ndarray) -> np.ndarray:
    t = g.tensors[name]
    return from_physical(phys, t.shape, t.layout)


def rand_q(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    return rng.integers(-128, 128, size=tuple(shape), dtype=np.int64).astype(np.int8)


def max_lsb(a: np.ndarray, b: np.ndarray) -> int:
    return int(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64)))) if a.size else 0
