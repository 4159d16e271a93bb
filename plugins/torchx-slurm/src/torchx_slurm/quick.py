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
#: As ``torchx.schedulers.helpers.appstore`` and ``torchx.specs.appdef_json``; a test checks.
APPDEF_FILE = "appdef.json"
APPDEF_VERSION = "torchx.specs/v1"


class _Decline(Exception):
    """Not the plain case: the full command answers."""


def _timeout() -> float:
    raw = os.environ.get(TIMEOUT_ENV, "")
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise _Decline(TIMEOUT_ENV) from None
    if not 0 < value <= MAX_TIMEOUT:
        raise _Decline(TIMEOUT_ENV)  # the full command says what is wrong
    return value


def _which(tool: str) -> str | None:
    """``shutil.which(tool)`` for a bare name on POSIX, without importing shutil (and with
    it bz2, lzma, fnmatch: milliseconds); a test checks they agree."""
    path = os.environ.get("PATH", None)
    if path is None:
        try:
            path = os.confstr("CS_PATH")
        except (AttributeError, ValueError):
            path = os.defpath
    if not path:
        return None
    seen = set()
    for folder in os.fsdecode(path).split(os.pathsep):
        norm = os.path.normcase(folder)
        if norm in seen:
            continue
        seen.add(norm)
        name = os.path.join(folder, tool)
        if os.path.exists(name) and os.access(name, os.F_OK | os.X_OK) and not os.path.isdir(name):
            return name
    return None


def _squeue(app_id: str) -> str:
    """``squeue``'s answer for the job, exactly as the scheduler asks; declines on any failure."""
    conf = os.environ.get("SLURM_CONF")
    if conf and not os.path.isfile(conf):
        raise _Decline("SLURM_CONF")
    path = _which("squeue")
    if path is None:
        raise _Decline("squeue")
    limit = _timeout()
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


def _envs(state_dir: str) -> list[dict[str, str]]:
    """The env of each role of the AppDef kept with the job (``torchx.schedulers.helpers.appstore``).

    None of it where ``appstore.load`` would give no AppDef for reasons this can tell (no
    file, not the user's own private file). The command uses these values only to see
    whether a secret would be masked in what it prints, and leaves any such status to
    the full path; so a file ``appstore.load`` would still refuse costs nothing. Declines
    when it cannot read every role's env.
    """
    if not state_dir:
        return []
    import stat

    try:
        fd = os.open(
            os.path.join(state_dir, APPDEF_FILE), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
        )
    except OSError:
        return []
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return []
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read()
    finally:
        os.close(fd)
    import json

    try:
        doc = json.loads(data.decode("utf-8"))
    except ValueError:
        raise _Decline("the kept AppDef") from None
    spec = doc.get("spec") if type(doc) is dict else None
    roles = spec.get("roles") if type(spec) is dict else None
    if (
        doc.get("apiVersion") != APPDEF_VERSION
        or doc.get("kind") != "AppDef"
        or type(roles) is not list
    ):
        raise _Decline("the kept AppDef's format")
    envs = []
    for role in roles:
        env = role.get("env") if type(role) is dict else None
        if type(env) is not dict or not all(
            type(k) is str and type(v) is str for k, v in env.items()
        ):
            raise _Decline("a role's env")
        envs.append(dict(env))
    return envs


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
        record["envs"] = _envs(job.state_dir)
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
