"""Helpers of the integration tests: the real ``torchx`` command, objects made, the image."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TORCHX = str(Path(sys.executable).parent / "torchx")
GROUPS = {
    "volcano": ("batch.volcano.sh", "v1alpha1", "jobs"),
    "jobset": ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
}


def image() -> str:
    """A small image the stand-in's node has (when it runs); any name does otherwise."""
    return os.environ.get("TORCHX_DEV_DOCKER_BUSYBOX_IMAGE", "busybox:1")


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


class Cli:
    """The real ``torchx`` command in a private HOME; ``cli(..., rc=0)`` checks the exit."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.home.mkdir()
        self.env = {**os.environ, "HOME": str(self.home), "TORCHX_HOME": str(root / "state")}
        self.env.pop("TORCHXCONFIG", None)

    def __call__(self, *args: str, rc: int | None = 0, timeout: float = 60) -> Any:
        proc = subprocess.run(
            [TORCHX, *args],
            cwd=self.home,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if rc is not None:
            assert proc.returncode == rc, (
                f"torchx {' '.join(args)} exited {proc.returncode}, expected {rc}\n"
                f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
            )
            assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    def status(self, handle: str) -> dict[str, Any]:
        out = json.loads(self("status", "--json", handle).stdout)
        assert out["kind"] == "AppStatus", out
        return dict(out["data"]["status"])
