"""Benchmarks of the slurm scheduler against a real cluster (``dev/slurm up``).

Targets come from the Slurm plugin's issue:

* ``slurm.submit_to_succeeded``: a trivial job's latency from submit to SUCCEEDED
  through the Runner (``Runner.run`` then ``Runner.wait``), at most 1.2x that of raw
  ``sbatch --wait`` of the same work on the same cluster;
* ``slurm.list_200_jobs.cluster``: ``Scheduler.list()`` while the controller holds 200
  of the user's jobs (2 replicas each), under 1 s: the real ``squeue`` and controller,
  beside the stand-in measurement of ``slurm.list_200_jobs``.

They need the cluster: ``eval "$(dev/slurm up)"`` first (root, Debian), so that
SLURM_CONF names it; without it they are skipped, saying so.
"""

from __future__ import annotations

import os
import shutil
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


# One interpreter: pairs of (Runner.run + Runner.wait) and (sbatch --wait), interleaved,
# so machine noise falls on both alike. Both run the same work: one srun step of `true`.
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
    runner = Runner("bench", {"slurm": create_scheduler})
    app = AppDef("trivial", [Role("w", image="/", entrypoint="true",
                                  resource=Resource(cpu=1, gpu=0, memMB=64))])
    cfg = {"job_dir": job_dir}
    raw = ["sbatch", "--wait", "--parsable", "--chdir", job_dir, "--output", "/dev/null",
           "--cpus-per-task=1", "--mem=64M", "--wrap", "srun true"]

    def ours():
        t = time.perf_counter()
        handle = runner.run(app, "slurm", cfg)
        status = runner.wait(handle)
        ms = (time.perf_counter() - t) * 1000
        assert status is not None and status.state == AppState.SUCCEEDED, status
        return ms

    def sbatch():
        t = time.perf_counter()
        subprocess.run(raw, check=True, capture_output=True)
        return (time.perf_counter() - t) * 1000

    ours(), sbatch()  # warm-up: imports, the scheduler's first Slurm calls
    pairs = [(ours(), sbatch()) for _ in range(n)]
    print(json.dumps({"pairs": pairs}))
    """
)


@case("slurm.submit_to_succeeded", target="<= 1.2 x")
def submit_to_succeeded(ctx: Context) -> Measurement:
    """A trivial job, Runner.run + Runner.wait to SUCCEEDED vs raw sbatch --wait (srun true).

    Interleaved pairs in one process; the value is the ratio of the medians (ours over
    sbatch's). Both include submitting, the controller starting the job, and noticing
    its end: ``sbatch --wait`` by its own polling, the Runner by ``status`` polls at its
    default intervals (0.1 s, doubling).
    """
    _cluster()
    n = max(ctx.repeat // 4, 5)
    with tempfile.TemporaryDirectory(prefix="torchx-bench-slurm-", dir="/var/tmp") as tmp:
        out = run_snippet(ctx.python, _SUBMIT % (tmp, n), env=child_env(HOME=tmp))
    ours = sorted(p[0] for p in out["pairs"])
    raw = sorted(p[1] for p in out["pairs"])
    med_ours, med_raw = ours[len(ours) // 2], raw[len(raw) // 2]
    return Measurement(
        value=round(med_ours / med_raw, 3),
        unit="x",
        statistic=f"ratio of medians of {n} pairs",
        details={
            "runner_median_ms": round(med_ours, 1),
            "sbatch_wait_median_ms": round(med_raw, 1),
            "runner_min_ms": round(ours[0], 1),
            "sbatch_wait_min_ms": round(raw[0], 1),
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
