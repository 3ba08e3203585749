"""The memory picture of a plan (``tigris analyze --plot timeline.svg``) and the HTML report (``--html``).

The top panel is the fast arena over execution steps: every op of every exec unit is one step, in run order. Each
buffer is a box at its arena offset (y, bytes) across the steps where it is live; the weight prefix of a unit that
copies its weights is a grey box at offset 0; kernel scratch is hatched. Dashed lines are unit boundaries, labelled
with the unit's stages and, for a tiled unit, its tile count (the boxes of a tiled unit are its band buffers, reused
by every tile). Triangles mark reloads (at a unit's first step) and spills (at its last). The bottom panel is the
slow arena: each tensor crossing units sits at its slow offset from the unit that spills it (or the start, for graph
inputs) to the last unit that reloads it.

Every box is an SVG group whose ``id`` is ``tensor-<n>`` (``scratch-<n>``, ``weights-<n>``) and whose ``<title>``
holds the buffer's name (and its alias names), so a browser shows the name on hover and a script can list them.

matplotlib is an optional dependency (the ``[plot]`` extra); without it the CLI says so in one line (exit 2).
"""
from __future__ import annotations

import html
import io
import json
import re
from typing import Any

from tigris.ir import AnalyzedGraph, TigrisError

MISSING = "the memory picture needs matplotlib: pip install 'tigris[plot]'"


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def require_matplotlib() -> None:
    if not have_matplotlib():
        raise TigrisError(MISSING, "--plot")


def _boxes(graph: AnalyzedGraph, plan: Any, lowered: list[Any]) -> tuple[list[dict], list[dict], list[dict]]:
    """(fast boxes, slow boxes, unit spans) in step coordinates."""
    from tigris.plan.lifetime import buffers, lifetimes

    bufs = buffers(graph)
    fast: list[dict] = []
    units: list[dict] = []
    step0 = 0
    unit_start: list[int] = []
    for k, unit in enumerate(plan.units):
        n = max(1, len(unit.ops))
        unit_start.append(step0)
        entering = list(unit.reload) or [bufs.root(x) for x in graph.inputs if bufs.root(x) in unit.fast]
        leaving = list(unit.spill) or [bufs.root(x) for x in graph.outputs if bufs.root(x) in unit.fast]
        lives = {lt.name: lt for lt in lifetimes(bufs, unit.ops, entering, leaving)}
        if unit.weight_bytes and not plan.xip:
            fast.append({"kind": "weights", "name": f"weights of unit {k}", "x0": step0, "x1": step0 + n,
                         "y0": 0, "y1": unit.weight_bytes, "unit": k})
        for name, p in unit.fast.items():
            lt = lives.get(name)
            b, d = (lt.birth, lt.death) if lt else (0, n - 1)
            fast.append({"kind": "tensor", "name": name, "x0": step0 + b, "x1": step0 + d + 1, "y0": p.offset,
                         "y1": p.offset + p.size, "unit": k, "reload": name in unit.reload,
                         "spill": name in unit.spill})
        for i, p in unit.scratch.items():
            s = unit.ops.index(i)
            fast.append({"kind": "scratch", "name": f"scratch of {graph.ops[i].name}", "x0": step0 + s,
                         "x1": step0 + s + 1, "y0": p.offset, "y1": p.offset + p.size, "unit": k})
        units.append({"unit": k, "x0": step0, "x1": step0 + n, "stages": list(unit.stages), "tiles": unit.tiles,
                      "tiled": bool(unit.tile_rows), "peak": unit.peak_bytes})
        step0 += n
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for k, unit in enumerate(plan.units):
        for name in list(unit.spill) + list(unit.reload):
            first.setdefault(name, k)
            last[name] = k
    slow = []
    for name, p in plan.slow.items():
        a = 0 if name in bufs.inputs else first.get(name, 0)
        b = len(plan.units) - 1 if name in bufs.outputs else last.get(name, len(plan.units) - 1)
        x0 = units[a]["x1"] - 1 if name not in bufs.inputs and a < len(units) else units[a]["x0"]
        slow.append({"kind": "tensor", "name": name, "x0": x0, "x1": units[b]["x1"], "y0": p.offset,
                     "y1": p.offset + p.size})
    return fast, slow, units


def _aliases(plan: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for a, root in sorted(plan.alias_of.items()):
        if a != root:
            out.setdefault(root, []).append(a)
    return out


def memory_svg(graph: AnalyzedGraph, plan: Any, lowered: list[Any]) -> str:
    """The memory picture as SVG text (deterministic: fixed metadata, no dates)."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fast, slow, units = _boxes(graph, plan, lowered)
    aliases = _aliases(plan)
    steps = units[-1]["x1"] if units else 1
    has_slow = bool(slow)
    fig, axes = plt.subplots(2 if has_slow else 1, 1, figsize=(max(8.0, min(24.0, steps * 0.25)), 7 if has_slow
                                                                else 4.5),
                             squeeze=False, gridspec_kw={"height_ratios": [3, 1.4]} if has_slow else None)
    ax = axes[0][0]
    titles: dict[str, str] = {}
    cmap = matplotlib.colormaps["tab20"]
    names = sorted({b["name"] for b in fast if b["kind"] == "tensor"} | {b["name"] for b in slow})
    color = {n: cmap(i % 20) for i, n in enumerate(names)}

    def add(axis, b: dict, gid: str) -> None:
        if b["kind"] == "weights":
            r = Rectangle((b["x0"], b["y0"]), b["x1"] - b["x0"], b["y1"] - b["y0"], facecolor="0.8", edgecolor="0.4",
                          linewidth=0.5)
        elif b["kind"] == "scratch":
            r = Rectangle((b["x0"], b["y0"]), b["x1"] - b["x0"], b["y1"] - b["y0"], facecolor="white",
                          edgecolor="0.3", hatch="///", linewidth=0.5)
        else:
            r = Rectangle((b["x0"], b["y0"]), b["x1"] - b["x0"], b["y1"] - b["y0"], facecolor=color[b["name"]],
                          edgecolor="black", linewidth=0.5, alpha=0.85)
        r.set_gid(gid)
        axis.add_patch(r)
        label = b["name"] + (f" (also {', '.join(aliases[b['name']])})" if b["name"] in aliases else "")
        titles[gid] = f"{label}: bytes {b['y0']}-{b['y1']}, steps {b['x0']}-{b['x1'] - 1}"

    counters = {"tensor": 0, "scratch": 0, "weights": 0}
    for b in fast:
        add(ax, b, f"{b['kind']}-{counters[b['kind']]}")
        counters[b["kind"]] += 1
        if b.get("reload"):
            ax.plot([b["x0"]], [b["y1"]], marker="v", color="tab:blue", markersize=4)
        if b.get("spill"):
            ax.plot([b["x1"]], [b["y1"]], marker="^", color="tab:red", markersize=4)
    top = max([b["y1"] for b in fast] + [plan.fast_budget, 1])
    for u in units:
        ax.axvline(u["x0"], color="0.5", linestyle="--", linewidth=0.6)
        label = f"u{u['unit']}" + (f" x{u['tiles']}" if u["tiled"] else "")
        ax.text((u["x0"] + u["x1"]) / 2, top * 1.01, label, ha="center", va="bottom", fontsize=6, rotation=90)
    ax.axhline(plan.fast_budget, color="tab:red", linewidth=0.8)
    ax.text(0, plan.fast_budget, f" budget {plan.fast_budget} B", color="tab:red", fontsize=7, va="bottom")
    ax.set_xlim(0, steps)
    ax.set_ylim(0, top * 1.12)
    ax.set_ylabel("fast arena offset (bytes)")
    ax.set_title(f"{graph.name}: fast arena peak {plan.fast_peak} B, {len(plan.stages)} stages, "
                 f"{len(plan.units)} units (v reload, ^ spill, grey weights, hatched scratch)", fontsize=9)
    if has_slow:
        ax2 = axes[1][0]
        for b in slow:
            add(ax2, b, f"tensor-{counters['tensor']}")
            counters["tensor"] += 1
        for u in units:
            ax2.axvline(u["x0"], color="0.5", linestyle="--", linewidth=0.6)
        ax2.set_xlim(0, steps)
        ax2.set_ylim(0, max(plan.slow_peak, 1) * 1.1)
        ax2.set_ylabel("slow arena (bytes)")
        ax2.set_xlabel("execution step (op of a unit; a tiled unit repeats its steps per tile)")
    else:
        ax.set_xlabel("execution step (op of a unit; a tiled unit repeats its steps per tile)")
    fig.tight_layout()
    buf = io.StringIO()
    matplotlib.rcParams["svg.hashsalt"] = "tigris"
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "tigris"})
    plt.close(fig)
    svg = buf.getvalue()

    def titled(m: re.Match) -> str:
        gid = m.group(1)
        return f'{m.group(0)}\n   <title>{html.escape(titles.get(gid, gid))}</title>'

    return re.sub(r'<g id="((?:tensor|scratch|weights)-\d+)">', titled, svg)


def html_report(body: dict[str, Any], text: str, svg: str | None) -> str:
    """One self-contained HTML page: the text report, the memory picture (inline SVG) and the JSON."""
    m = body.get("model", {})
    picture = svg[svg.index("<svg"):] if svg else (
        f"<p>{html.escape(MISSING)}</p>" if not have_matplotlib() else "<p>no plan: nothing to draw</p>")
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f"<title>tigris analyze {html.escape(str(m.get('name', '')))}</title>"
        "<style>body{font-family:sans-serif;margin:1em}pre{font-size:12px;overflow-x:auto}</style></head><body>\n"
        f"<h1>{html.escape(str(m.get('name', '')))}</h1>\n<h2>Report</h2>\n<pre>{html.escape(text)}</pre>\n"
        f"<h2>Memory picture</h2>\n{picture}\n<h2>JSON</h2>\n<pre>{html.escape(json.dumps(body, indent=2))}</pre>\n"
        "</body></html>\n"
    )
