"""What a dry run's answer lacks of the pod sent: the misspelt fields an old server drops."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from torchx_k8s.pruned import dropped_fields

SENT: dict[str, Any] = {
    "metadata": {"name": "p", "labels": {"a": "1"}},
    "spec": {
        "restartPolicy": "Never",
        "hostNetwork": False,
        "containers": [
            {"name": "c", "resources": {"limits": {"memory": "4096Mi"}}, "env": []},
            {"name": "d", "resoures": {"limits": {"cpu": "1"}}},
        ],
        "restartPolicyy": "Never",
    },
}


def test_each_dropped_field_is_named_by_its_path() -> None:
    stored = {
        "metadata": {"name": "p", "labels": {"a": "1"}, "uid": "u"},
        "spec": {
            "restartPolicy": "Never",
            "dnsPolicy": "ClusterFirst",  # a default: added, fine
            "containers": [
                {"name": "c", "resources": {"limits": {"memory": "4Gi"}}},  # rewritten: fine
                {"name": "d"},
            ],
        },
    }
    # hostNetwork: false and env: [] are empty: a server omitting empty values is no drop
    assert dropped_fields(SENT, stored) == ["spec.containers[1].resoures", "spec.restartPolicyy"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=12,
)


@given(json_values)
def test_an_answer_holding_everything_sent_drops_nothing(sent: Any) -> None:
    assert dropped_fields(sent, sent) == []


@given(st.dictionaries(st.text(min_size=1, max_size=3), json_values, min_size=1))
def test_an_empty_answer_drops_every_field_sent_that_asks_for_something(
    sent: dict[str, Any],
) -> None:
    expected = [k for k, v in sent.items() if v not in (None, False, 0, "", [], {})]
    assert dropped_fields(sent, {}) == expected
