"""The restart engine of the ``ROLE`` and ``APPLICATION`` retry policies.

The engine restarts a container of the ``REPLICA`` policy itself (its ``on-failure``
restart policy). The other two restart more than the replica that failed: its role's
containers (``ROLE``) or every role's (``APPLICATION``). Nothing runs beside the app
to do that, so it happens when something follows the app: ``describe`` (``torchx run
--wait``, ``status``, ``log -f``) calls :func:`restart_if_due`, which restarts the
role (or app) of a failed replica with restarts left, in place.

Exactly once, whichever process notices: a restart first creates its ``restart``
marker container (:func:`~torchx_docker.request.marker_name`, named by scope and
attempt), which only one process can; the others see it exists and leave the restart
to its maker. The marker is renamed ``...-done`` once the containers were restarted,
so the markers count the restarts used (:func:`~torchx_docker.status.read_markers`),
and a replica restarted by a marker not yet done reads PENDING, not FAILED.
"""

from __future__ import annotations

from torchx.specs import RetryPolicy
from torchx_docker import labels
from torchx_docker.backend import DockerBackend
from torchx_docker.request import marker_name
from torchx_docker.status import Seen, read_markers, restart_due


def restart_if_due(backend: DockerBackend, app_id: str, seen: list[Seen]) -> bool:
    """Restarts the role (or app) of a failed replica with restarts left; True if done."""
    markers = read_markers(seen)
    if markers.restarting:
        return False
    replicas = [c for c in seen if c.kind == labels.KIND_REPLICA]
    for c in replicas:
        if not restart_due(c, markers):
            continue
        if c.retry_policy == RetryPolicy.APPLICATION.value:
            scope, used = "", markers.app_restarts
        else:
            scope, used = c.role, markers.role_restarts.get(c.role, 0)
        targets = [r for r in replicas if not scope or r.role == scope]
        _restart(backend, app_id, scope, used + 1, c.image, targets)
        return True
    return False


def _restart(
    backend: DockerBackend, app_id: str, scope: str, attempt: int, image: str, targets: list[Seen]
) -> None:
    name = marker_name(app_id, "restart", scope or "~app", attempt)
    extra = {labels.ATTEMPT: str(attempt), labels.RESTART_ROLE: scope}
    marker = backend.create_marker(name, image, app_id, labels.KIND_RESTART, extra)
    if marker is None:
        return  # another process restarts it
    graces = [(c.id, int(c.labels.get(labels.STOP_GRACE, "10") or 10)) for c in targets]
    try:
        backend.restart(graces)
    finally:
        # done even when a container could not be restarted (removed meanwhile): the
        # next describe then sees the replicas as they are, not a restart under way
        backend.rename(marker, f"{name}-done")
