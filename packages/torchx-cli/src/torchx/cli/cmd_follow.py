"""Commands that follow an app by its handle: status, describe, list, cancel, delete."""

from __future__ import annotations

import argparse

HANDLE_HELP = "app handle printed by 'torchx run', e.g. local://torchx/echo-k3x9q2m7bw"


class StatusCommand:
    help = "show an app's state and the state of each replica"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("app_handle", help=HANDLE_HELP)
        parser.add_argument("--roles", help="comma-separated roles to show (default: all)")
        parser.add_argument("--json", action="store_true", help="print as JSON")
        parser.add_argument(
            "--show-secrets", action="store_true", help="do not mask secret values in messages"
        )

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import get_runner, require_status, require_status_and_envs

        runner = get_runner(one_shot=True)
        envs = None
        if args.show_secrets:
            status = require_status(runner, args.app_handle)
        else:  # masking needs the app's envs: one question to the scheduler for both
            status, envs = require_status_and_envs(runner, args.app_handle)
        roles = args.roles.split(",") if args.roles and args.roles != "*" else None
        if roles:
            from torchx.cli.errors import CliError
            from torchx.specs.errors import did_you_mean

            known = [r.role for r in status.roles]
            for role in roles:
                if role not in known:
                    raise CliError(
                        f"no role {role!r} in {args.app_handle}{did_you_mean(role, known)}; "
                        f"its roles: {', '.join(known)}"
                    )
        if args.json:
            import io

            from torchx.cli.output import print_json, status_payload

            buf = io.StringIO()
            print_json("AppStatus", status_payload(args.app_handle, status, roles), out=buf)
            text = buf.getvalue()
        else:
            from torchx.cli.failures import more_hint
            from torchx.cli.output import format_status

            text = f"AppHandle: {args.app_handle}\n{format_status(status, roles)}\n"
            hint = more_hint(args.app_handle, status)
            if hint:
                text += hint + "\n"
        if envs is not None:
            from torchx.cli.output import mask, remember_secrets

            remember_secrets(envs)
            text = mask(text)
        print(text, end="")
        return 0


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

        app = get_runner(one_shot=True).describe(args.app_handle)
        if app is None:
            raise CliError(
                f"no app {args.app_handle!r}: it does not exist (or was deleted); see 'torchx list'"
            )
        if not args.show_secrets:
            app = masked_app(app)
        if args.json:
            # the specs document format: 'torchx run FILE.json' runs it again
            import json

            from torchx.specs.serialize import to_document

            print(json.dumps(to_document(app), indent=2))
        else:
            from torchx.cli.output import format_app

            print(f"AppHandle: {args.app_handle}")
            print(format_app(app))
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
        parser.add_argument("--json", action="store_true", help="print as JSON")

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import default_scheduler, get_runner, scheduler_cfg
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
        if args.json:
            from torchx.cli.output import app_list_json, print_json

            print_json("AppList", app_list_json(rows))
            return 0
        from torchx.cli.output import format_app_list

        print(format_app_list(rows), end="")
        return 0


class CancelCommand:
    help = "cancel a running app (its processes are stopped; an app that ended is left as is)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("app_handle", help=HANDLE_HELP)

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import get_runner, require_status

        runner = get_runner(one_shot=True)
        before = require_status(runner, args.app_handle)
        if before.is_terminal():  # nothing to stop: say so, rather than "cancelled"
            print(f"{args.app_handle} had already ended: {before.state.name}; nothing to cancel")
            return 0
        from torchx.specs import NONE

        runner.cancel(args.app_handle)
        print(f"cancelled {args.app_handle}")
        after = runner.status(args.app_handle)
        if (
            after is not None
            and after.state.name == "CANCELLED"
            and after.msg not in ("", NONE, "cancelled")
        ):
            print(after.msg)  # what was done, when it was more than asking the app to stop
        return 0


class DeleteCommand:
    help = "delete finished apps and their records: by handle, or all older than a duration"
    description = """\
Delete finished apps with their records and logs.

  torchx delete HANDLE [HANDLE ...]   the apps named (cancel them first, or --force)
  torchx delete --older-than 7d        every finished app of the scheduler (default:
                                       local) that ended more than 7 days ago

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

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import get_runner
        from torchx.cli.errors import CliError

        runner = get_runner(one_shot=True)
        if args.older_than is not None:
            if args.app_handles:
                raise CliError("give handles or --older-than, not both")
            return _delete_older_than(runner, args.older_than, args.scheduler)
        if not args.app_handles:
            raise CliError(
                "nothing to delete: give app handles (see 'torchx list') or --older-than 7d"
            )
        return _delete_handles(runner, args.app_handles, args.force)


def _delete_handles(runner: object, handles: list[str], force: bool) -> int:
    """Deletes the apps; every handle is checked before any app is touched."""
    from typing import Any

    from torchx.cli._runtime import require_status
    from torchx.cli.errors import CliError

    r: Any = runner
    running = []
    for handle in dict.fromkeys(handles):
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
        r.delete(handle)
        print(f"deleted {handle}")
    return 0


def _delete_older_than(runner: object, older_than: str, scheduler: str | None) -> int:
    """Prunes through the scheduler's ``prune(older_than=...)`` (the local scheduler has it)."""
    from typing import Any

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
    for app_id in removed:
        print(f"deleted {name}://{r.session_name}/{app_id}")
    if not removed:
        print(f"no finished app older than {older_than}")
    return 0
