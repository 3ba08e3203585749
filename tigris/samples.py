"""Input samples for ``tigris verify``: random, or read from files, with optional expected outputs.

What a sample source can be (docs/cli.md, "verify"):

* ``.npy`` or ``.pb`` (an ONNX ``TensorProto``) for one named input (``--input NAME=FILE``);
* ``.npz`` whose keys are graph input names (and, optionally, graph output names: the expected outputs); an array of
  the declared shape is one sample, one with an extra leading axis (or a batch axis of 1 stacked to N) is N samples;
* a folder in the ONNX test layout: ``test_data_set_*/input_<i>.pb`` (+ ``output_<i>.pb``), or one such set itself;
* a folder of ``.npz`` files, each read as above.

A ``.pb`` tensor is matched to a graph input by its ``name`` field when that names one, else by position (the i-th
graph input that is not an initializer, as the ONNX test runner does). Arrays are cast to the declared dtype when the
cast is value-preserving in kind (float64 to float32, int64 to uint8 within 0..255); anything else is refused with
the file and tensor named.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tigris.ir import TigrisError


@dataclass
class Sample:
    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray] = field(default_factory=dict)
    source: str = ""  # where it came from, for messages ("data.npz[3]", "test_data_set_0")


@dataclass(frozen=True)
class Boundary:
    """A graph input or output as declared: what sample arrays must match."""

    name: str
    shape: tuple[int, ...]
    dtype: str


def read_pb(path: str | Path) -> tuple[str, np.ndarray]:
    """(name, array) of a serialized ONNX TensorProto file."""
    import onnx
    from onnx import numpy_helper

    p = Path(path)
    try:
        t = onnx.TensorProto()
        t.ParseFromString(p.read_bytes())
        return t.name, numpy_helper.to_array(t)
    except OSError as e:
        raise TigrisError(f"cannot read tensor file: {e.strerror}", str(p)) from None
    except Exception as e:  # noqa: BLE001 - protobuf's DecodeError and onnx's conversion errors have no common base
        raise TigrisError(f"not an ONNX TensorProto file: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
                          str(p)) from None


def _check_npy_size(p: Path) -> None:
    """A .npy header is checked against the file's size before np.load allocates what it claims (a header may claim
    petabytes). Files that are not .npy (.npz) are left to np.load."""
    with open(p, "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            return
        f.seek(0)
        version = np.lib.format.read_magic(f)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _fortran, dtype = read_header(f)
        if dtype.hasobject:
            raise TigrisError("input array holds Python objects; save plain numbers", str(p))
        need = math.prod(shape) * dtype.itemsize
        have = os.fstat(f.fileno()).st_size - f.tell()
        if need != have:
            raise TigrisError(f"input array header claims {need} bytes of data but the file holds {have}", str(p))


def read_array(path: str | Path) -> np.ndarray:
    """One array from ``.npy`` or ``.pb``; never unpickles."""
    p = Path(path)
    if p.suffix.lower() == ".pb":
        return read_pb(p)[1]
    try:
        _check_npy_size(p)
        a = np.load(p, allow_pickle=False)
    except OSError as e:
        raise TigrisError(f"cannot read input array: {e.strerror or e}", str(p)) from None
    except (ValueError, EOFError, TypeError, SyntaxError) as e:
        first = " ".join(str(e).split()) or type(e).__name__
        raise TigrisError(f"cannot read input array: {first}", str(p)) from None
    if isinstance(a, np.lib.npyio.NpzFile):
        a.close()
        raise TigrisError("an .npz holds several arrays; pass it with --data", str(p))
    return a


def conform(a: np.ndarray, b: Boundary, where: str) -> np.ndarray:
    """``a`` in the declared dtype and shape of ``b`` (a 1-sample array), or a one-line error."""
    a = np.asarray(a)
    if tuple(a.shape) != b.shape:
        if a.size == int(np.prod(b.shape, dtype=np.int64)) and a.ndim != len(b.shape) and a.size:
            a = a.reshape(b.shape)  # e.g. (10,) for (1, 10): same elements, only unit axes differ
        else:
            raise TigrisError(f"{b.name} has shape {list(a.shape)}, the model declares {list(b.shape)}", where)
    want = np.dtype(b.dtype)
    if a.dtype == want:
        return a
    if a.dtype.kind == "f" and want.kind == "f":
        return a.astype(want)
    if a.dtype.kind in "iub" and want.kind in "iu":
        info = np.iinfo(want)
        if a.size and (a.min() < info.min or a.max() > info.max):
            raise TigrisError(f"{b.name} holds values outside {want} ({a.min()}..{a.max()})", where)
        return a.astype(want)
    if a.dtype.kind in "iu" and want.kind == "f":
        return a.astype(want)
    raise TigrisError(f"{b.name} has dtype {a.dtype}, the model declares {want}", where)


def _split(a: np.ndarray, b: Boundary, where: str) -> list[np.ndarray]:
    """An array holding one sample or N stacked samples of ``b`` -> the list of samples."""
    a = np.asarray(a)
    shape = b.shape
    if tuple(a.shape) == shape:
        return [a]
    if a.ndim == len(shape) + 1 and tuple(a.shape[1:]) == shape:
        return [a[i] for i in range(a.shape[0])]
    if shape and shape[0] == 1 and a.ndim == len(shape) and tuple(a.shape[1:]) == shape[1:]:
        return [a[i : i + 1] for i in range(a.shape[0])]  # batch axis of 1, N samples stacked along it
    raise TigrisError(f"{b.name} has shape {list(a.shape)}; expected {list(shape)} or N x {list(shape)}", where)


def read_npz(path: Path, inputs: list[Boundary], outputs: list[Boundary]) -> list[Sample]:
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise TigrisError(f"cannot read .npz: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
                          str(path)) from None
    by_name = {b.name: b for b in inputs + outputs}
    unknown = sorted(set(arrays) - set(by_name))
    if unknown:
        raise TigrisError(f"arrays {unknown} name no graph input or output (inputs: {[b.name for b in inputs]}, "
                          f"outputs: {[b.name for b in outputs]})", str(path))
    missing = [b.name for b in inputs if b.name not in arrays]
    if missing:
        raise TigrisError(f"no array for graph input(s) {missing}", str(path))
    split = {k: _split(v, by_name[k], str(path)) for k, v in arrays.items()}
    counts = {k: len(v) for k, v in split.items()}
    if len(set(counts.values())) != 1:
        raise TigrisError(f"arrays hold different numbers of samples: {counts}", str(path))
    n = next(iter(counts.values()))
    out = []
    for i in range(n):
        where = f"{path}[{i}]" if n > 1 else str(path)
        ins = {b.name: conform(split[b.name][i], b, where) for b in inputs}
        exp = {b.name: conform(split[b.name][i], b, where) for b in outputs if b.name in split}
        out.append(Sample(ins, exp, where))
    return out


def _pb_index(p: Path, prefix: str) -> int | None:
    m = re.fullmatch(prefix + r"_(\d+)\.pb", p.name)
    return int(m.group(1)) if m else None


def read_test_data_set(folder: Path, inputs: list[Boundary], outputs: list[Boundary]) -> Sample:
    """One ONNX test_data_set folder: input_<i>.pb and optional output_<i>.pb."""
    sample = Sample({}, {}, str(folder))
    for prefix, bounds, dest in (("input", inputs, sample.inputs), ("output", outputs, sample.expected)):
        files = sorted((i, p) for p in folder.glob(f"{prefix}_*.pb") if (i := _pb_index(p, prefix)) is not None)
        names = {b.name: b for b in bounds}
        for i, p in files:
            name, arr = read_pb(p)
            if name in names:
                b = names[name]
            elif i < len(bounds):
                b = bounds[i]
            else:
                raise TigrisError(f"{p.name} is {prefix} {i}, the model has {len(bounds)} {prefix}(s)", str(p))
            if b.name in dest:
                raise TigrisError(f"two files give {prefix} {b.name}", str(p))
            dest[b.name] = conform(arr, b, str(p))
    missing = [b.name for b in inputs if b.name not in sample.inputs]
    if missing:
        raise TigrisError(f"no input_<i>.pb for graph input(s) {missing}", str(folder))
    return sample


def read_samples(path: str | Path, inputs: list[Boundary], outputs: list[Boundary]) -> list[Sample]:
    """Every sample a ``--data`` path holds (see the module docstring), in a stable order."""
    p = Path(path)
    if p.is_file():
        if p.suffix.lower() == ".npz":
            return read_npz(p, inputs, outputs)
        raise TigrisError("--data takes an .npz file or a folder (use --input NAME=FILE for one .npy/.pb)", str(p))
    if not p.is_dir():
        raise TigrisError("no such file or folder", str(p))
    if any(p.glob("input_*.pb")):
        return [read_test_data_set(p, inputs, outputs)]
    sets = sorted((d for d in p.glob("test_data_set_*") if d.is_dir()), key=_natural)
    if sets:
        return [read_test_data_set(d, inputs, outputs) for d in sets]
    npz = sorted(p.glob("*.npz"), key=_natural)
    if npz:
        return [s for f in npz for s in read_npz(f, inputs, outputs)]
    raise TigrisError("folder holds no test_data_set_*/ folders, input_<i>.pb files or .npz files", str(p))


def _natural(p: Path) -> tuple:
    """test_data_set_2 before test_data_set_10."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name))
