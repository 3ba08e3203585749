"""Runs command lines of the real `tigris` CLI, each in its own forked child with bounded memory and time.

Reads a JSON list of ``{"argv": [...], "cwd": "..."}`` on stdin and writes a JSON list of ``{"code", "stdout",
"stderr", "seconds", "killed"}`` on stdout. The CLI is imported once here and every case runs in a fork of this
process, so a case costs a fork, not a Python start-up, while a crash, a memory blow-up or a hang stays inside its
child: the child's address space is limited with ``RLIMIT_AS``, its CPU time with ``RLIMIT_CPU`` (SIGXCPU kills
it), and it is killed after a generous wall-clock limit in case it hangs.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time

MEMORY_LIMIT = 2 * 1024**3  # bytes of address space per case
CPU_LIMIT = 30  # CPU seconds per case (RLIMIT_CPU: the bound that does not depend on the machine's other load)
WALL_LIMIT = 120.0  # wall seconds per case before the child is killed (a hang: sleeping, waiting on a lock)


def _child(argv: list[str], cwd: str, out_path: str, err_path: str) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT, CPU_LIMIT + 1))
    os.chdir(cwd)
    for fd, path in ((1, out_path), (2, err_path)):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(f, fd)
        os.close(f)
    sys.stdout = os.fdopen(1, "w", closefd=False)
    sys.stderr = os.fdopen(2, "w", closefd=False)
    from tigris.cli import main

    code = 0
    try:
        main(args=argv, prog_name="tigris")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - a traceback escaping the CLI is what the suite looks for
        import traceback

        traceback.print_exc()
        code = 99
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_case(argv: list[str], cwd: str, scratch: str, k: int) -> dict:
    out_path = os.path.join(scratch, f"case{k}.out")
    err_path = os.path.join(scratch, f"case{k}.err")
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            _child(argv, cwd, out_path, err_path)
        finally:
            os._exit(98)
    killed = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - t0 > WALL_LIMIT:
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            killed = True
            break
        time.sleep(0.01)
    seconds = time.monotonic() - t0
    cpu = usage.ru_utime + usage.ru_stime
    code = os.waitstatus_to_exitcode(status)

    def read(p: str) -> str:
        try:
            with open(p, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    res = {"code": code, "stdout": read(out_path), "stderr": read(err_path), "seconds": seconds, "cpu": cpu,
           "killed": killed}
    for p in (out_path, err_path):
        try:
            os.unlink(p)
        except OSError:
            pass
    return res


def main() -> None:
    cases = json.load(sys.stdin)
    scratch = sys.argv[1]
    import tigris.cli  # noqa: F401 - imported once, before the forks
    import tigris.load  # noqa: F401
    import tigris.plan  # noqa: F401

    results = [run_case(c["argv"], c["cwd"], scratch, k) for k, c in enumerate(cases)]
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
