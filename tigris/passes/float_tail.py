"""Float tail: an op that reads an int8 activation but computes in float gets an explicit ``DequantizeLinear``.

ONNX Runtime's static quantizer leaves an op it has no int8 form for (a final ``Tanh``, for instance) in float:
``... -> Q -> DQ -> Tanh -> float output``. QDQ fold (rule 4) makes every reader of a DQ read the int8 tensor, which
is right for the quantized readers but leaves this one reading int8 while writing float, a mix no kernel runs. The
DQ is put back in front of it: the int8 -> float conversion becomes an in-graph op (the dequantize kernel is an
ordinary elementwise kernel) and the tail runs on the float kernels.

Rules:
1. Applies to an op other than Q/DQ with an int8 (quantized, per-tensor) activation input whose outputs, and every
   tensor computed from them, are unquantized float32 (or int32 indices) with no ``QuantizeLinear`` downstream: nothing later can make
   it int8. (A float product output that a Relu -> Q quantizes is not a tail: activation fuse handled it.)
   Not to an op whose kind dequantizes its int8 inputs itself (``OpKind.dequantizes_inputs``: NonMaxSuppression
   reads int8 boxes and scores as the dequantize kernel would give them, so it needs no float copy of either).
2. Each such int8 input gets one ``DequantizeLinear`` (shared by all tail readers of that tensor), placed right
   before its first tail reader; the int8 readers keep reading the int8 tensor.
2b. A tail op's quantized constants (int8 weights, int32 bias: QDQ fold gave them their QuantParam expecting an int8
   op) become float32 constants of their real values, since the op now runs on the float kernels.

3. Float island: an int8 op whose attributes have no int8 kernel, a ``Resize`` with ``tf_crop_and_resize`` or, under
   the tflm numerics, in ``linear`` or ``cubic`` mode (U-Net bilinear up-sampling; with the onnx numerics the int8
   resize kernel computes the island's arithmetic itself, ``tigris.ops.resize``), runs in float between a new
   ``DequantizeLinear`` and a new ``QuantizeLinear`` that restores its int8 output (same tensor, same QuantParam).
   This is exactly what the QDQ model states (``DQ -> Resize -> Q``); the dequantize, float resize and quantize kernels are bit-exact against
   the reference, so the int8 result stays bit-exact.

4. Mixed op: any other op still reading an int8 activation and writing float, or reading a float activation and
   writing int8 (what ONNX Runtime's QOperator output states when it leaves a chain such as HardSwish ->
   GlobalAveragePool in float between 8-bit tensors), runs on the float kernels: its int8 inputs get a
   ``DequantizeLinear`` as in rule 2, its quantized constants real values as in rule 2b, and each int8 output is
   written by a new in-graph ``QuantizeLinear`` from a float twin (same tensor, same QuantParam). This is the
   arithmetic the model states.
5. A ``QuantizeLinear`` left in the graph between a float and an int8 activation (its output already carries the
   QuantParam QDQ fold gave it) drops its scale and zero-point operands, like every in-graph quantize.

Why here: after every pass that folds a float op into an int8 one (bias fold, activation fuse) had its chance, so
only genuinely float ops remain; before the layout pass, which lays out the new float tensor like any other.

Postcondition: no op other than Q/DQ mixes int8 and float activations; no int8 cropping Resize, and no int8
interpolating one under the tflm numerics.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.passes._quant import dequantize
from tigris.passes._util import PassResult, fresh_name, set_const

NAME = "float_tail"


def _is_int8_act(g: AnalyzedGraph, name: str) -> bool:
    t = g.tensors.get(name)
    return bool(name) and name not in g.weights and t is not None and t.dtype == "int8" and t.quant is not None \
        and not t.quant.per_channel


def _float_downstream(g: AnalyzedGraph, op: Op) -> bool:
    """Rule 1: the op's outputs and everything computed from them stay unquantized float32."""
    seen: set[str] = set()
    todo = [t for t in op.outputs if t]
    if not todo:
        return False
    while todo:
        t = todo.pop()
        if t in seen:
            continue
        seen.add(t)
        # an index tensor (ArgMax, TopK, NonMaxSuppression, stated int32 by pass index_ops) is not quantized again
        if g.tensors[t].dtype not in ("float32", "int32") or g.tensors[t].quant is not None:
            return False
        for o in g.ops:
            if t in o.inputs:
                if o.op_type == "QuantizeLinear":
                    return False
                todo.extend(x for x in o.outputs if x)
    return True


def _needs_float(g: AnalyzedGraph, op: Op) -> bool:
    """Rule 3: an int8 op without an int8 kernel for its attributes."""
    if op.op_type != "Resize" or len(op.outputs) != 1:
        return False
    mode = op.attrs.get("mode", "nearest")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    ctm = op.attrs.get("coordinate_transformation_mode", "half_pixel")
    ctm = ctm.decode() if isinstance(ctm, bytes) else str(ctm)
    interp = mode != "nearest" or ctm == "tf_crop_and_resize"
    from tigris.ops.resize import int8_interpolates

    return interp and not int8_interpolates(g, op) and _is_int8_act(g, op.inputs[0]) and _is_int8_act(g, op.outputs[0])


def _islands(graph: AnalyzedGraph) -> tuple[AnalyzedGraph, int]:
    """Rule 3: wrap each int8 op that must run in float in DQ ... Q."""
    if not any(_needs_float(graph, op) for op in graph.ops):
        return graph, 0
    g = graph.replace()
    ops: list[Op] = []
    n = 0
    for op in graph.ops:
        if not _needs_float(graph, op):
            ops.append(op)
            continue
        x, y = op.inputs[0], op.outputs[0]
        xf = fresh_name(g, f"{x}_dequantized")
        g.tensors[xf] = Tensor(xf, g.tensors[x].shape, "float32")
        yf = fresh_name(g, f"{y}_float", [xf])
        g.tensors[yf] = Tensor(yf, g.tensors[y].shape, "float32")
        ops.append(Op(fresh_name(g, f"{op.name}_dequantize", [xf, yf]), "DequantizeLinear", (x,), (xf,), {}))
        ops.append(op.with_(inputs=(xf, *op.inputs[1:]), outputs=(yf,)))
        ops.append(Op(fresh_name(g, f"{op.name}_quantize", [xf, yf]), "QuantizeLinear", (yf,), (y,), {}))
        n += 1
    g.ops = ops
    return g, n


def _is_float_act(g: AnalyzedGraph, name: str) -> bool:
    t = g.tensors.get(name)
    return bool(name) and name not in g.weights and t is not None and t.dtype == "float32" and t.quant is None


def _is_int8_out(g: AnalyzedGraph, name: str) -> bool:
    t = g.tensors.get(name)
    return bool(name) and t is not None and t.dtype == "int8" and t.quant is not None


def _mixed(g: AnalyzedGraph, op: Op) -> bool:
    """Rule 4: an op between a float and an int8 activation that no earlier pass made all-int8."""
    if op.op_type in ("QuantizeLinear", "DequantizeLinear"):
        return False
    ins = [i for i in op.inputs if i and i not in g.weights]
    int8_in = any(_is_int8_act(g, i) for i in ins)
    float_in = any(_is_float_act(g, i) for i in ins)
    int8_out = any(_is_int8_out(g, o) for o in op.outputs)
    float_out = any(_is_float_act(g, o) for o in op.outputs)
    return (int8_in and float_out) or (float_in and int8_out)


def _dequantizes(g: AnalyzedGraph, op: Op) -> bool:
    """Rule 1's exception: the op's kind reads its int8 inputs as real values itself (and every other activation
    input is float32, or int32 indices)."""
    from tigris.ops import kind_for

    try:
        k = kind_for(op.op_type)
    except Exception:  # noqa: BLE001 - an op type with no kind gets the DequantizeLinear
        return False
    return bool(k.dequantizes_inputs) and all(_is_int8_act(g, i) or _is_float_act(g, i) or
                                                (g.tensors[i].dtype == "int32" and g.tensors[i].quant is None)
                                                for i in op.inputs if i and i not in g.weights)


def run(graph: AnalyzedGraph) -> PassResult:
    graph, n_islands = _islands(graph)
    floats = {op.name for op in graph.ops if op.op_type not in ("QuantizeLinear", "DequantizeLinear")
              and any(_is_int8_act(graph, i) for i in op.inputs) and _float_downstream(graph, op)
              and not _dequantizes(graph, op)}
    floats |= {op.name for op in graph.ops if _mixed(graph, op)}
    # rule 5: a QuantizeLinear QDQ fold kept in the graph whose output already carries its QuantParam
    strip = {op.name for op in graph.ops if op.op_type == "QuantizeLinear" and len(op.inputs) > 1
             and not op.attrs.get("per_element")  # its operands are its per-element parameters
             and _is_int8_out(graph, op.outputs[0]) and _is_float_act(graph, op.inputs[0])}
    if not floats and not strip:
        return PassResult(graph, n_islands)
    g = graph.replace()
    converted: dict[str, str] = {}  # int8 tensor -> its float twin
    ops: list[Op] = []
    for op in g.ops:
        if op.name in strip:
            op = op.with_(inputs=op.inputs[:1])
        if op.name not in floats:
            ops.append(op)
            continue
        new_inputs = []
        for i in op.inputs:
            if _is_int8_act(g, i) and i not in g.weights:
                if i not in converted:
                    f = fresh_name(g, f"{i}_dequantized")
                    g.tensors[f] = Tensor(f, g.tensors[i].shape, "float32")
                    converted[i] = f
                    ops.append(Op(fresh_name(g, f"{i}_dequantize"), "DequantizeLinear", (i,), (f,), {}))
                i = converted[i]
            elif i in g.weights and g.tensors[i].quant is not None:  # rule 2b
                f = fresh_name(g, f"{i}_real")
                set_const(g, f, dequantize(g.weights[i], g.tensors[i].quant).astype("float32"))
                i = f
            new_inputs.append(i)
        new_outputs, quantizes = [], []
        for o in op.outputs:
            if _is_int8_out(g, o):  # rule 4: the op computes in float, an in-graph Q restores its int8 output
                f = fresh_name(g, f"{o}_float")
                g.tensors[f] = Tensor(f, g.tensors[o].shape, "float32")
                quantizes.append(Op(fresh_name(g, f"{op.name}_quantize"), "QuantizeLinear", (f,), (o,), {}))
                o = f
            new_outputs.append(o)
        ops.append(op.with_(inputs=tuple(new_inputs), outputs=tuple(new_outputs)))
        ops.extend(quantizes)
    g.ops = ops
    return PassResult(g, len(floats) + len(strip) + n_islands)
