"""One home for op knowledge: the planner and the support check ask the op kinds, they never name an op type.

An op type spelled as a string in ``tigris/plan/`` or ``tigris/passes/supported.py`` is a second copy of something a
kind declares (its tiling class, rows needed, MACs, why it is unsupported); this test fails on the first one, so a
new kind needs no edit there."""
from __future__ import annotations

import ast
from pathlib import Path

import onnx.defs

from tigris.ops import KINDS, kind

ROOT = Path(__file__).resolve().parents[1] / "tigris"
CHECKED = sorted((ROOT / "plan").glob("*.py")) + [ROOT / "passes" / "supported.py"]


def _op_types() -> set[str]:
    names = {s.name for s in onnx.defs.get_all_schemas_with_history()}
    for kname, _, _ in KINDS:
        names.update(kind(kname).ir_ops)  # the IR's own op types too (DepthwiseConv, Conv1D, Relu6)
    return names


def _strings(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def test_no_op_type_is_named_outside_the_kinds():
    op_types = _op_types()
    found = []
    for path in CHECKED:
        for line, text in _strings(ast.parse(path.read_text())):
            if text.strip() in op_types:
                found.append(f"{path.relative_to(ROOT.parent)}:{line}: {text!r}")
    assert not found, "op types named outside tigris/ops (ask the kind instead):\n" + "\n".join(found)


def test_the_check_sees_an_op_type(tmp_path):
    """The scan itself finds an op type in a string literal (so an empty result above means something)."""
    assert "Conv" in _op_types() and "DepthwiseConv" in _op_types()
    hits = [t for _, t in _strings(ast.parse('x = op.op_type == "MaxPool"'))]
    assert hits == ["MaxPool"] and hits[0] in _op_types()


def test_every_kind_answers_the_planner():
    """Each registered kind imports and states its tiling class; windowed kinds have a window."""
    for kname, _, _ in KINDS:
        k = kind(kname)
        assert k.TILING in ("spatial", "pointwise", "structural"), kname
        assert k.ir_ops, kname
