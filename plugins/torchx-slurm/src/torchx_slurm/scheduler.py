"""The ``slurm`` scheduler: TorchX apps as heterogeneous sbatch jobs, followed with squeue/sacct.

>>> from torchx.specs import AppDef, Role, Resource
>>> sched = create_scheduler("me")
>>> role = Role("trainer", image="/tmp", entrypoint="python", args=["-c", "print(1)"],
...             num_replicas=2, resource=Resource(cpu=2, gpu=0, memMB=1024))
>>> info = sched.submit_dryrun(AppDef("train", [role]), {"partition": "cpu", "job_dir": "/jobs"})
>>> print(info.request.script.splitlines()[2])
#SBATCH --job-name=train-...:trainer:0

This module says only which call does what; each job has its own module, as in every
TorchX plugin: :mod:`~torchx_slurm.options` (run options), :mod:`~torchx_slurm.request`
(the sbatch script), :mod:`~torchx_slurm.status` (Slurm's answers as states),
:mod:`~torchx_slurm.backend` (every Slurm command) and :mod:`~torchx_slurm.logs`.

What each call runs (every one with a timeout, see :mod:`torchx_slurm.commands`):

* ``schedule``: ``sbatch --parsable`` with the script on stdin; the app id is the job
  id (the handle ``slurm://SESSION/JOBID``, as upstream TorchX's);
* ``describe``: ``squeue -j ID`` while Slurm still knows the job; once it has left
  the queue, ``sacct -j ID`` (or ``sacct -c``, the job-completion file, on clusters
  without accounting). One command per call in the common case. Per-replica exit
  codes and the restart count come from the job directory (the script records them),
  the AppDef from the file ``schedule`` kept there (:mod:`torchx.schedulers.helpers.appstore`);
* ``list``: ``squeue`` for the user's jobs; ``cancel``: ``scancel``;
* ``log_iter``: reads ``slurm-<id>-<role>-<k>.out``/``.err`` in the job's own directory
  ``.torchx-slurm/<id>/``, following them until the job ends when tailing.

A status call that times out raises ``TransientSchedulerError`` (retried by the
Runner), never a FAILED app.
"""

from __future__ import annotations

import functools
import getpass
import os
import re
import warnings
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from torchx.schedulers.contract.api import DescribeAppResponse, ListAppResponse, Scheduler, Stream
from torchx.schedulers.contract.capabilities import Capability
from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.helpers import appstore
from torchx.schedulers.helpers.ids import make_app_id
from torchx.specs import AppDef, AppDryRunInfo, CfgVal, runopts
from torchx.specs.errors import InvalidRunConfigException, SpecError
from torchx.workspace.dir_workspace import DirWorkspaceMixin
from torchx_slurm import jobdir, logs
from torchx_slurm.backend import SlurmBackend
from torchx_slurm.jobfiles import STATE_DIR
from torchx_slurm.options import SlurmOpts, list_starttime
from torchx_slurm.status import describe_response, list_entries

if TYPE_CHECKING:
    # the script generator is imported when an app is submitted, not to follow one
    from torchx_slurm.request import SlurmRequest

_JOB_ID = re.compile(r"\d+")
# one task of a job array: JOBID_TASK
_ARRAY_TASK = re.compile(r"(\d+)_(\d+)")
# a Slurm job's log file: sbatch's default (slurm-<id>.out) or a replica's (slurm-<id>-<role>-<k>.err)
_SLURM_LOG = re.compile(r"slurm-\d+(_\d+)?(-.*)?\.(out|err)")


class SlurmScheduler(DirWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
    """TorchX apps on Slurm. Needs the Slurm client tools on PATH, no Python dependency.

    A workspace (``torchx run --workspace``) is copied into the ``job_dir`` run option's
    directory, which the job then runs in (the directory workspace of torchx-runner).

    Args:
        session_name: the session the handles carry (``slurm://SESSION/JOBID``)
        backend: the backend to call (tests); default: the Slurm tools on ``PATH``
    """

    opts_class = SlurmOpts
    missing_capabilities: ClassVar[Mapping[Capability, str]] = {
        Capability.LOG_TIME_WINDOW: "Slurm's output files hold no times: since/until are ignored",
        Capability.DELETE: "Slurm keeps every job in its records: delete only cancels",
    }

    def __init__(self, session_name: str, backend: SlurmBackend | None = None) -> None:
        super().__init__("slurm", session_name)
        self._backend = backend or SlurmBackend()

    def close(self) -> None:
        self._backend.close()

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        return self._backend.classify_error(e)

    def workspace_opts(self) -> runopts:
        """None of its own: ``job_dir``, which the directory workspace reads, is a SlurmOpts field."""
        return runopts()

    def workspace_leaves_out(self, path: str, is_dir: bool) -> bool:
        """Job directories and Slurm logs stay out of a workspace copy.

        Jobs write into directories a workspace often holds (by default the submit
        directory): a copy leaves out every job directory (one holding a
        ``.torchx-slurm`` directory, or ``.torchx-slurm`` itself) and the log files of
        Slurm jobs (``slurm-<job id>[-...].out``/``.err``), never shipping the logs,
        exit codes and kept AppDefs of earlier jobs with the next one.
        """
        if is_dir:
            return os.path.basename(path) == STATE_DIR or os.path.isdir(
                os.path.join(path, STATE_DIR)
            )
        return _SLURM_LOG.fullmatch(os.path.basename(path)) is not None

    # -- submitting -------------------------------------------------------------------------

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[SlurmRequest]:
        # replicas run where the app is submitted from (sbatch's own default), so the
        # paths of the command line work as typed; logs and state go to job_dir
        from torchx_slurm.array import build_array
        from torchx_slurm.request import build_request

        opts = SlurmOpts.of(cfg)
        submit_dir = os.getcwd()
        values = opts.sbatch_values()
        array = opts.array_parallelism
        # one role as a job array (torchx_slurm.array), else a heterogeneous job
        build: Any = (
            build_request if array is None else functools.partial(build_array, parallelism=array)
        )
        request = build(
            app,
            job_dir=opts.job_directory(submit_dir),
            run_dir=submit_dir,
            job_name=make_app_id(app.name),
            job_opts=values["job"],
            group_opts=values["group"],
            extra=opts.sbatch_args,
            nomem=opts.nomem,
            exclusive=opts.exclusive,
            shared_logs=opts.shared_logs,
        )
        # an array's tasks each get an allocation of their own, one after the other
        if request.array is None and len(request.replicas) > 1 and not opts.allow_pending:
            self._check_nodes(app.name, len(request.replicas), opts.partition)
        return AppDryRunInfo(request, str)

    def _check_nodes(self, app_name: str, replicas: int, partition: CfgVal) -> None:
        """Refuses an app that cannot start: more replicas than its partition has nodes.

        Each replica needs a node of its own (a heterogeneous job's groups never share
        one), so such an app would stay PENDING forever and ``--wait`` never return.
        """
        wanted = str(partition) if partition else ""
        nodes = self._backend.partition_nodes().get(wanted)
        if nodes is None or replicas <= len(nodes):
            return  # unknown here (no sinfo, a partition sinfo does not show): sbatch decides
        where = f"partition {wanted!r}" if wanted else "the default partition"
        raise InvalidRunConfigException(
            f"app {app_name!r} has {replicas} replicas, each on a node of its own, but {where} "
            f"has {len(nodes)} node(s) (sinfo): it would stay PENDING forever. Use at most "
            f"{len(nodes)} replicas or another partition (-cfg partition=...), or submit it "
            "anyway with -cfg allow_pending=True"
        )

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        """Submits the script with ``sbatch --parsable``; returns the job id (the app id).

        A job directory that did not exist is created, and removed again (when still
        empty) if sbatch fails; one the workspace build made for this job is removed
        with its copy. ``.torchx-slurm`` in it is made private or checked first
        (:mod:`torchx_slurm.jobdir`): one another user could have planted in submits
        nothing. If sbatch does not answer in time, any job it may have created under
        the app's unique name is cancelled before the error is raised.
        """
        request: SlurmRequest = dryrun_info.request
        try:
            app: AppDef | None = dryrun_info.app
        except SpecError:  # an AppDryRunInfo made by hand, not by prepare/submit_dryrun
            app = None
        # the workspace build made the job directory for this job: a failed submit removes it
        # (a dry run's info still to build only names the directory: it made nothing)
        built = (
            app is not None
            and not dryrun_info.needs_workspace_build
            and any(r.workspace is not None and r.image == request.job_dir for r in app.roles)
        )
        created = not os.path.isdir(request.job_dir)
        if created:
            try:
                os.makedirs(request.job_dir, exist_ok=True)
            except OSError as e:
                raise SchedulerError(
                    f"cannot create the job directory {request.job_dir}: {e.strerror}"
                ) from None
        try:
            made_top = jobdir.prepare(request.job_dir, shared_logs=request.shared_logs)
        except SchedulerError:
            if created:
                jobdir.remove_if_empty(request.job_dir)
            raise
        first = request.replicas[0]
        try:
            job_id = self._backend.sbatch(
                request.script, request.name, f"{request.name}:{first.role}:{first.replica_id}"
            )
        except Exception as e:
            if made_top:
                jobdir.remove_if_empty(os.path.join(request.job_dir, STATE_DIR))
            if built:
                import shutil

                shutil.rmtree(request.job_dir, ignore_errors=True)
            elif created:
                try:
                    os.rmdir(request.job_dir)
                except OSError:
                    pass
            raise e from None
        if app is not None:
            # kept with the job for describe; the job runs without it, so a failure to
            # write it (a full disk) costs describe its roles, never the submitted job
            try:
                appstore.save(
                    os.path.join(request.job_dir, STATE_DIR, job_id),
                    app,
                    # the job's directory, which its logs go to, as its script makes it
                    dir_mode=0o755 if request.shared_logs else 0o700,
                    run_options=appstore.run_options_of(dryrun_info),
                )
            except OSError as e:
                warnings.warn(
                    f"job {job_id} was submitted, but its AppDef could not be kept in "
                    f"{request.job_dir} ({e.strerror}): describe will show no roles",
                    stacklevel=2,
                )
        return job_id

    # -- following an app -------------------------------------------------------------------

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The app of job ``app_id``; for ``JOBID_TASK``, the job array ``JOBID`` with only
        that task (so ``cancel`` of it cancels that task alone, ``scancel JOBID_TASK``)."""
        task = _ARRAY_TASK.fullmatch(app_id)
        if task is None and not _JOB_ID.fullmatch(app_id):
            return None
        job_id = task.group(1) if task else app_id
        records = self._backend.records(job_id, self.session_name)
        if task:
            records = [r for r in records if r.array_task == int(task.group(2))]
        if not records:
            return None
        return describe_response(job_id, records)

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """The user's jobs: in the queue (``squeue``) or ended lately (``sacct``), newest first.

        Slurm's queue forgets a job soon after it ends (``MinJobAge``, 300 s by
        default), so the jobs that ended within the run option ``list_since`` (default
        :data:`~torchx_slurm.options.DEFAULT_LIST_SINCE`: a day) come from accounting
        (``sacct --starttime``; the job-completion file without it). One app per
        heterogeneous job. The run options ``partition``, ``account`` and ``qos``, when
        given (``torchx list -s slurm -cfg partition=gpu,list_since=2h``, or the
        ``[slurm]`` section of ``.torchxconfig``), narrow both to the jobs submitted
        with them, as ``squeue --partition`` and the like do.
        """
        given = SlurmOpts.given(cfg)  # checked as a submission's are; no defaults
        starttime = list_starttime(given.get("list_since"))
        user = getpass.getuser()
        queued = self._backend.queue(user, given)
        return list_entries(self._backend.ended_since(starttime, user, given), queued)

    def _cancel_existing(self, app_id: str) -> None:
        self._backend.scancel(app_id)

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
        """Lines of replica ``k`` of ``role_name`` from the job directory.

        ``streams`` picks ``slurm-<id>-<role>-<k>.out`` (stdout) or ``.err`` (stderr);
        None or combined merges both (``torchx.schedulers.helpers.merge``: each file's lines in
        their order, the two files' in the order they are read). With ``should_tail``
        the files are followed until the job ends and both are read to their end. The
        result can be polled (``torchx.schedulers.helpers.polling.Polled``). ``since``/``until`` are not supported (Slurm's files hold no times).
        """
        desc = self.describe(app_id)
        if desc is None:
            raise SchedulerError(f"Slurm does not know job {app_id}")

        def has_ended() -> bool:
            now = self.describe(app_id)
            return now is None or now.state.is_terminal()

        return logs.job_log(
            desc,
            role_name,
            k,
            regex=regex,
            should_tail=should_tail,
            streams=streams,
            has_ended=has_ended,
        )


def create_scheduler(session_name: str, **kwargs: Any) -> SlurmScheduler:
    """The factory the plugin registry calls for ``slurm``; ``backend=`` replaces the Slurm
    tools (tests)."""
    return SlurmScheduler(session_name, backend=kwargs.get("backend"))
