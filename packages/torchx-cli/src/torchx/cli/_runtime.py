"""What every command needs at run time: a Runner, the config files, parsed handles.

Imported only inside ``run()`` of a command, so ``torchx --help`` never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchx.cli.errors import CliError

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.specs.api import AppDef, AppStatus
    from torchx.specs.options import CfgVal


#: How long a one-shot command (status, describe, list, log, cancel, delete) keeps retrying
#: a scheduler that fails transiently before it says the state is unknown. ``run --wait``
#: and ``wait`` follow an app for a long time and keep the Runner's default budget (60 s
#: per poll), so a blip of the backend does not end them.
ONE_SHOT_RETRY_S = 10.0


def get_runner(one_shot: bool = False) -> Runner:
    """A Runner over every installed scheduler, reading ``.torchxconfig`` files.

    ``one_shot``: the command asks the backend once and answers (see
    :data:`ONE_SHOT_RETRY_S`); a user waiting at a prompt gets one line within seconds
    when the backend is down, instead of a minute of silence.
    """
    from torchx.runner import get_runner as _get_runner

    if not one_shot:
        return _get_runner()
    from torchx.runner import Backoff

    return _get_runner(backoff=Backoff(deadline=ONE_SHOT_RETRY_S))


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
    and checks the result against the scheduler's run options.
    """
    if not cfg_strings:
        return {}
    opts = runner.scheduler_run_opts(scheduler)
    cfg: dict[str, CfgVal] = {}
    for text in cfg_strings:
        cfg.update(opts.cfg_from_str(text, strict=True))
    return cfg


def split_handle(text: str) -> tuple[str, str | None, list[int] | None]:
    """``local://s/app[/role[/0,1]]`` -> (app handle, role or None, replica ids or None).

    No app id contains ``/`` (``torchx.specs.handles`` refuses one where a handle is
    made), so what follows the app id's slash is always a role: every handle reads back
    as the app it names.
    """
    from torchx.specs import MalformedAppHandleException, parse_app_handle

    scheme, _, rest = text.partition("://")
    session, _, path = rest.partition("/")
    app_id, _, narrowing = path.partition("/")
    try:
        parsed = parse_app_handle(f"{scheme}://{session}/{app_id}")
    except MalformedAppHandleException:
        raise CliError(
            f"bad handle {text!r}: expected HANDLE[/ROLE[/N,M]], HANDLE being "
            "{scheduler}://{session_name}/{app_id}, e.g. local://torchx/echo-k3x9q2m7bw/echo/0,1"
        ) from None
    app_handle = f"{parsed.scheduler_backend}://{parsed.session_name}/{parsed.app_id}"
    parts = narrowing.split("/") if narrowing else []
    role = parts[0] if parts and parts[0] else None
    replicas: list[int] | None = None
    if len(parts) > 1 and parts[1]:
        try:
            replicas = [int(x) for x in parts[1].split(",")]
        except ValueError:
            raise CliError(
                f"bad replica ids {parts[1]!r} in {text!r}: expected numbers such as 0 or 0,1"
            ) from None
    if len(parts) > 2:
        raise CliError(
            f"bad handle {text!r}: expected HANDLE[/ROLE[/N,M]], e.g. "
            f"{app_handle}/{role or 'trainer'}/0,1"
        )
    return app_handle, role, replicas


def _no_app(handle: str) -> CliError:
    return CliError(f"no app {handle!r}: it does not exist (or was deleted); see 'torchx list'")


def require_status(runner: Runner, handle: str) -> AppStatus:
    status = runner.status(handle)
    if status is None:
        raise _no_app(handle)
    return status


def require_status_and_app(runner: Runner, handle: str) -> tuple[AppStatus, AppDef]:
    """The app's status and AppDef from one question to its scheduler (see Runner)."""
    both = runner.status_and_app(handle)
    if both is None:
        raise _no_app(handle)
    return both
