"""The ``slurm`` scheduler: TorchX apps as heterogeneous sbatch jobs, followed with squeue/sacct.

>>> from torchx.specs import AppDef, Role, Resource
>>> sched = create_scheduler("me")
>>> role = Role("trainer", image="/tmp", entrypoint="python", args=["-c", "print(1)"],
...             num_replicas=2, resource=Resource(cpu=2, gpu=0, memMB=1024))
>>> info = sched.submit_dryrun(AppDef("train", [role]), {"partition": "cpu", "job_dir": "/jobs"})
>>> print(info.request.script.splitlines()[2])
#SBATCH --job-name=train-...:trainer:0

What each call runs (every one with a timeout, see :mod:`torchx_slurm.commands`):

* ``schedule``: ``sbatch --parsable`` with the script on stdin; the app id is the job
  id (the handle ``slurm://SESSION/JOBID``, as upstream TorchX's);
* ``describe``: ``squeue -j ID`` while Slurm still knows the job; once it has left
  the queue, ``sacct -j ID`` (or ``sacct -c``, the job-completion file, on clusters
  without accounting). One command per call in the common case. Per-replica exit
  codes and the restart count come from the job directory (the script records them),
  the AppDef from the file ``schedule`` kept there (:mod:`torchx.schedulers.appstore`);
* ``list``: ``squeue`` for the user's jobs; ``cancel``: ``scancel``;
* ``log_iter``: reads ``slurm-<id>-<role>-<k>.out``/``.err`` in the job's own directory
  ``.torchx-slurm/<id>/``, following them until the job ends when tailing.

A status call that times out raises ``TransientSchedulerError`` (retried by the
Runner), never a FAILED app.
"""

from __future__ import annotations

import getpass
import os
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

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
from torchx.schedulers.ids import make_app_id
from torchx.schedulers.polling import Polled, matching_lines
from torchx.schedulers.states import rollup
from torchx.specs import AppDef, AppDryRunInfo, AppState, CfgVal, ReplicaStatus, RoleStatus, runopts
from torchx.specs.errors import InvalidRunConfigException, SpecError
from torchx.workspace.dir_workspace import DirWorkspaceMixin
from torchx_slurm import commands, jobdir
from torchx_slurm.jobfiles import STATE_DIR, is_own_file, read_int, split_name
from torchx_slurm.jobfiles import exit_files as _exit_files
from torchx_slurm.options import (
    JOB_DIR_HELP,
    extra_sbatch_args,
    list_starttime,
    sbatch_values,
    slurm_runopts,
)
from torchx_slurm.parse import (
    SACCT_FIELDS,
    SEP,
    SQUEUE_FORMAT,
    JobRecord,
    app_state,
    parse_sacct_text,
    parse_squeue_text,
)

if TYPE_CHECKING:
    # the script generator is imported when an app is submitted, not to follow one
    from torchx_slurm.script import SlurmRequest

_JOB_ID = re.compile(r"\d+")
#: Run options that narrow ``list`` (each is also an ``squeue`` option of the same name).
LIST_FILTERS = ("partition", "account", "qos")
#: Seconds between two status calls of a followed log (``log_iter(should_tail=True)``).
STATUS_INTERVAL = 1.0
# a Slurm job's log file: sbatch's default (slurm-<id>.out) or a replica's (slurm-<id>-<role>-<k>.err)
_SLURM_LOG = re.compile(r"slurm-\d+(_\d+)?(-.*)?\.(out|err)")
# sdiag's count of the controller's messages still to send to slurmdbd
_DBD_QUEUE = re.compile(r"DBD Agent queue size:\s*(\d+)")


class SlurmScheduler(DirWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
    """TorchX apps on Slurm. Needs the Slurm client tools on PATH, no Python dependency.

    A workspace (``torchx run --workspace``) is copied into the ``job_dir`` run option's
    directory, which the job then runs in (the directory workspace of torchx-runner).

    Args:
        session_name: the session the handles carry (``slurm://SESSION/JOBID``)
    """

    missing_capabilities: ClassVar[Mapping[Capability, str]] = {
        Capability.LOG_TIME_WINDOW: "Slurm's output files hold no times: since/until are ignored",
        Capability.DELETE: "Slurm keeps every job in its records: delete only cancels",
    }

    def __init__(self, session_name: str, **kwargs: object) -> None:
        super().__init__("slurm", session_name)
        # whether plain sacct works here (None: not asked yet); without accounting the
        # job-completion file (sacct -c) is read instead
        self._accounting: bool | None = None
        # each partition's nodes, from sinfo (None: not asked yet; see _partition_nodes)
        self._nodes: dict[str, set[str]] | None = None

    def _run_opts(self) -> runopts:
        return slurm_runopts()

    def workspace_opts(self) -> runopts:
        """``job_dir``, as the directory workspace uses it, with what it also means here."""
        opts = super().workspace_opts()
        for name, opt in opts:
            if name == "job_dir":
                opt.help = JOB_DIR_HELP
        return opts

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
        from torchx_slurm.script import build_request

        submit_dir = os.getcwd()
        job_dir = cfg.get("job_dir")
        job_dir = os.path.abspath(os.path.expanduser(str(job_dir))) if job_dir else submit_dir
        values = sbatch_values(cfg)
        request = build_request(
            app,
            job_dir=job_dir,
            run_dir=submit_dir,
            session=self.session_name,
            job_name=make_app_id(app.name),
            job_opts=values["job"],
            group_opts=values["group"],
            extra=extra_sbatch_args(cfg),
            nomem=bool(cfg.get("nomem")),
            exclusive=bool(cfg.get("exclusive")),
            shared_logs=bool(cfg.get("shared_logs")),
        )
        if len(request.replicas) > 1 and not cfg.get("allow_pending"):
            self._check_nodes(app.name, len(request.replicas), cfg.get("partition"))
        return AppDryRunInfo(request, str)

    def _partition_nodes(self) -> dict[str, set[str]]:
        """Each partition's nodes (``sinfo -N``), the default one also under ``""``.

        Asked once per scheduler; empty when sinfo cannot be asked (no Slurm here: a dry
        run on a laptop), so the check it serves is then skipped.
        """
        if self._nodes is None:
            try:
                out = commands.run(["sinfo", "-h", "-N", "-o", "%N %P"], what="count the nodes")
            except SchedulerError:
                out = ""
            nodes: dict[str, set[str]] = {}
            for line in out.splitlines():
                node, _, partition = line.strip().partition(" ")
                if not node or not partition:
                    continue
                nodes.setdefault(partition.rstrip("*"), set()).add(node)
                if partition.endswith("*"):
                    nodes.setdefault("", set()).add(node)
            self._nodes = nodes
        return self._nodes

    def _check_nodes(self, app_name: str, replicas: int, partition: CfgVal) -> None:
        """Refuses an app that cannot start: more replicas than its partition has nodes.

        Each replica needs a node of its own (a heterogeneous job's groups never share
        one), so such an app would stay PENDING forever and ``--wait`` never return.
        """
        wanted = str(partition) if partition else ""
        nodes = self._partition_nodes().get(wanted)
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
            out = commands.run(
                ["sbatch", "--parsable"], input=request.script, what=f"submit {request.name}"
            )
        except Exception as e:
            if isinstance(e, TransientSchedulerError) and not isinstance(
                e, commands.SlurmCommandError
            ):
                # timed out: sbatch may have created the job; cancel it by its unique name
                try:
                    commands.run(
                        [
                            "scancel",
                            f"--name={request.name}:{first.role}:{first.replica_id}",
                            f"--user={getpass.getuser()}",
                        ],
                        what="cancel the job of a submit that timed out",
                    )
                except SchedulerError:
                    pass
                e = SchedulerError(f"{e}; any job it created was cancelled")
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
        job_id = out.strip().split(";", 1)[0]
        if not _JOB_ID.fullmatch(job_id):
            raise SchedulerError(f"sbatch answered {out.strip()!r}, not a job id")
        if app is not None:
            # kept with the job for describe; the job runs without it, so a failure to
            # write it (a full disk) costs describe its roles, never the submitted job
            try:
                appstore.save(
                    os.path.join(request.job_dir, STATE_DIR, job_id),
                    app,
                    # the job's directory, which its logs go to, as its script makes it
                    dir_mode=0o755 if request.shared_logs else 0o700,
                )
            except OSError as e:
                warnings.warn(
                    f"job {job_id} was submitted, but its AppDef could not be kept in "
                    f"{request.job_dir} ({e.strerror}): describe will show no roles",
                    stacklevel=2,
                )
        return job_id

    # -- following an app -------------------------------------------------------------------

    def _records(self, app_id: str) -> list[JobRecord]:
        """The app's job components: squeue while Slurm knows the job, else sacct.

        Only Slurm's "Invalid job id" (the job left the queue) sends the question to
        accounting; any other failure is raised with Slurm's message (transient when
        it may pass: controller, munge or slurmdbd down), never read as "no such job".
        """
        try:
            out = commands.run(
                ["squeue", "-h", "-t", "all", "-j", app_id, "-o", SQUEUE_FORMAT],
                what=f"status of job {app_id}",
            )
            records = _own(app_id, parse_squeue_text(out), self.session_name)
        except commands.SlurmCommandError as e:
            if not commands.is_invalid_job_id(e):
                raise
            # "Invalid job id specified": the job left the queue; ask accounting
            records = []
        if records:
            return records
        records = self._sacct(app_id)
        if not records:
            self._check_accounting_caught_up(app_id)
        return records

    def _sacct(self, app_id: str) -> list[JobRecord]:
        base = ["sacct", "-X", "-n", "--parsable2", f"--delimiter={SEP}", "-o", SACCT_FIELDS]
        what = f"status of job {app_id}"
        if self._accounting is not False:
            try:
                out = commands.run([*base, "-j", app_id], what=what)
                self._accounting = True
                return _own(app_id, parse_sacct_text(out), self.session_name)
            except commands.SlurmCommandError as e:
                if "accounting storage is disabled" not in e.stderr.lower():
                    raise
                self._accounting = False
        out = commands.run([*base, "-c", "-j", app_id], what=what)
        records = _own(app_id, parse_sacct_text(out), self.session_name)
        if len(records) == 1:
            self._check_not_a_component(app_id, records[0], base)
        return records

    def _check_accounting_caught_up(self, app_id: str) -> None:
        """Raises a transient error when accounting may not have recorded the job yet.

        A job that ends while slurmdbd is down (or restarting) leaves the queue, but
        reaches accounting only once the controller's queue of messages for slurmdbd
        is sent: until then neither squeue nor sacct knows it. ``sdiag`` says how many
        messages wait ("DBD Agent queue size"); with any waiting, "no such job" is not
        known yet. Asked only for a job no one knows, so it costs nothing otherwise.
        """
        if self._accounting is False:
            return
        try:
            out = commands.run(["sdiag"], what=f"status of job {app_id}")
        except SchedulerError as e:
            if isinstance(e, TransientSchedulerError):
                raise
            return  # no sdiag here, or it was refused: nothing more to learn
        match = _DBD_QUEUE.search(out)
        if match and int(match.group(1)) > 0:
            raise TransientSchedulerError(
                f"Slurm knows no job {app_id} yet: its controller has {match.group(1)} "
                "record(s) for accounting (slurmdbd) still to send, so a job that ended "
                "meanwhile may not be in sacct yet"
            )

    def _check_not_a_component(self, app_id: str, rec: JobRecord, base: list[str]) -> None:
        """Raises if ``app_id`` is a later component of a heterogeneous job (``sacct -c``).

        The job-completion file records each component under its own job id, with
        nothing sacct reads to tie it to its leader: a component's id would read as an
        app of one replica. The job script made the leader's state directory, so a job
        of ours that has one is a leader; otherwise the ids just before it (components
        have consecutive ids) tell: the first of the run of jobs of the same app is
        the leader.
        """
        parsed = split_name(rec.name)
        if parsed is None or not rec.work_dir:
            return
        if os.path.isdir(os.path.join(rec.work_dir, STATE_DIR, app_id)):
            return
        start = int(app_id)
        before = [str(i) for i in range(start - 1, max(start - 257, 0), -1)]
        if not before:
            return
        try:
            out = commands.run(
                [*base, "-c", "-j", ",".join(before)], what=f"the app of job {app_id}"
            )
        except commands.SlurmCommandError as e:
            if isinstance(e, TransientSchedulerError):
                raise
            return
        same = {r.job_id: r for r in parse_sacct_text(out) if split_name(r.name)}
        leader = None
        for job in before:  # walk back while the jobs are of the same app
            other = same.get(job)
            named = split_name(other.name) if other else None
            if named is None or named[0] != parsed[0]:
                break
            leader = job
        if leader is not None:
            offset = start - int(leader)
            raise _component_error(app_id, leader, offset, rec, self.session_name)

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        if not _JOB_ID.fullmatch(app_id):
            return None
        records = self._records(app_id)
        if not records:
            return None
        return self._response(app_id, records)

    def _response(self, app_id: str, records: list[JobRecord]) -> DescribeAppResponse:
        records = sorted(records, key=lambda r: r.offset)
        leader = records[0]
        # one component per replica: their states roll up (a failed one fails the app;
        # one still completing keeps it RUNNING)
        state = rollup(app_state(r.state) for r in records)
        job_dir = leader.work_dir
        state_dir = os.path.join(job_dir, STATE_DIR, app_id) if job_dir else ""
        restarts = read_int(os.path.join(state_dir, "restarts")) if state_dir else None
        if restarts is None:
            restarts = leader.restarts or 0
        # a pending job has not started its current run: exit codes on disk are of the
        # run before (a requeue), not of this one
        exits = (
            {}
            if state == AppState.PENDING
            else {(role, k): code for role, k, code in _exit_files(state_dir)}
        )
        roles: dict[str, RoleStatus] = {}
        app_name = ""
        for rec in records:
            parsed = split_name(rec.name)
            if parsed is None:
                app_name = app_name or rec.name
                role, replica_id = rec.name or "job", rec.offset
            else:
                app_name = app_name or parsed[0]
                _, role, replica_id = parsed
            exit_code = exits.pop((role, replica_id), None)
            if exit_code is not None:
                rstate = AppState.SUCCEEDED if exit_code == 0 else AppState.FAILED
            else:
                rstate = app_state(rec.state)
                if len(records) == 1:
                    exit_code = rec.exit_code
            roles.setdefault(role, RoleStatus(role)).replicas.append(
                ReplicaStatus(
                    id=replica_id,
                    state=rstate,
                    role=role,
                    hostname=rec.nodes,
                    exit_code=exit_code,
                )
            )
        # The job-completion file (sacct -c) has a record for the leader only: the
        # other replicas are the ones whose exit code the script recorded.
        for (role, replica_id), exit_code in exits.items():
            roles.setdefault(role, RoleStatus(role)).replicas.append(
                ReplicaStatus(
                    id=replica_id,
                    state=AppState.SUCCEEDED if exit_code == 0 else AppState.FAILED,
                    role=role,
                    hostname="",
                    exit_code=exit_code,
                )
            )
        for rs in roles.values():
            rs.replicas.sort(key=lambda r: r.id)
            if state == AppState.CANCELLED:
                # replicas stopped by the cancel exited non-zero: they were cancelled
                for rep in rs.replicas:
                    if rep.state != AppState.SUCCEEDED:
                        rep.state = AppState.CANCELLED
        msg = _message(state, leader, job_dir, app_id, roles.values(), state_dir)
        # the AppDef submitted (kept by schedule), else only the name Slurm has
        app = appstore.load(state_dir) if state_dir else None
        return DescribeAppResponse(
            app_id=app_id,
            state=state,
            num_restarts=restarts,
            msg=msg,
            roles_statuses=list(roles.values()),
            roles=list(app.roles) if app else [],
            metadata=dict(app.metadata) if app else {},
            name=app.name if app else app_name,
            ui_url=f"file://{job_dir}" if job_dir else None,
            start_time=_start_time(records, state),
            end_time=_end_time(records, state),
        )

    def _sacct_since(self, starttime: str, user: str, cfg: Mapping[str, CfgVal]) -> list[JobRecord]:
        """The user's jobs accounting knows since ``starttime`` (a ``sacct -S`` value)."""
        argv = [
            "sacct", "-X", "-n", "--parsable2", f"--delimiter={SEP}", "-o", SACCT_FIELDS,
            "-u", user, "-S", starttime,
        ]  # fmt: skip
        for option, flag in (("partition", "--partition"), ("account", "--accounts")):
            value = cfg.get(option)
            if value:
                argv.append(f"{flag}={value}")
        if cfg.get("qos"):
            argv.append(f"--qos={cfg['qos']}")
        what = "list the user's jobs that ended"
        if self._accounting is not False:
            try:
                out = commands.run(argv, what=what)
                self._accounting = True
                return parse_sacct_text(out)
            except commands.SlurmCommandError as e:
                if isinstance(e, TransientSchedulerError):
                    raise
                if "accounting storage is disabled" not in e.stderr.lower():
                    raise
                self._accounting = False
        # the job-completion file holds each component of a heterogeneous job as a job
        # of its own (consecutive ids): one per app, the first
        out = commands.run([*argv[:1], "-c", *argv[1:]], what=what)
        firsts: dict[str, JobRecord] = {}
        plain = []
        for rec in parse_sacct_text(out):
            parsed = split_name(rec.name)
            if parsed is None:
                plain.append(rec)
                continue
            have = firsts.get(parsed[0])
            if have is None or _sort_key(rec.job_id) < _sort_key(have.job_id):
                firsts[parsed[0]] = rec
        return [*plain, *firsts.values()]

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
        cfg = cfg or {}
        starttime = list_starttime(cfg.get("list_since"))
        user = getpass.getuser()
        argv = ["squeue", "-h", "-t", "all", "-u", user, "-o", SQUEUE_FORMAT]
        for option in LIST_FILTERS:
            value = cfg.get(option)
            if value:
                argv.append(f"--{option}={value}")
        out = commands.run(argv, what="list the user's jobs")
        leaders = _leaders(self._sacct_since(starttime, user, cfg))
        # the queue knows best what is still there
        leaders.update(_leaders(parse_squeue_text(out)))
        apps = []
        for job_id, rec in leaders.items():
            parsed = split_name(rec.name)
            state = app_state(rec.state)
            apps.append(
                ListAppResponse(
                    app_id=job_id,
                    state=state,
                    name=parsed[0] if parsed else rec.name,
                    start_time=_start_time([rec], state),
                    end_time=_end_time([rec], state),
                )
            )
        apps.sort(key=lambda a: _sort_key(a.app_id), reverse=True)
        return apps

    def _cancel_existing(self, app_id: str) -> None:
        try:
            commands.run(["scancel", app_id], what=f"cancel job {app_id}")
        except commands.SlurmCommandError as e:
            # a job that ended (or left) meanwhile stays as it ended: cancel is idempotent
            said = e.stderr.lower()
            if isinstance(e, TransientSchedulerError) or not (
                "already completing or completed" in said or "invalid job id" in said
            ):
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
        """Lines of replica ``k`` of ``role_name`` from the job directory.

        ``streams`` picks ``slurm-<id>-<role>-<k>.out`` (stdout) or ``.err`` (stderr);
        None or combined merges both (``torchx.schedulers.merge``: each file's lines in
        their order, the two files' in the order they are read). With ``should_tail``
        the files are followed until the job ends and both are read to their end. The
        result can be polled (``torchx.schedulers.polling.Polled``). ``since``/``until`` are not supported (Slurm's files hold no times).
        """
        desc = self.describe(app_id)
        if desc is None:
            raise SchedulerError(f"Slurm does not know job {app_id}")
        replicas = {r.role: [rep.id for rep in r.replicas] for r in desc.roles_statuses}
        if role_name not in replicas:
            raise SpecError(
                f"job {app_id} has no role {role_name!r}; its roles: {', '.join(replicas)}"
            )
        if k not in replicas[role_name]:
            raise SpecError(
                f"role {role_name!r} of job {app_id} has no replica {k}; "
                f"it has {', '.join(map(str, sorted(replicas[role_name])))}"
            )
        if not desc.ui_url:
            raise SchedulerError(f"Slurm does not say where job {app_id} runs (no work dir)")
        job_dir = desc.ui_url.removeprefix("file://")
        # the job's private copy, never what another user put in the (shared) job directory
        # under that name; a job submitted before the logs moved has them in the job dir
        name = f"slurm-{app_id}-{role_name}-{k}"
        base = os.path.join(job_dir, STATE_DIR, app_id, name)
        if not os.path.exists(base + ".out") and is_own_file(os.path.join(job_dir, name + ".out")):
            base = os.path.join(job_dir, name)
        paths = stream_files(base, streams)

        def has_ended() -> bool:
            try:
                now = self.describe(app_id)
            except TransientSchedulerError:
                return False
            return now is None or now.state.is_terminal()

        # asked at every idle poll of a followed file: Slurm is asked at most once per
        # STATUS_INTERVAL, so tailing never floods the controller
        done = EveryInterval(STATUS_INTERVAL, has_ended, ended=desc.state.is_terminal())

        def lines() -> Iterator[str]:
            # both files on this one thread, so the CLI follows many replicas on one thread
            merged = follow_files(paths, should_tail=should_tail, is_done=done)
            checked = _then_check(
                merged, paths, lambda: done.ended, job_dir, app_id, f"{role_name}/{k}"
            )
            return matching_lines(regex, checked) if regex else checked

        return Polled(lines)


def _leaders(records: Iterable[JobRecord]) -> dict[str, JobRecord]:
    """One record per job: each heterogeneous job's leader (its component 0)."""
    leaders: dict[str, JobRecord] = {}
    for rec in records:
        have = leaders.get(rec.job_id)
        if have is None or rec.offset < have.offset:
            leaders[rec.job_id] = rec
    return leaders


def _own(app_id: str, records: list[JobRecord], session: str) -> list[JobRecord]:
    """The records of job ``app_id``; raises if it is a component of another job.

    Asked for a later component of a heterogeneous job (``1235`` of ``1234+1``),
    squeue and sacct answer with that component under its leader's id: it is not an
    app of its own, and saying so beats "no such app".
    """
    own = [r for r in records if r.job_id == app_id]
    if not own and len(records) == 1 and records[0].offset:
        rec = records[0]
        raise _component_error(app_id, rec.job_id, rec.offset, rec, session)
    return own


def _component_error(
    app_id: str, leader: str, offset: int, rec: JobRecord, session: str
) -> SchedulerError:
    parsed = split_name(rec.name)
    what = f" (replica {parsed[1]}/{parsed[2]} of its app)" if parsed else ""
    return SchedulerError(
        f"Slurm job {app_id} is component {offset} of heterogeneous job {leader}{what}, "
        f"not an app of its own: use its app, slurm://{session}/{leader}"
    )


def _message(
    state: AppState,
    leader: JobRecord,
    job_dir: str,
    app_id: str,
    roles: Iterable[RoleStatus],
    state_dir: str,
) -> str:
    """Why the app is in ``state``: Slurm's reason, the exit code, what was not recorded,
    and Slurm's own errors from the job's output (``slurm-<id>.out``).

    A pending job's reason ("Resources", "Priority") says why it waits; once the job
    was cancelled it means nothing, and is not shown.
    """
    if state not in (AppState.PENDING, AppState.FAILED, AppState.UNKNOWN):
        return ""
    msg = leader.reason or ""
    if state != AppState.FAILED:
        return msg
    parts = [msg] if msg else []
    if leader.exit_code:
        parts = [
            f"{msg} (exit code {leader.exit_code})" if msg else f"exit code {leader.exit_code}"
        ]
    unrecorded = [
        f"{rs.role}/{rep.id}" for rs in roles for rep in rs.replicas if rep.exit_code is None
    ]
    if unrecorded and state_dir:
        parts.append(
            f"no exit code recorded for {', '.join(unrecorded)} in {state_dir} (the job "
            "directory full, not writable or deleted?)"
        )
    parts.extend(slurm_errors(job_dir, app_id))
    return "; ".join(parts)


def slurm_errors(job_dir: str, app_id: str, limit: int = 5) -> list[str]:
    """Slurm's (and the job script's) error lines in the job's ``.torchx-slurm/slurm-<id>.out``.

    That file holds what the batch script and its ``srun`` said, e.g. ``srun: error:
    Could not open stdout file ...`` when a replica could not start: the reason a
    replica has no log or no exit code. The last ``limit`` such lines.
    """
    if not job_dir:
        return []
    # the job's own directory (the old layout: the job directory), never a file another
    # user put there under that name
    paths = [os.path.join(job_dir, STATE_DIR, f"slurm-{app_id}.out")]
    paths.append(os.path.join(job_dir, f"slurm-{app_id}.out"))
    path = next((p for p in paths if is_own_file(p)), "")
    if not path:
        return []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 20)
    except OSError:
        return []
    found = [
        line.strip()
        for line in text.splitlines()
        if "error" in line.lower() or line.startswith("torchx:")
    ]
    return found[-limit:]


def _then_check(
    lines: Iterator[str],
    paths: list[str],
    ended: Callable[[], bool],
    job_dir: str,
    app_id: str,
    replica: str,
) -> Iterator[str]:
    """``lines``, then an error naming each log file of an ended job that does not exist.

    A replica that never started (its ``srun`` failed), or a job directory deleted or
    not writable, leaves no log file: that is said, with Slurm's own errors from
    ``slurm-<id>.out``, rather than an empty log. While the job has not ended a missing
    file is normal (not created yet).
    """
    yield from lines
    missing = [p for p in paths if not os.path.isfile(p)]
    if not missing or not ended():
        return
    said = slurm_errors(job_dir, app_id)
    raise SchedulerError(
        f"no log of replica {replica} of job {app_id}: {' and '.join(missing)} "
        f"{'is' if len(missing) == 1 else 'are'} missing"
        + (f"; Slurm said: {' | '.join(said)}" if said else "")
    )


def _sort_key(app_id: str) -> tuple[int, str]:
    head = app_id.split("_", 1)[0]
    return (int(head) if head.isdigit() else -1, app_id)


def create_scheduler(session_name: str, **kwargs: Any) -> SlurmScheduler:
    """The factory the plugin registry calls for ``slurm``."""
    return SlurmScheduler(session_name, **kwargs)


def _start_time(records: Iterable[JobRecord], state: AppState) -> float | None:
    """When the job's first component started; None while pending (Slurm's start time of
    a pending job is the time it expects, not one that happened)."""
    if state in (AppState.PENDING, AppState.SUBMITTED, AppState.UNSUBMITTED):
        return None
    times = [r.start_time for r in records if r.start_time is not None]
    return min(times) if times else None


def _end_time(records: Iterable[JobRecord], state: AppState) -> float | None:
    """When the job's last component ended; None until the app has ended (the end time of
    a running job is its time limit's, not one that happened)."""
    if not state.is_terminal():
        return None
    times = [r.end_time for r in records if r.end_time is not None]
    return max(times) if times else None
