"""``bkill`` and ``brequeue``: the commands that end or rerun jobs already submitted.

``bkill`` ends a pending job at once and has a running job's supervisor end its process
group (SIGINT, SIGTERM, SIGKILL); ``-s`` sends one signal instead. ``brequeue`` puts a
job back to PEND under its id: a running one is killed first (its supervisor runs it
again), an ended one gets a new supervisor. Both take ``-J`` patterns, job ids or ``0``,
and answer with IBM's messages (exit 255 when a job could not be acted on).
"""

from __future__ import annotations

import getpass
import signal
import sys
import time

from standin_rules import requeue
from standin_state import ENDED, all_jobs, die, locked, name_matches, save, signal_group
from standin_supervisor import spawn_supervisor

TYPE_CHECKING = False  # not the typing module: every command would pay for its import
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_SIGNALS = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "KILL": signal.SIGKILL,
            "STOP": signal.SIGSTOP, "CONT": signal.SIGCONT, "HUP": signal.SIGHUP,
            "USR1": signal.SIGUSR1, "USR2": signal.SIGUSR2}  # fmt: skip


def _named(
    name: str | None,
    ids: list[str],
    default: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
) -> tuple[list[dict[str, Any]], bool]:
    """The jobs a ``bkill`` or ``brequeue`` names, of the user's (held locked): those
    matching ``-J``, narrowed to ``ids`` (``0``: all of them; none given: ``default`` of
    them); and whether one named no job (said on stderr in IBM's words)."""
    user = getpass.getuser()
    jobs = [j for j in all_jobs() if j["user"] == user]
    if name is not None:
        jobs = [j for j in jobs if name_matches(j["name"], name)]
    failed = False
    if ids and ids != ["0"]:
        targets = []
        for raw in ids:
            found = [j for j in jobs if str(j["id"]) == raw]
            if not found:
                print(f"Job <{raw}>: No matching job found", file=sys.stderr)
                failed = True
            targets += found
    else:
        targets = jobs if ids == ["0"] else default(jobs)
    if not targets and not failed:
        print("No matching job found", file=sys.stderr)
        failed = True
    return targets, failed


def _most_recent_live(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """bkill without a job id: the most recent pending or running job, else the most recent."""
    live = [j for j in jobs if j["stat"] in ("PEND", "RUN")]
    return live[-1:] if live else jobs[-1:]


def bkill(argv: list[str]) -> None:
    name = None
    sig: int | None = None
    ids: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-J", "-s") and i + 1 < len(argv):
            value = argv[i + 1]
            if arg == "-J":
                name = value
            else:
                key = value.upper().removeprefix("SIG")
                if key.isdigit():
                    sig = int(key)
                elif key in _SIGNALS:
                    sig = _SIGNALS[key]
                else:
                    die(f"{value}: Illegal signal value")
            i += 2
        elif arg.startswith("-"):
            die(f"{arg}: Illegal option.")
        else:
            ids.append(arg)
            i += 1
    with locked():
        targets, failed = _named(name, ids, _most_recent_live)
        for job in targets:
            if job["stat"] in ENDED:
                print(f"Job <{job['id']}>: Job has already finished", file=sys.stderr)
                failed = True
                continue
            if sig is not None:
                if job["pgid"]:
                    signal_group(job["pgid"], sig)
                print(f"Job <{job['id']}> is being signaled")
                continue
            if job["stat"] == "PEND":
                job["stat"] = "EXIT"
                job["finish_time"] = time.time()
            else:
                job["kill"] = {"at": time.time(), "escalate": True}
                if job["pgid"]:
                    signal_group(job["pgid"], signal.SIGINT)
            save(job)
            print(f"Job <{job['id']}> is being terminated")
    sys.exit(255 if failed else 0)


_REQUEUE_FLAGS = {"-a": ("RUN", "DONE", "EXIT"), "-d": ("DONE",), "-e": ("EXIT",), "-r": ("RUN",)}


def brequeue(argv: list[str]) -> None:
    """Requeues the jobs (same id, back to PEND, run again from the start): running ones
    are killed first (as bkill kills them); by default running ones only, ``-d`` done,
    ``-e`` exited, ``-a`` all of these. No job id: the most recent matching job."""
    name = None
    states: set[str] = set()
    ids: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-J" and i + 1 < len(argv):
            name = argv[i + 1]
            i += 2
        elif arg in _REQUEUE_FLAGS:
            states.update(_REQUEUE_FLAGS[arg])
            i += 1
        elif arg.startswith("-"):
            die(f"{arg}: Illegal option.")
        else:
            ids.append(arg)
            i += 1
    states = states or {"RUN"}
    spawn: list[tuple[int, int]] = []
    with locked():
        targets, failed = _named(name, ids, lambda jobs: jobs[-1:])
        for job in targets:
            if job["stat"] not in states:
                print(f"Job <{job['id']}>: Job is {job['stat']}: not requeued", file=sys.stderr)
                failed = True
                continue
            if job["stat"] == "RUN":  # its supervisor kills it, then runs it again
                job["requeued"] = {"at": time.time(), "escalate": True}
                if job["pgid"]:
                    signal_group(job["pgid"], signal.SIGINT)
            else:  # its supervisor has ended: a new one runs it
                requeue(job)
                spawn.append((job["id"], job["attempt"]))
            save(job)
            print(f"Job <{job['id']}> is being requeued")
    for job_id, attempt in spawn:
        spawn_supervisor(job_id, attempt)
    sys.exit(255 if failed else 0)
