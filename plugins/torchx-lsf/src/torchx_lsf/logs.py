"""A replica's log: its files in the app's private directory, followed until the app ends.

Each replica's script sends its stdout and stderr to ``ROLE-K.out``/``.err`` in
``JOBDIR/.torchx-lsf/<app id>/``; torchx-runner's
:func:`~torchx.schedulers.helpers.follow.replica_log` reads them (merged when both are asked
for), follows them while the app runs, asking LSF at most once per
:data:`STATUS_INTERVAL`, and, once the app has ended, says where LSF's own output of
a replica that never started is, rather than giving an empty log.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from torchx.schedulers.contract.api import Stream
from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.helpers.follow import check_replica, replica_log
from torchx.schedulers.helpers.polling import Polled
from torchx_lsf.parse import JobRecord

#: Seconds between two status calls of a followed log (``log_iter(should_tail=True)``).
STATUS_INTERVAL = 1.0


def app_log(
    app_id: str,
    records: list[JobRecord],
    app_dir: str,
    role_name: str,
    k: int,
    *,
    regex: str | None,
    should_tail: bool,
    streams: Stream | None,
    ended: bool,
    has_ended: Callable[[], bool],
) -> Polled:
    """Replica ``k`` of ``role_name`` of app ``app_id`` (jobs ``records``), see the module."""
    replicas: dict[str, list[int]] = {}
    for rec in records:
        role, rid = rec.replica or ("", 0)
        replicas.setdefault(role, []).append(rid)
    check_replica(replicas, role_name, k, f"app {app_id}")
    if not app_dir:
        raise SchedulerError(
            f"app {app_id} has no private directory of yours to read logs from (LSF "
            f"gives {records[0].output_dir or 'no output directory'})"
        )
    stem = f"{role_name}-{k}"

    def missing(paths: list[str]) -> SchedulerError:
        # a replica that never started (killed while pending, or its script refused to
        # run) leaves no log file: LSF's own output of its job says why
        return SchedulerError(
            f"no log of replica {role_name}/{k}: {' and '.join(paths)} "
            f"{'is' if len(paths) == 1 else 'are'} missing (the replica never started?); "
            f"LSF's own output of the job: {app_dir}/{stem}.lsf.out and .lsf.err"
        )

    return replica_log(
        os.path.join(app_dir, stem),
        streams,
        should_tail=should_tail,
        ended=ended,
        has_ended=has_ended,
        missing=missing,
        regex=regex,
        interval=STATUS_INTERVAL,
    )
