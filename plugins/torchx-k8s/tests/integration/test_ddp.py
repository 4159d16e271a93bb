"""The README's distributed PyTorch example on Kubernetes: two pods, real torch, gloo.

``torchx run -s kubernetes --log dist.ddp -j 2x1 --script examples/ddp/train.py`` from a
directory holding a copy of the repository's examples and this ``.torchxconfig``::

    [cli:run]
    workspace = .

    [component:dist.ddp]
    image = torchx-dev/python:2

    [kubernetes]
    image_repo = 127.0.0.1:15000/torchx-it

so the command line is the README's: the launch directory becomes an image on top of
dev/docker's Python image (torchx-docker's builder, the plugin's ``docker`` extra),
pushed to dev/docker's registry, and the Volcano Job's two pods run it on the
real node; torchrun's c10d rendezvous finds rank 0 by the host name Volcano's
``svc`` plugin gives it. Both ranks all-reduce, and rank 0's loss goes down.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TORCHX = str(Path(sys.executable).parent / "torchx")
REPO = Path(os.environ.get("TORCHX_REPO_ROOT") or Path(__file__).resolve().parents[4])
README = ("dist.ddp", "-j", "2x1", "--script", "examples/ddp/train.py")
RESULT = re.compile(r"rank (\d+)/(\d+): all_reduce sum = (\d+) \(expected (\d+)\) on (\S+)")
TRAINED = re.compile(r"trained \d+ epochs on (\d+) ranks: loss ([\d.]+) -> ([\d.]+)")


@pytest.mark.parametrize("flavour", ["volcano", "jobset"])
def test_readme_ddp_example_in_two_pods(tmp_path: Path, flavour: str) -> None:
    image = os.environ.get("TORCHX_DEV_DOCKER_PYTHON_IMAGE", "torchx-dev/python:2")
    registry = os.environ.get("TORCHX_DEV_DOCKER_REGISTRY", "127.0.0.1:15000")
    work = tmp_path / "work"
    shutil.copytree(REPO / "examples" / "ddp", work / "examples" / "ddp")
    (work / ".torchxconfig").write_text(
        f"[cli:run]\nworkspace = .\n\n[component:dist.ddp]\nimage = {image}\n\n"
        f"[kubernetes]\nimage_repo = {registry}/torchx-it\nflavour = {flavour}\n"
    )
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    handle = ""
    try:
        proc = subprocess.run(
            [TORCHX, "run", "-s", "kubernetes", "--log", *README],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        handle = proc.stdout.strip().splitlines()[0]
        assert handle.startswith("kubernetes://"), proc.stdout[:500]
        assert "SUCCEEDED" in proc.stderr, proc.stderr[-3000:]
        ranks = {}
        for m in RESULT.finditer(proc.stdout):
            rank, size, total, expected = map(int, m.groups()[:4])
            assert size == 2 and total == expected == 3, m.group(0)
            ranks[rank] = m.group(5)
        assert sorted(ranks) == [0, 1], proc.stdout[-3000:]
        trained = TRAINED.search(proc.stdout)
        assert trained, proc.stdout[-3000:]
        assert int(trained.group(1)) == 2
        assert float(trained.group(3)) < float(trained.group(2)), trained.group(0)
    finally:
        if handle:
            subprocess.run([TORCHX, "delete", handle], env=env, capture_output=True, timeout=60)
