"""What the ``torchx`` command exits with, and the error a command raises for a user mistake.

Exit statuses (``torchx --help`` lists them too):

* :data:`EXIT_OK` (0): success; a waited-on app SUCCEEDED.
* :data:`EXIT_APP_FAILED` (1): a waited-on app did not succeed, or the scheduler
  refused or could not do what was asked (a ``SchedulerError``).
* :data:`EXIT_USAGE` (2): bad arguments or input the user can fix (a ``SpecError``,
  :class:`CliError`, a file that cannot be read), as argparse uses.
* :data:`EXIT_PLUGIN_FAILED` (3): an unexpected exception: a bug, or a case a plugin
  (or torchx) does not handle. One line names who raised it; ``--log_level DEBUG``
  (or ``TORCHX_DEBUG=1``) shows the traceback.
* :data:`EXIT_UNKNOWN` (4): the scheduler's backend could not be asked (down, throttled,
  timing out: a ``TransientSchedulerError``, or retries that ran out), so the app's
  state is unknown: ``run --wait`` gave up waiting, ``status``/``log`` could not say.
  The app did not fail for it; asking again later may answer.
* :data:`EXIT_INTERRUPTED` (130): Ctrl-C (an app launched keeps running).

A plugin's command reports a user mistake by raising :class:`CliError` (or a
``torchx.specs.errors.SpecError``) with a one-line message; :func:`is_outage` tells an
error that exits :data:`EXIT_UNKNOWN`. This module imports nothing, so a command can
import it at no cost.
"""

from __future__ import annotations

__all__ = [
    "EXIT_APP_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PLUGIN_FAILED",
    "EXIT_UNKNOWN",
    "EXIT_USAGE",
    "CliError",
    "StateUnknownError",
    "is_outage",
]

#: Success (a waited-on app SUCCEEDED).
EXIT_OK = 0
#: A waited-on app did not succeed, or the scheduler refused the request.
EXIT_APP_FAILED = 1
#: Usage and input errors, as argparse uses.
EXIT_USAGE = 2
#: An unexpected exception of a plugin (or of torchx): see the traceback with debug logging.
EXIT_PLUGIN_FAILED = 3
#: The scheduler could not be asked (an outage): the app's state is unknown, not failed.
EXIT_UNKNOWN = 4
#: Interrupted (Ctrl-C).
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """A user error the CLI reports as one line (exit :data:`EXIT_USAGE`)."""


class StateUnknownError(Exception):
    """The app's state could not be learned while following it (exit :data:`EXIT_UNKNOWN`).

    A backend that refuses the credentials in the middle of ``run --wait`` or ``log -t``
    is this: the app did not fail for it, it runs on.
    """


def is_outage(e: BaseException) -> bool:
    """Whether ``e`` says the backend could not be asked (exit :data:`EXIT_UNKNOWN`): a
    transient error, the Runner's retries that ran out, or :class:`StateUnknownError`.

    Told apart by type: ``RetriesExhaustedError`` is looked up where the Runner keeps it
    (only a Runner can have raised it, so no module is imported here for it). The one
    test of the command's error line and of a log that could not be read.
    """
    import sys

    from torchx.schedulers.contract.errors import TransientSchedulerError

    if isinstance(e, TransientSchedulerError | StateUnknownError):
        return True
    retry = sys.modules.get("torchx.schedulers.helpers.retry")
    exhausted = getattr(retry, "RetriesExhaustedError", None)
    return isinstance(exhausted, type) and isinstance(e, exhausted)
