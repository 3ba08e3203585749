"""Stage 7: binary emission. The .tgrs format (``format``), its C header (``gen_header``), the writer, the reader
and ``tigris inspect``.

Spec steps and where they live: 1 layout transpose and 2 Q0.31 requantization happen at lowering (``emit/layout.py``
and ``emit/quantize.py`` say so and re-export the helpers); 3 weight grouping and LZ4 is ``emit/weights.py``; 4 the
binary write is ``emit/writer.py``. ``emit/reader.py`` validates a plan exactly like the C loader.
"""
from tigris.emit.inspect import inspect_onnx, inspect_plan
from tigris.emit.reader import PlanFile, PlanFormatError, read_plan
from tigris.emit.weights import weight_bytes_per_op
from tigris.emit.writer import check_flash, emit_plan

# docs/design.md names the writer write_plan; keep both spellings.
write_plan = emit_plan

__all__ = [
    "emit_plan",
    "write_plan",
    "read_plan",
    "PlanFile",
    "PlanFormatError",
    "weight_bytes_per_op",
    "check_flash",
    "inspect_plan",
    "inspect_onnx",
]
