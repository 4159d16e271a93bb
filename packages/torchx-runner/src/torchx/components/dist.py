"""Built-in components for distributed PyTorch: ``dist.ddp`` and ``dist.spmd``.

A DDP-style job is one role of identical nodes. Each node runs ``torchrun``
(``torch.distributed.run``), which starts the node's worker processes and joins
the other nodes in a c10d rendezvous, so the training script only calls
``torch.distributed.init_process_group()``::

    # one node, 4 workers (local scheduler, from the script's directory)
    $ torchx run dist.ddp -j 4 --script main.py

    # 2 nodes x 4 workers; program arguments go at the end (after -- if they look like options)
    $ torchx run dist.ddp -j 2x4 --script main.py -- --lr 0.1

    # elastic: 1 to 4 nodes of 8 workers; by module instead of script; on a named host type
    $ torchx run -s kubernetes dist.ddp -j 1:4x8 -h gpu.xlarge -m my_pkg.train

``-j`` is ``NPROC``, ``NNODESxNPROC`` or ``MIN:MAXxNPROC`` (see
:func:`parse_nnodes`). The role has ``NNODES`` (or ``MAX``) replicas and, for an
elastic job, ``min_replicas=MIN``. On one node the rendezvous endpoint is
``localhost:0`` (torchrun picks a free port); on several nodes it is port
``--rdzv_port`` of the rank-0 host, read at run time from the environment
variable the scheduler names through :attr:`torchx.specs.macros.rank0_env`, with
``localhost`` as a fallback for schedulers that leave it unset on rank 0 itself.

Two jobs whose rank 0 share a host must not share a rendezvous port: an agent that
finds the port taken joins the other job's store, and fails when that job ends. So
with ``--rdzv_port`` left at its default (29500), the port is read at run time from
:data:`RDZV_PORT_ENV` where the scheduler sets it to a free port of rank 0's host,
one per job (Slurm and local do), and is 29500 where it does not. A port given explicitly is
used as given.

>>> app = ddp("--lr", "0.1", m="my_pkg.train", j="2x4")
>>> role = app.roles[0]
>>> app.name, role.name, role.entrypoint, role.num_replicas, role.min_replicas
('train', 'train', 'bash', 2, 2)
>>> print(role.args[1])  # doctest: +NORMALIZE_WHITESPACE
torchrun --rdzv_backend c10d --rdzv_endpoint $${${rank0_env}:=localhost}:$${TORCHX_RDZV_PORT:-29500}
  --rdzv_id '${app_id}' --nnodes 2 --nproc_per_node 4 --tee 3 --role '' -m my_pkg.train --lr 0.1

Bad input is refused before anything is submitted, with a
:class:`~torchx.components.errors.ComponentArgError`: a malformed ``-j``, both
or neither of ``--script`` and ``-m``, a ``--script`` missing from the image
directory; an unknown ``-h`` raises
:class:`~torchx.specs.errors.UnknownNamedResourceException`.

These functions are written like any component (see :mod:`torchx.components`):
copy one to start your own.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import Final

from torchx.components import DEFAULT_IMAGE
from torchx.components._common import check_script, parse_mount_opts
from torchx.components.errors import ComponentArgError
from torchx.components.structured_arg import (
    StructuredJArgument,
    StructuredNameArgument,
    _main_name,
    parse_nnodes,
)
from torchx.specs.api import AppDef, Role
from torchx.specs.resources import resource
from torchx.specs.templating import macros

__all__ = [
    "DEFAULT_RDZV_PORT",
    "RDZV_PORT_ENV",
    "TORCH_DEBUG_FLAGS",
    "ddp",
    "parse_nnodes",
    "spmd",
]

#: Environment variables that ``--debug true`` sets: synchronous CUDA launches,
#: NCCL desync detection, detailed torch.distributed checks, C++ stack traces.
TORCH_DEBUG_FLAGS: Final[Mapping[str, str]] = {
    "CUDA_LAUNCH_BLOCKING": "1",
    "NCCL_DESYNC_DEBUG": "1",
    "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
    "TORCH_SHOW_CPP_STACKTRACES": "1",
}

_TEE_VALUES: Final = (0, 1, 2, 3)

#: ``--rdzv_port``'s default: the port of rank 0's host for a multi-node rendezvous.
DEFAULT_RDZV_PORT: Final = 29500
#: The environment variable in which a scheduler gives a job its own free port on
#: rank 0's host, used instead of the default ``--rdzv_port`` (never of one given).
RDZV_PORT_ENV: Final = "TORCHX_RDZV_PORT"


def ddp(
    *script_args: str,
    script: str | None = None,
    m: str | None = None,
    image: str = DEFAULT_IMAGE,
    name: str = "/",
    h: str | None = None,
    cpu: int = 2,
    gpu: int = 0,
    memMB: int = 1024,
    j: str = "1x2",
    env: dict[str, str] | None = None,
    metadata: dict[str, str] | None = None,
    max_retries: int = 0,
    rdzv_port: int = DEFAULT_RDZV_PORT,
    rdzv_backend: str = "c10d",
    rdzv_conf: str | None = None,
    mounts: list[str] | None = None,
    debug: bool = False,
    tee: int = 3,
) -> AppDef:
    """Distributed data parallel style application (one role, multi-replica), run with torchrun.

    Each replica (node) runs ``torchrun``, which starts ``nproc_per_node`` workers
    and coordinates them with the other nodes through a rendezvous (``c10d`` by
    default, hosted on rank 0's host at ``rdzv_port``; a single-node job uses
    ``localhost`` and a free port). ``h`` (a named resource) takes precedence over
    ``cpu``, ``gpu`` and ``memMB``.

    Args:
        script_args: arguments to the main module or script
        script: the Python script to run, relative to the image (a directory image is checked for it)
        m: the Python module to run (instead of a script)
        image: the image to run in; the default ``.`` is the directory torchx is launched from
        name: job name as ``{experiment}/{run}``, ``{experiment}/``, ``/{run}`` or ``{run}``;
            the run name defaults to the script or module name
        h: a registered named resource (takes precedence over cpu, gpu and memMB)
        cpu: number of cpus per replica
        gpu: number of gpus per replica
        memMB: cpu memory in MB per replica
        j: ``{nproc}``, ``{nnodes}x{nproc_per_node}`` or elastic ``{min}:{max}x{nproc_per_node}``;
            on gpu hosts nproc_per_node should not exceed the number of gpus
        env: environment variables for the job (e.g. ENV1=v1,ENV2=v2)
        metadata: metadata passed to the scheduler (e.g. KEY1=v1,KEY2=v2)
        max_retries: the number of scheduler retries allowed
        rdzv_port: the port on rank 0's host for the c10d rendezvous store (multi-node only;
            with the default, a scheduler may give each job a free port of its own)
        rdzv_backend: the rendezvous backend (``static`` also passes each node's rank)
        rdzv_conf: additional rendezvous configuration (e.g. join_timeout=600,close_timeout=600)
        mounts: mounts for the job's containers (e.g. type=bind,src=/host,dst=/job[,readonly])
        debug: whether to set the TORCH_DEBUG_FLAGS environment variables
        tee: tee the workers' streams to console and file: 0 none, 1 stdout, 2 stderr, 3 both

    Returns:
        An AppDef of one role, ``nnodes`` replicas running ``bash -c "torchrun ..."``.
    """
    argname = StructuredNameArgument.parse_from(name=name, m=m, script=script)
    min_nnodes, max_nnodes, nproc_per_node, nnodes_rep = parse_nnodes(j)
    if tee not in _TEE_VALUES:
        raise ComponentArgError(f"invalid --tee {tee!r}: expected 0 (none), 1, 2 or 3 (both)")
    if not 0 < rdzv_port < 65536:
        raise ComponentArgError(f"invalid --rdzv_port {rdzv_port!r}: expected a port in 1-65535")
    if script is not None:
        check_script(script, image, "--script")
    res = resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h)

    if max_nnodes == 1:
        # all workers run under one agent: port 0 lets torchrun pick a free port
        endpoint = "localhost:0"
    else:
        # "$$" escapes the macro syntax: after substitution bash sees
        # ${TORCHX_RANK0_HOST:=localhost}:${TORCHX_RDZV_PORT:-29500} (the rank-0 host in
        # whatever variable the scheduler names; the job's own port where it gives one)
        port = (
            f"$${{{RDZV_PORT_ENV}:-{rdzv_port}}}"
            if rdzv_port == DEFAULT_RDZV_PORT
            else str(rdzv_port)
        )
        endpoint = f"$${{{macros.rank0_env}:=localhost}}:{port}"

    quote = shlex.quote
    parts = [
        "torchrun --rdzv_backend",
        quote(rdzv_backend),
    ]
    if rdzv_conf is not None:
        parts += ["--rdzv_conf", quote(rdzv_conf)]
    parts += [
        "--rdzv_endpoint",
        endpoint,
        "--rdzv_id",
        quote(macros.app_id),
        "--nnodes",
        nnodes_rep,
        "--nproc_per_node",
        str(nproc_per_node),
        "--tee",
        str(tee),
        "--role ''",
    ]
    if rdzv_backend == "static":
        parts += ["--node_rank", quote(macros.replica_id)]
    parts += [quote(script)] if script is not None else ["-m", quote(m or "")]
    parts += [quote(a) for a in script_args]

    job_env = dict(env) if env else {}
    job_env["TORCHX_TRACKING_EXPERIMENT_NAME"] = argname.experiment_name
    job_env["TORCHX_TRACKING_RUN_NAME"] = argname.run_name
    job_env.setdefault("LOGLEVEL", os.environ.get("LOGLEVEL", "WARNING"))
    if debug:
        job_env.update(TORCH_DEBUG_FLAGS)

    role = Role(
        name=_main_name(script, m),
        image=image,
        min_replicas=min_nnodes,
        entrypoint="bash",
        args=["-c", " ".join(parts)],
        env=job_env,
        num_replicas=max_nnodes,
        max_retries=max_retries,
        resource=res,
        port_map={"c10d": rdzv_port},
        mounts=parse_mount_opts(mounts),
    )
    return AppDef(name=argname.run_name, roles=[role], metadata=dict(metadata or {}))


def spmd(
    *args: str,
    script: str | None = None,
    m: str | None = None,
    image: str = DEFAULT_IMAGE,
    name: str = "/",
    h: str = "gpu.small",
    j: str = "1x1",
    env: dict[str, str] | None = None,
    metadata: dict[str, str] | None = None,
    max_retries: int = 0,
    mounts: list[str] | None = None,
    debug: bool = False,
) -> AppDef:
    """Single-Program-Multiple-Data application: ``n x m`` copies of one program, on a host type.

    Like ``dist.ddp`` but sized by host: ``-j 2 -h gpu.medium`` runs 2 nodes with
    one process per GPU of a ``gpu.medium`` host. Use it for any distributed PyTorch
    program (DDP, FSDP, RPC); ``-j 1x1`` runs a single process that may still call
    ``torch.distributed.init_process_group``. Multi-node hosts must reach each
    other on port 29500 (or on the job's own port, where the scheduler gives one in
    ``TORCHX_RDZV_PORT``, as Slurm and local do).

    Args:
        args: the arguments to the main module or script
        script: the Python script to run, relative to the image
        m: the Python module to run (instead of a script)
        image: the image to run in; the default ``.`` is the directory torchx is launched from
        name: job name as ``{experiment}/{run}``, ``{experiment}/``, ``/{run}`` or ``{run}``
        h: the type of host to run on; must be a registered named resource
        j: ``{nnodes}`` (one process per gpu of the host), ``{nnodes}x{nproc_per_node}``
            or elastic ``{min}:{max}x{nproc_per_node}``
        env: environment variables for the job (e.g. ENV1=v1,ENV2=v2)
        metadata: metadata passed to the scheduler (e.g. KEY1=v1,KEY2=v2)
        max_retries: the number of scheduler retries allowed
        mounts: mounts for the job's containers (e.g. type=bind,src=/host,dst=/job[,readonly])
        debug: whether to set the TORCH_DEBUG_FLAGS environment variables

    Returns:
        The AppDef built by ``dist.ddp`` for the resolved ``-j``.
    """
    return ddp(
        *args,
        script=script,
        m=m,
        image=image,
        name=name,
        h=h,
        j=str(StructuredJArgument.parse_from(h, j)),
        env=env,
        metadata=metadata,
        max_retries=max_retries,
        mounts=mounts,
        debug=debug,
    )
