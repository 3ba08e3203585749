"""Plan bytes of every shared model stay byte-identical across refactors.

`plan_digests.json` keeps the SHA-256 of the `.tgrs` that :func:`tigris.api.compile_model` (what `tigris compile`
calls) writes for each shared model at 256K, 64K and 32K, with `--xip` and with `-c lz4`; a combination that does not
fit is kept as `null` together with the smallest fast budget the report names. A change that is meant to alter plans
(a format change, a better planner) regenerates the file in the same commit and says why in the message:

    python tests/test_plan_digests.py --update

The fitting combinations compile in a few seconds; proving the others still do not fit runs the minimum-budget search
for each, which is what makes that half slow."""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from tigris_testing import MODELS, SHARED_FLOAT, SHARED_INT8, shared_model

DIGESTS = Path(__file__).with_name("plan_digests.json")
BUDGETS = ["256K", "64K", "32K"]
MODES = [(True, "none"), (False, "lz4")]
MODELS_ALL = SHARED_FLOAT + SHARED_INT8


def _key(budget: str, xip: bool, comp: str) -> str:
    return f"{budget} {'--xip' if xip else '-c ' + comp}"


def _compile(path: Path, prep, budget: str, xip: bool, comp: str, fits: bool) -> dict:
    """What `tigris compile` gives for one combination: the plan's digest, or (``fits`` false) the smallest fast
    budget the does-not-fit report names."""
    from tigris import api

    if fits:
        c = api.compile_model(path, budget, xip=xip, compression=comp, prepared=prep)
        return {"sha256": hashlib.sha256(c.plan_bytes).hexdigest(), "bytes": len(c.plan_bytes)}
    a = api.analyze(path, budget, xip=xip, compression=comp, prepared=prep, emit=False)
    return {"sha256": None, "min_fast_budget": None if a.fits else a.min_fast_budget}


def _expected() -> dict:
    return json.loads(DIGESTS.read_text())["plans"]


def _models_with(want_fit: bool) -> list[str]:
    """The shared models with at least one combination that fits (or does not), as the digest file records them:
    each test below runs only where it has something to check."""
    plans = _expected()
    return [m for m in MODELS_ALL if any((v["sha256"] is not None) == want_fit for v in plans.get(m, {}).values())]


def _check(rel: str, want_fit: bool) -> None:
    from tigris import api

    expected = _expected()[rel]
    combos = [k for k, v in expected.items() if (v["sha256"] is not None) == want_fit]
    assert combos, rel  # _models_with chose rel for having one
    path = shared_model(rel)
    prep = api.prepare(path)
    for budget in BUDGETS:
        for xip, comp in MODES:
            key = _key(budget, xip, comp)
            if key in combos:
                assert _compile(path, prep, budget, xip, comp, want_fit) == expected[key], f"{rel} -m {key}"


@pytest.mark.shared
@pytest.mark.parametrize("rel", _models_with(True))
def test_plan_bytes_unchanged(rel):
    _check(rel, want_fit=True)


@pytest.mark.slow
@pytest.mark.shared
@pytest.mark.parametrize("rel", _models_with(False))
def test_no_fit_unchanged(rel):
    _check(rel, want_fit=False)


def test_digest_file_covers_every_shared_model():
    plans = _expected()
    assert sorted(plans) == sorted(MODELS_ALL)
    # every shared model has fitting plans to pin; a combination that does not fit has its refusal pinned (since
    # input-channel weight groups every combination of the grid fits, so that list may be empty)
    assert _models_with(True) == MODELS_ALL
    for rel, combos in plans.items():
        assert sorted(combos) == sorted(_key(b, x, c) for b in BUDGETS for x, c in MODES), rel


def _update() -> None:
    from tigris import api

    plans = {}
    for rel in MODELS_ALL:
        path = MODELS / rel
        prep = api.prepare(path)
        plans[rel] = {}
        for b in BUDGETS:
            for x, c in MODES:
                fits = api.analyze(path, b, xip=x, compression=c, prepared=prep, emit=False).fits
                plans[rel][_key(b, x, c)] = _compile(path, prep, b, x, c, fits)
        print(rel, flush=True)
    doc = {"_comment": "SHA-256 of each shared model's plan; regenerate with: python tests/test_plan_digests.py "
                       "--update (only for a deliberate plan change, named in the commit message)",
           "plans": plans}
    DIGESTS.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_plan_digests.py --update")
    sys.path.insert(0, str(Path(__file__).parent))
    _update()
