"""int8 input-channel (K) groups with int32 partial sums (tigris/ops/acc.py, runtime_c/src/kernels/acc.c,
tigris/passes/k_acc.py, weight_split.split_k on int8 ops).

* on random int8 Conv (1x1 and 3x3 with padding, stride and dilation, fused Relu/Relu6, per-tensor and
  per-channel weights, weight zero points), 1-D Conv and Gemm models the split graph (Slice -> ConvAcc/GemmAcc per
  group, AccAdd chain, Requantize) gives the unsplit plan's output bytes on the NumPy reference and on the host
  runtime, untiled and row-tiled; the plan passes the offset checker and the runtime's high-water mark is its peak;
* a property test over random int8 graphs and group counts: bit-identical outputs on the host runtime;
* every kind's parameters and constant lengths, mutated in a compiled plan, are refused at load by the kind's check
  or run through (no kernel refuses what the loader accepted);
* the builders refuse what they cannot sum exactly (a grouped conv, an input that does not hold the slice).
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from tigris import api
from tigris.ir import TigrisError
from tigris.ops import lower
from tigris.passes import k_acc
from tigris.passes.weight_split import input_channels, k_splittable, split_k
from tigris.plan.check import check_plan
from tigris.reference import run_reference

F = TensorProto.FLOAT


def _qdq_model(rng, kind: str, c: int, oc: int, h: int, act: str | None = None, wzp: bool = False,
               per_tensor: bool = False) -> tuple[onnx.ModelProto, tuple[int, ...]]:
    """x -> Q/DQ -> (Conv | Conv1D | Gemm) with int8 weights, int32 bias -> [Relu | Clip 0..6] -> Q/DQ -> y."""
    n = helper.make_node
    if kind == "gemm":
        x_shape, w_shape, attrs = (h, c), (oc, c), dict(transB=1)
        y_shape = (h, oc)
    elif kind == "conv1d":
        x_shape, w_shape, attrs = (1, c, h), (oc, c, 3), dict(kernel_shape=[3], pads=[1, 1])
        y_shape = (1, oc, h)
    elif kind == "conv3x3":
        x_shape, w_shape = (1, c, h, h + 1), (oc, c, 3, 3)
        attrs = dict(kernel_shape=[3, 3], pads=[1, 2, 1, 0], strides=[2, 1], dilations=[1, 2])
        y_shape = (1, oc, (h + 2 - 3) // 2 + 1, (h + 1 + 2 - 5) + 1)
    else:
        x_shape, w_shape, attrs = (1, c, h, h), (oc, c, 1, 1), dict(kernel_shape=[1, 1])
        y_shape = (1, oc, h, h)
    ns = 1 if per_tensor else oc
    sw = rng.uniform(0.002, 0.01, ns).astype(np.float32)
    zw = rng.integers(1, 20, ns).astype(np.int8) if wzp else np.zeros(ns, np.int8)
    w = rng.integers(-127, 128, w_shape).astype(np.int8)
    if wzp:  # -128 - zp_w leaves int8, so pass symmetric_weights keeps the zero points (the wzp path)
        w.reshape(oc, -1)[:, 0] = -128
    sx, sy = np.float32(0.05), np.float32(0.5 if kind != "gemm" else 0.2)
    inits = {"sx": sx, "zx": np.int8(rng.integers(-10, 10)), "sy": sy, "zy": np.int8(rng.integers(-10, 10)),
             "w": w, "sw": sw, "zw": zw,
             "b": rng.integers(-3000, 3000, oc).astype(np.int32), "sb": (sx * sw).astype(np.float32),
             "zb": np.zeros(ns, np.int32)}
    if per_tensor:
        for key in ("sw", "zw", "sb", "zb"):
            inits[key] = inits[key].reshape(())
    op = "Gemm" if kind == "gemm" else "Conv"
    nodes = [n("QuantizeLinear", ["x", "sx", "zx"], ["xq"]), n("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
             n("DequantizeLinear", ["w", "sw", "zw"], ["wd"], axis=0),
             n("DequantizeLinear", ["b", "sb", "zb"], ["bd"], axis=0),
             n(op, ["xd", "wd", "bd"], ["c" if act else "r"], **attrs)]
    if act == "relu":
        nodes.append(n("Relu", ["c"], ["r"]))
    elif act == "relu6":
        inits.update(lo=np.float32(0), hi=np.float32(6))
        nodes.append(n("Clip", ["c", "lo", "hi"], ["r"]))
    nodes += [n("QuantizeLinear", ["r", "sy", "zy"], ["yq"]), n("DequantizeLinear", ["yq", "sy", "zy"], ["y"])]
    g = helper.make_graph(nodes, "kacc", [helper.make_tensor_value_info("x", F, list(x_shape))],
                          [helper.make_tensor_value_info("y", F, list(y_shape))],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m, x_shape


def _mac(prep: api.Prepared):
    (op,) = [o for o in prep.graph.ops if o.op_type in ("Conv", "Conv1D", "Gemm")]
    return op


def _prepare(tmp_path: Path, m: onnx.ModelProto):
    path = tmp_path / "m.onnx"
    onnx.save(m, path)
    return path, api.prepare(path)


def _split(prep: api.Prepared, groups: int, adds: bool = False) -> api.Prepared:
    """``split_k`` of the model's one op; ``adds``: each partial writes its own accumulator and AccAdds sum them
    (the builders' other form) instead of adding into the previous group's."""
    op = _mac(prep)
    assert k_splittable(prep.graph, op) is None
    g = split_k(prep.graph, op.name, groups)
    if adds:
        ops = []
        for o in g.ops:
            if o.op_type in ("ConvAcc", "GemmAcc") and len(o.inputs) > 3:
                own = o.outputs[0] + "/own"
                k_acc.acc_tensor(g, op, own)
                ops.append(o.with_(inputs=o.inputs[:3], outputs=(own,)))
                ops.append(k_acc.acc_add(g, op, o.inputs[3], own, o.outputs[0], o.name + "/add"))
            else:
                ops.append(o)
        g.ops = ops
    return api.Prepared(g, prep.reports, [lower(g, o) for o in g.ops])


def graph_acc_inputs(o) -> bool:
    """Whether op ``o`` reads an earlier accumulator (a partial's fourth input, an AccAdd's first)."""
    return o.op_type == "AccAdd" or (o.op_type in ("ConvAcc", "GemmAcc") and len(o.inputs) > 3 and bool(o.inputs[3]))


def _in_place_accumulators(plan) -> int:
    return sum(1 for u in plan.units for y, x in u.in_place.items() if "/kgroup" in y and "/kgroup" in x)


def _same_bytes(path, prep, split, x, budgets) -> None:
    whole = api.run_plan(api.analyze(path, "1M", prepared=prep, tradeoff=False).plan_bytes, x).outputs["y"]
    ref = np.asarray(run_reference(split.graph, x, split.lowered)["y"])
    assert ref.tobytes() == whole.tobytes()
    for budget in budgets:
        a = api.analyze(path, budget, prepared=split, tradeoff=False)
        assert a.fits, a.reason
        if budget == "1M":  # one unit: every running sum is written over the one before (lifetime rule 6)
            assert _in_place_accumulators(a.plan) == sum(graph_acc_inputs(o) for o in split.graph.ops)
        assert check_plan(a.prepared.graph, a.plan) == []
        if budget != "1M":  # the small budget cuts the groups' ops into row tiles
            assert any(u.tiles > 1 for u in a.plan.units), budget
        run = api.run_plan(a.plan_bytes, x)
        assert run.fast_peak == a.plan.fast_peak
        assert run.outputs["y"].tobytes() == whole.tobytes(), budget


CASES = [  # (kind, c, oc, h, act, wzp, per_tensor, groups)
    ("conv1x1", 37, 9, 3, "relu6", False, False, 5),
    ("conv3x3", 13, 6, 5, "relu", False, False, 3),
    ("conv3x3", 7, 5, 6, None, True, False, 2),  # weight zero points
    ("conv1d", 17, 11, 9, None, False, True, 4),  # per-tensor weights
    ("gemm", 45, 10, 3, "relu", False, False, 6),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-g{c[7]}" for c in CASES])
def test_int8_k_split_is_bit_exact(tmp_path, case):
    kind, c, oc, h, act, wzp, per_tensor, groups = case
    rng = np.random.default_rng(c * 31 + groups)
    m, x_shape = _qdq_model(rng, kind, c, oc, h, act, wzp, per_tensor)
    path, prep = _prepare(tmp_path, m)
    split = _split(prep, groups)
    kinds = [o.op_type for o in split.graph.ops]
    part = "GemmAcc" if kind == "gemm" else "ConvAcc"
    assert kinds.count("Slice") == kinds.count(part) == groups and "AccAdd" not in kinds
    assert kinds.count("Requantize") == 1 and _mac(prep).op_type not in kinds
    parts = [o for o in split.graph.ops if o.op_type == part]
    assert len(parts[0].inputs) == 3 and all(not o.inputs[2] for o in parts[1:])  # the bias once
    assert [o.inputs[3] for o in parts[1:]] == [o.outputs[0] for o in parts[:-1]]  # each adds into the previous
    (rq,) = [o for o in split.graph.ops if o.op_type == "Requantize"]
    assert rq.attrs["fused_activation"] == _mac(prep).attrs.get("fused_activation")
    assert rq.inputs[0] == parts[-1].outputs[0]
    x = {"x": rng.standard_normal(x_shape).astype(np.float32) * 3}
    budgets = ("1M", "1K") if kind != "gemm" else ("1M",)
    _same_bytes(path, prep, split, x, budgets)
    _same_bytes(path, prep, _split(prep, groups, adds=True), x, budgets)  # the AccAdd form


@settings(max_examples=8, deadline=None)
@given(kind=st.sampled_from(["conv1x1", "conv3x3", "conv1d", "gemm"]), c=st.integers(2, 24), oc=st.integers(1, 12),
       h=st.integers(1, 6), act=st.sampled_from([None, "relu", "relu6"]), wzp=st.booleans(),
       per_tensor=st.booleans(), data=st.data())
def test_int8_k_split_property(tmp_path_factory, kind, c, oc, h, act, wzp, per_tensor, data):
    """Random int8 graphs and group counts: the split plan's host-runtime output bytes are the unsplit plan's."""
    if kind == "conv3x3":
        h = max(h, 2)
    rng = np.random.default_rng(c * 1000 + oc * 10 + h)
    m, x_shape = _qdq_model(rng, kind, c, oc, h, act, wzp, per_tensor)
    path, prep = _prepare(tmp_path_factory.mktemp("p"), m)
    groups = data.draw(st.integers(2, input_channels(prep.graph, _mac(prep))), label="groups")
    split = _split(prep, groups)
    x = {"x": rng.standard_normal(x_shape).astype(np.float32) * 3}
    _same_bytes(path, prep, split, x, ("1M",))


def test_int8_k_split_runs_in_column_tiles(tmp_path):
    """ConvAcc is windowed along W like Conv and AccAdd/Requantize are per pixel, so the planner may cut the groups
    into column tiles (forced: 3 per tiled unit): proven, HWM = peak, the unsplit plan's bytes."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
    import _rt_plans as P

    from tigris.emit.reader import read_plan

    rng = np.random.default_rng(21)
    m, x_shape = _qdq_model(rng, "conv3x3", 11, 5, 6, "relu6")
    m.graph.input[0].type.tensor_type.shape.dim[3].dim_value = 12  # a wider image: column bands to cut
    m.graph.output[0].type.tensor_type.shape.dim[3].dim_value = 10
    path, prep = _prepare(tmp_path, m)
    x = {"x": rng.standard_normal((1, 11, 6, 12)).astype(np.float32) * 3}
    whole = api.run_plan(api.analyze(path, "1M", prepared=prep, tradeoff=False).plan_bytes, x).outputs["y"]
    for adds, kinds in ((False, {"ConvAcc", "Requantize"}), (True, {"ConvAcc", "AccAdd", "Requantize"})):
        split = _split(prep, 3, adds)
        untiled, full = P.compile_graph(split.graph, 1 << 22, xip=True)
        data, plan = P.compile_graph(split.graph, full.unscheduled_peak // 3, xip=True, col_tiles=True, force_cols=3)
        assert any(u.col_split for u in read_plan(data).units)
        assert kinds <= {split.graph.ops[i].op_type for u in plan.units if u.tile_cols for i in u.ops}
        assert check_plan(split.graph, plan) == []
        run = api.run_plan(data, x)
        assert run.fast_peak == plan.fast_peak
        assert run.outputs["y"].tobytes() == api.run_plan(untiled, x).outputs["y"].tobytes() == whole.tobytes()


def test_readers_refuse_an_accumulator_band_other_than_the_output_band(tmp_path):
    """In a COLS unit a convacc adds into its accumulator at its output's pixels, so the accumulator's column band
    must be exactly the output's: a 1x1 K split in 2 groups, column-tiled, the first group's accumulator one column
    narrower in tile 0 (its own 1x1 input still holds it, so only this check can refuse) is refused by both readers
    with TGRS_ERR_TILE_COLS."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
    import _rt_plans as P

    from tigris.emit import format as Fmt
    from tigris.emit.reader import PlanFormatError, read_plan
    from tigris.host.session import PlanError, Session

    rng = np.random.default_rng(21)
    m, _xs = _qdq_model(rng, "conv1x1", 11, 5, 6)
    for vi in (m.graph.input[0], m.graph.output[0]):
        vi.type.tensor_type.shape.dim[3].dim_value = 12  # a wider image: column bands to cut
    _path, prep = _prepare(tmp_path, m)
    split = _split(prep, 2)
    _untiled, full = P.compile_graph(split.graph, 1 << 22, xip=True)
    data, _plan = P.compile_graph(split.graph, full.unscheduled_peak // 3, xip=True, col_tiles=True, force_cols=3)
    pf = read_plan(data)
    Session(data)
    (op,) = [o for o in pf.ops if o.kind == "convacc" and len(o.inputs) == 2]
    unit = next(u for u in pf.units if u.col_split and u.op_first <= op.index < u.op_first + u.op_count)
    pos = {p.tensor: j for j, p in enumerate(unit.placements)}
    acc, out = pos[pf.tensors[op.inputs[1]].root], pos[pf.tensors[op.output].root]
    c0, n = unit.tile_cols[0][acc]
    assert unit.tile_cols[0][out] == (c0, n) and n > 1
    u = Fmt.UNIT.unpack(data, P.unit_record_pos(data, unit.index))
    rec = P.section_offset(data, Fmt.SectionId.TILE_ROWS) + 8 * (int(u["rows_first"]) + unit.tiles * len(pos) + acc)
    bad = P.set_field(data, rec + 4, n - 1, "<i")
    with pytest.raises(PlanFormatError, match=r"adds into columns \(%d, %d\)" % (c0, n - 1)):
        read_plan(bad)
    assert P.assert_readers_refuse(Session, PlanError, [("accumulator band narrower", bad, "ERR_TILE_COLS")]) == 1


def _mlp(rng, k0: int, k1: int, k2: int) -> onnx.ModelProto:
    """x [1, k0] -> Q/DQ -> int8 Gemm to k1 -> Relu -> Q/DQ -> int8 Gemm to k2 -> Q/DQ -> y."""
    n = helper.make_node
    s1, s2 = (rng.uniform(0.002, 0.01, k).astype(np.float32) for k in (k1, k2))
    sx, sa = np.float32(0.05), np.float32(0.3)
    inits = dict(sx=sx, zx=np.int8(2), sa=sa, za=np.int8(-4), sy=np.float32(0.5), zy=np.int8(5),
                 w1=rng.integers(-127, 128, (k1, k0)).astype(np.int8), s1=s1, z1=np.zeros(k1, np.int8),
                 b1=rng.integers(-3000, 3000, k1).astype(np.int32), sb1=sx * s1, zb1=np.zeros(k1, np.int32),
                 w2=rng.integers(-127, 128, (k2, k1)).astype(np.int8), s2=s2, z2=np.zeros(k2, np.int8),
                 b2=rng.integers(-3000, 3000, k2).astype(np.int32), sb2=sa * s2, zb2=np.zeros(k2, np.int32))
    dq = lambda t, ax=None: n("DequantizeLinear", [t, "s" + t[1:], "z" + t[1:]], [t + "d"],  # noqa: E731
                              **({} if ax is None else {"axis": ax}))
    nodes = [n("QuantizeLinear", ["x", "sx", "zx"], ["xq"]), n("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
             dq("w1", 0), dq("b1", 0), n("Gemm", ["xd", "w1d", "b1d"], ["g1"], transB=1), n("Relu", ["g1"], ["r1"]),
             n("QuantizeLinear", ["r1", "sa", "za"], ["aq"]), n("DequantizeLinear", ["aq", "sa", "za"], ["ad"]),
             dq("w2", 0), dq("b2", 0), n("Gemm", ["ad", "w2d", "b2d"], ["g2"], transB=1),
             n("QuantizeLinear", ["g2", "sy", "zy"], ["yq"]), n("DequantizeLinear", ["yq", "sy", "zy"], ["y"])]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", F, [1, k0])],
                          [helper.make_tensor_value_info("y", F, [1, k2])],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_analyze_sums_int8_k_groups_where_one_output_channel_does_not_fit(tmp_path):
    """The second Gemm reads 2048 int8 features: one output channel's weights (2,048 bytes) beside its input already
    exceed 4K, so output-channel groups cannot fit and ``analyze`` (LZ4 weights) splits it by input channels into
    int32 partial sums; the plan is proven, its high-water mark is its peak and its output bytes are the unsplit
    plan's."""
    rng = np.random.default_rng(0)
    path = tmp_path / "mlp.onnx"
    onnx.save(_mlp(rng, 2, 2048, 3), path)
    a = api.analyze(path, "4K", compression="lz4", tradeoff=False)
    assert a.fits, a.reason
    k_ops = [g for g in a.json["weight_groups"] if g["channels"] == "input"]
    assert len(k_ops) == 1 and k_ops[0]["groups"] >= 2
    assert {"GemmAcc", "Requantize"} <= {o.op_type for o in a.prepared.graph.ops}
    assert check_plan(a.prepared.graph, a.plan) == []
    x = {"x": rng.standard_normal((1, 2)).astype(np.float32)}
    run = api.run_plan(a.plan_bytes, x)
    assert run.fast_peak == a.plan.fast_peak <= 4096
    whole = api.analyze(path, "1M", xip=True, tradeoff=False)
    assert whole.json["weight_groups"] == []
    assert run.outputs["y"].tobytes() == api.run_plan(whole.plan_bytes, x).outputs["y"].tobytes()


def test_builders_refuse_what_they_cannot_sum(tmp_path):
    rng = np.random.default_rng(2)
    _path, prep = _prepare(tmp_path, _qdq_model(rng, "conv1x1", 8, 4, 2)[0])
    g, op = prep.graph, _mac(prep)
    with pytest.raises(TigrisError, match="does not hold input channels"):
        k_acc.partial(g.replace(), op, op.inputs[0], 0, 4, "p", "acc", True)  # x has 8 channels, not 4
    with pytest.raises(TigrisError, match="outside the weight"):
        k_acc.partial(g.replace(), op, op.inputs[0], 0, 9, "p", "acc", True)
    grouped = g.replace(ops=[o.with_(attrs={**o.attrs, "group": 2}) if o is op else o for o in g.ops])
    assert "grouped" in k_acc.why_not(grouped, grouped.op_by_name(op.name))
    # a sum that could leave int32 is refused before anything is built
    big = g.replace()
    big.weights[op.inputs[1]] = np.full_like(np.asarray(g.weights[op.inputs[1]]), 127)
    big.tensors[op.inputs[0]] = g.tensors[op.inputs[0]]
    with pytest.raises(TigrisError, match="overflow"):
        k_acc.check_sum_fits(big, op, [(0, 4), (4, 8)] * 10_000)


def test_acc_kinds_refuse_inconsistent_plans_at_load(tmp_path):
    """Every parameter slot and constant length of every op of the four kinds, mutated in a compiled plan: refused at
    load by the kind's check (naming the op), or run through without any kernel refusing it."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
    from test_kind_checks import _inputs, _mutants

    from tigris.emit.reader import KIND_CHECK_CODES, read_plan
    from tigris.host.session import PlanError, Session

    rng = np.random.default_rng(9)
    refused: dict[str, int] = {}
    for kind, groups in (("conv3x3", 2), ("gemm", 3)):
        _m, _xs = _qdq_model(rng, kind, 6, 3, 3, "relu", wzp=True)
        path, prep = _prepare(tmp_path, _m)
        data = api.analyze(path, "1M", prepared=_split(prep, groups, adds=kind == "gemm"), tradeoff=False).plan_bytes
        kinds = {o.kind for o in read_plan(data).ops}
        for kname in kinds & {"convacc", "gemmacc", "accadd", "requantize"}:
            for what, bad in _mutants(data, kname):
                try:
                    s = Session(bad)
                except PlanError as e:
                    if e.name.removeprefix("TGRS_") in KIND_CHECK_CODES:
                        refused[kname] = refused.get(kname, 0) + 1
                        assert "op " in str(e) and "\n" not in str(e)
                    continue
                try:
                    s.run(_inputs(s))
                except PlanError as e:
                    pytest.fail(f"{kname}: {what} loaded but failed at run time: {e}")
    assert set(refused) == {"convacc", "gemmacc", "accadd", "requantize"}, refused


def test_wzp_out_of_range_is_refused_at_load(tmp_path):
    """A weight zero point outside int8 (constant wzp of a convacc op) is refused by the loader: the kernel
    multiplies (w - wzp) in int32, which only the range keeps exact."""
    from tigris.emit import format as Fmt
    from tigris.emit.reader import read_plan
    from tigris.emit.writer import seal
    from tigris.host.session import PlanError, Session

    rng = np.random.default_rng(4)
    _m, _xs = _qdq_model(rng, "conv1x1", 6, 3, 2, wzp=True)
    path, prep = _prepare(tmp_path, _m)
    a = api.analyze(path, "1M", prepared=_split(prep, 2), xip=True, tradeoff=False)
    data = a.plan_bytes
    pf = read_plan(data)
    op = next(o for o in pf.ops if o.kind == "convacc")
    off, ln = op.consts[2]  # wzp
    assert ln == 12
    Session(data)
    b = bytearray(data)
    wsec = _section_offset(data, Fmt.SectionId.WEIGHTS)
    struct.pack_into("<i", b, wsec + off, 300)
    with pytest.raises(PlanError) as e:
        Session(seal(b))
    assert e.value.name == "TGRS_ERR_PARAM"


def _section_offset(data: bytes, sid) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
    import _rt_plans as P

    return P.section_offset(data, sid)
