"""Stage 2: normalization. ``PIPELINE`` is the single ordered list of passes; ``normalize`` runs it.

The seventeen passes of the spec run in the spec's order; the extra passes real models need sit where their
docstrings say they belong (``spec`` is None for them). The layout pass runs last. Every pass is a pure function
``run(graph) -> PassResult`` (see :mod:`tigris.passes._util`).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Callable

from tigris.ir import AnalyzedGraph
from tigris.passes import (activation_fuse, bias_fold, bn_fold, broadcast_rank, channel_shuffle, cleanup, clip_relu6,
                           concat_axis,
                           concat_const, constant_fold,
                           conv1d_relabel, depthwise_relabel, drop_constants, explicit_attrs, float_tail, hard_activations,
                           index_ops,
                           input_transpose, integer_ops, layernorm_fuse, layout, matmul_relabel, output_transpose, pad_fold,
                           pool_concat, prelu_leaky, softmax_lines,
                           qdq_fold, qdq_per_element, reducemean_gap, resize_scales, shape_op_fold, silu_decompose, slice_normalize, strip_operands,
                           sub_div_const, symmetric_weights, transpose_sink, unit_dim_squeeze, vector_rows,
                           weight_only_quant)
from tigris.passes._util import Decline, PassResult
from tigris.passes.supported import check_supported, unsupported_nodes
from tigris.passes.verify import IRVerifyError, verify


@dataclass(frozen=True)
class Pass:
    name: str
    run: Callable[[AnalyzedGraph], PassResult]
    spec: int | None  # the spec's pass number, None for the extra passes
    module: ModuleType


def _p(mod: ModuleType, spec: int | None) -> Pass:
    return Pass(mod.NAME, mod.run, spec, mod)


PIPELINE: tuple[Pass, ...] = (
    _p(constant_fold, 1),
    _p(cleanup, None),  # direct edges for every pattern below
    _p(explicit_attrs, None),  # ONNX defaults made explicit once
    _p(slice_normalize, None),  # Slice/Split/Gather in one form, before QDQ fold sees them
    _p(weight_only_quant, None),  # before QDQ fold: a float graph's int8 weights become floats
    _p(integer_ops, None),  # MatMulInteger as an int8 MatMul with unit scales; before QDQ fold
    _p(qdq_fold, 2),
    _p(qdq_per_element, None),  # the boundary Q/DQ QDQ fold declines as per-axis or blocked
    _p(matmul_relabel, 3),
    _p(layernorm_fuse, None),  # after QDQ fold (plain constants); before sub_div_const and activation fuse
    _p(bn_fold, 4),
    _p(symmetric_weights, None),  # kernels have no weight zero point; before bias fold, which needs the final s_w
    _p(bias_fold, 5),
    _p(silu_decompose, 6),
    _p(pad_fold, None),  # before the Conv relabels, after QDQ fold (zero points known)
    _p(depthwise_relabel, 7),
    _p(conv1d_relabel, 8),
    _p(transpose_sink, None),  # NHWC islands' Transposes cancel; before ReduceMean to GAP and activation fuse
    _p(clip_relu6, 9),
    _p(sub_div_const, None),  # turns /6 into *1/6 for the HardSwish patterns
    _p(hard_activations, None),  # before activation fuse hides Relu6(x+3)
    _p(prelu_leaky, None),
    _p(reducemean_gap, 10),
    _p(shape_op_fold, 11),
    _p(resize_scales, 12),
    _p(strip_operands, 13),
    _p(concat_const, None),  # a Concat of constants around activations as Pad + Add; before concat_axis
    _p(pool_concat, None),  # a MaxPool of a channel Concat as a Concat of MaxPools; before concat_axis
    _p(unit_dim_squeeze, None),  # Reshape targets are output shapes now; before the layout pass
    _p(channel_shuffle, None),  # after unit_dim_squeeze (rank 4); before the layout pass
    _p(broadcast_rank, None),  # likewise
    _p(concat_axis, 14),
    _p(softmax_lines, None),  # its trailing Transpose is the output transpose trim's to remove
    _p(output_transpose, 15),
    _p(activation_fuse, 16),
    _p(index_ops, None),  # after QDQ fold, before float tail
    _p(float_tail, None),  # after every pass that folds a float op into an int8 one; before the layout pass
    _p(drop_constants, 17),
    _p(input_transpose, None),  # assigns a layout, so right before the layout pass
    _p(vector_rows, None),  # assigns a layout too; after input_transpose, before the layout pass
    _p(layout, None),
)


# (earlier, later): ordering constraints the extra passes' docstrings give, checked at import.
ORDER_CONSTRAINTS: tuple[tuple[str, str], ...] = (
    ("qdq_fold", "index_ops"),
    ("index_ops", "float_tail"),
    ("constant_fold", "cleanup"),
    ("cleanup", "qdq_fold"),
    ("explicit_attrs", "bn_fold"),
    ("constant_fold", "slice_normalize"),
    ("slice_normalize", "qdq_fold"),
    ("weight_only_quant", "qdq_fold"),
    ("qdq_fold", "qdq_per_element"),
    ("qdq_per_element", "matmul_relabel"),
    ("qdq_fold", "symmetric_weights"),
    ("matmul_relabel", "symmetric_weights"),
    ("qdq_fold", "layernorm_fuse"),
    ("integer_ops", "qdq_fold"),
    ("strip_operands", "concat_const"),
    ("concat_const", "concat_axis"),
    ("qdq_fold", "pool_concat"),
    ("pool_concat", "concat_axis"),
    ("layernorm_fuse", "sub_div_const"),
    ("layernorm_fuse", "activation_fuse"),
    ("bn_fold", "symmetric_weights"),
    ("symmetric_weights", "bias_fold"),
    ("qdq_fold", "pad_fold"),
    ("pad_fold", "depthwise_relabel"),
    ("clip_relu6", "hard_activations"),
    ("sub_div_const", "hard_activations"),
    ("hard_activations", "activation_fuse"),
    ("prelu_leaky", "activation_fuse"),
    ("shape_op_fold", "strip_operands"),
    ("resize_scales", "strip_operands"),
    ("drop_constants", "input_transpose"),
    ("bias_fold", "float_tail"),
    ("activation_fuse", "float_tail"),
    ("float_tail", "layout"),
    ("strip_operands", "unit_dim_squeeze"),
    ("unit_dim_squeeze", "layout"),
    ("unit_dim_squeeze", "channel_shuffle"),
    ("channel_shuffle", "layout"),
    ("strip_operands", "broadcast_rank"),
    ("broadcast_rank", "layout"),
    ("input_transpose", "layout"),
    ("input_transpose", "vector_rows"),
    ("vector_rows", "layout"),
    ("softmax_lines", "output_transpose"),
)


def _check_order() -> None:
    """The spec's passes must appear in spec order and the extra passes where their docstrings say; a misordered
    edit fails at import, not in a model."""
    nums = [p.spec for p in PIPELINE if p.spec is not None]
    if nums != sorted(nums) or nums != list(range(1, 18)):
        raise RuntimeError(f"PIPELINE spec order broken: {nums}")
    if PIPELINE[-1].name != "layout":
        raise RuntimeError("the layout pass must run last")
    pos = {p.name: i for i, p in enumerate(PIPELINE)}
    for a, b in ORDER_CONSTRAINTS:
        if pos[a] >= pos[b]:
            raise RuntimeError(f"PIPELINE order: {a} must run before {b}")


_check_order()


@dataclass(frozen=True)
class PassReport:
    """What one pass did, for ``tigris analyze -v``."""

    name: str
    spec: int | None
    rewritten: int
    declined: tuple[Decline, ...] = ()

    @property
    def fired(self) -> bool:
        return self.rewritten > 0


def normalize(graph: AnalyzedGraph, check: bool = False,
              passes: tuple[Pass, ...] = PIPELINE) -> tuple[AnalyzedGraph, list[PassReport]]:
    """Run every pass in order. With ``check`` the IR verifier runs after each pass and a failure names the pass."""
    reports: list[PassReport] = []
    g = graph
    if check:
        verify(g, "before normalization")
    for p in passes:
        res = p.run(g)
        g = res.graph
        reports.append(PassReport(p.name, p.spec, res.rewritten, res.declined))
        if check:
            done = ", ".join(r.name for r in reports[:-1])
            verify(g, f"in pass {p.name}, after [{done}]")
    return g, reports


__all__ = ["PIPELINE", "Pass", "PassReport", "PassResult", "Decline", "normalize", "check_supported",
           "unsupported_nodes", "verify", "IRVerifyError"]
