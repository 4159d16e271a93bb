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

import os
import tempfile
from pathlib import Path

from harness import Context, child_env

from cases import cli_overhead

_APP = "echo-benchlsf01"


def _bjobs_answer(app_dir: Path) -> str:
    rows = [
        f"{51 + k}|DONE|{_APP}|-|host{k}|{_APP}-echo-{k}|Nov 25 06:40|Nov 25 06:41|{app_dir}"
        for k in (0, 1)
    ]
    return "\n".join(rows) + "\n"


def _world(root: Path) -> tuple[Path, dict[str, str], Path]:
    """Stand-in tools on PATH, a job directory with a finished app's private directory."""
    bins = root / "bin"
    work = root / "work"
    state = work / ".torchx-lsf"
    app_dir = state / _APP
    app_dir.mkdir(parents=True)
    for d in (state, app_dir):
        d.chmod(0o700)
    for k in (0, 1):
        (app_dir / f"echo-{k}.out").write_text("hello\n")
        (app_dir / f"echo-{k}.err").write_text("")
    calls = root / "calls.txt"
    answer = root / "bjobs.txt"
    answer.write_text(_bjobs_answer(app_dir))
    cli_overhead.write_tools(
        bins,
        calls,
        {
            "bjobs": f"cat {answer}",
            "bkill": "exit 0",
            "bsub": 'cat > /dev/null; echo "Job <51> is submitted to default queue <normal>."',
        },
    )
    env = child_env(
        HOME=str(root),
        XDG_CACHE_HOME=str(root / "cache"),
        TORCHX_HOME=str(root / "state"),
        PATH=f"{bins}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    return work, env, calls


_COMMANDS = {
    "status": ["status", f"lsf://torchx/{_APP}"],
    "log": ["log", f"lsf://torchx/{_APP}/echo/0"],
    "cancel": ["cancel", f"lsf://torchx/{_APP}"],
    "run": ["run", "-s", "lsf", "utils.echo", "--msg", "hi"],
}


def _measure(ctx: Context) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="torchx-bench-lsf-cli-") as tmp:
        work, env, calls = _world(Path(tmp))
        return cli_overhead.measure(
            ctx,
            commands=_COMMANDS,
            one_tool=str(Path(tmp) / "bin" / "bjobs"),
            cwd=work,
            env=env,
            calls=calls,
        )


cli_overhead.register_cases(
    "lsf",
    "LSF",
    _measure,
    {
        "status": "torchx status of a finished 2-replica LSF app, less its bjobs (stand-in).",
        "log": "torchx log of one replica of a finished LSF app, less its bjobs (stand-in).",
        "cancel": "torchx cancel of a finished LSF app (nothing to kill), less its bjobs (stand-in).",
        "run": "torchx run -s lsf utils.echo, less its bsub (stand-in).",
    },
)
