"""The engine's log frames are cut out of blocks however the network splits them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from torchx_docker.logs import demux


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


def test_a_frame_cut_by_the_end_is_dropped() -> None:
    sent = _frame(1, b"whole\n") + _frame(2, b"cut short")[:-3]
    reads = iter([sent])
    assert list(demux(lambda n: next(reads, b""))) == [b"whole\n"]
