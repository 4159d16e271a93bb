"""A workspace run through the ``torchx`` command: build, push to the loopback registry, run.

``torchx run -s docker --workspace . -cfg image_repo=<registry>/torchx-test utils.sh ...``
from a directory holding a script: the workspace is built on the busybox test image,
pushed to dev/docker's registry, and the replica runs the pushed ``repo:tag``. The
registry's own ``/v2/`` API is asked what it holds; then the local image is removed,
pulled back from the registry, and the same command runs what was pulled (the build
finds the content-addressed tag present and builds nothing). A dry run before all of
that names the same image and builds nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from torchx_docker import labels

TORCHX = str(Path(sys.executable).parent / "torchx")
MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"


def torchx(work: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(work.parent / "home")}
    proc = subprocess.run(
        [TORCHX, *args], cwd=work, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"torchx {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}"
    return proc


def registry_get(registry: str, path: str, method: str = "GET") -> tuple[dict[str, str], bytes]:
    req = urllib.request.Request(f"http://{registry}/v2/{path}", method=method)
    req.add_header("Accept", MANIFEST)
    with urllib.request.urlopen(req, timeout=10) as r:
        return dict(r.headers), r.read()


@pytest.fixture
def client() -> Iterator[docker.DockerClient]:
    c = docker.from_env()
    yield c
    c.close()


@pytest.fixture
def registry() -> str:
    address = os.environ.get("TORCHX_DEV_DOCKER_REGISTRY", "")
    if not address:
        pytest.fail('TORCHX_DEV_DOCKER_REGISTRY is not set: run `eval "$(dev/docker up)"` first')
    return address


@pytest.fixture
def work(tmp_path: Path) -> Path:
    w = tmp_path / "proj"
    w.mkdir()
    (w / "main.sh").write_text('echo "workspace says $(cat data.txt)"\n')
    (w / "data.txt").write_text("hello from the image\n")
    (w / "private.key").write_text("secret\n")
    (w / ".dockerignore").write_text("*.key\n")
    return w


def test_workspace_is_built_pushed_and_run(
    client: docker.DockerClient, registry: str, work: Path
) -> None:
    base = os.environ.get("TORCHX_DEV_DOCKER_BUSYBOX_IMAGE", "torchx-dev/busybox:1")
    repo = f"{registry}/torchx-test"
    cmd = ["-s", "docker", "--workspace", ".", "-cfg", f"image_repo={repo}"]
    app = ["utils.sh", "--image", base, "sh", "-c", "sh main.sh; ls"]
    pushed_digest = ""
    image = ""
    handles: list[str] = []
    try:
        # A dry run names the image the submission will build, and builds nothing.
        dry = torchx(work, "run", "--dryrun", *cmd, *app).stdout
        planned = [
            line.split()[-1] for line in dry.splitlines() if line.strip().startswith("image:")
        ]
        assert len(planned) == 1 and planned[0].startswith(f"{repo}:ws-"), dry
        image = planned[0]
        with pytest.raises(docker.errors.ImageNotFound):
            client.images.get(image)

        # The run builds, pushes and runs that very image.
        handle = torchx(work, "run", "--wait", *cmd, *app).stdout.strip().splitlines()[0]
        handles.append(handle)
        assert torchx(work, "status", handle).stdout.count("SUCCEEDED") >= 1
        out = torchx(work, "log", f"{handle}/sh/0").stdout
        assert "workspace says hello from the image" in out
        assert "private.key" not in out and "main.sh" in out  # .dockerignore honoured
        (container,) = client.containers.list(all=True, filters=_replicas(handle))
        assert container.attrs["Config"]["Image"] == image

        # The registry holds the tag, and its manifest is the local image's digest.
        tag = image.rsplit(":", 1)[1]
        _, body = registry_get(registry, "torchx-test/tags/list")
        assert tag in json.loads(body)["tags"]
        headers, _ = registry_get(registry, f"torchx-test/manifests/{tag}", method="HEAD")
        pushed_digest = headers["Docker-Content-Digest"]
        assert f"{repo}@{pushed_digest}" in client.images.get(image).attrs["RepoDigests"]

        # Gone from the engine, pulled back from the registry: the same command runs it.
        container.remove(force=True)
        client.images.remove(image, force=True)
        pulled = client.images.pull(repo, tag=tag)
        handle2 = torchx(work, "run", "--wait", *cmd, *app).stdout.strip().splitlines()[0]
        handles.append(handle2)
        (again,) = client.containers.list(all=True, filters=_replicas(handle2))
        assert again.attrs["Config"]["Image"] == image and again.attrs["Image"] == pulled.id
        assert "workspace says hello" in torchx(work, "log", f"{handle2}/sh/0").stdout
    finally:
        for h in handles:
            subprocess.run([TORCHX, "delete", h], capture_output=True, timeout=60, cwd=work)
        if image:
            try:
                client.images.remove(image, force=True)
            except docker.errors.ImageNotFound:
                pass
        if pushed_digest:
            registry_get(registry, f"torchx-test/manifests/{pushed_digest}", method="DELETE")


def _replicas(handle: str) -> dict[str, list[str]]:
    """The engine's filter for the replica containers of the app ``handle`` names."""
    app_id = handle.rsplit("/", 1)[1]
    return {"label": [f"{labels.APP_ID}={app_id}", f"{labels.KIND}={labels.KIND_REPLICA}"]}
