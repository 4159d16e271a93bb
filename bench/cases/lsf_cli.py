"""What the ``torchx`` command adds to the LSF commands it runs, for an LSF app.

The LSF counterpart of ``slurm.cli_*`` (bench/cases/slurm_cli.py), with the Slurm
plugin's targets: the CLI's own overhead (its wall time minus the LSF commands it runs)
at most 60 ms for ``status``, ``log`` and ``cancel``, and at most 100 ms for ``run``
(``utils.echo``, over one ``bsub`` per replica).

No LSF is needed: ``bjobs``, ``bsub`` and ``bkill`` are ``/bin/sh`` stand-ins printing
a finished 2-replica app's answer (the ``bjobs -o`` records the plugin asks for) and
counting their calls; the app's private directory holds its logs. The value is
``median(torchx) - calls x median(one stand-in)`` (:mod:`cases.cli_overhead`).
"""

from __future__ import annotations

from pathlib import Path

from cases import cli_overhead

_APP = "echo-benchlsf01"


def _bjobs_answer(app_dir: Path) -> str:
    rows = [
        f"{51 + k}|DONE|{_APP}|-|host{k}|{_APP}-echo-{k}|Nov 25 06:40|Nov 25 06:41|{app_dir}"
        for k in (0, 1)
    ]
    return "\n".join(rows) + "\n"


def _build(world: cli_overhead.World) -> dict[str, str]:
    """A finished app's private directory with its logs; the stand-ins' bodies."""
    state = world.work / ".torchx-lsf"
    app_dir = state / _APP
    app_dir.mkdir(parents=True)
    for d in (state, app_dir):
        d.chmod(0o700)
    for k in (0, 1):
        (app_dir / f"echo-{k}.out").write_text("hello\n")
        (app_dir / f"echo-{k}.err").write_text("")
    answer = world.root / "bjobs.txt"
    answer.write_text(_bjobs_answer(app_dir))
    return {
        "bjobs": f"cat {answer}",
        "bkill": "exit 0",
        "bsub": 'cat > /dev/null; echo "Job <51> is submitted to default queue <normal>."',
    }


_COMMANDS = {
    "status": ["status", f"lsf://torchx/{_APP}"],
    "log": ["log", f"lsf://torchx/{_APP}/echo/0"],
    "cancel": ["cancel", f"lsf://torchx/{_APP}"],
    # a directory image: the job runs there (a container scheduler refuses the default ".")
    "run": ["run", "-s", "lsf", "utils.echo", "--msg", "hi", "--image", "/tmp"],
}


cli_overhead.register_cases(
    "lsf",
    "LSF",
    build=_build,
    commands=_COMMANDS,
    one_tool="bjobs",
    descriptions={
        "status": "torchx status of a finished 2-replica LSF app, less its bjobs (stand-in).",
        "log": "torchx log of one replica of a finished LSF app, less its bjobs (stand-in).",
        "cancel": "torchx cancel of a finished LSF app (nothing to kill), less its bjobs (stand-in).",
        "run": "torchx run -s lsf utils.echo, less its bsub (stand-in).",
    },
)
