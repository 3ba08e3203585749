"""Stage 4: the memory timeline (spec section 4), an event sweep over execution steps.

At each step the sweep (1) frees the buffers whose last reader ran at the previous step, then (2) allocates the
buffers born at this step, and records the total. Freeing before allocating is what lets a buffer that died at step
s-1 hand its bytes to one born at step s. A buffer's interval is closed (``lifetime.py`` rule 5), so an op's input
and output are counted together at the op's step: the spec's "free tensors whose death_step equals this step" is
read as "whose interval ended before this step", since a kernel cannot write its output over the input it is still
reading (the plan would then compute garbage, and the arena checker would reject it).

Scratch buffers of kernels are live exactly at their op's step; the weight prefix of a unit is live throughout.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from tigris.ir import AnalyzedGraph
from tigris.plan.lifetime import Lifetime, buffers, lifetimes


@dataclass(frozen=True)
class Timeline:
    peak: int  # bytes, base included
    peak_step: int  # first step at which the peak is reached
    usage: tuple[int, ...]  # bytes in use at every step, base included


def sweep(
    lives: Sequence[Lifetime], n_steps: int, scratch: Mapping[int, int] | None = None, base: int = 0
) -> Timeline:
    """Event sweep: free (died at s-1) before allocate (born at s) at every step ``s``."""
    n = max(n_steps, 1)
    born = [0] * n
    freed = [0] * (n + 1)
    for lt in lives:
        born[lt.birth] += lt.size + lt.extra + lt.reserve
        freed[lt.death + 1] += lt.size + lt.reserve  # rule 8: a reload a join takes at step 0 counts for nothing
        freed[lt.birth + 1] += lt.extra  # a piecewise in-place output's input tail and temporary (lifetime rule 6)
    usage: list[int] = []
    live = 0
    for s in range(n):
        live -= freed[s]  # 1. free buffers whose interval ended at s-1
        live += born[s]  # 2. allocate buffers born at s
        usage.append(base + live + (scratch.get(s, 0) if scratch else 0))
    peak = max(usage)
    return Timeline(peak, usage.index(peak), tuple(usage))


def unscheduled_peak(graph: AnalyzedGraph) -> int:
    """Peak of the whole graph run as one stage: graph inputs present from step 0, outputs kept to the end."""
    bufs = buffers(graph)
    ops = range(len(graph.ops))
    lives = lifetimes(bufs, ops, bufs.inputs, bufs.outputs)
    return sweep(lives, len(graph.ops)).peak if graph.ops else sum(lt.size for lt in lives)
