"""The ``lsf`` scheduler: TorchX apps as one bsub job per replica, followed with bjobs.

>>> from torchx.specs import AppDef, Role, Resource
>>> sched = create_scheduler("me")
>>> role = Role("trainer", image="/tmp", entrypoint="python", args=["-c", "print(1)"],
...             num_replicas=2, resource=Resource(cpu=2, gpu=0, memMB=1024))
>>> info = sched.submit_dryrun(AppDef("train", [role]), {"lsf_queue": "normal", "jobdir": "/jobs"})
>>> info.request.replicas[1].bsub[:5]
['bsub', '-P', 'train-...', '-J', 'train-...-trainer-1']

This module says only which call does what; each job has its own module, as in every
TorchX plugin: :mod:`~torchx_lsf.options` (run options), :mod:`~torchx_lsf.request`
(the bsub jobs), :mod:`~torchx_lsf.status` (LSF's answers as states),
:mod:`~torchx_lsf.backend` (every LSF command) and :mod:`~torchx_lsf.logs`.

What each call runs (every one with a timeout, see :mod:`torchx_lsf.commands`):

* ``schedule``: writes the app's private directory (:mod:`torchx_lsf.jobdir`), then one
  ``bsub`` per replica, rank 0 first, each with its job file on stdin. The app id is
  the LSF project of its jobs (the handle ``lsf://SESSION/APP_ID``, as upstream TorchX's);
* ``describe``: ``bjobs -a -P APP_ID -o ...``, one command; the AppDef comes from the
  file ``schedule`` kept in the app's directory (:mod:`torchx.schedulers.helpers.appstore`);
* ``list``: ``bjobs -a -o ...`` for the user's jobs, one app per project;
* ``cancel``: ``bkill`` of the app's jobs, after leaving a mark in the app's directory
  (so its replicas that LSF ends as EXIT read as CANCELLED, from any process);
* ``delete``: ``cancel``, ``bjobs`` until the jobs have ended, then the app's directory
  is removed (LSF cannot forget a job: a gone directory is what says it was deleted);
* ``log_iter``: reads ``ROLE-K.out``/``.err`` in the app's directory, following them
  until the app ends when tailing.

A status call that times out raises ``TransientSchedulerError`` (retried by the
Runner), never a FAILED app.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from torchx.schedulers.contract.api import DescribeAppResponse, ListAppResponse, Scheduler, Stream
from torchx.schedulers.contract.capabilities import Capability
from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.helpers import appstore
from torchx.schedulers.helpers.ids import is_valid_app_id, make_app_id
from torchx.specs import AppDef, AppDryRunInfo, CfgVal
from torchx.specs.errors import SpecError
from torchx_lsf import jobdir, logs
from torchx_lsf.backend import LsfBackend, timed_out
from torchx_lsf.options import LsfOpts
from torchx_lsf.parse import JobRecord
from torchx_lsf.status import (
    app_state,
    apps_of,
    describe_response,
    list_entry,
    newest_first,
)

#: Seconds between two looks at the jobs of an app being deleted (LSF's dispatch cycle is
#: about a second: a job killed ends within a few).
DELETE_POLL = 0.5

if TYPE_CHECKING:
    # the request builder is imported when an app is submitted, not to follow one
    from torchx_lsf.request import LsfRequest


class LsfScheduler(Scheduler[Mapping[str, CfgVal]]):
    """TorchX apps on IBM Spectrum LSF. Needs LSF's commands on PATH, no Python dependency.

    Args:
        session_name: the session the handles carry (``lsf://SESSION/APP_ID``)
        backend: the backend to call (tests); default: LSF's tools on ``PATH``
    """

    opts_class = LsfOpts
    #: an image that is not an absolute directory runs under ``docker run``
    runs_container_images = True

    missing_capabilities: ClassVar[Mapping[Capability, str]] = {
        Capability.LOG_TIME_WINDOW: "the replicas' log files hold no times: since/until are ignored",
    }

    def __init__(self, session_name: str, backend: LsfBackend | None = None) -> None:
        super().__init__("lsf", session_name)
        self._backend = backend or LsfBackend()

    def close(self) -> None:
        self._backend.close()

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        return self._backend.classify_error(e)

    # -- submitting -------------------------------------------------------------------------

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[LsfRequest]:
        from torchx_lsf.request import build_request

        opts = LsfOpts.of(cfg)  # checked once, when the options were resolved
        request = build_request(
            app,
            app_id=make_app_id(app.name),
            jobdir=opts.job_directory(),
            queue=opts.lsf_queue or None,
            container_workdir=opts.container_workdir or None,
            host_network=opts.host_network,
            shm_size=opts.shm_size or None,
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
                appstore.save(
                    request.app_dir, app, run_options=appstore.run_options_of(dryrun_info)
                )
            except OSError as e:
                warnings.warn(
                    f"the AppDef of {request.app_id} could not be kept in {request.app_dir} "
                    f"({e.strerror}): describe will show no roles",
                    stacklevel=2,
                )
        submitted: list[str] = []
        for r in request.replicas:
            try:
                submitted.append(self._backend.bsub(r.bsub, r.job_file, r.job_name))
            except Exception as e:
                self._backend.undo(submitted, r.job_name, timed_out=timed_out(e))
                jobdir.remove(request.app_dir, request.jobdir, made_jobdir)
                if submitted or timed_out(e):
                    raise SchedulerError(
                        f"{e}; the {len(submitted)} job(s) already submitted (and any the "
                        "timed-out bsub made) were killed"
                    ) from None
                raise
        return request.app_id

    # -- following an app -------------------------------------------------------------------

    @staticmethod
    def _app_dir(app_id: str, records: Iterable[JobRecord]) -> str:
        """The app's private directory, from its jobs' output directory (bsub -outdir)."""
        return jobdir.find_app_dir(app_id, (rec.output_dir for rec in records))

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        if not is_valid_app_id(app_id):
            return None
        records = self._backend.records(app_id)
        if not records or jobdir.was_deleted(app_id, (r.output_dir for r in records)):
            return None
        app_dir = self._app_dir(app_id, records)
        return describe_response(app_id, records, app_dir, jobdir.is_cancelled(app_dir))

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """The user's apps that LSF knows (``bjobs -a``: running, and ended within its
        CLEAN_PERIOD): one per project whose jobs are named as an app's replicas."""
        apps = apps_of(self._backend.all_records())
        found = []
        for app_id, records in list(apps.items()):
            if jobdir.was_deleted(app_id, (r.output_dir for r in records)):
                del apps[app_id]
                continue
            app_dir = self._app_dir(app_id, records)
            app = appstore.load(app_dir) if app_dir else None
            found.append(
                list_entry(app_id, records, jobdir.is_cancelled(app_dir), app.name if app else "")
            )
        newest_first(found, apps)
        return found

    def _cancel_existing(self, app_id: str) -> None:
        records = self._backend.records(app_id)
        live = [r.job_id for r in records if not r.app_state.is_terminal()]
        if not live:
            return  # it has ended: it stays as it ended (no mark)
        app_dir = self._app_dir(app_id, records)
        if app_dir:
            jobdir.mark_cancelled(app_dir)
        self._backend.bkill(app_id, live)

    def _delete_existing(self, app_id: str) -> None:
        """Cancels the app if it is live, waits for its jobs to end, then removes its
        directory: from then on neither ``describe`` nor ``list`` shows it.

        LSF keeps the ended jobs in ``bjobs -a`` until its CLEAN_PERIOD and has no call
        that forgets one, so the app's directory is what makes it exist
        (:func:`torchx_lsf.jobdir.was_deleted`). A job still running could write there
        again, so the directory is removed only once every job has ended; jobs that
        have not ended within the LSF commands' timeout leave it, and say so.
        """
        self._cancel_existing(app_id)
        limit = self._backend.timeout()
        deadline = time.monotonic() + limit
        records = self._backend.records(app_id)
        while not all(r.app_state.is_terminal() for r in records):
            if time.monotonic() > deadline:
                raise SchedulerError(
                    f"app {app_id} was cancelled but its jobs have not ended within {limit:g} s: "
                    "its directory is kept; delete it again once they have (bjobs -P "
                    f"{app_id})"
                )
            time.sleep(DELETE_POLL)  # LSF tells no one when a job ends: ask again
            records = self._backend.records(app_id)
        app_dir = self._app_dir(app_id, records)
        if app_dir:
            jobdir.remove_app_dir(app_dir)

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
        records = self._backend.records(app_id)
        if not records:
            raise SchedulerError(f"LSF knows no app {app_id} (bjobs -a -P {app_id})")

        def has_ended() -> bool:
            now = self._backend.records(app_id)
            return not now or app_state(now, False).is_terminal()

        return logs.app_log(
            app_id,
            records,
            self._app_dir(app_id, records),
            role_name,
            k,
            regex=regex,
            should_tail=should_tail,
            streams=streams,
            ended=app_state(records, False).is_terminal(),
            has_ended=has_ended,
        )


def create_scheduler(session_name: str, **kwargs: Any) -> LsfScheduler:
    """The factory the plugin registry calls for ``lsf``; ``backend=`` replaces LSF's tools
    (tests)."""
    return LsfScheduler(session_name, backend=kwargs.get("backend"))
