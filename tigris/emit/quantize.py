"""Stage 7 step 2, quantization scale computation: where it happens.

For every int8 op the spec computes ``effective_scale = input_scale * weight_scale / output_scale`` (per output
channel) and decomposes it into a Q0.31 multiplier and a shift. TiGrIS does this at lowering, with the one integer
definition in :mod:`tigris.ops.qmath` (see docs/numerics.md), so the C kernels and the NumPy reference read the same
``(mult, shift)`` constants; the emitter stores them as the op's ``mult``/``shift`` const blobs or parameters.

A zero, negative or non-finite scale is refused there with a TigrisError naming the tensor.
"""
from tigris.ops.qmath import quantize_multiplier, quantize_multipliers

__all__ = ["quantize_multiplier", "quantize_multipliers"]
