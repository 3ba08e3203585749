"""The runtime's op library: one module per kernel family, each an :class:`~tigris.ops.base.OpKind`.

``KINDS`` fixes the C enum values (``TGRS_OP_<NAME>`` = position + 1); append new kinds at the end, never reorder,
since the number is part of the plan format.
"""
from __future__ import annotations

import importlib
from functools import lru_cache

from tigris.ir import TigrisError
from tigris.ops.base import Lowered, OpKind, TensorView, Unsupported

# (kind name, module under tigris.ops, class name). The order is the C enum order.
KINDS: tuple[tuple[str, str, str], ...] = (
    ("conv", "conv", "Conv"),  # regular and grouped Conv, Conv1D (as H=1 or W=1 conv)
    ("dwconv", "dwconv", "DepthwiseConv"),
    ("fc", "fc", "FullyConnected"),  # Gemm with transB=1
    ("maxpool", "pool", "MaxPool"),
    ("avgpool", "pool", "AveragePool"),
    ("gap", "pool", "GlobalAveragePool"),
    ("add", "binary", "Add"),
    ("mul", "binary", "Mul"),
    ("concat", "concat", "Concat"),
    ("resize", "resize", "Resize"),
    ("unary", "unary", "Unary"),  # float: the FUNC codes of tigris/ops/unary.py; int8: LUT
    ("prelu", "unary", "PRelu"),
    ("softmax", "softmax", "Softmax"),
    ("pad", "pad", "Pad"),
    ("transpose", "transpose", "Transpose"),
    ("quantize", "quant", "Quantize"),
    ("dequantize", "quant", "Dequantize"),
    ("copy", "copy", "Copy"),  # Reshape/Flatten/Squeeze/Unsqueeze (alias when no bytes move)
    ("ewise", "binary", "Ewise"),  # Max/Min/Div/Pow between two operands
    ("reduce", "reduce", "Reduce"),  # ReduceMean/Sum/Max/L2 over any axes
    ("matmul", "matmul", "MatMul"),  # product of two operands (activations), batched, strided
    ("layernorm", "layernorm", "LayerNorm"),  # LayerNormalization over the trailing axes
    ("cast", "cast", "Cast"),  # float32 -> int32 (ConvInteger's result)
    ("convtranspose", "convtranspose", "ConvTranspose"),  # 1-D/2-D transposed convolution, any group count
    ("slice", "slice", "Slice"),  # Slice/Split/constant-index Gather (a strided or indexed copy)
    ("depthspace", "depthspace", "DepthSpace"),  # DepthToSpace / SpaceToDepth, DCR and CRD
    ("argmax", "index", "ArgMax"),  # ArgMax/ArgMin (int32 indices)
    ("topk", "index", "TopK"),  # TopK values or indices, constant k
    ("nms", "index", "NonMaxSuppression"),  # NonMaxSuppression, row-counted output
    ("convacc", "acc", "ConvAcc"),  # int8 conv over an input-channel slice -> int32 partial sum (K groups)
    ("gemmacc", "acc", "GemmAcc"),  # int8 Gemm over an input-channel slice -> int32 partial sum
    ("accadd", "acc", "AccAdd"),  # int32 + int32 (the running sum of K groups)
    ("requantize", "acc", "Requantize"),  # int32 accumulator -> int8 with the op's per-channel requantization
)

KIND_IDS = {name: i + 1 for i, (name, _, _) in enumerate(KINDS)}


@lru_cache(maxsize=None)
def kind(name: str) -> OpKind:
    for kname, mod, cls in KINDS:
        if kname == name:
            return getattr(importlib.import_module(f"tigris.ops.{mod}"), cls)()
    raise KeyError(name)


@lru_cache(maxsize=None)
def _by_ir_op() -> dict[str, OpKind]:
    """IR op type -> its kind. Every registered kind must import: a missing module is a broken build, not a kind
    to skip."""
    table: dict[str, OpKind] = {}
    for kname, _, _ in KINDS:
        k = kind(kname)
        for t in k.ir_ops:
            table.setdefault(t, k)
    return table


def kind_for(op_type: str) -> OpKind | None:
    """The kind that lowers a normalized IR op type, or None when the runtime has no kernel for it."""
    return _by_ir_op().get(op_type)


def unsupported_reason(graph, op) -> str | None:
    """Why the runtime cannot run ``op``, or None: no kind lowers its type, or its kind refuses it."""
    k = kind_for(op.op_type)
    if k is None:  # a pass that declined the op may have recorded the reason the op cannot run
        return op.attrs.get("unsupported_why") or f"no runtime kernel for {op.op_type}"
    return k.unsupported(graph, op)


def lower(graph, op) -> Lowered:
    """Lower one normalized op; :class:`Unsupported` (naming the node) when the runtime cannot run it. A kind with
    a NUMERICS parameter gets the graph's contract code in it, float ops included, so every such op of a plan
    carries the code its header flag states (the loader checks it)."""
    from tigris.ops.qmath import numerics_code

    why = unsupported_reason(graph, op)
    if why:
        raise Unsupported(why, op.name)
    k = kind_for(op.op_type)
    low = k.lower(graph, op)  # type: ignore[union-attr]
    for pname in k.PARAMS:  # type: ignore[union-attr]
        if pname.lower() == "numerics":
            low.params[pname] = numerics_code(getattr(graph, "numerics", "onnx"), op.name)
    return low


def arrange(lowered: list[Lowered], target: str) -> list[Lowered]:
    """The lowered ops with their weights arranged for ``target`` (a name of tigris.emit.format.TARGET_NAMES):
    each kind decides per op (:meth:`OpKind.arrange`); ``generic`` arranges nothing. The memory plan is made from
    the plain ops and holds for these, since an arrangement keeps every constant's length."""
    from tigris.emit.format import TARGET_NAMES

    if target not in TARGET_NAMES:
        raise TigrisError(f"unknown target {target!r}; use one of {', '.join(sorted(TARGET_NAMES))}", "--target")
    if target == "generic":
        return list(lowered)
    return [low if low.alias else kind(low.kind).arrange(low, target) for low in lowered]


__all__ = ["KINDS", "KIND_IDS", "Lowered", "OpKind", "TensorView", "Unsupported", "arrange", "kind", "kind_for", "lower",
           "unsupported_reason"]
