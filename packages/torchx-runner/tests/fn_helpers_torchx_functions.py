"""Module-level functions for test_functions.py, imported by the worker on the replica.

test_functions.py puts this folder on ``sys.path`` first: the worker gets the
submitter's ``sys.path``, which is the rule that makes a test module importable there.
"""

from __future__ import annotations

import os
import signal
import sys
import time


class Boom(ValueError):
    """A custom exception type: the caller must get this type back, not a stand-in."""


def add(a: int, b: int) -> int:
    return a + b


def scaled(x: int, *, factor: int = 1, offset: int = 0) -> int:
    return x * factor + offset


def raise_boom(message: str) -> None:
    _deeper(message)


def _deeper(message: str) -> None:
    raise Boom(message)


def shout(text: str) -> str:
    print(f"printed: {text}")
    print(f"to stderr: {text}", file=sys.stderr)
    return text.upper()


def announce_then_block() -> None:
    """Prints its pid, then waits for a signal forever (the test cancels or kills it)."""
    print(f"pid {os.getpid()}", flush=True)
    while True:
        signal.pause()


def exit_early(code: int) -> None:
    """Leaves without a result, as a replica whose code calls os._exit."""
    os._exit(code)


def nothing() -> None:
    return None


def timed(x: int) -> tuple[int, float, float]:
    """Works for 0.3 s (the workload, not a synchronisation) and says when it ran."""
    start = time.time()
    time.sleep(0.3)
    return x * 10, start, time.time()


def block_on(item: str) -> None:
    """Prints its item, then waits for a signal forever (the test cancels it)."""
    print(f"item {item}", flush=True)
    while True:
        signal.pause()


def own_job_dir() -> tuple[str, int]:
    """The call's job directory (the worker's argument) and its permission bits."""
    import stat

    path = sys.argv[1]
    return path, stat.S_IMODE(os.stat(path).st_mode)
