"""``torchx log``: print (or follow) the logs of an app's replicas."""

from __future__ import annotations

import argparse
from typing import Any

TIME_HELP = "ISO 8601 (2026-11-25T09:15:00) or a duration ago (30s, 5m ago, 1h30m, 1d12h)"


class LogCommand:
    help = "print or follow (-t) the logs of an app, a role, or some replicas"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from torchx.cli._parser import add_color_argument

        parser.add_argument(
            "identifier",
            metavar="HANDLE[/ROLE[/N,M]]",
            help="the app handle, optionally narrowed to a role and replica ids "
            "(local://torchx/echo-x1y2z3a4b5/echo/0,1)",
        )
        parser.add_argument("--regex", help="only lines matching this regex")
        parser.add_argument("--since", help=f"only lines written since this time: {TIME_HELP}")
        parser.add_argument("--until", help="only lines written until this time (same forms)")
        parser.add_argument(
            "-t",
            "--tail",
            "-f",
            "--follow",
            dest="tail",
            action="store_true",
            help="follow until the app ends (-f/--follow too, as tail, docker and kubectl have it)",
        )
        parser.add_argument(
            "--timestamps",
            action="store_true",
            help="put the time each line was written (local time, to the millisecond) "
            "after its prefix",
        )
        parser.add_argument(
            "--streams",
            choices=["stdout", "stderr", "combined"],
            help="which output (default: combined)",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="one JSON document per line: a LogLine per log line (role, replica, "
            "stream, time in seconds since the epoch or null where the scheduler keeps "
            "none, line); with -t, a LogAttempt (handle, restarts, attempt, line) where "
            "the text form prints its marker line between two attempts",
        )
        add_color_argument(parser)

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import get_runner, require_status, split_handle
        from torchx.cli.logs import check_selection, parse_time, replicas_of, stream

        # every option is checked once, before any app is asked or any replica read
        handle = split_handle(args.identifier)
        since = parse_time(args.since) if args.since else None
        until = parse_time(args.until) if args.until else None
        check_selection(args.regex, since, until)
        streams = None
        if args.streams:
            from torchx.schedulers.contract.api import Stream

            streams = Stream(args.streams)
        options: dict[str, Any] = {
            "regex": args.regex,
            "since": since,
            "until": until,
            "streams": streams,
            "color": args.color,
            "timestamps": args.timestamps,
        }
        if not args.tail:
            runner = get_runner(one_shot=True)
            status = require_status(runner, handle)
            pairs = replicas_of(status, handle.role, handle.replica_ids)
            if args.json:
                from torchx.cli.log_json import print_lines

                return print_lines(runner, handle, pairs, **_json_options(options)).exit_status
            return stream(runner, handle, pairs, **options).exit_status
        # following is a long wait: it rides out an outage like run --wait, and goes on
        # until the app ends, across its attempts
        from torchx.cli._runtime import following
        from torchx.cli.log_attempts import follow

        with following(str(handle)):
            runner = get_runner()
            status = require_status(runner, handle)
            pairs = replicas_of(status, handle.role, handle.replica_ids)
            if args.json:  # each line as it comes, a LogAttempt document between attempts
                unread = follow(
                    runner, handle, pairs, status, as_json=True, **_json_options(options)
                )
            else:
                unread = follow(runner, handle, pairs, status, **options)
        return unread.exit_status


def _json_options(options: dict[str, Any]) -> dict[str, Any]:
    """What ``--json`` uses of the options (it has no prefix to color or stamp)."""
    return {k: options[k] for k in ("regex", "since", "until", "streams")}
