"""Commands that follow an app by its handle: status, describe, list, cancel, delete."""

from __future__ import annotations

import argparse
import sys
from typing import Any

HANDLE_HELP = (
    "app handle printed by 'torchx run', e.g. local://torchx/echo-k3x9q2m7bw "
    "(or a sweep's, sweep://sw-...)"
)


class StatusCommand:
    help = "show an app's state and the state of each replica"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "app_handles",
            nargs="+",
            metavar="HANDLE",
            help=HANDLE_HELP + " (several: one block each, or one JSON document per line)",
        )
        parser.add_argument("--roles", help="comma-separated roles to show (default: all)")
        parser.add_argument("--json", action="store_true", help="print as JSON")
        parser.add_argument(
            "--show-secrets", action="store_true", help="do not mask secret values in messages"
        )

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import get_runner

        runner = get_runner(one_shot=True)
        handles = list(dict.fromkeys(args.app_handles))
        if len(handles) == 1:  # its error is the command's, as always
            return self._one(runner, args, handles[0], compact=False)
        return each_handle(
            "status",
            handles,
            lambda h: self._one(
                runner, args, h, compact=True, blank=not args.json and h != handles[0]
            ),
        )

    def _one(
        self, runner: Any, args: argparse.Namespace, handle: str, compact: bool, blank: bool = False
    ) -> int:
        from torchx.cli._runtime import require_status, require_status_and_envs
        from torchx.cli.cmd_sweep import is_sweep

        if is_sweep(handle):  # a sweep's table of trials (torchx.cli.cmd_sweep)
            from torchx.cli.cmd_sweep import status as sweep_status

            return sweep_status(handle, args.json, compact, blank)

        envs = None
        if args.show_secrets:
            status = require_status(runner, handle)
        else:  # masking needs the app's envs: one question to the scheduler for both
            status, envs = require_status_and_envs(runner, handle)
        roles = args.roles.split(",") if args.roles and args.roles != "*" else None
        if roles:
            from torchx.cli.errors import CliError
            from torchx.specs.errors import did_you_mean

            known = [r.role for r in status.roles]
            for role in roles:
                if role not in known:
                    raise CliError(
                        f"no role {role!r} in {handle}{did_you_mean(role, known)}; "
                        f"its roles: {', '.join(known)}"
                    )
        if args.json:
            import io

            from torchx.cli.output import print_json, status_payload

            buf = io.StringIO()
            payload = status_payload(handle, status, roles)
            print_json("AppStatus", payload, out=buf, compact=compact)
            text = buf.getvalue()
        else:
            from torchx.cli.failures import more_hint
            from torchx.cli.output import format_status

            text = f"AppHandle: {handle}\n{format_status(status, roles)}\n"
            hint = more_hint(handle, status)
            if hint:
                text += hint + "\n"
        if envs is not None:
            from torchx.cli.output import mask, remember_secrets

            remember_secrets(envs)
            text = mask(text)
        print(("\n" if blank else "") + text, end="")
        return 0


def each_handle(command: str, handles: list[str], act: Any) -> int:
    """Runs ``act(handle)`` for each handle, going on after one that fails: its error is
    one line on stderr, as a command's own (``torchx.cli._report``). The exit status is the
    worst of them (0 when every one did what was asked)."""
    from torchx.cli._report import report

    worst = 0
    for handle in handles:
        try:
            code = int(act(handle) or 0)
        except Exception as e:
            code = report(command, e)
        worst = max(worst, code)
    return worst


class DescribeCommand:
    help = "show the AppDef an app was submitted with"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("app_handle", help=HANDLE_HELP)
        parser.add_argument("--json", action="store_true", help="print as JSON")
        parser.add_argument(
            "--show-secrets", action="store_true", help="do not mask secret env values"
        )

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import get_runner
        from torchx.cli.errors import CliError
        from torchx.cli.output import masked_app

        found = get_runner(one_shot=True).describe_with_options(args.app_handle)
        if found is None:
            raise CliError(
                f"no app {args.app_handle!r}: it does not exist (or was deleted); see 'torchx list'"
            )
        app, run_options = found  # masked by the scheduler when it kept them
        if not args.show_secrets:
            app = masked_app(app)
        if args.json:
            # the specs document format: 'torchx run FILE.json' runs it again; the run
            # options are its torchx.runOptions metadata entry, as schedulers keep them
            # (the run leaves it out of the app it submits)
            import json

            from torchx.specs.appdef_json import encode

            doc = json.loads(encode(app, run_options=run_options if run_options else None))
            print(json.dumps(doc, indent=2))
        else:
            from torchx.cli.output import format_app, format_run_options

            print(f"AppHandle: {args.app_handle}")
            print(format_app(app))
            if run_options:
                print(format_run_options(run_options))
        return 0


class ListCommand:
    help = "list the apps a scheduler knows of, newest first"
    description = """\
List the apps a scheduler knows of, newest first.

Schedulers that route by a run option (a Kubernetes namespace, an AWS queue and
region) list where the options say: -cfg as for 'torchx run', over the [SCHEDULER]
section of .torchxconfig. No default is assumed for an option not given.

  torchx list -s local
  torchx list -s kubernetes -cfg namespace=team-a
"""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from torchx.cli.cmd_run import add_cfg_argument

        parser.add_argument(
            "-s", "--scheduler", help="scheduler to ask (default: local, or [cli:run])"
        )
        add_cfg_argument(parser, "run options that say where to look")
        parser.add_argument(
            "--state",
            metavar="STATE[,STATE]",
            help="only apps in these states, e.g. running or failed,cancelled",
        )
        parser.add_argument("--limit", metavar="N", help="only the newest N apps (after --state)")
        parser.add_argument(
            "--sweeps",
            action="store_true",
            help="list the sweeps ('torchx sweep') instead: a line each, with its trials' states",
        )
        parser.add_argument("--json", action="store_true", help="print as JSON")

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import default_scheduler, get_runner, scheduler_cfg

        if args.sweeps:
            return _list_sweeps(args)
        from torchx.cli.output import parse_limit, parse_states, select_apps

        # the filters are checked before the scheduler is asked
        states = parse_states(args.state) if args.state else None
        limit = parse_limit(args.limit) if args.limit is not None else None
        runner = get_runner(one_shot=True)
        scheduler = args.scheduler or default_scheduler()
        apps = runner.list(scheduler, scheduler_cfg(runner, scheduler, args.cfg))
        rows = select_apps(
            ((a.app_handle, str(a.state), a.name, a.start_time, a.end_time) for a in apps),
            states,
            limit,
        )
        from torchx.sweeps import trial_sweeps

        sweeps = trial_sweeps()  # the trials of sweeps are grouped
        if args.json:
            from torchx.cli.output import app_list_json, print_json

            print_json("AppList", app_list_json(rows, sweeps))
            return 0
        from torchx.cli.output import format_app_list

        print(format_app_list(rows, sweeps), end="")
        return 0


def _list_sweeps(args: argparse.Namespace) -> int:
    """``torchx list --sweeps``: every sweep recorded here, newest first."""
    from torchx.cli.errors import CliError
    from torchx.sweeps import list_sweeps

    if args.state or args.limit or args.scheduler or args.cfg:
        raise CliError("--sweeps lists every sweep: it takes no -s, -cfg, --state or --limit")
    docs = list_sweeps()
    if args.json:
        from torchx.cli.output import print_json

        print_json("SweepList", docs)
        return 0
    from torchx.cli.cmd_sweep import format_sweep_list

    print(format_sweep_list(docs), end="")
    return 0


class CancelCommand:
    help = "cancel running apps (their processes are stopped; an app that ended is left as is)"
    description = """\
Cancel apps: by handle, or every app of a scheduler in some states.

  torchx cancel HANDLE [HANDLE ...]
  torchx cancel --state running -s local [--yes]

Each handle gets its own line (or, with --json, its own object); one that fails is
told on stderr and the others are still cancelled. The exit status is the worst of
them: 0 when every app was cancelled or had already ended. --state asks how many apps
it would cancel before it does, unless --yes (without a terminal, --yes is needed).
"""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from torchx.cli.cmd_run import add_cfg_argument

        parser.add_argument("app_handles", nargs="*", metavar="HANDLE", help=HANDLE_HELP)
        parser.add_argument(
            "--state",
            metavar="STATE[,STATE]",
            help="cancel every app of the scheduler in these states, e.g. running,pending",
        )
        parser.add_argument("-s", "--scheduler", help="scheduler of --state (default: local)")
        add_cfg_argument(parser, "run options that say where to look (with --state)")
        parser.add_argument(
            "-y", "--yes", action="store_true", help="cancel without asking (with --state)"
        )
        parser.add_argument("--json", action="store_true", help="print the results as JSON")

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import get_runner
        from torchx.cli.errors import CliError

        runner = get_runner(one_shot=True)
        if args.state is not None:
            if args.app_handles:
                raise CliError("give handles or --state, not both")
            handles = _handles_in_states(runner, args)
            if not handles:
                print("no app to cancel", file=sys.stderr)
                if args.json:
                    _print_results("CancelResults", [])
                return 0
            _confirm(f"cancel {len(handles)} app{'s' if len(handles) != 1 else ''}", args.yes)
        elif not args.app_handles:
            raise CliError(
                "nothing to cancel: give app handles (see 'torchx list') or --state running"
            )
        else:
            handles = list(dict.fromkeys(args.app_handles))
        results: list[dict[str, Any]] = []

        def cancel(handle: str) -> int:
            results.append(_cancel_one(runner, handle, quiet=args.json))
            return 0

        if len(handles) == 1 and not args.json:  # its error is the command's, as always
            return cancel(handles[0])
        code = each_handle("cancel", handles, cancel)
        if args.json:
            done = {r["handle"] for r in results}
            results += [{"handle": h, "result": "error"} for h in handles if h not in done]
            _print_results("CancelResults", results)
        return code


def _cancel_one(runner: Any, handle: str, quiet: bool) -> dict[str, Any]:
    """Cancels one app (an app that ended is left as is); what was done, as JSON has it."""
    from torchx.cli._runtime import require_status
    from torchx.cli.cmd_sweep import is_sweep

    if is_sweep(handle):  # its pending and running trials (torchx.cli.cmd_sweep)
        from torchx.cli.cmd_sweep import cancel

        return cancel(handle, quiet)

    before = require_status(runner, handle)
    if before.is_terminal():  # nothing to stop: say so, rather than "cancelled"
        if not quiet:
            print(f"{handle} had already ended: {before.state.name}; nothing to cancel")
        return {"handle": handle, "result": "ended", "state": before.state.name, "message": None}
    from torchx.specs import NONE

    runner.cancel(handle)
    if not quiet:
        print(f"cancelled {handle}")
    after = runner.status(handle)
    message = None
    if (
        after is not None
        and after.state.name == "CANCELLED"
        and after.msg not in ("", NONE, "cancelled")
    ):
        message = after.msg  # what was done, when it was more than asking the app to stop
        if not quiet:
            print(after.msg)
    state = after.state.name if after is not None else None
    return {"handle": handle, "result": "cancelled", "state": state, "message": message}


def _handles_in_states(runner: Any, args: argparse.Namespace) -> list[str]:
    """The handles of the scheduler's apps in ``--state`` (as ``torchx list`` finds them)."""
    from torchx.cli._runtime import default_scheduler, scheduler_cfg
    from torchx.cli.output import parse_states

    states = parse_states(args.state)
    scheduler = args.scheduler or default_scheduler()
    apps = runner.list(scheduler, scheduler_cfg(runner, scheduler, args.cfg))
    return [a.app_handle for a in apps if str(a.state) in states]


def _confirm(what: str, yes: bool) -> None:
    """Asks before acting on many apps; ``--yes`` (needed without a terminal) skips it."""
    from torchx.cli.errors import CliError

    if yes:
        return
    if not sys.stdin.isatty():
        raise CliError(f"would {what}: pass --yes to do it without a terminal to ask on")
    sys.stderr.write(f"{what}? [y/N] ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise CliError(f"not confirmed: did not {what}")


def _print_results(kind: str, results: list[dict[str, Any]]) -> None:
    from torchx.cli.output import print_json

    print_json(kind, results)


class DeleteCommand:
    help = "delete finished apps and their records: by handle, or all older than a duration"
    description = """\
Delete finished apps with their records and logs.

  torchx delete HANDLE [HANDLE ...]   the apps named (cancel them first, or --force)
  torchx delete sweep://ID             a sweep: its trials' apps, then its record
  torchx delete --older-than 7d        every finished app of the scheduler (default:
                                       local) that ended more than 7 days ago, and
                                       the records of its sweeps that did

Durations: a number and a unit (s, m, h, d, w), or several: 30m, 12h, 1d12h.
To have the local scheduler do this on its own, set retain_last (keep the newest N
apps) and/or retain_for (keep apps younger than a duration) in the [local] section
of .torchxconfig: each app then prunes the older finished ones once it has ended.
"""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("app_handles", nargs="*", metavar="HANDLE", help=HANDLE_HELP)
        parser.add_argument(
            "--force", action="store_true", help="cancel the apps first if they are running"
        )
        parser.add_argument(
            "--older-than",
            metavar="DURATION",
            help="delete every finished app that ended longer ago than this, e.g. 7d, 12h",
        )
        parser.add_argument("-s", "--scheduler", help="scheduler of --older-than (default: local)")
        parser.add_argument("--json", action="store_true", help="print the apps deleted as JSON")

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import get_runner
        from torchx.cli.errors import CliError

        runner = get_runner(one_shot=True)
        if args.older_than is not None:
            if args.app_handles:
                raise CliError("give handles or --older-than, not both")
            deleted = _delete_older_than(runner, args.older_than, args.scheduler, args.json)
        elif not args.app_handles:
            raise CliError(
                "nothing to delete: give app handles (see 'torchx list') or --older-than 7d"
            )
        else:
            deleted = _delete_handles(runner, args.app_handles, args.force, args.json)
        if args.json:
            _print_results("Deleted", [{"handle": h} for h in deleted])
        return 0


def _delete_handles(runner: object, handles: list[str], force: bool, quiet: bool) -> list[str]:
    """Deletes the apps; every handle is checked before any app is touched. The handles
    deleted (``quiet``: printed by the caller, as JSON)."""

    from torchx.cli._runtime import require_status
    from torchx.cli.cmd_sweep import is_sweep
    from torchx.cli.errors import CliError

    r: Any = runner
    running = []
    sweeps = [h for h in dict.fromkeys(handles) if is_sweep(h)]
    checked: dict[str, dict[str, Any]] = {}
    if sweeps:
        from torchx.sweeps import check_deletable
        from torchx.sweeps import delete as delete_sweep

        for handle in sweeps:  # refused (ended, or --force) before anything is touched
            checked[handle] = check_deletable(handle, force)
    for handle in dict.fromkeys(handles):
        if is_sweep(handle):
            continue
        status = require_status(r, handle)
        if not status.is_terminal():
            if not force:
                raise CliError(
                    f"{handle} is {status.state}: cancel it first "
                    f"('torchx cancel {handle}') or pass --force"
                )
            running.append(handle)
    for handle in running:
        r.cancel(handle)
    for handle in running:
        r.wait(handle, wait_interval=0.1, timeout=60)
    for handle in dict.fromkeys(handles):
        if is_sweep(handle):
            trials = delete_sweep(handle, force, checked=checked[handle])
            if not quiet:
                print(f"deleted {handle} and its {len(trials)} trial apps")
            continue
        r.delete(handle)
        if not quiet:
            print(f"deleted {handle}")
    return list(dict.fromkeys(handles))


def _delete_older_than(
    runner: object, older_than: str, scheduler: str | None, quiet: bool
) -> list[str]:
    """Prunes through the scheduler's ``prune(older_than=...)`` (the local scheduler has
    it); the handles deleted."""

    from torchx.cli._runtime import default_scheduler
    from torchx.cli.errors import CliError
    from torchx.schedulers import get_scheduler_factories

    r: Any = runner
    name = scheduler or default_scheduler()
    factories = get_scheduler_factories()
    if name not in factories:
        from torchx.runner.first_party import install_hint

        installed = ", ".join(sorted(factories))
        raise CliError(
            f"{install_hint(name) or f'unknown scheduler {name!r}'}; installed: {installed}"
        )
    sched = factories[name](r.session_name)
    try:
        prune = getattr(sched, "prune", None)
        if prune is None:
            raise CliError(
                f"scheduler {name!r} cannot delete by age: delete its apps by handle "
                f"('torchx list -s {name}' lists them)"
            )
        removed = prune(older_than=older_than)
    finally:
        sched.close()
    from torchx.sweeps import prune as prune_sweeps

    # the records of the scheduler's sweeps that ended as long ago (their trials, ended
    # before them, were among the apps just pruned)
    deleted = [f"{name}://{r.session_name}/{app_id}" for app_id in removed]
    deleted += prune_sweeps(older_than, scheduler=name)
    if not quiet:
        for handle in deleted:
            print(f"deleted {handle}")
        if not deleted:
            print(f"no finished app or sweep older than {older_than}")
    return deleted
