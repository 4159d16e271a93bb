"""Running a batch system's command-line tools (sbatch, bjobs, ...): never a hang, one clear line.

A scheduler that drives its backend through client tools needs the same four things
whatever the backend: a timeout on every call that the user can raise through an
environment variable (:func:`timeout_from_env`, refused in one line when it is not a
usable number of seconds), a tool missing from ``PATH`` refused before anything runs
(:func:`which`), a call that does not answer in time reported as a
:class:`~torchx.schedulers.contract.api.TransientSchedulerError` (the Runner retries those and
never reports the app as failed for it) and a call that cannot start as one line
(:func:`run`), and a failed call raised as a :class:`CommandError` that keeps what the
tool said, so that the scheduler can tell "no such job" from a real failure. Which
answers mean "could not reach the backend, try again" (:func:`mentions`) and the words
of each message are the backend's own: they are parameters here.

>>> import sys
>>> proc = run([sys.executable, "-c", "print('hi')"], path=sys.executable, timeout=30,
...            slow="the interpreter is slow")
>>> proc.stdout, proc.returncode
('hi\\n', 0)
>>> failed_message("squeue", "status of job 12", "error: Invalid job id specified")
'squeue failed (status of job 12): error: Invalid job id specified'
>>> mentions("Batch system daemon not responding ... still trying", ("not responding",))
True
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence

from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError

#: The longest timeout an environment variable may ask for (a day): every call must end.
MAX_TIMEOUT = 86400.0

__all__ = [
    "MAX_TIMEOUT",
    "CommandError",
    "failed_message",
    "first_line",
    "for_what",
    "mentions",
    "run",
    "timeout_from_env",
    "which",
]


class CommandError(SchedulerError):
    """A tool ran and failed: ``returncode``, and what it said (``stderr``, ``stdout``).

    A backend subclasses it (and ``TransientSchedulerError`` for its transient kind) so
    that its callers catch its own errors by name.
    """

    def __init__(self, message: str, *, returncode: int, stderr: str, stdout: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.stdout = stdout

    @property
    def output(self) -> str:
        """All the tool said: stderr, then stdout."""
        return self.stderr + self.stdout


def timeout_from_env(name: str, *, default: float, example: float) -> float:
    """The timeout in seconds that the environment variable ``name`` asks for, else ``default``.

    Anything that is not a number of seconds above 0 and at most :data:`MAX_TIMEOUT`
    (inf, nan and huge values would reach the OS as an unusable timeout) is refused in
    one line suggesting ``example``.

    >>> timeout_from_env("TORCHX_DOCTEST_UNSET_TIMEOUT", default=10, example=30)
    10
    """
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_TIMEOUT:
        raise SchedulerError(
            f"{name}={raw!r} is not a number of seconds from 0 to {MAX_TIMEOUT:g}: "
            f"set it to e.g. {example:g}, or unset it for the default of {default:g}"
        )
    return value


def which(tool: str, *, missing: str) -> str:
    """The path of ``tool`` on ``PATH``; else a :class:`SchedulerError` saying ``missing``."""
    path = shutil.which(tool)
    if path is None:
        raise SchedulerError(missing)
    return path


def for_what(what: str) -> str:
    """``" (what)"`` for a message, or ``""`` when the call's purpose is not given."""
    return f" ({what})" if what else ""


def failed_message(tool: str, what: str, line: str) -> str:
    """The one line saying that ``tool`` failed (doing ``what``), with its own ``line``."""
    return f"{tool} failed{for_what(what)}: {line}"


def first_line(text: str) -> str:
    """The first non-empty line of ``text``, stripped (``""`` if there is none)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def mentions(text: str, phrases: Sequence[str]) -> bool:
    """Whether ``text`` contains one of ``phrases`` (given in lower case), ignoring case."""
    said = text.lower()
    return any(p in said for p in phrases)


def run(
    argv: Sequence[str],
    *,
    path: str,
    timeout: float,
    slow: str,
    what: str = "",
    input: str | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Runs ``argv`` (its tool found at ``path``) within ``timeout`` seconds; never raises on exit status.

    A call that does not answer in time raises a ``TransientSchedulerError``: "``tool``
    did not answer within ``timeout`` s (``what``): ``slow``", where ``slow`` says what
    may be wrong and which variable raises the timeout. A call that cannot start raises
    a one-line :class:`SchedulerError`. Output is text, undecodable bytes replaced.
    """
    tool = argv[0]
    try:
        return subprocess.run(
            [path, *argv[1:]],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            errors="replace",
            env=None if env is None else dict(env),
        )
    except subprocess.TimeoutExpired:
        raise TransientSchedulerError(
            f"{tool} did not answer within {timeout:g} s{for_what(what)}: {slow}"
        ) from None
    except OSError as e:
        raise SchedulerError(f"cannot run {path}: {e.strerror}") from None
