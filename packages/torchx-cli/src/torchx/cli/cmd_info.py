"""Commands that describe the installation: runopts, builtins, plugins, configure."""

from __future__ import annotations

import argparse
import sys


class RunoptsCommand:
    help = "show the run options (-cfg keys) of each installed scheduler"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("scheduler", nargs="?", help="only this scheduler")

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import get_runner

        runner = get_runner()
        names = [args.scheduler] if args.scheduler else runner.scheduler_backends()
        status = 0
        for name in names:
            try:
                opts = runner.scheduler_run_opts(name)
            except Exception as e:
                if args.scheduler:
                    raise
                print(f"{name}:\n    (could not load: {type(e).__name__}: {e})\n", file=sys.stderr)
                status = 1
                continue
            print(f"{name}:\n{opts}\n")
        return status


class BuiltinsCommand:
    help = "list the components you can run (built-in and from plugins)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--print", metavar="NAME", help="print the source of component NAME")

    def run(self, args: argparse.Namespace) -> int:
        from torchx.components.finder import get_component, list_components

        if args.print:
            import inspect

            print(inspect.getsource(get_component(args.print).fn))
            return 0
        comps = list_components()
        print(f"Found {len(comps)} components:")
        for i, (name, comp) in enumerate(sorted(comps.items()), 1):
            print(
                f"  {i:2d}. {name:<24} {comp.description.splitlines()[0] if comp.description else ''}"
            )
        return 0


class PluginsCommand:
    help = "show installed plugins, what each contributes, clashes and load failures"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="print as JSON")

    def run(self, args: argparse.Namespace) -> int:
        from torchx.specs.plugins import get_registry

        reg = get_registry()
        kinds = {
            "schedulers": reg.schedulers,
            "named_resources": reg.named_resources,
            "components": reg.components,
            "cli_commands": reg.cli_commands,
        }
        dists: dict[str, dict[str, list[str]]] = {}
        versions: dict[str, str] = {}
        for kind, table in kinds.items():
            for name, entry in table.items():
                dist = entry.distribution or "(registered in-process)"
                dists.setdefault(dist, {}).setdefault(kind, []).append(name)
                versions[dist] = entry.version or "?"
        failures = [
            {
                "distribution": f.distribution,
                "source": getattr(f, "entry_point", ""),
                "reason": f.reason,
            }
            for f in reg.failures
        ]
        clashes = [
            {
                "kind": c.kind,
                "name": c.name,
                "winner": str(c.winner),
                "losers": [str(x) for x in c.losers],
            }
            for c in reg.clashes
        ]
        if args.json:
            from torchx.cli.output import print_json

            print_json(
                "Plugins",
                {
                    "distributions": {
                        d: {"version": versions.get(d), **k} for d, k in sorted(dists.items())
                    },
                    "clashes": clashes,
                    "failures": failures,
                },
            )
            return 0
        for dist, contributed in sorted(dists.items()):
            print(f"{dist} {versions.get(dist, '')}")
            for kind, names in contributed.items():
                print(f"    {kind}: {', '.join(sorted(names))}")
        if clashes:
            print("\nname clashes (the winner is used):")
            for c in clashes:
                print(
                    f"    {c['kind']} '{c['name']}': {c['winner']} wins over {', '.join(c['losers'])}"
                )
        if failures:
            print("\nplugins that failed to load:")
            for f in failures:
                print(f"    {f['distribution']} ({f['source']}): {f['reason']}")
        return 0


class ConfigureCommand:
    help = "write a .torchxconfig with the run options of the installed schedulers"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("-s", "--schedulers", help="comma-separated schedulers (default: all)")
        parser.add_argument("--all", action="store_true", help="include optional options too")
        parser.add_argument("--path", default=".torchxconfig", help="file to write")

    def run(self, args: argparse.Namespace) -> int:
        import io
        import os

        from torchx.cli.main import CliError
        from torchx.runner.config import dump

        if os.path.exists(args.path):
            raise CliError(f"{args.path} exists already: edit it, or remove it first")
        buf = io.StringIO()
        schedulers = args.schedulers.split(",") if args.schedulers else None
        dump(buf, schedulers=schedulers, required_only=not args.all)
        tmp = f"{args.path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(buf.getvalue())
        os.replace(tmp, args.path)
        print(f"wrote {args.path}")
        return 0
