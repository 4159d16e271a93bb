"""The quick path's answers through a plugin's quick handler: ``status``, ``log``, ``cancel``.

A plugin may register a quick handler for its scheduler (the contract is
:mod:`torchx.schedulers.helpers.quick`): its scheduler's own status parser, answering with the
plain status record of :mod:`torchx.specs.status`, plus a declaration (``calls``) of
which commands it may answer without the Runner. :func:`answer` asks it only for a
declared command, checks what it gives (a record of known states, each role's env)
and prints it through the full commands' own formatters, so the output is the same
byte for byte. Any doubt declines before anything is printed, and the full command
answers: an undeclared command, a malformed answer, a FAILED app (the full path finds
the failed replica's error), a status whose text holds a secret the full path would
mask, a log the handler does not give, the cancel of a live app.
"""

from __future__ import annotations

from torchx.cli._quick import Decline, print_text

TYPE_CHECKING = False  # typing costs milliseconds; the quick path exists to save them
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from torchx.specs.handles import Handle
    from torchx.specs.status import StatusRecord


def answer(ref: str, command: str, handle: Handle, options: dict[str, Any]) -> Callable[[], int]:
    """``command`` of ``handle`` through the handler ``ref`` names (``module:attr``, the
    registry's reference, already checked); declines a command it does not declare."""
    from torchx.schedulers.helpers.quick import declared_calls

    handler = _load_handler(ref)
    # only what the handler declares it answers without the Runner
    if command not in declared_calls(handler):
        raise Decline(f"{ref} does not declare {command}")
    return _COMMANDS[command](handler, handle, options)


def _load_handler(ref: str) -> Any:
    """The object ``module:attr`` names."""
    import importlib

    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for name in attr.split("."):
        obj = getattr(obj, name)
    return obj


def _checked_status(fields: Any) -> StatusRecord:
    """A handler's status, if it is well formed and not a failed app's; else declines.

    A FAILED app's status is the full path's: it finds the failed replica's error
    (``torchx.runner.failures``) and says where to read more.
    """
    if not _well_formed(fields) or fields["state"] == "FAILED":
        raise Decline("status")
    checked: StatusRecord = fields
    return checked


def _well_formed(fields: Any) -> bool:
    """True if a handler's answer is a status record (with ``envs``) of known states."""
    from torchx.specs.status import STATES

    if (
        not isinstance(fields, dict)
        or fields.get("state") not in STATES
        or type(fields.get("num_restarts")) is not int
        or not isinstance(fields.get("msg"), str)
        or not isinstance(fields.get("ui_url"), (str, type(None)))
        or not isinstance(fields.get("roles"), list)
        or not isinstance(fields.get("envs"), list)
        or not isinstance(fields.get("errors", {}), dict)
    ):
        return False
    for role, replicas in fields["roles"]:
        for rep_id, state, exit_code, host in replicas:
            if (
                not isinstance(role, str)
                or type(rep_id) is not int
                or state not in STATES
                or not isinstance(exit_code, (int, type(None)))
                or not isinstance(host, str)
            ):
                return False
    return True


def _status(handler: Any, handle: Handle, options: dict[str, Any]) -> Callable[[], int]:
    from torchx.specs.status import format_handle_status

    fields = _checked_status(handler.status(handle.app_id))
    text = format_handle_status(handle, fields)
    if not options.get("--show-secrets"):
        from torchx.cli.output import mask_values

        # The full path masks with the AppDef its scheduler gives back, which a handler
        # reads without the spec types' checks: where masking would change what is
        # printed, the full path decides. Otherwise the text is the same either way.
        if mask_values(text, fields["envs"]) != text:
            raise Decline("a secret to mask")
    return lambda: print_text(text)


def _log(handler: Any, handle: Handle, options: dict[str, Any]) -> Callable[[], int]:
    from torchx.cli._quick.standins import OpenedLogs, Roles, log_options
    from torchx.cli.logs import replicas_of, stream

    streams, color = log_options(options)
    app_id = handle.app_id
    fields = _checked_status(handler.status(app_id))
    pairs = replicas_of(Roles(fields["roles"]), handle.role, handle.replica_ids)
    opened = {}
    for r, k in pairs:
        lines = handler.log(app_id, r, k, streams, fields)
        if lines is None:
            raise Decline(f"log of {r}/{k}")
        opened[(r, k)] = lines

    def emit() -> int:
        return stream(OpenedLogs(opened), handle, pairs, color=color).exit_status

    return emit


def _cancel(handler: Any, handle: Handle, options: dict[str, Any]) -> Callable[[], int]:
    """``cancel`` of an app that has ended: nothing to do, as the full command says."""
    fields = _checked_status(handler.status(handle.app_id))
    from torchx.specs.status import ENDED

    if fields["state"] not in ENDED:
        raise Decline("a live app: the scheduler cancels it")
    text = f"{handle} had already ended: {fields['state']}; nothing to cancel\n"
    return lambda: print_text(text)


_COMMANDS = {"status": _status, "log": _log, "cancel": _cancel}
