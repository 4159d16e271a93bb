"""JobSet's controller (jobset.x-k8s.io/v1alpha2) and the batch Job controller under it.

JobSet: one batch/v1 Job per replica of each replicated job, named
`<jobset>-<replicatedJob>-<jobIndex>`, with JobSet's labels and annotations
(jobset.sigs.k8s.io/jobset-name, replicatedjob-name, replicatedjob-replicas, job-index,
job-global-index, job-key, restart-attempt, jobset-uid) on the Job and its pod template; a
headless Service named after the subdomain (network.subdomain, default the JobSet's name),
made when missing (also after someone deleted it: JobSet owns its Services and reconciles
on their deletion; one of that name it did not make is used as it is), and the subdomain
on every pod, so each pod is `<jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>`;
the failure policy (maxRestarts: all Jobs are recreated, each once its predecessor is gone,
or all at once with restartStrategy BlockingRecreate, restarts counted; then Failed,
naming the first failed Job), the success policy
(All or Any of the target replicated jobs' Jobs complete), conditions Completed/Failed,
terminalState and replicatedJobsStatus as JobSet writes them.

Job: the batch/v1 controller's Indexed mode as JobSet uses it (JobSet defaults
completionMode to Indexed): pods `<job>-<index>-<random>`, hostname `<job>-<index>`,
annotation batch.kubernetes.io/job-completion-index, a failed pod replaced until the
failures (a pod deleted before it ended counts as one) exceed backoffLimit (then
condition Failed, reason BackoffLimitExceeded), condition
Complete once every index succeeded.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import secrets
import string

from .api import Api, ApiError, Obj, obj_path
from .runtime import Informer
from .util import deleting, merge_diff, now, owned_by, owner_ref, pod_phase

log = logging.getLogger("k8s-standin")

GV = "jobset.x-k8s.io/v1alpha2"
P = "jobset.sigs.k8s.io/"
JOBSET_NAME = P + "jobset-name"
RJOB_NAME = P + "replicatedjob-name"
RJOB_REPLICAS = P + "replicatedjob-replicas"
GLOBAL_REPLICAS = P + "global-replicas"
JOB_INDEX = P + "job-index"
JOB_GLOBAL_INDEX = P + "job-global-index"
JOB_KEY = P + "job-key"
RESTART = P + "restart-attempt"
JOBSET_UID = P + "jobset-uid"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def _cond(job: Obj, typ: str) -> bool:
    return any(
        c.get("type") == typ and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def _failed_at(job: Obj) -> str:
    """When a Job failed (its Failed condition's time; RFC 3339 sorts as text)."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Failed" and c.get("status") == "True":
            return str(c.get("lastTransitionTime") or "")
    return ""


def owner_jobset(obj: Obj) -> str | None:
    """``namespace/name`` of the JobSet controlling ``obj`` (a Service it made), if any."""
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "JobSet" and ref.get("apiVersion") == GV:
            return f"{obj['metadata']['namespace']}/{ref['name']}"
    return None


def subdomain(js: Obj) -> str:
    return str((js["spec"].get("network") or {}).get("subdomain") or js["metadata"]["name"])


def dns_hostnames(js: Obj) -> bool:
    return (js["spec"].get("network") or {}).get("enableDNSHostnames", True) is not False


class JobSetController:
    def __init__(self, api: Api, jobsets: Informer, jobs: Informer, pods: Informer) -> None:
        self.api = api
        self.jobsets = jobsets
        self.jobs = jobs
        self.pods = pods

    def sync(self, key: str) -> None:
        js = self.jobsets.get(key)
        if js is None or deleting(js):
            return
        meta, spec = js["metadata"], js["spec"]
        status: Obj = copy.deepcopy(js.get("status") or {})
        restarts = int(status.get("restarts") or 0)
        children = owned_by(self.jobs.items(), js)
        if status.get("terminalState"):
            for j in children:  # a finished JobSet leaves no Job running
                if not (_cond(j, "Complete") or _cond(j, "Failed")):
                    self._delete_job(j)
            self._write(js, status, children)
            return
        if spec.get("suspend"):
            # JobSet suspends its Jobs, whose controller then removes their pods (1.20's
            # batch/v1 has no suspend field: JobController reads the JobSet's). JobSet
            # makes the headless Service of a suspended JobSet too.
            if dns_hostnames(js):
                self._service(js)
            conds = [c for c in status.get("conditions") or [] if c.get("type") != "Suspended"]
            conds.append({"type": "Suspended", "status": "True", "reason": "SuspendedJobs",
                          "message": "jobset is suspended", "lastTransitionTime": now()})  # fmt: skip
            if not any(c.get("type") == "Suspended" and c.get("status") == "True"
                       for c in status.get("conditions") or []):  # fmt: skip
                status["conditions"] = conds
            self._write(js, status, children)
            return
        if any(
            c.get("type") == "Suspended" and c.get("status") == "True"
            for c in status.get("conditions") or []
        ):
            status["conditions"] = [
                {**c, "status": "False", "reason": "ResumeJobs", "message": "jobset is resumed",
                 "lastTransitionTime": now()} if c.get("type") == "Suspended" else c
                for c in status["conditions"]
            ]  # fmt: skip
        current = [
            j for j in children if (j["metadata"].get("labels") or {}).get(RESTART) == str(restarts)
        ]
        stale = [j for j in children if j not in current]
        for j in stale:
            self._delete_job(j)
        failed = sorted(
            (j for j in current if _cond(j, "Failed")),
            key=lambda j: (_failed_at(j), j["metadata"]["name"]),
        )
        if failed:
            policy = spec.get("failurePolicy")
            max_restarts = int((policy or {}).get("maxRestarts") or 0)
            counted = int(status.get("restartsCountTowardsMax") or 0)
            if policy is not None and counted < max_restarts:
                status["restarts"] = restarts + 1
                status["restartsCountTowardsMax"] = (
                    int(status.get("restartsCountTowardsMax") or 0) + 1
                )
                for j in current:
                    self._delete_job(j)
                log.info(
                    "jobset %s: restart %d (job %s failed)",
                    key,
                    restarts + 1,
                    failed[0]["metadata"]["name"],
                )
            else:
                reason, msg = (
                    ("ReachedMaxRestarts", "jobset failed due to reaching max number of restarts")
                    if policy is not None
                    else ("FailedJobs", "jobset failed due to one or more job failures")
                )
                # JobSet names the Job that failed first (by its Failed condition's time)
                first = failed[0]["metadata"]["name"]
                self._terminal(status, "Failed", reason, f"{msg} (first failed job: {first})")
                for j in current:
                    if not (_cond(j, "Complete") or _cond(j, "Failed")):
                        self._delete_job(j)
            self._write(js, status, children)
            return
        if self._succeeded(js, current):
            self._terminal(status, "Completed", "AllJobsCompleted", "jobset completed successfully")
            for j in current:
                if not _cond(j, "Complete"):
                    self._delete_job(j)
            self._write(js, status, children)
            return
        # the headless Service, made again if it was deleted (JobSet owns it: its deletion
        # is an event of the JobSet's, see __main__), once the policies have had their say
        if dns_hostnames(js):
            self._service(js)
        # Recreate (the default): a Job is made again once its predecessor of an earlier
        # attempt is gone (it had the same name); BlockingRecreate: once all of them are
        blocking = (spec.get("failurePolicy") or {}).get("restartStrategy") == "BlockingRecreate"
        if not (stale and blocking):
            names = {j["metadata"]["name"] for j in children}
            gindex = 0
            for rjob in spec.get("replicatedJobs") or []:
                for i in range(int(rjob.get("replicas", 1))):
                    name = f"{meta['name']}-{rjob['name']}-{i}"
                    if name not in names:
                        self._create_job(js, rjob, i, gindex, restarts)
                    gindex += 1
        self._write(js, status, children)

    def _succeeded(self, js: Obj, jobs: list[Obj]) -> bool:
        sp = js["spec"].get("successPolicy") or {}
        op = sp.get("operator") or "All"
        targets = sp.get("targetReplicatedJobs") or [
            r["name"] for r in js["spec"].get("replicatedJobs") or []
        ]
        wanted = [
            f"{js['metadata']['name']}-{r['name']}-{i}"
            for r in js["spec"].get("replicatedJobs") or []
            if r["name"] in targets
            for i in range(int(r.get("replicas", 1)))
        ]
        done = {j["metadata"]["name"] for j in jobs if _cond(j, "Complete")}
        if op == "Any":
            return any(n in done for n in wanted)
        return bool(wanted) and all(n in done for n in wanted)

    @staticmethod
    def _terminal(status: Obj, state: str, reason: str, msg: str) -> None:
        status["terminalState"] = state
        conds = [c for c in status.get("conditions") or [] if c.get("type") != state]
        conds.append({"type": state, "status": "True", "reason": reason, "message": msg,
                      "lastTransitionTime": now()})  # fmt: skip
        status["conditions"] = conds

    def _create_job(self, js: Obj, rjob: Obj, index: int, gindex: int, restarts: int) -> None:
        meta = js["metadata"]
        ns, jsname = meta["namespace"], meta["name"]
        name = f"{jsname}-{rjob['name']}-{index}"
        tmpl = copy.deepcopy(rjob.get("template") or {})
        jspec = tmpl.get("spec") or {}
        jspec.pop("completionMode", None)  # 1.20's batch/v1 has no such field (see JobController)
        labels = {
            JOBSET_NAME: jsname,
            RJOB_NAME: rjob["name"],
            RJOB_REPLICAS: str(rjob.get("replicas", 1)),
            GLOBAL_REPLICAS: str(
                sum(int(r.get("replicas", 1)) for r in js["spec"].get("replicatedJobs") or [])
            ),
            JOB_INDEX: str(index),
            JOB_GLOBAL_INDEX: str(gindex),
            RESTART: str(restarts),
            JOB_KEY: hashlib.sha1(f"{ns}/{name}".encode()).hexdigest(),
            JOBSET_UID: meta["uid"],
        }
        annotations = {k: v for k, v in labels.items() if k != JOBSET_UID}
        jmeta = tmpl.get("metadata") or {}
        pod_tmpl = jspec.setdefault("template", {})
        pmeta = pod_tmpl.setdefault("metadata", {})
        pmeta["labels"] = {**(pmeta.get("labels") or {}), **labels}
        pmeta["annotations"] = {**(pmeta.get("annotations") or {}), **annotations}
        if dns_hostnames(js):
            pod_tmpl.setdefault("spec", {})["subdomain"] = subdomain(js)
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {**(jmeta.get("labels") or {}), **labels},
                "annotations": {**(jmeta.get("annotations") or {}), **annotations},
                "ownerReferences": [owner_ref(js)],
            },
            "spec": jspec,
        }
        try:
            got = self.api.create(obj_path("batch/v1", "jobs", ns), job)
            self.jobs.put(got)
            log.info("jobset: created job %s/%s", ns, name)
        except ApiError as e:
            if e.status != 409:
                raise

    def _service(self, js: Obj) -> None:
        meta = js["metadata"]
        svc = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": subdomain(js),
                "namespace": meta["namespace"],
                "ownerReferences": [owner_ref(js)],
            },
            "spec": {
                "clusterIP": "None",
                "selector": {JOBSET_NAME: meta["name"]},
                "publishNotReadyAddresses": (js["spec"].get("network") or {}).get(
                    "publishNotReadyAddresses", True
                ),
            },
        }
        try:
            self.api.create(obj_path("v1", "services", meta["namespace"]), svc)
        except ApiError as e:
            if e.status != 409:
                raise

    def _delete_job(self, job: Obj) -> None:
        if deleting(job):
            return
        meta = job["metadata"]
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground",
                "preconditions": {"uid": meta["uid"]}}  # fmt: skip
        try:
            self.api.delete(obj_path("batch/v1", "jobs", meta["namespace"], meta["name"]), body)
        except ApiError as e:
            if e.status != 409:
                raise

    def _write(self, js: Obj, status: Obj, children: list[Obj]) -> None:
        restarts = str(int(status.get("restarts") or 0))
        rstatus = []
        for r in js["spec"].get("replicatedJobs") or []:
            mine = [
                j
                for j in children
                if (j["metadata"].get("labels") or {}).get(RJOB_NAME) == r["name"]
                and (j["metadata"].get("labels") or {}).get(RESTART) == restarts
                and not deleting(j)
            ]
            ready = 0
            for j in [] if js["spec"].get("suspend") else mine:
                if _cond(j, "Complete") or _cond(j, "Failed"):
                    continue
                pods = [
                    p
                    for p in owned_by(self.pods.items(), j)
                    if pod_phase(p) in ("Running", "Succeeded")
                ]
                want = int(j["spec"].get("parallelism", 1))
                if len(pods) >= want:
                    ready += 1
            rstatus.append({
                "name": r["name"],
                "ready": ready,
                "succeeded": sum(_cond(j, "Complete") for j in mine),
                "failed": sum(_cond(j, "Failed") for j in mine),
                "active": 0 if js["spec"].get("suspend") else sum(not (_cond(j, "Complete") or _cond(j, "Failed")) for j in mine),
                "suspended": len(mine) if js["spec"].get("suspend") else 0,
            })  # fmt: skip
        status["replicatedJobsStatus"] = rstatus
        status.setdefault("restarts", 0)
        if status == (js.get("status") or {}):
            return
        meta = js["metadata"]
        try:
            got = self.api.merge_patch(
                obj_path(GV, "jobsets", meta["namespace"], meta["name"]) + "/status",
                {
                    "metadata": {"resourceVersion": js["metadata"]["resourceVersion"]},
                    "status": merge_diff(js.get("status") or {}, status),
                },
            )
            self.jobsets.put(got)
        except ApiError as e:
            if e.status != 404:
                raise


class JobController:
    def __init__(self, api: Api, jobs: Informer, pods: Informer, jobsets: Informer) -> None:
        self.api = api
        self.jobs = jobs
        self.pods = pods
        self.jobsets = jobsets

    def _indexed(self, job: Obj) -> bool:
        """Indexed when the Job says so, or when its JobSet's template does (or leaves it to
        JobSet's default): kube-apiserver 1.20 drops completionMode from a batch/v1 Job."""
        if job["spec"].get("completionMode"):
            return bool(job["spec"]["completionMode"] == "Indexed")
        labels = job["metadata"].get("labels") or {}
        if JOBSET_NAME not in labels:
            return False
        js = self.jobsets.get(f"{job['metadata']['namespace']}/{labels[JOBSET_NAME]}")
        if js is None:
            return True
        for r in js["spec"].get("replicatedJobs") or []:
            if r["name"] == labels.get(RJOB_NAME):
                mode = ((r.get("template") or {}).get("spec") or {}).get("completionMode")
                return mode in (None, "Indexed")
        return True

    def _suspended(self, job: Obj) -> bool:
        if job["spec"].get("suspend"):
            return True
        labels = job["metadata"].get("labels") or {}
        if JOBSET_NAME not in labels:
            return False
        js = self.jobsets.get(f"{job['metadata']['namespace']}/{labels[JOBSET_NAME]}")
        return bool(js and js["spec"].get("suspend"))

    def sync(self, key: str) -> None:
        job = self.jobs.get(key)
        if job is None or deleting(job):
            return
        spec = job["spec"]
        status: Obj = copy.deepcopy(job.get("status") or {})
        pods = owned_by(self.pods.items(), job)
        finished = _cond(job, "Complete") or _cond(job, "Failed")
        active = [
            p for p in pods if pod_phase(p) not in ("Succeeded", "Failed") and not deleting(p)
        ]
        if finished or self._suspended(job):
            for p in active:
                self._delete_pod(p)
            if finished:
                return
            t = now()
            if not _cond(job, "Suspended"):
                status["conditions"] = [*(status.get("conditions") or []),
                    {"type": "Suspended", "status": "True", "reason": "JobSuspended",
                     "message": "Job suspended", "lastProbeTime": t, "lastTransitionTime": t}]  # fmt: skip
            status.pop("active", None)
            self._write(job, status)
            return
        parallelism = int(spec.get("parallelism", 1))
        completions = int(spec.get("completions", parallelism))
        backoff = int(spec.get("backoffLimit", 6))
        indexed = self._indexed(job)
        succeeded_idx = {_index(p) for p in pods if pod_phase(p) == "Succeeded"}
        # a pod deleted before it ended (evicted, deleted by someone) is a failure, as the
        # Job controller counts it since it tracks pods with finalizers (Kubernetes 1.26)
        failed = sum(
            pod_phase(p) == "Failed" or (deleting(p) and pod_phase(p) != "Succeeded") for p in pods
        )
        failed += sum(
            int(cs.get("restartCount") or 0)
            for p in active
            for cs in (p.get("status") or {}).get("containerStatuses") or []
        )
        t = now()
        status.setdefault("startTime", t)
        if failed > backoff:
            for p in active:
                self._delete_pod(p)
            status["conditions"] = [*(status.get("conditions") or []),
                {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                 "message": "Job has reached the specified backoff limit",
                 "lastProbeTime": t, "lastTransitionTime": t}]  # fmt: skip
            active = []
        elif (indexed and len(succeeded_idx - {None}) >= completions) or (
            not indexed and sum(pod_phase(p) == "Succeeded" for p in pods) >= completions
        ):
            status["conditions"] = [*(status.get("conditions") or []),
                {"type": "Complete", "status": "True", "lastProbeTime": t, "lastTransitionTime": t}]  # fmt: skip
            status["completionTime"] = t
        elif indexed:
            running_idx = {_index(p) for p in active}
            for i in range(completions):
                if i not in succeeded_idx and i not in running_idx:
                    self._create_pod(job, i)
        else:
            done = sum(pod_phase(p) == "Succeeded" for p in pods)
            for _ in range(min(parallelism, completions - done) - len(active)):
                self._create_pod(job, None)
        status["active"] = len(active)
        status["succeeded"] = sum(pod_phase(p) == "Succeeded" for p in pods)
        status["failed"] = failed
        for k in ("active", "succeeded", "failed"):
            if not status[k]:
                status.pop(k)
        self._write(job, status)

    def _write(self, job: Obj, status: Obj) -> None:
        if status != (job.get("status") or {}):
            meta = job["metadata"]
            try:
                got = self.api.merge_patch(
                    obj_path("batch/v1", "jobs", meta["namespace"], meta["name"]) + "/status",
                    {
                        "metadata": {"resourceVersion": job["metadata"]["resourceVersion"]},
                        "status": merge_diff(job.get("status") or {}, status),
                    },
                )
                self.jobs.put(got)
            except ApiError as e:
                if e.status != 404:  # 409: written from a stale copy; synced again
                    raise

    def _create_pod(self, job: Obj, index: int | None) -> None:
        meta = job["metadata"]
        tmpl = copy.deepcopy(job["spec"].get("template") or {})
        pmeta = tmpl.get("metadata") or {}
        pspec = tmpl.get("spec") or {}
        suffix = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(5))
        labels = {
            **(pmeta.get("labels") or {}),
            "controller-uid": meta["uid"],
            "job-name": meta["name"],
        }
        annotations = dict(pmeta.get("annotations") or {})
        base = meta["name"]
        if index is not None:
            annotations[COMPLETION_INDEX] = str(index)
            base = f"{meta['name']}-{index}"
            if pspec.get("subdomain"):
                pspec.setdefault("hostname", base)
            for c in [*(pspec.get("containers") or []), *(pspec.get("initContainers") or [])]:
                if not any(e["name"] == "JOB_COMPLETION_INDEX" for e in c.get("env") or []):
                    c["env"] = [*(c.get("env") or []), {"name": "JOB_COMPLETION_INDEX", "valueFrom": {
                        "fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}}}]  # fmt: skip
        pod: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{base}-{suffix}",
                "namespace": meta["namespace"],
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [owner_ref(job)],
            },
            "spec": pspec,
        }
        got = self.api.create(obj_path("v1", "pods", meta["namespace"]), pod)
        self.pods.put(got)
        log.info("job: created pod %s/%s", meta["namespace"], pod["metadata"]["name"])

    def _delete_pod(self, pod: Obj) -> None:
        if deleting(pod):
            return
        meta = pod["metadata"]
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": meta["uid"]}}
        try:
            if (
                self.api.delete(obj_path("v1", "pods", meta["namespace"], meta["name"]), body)
                is None
            ):
                self.pods.forget(f"{meta['namespace']}/{meta['name']}")  # already gone
        except ApiError as e:
            if e.status != 409:
                raise


def _index(pod: Obj) -> int | None:
    v = (pod["metadata"].get("annotations") or {}).get(COMPLETION_INDEX)
    return int(v) if v is not None else None
