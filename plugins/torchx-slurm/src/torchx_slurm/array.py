"""A role as one native Slurm job array: the run option ``array_parallelism``.

With ``-cfg array_parallelism=K``, an app of one role of N replicas is submitted as one
``sbatch --array=0-(N-1)%K`` job instead of a heterogeneous job of N groups: each
array task is one replica (its index, ``SLURM_ARRAY_TASK_ID``, is the replica id: the
``replica_id`` macro and ``TORCHX_REPLICA_ID`` say it), Slurm starts at most K tasks at
once and each task gets its own allocation (one node's worth of the role's resource),
so the replicas are independent calls, not a gang: one failing stops no other.

The handle names the array (``slurm://SESSION/JOBID``, sbatch's answer); ``describe``
maps the array's tasks (``JOBID_TASK`` in squeue and sacct, pending ones as
``JOBID_[3-9%2]``) to the replicas, each with its own state and exit code; the app is
RUNNING (or PENDING) until every task has ended, then FAILED if one failed, CANCELLED if
one was cancelled, else SUCCEEDED. ``cancel`` cancels the whole array;
``slurm://SESSION/JOBID_TASK`` names one task (``torchx cancel`` of it cancels only
that task, ``torchx status`` shows only it). Logs and exit codes go where a
heterogeneous job's do: ``.torchx-slurm/JOBID/slurm-JOBID-ROLE-TASK.out``/``.err`` and
``ROLE.TASK.exit``, so ``torchx log slurm://SESSION/JOBID/ROLE/TASK`` reads one task
(not linked from the job directory: N tasks would put 2N links there). Every task pays
for what its script forks, so a task asks Slurm nothing: ``TORCHX_RANK0_HOST`` is its
own node (``SLURMD_NODENAME``) and ``TORCHX_RDZV_PORT`` a port from the array and task
ids, not one probed free (tasks do not meet).

Refused in one line: an app of more than one role, a role with ``max_retries`` (a
requeue would rerun one task under the array's restart count), a K below 1.

>>> from torchx.specs import AppDef, Role, Resource
>>> role = Role("fn", image="/tmp", entrypoint="echo", args=["item"], num_replicas=10,
...             resource=Resource(cpu=1, gpu=0, memMB=256))
>>> req = build_array(AppDef("sq", [role]), job_dir="/jobs", job_name="sq-1", parallelism=2)
>>> req.array, [line for line in req.script.splitlines() if "--array" in line]
('0-9%2', ['#SBATCH --array=0-9%2'])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from torchx.specs.api import AppDef
from torchx.specs.errors import InvalidRunConfigException
from torchx.specs.templating import macros
from torchx_slurm.jobdir import STATE_DIR
from torchx_slurm.jobfiles import ARRAY_MARK
from torchx_slurm.request import (
    _APP_ID_MARK,
    RANK0_ENV,
    RDZV_PORT_ENV,
    REPLICA_ID_MARK,
    SCRIPT_VERSION,
    SlurmReplica,
    SlurmRequest,
    check_app,
    group_sbatch,
    prologue,
    quote_with_marks,
    role_cwd,
    sbatch_line,
    shell_quote,
)

#: The prologue's job names for a task: the array's id (its state directory, its log
#: names, the app id macro) and the task's index (the replica id).
ARRAY_JOB_VAR = "_job=$SLURM_ARRAY_JOB_ID\n_task=$SLURM_ARRAY_TASK_ID"


#: A task's rank-0 host and rendezvous port: its own node (no ``scontrol`` call) and a
#: port of its own; tasks do not meet, and each forked tool is paid N times.
ARRAY_RANK0_AND_PORT = (
    f'export {RANK0_ENV}="$SLURMD_NODENAME"\n'
    f'export {RDZV_PORT_ENV}="$(( 20000 + (_job + _task) % 12000 ))"\n'
)


def check_array(app: AppDef, parallelism: int) -> None:
    """Refuses, in one line, what contradicts one job array of the app's replicas."""
    if parallelism < 1:
        raise InvalidRunConfigException(
            f"run option 'array_parallelism'={parallelism} must be at least 1"
        )
    if len(app.roles) != 1:
        names = ", ".join(r.name for r in app.roles) or "none"
        raise InvalidRunConfigException(
            f"run option 'array_parallelism' runs one role as a job array, but app "
            f"{app.name!r} has {len(app.roles)} roles ({names}): submit each role on its own"
        )
    role = app.roles[0]
    if role.max_retries:
        raise InvalidRunConfigException(
            f"run option 'array_parallelism': role {role.name!r} has max_retries="
            f"{role.max_retries}, which a job array's tasks do not support: leave it at 0"
        )


def build_array(
    app: AppDef,
    *,
    job_dir: str,
    job_name: str,
    parallelism: int,
    run_dir: str | None = None,
    is_dir: Callable[[str], bool] | None = None,
    job_opts: Sequence[tuple[str, str]] = (),
    group_opts: Sequence[tuple[str, str]] = (),
    extra: Sequence[str] = (),
    nomem: bool = False,
    exclusive: bool = False,
    shared_logs: bool = False,
) -> SlurmRequest:
    """The request of ``app``'s one role as ``--array=0-(N-1)%parallelism`` (see the module).

    The arguments are :func:`~torchx_slurm.request.build_request`'s, and the role runs
    where it would run there (``run_dir``, or its image when that is a directory).
    """
    import os

    check_app(app, job_name, job_dir)
    check_array(app, parallelism)
    role = app.roles[0]
    default_cwd = run_dir if run_dir and os.path.isabs(run_dir) else job_dir
    cwd = role_cwd(role.image, job_dir, default_cwd, is_dir or os.path.isdir)
    sbatch = group_sbatch(
        role, group_opts=group_opts, extra=extra, nomem=nomem, exclusive=exclusive
    )
    n = role.num_replicas
    array = f"0-{n - 1}%{parallelism}"

    def replica(replica_id: str) -> tuple[dict[str, str], list[str]]:
        values = macros.Values(
            img_root=cwd, app_id=_APP_ID_MARK, replica_id=replica_id, rank0_env=RANK0_ENV
        )
        sub = values.substitute
        return {k: sub(v) for k, v in role.env.items()}, [role.entrypoint, *map(sub, role.args)]

    replicas = []
    for k in range(n):  # what each task runs, for tools and tests (the script says it once)
        env, argv = replica(str(k))
        replicas.append(SlurmReplica(role.name, k, 0, cwd, env, argv, sbatch))
    env, argv = replica(REPLICA_ID_MARK)
    top = f"{job_dir.rstrip('/')}/{STATE_DIR}"
    lines = [
        "#!/bin/bash",
        f"# torchx-slurm script v{SCRIPT_VERSION}: app {app.name!r}, job array of "
        f"{n} replica(s) of role {role.name}, at most {parallelism} at once",
        f"#SBATCH --job-name={job_name}:{role.name}:0",
        sbatch_line("chdir", job_dir),
        # the batch script's own output, one file per task (%A: array id, %a: task)
        sbatch_line("output", f"{top.replace('%', '%%')}/slurm-%A_%a.out"),
        f"#SBATCH --array={array}",
        *(sbatch_line(k, v) for k, v in job_opts),
        *sbatch,
        "",
        prologue(
            job_dir,
            shared_logs=shared_logs,
            job_var=ARRAY_JOB_VAR,
            # the mark is a redirection of the shell's own: no fork
            clear=f'rm -f -- "$_state"/{shell_quote(role.name)}."$_task".exit && : > "$_state/{ARRAY_MARK}"',
            rank0_and_port=ARRAY_RANK0_AND_PORT,
            links=False,
        ),
    ]
    exports = [f"TORCHX_ROLE_NAME={role.name}", 'TORCHX_REPLICA_ID="$_task"']
    exports += [f"{k}={quote_with_marks(v)}" for k, v in env.items()]
    parts = ["_run", role.name, '"$_task"']
    if cwd != job_dir:
        parts.append(f"--chdir={shell_quote(cwd)}")
    parts += ["--", *map(quote_with_marks, argv)]
    lines.append("export " + " ".join(exports))
    lines.append(" ".join(parts))
    lines.append('exit "$?"\n')
    return SlurmRequest(
        name=job_name,
        job_dir=job_dir,
        script="\n".join(lines),
        replicas=replicas,
        shared_logs=shared_logs,
        array=array,
    )
