"""Benchmarks of the docker scheduler against a real engine (``dev/docker up``).

Targets come from the Docker plugin's issue:

* ``docker.run_wait_echo``: ``torchx run -s docker --wait`` of a 1-replica echo app at
  most 1.2x ``docker run --rm`` of the same image and command (both whole processes,
  interleaved);
* ``docker.start_8_replicas``: an 8-replica app RUNNING (every replica, as
  ``Runner.status`` says) within 1.5 s of ``Runner.run``;
* ``docker.status_8_replicas_calls``: ``Runner.status`` of that app, from a new Runner
  (what ``torchx status`` does), in at most 2 engine calls (HTTP requests counted);
* ``docker.log_8x100k_rss``: ``torchx run --wait --log`` of 8 replicas printing 100,000
  lines each: every line shown, peak RSS of the command at most 100 MiB.

They need the engine: ``eval "$(dev/docker up)"`` first (root, Debian), so that
DOCKER_HOST names it and TORCHX_DEV_DOCKER_BUSYBOX_IMAGE the test image; without them
they are skipped, saying so. Every app a case starts is deleted afterwards (by its
handle: other apps on the engine are left alone).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness import Context, Measurement, Skip, case, child_env, run_snippet


def _image() -> str:
    """The busybox test image of a reachable engine, else Skip."""
    image = os.environ.get("TORCHX_DEV_DOCKER_BUSYBOX_IMAGE", "")
    if not os.environ.get("DOCKER_HOST") or not image:
        raise Skip('no Docker engine: run `eval "$(dev/docker up)"` first (root, Debian)')
    docker = shutil.which("docker")
    if docker is None:
        raise Skip("no docker command on PATH: run `dev/docker up` first")
    probe = subprocess.run(
        [docker, "image", "inspect", image], capture_output=True, text=True, timeout=30
    )
    if probe.returncode != 0:
        raise Skip(f"the engine at DOCKER_HOST lacks {image}: {probe.stderr.strip()[:200]}")
    return image


def _torchx(ctx: Context) -> str:
    path = Path(ctx.python).parent / "torchx"
    if not path.exists():
        raise Skip(f"no torchx command next to {ctx.python}")
    probe = subprocess.run([str(path), "runopts", "docker"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise Skip(f"the docker scheduler is not installed: {probe.stderr.strip()[:200]}")
    return str(path)


@contextmanager
def _world() -> Iterator[tuple[Path, dict[str, str]]]:
    """A temp working folder and the environment to run torchx in (DOCKER_HOST kept)."""
    with tempfile.TemporaryDirectory(prefix="torchx-bench-docker-") as tmp:
        root = Path(tmp)
        work = root / "work"
        for d in (work, root / "home", root / "cache"):
            d.mkdir()
        env = child_env(HOME=str(root / "home"), XDG_CACHE_HOME=str(root / "cache"))
        yield work, env


def _delete(torchx: str, handles: list[str], env: dict[str, str]) -> None:
    for handle in handles:
        subprocess.run([torchx, "delete", handle], env=env, capture_output=True, timeout=120)


# ------------------------------------------------------------------ run --wait vs docker run


@case("docker.run_wait_echo", target="<= 1.2 x")
def run_wait_echo(ctx: Context) -> Measurement:
    """torchx run -s docker --wait utils.echo vs docker run --rm IMAGE echo, whole processes.

    Interleaved pairs, 3 unrecorded warm-ups each; the value is the ratio of the medians.
    Ours creates and starts the container, then polls its state as ``--wait`` does (0.02 s,
    doubling); ``docker run --rm`` attaches to it and removes it. Each app is deleted
    after its run, untimed.
    """
    image = _image()
    with _world() as (work, env):
        torchx = _torchx(ctx)
        ours = [torchx, "run", "-s", "docker", "--wait", "utils.echo", "--image", image]
        ours += ["--msg", "hi"]
        raw = [shutil.which("docker") or "docker", "run", "--rm", image, "echo", "hi"]
        samples: dict[str, list[float]] = {"ours": [], "raw": []}
        n = max(ctx.repeat // 2, 10)
        for i in range(3 + n):
            for label, argv in (("ours", ours), ("raw", raw)):
                t0 = time.perf_counter()
                proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
                ms = (time.perf_counter() - t0) * 1000.0
                if proc.returncode != 0:
                    raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr}")
                if label == "ours":
                    _delete(torchx, [proc.stdout.split()[0]], env)
                if i >= 3:
                    samples[label].append(ms)
    med_ours, med_raw = statistics.median(samples["ours"]), statistics.median(samples["raw"])
    return Measurement(
        value=round(med_ours / med_raw, 3),
        unit="x",
        statistic=f"ratio of medians of {n} pairs",
        details={
            "torchx_median_ms": round(med_ours, 1),
            "docker_run_median_ms": round(med_raw, 1),
            "torchx_min_ms": round(min(samples["ours"]), 1),
            "docker_run_min_ms": round(min(samples["raw"]), 1),
        },
    )


# ------------------------------------------------- 8 replicas: start, and status's engine calls

# In one fresh interpreter: n times, an 8-replica app (each replica sleeps) from
# Runner.run until Runner.status says every replica RUNNING (polled every 10 ms); then a
# new Runner's first status of it, counting the HTTP requests sent to the engine (the
# docker SDK's at requests.Session.send: docker.APIClient is a requests Session; the
# scheduler's own client's at torchx_docker.wire.Wire._call); then when the engine
# started each container (State.StartedAt); then the app is cancelled and deleted, also
# when something failed on the way.
_EIGHT = textwrap.dedent(
    """
    import datetime, json, sys, time
    try:
        import docker
        import requests
        from torchx.runner import Runner
        from torchx.specs import AppDef, AppState, Resource, Role
        from torchx_docker.scheduler import create_scheduler
    except ImportError as e:
        print(json.dumps({"skip": f"not implemented ({e})"}))
        sys.exit(0)
    image, n = %r, %d
    calls = []
    send = requests.Session.send

    def counted(self, request, **kw):
        calls.append(f"{request.method} {request.path_url.split('?')[0]}")
        return send(self, request, **kw)

    requests.Session.send = counted
    try:  # the scheduler's own HTTP client (no SDK) for the hot path's calls
        from torchx_docker import wire

        wire_call = wire.Wire._call

        def wire_counted(self, method, path, *args, **kw):
            calls.append(f"{method} {path}")
            return wire_call(self, method, path, *args, **kw)

        wire.Wire._call = wire_counted
    except ImportError:
        pass
    app = AppDef("eight", [Role("r", image=image, entrypoint="sh",
                                args=["-c", "exec sleep 120"], num_replicas=8,
                                resource=Resource(cpu=1, gpu=0, memMB=64))])
    runner = Runner("bench", {"docker": create_scheduler})
    runner.status("docker://bench/warm-up-none")  # connect once: the engine's version
    out = []
    def one(handle, t0):
        polls = 0
        while True:
            st = runner.status(handle)
            polls += 1
            reps = [r for role in (st.roles if st else []) for r in role.replicas]
            if len(reps) == 8 and all(r.state == AppState.RUNNING for r in reps):
                break
            if st is not None and st.is_terminal():
                raise SystemExit(f"app ended: {st}")
            time.sleep(0.01)
        running = time.time() - t0
        fresh = Runner("bench", {"docker": create_scheduler})
        calls.clear()
        t1 = time.perf_counter()
        st = fresh.status(handle)
        status_ms = (time.perf_counter() - t1) * 1000
        status_calls = list(calls)
        calls.clear()
        t1 = time.perf_counter()
        fresh.status(handle)
        second_ms = (time.perf_counter() - t1) * 1000
        second_calls = list(calls)
        fresh.close()
        assert st is not None and st.state == AppState.RUNNING, st
        # when the engine started each container (its own clock; RFC 3339, nanoseconds)
        api = docker.APIClient(**docker.utils.kwargs_from_env())
        label = "torchx.pytorch.org/app-id=" + handle.rsplit("/", 1)[1]
        firsts = []
        for c in api.containers(filters={"label": [label, "torchx.pytorch.org/kind=replica"]}):
            started = api.inspect_container(c["Id"])["State"]["StartedAt"]
            day, _, frac = started.rstrip("Z").partition(".")
            stamp = datetime.datetime.fromisoformat(day).replace(tzinfo=datetime.timezone.utc)
            firsts.append(stamp.timestamp() + float("0." + (frac or "0")))
        api.close()
        assert len(firsts) == 8, firsts
        return {"running_s": running, "polls": polls, "last_started_s": max(firsts) - t0,
                "status_ms": status_ms, "status_calls": status_calls,
                "second_status_ms": second_ms, "second_status_calls": second_calls}

    for _ in range(n):
        t0 = time.time()
        handle = runner.run(app, "docker", {})
        returned = time.time() - t0
        try:
            out.append({"returned_s": returned, **one(handle, t0)})
        finally:
            runner.cancel(handle)
            runner.delete(handle)
    print(json.dumps(out))
    """
)


def _eight(ctx: Context) -> list[dict[str, Any]]:
    image = _image()
    n = max(ctx.repeat // 8, 3)
    with _world() as (_work, env):
        out: list[dict[str, Any]] = run_snippet(ctx.python, _EIGHT % (image, n), env=env)
    return out


def _engine_floor(image: str, rounds: int = 3) -> list[float]:
    """The engine's own time for what the 8-replica case asks of it, with docker's CLI.

    A network, then 8 ``docker run -d --init`` on it at once (each returns once its
    container runs), in ms per round; everything removed after each round, untimed.
    """
    docker = shutil.which("docker") or "docker"
    out = []
    for i in range(rounds):
        net = f"torchx-bench-floor-{os.getpid()}-{i}"
        label = f"torchx-bench-floor={os.getpid()}"
        try:
            t0 = time.perf_counter()
            subprocess.run([docker, "network", "create", net], check=True, capture_output=True)
            argv = [docker, "run", "-d", "--init", "--network", net, "--label", label, image]
            procs = [
                subprocess.Popen([*argv, "sleep", "60"], stdout=subprocess.DEVNULL)
                for _ in range(8)
            ]
            codes = [p.wait() for p in procs]
            out.append((time.perf_counter() - t0) * 1000.0)
            if any(codes):
                raise RuntimeError(f"docker run -d exited {codes}")
        finally:
            ids = subprocess.run(
                [docker, "ps", "-aq", "--filter", f"label={label}"], capture_output=True, text=True
            ).stdout.split()
            if ids:
                subprocess.run([docker, "rm", "-f", *ids], capture_output=True)
            subprocess.run([docker, "network", "rm", net], capture_output=True)
    return out


@case("docker.start_8_replicas", target="<= 1500 ms")
def start_8_replicas(ctx: Context) -> Measurement:
    """An 8-replica app from Runner.run until Runner.status shows all 8 RUNNING, median.

    The details hold the engine's own floor for the same work (``_engine_floor``): what
    is left above it is ours.
    """
    runs = ctx.cached("docker.eight", lambda: _eight(ctx))
    ms = [float(r["running_s"]) * 1000 for r in runs]
    floor = _engine_floor(_image())
    return Measurement.from_times(
        ms,
        engine_floor_ms=round(statistics.median(floor), 1),
        run_returned_ms=round(statistics.median(float(r["returned_s"]) * 1000 for r in runs), 1),
        last_container_started_ms=round(
            statistics.median(float(r["last_started_s"]) * 1000 for r in runs),
            1,
        ),
        status_polls=[r["polls"] for r in runs],
    )


@case("docker.status_8_replicas_calls", target="<= 2 calls")
def status_8_replicas_calls(ctx: Context) -> Measurement:
    """Engine calls of a new Runner's first status of a running 8-replica app (the most seen)."""
    runs = ctx.cached("docker.eight", lambda: _eight(ctx))
    counts = [len(r["status_calls"]) for r in runs]
    return Measurement(
        value=max(counts),
        unit="calls",
        statistic=f"max of {len(runs)}",
        details={
            "calls": runs[0]["status_calls"],
            "next_status_calls": runs[0]["second_status_calls"],
            "first_status_ms": round(statistics.median(float(r["status_ms"]) for r in runs), 1),
            "next_status_ms": round(
                statistics.median(float(r["second_status_ms"]) for r in runs),
                1,
            ),
        },
    )


# ------------------------------------------------------------ following 8 x 100k lines of logs

# Starts the command with its stdout in a pipe, counts the lines of each replica as they
# come (prefix "sh/K "), and reports the command's own peak RSS (os.wait4), from a small
# fresh interpreter: a child's peak RSS starts at its parent's size before exec.
_FOLLOW = """
import json, os, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
counts, handle, rest = {}, None, b""
while chunk := proc.stdout.read(1 << 20):
    lines = (rest + chunk).split(b"\\n")
    rest = lines.pop()
    for line in lines:
        if handle is None:
            handle = line.decode()
            continue
        head, _, body = line.partition(b" ")
        if body.strip():
            counts[head.decode()] = counts.get(head.decode(), 0) + 1
_, status, usage = os.wait4(proc.pid, 0)
ms = (time.perf_counter() - t0) * 1000.0
print(json.dumps({"ms": ms, "rss_mib": usage.ru_maxrss / 1024, "handle": handle,
                  "counts": counts, "rc": os.waitstatus_to_exitcode(status)}))
"""


@case("docker.log_8x100k_rss", target="<= 100 MiB")
def log_8x100k_rss(ctx: Context) -> Measurement:
    """Peak RSS of torchx run -s docker --wait --log of 8 replicas x 100,000 lines; all shown.

    Max of 3 runs; each run must show 100,000 lines of every replica, or the case errors.
    """
    image = _image()
    with _world() as (work, env):
        torchx = _torchx(ctx)
        argv = [torchx, "run", "-s", "docker", "--wait", "--log", "utils.sh", "--image", image]
        argv += ["--num_replicas", "8", "seq", "100000"]
        runs = []
        try:
            for _ in range(3):
                proc = subprocess.run(
                    [ctx.python, "-c", _FOLLOW, *argv],
                    cwd=work,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=600,
                    check=True,
                )
                run = json.loads(proc.stdout)
                runs.append(run)
                if run["rc"] != 0:
                    raise RuntimeError(f"{' '.join(argv)} exited {run['rc']}")
                want = {f"sh/{k}": 100_000 for k in range(8)}
                if run["counts"] != want:
                    raise RuntimeError(f"lines shown per replica {run['counts']}, not {want}")
        finally:
            _delete(torchx, [r["handle"] for r in runs if r.get("handle")], env)
    return Measurement(
        value=round(max(r["rss_mib"] for r in runs), 1),
        unit="MiB",
        statistic="max of 3",
        details={
            "lines_shown_per_run": sum(runs[0]["counts"].values()),
            "wall_ms_min": round(min(r["ms"] for r in runs)),
        },
    )
