"""``torchx ui`` in a real browser: Debian's headless Chromium over the DevTools protocol.

Run by ``nox -s ui_browser`` only (``TORCHX_UI_BROWSER=1``), with the harness of the docs
check (tools/docs_browser/cdp.py) on the path. As a person would, on the local scheduler:
start ``torchx ui``, open the printed URL, run an app from the CLI and see it appear, open
it, follow a replica's log while it prints, cancel it from the page (asked once), see
CANCELLED, delete it (asked once) and see it gone from the list: the steps of
``flow.py``, which the Slurm and Docker tests (tests/integration) take too. Of 60 apps
listed, only the rows on screen are counted until the list is scrolled.
The hostile app name and log line stay text (no element, no dialog), and a request
without the token is refused. Every wait is on the page's own state (a DOM condition),
never a sleep.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import flow
from cdp import Page

from torchx.ui.testing import UiProcess

TORCHX = str(Path(sys.executable).parent / "torchx")
HOSTILE_NAME = "<img src=x onerror=alert(1)>"
HOSTILE_LINE = "<script>window.__pwned = 1</script>"


@pytest.fixture
def env(world: Path) -> dict[str, str]:
    """The environment of this test's own torchx world (conftest: TORCHX_HOME, HOME)."""
    return dict(os.environ)


@pytest.fixture
def ui(env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """``torchx ui`` running; its printed URL."""
    with UiProcess(["--interval", "0.5"], env=env, cwd=tmp_path, command=TORCHX) as server:
        assert server.url.startswith("http://127.0.0.1:"), server.url
        yield server.url


@pytest.fixture
def page() -> Iterator[Page]:
    with flow.chromium_page() as page:
        yield page


def run_hostile_app(env: dict[str, str], tmp_path: Path, *cfg: str) -> str:
    """From the CLI, an AppDef file: a hostile name, a replica printing a numbered hostile
    line (:func:`flow.ticker`) until it is stopped; ``cfg``: -cfg's. Its handle."""
    doc = {
        "apiVersion": "torchx.specs/v1",
        "kind": "AppDef",
        "spec": {
            "name": HOSTILE_NAME,
            "roles": [
                {
                    "name": "talk",
                    "image": ".",
                    "entrypoint": "sh",
                    "args": ["-c", flow.ticker(HOSTILE_LINE)],
                }
            ],
        },
    }
    app = tmp_path / "app.json"
    app.write_text(json.dumps(doc))
    options = [arg for c in cfg for arg in ("-cfg", c)]
    proc = subprocess.run(
        [TORCHX, "run", *options, str(app)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def test_a_person_sees_follows_cancels_and_deletes_an_app(
    ui: str, page: Page, env: dict[str, str], tmp_path: Path
) -> None:
    flow.open_list(page, ui)
    # (an app left running by a failure here is cancelled by conftest's world fixture)
    # a run option holding a secret-looking NAME=value (a directory's name): shown masked
    logs = tmp_path / "logs" / "API_TOKEN=sk-browser-secret"
    handle = run_hostile_app(env, tmp_path, f"log_dir={logs}")
    masked = str(tmp_path / "logs" / "API_TOKEN=****")
    flow.follow_and_cancel(
        page, handle, name=HOSTILE_NAME, role="talk", text=HOSTILE_LINE, option=("log_dir", masked)
    )
    table = page.evaluate("document.getElementById('run-options').textContent")
    assert "sk-browser-secret" not in table
    flow.delete(page, handle)

    # nothing hostile ran or became an element
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("document.scripts.length") == 1
    assert page.evaluate("window.__pwned === undefined")
    page.drain()
    assert not page.errors, [str(e) for e in page.errors]

    # without the token (no cookie, no header) the server refuses, from the page too
    status = page.evaluate("fetch('/api/apps', {credentials: 'omit'}).then((r) => r.status)")
    assert status == 401


def test_the_merged_log_keeps_the_newest_lines_and_loads_earlier_ones(
    ui: str, page: Page, env: dict[str, str], tmp_path: Path
) -> None:
    # two replicas of 6,000 lines each: more than the 5,000 the page keeps
    doc = {
        "apiVersion": "torchx.specs/v1",
        "kind": "AppDef",
        "spec": {
            "name": "counter",
            "roles": [
                {
                    "name": "count",
                    "image": ".",
                    "entrypoint": "seq",
                    "args": ["-f", "n=%g", "1", "6000"],
                    "num_replicas": 2,
                }
            ],
        },
    }
    app = tmp_path / "counter.json"
    app.write_text(json.dumps(doc))
    proc = subprocess.run(
        [TORCHX, "run", str(app)], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    handle = proc.stdout.strip().splitlines()[-1]
    flow.open_list(page, ui)
    page.evaluate(f"location.hash = '#app=' + encodeURIComponent({flow.js(handle)})")
    page.wait_until("document.querySelectorAll('#replica-rows tr').length === 2")
    page.evaluate("document.getElementById('follow-all').click()")
    page.wait_until("document.getElementById('log-status').textContent === 'the log ended'")
    live = page.evaluate("document.getElementById('log').textContent.trimEnd().split('\\n')")
    # at most 5,000 lines kept (whole batches of at most 1,000 dropped), the newest
    assert 4000 <= len(live) <= 5000, len(live)
    for label in ("count/0", "count/1"):
        assert f"{label} n=6000" in live
    assert not page.evaluate("document.getElementById('log-more').hidden")

    def first_n(lines: list[str], label: str) -> int | None:
        found = [int(line.split("n=")[1]) for line in lines if line.startswith(label + " ")]
        return min(found) if found else None

    oldest = {label: first_n(live, label) or 6001 for label in ("count/0", "count/1")}
    assert min(oldest.values()) > 1  # something was dropped
    page.evaluate("document.getElementById('log-more').click()")
    page.wait_until("!document.getElementById('log-earlier').hidden")
    earlier = page.evaluate(
        "document.getElementById('log-earlier').textContent.trimEnd().split('\\n')"
    )
    for label, first in oldest.items():
        mine = [int(line.split("n=")[1]) for line in earlier if line.startswith(label + " ")]
        if first == 1:
            assert mine == []
            continue
        # the lines just before the oldest kept, in order, ending right before it
        assert mine and mine == list(range(mine[0], first)), (label, mine[:3], first)
    page.drain()
    assert not page.errors, [str(e) for e in page.errors]


def test_only_the_rows_on_screen_are_counted_until_scrolled_to(ui: str, page: Page) -> None:
    """The replicas column: the page names the rows on screen, and only they are described;
    a row below the fold has no count until the list is scrolled to it."""
    from torchx.runner import get_runner
    from torchx.specs import AppDef, Role

    app = AppDef(name="short", roles=[Role(name="r", image=".", entrypoint="true")])
    with get_runner() as runner:
        handles = [runner.run(app, "local") for _ in range(60)]
        for handle in handles:
            assert runner.wait(handle, wait_interval=0.05) is not None
    flow.open_list(page, ui)
    page.wait_until("document.querySelectorAll('#rows tr[data-handle]').length === 60")
    first = "document.querySelector('#rows tr[data-handle]')"
    last = "document.querySelector('#rows tr[data-handle]:last-child')"
    page.wait_until(f"{first}.querySelector('.replicas').textContent === '0/1'")
    # below the fold: never named, so never described (no count to wait for)
    assert page.evaluate(f"{last}.getBoundingClientRect().top > window.innerHeight")
    assert page.evaluate(f"{last}.querySelector('.replicas').textContent") == ""
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.wait_until(f"{last}.querySelector('.replicas').textContent === '0/1'")
    assert page.evaluate(f"{first}.querySelector('.replicas').textContent") == "0/1"
