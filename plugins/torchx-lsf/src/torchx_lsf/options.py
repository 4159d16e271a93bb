"""The ``lsf`` scheduler's run options and their checks, before anything reaches bsub.

The names, types and defaults are upstream TorchX's (``lsf_queue``, ``jobdir``,
``container_workdir``, ``host_network``, ``shm_size``), so an existing ``.torchxconfig``
``[lsf]`` section works unchanged. Each value ends up in a ``bsub`` option or a
``docker run`` option, so it is checked here and a bad one is refused with one line
naming the option, the value and what would be right::

    >>> checked(lsf_runopts().resolve({"lsf_queue": "gpu", "shm_size": "1g"}))["shm_size"]
    '1g'
    >>> checked(lsf_runopts().resolve({"shm_size": "lots"}))
    Traceback (most recent call last):
     ...
    torchx.specs.errors.InvalidRunConfigException: run option 'shm_size'='lots' is not a size: use a number with an optional unit b, k, m or g (docker run --shm-size), e.g. 64m
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from torchx.specs.errors import InvalidRunConfigException
from torchx.specs.options import CfgVal, runopts

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


def lsf_runopts() -> runopts:
    """The run options of the ``lsf`` scheduler (see ``torchx runopts lsf``)."""
    opts = runopts()
    opts.add("lsf_queue", type_=str, help="the LSF queue to submit the jobs to (bsub -q)")
    opts.add("jobdir", type_=str, help=JOBDIR_HELP)
    opts.add(
        "container_workdir",
        type_=str,
        help="the working directory of each replica's container (docker run --workdir)",
    )
    opts.add(
        "host_network",
        type_=bool,
        default=False,
        help="run containers on the host's network and IPC namespace (docker run "
        "--net=host --ipc=host): needed for replicas to reach rank 0 by its host name",
    )
    opts.add(
        "shm_size",
        type_=str,
        default="64m",
        help="the size of /dev/shm in each container (docker run --shm-size)",
    )
    return opts


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


def checked(cfg: Mapping[str, CfgVal]) -> dict[str, CfgVal]:
    """``cfg`` (resolved) with each value checked; the first bad one raises one line."""
    out = dict(cfg)
    queue = cfg.get("lsf_queue")
    if queue is not None and not _QUEUE.fullmatch(str(queue)):
        raise _bad(
            "lsf_queue",
            queue,
            "is not an LSF queue name: use letters, digits, '_', '.' and '-', e.g. normal",
        )
    jobdir = cfg.get("jobdir")
    out["jobdir"] = check_path("jobdir", str(jobdir) if jobdir else os.getcwd())
    workdir = cfg.get("container_workdir")
    if workdir is not None:
        text = str(workdir)
        if not text.startswith("/") or re.search(r"[\x00-\x1f\x7f]", text):
            raise _bad(
                "container_workdir",
                workdir,
                "is not an absolute path inside the container: use e.g. /workspace",
            )
    shm = cfg.get("shm_size")
    if shm is not None and not _SIZE.fullmatch(str(shm)):
        raise _bad(
            "shm_size",
            shm,
            "is not a size: use a number with an optional unit b, k, m or g "
            "(docker run --shm-size), e.g. 64m",
        )
    return out
