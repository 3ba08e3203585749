"""The models bench/plan_peer.py builds for issue 15's comparison with the peer (MobileNetV2-1.0 144, MnasNet-0.5 96,
SqueezeNet-1.1 96; seeded weights, tests/families/builders.py): the loader and the passes take each of them and its
ORT-quantized int8 twin, with the published shapes (input 3 x S x S, 1000 classes), and the float models' untiled plans
agree with ONNX Runtime on the host runtime. Writes only to pytest's tmp dirs."""
from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import numpy as np
import pytest

from tigris import api

HERE = Path(__file__).resolve().parent
logging.getLogger().setLevel(logging.ERROR)  # ORT's quantizer advice


def _bench():
    spec = importlib.util.spec_from_file_location("plan_peer", HERE.parents[1] / "bench" / "plan_peer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BENCH = _bench()
BUILT = sorted(BENCH.builders_of())
SIZES = {"mobilenet_v2_100_144": 144, "mnasnet_050_96": 96, "squeezenet_1_1_96": 96}


@pytest.mark.parametrize("name", BUILT)
def test_built_peer_model_loads(tmp_path, name):
    path = BENCH.model_path(f"built:{name}", tmp_path, tmp_path)
    prep = api.prepare(path)
    g = prep.graph
    (inp,) = g.inputs
    (out,) = g.outputs
    assert tuple(g.tensors[inp].shape) == (1, 3, SIZES[name], SIZES[name])
    assert int(np.prod(g.tensors[out].shape)) == 1000
    assert len(prep.lowered) == len(g.ops) > 20
    # the graph the loader made computes the network ONNX Runtime runs (float: within verify's tolerance)
    pytest.importorskip("onnxruntime")
    x = api.random_inputs(prep, 0)
    ref = api.run_onnxruntime(path, x)
    ref = ref[out] if isinstance(ref, dict) else ref[0]
    got = api.run_plan(api.compile_model(path, 1 << 30, xip=True, prepared=prep).plan_bytes, x).outputs[out]
    assert float(np.abs(got.reshape(ref.shape) - ref).max()) <= 1e-4 * max(1.0, float(np.abs(ref).max()))


@pytest.mark.parametrize("name", ["mobilenet_v2_100_144"])
def test_built_int8_peer_model_loads(tmp_path, name):
    pytest.importorskip("onnxruntime")
    path = BENCH.model_path(f"built:{name}:int8", tmp_path, tmp_path)
    prep = api.prepare(path)
    assert sum(t.dtype == "int8" for t in prep.graph.activations()) > len(prep.graph.ops) // 2
    assert len(prep.lowered) == len(prep.graph.ops)


def test_bench_table_rows_name_their_sources():
    """Every row of the bench's table is a shared model or one of the builders above."""
    for _label, source, filed, peer, _rc in BENCH.MODELS:
        kind, _, rest = source.partition(":")
        assert kind in ("shared", "built")
        if kind == "built":
            assert rest.partition(":")[0] in BUILT
        assert filed > 0 and peer > 0
