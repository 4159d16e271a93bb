"""The AppWrapper controllers, driven by raw AppWrappers of both versions: dispatch when the
pods fit, the wrapped objects made and labelled, replicas meeting through a Service's
name, status as each controller writes it, requeuing/resetting up to the retry limit,
deletion through the finalizer."""

from __future__ import annotations

from typing import Any

from conftest import Cluster, container

GROUP = "/apis/workload.codeflare.dev"
V1 = GROUP + "/v1beta1/namespaces/{ns}/appwrappers"
V2 = GROUP + "/v1beta2/namespaces/{ns}/appwrappers"
PODS = "/api/v1/namespaces/{ns}/pods"
ANN = "workload.codeflare.dev.appwrapper/"

Obj = dict[str, Any]

# Rank 0 listens on one port per peer; the others send their name to the Service that
# selects rank 0 only (cluster DNS's name of a Service), until it listens.
MEET = (
    'if [ "$RANK" = 0 ]; then nc -l -p 5001 & nc -l -p 5002 & wait; '
    # the message is in a file before nc starts: with a pipe, a listener whose stdin is
    # empty may close its side first and the sender then quits, 0, having sent nothing
    'else echo "hello from $RANK" > /tmp/hello; '
    'until nc "$RANK0" $((5000 + RANK)) < /tmp/hello; do sleep 0.2; done; fi'
)


def pod(name: str, cmd: str, ns: str | None = None, labels: Obj | None = None, **env: str) -> Obj:
    meta: Obj = {"name": name, "labels": labels or {}}
    if ns:
        meta["namespace"] = ns
    c = container(cmd, env=[{"name": k, "value": v} for k, v in env.items()],
                  resources={"requests": {"cpu": "1", "memory": "64Mi"}})  # fmt: skip
    spec = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 2, "containers": [c]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def service(name: str, selector: Obj, ns: str | None = None) -> Obj:
    meta: Obj = {"name": name}
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta,
            "spec": {"clusterIP": "None", "selector": selector,
                     "ports": [{"port": 5001, "targetPort": 5001}]}}  # fmt: skip


def v1beta1(name: str, items: list[Obj], cpu: str = "1", **sched: Any) -> Obj:
    generic = []
    for obj in items:
        item: Obj = {"replicas": 1, "generictemplate": obj}
        if obj["kind"] == "Pod":
            item["custompodresources"] = [
                {"replicas": 1, "requests": {"cpu": cpu, "memory": "64Mi"}}
            ]
        generic.append(item)
    return {"apiVersion": "workload.codeflare.dev/v1beta1", "kind": "AppWrapper",
            "metadata": {"name": name},
            "spec": {"resources": {"GenericItems": generic}, "schedulingSpec": sched}}  # fmt: skip


def v1beta2(name: str, items: list[Obj], **annotations: str) -> Obj:
    comps = [{"template": o, **({"podSets": [{"replicas": 1, "path": "template"}]}
                                if o["kind"] == "Pod" else {})} for o in items]  # fmt: skip
    return {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
            "metadata": {"name": name, "annotations": {ANN + k: v for k, v in annotations.items()}},
            "spec": {"components": comps}}  # fmt: skip


def state(aw: Obj) -> str:
    return str((aw.get("status") or {}).get("state", ""))


def phase(aw: Obj) -> str:
    return str((aw.get("status") or {}).get("phase", ""))


def cond(aw: Obj, typ: str) -> Obj:
    return next(c for c in aw["status"]["conditions"] if c["type"] == typ)


def meeting(ns: str, name: str) -> list[Obj]:
    labels = [{"rank0": "yes"}, {}, {}]
    return [service(f"{name}-r0", {"rank0": "yes"}, ns)] + [
        pod(f"{name}-{i}", MEET, ns, labels[i], RANK=str(i), RANK0=f"{name}-r0") for i in range(3)
    ]


def test_v1beta1_dispatches_makes_labelled_objects_and_completes(cluster: Cluster, ns: str) -> None:
    cluster.api.create(V1.format(ns=ns), v1beta1("meet", meeting(ns, "meet"), minAvailable=3))
    aw = cluster.wait(V1.format(ns=ns), "meet", lambda a: state(a) in ("Completed", "Failed"), 90)
    st = aw["status"]
    assert (st["state"], st.get("step"), st["restarts"]) == ("Completed", None, 0), st
    steps = [(t["state"], t.get("step")) for t in st["transitions"]]
    assert steps == [("Pending", None), ("Running", "creating"), ("Running", "created"),
                     ("Completed", None)], steps  # fmt: skip
    assert st["transitionCount"] == 4 and st["dispatchTimestamp"]
    queued = cond(aw, "Pending")
    assert (queued["status"], queued["reason"]) == ("False", "Dispatched")
    assert aw["metadata"]["finalizers"] == ["workload.codeflare.dev/finalizer"]
    pods = cluster.pods(ns, "appwrapper.mcad.ibm.com=meet")
    assert [p["metadata"]["name"] for p in pods] == ["meet-0", "meet-1", "meet-2"]
    assert {p["metadata"]["labels"]["appwrapper.mcad.ibm.com/namespace"] for p in pods} == {ns}
    assert all(not p["metadata"].get("ownerReferences") for p in pods)  # MCAD labels, owns not
    got = cluster.log(ns, "meet-0")
    assert "hello from 1" in got and "hello from 2" in got, got
    svc = cluster.api.get(f"/api/v1/namespaces/{ns}/services/meet-r0")
    assert svc["metadata"]["labels"]["appwrapper.mcad.ibm.com"] == "meet"
    # deleting the AppWrapper deletes what it made (the finalizer), then the AppWrapper
    cluster.api.delete(V1.format(ns=ns) + "/meet")
    cluster.wait_gone(V1.format(ns=ns), "meet", timeout=60)
    assert cluster.pods(ns, "appwrapper.mcad.ibm.com=meet") == []
    assert cluster.api.get(f"/api/v1/namespaces/{ns}/services")["items"] == []


def test_v1beta1_that_does_not_fit_stays_queued_with_the_reason(cluster: Cluster, ns: str) -> None:
    cluster.api.create(V1.format(ns=ns), v1beta1("big", [pod("big-0", "true", ns)], cpu="4096"))
    aw = cluster.wait(V1.format(ns=ns), "big",
                      lambda a: any(c["reason"] == "InsufficientResources"
                                    for c in (a.get("status") or {}).get("conditions") or []))  # fmt: skip
    queued = cond(aw, "Pending")
    assert queued["status"] == "True"
    assert queued["message"].startswith("Insufficient cpu; requested 4096 but only ")
    assert (aw["status"]["state"], aw["status"].get("step")) == ("Pending", None)
    assert cluster.pods(ns) == []


def test_v1beta1_requeues_then_fails_and_deletes_its_pods(cluster: Cluster, ns: str) -> None:
    requeuing = {"timeInSeconds": 1, "pauseTimeInSeconds": 1, "maxNumRequeuings": 1}
    aw = v1beta1("bad", [pod("bad-0", "exit 3", ns)], minAvailable=1, requeuing=requeuing)
    cluster.api.create(V1.format(ns=ns), aw)
    got = cluster.wait(V1.format(ns=ns), "bad",
                       lambda a: state(a) == "Failed" and not a["status"].get("step"), 90)  # fmt: skip
    st = got["status"]
    assert st["restarts"] == 1, st
    reasons = [t.get("reason") for t in st["transitions"] if t.get("step") == "deleting"]
    assert reasons == ["expected pods 1 but found pods 0"] * 2, st["transitions"]
    assert [t["state"] for t in st["transitions"] if t.get("step") == "deleting"] == [
        "Running", "Failed"
    ]  # fmt: skip
    assert cond(got, "Pending")["reason"] == "Dispatched"  # dispatched again after the requeue
    assert cluster.pods(ns) == []  # MCAD deletes a failed AppWrapper's objects


def test_v1beta2_runs_owned_components_to_success(cluster: Cluster, ns: str) -> None:
    cluster.api.create(V2.format(ns=ns), v1beta2("meet2", meeting(ns, "meet2")))
    aw = cluster.wait(V2.format(ns=ns), "meet2", lambda a: phase(a) in ("Succeeded", "Failed"), 90)
    st = aw["status"]
    assert st["phase"] == "Succeeded", st
    assert (cond(aw, "QuotaReserved")["status"], cond(aw, "ResourcesDeployed")["status"]) == (
        "False", "True")  # fmt: skip
    assert cond(aw, "ResourcesDeployed")["message"] == (
        "3 pods succeeded and no running, pending, or failed pods"
    )
    assert [(c["kind"], c["name"]) for c in st["componentStatus"]] == [
        ("Service", "meet2-r0"), ("Pod", "meet2-0"), ("Pod", "meet2-1"), ("Pod", "meet2-2")]  # fmt: skip
    pods = cluster.pods(ns, "workload.codeflare.dev/appwrapper=meet2")
    assert len(pods) == 3
    for p in pods:
        [ref] = p["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("AppWrapper", "meet2", True)
    got = cluster.log(ns, "meet2-0")
    assert "hello from 1" in got and "hello from 2" in got, got
    cluster.api.delete(V2.format(ns=ns) + "/meet2")
    cluster.wait_gone(V2.format(ns=ns), "meet2", timeout=60)
    assert cluster.pods(ns) == []


def test_v1beta2_resets_up_to_the_retry_limit_then_fails(cluster: Cluster, ns: str) -> None:
    aw = v1beta2("flaky", [pod("flaky-0", "echo attempt; exit 5", ns)],
                 failureGracePeriodDuration="0s", retryPausePeriodDuration="1s", retryLimit="1")  # fmt: skip
    cluster.api.create(V2.format(ns=ns), aw)
    got = cluster.wait(V2.format(ns=ns), "flaky",
                       lambda a: phase(a) == "Failed"
                       and cond(a, "QuotaReserved")["status"] == "False", 90)  # fmt: skip
    st = got["status"]
    assert st["resettingCount"] == 1, st
    unhealthy = cond(got, "Unhealthy")
    assert (unhealthy["status"], unhealthy["reason"]) == ("True", "FoundFailedPods")
    deployed = cond(got, "ResourcesDeployed")
    assert (deployed["status"], deployed["message"]) == (
        "False", "Resources deleted for failed AppWrapper")  # fmt: skip
    cluster.wait_gone(PODS.format(ns=ns), "flaky-0", timeout=30)


def test_v1beta2_a_terminal_exit_code_fails_it_after_the_grace_without_a_reset(
    cluster: Cluster, ns: str
) -> None:
    aw = v1beta2("term", [pod("term-0", "exit 7", ns)], terminalExitCodes="7",
                 failureGracePeriodDuration="4s", retryPausePeriodDuration="1s")  # fmt: skip
    cluster.api.create(V2.format(ns=ns), aw)
    got = cluster.wait(V2.format(ns=ns), "term",
                       lambda a: phase(a) == "Failed"
                       and cond(a, "QuotaReserved")["status"] == "False", 90)  # fmt: skip
    assert not got["status"].get("resettingCount"), got["status"]  # no reset: terminal
    unhealthy = cond(got, "Unhealthy")
    assert unhealthy["reason"] == "FoundFailedPods"
    # the failure grace period was waited out first (times have second precision)
    found, failed = (_ts(unhealthy["lastTransitionTime"]),
                     _ts(cond(got, "QuotaReserved")["lastTransitionTime"]))  # fmt: skip
    assert failed - found >= 3, (unhealthy, cond(got, "QuotaReserved"))


def _ts(text: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
