"""The AppDef as Acme Batch's request: pure, no backend call.

A plain dict (what ``torchx run --dryrun -s acme`` prints as JSON): the job's id and
name, its queue, and one task per replica with its argv and environment, the
``specs.macros`` of each replica's arguments substituted.
"""

from __future__ import annotations

from typing import Any

from acme_torchx.options import AcmeOpts
from torchx.specs import AppDef, macros


def build_request(app: AppDef, job_id: str, opts: AcmeOpts) -> dict[str, Any]:
    """The request submitting ``app`` as job ``job_id`` would send."""
    tasks = []
    for role in app.roles:
        for replica in range(role.num_replicas):
            values = macros.Values(
                img_root="",
                app_id=job_id,
                replica_id=str(replica),
                rank0_env="ACME_RANK0_HOST",
            )
            task = values.apply(role)
            tasks.append(
                {
                    "role": role.name,
                    "replica": replica,
                    "argv": [task.entrypoint, *task.args],
                    "env": {"ACME_RANK0_HOST": "localhost", **task.env},
                    "instance": role.resource.capabilities.get("acme/instance", "any"),
                }
            )
    return {"id": job_id, "name": app.name, "queue": opts.queue, "tasks": tasks}
