"""Where a call's job directory is made, per scheduler, and the replica's image.

The submitter and the replica exchange the call and its result through files (see
:mod:`torchx.functions._channel`), so the job directory must be on a disk both see:

- ``local``: the temporary directory (``$TMPDIR``, else ``/tmp``): the replica runs on
  this machine;
- ``slurm`` and ``lsf``: ``.torchx-functions/`` in the scheduler's own job directory
  (the run option ``job_dir`` for Slurm, ``jobdir`` for LSF, from ``cfg`` or
  ``.torchxconfig``, else the current directory), which the scheduler already needs on
  a disk its nodes share with the submitting machine.

``channel_dir=...`` names the parent directory instead. Each call gets a fresh private
directory ``torchx-fn-*`` (0700) in it. Nothing here imports a scheduler plugin: the
run option names are the plugins' documented ones.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs import CfgVal

#: Schedulers whose replicas run on this machine.
LOCAL_SCHEDULERS = ("local", "local_cwd")

#: Schedulers whose nodes share a disk with the submitting machine: the name of the run
#: option that says where their job directory is.
SHARED_DISK_SCHEDULERS = {"slurm": "job_dir", "lsf": "jobdir"}

#: The folder made in a shared-disk scheduler's job directory for the calls' directories.
CHANNEL_FOLDER = ".torchx-functions"

PREFIX = "torchx-fn-"


class JobDirError(ValueError):
    """The job directory of a call cannot be made where it was asked (one line)."""


def supported(scheduler: str) -> bool:
    return scheduler in LOCAL_SCHEDULERS or scheduler in SHARED_DISK_SCHEDULERS


def channel_parent(
    scheduler: str,
    cfg: Mapping[str, CfgVal] | None,
    channel_dir: str | os.PathLike[str] | None,
) -> Path:
    """The directory the calls' job directories are made in (absolute, maybe missing)."""
    if channel_dir is not None:
        return Path(os.path.abspath(os.path.expanduser(os.fspath(channel_dir))))
    if scheduler in LOCAL_SCHEDULERS:
        return Path(tempfile.gettempdir())
    option = SHARED_DISK_SCHEDULERS[scheduler]
    from torchx.runner import config

    # what the Runner will run with: explicit values, then .torchxconfig's [scheduler]
    merged: dict[str, CfgVal] = dict(cfg or {})
    config.apply(scheduler, merged)
    base = merged.get(option)
    root = os.path.expanduser(str(base)) if base else os.getcwd()
    return Path(os.path.abspath(root)) / CHANNEL_FOLDER


def prepare(parent: Path, scheduler: str, own_folder: bool) -> None:
    """Makes ``parent`` (0700) if missing and checks that no other user can swap the
    calls' directories in it; :class:`JobDirError` in one line otherwise.

    ``own_folder``: ``parent`` is the folder this module names (``.torchx-functions``),
    which must then be a real directory of this user that no one else can write.
    """
    where = "" if scheduler in LOCAL_SCHEDULERS else f" (a disk the {scheduler} nodes share)"
    hint = f": pass channel_dir=DIR{where} to make it elsewhere"
    try:
        parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(parent) if own_folder else os.stat(parent)
    except OSError as e:
        raise JobDirError(
            f"cannot make the job directory of the call in {parent}: {e.strerror or e}{hint}"
        ) from None
    if stat.S_ISLNK(st.st_mode):
        raise JobDirError(f"{parent} is a link: it must be a directory of yours{hint}")
    if not stat.S_ISDIR(st.st_mode):
        raise JobDirError(f"{parent} is not a directory{hint}")
    if own_folder and (st.st_uid != os.getuid() or st.st_mode & 0o022):
        raise JobDirError(
            f"{parent} must be a directory of yours that no one else can write"
            f" (owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}){hint}"
        )
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        raise JobDirError(
            f"{parent} is writable by every user and not sticky: another user could"
            f" replace a call's directory{hint}"
        )


def make(parent: Path) -> Path:
    """A fresh private directory (0700) for one call in ``parent`` (prepared)."""
    try:
        return Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
    except OSError as e:
        raise JobDirError(
            f"cannot make the job directory of the call in {parent}: {e.strerror or e}"
        ) from None


def role_image(scheduler: str, image: str | None) -> str:
    """The replica's image: the directory it runs in.

    ``local`` ignores ``image`` (the replica runs in the current directory). Slurm and
    LSF run the replica in ``image`` when it is an existing directory (default: the
    current directory); a container image is refused in one line, since the replica
    would not see the job directory nor this interpreter there.
    """
    if scheduler in LOCAL_SCHEDULERS or image is None:
        return os.getcwd()
    path = os.path.abspath(os.path.expanduser(image))
    if not os.path.isdir(path):
        raise ValueError(
            f"image {image!r} is not a directory: on {scheduler} the function runs in a"
            " directory of a disk the nodes share (containers are not supported)"
        )
    return path
