"""Giving every graph input a concrete shape (the first thing stage 1 does).

Rules:
1. An input named in ``input_shapes`` takes exactly that shape; its rank must match the declared rank when the model
   declares one, and declared static dims must agree (a model that says 3 channels cannot be fed 4).
2. Any other free dimension (symbolic ``dim_param`` or missing value) is bound to 1, and a note naming the input and
   axis is returned, because the plan is then sized for a value the compiler chose, not the user.
3. Naming an input the model does not have is an error: a typo would otherwise be silently ignored.
"""
from __future__ import annotations

import onnx

from tigris.ir import TigrisError
from tigris.load.onnx_io import dtype_name, vi_shape
from tigris.load.validate import check_tensor_limits


def real_inputs(graph: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    """Graph inputs that are not initializers (old exporters list every weight as an input too)."""
    inits = {i.name for i in graph.initializer}
    return [vi for vi in graph.input if vi.name not in inits]


def bind_input_shapes(model: onnx.ModelProto, input_shapes: dict[str, tuple[int, ...]] | None) -> list[str]:
    """Rewrite the graph inputs of ``model`` (in place) to static shapes; return the notes for rule 2."""
    given = dict(input_shapes or {})
    inputs = real_inputs(model.graph)
    names = {vi.name for vi in inputs}
    unknown = sorted(set(given) - names)
    if unknown:
        raise TigrisError(f"--input-shape names unknown input(s) {unknown}; the model's inputs are {sorted(names)}",
                          unknown[0])
    notes: list[str] = []
    for vi in inputs:
        declared = vi_shape(vi)
        if vi.name in given:
            shape = tuple(int(d) for d in given[vi.name])
            if any(d <= 0 for d in shape):
                raise TigrisError(f"input shape {shape} has a non-positive dimension", vi.name)
            if declared is not None and len(declared) != len(shape):
                raise TigrisError(f"input shape {shape} has rank {len(shape)} but the model declares rank "
                                  f"{len(declared)}", vi.name)
            for ax, (d, g) in enumerate(zip(declared or (), shape)):
                if isinstance(d, int) and d > 0 and d != g:
                    raise TigrisError(f"input shape {shape} sets axis {ax} to {g} but the model fixes it to {d}",
                                      vi.name)
        else:
            if declared is None:
                raise TigrisError("graph input has no declared rank; give it with --input-shape", vi.name)
            shape_l = []
            for ax, d in enumerate(declared):
                if d == 0:
                    raise TigrisError(f"axis {ax} has size 0; zero-size tensors cannot be executed", vi.name)
                if isinstance(d, int) and d > 0:
                    shape_l.append(d)
                else:
                    shape_l.append(1)
                    label = f"'{d}'" if isinstance(d, str) and d else "unknown"
                    notes.append(f"input {vi.name} axis {ax} ({label}) bound to 1")
            shape = tuple(shape_l)
        check_tensor_limits(vi.name, shape, dtype_name(vi.type.tensor_type.elem_type))
        _set_dims(vi, shape)
    return notes


def _set_dims(vi: onnx.ValueInfoProto, shape: tuple[int, ...]) -> None:
    tt = vi.type.tensor_type
    tt.ClearField("shape")
    tt.shape.SetInParent()  # a scalar input keeps an (empty) shape, i.e. rank 0, not "unknown rank"
    for d in shape:
        tt.shape.dim.add().dim_value = int(d)
