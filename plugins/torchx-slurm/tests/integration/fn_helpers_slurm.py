"""Module-level functions that test_functions.py submits to the cluster.

The test folder is on the submitter's ``sys.path`` (conftest.py), which the worker puts
first on its own: the nodes import this module from the same files (one disk here, a
shared one on a real cluster), so the functions travel by reference.
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


def raise_boom(message: str) -> None:
    _deeper(message)


def _deeper(message: str) -> None:
    raise Boom(message)


def shout(text: str) -> str:
    print(f"printed: {text}", flush=True)
    return text.upper()


def timed(x: int) -> tuple[int, float, float, str]:
    """Works for 0.5 s (the workload, not a synchronisation); says when and on which node."""
    start = time.time()
    time.sleep(0.5)
    return x * 10, start, time.time(), os.environ.get("SLURMD_NODENAME", "")


def exit_early(code: int) -> None:
    """Leaves without a result, as a replica whose code calls os._exit."""
    os._exit(code)


def announce_then_block() -> None:
    """Prints its pid, then waits for a signal forever (the test cancels it)."""
    print(f"pid {os.getpid()}", flush=True)
    while True:
        signal.pause()


def where() -> tuple[str, str]:
    """The node and job directory the call ran with (the worker's argument)."""
    return os.environ.get("SLURMD_NODENAME", ""), sys.argv[1]
