"""The apps this user submitted lately, so that a job AWS does not list yet is not "no such app".

AWS's reads are eventually consistent: right after ``SubmitJob`` (or
``CreateTrainingJob``) the job may be missing from ``DescribeJobs``, ``ListJobs`` and
``Search`` for a while. A scheduler that answered "no such app" then would make
``torchx run --wait`` give up and ``torchx status`` (from another shell too) deny an
app it just made. So each submit is written down here, and ``describe`` of an app id
AWS does not know yet, submitted less than :data:`GRACE` seconds ago, answers
SUBMITTED instead of None.

The record is a small append-only file per user (``$XDG_CACHE_HOME/torchx-aws/recent``,
else ``~/.cache/...``): one line per submit, ``<time> <scheduler> <app id>``, older lines
dropped when it grows. Failing to write or read it is never an error: the scheduler
then behaves as AWS answers.

>>> import tempfile
>>> path = Path(tempfile.mkdtemp()) / "recent"
>>> remember("aws_batch", "q:job-1:us-east-1:2", now=100.0, path=path)
>>> submitted_ago("aws_batch", "q:job-1:us-east-1:2", now=103.5, path=path)
3.5
>>> submitted_ago("aws_batch", "q:job-2:us-east-1:2", now=103.5, path=path) is None
True
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchx.schedulers.contract.api import DescribeAppResponse

__all__ = ["GRACE", "not_listed_yet", "remember", "submitted_ago"]

#: Seconds after its submit during which an app AWS does not list yet is SUBMITTED.
GRACE = 120.0
#: Lines kept when the file is rewritten (it is rewritten when twice as long).
_KEEP = 200


def _path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchx-aws" / "recent"


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


def remember(
    scheduler: str, app_id: str, *, now: float | None = None, path: Path | None = None
) -> None:
    """Writes down that ``app_id`` was submitted to ``scheduler`` (now, or at ``now``)."""
    when = time.time() if now is None else now
    path = path or _path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(f"{when:.3f} {scheduler} {app_id}\n")
        lines = _lines(path)
        if len(lines) > 2 * _KEEP:
            tmp = path.with_name(f"recent.{os.getpid()}")
            tmp.write_text("\n".join(lines[-_KEEP:]) + "\n", encoding="utf-8")
            tmp.replace(path)
    except OSError:
        pass  # a cache: without it, describe answers as AWS does


def submitted_ago(
    scheduler: str, app_id: str, *, now: float | None = None, path: Path | None = None
) -> float | None:
    """Seconds since ``app_id`` was submitted to ``scheduler``, if written down here."""
    when = time.time() if now is None else now
    found = None
    for line in _lines(path or _path()):
        stamp, _, rest = line.partition(" ")
        if rest == f"{scheduler} {app_id}":
            try:
                found = float(stamp)
            except ValueError:
                continue
    return None if found is None else max(0.0, when - found)


def not_listed_yet(scheduler: str, app_id: str) -> DescribeAppResponse | None:
    """What ``describe`` answers for an app AWS does not know: SUBMITTED when it was
    submitted here less than :data:`GRACE` seconds ago, else None (no such app)."""
    ago = submitted_ago(scheduler, app_id)
    if ago is None or ago > GRACE:
        return None
    from torchx.schedulers.contract.api import DescribeAppResponse
    from torchx.specs import AppState

    return DescribeAppResponse(
        app_id=app_id,
        state=AppState.SUBMITTED,
        msg=f"submitted {ago:.0f} s ago; AWS does not list the job yet (its reads are "
        "eventually consistent)",
    )
