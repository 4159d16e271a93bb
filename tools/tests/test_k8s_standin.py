"""The k8s stand-in's pure parts, without a server (dev/k8s-standin; its tests against the
real API server and node run in ``nox -s integration_k8s``): quantities, merge patches, a
pod's requests (what MCAD counts) and JobSet's success policy."""

from __future__ import annotations

import sys
from decimal import Decimal
from typing import Any

import pytest
from conftest import REPO
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(REPO / "dev" / "k8s-standin"))

from k8s_standin import jobset, util

UNITS = {"": 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9,
         "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}  # fmt: skip


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(sorted(UNITS)))
def test_a_quantity_is_its_number_times_its_suffix(n: int, suffix: str) -> None:
    assert util.quantity(f"{n}{suffix}") == n * Decimal(UNITS[suffix])


@pytest.mark.parametrize("text", ["", "1x", "Mi", "1.2.3", "--1"])
def test_a_bad_quantity_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        util.quantity(text)


def _apply(target: Any, patch: Any) -> Any:
    """RFC 7386: what the API server does with a JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _apply(out.get(k), v)
    return out


_json = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=12,
)
_docs = st.dictionaries(st.text(max_size=2), _json.filter(lambda v: v is not None), max_size=4)


@given(_docs, _docs)
def test_merge_diff_turns_the_old_document_into_the_new(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    def no_nulls(v: Any) -> bool:
        return v is not None and (not isinstance(v, dict) or all(no_nulls(x) for x in v.values()))

    if not no_nulls(new):  # a null inside NEW means "delete" to a merge patch
        return
    assert _apply(old, util.merge_diff(old, new)) == new


def test_pod_requests_default_to_limits_and_count_init_containers_as_their_largest() -> None:
    pod = {"spec": {
        "containers": [{"resources": {"limits": {"cpu": "2"}}}, {"resources": {"requests": {"cpu": "500m"}}}],
        "initContainers": [{"resources": {"requests": {"cpu": "4"}}}],
    }}  # fmt: skip
    assert util.pod_requests(pod) == {"cpu": Decimal(4), "pods": Decimal(1)}


def test_jobset_success_policy_all_and_any() -> None:
    js = {"metadata": {"name": "js"}, "spec": {"replicatedJobs": [{"name": "a", "replicas": 2},
                                                                  {"name": "b", "replicas": 1}]}}  # fmt: skip

    def done(*names: str) -> list[dict[str, Any]]:
        cond = [{"type": "Complete", "status": "True"}]
        return [{"metadata": {"name": n}, "status": {"conditions": cond}} for n in names]

    ctl = jobset.JobSetController(None, None, None, None)  # type: ignore[arg-type]
    assert not ctl._succeeded(js, done("js-a-0", "js-a-1"))
    assert ctl._succeeded(js, done("js-a-0", "js-a-1", "js-b-0"))
    js["spec"]["successPolicy"] = {"operator": "Any", "targetReplicatedJobs": ["b"]}
    assert not ctl._succeeded(js, done("js-a-0"))
    assert ctl._succeeded(js, done("js-b-0"))
