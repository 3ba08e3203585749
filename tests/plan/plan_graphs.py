"""Tiny synthetic graphs for the planner tests, built directly from tigris.ir dataclasses (NCHW shapes, rank-4
activations in the nhwc layout, as the layout pass leaves them)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor


@dataclass
class G:
    """A small builder: each method adds one op and returns the name of its output tensor."""

    dtype: str = "int8"
    tensors: dict[str, Tensor] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)

    def _t(self, name: str, shape: tuple[int, ...]) -> str:
        layout = "nhwc" if len(shape) == 4 else ("nwc" if len(shape) == 3 else "plain")
        self.tensors[name] = Tensor(name, tuple(shape), self.dtype, None, layout)
        return name

    def input(self, name: str, shape: tuple[int, ...]) -> str:
        self.inputs.append(self._t(name, shape))
        return name

    def shape(self, name: str) -> tuple[int, ...]:
        return self.tensors[name].shape

    def _w(self, name: str, shape: tuple[int, ...]) -> str:
        self.weights[name] = np.zeros(shape, np.int8 if self.dtype == "int8" else np.float32)
        self.tensors[name] = Tensor(name, tuple(shape), self.dtype)
        return name

    def conv(self, x: str, oc: int, k: int = 3, s: int = 1, p: int | None = None, d: int = 1, dw: bool = False) -> str:
        n, c, h, w = self.shape(x)
        p = (k - 1) * d // 2 if p is None else p
        eff = k + (k - 1) * (d - 1)
        oh, ow = (h + 2 * p - eff) // s + 1, (w + 2 * p - eff) // s + 1
        i = len(self.ops)
        oc = c if dw else oc
        wname = self._w(f"w{i}", (oc, 1 if dw else c, k, k))
        out = self._t(f"t{i}", (n, oc, oh, ow))
        attrs = dict(kernel_shape=[k, k], strides=[s, s], dilations=[d, d], pads=[p, p, p, p],
                     group=c if dw else 1, fused_activation=None)
        self.ops.append(Op(f"op{i}", "DepthwiseConv" if dw else "Conv", (x, wname), (out,), attrs))
        return out

    def pool(self, x: str, k: int = 2, s: int = 2, kind: str = "MaxPool") -> str:
        n, c, h, w = self.shape(x)
        i = len(self.ops)
        out = self._t(f"t{i}", (n, c, (h - k) // s + 1, (w - k) // s + 1))
        attrs = dict(kernel_shape=[k, k], strides=[s, s], dilations=[1, 1], pads=[0, 0, 0, 0], ceil_mode=0,
                     count_include_pad=0)
        self.ops.append(Op(f"op{i}", kind, (x,), (out,), attrs))
        return out

    def pad(self, x: str, top: int, bottom: int, left: int = 0, right: int = 0, mode: str = "reflect") -> str:
        """A Pad of H and W as pass pad_fold lifts it: a reflect/edge/wrap Pad of the rows states ``row_src``."""
        from tigris.ops.pad import MODES, source_index

        n, c, h, w = self.shape(x)
        i = len(self.ops)
        out = self._t(f"t{i}", (n, c, h + top + bottom, w + left + right))
        attrs = dict(pads=[0, 0, top, left, 0, 0, bottom, right], value=0.0, mode=mode, lifted=True)
        if mode != "constant" and (top or bottom):
            attrs["row_src"] = [int(v) for v in source_index(np.arange(h + top + bottom) - top, h, MODES[mode])]
        self.ops.append(Op(f"op{i}", "Pad", (x,), (out,), attrs))
        return out

    def unary(self, x: str, op_type: str = "Relu") -> str:
        i = len(self.ops)
        out = self._t(f"t{i}", self.shape(x))
        self.ops.append(Op(f"op{i}", op_type, (x,), (out,), {}))
        return out

    def add(self, a: str, b: str) -> str:
        i = len(self.ops)
        out = self._t(f"t{i}", self.shape(a))
        self.ops.append(Op(f"op{i}", "Add", (a, b), (out,), {"fused_activation": None}))
        return out

    def concat(self, xs: list[str]) -> str:
        n, _, h, w = self.shape(xs[0])
        i = len(self.ops)
        out = self._t(f"t{i}", (n, sum(self.shape(x)[1] for x in xs), h, w))
        self.ops.append(Op(f"op{i}", "Concat", tuple(xs), (out,), {"axis": 3}))
        return out

    def gap(self, x: str) -> str:
        n, c, _, _ = self.shape(x)
        i = len(self.ops)
        out = self._t(f"t{i}", (n, c, 1, 1))
        self.ops.append(Op(f"op{i}", "GlobalAveragePool", (x,), (out,), {}))
        return out

    def argmax(self, x: str) -> str:
        """ArgMax over the channels into one int32 channel (the form pass index_ops gives a segmenter's output)."""
        n, _, h, w = self.shape(x)
        i = len(self.ops)
        out = self._t(f"t{i}", (n, 1, h, w))
        self.tensors[out] = Tensor(out, (n, 1, h, w), "int32", None, "nhwc")
        self.ops.append(Op(f"op{i}", "ArgMax", (x,), (out,), {"axis": 1, "keepdims": 1, "select_last_index": 0}))
        return out

    def flatten(self, x: str) -> str:
        n = self.shape(x)[0]
        i = len(self.ops)
        out = self._t(f"t{i}", (n, int(np.prod(self.shape(x)[1:]))))
        self.ops.append(Op(f"op{i}", "Flatten", (x,), (out,), {}))
        return out

    def gemm(self, x: str, oc: int) -> str:
        n, k = self.shape(x)
        i = len(self.ops)
        wname = self._w(f"w{i}", (oc, k))
        out = self._t(f"t{i}", (n, oc))
        self.ops.append(Op(f"op{i}", "Gemm", (x, wname), (out,), {"fused_activation": None}))
        return out

    def graph(self, outputs: list[str]) -> AnalyzedGraph:
        return AnalyzedGraph("synthetic", dict(self.tensors), list(self.ops), list(self.inputs), list(outputs),
                             dict(self.weights))
