"""``bjobs``: the jobs' records as LSF prints them.

``bjobs [-a] [-noheader] [-o "FIELDS [delimiter='c']"] [-P project] [-J name] [-u
user|all] [jobid ...]``: the fields IBM documents that torchx reads (and their
aliases), ``-`` where a field has no value, the default table without ``-o``; ended jobs
only with ``-a`` or an id, and only for ``CLEAN_PERIOD``; IBM's ``No job found`` /
``Job <ID> is not found`` on stderr.
"""

from __future__ import annotations

import getpass
import sys
import time

from standin_state import ENDED, all_jobs, conf, die, name_matches

TYPE_CHECKING = False  # not the typing module: every command would pay for its import
if TYPE_CHECKING:
    from typing import Any

_FIELDS = {
    "jobid": "id", "id": "id", "stat": "stat", "user": "user", "queue": "queue",
    "job_name": "name", "name": "name", "proj_name": "project", "proj": "project",
    "project": "project", "exec_host": "exec_host", "from_host": "from_host",
    "exit_code": "exit_code", "output_dir": "outdir", "cwd": "cwd",
    "submit_time": "submit_time", "start_time": "start_time", "finish_time": "finish_time",
    "slots": "slots", "nalloc_slot": "slots",
}  # fmt: skip


_DEFAULT = "jobid user stat queue from_host exec_host job_name submit_time"


def _value(job: dict[str, Any], key: str) -> str:
    value = job.get(key)
    if key.endswith("_time"):
        return time.strftime("%b %d %H:%M", time.localtime(value)) if value else "-"
    if key == "exit_code" and job["stat"] != "EXIT":
        return "-"
    if value is None or value == "":
        return "-"
    return str(value)


def _parse_format(fmt: str) -> tuple[list[tuple[str, str, int | None]], str | None]:
    """``-o``'s fields (header, key, width) and delimiter."""
    delimiter = None
    fields: list[tuple[str, str, int | None]] = []
    text = fmt.strip()
    if "delimiter=" in text:
        text, _, rest = text.partition("delimiter=")
        rest = rest.strip()
        if len(rest) != 3 or rest[0] != rest[2] or rest[0] not in "'\"":
            die(f"{rest}: Illegal delimiter. Use delimiter='character'.")
        delimiter = rest[1]
    for spec in text.split():
        field, _, width = spec.partition(":")
        if field.lower() not in _FIELDS:
            die(f"{field}: Illegal field name.")
        size = int(width.lstrip("-")) if width.strip("-").isdigit() else None
        fields.append((field.upper(), _FIELDS[field.lower()], size))
    return fields, delimiter


def bjobs(argv: list[str]) -> None:
    cfg = conf()
    noheader = False
    show_all = False
    fmt = None
    project = None
    name = None
    user: str | None = getpass.getuser()
    ids: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-noheader":
            noheader = True
        elif arg == "-a":
            show_all = True
        elif arg in ("-o", "-P", "-J", "-u") and i + 1 < len(argv):
            value = argv[i + 1]
            if arg == "-o":
                fmt = value
            elif arg == "-P":
                project = value
            elif arg == "-J":
                name = value
            else:
                user = None if value == "all" else value
            i += 1
        elif arg.startswith("-"):
            die(f"{arg}: Illegal option.")
        else:
            ids.append(arg)
        i += 1
    fields, delimiter = _parse_format(fmt or _DEFAULT)
    clean = float(cfg.get("CLEAN_PERIOD", "3600"))
    now = time.time()
    jobs = []
    failed = False
    for job in all_jobs():
        if user is not None and job["user"] != user:
            continue
        ended = job["stat"] in ENDED
        if ended and now - (job["finish_time"] or now) > clean:
            continue  # cleaned: LSF no longer shows it
        if ended and not show_all and not ids:
            continue
        if project is not None and job["project"] != project:
            continue
        if name is not None and not name_matches(job["name"], name):
            continue
        jobs.append(job)
    if ids:
        wanted = []
        for raw in ids:
            found = [j for j in jobs if str(j["id"]) == raw]
            if not found:
                print(f"Job <{raw}> is not found", file=sys.stderr)
                failed = True
            wanted += found
        jobs = wanted
    if not jobs:
        if not failed:
            print("No job found" if show_all else "No unfinished job found", file=sys.stderr)
        sys.exit(255 if failed else 0)
    sep = delimiter if delimiter is not None else " "
    if not noheader:
        print(sep.join(header for header, _, _ in fields))
    for job in jobs:
        cells = []
        for _, key, width in fields:
            cell = _value(job, key)
            if width is not None:
                cell = cell[:width].ljust(width)
            cells.append(cell)
        print(sep.join(cells))
    sys.exit(255 if failed else 0)
