"""The job directory at submit: the private directory the job writes in, made or checked.

A job directory is often shared (a scratch filesystem others can write). Everything the
job writes is in ``JOB_DIR/.torchx-slurm/<job id>/`` (see :mod:`torchx_slurm.script`),
so ``.torchx-slurm`` must be a real directory (not a link) of the user's that no other
user can write; otherwise another user could have planted the links the job would
write through, or the exit codes ``status`` reads. :func:`prepare` makes it (0700, or
0755 with ``shared_logs``) or checks the one that is there, and refuses, in one line,
a job directory every user can write that is not sticky (any of them could replace
``.torchx-slurm`` itself); the job script checks ``.torchx-slurm`` again when it starts.
"""

from __future__ import annotations

import os
import stat

from torchx.schedulers.api import SchedulerError

# The sub-directory of the job directory holding each job's exit codes and restarts
# (defined with the readers of what it holds, which import no spec type)
from torchx_slurm.jobfiles import STATE_DIR

__all__ = ["STATE_DIR", "prepare", "remove_if_empty"]


def prepare(job_dir: str, *, shared_logs: bool = False) -> bool:
    """Makes or checks ``job_dir/.torchx-slurm``; True when it was made here.

    Raises a one-line :class:`SchedulerError` saying what is wrong and what would do.
    """
    try:
        st = os.stat(job_dir)
    except OSError as e:
        raise SchedulerError(f"cannot use the job directory {job_dir}: {e.strerror}") from None
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        raise SchedulerError(
            f"job_dir {job_dir} can be written by every user and is not sticky, so any of "
            "them could replace the files of the job: use a directory only you can write, "
            f"or make it sticky like /tmp (chmod +t {job_dir})"
        )
    top = os.path.join(job_dir, STATE_DIR)
    mode = 0o755 if shared_logs else 0o700
    made = False
    try:
        os.mkdir(top, mode)
        made = True
    except FileExistsError:
        pass
    except OSError as e:
        raise SchedulerError(f"cannot create {top}: {e.strerror}") from None
    try:
        # the directory itself, never what a link of that name points to
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        raise SchedulerError(_refusal(top, _what(top, e))) from None
    try:
        own = os.fstat(fd)
        if made:
            os.fchmod(fd, mode)  # the umask may have taken bits away
        elif own.st_uid != os.geteuid():
            raise SchedulerError(_refusal(top, f"owned by uid {own.st_uid}"))
        elif own.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise SchedulerError(
                _refusal(top, f"writable by others (mode {stat.S_IMODE(own.st_mode):o})")
                + f"; or make it yours alone: chmod go-w {top}"
            )
    finally:
        os.close(fd)
    return made


def _what(path: str, error: OSError) -> str:
    """What ``path`` is, when it could not be opened as a directory without following it."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return error.strerror or "not usable"
    if stat.S_ISLNK(mode):
        return "a link"
    if not stat.S_ISDIR(mode):
        return "not a directory"
    return error.strerror or "not usable"


def _refusal(top: str, what: str) -> str:
    return (
        f"{top} is {what}, not a directory of yours that only you can write: the job keeps "
        "its logs and exit codes there, so another user could plant or rewrite them; "
        "use another job_dir, or remove it if you made it"
    )


def remove_if_empty(top: str) -> None:
    """Removes ``top`` (made by :func:`prepare` for a submit that failed) if it is empty."""
    try:
        os.rmdir(top)
    except OSError:
        pass
