"""Running the LSF tools (bsub, bjobs, bkill): never a hang, one clear line.

Every call has a timeout (:func:`timeout`, 30 s unless ``TORCHX_LSF_TIMEOUT`` says
otherwise): a batch system that is down or slow answers within seconds with a
:class:`~torchx.schedulers.contract.api.TransientSchedulerError` (the Runner retries those and
never reports the app as failed for it). A tool missing from ``PATH`` is refused before
anything runs: "LSF's bjobs is not on PATH: ...".

A tool that runs and fails raises :class:`LsfCommandError` whose message is the tool's
own first line: transient when it says that LSF's daemons (LIM, mbatchd) could not be
reached or asked to try later. :func:`is_no_job` tells LSF's "nothing matches" answers
(``No job found``, ``Job <12> is not found``) from real failures.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchx.schedulers.contract.errors import TransientSchedulerError
from torchx.schedulers.helpers import commands as shared

#: Environment variable overriding the timeout (seconds) of every LSF command.
TIMEOUT_ENV = "TORCHX_LSF_TIMEOUT"
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = shared.MAX_TIMEOUT

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


class LsfCommandError(shared.CommandError):
    """An LSF tool ran and failed; ``output`` holds what it said (stderr, then stdout)."""


class TransientLsfCommandError(LsfCommandError, TransientSchedulerError):
    """An LSF tool failed because the batch system could not be reached (worth a retry)."""


def is_no_job(text: str) -> bool:
    """Whether ``text`` (a tool's output) is LSF's answer that no job matches.

    >>> is_no_job("Job <123> is not found"), is_no_job("No unfinished job found")
    (True, True)
    """
    return shared.mentions(text, _NO_JOB)


def timeout() -> float:
    """The timeout of each LSF command, in seconds (``TORCHX_LSF_TIMEOUT`` or 30)."""
    return shared.timeout_from_env(TIMEOUT_ENV, default=DEFAULT_TIMEOUT, example=60)


def which(tool: str) -> str:
    """The path of ``tool``; one line saying what to do if it is not on PATH."""
    return shared.which(
        tool,
        missing=f"LSF's {tool} is not on PATH: run on an LSF host (after sourcing LSF's "
        "profile.lsf) or add LSF's bin directory to PATH",
    )


#: The first non-empty line of a text (a tool's answer).
first_line = shared.first_line


def run(
    argv: Sequence[str], *, input: str | None = None, what: str = "", ok_no_job: bool = False
) -> str:
    """Runs an LSF command, returns its stdout; raises one-line errors (see the module doc).

    With ``ok_no_job``, LSF's "no job matches" answer (whatever its exit status, which
    ``LSB_BJOBS_CONSISTENT_EXIT_CODE`` decides) returns ``""``.
    """
    tool = argv[0]
    proc = shared.run(
        argv,
        path=which(tool),
        timeout=timeout(),
        what=what,
        slow=f"LSF may be down or slow (raise {TIMEOUT_ENV} to wait longer)",
        input=input,
    )
    said = proc.stderr + proc.stdout
    if proc.returncode != 0:
        if ok_no_job and is_no_job(said):
            return ""
        line = (
            first_line(proc.stderr) or first_line(proc.stdout) or f"exit status {proc.returncode}"
        )
        cls = TransientLsfCommandError if shared.mentions(said, _UNREACHABLE) else LsfCommandError
        raise cls(
            shared.failed_message(tool, what, line),
            returncode=proc.returncode,
            stderr=proc.stderr,
            stdout=proc.stdout,
        )
    return proc.stdout
