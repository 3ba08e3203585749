"""A generator of malformed ONNX models and bad command lines, each with the verdict the CLI owes it.

Every :class:`Case` writes its files into a fresh folder and names the command line to run there, the exit code
(docs/cli.md), and a piece of text the single stderr line must contain (the file, node or tensor at fault).
``tests/malformed/test_malformed.py`` runs them all through the real CLI with bounded memory and time.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[2]
MNIST = REPO / "examples" / "mnist-8.onnx"
F = TensorProto.FLOAT


@dataclass
class Case:
    name: str
    build: Callable[[Path], list[str]]  # writes the files into the folder, returns argv (relative to it)
    code: int
    names: str  # text the one stderr line must contain
    kind: str = "error"  # "error": one `error:` line; "warning": one `warning:` line (exit 0); "ok": no stderr
    outputs: tuple[str, ...] = ()  # files the command may create (beside the inputs)
    changes: tuple[str, ...] = ()  # existing files the command may rewrite (an output the user names on purpose)
    notes: str = ""


def model(nodes, inputs, outputs, inits=(), opset=17, ir=8, value_info=()) -> onnx.ModelProto:
    g = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m


def vi(name: str, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def relu(shape=(1, 8), out_shape=None, name="r0") -> onnx.ModelProto:
    return model([helper.make_node("Relu", ["x"], ["y"], name=name)], [vi("x", list(shape))],
                 [vi("y", list(out_shape if out_shape is not None else shape))])


def conv(pads=(1, 1, 1, 1), w_value=None, auto_pad=None, strides=(1, 1), shape=(1, 1, 8, 8)) -> onnx.ModelProto:
    w = np.full((1, shape[1], 3, 3), 0.1, np.float32) if w_value is None else w_value
    attrs = {"kernel_shape": [3, 3], "strides": list(strides)}
    if auto_pad is None:
        attrs["pads"] = list(pads)
    else:
        attrs["auto_pad"] = auto_pad
    n = helper.make_node("Conv", ["x", "w"], ["y"], name="conv0", **attrs)
    return model([n], [vi("x", list(shape))], [vi("y", ["n", "c", "h", "w"])], [numpy_helper.from_array(w, "w")])


def save(m: onnx.ModelProto, d: Path, name: str = "m.onnx") -> str:
    # serialized without the checker: several cases are models the checker itself would refuse
    (d / name).write_bytes(m.SerializeToString())
    return name


def _mnist(d: Path) -> str:
    shutil.copy(MNIST, d / "m.onnx")
    return "m.onnx"


_PLAN: list[bytes] = []


def _plan(d: Path) -> str:
    """A real plan of mnist-8 (written by the library, not the CLI under test)."""
    if not _PLAN:
        from tigris import api

        _PLAN.append(api.compile_model(str(MNIST), "1M").plan_bytes)
    (d / "p.tgrs").write_bytes(_PLAN[0])
    return "p.tgrs"


def _cols_plan(d: Path, mutate: str) -> str:
    """A hand-built plan with a column-split unit (tests/runtime/_cols_plans.py: conv -> relu -> depthwise/2 -> conv in
    2 x 3 tiles), one field of it broken and the CRC resealed, so only the COLS checks can refuse it."""
    import struct
    import sys

    sys.path.insert(0, str(REPO / "tests" / "runtime"))
    import _cols_plans as C

    from tigris.emit import format as TF
    from tigris.emit.writer import seal

    g = C.chain([("conv", 3, 1, 1, 1), ("relu",), ("dw", 3, 2, 1, 1), ("conv", 1, 1, 1, 0)], True, 9, 13, 4, 0)
    data = bytearray(C.emit_cols(g, C.lower_all(g), 2, 3)[0])
    units = struct.unpack_from("<I", data, TF.DIR_OFFSET + (int(TF.SectionId.UNITS) - 1) * TF.SECTION.size + 4)[0]
    rows = struct.unpack_from("<I", data, TF.DIR_OFFSET + (int(TF.SectionId.TILE_ROWS) - 1) * TF.SECTION.size + 4)[0]
    u = TF.UNIT.unpack(data, units)
    if mutate == "band":  # the first column band of tile 0 (placement 0, the input x) starts before column 0
        struct.pack_into("<i", data, rows + 8 * (int(u["rows_first"]) + int(u["tiles"]) * int(u["place_count"])), -1)
    else:  # COLS together with ROLLING
        struct.pack_into("<I", data, units, int(u["flags"]) | int(TF.UnitFlag.ROLLING))
    (d / "c.tgrs").write_bytes(seal(data))
    return "c.tgrs"


def _cols_concat_plan(d: Path) -> str:
    """A real plan of a small SqueezeNet-like fire model with a channel Concat in a column-split unit
    (tests/runtime/test_rt_cols_concat.py), that Concat's axis set to W and the CRC resealed: only the COLS op check
    can refuse it."""
    import sys

    sys.path.insert(0, str(REPO / "tests" / "runtime"))
    import test_rt_cols_concat as T

    (d / "cc.tgrs").write_bytes(T.concat_axis_w(T.concat_cols_plan(d)))
    return "cc.tgrs"


def _dw_pieces_plan(d: Path, mutate: str) -> str:
    """A plan whose depthwise conv runs over its own input in pieces (tests/runtime/test_rt_dw_in_place.py's
    expand -> depthwise 3x3 -> project block, int8, untiled), its op record's ip_rows or scratch broken and the CRC
    resealed, so only the in-place checks can refuse it."""
    import struct
    import sys

    sys.path.insert(0, str(REPO / "tests" / "runtime"))
    import _rt_plans as P
    from test_rt_dw_in_place import dw_graph

    from tigris.emit import format as TF
    from tigris.emit import read_plan
    from tigris.emit.writer import seal
    from tigris.ops import kind

    data = bytearray(P.compile_graph(dw_graph(True, 12, 24, 3, 1, (1, 1, 1, 1)), 1 << 20, xip=True)[0])
    ops = struct.unpack_from("<I", data, TF.DIR_OFFSET + (int(TF.SectionId.OPS) - 1) * TF.SECTION.size + 4)[0]
    k = next(j for j, op in enumerate(read_plan(bytes(data)).ops) if op.kind == "dwconv")
    rec = ops + k * TF.OP.size
    if mutate == "stall":  # one row of temporary: at stride 1 row j must wait for row j + 1, so the schedule stalls
        struct.pack_into("<i", data, rec + 40 + 4 * kind("dwconv").PARAMS.index("ip_rows"), 1)
    elif mutate == "overlap":  # the scratch moved onto the depthwise conv's own output buffer (same size)
        plan = read_plan(bytes(data))
        out = plan.tensors[plan.ops[k].output].root
        home = next(pl for pl in plan.units[plan.unit_of_op(k)].placements if pl.tensor == out)
        struct.pack_into("<I", data, rec + TF.OP.offsets()["scratch_off"], home.offset)
    else:  # a scratch smaller than the two-row temporary
        struct.pack_into("<I", data, rec + 172, 16)
    (d / "w.tgrs").write_bytes(seal(data))
    return "w.tgrs"


def _overwrite_plan(d: Path) -> str:
    """A plan whose first unit writes its output over its dying input's slow home (tests/runtime/test_rt_overwrite.py),
    that output's home moved onto the input's tail and the CRC resealed, so only the overwrite check can refuse it."""
    import sys

    sys.path.insert(0, str(REPO / "tests" / "runtime"))
    from test_rt_overwrite import overwrite_mutants

    data = next(m for what, m, code in overwrite_mutants() if code == "ERR_OVERWRITE")
    (d / "o.tgrs").write_bytes(data)
    return "o.tgrs"


def _gap_plan(d: Path, mutate: str) -> str:
    """An untiled int8 GlobalAveragePool plan whose TFLM_AVG parameter (TFLM's AVERAGE_POOL_2D over the whole image)
    is broken and the CRC resealed: 2 (not a flag) under the tflm numerics, or 1 under the onnx numerics."""
    import struct
    import sys

    sys.path.insert(0, str(REPO / "tests" / "runtime"))
    import _rt_plans as P

    from tigris.emit import format as TF
    from tigris.emit import read_plan
    from tigris.emit.writer import seal
    from tigris.ir import AnalyzedGraph, Op, QuantParam, Tensor
    from tigris.ops import kind

    q = QuantParam(np.array([0.05], np.float32), np.array([-3], np.int64))
    tflm = mutate == "two"
    tensors = {"x": Tensor("x", (1, 8, 5, 5), "int8", q, "nhwc"), "y": Tensor("y", (1, 8, 1, 1), "int8", q, "nhwc")}
    g = AnalyzedGraph("gap", tensors, [Op("gap", "GlobalAveragePool", ("x",), ("y",),
                                          {"tflm_avgpool": 1} if tflm else {})], ["x"], ["y"], {}, {},
                      numerics="tflm" if tflm else "onnx")
    data = bytearray(P.compile_graph(g, 1 << 20)[0])
    ops = struct.unpack_from("<I", data, TF.DIR_OFFSET + (int(TF.SectionId.OPS) - 1) * TF.SECTION.size + 4)[0]
    k = next(j for j, op in enumerate(read_plan(bytes(data)).ops) if op.kind == "gap")
    struct.pack_into("<i", data, ops + k * TF.OP.size + 40 + 4 * kind("gap").PARAMS.index("TFLM_AVG"), 2 if tflm else 1)
    (d / "g.tgrs").write_bytes(seal(data))
    return "g.tgrs"


def _index_plan(d: Path, which: str) -> str:
    """An untiled index-op plan with one kernel parameter broken and the CRC resealed: an ArgMax whose PIXEL is 2
    (not a flag), or a per-class NonMaxSuppression whose class C0 lies past the CT classes its output counts."""
    import struct
    import sys

    sys.path.insert(0, str(REPO / "tests" / "runtime"))
    import _rt_plans as P

    from tigris.emit import format as TF
    from tigris.emit import read_plan
    from tigris.emit.writer import seal
    from tigris.ir import AnalyzedGraph, Op, Tensor
    from tigris.ops import kind

    if which == "argmax":
        tensors = {"x": Tensor("x", (1, 4, 5, 5), "float32", None, "nhwc"),
                   "y": Tensor("y", (1, 1, 5, 5), "int32", None, "nhwc")}
        ops = [Op("am", "ArgMax", ("x",), ("y",), {"axis": 1, "keepdims": 1, "select_last_index": 0})]
        ins, k_name, param, value = ["x"], "argmax", "PIXEL", 2
    else:
        tensors = {"b": Tensor("b", (1, 6, 4), "float32", None, "nwc"),
                   "s": Tensor("s", (1, 1, 6), "float32", None, "nwc"),
                   "y": Tensor("y", (4, 3), "int32", None, "plain")}
        ops = [Op("nms", "NonMaxSuppression", ("b", "s"), ("y",),
                  {"max_per_class": 2, "iou_threshold": 0.5, "score_threshold": None, "center_point_box": 0,
                   "class0": 0, "classes": 2})]
        ins, k_name, param, value = ["b", "s"], "nms", "C0", 2
    g = AnalyzedGraph("idx", tensors, ops, ins, ["y"], {}, {})
    data = bytearray(P.compile_graph(g, 1 << 20)[0])
    at = struct.unpack_from("<I", data, TF.DIR_OFFSET + (int(TF.SectionId.OPS) - 1) * TF.SECTION.size + 4)[0]
    k = next(j for j, op in enumerate(read_plan(bytes(data)).ops) if op.kind == k_name)
    struct.pack_into("<i", data, at + k * TF.OP.size + 40 + 4 * kind(k_name).PARAMS.index(param), value)
    (d / "i.tgrs").write_bytes(seal(data))
    return "i.tgrs"


def _region_plan(d: Path) -> str:
    """A one-region plan (tests/runtime/test_rt_one_region.py) with a live slow home moved below its unit's buffers
    and the CRC resealed, so only the one-region check can refuse it."""
    import sys

    sys.path.insert(0, str(REPO / "tests" / "runtime"))
    from test_rt_one_region import region_mutants

    (d / "r.tgrs").write_bytes(region_mutants()[0][1])
    return "r.tgrs"


def _empty(d: Path, name: str) -> str:
    (d / name).write_bytes(b"")
    return name


def _npy(d: Path, name: str, a: np.ndarray) -> str:
    np.save(d / name, a)
    return name


def _mnist_input(d: Path, dtype=np.float32, name="in.npy") -> str:
    return _npy(d, name, np.zeros((1, 1, 28, 28), dtype))


def _npy_header_claims(d: Path, shape: str) -> str:
    """A .npy file whose header claims ``shape`` float32 elements but holds 16 bytes."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
    header += " " * (118 - len(header)) + "\n"
    (d / "big.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() +
                                b"\0" * 16)
    return "big.npy"


def _chain(n: int) -> onnx.ModelProto:
    nodes, prev = [], "x"
    for i in range(n):
        o = "y" if i == n - 1 else f"t{i}"
        nodes.append(helper.make_node("Relu", [prev], [o], name=f"r{i}"))
        prev = o
    return model(nodes, [vi("x", [1, 8])], [vi("y", [1, 8])])


def _with(m: onnx.ModelProto, edit: Callable[[onnx.ModelProto], None]) -> onnx.ModelProto:
    edit(m)
    return m


def _dim(value: int) -> Callable[[onnx.ModelProto], None]:
    def edit(m: onnx.ModelProto) -> None:
        m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = value

    return edit


def _const_of_shape(shape: list[int]) -> onnx.ModelProto:
    s = numpy_helper.from_array(np.array(shape, np.int64), "s")
    n1 = helper.make_node("ConstantOfShape", ["s"], ["c"], name="cos",
                          value=numpy_helper.from_array(np.array([1.0], np.float32)))
    n2 = helper.make_node("Add", ["x", "c"], ["y"], name="add")
    return model([n1, n2], [vi("x", [1, 8])], [vi("y", ["a", "b"])], [s])


def _reshape_to(shape: list[int]) -> onnx.ModelProto:
    s = numpy_helper.from_array(np.array(shape, np.int64), "s")
    n = helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape0")
    return model([n], [vi("x", [1, 8])], [vi("y", ["a", "b"])], [s])


def _symlink_out(d: Path) -> list[str]:
    _mnist(d)
    (d / "real.tgrs").write_bytes(b"old")
    (d / "link.tgrs").symlink_to("real.tgrs")
    return ["compile", "m.onnx", "-m", "1M", "-o", "link.tgrs"]


CASES: list[Case] = [
    # -- item 1: the output must never replace an input
    Case("compile-o-is-the-model", lambda d: ["compile", _mnist(d), "-m", "1M", "-o", "m.onnx"], 2, "m.onnx"),
    Case("compile-o-is-the-model-via-dotdot", lambda d: ["compile", _mnist(d), "-m", "1M", "-o", "./../" + d.name +
                                                         "/m.onnx"], 2, "overwrite"),
    Case("compile-plan-default-output", lambda d: ["compile", _plan(d), "-m", "1M"], 2, "p.tgrs"),
    Case("run-output-is-the-plan", lambda d: ["run", _plan(d), "--input", f"Input3={_mnist_input(d)}", "--output",
                                              "p.tgrs"], 2, "p.tgrs"),
    Case("run-output-is-the-input-array", lambda d: ["run", _plan(d), "--input", f"Input3={_mnist_input(d)}",
                                                     "--output", "in.npy"], 2, "in.npy"),
    Case("codegen-header-is-the-plan", lambda d: (_plan(d), (d / "p.tgrs").rename(d / "p.h"),
                                                  ["codegen", "p.h", "-o", "p.c"])[-1], 2, "p.h"),
    Case("codegen-output-is-the-plan", lambda d: ["codegen", _plan(d), "-o", "p.tgrs"], 2, "p.tgrs"),
    Case("compile-o-symlink-to-model", lambda d: (_mnist(d), (d / "l.tgrs").symlink_to("m.onnx"),
                                                  ["compile", "m.onnx", "-m", "1M", "-o", "l.tgrs"])[-1], 2, "l.tgrs"),
    # -- item 2: limits at load
    Case("input-dim-2^31", lambda d: ["analyze", save(_with(relu(), _dim(2**31)), d), "-m", "1M"], 2, "x"),
    Case("input-dim-2^62", lambda d: ["analyze", save(_with(relu(), _dim(2**62)), d), "-m", "1M"], 2, "x"),
    Case("input-bytes-over-u32", lambda d: ["analyze", save(_with(relu(), _dim(2**30 + 1)), d), "-m", "1M"], 2, "x"),
    Case("conv-pads-2^31-1", lambda d: ["analyze", save(conv(pads=(2**31 - 1,) * 4), d), "-m", "1M"], 2, "y"),
    Case("conv-pads-2^20", lambda d: ["analyze", save(conv(pads=(2**20,) * 4), d), "-m", "1M"], 2, "y"),
    Case("input-shape-2^31", lambda d: ["analyze", save(relu((1, 3, "h", 16), (1, 3, "h", 16)), d), "-m", "1M",
                                        "--input-shape", "x:1x3x2147483648x16"], 2, "x"),
    Case("input-shape-bytes", lambda d: ["analyze", save(relu((1, 3, "h", 16), (1, 3, "h", 16)), d), "-m", "1M",
                                         "--input-shape", "x:1x3x1000000000x16"], 2, "x"),
    Case("constant-of-shape-huge", lambda d: ["analyze", save(_const_of_shape([2**40, 8]), d), "-m", "1M"], 2, ""),
    Case("reshape-to-negative", lambda d: ["analyze", save(_reshape_to([-2, 8]), d), "-m", "1M"], 2, ""),
    # a tall tensor is a valid model: bounded planning time, it fits or says why not
    Case("tall-tensor-plans", lambda d: ["analyze", save(conv(shape=(1, 1, 2**18, 1), pads=(1, 1, 1, 1)), d),
                                         "-m", "64K"], 0, "", kind="ok"),
    Case("tall-tensor-tiny-budget", lambda d: ["analyze", save(conv(shape=(1, 1, 2**22, 1), pads=(1, 1, 1, 1)), d),
                                               "-m", "2K"], 1, "", kind="ok", notes="needs 21,184 tiles: does not fit"),
    Case("taller-than-max-tiles", lambda d: ["analyze", save(conv(shape=(1, 1, 2**24, 1), pads=(1, 1, 1, 1)), d),
                                             "-m", "2K"], 1, "", kind="ok", notes="over 16,384 tiles: does not fit"),
    # -- item 3: planning time stays bounded on long graphs
    Case("chain-2000", lambda d: ["analyze", save(_chain(2000), d), "-m", "1M"], 0, "", kind="ok"),
    # -- item 4: a declared output shape the graph does not compute
    Case("declared-output-shape-wrong", lambda d: ["compile", save(relu((1, 8), (1, 5)), d), "-m", "1M"], 2, "y"),
    Case("declared-output-rank-wrong", lambda d: ["compile", save(relu((1, 8), (8,)), d), "-m", "1M"], 2, "y"),
    # -- item 5: bad input is exit 2, never 3
    Case("o-in-missing-folder", lambda d: ["compile", _mnist(d), "-m", "1M", "-o", "nope/out.tgrs"], 2, "nope"),
    Case("o-under-a-file", lambda d: ["compile", _mnist(d), "-m", "1M", "-o", "m.onnx/out.tgrs"], 2, "out.tgrs"),
    Case("o-in-proc", lambda d: ["compile", _mnist(d), "-m", "1M", "-o", "/proc/tigris.tgrs"], 2, "tigris.tgrs"),
    Case("o-is-a-folder", lambda d: ["compile", _mnist(d), "-m", "1M", "-o", "."], 2, ""),
    Case("run-empty-npy", lambda d: ["run", _plan(d), "--input", f"Input3={_empty(d, 'e.npy')}",
                                     "--output", "o.npz"], 2, "e.npy"),
    Case("run-npy-header-not-literal", lambda d: ["run", _plan(d), "--input",
                                                  f"Input3={_npy_header_claims(d, '(2**48,)')}",
                                           "--output", "o.npz"], 2, "big.npy"),
    Case("run-npy-claims-3PiB-literal", lambda d: ["run", _plan(d), "--input",
                                                   f"Input3={_npy_header_claims(d, '(844424930131968,)')}",
                                                   "--output", "o.npz"], 2, "big.npy"),
    Case("run-npy-garbage", lambda d: ["run", _plan(d), "--input",
                                       f"Input3={(d / 'g.npy').write_bytes(b'garbage!' * 9) and 'g.npy'}",
                                       "--output", "o.npz"], 2, "g.npy"),
    Case("run-npy-missing", lambda d: ["run", _plan(d), "--input", "Input3=none.npy", "--output", "o.npz"], 2,
         "none.npy"),
    Case("verify-seed-negative", lambda d: ["verify", _mnist(d), "-m", "1M", "--seed", "-1"], 2, "--seed"),
    Case("verify-int32-input", lambda d: ["verify", _mnist(d), "-m", "1M", "--input",
                                          f"Input3={_mnist_input(d, np.int32)}"], 0, "", kind="ok",
         notes="int32 to float32 is a value-preserving cast (docs/cli.md, input rule)"),
    Case("verify-bool-input", lambda d: ["verify", _mnist(d), "-m", "1M", "--input",
                                         f"Input3={_mnist_input(d, np.bool_)}"], 2, "Input3"),
    Case("verify-duplicate-node-names", lambda d: ["verify", save(model(
        [helper.make_node("Relu", ["x"], ["t"], name="same"), helper.make_node("Relu", ["t"], ["y"], name="same")],
        [vi("x", [1, 8])], [vi("y", [1, 8])]), d), "-m", "1M"], 2, "m.onnx"),
    Case("auto-pad-bogus", lambda d: ["verify", save(conv(auto_pad="BOGUS"), d), "-m", "1M"], 2, "conv0"),
    Case("auto-pad-bogus-compile", lambda d: ["compile", save(conv(auto_pad="BOGUS"), d), "-m", "1M"], 2, "conv0"),
    Case("opset-99", lambda d: ["verify", save(_with(relu(), lambda m: setattr(m.opset_import[0], "version", 99)),
                                               d), "-m", "1M"], 2, "m.onnx"),
    Case("opset-0", lambda d: ["analyze", save(_with(relu(), lambda m: setattr(m.opset_import[0], "version", 0)),
                                               d), "-m", "1M"], 2, "m.onnx"),
    # -- item 6: wrong verdicts
    Case("no-outputs", lambda d: ["analyze", save(model([helper.make_node("Relu", ["x"], ["y"])],
                                                        [vi("x", [1, 8])], []), d), "-m", "1M"], 2, "m"),
    Case("output-is-input", lambda d: ["analyze", save(model([], [vi("x", [1, 8])], [vi("x", [1, 8])]), d), "-m",
                                       "1M"], 2, "x"),
    Case("inspect-empty-file", lambda d: ["inspect", _empty(d, "e.onnx")], 2,
         "e.onnx"),
    Case("inspect-dev-null", lambda d: ["inspect", "/dev/null"], 2, "/dev/null"),
    Case("analyze-dev-null", lambda d: ["analyze", "/dev/null", "-m", "1M"], 2, "not a regular file (/dev/null)"),
    Case("dim-value-negative", lambda d: ["analyze", save(_with(relu(), _dim(-1)), d), "-m", "1M"], 2, "x"),
    Case("output-dim-negative", lambda d: ["analyze", save(relu((1, 8), (1, -3)), d), "-m", "1M"], 2, "y"),
    Case("nan-weights", lambda d: ["compile", save(conv(w_value=np.full((1, 1, 3, 3), np.nan, np.float32)), d),
                                   "-m", "1M"], 0, "w", kind="warning", outputs=("m.tgrs",)),
    Case("inf-weights", lambda d: ["compile", save(conv(w_value=np.full((1, 1, 3, 3), np.inf, np.float32)), d),
                                   "-m", "1M"], 0, "w", kind="warning", outputs=("m.tgrs",)),
    # -- item 7: messages
    Case("usage-missing-budget", lambda d: ["analyze", _mnist(d)], 2, "tigris analyze"),
    Case("usage-unknown-option", lambda d: ["compile", _mnist(d), "-m", "1M", "--bogus"], 2, "--bogus"),
    Case("usage-unknown-command", lambda d: ["frobnicate"], 2, "frobnicate"),
    Case("usage-bad-choice", lambda d: ["compile", _mnist(d), "-m", "1M", "-c", "zip"], 2, "-c"),
    Case("bad-size", lambda d: ["analyze", _mnist(d), "-m", "lots"], 2, "lots"),
    Case("dangling-input", lambda d: ["analyze", save(model([helper.make_node("Relu", ["zz"], ["y"], name="lost")],
                                                            [vi("x", [1, 8])], [vi("y", [1, 8])]), d), "-m", "1M"],
         2, "lost"),
    Case("cycle", lambda d: ["analyze", save(model([helper.make_node("Add", ["x", "b"], ["a"], name="n_a"),
                                                    helper.make_node("Relu", ["a"], ["b"], name="n_b")],
                                                   [vi("x", [1, 8])], [vi("b", [1, 8])]), d), "-m", "1M"], 2, "n_"),
    Case("unresolvable-shape-names-node", lambda d: ["analyze", save(model(
        [helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")], [vi("x", [1, 8]), vi("s", [2], TensorProto.INT64)],
        [vi("y", ["a", "b"])]), d), "-m", "1M"], 2, "y"),
    Case("plan-truncated-names-file", lambda d: (_plan(d),
                                                 (d / "p.tgrs").write_bytes((d / "p.tgrs").read_bytes()[:100]),
                                                 ["run", "p.tgrs", "--input", f"Input3={_mnist_input(d)}",
                                                  "--output", "o.npz"])[-1], 2, "p.tgrs"),
    Case("cols-band-before-column-0-inspect", lambda d: ["inspect", _cols_plan(d, "band")], 2, "TGRS_ERR_TILE_COLS"),
    Case("cols-band-before-column-0-run", lambda d: ["run", _cols_plan(d, "band"), "--input",
                                                     f"x={_npy(d, 'x.npy', np.zeros((1, 4, 9, 13), np.int8))}",
                                                     "--output", "o.npz"], 2, "TGRS_ERR_TILE_COLS"),
    Case("cols-with-rolling-inspect", lambda d: ["inspect", _cols_plan(d, "rolling")], 2, "TGRS_ERR_UNIT"),
    Case("cols-concat-along-w-inspect", lambda d: ["inspect", _cols_concat_plan(d)], 2, "TGRS_ERR_COLS_OP"),
    Case("gap-tflm-avg-not-a-flag-inspect", lambda d: ["inspect", _gap_plan(d, "two")], 2, "TGRS_ERR_PARAM"),
    Case("gap-tflm-avg-not-a-flag-run", lambda d: ["run", _gap_plan(d, "two"), "--input",
                                                   f"x={_npy(d, 'x.npy', np.zeros((1, 8, 5, 5), np.int8))}",
                                                   "--output", "o.npz"], 2, "TGRS_ERR_PARAM"),
    Case("argmax-pixel-not-a-flag-inspect", lambda d: ["inspect", _index_plan(d, "argmax")], 2, "TGRS_ERR_PARAM"),
    Case("nms-class-past-its-classes-inspect", lambda d: ["inspect", _index_plan(d, "nms")], 2, "TGRS_ERR_PARAM"),
    Case("gap-tflm-avg-under-onnx-numerics-inspect", lambda d: ["inspect", _gap_plan(d, "onnx")], 2,
         "TGRS_ERR_PARAM"),
    Case("dw-in-place-stalls-inspect", lambda d: ["inspect", _dw_pieces_plan(d, "stall")], 2, "TGRS_ERR_PARAM"),
    Case("dw-in-place-stalls-run", lambda d: ["run", _dw_pieces_plan(d, "stall"), "--input",
                                              f"x={_npy(d, 'x.npy', np.zeros((1, 1, 12, 12), np.int8))}",
                                              "--output", "o.npz"], 2, "TGRS_ERR_PARAM"),
    Case("dw-in-place-small-scratch-inspect", lambda d: ["inspect", _dw_pieces_plan(d, "scratch")], 2,
         "TGRS_ERR_SCRATCH"),
    Case("scratch-over-an-operand-inspect", lambda d: ["inspect", _dw_pieces_plan(d, "overlap")], 2,
         "TGRS_ERR_SCRATCH_OVERLAP"),
    Case("scratch-over-an-operand-run", lambda d: ["run", _dw_pieces_plan(d, "overlap"), "--input",
                                                   f"x={_npy(d, 'x.npy', np.zeros((1, 1, 12, 12), np.int8))}",
                                                   "--output", "o.npz"], 2, "TGRS_ERR_SCRATCH_OVERLAP"),
    Case("overwrite-still-read-inspect", lambda d: ["inspect", _overwrite_plan(d)], 2, "TGRS_ERR_OVERWRITE"),
    Case("overwrite-still-read-run", lambda d: ["run", _overwrite_plan(d), "--input",
                                                f"x={_npy(d, 'x.npy', np.zeros((1, 4, 16, 16), np.int8))}",
                                                "--output", "o.npz"], 2, "TGRS_ERR_OVERWRITE"),
    Case("one-region-home-below-buffers-inspect", lambda d: ["inspect", _region_plan(d)], 2, "TGRS_ERR_REGION"),
    Case("plan-garbage-inspect", lambda d: ["inspect", (d / "p.tgrs").write_bytes(b"TGRS" + b"\xff" * 60) and "p.tgrs"],
         2, "p.tgrs"),
    Case("codegen-garbage-plan", lambda d: ["codegen", (d / "p.tgrs").write_bytes(b"TGRS" + b"\0" * 60) and "p.tgrs",
                                            "-o", "x.c"], 2, "p.tgrs"),
    Case("run-unknown-input-name", lambda d: ["run", _plan(d), "--input", f"Input3={_mnist_input(d)}", "--input",
                                              f"Nope={_mnist_input(d, name='n.npy')}", "--output", "o.npz"], 2,
         "Nope"),
    Case("run-float64-input", lambda d: ["run", _plan(d), "--input", f"Input3={_mnist_input(d, np.float64)}",
                                         "--output", "o.npz"], 0, "", kind="ok", outputs=("o.npz",)),
    Case("run-bool-input", lambda d: ["run", _plan(d), "--input", f"Input3={_mnist_input(d, np.bool_)}", "--output",
                                      "o.npz"], 2, "Input3"),
    Case("run-int32-input", lambda d: ["run", _plan(d), "--input", f"Input3={_mnist_input(d, np.int32)}", "--output",
                                       "o.npz"], 0, "", kind="ok", outputs=("o.npz",)),
    Case("run-float-for-uint8", lambda d: ["run", _plan(d), "--input", f"Input3={_mnist_input(d, np.complex64)}",
                                           "--output", "o.npz"], 2, "Input3"),
    Case("run-wrong-shape", lambda d: ["run", _plan(d), "--input",
                                       f"Input3={_npy(d, 'w.npy', np.zeros((1, 28), np.float32))}",
                                       "--output", "o.npz"], 2, "Input3"),
    Case("run-missing-input", lambda d: ["run", _plan(d), "--output", "o.npz"], 2, "Input3"),
    Case("run-input-twice", lambda d: ["run", _plan(d), "--input", f"Input3={_mnist_input(d)}", "--input",
                                       "Input3=in.npy", "--output", "o.npz"], 2, "Input3"),
    # -- item 8: files
    Case("o-empty", lambda d: ["compile", _mnist(d), "-m", "1M", "-o", ""], 2, "-o"),
    Case("run-output-empty", lambda d: ["run", _plan(d), "--input", f"Input3={_mnist_input(d)}", "--output", ""], 2,
         "output"),
    Case("codegen-o-empty", lambda d: ["codegen", _plan(d), "-o", ""], 2, "-o"),
    Case("o-symlink-writes-through", _symlink_out, 0, "", kind="ok", changes=("real.tgrs",)),
    # -- more: unreadable and foreign files
    Case("model-missing", lambda d: ["analyze", "nothing.onnx", "-m", "1M"], 2, "nothing.onnx"),
    Case("model-garbage", lambda d: ["analyze", (d / "g.onnx").write_bytes(b"\x08\xff\xff\xff\xff" * 50) and "g.onnx",
                                     "-m", "1M"], 2, "g.onnx"),
    Case("model-truncated", lambda d: ["analyze", (d / "t.onnx").write_bytes(MNIST.read_bytes()[:3000]) and "t.onnx",
                                       "-m", "1M"], 2, "t.onnx"),
    Case("model-is-a-folder", lambda d: ["analyze", ".", "-m", "1M"], 2, "."),
    Case("budget-zero", lambda d: ["compile", _mnist(d), "-m", "0"], 1, "m.onnx"),
    Case("strides-zero", lambda d: ["analyze", save(conv(strides=(0, 0)), d), "-m", "1M"], 2, ""),
    Case("unknown-input-shape-name", lambda d: ["analyze", _mnist(d), "-m", "1M", "--input-shape", "nope:1x1"], 2,
         "nope"),
    Case("bad-input-shape-spec", lambda d: ["analyze", _mnist(d), "-m", "1M", "--input-shape", "Input3:1xAx2"], 2,
         "--input-shape"),
]
