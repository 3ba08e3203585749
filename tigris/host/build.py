"""Build runtime_c into a Python extension with cffi (API mode), once per version of the C sources.

Why a cache keyed by a hash of the sources: the package is installed editable and the C files change while the
team works; keying on content means a stale extension is never loaded and an unchanged one is never rebuilt. The
cache lives in ``$TIGRIS_CACHE_DIR`` or ``~/.cache/tigris``; each version gets ``<cache>/<hash>/``. A build goes into a
private temporary folder and is renamed into place, so two processes building at once cannot load half a library;
a lock file beside it makes a second process (a parallel test worker, another shell) wait for the first one's build
instead of compiling the same sources again.

The same source discovery is used by the fuzz driver build (:func:`c_sources`, :func:`kernel_stubs_source`).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import platform
import re
import shutil
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from tigris.ir import TigrisError
from tigris.ops import KINDS

# C flags of every host build: strict C99, and no FMA contraction so float results do not depend on whether the
# compiler fuses a multiply-add (the NumPy reference never does). -fno-wrapv undoes the -fwrapv that extension builds
# inherit from CPython's own flags: with it GCC cannot turn the int8 dot products into multiply-add-pairs (3-4x
# slower), and the runtime's integer arithmetic is written never to overflow anyway (the Cortex-M build has no wrapv).
# -DTGRS_ANY_TARGET=1: the host runtime reads the weights every target's plans are arranged in (plain C readers;
# kernels/target.h), so `tigris run` and `tigris verify --target cortex-m4` execute the packed bytes themselves.
CFLAGS = ("-std=c99", "-O2", "-ffp-contract=off", "-fno-fast-math", "-fno-wrapv", "-DTGRS_ANY_TARGET=1")

# The instruction-set level of the host build, and its extra flags. "generic" is the compiler's default target (on
# x86-64: SSE2, the plain C loops); "avx2" adds -mavx2 -mfma, which makes runtime_c/src/kernels/target.h select the
# AVX2 kernels (int8 and float) and lets GCC use 256-bit vectors elsewhere. -ffp-contract=off still keeps the C code
# unfused: only the float kernels' explicit fused multiply-add intrinsics round once. Not -march=native: it builds code
# that need not run on another CPU sharing the cache. The level is part of the cache hash, so a cache directory can
# hold both builds.
# "avxvnni" adds -mavxvnni on top (CPUs with AVX-VNNI): the int8 kernels fuse each multiply-add-pairs with its
# accumulation; the same numbers.
# "avx512" adds -mavx512f -mavx512vl on top of avxvnni (CPUs with both): the float conv GEMM then runs its wide panel
# groups on 16-lane registers (conv_avx512.h), with each output's fused multiply-adds in the avx2 level's order, so
# its float results are the avx2 level's bits.
ISA_FLAGS = {"generic": (), "avx2": ("-mavx2", "-mfma"), "avxvnni": ("-mavx2", "-mfma", "-mavxvnni"),
             "avx512": ("-mavx2", "-mfma", "-mavxvnni", "-mavx512f", "-mavx512vl")}


def _cpu_flags() -> set[str]:
    """The instruction-set flags of this x86-64 CPU (and OS) as Linux lists them in /proc/cpuinfo; empty elsewhere,
    and the generic build is used."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return set()
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[-1].split())
    return set()


def _cpu_has_avx2() -> bool:
    """Whether this CPU has AVX2 and FMA (the avx2 level)."""
    flags = _cpu_flags()
    return "avx2" in flags and "fma" in flags


def _cpu_has_avxvnni() -> bool:
    """Whether this CPU also has AVX-VNNI (the avxvnni level)."""
    return _cpu_has_avx2() and "avx_vnni" in _cpu_flags()


def _cpu_has_avx512() -> bool:
    """Whether this CPU also has AVX-512 F and VL (the avx512 level, on top of avxvnni)."""
    flags = _cpu_flags()
    return _cpu_has_avxvnni() and "avx512f" in flags and "avx512vl" in flags


def host_isa() -> str:
    """The level this process builds: ``$TIGRIS_HOST_ISA`` (``generic``, ``avx2``, ``avxvnni`` or ``avx512``) if set, else the
    highest level the CPU has. Another value is a TigrisError (the CLI's one-line error, exit code 2)."""
    env = os.environ.get("TIGRIS_HOST_ISA")
    if env:
        if env not in ISA_FLAGS:
            raise TigrisError(f"must be one of {sorted(ISA_FLAGS)}, not {env!r}", "TIGRIS_HOST_ISA")
        return env
    if _cpu_has_avx512():
        return "avx512"
    if _cpu_has_avxvnni():
        return "avxvnni"
    return "avx2" if _cpu_has_avx2() else "generic"


def build_flags(isa: str) -> tuple[str, ...]:
    return CFLAGS + ISA_FLAGS[isa]

# Kernel entry points the executor's dispatch table names (tgrs_kernel_<kind>, one per kind of tigris.ops.KINDS).
# A build that leaves a kind's file out (a footprint or subset build) gets a stub that refuses to run it.
KERNELS = tuple(name for name, _mod, _cls in KINDS)
# The dtype variants runtime_c/src/kernels/registry.c dispatches to (kernels/variants.h), ``tgrs_<kind>_<dtype>``.
# A build that leaves a variant's file out gets a stub for it like for a missing kind.
# Also ``gap_phases`` (kernels/gap_accum.c, the accumulating GAP), which registry.c's tgrs_kernel_gap calls the same
# way: a build without that file gets the same refusing stub.
VARIANTS = tuple(f"{k}_{d}" for k in ("conv", "dwconv", "fc", "maxpool", "avgpool", "gap", "add", "mul", "softmax")
                 for d in ("f32", "s8")) + ("gap_phases", "conv_s8_sym", "dwconv_s8_sym", "fc_s8_sym",
                                                   "softmax_s8_onnx", "gap_s8_onnx")

# The public API as cffi sees it. tgrs_plan is opaque to Python (cffi takes its size from the compiler).
CDEF = """
typedef struct { ...; } tgrs_plan;
typedef struct {
    uint32_t fast_peak;
    uint32_t slow_peak;
    uint32_t units;
    uint32_t ops;
    int32_t failed_op;
    int32_t failed_unit;
} tgrs_stats;
typedef struct {
    const char *name;
    uint32_t name_len;
    int32_t dtype;
    int32_t internal_dtype;
    int32_t decl_dtype;
    int32_t layout;
    int32_t rank;
    int32_t shape[8];
    int32_t tensor_rank;
    int32_t tensor_shape[8];
    int32_t dims[4];
    uint32_t nbytes;
    uint32_t flags;
    float scale;
    int32_t zero_point;
    float decl_scale;
    int32_t decl_zero_point;
} tgrs_io_info;

int tgrs_load(tgrs_plan *plan, const void *bytes, size_t len);
int tgrs_load_diag(tgrs_plan *plan, const void *bytes, size_t len, int32_t *failed_op);
uint32_t tgrs_fast_size(const tgrs_plan *plan);
uint32_t tgrs_slow_size(const tgrs_plan *plan);
int32_t tgrs_num_inputs(const tgrs_plan *plan);
int32_t tgrs_num_outputs(const tgrs_plan *plan);
int tgrs_input_info(const tgrs_plan *plan, int32_t index, tgrs_io_info *info);
int tgrs_output_info(const tgrs_plan *plan, int32_t index, tgrs_io_info *info);
int tgrs_run(const tgrs_plan *plan, void *fast, size_t fast_len, void *slow, size_t slow_len,
             const void *const *inputs, void *const *outputs, tgrs_stats *stats);
int tgrs_input_home(const tgrs_plan *plan, void *fast, size_t fast_len, void *slow, size_t slow_len, int32_t index,
                    void **home);
int tgrs_output_home(const tgrs_plan *plan, void *fast, size_t fast_len, void *slow, size_t slow_len, int32_t index,
                     void **home);
int tgrs_run_in_place(const tgrs_plan *plan, void *fast, size_t fast_len, void *slow, size_t slow_len,
                      tgrs_stats *stats);
const char *tgrs_op_name(const tgrs_plan *plan, int32_t index);
const char *tgrs_status_name(int code);
int tgrs_lz4_decode(const void *src, size_t src_len, void *dst, size_t dst_len);
"""


@dataclass(frozen=True)
class RuntimeSources:
    """Where runtime_c lives: ``root/include`` and ``root/src``."""

    root: Path

    @property
    def include(self) -> Path:
        return self.root / "include"

    @property
    def src(self) -> Path:
        return self.root / "src"


def find_sources() -> RuntimeSources:
    """``$TIGRIS_RUNTIME_C`` if set (a runtime tree to build instead, e.g. a checkout of another commit), else runtime_c
    packaged inside the wheel (``tigris/_runtime_c``) if present, else the repository's ``runtime_c/``."""
    pkg = Path(__file__).resolve().parents[1]
    env = os.environ.get("TIGRIS_RUNTIME_C")
    cands = [Path(env)] if env else [pkg / "_runtime_c", pkg.parent / "runtime_c"]
    for cand in cands:
        if (cand / "include" / "tigris.h").is_file():
            return RuntimeSources(cand)
    raise FileNotFoundError("runtime_c sources not found (looked in tigris/_runtime_c and the repository)")


def c_sources(rs: RuntimeSources) -> list[Path]:
    """Every .c file under src/, sorted so the hash and the link order are stable."""
    return sorted(p for p in rs.src.rglob("*.c") if p.is_file())


def _headers(rs: RuntimeSources) -> list[Path]:
    return sorted(p for d in (rs.include, rs.src) for p in d.rglob("*.h") if p.is_file())


_DEF_RE = r"^\s*int\s+tgrs_{name}\s*\(\s*const\s+tgrs_op_ctx\s*\*\s*\w*\s*\)\s*$\s*\{{"


def _entry(name: str) -> str:
    """The C function of a kind (``tgrs_kernel_<kind>``) or of a dtype variant (``tgrs_<kind>_<dtype>``)."""
    return f"tgrs_{name}" if name in VARIANTS else f"tgrs_kernel_{name}"


def missing_kernels(sources: list[Path]) -> list[str]:
    """Kernel kinds whose ``tgrs_kernel_<kind>``, and dtype variants whose ``tgrs_<kind>_<dtype>``, have no
    definition in any source file."""
    text = "\n".join(p.read_text(errors="replace") for p in sources)
    return [k for k in KERNELS + VARIANTS if not re.search(_DEF_RE.format(name=_entry(k)[5:]), text, re.M)]


def kernel_stubs_source(missing: list[str]) -> str:
    """C source defining the missing kernels (kinds or dtype variants) as stubs that return TGRS_ERR_UNSUPPORTED."""
    lines = ['#include "tgrs_op.h"', ""]
    for k in missing:
        lines += [
            f"int {_entry(k)}(const tgrs_op_ctx *ctx)",
            "{",
            "    (void)ctx;",
            "    return TGRS_ERR_UNSUPPORTED;",
            "}",
            "",
        ]
    if not missing:
        lines.append("typedef int tgrs_no_stubs_needed;")
    return "\n".join(lines) + "\n"


def source_hash(rs: RuntimeSources, isa: str = "generic") -> str:
    """Hash of everything that determines the built extension: sources, headers, API, flags (with the ISA level),
    Python and cffi."""
    import cffi

    h = hashlib.sha256()
    for p in c_sources(rs) + _headers(rs):
        h.update(str(p.relative_to(rs.root)).encode())
        h.update(b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    h.update(CDEF.encode())
    h.update(" ".join(build_flags(isa)).encode())
    h.update(f"{sys.version_info[:2]}{cffi.__version__}{sys.platform}".encode())
    return h.hexdigest()[:16]


def cache_root() -> Path:
    env = os.environ.get("TIGRIS_CACHE_DIR")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "tigris"


def _module_name(digest: str) -> str:
    return f"_tigris_rt_{digest}"


def _build(rs: RuntimeSources, digest: str, dest: Path, isa: str) -> None:
    import cffi

    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".build-{digest}-", dir=dest.parent))
    try:
        srcs = c_sources(rs)
        stub = work / "tgrs_kernel_stubs.c"
        stub.write_text(kernel_stubs_source(missing_kernels(srcs)))
        ffi = cffi.FFI()
        ffi.cdef(CDEF)
        ffi.set_source(
            _module_name(digest),
            '#include "tigris.h"\n#include "tgrs_lz4.h"\n',
            sources=[str(p) for p in srcs] + [str(stub)],
            include_dirs=[str(rs.include), str(rs.src)],
            extra_compile_args=list(build_flags(isa)),
        )
        ffi.compile(tmpdir=str(work), verbose=False)
        built = [p for p in work.iterdir() if p.name.startswith(_module_name(digest)) and p.suffix in (".so", ".pyd")]
        if not built:
            raise RuntimeError(f"cffi produced no extension module in {work}")
        final = work / "out"
        final.mkdir()
        shutil.move(str(built[0]), str(final / built[0].name))
        try:
            os.replace(final, dest)
        except OSError:
            if not dest.is_dir():  # another process won the race: its build is identical
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextmanager
def _build_lock(dest: Path):
    """Hold ``<dest>.lock`` exclusively (POSIX ``flock``; where there is none, no lock: the rename above still keeps
    concurrent builds apart, they only repeat the work)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.with_name(dest.name + ".lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _load(dest: Path, digest: str) -> ModuleType | None:
    name = _module_name(digest)
    for p in dest.glob(name + "*"):
        spec = importlib.util.spec_from_file_location(name, p)
        if spec is None or spec.loader is None:
            continue
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[name] = mod
        return mod
    return None


def runtime(isa: str | None = None) -> ModuleType:
    """The compiled runtime (``.ffi`` and ``.lib``), built on first use into the cache, at the ISA level ``isa``
    (default :func:`host_isa`)."""
    return _runtime(host_isa() if isa is None else isa)


@lru_cache(maxsize=None)
def _runtime(isa: str) -> ModuleType:
    if isa not in ISA_FLAGS:
        raise TigrisError(f"unknown host ISA level {isa!r} (one of {sorted(ISA_FLAGS)})", "isa")
    rs = find_sources()
    digest = source_hash(rs, isa)
    dest = cache_root() / digest
    mod = _load(dest, digest) if dest.is_dir() else None
    if mod is None:
        with _build_lock(dest):
            mod = _load(dest, digest) if dest.is_dir() else None  # built meanwhile by the lock's holder
            if mod is None:
                _build(rs, digest, dest, isa)
                mod = _load(dest, digest)
    if mod is None:
        raise RuntimeError(f"could not load the runtime extension from {dest}")
    return mod
