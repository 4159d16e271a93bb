"""Sweeps: one component run over a grid of its parameters, at most K trials at once.

>>> from torchx.sweeps import parse_grid, expand
>>> expand([parse_grid("lr=1e-3,1e-4"), parse_grid("batch=32,64")])[:2]
[{'lr': '1e-3', 'batch': '32'}, {'lr': '1e-3', 'batch': '64'}]

:func:`sweep` checks the grids against the component's parameters, writes the sweep's
record (:mod:`torchx.sweeps.record`) and starts a small detached supervisor
(:mod:`torchx.sweeps.supervisor`) that submits the trials, at most ``max_parallel``
running at once, until every one has ended; it returns the sweep's handle
(``sweep://sw-...``) at once. :func:`status`, :func:`cancel`, :func:`wait`,
:func:`list_sweeps` and :func:`delete` follow a sweep from any later process, through
its record.

Each trial is the component run with its arguments plus ``--NAME VALUE`` for each grid
(``torchx run COMPONENT ARGS --lr 1e-3 --batch 32``); a trial that fails does not stop
the others unless ``fail_fast``, which cancels the rest.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence

from torchx.sweeps.grid import SweepError, expand, parse_grid
from torchx.sweeps.record import SCHEME, TERMINAL

TYPE_CHECKING = False  # typing costs milliseconds that `torchx status sweep://` does not spend
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "SweepError",
    "cancel",
    "check_deletable",
    "delete",
    "expand",
    "list_sweeps",
    "parse_grid",
    "prune",
    "status",
    "sweep",
    "trial_args",
    "trial_sweeps",
    "wait",
]


def component_parameters(component: str) -> list[str]:
    """The parameter names of ``component`` (its function's), in order."""
    import inspect

    from torchx.components.finder import get_component

    return list(inspect.signature(get_component(component).fn).parameters)


def trial_args(component_args: Sequence[str], params: Mapping[str, str]) -> list[str]:
    """A trial's command line: the component's arguments, then ``--NAME VALUE`` per grid."""
    args = list(component_args)
    for name, value in params.items():
        args += [f"--{name}", value]
    return args


def sweep(
    component: str,
    component_args: Sequence[str] = (),
    *,
    grids: Sequence[str] | Sequence[tuple[str, Sequence[str]]],
    scheduler: str = "local",
    cfg: Mapping[str, Any] | None = None,
    max_parallel: int = 1,
    random_n: int | None = None,
    seed: int | None = None,
    fail_fast: bool = False,
) -> str:
    """Starts a sweep of ``component`` and returns its handle, ``sweep://<id>``.

    ``grids`` are ``"NAME=V1,V2"`` strings (as ``--grid`` takes them) or ``(NAME,
    [V1, V2])`` pairs; each NAME must be a parameter of the component (refused, before
    anything runs, with the list of its parameters). ``random_n`` samples that many of
    the grid's trials with ``random.Random(seed)``. The trials run on ``scheduler``
    with the run options ``cfg``, at most ``max_parallel`` at once, supervised by a
    detached process: the call returns once the sweep is recorded and its supervisor
    started.
    """
    from torchx.sweeps import record

    parsed = [
        parse_grid(g) if isinstance(g, str) else (g[0], [str(v) for v in g[1]]) for g in grids
    ]
    if isinstance(max_parallel, bool) or not isinstance(max_parallel, int) or max_parallel < 1:
        raise SweepError(f"--max-parallel {max_parallel!r}: expected 1 or more")
    trials = expand(parsed, random_n, seed)
    known = component_parameters(component)
    for name, _ in parsed:
        if name not in known:
            from torchx.specs.errors import did_you_mean

            raise SweepError(
                f"--grid {name}: {component} has no parameter {name!r}"
                f"{did_you_mean(name, known)}; its parameters: {', '.join(known)}"
            )
    path = record.new_sweep_dir()
    sid = os.path.basename(path)
    doc: dict[str, Any] = {
        "formatVersion": record.FORMAT_VERSION,
        "id": sid,
        "handle": SCHEME + sid,
        "component": component,
        "componentArgs": list(component_args),
        "scheduler": scheduler,
        "cfg": dict(cfg or {}),
        "cwd": os.getcwd(),
        "maxParallel": max_parallel,
        "failFast": fail_fast,
        "grids": [[n, v] for n, v in parsed],
        "random": random_n,
        "seed": seed,
        "created": time.time(),
        "ended": None,
        "trials": [
            {
                "index": i,
                "params": params,
                "args": trial_args(component_args, params),
                "handle": None,
                "state": "PENDING",
                "startTime": None,
                "endTime": None,
                "rootCause": None,
            }
            for i, params in enumerate(trials)
        ],
    }
    record.save(doc)
    _start_supervisor(sid, path)
    return SCHEME + sid


def _start_supervisor(sid: str, path: str) -> None:
    """Starts the sweep's supervisor in its own session (it outlives the caller)."""
    import subprocess

    log_fd = os.open(
        os.path.join(path, "supervisor.log"),
        os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
        0o600,
    )
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "torchx.sweeps.supervisor", sid],
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            start_new_session=True,
        )
    finally:
        os.close(log_fd)
    from torchx.schedulers.helpers.files import write_private_atomic

    write_private_atomic(os.path.join(path, "supervisor.pid"), f"{proc.pid}\n")


def status(handle: str) -> dict[str, Any]:
    """The sweep's record (its trials' states as its supervisor last saw them), plus
    ``state``: RUNNING while trials remain, then SUCCEEDED (all did), FAILED (one did
    not) or CANCELLED (the sweep was cancelled); LOST when its supervisor died first."""
    from torchx.sweeps import record

    sid = record.sweep_id(handle)
    doc = record.load(sid)
    doc["cancelRequested"] = record.cancel_requested(sid)
    doc["state"] = _sweep_state(doc)
    return doc


def _sweep_state(doc: dict[str, Any]) -> str:
    from torchx.sweeps import record

    if doc.get("ended") is None:
        pid = record.supervisor_pid(doc["id"])
        # no pid yet: sweep() is starting it this moment
        return "RUNNING" if pid is None or record.pid_alive(pid) else "LOST"
    if doc.get("cancelRequested"):
        return "CANCELLED"
    states = {t["state"] for t in doc["trials"]}
    return "SUCCEEDED" if states == {"SUCCEEDED"} else "FAILED"


def counts(doc: dict[str, Any]) -> dict[str, int]:
    """How many of the sweep's trials are in each state."""
    out: dict[str, int] = {}
    for t in doc["trials"]:
        out[t["state"]] = out.get(t["state"], 0) + 1
    return out


def wait(handle: str, timeout: float = 3600.0, interval: float = 0.2) -> dict[str, Any]:
    """Waits until the sweep has ended (or its supervisor is gone); its :func:`status`.

    Raises ``TimeoutError`` after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        doc = status(handle)
        if doc["state"] != "RUNNING":
            return doc
        if time.monotonic() > deadline:
            raise TimeoutError(f"{handle} still running after {timeout:g} s")
        time.sleep(interval)


def cancel(handle: str, timeout: float = 60.0) -> dict[str, Any]:
    """Cancels the sweep: no trial is submitted after this, and the running ones are
    cancelled. Returns once its supervisor has recorded the end (its :func:`status`)."""
    from torchx.sweeps import record

    sid = record.sweep_id(handle)
    doc = record.load(sid)
    record.request_cancel(sid)
    if doc.get("ended") is not None:
        return status(handle)
    from torchx.runner import get_runner

    with get_runner() as runner:
        for t in doc["trials"]:
            if t["handle"] and t["state"] not in TERMINAL:
                try:
                    runner.cancel(t["handle"])
                except Exception:  # the supervisor cancels it too, and records why
                    pass
    now = status(handle)
    if now["state"] == "LOST":  # nobody else will: the record is finished here
        from torchx.sweeps.supervisor import finish_cancelled

        finish_cancelled(now)
        return status(handle)
    return wait(handle, timeout)


def check_deletable(handle: str, force: bool = False) -> dict[str, Any]:
    """The sweep's :func:`status` if :func:`delete` may go ahead: it has ended, or
    ``force``; else one line saying what to do (nothing is touched)."""
    doc = status(handle)
    if doc["state"] in ("RUNNING", "LOST") and not force:
        raise SweepError(
            f"{doc['handle']} is {doc['state']}: cancel it first "
            f"('torchx cancel {doc['handle']}') or pass --force"
        )
    return doc


def delete(handle: str, force: bool = False, checked: dict[str, Any] | None = None) -> list[str]:
    """Deletes the sweep: each trial's app (as ``torchx delete`` does: its record and
    logs), then the sweep's record. A sweep still running (or LOST, whose trials may
    be) is refused unless ``force``, which cancels it first. Returns the handles of the
    trials' apps deleted; an app already gone is skipped. If a trial's app cannot be
    deleted (its scheduler unreachable), the error is raised and the sweep's record
    kept, so that deleting again finishes the job. ``checked``: the sweep's status
    :func:`check_deletable` gave for it just before (a caller that checks every handle
    before touching any, as ``torchx delete`` does), so its record is not read again.
    """
    import shutil

    from torchx.runner import get_runner
    from torchx.sweeps import record

    doc = checked if checked is not None else check_deletable(handle, force)
    if doc["state"] in ("RUNNING", "LOST"):
        doc = cancel(handle)
    deleted = []
    with get_runner() as runner:
        for t in doc["trials"]:
            if t["handle"] and runner.status(t["handle"]) is not None:
                runner.delete(t["handle"])
                deleted.append(t["handle"])
    shutil.rmtree(record.sweep_dir(doc["id"]))
    return deleted


def prune(older_than: float | str, scheduler: str | None = None) -> list[str]:
    """Deletes the records of the sweeps (of ``scheduler``, else every one) that ended
    longer ago than ``older_than`` (seconds, or a duration such as ``"7d"``); their
    handles. Their trials' apps are the scheduler's: ``torchx delete --older-than``
    prunes those with the scheduler's own ``prune``, by the same age (a trial ends
    before its sweep does). A sweep running, or LOST, is never touched.
    """
    import shutil

    from torchx.specs.durations import parse_duration
    from torchx.sweeps import record

    keep_for = parse_duration(older_than) if isinstance(older_than, str) else older_than
    cutoff = time.time() - keep_for
    gone = []
    for doc in list_sweeps():
        if scheduler is not None and doc.get("scheduler") != scheduler:
            continue
        ended = doc.get("ended")
        if doc["state"] in ("RUNNING", "LOST") or ended is None or ended > cutoff:
            continue
        shutil.rmtree(record.sweep_dir(doc["id"]), ignore_errors=True)
        gone.append(doc["handle"])
    return gone


def trial_sweeps() -> dict[str, dict[str, Any]]:
    """Each trial's sweep (its :func:`status`) by the handle of the trial's app: what
    ``torchx list`` groups apps by. One read of each sweep's record; none when no sweep
    was ever started here."""
    return {t["handle"]: doc for doc in list_sweeps() for t in doc["trials"] if t["handle"]}


def list_sweeps() -> list[dict[str, Any]]:
    """Every sweep's :func:`status`, newest first."""
    from torchx.sweeps import record

    docs = []
    for sid in record.all_ids():
        try:
            docs.append(status(SCHEME + sid))
        except SweepError:
            continue  # being written, or of another version: not listed
    return sorted(docs, key=lambda d: d["created"], reverse=True)
