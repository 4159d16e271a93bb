"""Every call to Slurm, in one place: which tool runs with what, and what its failures mean.

The scheduler (:mod:`torchx_slurm.scheduler`) asks :class:`SlurmBackend`; it runs the
Slurm tools through :mod:`torchx_slurm.commands` (each with a timeout, failures as
one-line errors, transient when the controller, slurmdbd or munge could not be
reached) and keeps what it learnt about the cluster for the scheduler's lifetime:
whether accounting works (else the job-completion file, ``sacct -c``, is read) and
each partition's nodes. What it answers is parsed (:mod:`torchx_slurm.parse`), never
interpreted: states and responses are :mod:`torchx_slurm.status`'s job.

Tests give the scheduler another backend (``create_scheduler(session, backend=...)``);
the unit tests keep this one and put scripted Slurm tools on ``PATH``.
"""

from __future__ import annotations

import getpass
import os
import re
from collections.abc import Mapping

from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError
from torchx.specs import CfgVal
from torchx_slurm import commands
from torchx_slurm.jobfiles import STATE_DIR, split_name
from torchx_slurm.parse import (
    SACCT_FIELDS,
    SEP,
    SQUEUE_FORMAT,
    JobRecord,
    parse_sacct_text,
    parse_squeue_text,
)
from torchx_slurm.status import component_error, own_records, sort_key

_JOB_ID = re.compile(r"\d+")
#: Run options that narrow ``list`` (each is also an ``squeue`` option of the same name).
LIST_FILTERS = ("partition", "account", "qos")
# sdiag's count of the controller's messages still to send to slurmdbd
_DBD_QUEUE = re.compile(r"DBD Agent queue size:\s*(\d+)")
_SACCT = ["sacct", "-X", "-n", "--parsable2", f"--delimiter={SEP}", "-o", SACCT_FIELDS]


class SlurmBackend:
    """The Slurm tools, as the scheduler uses them (see the module docstring)."""

    def __init__(self) -> None:
        # whether plain sacct works here (None: not asked yet); without accounting the
        # job-completion file (sacct -c) is read instead
        self._accounting: bool | None = None
        # each partition's nodes, from sinfo (None: not asked yet; see partition_nodes)
        self._nodes: dict[str, set[str]] | None = None

    def close(self) -> None:
        """Nothing to let go of: every call is a process that has ended."""

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        """Every failure of a Slurm tool is raised in the contract's terms already."""
        return e if isinstance(e, SchedulerError) else None

    # -- submitting -----------------------------------------------------------------------

    def partition_nodes(self) -> dict[str, set[str]]:
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

    def sbatch(self, script: str, name: str, first_component: str) -> str:
        """Submits ``script`` with ``sbatch --parsable``; returns the job id.

        If sbatch does not answer in time, any job it may have created under its first
        component's unique name (``first_component``) is cancelled before the error is
        raised. ``name`` is the app's, for the messages.
        """
        try:
            out = commands.run(["sbatch", "--parsable"], input=script, what=f"submit {name}")
        except TransientSchedulerError as e:
            if isinstance(e, commands.SlurmCommandError):
                raise
            # timed out: sbatch may have created the job; cancel it by its unique name
            try:
                commands.run(
                    ["scancel", f"--name={first_component}", f"--user={getpass.getuser()}"],
                    what="cancel the job of a submit that timed out",
                )
            except SchedulerError:
                pass
            raise SchedulerError(f"{e}; any job it created was cancelled") from None
        job_id = out.strip().split(";", 1)[0]
        if not _JOB_ID.fullmatch(job_id):
            raise SchedulerError(f"sbatch answered {out.strip()!r}, not a job id")
        return job_id

    # -- following an app -----------------------------------------------------------------

    def records(self, app_id: str, session: str) -> list[JobRecord]:
        """The app's job components: squeue while Slurm knows the job, else sacct.

        Only Slurm's "Invalid job id" (the job left the queue) sends the question to
        accounting; any other failure is raised with Slurm's message (transient when
        it may pass: controller, munge or slurmdbd down), never read as "no such job".
        ``session`` is the handles', for the error naming a component's app.
        """
        try:
            out = commands.run(
                ["squeue", "-h", "-t", "all", "-j", app_id, "-o", SQUEUE_FORMAT],
                what=f"status of job {app_id}",
            )
            records = own_records(app_id, parse_squeue_text(out), session)
        except commands.SlurmCommandError as e:
            if not commands.is_invalid_job_id(e):
                raise
            # "Invalid job id specified": the job left the queue; ask accounting
            records = []
        if records:
            return records
        records = self._sacct(app_id, session)
        if not records:
            self._check_accounting_caught_up(app_id)
        return records

    def _sacct(self, app_id: str, session: str) -> list[JobRecord]:
        what = f"status of job {app_id}"
        if self._accounting is not False:
            try:
                out = commands.run([*_SACCT, "-j", app_id], what=what)
                self._accounting = True
                return own_records(app_id, parse_sacct_text(out), session)
            except commands.SlurmCommandError as e:
                if "accounting storage is disabled" not in e.stderr.lower():
                    raise
                self._accounting = False
        out = commands.run([*_SACCT, "-c", "-j", app_id], what=what)
        records = own_records(app_id, parse_sacct_text(out), session)
        if len(records) == 1:
            self._check_not_a_component(app_id, records[0], session)
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

    def _check_not_a_component(self, app_id: str, rec: JobRecord, session: str) -> None:
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
                [*_SACCT, "-c", "-j", ",".join(before)], what=f"the app of job {app_id}"
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
            raise component_error(app_id, leader, offset, rec, session)

    def queue(self, user: str, cfg: Mapping[str, CfgVal]) -> list[JobRecord]:
        """The user's jobs in the queue (``squeue``), narrowed by :data:`LIST_FILTERS`."""
        argv = ["squeue", "-h", "-t", "all", "-u", user, "-o", SQUEUE_FORMAT]
        for option in LIST_FILTERS:
            value = cfg.get(option)
            if value:
                argv.append(f"--{option}={value}")
        return parse_squeue_text(commands.run(argv, what="list the user's jobs"))

    def ended_since(self, starttime: str, user: str, cfg: Mapping[str, CfgVal]) -> list[JobRecord]:
        """The user's jobs accounting knows since ``starttime`` (a ``sacct -S`` value)."""
        argv = [*_SACCT, "-u", user, "-S", starttime]
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
            if have is None or sort_key(rec.job_id) < sort_key(have.job_id):
                firsts[parsed[0]] = rec
        return [*plain, *firsts.values()]

    def scancel(self, app_id: str) -> None:
        """Cancels job ``app_id``; one that ended (or left) meanwhile stays as it ended."""
        try:
            commands.run(["scancel", app_id], what=f"cancel job {app_id}")
        except commands.SlurmCommandError as e:
            said = e.stderr.lower()
            if isinstance(e, TransientSchedulerError) or not (
                "already completing or completed" in said or "invalid job id" in said
            ):
                raise
