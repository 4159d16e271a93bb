"""torchx-lsf's quick handler: ``torchx status|log|cancel lsf://...`` without the spec types.

An LSF user compares ``torchx status lsf://torchx/APP`` with ``bjobs -P APP``. The full
command first loads attrs, pluggy, argparse and a Runner; this handler (registered
through the ``torchx_quick_handlers`` hook, contract in
:mod:`torchx.schedulers.helpers.quick`) answers with the standard library and the
plugin's light modules only. It is no second implementation: it runs the very ``bjobs``
the scheduler's ``describe`` runs, parses it with the same parser
(:mod:`torchx_lsf.parse`), finds and reads the app's directory with the same functions
(:mod:`torchx_lsf.appdir`), and what the scheduler makes of it all, the status record,
comes from the same pure function (:func:`torchx_lsf.status_record.app_record`), so it
gives back what ``describe`` would by construction. What is its own is the declining. It
declares that it answers ``status``, ``log`` and ``cancel`` (of an app that has ended).

It declines (None, and the full command runs) on anything but the plain case: ``bjobs``
missing, failing or timing out, an app LSF does not show (or that was deleted), a
cancelled app (the scheduler settles its state), replicas in different states (the
scheduler rolls them up), a state that is UNKNOWN or FAILED (the full path says why), a
kept AppDef it cannot read, or a log file that is not there. Tests compare its answers
with the scheduler's for the same LSF answers and files.
"""

from __future__ import annotations

import os

from torchx.schedulers.helpers import quick
from torchx.schedulers.helpers.ids import is_valid_app_id
from torchx_lsf.appdir import find_app_dir, is_cancelled, was_deleted
from torchx_lsf.parse import BJOBS_FORMAT, parse_bjobs
from torchx_lsf.status_record import app_record, with_recorded_exit

TYPE_CHECKING = False  # typing costs milliseconds, which this module exists to save
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from torchx.schedulers.helpers.quick import QuickStatus

#: As :mod:`torchx_lsf.commands` (which imports the Scheduler contract); a test checks.
TIMEOUT_ENV = "TORCHX_LSF_TIMEOUT"
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 86400.0


def _bjobs(app_id: str) -> str:
    """``bjobs``' answer for the app, exactly as the scheduler asks; declines on any failure."""
    path = quick.which("bjobs")
    if path is None:
        raise quick.Decline("bjobs")
    limit = quick.timeout_from_env(TIMEOUT_ENV, DEFAULT_TIMEOUT, MAX_TIMEOUT)
    import subprocess

    try:
        proc = subprocess.run(
            [path, "-noheader", "-a", "-P", app_id, "-o", BJOBS_FORMAT],
            capture_output=True,
            text=True,
            timeout=limit,
            check=False,
            errors="replace",
        )
    except (subprocess.TimeoutExpired, OSError):
        raise quick.Decline("bjobs") from None
    if proc.returncode != 0:
        raise quick.Decline("bjobs failed")  # LSF down, or no such job: the full path says
    return proc.stdout


class LsfQuickHandler:
    """The quick handler of the ``lsf`` scheduler (see the module docstring)."""

    #: What it answers without the Runner: one ``bjobs`` (status, and cancel of an app
    #: that has ended) and the replica's log files (log).
    calls = ("status", "log", "cancel")

    def status(self, app_id: str) -> QuickStatus | None:
        """What ``LsfScheduler.describe(app_id)`` says, from one ``bjobs``; None declines."""
        try:
            return self._status(app_id)
        except quick.Decline:
            return None

    def _status(self, app_id: str) -> QuickStatus:
        if not is_valid_app_id(app_id):
            raise quick.Decline(app_id)
        records = [
            r for r in parse_bjobs(_bjobs(app_id)) if r.project == app_id and r.replica is not None
        ]  # what LsfBackend.records keeps
        if not records:
            raise quick.Decline("no job")
        output_dirs = [r.output_dir for r in records]
        if was_deleted(app_id, output_dirs):
            raise quick.Decline("deleted")
        app_dir = find_app_dir(app_id, output_dirs)
        if is_cancelled(app_dir):
            raise quick.Decline("cancelled")
        records = [with_recorded_exit(r, app_dir) for r in records]
        states = {r.state_name for r in records}
        if len(states) != 1:
            raise quick.Decline("replicas in different states")
        (state,) = states
        if state in ("UNKNOWN", "FAILED"):
            raise quick.Decline(state)
        record = app_record(app_id, records, app_dir, state)  # the scheduler's own reading
        record["envs"] = quick.kept_envs(app_dir)
        return record

    def log(
        self, app_id: str, role: str, k: int, streams: str | None, status: QuickStatus
    ) -> Iterable[str] | None:
        """The replica's log as ``LsfScheduler.log_iter`` reads it (not followed).

        Declines when a file it would read is missing (the scheduler then says so).
        """
        ui_url = status["ui_url"]
        if not ui_url or not any(
            r == role and any(rep[0] == k for rep in reps) for r, reps in status["roles"]
        ):
            return None
        app_dir = ui_url.removeprefix("file://")
        from torchx.schedulers.helpers.follow import follow_files, stream_files
        from torchx.schedulers.helpers.polling import Polled

        paths = stream_files(os.path.join(app_dir, f"{role}-{k}"), streams)
        if not all(os.path.isfile(p) for p in paths):
            return None

        def never() -> bool:
            return True

        def lines() -> Iterator[str]:
            return follow_files(paths, should_tail=False, is_done=never)

        return Polled(lines)


#: The handler the ``torchx_quick_handlers`` hook names.
HANDLER = LsfQuickHandler()
