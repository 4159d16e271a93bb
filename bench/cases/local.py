"""Benchmarks of the local scheduler: launching, following and dry-running local apps.

Targets come from the local scheduler's issue:

* ``local.run_1_replica``: ``Runner.run`` of a 1-replica app returns its handle within
  50 ms (discovery excluded: the Runner is given the local factory directly);
* ``local.start_64_replicas``: every replica of a 64-replica app has started within 1 s
  of the ``run`` call;
* ``local.status_new_process``: the status of an app, asked by a new process, takes
  under 10 ms in-process (the imports before the call are reported apart);
* ``local.log_tail``: following a replica's log keeps up with a replica printing
  100,000 lines per second;
* ``local.dryrun_ddp_128x8``: dry-running ``dist.ddp -j 128x8`` on ``local`` under 5 ms
  (upstream 0.7.0's ``local_cwd``: about 9 ms), ours vs upstream.

Every snippet runs in a fresh interpreter with its own ``TORCHX_HOME`` in a temp folder.
"""

from __future__ import annotations

import statistics
import tempfile
import textwrap
from pathlib import Path

from harness import Context, Measurement, case, child_env, run_snippet

_SETUP = textwrap.dedent(
    """
    import json, os, sys, time
    try:
        from torchx.schedulers.local_scheduler import create_scheduler
        from torchx.runner import Runner
    except ImportError as e:
        print(json.dumps({"skip": f"not implemented ({e})"}))
        sys.exit(0)
    from torchx.specs import AppDef, Role

    def runner():
        return Runner("bench", {"local": create_scheduler})

    def wait(sched, app_id, role):
        for _ in sched.log_iter(app_id, role, 0, should_tail=True):
            pass
    """
)


def _env(tmp: str) -> dict[str, str]:
    return child_env(TORCHX_HOME=str(Path(tmp) / "state"), HOME=tmp)


# --------------------------------------------------------------------------------- run


_RUN = _SETUP + textwrap.dedent(
    """
    r = runner()
    sched = r._scheduler("local") if hasattr(r, "_scheduler") else create_scheduler("bench")
    direct = create_scheduler("bench")
    app = AppDef("one", [Role("w", image="/", entrypoint="true")])
    samples = []
    cold = None
    for i in range(%d):
        t = time.perf_counter()
        handle = r.run(app, "local")
        ms = (time.perf_counter() - t) * 1000
        if cold is None:
            cold = ms
        else:
            samples.append(ms)
        wait(direct, handle.rsplit("/", 1)[1], "w")  # not timed: let it finish first
    print(json.dumps({"samples": samples, "cold": cold}))
    """
)


@case("local.run_1_replica", target="< 50 ms")
def run_1_replica(ctx: Context) -> Measurement:
    """Runner.run of a 1-replica local app until it returns the handle, in-process, median.

    The supervisor is a new ``python -S`` process; ``run`` returns once it runs (its
    imports and the replica's start happen after). Each app is waited for, untimed,
    before the next run. The first call (imports of cattrs for the record) is apart.
    """
    with tempfile.TemporaryDirectory(prefix="torchx-bench-local-") as tmp:
        result = run_snippet(ctx.python, _RUN % (max(ctx.repeat // 2, 10) + 1), env=_env(tmp))
    return Measurement.from_times(result["samples"], first_call_ms=round(result["cold"], 2))


# ----------------------------------------------------------------------------- 64 replicas

_START_64 = _SETUP + textwrap.dedent(
    """
    r = runner()
    sched = create_scheduler("bench")
    app = AppDef("wide", [Role("w", image="/", entrypoint="sh",
                               args=["-c", "date +%%s.%%N"], num_replicas=64)])
    r.run(AppDef("warm", [Role("w", image="/", entrypoint="true")]), "local")
    samples, returns = [], []
    for _ in range(%d):
        t = time.time()
        app_id = r.run(app, "local").rsplit("/", 1)[1]
        returns.append((time.time() - t) * 1000)
        wait(sched, app_id, "w")
        starts = [float(next(iter(sched.log_iter(app_id, "w", k, streams="stdout"))))
                  for k in range(64)]
        assert sched.describe(app_id).state.name == "SUCCEEDED"
        samples.append((max(starts) - t) * 1000)
    print(json.dumps({"samples": samples, "returns": returns}))
    """
)


@case("local.start_64_replicas", target="< 1000 ms")
def start_64_replicas(ctx: Context) -> Measurement:
    """From Runner.run of a 64-replica app to the last replica running (its own clock), median.

    Each replica prints ``date +%s.%N`` as its first act; the value is the latest of
    those times minus the time ``run`` was called.
    """
    with tempfile.TemporaryDirectory(prefix="torchx-bench-local-") as tmp:
        result = run_snippet(ctx.python, _START_64 % max(ctx.repeat // 8, 5), env=_env(tmp))
    return Measurement.from_times(
        result["samples"], run_returned_ms=round(min(result["returns"]), 2)
    )


# ----------------------------------------------------------------------------- status

_LAUNCH_SLEEPER = _SETUP + textwrap.dedent(
    """
    app = AppDef("sleeper", [Role("w", image="/", entrypoint="sleep", args=["120"],
                                  num_replicas=4)])
    print(json.dumps(create_scheduler("bench").submit(app, {"grace_period": 1.0})))
    """
)

_STATUS = textwrap.dedent(
    """
    import json, time
    t0 = time.perf_counter()
    from torchx.runner import Runner
    from torchx.schedulers.local_scheduler import create_scheduler
    t1 = time.perf_counter()
    runner = Runner("another", {"local": create_scheduler})
    status = runner.status(%r)
    t2 = time.perf_counter()
    assert status.state.name == "RUNNING" and len(status.roles[0].replicas) == 4, status
    t3 = time.perf_counter()
    desc = create_scheduler("another").describe(%r)
    t4 = time.perf_counter()
    assert desc.roles[0].num_replicas == 4
    t5 = time.perf_counter()
    runner.status(%r)
    t6 = time.perf_counter()
    print(json.dumps({"import": (t1 - t0) * 1000, "first": (t2 - t1) * 1000,
                      "describe": (t4 - t3) * 1000, "second": (t6 - t5) * 1000}))
    """
)

_STATUS_DISCOVERY = textwrap.dedent(
    """
    import json, time
    t0 = time.perf_counter()
    from torchx.runner import get_runner
    status = get_runner().status(%r)
    t1 = time.perf_counter()
    assert status.state.name == "RUNNING", status
    print(json.dumps({"ms": (t1 - t0) * 1000}))
    """
)

_CANCEL = _SETUP + textwrap.dedent(
    """
    sched = create_scheduler("bench")
    sched.cancel(%r)
    wait(sched, %r, "w")
    print(json.dumps(str(sched.describe(%r).state)))
    # through the scheduler, under the app's lock: the supervisor may still be adding the
    # AppDef's record after the final state, and a bare rmtree of the state directory
    # raced with it ("Directory not empty")
    sched.delete(%r)
    """
)


@case("local.status_new_process", target="< 10 ms")
def status_new_process(ctx: Context) -> Measurement:
    """Runner.status of a running 4-replica app from a new process: the first call, best of N.

    Timed in-process from a fresh interpreter's first ``Runner.status(handle)`` (the Runner
    given the local factory, as in ``local.run_1_replica``: no discovery) to its answer:
    creating the scheduler, reading and settling the record, building the status. The
    import of ``torchx.runner`` and the local scheduler before it is reported apart
    (``import_ms``), as are ``describe()`` (which also reads the AppDef back) and the whole
    path through ``get_runner()`` with plugin discovery, imports included
    (``with_discovery_and_imports_ms``).
    """
    with tempfile.TemporaryDirectory(prefix="torchx-bench-local-") as tmp:
        env = _env(tmp)
        app_id = run_snippet(ctx.python, _LAUNCH_SLEEPER, env=env)
        handle = f"local://bench/{app_id}"
        try:
            runs = [
                run_snippet(ctx.python, _STATUS % (handle, app_id, handle), env=env)
                for _ in range(max(ctx.repeat // 4, 5))
            ]
            run_snippet(ctx.python, _STATUS_DISCOVERY % handle, env=env)  # writes the cache
            whole = [
                run_snippet(ctx.python, _STATUS_DISCOVERY % handle, env=env)["ms"]
                for _ in range(max(ctx.repeat // 8, 3))
            ]
        finally:
            run_snippet(ctx.python, _CANCEL % (app_id, app_id, app_id, app_id), env=env)
    return Measurement.from_times(
        [r["first"] for r in runs],
        statistic="min",
        median_ms=round(statistics.median(r["first"] for r in runs), 3),
        import_ms=round(min(r["import"] for r in runs), 2),
        describe_ms=round(min(r["describe"] for r in runs), 3),
        second_call_ms=round(min(r["second"] for r in runs), 3),
        with_discovery_and_imports_ms=round(min(whole), 2),
    )


# ----------------------------------------------------------------------------- log tail

_TAIL = _SETUP + textwrap.dedent(
    """
    import sys as _sys
    n = %d
    producer = (
        "import sys, time\\n"
        "t = time.perf_counter()\\n"
        f"for i in range({n}): sys.stdout.write(f'line {{i}} of the log of this replica\\\\n')\\n"
        "sys.stdout.flush()\\n"
        "sys.stderr.write(str((time.perf_counter() - t) * 1000))\\n"
    )
    sched = create_scheduler("bench")
    app = AppDef("chatty", [Role("w", image="/", entrypoint=_sys.executable,
                                 args=["-c", producer])])
    t = time.perf_counter()
    app_id = sched.submit(app, {})
    count = 0
    for line in sched.log_iter(app_id, "w", should_tail=True, streams="stdout"):
        count += 1
    total = time.perf_counter() - t
    assert count == n, count
    produced_ms = float(next(iter(sched.log_iter(app_id, "w", streams="stderr"))))
    t = time.perf_counter()
    combined = sum(1 for _ in sched.log_iter(app_id, "w"))
    combined_s = time.perf_counter() - t
    assert combined == n + 1, combined  # and the producer's timing line on stderr
    print(json.dumps({"lines_per_s": n / total, "producer_lines_per_s": n / produced_ms * 1000,
                      "combined_read_lines_per_s": n / combined_s}))
    """
)


@case("local.log_tail", target=">= 100000 lines/s")
def log_tail(ctx: Context) -> Measurement:
    """Lines per second delivered by log_iter(should_tail=True) while a replica prints 1M lines.

    The replica prints as fast as Python can (its own rate is in the details); the value
    is lines received / time from ``submit`` to the end of the iteration, so it includes
    start-up and the end-of-app detection. Every line is checked to arrive.
    """
    with tempfile.TemporaryDirectory(prefix="torchx-bench-local-") as tmp:
        result = run_snippet(ctx.python, _TAIL % 1_000_000, env=_env(tmp))
    return Measurement(
        value=round(result["lines_per_s"]),
        unit="lines/s",
        details={
            "producer_lines_per_s": round(result["producer_lines_per_s"]),
            "combined_read_lines_per_s": round(result["combined_read_lines_per_s"]),
        },
    )


# ----------------------------------------------------------------------------- dryrun

_DRYRUN_OURS = textwrap.dedent(
    """
    import json, sys, time
    try:
        from torchx.components.args import materialize_appdef
        from torchx.components.finder import get_component
        from torchx.runner import Runner
        from torchx.schedulers.local_scheduler import create_scheduler
    except ImportError as e:
        print(json.dumps({"skip": f"not implemented ({e})"}))
        sys.exit(0)
    app = materialize_appdef(get_component("dist.ddp").fn, ["-j", "128x8", "-m", "train"])
    runner = Runner("bench", {"local": create_scheduler})

    def timed():
        t = time.perf_counter()
        info = runner.dryrun(app, "local", {})
        return (time.perf_counter() - t) * 1000, info

    cold, info = timed()
    assert len(info.request.roles[0].replicas) == 128
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

    def timed():
        t = time.perf_counter()
        info = runner.dryrun(app, "local_cwd", {})
        return (time.perf_counter() - t) * 1000, info

    cold, info = timed()
    print(json.dumps({"samples": [timed()[0] for _ in range(%d)], "cold": cold}))
    """
)


@case("local.dryrun_ddp_128x8", target="< 5 ms", upstream=True)
def dryrun_ddp_128x8(ctx: Context) -> Measurement:
    """Runner.dryrun(dist.ddp -j 128x8) on local (upstream: local_cwd), in-process, best of N.

    Includes the Runner's validation and config handling, the scheduler's copy of the
    app, and building the 128 replica specs (macros substituted, environment, log paths).
    Nothing is written. The first call is reported apart.
    """
    n = max(ctx.inner * 2, 20)
    with tempfile.TemporaryDirectory(prefix="torchx-bench-local-") as tmp:
        env = _env(tmp)
        ours = run_snippet(ctx.python, _DRYRUN_OURS % n, env=env)
        up = (
            run_snippet(ctx.upstream_python, _DRYRUN_UPSTREAM % n, env=env)
            if ctx.upstream_python
            else None
        )
    return Measurement.from_times(
        ours["samples"],
        upstream=up["samples"] if up else None,
        statistic="min",
        first_call_ms=round(ours["cold"], 2),
        upstream_first_call_ms=round(up["cold"], 2) if up else None,
    )
