"""Benchmarks of the slurm scheduler against a real cluster (``dev/slurm up``).

Targets come from the Slurm plugin's issue:

* ``slurm.submit_to_succeeded``: a trivial job's latency from submit to SUCCEEDED
  through the Runner, at most 1.2x that of raw ``sbatch`` of the same work on the same
  cluster followed by ``squeue`` polls at the same intervals (both sides poll as
  ``torchx run --wait`` does);
* ``slurm.list_200_jobs.cluster``: ``Scheduler.list()`` while the controller holds 200
  of the user's jobs (2 replicas each), under 1 s: the real ``squeue`` and controller,
  beside the stand-in measurement of ``slurm.list_200_jobs``.

They need the cluster: ``eval "$(dev/slurm up)"`` first (root, Debian), so that
SLURM_CONF names it; without it they are skipped, saying so.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import textwrap

from harness import Context, Measurement, Skip, case, child_env, run_snippet


def _cluster() -> None:
    conf = os.environ.get("SLURM_CONF", "")
    if not conf or not os.path.isfile(conf) or shutil.which("sbatch") is None:
        raise Skip('no Slurm cluster: run `eval "$(dev/slurm up)"` first (root, Debian)')
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
    if "UP" not in ping.stdout:
        raise Skip(f"the Slurm controller does not answer: {ping.stdout.strip()}")


# One interpreter: pairs of (Runner.run + polls of Runner.status) and (sbatch + polls of
# squeue), interleaved, so machine noise falls on both alike. Both run the same work (one
# srun step of `true`) and poll on one schedule, the one `torchx run --wait` uses without
# a terminal (torchx.cli.cmd_run._wait: 0.02 s, doubling, at most 1 s): what differs is
# only what torchx adds to a submit and to each status check.
_SUBMIT = textwrap.dedent(
    """
    import json, subprocess, sys, time
    try:
        from torchx.runner import Runner
        from torchx.specs import AppDef, AppState, Resource, Role
        from torchx_slurm.scheduler import create_scheduler
    except ImportError as e:
        print(json.dumps({"skip": f"not implemented ({e})"}))
        sys.exit(0)
    job_dir = %r
    n = %d
    FIRST_POLL, MAX_POLL = 0.02, 1.0  # torchx run --wait's schedule (not on a terminal)
    runner = Runner("bench", {"slurm": create_scheduler})
    app = AppDef("trivial", [Role("w", image="/", entrypoint="true",
                                  resource=Resource(cpu=1, gpu=0, memMB=64))])
    cfg = {"job_dir": job_dir}
    submit = ["sbatch", "--parsable", "--chdir", job_dir, "--output", "/dev/null",
              "--cpus-per-task=1", "--mem=64M", "--wrap", "srun true"]
    # Slurm's end states; COMPLETING is not one (the Slurm plugin maps it to RUNNING)
    ENDED = {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
             "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT", "SPECIAL_EXIT", "REVOKED"}

    def poll(check):
        # check() until it returns an end state, sleeping as torchx run --wait does
        interval, polls = FIRST_POLL, 0
        while True:
            state = check()
            polls += 1
            if state is not None:
                return state, polls
            time.sleep(interval)
            interval = min(interval * 2, MAX_POLL)

    def ours():
        t = time.perf_counter()
        handle = runner.run(app, "slurm", cfg)

        def check():
            status = runner.status(handle)
            return status.state if status is not None and status.is_terminal() else None

        state, polls = poll(check)
        ms = (time.perf_counter() - t) * 1000
        assert state == AppState.SUCCEEDED, state
        return ms, polls

    def raw():
        t = time.perf_counter()
        job = subprocess.run(submit, check=True, capture_output=True, text=True)
        job_id = job.stdout.strip().split(";")[0]

        def check():
            out = subprocess.run(["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%%T"],
                                 capture_output=True, text=True).stdout.split()
            if not out:  # the job left the queue: accounting has its end
                out = subprocess.run(["sacct", "-X", "-n", "-P", "-j", job_id, "-o", "State"],
                                     capture_output=True, text=True).stdout.split()
            state = out[0] if out else ""
            return state if state in ENDED else None

        state, polls = poll(check)
        ms = (time.perf_counter() - t) * 1000
        assert state == "COMPLETED", state
        return ms, polls

    ours(), raw()  # warm-up: imports, the scheduler's first Slurm calls
    pairs = [(ours(), raw()) for _ in range(n)]
    print(json.dumps({"pairs": pairs}))
    """
)


@case("slurm.submit_to_succeeded", target="<= 1.2 x")
def submit_to_succeeded(ctx: Context) -> Measurement:
    """A trivial job, Runner.run + status polls to SUCCEEDED vs raw sbatch + squeue polls.

    Interleaved pairs in one process; the value is the ratio of the medians (ours over
    raw). Both include submitting, the controller starting the job and noticing its end
    by polling on the same schedule, ``torchx run --wait``'s (0.02 s, doubling, at most
    1 s): ours with ``Runner.status`` (the Slurm plugin's ``squeue``, or ``sacct`` once
    the job has left the queue), raw with ``squeue -o %T`` (``sacct`` likewise). Raw
    ``sbatch --wait`` is no fair baseline: it checks every 2 s, so any poller beats it.
    """
    _cluster()
    n = max(ctx.repeat // 4, 5)
    with tempfile.TemporaryDirectory(prefix="torchx-bench-slurm-", dir="/var/tmp") as tmp:
        out = run_snippet(ctx.python, _SUBMIT % (tmp, n), env=child_env(HOME=tmp))
    ours = sorted(p[0][0] for p in out["pairs"])
    raw = sorted(p[1][0] for p in out["pairs"])
    med_ours, med_raw = statistics.median(ours), statistics.median(raw)
    return Measurement(
        value=round(med_ours / med_raw, 3),
        unit="x",
        statistic=f"ratio of medians of {n} pairs",
        details={
            "runner_median_ms": round(med_ours, 1),
            "sbatch_squeue_median_ms": round(med_raw, 1),
            "runner_min_ms": round(ours[0], 1),
            "sbatch_squeue_min_ms": round(raw[0], 1),
            "polls_ours": sorted(p[0][1] for p in out["pairs"]),
            "polls_raw": sorted(p[1][1] for p in out["pairs"]),
        },
    )


# 200 apps of 2 replicas submitted held (they stay PENDING: nothing runs), list() timed,
# then every one of them cancelled, whatever happened.
_LIST = textwrap.dedent(
    """
    import json, subprocess, sys, time
    try:
        from torchx.specs import AppDef, Resource, Role
        from torchx_slurm.scheduler import create_scheduler
    except ImportError as e:
        print(json.dumps({"skip": f"not implemented ({e})"}))
        sys.exit(0)
    job_dir = %r
    n = %d
    sched = create_scheduler("bench")
    app = AppDef("listed", [Role("trainer", image="/", entrypoint="true", num_replicas=2,
                                 resource=Resource(cpu=1, gpu=0, memMB=64))])
    cfg = {"job_dir": job_dir, "sbatch_args": ["--hold"]}
    ids = []
    try:
        t = time.perf_counter()
        for _ in range(200):
            ids.append(sched.submit(app, cfg))
        submit_s = time.perf_counter() - t

        def timed():
            t = time.perf_counter()
            apps = sched.list()
            return (time.perf_counter() - t) * 1000, apps

        cold, apps = timed()
        assert set(ids) <= {a.app_id for a in apps}, len(apps)
        samples = [timed()[0] for _ in range(n)]
    finally:
        for i in range(0, len(ids), 50):
            subprocess.run(["scancel", *ids[i:i + 50]], capture_output=True)
    print(json.dumps({"samples": samples, "cold": cold, "listed": len(apps),
                      "submit_s": submit_s}))
    """
)


@case("slurm.list_200_jobs.cluster", target="< 1000 ms")
def list_200_jobs_cluster(ctx: Context) -> Measurement:
    """Scheduler.list() with 200 held 2-replica jobs in the real controller, median."""
    _cluster()
    n = max(ctx.inner // 2, 5)
    with tempfile.TemporaryDirectory(prefix="torchx-bench-slurm-", dir="/var/tmp") as tmp:
        out = run_snippet(ctx.python, _LIST % (tmp, n), env=child_env(HOME=tmp))
    return Measurement.from_times(
        out["samples"],
        first_call_ms=round(out["cold"], 2),
        apps_listed=out["listed"],
        submit_200_s=round(out["submit_s"], 1),
    )
