"""torchx.functions on the LSF stand-in of ``dev/lsf``: submit and map_array through bsub,
the call and its result through a job directory the hosts share (the kit's checks,
:mod:`torchx.schedulers.testing.functions`)."""

from __future__ import annotations

from torchx.schedulers.testing.functions import JobDirChecks


class TestLsfFunctions(JobDirChecks):
    scheduler = "lsf"
    job_dir_option = "jobdir"
    node_var = "LSB_HOSTS"  # the host LSF dispatched the job to
    own_files = ".torchx-lsf"
