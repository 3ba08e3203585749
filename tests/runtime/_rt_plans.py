"""Small real plans for the runtime tests, compiled through the real planner, lowering and writer.

The graphs use only op kinds whose C kernels have landed (elementwise Unary, Add/Mul, MaxPool, Conv), so they run
for real; a kind whose Python module is missing makes the test skip with the reason. Budgets are chosen so the same
graph is planned untiled (one unit), split into several units (spills/reloads through the slow arena) and tiled.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tigris.ir import AnalyzedGraph, Boundary, Op, QuantParam, Tensor
from tigris.plan.types import align_up


def _lower_all(graph: AnalyzedGraph):
    from tigris.ops import lower

    return [lower(graph, op) for op in graph.ops]


def compile_graph(graph: AnalyzedGraph, fast: int, *, xip: bool = False, compression: str = "none",
                  slow: int | None = None, **plan_kw) -> tuple[bytes, object]:
    """(plan bytes, MemoryPlan) for ``graph`` at fast budget ``fast``, like tigris.api.compile_model does it
    (``plan_kw``: further planner options, e.g. ``halo_reuse``)."""
    from tigris.emit import emit_plan
    from tigris.ops import kind
    from tigris.plan import plan_memory

    lowered = _lower_all(graph)

    def weight_bytes_of(i: int) -> int:
        return 0 if xip else sum(align_up(int(c.nbytes)) for c in lowered[i].consts.values())

    def scratch_bytes_of(i: int, out_rows: int, out_cols: int | None = None) -> int:
        low = lowered[i]
        if low.alias:
            return 0
        k = kind(low.kind)
        return int(k.scratch_bytes(low, graph, out_rows) if out_cols is None else
                   k.band_scratch_bytes(low, graph, out_rows, out_cols))

    plan = plan_memory(graph, fast, slow, xip=xip, weight_bytes_of=weight_bytes_of, scratch_bytes_of=scratch_bytes_of,
                       **plan_kw)
    return emit_plan(graph, plan, lowered, xip=xip, compression=compression), plan


# x 32x32x3 int8 -> stem 3x3/2 to 16 -> dw 3x3 -> 1x1 to 8 -> 1x1 to 48 -> dw 3x3/2 -> 1x1 to 12: a MobileNetV2 head
# (chain_graph layers), the shape whose head unit sets a one-region plan's size
MBV2_HEAD = [("conv", 3, 2, 1, 16), ("dw", 3, 1, 1), ("conv", 1, 1, 1, 8), ("conv", 1, 1, 1, 48), ("dw", 3, 2, 1),
             ("conv", 1, 1, 1, 12)]
FLOAT_TOL = 1e-5  # float runs against the NumPy reference, relative to the output's magnitude


def assert_close_to(got: np.ndarray, ref: np.ndarray, int8: bool) -> None:
    """int8 outputs equal the reference's; float ones within FLOAT_TOL of its largest magnitude."""
    if int8:
        np.testing.assert_array_equal(got, ref)
    else:
        assert float(np.abs(got - ref).max()) <= FLOAT_TOL * max(1.0, float(np.abs(ref).max()))


def run_and_compare(Session, graph: AnalyzedGraph, data: bytes, plan, other: bytes, int8: bool) -> None:
    """The plan ``data`` (planned as ``plan``) is proven by the offset checker and, on two inputs, gives the NumPy
    reference's output (``assert_close_to``), the same bytes as the plan ``other`` of the same graph, and a fast
    high-water mark equal to the plan's peak. The graph's output is ``y``."""
    from tigris.plan.check import check_plan
    from tigris.reference import run_reference

    assert check_plan(graph, plan) == []
    for seed in (0, 1):
        x = random_input(graph, seed)
        res = Session(data).run(x)
        got = res.outputs["y"]
        assert_close_to(got, run_reference(graph, x)["y"], int8)
        np.testing.assert_array_equal(got, Session(other).run(x).outputs["y"])
        assert res.fast_peak == plan.fast_peak


def assert_readers_refuse(Session, PlanError, mutants) -> int:
    """Both readers (tigris.emit.reader and the C loader behind ``Session``) refuse every ``(what, data, code)``
    mutant with the status ``code`` (e.g. "ERR_TILE_COLS"); returns how many were tried."""
    from tigris.emit.reader import PlanFormatError, read_plan

    seen = 0
    for what, data, code in mutants:
        with pytest.raises(PlanFormatError) as py:
            read_plan(data)
        assert py.value.status == code, what
        with pytest.raises(PlanError) as c:
            Session(data)
        assert c.value.name == f"TGRS_{code}", what
        seen += 1
    return seen


def _q(s: float, z: int) -> QuantParam:
    return QuantParam(np.array([s], np.float32), np.array([z], np.int64))


def eltwise_graph(int8: bool = False, h: int = 16, c: int = 8, uint8_io: bool = False) -> AnalyzedGraph:
    """x -Relu-> a;  (a, x) -Add-> b;  b -Sigmoid-> y.  Pointwise ops only, so the planner can tile any of it."""
    dt = "int8" if int8 else "float32"
    q = (lambda s, z: _q(s, z)) if int8 else (lambda s, z: None)
    shape = (1, c, h, h)
    tensors = {
        "x": Tensor("x", shape, dt, q(0.05, -3), "nhwc"),
        "a": Tensor("a", shape, dt, q(0.05, -3), "nhwc"),
        "b": Tensor("b", shape, dt, q(0.1, 5), "nhwc"),
        "y": Tensor("y", shape, dt, q(1.0 / 256, -128), "nhwc"),
    }
    ops = [
        Op("relu0", "Relu", ("x",), ("a",)),
        Op("add0", "Add", ("a", "x"), ("b",)),
        Op("sig0", "Sigmoid", ("b",), ("y",)),
    ]
    boundary = {}
    if uint8_io:
        boundary = {
            "x": Boundary("x", shape, "uint8", _q(0.05, 125)),
            "y": Boundary("y", shape, "uint8", _q(1.0 / 256, 0)),
        }
    return AnalyzedGraph("eltwise", tensors, ops, ["x"], ["y"], {}, boundary)


def random_input(graph: AnalyzedGraph, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for n in graph.inputs:
        b = graph.boundary.get(n)
        t = graph.tensors[n]
        dt = b.dtype if b else t.dtype
        shape = b.shape if b else t.shape
        if dt == "uint8":
            out[n] = rng.integers(0, 256, size=shape, dtype=np.uint8)
        elif dt == "int8":
            out[n] = rng.integers(-128, 128, size=shape, dtype=np.int8)
        else:
            out[n] = rng.standard_normal(size=shape).astype(np.float32)
    return out


def conv_chain_graph(int8: bool = False, h: int = 12, seed: int = 0) -> AnalyzedGraph:
    """x -Conv3x3(relu)-> c1 -Depthwise3x3/2-> d1 -Conv1x1-> y: spatial ops with weights, biases and (int8)
    per-channel requantization, so small budgets split it into stages that spill, reload, tile and chain."""
    rng = np.random.default_rng(seed)
    dt = "int8" if int8 else "float32"
    c_in, c1, c_out = 3, 8, 4
    h2 = (h + 2 - 3) // 2 + 1

    def act(name: str, shape: tuple[int, ...], s: float, z: int) -> Tensor:
        return Tensor(name, shape, dt, _q(s, z) if int8 else None, "nhwc")

    tensors = {
        "x": act("x", (1, c_in, h, h), 0.03, -5),
        "c1": act("c1", (1, c1, h, h), 0.05, -128),
        "d1": act("d1", (1, c1, h2, h2), 0.08, 10),
        "y": act("y", (1, c_out, h2, h2), 0.1, -2),
    }
    specs = [("w1", "b1", (c1, c_in, 3, 3), 0.03), ("w2", "b2", (c1, 1, 3, 3), 0.05), ("w3", "b3", (c_out, c1, 1, 1), 0.08)]
    weights = conv_weights(rng, specs, int8, tensors)

    def conv_attrs(k: int, s: int, p: int, group: int, activation: str | None) -> dict:
        return dict(kernel_shape=[k, k], strides=[s, s], dilations=[1, 1], pads=[p, p, p, p], group=group,
                    fused_activation=activation)

    ops = [
        Op("conv1", "Conv", ("x", "w1", "b1"), ("c1",), conv_attrs(3, 1, 1, 1, "relu")),
        Op("dw1", "DepthwiseConv", ("c1", "w2", "b2"), ("d1",), conv_attrs(3, 2, 1, c1, None)),
        Op("pw1", "Conv", ("d1", "w3", "b3"), ("y",), conv_attrs(1, 1, 0, 1, None)),
    ]
    return AnalyzedGraph("convchain", tensors, ops, ["x"], ["y"], weights, {})


def conv_gap_graph(int8: bool = False, h: int = 12, seed: int = 0) -> AnalyzedGraph:
    """The conv chain followed by a GlobalAveragePool: at small budgets the planner tiles the GAP's input and the
    GAP accumulates over the tiles (unit flag ACCUM); at large ones it runs untiled."""
    g = conv_chain_graph(int8=int8, h=h, seed=seed)
    y = g.tensors["y"]
    g.tensors["g"] = Tensor("g", (1, y.shape[1], 1, 1), y.dtype, _q(0.07, 3) if int8 else None, "nhwc")
    ops = list(g.ops) + [Op("gap", "GlobalAveragePool", ("y",), ("g",), {})]
    return AnalyzedGraph("convgap", g.tensors, ops, ["x"], ["g"], g.weights, {})


# ../shared, located exactly like tests/conftest.py does it. Repeated here rather than imported: several conftest
# modules exist under tests/, and `from conftest import ...` gets whichever of them was imported first.
_REPO = Path(__file__).resolve().parents[2]
SHARED_MODELS = Path(os.environ.get("TIGRIS_SHARED", _REPO.parent / "shared")) / "models"


def shared_model(rel: str) -> Path:
    """Path of a model under ../shared/models, or skip the test with the reason."""
    p = SHARED_MODELS / rel
    if not p.exists():
        pytest.skip(f"needs ../shared/models/{rel} (not present beside this clone)")
    return p


def all_shared_models() -> list[Path]:
    if not SHARED_MODELS.is_dir():
        pytest.skip("needs ../shared/models (not present beside this clone)")
    return sorted(SHARED_MODELS.rglob("*.onnx"))


def conv_weights(rng, specs, int8: bool, tensors: dict) -> dict[str, np.ndarray]:
    """Random weights and biases for (weight, bias, weight shape, input scale) specs, their tensors added to
    ``tensors``: int8 per-channel weights with int32 biases at s_w * s_in, or float32."""
    weights: dict[str, np.ndarray] = {}
    for wn, bn, wshape, s_in in specs:
        oc = wshape[0]
        if int8:
            s_w = rng.uniform(0.002, 0.02, oc).astype(np.float32)
            weights[wn] = rng.integers(-127, 128, wshape).astype(np.int8)
            weights[bn] = rng.integers(-2000, 2000, oc).astype(np.int32)
            tensors[wn] = Tensor(wn, wshape, "int8", QuantParam(s_w, np.zeros(oc, np.int64), 0))
            tensors[bn] = Tensor(bn, (oc,), "int32", QuantParam((s_w * np.float32(s_in)).astype(np.float32),
                                                                np.zeros(oc, np.int64), 0))
        else:
            weights[wn] = (rng.standard_normal(wshape) / np.sqrt(np.prod(wshape[1:]))).astype(np.float32)
            weights[bn] = rng.standard_normal(oc).astype(np.float32)
            tensors[wn] = Tensor(wn, wshape)
            tensors[bn] = Tensor(bn, (oc,))
    return weights


# --- byte-level plan mutation (malformed-plan tests) --------------------------------------------------------------


def section_offset(data: bytes, sid) -> int:
    """Byte offset of section ``sid`` (a ``format.SectionId``) in a plan."""
    from tigris.emit import format as F

    return int(F.SECTION.unpack(data, F.DIR_OFFSET + (int(sid) - 1) * F.SECTION.size)["offset"])


def tensor_record_pos(data: bytes, name: str) -> int:
    """Byte offset of tensor ``name``'s record in a plan."""
    from tigris.emit import format as F
    from tigris.emit import read_plan

    k = next(t.index for t in read_plan(data).tensors if t.name == name)
    return section_offset(data, F.SectionId.TENSORS) + k * F.TENSOR.size


def unit_record_pos(data: bytes, k: int) -> int:
    """Byte offset of unit ``k``'s record in a plan."""
    from tigris.emit import format as F

    return section_offset(data, F.SectionId.UNITS) + k * F.UNIT.size


def set_field(data: bytes, pos: int, v: int, fmt: str = "<I") -> bytes:
    """The plan with ``v`` packed at ``pos`` and its checksum sealed again, so only the semantic check can refuse it."""
    import struct

    from tigris.emit.writer import seal

    b = bytearray(data)
    struct.pack_into(fmt, b, pos, v)
    return seal(b)


# --- random conv chains -----------------------------------------------------------------------------------------


def chain_graph(layers: list[tuple[str, int, int, int]], int8: bool, h: int, c: int, seed: int) -> AnalyzedGraph:
    """x -> one conv per ``(kind, k, stride, dilation)`` layer ('conv' with c output channels, 'dw' depthwise) ->
    y, every conv with weights, a bias and (int8) its own output quantization. A fifth entry of a 'conv' layer is
    its output channel count instead of c (an expansion or projection)."""
    rng = np.random.default_rng(seed)
    dt = "int8" if int8 else "float32"

    def act(name: str, hh: int, s: float, z: int, ch: int = c) -> Tensor:
        return Tensor(name, (1, ch, hh, hh), dt, QuantParam(np.array([s], np.float32), np.array([z], np.int64))
                      if int8 else None, "nhwc")

    tensors = {"x": act("x", h, 0.05, -3)}
    specs, ops, prev, hh, s_prev, ci = [], [], "x", h, 0.05, c
    for i, (kind, k, s, d, *rest) in enumerate(layers):
        co = rest[0] if rest and kind == "conv" else ci if kind == "dw" else c
        eff = (k - 1) * d + 1
        p = (eff - 1) // 2
        hh = (hh + 2 * p - eff) // s + 1
        out = "y" if i == len(layers) - 1 else f"t{i}"
        s_out = float(rng.uniform(0.04, 0.12))
        tensors[out] = act(out, hh, s_out, int(rng.integers(-20, 20)), co)
        specs.append((f"w{i}", f"b{i}", (co, 1 if kind == "dw" else ci, k, k), s_prev))
        attrs = dict(kernel_shape=[k, k], strides=[s, s], dilations=[d, d], pads=[p, p, p, p],
                     group=co if kind == "dw" else 1, fused_activation="relu" if i % 2 == 0 else None)
        ops.append(Op(f"op{i}", "DepthwiseConv" if kind == "dw" else "Conv", (prev, f"w{i}", f"b{i}"), (out,), attrs))
        prev, s_prev, ci = out, s_out, co
    weights = conv_weights(rng, specs, int8, tensors)
    return AnalyzedGraph("rollchain", tensors, ops, ["x"], ["y"], weights, {})


def chain_layers():
    """Hypothesis strategy of one ``chain_graph`` layer."""
    from hypothesis import strategies as st

    return st.tuples(st.sampled_from(["conv", "dw"]), st.sampled_from([1, 3, 3, 5]), st.sampled_from([1, 1, 2]),
                     st.sampled_from([1, 1, 2]))


def overwrite_chain() -> AnalyzedGraph:
    """x (16x16x4 int8) -> conv 3x3 -> dw 3x3/2 -> conv 1x1 -> dw 3x3 -> conv 3x3/2 -> y: at 1,536 bytes one rolling
    unit of 4 tiles writes y over x; at 1,024 two units, the first writing t1 over x, the second y over t1."""
    return chain_graph([("conv", 3, 1, 1), ("dw", 3, 2, 1), ("conv", 1, 1, 1), ("dw", 3, 1, 1), ("conv", 3, 2, 1)],
                       True, 16, 4, 0)
