"""What the ``torchx`` command adds to a batch system's commands: shared by the
``slurm.cli_*`` and ``lsf.cli_*`` cases (no case of its own).

A case builds a *world*: stand-in tools on ``PATH`` (``/bin/sh`` scripts that print a
finished job's answer and append their name to a calls file) and the files the plugin
reads. :func:`measure` then runs each ``torchx`` command and one stand-in call alone,
interleaved, and reports ``median(torchx) - calls x median(one stand-in)``: the
``torchx`` process's own cost, whatever the stand-ins cost on this machine.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness import Context, Measurement, Skip, case

#: A stand-in tool: records its call, then runs ``body``.
TOOL = """#!/bin/sh
echo "$0" >> {calls}
{body}
"""


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
    measure_all: Callable[[Context], dict[str, dict[str, float]]],
    descriptions: Mapping[str, str],
) -> None:
    """Registers ``AREA.cli_LABEL_overhead`` for each command label of ``descriptions``
    (its description), all from one :func:`measure` call (``measure_all``) per run."""
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
