"""How a command's failure reaches the user: one line on stderr and an exit status.

:func:`report` turns an exception a command raised into that line. Errors are told
apart by type (``isinstance``), never by name:

* the project's own errors a user can fix (``torchx.specs.errors.SpecError`` and its
  subclasses, :class:`~torchx.cli.errors.CliError`, an ``OSError`` naming a file) print
  one line and exit 2;
* a scheduler that refuses a request or cannot be reached
  (``torchx.schedulers.contract.errors.SchedulerError``), or a wait that timed out, prints one
  line and exits 1, as does a waited-on app that did not succeed;
* any other exception is unexpected: one line names the plugin (or the torchx
  distribution, or the file) it came from and says how to see the traceback, and the
  exit status is 3.

:func:`warnings_as_lines` prints Python warnings the same way, one line each. Exit
statuses are in :mod:`torchx.cli.errors`.
"""

from __future__ import annotations

import sys

from torchx.cli.errors import (
    EXIT_APP_FAILED,
    EXIT_PLUGIN_FAILED,
    EXIT_UNKNOWN,
    EXIT_USAGE,
    CliError,
    is_outage,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType


def report(command: str, e: BaseException) -> int:
    """Prints ``e`` as one line (plus a component's usage, when there is one); the exit status."""
    from torchx.schedulers.contract.errors import SchedulerError
    from torchx.specs.errors import SpecError

    usage = getattr(e, "usage", "")
    if isinstance(e, (SpecError, CliError)) or (isinstance(e, OSError) and e.filename):
        if usage:
            print(usage.rstrip(), file=sys.stderr)
        status = EXIT_USAGE
        message = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
        if isinstance(e, OSError) and e.strerror and e.filename:
            message = f"{e.filename}: {e.strerror}"
    elif is_outage(e):
        status, message = EXIT_UNKNOWN, str(e)
    elif isinstance(e, SchedulerError) or _is_wait_timeout(e):
        status, message = EXIT_APP_FAILED, str(e)
    else:
        status, message = EXIT_PLUGIN_FAILED, _unexpected(e)
    from torchx.cli.output import mask

    print(f"torchx {command}: error: {mask(_one_line(message))}", file=sys.stderr)
    return status


def _is_wait_timeout(e: BaseException) -> bool:
    runner_api = sys.modules.get("torchx.runner.api")  # only a Runner can have raised it
    return runner_api is not None and isinstance(e, runner_api.AppWaitTimeout)


def warnings_as_lines(command: str) -> None:
    """Python warnings print as ``torchx COMMAND: warning: MESSAGE``, one line each.

    Python's own format names the file and line that warned (a path deep in
    site-packages) and repeats its source line: noise to a user of the command, who
    can do nothing with either. The category is named unless it is a plain
    ``UserWarning``. Debugging (``--log_level DEBUG``, ``TORCHX_DEBUG=1``) keeps
    Python's format. ``warnings`` is imported by the interpreter at startup: free.
    """
    import warnings

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: object = None,
        line: str | None = None,
    ) -> None:
        from torchx.cli.output import mask

        kind = "" if category is UserWarning else f"{category.__name__}: "
        try:
            text = mask(_one_line(str(message)))
            sys.stderr.write(f"torchx {command}: warning: {kind}{text}\n")
        except (OSError, ValueError):  # stderr closed: a warning is not worth failing for
            pass

    warnings.showwarning = show


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " ".join(lines) if len(lines) <= 3 else " ".join([*lines[:3], "..."])


def _unexpected(e: BaseException) -> str:
    """One line for an exception nobody expected: what, who raised it, how to see more."""
    what = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    hint = "rerun with --log_level DEBUG (or TORCHX_DEBUG=1) to see the traceback"
    culprit = _culprit(e.__traceback__)
    if culprit is None:
        return f"unexpected {what}; {hint}"
    who, core = culprit
    if core:
        return f"unexpected {what} in {who} (a bug of torchx: please report it); {hint}"
    return f"unexpected {what} from {who}, not caused by your input; {hint}"


def _culprit(tb: TracebackType | None) -> tuple[str, bool] | None:
    """(who raised it, whether it is torchx itself) from the innermost frame we can place.

    A frame belongs to a plugin when its module is in a package that one of the plugin
    registry's entries names (``acme_torchx.scheduler:create_scheduler`` places every
    ``acme_torchx`` module in acme-torchx); frames of the standard library and SDKs
    place nothing, so an SDK's exception inside a plugin names the plugin. Failing
    that, the innermost frame outside the standard library names the file.
    """
    import traceback

    frames = [frame for frame, _ in traceback.walk_tb(tb)]
    if not frames:
        return None
    owners = _package_owners()
    core = {"torchx-specs", "torchx-runner", "torchx-cli"}
    for frame in reversed(frames):
        module = str(frame.f_globals.get("__name__", ""))
        parts = module.split(".")
        for key in (".".join(parts[:2]), parts[0]):
            owner = owners.get(key)
            if owner is not None:
                dist = owner.split(" ")[0]
                label = owner if dist in core else f"the plugin {owner}"
                return f"{label} ({module})", dist in core
        if parts[0] == "torchx":
            return f"torchx ({module})", True
    import sysconfig

    stdlib = sysconfig.get_paths()["stdlib"]
    for frame in reversed(frames):
        filename = frame.f_code.co_filename
        if not filename.startswith(stdlib) and not filename.startswith("<"):
            return f"{filename}:{frame.f_lineno}", False
    return None


def _package_owners() -> dict[str, str]:
    """Package (``acme_torchx``, or ``torchx.schedulers`` in the shared namespace) -> ``"dist version"``."""
    from torchx.specs.plugins import get_registry

    owners: dict[str, str] = {}
    try:
        distributions = get_registry().distributions
    except Exception:
        return owners
    for dist in distributions.values():
        for entry in dist.entries:
            if entry.ref is None:
                continue
            parts = entry.ref.split(":")[0].split(".")
            key = ".".join(parts[:2]) if parts[0] == "torchx" else parts[0]
            owners.setdefault(key, f"{dist.name} {dist.version}".strip())
    return owners
