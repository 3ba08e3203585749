"""Stage 1 for TFLite: a ``.tflite`` flatbuffer -> the same :class:`~tigris.ir.AnalyzedGraph` the ONNX loader builds.

:mod:`tigris.load.tflite.reader` parses the flatbuffer with every offset checked; :mod:`tigris.load.tflite.convert`
maps each builtin operator onto the IR's vocabulary (docs/tflite.md). The graph is marked ``source = "tflite"``.
"""
from __future__ import annotations

from pathlib import Path

from tigris.ir import AnalyzedGraph, TigrisError
from tigris.load.tflite.convert import Importer
from tigris.load.tflite.reader import is_tflite, read_tflite

__all__ = ["load_tflite", "load_tflite_bytes", "is_tflite"]


def load_tflite(path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None) -> AnalyzedGraph:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise TigrisError(f"cannot read model: {e.strerror}", str(p)) from None
    return load_tflite_bytes(data, input_shapes, name=p.stem, where=str(p))


def load_tflite_bytes(data: bytes, input_shapes: dict[str, tuple[int, ...]] | None = None, name: str = "model",
                      where: str = "model") -> AnalyzedGraph:
    model = read_tflite(data, where)
    if model.subgraphs > 1:
        # control flow (WHILE, IF, CALL_ONCE) lives in further subgraphs; its operators are reported unsupported
        pass
    imp = Importer(model, name, where)
    given = dict(input_shapes or {})
    names = {imp.names[i]: i for i in model.inputs}
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise TigrisError(f"--input-shape names unknown input(s) {unknown}; the model's inputs are {sorted(names)}",
                          unknown[0])
    for n, shape in given.items():
        declared = model.tensors[names[n]].shape
        if tuple(shape) != tuple(declared):
            raise TigrisError(f"input shape {tuple(shape)} differs from the TFLite model's static shape "
                              f"{tuple(declared)} (a TFLite model's shapes are fixed when it is converted)", n)
    for i in model.inputs:
        t = model.tensors[i]
        if t.signature and any(d < 0 for d in t.signature):
            imp.notes.append(f"input {imp.names[i]}: dynamic dimensions {list(t.signature)} taken as the stored "
                             f"shape {list(t.shape)}")
    try:
        return imp.run()
    except TigrisError:
        raise
    except RecursionError:
        raise TigrisError("cannot import TFLite model: graph nesting too deep", where) from None
    except Exception as e:  # an internal failure on a strange model still names the file, in one line
        raise TigrisError(f"cannot import TFLite model: {type(e).__name__}: {e}", where) from None
