"""The screenshots of ``torchx ui`` in the docs site (docs/ui.md), taken in headless Chromium.

Not a test: run by hand when the page changes, from the ``ui_browser`` session's venv
(torchx-ui installed), with the browser harness of the docs check on the path::

    PYTHONPATH=tools/docs_browser .nox/ui_browser/bin/python \\
        packages/torchx-ui/tests/browser/screenshots.py docs/_static

In a private ``TORCHX_HOME`` it runs three apps from the CLI (one that succeeds, one
that fails, one of two replicas that print until told to stop), starts ``torchx ui``,
and saves ``ui-list.png`` (the list) and ``ui-app.png`` (the running app's page, its
replicas' logs followed merged), 1000x600, through ``Page.captureScreenshot``. Every
wait is on the page's state, never a sleep.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from cdp import Browser, Page, find_chromium

TORCHX = str(Path(sys.executable).parent / "torchx")
WIDTH, HEIGHT = 1000, 600


def run(env: dict[str, str], home: Path, name: str, script: str, replicas: int = 1) -> str:
    """Runs an app of one role from an AppDef file; its handle."""
    doc = {
        "apiVersion": "torchx.specs/v1",
        "kind": "AppDef",
        "spec": {
            "name": name,
            "roles": [
                {
                    "name": "trainer" if replicas > 1 else "main",
                    "image": ".",
                    "entrypoint": "sh",
                    "args": ["-c", script],
                    "num_replicas": replicas,
                }
            ],
        },
    }
    path = home / f"{name}.json"
    path.write_text(json.dumps(doc))
    proc = subprocess.run(
        [TORCHX, "run", str(path)], env=env, cwd=home, capture_output=True, text=True, check=True
    )
    return proc.stdout.strip().splitlines()[-1]


def shoot(page: Page, out: Path) -> None:
    """Saves what the page shows (the viewport) as a PNG."""
    data = page.browser.send("Page.captureScreenshot", page.session, format="png")
    out.write_bytes(base64.b64decode(data["data"]))
    print(f"wrote {out}")


def main(folder: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="torchx-ui-shots-") as tmp:
        home = Path(tmp)
        env = {**os.environ, "TORCHX_HOME": str(home / "state"), "HOME": str(home)}
        go = home / "go"
        done = [
            run(env, home, "preprocess", "echo tokenized 120000 documents"),
            run(env, home, "eval-nightly", "echo 'loading checkpoint' >&2; exit 3"),
        ]
        step = (
            f"i=0; while [ ! -e '{go}' ]; do i=$((i+1)); "
            'echo "step $i loss 2.$((1000 - i)) lr 0.0003 rank $TORCHX_REPLICA_ID"; '
            "sleep 0.1; done"
        )
        handle = run(env, home, "trainer-bert", step, replicas=2)
        for h in done:
            subprocess.run([TORCHX, "log", "-t", h], env=env, cwd=home, capture_output=True)
        ui = subprocess.Popen(
            [TORCHX, "ui", "--interval", "0.5"],
            env=env,
            cwd=home,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert ui.stdout is not None
            url = ui.stdout.readline().strip()
            chromium = os.environ.get("TORCHX_CHROMIUM") or find_chromium()
            assert chromium, "no Chromium: nox -s ui_browser installs Debian's"
            with Browser(chromium) as browser:
                page = browser.new_page()
                browser.send(
                    "Emulation.setDeviceMetricsOverride",
                    page.session,
                    width=WIDTH,
                    height=HEIGHT,
                    deviceScaleFactor=1,
                    mobile=False,
                )
                browser.send("Page.navigate", page.session, url=url)
                page.wait_until(
                    "document.querySelectorAll('#rows tr[data-handle]').length === 3 && "
                    "[...document.querySelectorAll('#rows .state')].map((e) => e.textContent)"
                    ".sort().join() === 'FAILED,RUNNING,SUCCEEDED' && "
                    "[...document.querySelectorAll('#rows .replicas')].map((e) => e.textContent)"
                    ".sort().join() === '0/1,0/1,2/2'"
                )
                shoot(page, folder / "ui-list.png")
                row = f"document.querySelector('tr[data-handle=' + {json.dumps(json.dumps(handle))} + ']')"
                page.evaluate(f"{row}.click()")
                page.wait_until("document.querySelectorAll('#replica-rows tr').length === 2")
                page.evaluate("document.getElementById('follow-all').click()")
                page.wait_until(
                    "document.getElementById('log').textContent.includes('trainer/1 ') && "
                    "document.getElementById('log').textContent.split('\\n').length > 20"
                )
                shoot(page, folder / "ui-app.png")
        finally:
            go.touch()
            ui.send_signal(signal.SIGTERM)
            ui.wait(30)
            subprocess.run([TORCHX, "log", "-t", handle], env=env, cwd=home, capture_output=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
