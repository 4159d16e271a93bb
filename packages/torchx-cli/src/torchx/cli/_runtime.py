"""What every command needs at run time: a Runner, the config files, parsed handles.

Imported only inside ``run()`` of a command, so ``torchx --help`` never loads it.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from torchx.cli.errors import CliError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from torchx.runner.api import Runner
    from torchx.specs.api import AppStatus
    from torchx.specs.handles import Handle
    from torchx.specs.options import CfgVal


#: How long a one-shot command (status, describe, list, log, cancel, delete) keeps retrying
#: a scheduler that fails transiently before it says the state is unknown. ``run --wait``,
#: ``wait`` and ``log -t`` follow an app for a long time and keep the Runner's default
#: budget (60 s of retries per call to the backend, or :data:`FOLLOW_RETRY_ENV`), so an
#: outage of the backend (a daemon or API server restarting) does not end them.
ONE_SHOT_RETRY_S = 10.0

#: The environment variable that sets how many seconds a command that follows an app
#: keeps retrying one call to a scheduler that fails transiently (default 60).
FOLLOW_RETRY_ENV = "TORCHX_RETRY_S"


def get_runner(one_shot: bool = False) -> Runner:
    """A Runner over every installed scheduler, reading ``.torchxconfig`` files.

    ``one_shot``: the command asks the backend once and answers (see
    :data:`ONE_SHOT_RETRY_S`); a user waiting at a prompt gets one line within seconds
    when the backend is down, instead of a minute of silence. Otherwise the command
    follows an app, and :data:`FOLLOW_RETRY_ENV` may set its budget.
    """
    from torchx.runner import get_runner as _get_runner

    if not one_shot:
        deadline = _follow_retry_s()
        if deadline is None:
            return _get_runner()
    else:
        deadline = ONE_SHOT_RETRY_S
    from torchx.runner import Backoff

    return _get_runner(backoff=Backoff(deadline=deadline))


def _follow_retry_s() -> float | None:
    """The seconds :data:`FOLLOW_RETRY_ENV` gives (None: not set); a bad value is a CliError."""
    import math
    import os

    text = os.environ.get(FOLLOW_RETRY_ENV, "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise CliError(
            f"{FOLLOW_RETRY_ENV}={text!r}: give the seconds to keep retrying a scheduler "
            "that cannot be reached while following an app, a number > 0 (default 60)"
        )
    return seconds


def cli_run_defaults() -> dict[str, str]:
    """The ``[cli:run]`` section of ``.torchxconfig`` (``scheduler``, ``component``, ``workspace``)."""
    from torchx.runner.config import get_cli_run_defaults

    return get_cli_run_defaults()


def default_scheduler() -> str:
    """The scheduler of ``[cli:run]``, else ``local``."""
    return cli_run_defaults().get("scheduler") or "local"


def scheduler_cfg(
    runner: Runner, scheduler: str, cfg_strings: list[str] | None
) -> dict[str, CfgVal]:
    """The run options given with ``-cfg`` (each may repeat; a later key wins).

    The Runner puts them over the ``[scheduler]`` section of ``.torchxconfig`` files
    and checks the result against the scheduler's run options. The secrets of both, as
    written, are masked from then on (:func:`torchx.cli.output.secrets_written`): a
    value that does not parse is quoted in the error line.
    """
    from torchx.cli.output import remember_secrets, secrets_written
    from torchx.runner.config import load_layers

    written = [
        f"{key}={value}"
        for layer in load_layers()
        for section, values in layer.sections.items()
        if ":" not in section  # a scheduler's section (the others are not run options)
        for key, value in values.items()
    ]
    remember_secrets(secrets_written([*written, *(cfg_strings or [])]))
    if not cfg_strings:
        return {}
    opts = runner.scheduler_run_opts(scheduler)
    cfg: dict[str, CfgVal] = {}
    for text in cfg_strings:
        cfg.update(opts.cfg_from_str(text, strict=True))
    return cfg


def split_handle(text: str) -> Handle:
    """``local://s/app[/role[/0,1]]`` parsed once: the app's handle, with ``role`` and
    ``replica_ids`` (None when not given); see :func:`torchx.specs.handles.parse_target`.

    A malformed one is a CliError saying what is expected.
    """
    from torchx.specs.handles import parse_target

    try:
        return parse_target(text)
    except ValueError as e:  # MalformedAppHandleException: one line, what is expected
        raise CliError(str(e)) from None


def _no_app(handle: str) -> CliError:
    return CliError(f"no app {handle!r}: it does not exist (or was deleted); see 'torchx list'")


def require_status(runner: Runner, handle: str) -> AppStatus:
    status = runner.status(handle)
    if status is None:
        raise _no_app(handle)
    return status


def require_status_and_envs(runner: Runner, handle: str) -> tuple[AppStatus, list[dict[str, str]]]:
    """The app's status and its replicas' envs from one question to its scheduler (see
    ``Runner.status_and_envs``): what ``torchx status`` masks secrets with."""
    both = runner.status_and_envs(handle)
    if both is None:
        raise _no_app(handle)
    return both


@contextlib.contextmanager
def following(handle: str) -> Iterator[None]:
    """Around a command that follows an app: credentials the backend refuses on the way
    make the app's state unknown (exit 4, one line), never a failed app."""
    from torchx.schedulers.contract.errors import AuthenticationError

    try:
        yield
    except AuthenticationError as e:
        from torchx.cli.errors import StateUnknownError

        raise StateUnknownError(
            f"{e}; the state of {handle} is unknown (it was not stopped): once the "
            f"credentials are accepted again, follow it with 'torchx status {handle}'"
        ) from None
