"""torchx_docker.images against the real dockerd and loopback registry of ``dev/docker up``.

Builds workspace images on the busybox test image, pushes them to the registry, reads
them back through the registry's own ``/v2/`` API, pulls them by digest into an engine
that no longer has them and runs them. Everything made here (local images, registry
manifests) is removed afterwards.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from torchx_docker.images import ImageBuilder, ImageRef, image_tag

from torchx.schedulers.contract.errors import SchedulerError
from torchx.specs import Resource, Role, Workspace

MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    c = docker.from_env()
    try:
        c.ping()
    except docker.errors.DockerException as e:
        pytest.fail(f'no engine at DOCKER_HOST ({e}): run `eval "$(dev/docker up)"` first')
    yield c
    c.close()


@pytest.fixture(scope="module")
def registry() -> str:
    address = os.environ.get("TORCHX_DEV_DOCKER_REGISTRY", "")
    if not address:
        pytest.fail('TORCHX_DEV_DOCKER_REGISTRY is not set: run `eval "$(dev/docker up)"` first')
    return address


@pytest.fixture(scope="module")
def base() -> str:
    return os.environ.get("TORCHX_DEV_DOCKER_BUSYBOX_IMAGE", "torchx-dev/busybox:1")


def registry_get(registry: str, path: str, method: str = "GET") -> tuple[dict[str, str], bytes]:
    req = urllib.request.Request(f"http://{registry}/v2/{path}", method=method)
    req.add_header("Accept", MANIFEST)
    with urllib.request.urlopen(req, timeout=10) as r:
        return dict(r.headers), r.read()


@pytest.fixture
def made(client: docker.DockerClient, registry: str) -> Iterator[list[str]]:
    """Names of images (``repo:tag`` or ``repo@digest``) the test made: removed afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        if "@" in name and name.startswith(registry + "/"):
            repo, digest = name[len(registry) + 1 :].split("@")
            try:
                registry_get(registry, f"{repo}/manifests/{digest}", method="DELETE")
            except OSError:
                pass
        try:
            client.images.remove(name, force=True)
        except docker.errors.ImageNotFound:
            pass


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "pkg").mkdir(parents=True)
    (p / "main.sh").write_text("echo from the workspace: $(cat pkg/data.txt)\n")
    (p / "main.sh").chmod(0o755)
    (p / "pkg" / "data.txt").write_text("42\n")
    (p / "secret.key").write_text("not for the image\n")
    (p / "scratch").mkdir()
    (p / "scratch" / "big.bin").write_bytes(b"0" * 4096)
    (p / ".dockerignore").write_text("*.key\n")
    (p / ".torchxignore").write_text("scratch/\n")
    return p


def role(image: str) -> Role:
    return Role("trainer", image, "sh", args=["main.sh"], resource=Resource(1, 0, 64))


def run(client: docker.DockerClient, image: str, cmd: str) -> str:
    out = client.containers.run(image, ["sh", "-c", cmd], remove=True, stdout=True, stderr=True)
    return out.decode() if isinstance(out, bytes) else str(out)


def test_build_push_pull_by_digest_and_run(
    client: docker.DockerClient, registry: str, base: str, proj: Path, made: list[str]
) -> None:
    b = ImageBuilder()
    ws = Workspace({str(proj): ""})
    repo = f"{registry}/torchx-test"
    ref = b.plan(role(base), ws, repo)
    assert ref == ImageRef(repo, image_tag(role(base), ws))
    made.append(str(ref))
    assert b.build(role(base), ws, ref) == ref
    pushed = b.push(ref)
    made.append(pushed)
    assert pushed.startswith(f"{repo}@sha256:")

    # The registry has the tag, and the tag's manifest is the pushed digest.
    _, body = registry_get(registry, "torchx-test/tags/list")
    assert ref.tag in json.loads(body)["tags"]
    headers, _ = registry_get(registry, f"torchx-test/manifests/{ref.tag}", method="HEAD")
    assert headers["Docker-Content-Digest"] == pushed.split("@")[1]

    # Gone from the engine, pulled back by digest, it runs the workspace's files.
    client.images.remove(str(ref), force=True)
    with pytest.raises(docker.errors.ImageNotFound):
        client.images.get(str(ref))
    client.images.pull(pushed)
    out = run(client, pushed, "sh main.sh; ls -a; ls pkg")
    assert "from the workspace: 42" in out
    listing = out.split()
    assert "main.sh" in listing and "data.txt" in listing and ".dockerignore" in listing
    assert "secret.key" not in listing and "scratch" not in listing  # both ignore files


def test_a_rebuild_of_the_same_files_is_a_no_op(
    client: docker.DockerClient, base: str, proj: Path, made: list[str]
) -> None:
    b = ImageBuilder()
    ws = Workspace({str(proj): "app"})
    ref = b.plan(role(base), ws, None)
    made.append(str(ref))
    b.build(role(base), ws, ref)
    first = client.images.get(str(ref)).id
    assert b.build(role(base), ws, ref) == ref
    assert client.images.get(str(ref)).id == first
    assert "from the workspace: 42" in run(client, str(ref), "cd app && sh main.sh")


def test_dockerfile_torchx_is_used(
    client: docker.DockerClient, base: str, proj: Path, made: list[str]
) -> None:
    (proj / "Dockerfile.torchx").write_text(
        "ARG IMAGE\nFROM $IMAGE\nCOPY . /opt/ws/\nRUN echo built > /opt/ws/marker\n"
    )
    b = ImageBuilder()
    ws = Workspace({str(proj): ""})
    ref = b.plan(role(base), ws, None)
    made.append(str(ref))
    b.build(role(base), ws, ref)
    assert run(client, str(ref), "cat /opt/ws/marker /opt/ws/pkg/data.txt").split() == [
        "built",
        "42",
    ]


def test_a_missing_base_image_is_one_line_and_tags_nothing(
    client: docker.DockerClient, proj: Path
) -> None:
    b = ImageBuilder()
    ws = Workspace({str(proj): ""})
    missing = "torchx-dev/no-such-image:1"
    ref = b.plan(role(missing), ws, None)
    with pytest.raises(SchedulerError, match=f"on {missing} failed") as e:
        b.build(role(missing), ws, ref)
    assert "\n" not in str(e.value)
    with pytest.raises(docker.errors.ImageNotFound):
        client.images.get(str(ref))


def test_a_failed_push_keeps_the_local_image(
    client: docker.DockerClient, base: str, proj: Path, made: list[str]
) -> None:
    b = ImageBuilder()
    ws = Workspace({str(proj): ""})
    ref = b.plan(role(base), ws, "127.0.0.1:1/torchx-test")  # nothing listens on port 1
    made.append(str(ref))
    b.build(role(base), ws, ref)
    with pytest.raises(SchedulerError, match=r"pushing the workspace image 127\.0\.0\.1:1/") as e:
        b.push(ref)
    assert "\n" not in str(e.value)
    client.images.get(str(ref))  # still there: a cache, not a half-submitted app
