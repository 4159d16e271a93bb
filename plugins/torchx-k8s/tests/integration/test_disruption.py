"""What others do to a running app on the real node, and what the plugin then reports.

A pod evicted by someone else (a drain, the Eviction API): the retry policy the plugin
wrote decides, Volcano's ``PodEvicted`` policy or JobSet's Job and failure policy. The
headless Service the replicas meet through, missing or not naming their pods: the
3-replica meeting by host name fails, as it would on a cluster (the cluster DNS answers
a pod's ``hostname.subdomain`` only through a Service of that name that selects it).

JobSet's controller (the stand-in's) keeps the Service itself: it names it after
``network.subdomain`` and sets that subdomain on every pod (a pod overlay's is
overwritten), and makes it again when someone deletes it. So under JobSet the meeting
fails when the pods' subdomain is not the one ``TORCHX_RANK0_HOST`` names (the JobSet
edited before it is submitted), and a Service deleted while the app runs is made again
before a later meeting needs it.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from k8scmd import Made, image, wait_ended

from torchx.runner import Runner
from torchx.specs import AppDef, AppState, Resource, Role, macros, parse_app_handle
from torchx.specs.overlays import set_overlay

SMALL = Resource(cpu=1, gpu=0, memMB=128)


def _pods(kube: Any, name: str) -> list[dict[str, Any]]:
    from kubernetes import client

    got = client.CoreV1Api(kube).list_namespaced_pod(
        "default", label_selector=f"app.kubernetes.io/instance={name}"
    )
    return [kube.sanitize_for_serialization(p) for p in got.items]


def _running_pod(kube: Any, name: str, timeout: float = 90) -> dict[str, Any]:
    """The app's one pod once its container runs."""
    deadline = time.monotonic() + timeout
    while True:
        for p in _pods(kube, name):
            statuses = (p.get("status") or {}).get("containerStatuses") or []
            if statuses and (statuses[0].get("state") or {}).get("running"):
                return p
        assert time.monotonic() < deadline, _pods(kube, name)
        time.sleep(0.5)


def _evict(kube: Any, pod: dict[str, Any]) -> None:
    """The Eviction API, as a drain uses it (policy/v1beta1 on 1.20), with a 1 s grace."""
    from kubernetes import client

    meta = pod["metadata"]
    body = {
        "apiVersion": "policy/v1beta1",
        "kind": "Eviction",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "deleteOptions": {"gracePeriodSeconds": 1},
    }
    client.CoreV1Api(kube).create_namespaced_pod_eviction(meta["name"], meta["namespace"], body)


@pytest.mark.parametrize("flavour", ["volcano", "jobset"])
def test_an_evicted_pod_restarts_the_app_as_its_retry_policy_says(
    runner: Runner, made: Made, kube: Any, flavour: str
) -> None:
    # one retry of the whole app (APPLICATION, the default policy): Volcano's
    # PodEvicted -> RestartJob with maxRetry 2, JobSet's failurePolicy.maxRestarts 1
    role = Role(
        "w", image(), entrypoint="sh", args=["-c", "echo started; sleep 15"], resource=SMALL,
        max_retries=1,
    )  # fmt: skip
    handle = runner.run(AppDef("evict", [role]), "kubernetes", {"flavour": flavour})
    app_id = made.add(parse_app_handle(handle).app_id)
    name = app_id.split(":")[1]
    first = _running_pod(kube, name)
    _evict(kube, first)
    assert wait_ended(runner, handle, timeout=240) == AppState.SUCCEEDED
    status = runner.status(handle)
    assert status is not None
    assert status.num_restarts == 1, status
    # the replica that succeeded ran in a new pod
    uids = {p["metadata"]["uid"] for p in _pods(kube, name)}
    assert first["metadata"]["uid"] not in uids and uids, uids


#: Replicas 1 and 2 try rank 0's host name for 30 s, then fail (exit 3).
MEET = (
    'eval "host=\\${$1}"; '
    'if [ "$0" = 0 ]; then nc -l -p 9001 & nc -l -p 9002 & wait; '
    'else echo "hello from $0" > /tmp/hello; i=0; '
    'until nc "$host" 900$0 < /tmp/hello; do '
    'i=$((i+1)); [ $i -lt 100 ] || { echo "no $host"; exit 3; }; sleep 0.3; done; fi'
)


def _meet(**kw: Any) -> AppDef:
    role = Role(
        "peer", image(), entrypoint="sh", args=["-c", MEET, macros.replica_id, macros.rank0_env],
        num_replicas=3, resource=SMALL, **kw,
    )  # fmt: skip
    return AppDef("meet", [role])


def _delete_service_once_made(kube: Any, name: str, timeout: float = 60) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core = client.CoreV1Api(kube)
    deadline = time.monotonic() + timeout
    while True:
        try:
            core.delete_namespaced_service(name, "default")
            return
        except ApiException as e:
            if e.status != 404:
                raise
        assert time.monotonic() < deadline, f"no Service {name} after {timeout}s"
        time.sleep(0.1)


@pytest.mark.parametrize("how", ["missing", "misnamed"])
def test_the_meeting_fails_without_a_headless_service_naming_the_pods(
    runner: Runner, made: Made, kube: Any, how: str
) -> None:
    app = _meet()
    if how == "misnamed":
        # the pods' subdomain is not the Service's name (Volcano's svc plugin keeps a
        # subdomain the template has): the Service exists, but names no pod
        set_overlay(app.roles[0], "kubernetes", "V1Pod", {"spec": {"subdomain": "elsewhere"}})
    handle = runner.run(app, "kubernetes", {"flavour": "volcano"})
    app_id = made.add(parse_app_handle(handle).app_id)
    name = app_id.split(":")[1]
    if how == "missing":
        # Volcano's svc plugin makes the Service once, with the job: gone, it stays gone
        _delete_service_once_made(kube, name)
    assert wait_ended(runner, handle, timeout=240) == AppState.FAILED
    status = runner.status(handle)
    assert status is not None
    # a replica that could not reach rank 0 by name failed the app (no retries)
    failed = [r for r in status.roles[0].replicas if r.state == AppState.FAILED]
    assert any(r.id in (1, 2) and r.exit_code == 3 for r in failed), status


def test_the_jobset_meeting_fails_when_the_pods_subdomain_is_not_rank0s(
    runner: Runner, made: Made, kube: Any
) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    info = runner.dryrun(_meet(), "kubernetes", {"flavour": "jobset"})
    other = f"elsewhere-{uuid.uuid4().hex[:8]}"
    # what no run option or overlay can do: JobSet sets the pods' subdomain itself
    info.request.resource["spec"]["network"]["subdomain"] = other
    handle = runner.schedule(info)
    app_id = made.add(parse_app_handle(handle).app_id)
    name = app_id.split(":")[1]
    assert wait_ended(runner, handle, timeout=240) == AppState.FAILED
    status = runner.status(handle)
    assert status is not None
    failed = [r for r in status.roles[0].replicas if r.state == AppState.FAILED]
    assert any(r.id in (1, 2) and r.exit_code == 3 for r in failed), status
    core = client.CoreV1Api(kube)
    # JobSet made the Service the subdomain names (it selects the pods, which resolve
    # as HOST.OTHER), and none of the name TORCHX_RANK0_HOST's subdomain is
    made_svc = core.read_namespaced_service(other, "default")
    assert made_svc.spec.selector == {"jobset.sigs.k8s.io/jobset-name": name}
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_service(name, "default")
    assert missing.value.status == 404


#: MEET, with rank 0 listening only once /tmp/go exists (the test makes it, through exec)
#: and the others trying for up to 90 s.
MEET_LATER = (
    'eval "host=\\${$1}"; '
    'if [ "$0" = 0 ]; then until [ -f /tmp/go ]; do sleep 0.2; done; '
    "nc -l -p 9001 & nc -l -p 9002 & wait; "
    'else echo "hello from $0" > /tmp/hello; i=0; '
    'until nc "$host" 900$0 < /tmp/hello; do '
    'i=$((i+1)); [ $i -lt 300 ] || { echo "no $host"; exit 3; }; sleep 0.3; done; fi'
)


def _exec(kube: Any, pod: str, command: list[str]) -> str:
    from kubernetes import client
    from kubernetes.stream import stream

    out: str = stream(
        client.CoreV1Api(kube).connect_get_namespaced_pod_exec, pod, "default",
        command=command, stderr=True, stdin=False, stdout=True, tty=False,
    )  # fmt: skip
    return out


def test_a_jobset_service_deleted_mid_run_is_made_again_for_a_later_meeting(
    runner: Runner, made: Made, kube: Any
) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    role = Role(
        "peer", image(), entrypoint="sh",
        args=["-c", MEET_LATER, macros.replica_id, macros.rank0_env],
        num_replicas=3, resource=SMALL,
    )  # fmt: skip
    handle = runner.run(AppDef("meet", [role]), "kubernetes", {"flavour": "jobset"})
    app_id = made.add(parse_app_handle(handle).app_id)
    name = app_id.split(":")[1]
    rank0 = _running_replica(kube, name, 0)
    core = client.CoreV1Api(kube)
    first = core.read_namespaced_service(name, "default")
    core.delete_namespaced_service(name, "default")
    deadline = time.monotonic() + 60
    while True:  # made again by JobSet's controller, a new object
        try:
            again = core.read_namespaced_service(name, "default")
            if again.metadata.uid != first.metadata.uid:
                break
        except ApiException as e:
            if e.status != 404:
                raise
        assert time.monotonic() < deadline, f"the Service {name} was not made again"
        time.sleep(0.2)
    assert again.spec.selector == first.spec.selector
    # only now does rank 0 listen: the others meet it through the Service made again
    _exec(kube, rank0["metadata"]["name"], ["touch", "/tmp/go"])
    assert wait_ended(runner, handle, timeout=240) == AppState.SUCCEEDED
    log = "".join(runner.log_lines(handle, "peer", 0))
    assert "hello from 1" in log and "hello from 2" in log, log


def _running_replica(kube: Any, name: str, replica: int, timeout: float = 90) -> dict[str, Any]:
    """The app's pod of ``replica`` once its container runs."""
    deadline = time.monotonic() + timeout
    while True:
        for p in _pods(kube, name):
            if p["metadata"]["labels"].get("torchx.pytorch.org/replica-id") != str(replica):
                continue
            statuses = (p.get("status") or {}).get("containerStatuses") or []
            if statuses and (statuses[0].get("state") or {}).get("running"):
                return p
        assert time.monotonic() < deadline, _pods(kube, name)
        time.sleep(0.5)
