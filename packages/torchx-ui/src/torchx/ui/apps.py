"""What the app page asks of one app: its status and AppDef, a replica's log, cancel, delete.

Each function is blocking (the server runs it in a worker thread) and takes the Runner
to ask. The documents are the CLI's: the status is the ``data.status`` of ``torchx
status --json`` (:func:`torchx.cli.output.status_payload`), the AppDef the specs
document ``torchx describe --json`` prints, with secret-looking env values masked as
the CLI masks them (:func:`torchx.cli.output.masked_app`); the same values are masked
in the status's messages and in log lines (:func:`torchx.cli.output.mask_values`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchx.runner import Runner

#: The ``kind`` of the document :func:`describe` gives.
APP_KIND = "UiApp"


class NoSuchApp(LookupError):
    """The scheduler does not know the app (never submitted, or deleted)."""


def describe(runner: Runner, handle: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The app's document (status, AppDef, masked) and its roles' envs (to mask logs with).

    One ``describe`` of the scheduler. Raises :class:`NoSuchApp` for an unknown app.
    """
    from torchx.cli.output import (
        JSON_FORMAT_VERSION,
        mask,
        mask_values,
        masked_app,
        status_payload,
    )
    from torchx.specs.serialize import to_document

    found = runner.status_and_app(handle)
    if found is None:
        raise NoSuchApp(f"no app {handle!r}: it does not exist (or was deleted)")
    status, app = found
    envs = [dict(role.env) for role in app.roles]
    payload = status_payload(handle, status)
    data = {
        "handle": handle,
        "status": payload["status"],
        "duration_s": payload["duration_s"],
        "app": to_document(masked_app(app)),
    }
    doc = {"formatVersion": JSON_FORMAT_VERSION, "kind": APP_KIND, "data": data}
    text = mask(mask_values(json.dumps(doc, default=str), envs))
    masked: dict[str, Any] = json.loads(text)
    return masked, envs


class LogFollower:
    """Follows one replica's log in a thread of its own, gathering lines for a reader.

    ``regex``: only the lines it matches (``re.search``, as ``torchx log --regex``).

    The reader takes what has arrived with :meth:`take` as often as it likes; lines
    beyond ``limit`` not yet taken are dropped, oldest first, and counted, so a
    replica printing faster than the page reads costs bounded memory.
    """

    def __init__(
        self,
        runner_factory: Callable[[], Runner],
        handle: str,
        role: str,
        replica: int,
        envs: list[dict[str, str]],
        on_lines: Callable[[], None],
        limit: int = 10_000,
        regex: str | None = None,
    ) -> None:
        self._runner_factory = runner_factory
        self._args = (handle, role, replica)
        self._regex = regex
        self._envs = envs
        self._on_lines = on_lines
        self._limit = limit
        self._lock = threading.Lock()
        self._lines: list[str] = []
        self._dropped = 0
        self.done = False
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="torchx-ui-log", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Asks the thread to end at its next line (it may be waiting for one)."""
        self._stop.set()

    def take(self) -> tuple[list[str], int, bool]:
        """(the lines gathered since the last call, how many were dropped, whether done)."""
        with self._lock:
            lines, dropped, self._lines, self._dropped = self._lines, self._dropped, [], 0
            return lines, dropped, self.done

    def _run(self) -> None:
        from torchx.cli.output import mask, mask_values
        from torchx.ui.poller import one_line

        handle, role, replica = self._args
        try:
            with self._runner_factory() as runner:
                lines: Iterable[str] = runner.log_lines(
                    handle, role, replica, regex=self._regex, should_tail=True
                )
                for line in lines:
                    if self._stop.is_set():
                        break
                    text = mask(mask_values(line.rstrip("\n"), self._envs))
                    with self._lock:
                        first = not self._lines
                        self._lines.append(text)
                        if len(self._lines) > self._limit:
                            del self._lines[0]
                            self._dropped += 1
                    if first:  # the reader is woken once per batch, not once per line
                        self._on_lines()
        except Exception as e:  # shown on the page, never raised in the server
            self.error = mask(one_line(e))
        finally:
            with self._lock:
                self.done = True
            self._on_lines()


def cancel(runner: Runner, handle: str) -> None:
    """Asks the scheduler to stop the app (nothing for one that has ended)."""
    runner.cancel(handle)


def delete(runner: Runner, handle: str) -> None:
    """Removes the app and its records. A running app is the scheduler's choice (the local
    scheduler refuses it: cancel it first); the refusal is the error shown."""
    runner.delete(handle)
