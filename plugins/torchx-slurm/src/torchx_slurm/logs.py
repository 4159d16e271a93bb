"""A replica's log: its files in the job's own directory, followed until the job ends.

The job script sends each replica's stdout and stderr to
``JOB_DIR/.torchx-slurm/<job id>/slurm-<id>-<role>-<k>.out``/``.err``;
torchx-runner's :func:`~torchx.schedulers.helpers.follow.replica_log` reads them (merged when
both are asked for), follows them while the job runs, asking Slurm at most once per
:data:`STATUS_INTERVAL`, and, once the job has ended, says why a file is missing
(Slurm's own errors, :func:`~torchx_slurm.status.slurm_errors`) rather than giving an
empty log.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from torchx.schedulers.contract.api import DescribeAppResponse, Stream
from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.helpers.follow import check_replica, replica_log
from torchx.schedulers.helpers.polling import Polled
from torchx_slurm.jobfiles import STATE_DIR, is_own_file
from torchx_slurm.status import slurm_errors

#: Seconds between two status calls of a followed log (``log_iter(should_tail=True)``).
STATUS_INTERVAL = 1.0


def job_log(
    desc: DescribeAppResponse,
    role_name: str,
    k: int,
    *,
    regex: str | None,
    should_tail: bool,
    streams: Stream | None,
    has_ended: Callable[[], bool],
) -> Polled:
    """Replica ``k`` of ``role_name`` of the job ``desc`` describes (see the module)."""
    app_id = desc.app_id
    replicas = {r.role: [rep.id for rep in r.replicas] for r in desc.roles_statuses}
    check_replica(replicas, role_name, k, f"job {app_id}")
    if not desc.ui_url:
        raise SchedulerError(f"Slurm does not say where job {app_id} runs (no work dir)")
    job_dir = desc.ui_url.removeprefix("file://")
    # the job's private copy, never what another user put in the (shared) job directory
    # under that name; a job submitted before the logs moved has them in the job dir
    name = f"slurm-{app_id}-{role_name}-{k}"
    base = os.path.join(job_dir, STATE_DIR, app_id, name)
    if not os.path.exists(base + ".out") and is_own_file(os.path.join(job_dir, name + ".out")):
        base = os.path.join(job_dir, name)

    def missing(paths: list[str]) -> SchedulerError:
        # a replica that never started (its srun failed), or a job directory deleted or
        # not writable, leaves no log file: Slurm's own errors say why
        said = slurm_errors(job_dir, app_id)
        return SchedulerError(
            f"no log of replica {role_name}/{k} of job {app_id}: {' and '.join(paths)} "
            f"{'is' if len(paths) == 1 else 'are'} missing"
            + (f"; Slurm said: {' | '.join(said)}" if said else "")
        )

    return replica_log(
        base,
        streams,
        should_tail=should_tail,
        ended=desc.state.is_terminal(),
        has_ended=has_ended,
        missing=missing,
        regex=regex,
        interval=STATUS_INTERVAL,
    )
