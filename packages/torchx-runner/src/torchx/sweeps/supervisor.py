"""A sweep's supervisor: ``python -m torchx.sweeps.supervisor SWEEP_ID``.

Started detached by :func:`torchx.sweeps.sweep`. It submits the trials in order, at
most ``maxParallel`` not ended at once, and records each trial's state, times and the
root cause of a failure in the sweep's record, until every trial has ended. A
``cancel`` file (:func:`torchx.sweeps.cancel`), or with ``failFast`` a trial that
failed, makes it cancel the running trials and mark the others CANCELLED without
submitting them.

It polls the scheduler, one ``status`` per running trial: every :data:`INTERVAL`
seconds after a change, then less often while nothing changes, up to
:data:`MAX_INTERVAL` (a sweep of hour-long trials on Slurm asks ``squeue`` every few
seconds, not five times a second, and a quick local trial's end is still seen at once).
The ``cancel`` file is looked at every :data:`INTERVAL`, so a cancel is acted on at once.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from torchx.sweeps import record
from torchx.sweeps.record import TERMINAL

#: Seconds between two looks at the running trials right after a change...
INTERVAL = 0.2
#: ... growing by :data:`BACKOFF` while nothing changes, up to this.
MAX_INTERVAL = 5.0
#: The factor the pause grows by after a look that saw no change.
BACKOFF = 1.5


def _root_cause(status: Any) -> str | None:
    from torchx.specs import NONE

    for text in (status.structured_error_msg, status.msg):
        if text and text != NONE:
            return str(text).strip().splitlines()[0] if str(text).strip() else None
    return None


def _observe(runner: Any, trial: dict[str, Any]) -> bool:
    """Updates a submitted trial from its app's status; whether it changed."""
    try:
        st = runner.status(trial["handle"])
    except Exception as e:  # the scheduler could not say: asked again next time
        print(f"status of {trial['handle']}: {e}", file=sys.stderr, flush=True)
        return False
    cause: str | None = None
    if st is None:
        new, cause = "FAILED", "its app is gone (deleted?)"
    else:
        new = st.state.name
        cause = _root_cause(st) if new == "FAILED" else None
        if st.start_time is not None:
            trial["startTime"] = st.start_time
    if new == trial["state"]:
        return False
    trial["state"] = new
    if new in TERMINAL:
        trial["endTime"] = (st.end_time if st is not None else None) or time.time()
        trial["rootCause"] = cause
    return True


def finish_cancelled(
    doc: dict[str, Any], why: str = "not submitted: the sweep was cancelled"
) -> None:
    """Marks every trial never submitted CANCELLED and the sweep ended; saves it."""
    for t in doc["trials"]:
        if t["handle"] is None and t["state"] not in TERMINAL:
            t["state"], t["rootCause"] = "CANCELLED", why
    if all(t["state"] in TERMINAL for t in doc["trials"]):
        doc["ended"] = time.time()
    for key in ("state", "cancelRequested"):
        doc.pop(key, None)
    record.save(doc)


def supervise(sid: str) -> None:
    """Runs the sweep ``sid`` to its end (see the module docs)."""
    from torchx.runner import get_runner

    doc = record.load(sid)
    os.chdir(doc["cwd"])  # a file component is named relative to where sweep ran
    interval = INTERVAL
    with get_runner() as runner:
        while True:
            changed = False
            for t in doc["trials"]:
                if t["handle"] and t["state"] not in TERMINAL:
                    changed |= _observe(runner, t)
            failed = [t for t in doc["trials"] if t["state"] == "FAILED"]
            stopping = record.cancel_requested(sid) or (doc["failFast"] and failed)
            if stopping:
                why = (
                    "not submitted: the sweep was cancelled"
                    if record.cancel_requested(sid)
                    else f"not submitted: trial {failed[0]['index']} failed (--fail-fast)"
                )
                for t in doc["trials"]:
                    if t["handle"] and t["state"] not in TERMINAL and not t.get("cancelSent"):
                        t["cancelSent"] = True
                        try:
                            runner.cancel(t["handle"])
                        except Exception as e:
                            print(f"cancel {t['handle']}: {e}", file=sys.stderr, flush=True)
                finish_cancelled(doc, why)
                if doc["ended"] is not None:
                    return
            else:
                running = sum(
                    1 for t in doc["trials"] if t["handle"] and t["state"] not in TERMINAL
                )
                for t in doc["trials"]:
                    if running >= doc["maxParallel"]:
                        break
                    if t["handle"] is not None or t["state"] in TERMINAL:
                        continue
                    if record.cancel_requested(sid):  # asked while submitting: no more
                        break
                    _submit(runner, doc, t)
                    changed = True
                    running += t["state"] not in TERMINAL
                if all(t["state"] in TERMINAL for t in doc["trials"]):
                    doc["ended"] = time.time()
                    record.save(doc)
                    return
            if changed:
                record.save(doc)
            interval = next_interval(interval, changed)
            _pause(sid, interval)


def next_interval(interval: float, changed: bool) -> float:
    """The pause before the next look: :data:`INTERVAL` after a change, else longer."""
    return INTERVAL if changed else min(interval * BACKOFF, MAX_INTERVAL)


def _pause(sid: str, seconds: float) -> None:
    """Sleeps ``seconds``, ending early when the sweep is cancelled."""
    deadline = time.monotonic() + seconds
    while not record.cancel_requested(sid):
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(INTERVAL, left))


def _submit(runner: Any, doc: dict[str, Any], trial: dict[str, Any]) -> None:
    try:
        trial["handle"] = runner.run_component(
            doc["component"], trial["args"], doc["scheduler"], doc["cfg"] or None
        )
        trial["state"] = "SUBMITTED"
        trial["submitTime"] = time.time()
    except Exception as e:  # this trial could not be submitted; the others still are
        trial["state"], trial["rootCause"] = "FAILED", f"not submitted: {e}".splitlines()[0]
        trial["endTime"] = time.time()


if __name__ == "__main__":
    supervise(sys.argv[1])
