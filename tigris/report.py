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


def print_verify(res: dict[str, Any]) -> None:
    t = Table(show_header=True, header_style="bold")
    for col in ("output", "max abs err", "rmse", "cosine", "max LSB", "vs reference", "result"):
        t.add_column(col, justify="right")
    for o in res["outputs"]:
        t.add_row(o["name"], f"{o['max_abs_err']:.3g}", f"{o['rmse']:.3g}", f"{o['cosine']:.6f}",
                  "-" if o["max_lsb"] is None else str(o["max_lsb"]),
                  "bit-exact" if o["reference_bit_exact"] else f"{o['reference_max_abs_err']:.3g}",
                  "[green]pass[/green]" if o["pass"] else "[red]FAIL[/red]")
    console.print(t)
    rt = res["runtime"]
    console.print(f"runtime high-water: fast {kib(rt['fast_peak_bytes'])}, slow {kib(rt['slow_peak_bytes'])} "
                  f"(plan: fast {kib(res['plan']['fast']['peak_bytes'])})")
    console.print("[bold green]pass[/bold green]" if res["pass"] else "[bold red]mismatch[/bold red]")


@contextmanager
def console_progress(enabled: bool = True) -> Iterator[Callable[[str], None]]:
    """Show what a long command is doing; silent when the output is JSON."""
    if not enabled:
        yield lambda _msg: None
        return
    err = Console(stderr=True, highlight=False)
    with err.status("starting") as status:
        yield lambda msg: status.update(msg)
