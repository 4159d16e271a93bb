#!/usr/bin/env python3
"""A stand-in for IBM Spectrum LSF's bsub, bjobs, bkill and brequeue: jobs run here.

LSF cannot be installed here (it is not free software and has no Debian package), so
``dev/lsf up`` puts this program on PATH as ``bsub``, ``bjobs``, ``bkill`` and
``brequeue`` (one small wrapper each). It implements the documented subset the torchx ``lsf``
scheduler uses, with the options and output formats IBM documents for them; every
difference from real LSF is listed in dev/README.md ("dev/lsf").

Execution hosts: the names ``TORCHX_DEV_LSF_HOSTS`` lists (each a name of this machine;
by default its host name alone), ``MXJ`` job slots each. A host takes a job at most once
per ``JOB_ACCEPT_INTERVAL`` periods of ``MBD_SLEEP_TIME`` (lsb.params), so an app's
replicas start seconds apart, spread over the hosts (the one with the fewest slots in
use first). Each job gets a supervisor of its own: ``bsub`` records the job, then starts a
detached ``lsf_standin.py _run JOBID`` that waits for the job's dependency (``-w``) and
for a host that takes it, runs the job file with ``/bin/sh`` in its own process group (the
submitter's environment plus LSB_JOBID, LSB_JOBNAME, LSB_HOSTS, LSB_MCPU_HOSTS,
LSB_QUEUE), writes its output where ``-o``/``-oo``/``-e``/``-eo`` say, and records how it
ended. ``bkill`` signals the job's process group: SIGINT, SIGTERM, then SIGKILL,
``JOB_TERMINATE_INTERVAL`` apart (as LSF does).

State: ``$TORCHX_DEV_LSF_DIR`` (``/var/tmp/torchx-dev-lsf``): ``conf/lsf.conf`` (read
through ``LSF_ENVDIR``), ``jobs/<id>/job.json`` and ``jobs/<id>/jobfile``, ``log/``.
Standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import getpass
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

DIR = os.environ.get("TORCHX_DEV_LSF_DIR", "/var/tmp/torchx-dev-lsf")
JOBS = os.path.join(DIR, "jobs")
POLL = 0.1  # seconds between two looks of a waiting supervisor (LSF's dispatch cycle)


# -- configuration and state ----------------------------------------------------------------


def conf() -> dict[str, str]:
    """``lsf.conf`` of ``LSF_ENVDIR`` (``KEY=VALUE`` lines), as LSF's clients read it."""
    envdir = os.environ.get("LSF_ENVDIR", os.path.join(DIR, "conf"))
    path = os.path.join(envdir, "lsf.conf")
    out: dict[str, str] = {}
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    key, _, value = line.partition("=")
                    out[key.strip()] = value.strip().strip('"')
    except OSError:
        die(f"ls_getclustername(): LSF_ENVDIR={envdir}: cannot open lsf.conf. LSF is down.")
    return out


def die(message: str, code: int = 255) -> None:
    print(message, file=sys.stderr)
    sys.exit(code)


@contextlib.contextmanager
def locked() -> Iterator[None]:
    """The stand-in's one lock (job ids, dispatch decisions, state changes)."""
    with open(os.path.join(DIR, "lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def job_path(job_id: int) -> str:
    return os.path.join(JOBS, str(job_id), "job.json")


def load(job_id: int) -> dict[str, Any] | None:
    try:
        with open(job_path(job_id)) as f:
            data: dict[str, Any] = json.load(f)
            return data
    except (OSError, ValueError):
        return None


def save(job: dict[str, Any]) -> None:
    path = job_path(job["id"])
    tmp = f"{path}.tmp{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(job, f)
    os.replace(tmp, path)


def all_jobs() -> list[dict[str, Any]]:
    try:
        names = os.listdir(JOBS)
    except OSError:
        return []
    jobs = [load(int(n)) for n in names if n.isdigit()]
    return sorted((j for j in jobs if j), key=lambda j: j["id"])


def host() -> str:
    """The host the commands run on (the submission host: ``from_host``)."""
    return conf().get("TORCHX_DEV_LSF_HOST") or socket.gethostname()


def exec_hosts() -> list[str]:
    """The execution hosts, in order: ``TORCHX_DEV_LSF_HOSTS`` (names of this machine), else
    :func:`host` alone."""
    return conf().get("TORCHX_DEV_LSF_HOSTS", "").split() or [host()]


def accept_interval() -> float:
    """Seconds a host waits after a dispatch before it takes another job: LSF's
    ``JOB_ACCEPT_INTERVAL`` periods of ``MBD_SLEEP_TIME`` (lsb.params)."""
    cfg = conf()
    return float(cfg.get("JOB_ACCEPT_INTERVAL", "0")) * float(cfg.get("MBD_SLEEP_TIME", "1"))


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


# -- bsub -------------------------------------------------------------------------------------

_BSUB_VALUE = {
    "-J": "name", "-P": "project", "-q": "queue", "-n": "slots", "-R": "res_req",
    "-gpu": "gpu", "-cwd": "cwd", "-outdir": "outdir", "-o": "out", "-oo": "out_over",
    "-e": "err", "-eo": "err_over", "-w": "depend", "-m": "hosts", "-Q": "requeue",
}  # fmt: skip


def bsub(argv: list[str]) -> None:
    cfg = conf()
    opts: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _BSUB_VALUE:
            if i + 1 >= len(argv):
                die(f"{arg}: Option requires an argument. Job not submitted.")
            opts[_BSUB_VALUE[arg]] = argv[i + 1]
            i += 2
        elif arg.startswith("-") and not rest:
            die(f"{arg}: Illegal option. Job not submitted.")
        else:
            rest = argv[i:]
            break
    queues = cfg.get("TORCHX_DEV_LSF_QUEUES", "normal").split()
    queue = opts.get("queue", queues[0])
    if queue not in queues:
        die(f"{queue}: No such queue. Job not submitted.")
    slots = opts.get("slots", "1")
    if not slots.isdigit() or int(slots) < 1:
        die(f"{slots}: Bad argument for option -n. Job not submitted.")
    for name in opts.get("hosts", "").split():
        if name not in exec_hosts():
            die(f"{name}: Bad host name, host group name or cluster name. Job not submitted.")
    if rest:
        jobfile = " ".join(rest) + "\n"  # LSF runs the command line with the user's shell
        command = " ".join(rest)
    else:
        jobfile = sys.stdin.read()
        command = next((x for x in jobfile.splitlines() if x and not x.startswith("#")), "")
    requeue = opts.get("requeue", "")
    if requeue and parse_requeue(requeue) is None:
        die(f"{requeue}: Bad requeue exit values for option -Q. Job not submitted.")
    depend = opts.get("depend")
    if depend is not None and parse_depend(depend) is None:
        die(f"{depend}: Syntax error in dependency condition. Job not submitted.")
    with locked():
        counter = os.path.join(DIR, "next_id")
        try:
            with open(counter) as f:
                job_id = int(f.read().strip() or "1")
        except (OSError, ValueError):
            job_id = 1
        with open(counter, "w") as f:
            f.write(str(job_id + 1))
        os.makedirs(os.path.join(JOBS, str(job_id)), mode=0o700)
        with open(os.path.join(JOBS, str(job_id), "jobfile"), "w") as f:
            f.write(jobfile)
        job = {
            "id": job_id,
            "name": opts.get("name") or command[:100],
            "project": opts.get("project") or cfg.get("TORCHX_DEV_LSF_DEFAULT_PROJECT", "default"),
            "queue": queue,
            "user": getpass.getuser(),
            "slots": int(slots),
            "cwd": expand(opts.get("cwd") or os.getcwd(), job_id),
            "outdir": expand(opts.get("outdir", ""), job_id),
            "out": expand(opts.get("out_over") or opts.get("out") or "", job_id),
            "out_append": "out_over" not in opts,
            "err": expand(opts.get("err_over") or opts.get("err") or "", job_id),
            "err_append": "err_over" not in opts,
            "depend": depend,
            "res_req": opts.get("res_req", ""),
            "hosts": opts.get("hosts", ""),
            "gpu": opts.get("gpu", ""),
            "requeue": requeue,
            "attempt": 0,
            "env": dict(os.environ),
            "stat": "PEND",
            "exit_code": None,
            "exec_host": "",
            "from_host": host(),
            "submit_time": time.time(),
            "start_time": None,
            "finish_time": None,
            "pgid": None,
            "kill": None,
        }
        save(job)
    spawn_supervisor(job_id)
    where = f"queue <{queue}>" if "queue" in opts else f"default queue <{queue}>"
    print(f"Job <{job_id}> is submitted to {where}.")


def expand(path: str, job_id: int) -> str:
    """``%J`` (the job id) and ``%I`` (the array index: 0) in a path, as bsub expands them."""
    return path.replace("%J", str(job_id)).replace("%I", "0")


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


def spawn_supervisor(job_id: int, attempt: int = 0) -> None:
    log = os.path.join(DIR, "log", f"job-{job_id}.log")
    with open(log, "a") as out, open(os.devnull) as null:
        subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "_run", str(job_id), str(attempt)],
            stdin=null,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )


# -- dependencies -----------------------------------------------------------------------------

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


def _dependency_met(job: dict[str, Any], jobs: list[dict[str, Any]]) -> bool:
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


# -- the per-job supervisor --------------------------------------------------------------------


def supervise(job_id: int, attempt: int = 0) -> None:
    """Runs the job until it ends; a job requeued while it runs (``brequeue``, or its exit
    value in ``bsub -Q``) goes back to PEND and runs again under this supervisor."""
    while True:
        job = _dispatch(job_id, attempt)
        if job is None:
            return  # killed while pending, or requeued to another supervisor
        code, signalled = _run(job_id, job)
        with locked():
            job = load(job_id) or job
            # a kill wins over a requeue; LSF does not requeue a job a signal ended
            auto = not signalled and requeues_on(job.get("requeue", ""), code)
            if not job.get("kill") and (job.get("requeued") or auto):
                requeue(job)
                attempt = job["attempt"]
                save(job)
                continue
            job["stat"] = "DONE" if code == 0 else "EXIT"
            job["exit_code"] = code
            job["finish_time"] = time.time()
            save(job)
            return


def requeue(job: dict[str, Any]) -> None:
    """``job`` back to PEND, as LSF requeues a job: same id, a fresh run (state only)."""
    job.update(
        stat="PEND", exit_code=None, exec_host="", host=None, start_time=None,
        finish_time=None, pgid=None, kill=None, requeued=None,
        attempt=job.get("attempt", 0) + 1,
    )  # fmt: skip


def _dispatch(job_id: int, attempt: int) -> dict[str, Any] | None:
    """Waits (PEND) for the job's dependency and a host that takes it; the job as RUN, or
    None when it left PEND otherwise (killed) or another supervisor now runs it."""
    cfg = conf()
    mxj = int(cfg.get("TORCHX_DEV_LSF_MXJ", "16"))  # on each host
    while True:
        with locked():
            job = load(job_id)
            if job is None or job["stat"] != "PEND" or job.get("attempt", 0) != attempt:
                return None
            if job.get("supervisor") != os.getpid():
                job["supervisor"] = os.getpid()  # dev/lsf down stops it by this pid
                save(job)
            jobs = all_jobs()
            name = pick_host(job, jobs, mxj) if _dependency_met(job, jobs) else None
            if name is not None:
                job["stat"] = "RUN"
                job["start_time"] = time.time()
                job["host"] = name
                job["exec_host"] = f"{job['slots']}*{name}" if job["slots"] > 1 else name
                save(job)
                return job
        time.sleep(POLL)


def _run(job_id: int, job: dict[str, Any]) -> tuple[int, bool]:
    """Runs the dispatched job's file to its end: (exit value, whether a signal ended it).
    A kill (``bkill``) or a requeue (``brequeue``) of the running job ends it with
    SIGINT, then SIGTERM and SIGKILL ``JOB_TERMINATE_INTERVAL`` apart."""
    cfg = conf()
    name = job["host"]
    env = dict(job["env"])
    env.update(
        LSB_JOBID=str(job_id),
        LSB_JOBNAME=job["name"],
        LSB_QUEUE=job["queue"],
        LSB_HOSTS=" ".join([name] * job["slots"]),
        LSB_MCPU_HOSTS=f"{name} {job['slots']}",
        LSB_OUTDIR=job["outdir"],
    )
    cwd = job["cwd"] if os.path.isdir(job["cwd"]) else "/tmp"
    out = _open_output(job["out"], job["out_append"])
    err = _open_output(job["err"], job["err_append"]) if job["err"] else out
    jobfile = os.path.join(JOBS, str(job_id), "jobfile")
    proc = subprocess.Popen(
        ["/bin/sh", jobfile],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=err,
        start_new_session=True,
        preexec_fn=_default_signals,
    )
    with locked():
        job = load(job_id) or job
        job["pgid"] = proc.pid
        save(job)
        if job.get("kill") or job.get("requeued"):  # came before the group was recorded
            _signal_group(proc.pid, signal.SIGINT)
    interval = float(cfg.get("JOB_TERMINATE_INTERVAL", "1"))
    escalated = 0
    while True:
        try:
            rc = proc.wait(timeout=POLL)
            break
        except subprocess.TimeoutExpired:
            pass
        current = load(job_id) or job
        kill = current.get("kill") or current.get("requeued")
        if kill and kill.get("escalate"):
            elapsed = time.time() - kill["at"]
            # INT was sent by bkill; TERM after one interval, KILL after two
            for step, sig in ((1, signal.SIGTERM), (2, signal.SIGKILL)):
                if escalated < step <= elapsed / interval:
                    _signal_group(proc.pid, sig)
                    escalated = step
    # whatever the job left behind in its process group goes with it
    _signal_group(proc.pid, signal.SIGKILL)
    return (rc if rc >= 0 else 128 - rc), rc < 0


def _default_signals() -> None:
    """A job starts with INT and QUIT at their defaults, as under LSF, even when whoever
    started bsub ignored them (a background job of a shell): sh cannot trap a signal
    ignored on entry, and bkill's first signal is INT."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _open_output(path: str, append: bool) -> int:
    """The job's output file (without -o, LSF mails the output: here it is discarded)."""
    if not path:
        return os.open(os.devnull, os.O_WRONLY)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    try:
        return os.open(path, flags, 0o644)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY)  # LSF: "the output will not be stored"


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass


# -- bkill ------------------------------------------------------------------------------------

_SIGNALS = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "KILL": signal.SIGKILL,
            "STOP": signal.SIGSTOP, "CONT": signal.SIGCONT, "HUP": signal.SIGHUP,
            "USR1": signal.SIGUSR1, "USR2": signal.SIGUSR2}  # fmt: skip


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
    failed = False
    user = getpass.getuser()
    with locked():
        jobs = [j for j in all_jobs() if j["user"] == user]
        if name is not None:
            pattern = name
            matches = [j for j in jobs if _name_matches(j["name"], pattern)]
        else:
            matches = jobs
        if ids and ids != ["0"]:
            targets = []
            for raw in ids:
                found = [j for j in matches if str(j["id"]) == raw]
                if not found:
                    print(f"Job <{raw}>: No matching job found", file=sys.stderr)
                    failed = True
                targets += found
        elif ids == ["0"]:
            targets = matches
        else:  # no id: the most recent matching job
            live = [j for j in matches if j["stat"] in ("PEND", "RUN")]
            targets = live[-1:] if live else matches[-1:]
        if not targets and not failed:
            print("No matching job found", file=sys.stderr)
            failed = True
        for job in targets:
            if job["stat"] in ("DONE", "EXIT"):
                print(f"Job <{job['id']}>: Job has already finished", file=sys.stderr)
                failed = True
                continue
            if sig is not None:
                if job["pgid"]:
                    _signal_group(job["pgid"], sig)
                print(f"Job <{job['id']}> is being signaled")
                continue
            if job["stat"] == "PEND":
                job["stat"] = "EXIT"
                job["finish_time"] = time.time()
            else:
                job["kill"] = {"at": time.time(), "escalate": True}
                if job["pgid"]:
                    _signal_group(job["pgid"], signal.SIGINT)
            save(job)
            print(f"Job <{job['id']}> is being terminated")
    sys.exit(255 if failed else 0)


# -- brequeue ---------------------------------------------------------------------------------

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
    failed = False
    user = getpass.getuser()
    spawn: list[tuple[int, int]] = []
    with locked():
        jobs = [j for j in all_jobs() if j["user"] == user]
        if name is not None:
            jobs = [j for j in jobs if _name_matches(j["name"], name)]
        if ids and ids != ["0"]:
            targets = []
            for raw in ids:
                found = [j for j in jobs if str(j["id"]) == raw]
                if not found:
                    print(f"Job <{raw}>: No matching job found", file=sys.stderr)
                    failed = True
                targets += found
        else:
            targets = jobs if ids == ["0"] else jobs[-1:]
        if not targets and not failed:
            print("No matching job found", file=sys.stderr)
            failed = True
        for job in targets:
            if job["stat"] not in states:
                print(f"Job <{job['id']}>: Job is {job['stat']}: not requeued", file=sys.stderr)
                failed = True
                continue
            if job["stat"] == "RUN":  # its supervisor kills it, then runs it again
                job["requeued"] = {"at": time.time(), "escalate": True}
                if job["pgid"]:
                    _signal_group(job["pgid"], signal.SIGINT)
            else:  # its supervisor has ended: a new one runs it
                requeue(job)
                spawn.append((job["id"], job["attempt"]))
            save(job)
            print(f"Job <{job['id']}> is being requeued")
    for job_id, attempt in spawn:
        spawn_supervisor(job_id, attempt)
    sys.exit(255 if failed else 0)


def _name_matches(name: str, pattern: str) -> bool:
    """A job name against ``-J``'s pattern (``*`` matches any characters, as in LSF)."""
    import fnmatch

    return fnmatch.fnmatchcase(name, pattern.replace("[", "[[]"))


# -- bjobs ------------------------------------------------------------------------------------

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
        ended = job["stat"] in ("DONE", "EXIT")
        if ended and now - (job["finish_time"] or now) > clean:
            continue  # cleaned: LSF no longer shows it
        if ended and not show_all and not ids:
            continue
        if project is not None and job["project"] != project:
            continue
        if name is not None and not _name_matches(job["name"], name):
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


def purge() -> None:
    """Removes the records of jobs that ended more than CLEAN_PERIOD ago (as mbatchd does)."""
    import shutil

    clean = float(conf().get("CLEAN_PERIOD", "3600"))
    with locked():
        for job in all_jobs():
            if job["stat"] in ("DONE", "EXIT") and time.time() - (job["finish_time"] or 0) > clean:
                shutil.rmtree(os.path.join(JOBS, str(job["id"])), ignore_errors=True)


def main() -> None:
    tool = os.path.basename(sys.argv[0])
    args = sys.argv[1:]
    if tool.endswith(".py"):  # python lsf_standin.py TOOL ARGS
        if not args:
            die("usage: lsf_standin.py bsub|bjobs|bkill|brequeue|_run ARGS", 2)
        tool, args = args[0], args[1:]
    if tool == "_run":
        try:
            supervise(int(args[0]), int(args[1]) if len(args) > 1 else 0)
        except BaseException:
            # a stand-in failure must not leave the job PEND or RUN forever: it ends as EXIT
            with locked():
                job = load(int(args[0]))
                if job and job["stat"] in ("PEND", "RUN"):
                    job.update(stat="EXIT", exit_code=1, finish_time=time.time())
                    save(job)
            raise
    elif tool == "_purge":
        purge()
    elif tool == "bsub":
        bsub(args)
    elif tool == "bjobs":
        bjobs(args)
    elif tool == "bkill":
        bkill(args)
    elif tool == "brequeue":
        brequeue(args)
    else:
        die(f"{tool}: not a command of the LSF stand-in (bsub, bjobs, bkill, brequeue)", 2)


if __name__ == "__main__":
    main()
