"""torchx-slurm's quick handler: ``torchx status|log|cancel slurm://...`` without the spec types.

An HPC user compares ``torchx status slurm://torchx/42`` with ``squeue -j 42`` (about 10
ms). The full command first loads attrs, pluggy, argparse and a Runner; this handler
(registered through the ``torchx_quick_handlers`` hook, contract in
:mod:`torchx.schedulers.helpers.quick`) answers with the standard library and the plugin's light
modules only. It is no second implementation: it runs the very ``squeue`` the
scheduler's ``describe`` runs, parses it with the same parser (:mod:`torchx_slurm.parse`),
and what the scheduler makes of the answer, the status record, comes from the same pure
function (:func:`torchx_slurm.status_record.job_status`), so it gives back what
``describe`` would by construction. What is its own is the declining, and the env of
the kept AppDef (for masking). It declares that it answers ``status``, ``log`` and
``cancel`` (of an app that has ended).

It declines (None, and the full command runs) on anything but the plain case: a Slurm
tool missing or failing or timing out, a job ``squeue`` does not show (ended long ago:
the scheduler asks accounting), a component of another job, components in different
states (the scheduler rolls them up), a state that is UNKNOWN or FAILED, exit codes
recorded for replicas ``squeue`` does not show, a kept AppDef it cannot read, or a log
file that is not there. Tests compare its answers with the scheduler's for
the same Slurm answers and files.
"""

from __future__ import annotations

import os

from torchx.schedulers.helpers import quick
from torchx_slurm.jobfiles import STATE_DIR, is_own_file
from torchx_slurm.parse import SQUEUE_FORMAT, JobRecord, parse_squeue_text
from torchx_slurm.status_record import job_status, state_name

TYPE_CHECKING = False  # typing costs milliseconds, which this module exists to save
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from torchx.schedulers.helpers.quick import QuickStatus

#: As :mod:`torchx_slurm.commands` (which imports the Scheduler contract); a test checks.
TIMEOUT_ENV = "TORCHX_SLURM_TIMEOUT"
DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 86400.0
#: What ``appstore`` keeps (:func:`torchx.schedulers.helpers.quick.kept_envs` reads it).
APPDEF_FILE, APPDEF_VERSION = quick.APPDEF_FILE, quick.APPDEF_VERSION
_Decline = quick.Decline


def _squeue(app_id: str) -> str:
    """``squeue``'s answer for the job, exactly as the scheduler asks; declines on any failure."""
    conf = os.environ.get("SLURM_CONF")
    if conf and not os.path.isfile(conf):
        raise _Decline("SLURM_CONF")
    path = quick.which("squeue")
    if path is None:
        raise _Decline("squeue")
    limit = quick.timeout_from_env(TIMEOUT_ENV, DEFAULT_TIMEOUT, MAX_TIMEOUT)
    import subprocess

    try:
        proc = subprocess.run(
            [path, "-h", "-t", "all", "-j", app_id, "-o", SQUEUE_FORMAT],
            capture_output=True,
            text=True,
            timeout=limit,
            check=False,
            errors="replace",
            env={**os.environ, "SLURM_TIME_FORMAT": "standard"},
        )
    except (subprocess.TimeoutExpired, OSError):
        raise _Decline("squeue") from None
    if proc.returncode != 0:
        raise _Decline("squeue failed")
    return proc.stdout


def _state(records: list[JobRecord]) -> str:
    """The app's state: every component's, when they agree (else the scheduler rolls up)."""
    states = {state_name(r.state) for r in records}
    if len(states) != 1:
        raise _Decline("components in different states")
    (state,) = states
    if state in ("UNKNOWN", "FAILED"):
        raise _Decline(state)
    return state


class SlurmQuickHandler:
    """The quick handler of the ``slurm`` scheduler (see the module docstring)."""

    #: What it answers without the Runner: one ``squeue`` (status, and cancel of an
    #: app that has ended) and the job's log files (log).
    calls = ("status", "log", "cancel")

    def status(self, app_id: str) -> QuickStatus | None:
        """What ``SlurmScheduler.describe(app_id)`` says, from one ``squeue``; None declines."""
        try:
            return self._status(app_id)
        except _Decline:
            return None

    def _status(self, app_id: str) -> QuickStatus:
        if not app_id.isdigit() or not app_id.isascii():
            raise _Decline(app_id)
        records = [r for r in parse_squeue_text(_squeue(app_id)) if r.job_id == app_id]
        if not records:
            raise _Decline("not in the queue")  # accounting's, or a component of another job
        job = job_status(app_id, records, _state(records))  # the scheduler's own parser
        if job.unseen:
            raise _Decline("exit codes of replicas squeue does not show")
        record: QuickStatus = job.record
        record["envs"] = quick.kept_envs(job.state_dir)
        return record

    def log(
        self, app_id: str, role: str, k: int, streams: str | None, status: QuickStatus
    ) -> Iterable[str] | None:
        """The replica's log as ``SlurmScheduler.log_iter`` reads it (not followed).

        Declines when a file it would read is missing (the scheduler then says so,
        with Slurm's own errors).
        """
        ui_url = status["ui_url"]
        if not ui_url or not any(
            r == role and any(rep[0] == k for rep in reps) for r, reps in status["roles"]
        ):
            return None
        job_dir = ui_url.removeprefix("file://")
        name = f"slurm-{app_id}-{role}-{k}"
        base = os.path.join(job_dir, STATE_DIR, app_id, name)
        if not os.path.exists(base + ".out") and is_own_file(os.path.join(job_dir, name + ".out")):
            base = os.path.join(job_dir, name)
        from torchx.schedulers.helpers.follow import follow_files, stream_files
        from torchx.schedulers.helpers.polling import Polled

        paths = stream_files(base, streams)
        if not all(os.path.isfile(p) for p in paths):
            return None

        def never() -> bool:
            return True

        def lines() -> Iterator[str]:
            return follow_files(paths, should_tail=False, is_done=never)

        return Polled(lines)


#: The handler the ``torchx_quick_handlers`` hook names.
HANDLER = SlurmQuickHandler()
