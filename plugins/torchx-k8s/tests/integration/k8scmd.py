"""Helpers of the integration tests: objects made and the image (the ``torchx`` command is
the kit's :class:`torchx.schedulers.testing.cli.TorchxCli`)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchx.runner import Runner
    from torchx.specs import AppState

GROUPS = {
    "volcano": ("batch.volcano.sh", "v1alpha1", "jobs"),
    "jobset": ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
}


def image() -> str:
    """A small image the node has (dev/k8s copies it from dev/docker's engine)."""
    return os.environ.get("TORCHX_DEV_DOCKER_BUSYBOX_IMAGE", "busybox:1")


def wait_ended(runner: Runner, handle: str, timeout: float = 180) -> AppState:
    """The app's terminal state, polled through the Runner; fails after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        status = runner.status(handle)
        assert status is not None
        if status.state.is_terminal():
            return status.state
        assert time.monotonic() < deadline, f"{handle} still {status.state}: {status}"
        time.sleep(0.5)


class Made:
    """App ids made by a test: deleted (through the API) when it ends."""

    def __init__(self, kube: Any) -> None:
        self.kube = kube
        self.ids: list[str] = []

    def add(self, app_id: str) -> str:
        self.ids.append(app_id)
        return app_id

    def get(self, app_id: str) -> dict[str, Any] | None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        ns, name, *rest = app_id.split("@")[0].split(":")
        group, version, plural = GROUPS[rest[0] if rest else "volcano"]
        try:
            return dict(
                client.CustomObjectsApi(self.kube).get_namespaced_custom_object(
                    group, version, ns, plural, name
                )
            )
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def select(self, selector: str, flavour: str = "volcano") -> list[dict[str, Any]]:
        """The objects of ``flavour`` in ``default`` matching the label ``selector``."""
        from kubernetes import client

        group, version, plural = GROUPS[flavour]
        answer = client.CustomObjectsApi(self.kube).list_namespaced_custom_object(
            group, version, "default", plural, label_selector=selector
        )
        return list(answer["items"])

    def delete_all(self) -> None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        for app_id in self.ids:
            ns, name, *rest = app_id.split("@")[0].split(":")
            group, version, plural = GROUPS[rest[0] if rest else "volcano"]
            try:
                client.CustomObjectsApi(self.kube).delete_namespaced_custom_object(
                    group, version, ns, plural, name
                )
            except ApiException as e:
                if e.status != 404:
                    raise
