"""The list's "replicas running/total" column: a ``describe`` only of the rows a page shows.

A scheduler's ``list`` says no more than an app's state, so the counts need one
``describe`` each; with 1,000 apps that must not become 1,000 questions per interval.
So the page says which rows it shows (:meth:`ReplicaCounts.watch`, at most
:data:`WATCH_MAX` handles, forgotten :data:`WATCH_S` seconds after the page last named
them), and only those are described:

* an app that has ended at most once: its counts never change again (kept until the
  list no longer has it);
* a running (or pending) one again when the list says it changed (its state or end
  time), else at most once every ``refresh_s`` seconds while a page shows it;
* in ``workers`` threads of their own (never in the server's event loop), each app
  asked by one thread at a time;
* a describe that fails (or finds no app) gives ``"?"``, asked again after
  ``refresh_s``: the app's row, its state included, is the list's and stays as it was.

Each new count calls ``on_change`` (the server then sends the counts to the pages)::

    counts = ReplicaCounts(poller.runner_factory, rows=poller.row_keys, on_change=print)
    counts.start()
    counts.watch(["local://torchx/trainer-x1"])   # -> {} at first, then "2/4" once described
    counts.stop()
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchx.runner import Runner
    from torchx.specs import AppDef, AppStatus

#: The most handles the pages may have watched at once (a page shows a screenful).
WATCH_MAX = 200
#: Seconds a handle stays watched after a page last named it (the page names its rows
#: again every :data:`WATCH_S` / 3 seconds while it is open).
WATCH_S = 60.0
#: What a count reads when the describe failed or found no app.
UNKNOWN = "?"

#: What a row of the list is compared by: (state, end_time).
RowKey = tuple[str, float | None]


@dataclass
class _Count:
    text: str
    key: RowKey  # the list's row when it was described
    at: float  # time.monotonic() of the describe
    final: bool  # the app had ended: never asked again


def count_text(status: AppStatus, app: AppDef | None = None) -> str:
    """``running/total`` of an app's replicas; the total is what its AppDef asks for when
    the scheduler names fewer replicas (some not placed yet).

    >>> from torchx.specs import AppState, AppStatus, ReplicaStatus, RoleStatus
    >>> reps = [ReplicaStatus(i, AppState.RUNNING if i else AppState.PENDING, "r", "h")
    ...         for i in range(3)]
    >>> count_text(AppStatus(AppState.RUNNING, roles=[RoleStatus("r", reps)]))
    '2/3'
    """
    running = sum(1 for role in status.roles for r in role.replicas if str(r.state) == "RUNNING")
    total = sum(len(role.replicas) for role in status.roles)
    if app is not None:
        total = max(total, sum(role.num_replicas for role in app.roles))
    return f"{running}/{total}"


class ReplicaCounts:
    """The counts of the watched apps (see the module)."""

    def __init__(
        self,
        runner_factory: Callable[[], Runner],
        rows: Callable[[], Mapping[str, RowKey]],
        on_change: Callable[[], None],
        refresh_s: float = 10.0,
        workers: int = 4,
    ) -> None:
        self._runner_factory = runner_factory
        self._rows = rows
        self._on_change = on_change
        self._refresh_s = refresh_s
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="torchx-ui-describe")
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._watched: dict[str, float] = {}  # handle -> when a page last named it
        self._counts: dict[str, _Count] = {}
        self._asking: set[str] = set()
        self._generation = 0
        self._thread = threading.Thread(target=self._plan, name="torchx-ui-counts", daemon=True)
        #: how many describes were asked (for the tests and the benchmark)
        self.describes = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(10)
        self._pool.shutdown(wait=True, cancel_futures=True)

    @property
    def generation(self) -> int:
        """How many counts changed so far: the event streams compare it."""
        with self._lock:
            return self._generation

    def watch(self, handles: Iterable[str]) -> dict[str, str]:
        """A page shows these rows: those of their counts known now (the others are asked for).

        The newest :data:`WATCH_MAX` handles named by any page are kept."""
        now = time.monotonic()
        named = list(handles)
        with self._lock:
            for handle in named:
                self._watched.pop(handle, None)  # re-inserted last: the newest named
                self._watched[handle] = now
            while len(self._watched) > WATCH_MAX:
                del self._watched[next(iter(self._watched))]
            known = {h: self._counts[h].text for h in named if h in self._counts}
        self._wake.set()
        return known

    def listed(self) -> None:
        """The list changed: some watched app may have changed state or gone."""
        self._wake.set()

    def known(self) -> dict[str, str]:
        """The counts of the watched apps known now (what the event streams send)."""
        with self._lock:
            return {h: self._counts[h].text for h in self._watched if h in self._counts}

    def _plan(self) -> None:
        """Asks for what is due, then sleeps until woken or until the next one is due."""
        while not self._stop.is_set():
            self._wake.clear()
            wait = self._ask_due()
            self._wake.wait(wait)

    def _ask_due(self) -> float | None:
        """Starts the due describes; seconds until the next one falls due (None: none will)."""
        rows = self._rows()
        now = time.monotonic()
        due: list[tuple[str, RowKey]] = []
        next_due: float | None = None
        with self._lock:
            for handle in [h for h in self._counts if h not in rows]:
                del self._counts[handle]  # deleted: nothing to keep
            for handle, named in list(self._watched.items()):
                if now - named > WATCH_S:
                    del self._watched[handle]  # no page names it any more
                    continue
                key = rows.get(handle)
                if key is None or handle in self._asking:
                    continue
                have = self._counts.get(handle)
                if have is None or have.key != key:
                    due.append((handle, key))
                elif not have.final:
                    left = have.at + self._refresh_s - now
                    if left <= 0:
                        due.append((handle, key))
                    else:
                        next_due = left if next_due is None else min(next_due, left)
            self._asking.update(h for h, _ in due)
            if self._watched:  # wake to forget the watched handles no page names any more
                oldest = min(self._watched.values()) + WATCH_S - now
                next_due = oldest if next_due is None else min(next_due, oldest)
        for handle, key in due:
            self._pool.submit(self._describe, handle, key)
        return None if next_due is None else max(next_due, 0.05)

    def _describe(self, handle: str, key: RowKey) -> None:
        text, final = UNKNOWN, False
        try:
            with self._runner_factory() as runner:
                with self._lock:
                    self.describes += 1
                found = runner.status_and_app(handle)
            if found is not None:
                status, app = found
                text, final = count_text(status, app), status.state.is_terminal()
        except Exception:  # shown as "?", asked again later; the row itself is the list's
            pass
        with self._lock:
            self._asking.discard(handle)
            before = self._counts.get(handle)
            self._counts[handle] = _Count(text, key, time.monotonic(), final)
            changed = before is None or before.text != text
            if changed:
                self._generation += 1
        if not final:
            self._wake.set()  # its next refresh falls due: the planner must know when
        if changed:
            self._on_change()
