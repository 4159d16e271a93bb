"""``torchx run``: run a component (or an AppDef file) on a scheduler."""

from __future__ import annotations

import argparse
import sys
from typing import Any

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


class RunCommand:
    help = "run a component or an AppDef file on a scheduler"
    description = _DESCRIPTION

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "-s", "--scheduler", help="scheduler to run on (default: local, or [cli:run])"
        )
        parser.add_argument(
            "-cfg",
            "--scheduler_args",
            dest="cfg",
            action="append",
            metavar="K=V,...",
            help="scheduler run options, e.g. -cfg log_dir=/tmp,prepend_cwd=true (may repeat; "
            "see 'torchx runopts SCHEDULER')",
        )
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
            "--json", action="store_true", help="print the handle or dryrun as JSON"
        )
        parser.add_argument(
            "--show-secrets", action="store_true", help="do not mask secret env values"
        )
        parser.add_argument(
            "component", metavar="COMPONENT|APPDEF_FILE", help="e.g. dist.ddp, my.py:fn, app.yaml"
        )
        parser.add_argument(
            "component_args", nargs=argparse.REMAINDER, help="the component's arguments"
        )

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import default_scheduler, get_runner, scheduler_cfg

        runner = get_runner()
        scheduler = args.scheduler or default_scheduler()
        cfg = scheduler_cfg(runner, scheduler, args.cfg)
        if args.component.endswith(_APPDEF_SUFFIXES):
            from torchx.specs.serialize import load_appdef_file

            if args.component_args:
                from torchx.cli.main import CliError

                raise CliError(f"an AppDef file takes no arguments, got {args.component_args}")
            app = load_appdef_file(args.component)
            info = runner.dryrun(
                app, scheduler, cfg=cfg, workspace=args.workspace, parent_run_id=args.parent_run_id
            )
        else:
            info = runner.dryrun_component(
                args.component,
                list(args.component_args),
                scheduler,
                cfg=cfg,
                workspace=args.workspace,
                parent_run_id=args.parent_run_id,
            )
        if args.dryrun:
            return _print_dryrun(info, args)
        handle = runner.schedule(info)
        if args.json:
            from torchx.cli.output import print_json

            print_json("AppHandle", {"handle": handle})
        else:
            print(handle)
        sys.stdout.flush()
        if not (args.wait or args.log):
            return 0
        return _follow(runner, handle, log=args.log)


def _print_dryrun(info: Any, args: argparse.Namespace) -> int:
    from torchx.cli.output import mask_text, masked_app

    app = info._app
    shown = app if args.show_secrets else masked_app(app)
    request = str(info) if args.show_secrets else mask_text(str(info), app)
    if args.json:
        from torchx.cli.output import print_json
        from torchx.specs.serialize import unstructure

        print_json(
            "DryRun", {"scheduler": info._scheduler, "app": unstructure(shown), "request": request}
        )
        return 0
    import pprint

    print("=== APPLICATION ===")
    pprint.pprint(shown, width=100, sort_dicts=False)
    print(f"=== SCHEDULER REQUEST ({info._scheduler}) ===")
    print(request)
    return 0


def _follow(runner: Any, handle: str, log: bool) -> int:
    from torchx.cli.main import EXIT_APP_FAILED

    try:
        if log:
            from torchx.cli._runtime import require_status
            from torchx.cli.logs import replicas_of, stream

            status = require_status(runner, handle)
            stream(runner, handle, replicas_of(status, None, None), tail=True)
        status = _wait(runner, handle)
    except KeyboardInterrupt:
        print(
            f"\ndetached: {handle} keeps running.\n"
            f"  follow it:  torchx log -t {handle}\n"
            f"  cancel it:  torchx cancel {handle}",
            file=sys.stderr,
        )
        return 130
    print(status.format(), file=sys.stderr)
    return 0 if str(status.state) == "SUCCEEDED" else EXIT_APP_FAILED


def _wait(runner: Any, handle: str) -> Any:
    """Waits for the app; on a terminal, keeps one live status line up to date."""
    import time

    tty = sys.stderr.isatty()
    start = time.monotonic()
    interval = 0.05
    while True:
        status = runner.status(handle)
        if status is not None and status.is_terminal():
            if tty:
                sys.stderr.write("\r\033[K")
            return status
        if tty and status is not None:
            running = sum(
                1 for r in status.roles for rep in r.replicas if str(rep.state) == "RUNNING"
            )
            total = sum(len(r.replicas) for r in status.roles)
            sys.stderr.write(
                f"\r\033[K{handle}: {status.state}, {running}/{total} replicas running, "
                f"{time.monotonic() - start:.0f}s"
            )
            sys.stderr.flush()
        time.sleep(interval)
        interval = min(interval * 2, 1.0)
