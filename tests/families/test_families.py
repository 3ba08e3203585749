"""Model families TiGrIS is judged on but has not seen, built here (tests/families/builders.py: seeded random weights,
small shapes), float and ONNX Runtime static-quantized QDQ in both activation types (QUInt8, ORT's default, and
QInt8) with per-channel and per-tensor weights, verified on the host C runtime with ``tigris.api.verify``.

Each model is verified at a generous budget (4M, one stage) and at 1.3x its smallest fast budget (found with
``tigris.api.analyze``), which forces stages and tiles; the float and QUInt8 per-channel variants also with ``--xip``
and with ``-c lz4`` at that small budget. Tolerances are verify's own pass criteria (docs/cli.md "Pass criteria"):
float outputs within 1e-4 x max(1, max|ref|) of ONNX Runtime and of the NumPy reference; quantized models bit-exact
against the reference (a float tail after an in-graph dequantize to the float tolerance), int8 outputs within 1 LSB
of ONNX Runtime, float outputs with cosine >= 0.99 against ONNX Runtime.

Features the runtime does not have (MaxPool's Indices output) must be reported by ``tigris analyze`` as unsupported nodes with exit 2.
Writes only to pytest's tmp dirs.
"""
from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from tigris import api

sys.path.insert(0, str(Path(__file__).parent))
import builders  # noqa: E402

# ORT's quantizer logs advice (pre-processing, per-channel axis of rank-1 BatchNorm parameters) at WARNING.
logging.getLogger().setLevel(logging.ERROR)

VARIANTS = ("f32", "uint8_pc", "uint8_pt", "int8_pc", "int8_pt")
FULL = ("f32", "uint8_pc")  # variants also verified with --xip and -c lz4 at the small budget
GENEROUS = "4M"
SMALL_FACTOR = 1.3


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("families")


def _model_path(model_dir: Path, family: str, variant: str, table=builders.FAMILIES) -> Path:
    """Build (once per module) the float model and the requested quantized variant."""
    fp = model_dir / f"{family}.onnx"
    if not fp.exists():
        onnx.save(table[family](), str(fp))
    if variant == "f32":
        return fp
    qp = model_dir / f"{family}_{variant}.onnx"
    if not qp.exists():
        act, gran = variant.split("_")
        builders.quantize(fp, qp, act, gran == "pc")
    return qp


def _check(r: dict, what: str) -> None:
    assert r["pass"], f"{what}: {r['outputs']}"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("family", sorted(builders.FAMILIES))
def test_family_verifies(model_dir, family, variant):
    path = _model_path(model_dir, family, variant)
    shapes = {"x": builders.input_shape(onnx.load(str(path)))}
    _check(api.verify(path, GENEROUS, input_shapes=shapes), f"{path.name} at {GENEROUS}")

    probe = api.analyze(path, 64, input_shapes=shapes, emit=False)
    assert not probe.fits and probe.min_fast_budget, probe.reason
    small = int(probe.min_fast_budget * SMALL_FACTOR)
    r = api.verify(path, small, input_shapes=shapes)
    _check(r, f"{path.name} at {small}")
    # The small budget must really constrain the plan: more than one stage, or a tiled stage. (The dense models have
    # no spatial op to tile and fit one stage at any budget that holds their largest Gemm.)
    if family not in ("mlp", "dense_ae"):
        assert len(r["plan"]["stages"]) > 1 or r["plan"]["tiling"]["tiled_stages"] > 0, r["plan"]["stages"]
    if variant in FULL:
        _check(api.verify(path, small, input_shapes=shapes, xip=True), f"{path.name} at {small} --xip")
        _check(api.verify(path, small, input_shapes=shapes, compression="lz4"), f"{path.name} at {small} -c lz4")


def test_dynamic_batch_binds_to_one_without_input_shape(model_dir):
    """A dim_param batch needs no --input-shape: the CLI binds it to 1 and verify passes (exit 0)."""
    path = _model_path(model_dir, "ae_dyn", "f32")
    assert onnx.load(str(path)).graph.input[0].type.tensor_type.shape.dim[0].dim_param
    r = subprocess.run([sys.executable, "-m", "tigris.cli", "verify", str(path), "-m", GENEROUS, "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pass"]


def _analyze_cli(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tigris.cli", "analyze", str(path), "-m", GENEROUS, "--json"],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("family,variant,op", [
    ("maxpool_indices", "f32", "MaxPool"),
    ("maxpool_indices", "uint8_pc", "MaxPool"),
])
def test_unsupported_reported_cleanly(model_dir, family, variant, op):
    """No traceback, no wrong numbers: exit 2 and the node listed under "unsupported" in the JSON report."""
    path = _model_path(model_dir, family, variant, builders.UNSUPPORTED)
    r = _analyze_cli(path)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    report = json.loads(r.stdout)
    assert report["fits"] is False
    assert [u["op"] for u in report["unsupported"]] == [op]



# Every family has a QOperator twin: the list is the registry itself, so a family added to builders.FAMILIES is
# verified in ORT's QOperator format too.
QOPERATOR_FAMILIES = tuple(sorted(builders.FAMILIES))


@pytest.mark.parametrize("activation", ["uint8", "int8"])
@pytest.mark.parametrize("family", QOPERATOR_FAMILIES)
def test_qoperator_format_verifies(model_dir, family, activation):
    """ORT's QOperator format (QLinearConv, QLinearMatMul, com.microsoft QLinearAdd/Mul/Concat/Sigmoid/Softmax/
    GlobalAveragePool/AveragePool/LeakyRelu, QGemm; MaxPool/Reshape/Resize... on the 8-bit tensors) is rewritten to
    QDQ at load and verifies like the QDQ twins: at 4M and at 1.3x the smallest fast budget. Chains ORT leaves in
    float between 8-bit tensors (MobileNetV3's HardSwish -> GlobalAveragePool, PRelu -> Pad) run on the float kernels
    (float_tail rule 4)."""
    fp = _model_path(model_dir, family, "f32")
    qp = model_dir / f"{family}_{activation}_qoperator.onnx"
    builders.quantize(fp, qp, activation, True, qoperator=True)
    _check(api.verify(qp, GENEROUS), f"{qp.name} at {GENEROUS}")
    small = api.analyze(qp, GENEROUS).min_fast_budget
    if small:
        budget = int(small * SMALL_FACTOR)
        _check(api.verify(qp, budget), f"{qp.name} at {budget}")


@pytest.mark.parametrize("variant", VARIANTS[1:])
def test_lcnet_int8_over_many_seeds(model_dir, variant):
    """Regression (issue: 1 in 8 seeded inputs gave cosine 0.946 on an int8 LCNet): ORT's QDQ quantizes each
    Conv output on its own grid before the BatchNorm, and folding the BatchNorm into the Conv dropped that rounding
    and clamp. bn_fold rule 3c keeps it; every one of 16 seeds now verifies (bit-exact vs the reference, output
    cosine >= 0.99 vs ONNX Runtime as written)."""
    qp = _model_path(model_dir, "lcnet", variant)
    r = api.verify(qp, GENEROUS, samples=16)
    _check(r, f"{qp.name} over 16 seeds")


ORT_OPTIONS = {"dedicated": {"DedicatedQDQPair": True}, "weight_qdq": {"AddQDQPairToWeight": True},
               "keep_act": {"QDQKeepRemovableActivations": True}}


@pytest.mark.parametrize("option", sorted(ORT_OPTIONS))
@pytest.mark.parametrize("family", ["resnet18_stem", "det_head", "mbv3_small"])
def test_ort_quantizer_options(model_dir, family, option):
    """Other QDQ spellings ORT's quantizer writes: a Q -> DQ pair per reader, Q -> DQ on float weights, Relu kept as
    its own op. Same criteria, at 4M and at 1.3x the smallest fast budget."""
    fp = _model_path(model_dir, family, "f32")
    qp = model_dir / f"{family}_{option}.onnx"
    builders.quantize(fp, qp, "uint8", True, extra=ORT_OPTIONS[option])
    _check(api.verify(qp, GENEROUS), f"{qp.name} at {GENEROUS}")
    small = int(api.analyze(qp, 64, emit=False).min_fast_budget * SMALL_FACTOR)
    _check(api.verify(qp, small), f"{qp.name} at {small}")


@pytest.mark.parametrize("variant", VARIANTS[1:])
def test_int8_moves_without_their_own_qdq(model_dir, variant):
    """onnx2tf-style int8 models: a Gather or Transpose between int8 tensors with no QuantizeLinear/DequantizeLinear
    of its own (fam_misc.strip_move_qdq of the ORT model) moves the codes, its output inheriting the producer's
    quantization; it verifies like the QDQ model (bit-exact vs the reference, within tolerance of ONNX Runtime) at
    4M and at 1.3x the smallest fast budget."""
    import fam_misc

    qp = _model_path(model_dir, "onnx2tf_moves", variant)
    stripped = fam_misc.strip_move_qdq(onnx.load(str(qp)))
    moves = [n for n in stripped.graph.node if n.op_type in ("Gather", "Transpose")]
    producers = {o: n.op_type for n in stripped.graph.node for o in n.output}
    assert len(moves) == 5 and all(producers.get(n.input[0]) != "DequantizeLinear" for n in moves)
    sp = model_dir / f"onnx2tf_moves_{variant}_stripped.onnx"
    onnx.save(stripped, str(sp))
    _check(api.verify(sp, GENEROUS, samples=3), f"{sp.name} at {GENEROUS}")
    small = int(api.analyze(sp, 64, emit=False).min_fast_budget * SMALL_FACTOR)
    _check(api.verify(sp, small), f"{sp.name} at {small}")
