"""``torchx log``: print (or follow) the logs of an app's replicas."""

from __future__ import annotations

import argparse


class LogCommand:
    help = "print or follow (-t) the logs of an app, a role, or some replicas"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "identifier",
            metavar="HANDLE[/ROLE[/N,M]]",
            help="the app handle, optionally narrowed to a role and replica ids "
            "(local://torchx/echo-abc/worker/0,1)",
        )
        parser.add_argument("--regex", help="only lines matching this regex")
        parser.add_argument("--since", help="only lines after this time (ISO 8601, or 5m ago)")
        parser.add_argument("--until", help="only lines before this time")
        parser.add_argument("-t", "--tail", action="store_true", help="follow until the app ends")
        parser.add_argument(
            "--streams",
            choices=["stdout", "stderr", "combined"],
            help="which output (default: combined)",
        )

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli._runtime import get_runner, require_status, split_handle
        from torchx.cli.logs import parse_time, replicas_of, stream

        handle, role, ids = split_handle(args.identifier)
        runner = get_runner(one_shot=True)
        status = require_status(runner, handle)
        streams = None
        if args.streams:
            from torchx.schedulers.api import Stream

            streams = Stream(args.streams)
        failed = stream(
            runner,
            handle,
            replicas_of(status, role, ids),
            regex=args.regex,
            since=parse_time(args.since) if args.since else None,
            until=parse_time(args.until) if args.until else None,
            tail=args.tail,
            streams=streams,
        )
        return 1 if failed else 0
