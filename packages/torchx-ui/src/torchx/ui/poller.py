"""What the page shows: the apps of each scheduler, asked with one ``list`` per interval.

One thread per scheduler calls the Runner's ``list`` (never a ``describe`` per app), so
a slow or unreachable scheduler delays nobody else. Its apps become the rows of the
CLI's ``AppList`` record (:func:`torchx.cli.output.app_list_json`, what
``torchx list --json`` prints), so the page and the command cannot drift apart.

A ``list`` that fails keeps the scheduler's last known apps, as they were, and sets its
``error`` (one line, secrets masked as the CLI masks them): an unreachable scheduler
never makes its apps vanish or read FAILED. The next interval asks again.

Each change bumps the snapshot's ``generation`` and calls ``on_change`` (the server
then pushes the new snapshot to every open event stream)::

    poller = Poller([Source("local", {})], interval=1.0, on_change=print)
    poller.start()
    doc = poller.snapshot()   # {"formatVersion": ..., "kind": "UiApps", "data": {...}}
    poller.stop()
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchx.runner import Runner
    from torchx.specs.options import CfgVal

#: The ``kind`` of the document :meth:`Poller.snapshot` gives (and the event stream sends).
SNAPSHOT_KIND = "UiApps"


@dataclass(frozen=True)
class Source:
    """One scheduler to list, with the run options that say where to look (``-cfg``)."""

    scheduler: str
    cfg: Mapping[str, CfgVal] = field(default_factory=dict)


@dataclass
class _Feed:
    """The last known answer of one scheduler."""

    source: Source
    apps: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    checked_at: float | None = None
    listed_at: float | None = None


def one_line(error: BaseException) -> str:
    """An error as one line for the page: its type when it says nothing else.

    >>> one_line(ConnectionError("connection refused\\nat host"))
    'connection refused at host'
    >>> one_line(TimeoutError())
    'TimeoutError'
    """
    text = " ".join(str(error).split())
    return text or type(error).__name__


def default_runner() -> Runner:
    """A Runner over every installed scheduler that asks each backend once per call: the
    next interval is the retry, so an outage shows within an interval, not after a minute
    of retries."""
    from torchx.runner import Backoff, get_runner

    return get_runner(backoff=Backoff(attempts=1))


class Poller:
    """Lists each source every ``interval`` seconds in its own thread (see the module)."""

    def __init__(
        self,
        sources: list[Source],
        interval: float = 1.0,
        on_change: Callable[[], None] | None = None,
        runner_factory: Callable[[], Runner] = default_runner,
    ) -> None:
        self._feeds = [_Feed(source) for source in sources]
        self._interval = interval
        self._on_change = on_change
        self._runner_factory = runner_factory
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._generation = 0

    def start(self) -> None:
        """Starts one daemon thread per scheduler; the first ``list`` runs at once."""
        for feed in self._feeds:
            thread = threading.Thread(
                target=self._poll, args=(feed,), name=f"torchx-ui-{feed.source.scheduler}"
            )
            thread.daemon = True
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 10.0) -> None:
        """Stops the threads (each ends after its ``list`` under way returns)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)

    @property
    def schedulers(self) -> list[str]:
        """The schedulers listed, in the order given."""
        return [feed.source.scheduler for feed in self._feeds]

    @property
    def runner_factory(self) -> Callable[[], Runner]:
        """What makes the Runners asked (the app page asks with the same kind)."""
        return self._runner_factory

    @property
    def generation(self) -> int:
        """How many changes there were: the page compares it to skip a stale document."""
        with self._lock:
            return self._generation

    def snapshot(self) -> dict[str, Any]:
        """The apps of every scheduler as a versioned document (the CLI's formatVersion)."""
        from torchx.cli.output import JSON_FORMAT_VERSION

        with self._lock:
            schedulers = [
                {
                    "scheduler": feed.source.scheduler,
                    "error": feed.error,
                    "checked_at": feed.checked_at,
                    "listed_at": feed.listed_at,
                    "apps": list(feed.apps),
                }
                for feed in self._feeds
            ]
            generation = self._generation
        return {
            "formatVersion": JSON_FORMAT_VERSION,
            "kind": SNAPSHOT_KIND,
            "data": {"generation": generation, "schedulers": schedulers},
        }

    def row_keys(self) -> dict[str, tuple[str, float | None]]:
        """Each listed app's (state, end_time): what says a described app changed."""
        with self._lock:
            return {
                a["handle"]: (a["state"], a["end_time"]) for feed in self._feeds for a in feed.apps
            }

    def _poll(self, feed: _Feed) -> None:
        runner = self._runner_factory()
        try:
            while not self._stop.is_set():
                self._list_once(runner, feed)
                self._stop.wait(self._interval)
        finally:
            runner.close()

    def _list_once(self, runner: Runner, feed: _Feed) -> None:
        from torchx.cli.output import app_list_json, mask

        apps: list[dict[str, Any]] | None = None
        error: str | None = None
        try:
            listed = runner.list(feed.source.scheduler, dict(feed.source.cfg))
            apps = app_list_json(
                (a.app_handle, str(a.state), a.name, a.start_time, a.end_time) for a in listed
            )
        except Exception as e:  # any failure of the scheduler is shown, never raised
            error = mask(one_line(e))
        now = time.time()
        with self._lock:
            before = (feed.apps, feed.error)
            feed.checked_at = now
            if apps is not None:
                feed.apps, feed.listed_at = apps, now
            feed.error = error
            changed = _changed(before, (feed.apps, feed.error))
            if changed:
                self._generation += 1
        if changed and self._on_change is not None:
            self._on_change()


def _changed(
    before: tuple[list[dict[str, Any]], str | None], after: tuple[list[dict[str, Any]], str | None]
) -> bool:
    """Whether the page would show something new: an app's handle, state, name or times, or
    the error. A running app's ``duration_s`` grows on every list; the page counts it
    from ``start_time`` itself, so that alone is no change."""

    def key(state: tuple[list[dict[str, Any]], str | None]) -> object:
        apps, error = state
        return (
            [(a["handle"], a["state"], a["name"], a["start_time"], a["end_time"]) for a in apps],
            error,
        )

    return key(before) != key(after)
