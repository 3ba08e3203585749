"""Base plans for the fuzzers and the reader/loader differential test: the runtime tests' small graphs (elementwise,
and a conv chain with weights, scratch, requantization) in every weight mode, untiled and tiled/chained, a conv chain
ending in a GlobalAveragePool that accumulates over tiles, a column-split (COLS) grid, a COLS plan with branch points
and a Concat, plus a few small real models;
and the plan mutator."""
from __future__ import annotations

import random
import struct
import sys
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

import _cols_plans as C  # noqa: E402
import _rt_plans as P  # noqa: E402
from tigris.emit import format as F  # noqa: E402
from tigris.emit.writer import seal  # noqa: E402


@lru_cache(maxsize=1)
def _cached() -> tuple[bytes, ...]:
    out: list[bytes] = []
    for int8, u8 in ((False, False), (True, True)):
        g = P.eltwise_graph(int8=int8, uint8_io=u8, h=8, c=4)
        for fast in (1 << 16, 700):
            for xip, comp in ((False, "none"), (True, "none"), (False, "lz4")):
                try:
                    out.append(P.compile_graph(g, fast, xip=xip, compression=comp)[0])
                except Exception:  # a budget this graph cannot meet: the other budgets still give plans
                    continue
    for int8, fasts in ((False, (1 << 16, 2500)), (True, (1 << 16, 1300))):
        g = P.conv_chain_graph(int8=int8, h=8)
        for fast in fasts:
            for xip, comp in ((False, "none"), (True, "none"), (False, "lz4")):
                try:
                    out.append(P.compile_graph(g, fast, xip=xip, compression=comp)[0])
                except Exception:
                    continue
    # GlobalAveragePool accumulating over tiles (unit flag ACCUM): float sums in the output, int8 in scratch.
    for int8, fast, comp in ((False, 2500, "none"), (True, 1000, "none"), (True, 1600, "lz4")):
        try:
            out.append(P.compile_graph(P.conv_gap_graph(int8=int8, h=16), fast, compression=comp)[0])
        except Exception:
            continue
    # Column tiles (unit flag COLS): a hand-built grid over conv, relu, a strided depthwise and a pointwise conv, so
    # the mutator reaches the column bands, the dense band buffers and the band-relative window pads.
    layers = [("conv", 3, 1, 1, 1), ("relu",), ("dw", 3, 2, 1, 1), ("conv", 1, 1, 1, 0)]
    for int8, xip, comp in ((True, False, "none"), (False, True, "none"), (True, False, "lz4")):
        g = C.chain(layers, int8, 9, 13, 4, 0)
        out.append(C.emit_cols(g, C.lower_all(g), 2, 3, xip=xip, compression=comp)[0])
    # Column tiles ending in a GlobalAveragePool that accumulates over the grid (unit flags COLS and ACCUM).
    g = C.chain([("conv", 3, 1, 1, 1), ("dw", 3, 1, 1, 1), ("gap",)], True, 12, 17, 8, 0)
    _u, whole = P.compile_graph(g, 1 << 22)
    out.append(P.compile_graph(g, whole.unscheduled_peak // 3, xip=True, col_tiles=True, force_cols=3,
                               layouts={})[0])
    # Branch points and a channel Concat in column-split units (the fire model of tests/runtime/test_rt_cols_concat.py
    # at its smallest budget): a 1x1 conv reads a sub-band of its branch buffer's hull row by row.
    import tempfile

    import test_rt_cols_concat as T

    with tempfile.TemporaryDirectory() as d:
        out.append(T.concat_cols_plan(Path(d)))
    # Views (tensor flag VIEW): a row Concat, a Concat of pooled vectors and a Slice run as runs of one buffer, int8
    # (tests/runtime/test_rt_views.py), so the mutator reaches view_off and the executor's offset views.
    import test_rt_views as V
    from tigris.emit import emit_plan

    with tempfile.TemporaryDirectory() as d:
        _p, prep = V._prepared(Path(d), True)
        out.append(emit_plan(prep.graph, V._plan(prep, 1 << 22, True), prep.lowered, xip=True))
    out += _model_plans()
    return tuple(out)


# Real models reach the kernels the synthetic graphs do not (fully connected, pooling, softmax, reshape copies,
# boundary quantization) and LZ4 units with the byte-plane shuffle (float weights). Skipped silently when ../shared
# is absent: the synthetic plans still fuzz the core. The last one is packed for the Cortex-M4 (header target, FC_ROWS4
# weight arrangements on every fc: docs/format.md), which the host builds read.
MODELS = (("onnx_zoo/mnist-8.onnx", "64K", False, "none", None), ("onnx_zoo/mnist-8.onnx", "64K", False, "lz4", None),
          ("mlperf_tiny/kws_dscnn_int8.onnx", "64K", False, "none", None),
          ("mlperf_tiny/ad_autoencoder_int8.onnx", "128K", True, "none", None),
          ("mlperf_tiny/ad_autoencoder_int8.onnx", "128K", True, "none", "cortex-m4"))


def _model_plans() -> list[bytes]:
    from tigris import api

    out = []
    for rel, fast, xip, comp, target in MODELS:
        path = P.SHARED_MODELS / rel
        if not path.exists():
            continue
        out.append(api.compile_model(path, fast, xip=xip, compression=comp, target=target,
                                     objective="traffic" if target else None).plan_bytes)
    return out


def base_plans() -> list[bytes]:
    return list(_cached())


def _sections(p: bytes) -> list[tuple[int, int, int, int]]:
    return [struct.unpack_from("<4I", p, F.DIR_OFFSET + i * F.SECTION.size) for i in range(len(F.SECTIONS))]


RECORD_OF = {s.id: s.record for s in F.SECTIONS}
INTERESTING = [0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 255, 256, 0x7FFF, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000,
               0xFFFFFFF0, 0xFFFFFFFE, 0xFFFFFFFF]


def _pos(base: bytes, rng: random.Random, lo: int = 0) -> int:
    """A byte position, 80% of the time outside the WEIGHTS payload: in a real model the weights are most of the
    bytes, and a changed weight only changes numbers, while the structure is what the loader must defend."""
    woff = _sections(base)[-1][1] if len(base) >= F.DATA_START else len(base)
    if lo < woff <= len(base) and rng.random() < 0.8:
        return rng.randrange(lo, woff)
    return rng.randrange(lo, len(base))


def mutate(base: bytes, rng: random.Random) -> bytes:
    """One random mutation; re-sealed (correct CRC) 85% of the time so deeper checks see it."""
    b = bytearray(base)
    what = rng.choice(["flip", "flip", "byte", "u32", "u32", "u32", "truncate", "extend", "section", "swap", "field",
                       "field"])
    if what == "flip":
        for _ in range(rng.choice([1, 1, 2, 4])):
            b[_pos(base, rng)] ^= 1 << rng.randrange(8)
    elif what == "byte":
        b[_pos(base, rng)] = rng.choice([0, 0xFF, 0x80, 0x7F, rng.randrange(256)])
    elif what == "u32":
        i = min(_pos(base, rng, F.CRC_START), len(b) - 4) & ~3
        v = rng.choice(INTERESTING + [struct.unpack_from("<I", b, i)[0] + rng.choice([-16, -1, 1, 16])])
        struct.pack_into("<I", b, i, v & 0xFFFFFFFF)
    elif what == "truncate":
        b = b[: rng.randrange(len(b))]
        if len(b) >= F.HEADER.size and rng.random() < 0.7:
            struct.pack_into("<I", b, F.HEADER.offsets()["file_size"], len(b))
    elif what == "extend":
        b += bytes(rng.choice([1, 16, 64, 1000]))
        if rng.random() < 0.7:
            struct.pack_into("<I", b, F.HEADER.offsets()["file_size"], len(b))
        if rng.random() < 0.5:  # grow the last section (WEIGHTS) or another one over the new bytes
            k = rng.randrange(len(F.SECTIONS))
            e = F.DIR_OFFSET + k * F.SECTION.size
            sid, off, size, count = struct.unpack_from("<4I", b, e)
            rec = RECORD_OF[F.SectionId(sid)] if sid in F.SectionId._value2member_map_ else None
            grow = rec.size * rng.choice([1, 2, 100]) if rec is not None else rng.choice([1, 16, 1000])
            struct.pack_into("<4I", b, e, sid, off, (size + grow) & 0xFFFFFFFF,
                             (count + (grow // rec.size if rec is not None else grow)) & 0xFFFFFFFF)
    elif what == "field":  # structure-aware: one u32/i32 field element of one record, boundary or neighbour value
        secs = [(sid, off, cnt) for sid, off, _, cnt in _sections(base)
                if sid in RECORD_OF and RECORD_OF[sid] is not None and cnt >= 1]
        sid, off, cnt = rng.choice(secs)
        rec = RECORD_OF[sid]
        f = rng.choice([f for f in rec.fields if f.type in ("u32", "i32")])
        pos = off + rng.randrange(cnt) * rec.size + rec.offsets()[f.name] + 4 * rng.randrange(f.count)
        cur = struct.unpack_from("<I", b, pos)[0]
        v = rng.choice(INTERESTING + [cur + 1, cur - 1, cur + 16, cur - 16, cur * 2])
        struct.pack_into("<I", b, pos, v & 0xFFFFFFFF)
    elif what == "section":
        k = rng.randrange(len(F.SECTIONS))
        e = F.DIR_OFFSET + k * F.SECTION.size + 4 * rng.randrange(1, 4)
        struct.pack_into("<I", b, e, rng.choice(INTERESTING) & 0xFFFFFFFF)
    else:  # swap two records of one table
        secs = [(sid, off, cnt) for sid, off, _, cnt in _sections(base)
                if sid in RECORD_OF and RECORD_OF[sid] is not None and cnt >= 2]
        if secs:
            sid, off, cnt = rng.choice(secs)
            rs = RECORD_OF[sid].size
            i, j = rng.sample(range(cnt), 2)
            a = bytes(b[off + i * rs: off + (i + 1) * rs])
            b[off + i * rs: off + (i + 1) * rs] = b[off + j * rs: off + (j + 1) * rs]
            b[off + j * rs: off + (j + 1) * rs] = a
        else:
            b[rng.randrange(len(b))] ^= 0x10
    if len(b) >= F.CRC_START and rng.random() < 0.85:
        return seal(b)
    return bytes(b)
