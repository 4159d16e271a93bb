"""The app's private directory in the job directory: made at submit, checked, written safely.

A job directory is often shared (a scratch filesystem others can write, seen by every
LSF host). Everything an app keeps there is in ``JOBDIR/.torchx-lsf/<app id>/``: the
replicas' scripts and environment files (which may hold secrets), their logs, the
AppDef and the cancel mark. So ``.torchx-lsf`` must be a real directory (not a link) of
the user's that no other user can write, and the app's directory is made fresh (0700)
under it: nobody else can have planted a link there for a write to follow, and every
file is created new (``O_EXCL | O_NOFOLLOW``, 0600) relative to the directory opened
once. :func:`prepare` refuses, in one line, a job directory every user can write that
is not sticky (any of them could replace ``.torchx-lsf`` itself); each replica's script
checks the app's directory again when it starts.
"""

from __future__ import annotations

import os
import shutil

from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.helpers import privatedir
from torchx_lsf.appdir import (  # the light part, which the quick handler reads too
    CANCELLED,
    STATE_DIR,
    find_app_dir,
    is_cancelled,
    is_private_dir,
    was_deleted,
)

__all__ = [
    "CANCELLED",
    "STATE_DIR",
    "find_app_dir",
    "is_cancelled",
    "is_private_dir",
    "make_app_dir",
    "mark_cancelled",
    "prepare",
    "remove",
    "remove_app_dir",
    "was_deleted",
    "write_new",
]

# the end of every refusal of a private directory: why it matters, what to do
_WHY = (
    "the app keeps its scripts, environment and logs there, so another user could plant "
    "or read them; use another jobdir, or remove it if you made it"
)


def prepare(jobdir: str) -> bool:
    """Makes or checks ``jobdir`` (made if missing) and ``jobdir/.torchx-lsf``.

    Returns whether ``jobdir`` itself was made here (a failed submit removes it again).
    Raises a one-line :class:`SchedulerError` saying what is wrong and what would do.
    """
    made = False
    if not os.path.isdir(jobdir):
        try:
            os.makedirs(jobdir)
            made = True
        except FileExistsError:
            pass
        except OSError as e:
            raise SchedulerError(
                f"cannot create the job directory {jobdir}: {e.strerror}"
            ) from None
    privatedir.check_job_dir(jobdir, option="jobdir", holds="the app")
    try:
        privatedir.make_private_dir(os.path.join(jobdir, STATE_DIR), why=_WHY)
    except SchedulerError:
        if made:  # a failed submit leaves nothing behind
            shutil.rmtree(jobdir, ignore_errors=True)
        raise
    return made


def make_app_dir(app_dir: str, files: dict[str, str]) -> None:
    """Makes ``app_dir`` (new, 0700) and writes ``files`` (name -> text) into it, each 0600.

    The directory must not exist (app ids are unique): an existing one is refused. Each
    file is created new relative to the directory opened without following links.
    """
    try:
        os.mkdir(app_dir, 0o700)
    except FileExistsError:
        raise SchedulerError(
            f"{app_dir} exists already: another app has this id; submit again for a new one"
        ) from None
    except OSError as e:
        raise SchedulerError(f"cannot create {app_dir}: {e.strerror}") from None
    fd = privatedir.open_private_dir(app_dir, why=_WHY)
    try:
        os.fchmod(fd, 0o700)  # the umask may have taken bits away (never added any)
        for name, text in files.items():
            write_new(fd, name, text)
    except OSError as e:
        raise SchedulerError(f"cannot write {app_dir}/{name}: {e.strerror}") from None
    finally:
        os.close(fd)


def write_new(dir_fd: int, name: str, text: str) -> None:
    """Creates ``name`` in the directory ``dir_fd`` (new, never through a link), 0600."""
    fd = os.open(
        name,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
        dir_fd=dir_fd,
    )
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(text.encode())
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def mark_cancelled(app_dir: str) -> None:
    """Leaves the cancel mark in ``app_dir`` (if it is a private directory of the user's)."""
    try:
        fd = os.open(app_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return
        try:
            write_new(fd, CANCELLED, "")
        except FileExistsError:
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def remove(app_dir: str, jobdir: str, made_jobdir: bool) -> None:
    """Removes what a failed submit made: the app's directory, and ``jobdir`` if it made it."""
    shutil.rmtree(app_dir, ignore_errors=True)
    if made_jobdir:
        shutil.rmtree(jobdir, ignore_errors=True)


def remove_app_dir(app_dir: str) -> None:
    """Removes the app's private directory (scripts, env files, logs, its AppDef).

    ``app_dir`` is one :func:`find_app_dir` found (a private directory of the user's,
    not a link); a failure is one line naming the directory and why.
    """
    errors: list[str] = []

    def failed(_fn: object, path: str, exc: tuple[type, BaseException, object]) -> None:
        errors.append(f"{path}: {getattr(exc[1], 'strerror', None) or exc[1]}")

    shutil.rmtree(app_dir, onerror=failed)  # onexc from Python 3.12
    if errors:
        raise SchedulerError(f"cannot remove the app's directory {app_dir} ({errors[0]})")
