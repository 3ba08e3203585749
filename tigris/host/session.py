"""Run a .tgrs plan on the host build of runtime_c.

``Session(plan_bytes)`` loads (validates) the plan once; ``run(inputs)`` takes and returns tensors in the MODEL's
declared shapes and dtypes (NCHW images, uint8 where the model says uint8) and converts to and from the runtime's
stored form: the layout on the Python side (logical <-> physical, tigris.layout), the uint8 <-> int8 boundary in C
(tigris.h). The result carries the runtime's fast and slow high-water marks.

The plan bytes are copied into a buffer the Session owns, aligned to 16 bytes, because the C plan struct points into
them for as long as the Session lives.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from tigris.emit import format as F
from tigris.host.build import runtime
from tigris.ir import TigrisError, valid_rows
from tigris.layout import from_physical, to_physical

# TGRS_DT_* code -> NumPy dtype
NP_BY_CODE = {1: np.float32, 2: np.int8, 3: np.uint8, 4: np.int32, 5: np.int16, 6: np.int64}
NAME_BY_CODE = {1: "float32", 2: "int8", 3: "uint8", 4: "int32", 5: "int16", 6: "int64"}
LAYOUT_BY_CODE = {int(v): k for k, v in F.LAYOUT_CODES.items()}
_STATUS_BY_CODE = {s.code: s for s in F.STATUS}


def _op_label(data: bytes, index: int) -> str:
    """'NAME, record INDEX' of OP record `index` of a plan the loader's structural steps accepted (so every offset
    read here is in bounds)."""
    def sec(sid: F.SectionId) -> int:
        return int(F.SECTION.unpack(data, F.DIR_OFFSET + (int(sid) - 1) * F.SECTION.size)["offset"])  # type: ignore

    op = F.OP.unpack(data, sec(F.SectionId.OPS) + index * F.OP.size)
    start = sec(F.SectionId.STRINGS) + int(op["name_off"])  # type: ignore[arg-type]
    name = data[start: start + int(op["name_len"])].decode("utf-8", "replace")  # type: ignore[arg-type]
    return f"{name or '?'}, record {index}"


class PlanError(TigrisError):
    """runtime_c refused a plan or a run. ``code`` is the TGRS status, ``name`` its TGRS_* name."""

    def __init__(self, code: int, where: str | None = None):
        s = _STATUS_BY_CODE.get(code)
        self.code = code
        self.name = f"TGRS_{s.name}" if s else f"TGRS_ERR_UNKNOWN({code})"
        message = s.message if s else "unknown status code"
        super().__init__(f"{self.name}: {message}", where)


@dataclass(frozen=True)
class IOSpec:
    """One graph input or output as the model declares it, and how the runtime stores it."""

    name: str
    dtype: str  # declared by the model (what run() takes / returns)
    shape: tuple[int, ...]  # declared logical shape
    layout: str  # stored layout: plain / nhwc / nwc
    stored_dtype: str  # in the arena
    caller_dtype: str  # what the C API exchanges (uint8 for a uint8 boundary on an int8 tensor)
    tensor_shape: tuple[int, ...]  # logical shape of the stored tensor (differs from `shape` only in order)
    nbytes: int
    rows: bool = False  # IoFlag.ROWS: shape[0] is the maximum row count, the valid rows come first


@dataclass
class RunResult:
    outputs: dict[str, np.ndarray]
    fast_peak: int
    slow_peak: int


def _spec(ffi, info) -> IOSpec:
    rank = int(info.rank)
    trank = int(info.tensor_rank)
    return IOSpec(
        name=bytes(ffi.buffer(info.name, info.name_len)).decode("utf-8", "replace"),
        dtype=NAME_BY_CODE[int(info.decl_dtype)],
        shape=tuple(int(info.shape[i]) for i in range(rank)),
        layout=LAYOUT_BY_CODE[int(info.layout)],
        stored_dtype=NAME_BY_CODE[int(info.internal_dtype)],
        caller_dtype=NAME_BY_CODE[int(info.dtype)],
        tensor_shape=tuple(int(info.tensor_shape[i]) for i in range(trank)),
        nbytes=int(info.nbytes),
        rows=bool(int(info.flags) & 4),  # TGRS_IO_F_ROWS
    )


def _is_physical(s: IOSpec) -> bool:
    """The model declares this boundary in our physical order already (a channels-last export whose leading
    Transpose was removed): its bytes are used as they are."""
    return s.shape != s.tensor_shape


class Session:
    """A validated plan, ready to run any number of times (on arenas the Session owns)."""

    def __init__(self, plan_bytes: bytes | bytearray | memoryview, isa: str | None = None):
        """``isa``: the host build to run on (tigris.host.build.ISA_FLAGS; default the CPU's best level)."""
        rt = runtime(isa)
        self._ffi, self._lib = rt.ffi, rt.lib
        data = bytes(plan_bytes)
        # Over-allocate and start at a 16-byte boundary: the loader needs 4, kernels like 16.
        self._raw = self._ffi.new("uint8_t[]", len(data) + 16)
        addr = int(self._ffi.cast("uintptr_t", self._raw))
        self._shift = (-addr) % 16
        self._ffi.memmove(self._raw + self._shift, data, len(data))
        self._plan = self._ffi.new("tgrs_plan *")
        failed = self._ffi.new("int32_t *")
        rc = self._lib.tgrs_load_diag(self._plan, self._raw + self._shift, len(data), failed)
        if rc != 0:
            # A kind check refused an op (the loader's last step): name it like a failed run does.
            raise PlanError(rc, "plan" if failed[0] < 0 else f"plan, op {_op_label(data, failed[0])}")
        self.fast_size = int(self._lib.tgrs_fast_size(self._plan))
        self.slow_size = int(self._lib.tgrs_slow_size(self._plan))
        info = self._ffi.new("tgrs_io_info *")
        self.inputs: list[IOSpec] = []
        self.outputs: list[IOSpec] = []
        for i in range(self._lib.tgrs_num_inputs(self._plan)):
            self._check(self._lib.tgrs_input_info(self._plan, i, info))
            self.inputs.append(_spec(self._ffi, info))
        for i in range(self._lib.tgrs_num_outputs(self._plan)):
            self._check(self._lib.tgrs_output_info(self._plan, i, info))
            self.outputs.append(_spec(self._ffi, info))
        # Arenas are allocated once and reused: the runtime never reads an arena byte it did not write in the same
        # run (tests/runtime/test_rt_exec.py checks outputs do not depend on arena contents). cffi releases the GIL
        # during tgrs_run, so runs of one Session are serialized.
        # A ONE_REGION plan (docs/format.md "One region") takes one block of memory as both arenas.
        self.one_region = bool(int(F.HEADER.unpack(data, 0)["flags"]) & F.Flag.ONE_REGION)
        if self.one_region:
            self._fast = self._slow = self._ffi.new("uint8_t[]", max(1, self.fast_size, self.slow_size))
        else:
            self._fast = self._ffi.new("uint8_t[]", max(1, self.fast_size))
            self._slow = self._ffi.new("uint8_t[]", max(1, self.slow_size))
        self._lock = threading.Lock()
        # The I/O buffers of io="separate", also allocated once: NumPy views write the inputs and read the outputs
        # in place (a run costs no allocation and no bytes objects; small models spend most of a run here).
        ffi = self._ffi
        self._in_bufs = [ffi.new("uint8_t[]", max(1, s.nbytes)) for s in self.inputs]
        self._out_bufs = [ffi.new("uint8_t[]", max(1, s.nbytes)) for s in self.outputs]
        self._in_views = [np.frombuffer(ffi.buffer(b, s.nbytes), dtype=np.dtype(s.caller_dtype))
                          for s, b in zip(self.inputs, self._in_bufs)]
        self._out_views = [np.frombuffer(ffi.buffer(b, s.nbytes), dtype=np.dtype(s.caller_dtype))
                           for s, b in zip(self.outputs, self._out_bufs)]
        in_ptrs = ffi.new("void *[]", max(1, len(self.inputs)))
        for i, b in enumerate(self._in_bufs):
            in_ptrs[i] = b
        self._out_ptrs = ffi.new("void *[]", max(1, len(self.outputs)))
        for i, b in enumerate(self._out_bufs):
            self._out_ptrs[i] = b
        self._in_ptrs_keep = in_ptrs
        self._in_ptrs = ffi.cast("const void *const *", in_ptrs)
        self._stats = ffi.new("tgrs_stats *")

    @staticmethod
    def _check(rc: int, where: str | None = None) -> None:
        if rc != 0:
            raise PlanError(rc, where)

    def _to_caller(self, s: IOSpec, arr: np.ndarray) -> bytes:
        return self._caller_array(s, arr).tobytes()

    def _caller_array(self, s: IOSpec, arr: np.ndarray) -> np.ndarray:
        """The input in the caller form (stored layout, caller dtype) as a flat contiguous array of s.nbytes."""
        a = np.asarray(arr)
        if tuple(a.shape) != s.shape:
            raise TigrisError(f"input has shape {list(a.shape)}, the model declares {list(s.shape)}", s.name)
        if s.caller_dtype == "uint8" and a.dtype != np.uint8:
            raise TigrisError(f"input has dtype {a.dtype}, the model declares uint8", s.name)
        a = a.astype(np.dtype(s.caller_dtype), copy=False)
        if _is_physical(s):
            phys = np.ascontiguousarray(a)
        else:
            phys = to_physical(a, s.tensor_shape, s.layout)
        out = np.ascontiguousarray(phys).reshape(-1)
        if out.nbytes != s.nbytes:
            raise TigrisError(f"input holds {out.nbytes} bytes, the plan expects {s.nbytes}", s.name)
        return out

    def _from_caller(self, s: IOSpec, raw: bytes | np.ndarray) -> np.ndarray:
        a = raw if isinstance(raw, np.ndarray) else np.frombuffer(raw, dtype=np.dtype(s.caller_dtype)).copy()
        if _is_physical(s):
            a = a.reshape(s.shape)
        else:
            a = from_physical(a, s.tensor_shape, s.layout).reshape(s.shape)
        if s.rows:  # the valid rows: those before the first all -1 row (docs/format.md, IoFlag ROWS)
            a = a[:valid_rows(a)]
        # A declared dtype the runtime does not convert to (e.g. float declared on a stored int8, int64 declared on
        # stored int32 indices) is a plain cast, exactly like the reference executor's boundary.
        return a.astype(np.dtype(s.dtype), copy=False)

    def caller_bytes(self, name: str, array: np.ndarray) -> bytes:
        """The bytes of input or output ``name`` as firmware exchanges them with NAME_run() (tigris.h: the stored
        layout, the caller dtype), from an array in the model's declared shape: what the device reads from and
        writes to its buffers (examples/cortex-m/make_io.py writes such files)."""
        for s in self.inputs + self.outputs:
            if s.name == name:
                return self._to_caller(s, array)
        raise TigrisError("no input or output of the plan has this name", name)

    def _home(self, output: bool, index: int):
        ffi, lib = self._ffi, self._lib
        home = ffi.new("void **")
        fn = lib.tgrs_output_home if output else lib.tgrs_input_home
        s = (self.outputs if output else self.inputs)[index]
        self._check(fn(self._plan, self._fast, self.fast_size, self._slow, self.slow_size, index, home),
                    f"{'output' if output else 'input'} {s.name}")
        return home[0]

    @staticmethod
    def _flip(s: IOSpec, raw: bytes) -> bytes:
        """Caller bytes <-> stored bytes: a declared uint8 boundary is stored as int8 (bit 7 flipped), and in-arena
        I/O exchanges the stored form (tigris.h)."""
        if s.caller_dtype != "uint8" or s.stored_dtype != "int8":
            return raw
        return (np.frombuffer(raw, dtype=np.uint8) ^ np.uint8(0x80)).tobytes()

    def _run_in_arena(self, inputs: dict[str, np.ndarray]):
        """The firmware's zero-copy path: each input written at its home in the arena, tgrs_run_in_place (which takes
        no I/O buffers), each output read at its home."""
        ffi, lib = self._ffi, self._lib
        stats = ffi.new("tgrs_stats *")
        with self._lock:
            for i, s in enumerate(self.inputs):
                if s.nbytes:
                    ffi.memmove(self._home(False, i), self._flip(s, self._to_caller(s, inputs[s.name])), s.nbytes)
            rc = lib.tgrs_run_in_place(self._plan, self._fast, self.fast_size, self._slow, self.slow_size, stats)
            raws = []
            if rc == 0:
                for i, s in enumerate(self.outputs):
                    raw = bytes(ffi.buffer(self._home(True, i), s.nbytes)) if s.nbytes else b""
                    raws.append(self._flip(s, raw))
        return rc, stats, raws

    def run(self, inputs: dict[str, np.ndarray], io: str = "separate") -> RunResult:
        """One inference. ``io="separate"`` hands the runtime input and output buffers (tgrs_run copies them);
        ``io="in-arena"`` writes the inputs into the arena and reads the outputs from it (tgrs_run_in_place)."""
        if io not in ("separate", "in-arena"):
            raise TigrisError(f"io must be 'separate' or 'in-arena', not {io!r}", "run")
        missing = [s.name for s in self.inputs if s.name not in inputs]
        if missing:
            raise TigrisError(f"missing input(s) {missing}", "inputs")
        ffi, lib = self._ffi, self._lib
        if io == "in-arena":
            rc, stats, raws = self._run_in_arena(inputs)
            self._raise_run(rc, stats)
            outs = {s.name: self._from_caller(s, raw) for s, raw in zip(self.outputs, raws)}
            return RunResult(outputs=outs, fast_peak=int(stats.fast_peak), slow_peak=int(stats.slow_peak))
        arrays = [self._caller_array(s, inputs[s.name]) for s in self.inputs]  # checked before the lock
        with self._lock:  # cffi allocations are at least 8-byte aligned (TGRS_ARENA_ALIGN is 4)
            for view, a in zip(self._in_views, arrays):
                view[...] = a
            stats = self._stats
            rc = lib.tgrs_run(self._plan, self._fast, self.fast_size, self._slow, self.slow_size, self._in_ptrs,
                              self._out_ptrs, stats)
            fast_peak, slow_peak = int(stats.fast_peak), int(stats.slow_peak)
            failed_op, failed_unit = int(stats.failed_op), int(stats.failed_unit)
            raws = [v.copy() for v in self._out_views] if rc == 0 else []
        if rc != 0:
            self._raise_run(rc, ffi.new("tgrs_stats *", {"failed_op": failed_op, "failed_unit": failed_unit}))
        outs = {s.name: self._from_caller(s, raw) for s, raw in zip(self.outputs, raws)}
        return RunResult(outputs=outs, fast_peak=fast_peak, slow_peak=slow_peak)

    def _raise_run(self, rc: int, stats) -> None:
        if rc != 0:
            ffi, lib = self._ffi, self._lib
            where = "run"
            if stats.failed_op >= 0:
                name = lib.tgrs_op_name(self._plan, stats.failed_op)
                label = ffi.string(name).decode("utf-8", "replace") if name != ffi.NULL else "?"
                where = f"op {label}, record {stats.failed_op}, unit {stats.failed_unit}"
            raise PlanError(rc, where)
