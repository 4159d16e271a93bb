"""The app's own network: made at submit, given back once the app has ended.

An app of more than one replica gets a user-defined network (its replicas find each
other by container name). An engine has addresses for a limited number of them (a
default pool of /24s: about 128 here), so a network is removed once its app is seen
ended (:func:`remove`, from ``describe``; the containers, and so the app's status and
logs, stay until ``delete``), and a submit that finds the engine out of addresses
first removes those of ended apps nobody has looked at since (:func:`release_ended`).
"""

from __future__ import annotations

from torchx.schedulers.contract.errors import SchedulerError
from torchx_docker import labels
from torchx_docker.backend import DockerBackend, engine_reason, refusals


def create(backend: DockerBackend, name: str, app_id: str) -> None:
    """Creates the app's network; one of that name already made for this app is reused."""

    def make() -> None:
        backend.engine().create_network(
            name,
            driver="bridge",
            check_duplicate=True,
            labels={labels.APP_ID: app_id, labels.VERSION: labels.FORMAT},
        )

    try:
        try:
            make()
        except refusals() as e:
            if "address pool" not in engine_reason(e) or not release_ended(backend):
                raise
            make()
    except refusals() as e:
        if getattr(e, "status_code", None) != 409:
            raise
        found = backend.api().networks(names=[name])
        if not any((n.get("Labels") or {}).get(labels.APP_ID) == app_id for n in found):
            raise SchedulerError(
                f"a network named {name} exists on the Docker engine but is not app "
                f"{app_id}'s: remove it (docker network rm {name}) or submit again"
            ) from None


def remove(backend: DockerBackend, name: str) -> None:
    """Removes the network ``name``; one already gone (or still in use) is left."""
    try:
        backend.engine().remove_network(name)
    except refusals() as e:
        if getattr(e, "status_code", None) not in (403, 404, 409):
            raise


def release_ended(backend: DockerBackend) -> int:
    """Removes the networks of apps none of whose replicas runs any more; how many."""
    live = {
        (c.get("Labels") or {}).get(labels.APP_ID)
        for c in backend.containers(None)
        if c.get("State") not in ("exited", "dead")
        and (c.get("Labels") or {}).get(labels.KIND, labels.KIND_REPLICA) == labels.KIND_REPLICA
    }
    api = backend.api()
    removed = 0
    for net in api.networks(filters=labels.all_apps_filter()):
        if (net.get("Labels") or {}).get(labels.APP_ID) not in live:
            try:
                api.remove_network(net["Id"])
                removed += 1
            except Exception:
                pass  # in use after all, or gone: another is freed
    return removed
