"""Memory-aware operator order: a topological order of the graph's ops whose untiled timeline peak is as small as
the search can make it, with the loader's order (the spec's DFS post-order, ``tigris.load.order``) as the baseline.

On a chain there is one order. On a branched graph (a residual, an SE block, several detector heads, a BiFPN) the
order decides which tensors are live together: running the branch whose result is small first, or finishing one
head before starting the next, can lower the peak a lot. The search is a dynamic program over *down-sets* (the sets
of ops already run, closed under producers): what is live after a down-set depends only on the set, so the best
order reaching a set is found once for all the orders that reach it.

* **Step cost**, with the planner's own liveness (``lifetime.py``): the buffers live after the ops run so far
  (graph inputs, and produced buffers that a later op reads or that are graph outputs), plus what the next op
  writes; an op's inputs stay live at its step (closed intervals), alias ops write nothing and extend their root's
  life, and an in-place op (rule 6) whose overwritten input dies at it counts the pair once. A graph input nobody
  reads counts at step 0 only. This is exactly the sweep of :func:`tigris.plan.timeline.unscheduled_peak` on the
  reordered graph (tests compare the two on random graphs).
* **Objective**: the largest step cost (the peak); among orders with the same peak at a down-set, the smaller sum of
  step costs (less memory in use over time, which the partitioner's stages also feel), then the order met first
  with the baseline's ops taken in baseline order. The peak is minimized exactly; the sum is a tie-break only.
* **Pruned**: when the baseline's peak already equals a lower bound every order needs (the largest op's inputs
  and outputs, the graph inputs, the graph outputs) it is kept without a search; a state whose peak so far reaches
  the baseline's cannot end below it and is dropped. Neither changes the result.
* **Bounded**: the program runs layer by layer (down-sets of k ops, k = 0..n). A layer larger than the beam width
  keeps its best states by (peak, live bytes, sum) and always the baseline's own prefix, so the result is never
  worse than the baseline; when no layer was cut the order is exact. The width is ``max(MIN_BEAM, WORK // n)``
  states, so the work is bounded by about WORK transitions on any graph and is linear on a chain (one state per
  layer). Everything is deterministic: the same graph gives the same order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from tigris.ir import AnalyzedGraph
from tigris.plan.lifetime import Buffers, buffers
from tigris.plan.timeline import unscheduled_peak

WORK = 60_000  # transitions the search may spend on one graph (its beam width is WORK // ops)
MIN_BEAM = 64  # ... but at least this many states per layer


@dataclass(frozen=True)
class OrderResult:
    order: tuple[int, ...]  # op indices of the graph, in the order found
    peak: int  # its untiled timeline peak
    baseline_peak: int  # the graph's own order's peak
    exact: bool  # no layer of the search was cut: no topological order has a smaller peak


class _Graph:
    """The search's view of a graph: per op its producers, readers of each buffer, sizes (as bit masks)."""

    def __init__(self, graph: AnalyzedGraph, bufs: Buffers):
        n = len(graph.ops)
        self.n = n
        producer: dict[str, int] = {}
        for i, op in enumerate(graph.ops):
            for t in op.outputs:
                if t:
                    producer.setdefault(t, i)
        self.preds = [0] * n  # bit mask of the ops that must run before op i
        self.succ: list[list[int]] = [[] for _ in range(n)]
        for i, op in enumerate(graph.ops):
            names = [t for t in op.inputs if t] + list(bufs.reads[i])
            m = 0
            for t in names:
                p = producer.get(t)
                if p is not None and p != i:
                    m |= 1 << p
            self.preds[i] = m
            for p in _bits(m):
                self.succ[p].append(i)
        readers: dict[str, int] = {}
        for i in range(n):
            for b in bufs.reads[i]:
                readers[b] = readers.get(b, 0) | (1 << i)
        self.readers = readers
        self.outputs = frozenset(bufs.outputs)
        self.size = {b: bufs.size(b) for b in bufs.nbytes}
        self.reads = bufs.reads
        self.writes = bufs.writes
        self.inplace = bufs.inplace or tuple(() for _ in range(n))
        self.pieces = bufs.pieces or tuple({} for _ in range(n))
        inputs = [b for b in bufs.inputs if b in self.size]
        self.start_mem = sum(self.size[b] for b in inputs if b in readers or b in self.outputs)
        self.unread_inputs = sum(self.size[b] for b in inputs if b not in readers and b not in self.outputs)

    def step(self, done: int, mem: int, i: int) -> tuple[int, int]:
        """(bytes live at op i's step, bytes live after it) when the ops of ``done`` ran before it."""
        after = done | (1 << i)
        cost = mem + (self.unread_inputs if done == 0 else 0)
        new_mem = mem
        for w in self.writes[i]:
            s = self.size[w]
            cost += s
            if w in self.outputs or self.readers.get(w, 0) & ~after:
                new_mem += s
        for x in self.inplace[i]:  # rule 6: the first candidate that dies here shares the output's home
            if not self.readers.get(x, 0) & ~after:
                cost -= self.size[x] - (self.pieces[i][x][1] if x in self.pieces[i] else 0)
                break
        for x in self.reads[i]:
            if x not in self.outputs and not self.readers.get(x, 0) & ~after:
                new_mem -= self.size[x]
        return cost, new_mem


def _single_order(graph: AnalyzedGraph) -> bool:
    """Whether the graph's order is its only topological order: every op reads what the op before it wrote (a
    chain, a chain of residual blocks). Linear, so long chains never reach the search."""
    made_by_prev: set[str] = set()
    for i, op in enumerate(graph.ops):
        if i and not made_by_prev.intersection(op.inputs):
            return False
        made_by_prev = {t for t in op.outputs if t}
    return True


def _lower_bound(bufs: Buffers) -> int:
    """What every order needs at some step: each op's inputs and outputs at its step (less one input it may
    overwrite in place), the graph inputs at step 0, every graph output at the last step."""
    size = bufs.size
    bound = max(sum(size(b) for b in bufs.inputs if b in bufs.nbytes),
                sum(size(b) for b in bufs.outputs if b in bufs.nbytes))
    for i in range(len(bufs.reads)):
        need = sum(size(b) for b in bufs.reads[i]) + sum(size(b) for b in bufs.writes[i])
        if bufs.inplace:
            pieces = bufs.pieces[i] if bufs.pieces else {}
            need -= max((size(x) - (pieces[x][1] if x in pieces else 0) for x in bufs.inplace[i]), default=0)
        bound = max(bound, need)
    return bound


def _bits(m: int):
    while m:
        low = m & -m
        yield low.bit_length() - 1
        m ^= low


def order_peak(graph: AnalyzedGraph, order: Sequence[int], bufs: Buffers | None = None) -> int:
    """Untiled timeline peak of ``graph`` run in ``order`` (the search's step costs; equal to
    ``unscheduled_peak(reorder(graph, order))``)."""
    g = _Graph(graph, bufs or buffers(graph))
    done, mem, peak = 0, g.start_mem, 0
    for i in order:
        cost, mem = g.step(done, mem, i)
        peak = max(peak, cost)
        done |= 1 << i
    return peak if order else g.start_mem + g.unread_inputs


def search_order(graph: AnalyzedGraph, bufs: Buffers | None = None, work: int = WORK) -> OrderResult:
    """The order of least untiled peak the bounded dynamic program finds (module docstring)."""
    bufs = bufs or buffers(graph)
    n = len(graph.ops)
    base = tuple(range(n))
    base_peak = unscheduled_peak(graph)
    if n == 0 or _single_order(graph) or base_peak <= _lower_bound(bufs):
        return OrderResult(base, base_peak, base_peak, True)  # no other order, or none can need less
    g = _Graph(graph, bufs)
    beam = max(MIN_BEAM, work // n)
    # state: done mask -> (peak, sum, mem, ready ops (sorted tuple)); parents per layer for the reconstruction
    ready0 = tuple(i for i in range(n) if g.preds[i] == 0)
    layer: dict[int, tuple[int, int, int, tuple[int, ...]]] = {0: (0, 0, g.start_mem, ready0)}
    parents: list[dict[int, tuple[int, int]]] = []
    exact = True
    for k in range(n):
        nxt: dict[int, tuple[int, int, int, tuple[int, ...]]] = {}
        par: dict[int, tuple[int, int]] = {}
        for done, (peak, total, mem, ready) in layer.items():
            for i in ready:
                cost, new_mem = g.step(done, mem, i)
                after = done | (1 << i)
                key = (max(peak, cost), total + cost)
                if key[0] >= base_peak and after != (1 << (k + 1)) - 1:
                    continue  # cannot end below the baseline's peak (its own prefix is kept: the fallback)
                old = nxt.get(after)
                if old is not None and (old[0], old[1]) <= key:
                    continue
                if old is None:
                    rest = [j for j in ready if j != i]
                    rest += [s for s in g.succ[i] if not g.preds[s] & ~after]
                    new_ready = tuple(sorted(rest))
                else:
                    new_ready = old[3]  # the same set of done ops has the same ready ops
                nxt[after] = (key[0], key[1], new_mem, new_ready)
                par[after] = (done, i)
        if len(nxt) > beam:
            exact = False
            prefix = (1 << (k + 1)) - 1  # the baseline's own state: kept, so the result is never worse
            keep = sorted(nxt, key=lambda m: (nxt[m][0], nxt[m][2], nxt[m][1], m))[:beam]
            if prefix in nxt and prefix not in keep:
                keep[-1] = prefix
            nxt = {m: nxt[m] for m in keep}
            par = {m: par[m] for m in keep}
        parents.append(par)
        layer = nxt
    full = (1 << n) - 1
    peak = layer[full][0]
    order: list[int] = []
    m = full
    for k in range(n - 1, -1, -1):
        m, i = parents[k][m]
        order.append(i)
    order.reverse()
    found = tuple(order)
    if peak >= base_peak:  # nothing gained: keep the baseline itself, not an order of equal peak
        return OrderResult(base, base_peak, base_peak, exact)
    return OrderResult(found, peak, base_peak, exact)


def reorder(graph: AnalyzedGraph, order: Sequence[int]) -> AnalyzedGraph:
    """The same graph with its ops in ``order`` (a topological order of op indices)."""
    return graph.replace(ops=[graph.ops[i] for i in order])
