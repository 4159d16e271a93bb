"""A private state directory inside a job directory that other users may share.

A batch scheduler's job directory is often shared (a scratch filesystem others can
write). What an app writes there (exit codes, logs, scripts, environment files) goes in
a state directory of the user's, e.g. ``JOB_DIR/.torchx-slurm``, which must be a real
directory (not a link) of the user's that no other user can write: otherwise another
user could have planted the links a job would write through, or rewrite what
``status`` reads. :func:`check_job_dir` refuses, in one line, a job directory every user
can write that is not sticky (any of them could replace the state directory itself);
:func:`make_private_dir` makes the state directory or checks the one that is there;
:func:`open_private_dir` opens a directory without following a link. Each refusal ends
with ``why``: what the backend keeps there and which option to change, in its words.

>>> import os, tempfile
>>> job_dir = tempfile.mkdtemp()
>>> check_job_dir(job_dir, option="job_dir", holds="the job")
>>> top = os.path.join(job_dir, ".torchx-acme")
>>> make_private_dir(top, why="use another job_dir"), make_private_dir(top, why="...")
(True, False)
>>> oct(os.stat(top).st_mode & 0o777)
'0o700'
"""

from __future__ import annotations

import os
import stat

from torchx.schedulers.contract.errors import SchedulerError

__all__ = ["check_job_dir", "make_private_dir", "open_private_dir", "refusal"]


def check_job_dir(job_dir: str, *, option: str, holds: str) -> None:
    """Refuses a ``job_dir`` that cannot be used, or that every user can write but is not sticky.

    ``option`` names the run option giving it (``job_dir``), ``holds`` whose files
    another user could replace (``the job``).
    """
    try:
        st = os.stat(job_dir)
    except OSError as e:
        raise SchedulerError(f"cannot use the job directory {job_dir}: {e.strerror}") from None
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        raise SchedulerError(
            f"{option} {job_dir} can be written by every user and is not sticky, so any of "
            f"them could replace the files of {holds}: use a directory only you can write, "
            f"or make it sticky like /tmp (chmod +t {job_dir})"
        )


def refusal(path: str, what: str, why: str) -> str:
    """The line refusing ``path`` for being ``what`` (a link, owned by uid 7, ...)."""
    return f"{path} is {what}, not a directory of yours that only you can write: {why}"


def open_private_dir(path: str, *, why: str) -> int:
    """A descriptor of the directory ``path`` itself (never what a link of that name points to).

    Raises the one-line :func:`refusal` when ``path`` is a link, not a directory, or
    cannot be opened. Owner and mode are the caller's to check (:func:`make_private_dir`).
    """
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise SchedulerError(refusal(path, _what(path, e), why)) from None


def make_private_dir(top: str, *, why: str, mode: int = 0o700) -> bool:
    """Makes ``top`` (``mode``, whatever the umask) or checks the one there; True when made here.

    An existing ``top`` must be a directory, not a link, owned by the user and not
    writable by group or others; else a one-line :class:`SchedulerError` ending in ``why``.
    """
    made = False
    try:
        os.mkdir(top, mode)
        made = True
    except FileExistsError:
        pass
    except OSError as e:
        raise SchedulerError(f"cannot create {top}: {e.strerror}") from None
    fd = open_private_dir(top, why=why)
    try:
        own = os.fstat(fd)
        if made:
            os.fchmod(fd, mode)  # the umask may have taken bits away
        elif own.st_uid != os.geteuid():
            raise SchedulerError(refusal(top, f"owned by uid {own.st_uid}", why))
        elif own.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise SchedulerError(
                refusal(top, f"writable by others (mode {stat.S_IMODE(own.st_mode):o})", why)
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
