"""``python3 -m k8s_standin ...``: run the stand-in until SIGTERM (dev/k8s starts it)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from decimal import Decimal
from pathlib import Path

from . import appwrapper as aw_mod
from .api import Api, ApiError, Obj
from .appwrapper import AppWrapperController
from .docker import Docker, DockerError
from .gc import GarbageCollector
from .jobset import JobController, JobSetController
from .kubelet import Kubelet
from .logserver import serve
from .runtime import Informer, WorkQueue, run_workers, start_thread
from .scheduler import POD_GROUPS, Scheduler
from .util import controller_uid, deleting
from .volcano import VolcanoController

log = logging.getLogger("k8s-standin")


def _machine_memory() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return 8 * 2**30


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="k8s_standin", description=__doc__)
    p.add_argument("--server", required=True)
    p.add_argument("--token-file", required=True)
    p.add_argument("--ca-file", required=True)
    p.add_argument("--docker-host", default="")
    p.add_argument("--state", required=True, type=Path)
    p.add_argument("--node-name", default="torchx-dev-node")
    p.add_argument("--kubelet-port", type=int, default=16250)
    p.add_argument("--kubelet-cert", default="")
    p.add_argument("--kubelet-key", default="")
    p.add_argument("--client-ca", default="", help="the API server's kubelet client certificate")
    p.add_argument("--cpu", default="", help="allocatable cpu (default: 8 per core here)")
    p.add_argument("--memory", default="", help="allocatable memory (default: the machine's)")
    p.add_argument("--code", default="", help="ignored: dev/k8s passes its code's hash")
    p.add_argument(
        "--real-node",
        action="store_true",
        help="a real node, scheduler, garbage collector and Volcano run: play only JobSet's "
        "controller (with the Indexed Job controller under it) and the AppWrapper controllers",
    )
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(threadName)s %(message)s", stream=sys.stderr
    )
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    args.state.mkdir(parents=True, exist_ok=True)

    from .util import quantity

    if args.real_node:
        return _beside_real_node(args)
    cpu = quantity(args.cpu) if args.cpu else Decimal((os.cpu_count() or 1) * 8)
    memory = int(quantity(args.memory)) if args.memory else _machine_memory()
    api = Api(args.server, Path(args.token_file).read_text().strip(), args.ca_file)
    docker = Docker(args.docker_host)

    pods = Informer(api, "/api/v1/pods", "pods")
    vcjobs = Informer(api, "/apis/batch.volcano.sh/v1alpha1/jobs", "vcjobs")
    jobsets = Informer(api, "/apis/jobset.x-k8s.io/v1alpha2/jobsets", "jobsets")
    jobs = Informer(api, "/apis/batch/v1/jobs", "jobs")
    # every AppWrapper, read through v1beta2 (both versions' fields are in both schemas)
    aws = Informer(api, f"/apis/{aw_mod.V1BETA2}/appwrappers", "appwrappers")
    podgroups = Informer(api, "/apis/scheduling.sigs.k8s.io/v1alpha1/podgroups", "podgroups")
    podgroups_x = Informer(api, "/apis/scheduling.x-k8s.io/v1alpha1/podgroups", "podgroups-x")

    q_volcano, q_jobset, q_job = WorkQueue("volcano"), WorkQueue("jobset"), WorkQueue("job")
    q_gc, q_sched, q_kubelet = WorkQueue("gc"), WorkQueue("scheduler"), WorkQueue("kubelet")
    q_aw = WorkQueue("appwrapper")

    volcano = VolcanoController(api, vcjobs, pods)
    jobset = JobSetController(api, jobsets, jobs, pods)
    job = JobController(api, jobs, pods, jobsets)
    gc = GarbageCollector(api)
    kubelet = Kubelet(api, docker, pods, q_kubelet, args.node_name, args.state, cpu, memory,
                      args.kubelet_port)  # fmt: skip
    appwrapper = AppWrapperController(api, aws, pods, q_aw, lambda: kubelet.node)

    def gang_size(pod: Obj) -> int | None:
        """A gang's minimum: its Volcano Job's minAvailable, or its PodGroup's minMember."""
        labels = pod["metadata"].get("labels") or {}
        for label, informer in zip(POD_GROUPS, (podgroups, podgroups_x), strict=True):
            if labels.get(label):
                group = informer.get(f"{pod['metadata']['namespace']}/{labels[label]}")
                return int(group["spec"].get("minMember") or 1) if group else None
        return volcano.min_available_of(pod)

    sched = Scheduler(api, pods, lambda: kubelet.node, gang_size)

    def owner_key(obj: Obj, kind: str, api_version: str) -> str | None:
        uid = controller_uid(obj)
        for ref in obj["metadata"].get("ownerReferences") or []:
            if ref["uid"] == uid and ref["kind"] == kind and ref["apiVersion"] == api_version:
                return f"{obj['metadata']['namespace']}/{ref['name']}"
        return None

    def on_pod(key: str, new: Obj | None, old: Obj | None) -> None:
        obj = new or old
        assert obj is not None
        for q, kind, av in (
            (q_volcano, "Job", "batch.volcano.sh/v1alpha1"),
            (q_job, "Job", "batch/v1"),
        ):
            k = owner_key(obj, kind, av)
            if k:
                q.add(k)
        wrapper = aw_mod.owner_key(obj)
        if wrapper:
            q_aw.add(wrapper)
        jobset_name = (obj["metadata"].get("labels") or {}).get("jobset.sigs.k8s.io/jobset-name")
        if jobset_name:  # replicatedJobsStatus.ready follows its pods (Job.status.ready in 1.24+)
            q_jobset.add(f"{obj['metadata']['namespace']}/{jobset_name}")
        if (
            new is None
            or deleting(new)
            or not new["spec"].get("nodeName")
            or (
                old is not None
                and (old.get("status") or {}).get("phase") != (new.get("status") or {}).get("phase")
            )
        ):
            q_sched.add("node")
        if new is None or new["spec"].get("nodeName") == args.node_name:
            q_kubelet.add(key)
        if new is None:
            q_gc.add("all")

    def on_owner(queue: WorkQueue) -> object:
        def handler(key: str, new: Obj | None, old: Obj | None) -> None:
            queue.add(key)
            if new is None or deleting(new):
                q_gc.add("all")

        return handler

    def on_job(key: str, new: Obj | None, old: Obj | None) -> None:
        q_job.add(key)
        wrapper = aw_mod.owner_key(new or old or {"metadata": {"namespace": ""}})
        if wrapper:
            q_aw.add(wrapper)
        k = owner_key(new or old or {}, "JobSet", "jobset.x-k8s.io/v1alpha2")
        if k:
            q_jobset.add(k)
        if new is None or deleting(new):
            q_gc.add("all")

    def on_jobset(key: str, new: Obj | None, old: Obj | None) -> None:
        q_jobset.add(key)
        ns, name = key.split("/", 1)
        for j in jobs.items():  # its Jobs' controller reads the JobSet (suspend, mode)
            labels = j["metadata"].get("labels") or {}
            if (
                j["metadata"]["namespace"] == ns
                and labels.get("jobset.sigs.k8s.io/jobset-name") == name
            ):
                q_job.add(f"{ns}/{j['metadata']['name']}")
        if new is None or deleting(new):
            q_gc.add("all")

    pods.on_change(on_pod)
    vcjobs.on_change(on_owner(q_volcano))  # type: ignore[arg-type]
    jobsets.on_change(on_jobset)
    jobs.on_change(on_job)
    aws.on_change(on_owner(q_aw))  # type: ignore[arg-type]
    for inf in (podgroups, podgroups_x):
        inf.on_change(lambda *_: q_sched.add("node"))

    informers = (pods, vcjobs, jobsets, jobs, aws, podgroups, podgroups_x)
    for inf in informers:
        start_thread(inf.run, f"informer-{inf.name}")
    for inf in informers:
        inf.synced.wait()

    kubelet.register()
    server = serve(docker, pods, args.node_name, args.kubelet_port, args.kubelet_cert,
                   args.kubelet_key, args.client_ca)  # fmt: skip
    start_thread(server.serve_forever, "kubelet-api")
    start_thread(kubelet.watch_engine, "docker-events")

    run_workers(q_volcano, volcano.sync, 2)
    run_workers(q_jobset, jobset.sync, 1)
    run_workers(q_job, job.sync, 2)
    run_workers(q_aw, appwrapper.sync, 1)
    run_workers(q_gc, gc.sync, 1)
    run_workers(q_sched, sched.sync, 1)
    run_workers(q_kubelet, kubelet.sync, 4)
    log.info("stand-in ready: node %s (cpu %s, memory %d), kubelet on 127.0.0.1:%d",
             args.node_name, cpu, memory, args.kubelet_port)  # fmt: skip
    ready = args.state / "ready"
    ready.write_text(str(os.getpid()))

    tick = 0
    while True:
        time.sleep(2)
        tick += 1
        q_sched.add("node")
        q_gc.add("all")
        if tick % 3 == 0:
            try:
                kubelet.resync()
            except (OSError, DockerError) as e:
                log.warning("resync: %s", e)
            for inf, q in ((vcjobs, q_volcano), (jobsets, q_jobset), (jobs, q_job), (aws, q_aw)):
                q.add_all(
                    f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in inf.items()
                )
        if tick % 15 == 0:
            kubelet.heartbeat()


def _beside_real_node(args: argparse.Namespace) -> int:
    """JobSet's and the AppWrapper controllers, beside a real node and real controllers."""
    api = Api(args.server, Path(args.token_file).read_text().strip(), args.ca_file)
    pods = Informer(api, "/api/v1/pods", "pods")
    jobsets = Informer(api, "/apis/jobset.x-k8s.io/v1alpha2/jobsets", "jobsets")
    jobs = Informer(api, "/apis/batch/v1/jobs", "jobs")
    aws = Informer(api, f"/apis/{aw_mod.V1BETA2}/appwrappers", "appwrappers")
    q_jobset, q_job, q_aw = WorkQueue("jobset"), WorkQueue("job"), WorkQueue("appwrapper")

    def node() -> Obj | None:
        """The node as the API has it (MCAD v2 dispatches against its allocatable)."""
        try:
            return api.get(f"/api/v1/nodes/{args.node_name}")  # type: ignore[no-any-return]
        except ApiError:
            return None

    jobset = JobSetController(api, jobsets, jobs, pods)
    job = JobController(api, jobs, pods, jobsets)
    appwrapper = AppWrapperController(api, aws, pods, q_aw, node)

    def on_pod(key: str, new: Obj | None, old: Obj | None) -> None:
        obj = new or old
        assert obj is not None
        uid = controller_uid(obj)
        for ref in obj["metadata"].get("ownerReferences") or []:
            if ref["uid"] == uid and ref["kind"] == "Job" and ref["apiVersion"] == "batch/v1":
                q_job.add(f"{obj['metadata']['namespace']}/{ref['name']}")
        wrapper = aw_mod.owner_key(obj)
        if wrapper:
            q_aw.add(wrapper)
        jobset_name = (obj["metadata"].get("labels") or {}).get("jobset.sigs.k8s.io/jobset-name")
        if jobset_name:
            q_jobset.add(f"{obj['metadata']['namespace']}/{jobset_name}")

    def on_job(key: str, new: Obj | None, old: Obj | None) -> None:
        q_job.add(key)
        obj = new or old or {"metadata": {"namespace": ""}}
        wrapper = aw_mod.owner_key(obj)
        if wrapper:
            q_aw.add(wrapper)
        uid = controller_uid(obj)
        for ref in obj["metadata"].get("ownerReferences") or []:
            if ref["uid"] == uid and ref["kind"] == "JobSet":
                q_jobset.add(f"{obj['metadata']['namespace']}/{ref['name']}")

    def on_jobset(key: str, new: Obj | None, old: Obj | None) -> None:
        q_jobset.add(key)
        ns, name = key.split("/", 1)
        for j in jobs.items():
            labels = j["metadata"].get("labels") or {}
            if (
                j["metadata"]["namespace"] == ns
                and labels.get("jobset.sigs.k8s.io/jobset-name") == name
            ):
                q_job.add(f"{ns}/{j['metadata']['name']}")

    pods.on_change(on_pod)
    jobsets.on_change(on_jobset)
    jobs.on_change(on_job)
    aws.on_change(lambda key, new, old: q_aw.add(key))
    informers = (pods, jobsets, jobs, aws)
    for inf in informers:
        start_thread(inf.run, f"informer-{inf.name}")
    for inf in informers:
        inf.synced.wait()
    run_workers(q_jobset, jobset.sync, 1)
    run_workers(q_job, job.sync, 2)
    run_workers(q_aw, appwrapper.sync, 1)
    log.info("stand-in ready: JobSet's and the AppWrapper controllers")
    args.state.mkdir(parents=True, exist_ok=True)
    (args.state / "ready").write_text(str(os.getpid()))
    while True:
        time.sleep(6)
        for inf, q in ((jobsets, q_jobset), (jobs, q_job), (aws, q_aw)):
            q.add_all(f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in inf.items())


if __name__ == "__main__":
    sys.exit(main())
