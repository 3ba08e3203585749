"""The bad-input contract (docs/cli.md), case by case over the generated corpus of ``corpus.py``: every case exits
with its documented code, prints exactly one line naming the thing at fault, no traceback, leaves no file behind,
never changes an input file, and stays within 30 CPU seconds and 2 GiB of address space (``_runner.py`` forks one
child per case with ``RLIMIT_AS`` and ``RLIMIT_CPU`` set; CPU time rather than wall time, so a loaded CI machine does
not fail a case that is fast on an idle one)."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.malformed.corpus import CASES, Case

RUNNER = Path(__file__).with_name("_runner.py")
REPO = Path(__file__).resolve().parents[2]


def _snapshot(d: Path) -> dict[str, str]:
    out = {}
    for p in sorted(d.rglob("*")):
        key = str(p.relative_to(d))
        if p.is_symlink():
            out[key] = "link:" + str(p.readlink())
        elif p.is_file():
            out[key] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("malformed")
    runs = []
    for k, case in enumerate(CASES):
        d = root / f"c{k:03d}"
        d.mkdir()
        argv = case.build(d)
        runs.append({"argv": [str(a) for a in argv], "cwd": str(d), "before": _snapshot(d)})
    scratch = root / "scratch"
    scratch.mkdir()
    proc = subprocess.run([sys.executable, str(RUNNER), str(scratch)], input=json.dumps(runs), capture_output=True,
                          text=True, cwd=REPO, timeout=60 * len(CASES))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout)
    return {case.name: (run, res) for case, run, res in zip(CASES, runs, got)}


def test_case_names_are_unique():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case: Case, results):
    run, res = results[case.name]
    where = f"{case.name}: tigris {' '.join(run['argv'])}\nstdout: {res['stdout'][-800:]}\nstderr: {res['stderr']}"
    assert not res["killed"], f"hung past the wall-clock limit: {where}"
    assert res["cpu"] < 30, f"{res['cpu']:.1f} CPU seconds: {where}"
    assert "Traceback" not in res["stderr"] + res["stdout"], where
    assert res["code"] == case.code, where
    lines = res["stderr"].splitlines()
    if case.kind == "ok":
        assert lines == [], where
    else:
        prefix = "error: " if case.kind == "error" else "warning: "
        assert len(lines) == 1 and lines[0].startswith(prefix), where
        assert case.names in lines[0], where
    d = Path(run["cwd"])
    after = _snapshot(d)
    before = run["before"]
    for name, digest in before.items():
        if name not in case.changes:
            assert after.get(name) == digest, f"input {name} changed or vanished: {where}"
    new = set(after) - set(before)
    assert new <= set(case.outputs), f"left behind {sorted(new - set(case.outputs))}: {where}"
