"""``tigris inspect``: what a .tgrs plan or an .onnx model contains. Reads only: never compiles or runs.

Both functions return plain JSON-ready dicts (``tigris inspect --json`` prints them as they are; the text report
walks the same dict). Every list is in file order or sorted, so the output is deterministic.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from tigris.emit import format as F
from tigris.emit.reader import IoInfo, PlanFile, read_plan
from tigris.ir import TigrisError


def _io(io: IoInfo) -> dict[str, Any]:
    return {
        "name": io.name,
        "shape": list(io.shape),
        "dtype": io.decl_dtype,
        "stored_dtype": io.dtype,
        "layout": io.layout,
        "quant": None if io.decl_quant is None else {"scale": io.decl_quant[0], "zero_point": io.decl_quant[1]},
        "stored_quant": None if io.quant is None else {"scale": io.quant[0], "zero_point": io.quant[1]},
        "arena": io.arena,
        "offset": io.offset,
        "nbytes": io.nbytes,
    }


def plan_summary(pf: PlanFile) -> dict[str, Any]:
    names = [t.name for t in pf.tensors]
    stages = [
        {
            "index": s.index,
            "unit": s.unit,
            "ops": len(s.ops),
            "peak_bytes": s.peak_bytes,
            "weight_bytes": s.weight_bytes,
            "inputs": [names[i] for i in s.inputs],
            "outputs": [names[i] for i in s.outputs],
            "tiled": s.tiled,
            "tile_h": s.tile_h if s.tiled else None,
            "tiles": s.tiles,
            "halo": s.halo,
            "chain": s.chain,
        }
        for s in pf.stages
    ]
    units = []
    for u in pf.units:
        entry: dict[str, Any] = {
            "index": u.index,
            "stages": list(u.stages),
            "kernel_calls": u.op_count,
            "tiled": u.tiled,
            "tiles": u.tiles,
            "peak_bytes": u.peak_bytes,
            "weight_prefix_bytes": u.weight_bytes,
            "weight_stored_bytes": u.wblob_size,
            "weights_shuffled": u.shuffled,  # LZ4 block over byte planes (unit flag SHUFFLE)
            "accumulates_gap": u.accumulates,  # last op is a GlobalAveragePool summing over the tiles (ACCUM)
            "column_split": u.col_split,  # tiles also cut along W, dense column bands (COLS)
            "overwrites_input": u.overwrites,  # a spill may share a dying reloaded input's slow home (OVERWRITE)
            "reload": [names[i] for i in u.reload],
            "spill": [names[i] for i in u.spill],
        }
        if u.tiled:
            entry["tile_rows"] = [
                {names[p.tensor]: [r0, r0 + n] for p, (r0, n) in zip(u.placements, tile)} for tile in u.tile_rows
            ]
        if u.col_split:
            entry["tile_cols"] = [
                {names[p.tensor]: [c0, c0 + n] for p, (c0, n) in zip(u.placements, tile)} for tile in u.tile_cols
            ]
        units.append(entry)
    chains: dict[int, list[int]] = {}
    for s in pf.stages:
        if s.chain is not None:
            chains.setdefault(s.chain, []).append(s.index)
    by_kind = Counter(op.kind for op in pf.ops)
    weight_by_kind: Counter[str] = Counter()
    for op in pf.ops:
        weight_by_kind[op.kind] += sum(ln for _off, ln in op.consts)
    quant_tensors = [t for t in pf.tensors if t.quantized]
    dtypes = Counter(t.dtype for t in pf.tensors)
    int8_ops = sum(1 for op in pf.ops if pf.tensors[op.output].dtype == "int8")
    ratio = (pf.weight_raw / pf.weight_stored) if pf.weight_stored else None
    return {
        "kind": "plan",
        "header": {
            "format": "tgrs",
            "version": pf.version,
            "file_size": pf.file_size,
            "crc32": f"{pf.crc32:#010x}",
            "flags": [f.name.lower() for f in F.Flag if pf.flags & f],
            "xip": pf.xip,
            "compression": pf.compression,
            "target": pf.target_name,  # the core the weights are arranged for (docs/format.md)
            "arranged_ops": len(pf.arrangements()),
        },
        "model": pf.name,
        "interface": {"inputs": [_io(io) for io in pf.inputs], "outputs": [_io(io) for io in pf.outputs]},
        "memory": {
            "fast_arena_bytes": pf.fast_arena,
            "slow_arena_bytes": pf.slow_arena,
            "fast_budget_bytes": pf.fast_budget,
            "slow_budget_bytes": pf.slow_budget,
            "max_weight_prefix_bytes": pf.max_prefix,
            "spill_bytes": pf.spill_bytes,
            "reload_bytes": pf.reload_bytes,
            "unscheduled_peak_bytes": pf.unscheduled_peak,
            "recompute_macs": pf.recompute_macs,
        },
        "weights": {
            "raw_bytes": pf.weight_raw,
            "stored_bytes": pf.weight_stored,
            "compression": pf.compression,
            "compression_ratio": None if ratio is None else round(ratio, 4),
            "by_op_type": dict(sorted(weight_by_kind.items())),
        },
        "quantization": {
            "quantized_tensors": len(quant_tensors),
            "float_tensors": dtypes.get("float32", 0),
            "int8_kernel_calls": int8_ops,
            "tensor_dtypes": dict(sorted(dtypes.items())),
            "scale_range": (
                [min(t.scale for t in quant_tensors), max(t.scale for t in quant_tensors)] if quant_tensors else None
            ),
        },
        "ops": {"kernel_calls": len(pf.ops), "by_kind": dict(sorted(by_kind.items()))},
        "tensors": len(pf.tensors),
        "stages": stages,
        "units": units,
        "chains": [{"chain": c, "stages": s} for c, s in sorted(chains.items())],
    }


def inspect_plan(data: bytes) -> dict[str, Any]:
    """The summary of a plan (validated first: an invalid plan raises TigrisError naming the failed check)."""
    return plan_summary(read_plan(data))


def inspect_onnx(path: str | Path) -> dict[str, Any]:
    """Inputs, outputs, op histogram and weights of an ONNX model, as stored (no shape inference, no folding)."""
    import onnx
    from onnx import helper

    p = Path(path)
    try:
        model = onnx.load(str(p), load_external_data=False)
    except Exception as e:  # noqa: BLE001 - any parse failure is the user's file, reported as one line
        raise TigrisError(f"cannot read ONNX model: {type(e).__name__}", str(p)) from None
    g = model.graph
    if not g.node and not g.output and not g.input:
        # protobuf parses an empty file (or /dev/null, or some garbage) as an empty model without complaint
        raise TigrisError("not an ONNX model (no graph)", str(p))
    inits = {i.name for i in g.initializer}

    def dtype_name(code: int) -> str:
        try:
            return str(np.dtype(helper.tensor_dtype_to_np_dtype(code)))
        except Exception:  # noqa: BLE001
            return f"onnx:{code}"

    def value(v) -> dict[str, Any]:
        tt = v.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]
        return {"name": v.name, "shape": shape, "dtype": dtype_name(tt.elem_type)}

    ops = Counter(n.op_type for n in g.node)
    wbytes = 0
    params = 0
    by_dtype: Counter[str] = Counter()
    for t in g.initializer:
        n = int(np.prod(t.dims)) if len(t.dims) else 1
        dn = dtype_name(t.data_type)
        size = np.dtype(dn).itemsize if not dn.startswith("onnx:") else 0
        params += n
        wbytes += n * size
        by_dtype[dn] += n * size
    return {
        "kind": "onnx",
        "file": p.name,
        "ir_version": int(model.ir_version),
        "opsets": {(o.domain or "ai.onnx"): int(o.version) for o in model.opset_import},
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "inputs": [value(v) for v in g.input if v.name not in inits],
        "outputs": [value(v) for v in g.output],
        "operators": len(g.node),
        "op_histogram": dict(sorted(ops.items())),
        "weights": {
            "tensors": len(g.initializer),
            "parameters": params,
            "bytes": wbytes,
            "bytes_by_dtype": dict(sorted(by_dtype.items())),
        },
    }


def inspect_tflite(path: str | Path) -> dict[str, Any]:
    """Inputs, outputs, op histogram and constant tensors of a TFLite model, as stored (nothing is imported)."""
    from tigris.load.tflite.reader import read_tflite

    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise TigrisError(f"cannot read file: {e.strerror}", str(p)) from None
    m = read_tflite(data, str(p))

    def value(i: int) -> dict[str, Any]:
        t = m.tensors[i]
        out: dict[str, Any] = {"name": t.name, "shape": list(t.shape),
                               "dtype": str(t.dtype) if t.dtype is not None else f"tflite:{t.type_code}"}
        if t.quant is not None and t.quant.scale.size == 1:
            out["quant"] = {"scale": float(t.quant.scale[0]), "zero_point": int(t.quant.zero_point[0])}
        return out

    ops = Counter(op.builtin if op.builtin != "CUSTOM" else f"CUSTOM:{op.custom_code}" for op in m.ops)
    consts = [t for t in m.tensors if t.data is not None]
    by_dtype: Counter[str] = Counter()
    for t in consts:
        by_dtype[str(t.data.dtype)] += int(t.data.nbytes)
    return {
        "kind": "tflite",
        "file": p.name,
        "schema_version": m.version,
        "subgraphs": m.subgraphs,
        "description": m.description,
        "inputs": [value(i) for i in m.inputs if m.tensors[i].data is None],
        "outputs": [value(i) for i in m.outputs],
        "operators": len(m.ops),
        "op_histogram": dict(sorted(ops.items())),
        "weights": {
            "tensors": len(consts),
            "parameters": int(sum(t.data.size for t in consts)),
            "bytes": int(sum(t.data.nbytes for t in consts)),
            "bytes_by_dtype": dict(sorted(by_dtype.items())),
        },
    }
