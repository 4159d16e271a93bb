"""Benchmarks of ``torchx.functions`` side by side with submitit (from PyPI).

Targets come from the functions issue:

* ``functions.local_trivial``: ``submit(f).result()`` of a trivial function on the local
  scheduler under 0.5 s (median of the calls after the first; the first call of a fresh
  process is reported apart), with submitit's ``LocalExecutor`` on the same function in
  the details;
* ``functions.slurm_trivial``: on the ``dev/slurm`` cluster, from ``submit`` to
  ``result()`` of a trivial function, ours over submitit's (``SlurmExecutor``),
  interleaved pairs: at least as fast (``<= 1.0 x``);
* ``functions.slurm_array_100``: ``map_array`` over 100 items on the same cluster until
  every result is back, ours over submitit's (one native Slurm array): ``<= 1.0 x``.

The function lives in a module of its own in a temporary folder on ``PYTHONPATH``, so
both sides send it by reference and the nodes import it from the shared disk. The Slurm
cases need the cluster (``eval "$(dev/slurm up)"``), else they are skipped, saying so.
"""

from __future__ import annotations

import statistics
import tempfile
import textwrap
from pathlib import Path

from harness import Context, Measurement, case, child_env, run_snippet

from cases.slurm_cluster import _cluster

_MODULE = "def add(a, b):\n    return a + b\n\ndef square(x):\n    return x * x\n"

_IMPORTS = textwrap.dedent(
    """
    import json, sys, time
    try:
        import submitit
        from torchx.functions import map_array, submit
    except ImportError as e:
        print(json.dumps({"skip": f"not installed ({e})"}))
        sys.exit(0)
    from benchfns import add, square
    tmp = %r
    n = %d
    """
)


def _env(tmp: str) -> dict[str, str]:
    return child_env(
        TORCHX_HOME=str(Path(tmp) / "state"), HOME=tmp, PYTHONPATH=str(Path(tmp) / "mod")
    )


def _world(tmp: str) -> None:
    mod = Path(tmp) / "mod"
    mod.mkdir()
    (mod / "benchfns.py").write_text(_MODULE)


_LOCAL = _IMPORTS + textwrap.dedent(
    """
    def ours():
        t = time.perf_counter()
        assert submit(add, 5, 7).result(timeout=60) == 12
        return (time.perf_counter() - t) * 1000

    ex = submitit.LocalExecutor(folder=tmp + "/submitit")
    ex.update_parameters(timeout_min=5)

    def theirs():
        t = time.perf_counter()
        assert ex.submit(add, 5, 7).result() == 12
        return (time.perf_counter() - t) * 1000

    first = ours()
    pairs = [(ours(), theirs()) for _ in range(n)]
    print(json.dumps({"first": first, "pairs": pairs}))
    """
)


@case("functions.local_trivial", target="< 500 ms")
def local_trivial(ctx: Context) -> Measurement:
    """submit(add, 5, 7).result() on the local scheduler, median (submitit's LocalExecutor beside it)."""
    n = max(ctx.repeat // 4, 5)
    with tempfile.TemporaryDirectory(prefix="torchx-bench-fn-") as tmp:
        _world(tmp)
        out = run_snippet(ctx.python, _LOCAL % (tmp, n), env=_env(tmp))
    ours = [p[0] for p in out["pairs"]]
    theirs = [p[1] for p in out["pairs"]]
    return Measurement.from_times(
        ours,
        first_call_ms=round(out["first"], 1),
        submitit_local_median_ms=round(statistics.median(theirs), 1),
        submitit_local_min_ms=round(min(theirs), 1),
        ratio_to_submitit=round(statistics.median(ours) / statistics.median(theirs), 3),
    )


_SLURM = _IMPORTS + textwrap.dedent(
    """
    from torchx.specs import Resource
    cfg = {"job_dir": tmp}
    res = Resource(cpu=1, gpu=0, memMB=256)
    ex = submitit.SlurmExecutor(folder=tmp + "/submitit")
    ex.update_parameters(time=10, cpus_per_task=1, mem="256M")

    def ours_one():
        t = time.perf_counter()
        assert submit(add, 5, 7, scheduler="slurm", cfg=cfg, image=tmp,
                      resource=res).result(timeout=300) == 12
        return (time.perf_counter() - t) * 1000

    def theirs_one():
        t = time.perf_counter()
        assert ex.submit(add, 5, 7).result() == 12
        return (time.perf_counter() - t) * 1000

    def ours_array():
        t = time.perf_counter()
        futures = map_array(square, range(100), parallelism=100, scheduler="slurm",
                            cfg=cfg, image=tmp, resource=res)
        assert [f.result(timeout=1800) for f in futures] == [x * x for x in range(100)]
        return (time.perf_counter() - t) * 1000

    def theirs_array():
        t = time.perf_counter()
        jobs = ex.map_array(square, range(100))
        assert [j.result() for j in jobs] == [x * x for x in range(100)]
        return (time.perf_counter() - t) * 1000

    if mode == "array":
        pairs = [(ours_array(), theirs_array()) for _ in range(n)]
    else:
        ours_one(), theirs_one()  # warm-up: imports, the first Slurm calls
        pairs = [(ours_one(), theirs_one()) for _ in range(n)]
    print(json.dumps({"pairs": pairs}))
    """
)


def _slurm_pairs(ctx: Context, n: int, mode: str) -> tuple[float, dict[str, object]]:
    _cluster()
    with tempfile.TemporaryDirectory(prefix="torchx-bench-fn-", dir="/var/tmp") as tmp:
        _world(tmp)
        code = f"mode = {mode!r}\n" + _SLURM % (tmp, n)
        out = run_snippet(ctx.python, code, env=_env(tmp), timeout=3600)
    ours = statistics.median(p[0] for p in out["pairs"])
    theirs = statistics.median(p[1] for p in out["pairs"])
    details = {
        "ours_median_ms": round(ours, 1),
        "submitit_median_ms": round(theirs, 1),
        "ours_ms": [round(p[0], 1) for p in out["pairs"]],
        "submitit_ms": [round(p[1], 1) for p in out["pairs"]],
    }
    return round(ours / theirs, 3), details


@case("functions.slurm_trivial", target="<= 1.0 x")
def slurm_trivial(ctx: Context) -> Measurement:
    """submit to result() of a trivial function on dev/slurm, ours over submitit's, interleaved pairs."""
    n = max(ctx.repeat // 8, 5)
    ratio, details = _slurm_pairs(ctx, n, "one")
    return Measurement(
        value=ratio, unit="x", statistic=f"ratio of medians of {n} pairs", details=details
    )


@case("functions.slurm_array_100", target="<= 1.0 x")
def slurm_array_100(ctx: Context) -> Measurement:
    """map_array over 100 items on dev/slurm until every result is back, ours over submitit's native array."""
    n = 1 if ctx.repeat < 40 else 2
    ratio, details = _slurm_pairs(ctx, n, "array")
    return Measurement(
        value=ratio, unit="x", statistic=f"ratio of medians of {n} pairs", details=details
    )
