"""Informers (list + watch into an in-memory store) and work queues, as controllers use.

A controller never acts on an event itself: an event only puts the affected object's key
into a queue, and a worker then reconciles that object from the store. A key is never
worked on by two workers at once, and a key added while it is being worked on is worked
on again afterwards, so the last state always gets reconciled.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from .api import Api, ApiError, Obj

log = logging.getLogger("k8s-standin")


def key_of(obj: Obj) -> str:
    meta = obj["metadata"]
    ns = meta.get("namespace")
    return f"{ns}/{meta['name']}" if ns else str(meta["name"])


class Informer:
    """Keeps every object of one resource (all namespaces) in ``store``, current within a
    watch event's delay; calls each handler with (key, object or None when deleted)."""

    def __init__(self, api: Api, path: str, name: str) -> None:
        self.api = api
        self.path = path
        self.name = name
        self.store: dict[str, Obj] = {}
        # key -> resourceVersion of its deletion: put() of an older copy (a write whose
        # answer came back after the object was deleted) must not bring it back
        self.tombstones: dict[str, int] = {}
        self.lock = threading.Lock()
        self.handlers: list[Callable[[str, Obj | None, Obj | None], None]] = []
        self.synced = threading.Event()

    def on_change(self, handler: Callable[[str, Obj | None, Obj | None], None]) -> None:
        """``handler(key, new, old)``: new is None when deleted."""
        self.handlers.append(handler)

    def get(self, key: str) -> Obj | None:
        with self.lock:
            return self.store.get(key)

    def items(self) -> list[Obj]:
        with self.lock:
            return list(self.store.values())

    def put(self, obj: Obj) -> None:
        """Records an object this process just wrote (before its watch event arrives), so
        a reconcile that runs meanwhile does not make it twice."""
        key = key_of(obj)
        with self.lock:
            old = self.store.get(key)
            if old is not None and _rv(old) > _rv(obj):
                return
            if old is None and self.tombstones.get(key, -1) >= _rv(obj):
                return
            self.store[key] = obj

    def forget(self, key: str) -> None:
        """Drops an object this process found gone (a 404) before its watch event."""
        with self.lock:
            gone = self.store.pop(key, None)
            if gone is not None:
                self.tombstones[key] = _rv(gone)

    def _emit(self, key: str, new: Obj | None, old: Obj | None) -> None:
        for h in self.handlers:
            try:
                h(key, new, old)
            except Exception:
                log.exception("%s handler failed for %s", self.name, key)

    def run(self) -> None:
        backoff = 0.2
        while True:
            try:
                listing = self.api.get(self.path)
                rv = listing["metadata"]["resourceVersion"]
                fresh = {key_of(o): o for o in listing.get("items") or []}
                with self.lock:
                    old_store, self.store = self.store, fresh
                    self.tombstones.clear()
                for k, o in fresh.items():
                    self._emit(k, o, old_store.get(k))
                for k, o in old_store.items():
                    if k not in fresh:
                        self._emit(k, None, o)
                self.synced.set()
                backoff = 0.2
                while True:
                    gone = False
                    for ev in self.api.watch(self.path, rv):
                        typ, o = ev["type"], ev["object"]
                        if typ == "ERROR":
                            gone = True  # 410 Gone: the version is too old; list again
                            break
                        rv = o["metadata"]["resourceVersion"]
                        if typ == "BOOKMARK":
                            continue
                        k = key_of(o)
                        with self.lock:
                            old = self.store.get(k)
                            if typ == "DELETED":
                                self.store.pop(k, None)
                                self.tombstones[k] = _rv(o)
                            elif old is not None and _rv(old) > _rv(o):
                                continue  # this process already wrote (put) a newer one
                            else:
                                self.store[k] = o
                        self._emit(k, None if typ == "DELETED" else o, old)
                    if gone:
                        break
            except (OSError, ApiError, ValueError) as e:
                log.warning("%s: watch failed (%s); listing again in %.1fs", self.name, e, backoff)
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)


def _rv(obj: Obj) -> int:
    try:
        return int(obj["metadata"].get("resourceVersion") or 0)
    except ValueError:
        return 0


class WorkQueue:
    """Keys to reconcile, each at most once at a time, optionally after a delay."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cond = threading.Condition()
        self.ready: list[str] = []
        self.queued: set[str] = set()
        self.active: set[str] = set()
        self.dirty: set[str] = set()
        self.later: list[tuple[float, str]] = []

    def add(self, key: str, delay: float = 0.0) -> None:
        with self.cond:
            if delay > 0:
                heapq.heappush(self.later, (time.monotonic() + delay, key))
                self.cond.notify()
                return
            if key in self.active:
                self.dirty.add(key)
                return
            if key not in self.queued:
                self.queued.add(key)
                self.ready.append(key)
                self.cond.notify()

    def add_all(self, keys: Iterable[str]) -> None:
        for k in keys:
            self.add(k)

    def get(self) -> str:
        with self.cond:
            while True:
                now = time.monotonic()
                while self.later and self.later[0][0] <= now:
                    _, k = heapq.heappop(self.later)
                    if k in self.active:
                        self.dirty.add(k)
                    elif k not in self.queued:
                        self.queued.add(k)
                        self.ready.append(k)
                if self.ready:
                    k = self.ready.pop(0)
                    self.queued.discard(k)
                    self.active.add(k)
                    return k
                wait = self.later[0][0] - now if self.later else None
                self.cond.wait(wait)

    def done(self, key: str) -> None:
        with self.cond:
            self.active.discard(key)
            if key in self.dirty:
                self.dirty.discard(key)
                if key not in self.queued:
                    self.queued.add(key)
                    self.ready.append(key)
                    self.cond.notify()


def run_workers(queue: WorkQueue, sync: Callable[[str], Any], workers: int = 1) -> None:
    """Starts ``workers`` threads calling ``sync(key)``; a failing key is retried with
    backoff (0.5 s doubling to 10 s), as client-go's rate-limited queues do."""
    failures: dict[str, int] = {}
    flock = threading.Lock()

    def loop() -> None:
        while True:
            key = queue.get()
            try:
                sync(key)
                with flock:
                    failures.pop(key, None)
            except Exception as e:
                with flock:
                    n = failures[key] = failures.get(key, 0) + 1
                delay = min(0.5 * 2 ** (n - 1), 10.0)
                if isinstance(e, ApiError | OSError):
                    log.warning("%s %s: %s (again in %.1fs)", queue.name, key, e, delay)
                else:
                    log.exception("%s %s failed (again in %.1fs)", queue.name, key, delay)
                queue.add(key, delay)
            finally:
                queue.done(key)

    for i in range(workers):
        threading.Thread(target=loop, name=f"{queue.name}-{i}", daemon=True).start()


def start_thread(target: Callable[[], Any], name: str) -> None:
    threading.Thread(target=target, name=name, daemon=True).start()
