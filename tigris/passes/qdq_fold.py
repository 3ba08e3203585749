"""Pass 2, QDQ fold: QuantizeLinear/DequantizeLinear pairs become QuantParam annotations on int8 tensors.

A QDQ model states an int8 op as ``DQ(x_q) -> float op -> Q -> y_q``. After this pass the op reads ``x_q`` and writes
``y_q`` directly, both int8 with a QuantParam, and its constant operands are int8/int32 with their own QuantParam.

Rules:
1. Weights: a ``DequantizeLinear`` of a constant becomes that constant's integer values with a QuantParam
   (per-channel ``axis`` kept; int32 biases keep their scale, which the quantizer set to ``s_in * s_w``).
   A ``QuantizeLinear`` of a float constant is evaluated (round half to even, saturate) into an int8 constant, and a
   ``DequantizeLinear`` after it (ORT's ``AddQDQPairToWeight``) folds onto that constant too.
2. Activation Q: the op producing the float input now writes the Q's output; the Q is removed. Declined (Q kept)
   when the float value has other readers or is a graph output, since removing it would change what they read.
2a. Twin Qs (same float input, scale, zero point and type: ORT's ``DedicatedQDQPair``) merge into the first one.
2b. A Q whose float input comes from a data-movement op (Reshape, Transpose, ...) that only it reads is moved in
   front of that op, repeatedly, so the data movement runs on int8 (and a Q reached this way from a float graph
   input becomes a boundary Q, rule 3).
3. Boundary Q: a Q reading a float *graph input* is kept: the model's interface is float, the plan converts at the
   edge (design.md: ``QuantizeLinear`` at the model boundary only).
3b. Likewise a Q whose float input is computed from float graph inputs and constants alone (a preprocessing head ORT
   left in float, e.g. ``(x - mean) / std``): the head runs on the float kernels, then the Q converts.
4. Activation DQ: readers of its float output read the int8 input instead; the int8 tensor takes the DQ's QuantParam
   (how a graph's int8 input learns its scale). Declined when the int8 tensor already carries a different
   QuantParam (two scales for one tensor cannot both hold).
5. Boundary DQ: a DQ whose output is a graph output is kept (float output presented by the plan).
6. Data-movement ops (Reshape, Flatten, Squeeze, Unsqueeze, Transpose, MaxPool, Identity, Pad, Slice, Gather,
   DepthToSpace, SpaceToDepth) on int8 carry the QuantParam across, forwards and backwards, so e.g. an int8 input
   read through a Transpose gets its scale, and an int8 tensor a Gather reads with no QDQ of its own (onnx2tf)
   passes its producer's quantization on.
7. uint8 activations are restated as int8 (value - 128, zero point - 128): both denote the same real numbers and the
   kernels are int8. uint8 constants are restated the same way, stored data included.
8. The declared dtype of every graph input and output stays in ``graph.boundary`` (with the declared QuantParam, in
   the declared domain), so the plan presents the interface the model states.
9. A Q/DQ with a non-constant scale or zero point is declined.

Why second: only pass 1 must run before (scales often come from Constant nodes); every later pass must see int8
tensors with QuantParams rather than DQ/Q chains (e.g. BatchNorm fold requantizes int8 weights, activation fuse
checks the intermediate's quantization).

Postcondition: Q only reads graph inputs, DQ only writes graph outputs (except declined nodes); both keep only their
data operand (the quantization is on the int8 tensor).
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Boundary, QuantParam, Tensor
from tigris.passes._quant import qparam_of, quantize, restate_uint8, zp_dtype
from tigris.passes._util import Decline, PassResult, fresh_name, replace_uses, set_const, tidy

NAME = "qdq_fold"
_MOVES = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "MaxPool", "Identity", "Pad", "Slice", "Gather",
          "DepthToSpace", "SpaceToDepth"}
_INTS = ("int8", "uint8")


def run(graph: AnalyzedGraph) -> PassResult:
    if not any(op.op_type in ("QuantizeLinear", "DequantizeLinear") for op in graph.ops):
        return PassResult(graph)
    g = graph.replace()
    declined: list[Decline] = []
    n = 0
    remove: set[str] = set()

    # Rule 1: constants. g.weights grows as Qs of constants are evaluated, so a Q -> DQ pair on a float weight
    # (ORT's AddQDQPairToWeight) folds in one walk (ops are in topological order).
    for op in graph.ops:
        if op.op_type not in ("QuantizeLinear", "DequantizeLinear") or op.inputs[0] not in g.weights:
            continue
        if op.outputs[0] in graph.outputs:
            declined.append(Decline(op.name, "rule 1: a constant is a graph output"))
            continue
        data = g.weights[op.inputs[0]]
        q = qparam_of(graph, op, data.ndim)
        if isinstance(q, str):
            declined.append(Decline(op.name, f"rule 9: {q}"))
            continue
        done = g.tensors[op.inputs[0]].quant if op.inputs[0] not in graph.weights else None
        if op.op_type == "DequantizeLinear" and done is not None:
            # the DQ of a constant this walk quantized: its codes (already restated to int8) and QuantParam
            set_const(g, op.outputs[0], np.asarray(data), done)
            remove.add(op.name)
            n += 1
            continue
        if op.op_type == "DequantizeLinear":
            vals = np.asarray(data)
        else:
            vals = quantize(np.asarray(data, dtype=np.float32), q, zp_dtype(graph, op))
        if vals.dtype == np.uint8:
            vals, q = (vals.astype(np.int16) - 128).astype(np.int8), restate_uint8(q)
        set_const(g, op.outputs[0], vals, q)
        remove.add(op.name)
        n += 1

    ops = [op for op in g.ops if op.name not in remove]
    ops, merged = _merge_twin_quantizes(g, ops)
    n += merged
    prod = {t: i for i, op in enumerate(ops) for t in op.outputs if t}

    # Rules 2 and 3: activation Q.
    for op in list(ops):
        if op.op_type != "QuantizeLinear" or op.name in remove or op.inputs[0] in g.weights:
            continue
        x, y = op.inputs[0], op.outputs[0]
        q = qparam_of(g, op, len(g.tensors[x].shape))
        if isinstance(q, str):
            declined.append(Decline(op.name, f"rule 9: {q}"))
            continue
        _annotate(g, y, q, zp_dtype(g, op))
        hoisted = _hoist(g, ops, op)
        while hoisted is not None:  # rule 2b
            ops, op = hoisted
            x, y = op.inputs[0], op.outputs[0]
            n += 1
            hoisted = _hoist(g, ops, op)
        prod = {t: i for i, o in enumerate(ops) for t in o.outputs if t}
        if x in g.inputs or _float_head(g, ops, x):
            # rule 3: boundary quantize stays; its scale/zero point now live on the output tensor
            if len(op.inputs) > 1:
                ops = [o.with_(inputs=o.inputs[:1]) if o.name == op.name else o for o in ops]
            continue
        readers = [o for o in ops if x in o.inputs]
        if len(readers) > 1 or x in g.outputs or x not in prod:
            declined.append(Decline(op.name, "rule 2: its float input has other readers or is a graph output"))
            continue
        pi = next(i for i, o in enumerate(ops) if x in o.outputs)
        p = ops[pi]
        ops[pi] = p.with_(outputs=tuple(y if t == x else t for t in p.outputs))
        remove.add(op.name)
        n += 1
    ops = [op for op in ops if op.name not in remove]

    # Rules 4 and 5: activation DQ.
    for op in list(ops):
        if op.op_type != "DequantizeLinear" or op.inputs[0] in g.weights:
            continue
        x, y = op.inputs[0], op.outputs[0]
        q = qparam_of(g, op, len(g.tensors[x].shape))
        if isinstance(q, str):
            declined.append(Decline(op.name, f"rule 9: {q}"))
            continue
        have = g.tensors[x].quant
        # the domain the DQ states its zero point in: its zero point's type (the tensor may be restated already)
        dt = zp_dtype(g, op) if len(op.inputs) > 2 and op.inputs[2] else g.tensors[x].dtype
        want = restate_uint8(q) if dt == "uint8" else q
        if have is not None and have != want:
            declined.append(Decline(op.name, f"rule 4: {x} already carries a different quantization"))
            continue
        _annotate(g, x, q, dt)
        if y in g.outputs:
            # rule 5: boundary dequantize stays; its scale/zero point now live on the input tensor
            if len(op.inputs) > 1:
                ops = [o.with_(inputs=o.inputs[:1]) if o.name == op.name else o for o in ops]
            continue
        ops = replace_uses([o for o in ops if o.name != op.name], y, x)
        n += 1

    g.ops = ops
    g = _propagate(g)
    g = _restate_uint8_activations(g)
    g = tidy(g)
    # Rule 8: boundary records the declared interface.
    for name in g.inputs + g.outputs:
        t = g.tensors[name]
        b = graph.boundary.get(name) or Boundary(name, t.shape, t.dtype)
        qd = t.quant
        if qd is not None and b.dtype == "uint8":
            qd = QuantParam(qd.scale, qd.zero_point + 128, qd.axis)
        if qd is not None:
            g.boundary[name] = Boundary(b.name, b.shape, b.dtype, qd)
    return PassResult(g, n, tuple(declined))


def _merge_twin_quantizes(g: AnalyzedGraph, ops: list) -> tuple[list, int]:
    """Rule 2a: Qs of one float tensor with the same scale, zero point and type (ORT's ``DedicatedQDQPair`` gives every
    reader its own Q -> DQ) are one Q: readers of the twins read the first one's output."""
    first: dict[tuple, str] = {}
    twin_of: dict[str, str] = {}
    out = []
    for op in ops:
        if op.op_type == "QuantizeLinear" and op.inputs[0] not in g.weights and op.outputs[0] not in g.outputs:
            q = qparam_of(g, op, len(g.tensors[op.inputs[0]].shape))
            if not isinstance(q, str):
                key = (op.inputs[0], q.scale.tobytes(), q.zero_point.tobytes(), q.axis, zp_dtype(g, op))
                if key in first:
                    twin_of[op.outputs[0]] = first[key]
                    continue
                first[key] = op.outputs[0]
        out.append(op)
    for twin, keep in twin_of.items():
        out = replace_uses(out, twin, keep)
    return out, len(twin_of)


def _float_head(g: AnalyzedGraph, ops: list, x: str) -> bool:
    """Rule 3b: ``x`` is computed in float from float graph inputs and constants only (no DequantizeLinear
    upstream): a preprocessing head ORT left in float, e.g. ``(x - mean) / std`` before the first Q."""
    prod = {t: o for o in ops for t in o.outputs if t}
    seen: set[str] = set()
    todo = [x]
    reached_input = False
    while todo:
        t = todo.pop()
        if t in seen or t in g.weights:
            continue
        seen.add(t)
        if t in g.inputs:
            if g.tensors[t].dtype != "float32":
                return False
            reached_input = True
            continue
        o = prod.get(t)
        if o is None or o.op_type in ("DequantizeLinear", "QuantizeLinear"):
            return False
        todo.extend(i for i in o.inputs if i)
    return reached_input


def _hoist(g: AnalyzedGraph, ops: list, qop) -> tuple[list, object] | None:
    """Rule 2b: ``float src -> mover -> x -> Q -> y`` becomes ``src -> Q -> mid -> mover -> y`` (mid int8 with y's
    quantization), so the data-movement op runs on int8. None when the pattern does not apply."""
    x, y = qop.inputs[0], qop.outputs[0]
    pi = next((i for i, o in enumerate(ops) if x in o.outputs), None)
    if pi is None:
        return None
    p = ops[pi]
    if p.op_type not in _MOVES or p.op_type == "Pad" or x in g.outputs or len(p.outputs) != 1:
        return None
    if sum(x in o.inputs for o in ops) != 1:
        return None
    src = p.inputs[0]
    if src in g.weights or g.tensors[src].dtype != "float32" or src in g.outputs \
            or sum(src in o.inputs for o in ops) != 1:
        return None
    ts, ty = g.tensors[src], g.tensors[y]
    mid = fresh_name(g, f"{src}_quantized")
    g.tensors[mid] = Tensor(mid, ts.shape, ty.dtype, ty.quant)
    new_q = qop.with_(inputs=(src, *qop.inputs[1:]), outputs=(mid,))
    new_p = p.with_(inputs=(mid, *p.inputs[1:]), outputs=(y,))
    out = [o for o in ops if o.name != qop.name]
    k = out.index(p)
    out[k:k + 1] = [new_q, new_p]
    return out, new_q


def _annotate(g: AnalyzedGraph, name: str, q: QuantParam, dtype: str) -> None:
    """Give tensor ``name`` the QuantParam ``q`` stated in ``dtype`` (restated to int8 when uint8, rule 7)."""
    t = g.tensors[name]
    if dtype == "uint8":
        q = restate_uint8(q)
        dtype = "int8"
    g.tensors[name] = Tensor(name, t.shape, dtype if dtype in ("int8", "int32", "int16") else t.dtype, q, t.layout)


def _propagate(g: AnalyzedGraph) -> AnalyzedGraph:
    """Rule 6, to a fixed point."""
    changed = True
    while changed:
        changed = False
        for op in g.ops:
            if op.op_type not in _MOVES or not op.inputs or not op.outputs:
                continue
            a, b = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
            if a.quant is not None and b.quant is None and b.dtype in _INTS + ("float32",) and a.dtype == "int8" \
                    and b.dtype != "float32":
                g.tensors[b.name] = Tensor(b.name, b.shape, "int8", a.quant, b.layout)
                changed = True
            elif b.quant is not None and a.quant is None and a.dtype in _INTS and a.name not in g.weights:
                q = b.quant
                if a.dtype == "uint8" and b.dtype == "int8":
                    pass  # b was restated already; a is restated below with the same shift
                g.tensors[a.name] = Tensor(a.name, a.shape, "int8", q, a.layout)
                changed = True
    return g


def _restate_uint8_activations(g: AnalyzedGraph) -> AnalyzedGraph:
    """Rule 7 for int tensors that got their QuantParam through rule 6 while still typed uint8 by ONNX."""
    for name, t in list(g.tensors.items()):
        if t.dtype == "uint8" and t.quant is not None and name not in g.weights:
            g.tensors[name] = Tensor(name, t.shape, "int8", restate_uint8(t.quant), t.layout)
    return g
