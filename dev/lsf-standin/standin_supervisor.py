"""The per-job supervisor: waits for the job's turn, runs its file, records how it ended.

``bsub`` (or ``brequeue`` of an ended job) starts one detached supervisor per job run:
``lsf_standin.py _run JOBID ATTEMPT``. It waits (PEND) for the job's dependency and a
host that takes it, runs the job file with ``/bin/sh`` in a process group of its own
(the submitter's environment plus LSB_JOBID, LSB_JOBNAME, LSB_QUEUE, LSB_HOSTS,
LSB_MCPU_HOSTS, LSB_OUTDIR), output where ``-o``/``-oo``/``-e``/``-eo`` say; a kill or
a requeue of the running job ends its group with SIGINT, SIGTERM, then SIGKILL
``JOB_TERMINATE_INTERVAL`` apart. A job requeued while it runs (``brequeue``, or an exit
value of ``bsub -Q``) goes back to PEND and runs again under the same supervisor; the
``attempt`` of the record tells a supervisor whether the job is still its own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from standin_rules import dependency_met, pick_host, requeue, requeues_on
from standin_state import DIR, JOBS, POLL, all_jobs, conf, load, locked, save, signal_group

TYPE_CHECKING = False  # not the typing module: every command would pay for its import
if TYPE_CHECKING:
    from typing import Any

#: The program every supervisor runs (the stand-in's entry point, next to this module).
ENTRY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lsf_standin.py")


def spawn_supervisor(job_id: int, attempt: int = 0) -> None:
    """Starts the detached supervisor of the job's run ``attempt`` (logs in ``log/``)."""
    log = os.path.join(DIR, "log", f"job-{job_id}.log")
    with open(log, "a") as out, open(os.devnull) as null:
        subprocess.Popen(
            [sys.executable, "-S", ENTRY, "_run", str(job_id), str(attempt)],
            stdin=null,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )


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
            name = pick_host(job, jobs, mxj) if dependency_met(job, jobs) else None
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
            signal_group(proc.pid, signal.SIGINT)
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
                    signal_group(proc.pid, sig)
                    escalated = step
    # whatever the job left behind in its process group goes with it
    signal_group(proc.pid, signal.SIGKILL)
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
