"""Operator order: DFS post-order with reversed child order.

Definitions used here (tests pin them on a small branched graph):

* The DFS walks *against* the data flow. The **children** of an op are the ops that produce its inputs, taken in
  the order of the op's input list (omitted inputs, graph inputs and constants have no producer and are skipped).
* **Reversed child order**: an op's children are visited last input first. The roots are the producers of the graph
  outputs, visited in declared output order.
* **Post-order**: an op is emitted only after all its children have been emitted, so the result is a valid
  topological order.

Why reversed: for a two-operand op like ``Add(main, shortcut)`` the branch feeding the *last* operand is computed
first, then the first operand's branch runs right before the consumer, so the longer main branch's output is consumed
as soon as it exists. Ops from which no graph output is reachable are dead: they are not emitted, and the caller
reports how many were dropped.
"""
from __future__ import annotations

from typing import Sequence

from tigris.ir import Op


def dfs_postorder(ops: Sequence[Op], outputs: Sequence[str]) -> list[Op]:
    producer: dict[str, int] = {}
    for i, op in enumerate(ops):
        for t in op.outputs:
            if t:
                producer[t] = i
    order: list[int] = []
    state = [0] * len(ops)  # 0 unvisited, 1 on the stack, 2 emitted

    def children(i: int) -> list[int]:
        return [producer[t] for t in reversed(ops[i].inputs) if t in producer]

    for out in outputs:
        if out not in producer or state[producer[out]]:
            continue
        root = producer[out]
        state[root] = 1
        stack: list[tuple[int, list[int]]] = [(root, children(root))]
        while stack:
            node, pending = stack[-1]
            advanced = False
            while pending:
                c = pending.pop(0)
                if state[c] == 0:
                    state[c] = 1
                    stack.append((c, children(c)))
                    advanced = True
                    break
                # state 1 here would be a cycle; ONNX graphs are acyclic, so it cannot occur for valid models
            if not advanced:
                stack.pop()
                state[node] = 2
                order.append(node)
    return [ops[i] for i in order]
