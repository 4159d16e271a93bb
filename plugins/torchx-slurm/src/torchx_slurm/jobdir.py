"""The job directory at submit: the private directory the job writes in, made or checked.

A job directory is often shared (a scratch filesystem others can write). Everything the
job writes is in ``JOB_DIR/.torchx-slurm/<job id>/`` (see :mod:`torchx_slurm.request`),
so ``.torchx-slurm`` must be a real directory (not a link) of the user's that no other
user can write; otherwise another user could have planted the links the job would
write through, or the exit codes ``status`` reads. :func:`prepare` makes it (0700, or
0755 with ``shared_logs``) or checks the one that is there, and refuses, in one line,
a job directory every user can write that is not sticky (any of them could replace
``.torchx-slurm`` itself); the job script checks ``.torchx-slurm`` again when it starts.
"""

from __future__ import annotations

import os

from torchx.schedulers.helpers import privatedir

# The sub-directory of the job directory holding each job's exit codes and restarts
# (defined with the readers of what it holds, which import no spec type)
from torchx_slurm.jobfiles import STATE_DIR

__all__ = ["STATE_DIR", "prepare", "remove_if_empty"]

# the end of every refusal of the state directory: why it matters, what to do
_WHY = (
    "the job keeps its logs and exit codes there, so another user could plant or rewrite "
    "them; use another job_dir, or remove it if you made it"
)


def prepare(job_dir: str, *, shared_logs: bool = False) -> bool:
    """Makes or checks ``job_dir/.torchx-slurm``; True when it was made here.

    Raises a one-line :class:`~torchx.schedulers.contract.errors.SchedulerError` saying what is wrong
    and what would do.
    """
    privatedir.check_job_dir(job_dir, option="job_dir", holds="the job")
    return privatedir.make_private_dir(
        os.path.join(job_dir, STATE_DIR), why=_WHY, mode=0o755 if shared_logs else 0o700
    )


def remove_if_empty(top: str) -> None:
    """Removes ``top`` (made by :func:`prepare` for a submit that failed) if it is empty."""
    try:
        os.rmdir(top)
    except OSError:
        pass
