"""Bind mounts through ``torchx``: a host path that exists is mounted; one that does not
is refused in one line, at dry run and at submit, before anything is created (the
engine's legacy ``Binds`` made it, owned by root, and ran the job on an empty folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dockercmd import busybox

from torchx.schedulers.testing.cli import TorchxCli


def test_a_bind_mount_of_an_existing_path_is_mounted(cli: TorchxCli, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "in.txt").write_text("from the host\n")
    _, proc = cli.run(
        "--wait", "--log", "utils.sh", "--image", busybox(), "--memMB", "64",
        "--mounts", f"type=bind,src={tmp_path / 'data'},dst=/data,readonly", "cat", "/data/in.txt",
    )  # fmt: skip
    assert "from the host" in proc.stdout, proc.stdout


def test_a_bind_mount_of_a_missing_host_path_is_refused(
    cli: TorchxCli, tmp_path: Path, api: Any
) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    for dryrun in (["--dryrun"], []):
        proc = cli(
            "run", "-s", "docker", *dryrun, "utils.sh", "--image", busybox(), "--num_replicas", "2",
            "--mounts", f"type=bind,src={missing},dst=/data", "ls", "/data", rc=2,
        )  # fmt: skip
        [line] = proc.stderr.strip().splitlines()
        assert f"the bind mount's host path '{missing}' does not exist" in line, line
    assert not (tmp_path / "no").exists()  # nothing made on the host
    # engine_clean (conftest) checks that no container or network was left
