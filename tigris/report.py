"""The reports a user reads: the data the analyze JSON carries beyond the plan figures, and the text rendering of
every command's result. Everything printed here is also in the command's JSON (docs/cli.md lists the fields).

Text output is plain (no colour, no box drawing) and never cut: when stdout is not a terminal the tables are as wide
as they need; at a given width (a terminal, or ``--width``) a table too wide for it is split into column groups
that repeat the first column.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np
from rich.console import Console
from rich.table import Table

from tigris.api import format_size

# ---------------------------------------------------------------------------------------------------------------
# Analysis data (JSON fields "layers", "ram", "latency", "objective", "fast_breakdown", "verdict")
# ---------------------------------------------------------------------------------------------------------------


def _caller_bytes(prep: Any, name: str) -> int:
    """Bytes of the caller's buffer for a graph input or output (declared dtype and shape, tigris.h caller form)."""
    b = prep.graph.boundary.get(name)
    t = prep.graph.tensors[name]
    shape = b.shape if b else t.shape
    dtype = b.dtype if b else t.dtype
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def layer_rows(prep: Any, plan: Any, per_op: dict[int, int] | None, cpi: float) -> list[dict[str, Any]]:
    """One row per operator: what it is, what it costs, and how the plan runs it."""
    from tigris.api import _const_bytes
    from tigris.plan.lifetime import tensor_rows
    from tigris.plan.spatial import op_macs

    graph, lowered = prep.graph, prep.lowered
    stage_of: dict[int, Any] = {}
    unit_of: dict[int, Any] = {}
    if plan is not None:
        for sp in plan.stages:
            for i in sp.ops:
                stage_of[i] = sp
        for unit in plan.units:
            for i in unit.ops:
                unit_of[i] = unit
    rows = []
    for i, op in enumerate(graph.ops):
        low = lowered[i]
        out = op.outputs[0]
        t = graph.tensors[out]
        sp, unit = stage_of.get(i), unit_of.get(i)
        tile_rows = halo_rows = tile_cols = None
        recompute = 0
        if unit is not None and unit.tile_cols:  # a column-split unit (tigris.plan.cols): a grid of bands
            root = plan.alias_of.get(out, out)
            grid = [(tr[root], tc[root]) for tr, tc in zip(unit.tile_rows, unit.tile_cols) if root in tr]
            if grid:
                full, width = tensor_rows(t), int(t.shape[3])
                tile_rows = max(b - a for (a, b), _ in grid)
                tile_cols = max(b - a for _, (a, b) in grid)
                halo_rows = max(0, sum(b - a for (a, b), c in grid if c == grid[0][1]) - full)
                pixels = sum((b - a) * (d - c) for (a, b), (c, d) in grid)
                # the planner's own count (tigris.plan.cols rule 4), so the rows sum to the plan's total
                recompute = op_macs(graph, op) * (pixels - full * width) // (full * width) \
                    if pixels > full * width and not low.alias else 0
        elif unit is not None and unit.tile_rows:
            root = plan.alias_of.get(out, out)
            bands = [tr[root][1] - tr[root][0] for tr in unit.tile_rows if root in tr]
            full = tensor_rows(t)
            if bands:
                tile_rows = max(bands)
                halo_rows = max(0, sum(bands) - full)
                # the planner's own count (kind MACs of the recomputed rows), so the rows sum to the plan's total
                recompute = op_macs(graph, op, halo_rows) if halo_rows and not low.alias else 0
        instr = per_op.get(i) if per_op is not None else None
        rows.append({
            "index": i,
            "name": op.name,
            "type": op.op_type,
            "kernel": "alias" if low.alias else ("view" if plan is not None and i in plan.view_ops else low.kind),
            "output": out,
            "shape": list(t.shape),
            "dtype": t.dtype,
            "macs": int(low.macs),
            "weight_bytes": _const_bytes(low),
            "activation_bytes": int(t.nbytes),
            "stage": None if sp is None else sp.index,
            "tiled": bool(sp is not None and sp.tiled),
            "tile_rows": tile_rows,
            "tile_cols": tile_cols,
            "halo_rows": halo_rows,
            "recompute_macs": recompute,
            "instructions": instr if instr is not None else (0 if low.alias or (plan is not None and i in
                                                                              plan.view_ops) else None),
            "cycles": None if instr is None else int(round(instr * cpi)),
        })
    return rows


def _tiles_cell(s: dict[str, Any]) -> Any:
    """A stage's tile count, with its column tiles per row band when its unit is column-split."""
    if not s["tiled"]:
        return ""
    return s["tiles"] if (s.get("col_tiles") or 1) == 1 else f"{s['tiles']} ({s['col_tiles']} cols)"


def analysis_details(prep: Any, plan: Any, j: dict[str, Any], settings: dict[str, Any],
                     alternatives: dict[str, Any]) -> dict[str, Any]:
    """The per-layer table, RAM totals, latency estimate, objective trade-off and the verdict line."""
    from tigris.cost import estimate, load_target

    tc = load_target(settings["target"])
    est = None
    if plan is not None:
        est = estimate(prep.graph, plan, prep.lowered, tc, settings["compression"], settings["clock_hz"],
                       settings["psram_bandwidth"])
    io_in = sum(_caller_bytes(prep, n) for n in prep.graph.inputs)
    io_out = sum(_caller_bytes(prep, n) for n in prep.graph.outputs)
    fast = plan.fast_peak if plan else None
    slow = plan.slow_peak if plan else None
    io = io_in + io_out
    # in-arena: the caller writes inputs and reads outputs at their homes inside the arenas (tgrs_input_home,
    # tgrs_run_in_place), which the arena peaks already hold, so no byte is added; excluded: the application counts
    # its buffers itself.
    counted = io if settings["io_buffers"] == "separate" else 0
    # one region (ONE_REGION): the slow arena is the fast arena's memory, so the SRAM is the larger of the two
    region = plan is not None and plan.one_region
    ram = {
        "fast_arena_bytes": fast,
        "slow_arena_bytes": slow,
        "io_input_bytes": io_in,
        "io_output_bytes": io_out,
        "io_buffers": settings["io_buffers"],
        "one_region": region,
        "sram_bytes": None if fast is None else (max(fast, slow) if region else fast) + counted,
        "psram_bytes": 0 if region else slow,
        "total_ram_bytes": None if fast is None else (max(fast, slow) if region else fast + slow) + counted,
        "flash_bytes": j["flash"]["plan_bytes"],
    }
    breakdown = None
    if plan is not None:
        top = max(plan.units, key=lambda u: u.peak_bytes)
        breakdown = {
            "unit": plan.units.index(top),
            "weight_prefix_bytes": 0 if plan.xip else top.weight_bytes,
            "activation_and_scratch_bytes": top.peak_bytes - (0 if plan.xip else top.weight_bytes),
            "unscheduled_peak_bytes": plan.unscheduled_peak,
        }
    trade = []
    for name, alt in alternatives.items():
        if alt is None:
            trade.append({"objective": name, "fits": False})
            continue
        e = estimate(prep.graph, alt, prep.lowered, tc, settings["compression"], settings["clock_hz"],
                     settings["psram_bandwidth"])
        trade.append({"objective": name, "fits": True, "chosen": name == settings["objective"],
                      "stages": len(alt.stages), "tiles": sum(s.tiles for s in alt.stages if s.tiled),
                      "slow_traffic_bytes": alt.spill_bytes + alt.reload_bytes, "recompute_macs": alt.recompute_macs,
                      "instructions": e.instructions, "ms": None if e.ms is None else round(e.ms, 4)})
    latency = None
    if est is not None:
        latency = est.json()
        latency.update({"psram_bandwidth": settings["psram_bandwidth"], "cycles_per_instruction":
                        tc.cycles_per_instruction, "calibration": tc.source})
    details = {
        "layers": layer_rows(prep, plan, est.per_op if est else None, tc.cycles_per_instruction),
        "ram": ram,
        "fast_breakdown": breakdown,
        "latency": latency,
        "objective": {"name": settings["objective"], "recompute_weight": settings["recompute_weight"],
                      "tradeoff": trade},
        "settings": {"xip": settings["xip"], "compression": settings["compression"], "target": settings["target"],
                     "clock_hz": settings["clock_hz"], "psram_bandwidth": settings["psram_bandwidth"],
                     "one_region": settings.get("one_region", False)},
    }
    details["verdict"] = verdict_line(j, ram)
    return details


def slow_budget_text(budget: int | None) -> str:
    if budget is None:
        return "unlimited"
    return "0 (no PSRAM)" if budget == 0 else format_size(budget)


def verdict_line(j: dict[str, Any], ram: dict[str, Any]) -> str:
    """``fits: 64K SRAM + 112.5K PSRAM`` (plus I/O buffers and flash), or ``does not fit: <reason>``."""
    if not j["fits"]:
        return f"does not fit: {j.get('reason') or 'no plan'}"
    if ram.get("one_region"):
        parts = [f"{format_size(max(ram['fast_arena_bytes'], ram['slow_arena_bytes']))} SRAM (one region: fast "
                 f"arena {format_size(ram['fast_arena_bytes'])}, slow arena {format_size(ram['slow_arena_bytes'])})",
                 "no PSRAM"]
    else:
        parts = [f"{format_size(ram['fast_arena_bytes'])} SRAM (fast arena)"]
        parts.append(f"{format_size(ram['slow_arena_bytes'])} PSRAM (slow arena)" if ram["slow_arena_bytes"]
                     else "no PSRAM")
    if ram["io_buffers"] == "separate":
        parts.append(f"{format_size(ram['io_input_bytes'] + ram['io_output_bytes'])} I/O buffers")
    elif ram["io_buffers"] == "in-arena":
        parts.append("I/O inside the arena")
    text = "fits: " + " + ".join(parts)
    if ram["flash_bytes"] is not None:
        text += f"; {format_size(ram['flash_bytes'])} flash (plan)"
    return text


# ---------------------------------------------------------------------------------------------------------------
# Plain-text tables
# ---------------------------------------------------------------------------------------------------------------
class Text:
    """Collects lines; ``width`` None means unlimited (not a terminal)."""

    def __init__(self, width: int | None = None) -> None:
        self.width = width
        self.lines: list[str] = []

    def line(self, s: str = "") -> None:
        """A line of prose: wrapped at the width (continuation indented), never cut."""
        if self.width is None or len(s) <= self.width:
            self.lines.append(s.rstrip())
            return
        import textwrap

        lead = len(s) - len(s.lstrip(" "))
        self.lines += textwrap.wrap(s, self.width, initial_indent="", subsequent_indent=" " * (lead + 2),
                                    break_long_words=False, break_on_hyphens=False)

    def row(self, s: str) -> None:
        self.lines.append(s.rstrip())

    def table(self, headers: list[str], rows: list[list[Any]], right: set[int] | None = None) -> None:
        right = right if right is not None else set(range(1, len(headers)))
        cells = [[("" if c is None else str(c)) for c in r] for r in rows]
        widths = [max([len(h)] + [len(r[k]) for r in cells]) for k, h in enumerate(headers)]
        groups: list[list[int]] = []
        if self.width is None or sum(widths) + 2 * (len(widths) - 1) <= self.width:
            groups = [list(range(len(headers)))]
        else:
            cur: list[int] = [0]
            used = widths[0]
            for k in range(1, len(headers)):
                if len(cur) > 1 and used + 2 + widths[k] > self.width:
                    groups.append(cur)
                    cur, used = [0], widths[0]
                cur.append(k)
                used += 2 + widths[k]
            groups.append(cur)
        for g, cols in enumerate(groups):
            if g:
                self.line()

            def fmt(vals: list[str]) -> str:
                return "  ".join(v.rjust(widths[k]) if k in right else v.ljust(widths[k]) for k, v in zip(cols, vals))

            self.row(fmt([headers[k] for k in cols]))
            self.row("  ".join("-" * widths[k] for k in cols))
            for r in cells:
                self.row(fmt([r[k] for k in cols]))

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _n(v: int | None) -> str:
    return "" if v is None else f"{v:,}"


def _sz(v: int | None) -> str:
    return "" if v is None else format_size(v)


def render_analysis(j: dict[str, Any], notes: list[str] | None = None, passes: list[tuple[str, int]] | None = None,
                    verbose: bool = False, width: int | None = None) -> str:
    """The analyze report (docs/cli.md "The analyze report"). Sizes appear as -m/-s accept them."""
    out = Text(width)
    m = j["model"]
    out.line(f"{m['name']}: {m['operators']} ops, {m['tensors']} activation tensors, {m['macs']:,} MACs, "
             f"{format_size(m['weight_bytes'])} bytes of weights")
    ram = j.get("ram") or {}
    for kind in ("inputs", "outputs"):
        for t in m[kind]:
            out.line(f"  {kind[:-1]:6} {t['name']}: {t['dtype']} {'x'.join(map(str, t['shape']))}")
    for note in notes or []:
        out.line(f"  note: {note}")
    if verbose and passes is not None:
        out.line("passes that fired" + ("" if passes else ": none"))
        for name, n in passes:
            out.line(f"  {name}: {n} node(s)")
    layers = j.get("layers") or []
    fits_plan = j["fast"]["peak_bytes"] is not None
    if layers:
        out.line()
        headers = ["layer", "type", "output", "MACs", "weights", "activations"]
        if fits_plan:
            headers += ["stage", "tile rows", "halo rows", "recompute MACs", "est. cycles"]
        rows = []
        for r in layers:
            row = [r["name"], r["type"] if r["kernel"] not in ("alias", "view") else f"{r['type']} ({r['kernel']})",
                   f"{r['dtype']} {'x'.join(map(str, r['shape']))}", _n(r["macs"]), _sz(r["weight_bytes"]),
                   _sz(r["activation_bytes"])]
            if fits_plan:
                rows_cell = r["tile_rows"] if not r.get("tile_cols") else f"{r['tile_rows']} ({r['tile_cols']} cols)"
                row += [r["stage"], rows_cell, r["halo_rows"], _n(r["recompute_macs"]) if r["tiled"] else "",
                        _n(r["cycles"])]
            rows.append(row)
        out.table(headers, rows, right=set(range(3, len(headers))))
    out.line()
    slow, fl = j["slow"], j["flash"]
    mem_rows = [
        ["fast arena (SRAM)", _sz(j["fast"]["peak_bytes"]), format_size(j["fast"]["budget_bytes"])],
        ["slow arena (in the SRAM region)" if ram and ram.get("one_region") else "slow arena (PSRAM)",
         _sz(slow["peak_bytes"]), slow_budget_text(slow["budget_bytes"])],
    ]
    if ram:
        label = {"separate": "I/O buffers (caller)", "excluded": "I/O buffers (caller), not counted",
                 "in-arena": "I/O (inside the arena), not extra"}[ram["io_buffers"]]
        mem_rows.append([label, format_size(ram["io_input_bytes"] + ram["io_output_bytes"]), ""])
        mem_rows.append(["total RAM", _sz(ram["total_ram_bytes"]), ""])
    mem_rows.append(["flash (plan file)", _sz(fl["plan_bytes"]),
                     "unlimited" if fl["budget_bytes"] is None else format_size(fl["budget_bytes"])])
    out.table(["memory", "bytes", "budget"], mem_rows)
    fb = j.get("fast_breakdown")
    if fb:
        if fb["weight_prefix_bytes"]:
            out.line(f"fast arena = {format_size(fb['weight_prefix_bytes'])} weight copies (unit {fb['unit']}) + "
                     f"{format_size(fb['activation_and_scratch_bytes'])} activations and scratch; "
                     "--xip reads weights from flash instead")
        out.line(f"unscheduled peak {format_size(fb['unscheduled_peak_bytes'])}: activations of the whole graph run "
                 "as one stage, before tiling, without weight copies or kernel scratch")
    if fits_plan:
        ti = j["tiling"]
        rec = ti["recompute_macs"]
        share = (100.0 * rec / m["macs"]) if m["macs"] else 0.0
        out.line(f"{len(j['stages'])} stage(s), {ti['tiled_stages']} tiled ({ti['tiles']} tiles), "
                 f"{ti['chains']} chain(s); slow traffic {format_size(slow['spill_bytes'])} spilled + "
                 f"{format_size(slow['reload_bytes'])} reloaded per inference; halo recompute {rec:,} MACs "
                 f"({share:.1f}% of the model)")
    lat = j.get("latency")
    if lat:
        s = f"estimated {lat['instructions']:,} instructions on {lat['target']}"
        if lat["ms"] is not None:
            s += f", {lat['ms']:.2f} ms at {lat['clock_hz'] / 1e6:g} MHz"
        if lat["slow_memory_ms"] is not None:
            s += f" (slow memory {lat['slow_memory_ms']:.2f} ms at {format_size(lat['psram_bandwidth'])}/s)"
        out.line(s)
    objective = j.get("objective")
    if objective and objective["tradeoff"] and fits_plan:
        out.line(f"objective {objective['name']}; what each objective trades at this budget:")
        with_ms = any(t.get("ms") is not None for t in objective["tradeoff"])
        trows = []
        for t in objective["tradeoff"]:
            if not t["fits"]:
                trows.append([t["objective"], "does not fit", "", "", "", ""] + ([""] if with_ms else []))
                continue
            trows.append([t["objective"] + (" (chosen)" if t["chosen"] else ""), t["stages"], t["tiles"],
                          format_size(t["slow_traffic_bytes"]), _n(t["recompute_macs"]), _n(t["instructions"])]
                         + ([f"{t['ms']:.2f}"] if with_ms else []))
        out.table(["objective", "stages", "tiles", "slow traffic", "recompute MACs", "est. instructions"]
                  + (["est. ms"] if with_ms else []), trows)
    if verbose and j["stages"]:
        out.line()
        srows = []
        for s in j["stages"]:
            srows.append([s["index"], s["ops"], format_size(s["peak_bytes"]), format_size(s.get("weight_bytes", 0)),
                          len(s["inputs"]), len(s["outputs"]), "yes" if s["tiled"] else "", s["tile_h"] or "",
                          _tiles_cell(s), "" if s["halo"] is None else s["halo"],
                          "" if s["chain"] is None else s["chain"]])
        out.table(["stage", "ops", "peak", "weights", "in", "out", "tiled", "tile_h", "tiles", "halo", "chain"], srows)
    out.line()
    out.line(j.get("verdict") or ("fits" if j["fits"] else f"does not fit: {j.get('reason')}"))
    if not j["fits"] and j.get("min_fast_budget_bytes"):
        lim = j.get("limiting_op")
        s = f"smallest fast budget that fits: -m {j['min_fast_budget']}"
        if lim and lim.get("groups"):
            sub = lim["group_op"]
            s += (f" (set by op {lim['op']} ({lim['op_type']}) in {lim['groups']} channel groups: "
                  f"{sub['name']} ({sub['op_type']}) needs {lim['need_bytes']} bytes, stage {lim['stage']})")
        elif lim:
            s += f" (set by op {lim['op']} ({lim['op_type']}), stage {lim['stage']})"
        out.line(s)
        if j.get("min_fast_budget_xip"):
            out.line(f"with --xip: -m {j['min_fast_budget_xip']}")
        if j.get("weight_groups_budget"):
            out.line(f"with weight groups (output or input channels) it compiles at -m {j['weight_groups_budget']}")
    if not j["fits"] and j.get("sram_only"):
        so = j["sram_only"]
        r1 = so.get("one_region")
        if not (r1 and j.get("settings", {}).get("one_region")):
            out.line(f"without PSRAM (both arenas in SRAM): {so['total_bytes']} bytes of SRAM, -m {so['fast_budget']} "
                     f"-s {so['slow_bytes']}")
        if r1:
            out.line(f"without PSRAM as one SRAM region: {r1['total_bytes']} bytes of SRAM, -m {r1['fast_budget']} "
                     f"-s {r1['slow_bytes']} --one-region")
    return out.text()


def render_inspect(info: dict[str, Any], width: int | None = None) -> str:
    """``tigris inspect`` as tables: a plan's header, interface, memory, stages and units; a model's layers."""
    out = Text(width)
    if info.get("kind") == "plan":
        h = info["header"]
        out.line(f"plan {info['model']}: tgrs v{h['version']}, {format_size(h['file_size'])} bytes, crc32 {h['crc32']}, "
                 f"weights {'xip' if h['xip'] else 'copied'}, compression {h['compression']}"
                 + (f", flags {', '.join(h['flags'])}" if h["flags"] else "")
                 + (f", target {h['target']} ({h['arranged_ops']} ops with arranged weights)"
                    if h.get("target", "generic") != "generic" else ""))
        out.line()
        io_rows = []
        for kind in ("inputs", "outputs"):
            for io in info["interface"][kind]:
                q = io["quant"]
                io_rows.append([kind[:-1], io["name"], io["dtype"], "x".join(map(str, io["shape"])), io["layout"],
                                io["stored_dtype"], "" if q is None else f"{q['scale']:.6g} / {q['zero_point']}",
                                io["arena"], io["offset"], format_size(io["nbytes"])])
        out.table(["", "name", "dtype", "shape", "layout", "stored", "scale / zp", "arena", "offset", "bytes"],
                  io_rows, right={8, 9})
        out.line()
        mem = info["memory"]
        out.table(["memory", "bytes"], [[k.removesuffix("_bytes").replace("_", " "), _sz(v) if k.endswith("bytes")
                                         else _n(v)] for k, v in mem.items()])
        out.line()
        w = info["weights"]
        out.line(f"weights: {format_size(w['raw_bytes'])} raw, {format_size(w['stored_bytes'])} stored"
                 + (f" (ratio {w['compression_ratio']})" if w["compression_ratio"] else "") + "; by kernel: "
                 + ", ".join(f"{k} {format_size(v)}" for k, v in w["by_op_type"].items()))
        q = info["quantization"]
        out.line(f"quantization: {q['quantized_tensors']} quantized tensors, {q['float_tensors']} float, "
                 f"{q['int8_kernel_calls']} int8 kernel calls")
        out.line(f"kernels: {info['ops']['kernel_calls']} calls: "
                 + ", ".join(f"{k} {v}" for k, v in info["ops"]["by_kind"].items()))
        out.line()
        srows = [[s["index"], s["unit"], s["ops"], format_size(s["peak_bytes"]), format_size(s["weight_bytes"]),
                  ", ".join(s["inputs"]), ", ".join(s["outputs"]), s["tile_h"] if s["tiled"] else "",
                  s["tiles"] if s["tiled"] else "", s["halo"] if s["tiled"] else "",
                  "" if s["chain"] is None else s["chain"]] for s in info["stages"]]
        out.table(["stage", "unit", "ops", "peak", "weights", "reloads", "spills", "tile_h", "tiles", "halo", "chain"],
                  srows, right={0, 1, 2, 3, 4, 7, 8, 9, 10})
        out.line()
        urows = []
        for u in info["units"]:
            rows_desc = ""
            if u.get("tile_rows"):
                first = u["tile_rows"][0]
                cols0 = (u.get("tile_cols") or [{}])[0]
                rows_desc = "tile 0: " + ", ".join(
                    f"{n} {a}-{b}" + (f" x cols {cols0[n][0]}-{cols0[n][1]}" if n in cols0 else "")
                    for n, (a, b) in first.items())
            urows.append([u["index"], " ".join(map(str, u["stages"])), u["kernel_calls"], u["tiles"],
                          format_size(u["peak_bytes"]), format_size(u["weight_prefix_bytes"]),
                          ", ".join(u["reload"]), ", ".join(u["spill"]), rows_desc])
        out.table(["unit", "stages", "calls", "tiles", "peak", "weight prefix", "reloads", "spills", "rows"], urows,
                  right={0, 2, 3, 4, 5})
        return out.text()
    # an ONNX or TFLite model
    if info.get("kind") == "tflite":
        out.line(f"model {info['file']}: TFLite schema v{info.get('schema_version')}, "
                 f"{info.get('subgraphs')} subgraph(s)"
                 + (f", {info['description']}" if info.get("description") else ""))
    else:
        out.line(f"model {info['file']}: ir v{info['ir_version']}, opsets "
                 + ", ".join(f"{k} {v}" for k, v in info["opsets"].items())
                 + (f", producer {info['producer']}" if info["producer"] else ""))
    out.line()
    io_rows = [[k[:-1], v["name"], v["dtype"], "x".join("?" if d is None else str(d) for d in v["shape"])]
               for k in ("inputs", "outputs") for v in info[k]]
    out.table(["", "name", "dtype", "shape"], io_rows, right=set())
    w = info["weights"]
    out.line()
    out.line(f"{info['operators']} operators; weights: {w['tensors']} tensors, {w['parameters']:,} parameters, "
             f"{format_size(w['bytes'])} bytes")
    if info.get("layers"):
        out.line()
        rows = [[r["name"], r["type"], "x".join("?" if d is None else str(d) for d in r["shape"]) if r["shape"] else "",
                 r["dtype"] or "", _n(r["macs"]), _sz(r["weight_bytes"]), _sz(r["activation_bytes"])]
                for r in info["layers"]]
        out.table(["layer", "type", "output", "dtype", "MACs", "weights", "activations"], rows, right={4, 5, 6})
    out.line()
    out.table(["op type", "count"], [[k, v] for k, v in info["op_histogram"].items()])
    return out.text()


def render_run(res: dict[str, Any]) -> str:
    outs = ", ".join(f"{k} {'x'.join(map(str, v))}" for k, v in res["outputs"].items())
    return (f"wrote {res['file']}: {outs}; fast high-water {format_size(res['fast_peak_bytes'])}, "
            f"slow high-water {format_size(res['slow_peak_bytes'])}\n")


# ---------------------------------------------------------------------------------------------------------------
# verify (rich tables)
# ---------------------------------------------------------------------------------------------------------------
console = Console(highlight=False)


def kib(n: int | None) -> str:
    return "-" if n is None else format_size(n)


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
        w = o.get("worst_sample")
        if w and n > 1 and w["max_abs_err"] > 0:
            console.print(f"  largest error in sample {w['index']} ({w['source']}): {w['max_abs_err']:.3g}",
                          soft_wrap=True)
    cost = res.get("weights", {}).get("accuracy_cost")
    if cost:
        for name, c in cost.items():
            cos = f", cosine {c['cosine']:.6f}" if c.get("cosine") is not None else ""
            console.print(f"float16 weights: output {name} within {c['rel_err']:.3g} x max(1, |ref|) of ONNX Runtime on "
                          f"the model as given (tolerance {res['weights']['tolerance_rtol']:g}){cos}", soft_wrap=True)
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
