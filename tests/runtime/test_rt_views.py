"""Views (lifetime rule 7, tensor flag VIEW) on the host runtime: a row-axis Concat whose producers write straight into
their halves of its output, a Concat of pooled vectors, and a Slice read in place. Plans with views (at the untiled
budget, at the smallest fitting one and in between, and plans whose units cut between the producers of one joined
buffer, which the later one reloads and spills) run with the outputs of the same graph's plans without views: int8
bit for bit, float within ONNX Runtime's tolerance; the Concats and the Slice have no op record; the runtime's fast
high-water mark is the plan's peak. Then both readers' refusals of broken views, each with its code."""
from __future__ import annotations

import struct
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "families"))
import builders  # noqa: E402

import _rt_plans as P  # noqa: E402
from tigris_testing import host_session, saved_model  # noqa: E402
import tigris.plan as planner  # noqa: E402
from tigris.emit import emit_plan, read_plan  # noqa: E402
from tigris.emit import format as F  # noqa: E402
from tigris.emit.writer import seal  # noqa: E402
from tigris.ir import DoesNotFitError  # noqa: E402
from tigris.plan.check import check_plan  # noqa: E402


@pytest.fixture(scope="module")
def session_cls():
    return host_session()


def views_model(seed: int = 5, rows: int = 8) -> onnx.ModelProto:
    """x [1,3,2r,2r] -> conv/2 -> (3x3 conv, 1x1 conv) -> Concat along H -> conv/2 -> two (conv, GAP) -> Concat of
    the pooled vectors -> Slice of its first half -> 1x1 conv -> y."""
    g = builders._new(seed)
    a = g.op("Relu", [g.conv("x", 3, 8, 3, 2)])
    h = g.op("Concat", [g.op("Relu", [g.conv(a, 8, 8, 3)]), g.op("Relu", [g.conv(a, 8, 8, 1)])], axis=2)
    d = g.conv(h, 8, 16, 3, 2)
    v = g.op("Concat", [g.op("GlobalAveragePool", [g.conv(d, 16, 16, 1)]),
                        g.op("GlobalAveragePool", [g.conv(d, 16, 16, 3)])], axis=1)
    i64 = lambda *v: g.const(np.array(v, np.int64))  # noqa: E731
    s = g.op("Slice", [v, i64(0), i64(16), i64(1)])
    return builders._finish(g, "views", [1, 3, 2 * rows, 2 * rows], g.conv(s, 16, 4, 1))


def _prepared(tmp: Path, int8: bool, model: onnx.ModelProto | None = None):
    """The float model, or its ORT-quantized twin with every Concat input given its output's encoding (ORT gives
    each its own; then the Concat requantizes and is no view), re-lowered: a valid int8 graph whose Concats copy
    bytes."""
    from tigris import api
    from tigris.ops import lower

    path = saved_model(tmp, model or views_model(), "views", int8)
    prep = api.prepare(path)
    if not int8:
        return path, prep
    g = prep.graph
    tensors = dict(g.tensors)
    for op in g.ops:
        if op.op_type == "Concat":
            for n in op.inputs:
                tensors[n] = replace(tensors[n], quant=tensors[op.outputs[0]].quant)
    g = replace(g, tensors=tensors)
    return path, api.Prepared(g, prep.reports, [lower(g, op) for op in g.ops])


def _plan(prep, budget: int, views: bool):
    from tigris import api
    from tigris.plan import plan_memory

    planner.VIEWS = views
    try:
        return plan_memory(prep.graph, budget, None, **api._plan_kwargs(prep, True))
    finally:
        planner.VIEWS = True


def _budgets(prep) -> list[int]:
    from tigris import api
    from tigris.plan import min_fast_budget

    least = min_fast_budget(prep.graph, **api._plan_kwargs(prep, True))
    whole = _plan(prep, 1 << 22, True).fast_peak
    return [1 << 22, (least + whole) // 32 * 16, least]


def split_input_model(seed: int = 9) -> onnx.ModelProto:
    """x [1,4,16,16] -> Split along H (a Slice of the graph input each half) -> a 3x3 conv on each -> Concat along H
    -> 3x3 conv -> y: the readers of the halves read the input's buffer in place, the convs write the joined one."""
    g = builders._new(seed)
    i64 = lambda *v: g.const(np.array(v, np.int64))  # noqa: E731
    top = g.op("Slice", ["x", i64(0), i64(8), i64(2)])
    bottom = g.op("Slice", ["x", i64(8), i64(16), i64(2)])
    z = g.op("Concat", [g.op("Relu", [g.conv(top, 4, 4, 3)]), g.op("Relu", [g.conv(bottom, 4, 4, 3)])], axis=2)
    return builders._finish(g, "split_input", [1, 4, 16, 16], g.conv(z, 4, 4, 3))


MODELS = {"head": views_model, "split_input": split_input_model}


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_view_plans_run_like_copy_plans(session_cls, tmp_path, int8, model):
    from tigris import api

    Session, _ = session_cls
    path, prep = _prepared(tmp_path, int8, MODELS[model]())
    x = api.random_inputs(prep, 1)
    copy = _plan(prep, 1 << 22, False)
    assert not copy.view_ops
    want = Session(emit_plan(prep.graph, copy, prep.lowered, xip=True)).run(x).outputs
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, x)[0]
    for budget in _budgets(prep):
        p = _plan(prep, budget, True)
        kinds = {prep.graph.ops[i].op_type for i in p.view_ops}
        if budget == 1 << 22:
            assert kinds == {"Concat", "Slice"}
        assert check_plan(prep.graph, p) == []
        data = emit_plan(prep.graph, p, prep.lowered, xip=True)
        info = read_plan(data)
        assert len(info.ops) == len(prep.graph.ops) - len(p.view_ops)  # a view has no op record
        assert sum(t.is_view for t in info.tensors) == len(p.view_offset)
        got = Session(data).run(x)
        assert got.fast_peak == p.fast_peak
        (name,) = want
        if int8:
            assert got.outputs[name].tobytes() == want[name].tobytes()
        else:
            assert np.max(np.abs(got.outputs[name] - ref)) <= 1e-4 * max(1.0, float(np.abs(ref).max()))


def test_views_lower_the_fast_budget(tmp_path, monkeypatch):
    from tigris import api
    from tigris.ops import concat
    from tigris.plan import min_fast_budget

    _, prep = _prepared(tmp_path, False)
    kw = api._plan_kwargs(prep, True)
    planner.VIEWS = False
    try:  # against copies into a buffer of the join's own (a row join in place saves its first input too)
        with monkeypatch.context() as mp:
            mp.setattr(concat, "ROW_JOINS", False)
            before = min_fast_budget(prep.graph, **kw)
            with pytest.raises(DoesNotFitError):
                _plan(prep, before - 16, False)
    finally:
        planner.VIEWS = True
    after = min_fast_budget(prep.graph, **kw)
    assert after < before
    with monkeypatch.context() as mp:
        mp.setattr(concat, "ROW_JOINS", False)
        copies = _plan(prep, 1 << 22, False).fast_peak
    assert _plan(prep, 1 << 22, True).fast_peak < copies


def cross_model(seed: int = 7) -> onnx.ModelProto:
    """x [1,4,16,16] -> (1x1 conv a; 3x3 conv e to 16 channels -> Relu -> 1x1 conv f) -> Concat(a, f) along H ->
    3x3 conv -> y. At budgets where e and the joined buffer do not fit together, the units cut between the two
    producers of the Concat's output."""
    g = builders._new(seed)
    a = g.conv("x", 4, 4, 1)
    f = g.conv(g.op("Relu", [g.conv("x", 4, 16, 3)]), 16, 4, 1)
    z = g.op("Concat", [a, f], axis=2)
    return builders._finish(g, "cross", [1, 4, 16, 16], g.conv(z, 4, 4, 3))


def _crossing(prep, p) -> int:
    """Joined buffers whose producers run in more than one unit."""
    from tigris.plan.lifetime import buffers

    b = buffers(prep.graph, views=True)
    roots = {p.alias_of[n] for n in p.view_offset}
    return sum(len({k for k, u in enumerate(p.units) for i in u.ops if r in b.writes[i]}) > 1 for r in roots)


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_a_joined_buffer_across_units_runs_like_the_copy_plan(session_cls, tmp_path, int8):
    """Read-modify-write across units (lifetime rule 7): the unit of the second producer reloads the joined buffer
    the first one spilled, writes its run and spills it whole; outputs as the copy plan's."""
    from tigris import api

    Session, _ = session_cls
    path, prep = _prepared(tmp_path, int8, cross_model())
    x = api.random_inputs(prep, 2)
    copy = _plan(prep, 1 << 22, False)
    want = Session(emit_plan(prep.graph, copy, prep.lowered, xip=True)).run(x).outputs
    found = None
    for budget in range(copy.fast_peak, copy.fast_peak // 4, -(copy.fast_peak // 64 // 16 * 16 or 16)):
        try:
            p = _plan(prep, budget, "only")
        except DoesNotFitError:
            continue
        if _crossing(prep, p):
            found = p
            break
    assert found is not None
    assert check_plan(prep.graph, found) == []
    k = next(k for k, u in enumerate(found.units) if k and any(r in u.reload for r in found.alias_of.values()))
    assert found.units[k].reload and found.units[k - 1].spill
    got = Session(emit_plan(prep.graph, found, prep.lowered, xip=True)).run(x)
    assert got.fast_peak == found.fast_peak
    (name,) = want
    if int8:
        assert got.outputs[name].tobytes() == want[name].tobytes()
    else:
        ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, x)[0]
        assert np.max(np.abs(got.outputs[name] - ref)) <= 1e-4 * max(1.0, float(np.abs(ref).max()))
        assert np.max(np.abs(got.outputs[name] - want[name])) <= 1e-5 * max(1.0, float(np.abs(ref).max()))


# --- refusals -------------------------------------------------------------------------------------------------------


def _tensor_pos(data: bytes, name: str) -> int:
    k = next(t.index for t in read_plan(data).tensors if t.name == name)
    off = int(F.SECTION.unpack(data, F.DIR_OFFSET + (int(F.SectionId.TENSORS) - 1) * F.SECTION.size)["offset"])
    return off + k * F.TENSOR.size


def _patch(data: bytes, pos: int, v: int) -> bytes:
    b = bytearray(data)
    struct.pack_into("<I", b, pos, v)
    return seal(b)


def view_mutants(tmp: Path) -> list[tuple[str, bytes, str]]:
    """(what, plan bytes, status) of broken views of the float model's untiled plan with views."""
    _, prep = _prepared(tmp, False)
    p = _plan(prep, 1 << 22, True)
    data = emit_plan(prep.graph, p, prep.lowered, xip=True)
    last = max(p.view_offset, key=lambda n: p.view_offset[n])  # the second half of the row Concat
    plain = next(t.name for t in read_plan(data).tensors if not t.is_alias and t.name not in p.view_offset)
    voff = lambda n: _tensor_pos(data, n) + F.TENSOR.offsets()["view_off"]  # noqa: E731
    flags = lambda n: _tensor_pos(data, n) + F.TENSOR.offsets()["flags"]  # noqa: E731
    fl = lambda n: struct.unpack_from("<I", data, flags(n))[0]  # noqa: E731
    io_off = int(F.SECTION.unpack(data, F.DIR_OFFSET + (int(F.SectionId.IO) - 1) * F.SECTION.size)["offset"])
    io = io_off + len(prep.graph.inputs) * F.IO.size
    k_last = next(t.index for t in read_plan(data).tensors if t.name == last)
    return [
        ("run past its root", _patch(data, voff(last), p.view_offset[last] + 16), "ERR_VIEW"),
        ("run misaligned", _patch(data, voff(last), p.view_offset[last] - 8), "ERR_VIEW"),
        ("VIEW without ALIAS", _patch(data, flags(last), fl(last) & ~int(F.TensorFlag.ALIAS)), "ERR_VIEW"),
        ("view_off without VIEW", _patch(data, voff(plain), 16), "ERR_VIEW"),
        # the interface record of the output names the view instead (the interface names whole buffers)
        ("a view as the graph output", _patch(data, io + F.IO.offsets()["tensor"], k_last), "ERR_VIEW"),
    ]


def test_readers_refuse_broken_views(session_cls, tmp_path):
    Session, PlanError = session_cls
    assert P.assert_readers_refuse(Session, PlanError, view_mutants(tmp_path)) == 5
