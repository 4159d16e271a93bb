"""The ``slurm`` scheduler's run options, declared once: :class:`SlurmOpts`.

The model of how a plugin declares its options: one :class:`StructuredOpts` class whose
fields carry each option's type, default, help and check (see
:mod:`torchx.specs.structured_opts`). ``run_opts()``, ``torchx runopts slurm``, the docs,
``.torchxconfig``, submitting (``SlurmOpts.of(cfg)``) and ``list``
(``SlurmOpts.given(cfg)``) all read it.

The option names are upstream TorchX's (``partition``, ``time``, ``account``, ``qos``,
``constraint``, ``comment``, ``mail-user``, ``mail-type``, ``job_dir``, ``nomem``), so
an existing ``.torchxconfig`` ``[slurm]`` section works unchanged; ``exclusive`` and
``sbatch_args`` are ours. Values end up in ``#SBATCH`` lines, which sbatch reads
itself (not a shell), so each value is checked by its field and a bad one is refused
with one line naming the option, the value and what would be right::

    >>> cfg = SlurmOpts.as_runopts().resolve({"partition": "gpu", "time": "1:30:00"})
    >>> SlurmOpts.from_cfg(cfg).sbatch_values()["group"]
    [('partition', 'gpu'), ('time', '1:30:00')]
    >>> SlurmOpts.from_cfg({"time": "soon"})
    Traceback (most recent call last):
     ...
    torchx.specs.errors.InvalidRunConfigException: run option 'time'='soon' is not a Slurm time limit: use MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from torchx.specs.errors import InvalidRunConfigException
from torchx.specs.options import CfgVal
from torchx.specs.structured_opts import StructuredOpts, opt

#: Options given once, to the first group (Slurm applies them to the whole job).
JOB_OPTIONS = ("comment", "mail-user", "mail-type")
#: Options repeated in every heterogeneous group (each group is scheduled on its own).
GROUP_OPTIONS = ("partition", "time", "account", "qos", "constraint")

#: Help of ``job_dir`` (also given where the directory workspace declares the option).
JOB_DIR_HELP = (
    "the job's directory: logs, exit codes and, with --workspace, the workspace copy "
    "(then it must not exist yet); default: the current directory"
)

MAIL_TYPES = frozenset(
    {
        "NONE",
        "BEGIN",
        "END",
        "FAIL",
        "REQUEUE",
        "ALL",
        "INVALID_DEPEND",
        "STAGE_OUT",
        "TIME_LIMIT",
        "TIME_LIMIT_90",
        "TIME_LIMIT_80",
        "TIME_LIMIT_50",
        "ARRAY_TASKS",
    }
)

# sbatch's --time forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (and no limit)
_TIME = re.compile(r"\d+(:\d+){0,2}|\d+-\d+(:\d+){0,2}|UNLIMITED|INFINITE|infinite|unlimited")
# what an #SBATCH value may hold: printable, no quotes or backslashes (sbatch's own
# directive parser treats them specially), no leading '-' (it would read as an option)
_SAFE_VALUE = re.compile(r"[^\s\"'\\\-\x00-\x1f\x7f][^\"'\\\x00-\x1f\x7f]*")
_DURATION = re.compile(r"(\d{1,6})\s*([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?)?")
#: How far back ``list`` looks for jobs that ended, unless ``list_since`` says otherwise.
DEFAULT_LIST_SINCE = "1d"
_SBATCH_ARG = re.compile(r"--([a-z][a-z0-9-]*)(=(.*))?", re.DOTALL)

#: sbatch options the scheduler sets itself; ``sbatch_args`` may not override them.
RESERVED_SBATCH = frozenset(
    {
        "job-name",
        "chdir",
        "output",
        "error",
        "input",
        "wrap",
        "parsable",
        "hetjob",
        "het-group",
        "nodes",
        "ntasks",
        "ntasks-per-node",
        "cpus-per-task",
        "mem",
        "gpus-per-node",
        "array",
        "wait",
        "test-only",
        *GROUP_OPTIONS,
        *JOB_OPTIONS,
        "exclusive",
        "requeue",
        "no-requeue",
    }
)


#: sbatch's long options (Slurm 22.05 ``sbatch --help``): a name given in full is that
#: option even where it also begins a longer one (``--gpus`` is not ``--gpus-per-node``).
SBATCH_LONG_OPTIONS = frozenset(
    """
    account array bb bbf begin chdir cluster-constraint clusters comment constraint
    container contiguous core-spec cores-per-socket cpu-freq cpus-per-gpu cpus-per-task
    deadline delay-boot dependency distribution error exclude exclusive export export-
    file extra-node-info get-user-env gid gpu-bind gpu-freq gpus gpus-per-node gpus-per-
    socket gpus-per-task gres gres-flags help hold ignore-pbs input job-name licenses
    mail-type mail-user mcs-label mem mem-per-cpu mem-per-gpu mincpus nice no-kill no-
    requeue nodefile nodelist nodes ntasks ntasks-per-core ntasks-per-node ntasks-per-
    socket output overcommit oversubscribe parsable partition power priority profile
    propagate qos quiet reboot requeue reservation signal sockets-per-node spread-job
    switches thread-spec threads-per-core time time-min tmp uid usage use-min-nodes
    verbose version wait wckey wrap
    """.split()  # noqa: SIM905 (one list to read, as sbatch --help prints it)
)


def reserved_meaning(name: str) -> str | None:
    """The reserved sbatch option that ``--name`` would be, as sbatch reads it; else None.

    sbatch reads its options with getopt_long, which takes any unambiguous beginning of a
    long option for the option (``--chd`` is ``--chdir``) and refuses an ambiguous one. A
    name that is not an option in full but begins a reserved one is therefore refused:
    sbatch would either read it as that option or fail on it.

    >>> reserved_meaning("chd"), reserved_meaning("gpus"), reserved_meaning("reservation")
    ('chdir', None, None)
    """
    if name in RESERVED_SBATCH:
        return name
    if name in SBATCH_LONG_OPTIONS:
        return None
    begun = sorted(r for r in RESERVED_SBATCH if r.startswith(name))
    return begun[0] if begun else None


def _check_value(key: str, value: str) -> str:
    if not _SAFE_VALUE.fullmatch(value):
        raise InvalidRunConfigException(
            f"run option {key!r}={value!r} cannot be passed to sbatch: use a non-empty value "
            "without quotes, backslashes, control characters or a leading '-'"
        )
    return value


def check_time(value: str) -> str:
    """``value`` if it is a Slurm time limit, else one clear error."""
    if not _TIME.fullmatch(value):
        raise InvalidRunConfigException(
            f"run option 'time'={value!r} is not a Slurm time limit: use MINUTES, MM:SS, "
            "HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED"
        )
    return value


def check_mail_type(value: str) -> str:
    """``value`` if every comma-separated part is a Slurm mail type, else one clear error."""
    for part in value.split(","):
        if part.strip().upper() not in MAIL_TYPES:
            raise InvalidRunConfigException(
                f"run option 'mail-type'={value!r}: {part!r} is not a Slurm mail type; use "
                f"one or more (comma-separated) of {', '.join(sorted(MAIL_TYPES))}"
            )
    return ",".join(p.strip().upper() for p in value.split(","))


def check_sbatch_arg(arg: str) -> str:
    """One ``--NAME[=VALUE]`` of ``sbatch_args`` if sbatch may be given it, else one clear error."""
    match = _SBATCH_ARG.fullmatch(arg)
    if not match:
        raise InvalidRunConfigException(
            f"run option 'sbatch_args': {arg!r} is not a long sbatch option: write it as "
            "--NAME or --NAME=VALUE, e.g. --reservation=maint"
        )
    name, value = match.group(1), match.group(3)
    reserved = reserved_meaning(name)
    if reserved is not None:
        said = f"--{name}" if name == reserved else f"--{name} (sbatch reads it as --{reserved})"
        raise InvalidRunConfigException(
            f"run option 'sbatch_args': {said} is set by the slurm scheduler itself; "
            + (
                f"use the run option '{reserved}' instead"
                if reserved in (*GROUP_OPTIONS, *JOB_OPTIONS, "exclusive")
                else "leave it out"
            )
        )
    if value is not None:
        _check_value(f"sbatch_args --{name}", value)
    return arg


def list_starttime(value: CfgVal | None) -> str:
    """``sacct --starttime`` of the run option ``list_since`` (a duration or a date).

    >>> list_starttime("2h"), list_starttime(None), list_starttime("2026-01-31T08:00")
    ('now-2hours', 'now-1days', '2026-01-31T08:00')
    """
    text = str(value).strip() if value is not None and value != "" else DEFAULT_LIST_SINCE
    duration = _DURATION.fullmatch(text)
    if duration:
        return f"now-{int(duration.group(1))}{_UNITS[duration.group(2)]}"
    if _DATE.fullmatch(text):
        return text
    raise InvalidRunConfigException(
        f"run option 'list_since'={text!r} is not a duration or a date: use e.g. 30m, 2h, 7d, "
        "2w or 2026-01-31 or 2026-01-31T08:00"
    )


def _sbatch_value(key: str) -> Callable[[str], str]:
    """The check of an option passed to sbatch as it is ("" is "not set")."""
    return lambda value: _check_value(key, value) if value else value


def _checked_time(value: str) -> str:
    return check_time(value) if value else value


def _checked_mail_type(value: str) -> str:
    return check_mail_type(value) if value else value


def _checked_parallelism(value: int | None) -> int | None:
    if value is not None and (isinstance(value, bool) or value < 1):
        raise InvalidRunConfigException(
            f"run option 'array_parallelism'={value!r} must be a whole number of at least 1"
        )
    return value


def check_sbatch_args(args: list[str]) -> list[str]:
    """Every ``--NAME[=VALUE]`` of ``sbatch_args`` checked (:func:`check_sbatch_arg`)."""
    return [check_sbatch_arg(a) for a in args]


@dataclass(frozen=True, kw_only=True)
class SlurmOpts(StructuredOpts):
    """The run options of the ``slurm`` scheduler (see ``torchx runopts slurm``), each checked.

    The model of a plugin's options: every option declared once, here, with its help
    and check (see :mod:`torchx.specs.structured_opts`). An empty string is "not set".
    """

    partition: str | None = opt(
        help="the partition to run the job in (sbatch --partition)",
        check=_sbatch_value("partition"),
    )
    time: str | None = opt(
        help="the job's time limit: MINUTES, HH:MM:SS or D-HH:MM:SS (sbatch --time)",
        check=_checked_time,
    )
    account: str | None = opt(
        help="the account to charge the job to (sbatch --account)",
        check=_sbatch_value("account"),
    )
    qos: str | None = opt(
        help="the quality of service of the job (sbatch --qos)", check=_sbatch_value("qos")
    )
    constraint: str | None = opt(
        help="node features the job needs, e.g. 'a100&ib' (sbatch --constraint)",
        check=_sbatch_value("constraint"),
    )
    comment: str | None = opt(
        help="a comment stored with the job (sbatch --comment)", check=_sbatch_value("comment")
    )
    mail_user: str | None = opt(
        name="mail-user",
        help="who gets mail about the job (sbatch --mail-user)",
        check=_sbatch_value("mail-user"),
    )
    mail_type: str | None = opt(
        name="mail-type",
        help="which events send mail, e.g. END,FAIL (sbatch --mail-type)",
        check=_checked_mail_type,
    )
    job_dir: str | None = opt(help=JOB_DIR_HELP)
    nomem: bool = opt(
        False, help="do not ask for the roles' memory (for clusters that refuse --mem)"
    )
    exclusive: bool = opt(
        False,
        help="give each replica its node(s) alone, shared with no other job (sbatch --exclusive)",
    )
    shared_logs: bool = opt(
        False, help="let other users read the job's logs and exit codes (default: only you can)"
    )
    list_since: str | None = opt(
        help="list only: also show the jobs that ended within this time, from accounting "
        "(sacct): a duration such as 30m, 2h, 7d, or a date YYYY-MM-DD[THH:MM[:SS]]; "
        f"default {DEFAULT_LIST_SINCE}",
    )
    allow_pending: bool = opt(
        False,
        help="submit even an app of more replicas than the partition has nodes (sinfo), "
        "which stays PENDING until nodes are added",
    )
    array_parallelism: int | None = opt(
        help="run the app's one role as one job array of its replicas (sbatch "
        "--array=0-(N-1)%K), at most this many at once; each task is one replica, "
        "independent of the others",
        check=_checked_parallelism,
    )
    sbatch_args: list[str] = opt(
        [],
        help="more sbatch options for every group, e.g. --reservation=maint (--NAME[=VALUE])",
        check=check_sbatch_args,
    )

    def sbatch_values(self) -> dict[str, list[tuple[str, str]]]:
        """The sbatch options set: ``{"job": [...], "group": [...]}``.

        ``job`` options go to the first group only, ``group`` options to every group;
        each is ``(sbatch option name, value)``, in a fixed order.
        """
        return {
            "job": [(k, v) for k in JOB_OPTIONS if (v := self[k])],
            "group": [(k, v) for k in GROUP_OPTIONS if (v := self[k])],
        }

    def job_directory(self, submit_dir: str) -> str:
        """The job's directory: ``job_dir`` made absolute, else ``submit_dir``."""
        job_dir = self.job_dir
        return os.path.abspath(os.path.expanduser(job_dir)) if job_dir else submit_dir
