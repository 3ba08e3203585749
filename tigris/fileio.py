"""Writing outputs so that a failure never costs the user a file.

Rules every command that writes follows (docs/cli.md, "Output files"):

1. An empty output path is an error, and so is an output that resolves to one of the command's input files (the
   model, the plan, an input array): a plan must never replace the model it was compiled from.
2. An output that is a symlink is written through: the link stays and its target gets the new content.
3. Writes are atomic: the bytes go to a temporary file in the destination's folder, which is then renamed over the
   destination. On any error the temporary file is removed and the destination is untouched.
4. The new file gets the mode an ordinary ``open(path, "w")`` would give it: the existing file's mode when it is
   replaced, otherwise ``0666`` minus the umask (``0644`` under umask ``022``), not the ``0600`` of a temporary file.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Iterable, Sequence

from tigris.ir import TigrisError


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def resolve_output(path: str | Path, inputs: Iterable[str | Path] = ()) -> Path:
    """The file ``path`` really names (symlinks followed); refuses rules 1's cases with a :class:`TigrisError`."""
    if str(path) == "":
        raise TigrisError("the output path is empty", "-o")
    p = Path(path)
    real = Path(os.path.realpath(p))
    if real.is_dir():
        raise TigrisError("the output is a directory", str(p))
    for i in inputs:
        if i is None or str(i) == "":
            continue
        same = False
        try:
            same = real.exists() and os.path.samefile(real, i)
        except OSError:
            same = False
        if same or real == Path(os.path.realpath(i)):
            raise TigrisError(f"the output would overwrite the input {i}; choose another output path", str(p))
    return real


def write_outputs(files: Sequence[tuple[str | Path, bytes]], inputs: Iterable[str | Path] = ()) -> list[Path]:
    """Write every ``(path, data)`` of ``files`` by rules 1-4: all temporary files first, then the renames, so an
    error while writing leaves none of them behind. Returns the real paths written."""
    inputs = list(inputs)
    targets = [resolve_output(p, inputs) for p, _ in files]
    if len(set(targets)) != len(targets):
        raise TigrisError("two outputs name the same file", str(files[0][0]))
    temps: list[str] = []
    try:
        for (shown, data), real in zip(files, targets):
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
            except OSError as e:
                raise TigrisError(f"cannot write output: {e.strerror}", str(shown)) from None
            temps.append(tmp)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                try:
                    mode = stat.S_IMODE(os.stat(real).st_mode)
                except OSError:
                    mode = 0o666 & ~_umask()
                os.chmod(tmp, mode)
            except OSError as e:
                raise TigrisError(f"cannot write output: {e.strerror}", str(shown)) from None
        for (shown, _), real, tmp in zip(files, targets, temps):
            try:
                os.replace(tmp, real)
            except OSError as e:
                raise TigrisError(f"cannot write output: {e.strerror}", str(shown)) from None
    finally:
        for tmp in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass  # renamed already, or never created
    return targets


def write_atomic(path: str | Path, data: bytes, inputs: Iterable[str | Path] = ()) -> Path:
    """One output by rules 1-4 (see :func:`write_outputs`)."""
    return write_outputs([(path, data)], inputs)[0]
