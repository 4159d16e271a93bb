"""The engine's log frames are cut out of blocks however the network splits them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from torchx_docker.logs import dechunk, demux


def _frame(stream: int, data: bytes) -> bytes:
    return bytes([stream, 0, 0, 0]) + len(data).to_bytes(4, "big") + data


@given(
    st.lists(st.tuples(st.sampled_from([1, 2]), st.binary(max_size=300)), max_size=30),
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
