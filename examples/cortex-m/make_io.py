"""Input files for the example firmware, and the outputs it must produce (from the host build of the same runtime).

    python3 make_io.py PLAN.tgrs -o build [--seed N] [--input NAME=FILE ...]     (FILE: .npy or ONNX .pb)

Writes ``input<i>.bin`` for every input of the plan, in the byte form ``NAME_run()`` takes (tigris.h: stored layout,
NHWC for images, and the caller dtype), and ``expected<i>.bin``: what the host runtime writes for those inputs, in the
same form. An input not given with ``--input`` is seeded random data of its declared shape and dtype (the full range
of an integer type; standard normal for float). Firmware whose ``output<i>.bin`` equals ``expected<i>.bin`` byte for
byte agrees with the host (int8 models must; float models agree to 1e-5 relative, docs/deploying.md section 6).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np


def make_io(plan: bytes, out_dir: Path, seed: int = 0, given: dict[str, np.ndarray] | None = None) -> list[Path]:
    from tigris.host import Session

    session = Session(plan)
    rng = np.random.default_rng(seed)
    inputs: dict[str, np.ndarray] = {}
    for s in session.inputs:
        if given and s.name in given:
            inputs[s.name] = np.asarray(given[s.name]).astype(s.dtype)
        elif np.dtype(s.dtype).kind in "iu":
            info = np.iinfo(s.dtype)
            inputs[s.name] = rng.integers(info.min, int(info.max) + 1, size=s.shape).astype(s.dtype)
        else:
            inputs[s.name] = rng.standard_normal(size=s.shape).astype(s.dtype)
    outputs = session.run(inputs).outputs
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for kind, specs, values in (("input", session.inputs, inputs), ("expected", session.outputs, outputs)):
        for i, s in enumerate(specs):
            path = out_dir / f"{kind}{i}.bin"
            path.write_bytes(session.caller_bytes(s.name, values[s.name]))
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("plan", type=Path)
    ap.add_argument("-o", "--out", type=Path, default=Path("."), help="folder for the .bin files")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE",
                    help="an input of the model's declared shape, .npy or ONNX TensorProto .pb (repeatable)")
    args = ap.parse_args(argv)
    from tigris.ir import TigrisError
    from tigris.samples import read_array

    try:
        given = {}
        for spec in args.input:
            name, sep, file = spec.partition("=")
            if not sep:
                raise TigrisError(f"cannot read {spec!r}; use NAME=FILE.npy or NAME=FILE.pb", "--input")
            given[name] = read_array(file)
        for p in make_io(args.plan.read_bytes(), args.out, args.seed, given):
            print(f"wrote {p} ({p.stat().st_size} bytes)")
    except (OSError, ValueError, TigrisError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
