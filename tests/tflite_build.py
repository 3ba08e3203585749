"""Hand-built TFLite flatbuffers for tests: a few tensors and operators written with the ``flatbuffers`` Builder and
the ``tflite`` package's generated table builders (TensorFlow is not a dependency).

``Model`` collects tensors and operators; ``bytes()`` returns the finished ``.tflite`` file. Options are given as
``{"FieldName": value}`` for the operator's options table (e.g. ``{"StrideH": 1, "Padding": 1}``); list values become
int vectors (``NewShape``, ``SqueezeDims``).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
import tflite

TYPES = {"float32": 0, "float16": 1, "int32": 2, "uint8": 3, "int64": 4, "bool": 6, "int16": 7, "int8": 9}
ACT = {None: 0, "relu": 1, "relu_n1_to_1": 2, "relu6": 3, "tanh": 4}


def _mod(name: str):
    return importlib.import_module(f"tflite.{name}")


@dataclass
class T:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    data: np.ndarray | None = None
    scale: list[float] | None = None
    zero_point: list[int] | None = None
    qdim: int = 0
    share: int | None = None  # index of an earlier constant tensor whose buffer this one reads


@dataclass
class O:
    op: str  # builtin name, or "CUSTOM:code"
    inputs: list[int]
    outputs: list[int]
    options_type: str | None = None  # e.g. "Conv2DOptions"
    options: dict[str, Any] = field(default_factory=dict)


class Model:
    def __init__(self) -> None:
        self.tensors: list[T] = []
        self.ops: list[O] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def tensor(self, name: str, shape, dtype: str = "float32", data=None, scale=None, zero_point=None,
               qdim: int = 0, share: int | None = None) -> int:
        if data is not None:
            data = np.asarray(data, dtype={"float16": np.float16}.get(dtype, dtype)).reshape(shape)
        sc = None if scale is None else list(np.atleast_1d(np.asarray(scale, np.float32)))
        zp = None if zero_point is None else [int(z) for z in np.atleast_1d(zero_point)]
        self.tensors.append(T(name, tuple(shape), dtype, data, sc, zp, qdim, share))
        return len(self.tensors) - 1

    def op(self, op: str, inputs: list[int], outputs: list[int], options_type: str | None = None, **options) -> None:
        self.ops.append(O(op, list(inputs), list(outputs), options_type, options))

    # -- serialization ------------------------------------------------------------------------------------------
    def bytes(self) -> bytes:
        b = flatbuffers.Builder(1024)
        codes: list[tuple[int, str | None]] = []
        for o in self.ops:
            key = (32, o.op[7:]) if o.op.startswith("CUSTOM:") else (getattr(tflite.BuiltinOperator, o.op), None)
            if key not in codes:
                codes.append(key)
        # buffers: 0 is the empty sentinel, then one per constant tensor
        buf_data = [None] + [t.data for t in self.tensors if t.data is not None and t.share is None]
        buf_offsets = []
        for d in buf_data:
            vec = None
            if d is not None:
                raw = np.ascontiguousarray(d).tobytes()
                b.StartVector(1, len(raw), 16)
                for byte in reversed(raw):
                    b.PrependUint8(byte)
                vec = b.EndVector()
            tflite.BufferStart(b)
            if vec is not None:
                tflite.BufferAddData(b, vec)
            buf_offsets.append(tflite.BufferEnd(b))
        tensor_offsets = []
        bi = 0
        buf_of: dict[int, int] = {}
        for k, t in enumerate(self.tensors):
            name = b.CreateString(t.name)
            shape = self._ivec(b, t.shape)
            q = None
            if t.scale is not None:
                sc = self._fvec(b, t.scale)
                zp = self._lvec(b, t.zero_point or [0] * len(t.scale))
                tflite.QuantizationParametersStart(b)
                tflite.QuantizationParametersAddScale(b, sc)
                tflite.QuantizationParametersAddZeroPoint(b, zp)
                tflite.QuantizationParametersAddQuantizedDimension(b, t.qdim)
                q = tflite.QuantizationParametersEnd(b)
            buf = 0
            if t.share is not None:
                buf = buf_of[t.share]
            elif t.data is not None:
                bi += 1
                buf = bi
            buf_of[k] = buf
            tflite.TensorStart(b)
            tflite.TensorAddShape(b, shape)
            tflite.TensorAddType(b, TYPES[t.dtype])
            tflite.TensorAddBuffer(b, buf)
            tflite.TensorAddName(b, name)
            if q is not None:
                tflite.TensorAddQuantization(b, q)
            tensor_offsets.append(tflite.TensorEnd(b))
        op_offsets = []
        for o in self.ops:
            opts = self._options(b, o) if o.options_type else None
            custom_opts = None
            ins, outs = self._ivec(b, o.inputs), self._ivec(b, o.outputs)
            tflite.OperatorStart(b)
            key = (32, o.op[7:]) if o.op.startswith("CUSTOM:") else (getattr(tflite.BuiltinOperator, o.op), None)
            tflite.OperatorAddOpcodeIndex(b, codes.index(key))
            tflite.OperatorAddInputs(b, ins)
            tflite.OperatorAddOutputs(b, outs)
            if opts is not None:
                tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, o.options_type))
                tflite.OperatorAddBuiltinOptions(b, opts)
            del custom_opts
            op_offsets.append(tflite.OperatorEnd(b))
        tv = self._tvec(b, tensor_offsets)
        ov = self._tvec(b, op_offsets)
        iv, outv = self._ivec(b, self.inputs), self._ivec(b, self.outputs)
        sname = b.CreateString("main")
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tv)
        tflite.SubGraphAddInputs(b, iv)
        tflite.SubGraphAddOutputs(b, outv)
        tflite.SubGraphAddOperators(b, ov)
        tflite.SubGraphAddName(b, sname)
        sg = tflite.SubGraphEnd(b)
        code_offsets = []
        for code, custom in codes:
            cc = b.CreateString(custom) if custom is not None else None
            tflite.OperatorCodeStart(b)
            tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            tflite.OperatorCodeAddBuiltinCode(b, code)
            tflite.OperatorCodeAddVersion(b, 1)
            if cc is not None:
                tflite.OperatorCodeAddCustomCode(b, cc)
            code_offsets.append(tflite.OperatorCodeEnd(b))
        cv = self._tvec(b, code_offsets)
        sgv = self._tvec(b, [sg])
        bv = self._tvec(b, buf_offsets)
        desc = b.CreateString("tigris test")
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, cv)
        tflite.ModelAddSubgraphs(b, sgv)
        tflite.ModelAddDescription(b, desc)
        tflite.ModelAddBuffers(b, bv)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    def _options(self, b: flatbuffers.Builder, o: O) -> int:
        mod = _mod(o.options_type)
        vecs = {k: self._ivec(b, v) for k, v in o.options.items() if isinstance(v, (list, tuple))}
        getattr(mod, f"{o.options_type}Start")(b)
        for k, v in o.options.items():
            getattr(mod, f"{o.options_type}Add{k}")(b, vecs.get(k, v))
        return getattr(mod, f"{o.options_type}End")(b)

    @staticmethod
    def _ivec(b: flatbuffers.Builder, vals) -> int:
        vals = [int(v) for v in vals]
        b.StartVector(4, len(vals), 4)
        for v in reversed(vals):
            b.PrependInt32(v)
        return b.EndVector()

    @staticmethod
    def _lvec(b: flatbuffers.Builder, vals) -> int:
        b.StartVector(8, len(vals), 8)
        for v in reversed(vals):
            b.PrependInt64(int(v))
        return b.EndVector()

    @staticmethod
    def _fvec(b: flatbuffers.Builder, vals) -> int:
        b.StartVector(4, len(vals), 4)
        for v in reversed(vals):
            b.PrependFloat32(float(v))
        return b.EndVector()

    @staticmethod
    def _tvec(b: flatbuffers.Builder, offs) -> int:
        b.StartVector(4, len(offs), 4)
        for o in reversed(offs):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()
