"""Properties of the aws_batch app id parser and of CloudWatch Logs paging, for any input.

The paging model is AWS's documented ``GetLogEvents``: from a ``nextForwardToken``, the
events after it, at most ``limit`` (any fewer, an empty answer too, with a new token,
while more is to come), and at the end of the stream the very token it was given.
"""

from __future__ import annotations

import string
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from torchx_aws.batch.request import parse_app_id
from torchx_aws.cwlogs import stream_log

from torchx.schedulers.contract.errors import InvalidAppIdError
from torchx.schedulers.helpers.ids import join_app_id

_FIRST = string.ascii_letters + string.digits
_PART = st.builds(
    lambda a, b: a + b,
    st.sampled_from(_FIRST),
    st.text(_FIRST + "_.-", max_size=30),
)


@given(_PART, _PART, _PART, st.integers(0, 10_000))
def test_an_app_id_made_by_the_scheduler_reads_back(
    queue: str, job: str, region: str, nodes: int
) -> None:
    app_id = join_app_id(queue, job, region, str(nodes), form="queue:job-id:region:nodes")
    assert parse_app_id(app_id) == (queue, job, region, nodes)
    assert parse_app_id(f"{queue}:{job}") == (queue, job, None, None)


@given(st.text(max_size=80))
def test_any_text_is_an_app_id_or_one_line_naming_it(text: str) -> None:
    try:
        parsed = parse_app_id(text)
    except InvalidAppIdError as e:
        message = str(e)
        assert "\n" not in message and repr(text) in message
        assert "queue:job-id:region:nodes" in message
        return
    queue, job, region, nodes = parsed
    rest = [] if region is None else [region, str(nodes)]
    assert ":".join([queue, job, *rest]) == text


class _Logs:
    """``GetLogEvents`` of one stream as AWS documents it, its first answers cut as ``cuts``
    says."""

    def __init__(self, lines: list[str], cuts: list[int]) -> None:
        self.lines = lines
        self.cuts = cuts
        self.calls = 0
        self.issued = 0

    def get_log_events(self, **kw: Any) -> dict[str, Any]:
        token = kw.get("nextToken")
        pos = 0 if token is None else int(token.split("/")[1])
        # the first answers are cut as ``cuts`` says (0: empty, with a new token), then full
        size = self.cuts[self.calls] if self.calls < len(self.cuts) else kw["limit"]
        self.calls += 1
        if pos >= len(self.lines) and token is not None:
            return {"events": [], "nextForwardToken": token}  # the end: the same token
        page = self.lines[pos : pos + min(size, kw["limit"])]
        self.issued += 1  # every other answer has a token of its own
        after = f"f/{pos + len(page)}/{self.issued}"
        events = [{"timestamp": 1, "message": line} for line in page]
        return {"events": events, "nextForwardToken": after}


@settings(deadline=None, max_examples=60)
@given(
    st.lists(st.text(string.printable.strip() + " ", max_size=12), max_size=60),
    st.lists(st.integers(0, 7), max_size=8),
    st.integers(1, 10),
)
def test_paging_neither_repeats_nor_loses_a_line(
    lines: list[str], cuts: list[int], limit: int
) -> None:
    logs = _Logs(lines, cuts)
    got = list(stream_log(logs, "/aws/batch/job", "s", limit=limit))
    assert got == [line + "\n" for line in lines]


@settings(deadline=None, max_examples=30)
@given(
    st.lists(st.lists(st.text(string.ascii_letters, max_size=6), max_size=6), max_size=5),
    st.lists(st.integers(0, 4), max_size=6),
)
def test_following_a_growing_stream_neither_repeats_nor_loses_a_line(
    batches: list[list[str]], cuts: list[int]
) -> None:
    # the stream grows by one batch each time the follower has read all there was
    logs = _Logs([], cuts)
    pending = list(batches)

    def is_done() -> bool:
        if pending:
            logs.lines.extend(pending.pop(0))
            return False
        return True

    followed = stream_log(logs, "g", "s", should_tail=True, is_done=is_done, interval=0, limit=3)
    got = [line for line in followed if line]
    assert got == [line + "\n" for batch in batches for line in batch]
