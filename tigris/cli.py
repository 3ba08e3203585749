"""The `tigris` command line: thin wrappers over :mod:`tigris.api`.

Exit codes (docs/cli.md): 0 success / fits / pass, 1 does not fit (analyze, compile) or mismatch (verify), 2 bad
input or unsupported model, 3 an internal error (a bug in TiGrIS, never the user's input; it too prints one line,
never a traceback), 4 verify only: the model does not fit the budgets, so nothing ran (1 stays "mismatch").
Errors go to stderr as one line: ``error: <what> (<where>)``.
"""
from __future__ import annotations

import json
import math
import os
import sys
import warnings
from functools import wraps
from pathlib import Path
from typing import Any, Callable

import click
import numpy as np

from tigris import api
from tigris.fileio import resolve_output, write_atomic
from tigris.ir import TigrisError, TigrisWarning, UnsupportedModelError

EXIT_OK, EXIT_NO_FIT, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_MISMATCH = 1  # verify: ran, and an output is outside the tolerance
EXIT_VERIFY_NO_FIT = 4  # verify: no plan fits the budgets, nothing ran (kept apart from a mismatch)


def exit_code_of(e: BaseException) -> int:
    """The exit code of an exception that reaches the command line: the one policy, by type (docs/cli.md).

    * :class:`~tigris.ir.TigrisError` carries its own code: 1 for "does not fit", 2 for bad input;
    * an ``OSError`` (a file that cannot be read or written) and a ``MemoryError`` (an input too large for this host)
      are the user's input, 2;
    * ``KeyboardInterrupt`` is 130, the shell's convention for SIGINT;
    * anything else is a bug in TiGrIS, 3.
    """
    if isinstance(e, TigrisError):
        return int(e.exit_code)
    if isinstance(e, (OSError, MemoryError)):
        return EXIT_BAD_INPUT
    if isinstance(e, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    return EXIT_INTERNAL


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def error_line(e: BaseException, where: str) -> str:
    """The one stderr line for ``e`` (without the ``error: `` prefix)."""
    if isinstance(e, TigrisError):
        if e.where == "plan" and where != "plan":  # the plan reader and runtime know no file name; the CLI does
            return _one_line(f"{e.what} ({where})")
        return _one_line(str(e))
    if isinstance(e, OSError):
        what = e.strerror or type(e).__name__
        return _one_line(f"{what} ({e.filename or where})")
    if isinstance(e, MemoryError):
        return f"out of memory: the input is too large for this host ({where})"
    if isinstance(e, KeyboardInterrupt):
        return "interrupted"
    first = str(e).splitlines()[0] if str(e) else ""
    return _one_line(f"internal error: {type(e).__name__}: {first} ({where}); please report this")


def _fail(msg: str, code: int, json_command: str | None = None) -> None:
    """One line on stderr; in --json mode also ``{"error", "exit"}`` on stdout, so a script always gets JSON."""
    click.echo(f"error: {msg}", err=True)
    if json_command:
        click.echo(json.dumps(api.json_error(json_command, msg, code), indent=2))
    sys.exit(code)


def _command_name(fn: Callable[..., Any]) -> str:
    return fn.__name__.removesuffix("_cmd")


def _echo_json(command: str, body: dict[str, Any]) -> None:
    click.echo(json.dumps(api.json_envelope(command, body), indent=2))


def _width(width: int | None) -> int | None:
    """Text width: ``--width``, else the terminal's, else unlimited (a pipe or file gets whole lines)."""
    if width:
        return width
    if sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size().columns
    return None


def _print_warnings(caught: list[warnings.WarningMessage]) -> None:
    """TiGrIS's own warnings, one line each and once; library warnings (NumPy's RuntimeWarning on an inf weight,
    deprecations) are not the user's business and are dropped."""
    seen: set[str] = set()
    for w in caught:
        if issubclass(w.category, TigrisWarning):
            line = _one_line(str(w.message))
            if line not in seen:
                seen.add(line)
                click.echo(f"warning: {line}", err=True)


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn every failure into one line on stderr and the exit code of :func:`exit_code_of`."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                return _run(*args, **kwargs)
            finally:
                _print_warnings(caught)

    def _run(*args: Any, **kwargs: Any) -> Any:
        jc = _command_name(fn) if kwargs.get("as_json") else None
        try:
            return fn(*args, **kwargs)
        except SystemExit:
            raise
        except UnsupportedModelError as e:
            click.echo(f"error: {_one_line(str(e))}", err=True)
            for n in e.nodes:
                click.echo(f"  unsupported: {n['node']} ({n['op']}): {n.get('reason', '')}", err=True)
            if jc:
                body = api.unsupported_json(e, kwargs.get("model", ""))
                click.echo(json.dumps(api.json_error(jc, _one_line(str(e)), exit_code_of(e), **body), indent=2))
            sys.exit(exit_code_of(e))
        except BaseException as e:  # noqa: BLE001 - the last line of defence against tracebacks
            where = next((str(kwargs[k]) for k in ("model", "plan", "file") if kwargs.get(k)), fn.__name__)
            _fail(error_line(e, where), exit_code_of(e), jc)

    return wrapper


class _Group(click.Group):
    """Click's own errors (unknown option, missing argument, bad value) in the same one-line form, exit 2."""

    def main(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
        except click.exceptions.Abort:
            _fail("interrupted", EXIT_INTERRUPTED)
        except click.ClickException as e:
            ctx = getattr(e, "ctx", None)
            where = ctx.command_path if ctx is not None else "tigris"
            _fail(f"{_one_line(e.format_message())} ({where})", EXIT_BAD_INPUT)
        sys.exit(rv if isinstance(rv, int) else EXIT_OK)


def _load_inputs(specs: tuple[str, ...]) -> dict[str, np.ndarray]:
    from tigris.samples import read_array

    out: dict[str, np.ndarray] = {}
    for spec in specs:
        name, sep, file = spec.partition("=")
        if not sep or not name or not file:
            raise TigrisError(f"cannot read {spec!r}; use NAME=FILE.npy or NAME=FILE.pb", "--input")
        if name in out:
            raise TigrisError("input given twice", name)
        out[name] = read_array(file)
    return out


def _budget_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--input-shape", "input_shape", multiple=True, metavar="NAME:1x3x96x96",
                     help="Concrete shape for a graph input (repeatable).")(f)
    f = click.option("-f", "--flash", default=None, metavar="SIZE", help="Flash budget for the plan (e.g. 4M).")(f)
    f = click.option("--one-region", "one_region", is_flag=True,
                     help="No PSRAM: both arenas share one SRAM block (-s then bounds the block's end; header flag "
                          "ONE_REGION). analyze -s 0 suggests it where it needs less SRAM.")(f)
    f = click.option("-s", "--slow", default=None, metavar="SIZE", help="Slow (PSRAM) budget; unlimited if absent, 0 = no PSRAM.")(f)
    f = click.option("-m", "--fast", required=True, metavar="SIZE", help="Fast SRAM budget (e.g. 256K).")(f)
    return f


def _plan_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("-c", "--compression", type=click.Choice(["none", "lz4"]), default="none",
                     help="Weight compression (one LZ4 block per stage).")(f)
    f = click.option("--xip", is_flag=True, help="Kernels read weights in place from flash (no RAM for weights).")(f)
    f = click.option("--weights", type=click.Choice(list(api.WEIGHT_FORMATS)), default=None,
                     help="How float weights are stored: fp32, or fp16 (IEEE halves, half the flash, widened to "
                          "float32 by the kernels; the default for a float16 model). See docs/format.md.")(f)
    f = click.option("--numerics", type=click.Choice(["onnx", "tflm"]), default=None,
                     help="int8 arithmetic to reproduce: onnx (default for .onnx) or tflm, bit-exact with TensorFlow "
                          "Lite Micro (default for .tflite). See docs/numerics.md.")(f)
    return f


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tigris")
def main() -> None:
    """TiGrIS: compile an ONNX model and a memory budget into a static execution plan for microcontrollers."""


def _output_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--width", type=click.IntRange(40, 1000), default=None, metavar="COLS",
                     help="Text width (default: the terminal's; unlimited when not a terminal).")(f)
    f = click.option("-q", "--quiet", is_flag=True, help="No report on stdout (errors still go to stderr).")(f)
    f = click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout (docs/cli.md).")(f)
    return f


def _report_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--io-buffers", type=click.Choice(["separate", "excluded", "in-arena"]), default="separate",
                     show_default=True, help="Count the caller's input/output buffers in total RAM; or not (the "
                     "application accounts for them); or in-arena: the firmware writes inputs and reads outputs "
                     "inside the arena (tgrs_run_in_place), which adds nothing.")(f)
    f = click.option("--objective", type=click.Choice(list(api.OBJECTIVES)), default=None,
                     help="What the planner minimizes: slow traffic, halo recompute, or estimated latency "
                     "(default: latency, of the generic core without --target).")(f)
    f = click.option("--psram-bandwidth", default=None, metavar="BYTES/S",
                     help="Slow-memory bandwidth for the latency estimate (e.g. 40M = 40 MiB/s).")(f)
    f = click.option("--clock", default=None, metavar="HZ", help="Core clock for ms estimates (e.g. 168M).")(f)
    f = _target_option(f)
    return f


TARGET_HELP = ("Core the plan is for: the latency estimate (which the default objective minimizes) and the weight "
               "arrangement of its kernels (docs/format.md); default generic: no arrangement, runs on every runtime.")


def _target_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--target", type=click.Choice(["cortex-m4", "cortex-m55", "generic"]), default=None,
                        help=TARGET_HELP)(f)


@main.command()
@click.argument("model", type=click.Path(dir_okay=False))
@_budget_options
@_plan_options
@_report_options
@_output_options
@click.option("-o", "--output", "report_json", default=None, type=click.Path(dir_okay=False),
              help="Also write the JSON report to this file.")
@click.option("--html", "html", default=None, type=click.Path(dir_okay=False),
              help="Also write an HTML report (with the memory picture when matplotlib is installed).")
@click.option("--plot", "plot", default=None, type=click.Path(dir_okay=False),
              help="Draw the memory picture (SVG) to this file; needs the [plot] extra (matplotlib).")
@click.option("-v", "--verbose", is_flag=True, help="Also the passes that fired and the per-stage table.")
@guarded
def analyze(model: str, fast: str, slow: str | None, flash: str | None, input_shape: tuple[str, ...], one_region: bool,
            xip: bool, compression: str, numerics: str | None, weights: str | None, target: str | None, clock: str | None,
            psram_bandwidth: str | None, objective: str | None, io_buffers: str, as_json: bool, quiet: bool,
            width: int | None, report_json: str | None, html: str | None, plot: str | None, verbose: bool) -> None:
    """Will MODEL fit? If not, why not, and what would. Exit 0 fits, 1 does not fit, 2 bad input."""
    outputs = [p for p in (report_json, html, plot) if p]
    for p in outputs:
        resolve_output(p, [model])  # refused before the analysis, not after
    if plot:
        from tigris.plot import require_matplotlib

        require_matplotlib()
    a = api.analyze(model, fast, slow, flash, api.parse_input_shapes(input_shape), xip=xip, compression=compression,
                    numerics=numerics, weights=weights, target=target, clock=clock, psram_bandwidth=psram_bandwidth,
                    objective=objective, io_buffers=io_buffers, groups_advice=True, one_region=one_region)
    body = api.json_envelope("analyze", a.json)
    svg = None
    if plot or html:
        from tigris.plot import have_matplotlib, memory_svg

        if a.plan is not None and (plot or have_matplotlib()):
            svg = memory_svg(a.prepared.graph, a.plan, a.prepared.lowered)
    if report_json:
        write_atomic(report_json, (json.dumps(body, indent=2) + "\n").encode(), [model])
    if plot and svg is not None:
        write_atomic(plot, svg.encode(), [model])
    from tigris.report import render_analysis

    passes = [(r.name, r.rewritten) for r in a.prepared.reports if getattr(r, "rewritten", 0)] if a.prepared else []
    if html:
        from tigris.plot import html_report

        page = html_report(body, render_analysis(a.json, a.notes, passes, verbose=True), svg)
        write_atomic(html, page.encode(), [model])
    if as_json:
        click.echo(json.dumps(body, indent=2))
    elif not quiet:
        click.echo(render_analysis(a.json, a.notes, passes, verbose=verbose, width=_width(width)), nl=False)
    sys.exit(EXIT_OK if a.fits else EXIT_NO_FIT)


@main.command(name="compile")
@click.argument("model", type=click.Path(dir_okay=False))
@_budget_options
@_plan_options
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="Plan file to write (default: MODEL with .tgrs).")
@click.option("--objective", type=click.Choice(list(api.OBJECTIVES)), default=None,
              help="What the planner minimizes (default: latency; see analyze).")
@_target_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
@guarded
def compile_cmd(model: str, fast: str, slow: str | None, flash: str | None, input_shape: tuple[str, ...],
                one_region: bool, xip: bool, compression: str, numerics: str | None, weights: str | None, output: str | None, objective: str | None,
                target: str | None, as_json: bool, quiet: bool) -> None:
    """Write the .tgrs plan. Exit 0 written, 1 does not fit (nothing written), 2 bad input."""
    out = Path(model).with_suffix(".tgrs") if output is None else output
    resolve_output(out, [model])  # refused before the (possibly long) compilation, not after
    c = api.compile_model(model, fast, slow, flash, xip, compression, api.parse_input_shapes(input_shape),
                          numerics=numerics, objective=objective, weights=weights, target=target,
                          one_region=one_region)
    write_atomic(out, c.plan_bytes, [model])
    j = c.analysis.json
    if as_json:
        _echo_json("compile", api.compile_json(c, out))
    elif not quiet:
        click.echo(f"wrote {out} ({len(c.plan_bytes)} bytes): fast peak {j['fast']['peak_bytes']} bytes, "
                   f"{len(j['stages'])} stage(s), {j['tiling']['tiled_stages']} tiled")


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")
@click.option("--width", type=click.IntRange(40, 1000), default=None, metavar="COLS",
              help="Text width (default: the terminal's; unlimited when not a terminal).")
@guarded
def inspect(file: str, as_json: bool, width: int | None) -> None:
    """What an .onnx model (per layer) or a .tgrs plan contains (reads only)."""
    info = api.inspect(file)
    if as_json:
        _echo_json("inspect", info)
    else:
        from tigris.report import render_inspect

        click.echo(render_inspect(info, _width(width)), nl=False)


@main.command()
@click.argument("plan", type=click.Path(dir_okay=False))
@click.option("--input", "inputs", multiple=True, metavar="NAME=FILE.npy", help="An input tensor (repeatable).")
@click.option("--output", "output", required=True, type=click.Path(dir_okay=False), help="Outputs as .npz.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
@guarded
def run(plan: str, inputs: tuple[str, ...], output: str, as_json: bool, quiet: bool) -> None:
    """Run PLAN on the host build of the C runtime. Exit 0, or 2 on a bad plan or input."""
    given = _load_inputs(inputs)
    in_files = [plan, *(spec.partition("=")[2] for spec in inputs)]
    resolve_output(output, in_files)
    try:
        data = Path(plan).read_bytes()
    except OSError as e:
        raise TigrisError(f"cannot read plan: {e.strerror}", plan) from None
    if data[4:8] == b"TFL3":
        raise TigrisError("this is a TFLite model, not a plan: compile it first (tigris compile MODEL --fast SIZE)",
                          plan)
    res = api.run_plan(data, given)
    import io

    buf = io.BytesIO()
    np.savez(buf, **res.outputs)
    write_atomic(output, buf.getvalue(), in_files)
    summary = api.run_json(res, output)
    if as_json:
        _echo_json("run", summary)
    elif not quiet:
        from tigris.report import render_run

        click.echo(render_run(summary), nl=False)


@main.command()
@click.argument("model", type=click.Path(dir_okay=False))
@_budget_options
@_plan_options
@click.option("--input", "inputs", multiple=True, metavar="NAME=FILE",
              help="One input tensor, .npy or ONNX TensorProto .pb (repeatable; one sample).")
@click.option("--data", default=None, type=click.Path(), metavar="PATH",
              help="Samples: an .npz (input names, optional output names), a folder of test_data_set_*/*.pb, or of "
                   ".npz files.")
@click.option("--samples", default=None, type=click.IntRange(min=1), metavar="N",
              help="Number of random samples (default 1), or the first N of --data.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0), help="Seed of the first random sample (then seed+1, ...).")
@_target_option
@click.option("--json", "as_json", is_flag=True, help="Every metric of every output as JSON.")
@guarded
def verify(model: str, fast: str, slow: str | None, flash: str | None, input_shape: tuple[str, ...], one_region: bool,
           xip: bool, compression: str, numerics: str | None, weights: str | None, inputs: tuple[str, ...], data: str | None, samples: int | None,
           seed: int, target: str | None, as_json: bool) -> None:
    """Compile, run on the C runtime, compare with ONNX Runtime and the NumPy reference.

    Exit 0 pass, 1 mismatch, 2 bad input, 4 does not fit (nothing ran)."""
    from tigris.ir import DoesNotFitError
    from tigris.report import console_progress, print_verify

    given = _load_inputs(inputs) or None
    try:
        with console_progress(enabled=not as_json) as progress:
            res = api.verify(model, fast, slow, flash, xip, compression, api.parse_input_shapes(input_shape),
                             given, seed, progress, samples=samples, data=data, numerics=numerics,
                             weights=weights, target=target, one_region=one_region)
    except DoesNotFitError as e:
        if as_json:
            click.echo(json.dumps(api.json_error("verify", str(e), EXIT_VERIFY_NO_FIT, **{"pass": False, "fits": False}),
                                  indent=2))
        _fail(str(e), EXIT_VERIFY_NO_FIT)
    if as_json:
        _echo_json("verify", res)
    else:
        print_verify(res)
    sys.exit(EXIT_OK if res["pass"] else EXIT_MISMATCH)


@main.command()
@click.argument("plan", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="C file to write.")
@click.option("--name", default="model", show_default=True, help="C identifier prefix.")
@click.option("--format", "fmt", type=click.Choice(["core", "app"]), default="core", show_default=True)
@click.option("--section", default=".rodata.tgrs", show_default=True, help="Flash section of the plan array.")
@click.option("--slow-section", default=".bss.tgrs_slow", show_default=True, help="Section of the slow arena.")
@click.option("--fast-section", default=None, metavar="NAME",
              help="Section of the fast arena, e.g. .bss.dtcm for a DTCM (default: plain .bss).")
@click.option("--kernels", type=click.Choice(["plan", "all"]), default="plan", show_default=True,
              help="Op resolver: link the kernels of the plan's kinds only, or every kernel (to swap plans later).")
@click.option("--io", "io", type=click.Choice(["separate", "in-arena"]), default="separate", show_default=True,
              help="I/O through the caller's buffers (NAME_run), or inside the arena, zero copy (NAME_input(i), "
              "NAME_run_in_place(), NAME_output(i)); in-arena drops the I/O buffers from the total RAM.")
@click.option("--target", type=click.Choice(["cortex-m4", "cortex-m55", "generic"]), default=None,
              help="Core of the firmware: refuse a plan whose weights are arranged for another (exit 2; the "
                   "runtime would refuse it with TGRS_ERR_TARGET). Default: no check.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
@guarded
def codegen(plan: str, output: str, name: str, fmt: str, section: str, slow_section: str,
            fast_section: str | None, kernels: str, io: str, target: str | None, as_json: bool, quiet: bool) -> None:
    """C source embedding PLAN for firmware: arenas, NAME_init(), NAME_run()."""
    from tigris.codegen import codegen_command

    out, hdr = codegen_command(plan, output, name, fmt, section, slow_section, kernels, fast_section, io, target)
    if as_json:
        _echo_json("codegen", api.codegen_json(plan, out, hdr, name, fmt, kernels, io))
    elif not quiet:
        click.echo(f"wrote {out} and {hdr}")


if __name__ == "__main__":
    main()
