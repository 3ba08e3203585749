"""Initializers (and values the loader folded) as NumPy arrays keyed by tensor name.

Only constants some kept op reads are returned: the IR's ``weights`` are what the plan may have to store, and an
initializer nobody reads (old exporters keep training leftovers) would otherwise reach the blob.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from tigris.ir import TigrisError


def initializer_arrays(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for init in graph.initializer:
        try:
            out[init.name] = np.asarray(numpy_helper.to_array(init))
        except Exception as e:  # external data missing, unsupported type
            raise TigrisError(f"cannot read initializer: {e}", init.name) from e
    return out
