"""The README's distributed PyTorch example, unchanged, in two containers (real torch, gloo).

``torchx run -s docker --log dist.ddp -j 2x1 --script examples/ddp/train.py`` from a
directory holding a copy of the repository's examples and this ``.torchxconfig``::

    [cli:run]
    workspace = .

    [component:dist.ddp]
    image = torchx-dev/python:2

so the command line is the README's: the launch directory becomes a workspace image on
top of dev/docker's Python image (torch and numpy in it), and each of the two replicas
runs in a container of its own on the app's network, where torchrun's c10d rendezvous
finds rank 0 by its container name. Both ranks all-reduce, and rank 0's loss goes down.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import docker
from torchx_docker import labels

TORCHX = str(Path(sys.executable).parent / "torchx")
REPO = Path(os.environ.get("TORCHX_REPO_ROOT") or Path(__file__).resolve().parents[4])
README = ("dist.ddp", "-j", "2x1", "--script", "examples/ddp/train.py")
RESULT = re.compile(
    r"train/(\d) .*rank (\d+)/(\d+): all_reduce sum = (\d+) \(expected (\d+)\) on (\S+)"
)
TRAINED = re.compile(r"trained \d+ epochs on (\d+) ranks: loss ([\d.]+) -> ([\d.]+)")


def test_readme_ddp_example_in_two_containers(tmp_path: Path) -> None:
    image = os.environ.get("TORCHX_DEV_DOCKER_PYTHON_IMAGE", "torchx-dev/python:2")
    work = tmp_path / "work"
    shutil.copytree(REPO / "examples" / "ddp", work / "examples" / "ddp")
    (work / ".torchxconfig").write_text(
        f"[cli:run]\nworkspace = .\n\n[component:dist.ddp]\nimage = {image}\n"
    )
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    client = docker.from_env()
    handle = built_image = ""
    try:
        proc = subprocess.run(
            [TORCHX, "run", "-s", "docker", "--log", *README],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        handle = proc.stdout.strip().splitlines()[0]
        assert handle.startswith("docker://"), proc.stdout[:500]
        assert "SUCCEEDED" in proc.stderr, proc.stderr[-3000:]

        # one rank in each of two containers, each all-reducing over both
        ranks = {}
        for m in RESULT.finditer(proc.stdout):
            replica, rank, size, total, expected = map(int, m.groups()[:5])
            assert size == 2 and total == expected == 3, m.group(0)
            ranks[rank] = (replica, m.group(6))
        assert sorted(ranks) == [0, 1], proc.stdout[-3000:]
        assert sorted(r for r, _ in ranks.values()) == [0, 1]
        app_id = handle.rsplit("/", 1)[1]
        containers = client.containers.list(
            all=True,
            filters={
                "label": [f"{labels.APP_ID}={app_id}", f"{labels.KIND}={labels.KIND_REPLICA}"]
            },
        )
        assert sorted(c.attrs["Config"]["Hostname"] for c in containers) == sorted(
            host for _, host in ranks.values()
        )
        assert all(c.attrs["State"]["ExitCode"] == 0 for c in containers)
        # the containers ran the workspace image built on the Python image
        (built_image,) = {c.attrs["Config"]["Image"] for c in containers}
        assert built_image.startswith("torchx-workspace:ws-")
        assert client.images.get(built_image).labels["torchx_docker.base_image"] == image

        trained = TRAINED.search(proc.stdout)
        assert trained, proc.stdout[-3000:]
        assert int(trained.group(1)) == 2
        assert float(trained.group(3)) < float(trained.group(2)), trained.group(0)
    finally:
        if handle:
            subprocess.run([TORCHX, "delete", handle], env=env, capture_output=True, timeout=60)
        if built_image:
            client.images.remove(built_image, force=True)
        client.close()
