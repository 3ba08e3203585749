"""Weight groups: which shared models and budgets compile with copied or LZ4 weights only because ops whose weights
do not fit run as output-channel (or input-channel) groups (tigris/passes/weight_split.py, docs/memory-planning.md), and what it costs.

For every shared model (ONNX and TFLite) at 256K, 128K, 64K and 32K without --xip (copied and LZ4 weights need the
same prefix, so one column answers both): whether the planner fits the model as it is (`before`), and whether
``analyze`` fits it with weight groups (`after`). For a plan that needed groups: the split ops and their group
counts, the fast peak, the weight bytes the units stage per inference against the unsplit model's (the extra is the
zero-filled panel tails and 16-byte alignment of every group's constants), the bytes the joining Concats copy, the
slow traffic of the plan, and whether ``tigris verify`` passes on it. Every plan counted is the one ``tigris
compile`` writes (proven by the checker, read back by the reader). Writes the table into docs/benchmarks.md between
``<!-- weight_groups:begin -->`` and ``<!-- weight_groups:end -->``.

    python3 bench/weight_groups.py [--no-write]
    python3 bench/weight_groups.py --int8 [--no-write]   # re-measure the int8 models' rows only, keep the others
    python3 bench/weight_groups.py --channel-groups [--no-write]   # only the channel-groups table
    python3 bench/weight_groups.py --channel-groups --only NAME ...  # re-measure those rows of it, keep the others

``--channel-groups`` (section ``channel_groups``): with ``--xip``, for every shared model, every family of
tests/families (float32 and its ORT QDQ int8 twin), LRASPP with a MobileNetV3-Large backbone at 128x128 (float32 and
int8) and MobileNetV2-1.0 at 144x144 float32: the smallest fitting fast budget on row tiles without channel groups
and with them, beside the planner's with column tiles and what ``tigris analyze`` reports; the slow traffic of the
plan ``tigris compile`` writes at the two row-tile minimums, and ``tigris verify`` where the groups help.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _doc import as_int, markdown_table, merge_rows, write_section  # noqa: E402

from tigris import api  # noqa: E402
from tigris.plan import NoFit  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "models"
BUDGETS = ["256K", "128K", "64K", "32K"]


def _weights(prep: api.Prepared) -> int:
    return sum(api._const_bytes(low) for low in prep.lowered)


def _channel_models(tmp: Path) -> list[tuple[str, Path]]:
    import logging

    import onnx

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "families"))
    import builders
    import fam_seg

    logging.getLogger().setLevel(logging.ERROR)  # ORT's quantizer advice
    out = [(p.relative_to(SHARED).as_posix(), p) for p in sorted([*SHARED.glob("*/*.onnx"), *SHARED.glob("*/*.tflite")])]
    for fam in sorted(builders.FAMILIES):
        fp = tmp / f"{fam}.onnx"
        onnx.save(builders.FAMILIES[fam](), str(fp))
        out.append((f"family {fam} f32", fp))
        qp = tmp / f"{fam}_int8.onnx"
        try:
            builders.quantize(fp, qp, "int8", True)
        except Exception as e:  # noqa: BLE001 - a family ORT cannot quantize has no int8 row
            print(f"family {fam}: no int8 twin ({type(e).__name__})", flush=True)
            continue
        out.append((f"family {fam} int8", qp))
    fp = tmp / "lraspp_mbv3_large_128.onnx"
    onnx.save(fam_seg.lraspp_mobilenet_v3_large(), str(fp))
    qp = tmp / "lraspp_mbv3_large_128_int8.onnx"
    builders.quantize(fp, qp, "int8", True)
    mb = tmp / "mobilenet_v2_1.0_144.onnx"
    onnx.save(builders.mobilenet_v2_224(size=144), str(mb))
    return out + [("LRASPP MobileNetV3-Large 128 f32", fp), ("LRASPP MobileNetV3-Large 128 int8", qp),
                  ("MobileNetV2-1.0 144 f32", mb)]


def channel_groups_table(only: list[str] | None = None) -> str:
    import tempfile
    from dataclasses import replace

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        models = _channel_models(Path(tmp))
        for label, path in models:
            if only and not any(o in label for o in only):
                continue
            try:
                prep = api.prepare(path)
            except Exception as e:  # noqa: BLE001 - listed, not planned
                print(f"{label}: {e}", flush=True)
                continue
            flat = replace(prep, col_tiles=False)  # row tiles only: what analyze tries groups on
            before = api._min_fast(flat, None, True)
            ch = api._channel_groups_min(flat, None, True, 0.0, before, 0) if before else None
            after = ch[0] if ch else before
            cols = api._min_fast(prep, None, True) if prep.col_tiles else None
            probe = api.analyze(path, 16, xip=True, prepared=prep, tradeoff=False, emit=False, groups_advice=True)
            reported = 16 if probe.fits else probe.json["min_fast_budget_bytes"]
            if before is None:
                rows.append([label, "-", "-", "-", "-", cols, reported, "-", "-", "-"])
                continue

            def traffic(budget: int) -> tuple[int, list]:
                a = api.analyze(path, budget, xip=True, prepared=prep, tradeoff=False)
                assert a.fits, (label, budget, a.reason)
                return a.plan.spill_bytes + a.plan.reload_bytes, a.json["weight_groups"]

            t0, _ = traffic(before)
            if after >= before:
                rows.append([label, before, before, "1.00", "-", cols, reported, t0, t0, "-"])
                continue
            t1, wg = traffic(after)
            counts = sorted(g["groups"] for g in wg)
            split = f"{len(wg)} op{'s' if len(wg) > 1 else ''}, " + (
                f"{counts[0]} groups" if counts[0] == counts[-1] else f"{counts[0]}-{counts[-1]} groups")
            v = api.verify(path, after, xip=True)
            rows.append([label, before, after, f"{after / before:.2f}", split, cols, reported, t0, t1,
                         "pass" if v["pass"] else "FAIL"])
            print(label, before, after, cols, reported, flush=True)
    if only:  # re-measured rows replace theirs; the other models keep the rows they were measured with
        rows = merge_rows("channel_groups", rows, 10)
    helped = sum(1 for r in rows if (a := as_int(r[2])) is not None and (b := as_int(r[1])) is not None and a < b)
    return (
        "Channel groups (`python3 bench/weight_groups.py --channel-groups`; `--xip`; docs/memory-planning.md "
        "\"Channel groups\"). `rows only`: the smallest fitting fast budget of the planner with row tiles only "
        "and no groups (bytes); `channel groups`: the smallest with channel groups on row tiles "
        "(`api._channel_groups_min`, a budget `tigris compile` compiles); `split ops`: the ops that run as channel "
        "groups there; `column tiles`: the planner's own minimum with column tiles (tigris.plan.cols, no groups); "
        "`analyze`: the minimum `tigris analyze` reports (the smaller of the two); traffic: spill + reload bytes of "
        "the plan `tigris compile` writes at the rows-only and at the channel-groups minimum; `verify`: `tigris "
        "verify --xip` at the channel-groups minimum (host runtime against ONNX Runtime, int8 bit-exact against "
        f"the NumPy reference). Channel groups lower the rows-only minimum of {helped} of {len(rows)} models.\n\n"
        + markdown_table(["model", "rows only (B)", "channel groups (B)", "ratio", "split ops",
                          "column tiles (B)", "analyze (B)", "traffic at rows only (B)",
                          "traffic at channel groups (B)", "verify"], rows)
    )


def _kept_rows(keep) -> list[list[str]]:
    """The rows of the weight_groups table now in docs/benchmarks.md whose model ``keep`` accepts (``--int8``)."""
    import re

    from _doc import DOC

    text = DOC.read_text()
    m = re.search(r"<!-- weight_groups:begin -->(.*?)<!-- weight_groups:end -->", text, re.S)
    rows = []
    for line in (m.group(1).splitlines() if m else []):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 11 and cells[1] in BUDGETS and keep(cells[0]):
            rows.append(cells)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--channel-groups", action="store_true", help="only the channel-groups table (--xip)")
    ap.add_argument("--only", nargs="*", help="with --channel-groups: re-measure only the models whose name contains "
                    "one of these, keeping the other rows")
    ap.add_argument("--int8", action="store_true",
                    help="re-measure only the int8 models' rows of the weight_groups table, keeping the other rows")
    args = ap.parse_args()
    if args.channel_groups:
        body = channel_groups_table(args.only)
        print(body)
        if not args.no_write:
            write_section("channel_groups", body)
        return
    rows = []
    refused_before = fixed = 0
    kept = _kept_rows(lambda model: "int8" not in model) if args.int8 else []
    refused_before = sum(1 for r in kept)
    fixed = sum(1 for r in kept if r[3].startswith("fits"))
    for path in sorted([*SHARED.glob("*/*.onnx"), *SHARED.glob("*/*.tflite")]):
        rel = path.relative_to(SHARED).as_posix()
        if args.int8 and "int8" not in rel:
            continue
        prep = api.prepare(path)
        for b in BUDGETS:
            fast = api.parse_size(b)
            before = api._plan(prep, fast, None, False)
            if not isinstance(before, NoFit):
                continue  # fits as it is: no groups, the plan is unchanged
            refused_before += 1
            a = api.analyze(path, b, compression="lz4", prepared=prep, tradeoff=False)
            if not a.fits:
                rows.append([rel, b, f"refused ({before.need_bytes} B)", "refused", "-", "-", "-", "-", "-", "-",
                             "-"])
                continue
            fixed += 1
            split = a.prepared
            concat = sum(split.graph.tensors[op.outputs[0]].nbytes for op in split.graph.ops
                         if op.op_type == "Concat" and "weight_group" in op.attrs)
            wg = a.json["weight_groups"]
            counts = sorted(g["groups"] for g in wg)
            groups = f"{len(wg)} op{'s' if len(wg) > 1 else ''}, " + (
                f"{counts[0]} groups" if counts[0] == counts[-1] else f"{counts[0]}-{counts[-1]} groups")
            k_ops = [g for g in wg if g.get("channels") == "input"]
            if k_ops:
                kc = sorted(g["groups"] for g in k_ops)
                groups += f" ({len(k_ops)} by input channels, {kc[0]}-{kc[-1]} groups)"
            k_sum = sum(split.graph.tensors[op.outputs[0]].nbytes for op in split.graph.ops
                        if op.op_type in ("Add", "AccAdd") and "weight_group" in op.attrs)
            w0, w1 = _weights(prep), _weights(split)
            v = api.verify(path, b, compression="lz4")
            rows.append([rel, b, f"refused ({before.need_bytes} B)", f"fits ({a.plan.fast_peak} B)", groups,
                         w1, f"+{w1 - w0} ({100 * (w1 - w0) / w0:.2f}%)", concat, k_sum,
                         a.plan.spill_bytes + a.plan.reload_bytes, "pass" if v["pass"] else "FAIL"])
        print(rel, flush=True)
    if args.int8:  # the table's order: model, then budget as BUDGETS lists them
        rows = sorted(kept + rows, key=lambda r: (r[0], BUDGETS.index(r[1])))
    body = (
        "Without `--xip` (copied or `-c lz4` weights need the same prefix). Only model x budget combinations the "
        "planner refuses as the model is are listed (every other plan is unchanged). `before`: the planner alone "
        "(the fast bytes the refusing op needs); `after`: `tigris compile` with weight groups, and channel groups "
        "where an op's activations are what does not fit (its fast peak), and input-channel groups where an op's "
        "output-channel groups cannot fit (one panel of every input channel over the budget; int8 ops sum exact "
        "int32 partial sums). "
        "`weights staged`: bytes the units copy or decode per inference (the extra over the unsplit model is panel "
        "padding and alignment); `concat copy`: bytes the joining Concats write; `sum adds`: bytes the Adds summing "
        "input-channel groups write (an int8 op's groups add into one int32 accumulator instead: none); `slow traffic`: spill + reload of "
        "the plan; `verify`: `tigris verify -c lz4` at that budget (the C runtime against ONNX Runtime and the NumPy "
        f"reference). {fixed} of {refused_before} refused combinations now compile.\n\n"
        + markdown_table(["model", "budget", "before", "after", "split ops", "weights staged (B)",
                          "extra staged (B)", "concat copy (B)", "sum adds (B)", "slow traffic (B)", "verify"], rows)
    )
    print(body)
    if not args.no_write:
        write_section("weight_groups", body)


if __name__ == "__main__":
    main()
