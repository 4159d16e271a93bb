"""What the ``torchx`` command adds to a batch system's commands: shared by the
``slurm.cli_*`` and ``lsf.cli_*`` cases (no case of its own).

A case module builds a :class:`World` (in a fresh temporary directory): stand-in tools
on ``PATH`` (``/bin/sh`` scripts that print a finished job's answer and append their
name to a calls file) and the files the plugin reads. :func:`measure` then runs each
``torchx`` command and one stand-in call alone, interleaved, and reports
``median(torchx) - calls x median(one stand-in)``: the ``torchx`` process's own cost,
whatever the stand-ins cost on this machine. :func:`register_cases` registers the four
cases of a backend from its world builder.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness import Context, Measurement, Skip, case, child_env

#: A stand-in tool: records its call, then runs ``body``.
TOOL = """#!/bin/sh
echo "$0" >> {calls}
{body}
"""


class World:
    """A private directory for one measurement: ``work`` (the commands' working and job
    directory), ``bin`` (the stand-ins, first on ``PATH``), ``calls`` (their call log)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.work = root / "work"
        self.work.mkdir()
        self.bin = root / "bin"
        self.calls = root / "calls.txt"

    def env(self, unset: Sequence[str] = ()) -> dict[str, str]:
        """The commands' environment: the world's HOME, caches and state, its tools first."""
        env = child_env(
            HOME=str(self.root),
            XDG_CACHE_HOME=str(self.root / "cache"),
            TORCHX_HOME=str(self.root / "state"),
            PATH=f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        for name in unset:
            env.pop(name, None)
        return env


def write_tools(bins: Path, calls: Path, bodies: Mapping[str, str]) -> None:
    """One executable stand-in per tool in ``bins``, each counting its calls in ``calls``."""
    bins.mkdir(exist_ok=True)
    for tool, body in bodies.items():
        path = bins / tool
        path.write_text(TOOL.format(calls=calls, body=body))
        path.chmod(0o755)


def torchx_command(ctx: Context) -> str:
    """The ``torchx`` script of the measured venv."""
    path = Path(ctx.python).parent / "torchx"
    if not path.exists():
        raise Skip(f"no torchx command next to {ctx.python}")
    return str(path)


def measure(
    ctx: Context,
    *,
    commands: Mapping[str, Sequence[str]],
    one_tool: str,
    cwd: Path,
    env: Mapping[str, str],
    calls: Path,
) -> dict[str, dict[str, float]]:
    """Each ``torchx`` command (args after ``torchx``) and ``one_tool`` alone, interleaved.

    Returns per command label: ``overhead_ms``, ``median_ms``, ``min_ms``, ``commands``
    (the stand-in calls it made) and ``one_command_ms``.
    """
    torchx = torchx_command(ctx)
    argvs = {label: [torchx, *args] for label, args in commands.items()}
    argvs["one_command"] = [one_tool]
    ncalls: dict[str, int] = {}
    for label, argv in argvs.items():
        for _ in range(3):  # warm-up: bytecode, plugin cache, page cache
            if calls.exists():
                calls.unlink()
            proc = subprocess.run(argv, cwd=cwd, env=dict(env), capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.strip()[-300:]}")
        ncalls[label] = len(calls.read_text().splitlines()) if calls.exists() else 0
    samples: dict[str, list[float]] = {label: [] for label in argvs}
    for _ in range(ctx.repeat):
        for label, argv in argvs.items():
            t0 = time.perf_counter()
            subprocess.run(
                argv, cwd=cwd, env=dict(env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            samples[label].append((time.perf_counter() - t0) * 1000.0)
    one = sorted(samples["one_command"])[len(samples["one_command"]) // 2]
    out: dict[str, dict[str, float]] = {}
    for label in commands:
        times = sorted(samples[label])
        median = times[len(times) // 2]
        out[label] = {
            "overhead_ms": round(median - ncalls[label] * one, 1),
            "median_ms": round(median, 1),
            "min_ms": round(times[0], 1),
            "commands": ncalls[label],
            "one_command_ms": round(one, 2),
        }
    return out


#: The targets of the Slurm plugin's issue, per command: ``run`` starts a job, the
#: others only ask about one.
TARGETS = {"status": "<= 60 ms", "log": "<= 60 ms", "cancel": "<= 60 ms", "run": "<= 100 ms"}


def register_cases(
    area: str,
    tools: str,
    *,
    build: Callable[[World], Mapping[str, str]],
    commands: Mapping[str, Sequence[str]],
    one_tool: str,
    descriptions: Mapping[str, str],
    unset_env: Sequence[str] = (),
) -> None:
    """Registers ``AREA.cli_LABEL_overhead`` for each command label of ``descriptions``
    (its description), all from one :func:`measure` of ``commands`` per run.

    ``build`` writes what the plugin reads into a fresh :class:`World` and returns the
    stand-in tools' ``/bin/sh`` bodies; ``one_tool`` is the stand-in timed alone;
    ``unset_env`` the backend's variables the user's environment may not pass on.
    """

    def measure_all(ctx: Context) -> dict[str, dict[str, float]]:
        with tempfile.TemporaryDirectory(prefix=f"torchx-bench-{area}-cli-") as tmp:
            world = World(Path(tmp))
            write_tools(world.bin, world.calls, build(world))
            return measure(
                ctx,
                commands=commands,
                one_tool=str(world.bin / one_tool),
                cwd=world.work,
                env=world.env(unset_env),
                calls=world.calls,
            )

    for label, text in descriptions.items():

        def run(ctx: Context, label: str = label) -> Measurement:
            return overhead(ctx.cached(f"{area}.cli", lambda: measure_all(ctx))[label], tools)

        run.__doc__ = text
        case(f"{area}.cli_{label}_overhead", target=TARGETS[label])(run)


def overhead(data: Mapping[str, float], tools: str) -> Measurement:
    """The measurement of one command from :func:`measure`'s answer."""
    return Measurement(
        value=data["overhead_ms"],
        unit="ms",
        statistic=f"median minus the stand-in {tools} commands",
        details={k: v for k, v in data.items() if k != "overhead_ms"},
    )
