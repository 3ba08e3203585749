"""Human-readable reports (rich) for the CLI. Everything printed here is also in the JSON the api returns."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from rich.console import Console
from rich.table import Table

console = Console(highlight=False)


def kib(n: int | None) -> str:
    if n is None:
        return "-"
    if n >= 1024 * 1024:
        return f"{n / 1024 / 1024:.2f} MiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} B"


def print_analysis(a: Any, verbose: bool = False) -> None:
    j = a.json
    m = j["model"]
    console.print(f"[bold]{m['name']}[/bold]: {m['operators']} ops, {m['tensors']} activation tensors, "
                  f"{m['macs']:,} MACs, {kib(m['weight_bytes'])} of weights")
    for io_kind in ("inputs", "outputs"):
        for t in m[io_kind]:
            console.print(f"  {io_kind[:-1]:6} {t['name']}: {t['dtype']} {'x'.join(map(str, t['shape']))}")
    for note in a.notes:
        console.print(f"  note: {note}")
    if verbose and a.prepared is not None:
        fired = [r for r in a.prepared.reports if getattr(r, "rewritten", 0)]
        console.print("[bold]passes that fired[/bold]" + ("" if fired else ": none"))
        for r in fired:
            console.print(f"  {r.name}: {r.rewritten} node(s)")
    t = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    t.add_column("memory")
    t.add_column("peak / used", justify="right")
    t.add_column("budget", justify="right")
    t.add_row("unscheduled peak (one stage)", kib(m["unscheduled_peak_bytes"]), "")
    t.add_row("fast (SRAM), scheduled", kib(j["fast"]["peak_bytes"]), kib(j["fast"]["budget_bytes"]))
    slow = j["slow"]
    t.add_row("slow (PSRAM)", kib(slow["peak_bytes"]), kib(slow["budget_bytes"]) if slow["budget_bytes"] else "unlimited")
    if slow["spill_bytes"] is not None:
        t.add_row("  spill + reload per inference", f"{kib(slow['spill_bytes'])} + {kib(slow['reload_bytes'])}", "")
    fl = j["flash"]
    t.add_row("flash (plan file)", kib(fl["plan_bytes"]), kib(fl["budget_bytes"]) if fl["budget_bytes"] else "unlimited")
    console.print(t)
    ti = j["tiling"]
    if j["stages"]:
        rec = ti["recompute_macs"]
        share = (100.0 * rec / m["macs"]) if m["macs"] else 0.0
        console.print(f"{len(j['stages'])} stage(s), {ti['tiled_stages']} tiled ({ti['tiles']} tiles), "
                      f"{ti['chains']} chain(s); halo recompute {rec:,} MACs ({share:.1f}% of the model)")
    if verbose and j["stages"]:
        st = Table(show_header=True, header_style="bold")
        for col in ("stage", "ops", "peak", "in", "out", "tiled", "tile_h", "tiles", "halo", "chain"):
            st.add_column(col, justify="right")
        for s in j["stages"]:
            st.add_row(str(s["index"]), str(s["ops"]), kib(s["peak_bytes"]), str(len(s["inputs"])),
                       str(len(s["outputs"])), "yes" if s["tiled"] else "", str(s["tile_h"] or ""),
                       str(s["tiles"]), str(s["halo"] or ""), "" if s["chain"] is None else str(s["chain"]))
        console.print(st)
    if a.fits:
        console.print("[bold green]fits[/bold green]")
    else:
        console.print(f"[bold red]does not fit[/bold red]: {a.reason}")
        if a.min_fast_budget:
            console.print(f"smallest fast budget that fits: {kib(a.min_fast_budget)} ({a.min_fast_budget} bytes)")


def print_inspect(info: dict[str, Any], indent: int = 0) -> None:
    pad = "  " * indent
    for k, v in info.items():
        if isinstance(v, dict):
            console.print(f"{pad}[bold]{k}[/bold]")
            print_inspect(v, indent + 1)
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            console.print(f"{pad}[bold]{k}[/bold] ({len(v)})")
            for item in v:
                console.print(pad + "  - " + ", ".join(f"{ik}={iv}" for ik, iv in item.items()))
        else:
            console.print(f"{pad}{k}: {v}")


def _metric_cells(m: dict[str, Any] | None) -> list[str]:
    """One column of the verify table: the metrics of one comparison, in the order of VERIFY_METRICS."""
    if m is None:
        return ["-"] * len(VERIFY_METRICS)
    cells = []
    for key, _ in VERIFY_METRICS:
        v = m.get(key)
        if v is None:
            cells.append("-")
        elif key == "cosine":
            cells.append(f"{v:.6f}")
        elif key == "top1_agreement":
            cells.append(f"{100.0 * v:.1f}%")
        elif key == "max_lsb":
            cells.append(str(v))
        else:
            cells.append(f"{v:.3g}")
    return cells


VERIFY_METRICS = (("max_abs_err", "max abs error"), ("rmse", "RMSE"), ("mae", "MAE"), ("l2r", "L2 relative"),
                  ("cosine", "cosine"), ("max_lsb", "max LSB"), ("top1_agreement", "top-1 agreement"))


def print_verify(res: dict[str, Any]) -> None:
    """One block per output (full names: never cut), metrics as rows, comparisons as columns."""
    n = res["samples"]
    console.print(f"{n} sample{'s' if n != 1 else ''}, inputs: {res['inputs_from']}", soft_wrap=True)
    for o in res["outputs"]:
        verdict = "[green]pass[/green]" if o["pass"] else f"[red]FAIL[/red] in {o['failed_samples']} of {n}"
        kind = ", classifier" if o["classifier"] else ""
        console.print(f"[bold]output {o['name']}[/bold] ({o['dtype']} {'x'.join(map(str, o['shape']))}{kind}): "
                      f"{verdict}", soft_wrap=True)
        t = Table(show_header=True, header_style="bold", box=None, pad_edge=False, padding=(0, 2, 0, 2))
        t.add_column("metric", no_wrap=True)
        cols = [("vs ONNX Runtime", o), ("vs NumPy reference", o["reference"])]
        if o.get("expected") is not None:
            cols.append(("vs expected", o["expected"]))
        for title, _ in cols:
            t.add_column(title, justify="right", no_wrap=True)
        cells = [_metric_cells(m) for _, m in cols]
        for i, (_, label) in enumerate(VERIFY_METRICS):
            t.add_row(label, *(c[i] for c in cells))
        _print_uncut(t)
        if o["reference_bit_exact"]:
            console.print("  bit-exact against the NumPy reference on every sample")
    rt = res["runtime"]
    console.print(f"runtime high-water: fast {kib(rt['fast_peak_bytes'])}, slow {kib(rt['slow_peak_bytes'])} "
                  f"(plan: fast {kib(res['plan']['fast']['peak_bytes'])})", soft_wrap=True)
    console.print("[bold green]pass[/bold green]" if res["pass"] else "[bold red]mismatch[/bold red]")


def _print_uncut(table: Table) -> None:
    """Print a table at its natural width even when the console is narrower: numbers and names are never cut
    (a narrow terminal wraps the lines instead)."""
    from rich.measure import Measurement

    need = Measurement.get(console, console.options.update(width=1000), table).maximum
    if need <= console.width:
        console.print(table)
        return
    saved = console.width
    console.width = need
    try:
        console.print(table)
    finally:
        console.width = saved


@contextmanager
def console_progress(enabled: bool = True) -> Iterator[Callable[[str], None]]:
    """Show what a long command is doing; silent when the output is JSON."""
    if not enabled:
        yield lambda _msg: None
        return
    err = Console(stderr=True, highlight=False)
    with err.status("starting") as status:
        yield lambda msg: status.update(msg)
