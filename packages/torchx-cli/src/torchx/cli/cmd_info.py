"""Commands that describe the installation: runopts, builtins, plugins, configure."""

from __future__ import annotations

import argparse
import sys
from typing import Any


class RunoptsCommand:
    help = "show the run options (-cfg keys) of each installed scheduler"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("scheduler", nargs="?", help="only this scheduler")
        parser.add_argument("--json", action="store_true", help="print as JSON")

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import get_runner

        runner = get_runner()
        names = [args.scheduler] if args.scheduler else runner.scheduler_backends()
        status = 0
        schema: dict[str, list[dict[str, Any]]] = {}
        import shutil

        from torchx.specs.options_text import table

        width = shutil.get_terminal_size().columns - 2  # as argparse wraps its help
        for name in names:
            try:
                opts = runner.scheduler_run_opts(name)
            except Exception as e:
                if args.scheduler:
                    raise
                print(f"{name}:\n    (could not load: {type(e).__name__}: {e})\n", file=sys.stderr)
                status = 1
                continue
            if args.json:
                schema[name] = _options_json(opts)
            else:
                print(f"{name}:\n{table(opts, width)}\n")
        if args.json:
            from torchx.cli.output import print_json

            print_json("RunOpts", schema)
        return status


def _options_json(opts: Any) -> list[dict[str, Any]]:
    """A scheduler's run options as ``runopts --json`` has them: one object per option."""
    from torchx.specs.options import type_name

    return [
        {
            "name": name,
            "type": type_name(opt.opt_type),
            "required": opt.is_required,
            "default": opt.default,
            "help": opt.help,
        }
        for name, opt in opts
    ]


class BuiltinsCommand:
    help = "list the components you can run (built-in and from plugins)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--print",
            metavar="NAME",
            help="print component NAME as a file to edit and run "
            "(torchx builtins --print dist.ddp > ddp.py; torchx run ddp.py:ddp ...)",
        )
        parser.add_argument("--json", action="store_true", help="print as JSON")

    def run(self, args: argparse.Namespace) -> int:
        from torchx.components.finder import get_component, list_components

        if args.print:
            from torchx.cli._component_source import standalone_source

            print(standalone_source(args.print, get_component(args.print).fn), end="")
            return 0
        comps = list_components()
        if args.json:
            from torchx.cli.output import print_json

            print_json(
                "Components",
                [
                    {"name": name, "description": comp.description or None}
                    for name, comp in sorted(comps.items())
                ],
            )
            return 0
        print(f"Found {len(comps)} components:")
        for i, (name, comp) in enumerate(sorted(comps.items()), 1):
            print(
                f"  {i:2d}. {name:<24} {comp.description.splitlines()[0] if comp.description else ''}"
            )
        return 0


class PluginsCommand:
    help = "show installed plugins, what each contributes, clashes and load failures"
    description = """\
Show every installed distribution that plugs into torchx (its version, and the
schedulers, named resources, components, commands and quick handlers it
contributes), names given by more than one plugin (and which one wins), and
plugins that failed to load, with the reason.

Contributions are lazy references, imported only when used; --check imports
each one now (this imports every plugin's SDK), checks its shape (a scheduler
factory and a component are callable, a named resource gives a Resource, a
command has help, add_arguments and run, a quick handler declares its calls
and has status, and log if it declares it),
says how many it checked, and exits 1 if any failed. It also says, for each
quick handler, whether `torchx status|log|cancel` of its scheduler's apps may
use it now (the quick path's record of this environment), or why not."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="print as JSON")
        parser.add_argument(
            "--check", action="store_true", help="import every contribution and report failures"
        )

    def run(self, args: argparse.Namespace) -> int:
        from torchx.specs.plugins import IN_PROCESS, get_registry

        reg = get_registry()
        kinds = {
            "schedulers": reg.schedulers,
            "named_resources": reg.named_resources,
            "components": reg.components,
            "cli_commands": reg.cli_commands,
            "quick_handlers": reg.quick_handlers,
        }
        dists: dict[str, dict[str, Any]] = {}
        for dist_name, dist in reg.distributions.items():
            dists[dist_name] = {"version": dist.version}
        for kind, table in kinds.items():
            for name, entry in table.items():
                key = entry.distribution or IN_PROCESS
                info = dists.setdefault(key, {"version": entry.version})
                info.setdefault(kind, []).append(name)
        failures = [
            {
                "distribution": f.distribution,
                "version": f.version,
                "entry_point": f.entry_point,
                "group": f.group,
                "reason": f.reason,
            }
            for f in reg.failures
        ]
        checked: dict[str, int] = {}
        quick: list[dict[str, Any]] = []
        if args.check:
            checked, problems = _check_contributions(reg)
            failures.extend(problems)
            quick = _quick_handlers(reg)
        for clash in reg.clashes:  # a name a distribution gave but another won: say so there
            for loser in clash.losers:
                key = loser.distribution or IN_PROCESS
                info = dists.setdefault(key, {"version": loser.version})
                lost = f"{clash.kind} {clash.name!r} to {clash.winner.source}"
                info.setdefault("lost", []).append(lost)
        clashes = [
            {
                "kind": c.kind,
                "name": c.name,
                "winner": c.winner.source,
                "losers": [x.source for x in c.losers],
                "message": str(c),
            }
            for c in reg.clashes
        ]
        if args.json:
            from torchx.cli.output import print_json

            print_json(
                "Plugins",
                {
                    "distributions": dict(sorted(dists.items())),
                    "clashes": clashes,
                    "failures": failures,
                    **({"checked": checked, "quick_handlers": quick} if args.check else {}),
                },
            )
            return 1 if args.check and failures else 0
        for dist_name, info in sorted(dists.items()):
            print(f"{dist_name} {info.get('version') or ''}".rstrip())
            contributed = [k for k in kinds if info.get(k)]
            for kind in contributed:
                print(f"    {kind}: {', '.join(sorted(info[kind]))}")
            for lost in info.get("lost", []):
                print(f"    lost the name clash of {lost}")
            if not contributed and not info.get("lost"):
                failed = any(f["distribution"] == dist_name for f in failures)
                print(
                    "    (contributes nothing: it failed to load, see below)"
                    if failed
                    else "    (contributes nothing)"
                )
        if clashes:
            print("\nname clashes (the winner is used):")
            for c in clashes:
                print(f"    {c['message']}")
        if failures:
            print("\nplugins that failed to load:")
            for f in failures:
                who = f"{f['distribution']} {f['version'] or ''}".strip()
                print(f"    {who} ({f['group']}: {f['entry_point']}): {f['reason']}")
        if quick:
            print("\nquick handlers (torchx status|log|cancel of their scheduler's apps):")
            for q in quick:
                source = f"{q['ref']} from {q['distribution'] or 'in-process code'}"
                print(f"    {q['scheduler']} ({source}): {q['verdict']}")
        if args.check:
            counts = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in checked.items())
            verdict = (
                f"{len(failures)} problem{'s' if len(failures) != 1 else ''} (above)"
                if failures
                else "every one imports and has the expected shape"
            )
            print(f"\nchecked {counts}: {verdict}")
        return 1 if args.check and failures else 0


def _check_contributions(reg: Any) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Imports every contribution and checks its shape: (counts per kind, problems).

    A scheduler factory and a component must be callable, a named resource's function
    must return a Resource, a command must have ``help``, ``add_arguments`` and ``run``.
    Component groups are expanded (each member checked). This imports every plugin's
    modules and SDKs, which plain ``torchx plugins`` never does.
    """
    from torchx.specs import Resource

    problems: list[dict[str, Any]] = []
    reported = len(reg.failures)  # already listed by the caller
    counts = {
        "schedulers": 0,
        "named_resources": 0,
        "components": 0,
        "cli_commands": 0,
        "quick_handlers": 0,
    }

    def check(kind: str, name: str, entry: Any, test: Any) -> None:
        counts[kind] += 1
        try:
            reason = test(entry.load())
        except Exception as e:
            reason = f"{type(e).__name__}: {e}"
        if reason:
            problems.append(
                {
                    "distribution": entry.distribution,
                    "version": entry.version,
                    "entry_point": name,
                    "group": entry.group,
                    "reason": reason,
                }
            )

    def callable_(obj: Any) -> str:
        return "" if callable(obj) else f"not callable (a {type(obj).__name__})"

    def resource(fn: Any) -> str:
        if not callable(fn):
            return callable_(fn)
        got = fn()
        return (
            "" if isinstance(got, Resource) else f"returned a {type(got).__name__}, not a Resource"
        )

    def command(obj: Any) -> str:
        cmd = obj() if isinstance(obj, type) else obj
        missing = [a for a in ("help", "add_arguments", "run") if not hasattr(cmd, a)]
        return f"a command without {', '.join(missing)}" if missing else ""

    def handler(obj: Any) -> str:
        from torchx.schedulers.helpers.quick import handler_problem

        return handler_problem(obj)

    for name, entry in reg.schedulers.items():
        check("schedulers", name, entry, callable_)
    for name, entry in reg.named_resources.items():
        check("named_resources", name, entry, resource)
    for name, entry in reg.list_components().items():
        check("components", name, entry, callable_)
    for name, entry in reg.cli_commands.items():
        check("cli_commands", name, entry, command)
    for name, entry in reg.quick_handlers.items():
        check("quick_handlers", name, entry, handler)
    for f in reg.failures[reported:]:  # component modules that failed while groups expanded
        problems.append(
            {
                "distribution": f.distribution,
                "version": f.version,
                "entry_point": f.entry_point,
                "group": f.group,
                "reason": f.reason,
            }
        )
    return counts, problems


def _quick_handlers(reg: Any) -> list[dict[str, Any]]:
    """Each quick handler, and whether the quick path lets it answer now, or why not.

    "allowed" means the record a full run left for this environment names it
    (``torchx.cli._quick.marker``); a handler the registry would allow but the record does not
    name yet is allowed after the next full ``torchx status|log|cancel`` of its apps.
    """
    import os

    from torchx.cli._quick import marker

    verdicts = marker.handler_verdicts(reg)
    remembered = marker.marker_handlers()
    out = []
    for name, entry in sorted(reg.quick_handlers.items()):
        why_not = verdicts[name]
        if why_not:
            allowed, verdict = False, f"not used: {why_not}"
        elif os.environ.get("TORCHX_NO_PLUGIN_CACHE"):
            allowed, verdict = False, "not used: TORCHX_NO_PLUGIN_CACHE turns the quick path off"
        elif remembered is None:
            allowed, verdict = (
                False,
                "not used yet: the quick path has no record of this environment "
                "(the next full `torchx status|log|cancel` of its apps makes one)",
            )
        elif remembered.get(name) == entry.ref:
            allowed, verdict = True, "allowed by the quick path's record"
        else:
            allowed, verdict = (
                False,
                "not used: the quick path's record of this environment does not name it",
            )
        out.append(
            {
                "scheduler": name,
                "ref": entry.ref,
                "distribution": entry.distribution,
                "allowed": allowed,
                "verdict": verdict,
            }
        )
    return out


class ConfigureCommand:
    help = "write a .torchxconfig with the run options of the installed schedulers"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("-s", "--schedulers", help="comma-separated schedulers (default: all)")
        parser.add_argument("-a", "--all", action="store_true", help="include optional options too")
        parser.add_argument(
            "--print", action="store_true", help="print the config to stdout; write no file"
        )
        parser.add_argument("--path", default=".torchxconfig", help="file to write")

    def run(self, args: argparse.Namespace) -> int:
        import io
        import os

        from torchx.cli.errors import CliError
        from torchx.runner.config import dump
        from torchx.schedulers.helpers.files import write_private_atomic

        if not args.print and os.path.exists(args.path):
            raise CliError(
                f"{args.path} exists already: edit it, remove it first, or see what would "
                "be written with 'torchx configure --print'"
            )
        buf = io.StringIO()
        schedulers = args.schedulers.split(",") if args.schedulers else None
        dump(buf, schedulers=schedulers, required_only=not args.all)
        if args.print:
            print(buf.getvalue(), end="")
            return 0
        write_private_atomic(args.path, buf.getvalue(), 0o644)
        print(f"wrote {args.path}")
        return 0
