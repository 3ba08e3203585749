"""Writing outputs so that a failure never leaves a half-written file behind."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tigris.ir import TigrisError


def write_atomic(path: str | Path, data: bytes) -> None:
    """Write through a temporary file in the same folder, then rename it over ``path``."""
    path = Path(path)
    d = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=d)
    except OSError as e:
        raise TigrisError(f"cannot write output: {e.strerror}", str(path)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
