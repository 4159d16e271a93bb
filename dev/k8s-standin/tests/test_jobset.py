"""JobSet's controller and the Indexed Job controller under it, driven by raw JobSets: pods
meeting by their DNS host names through the JobSet's headless Service, JobSet's labels,
status and conditions, restarts up to maxRestarts, the failed pod's exit code; the
headless Service as JobSet keeps it: made again once deleted, named after
``network.subdomain`` (made when missing), one of that name it did not make used as it is."""

from __future__ import annotations

from typing import Any

from conftest import Cluster, container

JS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets"
SVC = "/api/v1/namespaces/{ns}/services"

Obj = dict[str, Any]


def _jobset(name: str, replicas: int, cmd: str, **spec: Any) -> Obj:
    job = {"completionMode": "Indexed", "parallelism": 1, "completions": 1, "backoffLimit": 0,
           "template": {"spec": {"restartPolicy": "Never", "containers": [container(cmd)]}}}  # fmt: skip
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": replicas, "template": {"spec": job}}],
                     **spec}}  # fmt: skip


def _terminal(js: Obj) -> bool:
    return bool((js.get("status") or {}).get("terminalState"))


def test_jobset_pods_meet_by_dns_host_name_and_complete(cluster: Cluster, ns: str) -> None:
    cmd = (
        'echo "host=$(hostname) index=$JOB_COMPLETION_INDEX"; '
        'if [ "$(hostname)" = js-w-0-0 ]; then nc -l -p 5000; '
        'else echo "hello from $(hostname)" > /tmp/hello; '
        "until nc js-w-0-0.js 5000 < /tmp/hello; do sleep 0.2; done; fi"
    )
    cluster.api.create(JS.format(ns=ns), _jobset("js", 2, cmd))
    js = cluster.wait(JS.format(ns=ns), "js", _terminal)
    st = js["status"]
    assert st["terminalState"] == "Completed"
    cond = next(c for c in st["conditions"] if c["type"] == "Completed")
    assert (cond["status"], cond["reason"]) == ("True", "AllJobsCompleted")
    assert st["replicatedJobsStatus"] == [
        {"name": "w", "ready": 0, "succeeded": 2, "failed": 0, "active": 0, "suspended": 0}
    ]
    pods = cluster.pods(ns, "jobset.sigs.k8s.io/jobset-name=js")
    assert [p["spec"]["hostname"] for p in pods] == ["js-w-0-0", "js-w-1-0"]
    assert {p["spec"]["subdomain"] for p in pods} == {"js"}
    assert [p["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"] for p in pods] == ["0", "1"]
    rank0 = cluster.log(ns, pods[0]["metadata"]["name"])
    assert "host=js-w-0-0 index=0" in rank0 and "hello from js-w-1-0" in rank0
    jobs = cluster.api.get(f"/apis/batch/v1/namespaces/{ns}/jobs")["items"]
    assert sorted(j["metadata"]["name"] for j in jobs) == ["js-w-0", "js-w-1"]


def test_jobset_restarts_up_to_max_restarts_then_fails(cluster: Cluster, ns: str) -> None:
    cluster.api.create(
        JS.format(ns=ns), _jobset("fail", 1, "exit 7", failurePolicy={"maxRestarts": 1})
    )
    js = cluster.wait(JS.format(ns=ns), "fail", _terminal, timeout=90)
    st = js["status"]
    assert (st["terminalState"], st["restarts"]) == ("Failed", 1)
    cond = next(c for c in st["conditions"] if c["type"] == "Failed")
    assert cond["reason"] == "ReachedMaxRestarts"
    # JobSet names the Job that failed first
    assert cond["message"] == (
        "jobset failed due to reaching max number of restarts (first failed job: fail-w-0)"
    )
    pod = cluster.pods(ns, "jobset.sigs.k8s.io/jobset-name=fail")[-1]
    assert pod["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "1"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 7


def _suspended(js: Obj) -> bool:
    return any(
        c["type"] == "Suspended" and c["status"] == "True"
        for c in (js.get("status") or {}).get("conditions") or []
    )


def test_a_deleted_headless_service_is_made_again(cluster: Cluster, ns: str) -> None:
    # suspended: no pods needed; JobSet keeps the Service of a suspended JobSet too
    js = cluster.api.create(JS.format(ns=ns), _jobset("svc", 2, "true", suspend=True))
    first = cluster.wait(SVC.format(ns=ns), "svc", lambda s: True)
    assert first["spec"]["clusterIP"] == "None"
    assert first["spec"]["selector"] == {"jobset.sigs.k8s.io/jobset-name": "svc"}
    assert first["spec"]["publishNotReadyAddresses"] is True
    [owner] = first["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        "JobSet",
        js["metadata"]["uid"],
        True,
    )
    cluster.api.delete(f"{SVC.format(ns=ns)}/svc")
    # JobSet owns it: its deletion is an event of the JobSet's, which makes it again
    again = cluster.wait(
        SVC.format(ns=ns), "svc", lambda s: s["metadata"]["uid"] != first["metadata"]["uid"]
    )
    assert again["spec"]["selector"] == first["spec"]["selector"]
    assert again["metadata"]["ownerReferences"][0]["uid"] == js["metadata"]["uid"]


def test_the_service_is_named_after_network_subdomain(cluster: Cluster, ns: str) -> None:
    """A subdomain naming no Service: JobSet makes one of that name (none of its own name)."""
    cmd = 'echo "host=$(hostname)"'
    network = {"enableDNSHostnames": True, "subdomain": "elsewhere"}
    cluster.api.create(JS.format(ns=ns), _jobset("named", 2, cmd, network=network))
    svc = cluster.wait(SVC.format(ns=ns), "elsewhere", lambda s: True)
    assert svc["spec"]["selector"] == {"jobset.sigs.k8s.io/jobset-name": "named"}
    cluster.wait(JS.format(ns=ns), "named", _terminal)
    names = [s["metadata"]["name"] for s in cluster.api.get(SVC.format(ns=ns))["items"]]
    assert names == ["elsewhere"], names
    pods = cluster.pods(ns, "jobset.sigs.k8s.io/jobset-name=named")
    assert {p["spec"]["subdomain"] for p in pods} == {"elsewhere"}
    assert [p["spec"]["hostname"] for p in pods] == ["named-w-0-0", "named-w-1-0"]
    labels = pods[0]["metadata"]["labels"]
    assert labels["jobset.sigs.k8s.io/global-replicas"] == "2", labels


def test_a_service_of_that_name_it_did_not_make_is_used_as_it_is(cluster: Cluster, ns: str) -> None:
    mine = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "taken"},
            "spec": {"clusterIP": "None", "selector": {"app": "nothing"}}}  # fmt: skip
    made = cluster.api.create(SVC.format(ns=ns), mine)
    network = {"subdomain": "taken"}
    cluster.api.create(JS.format(ns=ns), _jobset("user", 1, "true", network=network, suspend=True))
    cluster.wait(JS.format(ns=ns), "user", _suspended)  # the controller has been through it
    svc = cluster.api.get(f"{SVC.format(ns=ns)}/taken")
    assert svc["metadata"]["uid"] == made["metadata"]["uid"]
    assert svc["spec"]["selector"] == {"app": "nothing"}  # not adopted, not changed
    assert not svc["metadata"].get("ownerReferences")
