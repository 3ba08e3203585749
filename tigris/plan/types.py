"""The memory plan: what stages 3-6 hand to stage 7 (the emitter) and to the analyze report.

Vocabulary:

* A **stage** is the spec's unit of temporal partitioning: a run of consecutive ops whose fast-memory arena is reset
  between stages. Tensors crossing a stage boundary live in the slow arena (spilled by the producer's stage, reloaded
  by each consumer's stage).
* An **exec unit** is what the runtime executes as one piece: one untiled stage, one tiled stage, or a whole chain of
  tiled stages (run tile by tile, all stages of the chain per tile, so the tensors between them never leave fast
  memory). Every stage belongs to exactly one unit; units run in order.
* Row ranges are half-open ``(start, stop)`` over the tensor's H axis (axis 2 of the logical NCHW shape, axis 1 of
  the physical NHWC layout). For each tile of a tiled unit, ``tile_rows[t][name]`` is the band of ``name`` that the
  tile needs (inputs) or computes (everything else). A band buffer is sized for its largest band.
* Column ranges are half-open ``(start, stop)`` over the W axis (physical NHWC axis 2). Only a column-split unit has
  them (``tile_cols``, parallel to ``tile_rows``); every other unit computes full rows.

Offsets are byte offsets into the arena, 16-byte aligned. In the fast arena, ``[0, unit.weight_bytes)`` is the
reserved prefix that receives the unit's weights when the plan is not XIP (copied or LZ4-decompressed before the
unit runs); activations of that unit are placed after it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Union

ALIGN = 16

# Weights are copied (or decompressed) into the fast arena unless the caller asks for XIP: the planner, the library
# (tigris.api) and the CLI's --xip flag share this one default.
XIP_DEFAULT = False

# Column tiles (tigris.plan.cols, the unit flag COLS) below the row floor: the planner, the library and the CLI share
# this default. A plan that fits without them never uses them.
COL_TILES_DEFAULT = True


def align_up(n: int, a: int = ALIGN) -> int:
    return (n + a - 1) // a * a


@dataclass(frozen=True)
class Placement:
    arena: str  # "fast" or "slow"
    offset: int  # bytes, multiple of ALIGN
    size: int  # bytes reserved (for a band buffer: the largest band)

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass
class StagePlan:
    """One temporal stage, as the spec and the analyze report describe it."""

    index: int
    ops: list[int]  # indices into graph.ops, in execution order
    inputs: list[str]  # produced by an earlier stage (or graph inputs), reloaded from slow memory
    outputs: list[str]  # consumed by a later stage (or graph outputs), spilled to slow memory
    peak_bytes: int  # fast-arena high water of this stage, reserved weight prefix included
    weight_bytes: int = 0  # bytes of weights this stage reads (the reserved prefix when not XIP)
    tiled: bool = False
    tile_h: int = 0  # output rows per tile (0 when untiled)
    tiles: int = 1
    halo: int = 0  # rows of overlap the receptive field adds at each tile boundary
    chain: int | None = None  # chain id; stages with the same id run tile-interleaved in one unit
    recompute_macs: int = 0  # extra MACs this stage spends on halo rows


@dataclass
class ExecUnit:
    """What the runtime runs as one piece (see module docstring)."""

    stages: list[int]  # indices into MemoryPlan.stages
    ops: list[int]  # every op of those stages, execution order
    reload: list[str]  # copied slow -> fast at the start of the unit (tiled: the tile's band, every tile)
    spill: list[str]  # copied fast -> slow at the end of the unit (tiled: the tile's band, every tile)
    fast: dict[str, Placement]  # every activation the unit touches -> its fast buffer (band buffer when tiled)
    scratch: dict[int, Placement] = field(default_factory=dict)  # op index -> kernel scratch buffer
    weight_bytes: int = 0  # reserved fast prefix for this unit's weights (0 with XIP)
    tiles: int = 1
    tile_rows: list[dict[str, tuple[int, int]]] = field(default_factory=list)  # per tile; empty when untiled
    # Column tiles (unit flag COLS; docs/memory-planning.md "Column tiles"): per tile, the same keys as ``tile_rows``
    # and each buffer's half-open column band ``(start, stop)`` along W (physical NHWC axis 2). Empty for every unit
    # that is not column-split. A column-split unit's band buffers are dense ``[rows, cols, C]`` blocks (row stride
    # ``cols * C * elem``), sized for the largest ``rows * cols`` of any tile; tiles run row-band-major.
    tile_cols: list[dict[str, tuple[int, int]]] = field(default_factory=list)
    peak_bytes: int = 0  # fast high water of this unit (prefix + activations + scratch), from the assigned offsets
    timeline_peak: int = 0  # the stage-4 timeline peak of the same buffers: the lower bound peak_bytes is judged by
    # GlobalAveragePool ops that accumulate over the tiles (planner rule 7, on by default; docs/memory-planning.md):
    # output zeroed before tile 0, each tile adds its band, finalized after the last; output and scratch live across
    # tiles.
    accumulate: list[int] = field(default_factory=list)
    # In-place ops (lifetime rule 6): output buffer -> the dying input whose home (same offset and size) it takes.
    # The two share bytes only at the op's step; the checker allows exactly these overlaps.
    in_place: dict[str, str] = field(default_factory=dict)
    # Piecewise in-place outputs among ``in_place`` (a window op written over its own larger input): output -> rows
    # of the temporary at the start of its op's scratch (the op record's ip_rows). Element-wise pairs have no entry.
    in_place_rows: dict[str, int] = field(default_factory=dict)
    # Halo reuse (spatial rule 9; unit flag ROLLING): the buffers whose band in a tile overlaps their band in the tile
    # before. They carry those rows from tile to tile instead of recomputing (or reloading) them: copied into the
    # buffer's line buffer (``carry``) after the producer (or the reload) of one tile, back to the top of the band
    # before the producer of the next, which computes only the rows after them; a carrying buffer without a line
    # buffer keeps its band buffer alive from tile to tile and carries in place. Empty: the unit recomputes.
    rolling: list[str] = field(default_factory=list)
    carry: dict[str, Placement] = field(default_factory=dict)  # carrying buffer -> its line buffer, live every step
    # Recomputed overlaps (spatial rule 10; a rolling unit only): buffers whose bands overlap from tile to tile but
    # which carry nothing, their producer computing the whole band every tile (the line-buffer entry "never
    # carries"). Not in ``rolling``.
    recompute: list[str] = field(default_factory=list)
    # Streaming overwrite (unit flag OVERWRITE; tigris.plan.overwrite): spilled output -> the reloaded input dying in
    # this unit whose slow home it shares bytes with. Proven per tile: no tile writes a byte of the output that a
    # later tile still reads of the input. Empty: the unit's slow homes are disjoint.
    overwrite: dict[str, str] = field(default_factory=dict)


@dataclass
class MemoryPlan:
    fast_budget: int
    slow_budget: int | None  # None = unlimited
    xip: bool
    stages: list[StagePlan]
    units: list[ExecUnit]
    slow: dict[str, Placement]  # every tensor that crosses a unit boundary (and graph inputs/outputs kept there)
    # Alias groups: a Reshape/Flatten/Squeeze/Unsqueeze whose bytes do not move shares its input's buffer.
    # alias_of[out] = the tensor whose buffer it shares (transitively resolved to the root).
    alias_of: dict[str, str] = field(default_factory=dict)
    # Views (lifetime rule 7; the format's tensor flag VIEW): a tensor whose bytes are a run of its root's buffer ->
    # the run's byte offset there (a Concat's input in its output, a Slice's output in its input). Such a tensor is
    # in alias_of too; a plain alias (the whole buffer) has no entry. view_ops: the ops that run as views (no kernel,
    # no op record), ascending graph op indices.
    view_offset: dict[str, int] = field(default_factory=dict)
    view_ops: list[int] = field(default_factory=list)
    unscheduled_peak: int = 0  # stage 4 peak of the whole graph as one stage
    fast_peak: int = 0  # max over units of peak_bytes
    slow_peak: int = 0  # high water of the slow arena
    spill_bytes: int = 0  # bytes written to slow memory per inference
    reload_bytes: int = 0  # bytes read back from slow memory per inference
    recompute_macs: int = 0
    # One SRAM region (a board without PSRAM; the format's header flag ONE_REGION): the slow arena is the same memory
    # as the fast one, every slow home live across a unit at or above that unit's peak_bytes. The caller provides
    # max(fast_peak, slow_peak) bytes once.
    one_region: bool = False

    def home(self, tensor: str) -> Placement | None:
        """Where a graph input must be written before a run / a graph output read after it."""
        root = self.alias_of.get(tensor, tensor)
        if root in self.slow:
            return self.slow[root]
        for unit in (self.units[0], self.units[-1]):
            if root in unit.fast:
                return unit.fast[root]
        return None


NoFitCause = Literal["untileable", "one_row", "packing", "slow_memory", "empty"]


@dataclass(frozen=True)
class Fit:
    """The planner found a plan within the budgets."""

    plan: MemoryPlan


@dataclass(frozen=True)
class NoFit:
    """The planner found no plan: which stage and op overflow, by how much, and why.

    ``cause`` says which rule gave up: ``untileable`` (an untiled stage is over the budget and cannot be tiled,
    ``detail`` says why), ``one_row`` (a tiled unit is over the budget even at one output row per tile),
    ``packing`` (the timeline fits but placing the buffers in the arena needs more), ``slow_memory`` (the slow arena
    exceeds its budget; ``stage`` and ``op`` are None) and ``empty`` (the graph has no operators).
    """

    stage: int | None
    op: str | None
    need_bytes: int
    cause: NoFitCause
    budget: int
    op_type: str | None = None
    detail: str = ""

    @property
    def message(self) -> str:
        if self.cause == "empty":
            return "the graph has no operators"
        if self.cause == "slow_memory":
            return f"slow memory: needs {self.need_bytes} bytes, budget is {self.budget}"
        why = {
            "untileable": f"untiled; cannot tile: {self.detail}",
            "one_row": f"even with {self.detail or 'one output row'} per tile",
            "packing": "arena packing exceeds the budget",
        }[self.cause]
        return (
            f"stage {self.stage}: op {self.op} ({self.op_type}) needs {self.need_bytes} bytes of fast memory, "
            f"budget is {self.budget} ({why})"
        )


PlanResult = Union[Fit, NoFit]
