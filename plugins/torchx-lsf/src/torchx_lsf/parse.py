"""What ``bjobs -o`` prints, read back: one :class:`JobRecord` per LSF job.

The scheduler asks ``bjobs`` for exactly the fields it reads, unpadded, one job per
line, separated by :data:`SEP` (``bjobs -noheader -a -o "FIELDS delimiter='|'"``, the
customized output IBM documents since LSF 9.1)::

    >>> line = "1234|EXIT|kit-x1|3|4*hostA:2*hostB|kit-x1-main-0|Nov 25 06:40|Nov 25 06:41|/jobs/a"
    >>> [rec] = parse_bjobs(line)
    >>> rec.job_id, rec.state, rec.exit_code, rec.exec_host, rec.role, rec.replica_id
    ('1234', 'EXIT', 3, 'hostA', 'main', 0)

A field LSF has no value for is ``-``. Times are LSF's default form, ``Nov 25 06:40``
(local time, to the minute; a year when ``LSB_DISPLAY_YEAR=Y``; a trailing ``E``/``L``
marks an estimate, read as none): :func:`parse_time`. Lines that are not records (``No job found``,
``Job <12> is not found``: LSF's answers when nothing matches) are skipped, never read
as a job. The last field (the output directory, a path) may hold the separator: it is
split off last.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not the typing module: its import costs the quick handler milliseconds
if TYPE_CHECKING:
    from torchx.specs.api import AppState

# Light to import (the standard library only, not even re): the quick handler
# (:mod:`torchx_lsf.quick`) parses bjobs' answer with this module without loading the
# spec types. ``JobRecord.app_state`` makes the AppState from :data:`STATE_NAMES` when
# the full path asks for it.

#: The separator of the fields (``delimiter='|'``).
SEP = "|"
#: The fields asked for, in the order :func:`parse_bjobs` reads them.
FIELDS = (
    "jobid",
    "stat",
    "proj_name",
    "exit_code",
    "exec_host",
    "job_name",
    "start_time",
    "finish_time",
    "output_dir",
)
#: The ``-o`` argument of bjobs.
BJOBS_FORMAT = " ".join(FIELDS) + f" delimiter='{SEP}'"

#: LSF's job states -> the names of TorchX's AppStates (upstream TorchX's table;
#: suspended jobs are PENDING). Any other state is UNKNOWN.
STATE_NAMES: dict[str, str] = {
    "PEND": "PENDING",
    "PSUSP": "PENDING",
    "WAIT": "PENDING",
    "RUN": "RUNNING",
    "USUSP": "PENDING",
    "SSUSP": "PENDING",
    "DONE": "SUCCEEDED",
    "EXIT": "FAILED",
}


def state_name(lsf_state: str) -> str:
    """The AppState name of an LSF job state (``UNKNOWN`` for one this table lacks)."""
    return STATE_NAMES.get(lsf_state, "UNKNOWN")


class JobRecord:
    """One LSF job as bjobs prints it (``-`` read as empty or None). Immutable: a changed
    copy is :meth:`evolve`'s."""

    __slots__ = (
        "exec_host",
        "exit_code",
        "finish_time",
        "job_id",
        "job_name",
        "output_dir",
        "project",
        "start_time",
        "state",
    )
    job_id: str
    state: str
    project: str
    exit_code: int | None
    exec_host: str
    job_name: str
    output_dir: str
    start_time: float | None
    finish_time: float | None

    def __init__(
        self,
        job_id: str,
        state: str,
        project: str,
        exit_code: int | None,
        exec_host: str,
        job_name: str,
        output_dir: str,
        start_time: float | None = None,
        finish_time: float | None = None,
    ) -> None:
        set_ = object.__setattr__
        set_(self, "job_id", job_id)
        set_(self, "state", state)
        set_(self, "project", project)
        set_(self, "exit_code", exit_code)
        set_(self, "exec_host", exec_host)
        set_(self, "job_name", job_name)
        set_(self, "output_dir", output_dir)
        set_(self, "start_time", start_time)
        set_(self, "finish_time", finish_time)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"JobRecord is immutable: use evolve({name}=...)")

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is JobRecord and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"JobRecord({fields})"

    def evolve(self, **changes: object) -> JobRecord:
        """A copy with ``changes``."""
        values = {name: getattr(self, name) for name in self.__slots__}
        values.update(changes)
        return JobRecord(**values)

    @property
    def replica(self) -> tuple[str, int] | None:
        """``(role, replica)`` from a job name ``<project>-<role>-<k>``; None for other jobs."""
        prefix = self.project + "-"
        if not self.project or not self.job_name.startswith(prefix):
            return None
        role, sep, k = self.job_name[len(prefix) :].rpartition("-")
        if not sep or not role or not k.isdigit():
            return None
        return role, int(k)

    @property
    def role(self) -> str | None:
        parsed = self.replica
        return parsed[0] if parsed else None

    @property
    def replica_id(self) -> int | None:
        parsed = self.replica
        return parsed[1] if parsed else None

    @property
    def state_name(self) -> str:
        """The name of the AppState of the job's LSF state."""
        return state_name(self.state)

    @property
    def app_state(self) -> AppState:
        """The AppState of the job's LSF state (the full path's; it imports the spec types)."""
        from torchx.specs.api import AppState

        return AppState[self.state_name]


def _value(text: str) -> str:
    text = text.strip()
    return "" if text == "-" else text


def first_host(exec_host: str) -> str:
    """The first host of bjobs' ``exec_host`` (``4*hostA:hostB`` -> ``hostA``)."""
    first = exec_host.strip().split(":", 1)[0].split()[0] if exec_host.strip() else ""
    if first == "-":
        return ""
    count, star, host = first.partition("*")
    return host if star and count.isdigit() and count.isascii() else first


def _is_job_id(text: str) -> bool:
    """``1234`` or an array element ``1234[5]``."""
    base, bracket, index = text.partition("[")
    digits = base.isdigit() and base.isascii()
    if not bracket:
        return digits
    return digits and index.endswith("]") and index[:-1].isdigit() and index[:-1].isascii()


def _exit_code(text: str) -> int | None:
    text = _value(text)
    try:
        return int(text)
    except ValueError:
        return None


_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
)}  # fmt: skip


def parse_time(text: str, now: float | None = None) -> float | None:
    """LSF's ``Nov 25 06:40`` (local time; optionally `` 2026``) as seconds since the epoch.

    Without a year, the latest year that does not put the time more than a day after
    ``now``. None for ``-``, an estimate (a trailing ``E`` or ``L``) or another form.

    >>> import time
    >>> t = parse_time("Jan 02 03:04 2026")
    >>> time.localtime(t)[:5]
    (2026, 1, 2, 3, 4)
    >>> parse_time("-") is None, parse_time("Nov 25 06:40 E") is None
    (True, True)
    """
    import time as _time

    parts = text.split()
    if len(parts) not in (3, 4) or parts[0] not in _MONTHS:
        return None
    hm = parts[2].split(":")
    if not parts[1].isdigit() or len(hm) not in (2, 3) or not all(x.isdigit() for x in hm):
        return None
    month, day = _MONTHS[parts[0]], int(parts[1])
    hour, minute = int(hm[0]), int(hm[1])
    second = int(hm[2]) if len(hm) == 3 else 0
    now = _time.time() if now is None else now
    if len(parts) == 4:
        if not parts[3].isdigit():
            return None  # E or L: an estimate, not a time that happened
        years = [int(parts[3])]
    else:
        this = _time.localtime(now).tm_year
        years = [this, this - 1]
    for year in years:
        try:
            value = _time.mktime((year, month, day, hour, minute, second, 0, 0, -1))
        except (OverflowError, ValueError):
            return None
        if len(parts) == 4 or value <= now + 86400:
            return value
    return None


def parse_bjobs(text: str) -> list[JobRecord]:
    """The records of bjobs' output (``-o BJOBS_FORMAT -noheader``), in its order."""
    records = []
    for line in text.splitlines():
        parts = line.split(SEP, len(FIELDS) - 1)
        if len(parts) != len(FIELDS) or not _is_job_id(parts[0].strip()):
            continue  # a message, not a job
        job_id, state, project, exit_code, exec_host, job_name, start, finish, output_dir = parts
        records.append(
            JobRecord(
                job_id=job_id.strip(),
                state=state.strip(),
                project=_value(project),
                exit_code=_exit_code(exit_code),
                exec_host=first_host(_value(exec_host)),
                job_name=_value(job_name),
                output_dir=_value(output_dir),
                start_time=parse_time(start),
                finish_time=parse_time(finish),
            )
        )
    return records


def replica_exit_code(rec: JobRecord) -> int | None:
    """A replica's exit code: 0 once DONE, LSF's for EXIT, None while it runs."""
    if rec.state == "DONE":
        return 0
    if rec.state == "EXIT":
        return rec.exit_code
    return None
