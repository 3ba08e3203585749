"""The external references for a ``.tflite`` model: the TFLite interpreter (``ai-edge-litert``) and TFLite Micro's
Python interpreter (``tflite-micro``). Both are verify/test extras, not runtime dependencies: a missing one is a
one-line :class:`TigrisError` saying which package to install.

Inputs and outputs are keyed by the IR's tensor names (the importer's names: the TFLite tensor name, made unique)
and are in the model's declared (NHWC) shapes and dtypes, as the host Session takes and returns them.

Old converters wrote ``quantized_dimension = 3`` on 1-D per-channel bias tensors (TFLM's person detection model);
the importer reads that as axis 0, and current LiteRT refuses the file, so :func:`loadable_bytes` patches the field
to 0 in a copy of the bytes before handing the model to an interpreter. The model itself is never modified.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tigris.ir import TigrisError

_QDIM_SLOT = 16  # vtable offset of QuantizationParameters.quantized_dimension (field 6: 4 + 2 * 6)


def loadable_bytes(data: bytes) -> bytes:
    """The model bytes with every out-of-range ``quantized_dimension`` of a per-channel 1-D tensor set to 0."""
    import tflite

    buf = bytearray(data)
    m = tflite.Model.GetRootAs(bytes(data), 0)
    for s in range(m.SubgraphsLength()):
        sg = m.Subgraphs(s)
        for i in range(sg.TensorsLength()):
            t = sg.Tensors(i)
            q = t.Quantization()
            if q is None or q.ScaleLength() <= 1 or q.QuantizedDimension() < t.ShapeLength():
                continue
            o = q._tab.Offset(_QDIM_SLOT)
            if o:
                pos = q._tab.Pos + o
                buf[pos:pos + 4] = (0).to_bytes(4, "little")
    return bytes(buf)


def _names(path: str | Path) -> tuple[list[str], list[str]]:
    """The importer's names of the graph inputs and outputs, in the model's order."""
    from tigris.load.tflite.convert import Importer
    from tigris.load.tflite.reader import read_tflite

    m = read_tflite(Path(path).read_bytes(), str(path))
    imp = Importer(m, Path(path).stem, str(path))
    return [imp.names[i] for i in m.inputs if m.tensors[i].data is None], [imp.names[i] for i in m.outputs]


def run_litert(path: str | Path, inputs: dict[str, np.ndarray], reference_kernels: bool = True
               ) -> dict[str, np.ndarray]:
    """The TFLite interpreter on the model, one thread; ``reference_kernels`` selects TFLite's reference kernels
    (``OpResolverType.BUILTIN_REF``) rather than the optimized ones."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        raise TigrisError("verifying a .tflite model needs the TFLite interpreter: pip install ai-edge-litert",
                          "ai-edge-litert") from None
    in_names, out_names = _names(path)
    data = loadable_bytes(Path(path).read_bytes())
    resolver = OpResolverType.BUILTIN_REF if reference_kernels else OpResolverType.BUILTIN
    try:
        it = Interpreter(model_content=data, num_threads=1, experimental_op_resolver_type=resolver)
        it.allocate_tensors()
        for d, n in zip(it.get_input_details(), in_names):
            it.set_tensor(d["index"], np.asarray(inputs[n]).astype(d["dtype"]).reshape(d["shape"]))
        it.invoke()
        return {n: np.array(it.get_tensor(d["index"])) for d, n in zip(it.get_output_details(), out_names)}
    except (RuntimeError, ValueError) as e:
        raise TigrisError(f"the TFLite interpreter cannot run the model: {str(e).splitlines()[0]}", str(path)) \
            from None


def run_tflm(path: str | Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """TFLite Micro's Python interpreter on the model (what the model gives on a device built with TFLM)."""
    try:
        from tflite_micro import runtime
    except ImportError:
        raise TigrisError("comparing with TFLite Micro needs its interpreter: pip install --pre tflite-micro",
                          "tflite-micro") from None
    in_names, out_names = _names(path)
    data = loadable_bytes(Path(path).read_bytes())
    try:
        it = runtime.Interpreter.from_bytes(data, arena_size=max(len(data) * 10, 4 << 20))
        for k, n in enumerate(in_names):
            it.set_input(np.ascontiguousarray(inputs[n]), k)
        it.invoke()
        return {n: np.array(it.get_output(k)) for k, n in enumerate(out_names)}
    except (RuntimeError, ValueError) as e:
        raise TigrisError(f"TFLite Micro cannot run the model: {str(e).splitlines()[0]}", str(path)) from None
