"""``torchx run``: run a component (or an AppDef file) on a scheduler."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.specs.api import AppDef, AppDryRunInfo, AppStatus

_DESCRIPTION = """\
Run a component, or an AppDef file (.yaml/.yml/.json), on a scheduler.

Without --wait or --log it prints the app handle and returns at once; the app
keeps running (on the local scheduler too), and any later shell can follow it
with 'torchx status|log|cancel HANDLE'.

examples:
  torchx run utils.echo --msg hello
  torchx run --log -s local dist.ddp -j 1x2 --script train.py -- --lr 0.1
  torchx run --dryrun -cfg log_dir=/tmp/logs utils.sh echo hi
  torchx run app.yaml
"""

_APPDEF_SUFFIXES = (".yaml", ".yml", ".json")


def add_cfg_argument(parser: argparse.ArgumentParser, what: str = "run options") -> None:
    """``-cfg K=V,...`` (also ``--scheduler_args``; may repeat): the scheduler's run options.

    ``run`` and ``list`` share it, so that what routes a submission (a namespace, a
    queue and region) is given the same way when asking where the apps are.
    """
    parser.add_argument(
        "-cfg",
        "--scheduler_args",
        dest="cfg",
        action="append",
        metavar="K=V,...",
        help=f"scheduler {what}, e.g. -cfg log_dir=/tmp,prepend_cwd=true (may repeat; "
        "over the [SCHEDULER] section of .torchxconfig; see 'torchx runopts SCHEDULER')",
    )


class RunCommand:
    help = "run a component or an AppDef file on a scheduler"
    description = _DESCRIPTION

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from torchx.cli._parser import add_color_argument

        parser.add_argument(
            "-s", "--scheduler", help="scheduler to run on (default: local, or [cli:run])"
        )
        add_cfg_argument(parser)
        parser.add_argument(
            "--dryrun", action="store_true", help="print the AppDef and the request; submit nothing"
        )
        parser.add_argument(
            "--wait", action="store_true", help="wait for the app to finish; exit 0 only on success"
        )
        parser.add_argument(
            "--log", action="store_true", help="stream every replica's log (implies --wait)"
        )
        parser.add_argument(
            "--workspace", help="local directory to ship with the job (schedulers that support it)"
        )
        parser.add_argument("--parent_run_id", help="id of a parent run, for tracking")
        parser.add_argument(
            "--json",
            action="store_true",
            help="stdout is JSON only, one document per line: the handle (or the dryrun), "
            "then with --wait/--log the final status (as 'status --json' has it); the "
            "replicas' log lines and the status text go to stderr",
        )
        parser.add_argument(
            "--show-secrets", action="store_true", help="do not mask secret env values"
        )
        add_color_argument(parser)
        parser.add_argument(
            "component",
            metavar="COMPONENT|APPDEF_FILE",
            nargs="?",
            help="e.g. dist.ddp, my.py:fn, app.yaml (default: 'component' in [cli:run])",
        )
        parser.add_argument(
            "component_args", nargs=argparse.REMAINDER, help="the component's arguments"
        )

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import cli_run_defaults, get_runner, scheduler_cfg
        from torchx.cli.errors import CliError

        defaults = cli_run_defaults()
        component = args.component
        component_args = list(args.component_args)
        if component is not None and component.startswith("-"):
            # `torchx run -- --msg hi`: after `--` everything is the default component's
            component_args.insert(0, component)
            component = None
        component = component or defaults.get("component")
        if not component:
            raise CliError(
                "no component given: name one (e.g. 'torchx run utils.echo --msg hi'; "
                "'torchx builtins' lists them) or an AppDef file, or set 'component' in the "
                "[cli:run] section of .torchxconfig"
            )
        if args.workspace is not None:
            _check_workspace(args.workspace, "--workspace")
            workspace = args.workspace
        else:
            workspace = defaults.get("workspace")
            if workspace:
                _check_workspace(workspace, "the workspace of [cli:run] in .torchxconfig")
        runner = get_runner()
        scheduler = args.scheduler or defaults.get("scheduler") or "local"
        if not args.scheduler and defaults.get("scheduler"):
            _check_default_scheduler(runner, scheduler)
        cfg = scheduler_cfg(runner, scheduler, args.cfg)
        if component.endswith(_APPDEF_SUFFIXES):
            from torchx.specs.serialize import load_appdef_file

            if component_args:
                raise CliError(
                    f"an AppDef file takes no arguments, got {' '.join(component_args)}: "
                    "edit the file, or run a component instead"
                )
            app = load_appdef_file(component)
            _refuse_masked_secrets(component, app)
        else:
            from torchx.components.errors import ComponentHelpRequested, ComponentNotFoundError

            try:
                app = runner.materialize(component, component_args)
            except ComponentHelpRequested as e:
                print(e.help, end="" if e.help.endswith("\n") else "\n")
                return 0
            except ComponentNotFoundError as e:
                if args.component:
                    raise
                from torchx.runner.config import source_of

                raise CliError(f"{source_of('cli:run', 'component')}: component: {e}") from e
        from torchx.cli.output import remember_secrets, secret_pairs

        remember_secrets([*(role.env for role in app.roles), *secret_pairs(cfg)])
        if args.dryrun and not args.show_secrets:
            # The request is made from the AppDef and run options with their secrets
            # masked: no secret reaches it, however the scheduler quotes, escapes or
            # substitutes values (searching the rendered text for them misses those).
            from torchx.cli.output import masked_app, masked_cfg

            app = masked_app(app)
            cfg = masked_cfg(cfg)
        # one dry run: what --dryrun prints, or what is submitted (never made twice)
        info = runner.dryrun(
            app, scheduler, cfg=cfg, workspace=workspace, parent_run_id=args.parent_run_id
        )
        remember_secrets(secret_pairs(info.cfg))  # with those of .torchxconfig
        if args.dryrun:
            return _print_dryrun(info, args)
        handle = runner.schedule(info)
        if args.json:
            from torchx.cli.output import print_json

            print_json("AppHandle", {"handle": handle}, compact=True)
        else:
            print(handle)
        sys.stdout.flush()
        if not (args.wait or args.log):
            return 0
        from torchx.cli._runtime import following

        with following(handle):
            return _follow(
                runner, handle, log=args.log, app=info.app, as_json=args.json, color=args.color
            )


def _check_default_scheduler(runner: Runner, scheduler: str) -> None:
    """A scheduler named by ``[cli:run]`` that is not installed is the file's mistake:
    the error names the file and section (the scheduler is made now, as the dry run would)."""
    from torchx.specs.errors import UnknownSchedulerError

    try:
        runner.scheduler_run_opts(scheduler)
    except UnknownSchedulerError as e:
        from torchx.cli.errors import CliError
        from torchx.runner.config import source_of

        where = source_of("cli:run", "scheduler") or ".torchxconfig: [cli:run]"
        raise CliError(f"{where}: scheduler: {e.args[0]}") from None


def _check_workspace(workspace: str, where: str) -> None:
    """Refuses a workspace whose directories do not exist, before anything is made.

    Otherwise a scheduler that ships no workspace (the local one) would ignore it
    silently, and one that does would fail only once it builds the image.
    """
    import os

    from torchx.cli.errors import CliError
    from torchx.specs.workspace import Workspace

    for project in Workspace.from_str(workspace).projects:
        path = os.path.expanduser(project)
        if not os.path.isdir(path):
            what = "not a directory" if os.path.exists(path) else "no such directory"
            raise CliError(
                f"{where}: {project!r}: {what}; a workspace is a local project directory "
                "shipped with the job, e.g. --workspace . (or DIR=SUBDIR,...)"
            )


def _refuse_masked_secrets(path: str, app: Any) -> None:
    """Refuses an AppDef file whose secrets were masked when it was printed.

    ``torchx describe --json`` masks secret env values as ``****``; running its output
    again would silently pass ``****`` as the secret.
    """
    from torchx.cli.errors import CliError
    from torchx.cli.output import MASK, is_secret_name

    for role in app.roles:
        for key, value in role.env.items():
            if value == MASK and is_secret_name(key):
                raise CliError(
                    f"{path}: role {role.name!r}: env {key} is {MASK}, a secret masked when "
                    "the file was printed: put the real value in the file, or write it with "
                    "'torchx describe --json --show-secrets HANDLE'"
                )


def _print_dryrun(info: AppDryRunInfo[Any], args: argparse.Namespace) -> int:
    from torchx.cli.output import format_app

    shown = info.app  # with its secrets masked unless --show-secrets
    request = str(info)
    if not args.show_secrets:
        # what the request took from elsewhere: .torchxconfig's run options, and the
        # variables of this process a run option copies in (docker's copy_env)
        from torchx.cli.output import host_secrets, mask, mask_values

        request = mask_values(mask(request), [host_secrets()])
    if args.json:
        from torchx.cli.output import print_json
        from torchx.specs.serialize import to_document

        print_json(
            "DryRun",
            {"scheduler": info.scheduler, "app": to_document(shown), "request": request},
            compact=True,
        )
        return 0
    print("=== APPLICATION ===")
    print(format_app(shown))
    print(f"\n=== SCHEDULER REQUEST ({info.scheduler}) ===")
    print(request)
    return 0


def _follow(
    runner: Runner,
    handle: str,
    log: bool,
    app: AppDef | None = None,
    as_json: bool = False,
    color: str | None = None,
) -> int:
    """Streams the logs (``log``), waits for the end, prints the final status.

    The status goes to stderr for a person (the logs own stdout); with ``as_json`` it
    also ends stdout as an ``AppStatus`` document on one line, as ``torchx status --json``
    has it, and the logs go to stderr: stdout is then JSON only.
    """
    from torchx.cli.errors import EXIT_APP_FAILED

    try:
        if log:
            from torchx.cli.log_attempts import follow

            if app is not None:  # the app just submitted: its replicas are known
                pairs = [(r.name, k) for r in app.roles for k in range(r.num_replicas)]
            else:
                from torchx.cli._runtime import require_status
                from torchx.cli.logs import replicas_of

                pairs = replicas_of(require_status(runner, handle), None, None)
            follow(runner, handle, pairs, None, color=color, out=sys.stderr if as_json else None)
        status = _wait(runner, handle)
        if status is not None and status.state.name != "SUCCEEDED":
            status = _with_backend_secrets(runner, handle, status)
    except KeyboardInterrupt:
        sys.stdout.flush()
        print(
            f"\ndetached: {handle} keeps running.\n"
            f"  follow it:  torchx log -t {handle}\n"
            f"  cancel it:  torchx cancel {handle}",
            file=sys.stderr,
        )
        return 130
    # the logs went to stdout, the status goes to stderr: flush so they never share a line
    sys.stdout.flush()
    if status is None:
        print(f"{handle} is gone: it was deleted while being waited on", file=sys.stderr)
        return EXIT_APP_FAILED
    from torchx.cli.failures import more_hint
    from torchx.cli.output import format_status, mask

    print(mask(format_status(status)), file=sys.stderr)
    hint = more_hint(handle, status)
    if hint:
        print(mask(hint), file=sys.stderr)
    if as_json:
        from torchx.cli.output import print_json, status_payload

        print_json("AppStatus", status_payload(handle, status), compact=True)
    return 0 if status.state.name == "SUCCEEDED" else EXIT_APP_FAILED


def _with_backend_secrets(runner: Runner, handle: str, status: AppStatus) -> AppStatus:
    """The final status, once more with the envs the scheduler tells: a failure's message
    may quote a secret only the scheduler knows (a value it read from its own store, as
    Kubernetes' ``secret_env``), which :func:`~torchx.cli.output.mask` then hides, as
    ``torchx status`` does. Only for an app that did not succeed (the message that quotes
    stderr); if that question fails, the status already read stands."""
    from torchx.cli.output import remember_secrets

    try:
        both = runner.status_and_envs(handle)
    except Exception:
        return status
    if both is None or not both[0].is_terminal():
        return status
    remember_secrets(both[1])
    return both[0]


def _wait(runner: Runner, handle: str) -> AppStatus | None:
    """Waits for the app; on a terminal, keeps one live status line up to date."""
    import time

    tty = sys.stderr.isatty()
    start = time.monotonic()
    interval = 0.02
    shown = False
    while True:
        status = runner.status(handle)
        if status is None or status.is_terminal():
            if shown:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()
            return status
        if tty:
            running = sum(
                1 for r in status.roles for rep in r.replicas if rep.state.name == "RUNNING"
            )
            total = sum(len(r.replicas) for r in status.roles)
            sys.stderr.write(
                f"\r\033[K{handle}: {status.state.name}, {running}/{total} replicas running, "
                f"{time.monotonic() - start:.0f}s (Ctrl-C detaches)"
            )
            sys.stderr.flush()
            shown = True
        # where the scheduler can block until the app changes, it does (the end is seen as
        # it happens; a terminal's line is redrawn every half second); else a growing poll
        if not runner.wait_for_change(handle, 0.5 if tty else 5.0):
            time.sleep(interval)
            interval = min(interval * 2, 0.5 if tty else 1.0)
