"""The README's ``torchx ui`` commands, read from the README and run as shown.

Each serves, prints its URL with a token, answers with that token; ``--open`` hands the
URL to the browser that ``BROWSER`` names (here a script that passes it back through a
FIFO, so the test waits on the hand-over itself). Each is stopped with SIGTERM.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

README = Path(__file__).resolve().parent.parent / "README.md"
TORCHX = str(Path(sys.executable).parent / "torchx")


def _commands() -> list[list[str]]:
    """The ``torchx ui`` lines of the README's first sh block that need no cluster."""
    block = re.search(r"```sh\n(.*?)```", README.read_text(), flags=re.S)
    assert block, "no sh block in the README"
    out = []
    for line in block.group(1).splitlines():
        if line.startswith("torchx ui") and "needs a" not in line:
            out.append(shlex.split(line.split("  #")[0]))
    return out


def _read_fifo(path: Path, into: list[str]) -> None:
    with path.open() as f:
        into.append(f.read())


def test_the_readmes_commands_serve_the_page(tmp_path: Path) -> None:
    commands = _commands()
    assert [c[1:] for c in commands] == [["ui", "--help"], ["ui"], ["ui", "-s", "local", "--open"]]
    fifo = tmp_path / "browser.fifo"
    os.mkfifo(fifo)
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {shlex.quote(str(fifo))}\n')
    browser.chmod(0o755)
    env = {**os.environ, "BROWSER": str(browser)}
    for words in commands:
        argv = [TORCHX, *words[1:]]
        if "--help" in words:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
            assert proc.returncode == 0 and "--open" in proc.stdout, proc.stderr
            continue
        opened: list[str] = []
        reader = threading.Thread(target=_read_fifo, args=(fifo, opened), daemon=True)
        if "--open" in words:
            reader.start()
        proc2 = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        try:
            assert proc2.stdout is not None
            url = proc2.stdout.readline().strip()
            parts = urlsplit(url)
            (token,) = parse_qs(parts.query)["token"]
            conn = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=30)
            conn.request("GET", "/api/apps", headers={"X-TorchX-Token": token})
            resp = conn.getresponse()
            assert resp.status == 200
            doc = json.loads(resp.read())
            conn.close()
            assert [f["scheduler"] for f in doc["data"]["schedulers"]] == ["local"]
            if "--open" in words:
                reader.join(30)
                assert opened == [url], "the browser was not handed the URL"
        finally:
            proc2.send_signal(signal.SIGTERM)
            assert proc2.wait(30) == 0
