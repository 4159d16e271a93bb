"""Benchmarks of torchx.runner: creating a Runner, and dry-running a large app.

Targets come from the Runner issue:

* ``runner.get_runner_and_backends``: ``get_runner()`` plus the first
  ``scheduler_backends()`` in a fresh process under 20 ms: whole processes from a bare
  interpreter, less ``python -c pass`` (every import the call needs is counted);
* ``runner.dryrun_ddp_128x8``: ``Runner.dryrun`` of the ``dist.ddp`` AppDef with
  ``-j 128x8`` against a trivial scheduler under 3 ms.

Every measured snippet runs in a fresh interpreter of the venv being measured.
"""

from __future__ import annotations

import statistics
import tempfile
import textwrap
from pathlib import Path

from harness import Context, Measurement, case, child_env, process_times, run_snippet

# ------------------------------------------------------------- creating a Runner

_GET_RUNNER_SNIPPET = textwrap.dedent(
    """
    import json, sys, time
    t0 = time.perf_counter()
    import attrs  # the floor under every spec type (see python.import_attrs), timed apart
    t1 = time.perf_counter()
    try:
        import torchx.runner
        from torchx.runner import get_runner
    except ImportError as e:
        print(json.dumps({"skip": f"not implemented ({e})"}))
        sys.exit(0)
    t2 = time.perf_counter()
    runner = get_runner()
    backends = runner.scheduler_backends()
    t3 = time.perf_counter()
    # a plugin's hook module (named by its ``torchx`` entry point) and its packages are
    # imported by design (cheap, lazy references only); a scheduler module must not be
    from importlib.metadata import entry_points
    allowed = set()
    for ep in entry_points(group="torchx"):
        parts = ep.module.split(".")
        for i in range(1, len(parts) + 1):
            allowed.add(".".join(parts[:i]))
        allowed.add(parts[0] + "._version")
    print(json.dumps({
        "ms": (t3 - t1) * 1000,
        "import_ms": (t2 - t1) * 1000,
        "attrs_ms": (t1 - t0) * 1000,
        "backends": backends,
        "schedulers_imported": sorted(
            m for m in sys.modules
            if (m.startswith("torchx.schedulers.") or m.startswith("torchx_")) and m not in allowed
        ),
    }))
    """
)


_GET_RUNNER = "from torchx.runner import get_runner\nassert get_runner().scheduler_backends()"


@case("runner.get_runner_and_backends", target="< 20 ms")
def get_runner_and_backends(ctx: Context) -> Measurement:
    """python -c "get_runner().scheduler_backends()" less python -c pass, whole processes.

    From a bare interpreter: every import the call needs (attrs, pluggy, the runner, the
    plugin registry) is counted, as a program that starts with it pays them; only the
    interpreter's own start and exit (``python -c pass``, run interleaved with it) are
    taken off. The value is the median over interleaved pairs of (runner - pass). The
    plugin cache is written by the warm-up runs, as on a user's machine after the first
    command. Three more processes time the parts in-process, best of 3
    (``attrs_import_ms``, ``import_runner_ms``, ``after_attrs_ms``: the span this case
    measured before), and check that no scheduler module was imported (a plugin's hook module, named by its
    entry point, and that module's packages are: by design, they are cheap).
    """
    with tempfile.TemporaryDirectory(prefix="torchx-bench-runner-") as tmp:
        env = child_env(XDG_CACHE_HOME=str(Path(tmp) / "cache"), HOME=tmp)
        run_snippet(ctx.python, _GET_RUNNER_SNIPPET, env=env)  # warm-up: writes the cache
        parts = [run_snippet(ctx.python, _GET_RUNNER_SNIPPET, env=env) for _ in range(3)]
        if parts[0]["schedulers_imported"]:
            raise RuntimeError(
                f"scheduler modules imported by get_runner(): {parts[0]['schedulers_imported']}"
            )
        times = process_times(
            ctx,
            {
                "runner": [ctx.python, "-c", _GET_RUNNER],
                "python": [ctx.python, "-c", "pass"],
            },
            env=env,
        )
    runner, bare = times["runner"], times["python"]
    diffs = [r - b for r, b in zip(runner, bare)]
    return Measurement.from_times(
        diffs,
        runner_median_ms=round(statistics.median(runner), 2),
        python_c_pass_median_ms=round(statistics.median(bare), 2),
        attrs_import_ms=round(min(p["attrs_ms"] for p in parts), 2),
        import_runner_ms=round(min(p["import_ms"] for p in parts), 2),
        after_attrs_ms=round(min(p["ms"] for p in parts), 2),
        backends=parts[0]["backends"],
    )


# ------------------------------------------------------------------- dryrun

_DRYRUN_SNIPPET = textwrap.dedent(
    """
    import json, sys, time
    try:
        from torchx.components.args import materialize_appdef
        from torchx.components.finder import get_component
        import torchx.components.dist
    except ImportError as e:
        print(json.dumps({"skip": f"not implemented ({e})"}))
        sys.exit(0)
    from torchx.runner import Runner
    from torchx.schedulers.api import Scheduler
    from torchx.specs import AppDryRunInfo, runopts

    class Trivial(Scheduler):
        '''Builds a request of one dict per role: the scheduler's own cost is near zero.'''

        def _run_opts(self):
            opts = runopts()
            opts.add("queue", type_=str, default="default", help="the queue")
            opts.add("priority", type_=int, default=0, help="job priority")
            return opts

        def _submit_dryrun(self, app, cfg):
            request = {"roles": [{"name": r.name, "replicas": r.num_replicas} for r in app.roles]}
            return AppDryRunInfo(request, repr)

        def schedule(self, dryrun_info):
            raise NotImplementedError

        def describe(self, app_id):
            return None

        def list(self, cfg=None):
            return []

        def _cancel_existing(self, app_id):
            pass

    app = materialize_appdef(get_component("dist.ddp").fn, ["-j", "128x8", "-m", "train"])
    assert app.roles[0].num_replicas == 128
    runner = Runner("torchx", {"trivial": lambda session, **kw: Trivial("trivial", session)},
                    use_config=True)
    cfg = {"queue": "gpu"}

    def timed():
        t = time.perf_counter()
        info = runner.dryrun(app, "trivial", cfg)
        return (time.perf_counter() - t) * 1000, info

    cold, info = timed()
    assert info.request["roles"][0]["replicas"] == 128
    samples = [timed()[0] for _ in range(%d)]
    print(json.dumps({"samples": samples, "cold": cold}))
    """
)


@case("runner.dryrun_ddp_128x8", target="< 3 ms")
def dryrun_ddp_128x8(ctx: Context) -> Measurement:
    """Runner.dryrun(dist.ddp -j 128x8) against a trivial scheduler, in-process, best of N.

    Includes validating the app, creating the scheduler on the first call, strict
    run-config validation, looking up ``.torchxconfig`` files (none here), copying the
    app and the scheduler's (trivial) request. The first call is reported apart.
    """
    with tempfile.TemporaryDirectory(prefix="torchx-bench-dryrun-") as tmp:
        env = child_env(HOME=tmp, XDG_CACHE_HOME=str(Path(tmp) / "cache"))
        result = run_snippet(ctx.python, _DRYRUN_SNIPPET % max(ctx.inner * 5, 50), env=env)
    return Measurement.from_times(
        result["samples"], statistic="min", first_call_ms=round(result["cold"], 3)
    )
