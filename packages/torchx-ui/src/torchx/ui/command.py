"""``torchx ui``: the command (argument parsing, the schedulers to show, the URL).

Imported by ``torchx --help`` and ``torchx ui --help``: it imports nothing heavy at
import time. The server library is imported by ``UiCommand.run`` only.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchx.runner import Runner
    from torchx.ui.poller import Source

_DESCRIPTION = """\
Serve a live view of the apps of one or more schedulers, in the browser.

Listens on 127.0.0.1 (a free port unless --port) and prints the URL to open, with a
random token that every request must carry (as Jupyter does). Each scheduler is asked
with one 'list' per interval; changes reach the page within two seconds, without a
reload. Ctrl-C (or SIGTERM) stops the server; the apps go on.

Without -s: the schedulers with a section in .torchxconfig, else the scheduler of
[cli:run], else local. -cfg is given to each named scheduler that has the option.

  torchx ui
  torchx ui -s local -s slurm --open
  torchx ui -s kubernetes -cfg namespace=team-a --port 8765
"""


class UiCommand:
    help = "serve a live view of the apps of every scheduler in the browser"
    description = _DESCRIPTION

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from torchx.cli.cmd_run import add_cfg_argument

        parser.add_argument(
            "-s",
            "--scheduler",
            action="append",
            dest="schedulers",
            metavar="SCHED",
            help="a scheduler to show (may repeat; default: the sections of .torchxconfig, "
            "else local)",
        )
        add_cfg_argument(parser, "run options that say where to look")
        parser.add_argument(
            "--port", type=_port, default=0, help="port to listen on (default: a free one)"
        )
        parser.add_argument(
            "--host",
            default="127.0.0.1",
            help="address to listen on (default: 127.0.0.1; any other is reachable from "
            "other machines, and a warning says so)",
        )
        parser.add_argument(
            "--interval",
            type=_interval,
            default=1.0,
            metavar="SECONDS",
            help="how often each scheduler is asked for its apps (default: 1)",
        )
        parser.add_argument("--open", action="store_true", help="open the page in a browser")

    def run(self, args: argparse.Namespace) -> int:
        import asyncio
        import signal

        from torchx.cli.output import remember_secrets, secrets_written, start_masking
        from torchx.runner.config import load_layers
        from torchx.ui import security
        from torchx.ui.poller import Poller, default_runner
        from torchx.ui.server import UiServer

        # the secrets of run options as written (-cfg, and each scheduler's section of
        # .torchxconfig), as the CLI gathers them: masked in every reason the page shows
        written = [
            f"{key}={value}"
            for layer in load_layers()
            for section, values in layer.sections.items()
            if ":" not in section
            for key, value in values.items()
        ]
        start_masking(False)
        remember_secrets(secrets_written([*written, *(args.cfg or [])]))
        with default_runner() as runner:
            sources = sources_for(runner, args.schedulers, args.cfg or [])
        if not security.is_loopback(args.host):
            print(
                f"torchx ui: warning: listening on {args.host}: other machines can reach this "
                "server; the token is all that keeps them out",
                file=sys.stderr,
            )
        try:
            server = UiServer(
                lambda on_change: Poller(sources, args.interval, on_change), args.host, args.port
            )
        except OSError as e:
            from torchx.cli.errors import CliError

            raise CliError(f"cannot listen on {args.host}:{args.port}: {e.strerror}") from None

        async def serve() -> None:
            await server.start()
            names = ", ".join(s.scheduler for s in sources)
            print(f"torchx ui: showing {names}; Ctrl-C stops it", file=sys.stderr)
            print(server.url, flush=True)
            if args.open:
                import threading
                import webbrowser

                # a text browser (BROWSER=lynx) runs until it is quit: not in the loop
                threading.Thread(target=webbrowser.open, args=(server.url,), daemon=True).start()
            stopping = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C, or a service manager
                loop.add_signal_handler(signum, stopping.set)
            try:
                await stopping.wait()
            finally:
                await server.stop()

        asyncio.run(serve())
        print("torchx ui: stopped", file=sys.stderr)
        return 0


def default_schedulers(runner: Runner) -> list[str]:
    """The schedulers with a section in ``.torchxconfig`` (installed ones, nearest file
    first), else the scheduler of ``[cli:run]``, else ``local``."""
    from torchx.runner.config import get_cli_run_defaults, load_layers

    installed = set(runner.scheduler_backends())
    found: list[str] = []
    for layer in load_layers():
        for section in layer.sections:
            if ":" not in section and section in installed and section not in found:
                found.append(section)
    if found:
        return found
    return [get_cli_run_defaults().get("scheduler") or "local"]


def sources_for(
    runner: Runner, schedulers: list[str] | None, cfg_strings: list[str]
) -> list[Source]:
    """What to list: each scheduler with the ``-cfg`` options it has.

    A scheduler that is not installed, or a ``-cfg`` key that none of the schedulers
    has, is a :class:`~torchx.cli.errors.CliError` (one line, before anything is served).
    """
    from torchx.cli.errors import CliError
    from torchx.specs.errors import did_you_mean
    from torchx.ui.poller import Source

    names = list(dict.fromkeys(schedulers or default_schedulers(runner)))
    installed = runner.scheduler_backends()
    for name in names:
        if name not in installed:
            raise CliError(
                f"unknown scheduler {name!r}{did_you_mean(name, installed)}; installed: "
                + ", ".join(sorted(installed))
            )
    out: list[Source] = []
    used: set[str] = set()
    for name in names:
        opts = runner.scheduler_run_opts(name)
        cfg = {}
        for text in cfg_strings:
            parsed = opts.cfg_from_str(text)  # keys this scheduler does not have are dropped
            cfg.update(parsed)
            used.update(parsed)
        out.append(Source(name, cfg))
    for text in cfg_strings:
        for item in text.replace(";", ",").split(","):
            key, eq, _ = item.partition("=")
            if eq and key.strip() and key.strip() not in used:
                raise CliError(
                    f"-cfg {key.strip()!r}: none of {', '.join(names)} has this run option "
                    "(see 'torchx runopts SCHEDULER')"
                )
    return out


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"bad port {text!r}: expected 0 to 65535, e.g. 8765")
    return port


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError(
            f"bad interval {text!r}: expected seconds from 0.05 to 3600, e.g. 1"
        )
    return value
