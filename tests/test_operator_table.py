"""The operator table of docs/operators.md is written from the kind registry (python -m tigris.ops.doc) and must be
current: a kind added, an ONNX operator declared or a rewrite added without regenerating the doc fails here."""
from __future__ import annotations

from pathlib import Path

import onnx.defs
import pytest

from tigris.ops import KINDS, doc, kind

DOC = Path(__file__).resolve().parents[1] / "docs" / "operators.md"


def test_operator_table_is_current():
    text = DOC.read_text()
    assert doc.BEGIN in text and doc.END in text, "docs/operators.md has no operator table markers"
    assert doc.render(text) == text, "docs/operators.md is stale: run python -m tigris.ops.doc docs/operators.md"


def test_check_mode_reports_a_stale_table(tmp_path, capsys):
    stale = tmp_path / "operators.md"
    text = DOC.read_text()
    stale.write_text(text.replace("| Conv | conv |", "| Conv | convx |"))
    assert doc.main([str(stale), "--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert stale.read_text() != text  # --check writes nothing
    assert doc.main([str(stale)]) == 0
    assert stale.read_text() == text  # regenerating restores exactly the checked-in table


def test_regenerating_keeps_the_rest_of_the_file(tmp_path):
    f = tmp_path / "operators.md"
    f.write_text(f"# head\n\n{doc.BEGIN}\nold rows\n{doc.END}\n\n## ONNX conformance\nkept\n")
    assert doc.main([str(f)]) == 0
    out = f.read_text()
    assert out.startswith("# head\n\n" + doc.BEGIN) and out.endswith(doc.END + "\n\n## ONNX conformance\nkept\n")
    assert "old rows" not in out


def test_every_kind_describes_its_onnx_operators():
    for kname, _, _ in KINDS:
        k = kind(kname)
        assert k.ONNX_OPS, f"kind {kname} declares no ONNX_OPS"
        for op in k.ONNX_OPS:
            assert onnx.defs.has(op), f"kind {kname}: {op} is not an ONNX operator"
        for t in k.ir_ops:
            if onnx.defs.has(t):
                assert t in k.ONNX_OPS, f"kind {kname} lowers {t} without describing it in ONNX_OPS"
        exact = k.INT8_EXACTNESS
        for op in k.ONNX_OPS:
            e = exact.get(op, "") if isinstance(exact, dict) else exact
            assert e.startswith(("bit-exact", "<= 1 LSB")), f"kind {kname}, {op}: int8 exactness {e!r}"


def test_kernel_file_is_the_one_defining_the_check(tmp_path):
    assert doc.kernel_file("conv") == "runtime_c/src/kernels/conv.c"
    assert doc.kernel_file("gap") == "runtime_c/src/kernels/pool.c"
    with pytest.raises(doc.TableError, match="tgrs_check_nosuchkind"):
        doc.kernel_file("nosuchkind")


def test_a_kind_lowering_an_undescribed_operator_is_an_error(monkeypatch):
    k = kind("transpose")
    monkeypatch.setattr(type(k), "ir_ops", ("Transpose", "DepthToSpace"))
    with pytest.raises(doc.TableError, match="DepthToSpace"):
        doc.kernel_rows()


def test_rewrites_come_from_the_modules_doing_them():
    rows = {(op, where) for op, _, where in doc.rewrite_rows()}
    assert ("BatchNormalization", "`tigris/passes/bn_fold.py`") in rows
    assert ("QLinearConv", "`tigris/load/qoperator.py`") in rows
    from tigris.load.qoperator import QOPERATOR_OPS

    assert QOPERATOR_OPS <= {op for op, _ in rows}
