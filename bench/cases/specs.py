"""Benchmarks of torchx-specs: import cost, serialization, plugin discovery.

Targets come from the issues that introduced each piece:

* ``specs.import``: ``import torchx.specs`` at most half the time of upstream TorchX 0.7.0
  (whole process, median of interleaved runs), and no heavy module loaded by it
  (``specs.import.heavy_modules``);
* ``specs.serialize.*``: an AppDef of 1,000 roles to JSON-safe data and back, under 20 ms
  each way (in-process, best of N, after a first cold call);
* ``specs.plugins.first_read``: the first ``get_registry()`` of a process with 10 plugins
  installed under 15 ms (best over fresh processes).

Every measured snippet runs in a fresh interpreter of the venv being measured.
"""

from __future__ import annotations

import tempfile
import textwrap
from pathlib import Path
from typing import Any

from harness import Context, Measurement, case, child_env, process_times, run_snippet

# Modules that `import torchx.specs` must not load (they belong to the explicit
# submodules: serialize -> cattrs/json, plugins -> pluggy/importlib.metadata, yaml files).
HEAVY = (
    "cattrs",
    "cattr",
    "pluggy",
    "importlib.metadata",
    "importlib_metadata",
    "yaml",
    "json",
    "typing_extensions",
    "difflib",
)

# --------------------------------------------------------------------- import time


@case("specs.import", target="<= 0.5x upstream", upstream=True)
def specs_import(ctx: Context) -> Measurement:
    """python -c "import torchx.specs", whole process, ours vs upstream torchx 0.7.0."""
    upstream = ctx.require_upstream()
    code = "import torchx.specs"
    times = process_times(
        ctx, {"ours": [ctx.python, "-c", code], "upstream": [upstream, "-c", code]}
    )
    count = "import sys; n = len(sys.modules); import torchx.specs; print(len(sys.modules) - n)"
    return Measurement.from_times(
        times["ours"],
        upstream=times["upstream"],
        modules_imported=int(run_snippet(ctx.python, count)),
        upstream_modules_imported=int(run_snippet(upstream, count)),
    )


@case("specs.import.core_types", upstream=True)
def specs_import_core_types(ctx: Context) -> Measurement:
    """from torchx.specs import AppDef, Role, Resource: whole process, the realistic first use.

    ``import torchx.specs`` is lazy (PEP 562); this case loads the attrs-based core
    types too, so it is bounded below by ``import attrs`` itself (python.import_attrs).
    """
    upstream = ctx.require_upstream()
    code = "from torchx.specs import AppDef, Role, Resource"
    times = process_times(
        ctx, {"ours": [ctx.python, "-c", code], "upstream": [upstream, "-c", code]}
    )
    return Measurement.from_times(times["ours"], upstream=times["upstream"])


_IMPORT_CLOCK = (
    "import time; t = time.perf_counter(); import torchx.specs; "
    "print((time.perf_counter() - t) * 1000)"
)


@case("specs.import.in_process", upstream=True)
def specs_import_in_process(ctx: Context) -> Measurement:
    """import torchx.specs timed inside fresh processes (no interpreter start-up), vs upstream."""
    upstream = ctx.require_upstream()
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(max(ctx.repeat // 2, 5)):
        ours.append(float(run_snippet(ctx.python, _IMPORT_CLOCK)))
        theirs.append(float(run_snippet(upstream, _IMPORT_CLOCK)))
    return Measurement.from_times(ours, upstream=theirs)


_HEAVY_SNIPPET = textwrap.dedent(
    """
    import sys
    before = set(sys.modules)
    import torchx.specs
    added = sorted(set(sys.modules) - before)
    heavy = [m for m in %r if m in sys.modules]
    third_party = sorted(
        {m.split(".")[0] for m in added}
        - set(sys.stdlib_module_names) - set(sys.builtin_module_names) - {"torchx"}
    )
    import json
    print(json.dumps({"heavy": heavy, "third_party": third_party, "added": len(added)}))
    """
) % (HEAVY,)


@case("specs.import.heavy_modules", target="== 0 modules")
def specs_import_heavy_modules(ctx: Context) -> Measurement:
    """Heavy modules (cattrs, pluggy, importlib.metadata, yaml, json, ...) loaded by import."""
    ours = run_snippet(ctx.python, _HEAVY_SNIPPET)
    details: dict[str, Any] = {
        "heavy_loaded": ours["heavy"],
        "third_party_loaded": ours["third_party"],
    }
    if ctx.upstream_python:
        up = run_snippet(ctx.upstream_python, _HEAVY_SNIPPET)
        details["upstream_heavy_loaded"] = up["heavy"]
        details["upstream_third_party_loaded"] = up["third_party"]
    return Measurement(value=len(ours["heavy"]), unit="modules", details=details)


# ------------------------------------------------------------------- serialization

_SERIALIZE_SNIPPET = textwrap.dedent(
    """
    import inspect, json, sys, time
    from torchx.specs import AppDef, BindMount, Resource, RetryPolicy, Role, VolumeMount
    try:
        import torchx.specs.serialize as serialize
    except ModuleNotFoundError as e:
        if e.name != "torchx.specs.serialize":
            raise
        print(json.dumps({"skip": "not implemented (no torchx.specs.serialize)"}))
        sys.exit(0)

    N_ROLES, INNER = %d, %d
    app = AppDef(
        name="bench-1000-roles",
        metadata={"team": "ml-infra", "purpose": "benchmark"},
        roles=[
            Role(
                name=f"worker{i}",
                image="ghcr.io/example/trainer:1.0",
                entrypoint="python",
                args=["-m", "train", "--lr", "0.01", f"--shard={i}"],
                env={"LOGLEVEL": "INFO", "SHARD": str(i)},
                num_replicas=4,
                max_retries=3,
                retry_policy=RetryPolicy.REPLICA,
                resource=Resource(
                    cpu=8, gpu=1, memMB=32768,
                    capabilities={"node.kubernetes.io/instance-type": "p4d.24xlarge"},
                    devices={"vpc.amazonaws.com/efa": 1},
                ),
                port_map={"tensorboard": 6006},
                metadata={"owner": "bench"},
                mounts=[
                    BindMount(src_path="/data", dst_path="/data", read_only=True),
                    VolumeMount(src="ckpt", dst_path="/ckpt"),
                ],
            )
            for i in range(N_ROLES)
        ],
    )

    if len(inspect.signature(serialize.structure).parameters) >= 2:
        def restore(data):
            return serialize.structure(data, AppDef)
    else:
        restore = serialize.structure

    def timed(fn, arg):
        t0 = time.perf_counter()
        out = fn(arg)
        return (time.perf_counter() - t0) * 1000.0, out

    cold_un, data = timed(serialize.unstructure, app)
    cold_st, back = timed(restore, data)
    if back != app:
        raise SystemExit("round trip changed the AppDef")
    json.dumps(data)  # must be JSON-safe
    un, st = [], []
    for _ in range(INNER):
        un.append(timed(serialize.unstructure, app)[0])
        st.append(timed(restore, data)[0])
    print(json.dumps({"unstructure": un, "structure": st,
                      "cold_unstructure": cold_un, "cold_structure": cold_st}))
    """
)


def _serialize_times(ctx: Context) -> dict[str, Any]:
    result: dict[str, Any] = ctx.cached(
        "serialize",
        lambda: run_snippet(ctx.python, _SERIALIZE_SNIPPET % (1000, max(ctx.inner, 5))),
    )
    return result


@case("specs.serialize.unstructure", target="< 20 ms")
def serialize_unstructure(ctx: Context) -> Measurement:
    """serialize.unstructure(AppDef with 1,000 roles), in-process, best of N."""
    r = _serialize_times(ctx)
    return Measurement.from_times(
        r["unstructure"], statistic="min", first_call_ms=round(r["cold_unstructure"], 2)
    )


@case("specs.serialize.structure", target="< 20 ms")
def serialize_structure(ctx: Context) -> Measurement:
    """serialize.structure(data of 1,000 roles) back to an AppDef, in-process, best of N."""
    r = _serialize_times(ctx)
    return Measurement.from_times(
        r["structure"], statistic="min", first_call_ms=round(r["cold_structure"], 2)
    )


# ---------------------------------------------------------------- plugin discovery

N_PLUGINS = 10

_PLUGIN_MODULE = textwrap.dedent(
    '''
    """Benchmark fixture plugin {i}: contributes one named resource, lazily."""
    from torchx.specs.hookspecs import hookimpl


    @hookimpl
    def torchx_named_resources():
        return {{"bench{i}.gpu": "bench_plugin_{i}:gpu"}}


    def gpu():
        from torchx.specs import Resource

        return Resource(cpu={i} + 1, gpu=1, memMB=1024)
    '''
)


def make_plugin_fixtures(root: Path, count: int = N_PLUGINS) -> Path:
    """Write ``count`` installed-looking plugin distributions under ``root``.

    Each is a module plus a ``.dist-info`` whose ``entry_points.txt`` names it in the
    ``torchx`` group, exactly what installing a plugin wheel leaves in site-packages.
    Put ``root`` on PYTHONPATH and importlib.metadata finds them.
    """
    for i in range(count):
        pkg = root / f"bench_plugin_{i}"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text(_PLUGIN_MODULE.format(i=i))
        info = root / f"bench_plugin_{i}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: bench-plugin-{i}\nVersion: 1.0\n"
        )
        (info / "entry_points.txt").write_text(f"[torchx]\nbench{i} = bench_plugin_{i}\n")
        (info / "top_level.txt").write_text(f"bench_plugin_{i}\n")
    return root


_FIRST_READ_SNIPPET = textwrap.dedent(
    """
    import sys, time
    t0 = time.perf_counter()
    try:
        import torchx.specs.plugins as plugins
    except ModuleNotFoundError as e:
        if e.name != "torchx.specs.plugins":
            raise
        print('{"skip": "not implemented (no torchx.specs.plugins)"}')
        sys.exit(0)
    if not hasattr(plugins, "get_registry"):
        print('{"skip": "not implemented (no torchx.specs.plugins.get_registry)"}')
        sys.exit(0)
    t1 = time.perf_counter()
    registry = plugins.get_registry()
    t2 = time.perf_counter()
    import json
    names = getattr(registry, "named_resources", {})
    found = sum(f"bench{i}.gpu" in names for i in range(%d))
    failures = [str(f) for f in getattr(registry, "failures", ())]
    print(json.dumps({"import_ms": (t1 - t0) * 1000, "first_read_ms": (t2 - t1) * 1000,
                      "found": found, "failures": failures}))
    """
)


def _first_read(ctx: Context, mode: str) -> Measurement:
    """First ``get_registry()`` in fresh processes, 10 fixture plugins on PYTHONPATH.

    ``mode``: ``warm`` (the on-disk entry-point cache was written by an earlier process,
    what every command but the first after an install sees), ``miss`` (an empty cache
    directory each time: scan and write the cache) or ``scan`` (cache disabled with
    TORCHX_NO_PLUGIN_CACHE=1: the bare entry-point scan).
    """
    runs = max(ctx.repeat // 4, 5)
    code = _FIRST_READ_SNIPPET % N_PLUGINS
    with tempfile.TemporaryDirectory(prefix="torchx-bench-plugins-") as tmp:
        site, cache = Path(tmp) / "site", Path(tmp) / "cache"
        make_plugin_fixtures(site)
        extra = {"PYTHONPATH": str(site), "XDG_CACHE_HOME": str(cache)}
        if mode == "scan":
            extra["TORCHX_NO_PLUGIN_CACHE"] = "1"
        env = child_env(**extra)
        run_snippet(ctx.python, code, env=env)  # warm-up: bytecode, and the cache if used
        samples = []
        for n in range(runs):
            if mode == "miss":
                env["XDG_CACHE_HOME"] = str(Path(tmp) / f"cache-{n}")
            samples.append(run_snippet(ctx.python, code, env=env))
    if samples[0]["found"] != N_PLUGINS:
        raise RuntimeError(
            f"registry shows {samples[0]['found']} of the {N_PLUGINS} fixture plugins;"
            f" failures: {samples[0]['failures'][:3]}"
        )
    return Measurement.from_times(
        [s["first_read_ms"] for s in samples],
        statistic="min",
        plugins_module_import_ms=round(min(s["import_ms"] for s in samples), 2),
        failures=samples[0]["failures"],
    )


@case("specs.plugins.first_read", target="< 15 ms")
def plugins_first_read(ctx: Context) -> Measurement:
    """First get_registry() with 10 plugins, entry-point cache warm, best of fresh processes."""
    return _first_read(ctx, "warm")


@case("specs.plugins.first_read.cache_miss", target="< 15 ms")
def plugins_first_read_cache_miss(ctx: Context) -> Measurement:
    """First get_registry() with 10 plugins, empty cache (scan + cache write), best of N."""
    return _first_read(ctx, "miss")


@case("specs.plugins.first_read.no_cache", target="< 15 ms")
def plugins_first_read_no_cache(ctx: Context) -> Measurement:
    """First get_registry() with 10 plugins, TORCHX_NO_PLUGIN_CACHE=1 (bare scan), best of N."""
    return _first_read(ctx, "scan")
