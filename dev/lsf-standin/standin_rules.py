"""The rules LSF applies to a job, as IBM documents them: pure decisions on job records.

Where a job is dispatched (:func:`pick_host`: free slots, ``-m``, and lsb.params'
``JOB_ACCEPT_INTERVAL`` times ``MBD_SLEEP_TIME``), whether its ``bsub -w`` dependency
is met, whether it is requeued when it exits (``bsub -Q``'s exit values), what a requeue
resets, and how ``%J``/``%I`` expand in its paths. Nothing here runs a job or takes the
lock: the commands and the supervisor call these with records they hold locked.
"""

from __future__ import annotations

import time

from standin_state import accept_interval, exec_hosts

TYPE_CHECKING = False  # not the typing module: every command would pay for its import
if TYPE_CHECKING:
    from typing import Any


def pick_host(job: dict[str, Any], jobs: list[dict[str, Any]], mxj: int) -> str | None:
    """The host the job is dispatched to now, or None (none may take it yet): of the hosts
    it may run on (``-m``), those with free slots that accepted no job within the accept
    interval; of these, the one with the fewest slots in use (then the first listed)."""
    hosts = exec_hosts()
    if job.get("hosts"):
        hosts = [h for h in hosts if h in job["hosts"].split()]
    now = time.time()
    interval = accept_interval()
    best: tuple[int, int, str] | None = None
    for order, name in enumerate(hosts):
        on_host = [j for j in jobs if j.get("host") == name]
        used = sum(j["slots"] for j in on_host if j["stat"] == "RUN")
        last = max((j["start_time"] or 0 for j in on_host), default=0)
        if used + job["slots"] > mxj or (interval and now - last < interval):
            continue
        if best is None or (used, order) < best[:2]:
            best = (used, order, name)
    return best[2] if best else None


def expand(path: str, job_id: int) -> str:
    """``%J`` (the job id) and ``%I`` (the array index: 0) in a path, as bsub expands them."""
    return path.replace("%J", str(job_id)).replace("%I", "0")


_CONDITIONS = ("started", "done", "ended", "exit")


def parse_depend(expr: str) -> list[tuple[str, str]] | None:
    """``started(a) && done(b)`` -> [("started", "a"), ("done", "b")]; None if not understood."""
    out = []
    for part in expr.split("&&"):
        part = part.strip()
        cond, sep, rest = part.partition("(")
        cond = cond.strip()
        if cond not in _CONDITIONS or not sep or not rest.endswith(")"):
            return None
        target = rest[:-1].strip().strip('"')
        if not target:
            return None
        out.append((cond, target))
    return out


def dependency_met(job: dict[str, Any], jobs: list[dict[str, Any]]) -> bool:
    for cond, target in parse_depend(job["depend"] or "") or [] if job["depend"] else []:
        if target.isdigit():
            found = [j for j in jobs if j["id"] == int(target)]
        else:  # a name: the user's most recent job of that name
            found = [j for j in jobs if j["name"] == target and j["user"] == job["user"]]
        if not found:
            return False
        dep = found[-1]
        ok = {
            "started": dep["start_time"] is not None,
            "done": dep["stat"] == "DONE",
            "exit": dep["stat"] == "EXIT",
            "ended": dep["stat"] in ("DONE", "EXIT"),
        }[cond]
        if not ok:
            return False
    return True


def parse_requeue(spec: str) -> tuple[bool, set[int], set[int]] | None:
    """``bsub -Q``'s exit values: (``all`` given, the values, the ``~`` exclusions); None
    if not understood. ``EXCLUDE(v ...)`` values requeue too (on any host here)."""
    every = False
    values: set[int] = set()
    excluded: set[int] = set()
    text = spec.replace("EXCLUDE(", " ").replace(")", " ")
    for token in text.split():
        if token == "all":
            every = True
        elif token.startswith("~") and token[1:].isdigit():
            excluded.add(int(token[1:]))
        elif token.isdigit() and int(token) <= 255:
            values.add(int(token))
        else:
            return None
    return (every, values, excluded) if every or values else None


def requeues_on(spec: str, code: int) -> bool:
    """Whether a job submitted with ``bsub -Q spec`` is requeued when it exits with ``code``
    (a job that exits 0 is done, never requeued)."""
    parsed = parse_requeue(spec) if spec else None
    if parsed is None or code == 0:
        return False
    every, values, excluded = parsed
    return (every or code in values) and code not in excluded


def requeue(job: dict[str, Any]) -> None:
    """``job`` back to PEND, as LSF requeues a job: same id, a fresh run (state only)."""
    job.update(
        stat="PEND", exit_code=None, exec_host="", host=None, start_time=None,
        finish_time=None, pgid=None, kill=None, requeued=None,
        attempt=job.get("attempt", 0) + 1,
    )  # fmt: skip
