"""The errors of the Scheduler contract, in a module cheap enough for the CLI to import.

A scheduler raises :class:`SchedulerError` when the backend refused or failed what was
asked (a submit rejected, a queue that does not exist), with a one-line message saying
what and why. :class:`TransientSchedulerError` is the subclass for failures that may go
away when retried (a timeout, throttling, a 5xx answer): the Runner retries those with
backoff and never reports an app as FAILED because of one.

How a plugin maps its SDK's errors, in one place: wrap each call into the SDK in one
helper that turns the SDK's exceptions into these, so that every method of the
scheduler reports failures the same way::

    from contextlib import contextmanager

    from torchx.schedulers.errors import SchedulerError, TransientSchedulerError

    @contextmanager
    def _backend_errors(what: str):
        try:
            yield
        except (sdk.Throttled, sdk.Timeout, ConnectionError) as e:
            raise TransientSchedulerError(f"{what}: {e} (retried)") from e
        except sdk.HTTPError as e:
            if e.status >= 500:
                raise TransientSchedulerError(f"{what}: backend answered {e.status}") from e
            raise SchedulerError(f"{what}: {e.reason}") from e

    with _backend_errors(f"describe {app_id}"):
        job = client.get_job(app_id)

The ``torchx`` CLI prints a :class:`SchedulerError` (and any ``torchx.specs``
``SpecError``) as one line and exits 1; any *other* exception escaping a plugin is
reported as a bug of that plugin (one line naming it, the traceback with
``--log-level debug``), with exit status 3. ``TimeoutError`` and ``ConnectionError``
are treated as transient too, so an SDK that raises those needs no mapping for them.

This module imports nothing: ``isinstance`` checks against these classes cost nothing.
"""

from __future__ import annotations

__all__ = ["InvalidAppIdError", "SchedulerError", "TransientSchedulerError"]


class SchedulerError(Exception):
    """A scheduler could not do what was asked (the message says what and why)."""


class TransientSchedulerError(SchedulerError):
    """A failure that may go away if retried: timeout, throttling, a 5xx from the backend.

    The Runner retries calls that raise it with backoff, and never reports the app as
    failed because of it.
    """


class InvalidAppIdError(SchedulerError, ValueError):
    """An app id that does not have the form of :func:`torchx.schedulers.ids.validate_app_id`.

    Also a :class:`ValueError`: it is bad input, not a backend failure.
    """
