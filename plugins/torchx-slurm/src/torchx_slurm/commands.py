"""Running the Slurm tools (sbatch, squeue, sacct, scancel): never a hang, one clear line.

Every call has a timeout (:func:`timeout`, 10 s unless ``TORCHX_SLURM_TIMEOUT`` says
otherwise): a controller that is down or slow answers within seconds with a
:class:`~torchx.schedulers.contract.api.TransientSchedulerError` (the Runner retries those and
never reports the app as failed for it). What is known to make every client call wait
is refused before anything runs:

* a tool missing from ``PATH``: "Slurm's squeue is not on PATH: ...";
* ``SLURM_CONF`` naming a file that does not exist (each client call would retry
  for 60 s): "SLURM_CONF=/x/slurm.conf does not exist: ...".

A tool that runs and fails raises :class:`SlurmCommandError` whose message is the
tool's own first error line: transient when it says the controller, accounting
(slurmdbd) or the authentication service (munge) could not be reached, since those
come back. Only Slurm's own "Invalid job id" answer (:func:`is_invalid_job_id`) means
that Slurm does not know a job: every other failure is an error, never "no such job".
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError
from torchx.schedulers.helpers import commands as shared

#: Environment variable overriding the timeout (seconds) of every Slurm command.
TIMEOUT_ENV = "TORCHX_SLURM_TIMEOUT"
DEFAULT_TIMEOUT = 10.0
#: The longest timeout ``TORCHX_SLURM_TIMEOUT`` may ask for (a day): every call must end.
MAX_TIMEOUT = shared.MAX_TIMEOUT

# Phrases of Slurm client errors that mean "the controller could not be reached".
DEFAULT_CONF = "/etc/slurm/slurm.conf"

# what the client says when it found no slurm.conf and no configless controller in DNS
_NO_CONFIG = ("resolve_ctls_from_dns_srv", "configuration source", "slurm.conf")

_UNREACHABLE = (
    "unable to contact slurm controller",
    "socket timed out",
    "zero bytes were transmitted",
    "connection refused",
    "slurm_receive_msg",
    "temporarily unavailable",
    "communication connection failure",
    "slurmctld may be down",
    # munged stopped or restarting on this host: every request fails to authenticate
    "munge",
    "authentication error",
    # slurmdbd down or restarting (sacct)
    "problem talking to the database",
    "persistent connection",
)

# Slurm's answer to a job id it does not know (squeue -j, scontrol, scancel)
_INVALID_JOB_ID = "invalid job id specified"


class SlurmCommandError(shared.CommandError):
    """A Slurm tool ran and failed; ``stderr`` holds what it said."""


class TransientSlurmCommandError(SlurmCommandError, TransientSchedulerError):
    """A Slurm tool failed because the controller could not be reached (worth a retry)."""


def is_invalid_job_id(error: SlurmCommandError) -> bool:
    """Whether the tool failed because Slurm does not know the job (nothing else).

    >>> is_invalid_job_id(SlurmCommandError("x", returncode=1,
    ...     stderr="slurm_load_jobs error: Invalid job id specified"))
    True
    """
    return not isinstance(error, TransientSchedulerError) and (
        _INVALID_JOB_ID in error.stderr.lower()
    )


def timeout() -> float:
    """The timeout of each Slurm command, in seconds (``TORCHX_SLURM_TIMEOUT`` or 10)."""
    return shared.timeout_from_env(TIMEOUT_ENV, default=DEFAULT_TIMEOUT, example=30)


def check_environment(tool: str) -> str:
    """The path of ``tool``, after checking what would make it fail or hang; else one line."""
    conf = os.environ.get("SLURM_CONF")
    if conf and not os.path.isfile(conf):
        raise SchedulerError(
            f"SLURM_CONF={conf} does not exist, so every Slurm command would wait 60 s for it: "
            "point SLURM_CONF at the cluster's slurm.conf or unset it"
        )
    return shared.which(
        tool,
        missing=f"Slurm's {tool} is not on PATH: run on a machine with the Slurm client tools "
        "(a login node, or Debian/Ubuntu: apt-get install slurm-client) or add them to PATH",
    )


def _no_config_hint(stderr: str) -> str:
    """Why a Slurm tool failed when no slurm.conf could be found, else "".

    Without ``SLURM_CONF`` and without ``/etc/slurm/slurm.conf`` the client looks for the
    controller in DNS (configless Slurm) and fails with a resolver error that does not
    say what is missing. A configless cluster is legitimate, so this only explains a
    failure whose stderr is about finding the configuration; it never refuses a call.
    """
    said = stderr.lower()
    if not any(p in said for p in _NO_CONFIG):
        return ""
    if os.environ.get("SLURM_CONF") or os.path.isfile(DEFAULT_CONF):
        return ""
    return (
        f" (no slurm.conf here: SLURM_CONF is unset and {DEFAULT_CONF} does not exist; "
        "set SLURM_CONF to the cluster's slurm.conf, or run on a login node)"
    )


def first_error_line(stderr: str) -> str:
    """The most telling line of a Slurm tool's stderr (its first ``error:`` line, else the first).

    Slurm's hint "If munged is up, restart with --num-threads=10", printed before the
    real error when munge cannot be reached, is skipped: the next line says what failed.
    """
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if "if munged is up" in line.lower():
            continue
        if "error" in line.lower() or "fatal" in line.lower():
            return line
    return lines[0] if lines else ""


def run(argv: Sequence[str], *, input: str | None = None, what: str = "") -> str:
    """Runs a Slurm command, returns its stdout; raises one-line errors (see the module doc).

    ``what`` says what the command was for, for the messages ("status of job 12").
    """
    tool = argv[0]
    path = check_environment(tool)
    conf = os.environ.get("SLURM_CONF", DEFAULT_CONF)
    proc = shared.run(
        argv,
        path=path,
        timeout=timeout(),
        what=what,
        slow=f"the Slurm controller may be down or slow (SLURM_CONF={conf}; "
        f"raise {TIMEOUT_ENV} to wait longer)",
        input=input,
        # times as parse.parse_time reads them, whatever the user's own setting
        env={**os.environ, "SLURM_TIME_FORMAT": "standard"},
    )
    if proc.returncode != 0:
        line = first_error_line(proc.stderr) or f"exit status {proc.returncode}"
        message = shared.failed_message(tool, what, line) + _no_config_hint(proc.stderr)
        cls = (
            TransientSlurmCommandError
            if shared.mentions(proc.stderr, _UNREACHABLE)
            else SlurmCommandError
        )
        raise cls(message, returncode=proc.returncode, stderr=proc.stderr)
    return proc.stdout
