"""Running the LSF tools (bsub, bjobs, bkill): never a hang, one clear line.

Every call has a timeout (:func:`timeout`, 30 s unless ``TORCHX_LSF_TIMEOUT`` says
otherwise): a batch system that is down or slow answers within seconds with a
:class:`~torchx.schedulers.api.TransientSchedulerError` (the Runner retries those and
never reports the app as failed for it). A tool missing from ``PATH`` is refused before
anything runs: "LSF's bjobs is not on PATH: ...".

A tool that runs and fails raises :class:`LsfCommandError` whose message is the tool's
own first line: transient when it says that LSF's daemons (LIM, mbatchd) could not be
reached or asked to try later. :func:`is_no_job` tells LSF's "nothing matches" answers
(``No job found``, ``Job <12> is not found``) from real failures.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from collections.abc import Sequence

from torchx.schedulers.api import SchedulerError, TransientSchedulerError

#: Environment variable overriding the timeout (seconds) of every LSF command.
TIMEOUT_ENV = "TORCHX_LSF_TIMEOUT"
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 86400.0

# what LSF's clients say when its daemons cannot be reached (worth a retry)
_UNREACHABLE = (
    "try again later",
    "try later",
    "not responding",
    "lim is down",
    "batch system daemon not responding",
    "mbatchd",
    "cannot connect",
    "connection refused",
    "timed out",
    "lsf is down",
)
# LSF's answers when no job matches (bjobs, bkill)
_NO_JOB = ("no job found", "no unfinished job found", "no matching job found", "is not found")


class LsfCommandError(SchedulerError):
    """An LSF tool ran and failed; ``output`` holds what it said (stderr, then stdout)."""

    def __init__(self, message: str, *, returncode: int, output: str) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.output = output


class TransientLsfCommandError(LsfCommandError, TransientSchedulerError):
    """An LSF tool failed because the batch system could not be reached (worth a retry)."""


def is_no_job(text: str) -> bool:
    """Whether ``text`` (a tool's output) is LSF's answer that no job matches.

    >>> is_no_job("Job <123> is not found"), is_no_job("No unfinished job found")
    (True, True)
    """
    said = text.lower()
    return any(p in said for p in _NO_JOB)


def timeout() -> float:
    """The timeout of each LSF command, in seconds (``TORCHX_LSF_TIMEOUT`` or 30)."""
    raw = os.environ.get(TIMEOUT_ENV, "")
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_TIMEOUT:
        raise SchedulerError(
            f"{TIMEOUT_ENV}={raw!r} is not a number of seconds from 0 to {MAX_TIMEOUT:g}: "
            f"set it to e.g. 60, or unset it for the default of {DEFAULT_TIMEOUT:g}"
        )
    return value


def which(tool: str) -> str:
    """The path of ``tool``; one line saying what to do if it is not on PATH."""
    path = shutil.which(tool)
    if path is None:
        raise SchedulerError(
            f"LSF's {tool} is not on PATH: run on an LSF host (after sourcing LSF's "
            "profile.lsf) or add LSF's bin directory to PATH"
        )
    return path


def first_line(text: str) -> str:
    """The first non-empty line of ``text``."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def run(
    argv: Sequence[str], *, input: str | None = None, what: str = "", ok_no_job: bool = False
) -> str:
    """Runs an LSF command, returns its stdout; raises one-line errors (see the module doc).

    With ``ok_no_job``, LSF's "no job matches" answer (whatever its exit status, which
    ``LSB_BJOBS_CONSISTENT_EXIT_CODE`` decides) returns ``""``.
    """
    tool = argv[0]
    path = which(tool)
    limit = timeout()
    try:
        proc = subprocess.run(
            [path, *argv[1:]],
            input=input,
            capture_output=True,
            text=True,
            timeout=limit,
            check=False,
            errors="replace",
        )
    except subprocess.TimeoutExpired:
        raise TransientSchedulerError(
            f"{tool} did not answer within {limit:g} s{f' ({what})' if what else ''}: LSF may "
            f"be down or slow (raise {TIMEOUT_ENV} to wait longer)"
        ) from None
    except OSError as e:
        raise SchedulerError(f"cannot run {path}: {e.strerror}") from None
    said = proc.stderr + proc.stdout
    if proc.returncode != 0:
        if ok_no_job and is_no_job(said):
            return ""
        line = (
            first_line(proc.stderr) or first_line(proc.stdout) or f"exit status {proc.returncode}"
        )
        cls = (
            TransientLsfCommandError
            if any(p in said.lower() for p in _UNREACHABLE)
            else LsfCommandError
        )
        raise cls(
            f"{tool} failed{f' ({what})' if what else ''}: {line}",
            returncode=proc.returncode,
            output=said,
        )
    return proc.stdout
