"""What the ``torchx`` command adds to the Slurm commands it runs, for a Slurm app.

An HPC user compares ``torchx status slurm://...`` with ``squeue -j ...`` (about 10 ms).
Targets from the Slurm plugin's issue: the CLI's own overhead (its wall time minus the
Slurm commands it runs) at most 60 ms for ``status``, ``log`` and ``cancel``, and at most
100 ms for ``run`` (``utils.echo``, over ``sbatch``).

No cluster is needed: ``sbatch``, ``squeue``, ``sacct`` and ``scancel`` are stand-ins
(``/bin/sh`` scripts printing a 2-replica job's answer, and counting their calls), so
what each case measures is the ``torchx`` process alone. The stand-ins' own cost is
measured too (each started the same way, as often as the command ran them) and taken
off: the value is ``median(torchx) - calls x median(one stand-in)``.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

from harness import Context, Measurement, Skip, case, child_env

_SEP = "\x1f"


def _squeue_answer(job_dir: str) -> str:
    rows = [
        _SEP.join([f"5+{k}", "COMPLETED", "me", f"n{k + 1}", "None", f"echo-ab:echo:{k}", job_dir])
        for k in (0, 1)
    ]
    return "\n".join(rows) + "\n"


_TOOL = """#!/bin/sh
echo "$0" >> {calls}
{body}
"""


def _world(root: Path) -> tuple[Path, dict[str, str], Path]:
    """Stand-in tools on PATH, a job directory with a finished job's logs and exit codes."""
    bins = root / "bin"
    bins.mkdir()
    work = root / "work"
    work.mkdir()
    calls = root / "calls.txt"
    answer = root / "squeue.txt"
    answer.write_text(_squeue_answer(str(work)))
    bodies = {
        "squeue": f"cat {answer}",
        "sacct": "exit 0",
        "scancel": "exit 0",
        "sbatch": "cat > /dev/null; echo 5",
        "scontrol": "exit 0",
    }
    for tool, body in bodies.items():
        path = bins / tool
        path.write_text(_TOOL.format(calls=calls, body=body))
        path.chmod(0o755)
    state = work / ".torchx-slurm" / "5"
    state.mkdir(parents=True)
    for k in (0, 1):
        (state / f"echo.{k}.exit").write_text("0\n")
        (work / f"slurm-5-echo-{k}.out").write_text("hello\n")
        (work / f"slurm-5-echo-{k}.err").write_text("")
    env = child_env(
        HOME=str(root),
        XDG_CACHE_HOME=str(root / "cache"),
        TORCHX_HOME=str(root / "state"),
        PATH=f"{bins}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    env.pop("SLURM_CONF", None)
    return work, env, calls


def _torchx(ctx: Context) -> str:
    path = Path(ctx.python).parent / "torchx"
    if not path.exists():
        raise Skip(f"no torchx command next to {ctx.python}")
    return str(path)


_COMMANDS = {
    "status": ["status", "slurm://torchx/5"],
    "log": ["log", "slurm://torchx/5/echo/0"],
    "cancel": ["cancel", "slurm://torchx/5"],
    "run": ["run", "-s", "slurm", "utils.echo", "--msg", "hi"],
}


def _measure(ctx: Context) -> dict[str, dict[str, float]]:
    """Each command and one stand-in call, interleaved; the calls each command made."""
    with tempfile.TemporaryDirectory(prefix="torchx-bench-slurm-cli-") as tmp:
        work, env, calls = _world(Path(tmp))
        torchx = _torchx(ctx)
        argvs = {label: [torchx, *args] for label, args in _COMMANDS.items()}
        argvs["one_slurm_command"] = [str(Path(tmp) / "bin" / "squeue")]
        ncalls: dict[str, int] = {}
        for label, argv in argvs.items():
            for _ in range(3):  # warm-up: bytecode, plugin cache, page cache
                if calls.exists():
                    calls.unlink()
                proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
                if proc.returncode != 0:
                    raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.strip()[-300:]}")
            ncalls[label] = len(calls.read_text().splitlines()) if calls.exists() else 0
        samples: dict[str, list[float]] = {label: [] for label in argvs}
        for _ in range(ctx.repeat):
            for label, argv in argvs.items():
                t0 = time.perf_counter()
                subprocess.run(
                    argv, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
                samples[label].append((time.perf_counter() - t0) * 1000.0)
    one = sorted(samples["one_slurm_command"])[len(samples["one_slurm_command"]) // 2]
    out: dict[str, dict[str, float]] = {}
    for label in _COMMANDS:
        times = sorted(samples[label])
        median = times[len(times) // 2]
        out[label] = {
            "overhead_ms": round(median - ncalls[label] * one, 1),
            "median_ms": round(median, 1),
            "min_ms": round(times[0], 1),
            "slurm_commands": ncalls[label],
            "one_slurm_command_ms": round(one, 2),
        }
    return out


def _overhead(ctx: Context, label: str) -> Measurement:
    data = ctx.cached("slurm.cli", lambda: _measure(ctx))[label]
    return Measurement(
        value=data["overhead_ms"],
        unit="ms",
        statistic="median minus the stand-in Slurm commands",
        details={k: v for k, v in data.items() if k != "overhead_ms"},
    )


@case("slurm.cli_status_overhead", target="<= 60 ms")
def cli_status_overhead(ctx: Context) -> Measurement:
    """torchx status of a finished 2-replica Slurm app, less its squeue (stand-in)."""
    return _overhead(ctx, "status")


@case("slurm.cli_log_overhead", target="<= 60 ms")
def cli_log_overhead(ctx: Context) -> Measurement:
    """torchx log of one replica of a finished Slurm app, less its squeue (stand-in)."""
    return _overhead(ctx, "log")


@case("slurm.cli_cancel_overhead", target="<= 60 ms")
def cli_cancel_overhead(ctx: Context) -> Measurement:
    """torchx cancel of a Slurm app, less its squeue and scancel calls (stand-ins)."""
    return _overhead(ctx, "cancel")


@case("slurm.cli_run_overhead", target="<= 100 ms")
def cli_run_overhead(ctx: Context) -> Measurement:
    """torchx run -s slurm utils.echo, less its sbatch (stand-in)."""
    return _overhead(ctx, "run")
