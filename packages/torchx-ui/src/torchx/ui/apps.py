"""What the app page asks of one app: its status and AppDef, a replica's log, cancel, delete.

Each function is blocking (the server runs it in a worker thread) and takes the Runner
to ask. The documents are the CLI's: the status is the ``data.status`` of ``torchx
status --json`` (:func:`torchx.cli.output.status_payload`), the AppDef the specs
document ``torchx describe --json`` prints, with secret-looking env values masked as
the CLI masks them (:func:`torchx.cli.output.masked_app`); the same values are masked
in the status's messages and in log lines (:func:`torchx.cli.output.mask_values`). The
run options the app was submitted with are the scheduler's, masked when it kept them
(``DescribeAppResponse.run_options``; ``{}`` where it keeps none), as ``torchx
describe`` prints them.
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
    """The app's document (status, AppDef, run options, masked) and its roles' envs (to
    mask logs with).

    One ``describe`` of the scheduler (``Runner.status_app_and_options``). Raises :class:`NoSuchApp` for an unknown app.
    """
    from torchx.cli.output import (
        JSON_FORMAT_VERSION,
        mask,
        mask_values,
        masked_app,
        status_payload,
    )
    from torchx.specs.serialize import to_document

    found = runner.status_app_and_options(handle)
    if found is None:
        raise NoSuchApp(f"no app {handle!r}: it does not exist (or was deleted)")
    status, app, run_options = found
    envs = [dict(role.env) for role in app.roles]
    payload = status_payload(handle, status)
    data = {
        "handle": handle,
        "status": payload["status"],
        "duration_s": payload["duration_s"],
        "app": to_document(masked_app(app)),
        "run_options": run_options,
    }
    doc = {"formatVersion": JSON_FORMAT_VERSION, "kind": APP_KIND, "data": data}
    text = mask(mask_values(json.dumps(doc, default=str), envs))
    masked: dict[str, Any] = json.loads(text)
    return masked, envs


class LogFollower:
    """Follows one replica's log in a thread of its own, gathering lines for a reader.

    ``regex``: only the lines it matches (``re.search``, as ``torchx log --regex``).

    The reader takes what has arrived with :meth:`take` as often as it likes. Once
    ``limit`` lines wait untaken the thread stops reading until the reader takes them:
    memory stays bounded however fast the replica prints, and no line is skipped (the
    log is read from where the scheduler keeps it, a file for the local scheduler, so
    reading later loses nothing; the page falls behind instead). Each line has its
    index in the replica's (filtered) log, counted from 0: the page asks for earlier
    lines by it (:func:`log_page`).

    ``on_lines`` is called (from the thread) when a first line waits untaken, and when
    the thread ends; ``on_full`` when ``limit`` lines wait: a reader that gathers lines
    for a moment before it takes them should take them at once then.
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
        on_full: Callable[[], None] | None = None,
    ) -> None:
        self._runner_factory = runner_factory
        self._args = (handle, role, replica)
        self.label = f"{role}/{replica}"
        self._regex = regex
        self._envs = envs
        self._on_lines = on_lines
        self._on_full = on_full
        self._limit = limit
        self._room = threading.Condition()
        self._lines: list[str] = []
        self._taken = 0  # the index of the next line :meth:`take` gives
        #: the most lines ever held untaken (never more than ``limit``)
        self.high_water = 0
        #: set while the thread waits for the reader to take lines
        self.full = threading.Event()
        self.done = False
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="torchx-ui-log", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Asks the thread to end at its next line (it may be waiting for one)."""
        self._stop.set()
        with self._room:
            self._room.notify_all()

    def take(self) -> tuple[list[str], int, bool]:
        """(the lines gathered since the last call, the index of the first, whether done)."""
        with self._room:
            lines, self._lines = self._lines, []
            first = self._taken
            self._taken += len(lines)
            self._room.notify_all()
            return lines, first, self.done and not self._lines

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
                    with self._room:
                        if len(self._lines) >= self._limit and self._on_full is not None:
                            self._on_full()  # a reader gathering lines takes them now
                        while len(self._lines) >= self._limit and not self._stop.is_set():
                            self.full.set()
                            self._room.wait()
                        self.full.clear()
                        first = not self._lines
                        self._lines.append(text)
                        self.high_water = max(self.high_water, len(self._lines))
                    if first:  # the reader is woken once per batch, not once per line
                        self._on_lines()
        except Exception as e:  # shown on the page, never raised in the server
            self.error = mask(one_line(e))
        finally:
            with self._room:
                self.done = True
            self._on_lines()


#: The most lines one :func:`log_page` answers with.
PAGE_MAX = 5_000


def log_page(
    runner: Runner,
    handle: str,
    role: str,
    replica: int,
    envs: list[dict[str, str]],
    offset: int,
    limit: int,
    regex: str | None = None,
) -> list[str]:
    """Lines ``offset`` to ``offset + limit`` of a replica's (filtered) log, masked.

    The scheduler's ``log_iter`` reads a log from its start (there is no seek), so a
    page costs reading ``offset`` lines first: cheap for a file (the local scheduler),
    slower for a log served over the network. The log is not followed: lines the
    replica has not printed yet are not waited for.
    """
    from itertools import islice

    from torchx.cli.output import mask, mask_values

    lines = runner.log_lines(handle, role, replica, regex=regex, should_tail=False)
    return [
        mask(mask_values(line.rstrip("\n"), envs))
        for line in islice(lines, offset, offset + min(limit, PAGE_MAX))
    ]


def replicas_of(doc: dict[str, Any]) -> list[tuple[str, int]]:
    """Every (role, replica id) of an app's document (:func:`describe`): the replicas its
    status names, else (not yet scheduled) those its AppDef asks for."""
    found = [
        (role["role"], int(r["id"]))
        for role in doc["data"]["status"]["roles"]
        for r in role["replicas"]
    ]
    if found:
        return found
    return [
        (role["name"], k)
        for role in doc["data"]["app"]["spec"]["roles"]
        for k in range(int(role.get("num_replicas", 1)))
    ]


def cancel(runner: Runner, handle: str) -> None:
    """Asks the scheduler to stop the app (nothing for one that has ended)."""
    runner.cancel(handle)


def delete(runner: Runner, handle: str) -> None:
    """Removes the app and its records. A running app is the scheduler's choice (the local
    scheduler refuses it: cancel it first); the refusal is the error shown."""
    runner.delete(handle)
