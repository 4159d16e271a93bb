"""A small Chrome DevTools Protocol client: headless Chromium driven over a pipe.

Chromium started with ``--remote-debugging-pipe`` reads protocol messages on its file
descriptor 3 and writes them on 4, each a JSON object ended by a NUL byte: no port, no
websocket library, no browser download (Debian's ``chromium`` is used as installed).
One reader thread takes the browser's messages apart: answers go to whoever waits for
them, events to a queue per page, where waiting for one (a page's load, its network
going idle) is waiting on the queue, never a sleep.

A :class:`Page` records what a reader would see in the browser's console as an error:
an uncaught exception, ``console.error``/``console.assert``, and the browser's own error
entries (a script or stylesheet that failed to load, a blocked request).
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class BrowserError(Exception):
    """The browser answered a command with an error, died, or did not answer in time."""


@dataclass(frozen=True)
class ConsoleError:
    """One error a page's console showed: where it came from and its text."""

    source: str  # "exception", "console.error", "console.assert", or a Log entry's source
    text: str
    url: str = ""

    def __str__(self) -> str:
        where = f" ({self.url})" if self.url else ""
        return f"{self.source}: {self.text}{where}"


def find_chromium() -> str | None:
    """The Chromium to drive: ``TORCHX_CHROMIUM``, else ``chromium`` on PATH (Debian's)."""
    wanted = os.environ.get("TORCHX_CHROMIUM")
    if wanted:
        return wanted if os.access(wanted, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless Chromium process with a throwaway profile; close it (or use ``with``)."""

    def __init__(self, executable: str, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="torchx-chromium-")
        # what Chromium says, for the error when it does not start (its profile folder)
        self._log_path = Path(self._profile.name) / "chromium.log"
        self._log = self._log_path.open("wb")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_pipes() -> None:  # in the child, before exec: its fds 3 and 4
            # out of the way first: either end may itself be 3 or 4
            read_end = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            write_end = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(read_end, 3)  # dup2 leaves the copy inheritable
            os.dup2(write_end, 4)

        args = [
            executable,
            "--headless=new",
            "--remote-debugging-pipe",
            f"--user-data-dir={self._profile.name}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--mute-audio",
            "--no-sandbox",  # root (CI) cannot run Chromium's sandbox
            "about:blank",
        ]
        self._proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            pass_fds=(3, 4),  # kept open in the child (wire_pipes puts the pipes there)
            preexec_fn=wire_pipes,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._answers: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._events: dict[str, queue.Queue[dict[str, Any]]] = {}
        self._closed = threading.Event()
        self._reader = threading.Thread(target=self._read, name="cdp-reader", daemon=True)
        self._reader.start()
        try:
            self.version = self.send("Browser.getVersion")["product"]
        except BrowserError as e:
            said = self._log_path.read_text(errors="replace").strip().splitlines()[-5:]
            self.close()
            raise BrowserError(
                f"{executable} did not start: {e}; it said: {' | '.join(said)}"
            ) from None

    # -- the wire ----------------------------------------------------------------------------

    def _read(self) -> None:
        buffer = b""
        try:
            while chunk := os.read(self._from_browser, 1 << 16):
                buffer += chunk
                *messages, buffer = buffer.split(b"\0")
                for raw in messages:
                    self._dispatch(json.loads(raw))
        finally:
            self._closed.set()
            with self._lock:
                for waiting in self._answers.values():
                    waiting.put({"error": {"message": "the browser closed the connection"}})

    def _dispatch(self, message: dict[str, Any]) -> None:
        with self._lock:
            if "id" in message:
                waiting = self._answers.pop(message["id"], None)
                if waiting is not None:
                    waiting.put(message)
                return
            events = self._events.get(message.get("sessionId", ""))
        if events is not None:
            events.put(message)

    def send(self, method: str, session: str = "", **params: Any) -> dict[str, Any]:
        """Sends one command (to the browser, or to the page of ``session``); its result."""
        call_id = next(self._ids)
        answer: queue.Queue[dict[str, Any]] = queue.Queue()
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        with self._lock:
            if self._closed.is_set():
                raise BrowserError(f"{method}: the browser is gone")
            self._answers[call_id] = answer
        try:
            os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        except OSError as e:  # a browser that exited closed its end
            with self._lock:
                self._answers.pop(call_id, None)
            raise BrowserError(f"{method}: the browser is gone ({e.strerror})") from None
        try:
            reply = answer.get(timeout=self.timeout)
        except queue.Empty:
            raise BrowserError(f"{method}: no answer within {self.timeout:.0f} s") from None
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error'].get('message', reply['error'])}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    # -- pages -------------------------------------------------------------------------------

    def new_page(self) -> Page:
        """A new tab, attached, with the page, runtime and log domains on."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        events: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._events[session] = events
        page = Page(self, target, session, events)
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session)
        self.send("Page.setLifecycleEventsEnabled", session, enabled=True)
        return page

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self.send("Browser.close")
            except BrowserError:
                pass
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        os.close(self._to_browser)
        self._reader.join(timeout=10)
        os.close(self._from_browser)
        self._log.close()
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Page:
    """One tab: navigate, evaluate, and the console errors seen since it opened."""

    browser: Browser
    target: str
    session: str
    events: queue.Queue[dict[str, Any]]
    errors: list[ConsoleError] = field(default_factory=list)

    def _note(self, event: dict[str, Any]) -> None:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text", "")
            self.errors.append(ConsoleError("exception", text, details.get("url", "")))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(
                str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", [])
            )
            self.errors.append(ConsoleError(f"console.{params['type']}", text))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            self.errors.append(ConsoleError(entry["source"], entry["text"], entry.get("url", "")))

    def _wait_event(self, wanted: str, deadline: float, **match: Any) -> dict[str, Any]:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"no {wanted} event within the time given")
            try:
                event = self.events.get(timeout=left)
            except queue.Empty:
                continue
            self._note(event)
            params = event.get("params", {})
            if event.get("method") == wanted and all(params.get(k) == v for k, v in match.items()):
                return event

    def drain(self) -> None:
        """Takes in the events already received (console errors among them)."""
        while True:
            try:
                self._note(self.events.get_nowait())
            except queue.Empty:
                return

    def goto(self, url: str, timeout: float = 30.0) -> None:
        """Opens ``url`` and returns once it has loaded and its network went idle."""
        deadline = time.monotonic() + timeout
        result = self.browser.send("Page.navigate", self.session, url=url)
        if result.get("errorText"):
            raise BrowserError(f"{url}: {result['errorText']}")
        # this navigation's events only (the blank page before it had a load of its own)
        this = {"frameId": result["frameId"], "loaderId": result.get("loaderId")}
        self._wait_event("Page.lifecycleEvent", deadline, name="load", **this)
        self._wait_event("Page.lifecycleEvent", deadline, name="networkIdle", **this)

    def evaluate(self, expression: str, timeout: float = 30.0) -> Any:
        """The value of a JavaScript expression (a promise is awaited); its exception raised."""
        result = self.browser.send(
            "Runtime.evaluate",
            self.session,
            expression=expression,
            awaitPromise=True,
            returnByValue=True,
            timeout=int(timeout * 1000),
        )
        self.drain()
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"evaluating {expression[:60]!r}: {text}")
        return result["result"].get("value")

    def wait_until(self, condition: str, timeout: float = 20.0) -> Any:
        """The value of the JavaScript expression ``condition`` once it is truthy: evaluated
        again on every change of the document (a MutationObserver), not on a timer."""
        value = self.evaluate(
            _WAIT_UNTIL % {"condition": condition, "ms": int(timeout * 1000)},
            timeout=timeout + 5,
        )
        if not value:
            raise BrowserError(f"still false after {timeout:.0f} s: {condition}")
        return value

    def wait_for(self, selector: str, timeout: float = 20.0) -> list[dict[str, str]]:
        """The elements matching a CSS ``selector`` once there is one: each as its text
        and, for a link, its absolute ``href``."""
        try:
            return list(self.wait_until(_GRAB % {"selector": json.dumps(selector)}, timeout))
        except BrowserError:
            raise BrowserError(f"no element matches {selector!r} after {timeout:.0f} s") from None

    def links(self, selector: str) -> list[dict[str, str]]:
        """The elements matching ``selector`` now (text and href each), maybe none."""
        return list(self.evaluate(_GRAB % {"selector": json.dumps(selector)}) or [])

    def text(self, selector: str = "body") -> str:
        value = self.evaluate(
            f"(document.querySelector({json.dumps(selector)}) || {{}}).innerText || ''"
        )
        return str(value)

    def close(self) -> None:
        self.browser.send("Target.closeTarget", targetId=self.target)


_GRAB = """(() => {
  const nodes = [...document.querySelectorAll(%(selector)s)];
  return nodes.length
    ? nodes.map((n) => ({text: (n.innerText || n.textContent || "").trim(), href: n.href || ""}))
    : null;
})()"""

_WAIT_UNTIL = """
new Promise((resolve) => {
  const check = () => { try { return (%(condition)s); } catch (e) { return null; } };
  const now = check();
  if (now) return resolve(now);
  const observer = new MutationObserver(() => {
    const value = check();
    if (value) { observer.disconnect(); clearTimeout(timer); resolve(value); }
  });
  const timer = setTimeout(() => { observer.disconnect(); resolve(null); }, %(ms)d);
  observer.observe(document, {childList: true, subtree: true, characterData: true, attributes: true});
})
"""


def describe(errors: Sequence[ConsoleError]) -> str:
    return "; ".join(str(e) for e in errors) or "none"


__all__ = ["Browser", "BrowserError", "ConsoleError", "Page", "describe", "find_chromium"]


def _main() -> None:  # pragma: no cover - a manual smoke run: python cdp.py URL
    import sys

    chromium = find_chromium()
    if chromium is None:
        raise SystemExit("no chromium")
    with Browser(chromium) as browser:
        page = browser.new_page()
        page.goto(sys.argv[1])
        print(browser.version, repr(page.evaluate("document.title")), describe(page.errors))


if __name__ == "__main__":  # pragma: no cover
    _main()
