"""Random single-op cases for the multiply-accumulate kinds (conv, dwconv, fc), shared by their test files.

A case is built three ways from the same numbers: a normalized IR graph (what the compiler lowers), an ONNX model
(what ONNX Runtime runs: float ops, or DequantizeLinear -> float op -> QuantizeLinear for int8), and physical NHWC /
plain input arrays for the kernels. Nothing here computes an expected result; ORT and the reference do.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from harness import band_view, empty_band, qparam, single_op_graph
from tigris.ir import Tensor
from tigris.ops._geometry import window_from_attrs

OPSET = 13


@dataclass
class MacCase:
    op_type: str  # "Conv", "Conv1D", "DepthwiseConv" or "Gemm"
    n: int
    c: int
    h: int  # rows (L for Conv1D, N rows of the Gemm input)
    w: int  # 1 for Conv1D; unused for Gemm
    oc: int
    group: int = 1
    kernel: tuple[int, int] = (1, 1)
    strides: tuple[int, int] = (1, 1)
    dils: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, left, bottom, right
    act: str | None = None
    bias: bool = True
    int8: bool = False
    scale_mode: str = "normal"  # "normal", "big" (effective scale >= 1), "tiny" or "half" (largest in [1/4, 1/2))
    w_min: bool = False  # int8: some weights are -128 (kernels that sum two products in int16 must notice)
    seed: int = 0
    numerics: str = "onnx"  # the graph's numerics contract (int8 requantization: onnx or tflm)
    data: dict = field(default_factory=dict, repr=False)

    # -- shapes ------------------------------------------------------------------------------------------------------
    @property
    def one_d(self) -> bool:
        return self.op_type == "Conv1D"

    def attrs(self) -> dict:
        if self.op_type == "Gemm":
            return dict(fused_activation=self.act)
        if self.one_d:
            return dict(kernel_shape=[self.kernel[0]], strides=[self.strides[0]], dilations=[self.dils[0]],
                        pads=[self.pads[0], self.pads[2]], group=self.group, fused_activation=self.act)
        return dict(kernel_shape=list(self.kernel), strides=list(self.strides), dilations=list(self.dils),
                    pads=list(self.pads), group=self.group, fused_activation=self.act)

    def out_hw(self) -> tuple[int, int]:
        if self.op_type == "Gemm":
            return self.h, 1
        return window_from_attrs(self.attrs(), self.one_d).out_hw(self.h, self.w)

    def x_shape(self) -> tuple[int, ...]:
        if self.op_type == "Gemm":
            return (self.h, self.c)
        return (self.n, self.c, self.h) if self.one_d else (self.n, self.c, self.h, self.w)

    def y_shape(self) -> tuple[int, ...]:
        oh, ow = self.out_hw()
        if self.op_type == "Gemm":
            return (self.h, self.oc)
        return (self.n, self.oc, oh) if self.one_d else (self.n, self.oc, oh, ow)

    def w_shape(self) -> tuple[int, ...]:
        if self.op_type == "Gemm":
            return (self.oc, self.c)
        icg = 1 if self.op_type == "DepthwiseConv" else self.c // self.group
        return (self.oc, icg, self.kernel[0]) if self.one_d else (self.oc, icg, *self.kernel)

    def phys_in_dims(self) -> tuple[int, int, int, int]:
        if self.op_type == "Gemm":
            return (1, 1, self.h, self.c)
        return (self.n, self.h, 1 if self.one_d else self.w, self.c)

    def phys_out_dims(self) -> tuple[int, int, int, int]:
        oh, ow = self.out_hw()
        if self.op_type == "Gemm":
            return (1, 1, self.h, self.oc)
        return (self.n, oh, 1 if self.one_d else ow, self.oc)

    # -- numbers -----------------------------------------------------------------------------------------------------
    def build(self) -> "MacCase":
        """Draw the tensors (deterministic in ``seed``)."""
        rng = np.random.default_rng(self.seed)
        d = self.data
        wshape = self.w_shape()
        k = int(np.prod(wshape[1:]))
        if self.int8:
            d["x"] = rng.integers(-128, 128, self.x_shape(), dtype=np.int64).astype(np.int8)
            d["w"] = rng.integers(-127, 128, wshape, dtype=np.int64).astype(np.int8)
            d["s_in"] = float(np.float32(rng.uniform(0.005, 0.05)))
            d["zp_in"] = int(rng.integers(-128, 128))
            d["s_w"] = rng.uniform(0.001, 0.02, self.oc).astype(np.float32)
            d["b"] = rng.integers(-3000, 3000, self.oc, dtype=np.int64).astype(np.int32)
            typical = float(d["s_in"]) * float(d["s_w"].max()) * 128 * 127 * np.sqrt(k) / 3
            if self.scale_mode == "big":
                d["s_out"] = float(np.float32(d["s_in"] * float(d["s_w"].min()) / rng.uniform(1.0, 40.0)))
            elif self.scale_mode == "tiny":
                d["s_out"] = float(np.float32(typical * rng.uniform(1e3, 1e6)))
            else:
                d["s_out"] = float(np.float32(typical / 100))
            d["zp_out"] = int(rng.integers(-128, 128))
            if self.scale_mode == "half":  # shift -1 for the largest weight scale: small inputs keep sums in range
                d["x"] = rng.integers(-6, 7, self.x_shape(), dtype=np.int64).astype(np.int8)
                d["zp_in"] = int(rng.integers(-3, 4))
                d["s_out"] = float(np.float32(d["s_in"] * float(d["s_w"].max()) / 0.45))
            if self.w_min:
                d["w"].reshape(-1)[::7] = -128
        else:
            d["x"] = rng.standard_normal(self.x_shape()).astype(np.float32)
            d["w"] = (rng.standard_normal(wshape) / np.sqrt(k)).astype(np.float32)
            d["b"] = rng.standard_normal(self.oc).astype(np.float32)
        return self

    def graph(self):
        d = self.data
        if self.int8:
            tx = Tensor("x", self.x_shape(), "int8", qparam(d["s_in"], d["zp_in"]))
            tw = Tensor("w", self.w_shape(), "int8", qparam(d["s_w"], 0, axis=0))
            tb = Tensor("b", (self.oc,), "int32", qparam(d["s_in"] * d["s_w"], 0, axis=0))
            ty = Tensor("y", self.y_shape(), "int8", qparam(d["s_out"], d["zp_out"]))
        else:
            tx = Tensor("x", self.x_shape())
            tw = Tensor("w", self.w_shape())
            tb = Tensor("b", (self.oc,))
            ty = Tensor("y", self.y_shape())
        weights = {"w": d["w"]}
        ins = ["x", "w"]
        if self.bias:
            weights["b"] = d["b"]
            ins.append("b")
        g = single_op_graph(self.op_type, [tx, tw, tb, ty], weights, ins, ["y"], self.attrs())
        g.numerics = self.numerics
        return g

    def onnx_model(self):
        """The same op for ONNX Runtime: input "x" (int8 for int8 cases), output "y"."""
        d = self.data
        nodes, inits = [], []
        elem = TensorProto.INT8 if self.int8 else TensorProto.FLOAT
        if self.int8:
            inits += [numpy_helper.from_array(np.array(d["s_in"], np.float32), "s_in"),
                      numpy_helper.from_array(np.array(d["zp_in"], np.int8), "zp_in"),
                      numpy_helper.from_array(d["w"], "w_q"),
                      numpy_helper.from_array(d["s_w"], "s_w"),
                      numpy_helper.from_array(np.zeros(self.oc, np.int8), "zp_w"),
                      numpy_helper.from_array(np.array(d["s_out"], np.float32), "s_out"),
                      numpy_helper.from_array(np.array(d["zp_out"], np.int8), "zp_out")]
            nodes += [helper.make_node("DequantizeLinear", ["x", "s_in", "zp_in"], ["xf"]),
                      helper.make_node("DequantizeLinear", ["w_q", "s_w", "zp_w"], ["wf"], axis=0)]
            xin, win = "xf", "wf"
            if self.bias:
                inits += [numpy_helper.from_array(d["b"], "b_q"),
                          numpy_helper.from_array((np.float32(d["s_in"]) * d["s_w"]).astype(np.float32), "s_b"),
                          numpy_helper.from_array(np.zeros(self.oc, np.int32), "zp_b")]
                nodes.append(helper.make_node("DequantizeLinear", ["b_q", "s_b", "zp_b"], ["bf"], axis=0))
        else:
            inits.append(numpy_helper.from_array(d["w"], "wf"))
            xin, win = "x", "wf"
            if self.bias:
                inits.append(numpy_helper.from_array(d["b"], "bf"))
        ins = [xin, win] + (["bf"] if self.bias else [])
        if self.op_type == "Gemm":
            nodes.append(helper.make_node("Gemm", ins, ["acc"], transB=1))
        else:
            a = self.attrs()
            nodes.append(helper.make_node("Conv", ins, ["acc"], kernel_shape=a["kernel_shape"], strides=a["strides"],
                                          dilations=a["dilations"], pads=_onnx_pads(a["pads"]), group=a["group"]))
        last = "acc"
        if self.act == "relu":
            nodes.append(helper.make_node("Relu", [last], ["act"]))
            last = "act"
        elif self.act == "relu6":
            inits += [numpy_helper.from_array(np.array(0, np.float32), "c0"),
                      numpy_helper.from_array(np.array(6, np.float32), "c6")]
            nodes.append(helper.make_node("Clip", [last, "c0", "c6"], ["act"]))
            last = "act"
        if self.int8:
            nodes.append(helper.make_node("QuantizeLinear", [last, "s_out", "zp_out"], ["y"]))
        else:
            nodes.append(helper.make_node("Identity", [last], ["y"]))
        g = helper.make_graph(nodes, "case", [helper.make_tensor_value_info("x", elem, self.x_shape())],
                              [helper.make_tensor_value_info("y", elem, None)], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = 8
        return m

    # -- physical views ----------------------------------------------------------------------------------------------
    def phys_x(self) -> np.ndarray:
        x = self.data["x"]
        if self.op_type == "Gemm":
            return x.reshape(self.phys_in_dims())
        if self.one_d:
            return np.ascontiguousarray(x.transpose(0, 2, 1)[:, :, None, :])
        return np.ascontiguousarray(x.transpose(0, 2, 3, 1))

    def logical_y(self, phys: np.ndarray) -> np.ndarray:
        """A physical output array back in the ONNX logical layout."""
        if self.op_type == "Gemm":
            return phys.reshape(self.y_shape())
        if self.one_d:
            return phys[:, :, 0, :].transpose(0, 2, 1)
        return phys.transpose(0, 3, 1, 2)

    def in_view(self, row0: int = 0, rows: int | None = None):
        d = self.data
        if self.int8:
            return band_view(self.phys_x(), row0, rows, "int8", d["s_in"], d["zp_in"])
        return band_view(self.phys_x(), row0, rows, "float32")

    def out_view(self, row0: int = 0, rows: int | None = None, fill=None):
        d = self.data
        if self.int8:
            return empty_band(self.phys_out_dims(), "int8", row0, rows, 77 if fill is None else fill,
                              d["s_out"], d["zp_out"])
        return empty_band(self.phys_out_dims(), "float32", row0, rows, np.nan if fill is None else fill)


def _onnx_pads(p: list[int]) -> list[int]:
    """Our (top, left, bottom, right) / (begin, end) are already ONNX's (x1_begin, x2_begin, x1_end, x2_end)."""
    return list(p)


@st.composite
def conv_cases(draw, op_type: str | None = None, int8: bool | None = None, max_hw: int = 9) -> MacCase:
    """Random conv-family cases with the edges: 1x1 images, odd sizes, stride 2 with padding, dilation, channel
    counts that are not multiples of 4, groups, depth multipliers, extreme requantization scales."""
    op_type = op_type or draw(st.sampled_from(["Conv", "Conv1D", "DepthwiseConv"]))
    int8 = draw(st.booleans()) if int8 is None else int8
    one_d = op_type == "Conv1D"
    kh = draw(st.integers(1, 5))
    kw = 1 if one_d else draw(st.integers(1, 4))
    sh = draw(st.integers(1, 3))
    sw = 1 if one_d else draw(st.integers(1, 3))
    dh = draw(st.integers(1, 3))
    dw = 1 if one_d else draw(st.integers(1, 2))
    pt, pb = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    pl, pr = (0, 0) if one_d else (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    span_h, span_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    h = draw(st.integers(max(1, span_h - pt - pb), max(1, span_h - pt - pb) + max_hw))
    w = 1 if one_d else draw(st.integers(max(1, span_w - pl - pr), max(1, span_w - pl - pr) + max_hw))
    if op_type == "DepthwiseConv":
        c = draw(st.integers(1, 21))
        m = draw(st.sampled_from([1, 1, 1, 2, 3]))
        oc, group = c * m, c
    else:
        group = draw(st.sampled_from([1, 1, 1, 2, 3]))
        c = group * draw(st.integers(1, 6))
        oc = group * draw(st.integers(1, 19))
    return MacCase(
        op_type=op_type, n=draw(st.sampled_from([1, 1, 1, 2])), c=c, h=h, w=w, oc=oc, group=group,
        kernel=(kh, kw), strides=(sh, sw), dils=(dh, dw), pads=(pt, pl, pb, pr),
        act=draw(st.sampled_from([None, "relu", "relu6"])), bias=draw(st.booleans()), int8=int8,
        scale_mode=draw(st.sampled_from(["normal", "normal", "normal", "big", "tiny"])),
        seed=draw(st.integers(0, 2**31 - 1)), numerics=draw(st.sampled_from(["onnx", "tflm"])),
    ).build()


@st.composite
def fc_cases(draw, int8: bool | None = None) -> MacCase:
    int8 = draw(st.booleans()) if int8 is None else int8
    return MacCase(
        op_type="Gemm", n=1, c=draw(st.integers(1, 70)), h=draw(st.integers(1, 3)), w=1,
        oc=draw(st.integers(1, 40)), act=draw(st.sampled_from([None, "relu", "relu6"])), bias=draw(st.booleans()),
        int8=int8, scale_mode=draw(st.sampled_from(["normal", "normal", "big", "tiny"])),
        seed=draw(st.integers(0, 2**31 - 1)), numerics=draw(st.sampled_from(["onnx", "tflm"])),
    ).build()
