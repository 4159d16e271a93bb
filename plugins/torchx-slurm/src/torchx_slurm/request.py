"""The sbatch script of an app: one heterogeneous group per replica, one ``srun`` per group.

:func:`build_request` turns an AppDef (and the checked run options) into a
:class:`SlurmRequest`, whose ``script`` is exactly what ``sbatch`` is given and what
``torchx run --dryrun`` prints. It is a pure function of its inputs: nothing is run,
nothing is written.

The script, group by group (each group gets one node, so each replica its own)::

    #!/bin/bash
    #SBATCH --job-name=APP:ROLE:0     every group is named app:role:replica, so squeue
    #SBATCH --chdir=JOB_DIR           and sacct tell the replicas apart
    #SBATCH --nodes=1 ...             resources, partition, time, ... of the group
    #SBATCH hetjob
    #SBATCH --job-name=APP:ROLE:1
    ...
    { export TORCHX_ROLE_NAME=ROLE TORCHX_REPLICA_ID=0 KEY=VALUE ...
      _run ROLE 0 --het-group=0 -- CMD ARGS; } &

Each replica's environment is exported by the script, never put on a command line
(``ps`` shows those to every user), and srun runs the entrypoint as the program.

Everything the job writes is in its own directory ``.torchx-slurm/<job id>/`` of the
job directory: each replica's stdout and stderr (``slurm-<job id>-<role>-<replica>.out``
and ``.err``, upstream TorchX's names, also linked from the job directory), its exit
code (``<role>.<replica>.exit``) and the restart count (``restarts``); the batch
script's own output is ``.torchx-slurm/slurm-<job id>.out``. A rerun (a retry) first
renames the log files of the attempt before to ``slurm-<job id>-<role>-<replica>.try<N>.out``
and ``.err`` there (N counting attempts from 0), so every attempt's log is kept.
``.torchx-slurm`` must be
a directory of the user's that no one else can write (the scheduler makes or checks it
at submit, the script checks again when it starts), so another user who can write a
shared job directory has nowhere to plant a link that the job would write through.
Unless the run option ``shared_logs`` is set, logs and state are private (directories
0700, the script's own files 0600); the replicas keep the submitter's umask. The first replica to fail stops the others and the script exits
with its code (Slurm then marks the job FAILED); when the app has retries left, the
script first asks Slurm to requeue the job (``scontrol requeue``), which reruns it
with ``SLURM_RESTART_COUNT`` one higher.

Quoting: every string that comes from the user (entrypoint, args, env values, paths,
names) is quoted for the shell by :func:`shell_quote` (``$'...'`` for control
characters: sbatch refuses a script holding a CR LF), so an argument like
``"; rm -rf ~`` reaches the program verbatim. In ``#SBATCH`` lines, which sbatch reads
itself, a value with blanks, ``#`` (where sbatch's comments start), quotes or
backslashes is double-quoted and escaped (:func:`sbatch_line`); a ``%`` in a file name
given to srun is escaped (srun would expand ``%j``). The only expansions are the ones
the scheduler puts there: the ``app_id`` macro becomes the job id (``"$_job"``), the
rank-0 host is computed once by the script into ``TORCHX_RANK0_HOST`` (the variable
:data:`RANK0_ENV` that ``macros.rank0_env`` names), and a free port of that node, the
job's own, into ``TORCHX_RDZV_PORT`` (:data:`RDZV_PORT_ENV`, where ``dist.ddp`` hosts
its rendezvous).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any

import attrs

from torchx.schedulers.helpers.scriptroles import check_name, check_roles
from torchx.specs.api import AppDef, Role
from torchx.specs.errors import InvalidRunConfigException, SpecError
from torchx.specs.templating import macros
from torchx_slurm.jobdir import STATE_DIR

#: The environment variable holding the rank-0 replica's host (``macros.rank0_env``).
RANK0_ENV = "TORCHX_RANK0_HOST"
#: The environment variable holding the job's own free port on rank 0's node, which
#: ``dist.ddp`` uses for its rendezvous unless given ``--rdzv_port``.
RDZV_PORT_ENV = "TORCHX_RDZV_PORT"
# prints a free port of this host, outside the range of outgoing connections' ports
# (32768 and up), so none of those takes it before the rendezvous listens there
_FREE_PORT = (
    "import random, socket\n"
    "for port in random.sample(range(20000, 32000), 64):\n"
    "    try:\n"
    '        socket.socket().bind(("", port))\n'
    "    except OSError:\n"
    "        continue\n"
    "    print(port)\n"
    "    break"
)
#: The format version of the generated script (its first comment line says it).
SCRIPT_VERSION = 2
#: The exit code of a job whose directory could not be written (no log, no exit code).
UNWRITABLE_EXIT = 74  # EX_IOERR of sysexits.h

# Names that end up in file names and job names: kept simple so no quoting is needed.
_NAMES = "Slurm jobs and log files"
_BAD_PATH = re.compile(r"[\"'\\\x00-\x1f\x7f]")
# The app id is only known once sbatch has answered: the macro becomes this marker,
# which is then replaced by the shell's "$_job" outside the quoted text.
_APP_ID_MARK = "\x00app_id\x00"
# An array task's replica id is known only when it runs: "$_task" (SLURM_ARRAY_TASK_ID).
REPLICA_ID_MARK = "\x00replica_id\x00"
_MARKS = re.compile("(\x00app_id\x00|\x00replica_id\x00)")
_MARK_VALUE = {_APP_ID_MARK: '"$_job"', REPLICA_ID_MARK: '"$_task"'}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# what makes sbatch's own reader of #SBATCH lines split, cut or unescape a value
_SBATCH_SPECIAL = re.compile(r"[\s#\"\\]")


def shell_quote(text: str) -> str:
    r"""``text`` quoted for bash, verbatim; control characters as ``$'\xHH'`` escapes.

    sbatch refuses a script holding a CR LF ("DOS line breaks"), so a control character
    never appears in the script as itself:

    >>> print(shell_quote("a b"), shell_quote("it's\r\n"))
    'a b' $'it\'s\x0d\x0a'
    """
    if not _CONTROL.search(text):
        return shlex.quote(text)
    return "$'" + "".join(_ANSI_C.get(c) or _escape_control(c) for c in text) + "'"


# inside $'...': a backslash and a quote are escaped, every other character but the
# control characters stands for itself
_ANSI_C = {"\\": "\\\\", "'": "\\'"}


def _escape_control(c: str) -> str:
    return f"\\x{ord(c):02x}" if _CONTROL.match(c) else c


_quote = shell_quote


class InvalidAppException(SpecError):
    """The AppDef cannot run on Slurm as it is (the message says what to change)."""


@attrs.define
class SlurmReplica:
    """One replica: its heterogeneous group, where it runs and what it runs (argv)."""

    role: str
    replica_id: int
    group: int
    cwd: str
    env: dict[str, str]
    argv: list[str]
    sbatch: list[str]


@attrs.define
class SlurmRequest:
    """What ``submit_dryrun`` returns and ``schedule`` submits: the script and its parts.

    ``script`` is the text given to ``sbatch --parsable`` on stdin; the other fields
    are the same information, structured, for tests and tools.
    """

    name: str
    job_dir: str
    script: str
    replicas: list[SlurmReplica]
    max_retries: int = 0
    shared_logs: bool = False
    #: ``--array`` of a role run as a job array (``0-9%2``), else None
    array: str | None = None

    def __str__(self) -> str:
        return self.script


def sbatch_line(option: str, value: str | None = None) -> str:
    """``#SBATCH --option=value``, the value as sbatch's own reader of these lines reads it.

    That reader splits at blanks, takes ``#`` for the start of a comment (silently
    dropping the rest: ``--partition=debug#nope`` would run in ``debug``), and
    unescapes quotes and backslashes; such a value is double-quoted and escaped:

    >>> print(sbatch_line("comment", "hello#world"))
    #SBATCH --comment="hello#world"
    """
    if value is None:
        return f"#SBATCH --{option}"
    if _SBATCH_SPECIAL.search(value):
        value = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"#SBATCH --{option}={value}"


def srun_file_name(path: str) -> str:
    """``path`` as srun reads a file name: a ``%`` escaped (srun would expand ``%j``).

    A backslash anywhere in the name turns srun's expansion off and is dropped (job
    directories holding one are refused)."""
    return path.replace("%", "\\%")


def quote_with_marks(arg: str) -> str:
    """Shell-quotes ``arg``, turning the app id marker into the job id ("$_job") and an
    array task's replica id marker into its index ("$_task")."""
    if "\x00" not in arg:
        return _quote(arg)
    parts = _MARKS.split(arg)
    return "".join(
        _MARK_VALUE[part] if part in _MARK_VALUE else (_quote(part) if part else "")
        for part in parts
    )


_quote_with_app_id = quote_with_marks


def group_sbatch(
    role: Role,
    *,
    group_opts: Sequence[tuple[str, str]],
    extra: Sequence[str],
    nomem: bool,
    exclusive: bool,
) -> list[str]:
    """The ``#SBATCH`` lines of one replica's group (without its job name)."""
    res = role.resource
    lines = ["#SBATCH --nodes=1", "#SBATCH --ntasks-per-node=1"]
    if res.cpu > 0:
        lines.append(f"#SBATCH --cpus-per-task={res.cpu}")
    if res.memMB > 0 and not nomem:
        lines.append(f"#SBATCH --mem={res.memMB}M")
    if res.gpu > 0:
        lines.append(f"#SBATCH --gpus-per-node={res.gpu}")
    if exclusive:
        lines.append("#SBATCH --exclusive")
    lines.extend(sbatch_line(k, v) for k, v in group_opts)
    for arg in extra:
        name, sep, value = arg[2:].partition("=")
        lines.append(sbatch_line(name, value if sep else None))
    return lines


def build_request(
    app: AppDef,
    *,
    job_dir: str,
    job_name: str,
    job_opts: Sequence[tuple[str, str]] = (),
    group_opts: Sequence[tuple[str, str]] = (),
    extra: Sequence[str] = (),
    nomem: bool = False,
    exclusive: bool = False,
    shared_logs: bool = False,
    run_dir: str | None = None,
    is_dir: Any = None,
) -> SlurmRequest:
    """The sbatch request of ``app``: one heterogeneous group per replica.

    ``job_dir`` is absolute: the job's working directory, where logs and state go.
    ``job_name`` (unique, checked) prefixes every group's Slurm job name. ``is_dir``
    (a callable, default :func:`os.path.isdir`) tells whether a role's image is a
    directory to run in; otherwise replicas run in ``run_dir`` (the directory the app
    was submitted from, so relative paths work as typed; default ``job_dir``).
    ``shared_logs``: logs and state as readable as the user's files usually are (else
    only by the user). A job array is :func:`torchx_slurm.array.build_array`'s.
    """
    import os

    if is_dir is None:
        is_dir = os.path.isdir
    check_app(app, job_name, job_dir)
    # srun's --chdir is shell-quoted: any absolute path will do
    default_cwd = run_dir if run_dir and os.path.isabs(run_dir) else job_dir
    replicas: list[SlurmReplica] = []
    max_retries = 0
    group = 0
    for role in app.roles:
        max_retries = max(max_retries, role.max_retries)
        cwd = role_cwd(role.image, job_dir, default_cwd, is_dir)
        sbatch = group_sbatch(
            role, group_opts=group_opts, extra=extra, nomem=nomem, exclusive=exclusive
        )
        for replica_id in range(role.num_replicas):
            values = macros.Values(
                img_root=cwd, app_id=_APP_ID_MARK, replica_id=str(replica_id), rank0_env=RANK0_ENV
            )
            sub = values.substitute
            replicas.append(
                SlurmReplica(
                    role=role.name,
                    replica_id=replica_id,
                    group=group,
                    cwd=cwd,
                    env={k: sub(v) for k, v in role.env.items()},
                    argv=[role.entrypoint, *(sub(a) for a in role.args)],
                    sbatch=sbatch,
                )
            )
            group += 1
    script = _render(
        replicas,
        app_name=app.name,
        job_dir=job_dir,
        job_name=job_name,
        job_opts=job_opts,
        max_retries=max_retries,
        shared_logs=shared_logs,
    )
    return SlurmRequest(
        name=job_name,
        job_dir=job_dir,
        script=script,
        replicas=replicas,
        max_retries=max_retries,
        shared_logs=shared_logs,
    )


# The rank-0 host (the first node of group 0) and this job's own rendezvous port, free
# on that node (the batch script runs on rank 0's): dist.ddp's c10d store listens
# there, so jobs whose rank 0 share a node never share it.
_RANK0_AND_PORT = """\
export {rank0}="$(scontrol show hostnames "${{SLURM_JOB_NODELIST_HET_GROUP_0:-$SLURM_JOB_NODELIST}}" | head -n 1)"
_port=$(python3 -c '{free_port}' 2>/dev/null)
export {rdzv_port_env}="${{_port:-$(( 20000 + _job % 12000 ))}}"
"""
# Each replica's logs linked from the job directory, where users look first.
_LINKS = """\
  "$_ln" -sT -- "{state_dir}/$_job/slurm-$_job-$name.out" {qdir}/"slurm-$_job-$name.out" 2>/dev/null
  "$_ln" -sT -- "{state_dir}/$_job/slurm-$_job-$name.err" {qdir}/"slurm-$_job-$name.err" 2>/dev/null
"""

#: How the prologue names the job (its state directory, log names): the job's id; an
#: array's tasks use the array's id (:mod:`torchx_slurm.array`).
JOB_VAR = "_job=$SLURM_JOB_ID"
#: What the prologue clears in the job's state directory before a run: every exit code
#: of a run before (a requeue); it records the restart count.
CLEAR_STATE = (
    'rm -f -- "$_state"/*.exit &&\n  echo "${SLURM_RESTART_COUNT:-0}" > "$_state/restarts"'
)


def check_app(app: AppDef, job_name: str, job_dir: str) -> None:
    """Refuses names that cannot be Slurm job and file names, and a job directory that
    is not absolute or holds quotes, backslashes or control characters."""
    import os

    check_roles(app, names=_NAMES, error=InvalidAppException)
    check_name("app", job_name, names=_NAMES, error=InvalidAppException)
    if not os.path.isabs(job_dir) or _BAD_PATH.search(job_dir):
        raise InvalidRunConfigException(
            f"run option 'job_dir'={job_dir!r} cannot be the job's directory: use an absolute "
            "path without quotes, backslashes or control characters"
        )


def role_cwd(image: str, job_dir: str, default_cwd: str, is_dir: Any) -> str:
    """Where a role runs: its image when that is the job directory itself (a workspace
    copied there, maybe not yet on a dry run) or another existing directory."""
    import os

    runs_in_image = os.path.isabs(image) and (image == job_dir or is_dir(image))
    return image if runs_in_image else default_cwd


# The part of the script after the #SBATCH lines that does not depend on the app.
_PROLOGUE = """\
set -o pipefail
# the replicas keep the submitter's umask (their own files are theirs to share); what
# the script writes itself is private unless shared_logs
export SLURM_UMASK="${{SLURM_UMASK:-$(umask)}}"
umask {umask}
{job_var}
_top={top}
_state=$_top/$_job
_logs={logs}
# found before any replica's env is exported (it may set PATH)
_srun=$(command -v srun) && _ln=$(command -v ln) || {{ echo "torchx: srun or ln is not on PATH" >&2; exit 1; }}
# the job writes only in $_state, inside a directory of this user's that no one else
# can write: no other user can have planted a link there for the job to write through
[ -e "$_top" ] || [ -L "$_top" ] || mkdir -m {dir_mode} -- "$_top"
if [ -L "$_top" ] || [ ! -d "$_top" ] || [ ! -O "$_top" ] || [ -n "$(find "$_top" -maxdepth 0 -perm /022)" ]; then
  echo "torchx: $_top is not a directory of $(id -un) that only they can write: not running" >&2
  exit 1
fi
# a job directory that cannot be written (disk full, read-only, deleted) would lose
# the replicas' logs and exit codes: fail now, saying so, rather than run blind
if ! {{ mkdir -p -- "$_state" && {clear}; }}; then
  echo "torchx: error: cannot write to the job directory ($_state): no replica started" >&2
  exit {unwritable}
fi
export TORCHX_APP_ID="$_job"
{rank0_and_port}
# _run ROLE REPLICA SRUN_ARGS... -- CMD ARGS: one replica, its env exported by the caller
# (srun passes it on); logs to $_state (linked from the job directory), records its exit
_run() {{
  local name=$1-$2 record=$1.$2.exit rc child ext
  shift 2
  # a rerun (retry) keeps each earlier attempt's log: slurm-JOB-ROLE-K.tryN.out/.err
  if [ "${{SLURM_RESTART_COUNT:-0}}" -gt 0 ]; then
    for ext in out err; do
      if [ -e "$_logs/slurm-$_job-$name.$ext" ]; then
        mv -f -- "$_logs/slurm-$_job-$name.$ext" "$_logs/slurm-$_job-$name.try$(( SLURM_RESTART_COUNT - 1 )).$ext"
      fi
    done
  fi
{links}  "$_srun" --export=ALL --output="$_logs/slurm-$_job-$name.out" --error="$_logs/slurm-$_job-$name.err" "$@" &
  child=$!
  trap 'kill -TERM "$child" 2>/dev/null' TERM
  wait "$child"
  rc=$?
  if kill -0 "$child" 2>/dev/null; then wait "$child"; rc=$?; fi
  # an exit code that cannot be recorded (disk full...) fails the replica: its output
  # was most likely lost too, and "succeeded" could not be shown anyway
  if ! echo "$rc" > "$_state/$record"; then
    echo "torchx: error: cannot record the exit code ($rc) of replica $name in $_state" >&2
    [ "$rc" -ne 0 ] || rc={unwritable}
  fi
  return "$rc"
}}

_pids=()
"""

# Waits for every replica; the first failure stops the others; retries by requeue.
_EPILOGUE = """\
_status=0
for _ in "${_pids[@]}"; do
  wait -n
  _rc=$?
  # 127: no replica left to wait for (an old bash may not report one that ended early)
  if [ "$_rc" -ne 0 ] && [ "$_rc" -ne 127 ] && [ "$_status" -eq 0 ]; then
    _status=$_rc
    kill -TERM "${_pids[@]}" 2>/dev/null
  fi
done
wait
# the recorded exit codes decide: a replica that failed fails the job
if [ "$_status" -eq 0 ]; then
  for _f in "$_state"/*.exit; do
    read -r _rc < "$_f" || continue
    if [ "$_rc" != 0 ]; then _status=$_rc; break; fi
  done
fi
"""

# With retries left, a failed run asks Slurm to run the whole job again.
_REQUEUE = """\
if [ "$_status" -ne 0 ] && [ "${{SLURM_RESTART_COUNT:-0}}" -lt {max_retries} ]; then
  echo "torchx: replica failed (exit $_status); requeueing (retry $(( ${{SLURM_RESTART_COUNT:-0}} + 1 )) of {max_retries})" >&2
  scontrol requeue "$_job"
fi
"""


def prologue(
    job_dir: str,
    *,
    shared_logs: bool,
    job_var: str = JOB_VAR,
    clear: str = CLEAR_STATE,
    rank0_and_port: str | None = None,
    links: bool = True,
) -> str:
    """The script after its ``#SBATCH`` lines, up to the replicas: the job's directory
    checked and made, its rank-0 host and port, and ``_run``. ``job_var`` names the job
    (``_job=...``), ``clear`` is what a run clears in its state directory first;
    ``rank0_and_port`` replaces the lines exporting the rank-0 host and the rendezvous
    port; ``links``: each replica's logs are linked from the job directory."""
    q = _quote
    top = f"{job_dir.rstrip('/')}/{STATE_DIR}"
    logs = srun_file_name(top)
    if rank0_and_port is None:
        rank0_and_port = _RANK0_AND_PORT.format(
            rank0=RANK0_ENV, free_port=_FREE_PORT, rdzv_port_env=RDZV_PORT_ENV
        )
    return _PROLOGUE.format(
        rank0_and_port=rank0_and_port,
        links=_LINKS.format(state_dir=STATE_DIR, qdir=q(job_dir)) if links else "",
        umask="0022" if shared_logs else "0077",
        dir_mode="755" if shared_logs else "700",
        top=q(top),
        logs=f'{q(logs)}/"$_job"' if logs != top else "$_state",
        unwritable=UNWRITABLE_EXIT,
        job_var=job_var,
        clear=clear,
    )


def _render(
    replicas: Sequence[SlurmReplica],
    *,
    app_name: str,
    job_dir: str,
    job_name: str,
    job_opts: Sequence[tuple[str, str]],
    max_retries: int,
    shared_logs: bool,
) -> str:
    q = _quote
    top = f"{job_dir.rstrip('/')}/{STATE_DIR}"
    roles = sorted({r.role for r in replicas})
    lines = [
        "#!/bin/bash",
        f"# torchx-slurm script v{SCRIPT_VERSION}: app {app_name!r}, "
        f"{len(replicas)} replica(s) of role(s) {', '.join(roles)}",
    ]
    het = len(replicas) > 1
    previous: list[str] | None = None
    for r in replicas:
        if r.group:
            lines.append("#SBATCH hetjob")
        lines.append(f"#SBATCH --job-name={job_name}:{r.role}:{r.replica_id}")
        if r.group == 0:
            lines.append(sbatch_line("chdir", job_dir))
            # the batch script's own output, in the user's private directory (%j: job id)
            lines.append(sbatch_line("output", f"{top.replace('%', '%%')}/slurm-%j.out"))
            if max_retries:
                lines.append("#SBATCH --requeue")
            lines.extend(sbatch_line(k, v) for k, v in job_opts)
        # replicas of one role share their group lines: reuse the list, not a copy
        lines.extend(r.sbatch if r.sbatch is not previous else previous)
        previous = r.sbatch
    lines.append("")
    lines.append(prologue(job_dir, shared_logs=shared_logs))
    for r in replicas:
        exports = [f"TORCHX_ROLE_NAME={r.role}", f"TORCHX_REPLICA_ID={r.replica_id}"]
        exports += [f"{k}={_quote_with_app_id(v)}" for k, v in r.env.items()]
        parts = ["  _run", r.role, str(r.replica_id)]
        if het:
            parts.append(f"--het-group={r.group}")
        if r.cwd != job_dir:
            parts.append(f"--chdir={q(r.cwd)}")
        parts.append("--")
        parts += [_quote_with_app_id(a) for a in r.argv]
        lines.append("{ export " + " ".join(exports))
        lines.append(" ".join(parts) + "; } &")
        lines.append("_pids+=($!)")
    lines.append(_EPILOGUE)
    if max_retries:
        lines.append(_REQUEUE.format(max_retries=max_retries))
    lines.append('exit "$_status"\n')
    return "\n".join(lines)
