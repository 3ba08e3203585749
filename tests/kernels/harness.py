"""Compile C kernel files into a shared library and call them on NumPy views: the test bridge for every kernel kind.

Usage (any kind, not just conv)::

    from harness import build_kernels
    lib = build_kernels(["conv.c"], tmp_dir)                 # files under runtime_c/src/kernels (or absolute paths)
    status = lib.run(low, [in_view], out_view)               # calls tgrs_kernel_<low.kind>
    assert status == lib.const["TGRS_OK"]

``low`` is the :class:`~tigris.ops.base.Lowered` op, the views are :class:`~tigris.ops.base.TensorView` whose
``data`` arrays are handed to C by pointer (inputs are made C-contiguous copies when needed; the output array must
already be C-contiguous, since the kernel writes into it). ``lib.run`` builds exactly the ``tgrs_op_ctx`` the executor
builds: ``p`` is ``OpKind.param_vector(low)``, ``c[i]``/``clen[i]`` are the CONSTS blobs in slot order.

Scratch: pass ``scratch=None`` to give the kernel exactly ``OpKind.scratch_bytes`` (the planner's figure), or an int
to give that many bytes (0 gives a NULL pointer). ``lib.scratch_size(low, inputs, out)`` calls the C
``tgrs_<kind>_scratch_size`` so tests can check that Python mirrors it.

The header: kernels include ``tgrs_op.h``, which includes the generated ``tgrs_format.h``. The harness generates it
afresh into the build directory with ``tigris.emit.gen_header.generate()`` (a stand-in built from ``tigris.ops.KINDS``
when the generator is missing), never into the repo; the public headers are copied beside it. Status codes and other
integer macros are parsed from whichever header was used, into ``lib.const``.

Builds are cached per (sources, flags, header) hash inside the given directory, so a session-scoped directory makes
repeated builds free.
"""
from __future__ import annotations

import hashlib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import cffi
import numpy as np

from tigris.ops import KINDS, Lowered, TensorView, kind
from tigris.ops.base import DTYPE_CODES, MAX_CONSTS, MAX_INPUTS, MAX_PARAMS

REPO = Path(__file__).resolve().parents[2]
KERNEL_DIR = REPO / "runtime_c" / "src" / "kernels"
INCLUDE_DIR = REPO / "runtime_c" / "include"

CFLAGS_STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]

# Status codes of the stand-in header (the generated header is authoritative once it exists; tests read lib.const).
_FALLBACK_STATUS = {
    "TGRS_OK": 0,
    "TGRS_ERR_FORMAT": -1,
    "TGRS_ERR_PARAM": -2,
    "TGRS_ERR_DTYPE": -3,
    "TGRS_ERR_TILE": -4,
    "TGRS_ERR_SCRATCH": -5,
    "TGRS_ERR_SHAPE": -6,
    "TGRS_ERR_UNSUPPORTED": -7,
}


def current_header_text() -> str:
    """tgrs_format.h as the generator makes it from the current Python definitions (so kernels under test always see
    their kind's current PARAMS/CONSTS even before the checked-in header is regenerated); the stand-in below when the
    generator is not importable."""
    try:
        from tigris.emit.gen_header import generate
    except ImportError:
        return fallback_header_text()
    return generate()


def fallback_header_text() -> str:
    """A private tgrs_format.h with the names kernels use, built from the Python op library (design.md section 4)."""
    lines = [
        "/* Stand-in for the generated tgrs_format.h, written by tests/kernels/harness.py for a test build only. */",
        "#ifndef TGRS_FORMAT_H",
        "#define TGRS_FORMAT_H",
        f"#define TGRS_MAX_PARAMS {MAX_PARAMS}",
        f"#define TGRS_MAX_CONSTS {MAX_CONSTS}",
        f"#define TGRS_MAX_INPUTS {MAX_INPUTS}",
    ]
    for name, code in DTYPE_CODES.items():
        short = {"float32": "F32", "int8": "S8", "uint8": "U8", "int32": "S32", "int16": "S16"}[name]
        lines.append(f"#define TGRS_DT_{short} {code}")
    for name, value in _FALLBACK_STATUS.items():
        lines.append(f"#define {name} ({value})")
    for i, (kname, _, _) in enumerate(KINDS):
        up = kname.upper()
        lines.append(f"#define TGRS_OP_{up} {i + 1}")
        try:
            k = kind(kname)
        except (ImportError, AttributeError):
            continue  # that kind's module is not written yet
        for j, p in enumerate(k.PARAMS):
            lines.append(f"#define TGRS_P_{up}_{p.upper()} {j}")
        for j, c in enumerate(k.CONSTS):
            lines.append(f"#define TGRS_C_{up}_{c.upper()} {j}")
    lines.append("#endif")
    return "\n".join(lines) + "\n"


_DEFINE_RE = re.compile(
    r"^\s*#\s*define\s+(TGRS_[A-Z0-9_]+)\s+\(?\s*(-?(?:0x[0-9a-fA-F]+|\d+))[uUlL]*\s*\)?\s*(?:/\*.*?\*/)?\s*$", re.M)
_ENUM_RE = re.compile(r"\b(TGRS_[A-Z0-9_]+)\s*=\s*\(?\s*(-?(?:0x[0-9a-fA-F]+|\d+))[uUlL]*\s*\)?\s*[,}]")


def parse_int_macros(text: str) -> dict[str, int]:
    """Integer-valued ``#define TGRS_X n`` and ``TGRS_X = n,`` enum members of a header."""
    out: dict[str, int] = {}
    for rx in (_DEFINE_RE, _ENUM_RE):
        for m in rx.finditer(text):
            out[m.group(1)] = int(m.group(2), 0)
    return out


_CDEF_TEMPLATE = """
typedef struct tgrs_tview {
    void *data;
    int32_t dims[4];
    int32_t row0;
    int32_t rows;
    int32_t dtype;
    int32_t zero_point;
    float scale;
} tgrs_tview;

typedef struct tgrs_op_ctx {
    const int32_t *p;
    const void *c[%(MC)d];
    uint32_t clen[%(MC)d];
    const tgrs_tview *in[%(MI)d];
    int32_t n_in;
    tgrs_tview *out;
    void *scratch;
    uint32_t scratch_size;
    uint32_t phase;
    int32_t acc_w;
    uint32_t proven;
} tgrs_op_ctx;
"""


@dataclass
class KernelLib:
    """A compiled kernel library and the constants of the header it was built with."""

    path: Path
    ffi: cffi.FFI
    lib: object
    const: dict[str, int]

    # -- building the C structs --------------------------------------------------------------------------------------
    def _view(self, v: TensorView, keep: list, writable: bool):
        arr = v.data
        if writable:
            if not (isinstance(arr, np.ndarray) and arr.flags.c_contiguous and arr.flags.writeable):
                raise ValueError("output view data must be a writable C-contiguous array")
        else:
            arr = np.ascontiguousarray(arr)
        keep.append(arr)
        tv = self.ffi.new("tgrs_tview *")
        keep.append(tv)
        tv.data = self.ffi.from_buffer(arr, require_writable=writable) if arr.size else self.ffi.NULL
        for i in range(4):
            tv.dims[i] = int(v.dims[i])
        tv.row0 = int(v.row0)
        tv.rows = int(v.rows)
        tv.dtype = DTYPE_CODES[v.dtype]
        tv.zero_point = int(v.zero_point)
        tv.scale = float(v.scale)
        return tv

    def _ctx(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView, scratch: int | None, keep: list):
        k = kind(low.kind)
        pvec = self.ffi.new("int32_t[]", k.param_vector(low))
        keep.append(pvec)
        ctx = self.ffi.new("tgrs_op_ctx *")
        keep.append(ctx)
        ctx.p = pvec
        for i, cname in enumerate(k.CONSTS):
            blob = low.consts.get(cname)
            if blob is None:
                ctx.c[i] = self.ffi.NULL
                ctx.clen[i] = 0
                continue
            arr = np.ascontiguousarray(blob)
            keep.append(arr)
            ctx.c[i] = self.ffi.from_buffer(arr) if arr.size else self.ffi.NULL
            ctx.clen[i] = arr.nbytes
        if len(inputs) > MAX_INPUTS:
            raise ValueError("too many inputs")
        for i, v in enumerate(inputs):
            getattr(ctx, 'in')[i] = self._view(v, keep, writable=False)
        ctx.n_in = len(inputs)
        ctx.out = self._view(out, keep, writable=True)
        if scratch is None:
            scratch = k.scratch_bytes(low, None, out.rows)
        if scratch:
            buf = np.full(int(scratch), 0xA5, dtype=np.uint8)  # garbage, so a kernel that trusts scratch contents fails
            keep.append(buf)
            ctx.scratch = self.ffi.from_buffer(buf, require_writable=True)
        else:
            ctx.scratch = self.ffi.NULL
        ctx.scratch_size = int(scratch)
        return ctx

    # -- calling -----------------------------------------------------------------------------------------------------
    def run(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView, scratch: int | None = None) -> int:
        """Call ``tgrs_kernel_<low.kind>``; returns its status code. ``scratch``: see the module doc."""
        keep: list = []
        ctx = self._ctx(low, inputs, out, scratch, keep)
        fn = getattr(self.lib, f"tgrs_kernel_{low.kind}")
        return int(fn(ctx))

    def scratch_size(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> int:
        """The C ``tgrs_<kind>_scratch_size(p, in[0], out)`` for this op."""
        keep: list = []
        ctx = self._ctx(low, inputs, out, 0, keep)
        fn = getattr(self.lib, f"tgrs_{low.kind}_scratch_size")
        return int(fn(ctx.p, getattr(ctx, 'in')[0], ctx.out))


def _cdef(mc: int, mi: int) -> str:
    text = _CDEF_TEMPLATE % {"MC": mc, "MI": mi}
    for kname, _, _ in KINDS:
        text += f"int tgrs_kernel_{kname}(const tgrs_op_ctx *ctx);\n"
        text += f"uint32_t tgrs_{kname}_scratch_size(const int32_t *p, const tgrs_tview *in, const tgrs_tview *out);\n"
    return text


def _registry_sources(paths: list[Path], workdir: Path) -> list[Path]:
    """The kinds with dtype variants have their ``tgrs_kernel_<kind>`` entry points in kernels/registry.c, which
    names every variant: add it, with stubs for the variants the given files do not define (as the host build does),
    and kernels/kcheck.c, the once-per-op checks every kernel file calls.
    """
    from tigris.host.build import VARIANTS, kernel_stubs_source, missing_kernels

    registry = KERNEL_DIR / "registry.c"
    support = [p for p in (KERNEL_DIR / "kcheck.c",) if p.exists() and p not in paths]
    if not registry.exists() or registry in paths:
        return support
    missing = [v for v in missing_kernels(paths) if v in VARIANTS]
    stub = workdir / ("variant_stubs_" + hashlib.sha256(" ".join(missing).encode()).hexdigest()[:12] + ".c")
    text = kernel_stubs_source(missing)
    if not stub.exists() or stub.read_text() != text:
        stub.write_text(text)
    return [registry, stub, *support]


# The host builds' instruction-set variants: the plain reference (-DTGRS_FORCE_PLAIN), the compiler's default target
# (generic), and the tigris.host.build levels' flags (avx2, avxvnni, avx512). Kernel families with host vector loops run their
# tests on every variant this CPU can execute (runnable_host_variants).
HOST_VARIANTS = {"plain": ("-DTGRS_FORCE_PLAIN",), "generic": (), "avx2": ("-mavx2", "-mfma"),
                 "avxvnni": ("-mavx2", "-mfma", "-mavxvnni"),
                 "avx512": ("-mavx2", "-mfma", "-mavxvnni", "-mavx512f", "-mavx512vl")}


def runnable_host_variants() -> list[str]:
    """The HOST_VARIANTS this CPU runs (the plain and generic ones always)."""
    from tigris.host.build import _cpu_has_avx2, _cpu_has_avx512, _cpu_has_avxvnni

    have = {"avx2": _cpu_has_avx2(), "avxvnni": _cpu_has_avxvnni(), "avx512": _cpu_has_avx512()}
    return [name for name in HOST_VARIANTS if have.get(name, True)]


def build_kernels(
    sources: Sequence[str | Path],
    workdir: Path,
    opt: str = "-O2",
    extra_flags: Sequence[str] = (),
) -> KernelLib:
    """Compile ``sources`` (names under runtime_c/src/kernels, or paths) into a shared library in ``workdir``.

    Always with the project's strict flags (``-std=c99 -Wall -Wextra -Werror -pedantic``), so a warning fails the test.
    """
    paths = [Path(s) if Path(s).is_absolute() else KERNEL_DIR / s for s in sources]
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    paths += _registry_sources(paths, workdir)
    header_text = current_header_text()
    inc_dir = workdir / "include"
    inc_dir.mkdir(parents=True, exist_ok=True)
    # A quoted #include looks beside the including file first, so tgrs_op.h must sit beside the fresh header:
    # copy the public headers, then put the generated tgrs_format.h over the checked-in one.
    for src in sorted(INCLUDE_DIR.glob("*.h")):
        text = header_text if src.name == "tgrs_format.h" else src.read_text()
        dst = inc_dir / src.name
        if not dst.exists() or dst.read_text() != text:
            dst.write_text(text)
    hp = inc_dir / "tgrs_format.h"
    if not hp.exists() or hp.read_text() != header_text:
        hp.write_text(header_text)
    inc = [f"-I{inc_dir}"]
    flags = [*CFLAGS_STRICT, opt, *extra_flags]
    h = hashlib.sha256()
    for p in paths:
        h.update(str(p).encode())
        h.update(p.read_bytes())
    for dep in sorted(KERNEL_DIR.glob("*.h")) + sorted(INCLUDE_DIR.glob("*.h")):
        h.update(dep.read_bytes())
    h.update(header_text.encode())
    h.update(" ".join(flags).encode())
    so = workdir / f"tgrs_kernels_{h.hexdigest()[:16]}.so"
    if not so.exists():
        tmp = so.with_suffix(".tmp.so")
        cmd = ["gcc", *flags, "-fPIC", "-shared", *inc, f"-I{KERNEL_DIR}", "-o", str(tmp),
               *map(str, paths), "-lm"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"kernel build failed: {' '.join(cmd)}\n{res.stderr}")
        tmp.replace(so)
    consts = parse_int_macros(header_text)
    ffi = cffi.FFI()
    ffi.cdef(_cdef(consts.get("TGRS_MAX_CONSTS", MAX_CONSTS), consts.get("TGRS_MAX_INPUTS", MAX_INPUTS)))
    lib = ffi.dlopen(str(so))
    return KernelLib(path=so, ffi=ffi, lib=lib, const=consts)


# -- view helpers shared by kernel tests ------------------------------------------------------------------------------
def band_view(full: np.ndarray, row0: int = 0, rows: int | None = None, dtype: str | None = None,
              scale: float = 1.0, zero_point: int = 0) -> TensorView:
    """A TensorView over rows ``[row0, row0 + rows)`` of a full rank-4 physical array (a copy of just that band, so a
    kernel reading outside the band reads outside the buffer, which the tests would notice)."""
    dims = tuple(int(d) for d in full.shape)
    assert len(dims) == 4, "physical views are rank 4"
    rows = dims[1] - row0 if rows is None else rows
    data = np.ascontiguousarray(full[:, row0:row0 + rows])
    return TensorView(data=data, dims=dims, row0=row0, rows=rows, dtype=dtype or str(full.dtype),
                      scale=scale, zero_point=zero_point)


def empty_band(dims: Sequence[int], dtype: str, row0: int = 0, rows: int | None = None, fill: float = 0,
               scale: float = 1.0, zero_point: int = 0) -> TensorView:
    """An output view for rows ``[row0, row0 + rows)``, prefilled with ``fill`` (use a value the kernel never writes
    to catch rows it forgets)."""
    dims = tuple(int(d) for d in dims)
    rows = dims[1] - row0 if rows is None else rows
    data = np.full((dims[0], rows, dims[2], dims[3]), fill, dtype=np.dtype(dtype))
    return TensorView(data=data, dims=dims, row0=row0, rows=rows, dtype=dtype, scale=scale, zero_point=zero_point)


def split_rows(total: int, bands: int) -> list[tuple[int, int]]:
    """``bands`` consecutive (row0, rows) pieces covering ``[0, total)`` (some may be empty when bands > total)."""
    edges = [round(i * total / bands) for i in range(bands + 1)]
    return [(edges[i], edges[i + 1] - edges[i]) for i in range(bands)]


# -- single-op IR graphs and ONNX Runtime, for reference-vs-ORT tests --------------------------------------------------
def qparam(scale, zero_point=0, axis: int | None = None):
    """A QuantParam from scalars or sequences (per-tensor when one value)."""
    from tigris.ir import QuantParam

    s = np.asarray(scale, dtype=np.float32).ravel()
    z = np.broadcast_to(np.asarray(zero_point, dtype=np.int64).ravel(), s.shape).copy()
    return QuantParam(scale=s, zero_point=z, axis=axis if s.size > 1 else None)


def single_op_graph(op_type: str, tensors: Sequence, weights: dict, inputs: Sequence[str], outputs: Sequence[str],
                    attrs: dict | None = None, name: str = "op"):
    """An AnalyzedGraph holding one normalized op; ``tensors`` are ir.Tensor objects (activations and constants)."""
    from tigris.ir import AnalyzedGraph, Op

    tmap = {t.name: t for t in tensors}
    op = Op(name=name, op_type=op_type, inputs=tuple(inputs), outputs=tuple(outputs), attrs=dict(attrs or {}))
    graph_inputs = [n for n in inputs if n and n not in weights]
    return AnalyzedGraph(name=name, tensors=tmap, ops=[op], inputs=graph_inputs, outputs=list(outputs),
                         weights=dict(weights))


def ort_run(model, feeds: dict) -> list[np.ndarray]:
    """Run an onnx ModelProto on ONNX Runtime, one thread, graph optimizations off (so QDQ stays DQ -> op -> Q and
    nothing is fused behind the test's back)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)
