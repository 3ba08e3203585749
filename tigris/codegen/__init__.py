"""``tigris codegen``: turn a .tgrs plan into C for firmware (see :mod:`tigris.codegen.cgen` for the promises).

* :func:`generate_c` — ``(plan_bytes, name, fmt, section, slow_section, kernels, fast_section) -> (c_source,
  header)``, pure.
* :func:`codegen_command` — what the CLI command does: read the plan, write ``OUT.c`` and ``OUT.h`` beside it.
* :func:`read_plan_info` — arena sizes, flags and the interface of a plan, as codegen sees them; its
  ``ram_json()`` gives the firmware's RAM figures (arenas, I/O buffers, total).
"""
from __future__ import annotations

from pathlib import Path

from tigris.codegen.cgen import FORMATS, generate_c
from tigris.codegen.planinfo import IoInfo, PlanInfo, read_plan_info
from tigris.fileio import resolve_output, write_outputs
from tigris.ir import TigrisError

__all__ = ["FORMATS", "IoInfo", "PlanInfo", "check_target", "codegen_command", "generate_c", "read_plan_info"]


def codegen_command(
    plan: str | Path,
    output: str | Path,
    name: str = "model",
    fmt: str = "core",
    section: str = ".rodata.tgrs",
    slow_section: str = ".bss.tgrs_slow",
    kernels: str = "plan",
    fast_section: str | None = None,
    io: str = "separate",
    target: str | None = None,
) -> tuple[Path, Path]:
    """Read ``plan``, write the C source to ``output`` and the header beside it (same stem, ``.h``).

    ``target``: the firmware's core; a plan whose weights are arranged for another core is refused (its runtime
    would refuse it at init with TGRS_ERR_TARGET). None checks nothing.
    Returns (source path, header path). Raises TigrisError (CLI exit 2) on an unreadable plan or bad option.
    """
    try:
        data = Path(plan).read_bytes()
    except OSError as e:
        raise TigrisError(f"cannot read plan: {e.strerror}", str(plan)) from None
    if str(output) == "":
        raise TigrisError("the output path is empty", "-o")
    out = Path(output)
    hdr = out.with_suffix(".h")
    if out.suffix == ".h":
        raise TigrisError("the output must be the .c file (the header is written beside it)", str(out))
    for p in (out, hdr):
        resolve_output(p, [plan])
    if target is not None:
        check_target(data, target, str(plan))
    c_src, header = generate_c(data, name, fmt, section, slow_section, kernels, fast_section, io)
    write_outputs([(hdr, header.encode("ascii")), (out, c_src.encode("ascii"))], [plan])
    return out, hdr


def check_target(plan_bytes: bytes, target: str, where: str) -> None:
    """Refuse (TigrisError) a plan whose weights are arranged for another core than ``target``: a runtime built for
    ``target`` runs generic plans and its own (docs/format.md "Weight arrangements")."""
    from tigris.emit import format as F
    from tigris.emit.reader import read_plan

    if target not in F.TARGET_NAMES:
        raise TigrisError(f"unknown target {target!r}; use one of {', '.join(sorted(F.TARGET_NAMES))}", "--target")
    pf = read_plan(plan_bytes)
    got = pf.target_name
    if got not in ("generic", target) and pf.arrangements():
        raise TigrisError(f"the plan's weights are arranged for {got}, not {target}: compile it with --target "
                          f"{target} (or generic)", where)
