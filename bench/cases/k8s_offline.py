"""Benchmarks of the kubernetes scheduler that need no cluster: dry runs and their YAML.

Targets come from the Kubernetes plugin's issue, side by side with upstream TorchX 0.7.0
and its ``kubernetes`` extra (the same Volcano Job of 128 tasks):

* ``k8s.dryrun_ddp_128x8``: in-process ``Runner.dryrun`` of ``dist.ddp -j 128x8`` on
  ``kubernetes`` at most 0.1x upstream's (best of N; the request is made, not printed);
* ``k8s.yaml_ddp_128x8``: rendering that request as YAML (``str(info)``, what
  ``--dryrun`` prints) at most 0.1x upstream's;
* ``k8s.cli_dryrun_ddp_128x8``: ``torchx run -s kubernetes --dryrun dist.ddp -j 128x8
  --script x.py`` as a whole process at most 0.3x upstream's;
* ``k8s.import_client``: ``import torchx_k8s`` and ``torchx --help`` import nothing of the
  ``kubernetes`` client (the modules loaded are counted).

Upstream's scheduler requires the ``queue`` run option: both sides are given
``queue=default``.
"""

from __future__ import annotations

import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

from harness import Context, Measurement, Skip, case, child_env, run_snippet

_DRYRUN = textwrap.dedent(
    """
    import json, sys, time
    try:
        from torchx.components.dist import ddp
        from torchx.runner import get_runner
        import torchx.schedulers as s
        if "kubernetes" not in get_runner().scheduler_backends():
            raise ImportError("no kubernetes scheduler")
    except ImportError as e:
        print(json.dumps({"skip": f"not installed ({e})"}))
        sys.exit(0)
    app = ddp(m="train", j="128x8", image="ghcr.io/pytorch/torchx:0.7.0")
    runner = get_runner()
    cfg = {"queue": "default"}
    info = runner.dryrun(app, "kubernetes", cfg)
    assert str(info).count("replicas: 1") >= 128

    def timed_dryrun():
        t = time.perf_counter()
        runner.dryrun(app, "kubernetes", cfg)
        return (time.perf_counter() - t) * 1000

    def timed_yaml():
        t = time.perf_counter()
        str(info)
        return (time.perf_counter() - t) * 1000

    n = %d
    print(json.dumps({"dryrun": [timed_dryrun() for _ in range(n)],
                      "yaml": [timed_yaml() for _ in range(n)]}))
    """
)


def _both(ctx: Context) -> tuple[dict[str, list[float]], dict[str, list[float]] | None]:
    n = max(ctx.inner * 2, 20)
    with tempfile.TemporaryDirectory(prefix="torchx-bench-k8s-") as tmp:
        env = child_env(HOME=tmp, TORCHX_HOME=str(Path(tmp) / "state"))
        ours = run_snippet(ctx.python, _DRYRUN % n, env=env)
        up = run_snippet(ctx.upstream_python, _DRYRUN % n, env=env) if ctx.upstream_python else None
    return ours, up


@case("k8s.dryrun_ddp_128x8", target="<= 0.1x upstream", upstream=True)
def dryrun_ddp_128x8(ctx: Context) -> Measurement:
    """Runner.dryrun(dist.ddp -j 128x8) on kubernetes: the Volcano Job of 128 tasks, best of N."""
    ours, up = ctx.cached("k8s.dryrun", lambda: _both(ctx))
    return Measurement.from_times(
        ours["dryrun"], upstream=up["dryrun"] if up else None, statistic="min"
    )


@case("k8s.yaml_ddp_128x8", target="<= 0.1x upstream", upstream=True)
def yaml_ddp_128x8(ctx: Context) -> Measurement:
    """str(info) of that dry run: the Volcano Job as YAML (what --dryrun prints), best of N."""
    ours, up = ctx.cached("k8s.dryrun", lambda: _both(ctx))
    return Measurement.from_times(
        ours["yaml"], upstream=up["yaml"] if up else None, statistic="min"
    )


def _cli_ms(torchx: str, cwd: Path, env: dict[str, str], *extra: str) -> float:
    argv = [torchx, "run", "-s", "kubernetes", "-cfg", "queue=default", *extra, "--dryrun"]
    argv += [
        "dist.ddp",
        "--image",
        "ghcr.io/pytorch/torchx:0.7.0",
        "-j",
        "128x8",
        "--script",
        "x.py",
    ]
    t = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    ms = (time.perf_counter() - t) * 1000
    if proc.returncode != 0 or "batch.volcano.sh/v1alpha1" not in proc.stdout:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-300:]}")
    return ms


#: Upstream's CLI makes the launch directory a workspace by default, and its kubernetes
#: scheduler then asks a Docker engine for it even on a dry run: it is told not to (ours
#: has no default workspace).
_NO_WORKSPACE = ("--workspace", "")


@case("k8s.cli_dryrun_ddp_128x8", target="<= 0.3x upstream", upstream=True)
def cli_dryrun_ddp_128x8(ctx: Context) -> Measurement:
    """torchx run -s kubernetes --dryrun dist.ddp -j 128x8, whole processes, interleaved."""
    ours = str(Path(ctx.python).parent / "torchx")
    upstream = str(Path(ctx.require_upstream()).parent / "torchx")
    with tempfile.TemporaryDirectory(prefix="torchx-bench-k8s-cli-") as tmp:
        root = Path(tmp)
        work = root / "work"
        for d in (work, root / "home", root / "cache"):
            d.mkdir()
        (work / "x.py").write_text("")
        env = child_env(
            HOME=str(root / "home"),
            TORCHX_HOME=str(root / "state"),
            XDG_CACHE_HOME=str(root / "cache"),
        )
        for _ in range(3):  # warm-up: bytecode and help caches, the page cache
            _cli_ms(ours, work, env)
            _cli_ms(upstream, work, env, *_NO_WORKSPACE)
        samples: dict[str, list[float]] = {"ours": [], "upstream": []}
        for _ in range(ctx.repeat):
            samples["ours"].append(_cli_ms(ours, work, env))
            samples["upstream"].append(_cli_ms(upstream, work, env, *_NO_WORKSPACE))
    return Measurement.from_times(samples["ours"], upstream=samples["upstream"])


_IMPORTS = textwrap.dedent(
    """
    import json, runpy, sys
    try:
        import torchx_k8s, torchx_k8s.plugin
    except ImportError as e:
        print(json.dumps({"skip": f"not installed ({e})"}))
        sys.exit(0)
    loaded = [m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes.")]
    sys.argv = ["torchx", "--help"]
    try:
        runpy.run_module("torchx.cli.main", run_name="__main__")
    except SystemExit:
        pass
    loaded += [m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes.")]
    print(json.dumps({"loaded": sorted(set(loaded))}))
    """
)


@case("k8s.import_client", target="== 0 modules")
def import_client(ctx: Context) -> Measurement:
    """Modules of the kubernetes client loaded by import torchx_k8s, then torchx --help."""
    with tempfile.TemporaryDirectory(prefix="torchx-bench-k8s-imp-") as tmp:
        env = child_env(HOME=tmp, TORCHX_HOME=str(Path(tmp) / "state"))
        out = run_snippet(ctx.python, _IMPORTS, env=env)
    if "loaded" not in out:
        raise Skip("torchx-k8s is not installed")
    return Measurement(
        value=float(len(out["loaded"])), unit="modules", details={"loaded": out["loaded"]}
    )
