"""The ``lsf`` scheduler's run options, declared once: :class:`LsfOpts`.

The names, types and defaults are upstream TorchX's (``lsf_queue``, ``jobdir``,
``container_workdir``, ``host_network``, ``shm_size``), so an existing ``.torchxconfig``
``[lsf]`` section works unchanged. Each value ends up in a ``bsub`` option or a
``docker run`` option, so each field checks it and a bad one is refused with one line
naming the option, the value and what would be right::

    >>> LsfOpts.from_cfg(LsfOpts.as_runopts().resolve({"lsf_queue": "gpu"})).shm_size
    '64m'
    >>> LsfOpts.from_cfg({"shm_size": "lots"})
    Traceback (most recent call last):
     ...
    torchx.specs.errors.InvalidRunConfigException: run option 'shm_size'='lots' is not a size: use a number with an optional unit b, k, m or g (docker run --shm-size), e.g. 64m
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from torchx.specs.errors import InvalidRunConfigException
from torchx.specs.structured_opts import StructuredOpts, opt

#: Help of ``jobdir``.
JOBDIR_HELP = (
    "the directory, seen by every LSF host, holding the app's files (its replicas' "
    "scripts, environment files and logs, in .torchx-lsf/<app id>/ made private); "
    "default: the current directory"
)

# an LSF queue name: what lsb.queues accepts (letters, digits, '_', '.', '-')
_QUEUE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,58}")
# docker run --shm-size: a number and an optional unit
_SIZE = re.compile(r"\d+(\.\d+)?[bkmgBKMG]?")
# what a path handed to bsub or written into a script may not hold: LSF expands '%'
# in -cwd/-outdir/-oo (%J, %U, ...), and quotes, backslashes and control characters
# have no business in a directory name that lands in job options
_BAD_PATH = re.compile(r"[\"'\\%\x00-\x1f\x7f]")


def _bad(option: str, value: object, right: str) -> InvalidRunConfigException:
    return InvalidRunConfigException(f"run option {option!r}={value!r} {right}")


def check_path(option: str, value: str) -> str:
    """``value`` made absolute; refused with one line if LSF or a script would misread it."""
    path = os.path.abspath(os.path.expanduser(value))
    if _BAD_PATH.search(path):
        raise _bad(
            option,
            value,
            "cannot be used: LSF expands '%' in job paths, and quotes, backslashes and "
            "control characters are refused; use a plain absolute path",
        )
    return path


def check_queue(value: str) -> str:
    """``lsf_queue`` if it is an LSF queue name."""
    if not _QUEUE.fullmatch(value):
        raise _bad(
            "lsf_queue",
            value,
            "is not an LSF queue name: use letters, digits, '_', '.' and '-', e.g. normal",
        )
    return value


def check_container_workdir(value: str) -> str:
    """``container_workdir`` if it is an absolute path without control characters."""
    if not value.startswith("/") or re.search(r"[\x00-\x1f\x7f]", value):
        raise _bad(
            "container_workdir",
            value,
            "is not an absolute path inside the container: use e.g. /workspace",
        )
    return value


def check_shm_size(value: str) -> str:
    """``shm_size`` if it is a size as ``docker run --shm-size`` reads one."""
    if not _SIZE.fullmatch(value):
        raise _bad(
            "shm_size",
            value,
            "is not a size: use a number with an optional unit b, k, m or g "
            "(docker run --shm-size), e.g. 64m",
        )
    return value


@dataclass(frozen=True, kw_only=True)
class LsfOpts(StructuredOpts):
    """The run options of the ``lsf`` scheduler (see ``torchx runopts lsf``), each checked.

    Declared once, as torchx-slurm's ``SlurmOpts`` is (see
    :mod:`torchx.specs.structured_opts`); values are read as the types they were
    given in, never turned into strings again.
    """

    lsf_queue: str | None = opt(
        help="the LSF queue to submit the jobs to (bsub -q)", check=check_queue
    )
    jobdir: str | None = opt(help=JOBDIR_HELP, check=lambda v: check_path("jobdir", v))
    container_workdir: str | None = opt(
        help="the working directory of each replica's container (docker run --workdir)",
        check=check_container_workdir,
    )
    host_network: bool = opt(
        False,
        help="run containers on the host's network and IPC namespace (docker run "
        "--net=host --ipc=host): needed for replicas to reach rank 0 by its host name",
    )
    shm_size: str = opt(
        "64m",
        help="the size of /dev/shm in each container (docker run --shm-size)",
        check=check_shm_size,
    )

    def job_directory(self) -> str:
        """``jobdir`` (absolute), else the current directory, checked the same way."""
        return self.jobdir or check_path("jobdir", os.getcwd())
