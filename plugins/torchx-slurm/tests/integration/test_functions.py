"""torchx.functions on the real Slurm cluster of ``dev/slurm``: submit and map_array
through sbatch, the call and its result through a job directory the nodes share (the
kit's checks, :mod:`torchx.schedulers.testing.functions`)."""

from __future__ import annotations

from torchx.schedulers.testing.functions import JobDirChecks


class TestSlurmFunctions(JobDirChecks):
    scheduler = "slurm"
    job_dir_option = "job_dir"
    node_var = "SLURMD_NODENAME"
    own_files = ".torchx-slurm"
    node_prefix = "n"  # dev/slurm's nodes
