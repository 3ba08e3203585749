"""Stage 7 step 1, layout transpose: where it happens.

The spec lists the NCHW -> NHWC weight transpose as the first step of binary emission. In TiGrIS it is done once,
at lowering (``tigris.ops.<kind>.lower``), because the NumPy reference executor and the C kernels must consume the
very same runtime-layout numbers; the emitter then serializes ``Lowered.consts`` without touching them:

* Conv weights OIHW -> OHWI (packed into output-channel panels, see ``tigris/ops/conv.py``);
* depthwise weights ``[C*m, 1, KH, KW]`` -> ``[KH, KW, C*m]``;
* a Gemm behind a Flatten of an NCHW tensor reads the NHWC activation through column-permuted weights (layout pass).

Activations follow the same mapping; :func:`view_dims` is the one definition of a tensor's physical rank-4 view,
re-exported here so a reader following the spec finds it next to the emitter.
"""
from tigris.layout import from_physical, tensor_view_dims, to_physical, view_dims

__all__ = ["view_dims", "tensor_view_dims", "to_physical", "from_physical"]
