"""JobSet's controller and the Indexed Job controller under it, driven by raw JobSets: pods
meeting by their DNS host names through the JobSet's headless Service, JobSet's labels,
status and conditions, restarts up to maxRestarts, the failed pod's exit code."""

from __future__ import annotations

from typing import Any

from conftest import Cluster, container

JS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets"

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
    pod = cluster.pods(ns, "jobset.sigs.k8s.io/jobset-name=fail")[-1]
    assert pod["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "1"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 7
