"""A followed log at speed: batched messages, bounded memory, a merged view, earlier pages."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import pytest
from helpers import Server, make_runner, running_server
from test_app_page import SCRIPT_LINE, talking_app

from torchx.runner import Runner
from torchx.specs import AppDef, Role
from torchx.ui.apps import PAGE_MAX, LogFollower
from torchx.ui.server import BATCH_LINES

LINES = 200_000


def counting_app(lines: int = LINES, replicas: int = 1) -> AppDef:
    """Replicas that print 1..``lines`` as fast as they can (``seq``)."""
    role = Role(
        name="count",
        image=".",
        entrypoint="seq",
        args=["1", str(lines)],
        num_replicas=replicas,
    )
    return AppDef(name="counter", roles=[role])


def query(handle: str, **more: str) -> str:
    return urlencode({"handle": handle, **more})


@pytest.fixture
def server() -> Server:
    with running_server(("local",)) as s:
        yield s  # type: ignore[misc]


def read_log(server: Server, path: str) -> tuple[list[dict[str, object]], dict[str, object]]:
    """Every ``lines`` event of a log stream, and its ``end`` event."""
    batches: list[dict[str, object]] = []
    with server.events(path) as log:
        name, doc = log.next()
        while name == "lines":
            batches.append(doc)
            name, doc = log.next()
    assert name == "end", (name, doc)
    return batches, doc


def test_200k_lines_printed_at_speed_arrive_all_in_order_in_batches(
    server: Server, world: Path
) -> None:
    with make_runner() as runner:
        handle = runner.run(counting_app(), "local")
        try:  # followed while the replica prints
            batches, end = read_log(server, f"/api/log?{query(handle, role='count', replica='0')}")
        finally:
            runner.wait(handle, wait_interval=0.05)
    assert end == {"error": None}
    lines = [line for b in batches for line in b["lines"]]  # type: ignore[attr-defined]
    assert lines == [str(i) for i in range(1, LINES + 1)]
    assert {b["replica"] for b in batches} == {"count/0"}
    # each batch starts where the one before ended (no line skipped), and holds at most
    # BATCH_LINES: far fewer messages than lines
    firsts = [b["first"] for b in batches]
    sizes = [len(b["lines"]) for b in batches]  # type: ignore[arg-type]
    assert firsts == [sum(sizes[:i]) for i in range(len(sizes))]
    assert max(sizes) <= BATCH_LINES
    assert len(batches) <= LINES // 100


def test_a_follower_holds_at_most_its_limit_while_the_reader_waits(world: Path) -> None:
    with make_runner() as runner:
        handle = runner.run(counting_app(), "local")
        runner.wait(handle, wait_interval=0.05)
    wakes: list[int] = []
    fulls: list[int] = []
    follower = LogFollower(
        make_runner,
        handle,
        "count",
        0,
        [],
        lambda: wakes.append(1),
        limit=1000,
        on_full=lambda: fulls.append(1),
    )
    follower.start()
    try:
        # nobody takes: the thread stops reading once 1,000 lines wait, and says so
        assert follower.full.wait(60)
        assert fulls == [1]
        lines, first, done = follower.take()
        assert (len(lines), first, done) == (1000, 0, False)
        got = list(lines)
        while not done:
            lines, first, done = follower.take()
            assert first == len(got)
            got += lines
    finally:
        follower.stop()
    assert got == [str(i) for i in range(1, LINES + 1)]
    assert follower.high_water == 1000  # the most it ever held, of 200,000 lines
    assert len(wakes) < LINES  # woken per batch, not per line
    # told once each time it filled up (the reader then takes at once, not after its
    # gathering pause): never more often than once per ``limit`` lines
    assert 1 <= len(fulls) <= LINES // 1000


def test_the_merged_view_follows_every_replica_each_line_labelled(
    server: Server, world: Path
) -> None:
    go = world / "go"
    with make_runner() as runner:
        handle = runner.run(talking_app(go), "local")
        try:
            with server.events(f"/api/log?{query(handle)}") as log:
                seen: dict[str, list[str]] = {"talk/0": [], "talk/1": []}
                # both replicas' first lines arrive while they run (they wait for `go`)
                while sum(len(v) for v in seen.values()) < 4:
                    name, doc = log.next()
                    assert name == "lines", (name, doc)
                    assert doc["first"] == len(seen[doc["replica"]])
                    seen[doc["replica"]] += doc["lines"]
                go.touch()
                name, doc = log.next()
                while name == "lines":
                    seen[doc["replica"]] += doc["lines"]
                    name, doc = log.next()
            assert name == "end" and doc == {"error": None}
        finally:
            go.touch()
            runner.wait(handle, wait_interval=0.05)
    for k in (0, 1):
        assert seen[f"talk/{k}"] == [f"replica {k} {SCRIPT_LINE}", "key=****", "bye"]


def test_the_merged_view_takes_the_regex_too(server: Server, world: Path) -> None:
    go = world / "go"
    go.touch()
    with make_runner() as runner:
        handle = runner.run(talking_app(go), "local")
        runner.wait(handle, wait_interval=0.05)
    batches, end = read_log(server, f"/api/log?{query(handle, regex='^key')}")
    assert end == {"error": None}
    got = sorted((b["replica"], line) for b in batches for line in b["lines"])  # type: ignore[attr-defined]
    assert got == [("talk/0", "key=****"), ("talk/1", "key=****")]


def finished(runner: Runner, app: AppDef) -> str:
    handle = runner.run(app, "local")
    runner.wait(handle, wait_interval=0.05)
    return handle


def test_an_earlier_page_is_read_from_the_log_by_index(server: Server, world: Path) -> None:
    with make_runner() as runner:
        handle = finished(runner, counting_app())
    path = f"/api/log/page?{query(handle, role='count', replica='0', offset='150000', limit='10')}"
    status, _, body = server.request(path, token=server.token)
    assert status == 200, body
    assert json.loads(body) == {
        "replica": "count/0",
        "first": 150000,
        "lines": [str(i) for i in range(150001, 150011)],
    }
    # a page is at most PAGE_MAX lines; past the end, fewer (none)
    big = f"/api/log/page?{query(handle, role='count', replica='0', offset='0', limit='999999')}"
    assert len(json.loads(server.request(big, token=server.token)[2])["lines"]) == PAGE_MAX
    end = f"/api/log/page?{query(handle, role='count', replica='0', offset=str(LINES))}"
    assert json.loads(server.request(end, token=server.token)[2])["lines"] == []
    # the index counts the lines the regex keeps
    only = query(handle, role="count", replica="0", offset="2", limit="2", regex="^1999..$")
    page = json.loads(server.request(f"/api/log/page?{only}", token=server.token)[2])
    assert page["lines"] == ["199902", "199903"]


@pytest.mark.parametrize(
    ("more", "status"),
    [
        ({}, 400),  # no role: a page is one replica's
        ({"role": "count", "offset": "-1"}, 400),
        ({"role": "count", "limit": "0"}, 400),
        ({"role": "count", "offset": "x"}, 400),
        ({"role": "count", "regex": "("}, 400),
    ],
)
def test_a_bad_page_request_is_refused(
    server: Server, world: Path, more: dict[str, str], status: int
) -> None:
    with make_runner() as runner:
        handle = finished(runner, counting_app(3))
    got, _, body = server.request(f"/api/log/page?{query(handle, **more)}", token=server.token)
    assert got == status, body
    assert server.request(f"/api/log/page?{query(handle, role='count')}")[0] == 401
