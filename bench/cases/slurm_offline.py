"""Benchmarks of the slurm scheduler that need no cluster: dry runs and parsing a big list.

Targets come from the Slurm plugin's issue:

* ``slurm.dryrun_ddp_128x8``: ``Runner.dryrun`` of ``dist.ddp -j 128x8`` on ``slurm``
  (the sbatch script of 128 heterogeneous groups) under 5 ms, ours vs upstream 0.7.0's
  ``slurm`` scheduler;
* ``slurm.list_200_jobs``: ``list()`` of a user with 200 jobs (2 replicas each) under
  1 s; ``squeue`` is a stand-in printing that output, so what is measured is our
  command, its process and the parsing, not a controller.

(The submit-to-SUCCEEDED latency needs a real cluster: see the integration tier.)
"""

from __future__ import annotations

import os
import sys
import tempfile
import textwrap
from pathlib import Path

from harness import Context, Measurement, case, child_env, run_snippet

_DRYRUN_OURS = textwrap.dedent(
    """
    import json, sys, time
    try:
        from torchx.components.args import materialize_appdef
        from torchx.components.finder import get_component
        from torchx.runner import Runner
        from torchx_slurm.scheduler import create_scheduler
    except ImportError as e:
        print(json.dumps({"skip": f"not implemented ({e})"}))
        sys.exit(0)
    app = materialize_appdef(get_component("dist.ddp").fn, ["-j", "128x8", "-m", "train"])
    runner = Runner("bench", {"slurm": create_scheduler})
    cfg = {"partition": "gpu", "time": "1:00:00"}

    def timed():
        t = time.perf_counter()
        info = runner.dryrun(app, "slurm", cfg)
        return (time.perf_counter() - t) * 1000, info

    cold, info = timed()
    assert str(info).count("#SBATCH hetjob") == 127
    print(json.dumps({"samples": [timed()[0] for _ in range(%d)], "cold": cold}))
    """
)

_DRYRUN_UPSTREAM = textwrap.dedent(
    """
    import json, time
    from torchx.components.dist import ddp
    from torchx.runner import get_runner
    app = ddp(m="train", j="128x8")
    runner = get_runner()
    cfg = {"partition": "gpu", "time": "1:00:00"}

    def timed():
        t = time.perf_counter()
        info = runner.dryrun(app, "slurm", cfg)
        return (time.perf_counter() - t) * 1000, info

    try:
        cold, info = timed()
        samples = [timed()[0] for _ in range(%d)]
    except Exception as e:  # upstream's slurm dryrun may need what is not here
        print(json.dumps({"samples": None, "cold": None, "error": repr(e)}))
    else:
        print(json.dumps({"samples": samples, "cold": cold}))
    """
)


@case("slurm.dryrun_ddp_128x8", target="< 5 ms", upstream=True)
def dryrun_ddp_128x8(ctx: Context) -> Measurement:
    """Runner.dryrun(dist.ddp -j 128x8) on slurm: the 128-group sbatch script, best of N.

    Includes the Runner's validation and config handling, the scheduler's copy of the
    app, the run-option checks and the script (macros substituted, every argument
    quoted). No Slurm command runs. The first call is reported apart.
    """
    n = max(ctx.inner * 2, 20)
    with tempfile.TemporaryDirectory(prefix="torchx-bench-slurm-") as tmp:
        env = child_env(HOME=tmp, TORCHX_HOME=str(Path(tmp) / "state"))
        ours = run_snippet(ctx.python, _DRYRUN_OURS % n, env=env)
        up = (
            run_snippet(ctx.upstream_python, _DRYRUN_UPSTREAM % n, env=env)
            if ctx.upstream_python
            else None
        )
    up_samples = up["samples"] if up and up.get("samples") else None
    return Measurement.from_times(
        ours["samples"],
        upstream=up_samples,
        statistic="min",
        first_call_ms=round(ours["cold"], 2),
        upstream_first_call_ms=round(up["cold"], 2) if up_samples and up else None,
        upstream_error=up.get("error") if up else None,
    )


# squeue stand-in: 200 jobs of 2 replicas each, in the format the scheduler asks for
_SQUEUE = """#!{python}
import sys
sep = "\\x1f"
out = []
for j in range(200):
    for k in range(2):
        out.append(sep.join([f"{{1000 + j}}+{{k}}", "RUNNING", "me", f"n{{k}}", "None",
                             f"app-{{j}}-abcdefghij:trainer:{{k}}", "/home/me/jobs/run"]))
sys.stdout.write("\\n".join(out) + "\\n")
"""

_LIST = textwrap.dedent(
    """
    import json, sys, time
    try:
        from torchx_slurm.scheduler import create_scheduler
    except ImportError as e:
        print(json.dumps({"skip": f"not implemented ({e})"}))
        sys.exit(0)
    sched = create_scheduler("bench")

    def timed():
        t = time.perf_counter()
        apps = sched.list()
        return (time.perf_counter() - t) * 1000, apps

    cold, apps = timed()
    assert len(apps) == 200, len(apps)
    print(json.dumps({"samples": [timed()[0] for _ in range(%d)], "cold": cold}))
    """
)


@case("slurm.list_200_jobs", target="< 1000 ms")
def list_200_jobs(ctx: Context) -> Measurement:
    """Scheduler.list() of 200 jobs (400 squeue lines from a stand-in squeue), median.

    The stand-in is a Python script, so each call includes starting an interpreter
    (what a real squeue costs on top is the controller's answer).
    """
    n = max(ctx.inner // 2, 5)
    with tempfile.TemporaryDirectory(prefix="torchx-bench-slurm-") as tmp:
        bin_dir = Path(tmp) / "bin"
        bin_dir.mkdir()
        squeue = bin_dir / "squeue"
        squeue.write_text(_SQUEUE.format(python=sys.executable))
        squeue.chmod(0o755)
        # list also asks accounting for the jobs that left the queue: none here
        sacct = bin_dir / "sacct"
        sacct.write_text("#!/bin/sh\nexit 0\n")
        sacct.chmod(0o755)
        env = child_env(HOME=tmp, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
        env.pop("SLURM_CONF", None)
        ours = run_snippet(ctx.python, _LIST % n, env=env)
    return Measurement.from_times(ours["samples"], first_call_ms=round(ours["cold"], 2))
