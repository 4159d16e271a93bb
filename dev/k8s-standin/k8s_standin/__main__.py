"""``python3 -m k8s_standin ...``: run the stand-in until SIGTERM (dev/k8s starts it).

It plays JobSet's controller (with the Indexed Job controller under it) and the
AppWrapper controllers beside the real node, scheduler, controller manager and Volcano
that dev/k8s runs: those cannot run on Kubernetes 1.20 (see the README next to this
package)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from pathlib import Path

from . import appwrapper as aw_mod
from .api import Api, ApiError, Obj
from .appwrapper import AppWrapperController
from .jobset import JobController, JobSetController, owner_jobset
from .runtime import Informer, WorkQueue, run_workers, start_thread
from .util import controller_uid

log = logging.getLogger("k8s-standin")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="k8s_standin", description=__doc__)
    p.add_argument("--server", required=True)
    p.add_argument("--token-file", required=True)
    p.add_argument("--ca-file", required=True)
    p.add_argument("--state", required=True, type=Path)
    p.add_argument("--node-name", default="torchx-dev-node")
    p.add_argument("--code", default="", help="ignored: dev/k8s passes its code's hash")
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(threadName)s %(message)s", stream=sys.stderr
    )
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    args.state.mkdir(parents=True, exist_ok=True)
    return run(args)


def run(args: argparse.Namespace) -> int:
    """JobSet's and the AppWrapper controllers, beside the real node and controllers."""
    api = Api(args.server, Path(args.token_file).read_text().strip(), args.ca_file)
    pods = Informer(api, "/api/v1/pods", "pods")
    jobsets = Informer(api, "/apis/jobset.x-k8s.io/v1alpha2/jobsets", "jobsets")
    jobs = Informer(api, "/apis/batch/v1/jobs", "jobs")
    aws = Informer(api, f"/apis/{aw_mod.V1BETA2}/appwrappers", "appwrappers")
    # JobSet owns the headless Services it makes: a change (a deletion) of one is its event
    services = Informer(api, "/api/v1/services", "services")
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

    def on_service(key: str, new: Obj | None, old: Obj | None) -> None:
        owner = owner_jobset(new or old or {"metadata": {}})
        if owner:
            q_jobset.add(owner)

    pods.on_change(on_pod)
    services.on_change(on_service)
    jobsets.on_change(on_jobset)
    jobs.on_change(on_job)
    aws.on_change(lambda key, new, old: q_aw.add(key))
    informers = (pods, jobsets, jobs, aws, services)
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
