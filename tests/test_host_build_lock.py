"""The host runtime's build cache (tigris/host/build.py) under concurrent first use: parallel test workers (pytest-xdist)
or two shells that find no build both ask for it at once; the lock lets exactly one compile it and the other load that
build. The compile and load are stand-ins here (the real ones are exercised by every test that runs a plan)."""
from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from tigris.host import build


def test_concurrent_first_use_builds_once(tmp_path, monkeypatch):
    monkeypatch.setenv("TIGRIS_CACHE_DIR", str(tmp_path / "cache"))
    builds: list[str] = []

    def fake_build(rs, digest, dest, isa):
        builds.append(digest)
        time.sleep(0.3)  # long enough for the other thread to find no build and wait on the lock
        dest.mkdir(parents=True)
        (dest / "built").write_text(isa)

    def fake_load(dest, digest):
        return SimpleNamespace(dest=dest) if (dest / "built").exists() else None

    monkeypatch.setattr(build, "_build", fake_build)
    monkeypatch.setattr(build, "_load", fake_load)
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(build._runtime.__wrapped__("generic"))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(got) == 2 and len(builds) == 1
    assert got[0].dest == got[1].dest == tmp_path / "cache" / builds[0]
