"""The stand-in, driven by raw API objects: pods run, meet over TCP by host name, exit codes,
policies, logs (follow, tail, previous), restarts, scheduling failures, garbage collection."""

from __future__ import annotations

import time
from typing import Any

import pytest
from conftest import Cluster, container

VJ = "/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs"
JS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets"
PODS = "/api/v1/namespaces/{ns}/pods"

Obj = dict[str, Any]


def vcjob(name: str, tasks: list[Obj], **spec: Any) -> Obj:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"schedulerName": "volcano", "plugins": {"svc": [], "env": []}, "tasks": tasks, **spec}}  # fmt: skip


def task(name: str, replicas: int, *containers: Obj, **extra: Any) -> Obj:
    # sh as PID 1 ignores SIGTERM: a short grace period, so killed pods go in 2 s, not 30
    spec = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 2,
        "containers": list(containers),
    }
    tmpl = {"spec": spec}
    return {"name": name, "replicas": replicas, "template": tmpl, **extra}


def phase_of(job: Obj) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase", ""))


# Rank 0 takes one connection per other replica and prints what it gets; the others send
# their host name to rank 0's host name (from VC_W_HOSTS), trying until it listens.
MEET = (
    'echo "index=$VC_TASK_INDEX vk=$VK_TASK_INDEX num=$VC_W_NUM hosts=$VC_W_HOSTS"; '
    "echo file=$(cat /etc/volcano/w.host | tr '\\n' ,); "
    "rank0=${VC_W_HOSTS%%,*}; "
    # a listener (port) per peer: one port listened on twice in turn drops a peer whose
    # connection queued behind the first one's
    'if [ "$VC_TASK_INDEX" = 0 ]; then for i in $(seq $((VC_W_NUM - 1))); do '
    "nc -l -p $((5000 + i)) & done; wait; "
    # the message is in a file before nc starts (see test_appwrapper.MEET)
    'else echo "hello from $(hostname)" > /tmp/hello; '
    'until nc "$rank0" $((5000 + VC_TASK_INDEX)) < /tmp/hello; '
    "do sleep 0.2; done; fi"
)


@pytest.mark.standin_node
def test_volcano_job_pods_meet_over_tcp_by_host_name(cluster: Cluster, ns: str) -> None:
    cluster.api.create(
        VJ.format(ns=ns), vcjob("meet", [task("w", 3, container(MEET))], minAvailable=3)
    )
    job = cluster.wait(VJ.format(ns=ns), "meet", lambda j: phase_of(j) in ("Completed", "Failed"))
    assert phase_of(job) == "Completed", job["status"]
    st = job["status"]
    assert (st["succeeded"], st["failed"], st["running"], st["minAvailable"]) == (3, 0, 0, 3)
    assert st["taskStatusCount"] == {"w": {"phase": {"Succeeded": 3}}}
    assert [c["status"] for c in st["conditions"]][-1] == "Completed"
    pods = cluster.pods(ns, "volcano.sh/job-name=meet")
    assert [p["metadata"]["name"] for p in pods] == ["meet-w-0", "meet-w-1", "meet-w-2"]
    hosts = "meet-w-0.meet,meet-w-1.meet,meet-w-2.meet"
    for i, p in enumerate(pods):
        meta, spec = p["metadata"], p["spec"]
        assert meta["labels"]["volcano.sh/task-spec"] == "w"
        assert meta["annotations"]["volcano.sh/task-index"] == str(i)
        assert meta["annotations"]["scheduling.k8s.io/group-name"].startswith("meet-")
        assert meta["ownerReferences"][0]["kind"] == "Job"
        assert (spec["hostname"], spec["subdomain"]) == (f"meet-w-{i}", "meet")
        out = cluster.log(ns, meta["name"])
        assert f"index={i} vk={i} num=3 hosts={hosts}" in out
        assert f"file={hosts}\n" in out
        cs = p["status"]["containerStatuses"][0]
        assert cs["state"]["terminated"]["exitCode"] == 0
        assert cs["state"]["terminated"]["reason"] == "Completed"
    got = cluster.log(ns, "meet-w-0")
    assert "hello from meet-w-1" in got and "hello from meet-w-2" in got
    svc = cluster.api.get(f"/api/v1/namespaces/{ns}/services/meet")
    assert svc["spec"]["clusterIP"] == "None"


@pytest.mark.standin_node
def test_volcano_failed_pod_terminates_the_job_with_its_exit_code(
    cluster: Cluster, ns: str
) -> None:
    policies = [{"event": "PodFailed", "action": "TerminateJob"}]
    cluster.api.create(VJ.format(ns=ns), vcjob("bad", [
        task("a", 1, container("exit 3"), policies=policies),
        task("b", 1, container("sleep 300"), policies=policies)]))  # fmt: skip
    job = cluster.wait(VJ.format(ns=ns), "bad", lambda j: phase_of(j) == "Terminated")
    assert job["status"]["failed"] == 1
    failed = cluster.api.get(PODS.format(ns=ns) + "/bad-a-0")
    term = failed["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (failed["status"]["phase"], term["exitCode"], term["reason"]) == ("Failed", 3, "Error")
    cluster.wait_gone(PODS.format(ns=ns), "bad-b-0")  # the job's other pod is killed


@pytest.mark.standin_node
def test_volcano_restart_job_until_max_retry(cluster: Cluster, ns: str) -> None:
    policies = [{"event": "PodFailed", "action": "RestartJob"}]
    cluster.api.create(VJ.format(ns=ns), vcjob("retry", [task("w", 1, container("echo run; exit 1"))],
                                               maxRetry=2, policies=policies))  # fmt: skip
    job = cluster.wait(VJ.format(ns=ns), "retry", lambda j: phase_of(j) == "Failed", timeout=90)
    assert job["status"]["retryCount"] == 2
    # (status.version is not checked: Volcano v1.5.1 counts 4 here, the stand-in 2)
    phases = [c["status"] for c in job["status"]["conditions"]]
    assert phases.count("Restarting") == 2, phases
    # the restart that used up maxRetry kept that attempt's pod, with its exit code (as
    # Volcano v1.5.1 does)
    [pod] = cluster.pods(ns)
    assert pod["status"]["phase"] == "Failed", pod["status"]
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1
    [pod] = cluster.pods(ns)
    assert pod["status"]["phase"] == "Failed", pod["status"]
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1


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


def _pod(name: str, *containers: Obj, policy: str = "Never", **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": policy, "containers": list(containers), **spec}}  # fmt: skip


@pytest.mark.standin_node
def test_logs_follow_as_they_are_written_and_tail(cluster: Cluster, ns: str) -> None:
    # The pod waits for a file the test writes only after the first line reached it.
    cluster.api.create(PODS.format(ns=ns), _pod("talk", container(
        "echo first; until [ -e /shared/go ]; do sleep 0.1; done; echo second; echo third",
        volumeMounts=[{"name": "shared", "mountPath": "/shared"}]),
        volumes=[{"name": "shared", "emptyDir": {}}]))  # fmt: skip
    pod = cluster.wait(PODS.format(ns=ns), "talk", lambda p: p["status"].get("phase") == "Running")
    conn = cluster.api._conn(60)
    conn.request("GET", f"/api/v1/namespaces/{ns}/pods/talk/log?follow=true",
                 headers={"Authorization": f"Bearer {cluster.api.token}"})  # fmt: skip
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.readline() == b"first\n"
    # still running: the line came while the container was writing, not after it ended
    assert cluster.api.get(PODS.format(ns=ns) + "/talk")["status"]["phase"] == "Running"
    volume = _volume_dir(pod)
    (volume / "go").write_text("")
    assert resp.read() == b"second\nthird\n"
    conn.close()
    cluster.wait(PODS.format(ns=ns), "talk", lambda p: p["status"].get("phase") == "Succeeded")
    assert cluster.log(ns, "talk", tailLines=1) == "third\n"
    stamped = cluster.log(ns, "talk", timestamps="true").splitlines()
    assert [line.split(" ", 1)[1] for line in stamped] == ["first", "second", "third"]
    assert all(line[:4].isdigit() and line.split(" ")[0].endswith("Z") for line in stamped)


def _volume_dir(pod: Obj) -> Any:
    from conftest import STATE

    return STATE / "standin" / "pods" / pod["metadata"]["uid"] / "volumes" / "shared"


@pytest.mark.standin_node
def test_on_failure_restarts_the_container_and_keeps_the_previous_log(
    cluster: Cluster, ns: str
) -> None:
    cmd = "n=$(cat /data/n 2>/dev/null || echo 0); echo run $n; echo $((n + 1)) > /data/n; [ $n -ge 2 ]"
    cluster.api.create(PODS.format(ns=ns), _pod("again", container(cmd, volumeMounts=[
        {"name": "data", "mountPath": "/data"}]), policy="OnFailure",
        volumes=[{"name": "data", "emptyDir": {}}]))  # fmt: skip
    pod = cluster.wait(
        PODS.format(ns=ns), "again", lambda p: p["status"].get("phase") == "Succeeded", 60
    )
    cs = pod["status"]["containerStatuses"][0]
    assert cs["restartCount"] == 2
    assert cs["state"]["terminated"]["exitCode"] == 0
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert cluster.log(ns, "again") == "run 2\n"
    assert cluster.log(ns, "again", previous="true") == "run 1\n"


@pytest.mark.standin_node
def test_a_pod_that_does_not_fit_stays_pending_with_the_schedulers_reason(
    cluster: Cluster, ns: str
) -> None:
    big = container("true", resources={"requests": {"cpu": "10000", "memory": "1Gi"}})
    cluster.api.create(PODS.format(ns=ns), _pod("big", big))
    pod = cluster.wait(PODS.format(ns=ns), "big", lambda p: bool(p["status"].get("conditions")))
    cond = pod["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "PodScheduled",
        "False",
        "Unschedulable",
    )
    assert cond["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")


@pytest.mark.standin_node
def test_a_missing_image_is_an_image_pull_error(cluster: Cluster, ns: str) -> None:
    cluster.api.create(
        PODS.format(ns=ns), _pod("noimg", {"name": "c", "image": "torchx-dev/none:0"})
    )

    def waiting(p: Obj) -> str:
        for cs in p["status"].get("containerStatuses") or []:
            return str((cs["state"].get("waiting") or {}).get("reason", ""))
        return ""

    pod = cluster.wait(
        PODS.format(ns=ns), "noimg", lambda p: waiting(p) in ("ErrImagePull", "ImagePullBackOff")
    )
    assert pod["status"]["phase"] == "Pending"
    assert (
        "torchx-dev/none:0" in pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
    )


@pytest.mark.standin_node
def test_deleting_a_job_removes_its_pods_and_containers(cluster: Cluster, ns: str) -> None:
    cluster.api.create(VJ.format(ns=ns), vcjob("gone", [task("w", 2, container("sleep 300"))]))
    cluster.wait(VJ.format(ns=ns), "gone", lambda j: phase_of(j) == "Running")
    cluster.api.delete(VJ.format(ns=ns) + "/gone")
    for i in range(2):
        cluster.wait_gone(PODS.format(ns=ns), f"gone-w-{i}", timeout=90)
    assert cluster.api.get(f"/api/v1/namespaces/{ns}/services")["items"] == []


@pytest.mark.standin_node
def test_env_from_field_refs_and_the_pod_ip(cluster: Cluster, ns: str) -> None:
    env = [{"name": n, "valueFrom": {"fieldRef": {"fieldPath": f}}} for n, f in
           (("NAME", "metadata.name"), ("NS", "metadata.namespace"), ("IP", "status.podIP"))]  # fmt: skip
    env.append({"name": "BOTH", "value": "$(NAME)@$(NS)"})
    c = container('echo "$NAME $NS $BOTH $IP"; df -m /dev/shm | tail -1', env=env,
                  volumeMounts=[{"name": "shm", "mountPath": "/dev/shm"}])  # fmt: skip
    vols = [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "256Mi"}}]
    cluster.api.create(PODS.format(ns=ns), _pod("env", c, volumes=vols))
    pod = cluster.wait(PODS.format(ns=ns), "env", lambda p: p["status"].get("phase") == "Succeeded")
    first, shm = cluster.log(ns, "env").splitlines()
    assert first == f"env {ns} env@{ns} {pod['status']['podIP']}"
    assert shm.split()[1] == "256"


@pytest.mark.standin_node
def test_many_pods_start_together(cluster: Cluster, ns: str) -> None:
    """Eight pods of one job run at once on the node (no worker waits on another's pod)."""
    cluster.api.create(VJ.format(ns=ns), vcjob("many", [task("w", 8, container("sleep 2"))]))
    t0 = time.monotonic()
    job = cluster.wait(VJ.format(ns=ns), "many", lambda j: phase_of(j) == "Completed", timeout=60)
    assert job["status"]["succeeded"] == 8
    assert time.monotonic() - t0 < 30
