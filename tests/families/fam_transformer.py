"""Tiny transformer (ViT-style) blocks: patch-embedding Conv, tokens as [1, tokens, dim], LayerNorm, two-head
self-attention (Q, K, V from constant weights; Q x K^T and attention x V are products of two activations, batched
over the heads as rank-4 MatMuls), a scale Mul, Softmax on the last axis, projection and residual Add, a second
LayerNorm, an MLP with Gelu, a residual Add, mean-pooling over the tokens and a Gemm classifier.

``vit_block`` states LayerNormalization (opset 17) and Gelu in its Erf form, as PyTorch exports ``nn.GELU()``;
``vit_block_decomposed`` states the layer norms decomposed (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul,
Add, as exporters write them before opset 17), Gelu's tanh approximation decomposed, and a single head (Q x K^T as a
rank-3 MatMul) at opset 13. ``vit_cls`` is ``vit_block`` with a learned class token concatenated in front of the
tokens, a positional embedding added and the classifier reading the class token (Gather), as ViT states them.
"""
from __future__ import annotations

import numpy as np
import onnx

from builders import _finish, _G, _new

DIM, HEADS, PATCH, IMG = 16, 2, 4, 16


def _w(g: _G, shape, scale=None) -> str:
    s = scale if scale is not None else 1.0 / np.sqrt(shape[0])
    return g.const((g.rng.standard_normal(shape) * s).astype(np.float32))


def _dense(g: _G, x: str, cin: int, cout: int) -> str:
    y = g.op("MatMul", [x, _w(g, (cin, cout))])
    return g.op("Add", [y, g.const((g.rng.standard_normal(cout) * 0.1).astype(np.float32), "b")])


def _layernorm(g: _G, x: str, decomposed: bool) -> str:
    gamma = g.const(g.rng.uniform(0.8, 1.2, DIM).astype(np.float32), "gamma")
    beta = g.const((g.rng.standard_normal(DIM) * 0.1).astype(np.float32), "beta")
    if not decomposed:
        return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-5)
    m = g.op("ReduceMean", [x], axes=[-1], keepdims=1)
    d = g.op("Sub", [x, m])
    v = g.op("ReduceMean", [g.op("Pow", [d, g.const(np.float32(2.0), "two")])], axes=[-1], keepdims=1)
    r = g.op("Sqrt", [g.op("Add", [v, g.const(np.float32(1e-5), "eps")])])
    return g.op("Add", [g.op("Mul", [g.op("Div", [d, r]), gamma]), beta])


def _gelu(g: _G, x: str, tanh: bool) -> str:
    half = g.op("Mul", [x, g.const(np.float32(0.5), "half")])
    if tanh:  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = g.op("Mul", [g.op("Mul", [x, x]), x])
        inner = g.op("Add", [x, g.op("Mul", [cube, g.const(np.float32(0.044715), "c")])])
        t = g.op("Tanh", [g.op("Mul", [inner, g.const(np.float32(np.sqrt(2 / np.pi)), "k")])])
    else:  # 0.5 x (1 + erf(x / sqrt 2))
        t = g.op("Erf", [g.op("Div", [x, g.const(np.float32(np.sqrt(2.0)), "sqrt2")])])
    return g.op("Mul", [half, g.op("Add", [t, g.const(np.float32(1.0), "one")])])


def _block(seed: int, decomposed: bool, cls: bool = False) -> onnx.ModelProto:
    g = _new(seed)
    heads = 1 if decomposed else HEADS
    patches = tokens = (IMG // PATCH) ** 2
    dh = DIM // heads
    e = g.conv("x", 3, DIM, k=PATCH, stride=PATCH, pad=0)  # [1, D, 4, 4]
    e = g.op("Reshape", [e, g.const(np.array([1, DIM, patches], np.int64), "shape")])
    t = g.op("Transpose", [e], perm=[0, 2, 1])  # [1, T, D]
    if cls:
        tokens += 1
        t = g.op("Concat", [g.const((g.rng.standard_normal((1, 1, DIM)) * 0.5).astype(np.float32), "cls"), t], axis=1)
        t = g.op("Add", [t, g.const((g.rng.standard_normal((1, tokens, DIM)) * 0.1).astype(np.float32), "pos")])
    h = _layernorm(g, t, decomposed)
    q, k, v = (_dense(g, h, DIM, DIM) for _ in range(3))
    if heads > 1:
        split = g.const(np.array([1, tokens, heads, dh], np.int64), "shape")
        q, k, v = (g.op("Transpose", [g.op("Reshape", [a, split])], perm=[0, 2, 1, 3]) for a in (q, k, v))
        kt = g.op("Transpose", [k], perm=[0, 1, 3, 2])  # [1, H, dh, T]
    else:
        kt = g.op("Transpose", [k], perm=[0, 2, 1])  # [1, D, T]
    s = g.op("MatMul", [q, kt])
    s = g.op("Mul", [s, g.const(np.float32(1.0 / np.sqrt(dh)), "scale")])
    p = g.op("Softmax", [s], axis=-1)
    o = g.op("MatMul", [p, v])
    if heads > 1:
        o = g.op("Reshape", [g.op("Transpose", [o], perm=[0, 2, 1, 3]),
                             g.const(np.array([1, tokens, DIM], np.int64), "shape")])
    t = g.op("Add", [t, _dense(g, o, DIM, DIM)])
    h = _layernorm(g, t, decomposed)
    h = _dense(g, _gelu(g, _dense(g, h, DIM, 2 * DIM), tanh=decomposed), 2 * DIM, DIM)
    t = g.op("Add", [t, h])
    if cls:  # the class token's features (x[:, 0])
        pooled = g.op("Gather", [t, g.const(np.array(0, np.int64), "idx")], axis=1)
    else:
        pooled = g.op("ReduceMean", [t], axes=[1], keepdims=0)  # [1, D]
    w = (g.rng.standard_normal((10, DIM)) / np.sqrt(DIM)).astype(np.float32)
    out = g.op("Gemm", [pooled, g.const(w), g.const(np.zeros(10, np.float32), "b")], transB=1)
    name = "vit_cls" if cls else ("vit_block_decomposed" if decomposed else "vit_block")
    return _finish(g, name, [1, 3, IMG, IMG], out, opset=13 if decomposed else 17)


def vit_block() -> onnx.ModelProto:
    return _block(41, decomposed=False)


def vit_block_decomposed() -> onnx.ModelProto:
    return _block(42, decomposed=True)


def vit_cls() -> onnx.ModelProto:
    return _block(43, decomposed=False, cls=True)


FAMILIES = {"vit_block": vit_block, "vit_block_decomposed": vit_block_decomposed, "vit_cls": vit_cls}
