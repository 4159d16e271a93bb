"""Run the torchx benchmarks: ``nox -s bench`` calls this; you can too.

Usage (from the repository root)::

    python bench/run.py                          # every case, ours only
    python bench/run.py --upstream-python bench/.venvs/upstream/bin/python
    python bench/run.py -k specs.import -k serialize   # cases whose name contains a word
    python bench/run.py --quick                  # the quick cases only (under a minute)
    python bench/run.py --list                   # the registered cases and targets
    python bench/run.py --markdown               # also print the README table
    python bench/run.py -k cli.start_128 --runs 10   # ten runs, one verdict from all
    python bench/run.py --report bench/results/latest.json   # README table, no re-run
    python bench/run.py --report a.json b.json   # one table from the runs of both files

``--python`` is the interpreter of the venv holding our distributions (default: the one
running this script). Results go to ``bench/results/latest.json`` (gitignored) and a table
to stdout. The exit status is 1 when a case errors (a harness or product crash), and with
``--fail-on-miss`` also when a target is missed.

A verdict is the median of a case's recorded runs against its target, printed with the
runs' min-max spread (see ``harness.combine_runs``): ``--runs N`` runs every selected case
N times (round by round, so a busy spell of the machine falls on every case, not one),
and ``--report`` pools the runs of several results files, so a re-run adds to the record
and never replaces a run that went the other way.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import harness

BENCH = Path(__file__).resolve().parent

#: ``--quick``: the cases that take a second or two each (start-up, import, dry runs,
#: following a finished app), at fewer repetitions; the cases that start hundreds of
#: replicas, move a million lines, need torch or a Slurm cluster are left to the full run.
QUICK_CASES = (
    "python.startup",
    "cli.help",
    "cli.run_echo",
    "cli.dryrun_ddp_128x8",
    "cli.status_finished",
    "cli.list_finished",
    "cli.log_finished",
    "local.run_1_replica",
    "local.dryrun_ddp_128x8",
    "runner.get_runner_and_backends",
    "runner.dryrun_ddp_128x8",
    "slurm.dryrun_ddp_128x8",
    "specs.import",
    "specs.import.heavy_modules",
    "specs.serialize.unstructure",
    "specs.plugins.first_read",
)
#: ``--quick``'s repetitions, unless --repeat / --inner are given.
QUICK_REPEAT, QUICK_INNER = 10, 5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-k",
        dest="patterns",
        action="append",
        default=[],
        metavar="WORD",
        help="run only cases whose name contains WORD (repeatable)",
    )
    parser.add_argument("--list", action="store_true", help="list cases and exit")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"only the quick cases, {QUICK_REPEAT} repetitions (under a minute; see QUICK_CASES)",
    )
    parser.add_argument(
        "--python",
        default=harness.default_python(),
        help="python of the venv with our distributions installed",
    )
    parser.add_argument("--upstream-python", help="python of a venv with torchx==0.7.0")
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="runs per command for whole-process timings (default 40)",
    )
    parser.add_argument(
        "--inner", type=int, default=None, help="repetitions for in-process timings (default 20)"
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="runs of each case; the verdict is the median of them all (default 1)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=BENCH / "results" / "latest.json",
        help="where to write the results (default bench/results/latest.json)",
    )
    parser.add_argument(
        "--markdown",
        action="store_true",
        help="also print the results as the Markdown table of bench/README.md",
    )
    parser.add_argument(
        "--report",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="print the Markdown table of earlier results files (their runs pooled) and exit",
    )
    parser.add_argument(
        "--fail-on-miss", action="store_true", help="exit 1 when a target is missed"
    )
    args = parser.parse_args(argv)

    if args.report:
        files = [json.loads(path.read_text()) for path in args.report]
        print(harness.format_markdown(harness.merge_results(files)))
        return 0
    if args.runs < 1:
        parser.error(f"--runs {args.runs}: give 1 or more runs per case")

    if args.repeat is None:
        args.repeat = QUICK_REPEAT if args.quick else 40
    if args.inner is None:
        args.inner = QUICK_INNER if args.quick else 20
    harness.load_cases()
    unknown = [name for name in QUICK_CASES if name not in harness.REGISTRY]
    if unknown:  # a renamed case must not fall out of the quick run unnoticed
        parser.error(f"QUICK_CASES names cases that do not exist: {', '.join(unknown)}")
    selected = [
        c
        for name, c in harness.REGISTRY.items()
        if (not args.patterns or any(p in name for p in args.patterns))
        and (not args.quick or name in QUICK_CASES)
    ]
    if args.list:
        for c in selected:
            print(f"{c.name:36} {c.target.text if c.target else '(info)':20} {c.description}")
        return 0
    if not selected:
        print(f"no case matches {args.patterns}", file=sys.stderr)
        return 2

    ctx = harness.Context(
        python=args.python,
        upstream_python=args.upstream_python,
        repeat=args.repeat,
        inner=args.inner,
        workdir=BENCH.parent,
    )
    results: dict[str, Any] = {
        "format_version": harness.FORMAT_VERSION,
        "date": harness.now_utc(),
        "machine": harness.machine_info(ctx),
        "sessions": [],
        "cases": [],
    }
    session = {
        "date": results["date"],
        "loadavg_start": results["machine"]["loadavg_start"],
        "settings": {"repeat": args.repeat, "inner": args.inner, "runs": args.runs},
    }
    results["sessions"].append(session)
    for python in filter(None, (ctx.python, ctx.upstream_python)):
        harness.precompile(python)
    runs: dict[str, list[dict[str, Any]]] = {c.name: [] for c in selected}
    for i in range(1, args.runs + 1):
        ctx.memo.clear()  # a measurement shared by cases is shared within a run only
        for c in selected:
            of = f" (run {i} of {args.runs})" if args.runs > 1 else ""
            print(f"running {c.name}{of} ...", file=sys.stderr, flush=True)
            row = harness.run_case(c, ctx)
            runs[c.name].append(row)
            if row["verdict"] == "error":
                print(f"  error: {row['reason']}", file=sys.stderr)
            # written after every run, so an interrupted session keeps what it measured
            results["cases"] = [harness.combine_runs(k, runs[k.name]) for k in selected]
            session["loadavg_end"] = results["machine"]["loadavg_end"] = harness.loadavg()
            harness.write_json(args.json, results)

    m = results["machine"]
    print()
    print(
        f"{m['cpu_model']}, {m['cores']} cores, {m['ram_gib']} GiB, Python {m['python']}, "
        f"torchx-specs {m['torchx_specs_version']}"
        + (f", upstream torchx {m.get('upstream_torchx_version')}" if args.upstream_python else "")
        + f"; load average {m['loadavg_start']} -> {m['loadavg_end']}"
    )
    print(harness.format_table(results["cases"]))
    for row in results["cases"]:
        several = len(row["runs"]) > 1
        for i, run in enumerate(row["runs"], 1):
            tag = f" [run {i}]" if several else ""
            for key, value in (run.get("details") or {}).items():
                if not key.startswith("_"):
                    print(f"  {row['name']}{tag}: {key} = {value}")
    print()
    print(harness.LEGEND)
    single = harness.single_run_cases(results["cases"])
    if single and args.runs == 1:
        print(
            f"{len(single)} verdict(s) rest on one run: before quoting one, record more "
            "(--runs N, or --report over several results files)."
        )
    print(f"\nresults written to {args.json}")
    if args.markdown:
        print()
        print(harness.format_markdown(results))

    verdicts = {row["verdict"] for row in results["cases"]}
    if "error" in verdicts or (args.fail_on_miss and "missed" in verdicts):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
