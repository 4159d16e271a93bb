"""Ids of several parts (``namespace:name``) and DNS-1123 labels, torchx.schedulers.helpers.ids.

Property tests: what is joined splits back, what is not an id is refused in one line
naming the form, and every label is valid, deterministic and distinct for distinct
inputs.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchx.schedulers.contract.errors import InvalidAppIdError
from torchx.schedulers.helpers.ids import (
    APP_ID_PART_PATTERN,
    DNS_LABEL_MAX,
    dns_label,
    is_dns_label,
    join_app_id,
    make_app_id,
    split_app_id,
)
from torchx.specs import make_app_handle, parse_app_handle

# -- ids of several parts -----------------------------------------------------------------

parts = st.from_regex(APP_ID_PART_PATTERN, fullmatch=True)
forms = st.sampled_from(["namespace:name", "queue:job-id", "project:location:job"])


@given(forms, st.data())
def test_joined_parts_split_back_and_ride_in_a_handle(form: str, data: st.DataObject) -> None:
    given_parts = tuple(data.draw(parts) for _ in form.split(":"))
    app_id = join_app_id(*given_parts, form=form)
    assert split_app_id(app_id, form=form) == given_parts
    handle = make_app_handle("k8s", "default", app_id)
    assert split_app_id(parse_app_handle(handle).app_id, form=form) == given_parts


@given(st.text(max_size=40))
def test_split_refuses_in_one_line_what_join_cannot_make(text: str) -> None:
    try:
        namespace, name = split_app_id(text)
    except InvalidAppIdError as e:
        message = str(e)
        assert "\n" not in message
        assert message.startswith(f"invalid app id {text!r}: expected namespace:name")
        assert message.endswith("e.g. 'my-namespace:my-name'")
    else:
        assert join_app_id(namespace, name) == text


@pytest.mark.parametrize(
    "bad",
    [
        "trainer-x1",  # one part
        "a:b:c",  # three
        ":name",
        "ns:",
        "ns/x:name",  # no '/' (a handle could not carry it)
        "ns:na me",
        "-ns:name",  # starts with a letter or digit
        "ns:" + "n" * 254,
    ],
)
def test_bad_ids_are_refused(bad: str) -> None:
    with pytest.raises(InvalidAppIdError, match=re.escape(f"invalid app id {bad!r}: expected")):
        split_app_id(bad)


def test_join_names_the_bad_part_and_a_scheduler_may_raise_its_own_error() -> None:
    with pytest.raises(InvalidAppIdError) as e:
        join_app_id("gpu queue", "6f1c", form="queue:job-id")
    assert str(e.value) == (
        "invalid queue 'gpu queue' for an app id: expected queue:job-id, each part 1 to 253 "
        "letters, digits, '_', '.', '-' starting with a letter or digit, e.g. "
        "'my-queue:my-job-id'"
    )
    assert isinstance(e.value, ValueError)  # bad input, not a backend failure

    class BatchIdError(InvalidAppIdError):
        pass

    with pytest.raises(BatchIdError):
        split_app_id("nope", form="queue:job-id", error=BatchIdError)


def test_the_form_is_checked() -> None:
    with pytest.raises(ValueError, match="must name two or more parts"):
        split_app_id("a:b", form="name")
    with pytest.raises(ValueError, match="namespace:name has 2 parts, got 3"):
        join_app_id("a", "b", "c")


# -- DNS-1123 labels ----------------------------------------------------------------------

label_parts = st.lists(
    st.one_of(st.text(max_size=80), st.integers(min_value=0, max_value=10_000)),
    min_size=1,
    max_size=4,
)
limits = st.integers(min_value=12, max_value=DNS_LABEL_MAX)


@given(label_parts, limits, st.booleans())
def test_a_label_is_always_valid(given_parts: list[str | int], limit: int, letter: bool) -> None:
    label = dns_label(*given_parts, max_length=limit, letter_first=letter)
    assert is_dns_label(label, limit), label
    assert re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", label) and len(label) <= limit
    if letter:
        assert label[0].isalpha()
    assert dns_label(*given_parts, max_length=limit, letter_first=letter) == label


@given(label_parts, label_parts)
def test_distinct_inputs_get_distinct_labels(a: list[str | int], b: list[str | int]) -> None:
    if "-".join(map(str, a)) != "-".join(map(str, b)):
        assert dns_label(*a) != dns_label(*b)


@given(st.from_regex(r"[a-z0-9]([a-z0-9-]{0,40}[a-z0-9])?", fullmatch=True), st.integers(0, 999))
def test_a_join_that_is_a_label_is_kept_as_it_is(app_id: str, replica: int) -> None:
    assert dns_label(app_id, "worker", replica) == f"{app_id}-worker-{replica}"


def test_long_and_unclean_names_are_cut_and_keep_a_hash() -> None:
    app_id = make_app_id("x" * 80)
    labels = {dns_label(app_id, "trainer", k) for k in range(64)}
    assert len(labels) == 64  # the replica index was cut off: the hash keeps them apart
    assert all(len(label) == DNS_LABEL_MAX for label in labels)
    assert dns_label("My_Trainer", "worker", 0).startswith("my-trainer-worker-0-")
    assert dns_label("a_b") != dns_label("a.b") != dns_label("a-b") == "a-b"
    assert dns_label("7up", letter_first=True).startswith("x7up-")
    with pytest.raises(ValueError, match="max_length must be at least 12"):
        dns_label("x", max_length=11)


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=0, max_value=2**31))
def test_many_cut_names_do_not_collide(seed: int) -> None:
    # 2,000 names of one long app that differ only past the cut: distinct all the same
    stem = f"{seed}-" + "long-app-name-" * 5
    labels = {dns_label(stem, "role", k) for k in range(2_000)}
    assert len(labels) == 2_000


def test_labels_are_the_same_in_another_process() -> None:
    code = (
        "from torchx.schedulers.helpers.ids import dns_label;"
        "print(dns_label('My_Trainer', 'worker', 0), dns_label('x' * 100, 'w', 3))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert other == [dns_label("My_Trainer", "worker", 0), dns_label("x" * 100, "w", 3)]
    assert other[0] == "my-trainer-worker-0-mr9z2ndc1j"  # pinned: names must not move
