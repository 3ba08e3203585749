"""Stage 7: binary emission. The .tgrs format (``format``), its C header (``gen_header``), the writer, the reader
and ``tigris inspect``.

The weight layout transpose and the Q0.31 requantization constants are computed at lowering (``tigris/ops``, with
``tigris.layout`` and ``tigris.ops.qmath``), so the reference executor and the C kernels read the same numbers; here
``emit/weights.py`` groups weights per unit (and LZ4-compresses them), ``emit/writer.py`` writes the bytes, and
``emit/reader.py`` validates a plan exactly like the C loader.
"""
from tigris.emit.inspect import inspect_onnx, inspect_plan
from tigris.emit.reader import PlanFile, PlanFormatError, read_plan
from tigris.emit.weights import weight_bytes_per_op
from tigris.emit.writer import check_flash, emit_plan

__all__ = [
    "emit_plan",
    "read_plan",
    "PlanFile",
    "PlanFormatError",
    "weight_bytes_per_op",
    "check_flash",
    "inspect_plan",
    "inspect_onnx",
]
