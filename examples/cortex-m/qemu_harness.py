"""Build and run TiGrIS firmware on QEMU's Cortex-M boards from Python (used by tests/cortex_m and bench/mcu_cost.py).

    python3 examples/cortex-m/qemu_harness.py PLAN.tgrs --board mps2-an386 --input in0.bin --output out0.bin

The same steps by hand are in docs/deploying.md: ``tigris codegen --format app``, ``make APP=model``, then QEMU with
semihosting. Every QEMU run is wrapped in ``timeout`` (and a Python-side timeout), so a guest that hangs fails
instead of hanging CI.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BOARDS = {"mps2-an386": "Cortex-M4F", "mps3-an547": "Cortex-M55"}
TOOLS = ("arm-none-eabi-gcc", "arm-none-eabi-size", "qemu-system-arm", "make", "timeout")

# Exit codes of the example programs (board.h).
EXIT_OK, EXIT_USAGE, EXIT_FAULT, EXIT_IO, EXIT_RUNTIME = 0, 2, 3, 4, 5


def missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None]


class BuildError(RuntimeError):
    """make failed; the message holds the command and the tail of the compiler output."""


@dataclass
class GuestRun:
    """What one QEMU run produced: exit code, console text, and the "name value" report lines as a dict."""

    returncode: int
    console: str
    report: dict[str, int] = field(default_factory=dict)


def runtime_sources() -> list[Path]:
    """The runtime's .c files, as real paths (tigris/_runtime_c may be a symlink to runtime_c; the Makefile names
    objects after the path, so one spelling keeps objects and map entries consistent)."""
    from tigris.host.build import c_sources, find_sources

    return sorted(p.resolve() for p in c_sources(find_sources()))


def kernel_stubs(obj_dir: Path, sources: list[Path] | None = None) -> list[Path]:
    """A stub source for the kernels none of ``sources`` defines (kernels that have not landed yet, or those left
    out of a subset build): same rule as the host build, so a plan needing one fails with TGRS_ERR_UNSUPPORTED."""
    from tigris.host.build import kernel_stubs_source, missing_kernels

    missing = missing_kernels(sources if sources is not None else runtime_sources())
    if not missing:
        return []
    obj_dir.mkdir(parents=True, exist_ok=True)
    stub = obj_dir / ("tgrs_kernel_stubs_" + "_".join(missing) + ".c")
    text = kernel_stubs_source(missing)
    if not stub.exists() or stub.read_text() != text:
        stub.write_text(text)
    return [stub]


def flag_dir(opt: str, cflags: str = "") -> str:
    """The object subfolder for one optimisation level and set of extra flags ("Os", "Os_DTGRSINT8ONLY")."""
    return opt.lstrip("-") + "".join("_" + re.sub(r"[^A-Za-z0-9]+", "", f) for f in cflags.split())


def build(board: str, build_dir: Path, *, app: str = "model", model_c: Path | None = None,
          obj_dir: Path | None = None, opt: str = "-O2", runtime_srcs: list[Path] | None = None,
          extra_ldflags: str = "", cflags: str = "", jobs: int = 2, timeout: float = 600) -> Path:
    """``make`` the example for ``board``; returns the ELF. Raises CalledProcessError with the compiler output.
    ``cflags``: extra compiler flags for every source (e.g. INT8_ONLY_CFLAGS)."""
    build_dir = Path(build_dir)
    # Objects depend on the flags: one folder per optimisation level and extra flags, so they never mix.
    obj_dir = (Path(obj_dir) if obj_dir else build_dir / "obj") / flag_dir(opt, cflags)
    cmd = ["make", "-s", f"-j{jobs}", "-C", str(HERE), f"BOARD={board}", f"APP={app}", f"BUILD={build_dir}",
           f"OBJDIR={obj_dir}", f"OPT={opt}"]
    if model_c is not None:
        cmd.append(f"MODEL_C={Path(model_c).resolve()}")
    extra = kernel_stubs(obj_dir, runtime_srcs) if app == "model" else []
    if extra:
        cmd.append("EXTRA_SRCS=" + " ".join(str(p) for p in extra))
    if runtime_srcs is not None:
        cmd.append("RUNTIME_SRCS=" + " ".join(str(Path(p).resolve()) for p in runtime_srcs))
    if extra_ldflags:
        cmd.append(f"EXTRA_LDFLAGS={extra_ldflags}")
    if cflags:
        cmd.append(f"EXTRA_CFLAGS={cflags}")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise BuildError(f"{' '.join(cmd)}\nexit {res.returncode}\n{res.stdout[-4000:]}{res.stderr[-4000:]}")
    return build_dir / f"{app}.elf"


def qemu_command(board: str, elf: Path, args: list[str], timeout_s: int) -> list[str]:
    """The QEMU command line: -icount shift=0 makes one guest instruction one virtual nanosecond."""
    sh = ",".join(["enable=on", "target=native", "arg=" + elf.stem] + [f"arg={a}" for a in args])
    return ["timeout", str(timeout_s), "qemu-system-arm", "-M", board, "-nographic", "-monitor", "none",
            "-serial", "none", "-icount", "shift=0", "-semihosting-config", sh, "-kernel", str(elf)]


def run(board: str, elf: Path, args: list[str] | None = None, cwd: Path | None = None,
        timeout_s: int = 300) -> GuestRun:
    """Run ``elf`` under QEMU with semihosting; files named in ``args`` are relative to ``cwd``."""
    for a in args or []:
        if " " in a or "," in a:
            raise ValueError(f"semihosting arguments cannot contain spaces or commas: {a!r}")
    cmd = qemu_command(board, Path(elf).resolve(), list(args or []), timeout_s)
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=timeout_s + 30)
    console = res.stdout + res.stderr
    report: dict[str, int] = {}
    for line in console.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            report[parts[0]] = int(parts[1])
    return GuestRun(res.returncode, console, report)


def build_plan_app(plan: bytes, board: str, work: Path, obj_dir: Path | None = None, name: str = "model",
                   opt: str = "-O2", runtime_srcs: list[Path] | None = None, cflags: str = "",
                   kernels: str = "plan", io: str = "separate") -> Path:
    """Codegen (--format app) + build for one plan; returns the ELF. ``kernels="all"`` links every kernel instead
    of only the plan's kinds (generate_c's op resolver); ``io="in-arena"`` exchanges the files at the I/O homes
    inside the arena (codegen --io in-arena)."""
    from tigris.codegen import generate_c

    work.mkdir(parents=True, exist_ok=True)
    c_src, header = generate_c(plan, name, "app", kernels=kernels, io=io)
    (work / f"{name}.c").write_text(c_src)
    (work / f"{name}.h").write_text(header)
    return build(board, work / "build", model_c=work / f"{name}.c", obj_dir=obj_dir, opt=opt,
                 runtime_srcs=runtime_srcs, cflags=cflags)


# ---------------------------------------------------------------------------------------------------------------
# Footprint: code size per object from the link map, and the no-malloc check
# ---------------------------------------------------------------------------------------------------------------
_MAP_ONE = re.compile(r"^ (\.[^\s]+)\s+0x[0-9a-fA-F]+\s+0x([0-9a-fA-F]+)\s+(\S+\.o)\s*$")
_MAP_NAME = re.compile(r"^ (\.[^\s]+)\s*$")
_MAP_REST = re.compile(r"^\s+0x[0-9a-fA-F]+\s+0x([0-9a-fA-F]+)\s+(\S+\.o)\s*$")
# Symbols whose presence means something in the image can allocate (newlib's allocator and its heap grower).
ALLOC_SYMBOLS = ("malloc", "_malloc_r", "calloc", "_calloc_r", "realloc", "_realloc_r", "free", "_free_r", "_sbrk",
                 "_sbrk_r")


@dataclass(frozen=True)
class ObjSize:
    text: int  # bytes of .text* input sections the link kept
    rodata: int  # bytes of .rodata* input sections the link kept (tables, string literals)


def linked_sizes(map_text: str) -> dict[str, ObjSize]:
    """Per object file: bytes of code and read-only data kept in the final link (after --gc-sections)."""
    sizes: dict[str, list[int]] = {}
    body = map_text.split("Linker script and memory map", 1)[-1]
    pending: str | None = None
    for line in body.splitlines():
        sec = size = obj = None
        m = _MAP_ONE.match(line)
        if m:
            sec, size, obj = m.group(1), int(m.group(2), 16), m.group(3)
        elif pending is not None and _MAP_REST.match(line):
            m2 = _MAP_REST.match(line)
            assert m2 is not None
            sec, size, obj = pending, int(m2.group(1), 16), m2.group(2)
        pending = None
        if sec is None:
            n = _MAP_NAME.match(line)
            pending = n.group(1) if n else None
            continue
        entry = sizes.setdefault(Path(obj).name, [0, 0])
        if sec.startswith(".text"):
            entry[0] += size
        elif sec.startswith(".rodata"):
            entry[1] += size
    return {k: ObjSize(v[0], v[1]) for k, v in sizes.items()}


def runtime_size(map_text: str) -> ObjSize:
    """Code and read-only data of the runtime's own objects (runtime_c/src/**) in a linked image."""
    objs = linked_sizes(map_text)
    rt = [v for k, v in objs.items() if "runtime_c_src_" in k]
    return ObjSize(sum(v.text for v in rt), sum(v.rodata for v in rt))


def size_text(paths: list[Path]) -> int:
    """Sum of arm-none-eabi-size's Berkeley "text" column (code + read-only data) over object files."""
    if not paths:
        return 0
    res = subprocess.run(["arm-none-eabi-size", "-B", *map(str, paths)], capture_output=True, text=True, check=True)
    return sum(int(line.split()[0]) for line in res.stdout.splitlines()[1:] if line.strip())


def runtime_objects(obj_dir: Path, sources: list[Path]) -> list[Path]:
    """Object files the Makefile produced for ``sources`` in ``obj_dir`` (its rule: repo path with '/' -> '_')."""
    return [obj_dir / (str(Path(p).resolve().relative_to(REPO)).replace("/", "_") + ".o") for p in sources]


def allocator_symbols(elf: Path) -> list[str]:
    """Allocator symbols defined or referenced in the linked image (must be empty)."""
    res = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True)
    names = {line.split()[-1] for line in res.stdout.splitlines() if line.strip()}
    return sorted(n for n in ALLOC_SYMBOLS if n in names)


def map_mentions_allocator(map_text: str) -> list[str]:
    """Allocator objects the linker pulled from an archive or kept (the part of the map before the discarded list
    and the memory map proper; discarded sections are not in the image)."""
    head, _, rest = map_text.partition("Discarded input sections")
    kept = rest.split("Linker script and memory map", 1)[-1] if rest else ""
    found = []
    for sym in ALLOC_SYMBOLS:
        pat = re.compile(r"(\(|\.text\.)" + re.escape(sym) + r"\b")
        if pat.search(head) or pat.search(kept):
            found.append(sym)
    return found


# Kernel kinds an int8 CNN needs (convolutions, pooling, residual add, classifier head, boundary (de)quantize,
# copies for non-aliasing reshapes). The subset build links only the files defining them; the rest are stubs.
INT8_CNN_KINDS = ("conv", "dwconv", "fc", "maxpool", "avgpool", "gap", "add", "softmax", "quantize", "dequantize",
                  "copy")
# The int8-only runtime build: the kernel registry (runtime_c/src/kernels/registry.c) has no float entries, so the
# link drops every float kernel variant (and libm).
INT8_ONLY_CFLAGS = "-DTGRS_INT8_ONLY"
# The int8 CNN subset of the size tables: int8-only and, for a plan with no ROLLING, COLS or ACCUM unit and no dwconv
# in place, without halo reuse, column tiling, the accumulating GAP and the in-place depthwise pieces.
SUBSET_CFLAGS = ("-DTGRS_INT8_ONLY -DTGRS_NO_ROLLING -DTGRS_NO_COLS -DTGRS_NO_DW_PIECES -DTGRS_NO_ACCUM -DTGRS_NO_OVERWRITE"
                 " -DTGRS_NO_REGION -DTGRS_NO_VIEWS")


def subset_sources(kinds: tuple[str, ...] = INT8_CNN_KINDS) -> list[Path]:
    """The runtime core (everything outside kernels/), the kernel support files (the registry, helpers the executor
    calls: files that define no kernel entry point), and the kernel files that define one of ``kinds`` (its entry
    point ``tgrs_kernel_<kind>`` or a dtype variant ``tgrs_<kind>_<dtype>``)."""
    from tigris.host.build import KERNELS, VARIANTS

    def defines(text: str, names: tuple[str, ...]) -> bool:
        return any(re.search(rf"^int\s+tgrs_(kernel_{k}|{k}_(f32|s8))\s*\(", text, re.M) for k in names)

    out = []
    for p in runtime_sources():
        if "kernels" not in p.parts or p.name == "registry.c":
            out.append(p)
            continue
        text = p.read_text(errors="replace")
        if defines(text, kinds) or not defines(text, KERNELS + tuple(v.rsplit("_", 1)[0] for v in VARIANTS)):
            out.append(p)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("plan", type=Path)
    ap.add_argument("--board", choices=sorted(BOARDS), default="mps2-an386")
    ap.add_argument("--input", action="append", default=[], help="input file (stored form), one per input")
    ap.add_argument("--output", action="append", default=[], help="output file, one per output")
    ap.add_argument("--work", type=Path, default=Path("build") / "qemu")
    args = ap.parse_args(argv)
    if missing_tools():
        print(f"error: missing tools: {', '.join(missing_tools())}", file=sys.stderr)
        return 2
    elf = build_plan_app(args.plan.read_bytes(), args.board, args.work)
    files = [os.path.abspath(p) for p in args.input + args.output]
    r = run(args.board, elf, files)
    print(r.console, end="")
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
