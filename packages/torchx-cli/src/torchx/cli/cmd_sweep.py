"""``torchx sweep``: one component over a grid of its parameters; and how ``status``,
``cancel`` and ``list`` show a sweep (``sweep://ID``). The work is :mod:`torchx.sweeps`."""

from __future__ import annotations

import time

TYPE_CHECKING = False  # the quick path's `status sweep://` imports neither
if TYPE_CHECKING:
    import argparse
    from typing import Any

_DESCRIPTION = """\
Run a component once per point of a grid of its parameters, at most K at once.

  torchx sweep utils.sh echo --grid lr=1e-3,1e-4 --grid batch=32,64 --max-parallel 2
  torchx sweep train.py:trainer --epochs 3 --grid lr=1e-3,1e-4,1e-5 --random 2 --seed 7

Each trial is 'torchx run COMPONENT ARGS --lr 1e-3 --batch 32': a grid's NAME is a
parameter of the component (an unknown one is refused before anything runs). --random N
runs N trials drawn from the grid with the seed --seed S. The sweep's options may come
before COMPONENT or among its arguments, except one the component also has (its
--seed): that one is the component's; after '--', everything is the component's.

The command prints the sweep's handle (sweep://sw-...) and returns; a detached
supervisor submits the trials, the next when one ends, until all have ended. A trial
that fails does not stop the others, unless --fail-fast (the rest are cancelled).
Follow it from any shell: 'torchx status sweep://ID', 'torchx cancel sweep://ID',
'torchx list --sweeps'. --wait waits for the end (exit 0 when every trial succeeded).
"""

#: The sweep's own options, as they may appear among the component's arguments:
#: the option and whether it takes a value.
_OWN = {
    "--grid": True,
    "--random": True,
    "--seed": True,
    "--max-parallel": True,
    "-s": True,
    "--scheduler": True,
    "-cfg": True,
    "--scheduler_args": True,
    "--fail-fast": False,
    "--json": False,
    "--wait": False,
}


def _int(text: str) -> int:
    import argparse

    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


class SweepCommand:
    help = "run a component over a grid of its parameters, at most K trials at once"
    description = _DESCRIPTION

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        import argparse

        from torchx.cli.cmd_run import add_cfg_argument

        parser.add_argument(
            "--grid",
            action="append",
            default=[],
            metavar="NAME=V1,V2",
            help="a parameter of the component and its values (repeat for a product)",
        )
        parser.add_argument("--random", type=_int, metavar="N", help="run N trials drawn at random")
        parser.add_argument("--seed", type=_int, metavar="S", help="seed of --random")
        parser.add_argument(
            "--max-parallel", type=_int, default=1, metavar="K", help="trials at once (default 1)"
        )
        parser.add_argument("-s", "--scheduler", help="scheduler to run on (default: local)")
        add_cfg_argument(parser)
        parser.add_argument(
            "--fail-fast", action="store_true", help="cancel the rest once one trial failed"
        )
        parser.add_argument("--wait", action="store_true", help="wait until every trial ended")
        parser.add_argument(
            "--json", action="store_true", help="print the handle (or the end) as JSON"
        )
        parser.add_argument("component", metavar="COMPONENT", help="as for 'torchx run'")
        parser.add_argument(
            "component_args", nargs=argparse.REMAINDER, help="the component's arguments"
        )

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import default_scheduler, get_runner, scheduler_cfg
        from torchx.cli.errors import CliError
        from torchx.sweeps import component_parameters, sweep

        component_args = _take_own(args, set(component_parameters(args.component)))
        if args.seed is not None and args.random is None:
            raise CliError("--seed is for --random N: without it every trial runs")
        runner = get_runner(one_shot=True)
        scheduler = args.scheduler or default_scheduler()
        cfg = scheduler_cfg(runner, scheduler, args.cfg)
        handle = sweep(
            args.component,
            component_args,
            grids=args.grid,
            scheduler=scheduler,
            cfg=cfg,
            max_parallel=args.max_parallel,
            random_n=args.random,
            seed=args.seed,
            fail_fast=args.fail_fast,
        )
        if not args.wait:
            if args.json:
                from torchx.cli.output import print_json

                print_json("SweepHandle", {"handle": handle})
            else:
                print(handle)
            return 0
        from torchx.sweeps import wait

        print(handle, flush=True)
        doc = wait(handle)
        _print_status(doc, args.json)
        return 0 if doc["state"] == "SUCCEEDED" else 1


def _take_own(args: argparse.Namespace, params: set[str]) -> list[str]:
    """The component's arguments, the sweep's own options taken out of them into ``args``
    (up to a ``--``, after which every word is the component's). An option that is also
    a parameter of the component (``params``: a ``--seed`` of a trainer) is the
    component's: the sweep's own is then given before COMPONENT."""
    from torchx.cli.errors import CliError

    rest: list[str] = list(args.component_args)
    out: list[str] = []
    i = 0
    while i < len(rest):
        word = rest[i]
        if word == "--":
            out += rest[i + 1 :]
            break
        name, eq, inline = word.partition("=")
        if name in _OWN and (eq == "" or _OWN[name]) and name.lstrip("-") not in params:
            if _OWN[name]:
                if eq:
                    value = inline
                elif i + 1 < len(rest):
                    value = rest[i + 1]
                    i += 1
                else:
                    raise CliError(f"{name} needs a value")
                _set(args, name, value)
            else:
                setattr(args, name.lstrip("-").replace("-", "_"), True)
        else:
            out.append(word)
        i += 1
    return out


def _set(args: argparse.Namespace, name: str, value: str) -> None:
    from torchx.cli.errors import CliError

    if name == "--grid":
        args.grid.append(value)
    elif name in ("-cfg", "--scheduler_args"):
        args.cfg = [*(args.cfg or []), value]
    elif name in ("-s", "--scheduler"):
        args.scheduler = value
    else:
        try:
            number = int(value)
        except ValueError:
            raise CliError(f"{name}: expected a whole number, got {value!r}") from None
        setattr(args, name.lstrip("-").replace("-", "_"), number)


def is_sweep(handle: str) -> bool:
    return handle.startswith("sweep://")


def _duration(t: dict[str, Any]) -> str:
    from torchx.specs.status import format_duration

    start = t.get("startTime") or t.get("submitTime")
    if start is None:
        return "-"
    end = t.get("endTime") or time.time()
    return str(format_duration(max(0.0, end - start)))


def format_sweep(doc: dict[str, Any]) -> str:
    """What ``torchx status sweep://ID`` prints: the sweep, then a line per trial."""
    from torchx.sweeps import counts

    tally = ", ".join(f"{n} {s}" for s, n in sorted(counts(doc).items()))
    lines = [
        f"Sweep: {doc['handle']}",
        f"  State: {doc['state']} ({tally})",
        f"  Component: {doc['component']} on {doc['scheduler']}, "
        f"at most {doc['maxParallel']} at once{', fail-fast' if doc['failFast'] else ''}",
    ]
    rows = [
        (
            str(t["index"]),
            " ".join(f"--{k} {v}" for k, v in t["params"].items()),
            t["handle"] or "-",
            t["state"],
            _duration(t) if t["handle"] else "-",
            t["rootCause"] or "",
        )
        for t in doc["trials"]
    ]
    head = ("#", "ARGUMENTS", "APP HANDLE", "STATE", "DURATION", "ROOT CAUSE")
    widths = [max(len(r[k]) for r in [head, *rows]) for k in range(5)]
    for r in [head, *rows]:
        cells = [r[k].ljust(widths[k]) for k in range(5)]
        lines.append(("  ".join([*cells, r[5]])).rstrip())
    return "\n".join(lines) + "\n"


def _print_status(doc: dict[str, Any], as_json: bool, compact: bool = False) -> None:
    if as_json:
        from torchx.cli.output import masked_cfg, print_json

        # secret values of run options (env NAME:VALUE) are masked, as 'describe' does
        print_json("SweepStatus", {**doc, "cfg": masked_cfg(doc["cfg"])}, compact=compact)
    else:
        print(format_sweep(doc), end="")


def status(handle: str, as_json: bool, compact: bool = False, blank: bool = False) -> int:
    """``torchx status sweep://ID``."""
    from torchx.sweeps import status as sweep_status

    doc = sweep_status(handle)
    if blank and not as_json:
        print()
    _print_status(doc, as_json, compact)
    return 0


def cancel(handle: str, quiet: bool) -> dict[str, Any]:
    """``torchx cancel sweep://ID``: what was done, as ``--json`` has it."""
    from torchx.sweeps import cancel as cancel_sweep
    from torchx.sweeps import status as sweep_status

    before = sweep_status(handle)
    if before["state"] != "RUNNING":
        if not quiet:
            print(f"{handle} had already ended: {before['state']}; nothing to cancel")
        return {"handle": handle, "result": "ended", "state": before["state"], "message": None}
    doc = cancel_sweep(handle)
    if not quiet:
        print(f"cancelled {handle}")
    return {"handle": handle, "result": "cancelled", "state": doc["state"], "message": None}


def format_sweep_list(docs: list[dict[str, Any]]) -> str:
    """What ``torchx list --sweeps`` prints: a line per sweep, newest first, with the
    number of its trials in each state."""
    from torchx.specs.status import format_time
    from torchx.sweeps import counts

    if not docs:
        return "no sweeps\n"
    rows = [
        (
            d["handle"],
            d["state"],
            format_time(d["created"]),
            ", ".join(f"{n} {s}" for s, n in sorted(counts(d).items())),
            d["component"],
        )
        for d in docs
    ]
    head = ("SWEEP HANDLE", "STATE", "STARTED", "TRIALS", "COMPONENT")
    widths = [max(len(r[k]) for r in [head, *rows]) for k in range(4)]
    return "".join(
        "  ".join([*(r[k].ljust(widths[k]) for k in range(4)), r[4]]).rstrip() + "\n"
        for r in [head, *rows]
    )
