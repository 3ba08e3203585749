"""Reading a ``.tflite`` flatbuffer into plain Python records, checking every offset before it is followed.

The generated accessors of the ``tflite`` package read wherever the file's offsets point. A corrupted file can make
them raise almost any exception, or claim a vector of four billion entries that a loop would then walk for minutes.
So this module never iterates a vector whose claimed length does not fit in the file, checks every tensor, buffer and
opcode index against its table, and turns any failure of the accessors into one :class:`TigrisError` naming the file.
Nothing outside this module touches the flatbuffer.

The records are what the importer (:mod:`tigris.load.tflite.convert`) needs and nothing more: tensors with their
shape, type, constant data and quantization; operators with their builtin name (or custom code), operand indices and
options as a dict.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tigris.ir import TigrisError

IDENTIFIER = b"TFL3"

# TensorType enum values -> NumPy dtype of the stored data (the IR dtype name is str(dtype)).
_TYPES: dict[int, np.dtype] = {
    0: np.dtype("<f4"),  # FLOAT32
    1: np.dtype("<f2"),  # FLOAT16
    2: np.dtype("<i4"),  # INT32
    3: np.dtype("u1"),  # UINT8
    4: np.dtype("<i8"),  # INT64
    6: np.dtype("?"),  # BOOL
    7: np.dtype("<i2"),  # INT16
    9: np.dtype("i1"),  # INT8
    10: np.dtype("<f8"),  # FLOAT64
}

# Largest element count of one tensor the importer accepts: far above any microcontroller model, small enough that
# sizes computed from a corrupted shape stay harmless.
MAX_ELEMENTS = 1 << 31


def is_tflite(data: bytes) -> bool:
    """A TFLite flatbuffer carries its file identifier at bytes 4..8 (after the root table offset)."""
    return len(data) >= 8 and data[4:8] == IDENTIFIER


@dataclass
class TflQuant:
    scale: np.ndarray  # float32
    zero_point: np.ndarray  # int64
    dim: int  # quantized_dimension as stored


@dataclass
class TflTensor:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype | None  # None: a type the IR cannot hold
    type_code: int
    data: np.ndarray | None  # constant contents (shape applied), None for activations
    quant: TflQuant | None
    is_variable: bool = False
    signature: tuple[int, ...] | None = None


@dataclass
class TflOp:
    index: int
    builtin: str  # e.g. "CONV_2D", or "CUSTOM"
    custom_code: str | None
    version: int
    inputs: tuple[int, ...]  # -1 = omitted optional operand
    outputs: tuple[int, ...]
    options: dict[str, Any] = field(default_factory=dict)
    options_type: str = "NONE"


@dataclass
class TflModel:
    version: int
    tensors: list[TflTensor]
    ops: list[TflOp]
    inputs: list[int]
    outputs: list[int]
    subgraphs: int
    description: str = ""


def _enum_names(cls: type) -> dict[int, str]:
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


class _Reader:
    def __init__(self, data: bytes, where: str):
        import tflite  # runtime dependency; imported here so ONNX-only use never pays for it

        self.tfl = tflite
        self.buf = data
        self.n = len(data)
        self.where = where
        self.op_names = _enum_names(tflite.BuiltinOperator)
        self.opt_names = _enum_names(tflite.BuiltinOptions)

    def fail(self, what: str) -> TigrisError:
        return TigrisError(f"corrupt TFLite file: {what}", self.where)

    def length(self, obj: Any, name: str, elem: int) -> int:
        """A vector's claimed length, refused unless ``length * elem`` bytes fit in the file."""
        n = int(getattr(obj, f"{name}Length")())
        if n < 0 or n * max(elem, 1) > self.n:
            raise self.fail(f"{name} vector of {n} entries does not fit in {self.n} bytes")
        return n

    def ints(self, obj: Any, name: str, elem: int = 4) -> list[int]:
        n = self.length(obj, name, elem)
        if n == 0:
            return []
        arr = getattr(obj, f"{name}AsNumpy")()
        if not isinstance(arr, np.ndarray) or arr.size != n:
            raise self.fail(f"{name} vector unreadable")
        return [int(v) for v in arr]

    def floats(self, obj: Any, name: str) -> np.ndarray:
        n = self.length(obj, name, 4)
        if n == 0:
            return np.zeros(0, np.float32)
        arr = getattr(obj, f"{name}AsNumpy")()
        if not isinstance(arr, np.ndarray) or arr.size != n:
            raise self.fail(f"{name} vector unreadable")
        return np.asarray(arr, dtype=np.float32).copy()

    def string(self, raw: Any) -> str:
        if raw is None:
            return ""
        if len(raw) > self.n:
            raise self.fail("string longer than the file")
        return bytes(raw).decode("utf-8", "replace")

    # -- the model --------------------------------------------------------------------------------------------
    def model(self) -> TflModel:
        t = self.tfl
        if self.n < 8:
            raise self.fail(f"{self.n} bytes is too short for a flatbuffer")
        root = int.from_bytes(self.buf[:4], "little")
        if root + 4 > self.n:
            raise self.fail(f"root table offset {root} is outside the file")
        m = t.Model.GetRootAs(self.buf, 0)
        version = int(m.Version())
        if version != 3:
            raise self.fail(f"schema version {version} (only version 3 exists)")
        n_sub = self.length(m, "Subgraphs", 4)
        if n_sub < 1:
            raise self.fail("no subgraph")
        n_buf = self.length(m, "Buffers", 4)
        buffers = [m.Buffers(i) for i in range(n_buf)]
        n_codes = self.length(m, "OperatorCodes", 4)
        codes = []
        for i in range(n_codes):
            oc = m.OperatorCodes(i)
            if oc is None:
                raise self.fail(f"operator code {i} missing")
            code = max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode()))
            name = self.op_names.get(code, f"BUILTIN_{code}")
            custom = self.string(oc.CustomCode()) if name == "CUSTOM" else None
            codes.append((name, custom, int(oc.Version())))
        sg = m.Subgraphs(0)
        if sg is None:
            raise self.fail("subgraph 0 missing")
        n_t = self.length(sg, "Tensors", 4)
        tensors = [self.tensor(sg.Tensors(i), i, buffers) for i in range(n_t)]
        inputs = self.ints(sg, "Inputs")
        outputs = self.ints(sg, "Outputs")
        for i in inputs + outputs:
            if not 0 <= i < n_t:
                raise self.fail(f"graph input/output index {i} outside the {n_t} tensors")
        n_ops = self.length(sg, "Operators", 4)
        ops = []
        for k in range(n_ops):
            op = sg.Operators(k)
            if op is None:
                raise self.fail(f"operator {k} missing")
            ci = int(op.OpcodeIndex())
            if not 0 <= ci < n_codes:
                raise self.fail(f"operator {k} opcode index {ci} outside the {n_codes} operator codes")
            name, custom, ver = codes[ci]
            ins = tuple(self.ints(op, "Inputs"))
            outs = tuple(self.ints(op, "Outputs"))
            for j in ins:
                if not -1 <= j < n_t:
                    raise self.fail(f"operator {k} ({name}) input index {j} outside the {n_t} tensors")
            for j in outs:
                if not 0 <= j < n_t:
                    raise self.fail(f"operator {k} ({name}) output index {j} outside the {n_t} tensors")
            opt_type, opts = self.options(op)
            ops.append(TflOp(k, name, custom, ver, ins, outs, opts, opt_type))
        desc = self.string(m.Description())
        return TflModel(version, tensors, ops, inputs, outputs, n_sub, desc)

    def tensor(self, tt: Any, index: int, buffers: list[Any]) -> TflTensor:
        if tt is None:
            raise self.fail(f"tensor {index} missing")
        name = self.string(tt.Name())
        shape = tuple(self.ints(tt, "Shape"))
        if any(d < 0 for d in shape):
            raise self.fail(f"tensor {index} ({name}) has a negative dimension {list(shape)}")
        numel = 1
        for d in shape:
            numel *= d
            if numel > MAX_ELEMENTS:
                raise self.fail(f"tensor {index} ({name}) shape {list(shape)} is implausibly large")
        sig = tuple(self.ints(tt, "ShapeSignature")) or None
        code = int(tt.Type())
        dtype = _TYPES.get(code)
        bi = int(tt.Buffer())
        if not 0 <= bi < max(len(buffers), 1):
            raise self.fail(f"tensor {index} ({name}) buffer index {bi} outside the {len(buffers)} buffers")
        data = None
        if buffers and bi > 0:
            raw = self.buffer_bytes(buffers[bi], bi)
            if raw is not None and len(raw):
                if dtype is None:
                    raise self.fail(f"tensor {index} ({name}) holds constant data of an unsupported type {code}")
                need = numel * dtype.itemsize
                if len(raw) != need:
                    raise self.fail(f"tensor {index} ({name}) buffer holds {len(raw)} bytes, its shape "
                                    f"{list(shape)} needs {need}")
                data = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        q = tt.Quantization()
        quant = None
        if q is not None:
            scale = self.floats(q, "Scale")
            zp = np.asarray(self.ints(q, "ZeroPoint", 8), dtype=np.int64)
            if scale.size:
                if zp.size == 0:
                    zp = np.zeros(scale.size, np.int64)
                if zp.size != scale.size:
                    raise self.fail(f"tensor {index} ({name}) has {scale.size} scales and {zp.size} zero points")
                quant = TflQuant(scale, zp, int(q.QuantizedDimension()))
        return TflTensor(index, name, shape, dtype, code, data, quant, bool(tt.IsVariable()), sig)

    def buffer_bytes(self, b: Any, bi: int) -> bytes | None:
        if b is None:
            return None
        n = self.length(b, "Data", 1)
        if n:
            arr = b.DataAsNumpy()
            if not isinstance(arr, np.ndarray) or arr.size != n:
                raise self.fail(f"buffer {bi} unreadable")
            return arr.tobytes()
        off, size = int(b.Offset()), int(b.Size())
        if off > 1 and size:  # data stored after the flatbuffer (models over 2 GB): offsets from the file start
            if off + size > self.n:
                raise self.fail(f"buffer {bi} at offset {off} with {size} bytes is outside the file")
            return bytes(self.buf[off:off + size])
        return None

    def options(self, op: Any) -> tuple[str, dict[str, Any]]:
        code = int(op.BuiltinOptionsType())
        name = self.opt_names.get(code, f"OPTIONS_{code}")
        if code == 0:
            return "NONE", {}
        table = op.BuiltinOptions()
        cls = getattr(self.tfl, name, None)
        if table is None or cls is None:
            return name, {}
        obj = cls()
        obj.Init(table.Bytes, table.Pos)
        out: dict[str, Any] = {}
        for attr in dir(cls):
            if attr.startswith("_") or attr in ("Init", "GetRootAs") or attr.startswith("GetRootAs") \
                    or attr.endswith("BufferHasIdentifier") or attr.endswith("AsNumpy") or attr.endswith("IsNone"):
                continue
            fn = getattr(obj, attr)
            if not callable(fn):
                continue
            if attr.endswith("Length"):
                continue
            if hasattr(obj, f"{attr}Length"):  # a vector field (e.g. ReshapeOptions.NewShape, SqueezeDims)
                out[attr] = self.ints(obj, attr)
                continue
            try:
                out[attr] = fn()
            except TypeError:  # needs an argument: not a scalar field
                continue
        return name, out


def read_tflite(data: bytes, where: str) -> TflModel:
    """Parse and check a TFLite flatbuffer; every failure is a one-line :class:`TigrisError` naming ``where``."""
    if not is_tflite(data):
        raise TigrisError("not a TFLite file (no TFL3 identifier at byte 4)", where)
    try:
        return _Reader(data, where).model()
    except TigrisError:
        raise
    except RecursionError:
        raise TigrisError("corrupt TFLite file: nesting too deep", where) from None
    except MemoryError:
        raise TigrisError("corrupt TFLite file: sizes exhaust memory", where) from None
    except Exception as e:  # the generated accessors fail with struct.error, IndexError, ValueError, ...
        raise TigrisError(f"corrupt TFLite file: {type(e).__name__}: {e}", where) from None
