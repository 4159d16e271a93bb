"""The engine's log frames are cut out of blocks however the network splits them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from torchx_docker.logs import dechunk, demux


def _frame(stream: int, data: bytes) -> bytes:
    return bytes([stream, 0, 0, 0]) + len(data).to_bytes(4, "big") + data


_LINE = st.binary(max_size=300).map(lambda b: b + b"\n")  # what the engine sends: whole lines


@given(
    st.lists(st.tuples(st.sampled_from([1, 2]), _LINE), max_size=30),
    st.lists(st.integers(min_value=1, max_value=200), min_size=1, max_size=50),
)
def test_every_payload_in_order_whatever_the_cuts(
    frames: list[tuple[int, bytes]], cuts: list[int]
) -> None:
    sent = b"".join(_frame(s, d) for s, d in frames)
    pieces, pos, i = [], 0, 0
    while pos < len(sent):
        size = cuts[i % len(cuts)]
        pieces.append(sent[pos : pos + size])
        pos, i = pos + size, i + 1
    reads = iter(pieces)
    got = b"".join(demux(lambda n: next(reads, b"")))
    assert got == b"".join(d for _, d in frames)


@given(
    st.lists(st.binary(min_size=1, max_size=300), max_size=30),
    st.lists(st.integers(min_value=1, max_value=200), min_size=1, max_size=50),
    st.sampled_from([b"", b";ext=1"]),
    st.booleans(),
)
def test_http_chunks_are_cut_out_whatever_the_network_cuts(
    chunks: list[bytes], cuts: list[int], ext: bytes, upper: bool
) -> None:
    """Each read yields the payload that arrived (never waits for a whole chunk), in order,
    up to the last chunk; what follows it is not read."""
    sizes = [(b"%X" if upper else b"%x") % len(c) for c in chunks]
    sent = b"".join(z + ext + b"\r\n" + c + b"\r\n" for z, c in zip(sizes, chunks, strict=True))
    sent += b"0\r\n\r\n" + b"NOT PART OF IT"
    pieces, pos, i = [], 0, 0
    while pos < len(sent):
        size = cuts[i % len(cuts)]
        pieces.append(sent[pos : pos + size])
        pos, i = pos + size, i + 1
    reads = iter(pieces)
    got = list(dechunk(lambda n: next(reads, b"")))
    assert b"".join(got) == b"".join(chunks)
    assert all(got)  # no empty blocks
    assert len(got) <= len(pieces)  # at most one block per read: many chunks in one


_PIECE = st.binary(min_size=1, max_size=50).filter(lambda b: b"\n" not in b)


@given(
    st.lists(st.lists(_PIECE, min_size=1, max_size=4), max_size=6),
    st.lists(st.lists(_PIECE, min_size=1, max_size=4), max_size=6),
    st.integers(min_value=1, max_value=100),
)
def test_a_line_the_engine_cut_into_pieces_comes_back_whole(
    out: list[list[bytes]], err: list[list[bytes]], cut: int
) -> None:
    """Each piece of a long line comes as a frame with its own timestamp, the other
    stream's frames in between: each line comes back once, whole, with the timestamp of
    its first piece, in the order the lines began."""
    queues = {}
    for stream, lines in ((1, out), (2, err)):
        queues[stream] = [
            (p, i == len(pieces) - 1)
            for pieces in [[b"%d:" % stream + ps[0], *ps[1:]] for ps in lines]
            for i, p in enumerate(pieces)
        ]
    frames, n = [], 0
    while queues[1] or queues[2]:  # one piece of each stream in turn
        for stream in (1, 2):
            if queues[stream]:
                piece, last = queues[stream].pop(0)
                frames.append(_frame(stream, b"T%d " % n + piece + (b"\n" if last else b"")))
                n += 1
    sent = b"".join(frames)
    reads = iter([sent[p : p + cut] for p in range(0, len(sent), cut)])
    whole = b"".join(demux(lambda n: next(reads, b"")))
    assert whole.endswith(b"\n") or not whole
    got = whole.split(b"\n")[:-1]
    assert all(g.startswith(b"T") for g in got)
    texts = [g.split(b" ", 1)[1] for g in got]
    for stream, lines in ((1, out), (2, err)):
        want = [b"%d:" % stream + b"".join(pieces) for pieces in lines]
        assert [t for t in texts if t.startswith(b"%d:" % stream)] == want
    assert len(got) == len(out) + len(err)
    firsts = [int(g.split(b" ", 1)[0][1:]) for g in got]
    assert firsts == sorted(firsts)  # in the order the lines began


def test_a_long_line_in_16k_pieces_is_one_line_with_its_first_timestamp() -> None:
    line = b"x" * 40_000
    pieces = [line[i : i + 16384] for i in range(0, len(line), 16384)]
    sent = b"".join(
        _frame(1, b"2026-01-01T00:00:0%dZ " % k + p + (b"\n" if k == len(pieces) - 1 else b""))
        for k, p in enumerate(pieces)
    )
    reads = iter([sent])
    assert b"".join(demux(lambda n: next(reads, b""))) == b"2026-01-01T00:00:00Z " + line + b"\n"


def test_an_unended_last_line_is_kept() -> None:
    reads = iter([_frame(1, b"T1 no newline at the end")])
    assert list(demux(lambda n: next(reads, b""))) == [b"T1 no newline at the end"]


def test_a_frame_cut_by_the_end_is_dropped() -> None:
    sent = _frame(1, b"whole\n") + _frame(2, b"cut short")[:-3]
    reads = iter([sent])
    assert list(demux(lambda n: next(reads, b""))) == [b"whole\n"]


# --- a followed log that the engine ended early ------------------------------------------


def _log(times: list[float]) -> list[bytes]:
    """Timestamped lines as the engine writes them (fraction digits, trailing zeros cut)."""
    from datetime import UTC, datetime

    out = []
    for i, t in enumerate(times):
        whole = datetime.fromtimestamp(int(t), tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
        frac = f"{round((t - int(t)) * 1e9):09d}".rstrip("0")
        out.append(f"{whole}{'.' + frac if frac else ''}Z line{i}\n".encode())
    return out


@given(
    st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=60),
    st.data(),
)
def test_a_follow_cut_anywhere_is_completed_without_repeats(
    gaps: list[int], data: st.DataObject
) -> None:
    """Whatever prefix the follow showed (cut at any byte), the result is every line once."""
    from torchx_docker.logs import follow_to_the_end

    times, t = [], 1_800_000_000.0
    for g in gaps:  # several lines may share one instant (g == 0)
        t += g * 0.25
        times.append(t)
    whole = b"".join(_log(times))
    cut = data.draw(st.integers(min_value=0, max_value=len(whole)))
    sizes = data.draw(st.lists(st.integers(min_value=1, max_value=40), min_size=1))
    followed, pos, i = [], 0, 0
    while pos < cut:
        followed.append(whole[pos : min(cut, pos + sizes[i % len(sizes)])])
        pos, i = pos + sizes[i % len(sizes)], i + 1
    asked: list[float] = []

    def rest(since: float) -> list[bytes]:
        asked.append(since)
        return [line for line, at in zip(_log(times), times, strict=True) if at >= since]

    got = b"".join(follow_to_the_end(followed, rest))
    assert got == whole
    assert len(asked) == 1


def test_a_failing_second_read_ends_the_log_where_the_follow_did() -> None:
    from torchx_docker.logs import follow_to_the_end

    def rest(since: float) -> list[bytes]:
        raise ConnectionError("engine gone")

    lines = _log([1_800_000_000.0, 1_800_000_001.5])
    assert b"".join(follow_to_the_end(lines, rest)) == b"".join(lines)


def _pieces(data: bytes, sizes: list[int]) -> list[bytes]:
    out, pos, i = [], 0, 0
    while pos < len(data):
        out.append(data[pos : pos + sizes[i % len(sizes)]])
        pos, i = pos + sizes[i % len(sizes)], i + 1
    return out


@given(
    st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=60),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=4),
    st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=10),
)
def test_a_follow_broken_by_outages_anywhere_gives_every_line_once(
    gaps: list[int], breaks: list[int], sizes: list[int]
) -> None:
    """Issue 35: the engine goes away (dockerd restarting) at any byte of the followed
    log, any number of times; each time the log is followed again from the last line's
    time. Whatever was cut where, every line comes out once, in order."""
    from torchx_docker.logs import follow_resuming

    times, t = [], 1_800_000_000.0
    for g in gaps:  # several lines may share one instant (g == 0)
        t += g * 0.25
        times.append(t)
    lines = _log(times)
    whole = b"".join(lines)
    cuts = sorted({b % (len(whole) + 1) for b in breaks})
    follows: list[float | None] = [None]  # the since of each follow (None: the first)
    ends = iter([False] * len(cuts) + [True])  # the engine away at each cut, then stopped

    def from_(since: float | None) -> bytes:
        return b"".join(
            x for x, at in zip(lines, times, strict=True) if since is None or at >= since
        )

    def follow(since: float | None) -> list[bytes]:
        """What a follow from ``since`` shows before the next cut (the engine's log offset
        by the lines before ``since``, cut where the whole log is cut)."""
        shown = from_(since)
        skipped = len(whole) - len(shown)
        n = len(follows) - 1  # the follow's number: it ends at cut n
        end = cuts[n] - skipped if n < len(cuts) else len(shown)
        return _pieces(shown[: max(end, 0)], sizes)

    def reopen(since: float) -> list[bytes]:
        follows.append(since)
        return follow(since)

    got = b"".join(follow_resuming(follow(None), lambda: next(ends), reopen, lambda s: [from_(s)]))
    assert got == whole
    assert len(follows) == len(cuts) + 1  # followed again once per outage


def test_a_follow_that_cannot_be_opened_again_raises_its_error() -> None:
    """The engine never came back: the caller's retries gave up; the log says so (an
    outage, exit "state unknown"), it does not end as if complete."""
    from torchx_docker.logs import follow_resuming

    lines = _log([1_800_000_000.0, 1_800_000_001.0])

    def reopen(since: float) -> list[bytes]:
        raise TimeoutError("the engine did not come back")

    out = follow_resuming(lines[:1], lambda: False, reopen, lambda since: lines)
    assert next(out) == lines[0]
    try:
        next(out)
    except TimeoutError as e:
        assert "did not come back" in str(e)
    else:
        raise AssertionError("the log ended as if complete")


def test_a_broken_connection_asks_whether_the_container_stopped() -> None:
    """A follow that breaks (an OSError while reading) is a follow that ended: once the
    container has stopped, the rest is read again from the last line's time."""
    from torchx_docker.logs import follow_resuming

    lines = _log([1_800_000_000.0, 1_800_000_001.0, 1_800_000_002.0])

    def breaking() -> Iterator[bytes]:
        yield lines[0] + lines[1][:10]
        raise ConnectionResetError("the engine closed the connection")

    asked: list[float] = []

    def rest(since: float) -> list[bytes]:
        asked.append(since)
        return lines

    got = b"".join(follow_resuming(breaking(), lambda: True, lambda s: [], rest))
    assert got == b"".join(lines)
    assert asked == [pytest.approx(1_800_000_000.0 - 1e-6)]


def test_an_engine_that_fails_every_wait_is_not_asked_in_a_tight_loop(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """follow_container: each outage is a warning and a new follow; outages within a
    minute of each other wait longer and longer before the next (an engine that lets a
    follow open but fails its wait would otherwise be asked in a loop)."""
    import time

    import torchx_docker.logs as logs

    from torchx.schedulers.contract.errors import TransientSchedulerError

    lines = _log([1_800_000_000.0, 1_800_000_001.0])
    reads: list[tuple[float | None, bool]] = []

    def engine_log(api: object, name: str, *, follow: bool, since: float | None, **kw: object):  # type: ignore[no-untyped-def]
        reads.append((since, follow))
        return iter(lines if not follow else [])

    class Engine:
        waits = 0

        def wait(self, name: str, **kw: object) -> None:
            self.waits += 1
            if self.waits <= 3:
                raise ConnectionRefusedError("no engine")

    slept: list[float] = []
    monkeypatch.setattr(logs, "engine_log", engine_log)
    monkeypatch.setattr(time, "sleep", slept.append)
    classify = lambda e: TransientSchedulerError(str(e))  # noqa: E731
    out = logs.follow_container(iter([lines[0]]), Engine(), "c", True, True, classify, 5)  # type: ignore[arg-type]
    with caplog.at_level("WARNING", logger="torchx_docker"):
        assert b"".join(out) == b"".join(lines)
    assert len([r for r in caplog.records if "following it again" in r.message]) == 3
    assert slept == [0.25, 0.5]  # the first outage at once, then backing off
    assert [f for _, f in reads] == [True, True, True, False]  # three follows, then the rest
