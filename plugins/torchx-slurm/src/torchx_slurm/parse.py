"""What squeue and sacct print, turned into :class:`JobRecord` s; Slurm states into AppStates.

One record per Slurm job *component*: a heterogeneous job (one per app) has one
component per replica, all under the leader's id (``1234+0``, ``1234+1``, ...).
Parsers never raise on odd input: an unparsable line or entry is skipped, an unknown
state maps to ``UNKNOWN``, so one strange job never breaks a ``list``.

Formats read:

* text: ``squeue -o`` with :data:`SQUEUE_FORMAT`, ``sacct --parsable2`` with
  :data:`SACCT_FIELDS` (also with ``-c``, the job-completion file), fields separated
  by :data:`SEP` (a control character no name or path holds); times as
  ``SLURM_TIME_FORMAT=standard`` prints them (the commands set it), in local time;
* JSON: ``squeue --json`` and ``sacct --json`` of Slurm 22.05 (data parser v0.0.38:
  plain numbers, ``job_state`` a string, squeue's ``exit_code`` a raw wait status)
  and of later releases as documented (v0.0.39 to v0.0.42: numbers as
  ``{"set", "infinite", "number"}``, states as lists of strings, exit codes as
  ``{"status", "return_code", "signal"}``).

>>> rec = parse_squeue_text("1234+1\\x1fRUNNING\\x1falice\\x1fn2\\x1fNone\\x1fapp:worker:1\\x1f/jobs/a\\n")[0]
>>> rec.job_id, rec.offset, rec.state, rec.nodes, app_state(rec.state)
('1234', 1, 'RUNNING', 'n2', <AppState.RUNNING: 3>)
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False  # not the typing module: its import costs the quick handler milliseconds
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    from torchx.specs.api import AppState

# Light to import (the standard library only): the quick handler (:mod:`torchx_slurm.quick`)
# parses squeue's answer with this module without loading the spec types. AppStates are
# made from :data:`STATE_NAMES` when first asked for (``SLURM_STATES``, :func:`app_state`).

#: Field separator of the text formats asked for (ASCII unit separator).
SEP = "\x1f"
#: ``squeue -o`` format: id(+offset), state, user, nodes, reason, job name, work dir.
SQUEUE_FORMAT = SEP.join(["%i", "%T", "%u", "%N", "%r", "%j", "%S", "%e", "%Z"])
#: ``sacct -o`` fields, in the order :func:`parse_sacct_text` reads them.
SACCT_FIELDS = "JobID,State,ExitCode,User,NodeList,Reason,JobName,Start,End,WorkDir"

#: Every Slurm job state (squeue/sacct long names) and the name of the AppState it means
#: (``SLURM_STATES`` holds the AppStates themselves).
STATE_NAMES: Mapping[str, str] = {
    "BOOT_FAIL": "FAILED",
    "CANCELLED": "CANCELLED",
    "COMPLETED": "SUCCEEDED",
    "COMPLETING": "RUNNING",
    "CONFIGURING": "PENDING",
    "DEADLINE": "FAILED",
    "FAILED": "FAILED",
    "LAUNCH_FAILED": "FAILED",
    "NODE_FAIL": "FAILED",
    "OUT_OF_MEMORY": "FAILED",
    "PENDING": "PENDING",
    "POWER_UP_NODE": "PENDING",
    "PREEMPTED": "FAILED",
    "RECONFIG_FAIL": "FAILED",
    "REQUEUED": "PENDING",
    "REQUEUE_FED": "PENDING",
    "REQUEUE_HOLD": "PENDING",
    "RESIZING": "RUNNING",
    "RESV_DEL_HOLD": "PENDING",
    "REVOKED": "CANCELLED",
    "RUNNING": "RUNNING",
    "SIGNALING": "RUNNING",
    "SPECIAL_EXIT": "FAILED",
    "STAGE_OUT": "RUNNING",
    "STOPPED": "RUNNING",
    "SUSPENDED": "RUNNING",
    "TIMEOUT": "FAILED",
    "UPDATE_DB": "RUNNING",
}

# squeue's and sacct's short state codes (squeue %t, sacct's compact states)
_SHORT_STATES = {
    "BF": "BOOT_FAIL",
    "CA": "CANCELLED",
    "CD": "COMPLETED",
    "CF": "CONFIGURING",
    "CG": "COMPLETING",
    "DL": "DEADLINE",
    "F": "FAILED",
    "NF": "NODE_FAIL",
    "OOM": "OUT_OF_MEMORY",
    "PD": "PENDING",
    "PR": "PREEMPTED",
    "R": "RUNNING",
    "RD": "RESV_DEL_HOLD",
    "RF": "REQUEUE_FED",
    "RH": "REQUEUE_HOLD",
    "RQ": "REQUEUED",
    "RS": "RESIZING",
    "RV": "REVOKED",
    "SI": "SIGNALING",
    "SE": "SPECIAL_EXIT",
    "SO": "STAGE_OUT",
    "ST": "STOPPED",
    "S": "SUSPENDED",
    "TO": "TIMEOUT",
}


_RECORD_DOC = """One job component as squeue or sacct reported it.

``job_id`` is the heterogeneous job's leader id (the app id) and ``offset`` the
component's place in it (0 for a plain job); ``state`` is the normalized Slurm state
name; ``exit_code`` the program's exit code (128+N for signal N) when known. For a
task of a job array, ``job_id`` is the array's id and ``array_task`` the task's index
(else None).
"""

if TYPE_CHECKING:

    class JobRecord(NamedTuple):
        job_id: str
        offset: int
        state: str
        name: str = ""
        user: str = ""
        nodes: str = ""
        reason: str = ""
        work_dir: str = ""
        exit_code: int | None = None
        restarts: int | None = None
        start_time: float | None = None
        end_time: float | None = None
        array_task: int | None = None

else:  # the same type, made without importing typing
    from collections import namedtuple

    JobRecord = namedtuple(
        "JobRecord",
        "job_id offset state name user nodes reason work_dir exit_code restarts start_time "
        "end_time array_task",
        defaults=("", "", "", "", "", None, None, None, None, None),
    )
    JobRecord.__doc__ = _RECORD_DOC


def normalize_state(raw: object) -> str:
    """The Slurm state name in ``raw``: ``"CANCELLED by 0"`` -> ``CANCELLED``, ``["RUNNING",
    "COMPLETING"]`` -> ``RUNNING``, ``"CD"`` -> ``COMPLETED``; ``""`` when there is none."""
    if isinstance(raw, list):
        raw = raw[0] if raw else ""
    if not isinstance(raw, str):
        return ""
    word = raw.strip().split(" ", 1)[0].rstrip("+").upper()
    return _SHORT_STATES.get(word, word)


_app_states: dict[str, AppState] = {}


def __getattr__(name: str) -> Any:
    """``SLURM_STATES``: every Slurm job state and the AppState it means (made on first use)."""
    if name == "SLURM_STATES":
        if not _app_states:
            from torchx.specs.api import AppState

            _app_states.update({k: AppState[v] for k, v in STATE_NAMES.items()})
        return _app_states
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def app_state(state: str) -> AppState:
    """The AppState of a normalized Slurm state (``UNKNOWN`` for one Slurm may add later)."""
    from torchx.schedulers.contract.states import to_app_state

    table: Mapping[str, AppState] = __getattr__("SLURM_STATES")
    return to_app_state(state, table)


def split_job_id(raw: str) -> tuple[str, int] | None:
    """``"1234+1"`` -> ``("1234", 1)``, ``"1234"`` -> ``("1234", 0)``; None if not a job id."""
    head, plus, offset = raw.strip().partition("+")
    if not head or not (head.isdigit() or _is_array_id(head)):
        return None
    if not plus:
        return head, 0
    return (head, int(offset)) if offset.isdigit() else None


def split_array_id(raw: str) -> tuple[str, list[int]] | None:
    """The array's id and the task indices of a job array's id as squeue and sacct print
    it: one task (``12_3``), or the tasks still pending as one line (``12_[3-9%2]``,
    ``12_[1,4-5]``); None for any other id.

    >>> split_array_id("12_3"), split_array_id("12_[3-5,8%2]"), split_array_id("12+1")
    (('12', [3]), ('12', [3, 4, 5, 8]), None)
    """
    base, sep, tasks = raw.strip().partition("_")
    if not sep or not base.isdigit():
        return None
    if tasks.isdigit():
        return base, [int(tasks)]
    if not (tasks.startswith("[") and tasks.endswith("]")):
        return None
    indices: list[int] = []
    for part in tasks[1:-1].partition("%")[0].split(","):
        first, dash, last = part.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            return None
        # a step (``1-9:2``) is not how squeue prints what is left of an array
        indices.extend(range(int(first), int(last if dash else first) + 1))
    return (base, indices) if indices else None


def _array_records(rec: JobRecord, raw_id: str) -> list[JobRecord]:
    """``rec`` as one record per array task its id names (itself for another job)."""
    array = split_array_id(raw_id)
    if array is None:
        return [rec]
    base, tasks = array
    return [rec._replace(job_id=base, array_task=task) for task in tasks]


def _is_array_id(text: str) -> bool:
    base, _, index = text.partition("_")
    return base.isdigit() and bool(index)


def _clean(text: str) -> str:
    return "" if text in ("(null)", "None", "None assigned", "") else text


def _exit_pair(text: str) -> int | None:
    """sacct's ``CODE:SIGNAL`` -> the exit code (128+SIGNAL when killed by a signal)."""
    code, _, signal = text.strip().partition(":")
    if not code.isdigit():
        return None
    if signal.isdigit() and int(signal):
        return 128 + int(signal)
    return int(code)


def parse_time(text: str) -> float | None:
    """Slurm's ``2026-11-25T03:48:26`` (local time, ``SLURM_TIME_FORMAT=standard``) as
    seconds since the epoch; None for ``Unknown``, ``N/A``, ``None`` or another format.

    >>> parse_time("Unknown") is None, parse_time("N/A") is None
    (True, True)
    """
    text = text.strip()
    if len(text) != 19 or text[10] != "T":
        return None
    from datetime import datetime

    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def _split(line: str, n: int) -> tuple[list[str], float | None, float | None]:
    """The ``n`` fields of a line whose last two columns before the work dir are the start
    and end times, without them, and the times; a line of the format before those columns
    were added (``n`` fields in all, as older tools print it) has no times."""
    fields = line.split(SEP, n + 1)
    if len(fields) == n + 2:
        return [*fields[: n - 1], fields[-1]], parse_time(fields[-3]), parse_time(fields[-2])
    return line.split(SEP, n - 1), None, None


def parse_squeue_text(out: str) -> list[JobRecord]:
    """Records from ``squeue -h -o SQUEUE_FORMAT`` output (one component per line)."""
    records = []
    for line in out.splitlines():
        fields, start, end = _split(line, 7)
        if len(fields) != 7:
            continue
        ids = split_job_id(fields[0])
        if ids is None:
            continue
        rec = JobRecord(
            job_id=ids[0],
            offset=ids[1],
            state=normalize_state(fields[1]),
            user=fields[2],
            nodes=_clean(fields[3]),
            reason=_clean(fields[4]),
            name=fields[5],
            work_dir=fields[6],
            start_time=start,
            end_time=end,
        )
        records.extend(_array_records(rec, fields[0]))
    return records


def parse_sacct_text(out: str) -> list[JobRecord]:
    """Records from ``sacct -X -n --parsable2 --delimiter=SEP -o SACCT_FIELDS`` output.

    Step lines (``1234+0.batch``) are skipped, so the output of ``sacct`` without ``-X``
    parses the same. Works for ``sacct -c`` (the job-completion file) too, whose user
    column reads ``name(uid)``.
    """
    records = []
    for line in out.splitlines():
        fields, start, end = _split(line, 8)
        if len(fields) != 8 or "." in fields[0]:
            continue
        ids = split_job_id(fields[0])
        if ids is None:
            continue
        user = fields[3]
        if user.endswith(")") and "(" in user:
            user = user[: user.index("(")]
        rec = JobRecord(
            job_id=ids[0],
            offset=ids[1],
            state=normalize_state(fields[1]),
            exit_code=_exit_pair(fields[2]),
            user=user,
            nodes=_clean(fields[4]),
            reason=_clean(fields[5]),
            name=fields[6],
            work_dir=fields[7],
            start_time=start,
            end_time=end,
        )
        records.extend(_array_records(rec, fields[0]))
    return records


def _job_id(value: Any) -> int | None:
    """A job id (:func:`_num`): a negative number is none (no record names a job by it)."""
    num = _num(value)
    return num if num is not None and num >= 0 else None


def _num(value: Any) -> int | None:
    """A JSON number as Slurm writes it: ``3`` (v0.0.38) or ``{"set": true, "number": 3}``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        if value.get("set", True) is False or value.get("infinite") is True:
            return None
        return _num(value.get("number"))
    return None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def decode_wait_status(status: int) -> int:
    """A raw wait status (squeue --json v0.0.38's ``exit_code``) as an exit code.

    >>> decode_wait_status(768), decode_wait_status(9), decode_wait_status(0)
    (3, 137, 0)
    """
    signal = status & 0x7F
    return 128 + signal if signal else (status >> 8) & 0xFF


def _json_exit(value: Any, *, raw_wait_status: bool) -> int | None:
    if isinstance(value, dict):
        signal = value.get("signal")
        sig = _num(signal.get("id", signal.get("signal_id"))) if isinstance(signal, dict) else None
        if sig:
            return 128 + sig
        return _num(value.get("return_code"))
    number = _num(value)
    if number is None:
        return None
    return decode_wait_status(number) if raw_wait_status else number


def _load_jobs(out: str) -> list[Any]:
    import json

    try:
        data = json.loads(out)
    except ValueError:
        return []
    jobs = data.get("jobs") if isinstance(data, dict) else None
    return jobs if isinstance(jobs, list) else []


def parse_squeue_json(out: str) -> list[JobRecord]:
    """Records from ``squeue --json`` (data parser v0.0.38 of 22.05 and later versions)."""
    records = []
    for job in _load_jobs(out):
        if not isinstance(job, dict):
            continue
        job_id = _job_id(job.get("job_id"))
        if job_id is None:
            continue
        leader = _job_id(job.get("het_job_id")) or job_id
        offset = _num(job.get("het_job_offset")) or 0
        records.append(
            JobRecord(
                job_id=str(leader),
                offset=offset,
                state=normalize_state(job.get("job_state")),
                name=_str(job.get("name")),
                user=_str(job.get("user_name")),
                nodes=_clean(_str(job.get("nodes"))),
                reason=_clean(_str(job.get("state_reason"))),
                work_dir=_str(job.get("current_working_directory")),
                # 22.05 gives the raw wait status here; later versions an object
                exit_code=_json_exit(job.get("exit_code"), raw_wait_status=True),
                restarts=_num(job.get("restart_cnt")),
            )
        )
    return records


def parse_sacct_json(out: str) -> list[JobRecord]:
    """Records from ``sacct --json`` (data parser v0.0.38 of 22.05 and later versions)."""
    records = []
    for job in _load_jobs(out):
        if not isinstance(job, dict):
            continue
        job_id = _job_id(job.get("job_id"))
        if job_id is None:
            continue
        het: dict[str, Any] = job["het"] if isinstance(job.get("het"), dict) else {}
        leader = _job_id(het.get("job_id")) or job_id
        offset = _num(het.get("job_offset")) or 0
        state: dict[str, Any] = job["state"] if isinstance(job.get("state"), dict) else {}
        user = job.get("user")
        records.append(
            JobRecord(
                job_id=str(leader),
                offset=offset,
                state=normalize_state(state.get("current")),
                name=_str(job.get("name")),
                user=user if isinstance(user, str) else _str(job.get("user_name")),
                nodes=_clean(_str(job.get("nodes"))),
                reason=_clean(_str(state.get("reason"))),
                work_dir=_str(job.get("working_directory")),
                exit_code=_json_exit(job.get("exit_code"), raw_wait_status=False),
                restarts=_num(job.get("restart_cnt")),
            )
        )
    return records
