"""Components the integration tests run on the cluster (``torchx run apps.py:NAME``).

Each replica runs with this test venv's interpreter (the cluster's nodes are this
machine), so the kit's programs (:mod:`torchx.schedulers.testing.rendezvous`) need
nothing installed on the nodes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from torchx.schedulers.testing import rendezvous
from torchx.specs import AppDef, Resource, Role, macros

KIT = Path(rendezvous.__file__).parent
SMALL = Resource(cpu=1, gpu=0, memMB=256)


def meet(port: int = 23456, replicas: int = 2) -> AppDef:
    """Replicas on different nodes meet over TCP at rank 0's host, found through rank0_env.

    Args:
        port: the TCP port rank 0 listens on
        replicas: how many replicas (one node each)
    """
    # "$$" escapes the macro syntax: the shell sees $TORCHX_RANK0_HOST (or the scheduler's name)
    program = f"{sys.executable} {rendezvous.__file__} --node-var SLURMD_NODENAME"
    return AppDef(
        name="meet",
        roles=[
            Role(
                name="meet",
                image=str(KIT),
                entrypoint="bash",
                args=["-c", f'RANK0_HOST="$${macros.rank0_env}" exec {program}'],
                env={"RANK": macros.replica_id, "WORLD": str(replicas), "RDZV_PORT": str(port)},
                num_replicas=replicas,
                resource=SMALL,
            )
        ],
    )


def two_roles() -> AppDef:
    """A ``ps`` role of 1 replica and a ``worker`` role of 2, each saying who it is on both streams."""
    say = (
        'echo "out $TORCHX_ROLE_NAME/$1 app=$2 node=$SLURMD_NODENAME"; '
        'echo "err $TORCHX_ROLE_NAME/$1" >&2'
    )
    return AppDef(
        name="two-roles",
        roles=[
            Role(
                name=name,
                image="/",
                entrypoint="bash",
                args=["-c", say, "say", macros.replica_id, macros.app_id],
                env={"TORCHX_ROLE_NAME": name},
                num_replicas=n,
                resource=SMALL,
            )
            for name, n in (("ps", 1), ("worker", 2))
        ],
    )


def flaky(max_retries: int = 1) -> AppDef:
    """Fails its first run (exit 7) and succeeds when Slurm reruns it (a requeue).

    Args:
        max_retries: how many times the app may be rerun
    """
    check = (
        'echo "attempt ${SLURM_RESTART_COUNT:-0}"; [ "${SLURM_RESTART_COUNT:-0}" -ge 1 ] || exit 7'
    )
    return AppDef(
        name="flaky",
        roles=[
            Role(
                name="flaky",
                image="/",
                entrypoint="bash",
                args=["-c", check],
                max_retries=max_retries,
                resource=SMALL,
            )
        ],
    )


def equals_entrypoint(canary: str) -> AppDef:
    """An entrypoint holding '=' (``env`` once took it for an assignment and ran ``touch``).

    Args:
        canary: the file ``touch`` would create if it ran
    """
    role = Role(name="eq", image="/", entrypoint="X=1", args=["touch", canary], resource=SMALL)
    return AppDef(name="equals", roles=[role])
