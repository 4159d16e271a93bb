"""The stand-in's configuration and job records: what every other module of it reads.

``$TORCHX_DEV_LSF_DIR`` (``/var/tmp/torchx-dev-lsf``) holds ``conf/lsf.conf`` (read
through ``LSF_ENVDIR``, as LSF's clients read it), one directory per job
(``jobs/<id>/job.json``, the record, and ``jobs/<id>/jobfile``), ``next_id``, ``log/``
and ``lock``, the one lock every state change takes. A job record is a plain dict
(``stat``: PEND, RUN, DONE or EXIT, as bjobs shows it). Also here: the hosts, the
signals sent to a job's process group, ``-J``'s name patterns, and the purge of old
records. Standard library only, imports no other module of the stand-in.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time

TYPE_CHECKING = False  # not the typing module: every command would pay for its import
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

DIR = os.environ.get("TORCHX_DEV_LSF_DIR", "/var/tmp/torchx-dev-lsf")
JOBS = os.path.join(DIR, "jobs")
POLL = 0.1  # seconds between two looks of a waiting supervisor (LSF's dispatch cycle)
#: The states of a job that has ended.
ENDED = ("DONE", "EXIT")


def conf() -> dict[str, str]:
    """``lsf.conf`` of ``LSF_ENVDIR`` (``KEY=VALUE`` lines), as LSF's clients read it."""
    envdir = os.environ.get("LSF_ENVDIR", os.path.join(DIR, "conf"))
    path = os.path.join(envdir, "lsf.conf")
    out: dict[str, str] = {}
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    key, _, value = line.partition("=")
                    out[key.strip()] = value.strip().strip('"')
    except OSError:
        die(f"ls_getclustername(): LSF_ENVDIR={envdir}: cannot open lsf.conf. LSF is down.")
    return out


def die(message: str, code: int = 255) -> None:
    print(message, file=sys.stderr)
    sys.exit(code)


@contextlib.contextmanager
def locked() -> Iterator[None]:
    """The stand-in's one lock (job ids, dispatch decisions, state changes)."""
    with open(os.path.join(DIR, "lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def job_path(job_id: int) -> str:
    return os.path.join(JOBS, str(job_id), "job.json")


def load(job_id: int) -> dict[str, Any] | None:
    try:
        with open(job_path(job_id)) as f:
            data: dict[str, Any] = json.load(f)
            return data
    except (OSError, ValueError):
        return None


def save(job: dict[str, Any]) -> None:
    path = job_path(job["id"])
    tmp = f"{path}.tmp{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(job, f)
    os.replace(tmp, path)


def all_jobs() -> list[dict[str, Any]]:
    try:
        names = os.listdir(JOBS)
    except OSError:
        return []
    jobs = [load(int(n)) for n in names if n.isdigit()]
    return sorted((j for j in jobs if j), key=lambda j: j["id"])


def host() -> str:
    """The host the commands run on (the submission host: ``from_host``)."""
    import socket  # here, not at the top: only bsub needs it

    return conf().get("TORCHX_DEV_LSF_HOST") or socket.gethostname()


def exec_hosts() -> list[str]:
    """The execution hosts, in order: ``TORCHX_DEV_LSF_HOSTS`` (names of this machine), else
    :func:`host` alone."""
    return conf().get("TORCHX_DEV_LSF_HOSTS", "").split() or [host()]


def accept_interval() -> float:
    """Seconds a host waits after a dispatch before it takes another job: LSF's
    ``JOB_ACCEPT_INTERVAL`` periods of ``MBD_SLEEP_TIME`` (lsb.params)."""
    cfg = conf()
    return float(cfg.get("JOB_ACCEPT_INTERVAL", "0")) * float(cfg.get("MBD_SLEEP_TIME", "1"))


def signal_group(pgid: int, sig: int) -> None:
    """Sends ``sig`` to a job's process group (gone already: nothing to do)."""
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass


def name_matches(name: str, pattern: str) -> bool:
    """A job name against ``-J``'s pattern (``*`` matches any characters, as in LSF)."""
    import fnmatch

    return fnmatch.fnmatchcase(name, pattern.replace("[", "[[]"))


def purge() -> None:
    """Removes the records of jobs that ended more than CLEAN_PERIOD ago (as mbatchd does)."""
    import shutil  # here, not at the top: only `dev/lsf up` purges

    clean = float(conf().get("CLEAN_PERIOD", "3600"))
    with locked():
        for job in all_jobs():
            if job["stat"] in ENDED and time.time() - (job["finish_time"] or 0) > clean:
                shutil.rmtree(os.path.join(JOBS, str(job["id"])), ignore_errors=True)
