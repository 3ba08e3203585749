"""Write the fuzz seed corpus: one file per base plan (tests/fuzz/_rt_fuzz_plans.py: the runtime tests' small graphs
in every weight mode, tiled and untiled, and small real models from ../shared when present).

    python tests/fuzz/make_corpus.py DIR

`make -C runtime_c fuzz-long` and tests/fuzz/test_libfuzzer.py call it; the files are named by content hash, so
rewriting an existing corpus folder is idempotent.
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _rt_fuzz_plans as FP  # noqa: E402


def write_corpus(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for plan in FP.base_plans():
        p = folder / f"plan-{hashlib.sha256(plan).hexdigest()[:16]}.tgrs"
        p.write_bytes(plan)
        out.append(p)
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: make_corpus.py DIR", file=sys.stderr)
        return 2
    files = write_corpus(Path(argv[0]))
    print(f"{len(files)} seed plans in {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
