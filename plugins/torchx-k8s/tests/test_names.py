"""App ids read back what they wrote; every name made fits Kubernetes' rules."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from torchx_k8s.names import (
    FLAVOURS,
    JOBSET,
    OBJECT_NAME_MAX,
    VOLCANO,
    AppRef,
    InvalidK8sAppIdError,
    format_app_id,
    jobset_host_name,
    object_name,
    parse_app_id,
    task_name,
    volcano_pod_name,
)

from torchx.specs import parse_app_handle

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
labels_st = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)
contexts = st.text(min_size=1, max_size=40).filter(lambda s: s.strip() == s and s)


@given(labels_st, labels_st, st.sampled_from(FLAVOURS), st.none() | contexts)
def test_app_ids_read_back_what_they_wrote(
    ns: str, name: str, flavour: str, ctx: str | None
) -> None:
    ref = AppRef(ns, name, flavour, ctx)
    app_id = format_app_id(ref)
    assert parse_app_id(app_id) == ref
    # a handle carries it: no '/' and no whitespace in the id
    handle = parse_app_handle(f"kubernetes://session/{app_id}")
    assert handle.app_id == app_id


def test_upstream_handles_name_a_volcano_job_of_the_current_context() -> None:
    handle = parse_app_handle("kubernetes://torchx_user/team-a:trainer-x1")
    assert parse_app_id(handle.app_id) == AppRef("team-a", "trainer-x1", VOLCANO, None)


@pytest.mark.parametrize(
    "bad",
    [
        "trainer",
        "a:b:c",
        "A:b",
        "ns:",
        ":name",
        "ns:name:jobset:x",
        "ns:na_me",
        "ns:n@a b",
        "ns:n@",
    ],
)
def test_malformed_app_ids_are_one_line(bad: str) -> None:
    with pytest.raises(InvalidK8sAppIdError) as e:
        parse_app_id(bad)
    assert "\n" not in str(e.value) and repr(bad) in str(e.value)
    assert isinstance(e.value, ValueError)


@given(st.text(max_size=120))
def test_object_names_are_short_dns_labels_starting_with_a_letter(app_name: str) -> None:
    name = object_name(app_name)
    assert len(name) <= OBJECT_NAME_MAX and DNS_LABEL.fullmatch(name) and name[0].isalpha()


def test_object_names_are_unique() -> None:
    assert len({object_name("trainer") for _ in range(200)}) == 200


@given(st.text(min_size=1, max_size=80), st.integers(0, 100_000), st.text(max_size=80))
def test_every_name_made_from_a_replica_is_a_dns_label(role: str, k: int, app: str) -> None:
    name = object_name(app)
    for made in (
        task_name(name, role, k),
        task_name(name, role, k, JOBSET),
        volcano_pod_name(name, role, k),
        jobset_host_name(name, role, k),
    ):
        assert len(made) <= 63 and DNS_LABEL.fullmatch(made), made


@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=70), st.integers(0, 300)), min_size=2, unique=True
    ),
    st.sampled_from(FLAVOURS),
)
def test_distinct_replicas_get_distinct_tasks(
    replicas: list[tuple[str, int]], flavour: str
) -> None:
    name = object_name("app")
    # roles whose '-' joins with the index coincide are refused by make_request
    joins = {f"{r}-{k}" for r, k in replicas}
    tasks = {task_name(name, r, k, flavour) for r, k in replicas}
    assert len(tasks) == len(joins)
