"""Stage 3: lifetime analysis (spec section 3), on *buffers* rather than tensors.

Rules (the code cites them by number):

1. Constants are excluded: they live in flash (or in a unit's weight prefix, which is accounted separately).
2. An alias op (a reshape whose physical byte order is unchanged, as the layout pass records, :func:`is_alias`) moves
   no bytes, so its output shares its input's buffer. Every tensor is mapped to the *root* of its alias group and the
   planner works on roots only: one buffer, one lifetime that covers every member.
3. Steps are positions in the op sequence being planned (a stage, a unit or the whole graph), starting at 0.
   ``birth`` is the step of the producing op; a buffer that enters the sequence from outside (a graph input or a
   tensor reloaded from slow memory) is born at step 0, because the runtime copies it in before the first op runs.
4. ``death`` is the step of the last op in the sequence that reads the buffer; a buffer that must leave the sequence
   (a graph output, or a tensor spilled to slow memory at the end) dies at the last step. A buffer nobody reads dies
   where it was born (the kernel still writes it).
5. A buffer is live during the closed interval ``[birth, death]``: an op's inputs and outputs are live at the op's
   step together, because a kernel reads the one while it writes the other.
6. In-place ops are the exception to rule 5: when an op whose kind may run in place (``OpKind.in_place``) reads a
   buffer of exactly its output's shape, dtype, layout and size, produced earlier in the sequence, whose last use
   is this op (not a graph input or output, not leaving the sequence), the output takes that buffer's home. The input then dies at
   the step before (it shares the output's bytes at the op's step), and the output's lifetime names it
   (``inplace_of``); the packer gives both one offset (:func:`home_of`).
   A window op whose kind runs *piecewise* in place (``OpKind.piecewise_in_place``, a depthwise conv) may take the
   home of a larger input too: it computes its rows into a small temporary and stores each over input rows no later
   row reads. The output's lifetime then carries ``extra`` bytes at its birth step: the input's bytes beyond the
   output's (the tail, still read at that step) plus the temporary (``piece_rows`` rows, in the op's scratch).
7. Views (``buffers(graph, views=True)``): an op whose kind states its bytes as contiguous runs of one buffer
   (``OpKind.byte_views``: a Concat's inputs side by side in its output, a Slice's output inside its input) runs as
   a view: it has no kernel and writes nothing; each member joins the base's group at its byte offset
   (``Buffers.offset``), the producers of a Concat's inputs write straight into their runs of the output, and the
   readers of a Slice read its run of the input. The joined buffer lives from its first producer to its last
   reader (rule 3 and 4 on the root). A producer after the first reads the root too: the bytes written before it
   must survive it, so a unit holding it alone reloads the root first (read-modify-write). A member is its own
   buffer or an alias group's root whose members are no graph input or output; each tensor joins one group.
8. Joins in place: a Concat that keeps its kernel (no view) and whose first input is its output's prefix
   (``OpKind.prefix_in_place``, ``prefix_over``: nothing before the joined axis, one encoding, and one row unless
   the join is along the rows, which never runs on bands) may take that input's home when the input dies at it,
   although the output is larger: the kernel leaves the prefix where it is. The input may be an alias naming its
   root's bytes whole (a Reshape of a detection level to ``[1, k, cells]``): the root is the one taken. It may come
   from outside the sequence (a reload); the packer grows one block from the one to the other (``Buffers.prefix``
   lists such ops).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.layout import ROW_LAYOUTS, same_byte_order
from tigris.ops import concat as _concat
from tigris.ops import kind_for
from tigris.plan.types import align_up


@dataclass(frozen=True)
class Lifetime:
    name: str  # buffer (alias root) name
    size: int  # bytes reserved, 16-byte aligned
    birth: int
    death: int
    inplace_of: str | None = None  # rule 6: the dying input whose home this buffer takes at its birth step
    extra: int = 0  # rule 6, piecewise: bytes live at the birth step only (the input's tail and the temporary)
    piece_rows: int = 0  # rule 6, piecewise: rows of the temporary (0: the op runs in place element by element)
    reserve: int = 0  # rule 8: -size for a reload a join takes at step 0 (its bytes are the output's at that step)

    def overlaps(self, other: "Lifetime") -> bool:
        return self.birth <= other.death and other.birth <= self.death


def is_alias(graph: AnalyzedGraph, op: Op) -> bool:
    """True when ``op``'s output shares its input's buffer (rule 2): the layout pass records it as
    ``attrs['alias']`` on every reshape-family op whose output bytes are exactly its input bytes, including a Flatten
    read only by Gemms whose weight columns it permuted (design.md "Layouts"). The planner reads that record; an op
    the layout pass never saw (a hand-built graph) has none, and the same byte-order rule
    (:func:`tigris.layout.same_byte_order`) decides."""
    if not op.inputs or not op.outputs or graph.is_const(op.inputs[0]):
        return False
    if "alias" in op.attrs:
        return bool(op.attrs["alias"])
    k = kind_for(op.op_type)
    if k is None or not k.may_alias:
        return False
    src, dst = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    return src.dtype == dst.dtype and src.numel == dst.numel and same_byte_order(src, dst)


def alias_roots(graph: AnalyzedGraph) -> dict[str, str]:
    """alias_of: every alias op's output -> the root buffer it shares (transitively resolved)."""
    out: dict[str, str] = {}
    for op in graph.ops:
        if is_alias(graph, op):
            src = op.inputs[0]
            out[op.outputs[0]] = out.get(src, src)
    return out


def view_groups(graph: AnalyzedGraph, alias_of: dict[str, str]) -> tuple[dict[str, str], dict[str, int], frozenset[int]]:
    """Rule 7: (alias_of with the views' members, tensor -> byte offset inside its root for every tensor whose bytes
    are a run of a larger buffer, the ops that run as views). Ops are taken in graph order; an op one of whose
    members cannot join (a graph input or output in its group, a member already placed in another buffer, a base
    inside one of its members) keeps its kernel."""
    link: dict[str, tuple[str, int]] = {n: (alias_of[n], 0) for n in alias_of}
    group: dict[str, set[str]] = {}
    for n, r in alias_of.items():
        group.setdefault(r, set()).add(n)
    boundary = set(graph.inputs) | set(graph.outputs)
    produced = {t for op in graph.ops for t in op.outputs if t}

    def resolve(n: str) -> tuple[str, int]:
        off = 0
        while n in link:
            n, o = link[n]
            off += o
        return n, off

    view_ops: list[int] = []
    # by op name, not position: a graph in another running order (tigris.plan.order) gets the same groups
    for i, op in sorted(enumerate(graph.ops), key=lambda io: io[1].name):
        k = kind_for(op.op_type)
        got = k.byte_views(graph, op) if k is not None and not is_alias(graph, op) else None
        if got is None:
            continue
        base, members = got
        base_root, _ = resolve(base)
        roots = []
        for m, _off in members:
            r, o = resolve(m)
            # the member must own its bytes whole (its alias group's root, no offset), be no graph boundary and
            # be made by an op of the graph; its run goes into the base's buffer
            if o or graph.tensors[r].nbytes != graph.tensors[m].nbytes or r in boundary \
                    or any(a in boundary for a in group.get(r, ())) or r not in produced or r == base_root \
                    or r in roots:
                break
            roots.append(r)
        else:
            for (m, off), r in zip(members, roots):
                link[r] = (base, off)
                group.setdefault(base_root, set()).update({r} | group.pop(r, set()))
            view_ops.append(i)
    out_alias: dict[str, str] = {}
    offset: dict[str, int] = {}
    for n in link:
        r, o = resolve(n)
        out_alias[n] = r
        if o or graph.tensors[n].nbytes != graph.tensors[r].nbytes:
            offset[n] = o
    return out_alias, offset, frozenset(view_ops)


@dataclass(frozen=True)
class Buffers:
    """The graph seen as buffers (rule 2): per op, the root buffers it reads and writes, and each root's size."""

    alias_of: dict[str, str]
    reads: tuple[tuple[str, ...], ...]  # per op: activation roots read (constants excluded, duplicates removed)
    writes: tuple[tuple[str, ...], ...]  # per op: roots written (empty for alias ops)
    nbytes: dict[str, int]  # root -> exact byte size
    inputs: tuple[str, ...]  # graph input roots
    outputs: tuple[str, ...]  # graph output roots
    inplace: tuple[tuple[str, ...], ...] = ()  # per op: input roots its output may overwrite (rule 6), in order
    # per op: the piecewise candidates among ``inplace`` (whole tensors) -> (temporary rows, extra bytes)
    pieces: tuple[dict[str, tuple[int, int]], ...] = ()
    # rule 7: tensor -> byte offset of its run inside its root's buffer (members of views only), the ops run as views
    offset: dict[str, int] = field(default_factory=dict)
    view_ops: frozenset[int] = frozenset()
    # rule 8: the ops whose ``inplace`` candidate is a prefix of their (larger) output (a join in place)
    prefix: frozenset[int] = frozenset()
    # ops whose in-place candidate may be a reload too (a structural Transpose, ``OpKind.in_place_alias``: it runs
    # untiled, over the reloaded bytes, and a later reader reloads the slow copy, which the unit does not write)
    over_reload: frozenset[int] = frozenset()

    def root(self, name: str) -> str:
        return self.alias_of.get(name, name)

    def size(self, name: str) -> int:
        return align_up(self.nbytes[name])


def buffers(graph: AnalyzedGraph, views: bool = False, order: Sequence[int] | None = None) -> Buffers:
    """The graph as buffers (rules 1-6; with ``views`` rule 7 too). ``order`` is the running order of the ops when it
    is not the graph's (rule 7: which producer of a joined buffer runs first)."""
    alias_of = alias_roots(graph)
    moves = frozenset(i for i, op in enumerate(graph.ops) if op.outputs and op.outputs[0] in alias_of)
    offset: dict[str, int] = {}
    view_ops: frozenset[int] = frozenset()
    if views:
        alias_of, offset, view_ops = view_groups(graph, alias_of)
    root = lambda n: alias_of.get(n, n)  # noqa: E731
    reads, writes, nbytes = [], [], {}
    for i, op in enumerate(graph.ops):
        r: list[str] = []
        for t in op.inputs:
            if t and not graph.is_const(t) and root(t) not in r:
                r.append(root(t))
        reads.append(r)
        writes.append(tuple([] if i in moves or i in view_ops else [root(t) for t in op.outputs if t]))
    written: set[str] = set()
    for i in (range(len(graph.ops)) if order is None else order):
        for t in writes[i]:
            if t in written and t not in reads[i]:
                reads[i].append(t)  # rule 7: a later producer of a joined buffer keeps the bytes written before it
        written.update(writes[i])
    reads = [tuple(r) for r in reads]
    for t in graph.activations():
        rt = root(t.name)
        nbytes[rt] = max(nbytes.get(rt, 0), graph.tensors[rt].nbytes)
    ins = tuple(dict.fromkeys(root(n) for n in graph.inputs))
    outs = tuple(dict.fromkeys(root(n) for n in graph.outputs))
    inplace = tuple(inplace_candidates(graph, op, w, alias_of, nbytes, ins + outs) for op, w in zip(graph.ops, writes))
    pieces = tuple(
        {x: p for x in cands if (p := whole_piece(graph, op, x, nbytes)) is not None} if cands else {}
        for op, cands in zip(graph.ops, inplace)
    )
    # a piecewise kind's candidate stays one only where sharing saves bytes on whole tensors
    inplace = tuple(
        tuple(x for x in cands if x in pc) if _piecewise(op) else cands
        for op, cands, pc in zip(graph.ops, inplace, pieces)
    )
    prefix = frozenset(i for i, (op, c) in enumerate(zip(graph.ops, inplace)) if c and _prefix(op))
    over_reload = frozenset(i for i, (op, c) in enumerate(zip(graph.ops, inplace))
                            if c and (k := kind_for(op.op_type)) is not None and k.in_place_alias)
    return Buffers(alias_of, tuple(reads), tuple(writes), nbytes, ins, outs, inplace, pieces, offset, view_ops, prefix,
                   over_reload)


def piece_extra(graph: AnalyzedGraph, op: Op, x: str, in_band: tuple[int, int], out_band: tuple[int, int],
                in_size: int, out_size: int) -> tuple[int, int] | None:
    """Rule 6, piecewise, for one pair of bands: (temporary rows, extra bytes) or None when the output cannot take
    the input's home (larger, or the temporary costs what the sharing saves: the output's bytes). Sizes are the buffers' (aligned)."""
    k = kind_for(op.op_type)
    y = op.outputs[0]
    if k is None or out_size > in_size:
        return None
    irb, orb = _row_bytes(graph, x), _row_bytes(graph, y)
    rows = k.piece_rows(op, in_band, out_band, irb, orb)
    temp = align_up(rows * orb)
    return (rows, in_size - out_size + temp) if temp < out_size else None


# Rule 6, piecewise, on (the default) or off: off plans every window op with a second output buffer, the measured
# baseline of bench/plan_quality.py --in-place and of the tests comparing the two plans. A plan memo
# (``plan(layouts=)``, ``tigris.api.Prepared``) holds layouts of one setting only.
PIECEWISE = True


def whole_piece(graph: AnalyzedGraph, op: Op, x: str, nbytes: dict[str, int]) -> tuple[int, int] | None:
    """Rule 6, piecewise, on whole tensors (an untiled unit)."""
    k = kind_for(op.op_type)
    if not PIECEWISE or k is None or not k.piecewise_in_place:
        return None
    y = op.outputs[0]
    hx, hy = tensor_rows(graph.tensors[x]), tensor_rows(graph.tensors[y])
    return piece_extra(graph, op, x, (0, hx), (0, hy), align_up(nbytes[x]), align_up(nbytes[y]))


def _piecewise(op: Op) -> bool:
    k = kind_for(op.op_type)
    return k is not None and k.piecewise_in_place


def _prefix(op: Op) -> bool:
    k = kind_for(op.op_type)
    return k is not None and k.prefix_in_place


# Rule 7 on (the default) or off: off joins every Concat into a buffer of its own (the baseline the tests compare).
PREFIX = True


def _row_bytes(graph: AnalyzedGraph, name: str) -> int:
    t = graph.tensors[name]
    return t.nbytes // max(1, tensor_rows(t))


def inplace_candidates(
    graph: AnalyzedGraph, op: Op, writes: Sequence[str], alias_of: dict[str, str], nbytes: dict[str, int],
    boundary: Sequence[str],
) -> tuple[str, ...]:
    """Rule 6, the static half: the inputs of ``op`` whose buffer its output may take, when they die at this op.
    Each is an activation that is its own buffer (not a view, no alias group's other member), of exactly the
    output's shape, dtype, layout and byte size; neither it nor the output is a graph input or output."""
    k = kind_for(op.op_type)
    if k is None or not (k.in_place or k.piecewise_in_place or k.prefix_in_place) or len(writes) != 1 \
            or len(op.outputs) != 1:
        return ()
    y = writes[0]
    grouped = set(alias_of.values())
    if k.prefix_in_place:  # rule 8: the output grows over its first input, which may be a reload; y may have views
        # and be a graph output (its home is where the join writes it, wherever that is)
        x = next((n for n in op.inputs if n), None)
        # The first input may be an alias (a Reshape of another tensor) when it names its root's bytes whole: the
        # pair is then the root's. The output owns its buffer (no run of a view's buffer that other ops write), so
        # only the join writes it.
        rx = alias_of.get(x, x) if x is not None else None
        if rx != x and not _concat.ROW_JOINS:
            return ()
        ok = PREFIX and x is not None and op.outputs[0] not in alias_of and not graph.is_const(x) \
            and rx not in boundary and nbytes.get(rx) == graph.tensors[x].nbytes and k.prefix_over(graph, op, x)
        return (rx,) if ok else ()
    if y in boundary or (y in grouped and not k.in_place_alias):
        return ()
    ty = graph.tensors[y]
    found: list[str] = []
    for x in op.inputs:
        if not x or graph.is_const(x) or x in boundary or x in found:
            continue
        rx = x
        if x in alias_of or x in grouped:
            # an alias naming its root's bytes whole gives the root's home, where the kind allows it
            rx = alias_of.get(x, x)
            if not (k.in_place and k.in_place_alias) or rx in boundary or rx in found \
                    or nbytes.get(rx) != graph.tensors[x].nbytes:
                continue
        tx = graph.tensors[x]
        if k.piecewise_in_place:
            if rx == x and nbytes.get(x) == tx.nbytes and nbytes.get(y) == ty.nbytes \
                    and k.piecewise_over(graph, op, x):
                found.append(x)
        elif k.in_place_over(graph, op, x) and nbytes.get(rx) == nbytes.get(y) == ty.nbytes:
            found.append(rx)
    return tuple(found)


def home_of(lives: Iterable[Lifetime]) -> dict[str, str]:
    """Rule 6 for the packer: buffer -> the buffer whose offset it shares (itself when it takes no one's home);
    a chain of in-place ops resolves to the first buffer of the chain."""
    home: dict[str, str] = {}
    for lt in sorted(lives, key=lambda lt: lt.birth):
        home[lt.name] = home.get(lt.inplace_of, lt.inplace_of) if lt.inplace_of else lt.name
    return home


def lifetimes(
    bufs: Buffers,
    ops: Sequence[int],
    entering: Iterable[str],
    leaving: Iterable[str],
    size_of: Callable[[str], int] | None = None,
    inplace: Callable[[str, str], bool] | bool = True,
    piece_of: Callable[[int, str, str], tuple[int, int] | None] | None = None,
) -> list[Lifetime]:
    """Lifetimes of every buffer the op sequence ``ops`` touches (rules 3-6).

    ``entering`` are buffers present before step 0 (graph inputs, reloads); ``leaving`` must survive to the last step
    (graph outputs, spills). ``size_of`` overrides the buffer size (band buffers of a tiled unit). ``inplace`` says
    whether rule 6 applies: False never, True always, or a predicate ``(input, output)`` (a tiled unit asks that the
    two have the same band in every tile). A piecewise candidate (``bufs.pieces``) is judged by ``piece_of(op,
    input, output)`` instead, (temporary rows, extra bytes) or None: by default the whole-tensor figures (a tiled unit
    passes its bands').
    """
    size_of = size_of or bufs.size
    leaving = list(leaving)
    last = len(ops) - 1
    birth: dict[str, int] = {}
    death: dict[str, int] = {}
    for name in entering:
        birth[name] = 0
        death[name] = 0
    for step, i in enumerate(ops):
        for name in bufs.reads[i]:
            if name not in birth:  # read before any write in this sequence: it came from outside (rule 3)
                birth[name] = 0
            death[name] = step
        for name in bufs.writes[i]:
            if name not in birth:
                birth[name] = step
                death[name] = step
    for name in leaving:
        if name in birth:
            death[name] = last
    taken: dict[str, str] = {}
    piece: dict[str, tuple[int, int]] = {}
    grown: set[str] = set()  # rule 8: outputs that took a smaller input's home
    if inplace is not False and bufs.inplace:
        out_set = set(leaving)
        produced = {n for i in ops for n in bufs.writes[i]}
        for step, i in enumerate(ops):
            w = bufs.writes[i]
            if not bufs.inplace[i] or birth.get(w[0]) != step:
                continue
            grows = i in bufs.prefix
            for x in bufs.inplace[i]:
                if (x not in produced and not grows and i not in bufs.over_reload) or death.get(x) != step \
                        or x in out_set:
                    continue
                if grows:
                    if size_of(x) > size_of(w[0]) or x in piece or not (inplace is True or inplace(x, w[0])):
                        continue
                    grown.add(w[0])
                elif bufs.pieces and x in bufs.pieces[i]:
                    got = bufs.pieces[i][x] if piece_of is None else piece_of(i, x, w[0])
                    if got is None:
                        continue
                    piece[w[0]] = got
                elif size_of(x) != size_of(w[0]) or not (inplace is True or inplace(x, w[0])):
                    continue
                death[x] = step - 1  # a reload the join takes at step 0 keeps [0, 0]: see ``shared`` below
                taken[w[0]] = x
                break
    # rule 8: a reload whose join runs at step 0 has no step of its own: it is the first bytes of the join's output
    # at that step, so it counts for nothing there (the packer grows one block from the one to the other)
    shared = {x for y, x in taken.items() if y in grown and death[x] < birth[x]}
    return [Lifetime(n, size_of(n), birth[n], max(death[n], birth[n]), taken.get(n),
                     piece[n][1] if n in piece else 0, piece[n][0] if n in piece else 0,
                     -size_of(n) if n in shared else 0)
            for n in birth]


def tensor_rows(t: Tensor) -> int:
    """Length of the tiling axis: H of an nhwc tensor, L of an nwc tensor; padded view dim 1 otherwise."""
    if t.layout in ROW_LAYOUTS:
        return t.shape[2]
    padded = (1,) * (4 - len(t.shape)) + tuple(t.shape[-4:])
    return padded[1]
