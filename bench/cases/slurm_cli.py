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

from cases import cli_overhead

_SEP = "\x1f"


def _squeue_answer(job_dir: str) -> str:
    rows = [
        _SEP.join([f"5+{k}", "COMPLETED", "me", f"n{k + 1}", "None", f"echo-ab:echo:{k}", job_dir])
        for k in (0, 1)
    ]
    return "\n".join(rows) + "\n"


def _build(world: cli_overhead.World) -> dict[str, str]:
    """A finished job's logs and exit codes in the job directory; the stand-ins' bodies."""
    answer = world.root / "squeue.txt"
    answer.write_text(_squeue_answer(str(world.work)))
    state = world.work / ".torchx-slurm" / "5"
    state.mkdir(parents=True)
    for k in (0, 1):
        (state / f"echo.{k}.exit").write_text("0\n")
        (world.work / f"slurm-5-echo-{k}.out").write_text("hello\n")
        (world.work / f"slurm-5-echo-{k}.err").write_text("")
    return {
        "squeue": f"cat {answer}",
        "sacct": "exit 0",
        "scancel": "exit 0",
        "sbatch": "cat > /dev/null; echo 5",
        "scontrol": "exit 0",
    }


_COMMANDS = {
    "status": ["status", "slurm://torchx/5"],
    "log": ["log", "slurm://torchx/5/echo/0"],
    "cancel": ["cancel", "slurm://torchx/5"],
    "run": ["run", "-s", "slurm", "utils.echo", "--msg", "hi"],
}


cli_overhead.register_cases(
    "slurm",
    "Slurm",
    build=_build,
    commands=_COMMANDS,
    one_tool="squeue",
    unset_env=("SLURM_CONF",),
    descriptions={
        "status": "torchx status of a finished 2-replica Slurm app, less its squeue (stand-in).",
        "log": "torchx log of one replica of a finished Slurm app, less its squeue (stand-in).",
        "cancel": "torchx cancel of a Slurm app, less its squeue and scancel calls (stand-ins).",
        "run": "torchx run -s slurm utils.echo, less its sbatch (stand-in).",
    },
)
