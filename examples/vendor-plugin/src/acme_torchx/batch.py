"""Acme Batch, the batch system the ``acme`` scheduler submits to.

In real life this is the vendor's SDK: a client of a remote service, heavy to
import, needed to submit but not to dry-run. Here it is a small batch system on
this machine, so the plugin can be used for real: each task runs as its own
detached process group, and everything about a job is kept on disk under
``$ACME_BATCH_HOME`` (default ``~/.local/state/acme-batch``), so a job submitted
by one process is followed, cancelled and deleted from any later one::

    <home>/<job id>/job.json               the request as submitted, with a format version
    <home>/<job id>/<role>/<replica>/pid   the task's process (and process group) id
    <home>/<job id>/<role>/<replica>/output  its stdout and stderr, combined
    <home>/<job id>/<role>/<replica>/exit  its exit status, written once it exited
    <home>/<job id>/cancelled              present once the job was cancelled

A task's process is its shell wrapper's; a task whose process is gone without
an exit status was killed from outside and counts as failed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

#: Version of job.json; a record of another version is not read.
FORMAT = 1
HOME_ENV = "ACME_BATCH_HOME"

# Runs a task with its output in a file, then records its exit status atomically.
_WRAPPER = (
    '"$@" >"$ACME_TASK_DIR/output" 2>&1; '
    'echo $? >"$ACME_TASK_DIR/exit.tmp"; mv "$ACME_TASK_DIR/exit.tmp" "$ACME_TASK_DIR/exit"'
)


class BatchError(Exception):
    """Acme Batch refused a request (the message says why)."""


class Task(NamedTuple):
    role: str
    replica: int
    state: str  # RUNNING, SUCCEEDED, FAILED or CANCELLED
    exit_code: int | None


def home() -> Path:
    default = Path.home() / ".local" / "state" / "acme-batch"
    return Path(os.environ.get(HOME_ENV) or default)


def submit(request: Mapping[str, Any]) -> str:
    """Starts every task of ``request``; returns the job id. Nothing is left on failure."""
    job_id = str(request["id"])
    job_dir = home() / job_id
    job_dir.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        job_dir.mkdir()
    except FileExistsError:
        raise BatchError(f"job {job_id} exists already") from None
    started: list[int] = []
    try:
        record = {"format": FORMAT, **request}
        (job_dir / "job.json").write_text(json.dumps(record), encoding="utf-8")
        for task in request["tasks"]:
            task_dir = _task_dir(job_id, task["role"], task["replica"])
            task_dir.mkdir(parents=True)
            env = {**os.environ, **task["env"], "ACME_TASK_DIR": str(task_dir)}
            proc = subprocess.Popen(
                ["/bin/sh", "-c", _WRAPPER, "acme-task", *task["argv"]],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            started.append(proc.pid)
            (task_dir / "pid").write_text(str(proc.pid), encoding="utf-8")
    except BaseException:
        for pid in started:
            _kill(pid)
        shutil.rmtree(job_dir, ignore_errors=True)
        raise
    return job_id


def job(job_id: str) -> dict[str, Any] | None:
    """The request of job ``job_id`` as submitted, or None for an unknown job."""
    if not job_id or "/" in job_id or job_id.startswith("."):
        return None
    try:
        record = json.loads((home() / job_id / "job.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("format") == FORMAT else None


def tasks(job_id: str) -> list[Task] | None:
    """The state of every task of job ``job_id``, or None for an unknown job."""
    record = job(job_id)
    if record is None:
        return None
    cancelled = was_cancelled(job_id)
    found = []
    for task in record["tasks"]:
        exit_code = _exit_code(job_id, task["role"], task["replica"])
        if exit_code is not None:
            state = "SUCCEEDED" if exit_code == 0 else "FAILED"
        elif cancelled:
            state = "CANCELLED"
        elif _alive(job_id, task["role"], task["replica"]):
            state = "RUNNING"
        else:  # exited between the two checks, or killed from outside
            exit_code = _exit_code(job_id, task["role"], task["replica"])
            state = "SUCCEEDED" if exit_code == 0 else "FAILED"
        found.append(Task(task["role"], task["replica"], state, exit_code))
    return found


def was_cancelled(job_id: str) -> bool:
    """True once the job was cancelled (Acme Batch keeps a task killed by then as it ended)."""
    return (home() / job_id / "cancelled").exists()


def jobs(queue: str | None = None) -> list[dict[str, Any]]:
    """Every job's request (of ``queue`` only, if given), newest first."""
    root = home()
    found = []
    for path in root.glob("*/job.json") if root.is_dir() else []:
        record = job(path.parent.name)
        if record is not None and (queue is None or record.get("queue") == queue):
            found.append((path.stat().st_mtime_ns, record))
    return [record for _, record in sorted(found, key=lambda f: f[0], reverse=True)]


def cancel(job_id: str) -> None:
    """Marks the job cancelled and stops its running tasks (SIGTERM to each task's group)."""
    record = job(job_id)
    if record is None:
        return
    (home() / job_id / "cancelled").touch()
    for task in record["tasks"]:
        if _exit_code(job_id, task["role"], task["replica"]) is None:
            pid = _pid(job_id, task["role"], task["replica"])
            if pid is not None:
                _kill(pid)


def delete(job_id: str) -> None:
    """Cancels the job, then removes every record of it."""
    if job(job_id) is not None:
        cancel(job_id)
        shutil.rmtree(home() / job_id, ignore_errors=True)


def output_path(job_id: str, role: str, replica: int) -> Path:
    """The file holding the combined stdout and stderr of one task.

    >>> output_path("acme-1a2b3c", "trainer", 1).relative_to(home()).as_posix()
    'acme-1a2b3c/trainer/1/output'
    """
    return _task_dir(job_id, role, replica) / "output"


def _task_dir(job_id: str, role: str, replica: int) -> Path:
    return home() / job_id / role / str(replica)


def _exit_code(job_id: str, role: str, replica: int) -> int | None:
    try:
        return int((_task_dir(job_id, role, replica) / "exit").read_text())
    except (OSError, ValueError):
        return None


def _pid(job_id: str, role: str, replica: int) -> int | None:
    try:
        return int((_task_dir(job_id, role, replica) / "pid").read_text())
    except (OSError, ValueError):
        return None


def _alive(job_id: str, role: str, replica: int) -> bool:
    pid = _pid(job_id, role, replica)
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
