"""Benchmarks of ``torchx ui`` (issue 37): the list of 1,000 apps, idle and following logs.

The server runs in a process of its own (``python -c _SERVER``, the real aiohttp server
and poller of ``torchx.ui``); the bench process is its client over HTTP (``http.client``)
and reads the server's CPU time from ``/proc/PID/stat`` (Linux; every thread of the
server process, not the replicas, which are other processes).

Creating 1,000 finished apps of the local scheduler would take minutes of a 2-core
machine, so the 1,000 apps come from a stand-in scheduler: the local scheduler whose
``list`` answers 1,000 finished apps (one ``list`` per interval, as any scheduler). What
is measured is the server's side (the poller, the JSON, the event stream), which is the
same whichever scheduler answers. When Chromium is installed, its time to put the
1,000 rows in the page is in ``ui.first_paint_1000_apps``'s details (``browser_ms``).

Targets (the issue sets none in numbers; these are chosen so that the page feels
instant and costs nothing left open):

* ``ui.first_paint_1000_apps``: the page, its script and style and the first ``apps``
  event with 1,000 rows served within 1,000 ms of the first request (a person waits
  for a page about a second before it feels slow; the issue's live updates have a
  2 s budget);
* ``ui.idle_cpu_1000_apps``: the server uses under 2 % of one core over 10 s while
  idle with 1,000 apps listed every 1 s and one page connected (a tool left open all
  day must not be noticed);
* ``ui.follow_64_replicas_cpu``: the server uses under 25 % of one core over 10 s while
  a page follows the merged log of 64 replicas each printing 100 lines a second
  (6,400 lines/s, well above what a training job logs).
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from harness import Context, Measurement, Skip, case, child_env

_SERVER = """
import json, sys, time
try:
    from torchx.ui.poller import Poller, Source
    from torchx.ui.server import serve_in_thread
except ImportError as e:
    print(json.dumps({"skip": f"not installed ({e})"}), flush=True)
    sys.exit(0)
from torchx.runner import Runner
from torchx.schedulers.contract.api import DescribeAppResponse, ListAppResponse
from torchx.schedulers.local.scheduler import LocalScheduler
from torchx.specs import AppState, ReplicaStatus, RoleStatus

N = int(sys.argv[2])
T0 = time.time() - 86400
APPS = [
    ListAppResponse(app_id=f"bench-{i:04d}", state=AppState.SUCCEEDED, name=f"trainer-{i}",
                    start_time=T0 + i, end_time=T0 + i + 60)
    for i in range(N)
]

class StandIn(LocalScheduler):
    def list(self, cfg=None):
        return list(APPS)

    def describe(self, app_id):  # each app: 4 replicas, ended
        if not app_id.startswith("bench-"):
            return super().describe(app_id)
        reps = [ReplicaStatus(k, AppState.SUCCEEDED, "trainer", "h") for k in range(4)]
        return DescribeAppResponse(app_id=app_id, state=AppState.SUCCEEDED,
                                   roles_statuses=[RoleStatus("trainer", reps)])

def runner():
    return Runner("bench", {"stand_in": lambda s, **k: StandIn(s),
                            "local": lambda s, **k: LocalScheduler(s)})

threaded = serve_in_thread(
    lambda on_change: Poller([Source(sys.argv[1])], 1.0, on_change, runner_factory=runner)
)
s = threaded.server
print(json.dumps({"port": s.port, "token": s.token}), flush=True)
sys.stdin.read()  # until the bench closes it
threaded.stop()
print(json.dumps({"describes": s.counts.describes}), flush=True)
"""


class _Ui:
    """A running server process: requests to it and its CPU seconds so far."""

    def __init__(self, proc: subprocess.Popen[str], port: int, token: str) -> None:
        self.proc, self.port, self.token = proc, port, token
        #: what the server printed as it stopped (its describes count)
        self.final: dict[str, Any] = {}

    def connect(self, path: str, method: str = "GET", body: Any = None) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        conn.request(
            method,
            path,
            body=None if body is None else json.dumps(body),
            headers={"Host": f"127.0.0.1:{self.port}", "X-TorchX-Token": self.token},
        )
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"{path}: {resp.status} {resp.read()!r}")
        return resp

    def get(self, path: str) -> bytes:
        return self.connect(path).read()

    def cpu_s(self) -> float:
        """utime + stime of the server process (all its threads), in seconds."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def _server(ctx: Context, scheduler: str, apps: int, home: str) -> Iterator[_Ui]:
    if not Path("/proc/self/stat").exists():
        raise Skip("needs /proc (Linux) to read the server's CPU time")
    env = child_env(TORCHX_HOME=str(Path(home) / "state"), HOME=home)
    proc = subprocess.Popen(
        [ctx.python, "-c", _SERVER, scheduler, str(apps)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
        cwd=home,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        first = json.loads(proc.stdout.readline() or '{"skip": "the server did not start"}')
        if "skip" in first:
            raise Skip(first["skip"])
        ui = _Ui(proc, first["port"], first["token"])
        yield ui
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    last = proc.stdout.read() if proc.stdout is not None else ""
    if last.strip():
        ui.final = json.loads(last.strip().splitlines()[-1])


def _events(resp: http.client.HTTPResponse) -> Iterator[tuple[str, Any]]:
    """The (name, JSON data) of each server-sent event of ``resp``."""
    name, data = "message", []
    for raw in resp:
        text = raw.decode().rstrip("\n")
        if not text:
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif text.startswith("event: "):
            name = text[7:]
        elif text.startswith("data: "):
            data.append(text[6:])


def _rows(doc: dict[str, Any]) -> int:
    return sum(len(feed["apps"]) for feed in doc["data"]["schedulers"])


def _first_full_event(ui: _Ui, apps: int) -> float:
    """Seconds from the page's first request to an ``apps`` event with ``apps`` rows."""
    t = time.perf_counter()
    for path in ("/", "/static/app.js", "/static/app.css"):
        ui.get(path)
    resp = ui.connect("/api/events")
    try:
        for name, doc in _events(resp):
            if name == "apps" and _rows(doc) == apps:
                return time.perf_counter() - t
    finally:
        resp.close()
    raise RuntimeError("the event stream ended")


@case("ui.first_paint_1000_apps", target="< 1000 ms")
def first_paint_1000_apps(ctx: Context) -> Measurement:
    """The page, its script, its style and the first ``apps`` event with 1,000 rows, median.

    Measured with the server warm (its first list done); ``cold_ms``: the same from the
    server process's start (interpreter, imports, first ``list``). Stand-in scheduler.
    """
    with tempfile.TemporaryDirectory(prefix="torchx-bench-ui-") as home:
        started = time.perf_counter()
        with _server(ctx, "stand_in", 1000, home) as ui:
            _first_full_event(ui, 1000)
            cold_ms = (time.perf_counter() - started) * 1000
            samples = [_first_full_event(ui, 1000) * 1000 for _ in range(max(ctx.repeat // 2, 5))]
            size = len(ui.get("/api/apps"))
            browser = _browser_ms(ui, 1000, 5)
    return Measurement.from_times(
        samples, cold_ms=round(cold_ms, 1), apps_json_bytes=size, **browser
    )


def _browser_ms(ui: _Ui, apps: int, loads: int) -> dict[str, Any]:
    """Headless Chromium's time from navigating to the page to ``apps`` rows in its table
    (``performance.now()`` when the DOM has them: before the paint itself), per load;
    nothing when no Chromium is installed (the harness of tools/docs_browser finds it)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "docs_browser"))
    try:
        from cdp import Browser, find_chromium  # type: ignore[import-not-found]
    finally:
        del sys.path[0]
    chromium = os.environ.get("TORCHX_CHROMIUM") or find_chromium()
    if not chromium:
        return {"browser_ms": "not measured: no Chromium"}
    url = f"http://127.0.0.1:{ui.port}/?token={ui.token}"
    done = (
        f"document.querySelectorAll('#rows tr[data-handle]').length === {apps} && performance.now()"
    )
    times = []
    with Browser(chromium) as browser:
        page = browser.new_page()
        for _ in range(loads):
            sent = browser.send("Page.navigate", page.session, url=url)
            # this navigation's document (not the one before it) has its DOM
            page._wait_event(  # the harness's own wait for a lifecycle event
                "Page.lifecycleEvent",
                time.monotonic() + 30,
                name="DOMContentLoaded",
                frameId=sent["frameId"],
                loaderId=sent.get("loaderId"),
            )
            times.append(round(float(page.wait_until(done)), 1))
    return {"browser_ms": times}


def _cpu_percent(ui: _Ui, seconds: int) -> tuple[float, list[float]]:
    """The server's CPU over ``seconds`` (percent of one core), and per second."""
    per: list[float] = []
    start_cpu, start = ui.cpu_s(), time.monotonic()
    last_cpu, last = start_cpu, start
    for k in range(1, seconds + 1):
        time.sleep(max(start + k - time.monotonic(), 0))  # a measuring window, not a wait
        cpu, now = ui.cpu_s(), time.monotonic()
        per.append(round(100 * (cpu - last_cpu) / (now - last), 2))
        last_cpu, last = cpu, now
    return 100 * (last_cpu - start_cpu) / (last - start), per


def _drain(resp: http.client.HTTPResponse, seen: dict[str, int]) -> None:
    """Reads a stream to its end in a thread: counts events and lines."""
    try:
        for name, doc in _events(resp):
            seen["events"] += 1
            if name == "lines":
                seen["lines"] += len(doc["lines"])
            if name == "end":
                return
    except (OSError, ValueError, AttributeError):
        return  # closed by the bench (http.client then has no file to read: AttributeError)


#: The rows a page names as on screen (a tall window shows about 40).
_SHOWN = 40


@case("ui.idle_cpu_1000_apps", target="< 2 %")
def idle_cpu_1000_apps(ctx: Context) -> Measurement:
    """Server CPU over 10 s, 1,000 apps listed every 1 s, one page connected, nothing changing.

    The page names its first 40 rows as on screen (``POST /api/replicas``, as the page
    does) when the window starts: their describes (once each: the apps have ended) are
    in the window. Percent of one core (utime + stime of the server process); the
    per-second values, the events and the server's describes in the details.
    Stand-in scheduler (each app: 4 replicas).
    """
    with tempfile.TemporaryDirectory(prefix="torchx-bench-ui-") as home:
        with _server(ctx, "stand_in", 1000, home) as ui:
            _first_full_event(ui, 1000)  # the first list is done
            resp = ui.connect("/api/events")
            seen = {"events": 0, "lines": 0}
            reader = threading.Thread(target=_drain, args=(resp, seen), daemon=True)
            reader.start()
            shown = [f"stand_in://bench/bench-{i:04d}" for i in range(999, 999 - _SHOWN, -1)]
            ui.connect("/api/replicas", "POST", {"handles": shown}).read()
            percent, per = _cpu_percent(ui, 10)
            counts = json.loads(ui.connect("/api/replicas", "POST", {"handles": shown}).read())[
                "replicas"
            ]
            resp.close()
        if sorted(set(counts.values())) != ["0/4"] or len(counts) != _SHOWN:
            raise RuntimeError(f"the rows shown were not all counted: {counts}")
    return Measurement(
        value=round(percent, 2),
        unit="%",
        details={
            "per_second": per,
            "events": seen["events"],
            "describes": ui.final.get("describes"),
        },
    )


_PRINTER = "for i in $(seq 1 20); do seq -f 'line %g of a replica' 1 100; sleep 1; done"


def _cancel_and_wait(ctx: Context, home: str, handle: str) -> None:
    """Cancels the app and waits for its supervisor to record the end: ``cancel`` returns
    once it has asked, and a supervisor still writing its records would race the removal
    of the temporary directory."""
    torchx = str(Path(ctx.python).parent / "torchx")
    env = child_env(TORCHX_HOME=str(Path(home) / "state"), HOME=home)
    subprocess.run([torchx, "cancel", handle], env=env, cwd=home, capture_output=True, timeout=60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = subprocess.run(
            [torchx, "status", "--json", handle],
            env=env,
            cwd=home,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if json.loads(out.stdout)["data"]["status"]["state"] in (
            "CANCELLED",
            "FAILED",
            "SUCCEEDED",
        ):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{handle} did not end within 60 s of its cancel")


@case("ui.follow_64_replicas_cpu", target="< 25 %")
def follow_64_replicas_cpu(ctx: Context) -> Measurement:
    """Server CPU over 10 s while a page follows the merged log of 64 replicas.

    One local app of 64 replicas, each printing 100 lines a second for 20 s; the page
    (the bench) reads ``/api/log`` without a role (every replica merged). Measured from
    2 s after the stream opened (the followers started); percent of one core.
    """
    with tempfile.TemporaryDirectory(prefix="torchx-bench-ui-") as home:
        run = subprocess.run(
            [
                str(Path(ctx.python).parent / "torchx"),
                "run",
                "-s",
                "local",
                "utils.sh",
                "--num_replicas",
                "64",
                "--",
                "sh",
                "-c",
                _PRINTER,
            ],
            env=child_env(TORCHX_HOME=str(Path(home) / "state"), HOME=home),
            cwd=home,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if run.returncode != 0:
            raise RuntimeError(f"torchx run: {run.stderr.strip()}")
        handle = run.stdout.strip().splitlines()[-1]
        with _server(ctx, "local", 0, home) as ui:
            resp = ui.connect(f"/api/log?{urlencode({'handle': handle})}")
            seen = {"events": 0, "lines": 0}
            reader = threading.Thread(target=_drain, args=(resp, seen), daemon=True)
            reader.start()
            _cpu_percent(ui, 2)  # the 64 followers start
            lines_before = seen["lines"]
            percent, per = _cpu_percent(ui, 10)
            lines = seen["lines"] - lines_before
            resp.close()
        _cancel_and_wait(ctx, home, handle)
    return Measurement(
        value=round(percent, 2),
        unit="%",
        details={"per_second": per, "lines_in_10s": lines, "events": seen["events"]},
    )


_MIB = 1024 * 1024


def _chromium() -> tuple[Any, str]:
    """The DevTools harness's Browser class (tools/docs_browser/cdp.py) and Chromium's path;
    Skip when no Chromium is installed."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "docs_browser"))
    try:
        from cdp import Browser, find_chromium
    finally:
        del sys.path[0]
    chromium = os.environ.get("TORCHX_CHROMIUM") or find_chromium()
    if not chromium:
        raise Skip("no Chromium (nox -s ui_browser installs Debian's)")
    return Browser, chromium


def _heap(page: Any) -> dict[str, float]:
    """The page's JavaScript heap after a full garbage collection, in MiB, and its DOM nodes."""
    send = page.browser.send
    send("HeapProfiler.collectGarbage", page.session)
    usage = send("Runtime.getHeapUsage", page.session)
    metrics = {
        m["name"]: m["value"] for m in send("Performance.getMetrics", page.session)["metrics"]
    }
    return {
        "used_mib": round(usage["usedSize"] / _MIB, 2),
        "total_mib": round(usage["totalSize"] / _MIB, 2),
        "dom_nodes": metrics["Nodes"],
    }


def _renderers_rss_mib(browser_pid: int) -> float:
    """The anonymous resident memory (``RssAnon``: no shared library or file) of the
    browser's renderer processes, where the page's DOM and its log's text live (outside
    the JS heap), in MiB; Linux ``/proc``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0, list(children.get(browser_pid, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if b"--type=renderer" in cmdline:
            kib = next(
                line.split()[1] for line in status.splitlines() if line.startswith("RssAnon")
            )
            total += int(kib)
    return round(total / 1024, 1)


_LINES = 1_000_000


@contextmanager
def _live_page(ctx: Context, home: str) -> Iterator[tuple[Any, Any]]:
    """``torchx ui``'s server (its own process) and headless Chromium showing its page,
    connected (``live``): (browser, page)."""
    browser_class, chromium = _chromium()
    with _server(ctx, "local", 0, home) as ui, browser_class(chromium, timeout=600) as browser:
        page = browser.new_page()
        browser.send("Performance.enable", page.session)
        # not page.goto: the page's event stream stays open, the network never idles
        url = f"http://127.0.0.1:{ui.port}/?token={ui.token}"
        browser.send("Page.navigate", page.session, url=url)
        page.wait_until("document.getElementById('connection').textContent === 'live'")
        yield browser, page


def _open_app(page: Any, handle: str) -> None:
    """The app's page, its one replica's ``follow`` button shown (not clicked yet)."""
    page.evaluate(f"location.hash = '#app=' + encodeURIComponent({json.dumps(handle)})")
    page.wait_until("document.querySelectorAll('#replica-rows button').length === 1")


def _follow(page: Any) -> None:
    page.evaluate("document.querySelector('#replica-rows button').click()")


@case("ui.page_memory_1m_lines", target="< 16 MiB")
def page_memory_1m_lines(ctx: Context) -> Measurement:
    """The page's JS heap (Chromium, after a full GC) once it followed 1,000,000 lines.

    One local replica prints 1,000,000 lines (``seq``); the page (headless Chromium over
    the DevTools protocol) opens the app, clicks ``follow`` and takes every line through
    the live stream (``/api/log``) to its ``end``; the last line shown is checked. The
    value is ``Runtime.getHeapUsage``'s ``usedSize``. In the details: the heap before
    following, the DOM nodes and the renderer processes' anonymous RSS before and after
    (the log's text lives in the DOM, outside the JS heap), the lines held and the
    page's lines per second.
    """
    _chromium()  # Skip before the million lines are written when there is no Chromium
    with tempfile.TemporaryDirectory(prefix="torchx-bench-ui-") as home:
        env = child_env(TORCHX_HOME=str(Path(home) / "state"), HOME=home)
        torchx = str(Path(ctx.python).parent / "torchx")
        run = subprocess.run(
            [torchx, "run", "-s", "local", "--wait", "utils.sh", "--", "seq", "-f",
             "line %.0f of a replica", "1", str(_LINES)],
            env=env, cwd=home, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if run.returncode != 0:
            raise RuntimeError(f"torchx run: {run.stderr.strip()}")
        handle = run.stdout.strip().splitlines()[0]
        with _live_page(ctx, home) as (browser, page):
            _open_app(page, handle)
            before = _heap(page)
            rss_before = _renderers_rss_mib(browser._proc.pid)
            t = time.perf_counter()
            _follow(page)
            page.wait_until(
                "document.getElementById('log-status').textContent === 'the log ended'",
                timeout=540,
            )
            seconds = time.perf_counter() - t
            shown = page.evaluate(
                "document.getElementById('log').textContent.trimEnd().split('\\n')"
            )
            after = _heap(page)
            rss_after = _renderers_rss_mib(browser._proc.pid)
        if shown[-1] != f"sh/0 line {_LINES} of a replica":
            raise RuntimeError(f"the page's last line is {shown[-1]!r}")
    return Measurement(
        value=after["used_mib"],
        unit="MiB",
        details={
            "before_follow_mib": before["used_mib"],
            "heap_total_mib": after["total_mib"],
            "dom_nodes": [before["dom_nodes"], after["dom_nodes"]],
            "renderer_rss_anon_mib": [rss_before, rss_after],
            "lines_held": len(shown),
            "lines_per_s": round(_LINES / seconds),
        },
    )


#: The replica of ``ui.page_keeps_up_100k_lines_per_s``: 1,000,000 lines at 100,000 a
#: second (1,000 every 10 ms, on schedule from its start), then ``end <epoch seconds>``.
_PACED = """
import sys, time
n, rate, chunk = 1_000_000, 100_000, 1_000
start = time.time()
for k in range(0, n, chunk):
    wait = start + k / rate - time.time()
    if wait > 0:
        time.sleep(wait)
    sys.stdout.write("".join(f"line {i} of a replica\\n" for i in range(k + 1, k + chunk + 1)))
    sys.stdout.flush()
end = time.time()
print(f"end {end} rate {n / (end - start):.0f}", flush=True)
"""


@case("ui.page_keeps_up_100k_lines_per_s", target="< 2 s")
def page_keeps_up_100k_lines_per_s(ctx: Context) -> Measurement:
    """How far behind the page is when a replica printing 100,000 lines a second ends.

    One local replica prints 1,000,000 lines at 100,000 a second (``_PACED``, 10 s); the
    page (headless Chromium) opens the app as soon as it is listed and follows its log
    live. The value is the time from the replica's last line (its own clock, printed in
    that line) to the page showing it (the page's clock, read by the condition that sees
    it, on the same machine): a page that keeps up is behind by no more than the issue's
    2 s for a change to show. In the details: the rate the replica reached (a loaded
    machine may not let it print 100,000 a second: then the case says so and fails), the
    lines the page holds and the renderer's anonymous RSS before and after following.
    """
    with tempfile.TemporaryDirectory(prefix="torchx-bench-ui-") as home:
        env = child_env(TORCHX_HOME=str(Path(home) / "state"), HOME=home)
        torchx = str(Path(ctx.python).parent / "torchx")
        with _live_page(ctx, home) as (browser, page):
            run = subprocess.run(
                [torchx, "run", "-s", "local", "utils.sh", "--", "python3", "-c", _PACED],
                env=env, cwd=home, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            if run.returncode != 0:
                raise RuntimeError(f"torchx run: {run.stderr.strip()}")
            handle = run.stdout.strip().splitlines()[-1]
            _open_app(page, handle)
            rss_before = _renderers_rss_mib(browser._proc.pid)
            _follow(page)
            seen_ms = page.wait_until(
                "(() => { const last = document.getElementById('log').lastChild;"
                " return last !== null && last.textContent.includes('sh/0 end ')"
                " && Date.now(); })()",
                timeout=120,
            )
            shown = page.evaluate(
                "document.getElementById('log').textContent.trimEnd().split('\\n')"
            )
            rss = _renderers_rss_mib(browser._proc.pid)
            _cancel_and_wait(ctx, home, handle)
    _, _, ended, _, rate = shown[-1].split()
    if shown[-2] != f"sh/0 line {_LINES} of a replica":
        raise RuntimeError(f"the line before the end is {shown[-2]!r}")
    if int(rate) < 95_000:
        raise RuntimeError(f"the replica printed {rate} lines a second, not 100,000: too loaded")
    return Measurement(
        value=round(seen_ms / 1000 - float(ended), 3),
        unit="s",
        details={"replica_lines_per_s": int(rate), "lines_held": len(shown),
                 "renderer_rss_anon_mib": [rss_before, rss]},
    )  # fmt: skip
