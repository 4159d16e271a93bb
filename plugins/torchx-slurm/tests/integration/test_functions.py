"""torchx.functions on the real Slurm cluster of ``dev/slurm``: submit and map_array
through sbatch, the call and its result through a job directory the nodes share (the
kit's checks, :mod:`torchx.schedulers.testing.functions`)."""

from __future__ import annotations

import concurrent.futures
import subprocess

import pytest

from torchx.schedulers.testing.functions import TIMEOUT, JobDirChecks, block_on_one


class TestSlurmFunctions(JobDirChecks):
    scheduler = "slurm"
    job_dir_option = "job_dir"
    node_var = "SLURMD_NODENAME"
    own_files = ".torchx-slurm"
    node_prefix = "n"  # dev/slurm's nodes
    native_array = True  # map_array is one sbatch --array job

    def test_map_array_is_one_job_and_one_item_can_be_cancelled(self) -> None:
        from torchx.functions import map_array
        from torchx.runner import get_runner

        futures = map_array(block_on_one, [0, 1, 2], parallelism=3, scheduler="slurm")
        try:
            assert futures[0].result(timeout=TIMEOUT) == 0
            assert futures[2].result(timeout=TIMEOUT) == 2
            handle = str(futures[0].handle)
            assert {f.handle for f in futures} == {handle}
            with get_runner() as runner:
                # item 1 started its call: its own log says so (ROLE/REPLICA of the item)
                lines = runner.log_lines(handle, "fn", 1, should_tail=True)
                assert next(iter(lines), "").rstrip("\n") == "blocking 1"
                assert "returning 2\n" in list(runner.log_lines(handle, "fn", 2))
        finally:
            assert futures[1].cancel() and futures[1].cancelled()
        with pytest.raises(concurrent.futures.CancelledError):
            futures[1].result(timeout=TIMEOUT)
        with get_runner() as runner:
            status = runner.wait(handle, wait_interval=0.5, timeout=TIMEOUT)
        assert status is not None and status.state.name == "CANCELLED"
        states = {r.id: r.state.name for role in status.roles for r in role.replicas}
        assert states == {0: "SUCCEEDED", 1: "CANCELLED", 2: "SUCCEEDED"}
        # one sbatch: Slurm knows the items only as the tasks of one array job
        job_id = handle.rsplit("/", 1)[1]
        out = subprocess.run(
            ["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%i"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert sorted(out) == [f"{job_id}_{k}" for k in range(3)], out
