"""The k8s stand-in's pure parts, without a server or an engine (dev/k8s-standin; its
tests against the real API server and Docker engine run in ``nox -s integration_k8s``):
quantities, merge patches, $(VAR) expansion, image references, the kubelet's phase rules,
the scheduler's message, and the objects the Volcano and JobSet controllers make."""

from __future__ import annotations

import sys
from decimal import Decimal
from typing import Any

import pytest
from conftest import REPO
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(REPO / "dev" / "k8s-standin"))

from k8s_standin import jobset, kubelet, scheduler, util, volcano
from k8s_standin.docker import split_image

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


def test_expand_replaces_defined_references_only() -> None:
    env = {"A": "1", "B": "x y"}
    assert kubelet._expand("$(A)-$(B)-$(C)-$$(A)", env) == "1-x y-$(C)-$(A)"


@pytest.mark.parametrize(
    ("image", "repo", "tag"),
    [
        ("busybox", "busybox", "latest"),
        ("torchx-dev/python:1", "torchx-dev/python", "1"),
        ("127.0.0.1:15000/app:v2", "127.0.0.1:15000/app", "v2"),
        ("127.0.0.1:15000/app", "127.0.0.1:15000/app", "latest"),
    ],
)
def test_image_references(image: str, repo: str, tag: str) -> None:
    assert split_image(image) == (repo, tag)


def _cs(state: dict[str, Any], last: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"state": state, "lastState": last or {}}


RUN = {"running": {}}
OK = {"terminated": {"exitCode": 0}}
BAD = {"terminated": {"exitCode": 2}}
WAIT = {"waiting": {"reason": "ContainerCreating"}}
BACKOFF = {"waiting": {"reason": "CrashLoopBackOff"}}


@pytest.mark.parametrize(
    ("statuses", "policy", "phase"),
    [
        ([_cs(WAIT)], "Never", "Pending"),
        ([_cs(RUN), _cs(WAIT)], "Never", "Pending"),
        ([_cs(RUN)], "Never", "Running"),
        ([_cs(OK)], "Never", "Succeeded"),
        ([_cs(BAD)], "Never", "Failed"),
        ([_cs(BAD), _cs(RUN)], "Never", "Running"),
        ([_cs(BAD)], "OnFailure", "Running"),
        ([_cs(OK)], "Always", "Running"),
        ([_cs(BACKOFF, BAD)], "OnFailure", "Running"),
    ],
)
def test_the_kubelets_phase_rules(statuses: list[dict[str, Any]], policy: str, phase: str) -> None:
    assert kubelet.compute_phase(statuses, policy) == phase


def _pod(requests: dict[str, str], selector: dict[str, str] | None = None) -> dict[str, Any]:
    c = {"name": "c", "image": "i", "resources": {"requests": requests}}
    return {"spec": {"containers": [c], "nodeSelector": selector or {}}}


def test_the_schedulers_reasons_for_a_pod_that_does_not_fit() -> None:
    free = {"cpu": Decimal(2), "memory": Decimal(2**30), "pods": Decimal(10)}
    assert scheduler.Scheduler._misfit(_pod({"cpu": "1"}), free, {}) == []
    assert scheduler.Scheduler._misfit(_pod({"cpu": "3", "memory": "2Gi"}), free, {}) == [
        "Insufficient cpu",
        "Insufficient memory",
    ]
    assert scheduler.Scheduler._misfit(_pod({"nvidia.com/gpu": "1"}), free, {}) == [
        "Insufficient nvidia.com/gpu"
    ]
    assert scheduler.Scheduler._misfit(
        _pod({}, {"node.kubernetes.io/instance-type": "p4d"}), free, {}
    ) == ["node(s) didn't match node selector"]


def test_pod_requests_default_to_limits_and_count_init_containers_as_their_largest() -> None:
    pod = {"spec": {
        "containers": [{"resources": {"limits": {"cpu": "2"}}}, {"resources": {"requests": {"cpu": "500m"}}}],
        "initContainers": [{"resources": {"requests": {"cpu": "4"}}}],
    }}  # fmt: skip
    assert scheduler.pod_requests(pod) == {"cpu": Decimal(4), "pods": Decimal(1)}


def _vcjob() -> dict[str, Any]:
    tmpl = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "app", "namespace": "ns", "uid": "u1"},
        "spec": {"queue": "q", "plugins": {"svc": [], "env": []},
                 "tasks": [{"name": "trainer-0", "replicas": 2, "template": tmpl},
                           {"name": "ps", "replicas": 1, "template": tmpl}]},
    }  # fmt: skip


def test_a_volcano_pod_has_volcanos_name_labels_host_and_plugin_env() -> None:
    job = _vcjob()
    ctl = volcano.VolcanoController(None, None, None)  # type: ignore[arg-type]
    pod = ctl._pod(job, job["spec"]["tasks"][0], 1, 0, job["spec"]["plugins"])
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["name"] == "app-trainer-0-1"
    assert meta["labels"]["volcano.sh/job-name"] == "app"
    assert meta["labels"]["volcano.sh/queue-name"] == "q"
    assert meta["annotations"]["volcano.sh/task-spec"] == "trainer-0"
    assert meta["annotations"]["scheduling.k8s.io/group-name"] == "app-u1"
    assert meta["ownerReferences"][0]["uid"] == "u1"
    assert (spec["hostname"], spec["subdomain"], spec["schedulerName"]) == (
        "app-trainer-0-1",
        "app",
        "volcano",
    )
    env = {e["name"]: e["value"] for e in spec["containers"][0]["env"]}
    assert env == {
        "VK_TASK_INDEX": "1",
        "VC_TASK_INDEX": "1",
        "VC_TRAINER_0_HOSTS": "app-trainer-0-0.app,app-trainer-0-1.app",
        "VC_TRAINER_0_NUM": "2",
        "VC_PS_HOSTS": "app-ps-0.app",
        "VC_PS_NUM": "1",
    }
    assert {"name": "app-svc", "mountPath": "/etc/volcano"} in spec["containers"][0]["volumeMounts"]


@pytest.mark.parametrize(
    ("succeeded", "failed", "extra", "outcome"),
    [
        (2, 0, {}, None),  # a pod still runs
        (3, 0, {}, "Completed"),
        (2, 1, {}, "Failed"),  # minAvailable 3 (all) not met
        (2, 1, {"minAvailable": 2}, "Completed"),
        (1, 0, {"minSuccess": 1}, "Completed"),
    ],
)
def test_volcanos_running_state_ends_when_every_pod_ended(
    succeeded: int, failed: int, extra: dict[str, Any], outcome: str | None
) -> None:
    job = _vcjob()
    job["spec"].update(extra)
    ctl = volcano.VolcanoController(None, None, None)  # type: ignore[arg-type]
    counts = {"succeeded": succeeded, "failed": failed, "taskStatusCount": {}}
    assert ctl._running_outcome(job, counts) == outcome


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
