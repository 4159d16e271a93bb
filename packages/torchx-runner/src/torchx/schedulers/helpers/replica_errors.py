"""Why a replica failed: its elastic error file, or else the last lines of its stderr.

A failed app should say what went wrong (``ValueError: bad batch on rank 1``), not only
``exited with code 1``. PyTorch's elastic tooling writes a replica's exception as JSON
to the file named by ``TORCHELASTIC_ERROR_FILE`` (``torchrun`` does, for the first
failed worker that recorded one; so does any program whose entry point is decorated
with ``torch.distributed.elastic.multiprocessing.errors.record``). A scheduler:

1. sets :data:`ERROR_FILE_ENV` for each replica to a file of its own (unless the role
   sets it), with :func:`error_file_env`;
2. when describing a failed replica, reads it back with :func:`read_error_file` and puts
   the result in ``ReplicaStatus.structured_error_msg``.

When there is no such file (a plain program that raised, a shell script), the Runner
fills the field from the replica's stderr through :func:`error_from_stderr`: when
torchrun's summary ends it, the exception of the worker its "Root Cause" block names
(the traceback of its error file printed there, else the lines torchrun copied from
that worker's stderr, picked out by their ``[N]:`` prefix, as torchrun may interleave
them with its own), else the last Python exception written there (skipping torchrun's
own ``ChildFailedError`` summary, which only says that a child failed), else the last
line that is not a separator, in the same JSON shape with
``extraInfo.source = "stderr"`` and the last lines in ``extraInfo.stderr_tail``. A
scheduler that can read stderr's end more cheaply than ``log_iter`` can call it itself.

:func:`torchx.specs.structured_errors.error_message` turns either into the one line a
status shows. Every function here is public API for scheduler plugins.

>>> import json
>>> msg = error_from_stderr([
...     "Traceback (most recent call last):\\n",
...     '  File "train.py", line 3, in <module>\\n',
...     "    raise ValueError('bad batch on rank 1')\\n",
...     "ValueError: bad batch on rank 1\\n",
... ])
>>> json.loads(msg)["message"]["message"]
'ValueError: bad batch on rank 1'
>>> json.loads(msg)["message"]["extraInfo"]["location"]
'train.py:3'
"""

from __future__ import annotations

import json
import os
import re
from collections import deque
from collections.abc import Iterable
from typing import Any

from torchx.specs.api import NONE

__all__ = [
    "ERROR_FILE_ENV",
    "MAX_ERROR_FILE_BYTES",
    "STDERR_TAIL_LINES",
    "error_file_env",
    "error_from_stderr",
    "read_error_file",
]

#: The variable PyTorch's elastic tooling reads to know where to write a replica's error.
ERROR_FILE_ENV = "TORCHELASTIC_ERROR_FILE"
#: Error files larger than this are not read (a traceback is a few kilobytes).
MAX_ERROR_FILE_BYTES = 1 << 20
#: How many of stderr's last lines :func:`error_from_stderr` keeps in ``stderr_tail``.
STDERR_TAIL_LINES = 20
#: How many of stderr's last lines are searched for an exception.
_SEARCH_LINES = 400

_TRACEBACK = "Traceback (most recent call last):"
# torchrun prefixes worker lines with "[1]:" (--tee), "[rank1]:" or "[default1]:"
_RANK_PREFIX = re.compile(r"^\[(?:rank|default)?(?P<n>\d+)\]:\s?")
# torchrun's summary of a failed node: the block under this line names the failed rank
_ROOT_CAUSE = "Root Cause (first observed failure):"
_ROOT_FIELD = re.compile(r"^\s+(?P<key>rank|exitcode|error_file|traceback)\s*:\s?(?P<value>.*)$")
_LOCAL_RANK = re.compile(r"^(?P<rank>\d+) \(local_rank: (?P<local>\d+)\)")
_SEPARATOR = re.compile(r"^\s*(?:=+|-+|\*+)\s*$")
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')
# an exception line: a dotted name, then ":" and the message, or the name alone
_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<msg>.*))?$")
# only says that a worker failed; the worker's own exception is the cause
_SUMMARIES = ("ChildFailedError",)


def error_file_env(path: str | os.PathLike[str], env: dict[str, str]) -> dict[str, str]:
    """``env`` with :data:`ERROR_FILE_ENV` set to ``path``, unless ``env`` sets it already."""
    out = dict(env)
    out.setdefault(ERROR_FILE_ENV, os.fspath(path))
    return out


def read_error_file(path: str | os.PathLike[str]) -> str:
    """The structured error in ``path``, as compact JSON; ``NONE`` if there is none.

    None is a missing, empty, unreadable, oversized or non-JSON file, or JSON that does
    not hold a ``message``: a half-written file is never taken for an error.
    """
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_ERROR_FILE_BYTES + 1)
    except OSError:
        return NONE
    if not raw.strip() or len(raw) > MAX_ERROR_FILE_BYTES:
        return NONE
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return NONE
    if not isinstance(data, dict) or "message" not in data:
        return NONE
    return json.dumps(data, separators=(",", ":"))


def error_from_stderr(lines: Iterable[str], *, timestamp: float | None = None) -> str:
    """A structured error made from a replica's stderr; ``NONE`` if it wrote nothing.

    ``lines`` may be the whole log: only the last lines are kept while reading. The
    message is the last Python exception found (its type and first message line), else
    the last non-empty line; ``extraInfo`` holds ``source`` (``"stderr"``),
    ``stderr_tail`` (the last :data:`STDERR_TAIL_LINES` lines), and when an exception
    was found its ``py_callstack`` and ``location`` (``file:line`` of its last frame).
    """
    raw = [line.rstrip("\r\n") for line in deque(lines, maxlen=_SEARCH_LINES)]
    while raw and not raw[-1].strip():
        raw.pop()
    if not raw:
        return NONE
    tail = [_RANK_PREFIX.sub("", line) for line in raw]
    extra: dict[str, str] = {
        "source": "stderr",
        "stderr_tail": "\n".join(tail[-STDERR_TAIL_LINES:]),
    }
    if timestamp is not None:
        extra["timestamp"] = str(int(timestamp))
    root = _root_cause(raw)
    found = None
    if root is not None:
        extra.update({k: v for k, v in root.items() if k in ("rank", "error_file")})
        found = _last_exception(root["traceback"]) or _last_exception(root["lines"])
    if found is None:
        found = _last_exception(tail)
    if found is not None:
        message, callstack, location = found
        extra["py_callstack"] = callstack
        if location:
            extra["location"] = location
    elif root is not None:
        # no traceback of the failed worker: say what torchrun knows of it
        message = f"rank {root['rank']} failed (torchrun: exitcode {root['exitcode']})"
    else:
        meaningful = [line.strip() for line in tail if line.strip()]
        message = next((m for m in reversed(meaningful) if not _SEPARATOR.match(m)), meaningful[-1])
    return json.dumps({"message": {"message": message, "extraInfo": extra}})


def _root_cause(raw: list[str]) -> dict[str, Any] | None:
    """What torchrun's last "Root Cause" block says of the failed worker; None without one.

    torchrun ends a failed node's stderr with a summary (its ``ChildFailedError``) whose
    "Root Cause" block names the first failed worker: ``rank : 1 (local_rank: 1)`` and
    ``error_file``, and, when that worker wrote an error file (``@record``), its
    traceback, indented. Returned: ``rank``, ``exitcode`` and ``error_file`` (``""`` for
    torchrun's ``<N/A>``), ``traceback`` (that traceback's lines, dedented; empty without one) and
    ``lines`` (the lines, prefix removed, that torchrun copied from that worker's
    streams: ``[1]:`` for local rank 1, as ``--tee`` writes them). The worker's own
    lines are picked out by their prefix because they reach the log through torchrun's
    tee thread, which may write them in the middle of torchrun's own traceback.
    """
    starts = [i for i, line in enumerate(raw) if line.strip() == _ROOT_CAUSE]
    if not starts:
        return None
    fields: dict[str, str] = {}
    callstack: list[str] = []
    for line in raw[starts[-1] + 1 :]:
        if _SEPARATOR.match(line) and line.strip().startswith("="):
            break
        field = _ROOT_FIELD.match(line)
        if field is not None and field["key"] not in fields:
            fields[field["key"]] = field["value"].strip()
            if field["key"] == "traceback":
                callstack.append(field["value"].strip())
        elif "traceback" in fields and line.strip():
            callstack.append(line[2:] if line.startswith("  ") else line)
    which = _LOCAL_RANK.match(fields.get("rank", ""))
    if which is None:
        return None
    local = which["local"]
    worker = []
    for line in raw[: starts[-1]]:
        prefix = _RANK_PREFIX.match(line)
        if prefix is not None and prefix["n"] == local:
            worker.append(line[prefix.end() :])
    error_file = fields.get("error_file", "")
    return {
        "rank": which["rank"],
        "exitcode": fields.get("exitcode", "?").split(" (", 1)[0],
        "error_file": "" if error_file.startswith("<") else error_file,
        "traceback": callstack if callstack and callstack[0] == _TRACEBACK else [],
        "lines": worker,
    }


def _last_exception(lines: list[str]) -> tuple[str, str, str] | None:
    """(message, traceback text, location) of the last exception that is not a summary."""
    best: tuple[str, str, str] | None = None
    for start, line in enumerate(lines):
        if line.strip() != _TRACEBACK:
            continue
        location = ""
        for end in range(start + 1, len(lines)):
            current = lines[end]
            frame = _FRAME.match(current)
            if frame:
                location = f"{os.path.basename(frame['file'])}:{frame['line']}"
                continue
            if not current.strip() or current[0].isspace():
                continue  # the source line under a frame, carets, a blank line
            match = _EXCEPTION.match(current.strip())
            if match is None:
                break
            kind = match["type"]
            if kind.rsplit(".", 1)[-1] in _SUMMARIES:
                break
            message = kind + (f": {match['msg']}" if match["msg"] else "")
            best = (message, "\n".join(lines[start : end + 1]), location)
            break
    return best
