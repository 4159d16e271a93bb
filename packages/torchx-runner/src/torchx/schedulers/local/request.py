"""The local scheduler's dry run: what an AppDef becomes before anything is written.

:func:`build_request` turns an AppDef and the run options into a :class:`LocalRequest`:
one :class:`LocalReplica` per process to start, with its command, working directory
(the role's image), environment and log directory, all macros substituted. It only
computes: nothing is written or started, so ``torchx run --dryrun`` prints exactly what
``schedule`` would run (``str()`` of the request shows each replica as a shell command).
What local cannot run is refused first (:mod:`torchx.schedulers.local.checks`).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from torchx.schedulers.helpers.ids import make_app_id
from torchx.specs import AppDef, CfgVal, SpecError
from torchx.specs.secrets import masked_run_options

if TYPE_CHECKING:
    from torchx.schedulers.local.images import ImageProvider

#: The environment variable holding the rank-0 host (``macros.rank0_env`` names it).
RANK0_ENV = "TORCHX_RANK0_HOST"
#: The environment variable holding the app's own free port, where ``dist.ddp`` hosts
#: its rendezvous unless given ``--rdzv_port`` (see :mod:`torchx.components.dist`).
RDZV_PORT_ENV = "TORCHX_RDZV_PORT"


@attrs.define
class LocalReplica:
    """One process to start: what, where, with which extra environment, logging where."""

    id: int
    entrypoint: str
    args: list[str]
    env: dict[str, str]
    cwd: str
    log_dir: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "entrypoint": self.entrypoint,
            "args": self.args,
            "env": self.env,
            "cwd": self.cwd,
            "log_dir": self.log_dir,
        }


@attrs.define
class LocalRole:
    """The replicas of one role and its retry policy."""

    name: str
    retry_policy: str
    max_retries: int
    replicas: list[LocalReplica]


@attrs.define
class LocalRequest:
    """What :meth:`LocalScheduler.schedule` submits: the dryrun's request.

    ``str()`` of it (what ``torchx run --dryrun`` prints) shows each replica as the
    shell command it amounts to.
    """

    app_id: str
    app_name: str
    state_dir: str
    log_dir: str
    grace_period: float
    roles: list[LocalRole]
    #: apps to keep once this one has ended: the newest N, and those younger than D (s)
    retain_last: int | None = None
    retain_for: float | None = None
    #: run the app in a cgroup of its own, where the supervisor may make one
    cgroup: bool = False
    #: the run options it was submitted with, masked (what ``describe`` gives back)
    run_options: dict[str, Any] = attrs.field(factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_options": self.run_options,
            "app_id": self.app_id,
            "app_name": self.app_name,
            "log_dir": self.log_dir,
            "grace_period": self.grace_period,
            "retain_last": self.retain_last,
            "retain_for": self.retain_for,
            "cgroup": self.cgroup,
            "roles": [
                {
                    "name": r.name,
                    "retry_policy": r.retry_policy,
                    "max_retries": r.max_retries,
                    "replicas": [rep.to_json() for rep in r.replicas],
                }
                for r in self.roles
            ],
        }

    def __str__(self) -> str:
        lines = [f"local app {self.app_id} (records: {self.state_dir}, logs: {self.log_dir})"]
        if self.cgroup:
            lines.append(f"  in a cgroup of its own where available (torchx-{self.app_id})")
        for role in self.roles:
            lines.append(
                f"  role {role.name}: {len(role.replicas)} replica(s), "
                f"retry_policy={role.retry_policy}, max_retries={role.max_retries}"
            )
            for rep in role.replicas:
                # 'env K=V cmd', each pair quoted whole: pasted into a shell it runs the
                # command with exactly this environment, whatever the keys hold
                env = shlex.join(
                    [
                        "env",
                        *(["--"] if any(k.startswith("-") for k in rep.env) else []),
                        *(f"{k}={v}" for k, v in rep.env.items()),
                    ]
                )
                cmd = shlex.join([rep.entrypoint, *rep.args])
                lines.append(f"    {role.name}/{rep.id}: cd {shlex.quote(rep.cwd)} && {env} {cmd}")
        return "\n".join(lines)


def gpu_count() -> int:
    """Number of NVIDIA GPUs on this host (0 when there is no driver)."""
    try:
        return len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        pass
    import shutil

    nvidia_smi = shutil.which("nvidia-smi")
    if not nvidia_smi:
        return 0
    import subprocess

    try:
        out = subprocess.run([nvidia_smi, "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def free_port() -> int:
    """A TCP port of this host that is free now, for the app's rendezvous.

    Chosen at random below 32768, where the kernel's ports for outgoing connections
    start, so none of those takes it before the rendezvous listens; each app has its
    own, so two apps at once never share a rendezvous (one that found 29500 taken
    joined the other's, and failed when that one ended). ``_socket`` and ``os.urandom``,
    not ``socket`` and ``random``: this runs in every ``torchx run``, and those cost
    milliseconds to import. 0 if none of 64 tries was free (then nothing is set).
    """
    import _socket

    for _ in range(64):
        port = 20000 + int.from_bytes(os.urandom(2), "big") % 12000
        sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        try:
            sock.bind(("", port))
        except OSError:
            continue
        finally:
            sock.close()
        return port
    return 0


def build_request(
    app: AppDef,
    cfg: Mapping[str, CfgVal],
    state_dir: str,
    image_provider: ImageProvider | None = None,
    extra_paths: Sequence[str] = (),
) -> LocalRequest:
    """The request that runs ``app`` under ``cfg``, with a new app id.

    ``state_dir`` is where its records go unless the ``state_dir`` run option says
    otherwise. ``image_provider``, if given, says where each role
    runs and what (see :mod:`torchx.schedulers.local.images`); ``extra_paths`` go first
    on every replica's ``PATH``. Raises :class:`~torchx.specs.SpecError` or
    :class:`~torchx.specs.InvalidRunConfigException` (one line) for what cannot run.
    """
    from torchx.schedulers.local.checks import check_app
    from torchx.schedulers.local.options import LocalOpts
    from torchx.specs.templating import macros

    check_app(
        app, check_images=image_provider is None
    )  # refused here, before anything is written or started
    opts = LocalOpts.of(cfg)
    state_dir = os.path.abspath(opts.state_dir) if opts.state_dir else state_dir
    app_id = make_app_id(app.name)
    log_dir = (
        # links resolved now: schedule then checks every directory on the way
        os.path.join(os.path.realpath(os.path.expanduser(opts.log_dir)), app_id)
        if opts.log_dir
        else os.path.join(state_dir, "apps", app_id, "logs")
    )
    launch_dir = os.getcwd()
    rdzv_port = free_port()

    gpus: list[str] = []
    if opts.auto_set_cuda_visible_devices:
        wanted = sum(r.resource.gpu * r.num_replicas for r in app.roles)
        if wanted:
            have = gpu_count()
            if wanted > have:
                raise SpecError(
                    f"auto_set_cuda_visible_devices: app {app.name!r} asks for {wanted} "
                    f"GPU{'s' if wanted != 1 else ''} in all but this host has {have}; "
                    "lower resource.gpu or "
                    "num_replicas, or turn the option off"
                )
            gpus = [str(i) for i in range(have)]
    next_gpu = 0

    roles: list[LocalRole] = []
    for role in app.roles:
        if image_provider is None:
            img_root = cwd = os.path.abspath(role.image) if role.image else launch_dir
            entrypoint, role_args, role_env = role.entrypoint, role.args, role.env
        else:
            img_root = image_provider.fetch_role(role)
            param = image_provider.get_replica_param(img_root, role)
            if not param.args:
                raise SpecError(
                    f"role {role.name!r}: {type(image_provider).__name__}.get_replica_param "
                    "returned no command (args must start with the program)"
                )
            cwd = param.cwd or img_root
            entrypoint, role_args, role_env = param.args[0], param.args[1:], param.env
        replicas = []
        for k in range(role.num_replicas):
            values = macros.Values(
                img_root=img_root, app_id=app_id, replica_id=str(k), rank0_env=RANK0_ENV
            )
            args = [values.substitute(a) for a in role_args]
            env = {
                RANK0_ENV: "localhost",
                "TORCHX_APP_ID": app_id,
                "TORCHX_ROLE_NAME": role.name,
                "TORCHX_REPLICA_ID": str(k),
                "PYTHONUNBUFFERED": "1",
            }
            if rdzv_port:  # one per app, unless the role's env gives its own
                env[RDZV_PORT_ENV] = str(rdzv_port)
            for key, v in role_env.items():
                env[key] = values.substitute(v)
            if gpus and role.resource.gpu:
                env["CUDA_VISIBLE_DEVICES"] = ",".join(
                    gpus[next_gpu : next_gpu + role.resource.gpu]
                )
                next_gpu += role.resource.gpu
            if extra_paths:
                path = env.get("PATH", os.environ.get("PATH", ""))
                env["PATH"] = os.pathsep.join([*extra_paths, *([path] if path else [])])
            if opts.prepend_cwd:
                env["PATH"] = cwd + os.pathsep + env.get("PATH", os.environ.get("PATH", ""))
            replica_log_dir = os.path.join(log_dir, role.name, str(k))
            replicas.append(
                LocalReplica(
                    id=k,
                    entrypoint=entrypoint,
                    args=args,
                    env=env,
                    cwd=cwd,
                    log_dir=replica_log_dir,
                )
            )
        roles.append(LocalRole(role.name, str(role.retry_policy), role.max_retries, replicas))
    return LocalRequest(
        app_id=app_id,
        app_name=app.name,
        state_dir=state_dir,
        log_dir=log_dir,
        grace_period=opts.grace_period,
        roles=roles,
        retain_last=opts.retain_last,
        retain_for=opts.retain_for_seconds(),
        cgroup=opts.cgroup,
        run_options=masked_run_options(opts),
    )
