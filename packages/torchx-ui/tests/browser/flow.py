"""What a person does on the ``torchx ui`` page, in Chromium: one path for every backend.

The local browser test (``browser/test_browser.py``, ``nox -s ui_browser``) and the Slurm
and Docker ones (``integration/``, ``nox -s integration_slurm`` / ``integration_docker``)
start ``torchx ui`` and an app of their scheduler, then take these steps in the page:

* :func:`open_list`: open the printed URL; the page goes live and the token leaves the
  address bar;
* :func:`follow_and_cancel`: see the app appear in the list, running, its replica
  counted (``1/1``); open it (and see a run option it was submitted with in the run
  options table, where the test names one); follow its replica's log and see the
  numbered lines of :func:`ticker` arrive, in order, while it runs; cancel it (asked
  once) and see CANCELLED, the replica too;
* :func:`delete`: delete it (asked once) and be back on the list, where it is gone, or
  kept (CANCELLED) by a scheduler that keeps ended apps (Slurm's accounting).

Every wait is on the page's own state (a DOM condition, :meth:`cdp.Page.wait_until`),
never a sleep. The harness is the docs check's (tools/docs_browser/cdp.py, put on
``PYTHONPATH`` by the sessions that run these tests).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager

from cdp import Browser, Page, find_chromium

from torchx.schedulers.testing.cli import TorchxCli

LOG = "document.getElementById('log').textContent"
SUMMARY = "document.getElementById('app-summary').textContent"


def ticker(text: str) -> str:
    """A shell program printing ``TEXT 1``, ``TEXT 2``, ... five times a second until it
    is stopped (``text`` is single-quoted: it must hold no ``'``).

    >>> ticker("tick")
    "i=0; while :; do i=$((i+1)); echo 'tick' $i; sleep 0.2; done"
    """
    assert "'" not in text, text
    return f"i=0; while :; do i=$((i+1)); echo '{text}' $i; sleep 0.2; done"


@contextmanager
def chromium_page() -> Iterator[Page]:
    """A tab of a headless Chromium of its own (``TORCHX_CHROMIUM``, else Debian's)."""
    chromium = os.environ.get("TORCHX_CHROMIUM") or find_chromium()
    assert chromium, "no Chromium: the nox sessions of the browser tests install Debian's"
    with Browser(chromium) as browser:
        # a dialog the page did not expect (an alert) would block it, and every later wait
        # fail; the page's own confirm() is replaced by follow_and_cancel, and counted
        yield browser.new_page()


def js(value: str) -> str:
    """``value`` as a JavaScript string literal."""
    return json.dumps(value)


def row(handle: str) -> str:
    """The JavaScript expression of the list's row of ``handle`` (``null`` when absent)."""
    return f"document.querySelector('tr[data-handle=' + {js(json.dumps(handle))} + ']')"


def open_list(page: Page, url: str) -> None:
    """Opens the URL ``torchx ui`` printed; returns once the page's event stream is live."""
    page.browser.send("Page.navigate", page.session, url=url)
    page.wait_until("document.getElementById('connection').textContent === 'live'")
    # the token left the address bar once its cookie was set
    assert page.evaluate("location.search") == ""


def numbers(log: list[str], prefix: str) -> list[int]:
    """The numbers of the :func:`ticker` lines of ``log`` starting with ``prefix``
    (``role/N TEXT ``); other lines (a scheduler's own warnings) are skipped.

    >>> numbers(["sh/0 tick 1", "sh/0 srun: warning", "sh/0 tick 2"], "sh/0 tick ")
    [1, 2]
    """
    return [int(line[len(prefix) :]) for line in log if line.startswith(prefix)]


def listed_name(cli: TorchxCli, handle: str) -> str:
    """The name ``torchx list --json`` gives the app ``handle`` (a scheduler may list an
    app under a name of its own, Slurm's job name ``sh-x7k2p``): the page's must agree."""
    doc = json.loads(cli("list", "-s", cli.scheduler, "--json").stdout)
    names = [app["name"] for app in doc["data"] if app["handle"] == handle]
    assert len(names) == 1, (handle, doc)
    return str(names[0])


def follow_and_cancel(
    page: Page,
    handle: str,
    *,
    name: str,
    role: str,
    text: str,
    app_name: str | None = None,
    option: tuple[str, str] | None = None,
    timeout: float = 60,
) -> None:
    """The list shows the running app ``handle`` (named ``name`` in the list, ``app_name``
    in its AppDef, as its page's title shows: ``name`` unless given; one replica of
    ``role``, printing :func:`ticker` lines of ``text``; ``option``: a run option's name
    and the text its page shows for it, masked); its page follows the replica's log
    while it prints; cancel, asked once, ends it: CANCELLED on the page. ``timeout`` bounds
    each wait on the scheduler (a batch scheduler may take seconds to start or stop a job)."""
    it = row(handle)
    page.wait_until(f"{it} !== null", timeout)
    assert page.evaluate(f"{it}.querySelector('.name').textContent") == name
    page.wait_until(f"{it}.querySelector('.state').textContent === 'RUNNING'", timeout)
    # the row is on screen: the page named it, the server described it (one replica)
    page.wait_until(f"{it}.querySelector('.replicas').textContent === '1/1'", timeout)

    # its page: the replica, then its log followed while it prints
    page.evaluate(f"{it}.click()")
    page.wait_until("document.querySelectorAll('#replica-rows tr').length === 1", timeout)
    title = page.evaluate("document.getElementById('app-title').textContent")
    assert title == f"{app_name or name}: {handle}", title
    assert page.evaluate(SUMMARY).startswith("RUNNING"), page.evaluate(SUMMARY)
    if option is not None:
        rows = "[...document.querySelectorAll('#run-option-rows tr')]"
        cells = f"{rows}.map((tr) => [...tr.cells].map((td) => td.textContent))"
        page.wait_until(f"{rows}.length > 0", timeout)
        assert list(option) in page.evaluate(cells), page.evaluate(cells)
    page.evaluate("document.querySelector('#replica-rows button').click()")
    prefix = f"{role}/0 {text} "
    count = f"{LOG}.split('\\n').filter((l) => l.startsWith({js(prefix)})).length"
    page.wait_until(f"{count} >= 3", timeout)
    first = numbers(page.evaluate(f"{LOG}.split('\\n')"), prefix)
    # from the replica's first line, none skipped
    assert first == list(range(1, len(first) + 1)), first
    # lines keep arriving while it runs: the log is followed, not read once
    page.wait_until(f"{count} > {len(first)}", timeout)
    later = numbers(page.evaluate(f"{LOG}.split('\\n')"), prefix)
    assert later == list(range(1, len(later) + 1)) and len(later) > len(first), later

    # cancel, asked once
    page.evaluate("window.__asked = []; window.confirm = (q) => { __asked.push(q); return true; }")
    page.evaluate("document.getElementById('cancel').click()")
    page.wait_until(f"{SUMMARY}.startsWith('CANCELLED')", timeout)
    assert page.evaluate("window.__asked") == [f"Cancel {handle}?"]
    states = "[...document.querySelectorAll('#replica-rows .state')].map((td) => td.textContent)"
    assert page.evaluate(states) == ["CANCELLED"]
    page.wait_until("document.getElementById('cancel').hidden")


def delete(page: Page, handle: str, *, kept: bool = False, timeout: float = 60) -> None:
    """On the page of the ended app ``handle`` (after :func:`follow_and_cancel`): delete,
    asked once, goes back to the list, where the app is gone, or still CANCELLED when the
    scheduler keeps ended apps (``kept``)."""
    page.wait_until("!document.getElementById('delete').hidden")
    page.evaluate("document.getElementById('delete').click()")
    page.wait_until("!document.getElementById('list-view').hidden")
    assert page.evaluate("window.__asked") == [f"Cancel {handle}?", f"Delete {handle}?"]
    it = row(handle)
    if kept:
        # listed on the next poll as on the one before (nothing to wait for: the list was
        # there before the delete, and a poll that dropped the row would fail this)
        assert page.evaluate(f"{it}.querySelector('.state').textContent") == "CANCELLED"
    else:
        page.wait_until(f"{it} === null", timeout)
