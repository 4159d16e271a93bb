"""The ``lsf`` scheduler: TorchX apps as one bsub job per replica, followed with bjobs.

>>> from torchx.specs import AppDef, Role, Resource
>>> sched = create_scheduler("me")
>>> role = Role("trainer", image="/tmp", entrypoint="python", args=["-c", "print(1)"],
...             num_replicas=2, resource=Resource(cpu=2, gpu=0, memMB=1024))
>>> info = sched.submit_dryrun(AppDef("train", [role]), {"lsf_queue": "normal", "jobdir": "/jobs"})
>>> info.request.replicas[1].bsub[:5]
['bsub', '-P', 'train-...', '-J', 'train-...-trainer-1']

What each call runs (every one with a timeout, see :mod:`torchx_lsf.commands`):

* ``schedule``: writes the app's private directory (:mod:`torchx_lsf.jobdir`), then one
  ``bsub`` per replica, rank 0 first, each with its job file on stdin. The app id is
  the LSF project of its jobs (the handle ``lsf://SESSION/APP_ID``, as upstream TorchX's);
* ``describe``: ``bjobs -a -P APP_ID -o ...``, one command; the AppDef comes from the
  file ``schedule`` kept in the app's directory (:mod:`torchx.schedulers.appstore`);
* ``list``: ``bjobs -a -o ...`` for the user's jobs, one app per project;
* ``cancel``: ``bkill`` of the app's jobs, after leaving a mark in the app's directory
  (so its replicas that LSF ends as EXIT read as CANCELLED, from any process);
* ``log_iter``: reads ``ROLE-K.out``/``.err`` in the app's directory, following them
  until the app ends when tailing.

A status call that times out raises ``TransientSchedulerError`` (retried by the
Runner), never a FAILED app.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from torchx.schedulers import appstore
from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    SchedulerError,
    Stream,
    TransientSchedulerError,
)
from torchx.schedulers.capabilities import Capability
from torchx.schedulers.follow import EveryInterval, follow_files, stream_files
from torchx.schedulers.ids import is_valid_app_id, make_app_id
from torchx.schedulers.polling import Polled, matching_lines
from torchx.schedulers.states import rollup, settle_cancelled
from torchx.specs import AppDef, AppDryRunInfo, AppState, CfgVal, ReplicaStatus, RoleStatus, runopts
from torchx.specs.errors import SpecError
from torchx_lsf import commands, jobdir
from torchx_lsf.jobdir import CANCELLED, STATE_DIR
from torchx_lsf.options import checked, lsf_runopts
from torchx_lsf.parse import BJOBS_FORMAT, JobRecord, parse_bjobs, replica_exit_code

if TYPE_CHECKING:
    # the request builder is imported when an app is submitted, not to follow one
    from torchx_lsf.request import LsfRequest

# bsub's answer: "Job <1234> is submitted to default queue <normal>."
_SUBMITTED = re.compile(r"Job <(\d+)> is submitted")
#: Seconds between two status calls of a followed log (``log_iter(should_tail=True)``).
STATUS_INTERVAL = 1.0


class LsfScheduler(Scheduler[Mapping[str, CfgVal]]):
    """TorchX apps on IBM Spectrum LSF. Needs LSF's commands on PATH, no Python dependency.

    Args:
        session_name: the session the handles carry (``lsf://SESSION/APP_ID``)
    """

    missing_capabilities: ClassVar[Mapping[Capability, str]] = {
        Capability.LOG_TIME_WINDOW: "the replicas' log files hold no times: since/until are ignored",
        Capability.RETRIES: "each replica is one LSF job that is not rerun: max_retries is ignored",
        Capability.DELETE: "LSF keeps ended jobs in bjobs -a until its CLEAN_PERIOD: delete only cancels",
    }

    def __init__(self, session_name: str, **kwargs: object) -> None:
        super().__init__("lsf", session_name)

    def _run_opts(self) -> runopts:
        return lsf_runopts()

    # -- submitting -------------------------------------------------------------------------

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[LsfRequest]:
        from torchx_lsf.request import build_request

        values = checked(cfg)
        queue = values.get("lsf_queue")
        workdir = values.get("container_workdir")
        shm = values.get("shm_size")
        request = build_request(
            app,
            app_id=make_app_id(app.name),
            session=self.session_name,
            jobdir=str(values["jobdir"]),
            queue=str(queue) if queue else None,
            container_workdir=str(workdir) if workdir else None,
            host_network=bool(values.get("host_network")),
            shm_size=str(shm) if shm else None,
        )
        return AppDryRunInfo(request, str)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        """Writes the app's private directory, then submits each replica with ``bsub``.

        A job directory that did not exist is created, and removed again if the submit
        fails; so is the app's directory, and every job already submitted is killed.
        If bsub does not answer in time, a job it may have created under the replica's
        unique name is killed too before the error is raised.
        """
        from torchx_lsf.request import env_file

        request: LsfRequest = dryrun_info.request
        try:
            app: AppDef | None = dryrun_info.app
        except SpecError:  # an AppDryRunInfo made by hand, not by prepare/submit_dryrun
            app = None
        made_jobdir = jobdir.prepare(request.jobdir)
        files: dict[str, str] = {}
        for r in request.replicas:
            files[f"{r.file_stem}.env"] = env_file(r.env)
            files[f"{r.file_stem}.sh"] = r.script
        try:
            jobdir.make_app_dir(request.app_dir, files)
        except SchedulerError:
            if made_jobdir:
                jobdir.remove(request.app_dir, request.jobdir, made_jobdir)
            raise
        if app is not None:
            # kept for describe; the jobs run without it, so a failure to write it (a full
            # disk) costs describe its roles, never the submitted app
            try:
                appstore.save(request.app_dir, app)
            except OSError as e:
                warnings.warn(
                    f"the AppDef of {request.app_id} could not be kept in {request.app_dir} "
                    f"({e.strerror}): describe will show no roles",
                    stacklevel=2,
                )
        submitted: list[str] = []
        for r in request.replicas:
            try:
                out = commands.run(r.bsub, input=r.job_file, what=f"submit {r.job_name}")
                match = _SUBMITTED.search(out)
                if match is None:
                    raise SchedulerError(
                        f"bsub answered {commands.first_line(out)!r} for {r.job_name}, not "
                        "'Job <ID> is submitted ...'"
                    )
                submitted.append(match.group(1))
            except Exception as e:
                self._undo(submitted, r.job_name, timed_out=_timed_out(e))
                jobdir.remove(request.app_dir, request.jobdir, made_jobdir)
                if submitted or _timed_out(e):
                    raise SchedulerError(
                        f"{e}; the {len(submitted)} job(s) already submitted (and any the "
                        "timed-out bsub made) were killed"
                    ) from None
                raise
        return request.app_id

    def _undo(self, job_ids: list[str], job_name: str, *, timed_out: bool) -> None:
        """Kills the jobs a failed submit made (best effort: the error at hand is raised)."""
        argvs = [["bkill", *job_ids]] if job_ids else []
        if timed_out:
            argvs.append(["bkill", "-J", job_name])
        for argv in argvs:
            try:
                commands.run(argv, what="kill the jobs of a failed submit", ok_no_job=True)
            except SchedulerError:
                pass

    # -- following an app -------------------------------------------------------------------

    def _records(self, app_id: str) -> list[JobRecord]:
        """The app's jobs (bjobs -P APP_ID): only those named as its replicas."""
        out = commands.run(
            ["bjobs", "-noheader", "-a", "-P", app_id, "-o", BJOBS_FORMAT],
            what=f"status of app {app_id}",
            ok_no_job=True,
        )
        return [r for r in parse_bjobs(out) if r.project == app_id and r.replica is not None]

    @staticmethod
    def _app_dir(app_id: str, records: Iterable[JobRecord]) -> str:
        """The app's private directory, from its jobs' output directory (bsub -outdir)."""
        for rec in records:
            path = rec.output_dir.rstrip("/")
            if (
                path.endswith(f"/{STATE_DIR}/{app_id}")
                and os.path.isabs(path)
                and jobdir.is_private_dir(path)
            ):
                return path
        return ""

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        if not is_valid_app_id(app_id):
            return None
        records = self._records(app_id)
        if not records:
            return None
        app_dir = self._app_dir(app_id, records)
        cancelled = bool(app_dir) and os.path.exists(os.path.join(app_dir, CANCELLED))
        return _response(app_id, records, app_dir, cancelled)

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """The user's apps that LSF knows (``bjobs -a``: running, and ended within its
        CLEAN_PERIOD): one per project whose jobs are named as an app's replicas."""
        out = commands.run(
            ["bjobs", "-noheader", "-a", "-o", BJOBS_FORMAT],
            what="list the user's jobs",
            ok_no_job=True,
        )
        apps: dict[str, list[JobRecord]] = {}
        for rec in parse_bjobs(out):
            if rec.replica is not None and is_valid_app_id(rec.project):
                apps.setdefault(rec.project, []).append(rec)
        found = []
        for app_id, records in apps.items():
            app_dir = self._app_dir(app_id, records)
            cancelled = bool(app_dir) and os.path.exists(os.path.join(app_dir, CANCELLED))
            state = _app_state(records, cancelled)
            start, end = _times(records, state)
            found.append(
                ListAppResponse(app_id=app_id, state=state, start_time=start, end_time=end)
            )
        # newest first: LSF's job ids grow
        found.sort(key=lambda a: -min(int(r.job_id.split("[")[0]) for r in apps[a.app_id]))
        return found

    def _cancel_existing(self, app_id: str) -> None:
        records = self._records(app_id)
        app_dir = self._app_dir(app_id, records)
        if app_dir:
            jobdir.mark_cancelled(app_dir)
        live = [r.job_id for r in records if not r.app_state.is_terminal()]
        if not live:
            return  # ended meanwhile: it stays as it ended
        try:
            commands.run(["bkill", *live], what=f"cancel app {app_id}", ok_no_job=True)
        except commands.LsfCommandError as e:
            # jobs that ended meanwhile: bkill says so and fails; cancel is idempotent
            if isinstance(e, TransientSchedulerError) or "already finished" not in e.output.lower():
                raise

    # -- logs -------------------------------------------------------------------------------

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        """Lines of replica ``k`` of ``role_name`` from the app's directory.

        ``streams`` picks ``ROLE-K.out`` (stdout) or ``.err`` (stderr); None or combined
        merges both. With ``should_tail`` the files are followed until the app ends and
        both are read to their end. ``since``/``until`` are not supported (the files
        hold no times).
        """
        if not is_valid_app_id(app_id):
            raise SchedulerError(f"{app_id!r} is not an app id of the lsf scheduler")
        records = self._records(app_id)
        if not records:
            raise SchedulerError(f"LSF knows no app {app_id} (bjobs -a -P {app_id})")
        replicas: dict[str, list[int]] = {}
        for rec in records:
            role, rid = rec.replica or ("", 0)
            replicas.setdefault(role, []).append(rid)
        if role_name not in replicas:
            raise SpecError(
                f"app {app_id} has no role {role_name!r}; its roles: {', '.join(replicas)}"
            )
        if k not in replicas[role_name]:
            raise SpecError(
                f"role {role_name!r} of app {app_id} has no replica {k}; "
                f"it has {', '.join(map(str, sorted(replicas[role_name])))}"
            )
        app_dir = self._app_dir(app_id, records)
        if not app_dir:
            raise SchedulerError(
                f"app {app_id} has no private directory of yours to read logs from (LSF "
                f"gives {records[0].output_dir or 'no output directory'})"
            )
        paths = stream_files(os.path.join(app_dir, f"{role_name}-{k}"), streams)

        def has_ended() -> bool:
            try:
                now = self._records(app_id)
            except TransientSchedulerError:
                return False
            return not now or _app_state(now, False).is_terminal()

        # asked at every idle poll of a followed file: LSF is asked at most once per
        # STATUS_INTERVAL, so tailing never floods mbatchd
        done = EveryInterval(
            STATUS_INTERVAL, has_ended, ended=_app_state(records, False).is_terminal()
        )

        def lines() -> Iterator[str]:
            merged = follow_files(paths, should_tail=should_tail, is_done=done)
            checked_lines = _then_check(
                merged, paths, lambda: done.ended, app_dir, f"{role_name}/{k}"
            )
            return matching_lines(regex, checked_lines) if regex else checked_lines

        return Polled(lines)


def _timed_out(e: BaseException) -> bool:
    return isinstance(e, TransientSchedulerError) and not isinstance(e, commands.LsfCommandError)


def _app_state(records: list[JobRecord], cancelled: bool) -> AppState:
    """The app's state from its jobs; CANCELLED once every job of a cancelled app ended."""
    states = [r.app_state for r in records]
    state = rollup(states)
    if cancelled and not all(s.is_terminal() for s in states):
        return AppState.RUNNING  # still stopping
    return settle_cancelled(state, cancelled)


def _response(
    app_id: str, records: list[JobRecord], app_dir: str, cancelled: bool
) -> DescribeAppResponse:
    records = [_with_recorded_exit(rec, app_dir) for rec in records]
    state = _app_state(records, cancelled)
    roles: dict[str, RoleStatus] = {}
    failed = []
    for rec in sorted(records, key=lambda r: r.replica or ("", 0)):
        role, rid = rec.replica or ("", 0)
        rstate = rec.app_state
        if state == AppState.CANCELLED and rstate != AppState.SUCCEEDED:
            rstate = AppState.CANCELLED
        exit_code = replica_exit_code(rec)
        if rstate == AppState.FAILED:
            failed.append(f"{role}/{rid} (LSF job {rec.job_id}, exit code {exit_code})")
        roles.setdefault(role, RoleStatus(role)).replicas.append(
            ReplicaStatus(
                id=rid, state=rstate, role=role, hostname=rec.exec_host, exit_code=exit_code
            )
        )
    msg = ""
    if state == AppState.FAILED and failed:
        msg = f"failed: {', '.join(failed)}"
        if app_dir:
            msg += f"; logs in {app_dir}"
    elif state == AppState.PENDING:
        msg = "waiting for LSF to dispatch the jobs (bjobs -p says why)"
    app = appstore.load(app_dir) if app_dir else None
    start, end = _times(records, state)
    return DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=0,
        msg=msg,
        roles_statuses=list(roles.values()),
        roles=list(app.roles) if app else [],
        metadata=dict(app.metadata) if app else {},
        name=app.name if app else "",
        ui_url=f"file://{app_dir}" if app_dir else None,
        start_time=start,
        end_time=end,
    )


def _times(records: list[JobRecord], state: AppState) -> tuple[float | None, float | None]:
    """When the app's first replica started, and (once it ended) its last one finished."""
    starts = [r.start_time for r in records if r.start_time is not None]
    ends = [r.finish_time for r in records if r.finish_time is not None]
    start = min(starts) if starts else None
    end = max(ends) if ends and state.is_terminal() else None
    return start, end


def _with_recorded_exit(rec: JobRecord, app_dir: str) -> JobRecord:
    """``rec``, EXIT with the code its script recorded if it failed while LSF still runs it.

    A failed replica's script records its exit code before it ends the app's other
    replicas: until its own job ends, that file says how it ended.
    """
    if rec.state != "RUN" or not app_dir or rec.replica is None:
        return rec
    role, k = rec.replica
    try:
        with open(os.path.join(app_dir, f"{role}-{k}.exit"), encoding="utf-8") as f:
            text = f.read(32).strip()
    except OSError:
        return rec
    if not text.lstrip("-").isdigit() or int(text) == 0:
        return rec
    return attrs.evolve(rec, state="EXIT", exit_code=int(text))


def _then_check(
    lines: Iterator[str], paths: list[str], ended: Callable[[], bool], app_dir: str, replica: str
) -> Iterator[str]:
    """``lines``, then an error naming each log file of an ended app that does not exist.

    A replica that never started (killed while pending, or its script refused to run)
    leaves no log file: that is said, with where LSF's own output for the job is,
    rather than an empty log. While the app runs a missing file is normal.
    """
    yield from lines
    missing = [p for p in paths if not os.path.isfile(p)]
    if not missing or not ended():
        return
    stem = os.path.basename(paths[0]).rsplit(".", 1)[0]
    raise SchedulerError(
        f"no log of replica {replica}: {' and '.join(missing)} "
        f"{'is' if len(missing) == 1 else 'are'} missing (the replica never started?); "
        f"LSF's own output of the job: {app_dir}/{stem}.lsf.out and .lsf.err"
    )


def create_scheduler(session_name: str, **kwargs: Any) -> LsfScheduler:
    """The factory the plugin registry calls for ``lsf``."""
    return LsfScheduler(session_name, **kwargs)
