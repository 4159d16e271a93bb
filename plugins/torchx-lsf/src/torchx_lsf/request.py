"""The bsub commands of an app: one LSF job per replica, each running a private script.

:func:`build_request` turns an AppDef (and the checked run options) into an
:class:`LsfRequest`: for each replica, the ``bsub`` argv, the job file ``bsub`` reads
on stdin, the replica's script and its environment file. It is a pure function of its
inputs: nothing runs, nothing is written; ``torchx run --dryrun`` prints it whole.

Each replica is one LSF job::

    bsub -P APP_ID -J APP_ID-ROLE-K -cwd DIR -outdir APP_DIR -oo APP_DIR/ROLE-K.lsf.out
         -eo APP_DIR/ROLE-K.lsf.err [-q QUEUE] [-n CPUS] -R "span[hosts=1] rusage[mem=MB]"
         [-gpu "num=G:mode=shared:j_exclusive=yes"] [-w "started(APP_ID-ROLE0-0)"]  < job file

tagged with the app id as its project (``-P``: ``bjobs -P`` finds the app's jobs) and
named ``<app id>-<role>-<replica>``. The first replica of the first role (rank 0) is
submitted first; every other one waits for it to start (``-w "started(...)"``) and
asks LSF, when it starts, on which host rank 0 runs (``bjobs -o exec_host``): that is
``TORCHX_RANK0_HOST`` (:data:`RANK0_ENV`, which ``macros.rank0_env`` names).

The job file only runs the replica's script ``APP_DIR/ROLE-K.sh``, which lives in the
app's private directory (``JOBDIR/.torchx-lsf/<app id>``, 0700, files 0600) with the
environment file ``ROLE-K.env``: the role's ``env`` never appears on a command line
(``ps`` shows those to every user) nor in the job file LSF spools. The script checks
that the directory is still private, exports the environment, writes the program's
stdout and stderr to ``ROLE-K.out`` and ``ROLE-K.err`` there, and runs the entrypoint
as the program: directly, in the role's image when that is a directory, otherwise in a
container (``docker run --entrypoint ENTRYPOINT IMAGE ARGS``, the environment passed by
name only). A replica that fails asks LSF to end the app's other replicas (``bkill
-J``), after recording its exit code in ``ROLE-K.exit`` (read by ``describe`` while its
own job is still ending): the app fails as a whole, as it does on the other schedulers.

Retries (``max_retries``, the largest of the roles': the app is rerun as a whole, as
Slurm reruns its one job). Each job is submitted with ``-Q 75`` (:data:`REQUEUE_EXIT`,
sysexits' "temporary failure"): LSF requeues a job that exits with that value, under the
same job id. A replica that fails while the app has retries left (the count so far is in
the app's file ``restarts``, which status reads) does not record an exit or end the
others: the first one of the attempt to fail (a directory ``retry-N`` made atomically
says which) counts the restart, requeues the other replicas with ``brequeue -a``
(running ones are killed first, ended ones rerun), and every failed replica exits with
75, so LSF requeues it too. Once the retries are spent, a failure fails the app as
above; a program that itself exits with 75 then makes its job exit 1 (its own code is
in ``ROLE-K.exit``), or LSF would requeue it once more. A cancelled app is not retried.

Quoting: every string that comes from the user (entrypoint, args, env values, paths,
names) is quoted for the shell by :func:`shell_quote`, so an argument like ``"; rm -rf
~`` reaches the program verbatim.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence

import attrs

from torchx.schedulers.helpers.scriptroles import check_roles
from torchx.specs import AppDef, BindMount, DeviceMount, Role, VolumeMount
from torchx.specs.errors import SpecError
from torchx.specs.templating import macros
from torchx_lsf.appdir import CANCELLED, RESTARTS
from torchx_lsf.jobdir import STATE_DIR

#: The environment variable holding the rank-0 replica's host (``macros.rank0_env``).
RANK0_ENV = "TORCHX_RANK0_HOST"
#: The format version of the replica scripts (their first comment line says it).
SCRIPT_VERSION = 1
#: The exit value a replica with retries left ends with, and its job's ``bsub -Q`` value:
#: LSF requeues a job that exits with it (sysexits' EX_TEMPFAIL, "try again later").
REQUEUE_EXIT = 75
#: What LSF's job file does: run the replica's private script with bash.
JOB_FILE = "#!/bin/sh\n# torchx-lsf job file v{version}\nexec /bin/bash {script}\n"

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# what docker's --mount reads as a separator or a quote
_MOUNT_SPECIAL = re.compile(r"[,\"=\x00-\x1f\x7f]")


def shell_quote(text: str) -> str:
    r"""``text`` quoted for bash, verbatim; control characters as ``$'\xHH'`` escapes.

    >>> print(shell_quote("a b"), shell_quote("it's\n"))
    'a b' $'it\'s\x0a'
    """
    if not _CONTROL.search(text):
        return shlex.quote(text)
    out = []
    for c in text:
        if c in "\\'":
            out.append("\\" + c)
        elif _CONTROL.match(c):
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return "$'" + "".join(out) + "'"


class InvalidAppException(SpecError):
    """The AppDef cannot run on LSF as it is (the message says what to change)."""


@attrs.define
class LsfReplica:
    """One replica: its LSF job (name, bsub argv, job file) and its private files."""

    role: str
    replica_id: int
    job_name: str
    bsub: list[str]
    job_file: str
    script: str
    env: dict[str, str]
    #: "" (runs directly in ``cwd``) or the container image it runs in
    image: str
    cwd: str

    @property
    def file_stem(self) -> str:
        """``ROLE-K``: the stem of the replica's files in the app's directory."""
        return f"{self.role}-{self.replica_id}"


@attrs.define
class LsfRequest:
    """What ``submit_dryrun`` returns and ``schedule`` submits, replica by replica."""

    app_id: str
    jobdir: str
    app_dir: str
    replicas: list[LsfReplica]

    def __str__(self) -> str:
        parts = [f"# torchx-lsf: app {self.app_id}: {len(self.replicas)} LSF job(s)"]
        for r in self.replicas:
            parts.append(f"\n# {r.job_name}\n{shlex.join(r.bsub)} <<'EOF'\n{r.job_file}EOF")
            parts.append(f"# {self.app_dir}/{r.file_stem}.env (0600)")
            parts.extend(f"{k}={shell_quote(v)}" for k, v in r.env.items())
            parts.append(f"# {self.app_dir}/{r.file_stem}.sh (0600)\n{r.script}")
        return "\n".join(parts)


def env_file(env: Mapping[str, str]) -> str:
    """The environment file's text: ``KEY='value'`` lines the script reads with ``set -a``."""
    return "".join(f"{k}={shell_quote(v)}\n" for k, v in env.items())


def bsub_resources(role: Role) -> list[str]:
    """The bsub options of a replica's resources: slots, memory on one host, GPUs.

    >>> from torchx.specs import Resource
    >>> bsub_resources(Role("r", image="/", resource=Resource(cpu=2, gpu=1, memMB=512)))
    ['-n', '2', '-R', 'span[hosts=1] rusage[mem=512]', '-gpu', 'num=1:mode=shared:j_exclusive=yes']
    """
    res = role.resource
    out: list[str] = []
    if res.cpu > 0:
        # LSF counts whole slots: a fraction of a CPU still takes one
        out += ["-n", str(max(1, math.ceil(res.cpu)))]
    out += [
        "-R",
        f"span[hosts=1] rusage[mem={int(res.memMB)}]" if res.memMB > 0 else "span[hosts=1]",
    ]
    if res.gpu > 0:
        out += ["-gpu", f"num={int(res.gpu)}:mode=shared:j_exclusive=yes"]
    return out


def _mount_value(role: str, what: str, value: str) -> str:
    if _MOUNT_SPECIAL.search(value):
        raise InvalidAppException(
            f"role {role!r}: mount {what} {value!r} holds a ',', '=', '\"' or a control "
            "character, which docker's --mount cannot take: use a plain path"
        )
    return value


def docker_args(
    role: Role,
    *,
    job_name: str,
    env_names: Sequence[str],
    args: Sequence[str],
    container_workdir: str | None,
    host_network: bool,
    shm_size: str | None,
) -> list[str]:
    """``docker run ...`` of a replica (argv): the environment by name, mounts, resources."""
    argv = ["docker", "run", "--rm", f"--name={job_name}"]
    for name in env_names:
        argv += ["--env", name]
    for mount in role.mounts:
        if isinstance(mount, BindMount):
            src = _mount_value(role.name, "source", mount.src_path)
            dst = _mount_value(role.name, "target", mount.dst_path)
            spec = f"type=bind,source={src},target={dst}"
            argv += ["--mount", spec + (",readonly" if mount.read_only else "")]
        elif isinstance(mount, VolumeMount):
            src = _mount_value(role.name, "volume", mount.src)
            dst = _mount_value(role.name, "target", mount.dst_path)
            spec = f"type=volume,source={src},target={dst}"
            argv += ["--mount", spec + (",readonly" if mount.read_only else "")]
        elif isinstance(mount, DeviceMount):
            argv += [f"--device={mount.src_path}:{mount.dst_path}:{mount.permissions}"]
    if container_workdir:
        argv += ["--workdir", container_workdir]
    if host_network:
        argv += ["--net=host", "--ipc=host"]
    else:
        for port in role.port_map.values():
            argv += ["--publish", str(int(port))]
    if shm_size:
        argv += [f"--shm-size={shm_size}"]
    res = role.resource
    if res.cpu > 0:
        argv += [f"--cpus={res.cpu:g}"]
    if res.memMB > 0:
        argv += [f"--memory={int(res.memMB)}m"]
    if res.gpu > 0:
        argv += ["--gpus", "all"]
    argv += ["--entrypoint", role.entrypoint, role.image, *args]
    return argv


# The part of each replica's script that does not depend on the replica.
_CHECK = """\
_dir={app_dir}
# the app's files live in a directory of this user's that no one else can write or
# read: refuse to run (and to read its environment file) if it is not that any more
if [ -L "$_dir" ] || [ ! -d "$_dir" ] || [ ! -O "$_dir" ] || [ -n "$(find "$_dir" -maxdepth 0 -perm /077)" ]; then
  echo "torchx: $_dir is not a private directory of $(id -un): not running" >&2
  exit 1
fi
set -a
. "$_dir"/{stem}.env || exit 1
set +a
"""

_RANK0_SELF = """\
# rank 0: this host
_h=${{LSB_HOSTS%% *}}
export {rank0}="${{_h:-$(hostname)}}"
"""

# LSF prints a job on several hosts as "4*hostA:2*hostB"; the first host is rank 0's
_RANK0_ASK = """\
# rank 0 started before this replica (bsub -w "started(...)"): ask LSF where it runs
_h=$(bjobs -noheader -a -o exec_host -J {rank0_job} 2>/dev/null | head -n 1)
_h=${{_h%%:*}}
_h=${{_h#*\\*}}
_h=${{_h%% *}}
if [ -z "$_h" ] || [ "$_h" = "-" ]; then
  echo "torchx: cannot find the host of rank 0 ({rank0_job}) with bjobs" >&2
  exit 1
fi
export {rank0}="$_h"
"""

_FAIL_FAST = """\
if [ "$_rc" -ne 0 ]; then
  # a failed replica fails the app: its exit code first (status reads it while this job
  # still ends the others), then end the others (those still there)
  (umask 077; echo "$_rc" > "$_dir"/{stem}.exit)
  for _job in {others}; do
    bkill -J "$_job" >/dev/null 2>&1
  done
fi
{last}exit "$_rc"
"""

_DOCKER_RUN = """\
# the container runs while this script waits: a kill (bkill) of the job stops it too.
# The stop runs in a session of its own, so that the SIGKILL bkill sends to this job's
# processes after its grace time cannot end it half way (the engine would keep the
# container running): the container gets SIGTERM, then SIGKILL 10 s later, and --rm
# removes it
trap 'setsid docker stop --time 10 {name} >/dev/null 2>&1 < /dev/null &' INT TERM
{command} &
_child=$!
wait "$_child"
_rc=$?
while kill -0 "$_child" 2>/dev/null; do wait "$_child"; _rc=$?; done
"""


# With retries: which attempt this is (status reads the same file), and no exit code left
# from an earlier attempt.
_ATTEMPT = """\
_try=$(cat "$_dir"/{restarts} 2>/dev/null)
case "$_try" in ''|*[!0-9]*) _try=0 ;; esac
rm -f "$_dir"/{stem}.exit
"""

# With retries left, a failure reruns the whole app: the first replica of this attempt to
# fail counts the restart and requeues the others; each failed one exits with the value
# its job was submitted with (bsub -Q), so LSF requeues it as well.
_RETRY = """\
if [ "$_rc" -ne 0 ] && [ "$_try" -lt {max_retries} ] && [ ! -e "$_dir"/{cancelled} ]; then
  if (umask 077; mkdir "$_dir"/retry-"$_try") 2>/dev/null; then
    (umask 077; echo $(( _try + 1 )) > "$_dir"/{restarts}.new && mv -f "$_dir"/{restarts}.new "$_dir"/{restarts})
    echo "torchx: exit $_rc; rerunning the app (retry $(( _try + 1 )) of {max_retries})" >&2
    for _job in {others}; do
      brequeue -a -J "$_job" >/dev/null 2>&1
    done
  fi
  exit {requeue}
fi
"""

# With retries, the last attempt's exit must not be the requeue value (LSF would rerun it)
_NOT_REQUEUE = """\
if [ "$_rc" -eq {requeue} ]; then exit 1; fi
"""


def _script(
    r: LsfReplica,
    *,
    app_name: str,
    app_id: str,
    app_dir: str,
    rank0_job: str | None,
    others: Sequence[str],
    command: list[str],
    max_retries: int = 0,
) -> str:
    q = shell_quote
    lines = [
        "#!/bin/bash",
        f"# torchx-lsf replica script v{SCRIPT_VERSION}: app {app_name!r} ({app_id}), "
        f"role {r.role}, replica {r.replica_id}",
        _CHECK.format(app_dir=q(app_dir), stem=r.file_stem),
    ]
    if max_retries:
        lines.append(_ATTEMPT.format(restarts=RESTARTS, stem=r.file_stem))
    if rank0_job is None:
        lines.append(_RANK0_SELF.format(rank0=RANK0_ENV))
    else:
        lines.append(_RANK0_ASK.format(rank0=RANK0_ENV, rank0_job=q(rank0_job)))
    lines.append(
        "# the program's output, in the private directory (the program keeps its umask)\n"
        '_umask=$(umask); umask 077\nexec >>"$_dir"/'
        + r.file_stem
        + '.out 2>>"$_dir"/'
        + r.file_stem
        + '.err\numask "$_umask"\n'
    )
    if r.image:
        lines.append(_DOCKER_RUN.format(name=q(r.job_name), command=" ".join(map(q, command))))
    else:
        lines.append(f"cd {q(r.cwd)} || exit 1")
        lines.append(" ".join(map(q, command)))
        lines.append("_rc=$?")
    quoted_others = " ".join(q(o) for o in others) or "''"
    if max_retries:
        lines.append(
            _RETRY.format(
                max_retries=max_retries,
                restarts=RESTARTS,
                cancelled=CANCELLED,
                others=quoted_others,
                requeue=REQUEUE_EXIT,
            )
        )
    last = _NOT_REQUEUE.format(requeue=REQUEUE_EXIT) if max_retries else ""
    lines.append(_FAIL_FAST.format(stem=r.file_stem, others=quoted_others, last=last))
    return "\n".join(lines)


def build_request(
    app: AppDef,
    *,
    app_id: str,
    jobdir: str,
    queue: str | None = None,
    container_workdir: str | None = None,
    host_network: bool = False,
    shm_size: str | None = None,
    is_dir: Callable[[str], bool] = os.path.isdir,
) -> LsfRequest:
    """The LSF jobs of ``app``: one per replica, rank 0 first.

    ``jobdir`` is absolute and checked (:func:`torchx_lsf.options.check_path`);
    ``app_id`` is unique (the LSF project and the prefix of every job name). A role
    whose image is an absolute path to a directory (``is_dir``) runs there directly;
    any other image is a container image.
    """
    check_roles(
        app,
        names="LSF jobs and files",
        max_len=100,
        reserved={RANK0_ENV: "is set by the replica script itself"},
        error=InvalidAppException,
    )
    app_dir = f"{jobdir.rstrip('/')}/{STATE_DIR}/{app_id}"
    names = [
        (role, k, f"{app_id}-{role.name}-{k}")
        for role in app.roles
        for k in range(role.num_replicas)
    ]
    rank0_job = names[0][2]
    # LSF reruns jobs, not apps: the app is rerun as a whole, as often as its roles allow
    max_retries = max((role.max_retries for role in app.roles), default=0)
    replicas: list[LsfReplica] = []
    for role, k, job_name in names:
        direct = os.path.isabs(role.image) and is_dir(role.image)
        cwd = role.image if direct else app_dir
        values = macros.Values(
            img_root=role.image if direct else "",
            app_id=app_id,
            replica_id=str(k),
            rank0_env=RANK0_ENV,
        )
        env = {
            "TORCHX_APP_ID": app_id,
            "TORCHX_ROLE_NAME": role.name,
            "TORCHX_REPLICA_ID": str(k),
        }
        env.update({key: values.substitute(v) for key, v in role.env.items()})
        args = [values.substitute(a) for a in role.args]
        if direct:
            command = [role.entrypoint, *args]
        else:
            command = docker_args(
                role,
                job_name=job_name,
                env_names=[*env, RANK0_ENV],
                args=args,
                container_workdir=container_workdir,
                host_network=host_network,
                shm_size=shm_size,
            )
        stem = f"{role.name}-{k}"
        bsub = ["bsub", "-P", app_id, "-J", job_name, "-cwd", cwd, "-outdir", app_dir]
        bsub += ["-oo", f"{app_dir}/{stem}.lsf.out", "-eo", f"{app_dir}/{stem}.lsf.err"]
        if queue:
            bsub += ["-q", queue]
        bsub += bsub_resources(role)
        if job_name != rank0_job:
            bsub += ["-w", f"started({rank0_job})"]
        if max_retries:
            bsub += ["-Q", str(REQUEUE_EXIT)]
        replica = LsfReplica(
            role=role.name,
            replica_id=k,
            job_name=job_name,
            bsub=bsub,
            job_file=JOB_FILE.format(
                version=SCRIPT_VERSION, script=shell_quote(f"{app_dir}/{stem}.sh")
            ),
            script="",
            env=env,
            image="" if direct else role.image,
            cwd=cwd,
        )
        replica.script = _script(
            replica,
            app_name=app.name,
            app_id=app_id,
            app_dir=app_dir,
            rank0_job=None if job_name == rank0_job else rank0_job,
            others=[n for _, _, n in names if n != job_name],
            command=command,
            max_retries=max_retries,
        )
        replicas.append(replica)
    return LsfRequest(app_id=app_id, jobdir=jobdir, app_dir=app_dir, replicas=replicas)
