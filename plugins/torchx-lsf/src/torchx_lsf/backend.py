"""Every call to LSF, in one place: which tool runs with what, and what its failures mean.

The scheduler (:mod:`torchx_lsf.scheduler`) asks :class:`LsfBackend`; it runs LSF's
tools through :mod:`torchx_lsf.commands` (each with a timeout, failures as one-line
errors, transient when LSF's daemons could not be reached). What it answers is parsed
(:mod:`torchx_lsf.parse`), never interpreted: states and responses are
:mod:`torchx_lsf.status`'s job.

Tests give the scheduler another backend (``create_scheduler(session, backend=...)``);
the unit tests keep this one and put scripted LSF tools on ``PATH``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError
from torchx_lsf import commands
from torchx_lsf.parse import BJOBS_FORMAT, JobRecord, parse_bjobs

# bsub's answer: "Job <1234> is submitted to default queue <normal>."
_SUBMITTED = re.compile(r"Job <(\d+)> is submitted")


def timed_out(e: BaseException) -> bool:
    """Whether ``e`` is an LSF tool that did not answer in time (it may have acted)."""
    return isinstance(e, TransientSchedulerError) and not isinstance(e, commands.LsfCommandError)


class LsfBackend:
    """LSF's tools, as the scheduler uses them (see the module docstring)."""

    def close(self) -> None:
        """Nothing to let go of: every call is a process that has ended."""

    def timeout(self) -> float:
        """How long one LSF command may take (``TORCHX_LSF_TIMEOUT``, see
        :func:`torchx_lsf.commands.timeout`)."""
        return commands.timeout()

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        """Every failure of an LSF tool is raised in the contract's terms already."""
        return e if isinstance(e, SchedulerError) else None

    def bsub(self, argv: Sequence[str], job_file: str, job_name: str) -> str:
        """Submits one job (``argv``, its job file on stdin); returns its job id."""
        out = commands.run(argv, input=job_file, what=f"submit {job_name}")
        match = _SUBMITTED.search(out)
        if match is None:
            raise SchedulerError(
                f"bsub answered {commands.first_line(out)!r} for {job_name}, not "
                "'Job <ID> is submitted ...'"
            )
        return match.group(1)

    def undo(self, job_ids: list[str], job_name: str, *, timed_out: bool) -> None:
        """Kills the jobs a failed submit made (best effort: the error at hand is raised)."""
        argvs = [["bkill", *job_ids]] if job_ids else []
        if timed_out:
            argvs.append(["bkill", "-J", job_name])
        for argv in argvs:
            try:
                commands.run(argv, what="kill the jobs of a failed submit", ok_no_job=True)
            except SchedulerError:
                pass

    def records(self, app_id: str) -> list[JobRecord]:
        """The app's jobs (bjobs -P APP_ID): only those named as its replicas."""
        out = commands.run(
            ["bjobs", "-noheader", "-a", "-P", app_id, "-o", BJOBS_FORMAT],
            what=f"status of app {app_id}",
            ok_no_job=True,
        )
        return [r for r in parse_bjobs(out) if r.project == app_id and r.replica is not None]

    def all_records(self) -> list[JobRecord]:
        """The user's jobs LSF knows (``bjobs -a``: running, and ended within CLEAN_PERIOD)."""
        out = commands.run(
            ["bjobs", "-noheader", "-a", "-o", BJOBS_FORMAT],
            what="list the user's jobs",
            ok_no_job=True,
        )
        return parse_bjobs(out)

    def bkill(self, app_id: str, job_ids: list[str]) -> None:
        """Kills the app's jobs ``job_ids``; ones that ended meanwhile stay as they ended."""
        try:
            commands.run(["bkill", *job_ids], what=f"cancel app {app_id}", ok_no_job=True)
        except commands.LsfCommandError as e:
            # jobs that ended meanwhile: bkill says so and fails; cancel is idempotent
            if isinstance(e, TransientSchedulerError) or "already finished" not in e.output.lower():
                raise
