"""ONNX's own operator conformance cases (the "node tests" that ship inside the installed ``onnx`` package), run
through the whole compiler and the C runtime.

The cases are written at test time from the installed package (the same thing ``gen_onnx_node_tests.py`` does:
``onnx.backend.test.cmd_tools.generate_data`` pointed at the node cases), so the suite follows the onnx version
that is installed and the repository carries no generated files.

A case is *selected* when its graph is a single operator of ``TARGET_OPS`` whose data tensors are float32 (or, for
the quantized operators, 8-bit integers; for the index operators, int64 indices): those are the operators and dtypes the compiler targets. Inputs that an
operator reads as parameters (weights, shapes, axes, pads, scales...) are baked into the model as initializers,
because a deployed model has them constant; the data inputs stay graph inputs. Each selected case is compiled with
a generous budget, run on the host build of the C runtime and compared with the outputs stored in the case:
float within ``1e-4 x max(1, max|expected|)``, integers within 1 LSB.
"""
from __future__ import annotations

import argparse
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

TARGET_OPS = frozenset(
    """Abs Add ArgMax ArgMin AveragePool BatchNormalization Clip Concat Conv ConvInteger ConvTranspose DepthToSpace
    DequantizeLinear Div Dropout Elu Erf Exp Flatten Gather Gelu Gemm GlobalAveragePool GlobalMaxPool HardSigmoid
    HardSwish Identity LayerNormalization LeakyRelu Log MatMul MatMulInteger Max MaxPool Min Mul Neg
    NonMaxSuppression PRelu Pad Pow QLinearConv QLinearMatMul QuantizeLinear Reciprocal ReduceL2 ReduceMax
    ReduceMean ReduceSum Relu Reshape Resize Selu Sigmoid Slice Softmax Softplus SpaceToDepth Split Sqrt Squeeze
    Sub Tanh TopK Transpose Unsqueeze""".split()
)

# Inputs (by position) that stay activations; every other graph input of the case becomes an initializer.
_ALL_DATA = frozenset("Add Sub Mul Div Max Min Concat MatMul Sum Mean".split())
_QUANT_OPS = frozenset("QuantizeLinear DequantizeLinear QLinearConv QLinearMatMul ConvInteger MatMulInteger".split())
_DATA_DTYPES = {onnx.TensorProto.FLOAT}
# The index operators' outputs (ArgMax/ArgMin, TopK's indices, NonMaxSuppression's selection) are int64 by definition.
_INDEX_OPS = frozenset("ArgMax ArgMin TopK NonMaxSuppression".split())
_INDEX_DTYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.INT64}
_QUANT_DTYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.INT32}

FLOAT_RTOL = 1e-4


def write_cases(out: Path) -> Path:
    """Write every node case of the installed onnx package under ``out/node`` and return that folder."""
    import onnx.backend.test.case.node as node_cases
    import onnx.backend.test.cmd_tools as cmd_tools

    cmd_tools.model_test.collect_testcases = node_cases.collect_testcases
    # many cases draw their inputs from NumPy's global generator: seed it so every run checks the same numbers
    np.random.seed(0)
    cmd_tools.generate_data(argparse.Namespace(output=str(out)))
    return out / "node"


@dataclass
class Case:
    name: str
    op_type: str
    folder: Path


def _data_inputs(node: onnx.NodeProto) -> set[int]:
    if node.op_type in _ALL_DATA:
        return set(range(len(node.input)))
    if node.op_type in ("QLinearMatMul",):
        return {0, 3}
    if node.op_type in ("MatMulInteger",):
        return {0, 1}
    if node.op_type == "NonMaxSuppression":  # boxes and scores; the bounds and thresholds are parameters
        return {0, 1}
    return {0}


def select(node_dir: Path) -> list[Case]:
    """The selected cases, sorted by name."""
    cases = []
    for folder in sorted(p for p in node_dir.iterdir() if p.is_dir()):
        m = onnx.load(str(folder / "model.onnx"))
        if len(m.graph.node) != 1 or m.graph.node[0].op_type not in TARGET_OPS or m.graph.node[0].domain not in ("", "ai.onnx"):
            continue
        op = m.graph.node[0].op_type
        allowed = _QUANT_DTYPES if op in _QUANT_OPS else _INDEX_DTYPES if op in _INDEX_OPS else _DATA_DTYPES
        data = {m.graph.node[0].input[i] for i in _data_inputs(m.graph.node[0]) if i < len(m.graph.node[0].input)}
        vis = [v for v in list(m.graph.input) + list(m.graph.output) if v.name in data or v in m.graph.output]
        if not all(v.type.tensor_type.elem_type in allowed for v in vis):
            continue
        if not (folder / "test_data_set_0").is_dir():
            continue
        cases.append(Case(folder.name, op, folder))
    return cases


def _load_pb(path: Path) -> np.ndarray:
    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def prepare_case(case: Case, work: Path) -> tuple[Path, dict[str, np.ndarray], list[tuple[str, np.ndarray]]]:
    """Bake the parameter inputs of the case into initializers; return the rewritten model, the data inputs and the
    expected outputs (by graph output name, in order)."""
    m = onnx.load(str(case.folder / "model.onnx"))
    node = m.graph.node[0]
    ds = case.folder / "test_data_set_0"
    values = [_load_pb(ds / f"input_{i}.pb") for i in range(len(m.graph.input))]
    data_names = {node.input[i] for i in _data_inputs(node) if i < len(node.input)}
    keep, inputs = [], {}
    for vi, val in zip(list(m.graph.input), values):
        if vi.name in data_names:
            keep.append(vi)
            inputs[vi.name] = val
        else:
            m.graph.initializer.append(numpy_helper.from_array(val, vi.name))
    del m.graph.input[:]
    m.graph.input.extend(keep)
    expected = [(o.name, _load_pb(ds / f"output_{i}.pb")) for i, o in enumerate(m.graph.output)]
    path = work / f"{case.name}.onnx"
    onnx.save(m, str(path))
    return path, inputs, expected


def run_case(case: Case, work: Path) -> tuple[str, str]:
    """(verdict, detail): verdict is ``pass``, ``unsupported`` (the compiler refuses it, exit 2), ``mismatch`` or
    ``error`` (anything else the compiler or runtime raised)."""
    from tigris import api
    from tigris.ir import TigrisError, UnsupportedModelError

    try:
        path, inputs, expected = prepare_case(case, work)
    except Exception as e:  # a case this harness cannot bake is reported, not hidden
        return "error", f"harness: {type(e).__name__}: {e}"
    try:
        compiled = api.compile_model(path, "4M")
        res = api.run_plan(compiled.plan_bytes, inputs)
    except UnsupportedModelError as e:
        why = "; ".join(f"{n.get('op')}: {n.get('reason')}" for n in getattr(e, "nodes", []) or [])
        return "unsupported", " ".join((why or str(e)).split())[:200]
    except TigrisError as e:
        return "error", " ".join(str(e).split())[:200]
    except Exception as e:
        return "error", f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
    for name, want in expected:
        got = np.asarray(res.outputs.get(name))
        if got.shape != want.shape:
            return "mismatch", f"{name}: shape {got.shape} != {want.shape}"
        if want.dtype.kind in "iu":
            err = int(np.abs(got.astype(np.int64) - want.astype(np.int64)).max()) if want.size else 0
            if err > 1:
                return "mismatch", f"{name}: {err} LSB"
        else:
            tol = FLOAT_RTOL * max(1.0, float(np.abs(want).max()) if want.size else 1.0)
            err = float(np.abs(got.astype(np.float64) - want).max()) if want.size else 0.0
            if not err <= tol:
                return "mismatch", f"{name}: max abs err {err:.3g} > {tol:.3g}"
    return "pass", ""


def run_all(tmp: Path) -> dict[str, tuple[str, str, str]]:
    """{case name: (op type, verdict, detail)} for every selected case."""
    node_dir = write_cases(tmp / "cases")
    work = tmp / "work"
    work.mkdir()
    return {c.name: (c.op_type, *run_case(c, work)) for c in select(node_dir)}


DOC_BEGIN = "<!-- conformance:begin (written by tests/conformance/onnx_cases.py --docs) -->"
DOC_END = "<!-- conformance:end -->"


def docs_section(results: dict[str, tuple[str, str, str]]) -> str:
    passed = sum(v[1] == "pass" for v in results.values())
    lines = [
        DOC_BEGIN,
        f"{passed} of {len(results)} selected cases pass (onnx {onnx.__version__}). The cases that do not:",
        "",
        "| case | operator | verdict | reason |",
        "|---|---|---|---|",
    ]
    for name, (op, verdict, detail) in sorted(results.items()):
        if verdict != "pass":
            lines.append(f"| `{name}` | {op} | {verdict} | {detail.replace('|', '/')} |")
    lines.append(DOC_END)
    return "\n".join(lines)


def documented_failures(doc: str) -> dict[str, str]:
    """{case: verdict} of the cases the conformance section of docs/operators.md lists as not passing."""
    if DOC_BEGIN not in doc or DOC_END not in doc:
        return {}
    body = doc.split(DOC_BEGIN, 1)[1].split(DOC_END, 1)[0]
    out = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`"):
            out[cells[0].strip("`")] = cells[2]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--failures", action="store_true", help="print only the cases that do not pass")
    ap.add_argument("--docs", type=Path, help="rewrite the conformance section of this file (docs/operators.md)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        results = run_all(Path(d))
    passed = sum(v[1] == "pass" for v in results.values())
    for name, (op, verdict, detail) in results.items():
        if verdict != "pass" or not args.failures:
            print(f"{name}\t{op}\t{verdict}\t{detail}")
    print(f"# {passed} of {len(results)} selected cases pass", flush=True)
    if args.docs:
        text = args.docs.read_text() if args.docs.exists() else ""
        section = docs_section(results)
        if DOC_BEGIN in text and DOC_END in text:
            head, rest = text.split(DOC_BEGIN, 1)
            text = head + section + rest.split(DOC_END, 1)[1]
        else:
            text = text.rstrip("\n") + "\n\n" + section + "\n"
        args.docs.write_text(text)
    # onnx's case generator leaves worker state that can make interpreter shutdown slow; nothing is left to flush
    os._exit(0)


if __name__ == "__main__":
    main()
