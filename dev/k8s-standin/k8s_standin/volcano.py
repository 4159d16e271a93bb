"""Volcano's Job controller (batch.volcano.sh/v1alpha1), the parts a launcher relies on.

Pods: `<job>-<task>-<index>`, owned by the Job, with Volcano's labels and annotations
(volcano.sh/job-name, volcano.sh/job-namespace, volcano.sh/queue-name, volcano.sh/task-spec,
volcano.sh/task-index, volcano.sh/job-version, scheduling.k8s.io/group-name). Plugins: `svc`
(a headless Service named after the job, each pod's hostname = its name and subdomain =
the job, a ConfigMap `<job>-svc` mounted at /etc/volcano with `<task>.host` files, and
VC_<TASK>_HOSTS / VC_<TASK>_NUM in every container) and `env` (VK_TASK_INDEX and
VC_TASK_INDEX). Lifecycle: the state machine of Volcano's job controller (Pending, Running,
Restarting, Completing, Completed, Aborting, Aborted, Terminating, Terminated, Failed),
policies (event or exitCode -> action) at task and job level, maxRetry, minAvailable,
minSuccess; `.status` with the pod counts, taskStatusCount, retryCount and version.
"""

from __future__ import annotations

import logging
from typing import Any

from .api import Api, ApiError, Obj, obj_path
from .runtime import Informer
from .util import deleting, env_name, merge_diff, now, owned_by, owner_ref, pod_phase

log = logging.getLogger("k8s-standin")

GROUP_VERSION = "batch.volcano.sh/v1alpha1"
JOB_NAME = "volcano.sh/job-name"
JOB_NS = "volcano.sh/job-namespace"
QUEUE = "volcano.sh/queue-name"
TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
JOB_VERSION = "volcano.sh/job-version"
GROUP = "scheduling.k8s.io/group-name"

FINAL = {"Completed", "Failed", "Aborted", "Terminated"}
#: Phases in which the controller removes pods, and where it goes once they are gone.
KILLING = {"Restarting": "Pending", "Aborting": "Aborted", "Completing": "Completed",
           "Terminating": "Terminated"}  # fmt: skip
#: Actions that move a job to a killing phase.
ACTION_PHASE = {"RestartJob": "Restarting", "AbortJob": "Aborting", "CompleteJob": "Completing",
                "TerminateJob": "Terminating"}  # fmt: skip


def total_replicas(job: Obj) -> int:
    return sum(int(t.get("replicas", 0)) for t in job["spec"].get("tasks") or [])


def min_available(job: Obj) -> int:
    """spec.minAvailable; Volcano's admission defaults it to the sum of the tasks'
    minAvailable (each defaulting to its replicas)."""
    value = job["spec"].get("minAvailable")
    if value:
        return int(value)
    return sum(
        int(t.get("minAvailable", t.get("replicas", 0))) for t in job["spec"].get("tasks") or []
    )


class VolcanoController:
    def __init__(self, api: Api, jobs: Informer, pods: Informer) -> None:
        self.api = api
        self.jobs = jobs
        self.pods = pods

    # --- reconcile ------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        job = self.jobs.get(key)
        if job is None or deleting(job):
            return
        status = dict(job.get("status") or {})
        state = dict(status.get("state") or {})
        phase = state.get("phase") or ""
        pods = [p for p in owned_by(self.pods.items(), job)]
        version = int(status.get("version") or 0)
        plugins = job["spec"].get("plugins") or {}
        if not phase:
            self._plugins_on_add(job, plugins)
            status["controlledResources"] = {f"plugin-{p}": p for p in sorted(plugins)}
            phase = "Pending"
            state = {"phase": phase, "lastTransitionTime": now()}
        elif phase in FINAL:
            # A finished job runs nothing (also when someone else wrote the phase, as a
            # launcher's cancel writes Aborted): its unfinished pods go, finished ones stay.
            for p in pods:
                if pod_phase(p) not in ("Succeeded", "Failed"):
                    self._delete_pod(p)
        elif phase in KILLING:
            # soft: finished pods stay for their logs and codes; so do those of a restart
            # that used up maxRetry (the job then fails: v1.5.1 keeps the last attempt's)
            retain = phase != "Restarting" or int(status.get("retryCount") or 0) >= int(
                job["spec"].get("maxRetry") or 3
            )
            alive = [p for p in pods if not (retain and pod_phase(p) in ("Succeeded", "Failed"))]
            for p in alive:
                self._delete_pod(p)
            if not alive:
                phase = KILLING[phase]
                if phase == "Pending":
                    retry = int(status.get("retryCount") or 0)
                    max_retry = int(job["spec"].get("maxRetry") or 3)  # 0 means Volcano's default
                    if retry >= max_retry:
                        phase = "Failed"
                state = {"phase": phase, "lastTransitionTime": now()}
        if phase in ("Pending", "Running"):
            current = [p for p in pods if _version(p) == version]
            action, reason = self._policy_action(job, current, status)
            if action in ACTION_PHASE:
                phase = ACTION_PHASE[action]
                state = {"phase": phase, "reason": reason, "lastTransitionTime": now()}
                if action == "RestartJob":
                    status["retryCount"] = int(status.get("retryCount") or 0) + 1
                    version += 1
                # a restart that uses up maxRetry keeps the finished pods (see KILLING above)
                last = int(status.get("retryCount") or 0) >= int(job["spec"].get("maxRetry") or 3)
                for p in pods:
                    restart = phase == "Restarting" and not last
                    if restart or pod_phase(p) not in ("Succeeded", "Failed"):
                        self._delete_pod(p)
            elif action in ("RestartTask", "RestartPod"):
                retry = int(status.get("retryCount") or 0)
                task: Obj = next(
                    (
                        t
                        for t in job["spec"].get("tasks") or []
                        if reason and t["name"] == _task(reason[0])
                    ),
                    {},
                )
                if retry >= int(task.get("maxRetry") or job["spec"].get("maxRetry") or 3):
                    phase = "Failed"
                    state = {
                        "phase": phase,
                        "reason": "retries exhausted",
                        "lastTransitionTime": now(),
                    }
                else:
                    status["retryCount"] = retry + 1
                    for p in reason:
                        self._delete_pod(p)
                    pods = [p for p in pods if p not in reason]
        if phase in ("Pending", "Running"):
            self._create_pods(job, pods, version, plugins)
        counts = self._counts(job, [p for p in owned_by(self.pods.items(), job)])
        if (
            phase == "Pending"
            and min_available(job) <= counts["running"] + counts["succeeded"] + counts["failed"]
        ):
            phase = "Running"
            state = {"phase": phase, "lastTransitionTime": now()}
        if phase == "Running":
            new = self._running_outcome(job, counts)
            if new:
                phase = new
                state = {"phase": phase, "lastTransitionTime": now()}
        status.update(counts)
        status["state"] = state
        status["version"] = version
        status["minAvailable"] = min_available(job)
        conds = list(status.get("conditions") or [])
        if not conds or conds[-1].get("status") != phase:
            conds.append(
                {"status": phase, "lastTransitionTime": state.get("lastTransitionTime") or now()}
            )
        status["conditions"] = conds
        if status != (job.get("status") or {}):
            meta = job["metadata"]
            try:
                got = self.api.merge_patch(
                    obj_path(GROUP_VERSION, "jobs", meta["namespace"], meta["name"]) + "/status",
                    {
                        "metadata": {"resourceVersion": job["metadata"]["resourceVersion"]},
                        "status": merge_diff(job.get("status") or {}, status),
                    },
                )
                self.jobs.put(got)
            except ApiError as e:
                if e.status != 404:  # 409: written from a stale copy; synced again
                    raise

    def _running_outcome(self, job: Obj, counts: dict[str, Any]) -> str | None:
        """Volcano's Running state: the job ends once every pod has ended."""
        spec = job["spec"]
        min_success = spec.get("minSuccess")
        if min_success is not None and counts["succeeded"] >= int(min_success):
            return "Completed"
        if counts["succeeded"] + counts["failed"] < total_replicas(job):
            return None
        for t in spec.get("tasks") or []:
            if t.get("minAvailable") is None:
                continue
            done = counts["taskStatusCount"].get(t["name"], {}).get("phase", {}).get("Succeeded", 0)
            if done < int(t["minAvailable"]):
                return "Failed"
        if min_success is not None and counts["succeeded"] < int(min_success):
            return "Failed"
        return "Completed" if counts["succeeded"] >= min_available(job) else "Failed"

    def _policy_action(self, job: Obj, pods: list[Obj], status: Obj) -> tuple[str | None, Any]:
        """The first policy a failed pod or a completed task triggers: task policies first,
        then the job's. RestartTask/RestartPod answer the pods to remove."""
        tasks = {t["name"]: t for t in job["spec"].get("tasks") or []}
        for p in pods:
            if pod_phase(p) != "Failed" or deleting(p):
                continue
            task = tasks.get(_task(p))
            codes = _exit_codes(p)
            for pol in [
                *((task or {}).get("policies") or []),
                *(job["spec"].get("policies") or []),
            ]:
                events = [*([pol["event"]] if pol.get("event") else []), *(pol.get("events") or [])]
                hit = "exitCode" in pol and pol["exitCode"] in codes
                hit = hit or "PodFailed" in events or "*" in events
                if not hit:
                    continue
                action = pol.get("action") or "SyncJob"
                if action == "RestartTask":
                    return action, [q for q in pods if _task(q) == _task(p)]
                if action == "RestartPod":
                    return action, [p]
                reason = (
                    f"PodFailed: {p['metadata']['name']} exit code {codes[0] if codes else '?'}"
                )
                return action, reason
        for name, task in tasks.items():
            members = [p for p in pods if _task(p) == name]
            if len(members) < int(task.get("replicas", 0)) or not members:
                continue
            if all(pod_phase(p) == "Succeeded" for p in members):
                for pol in [*(task.get("policies") or []), *(job["spec"].get("policies") or [])]:
                    events = [
                        *([pol["event"]] if pol.get("event") else []),
                        *(pol.get("events") or []),
                    ]
                    if "TaskCompleted" in events:
                        return pol.get("action"), f"TaskCompleted: {name}"
        return None, None

    # --- pods -----------------------------------------------------------------------------

    def _create_pods(self, job: Obj, pods: list[Obj], version: int, plugins: Obj) -> None:
        names = {p["metadata"]["name"] for p in pods}
        for task in job["spec"].get("tasks") or []:
            for i in range(int(task.get("replicas", 0))):
                name = f"{job['metadata']['name']}-{task['name']}-{i}"
                if name in names:
                    continue
                pod = self._pod(job, task, i, version, plugins)
                try:
                    got = self.api.create(obj_path("v1", "pods", job["metadata"]["namespace"]), pod)
                    self.pods.put(got)
                    log.info("volcano: created pod %s/%s", job["metadata"]["namespace"], name)
                except ApiError as e:
                    if e.status != 409:  # 409: made before, still being deleted
                        raise

    def _pod(self, job: Obj, task: Obj, index: int, version: int, plugins: Obj) -> Obj:
        meta = job["metadata"]
        jname, ns = meta["name"], meta["namespace"]
        tmpl = task.get("template") or {}
        tmeta = tmpl.get("metadata") or {}
        spec: Obj = _copy(tmpl.get("spec") or {})
        queue = job["spec"].get("queue") or "default"
        labels = {**(tmeta.get("labels") or {}), JOB_NAME: jname, JOB_NS: ns, QUEUE: queue,
                  TASK_SPEC: task["name"], TASK_INDEX: str(index), JOB_VERSION: str(version)}  # fmt: skip
        annotations = {**(tmeta.get("annotations") or {}), JOB_NAME: jname, QUEUE: queue,
                       TASK_SPEC: task["name"], TASK_INDEX: str(index), JOB_VERSION: str(version),
                       GROUP: f"{jname}-{meta['uid']}"}  # fmt: skip
        if not spec.get("schedulerName"):
            spec["schedulerName"] = job["spec"].get("schedulerName") or "volcano"
        if job["spec"].get("priorityClassName") and not spec.get("priorityClassName"):
            spec["priorityClassName"] = job["spec"]["priorityClassName"]
        env: list[Obj] = []
        if "env" in plugins:
            env += [{"name": "VK_TASK_INDEX", "value": str(index)},
                    {"name": "VC_TASK_INDEX", "value": str(index)}]  # fmt: skip
        if "svc" in plugins:
            spec.setdefault("hostname", f"{jname}-{task['name']}-{index}")
            spec.setdefault("subdomain", jname)
            for t in job["spec"].get("tasks") or []:
                env += [{"name": f"VC_{env_name(t['name'])}_HOSTS", "value": ",".join(_hosts(job, t))},
                        {"name": f"VC_{env_name(t['name'])}_NUM", "value": str(t.get("replicas", 0))}]  # fmt: skip
            vol = f"{jname}-svc"
            spec["volumes"] = [
                *(spec.get("volumes") or []),
                {"name": vol, "configMap": {"name": vol}},
            ]
        for key in ("containers", "initContainers"):
            for c in spec.get(key) or []:
                have = {e["name"] for e in c.get("env") or []}
                c["env"] = [*(c.get("env") or []), *(e for e in env if e["name"] not in have)]
                if "svc" in plugins:
                    mount = {"name": f"{jname}-svc", "mountPath": "/etc/volcano"}
                    c["volumeMounts"] = [*(c.get("volumeMounts") or []), mount]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{jname}-{task['name']}-{index}",
                "namespace": ns,
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [owner_ref(job)],
            },
            "spec": spec,
        }

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

    def _plugins_on_add(self, job: Obj, plugins: Obj) -> None:
        if "svc" not in plugins:
            return
        meta = job["metadata"]
        jname, ns = meta["name"], meta["namespace"]
        data: dict[str, str] = {}
        for t in job["spec"].get("tasks") or []:
            hosts = _hosts(job, t)
            data[f"{t['name']}.host"] = "\n".join(hosts)
            data[f"VC_{env_name(t['name'])}_HOSTS"] = ",".join(hosts)
            data[f"VC_{env_name(t['name'])}_NUM"] = str(t.get("replicas", 0))
        owner = [owner_ref(job)]
        cm = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": f"{jname}-svc", "namespace": ns, "ownerReferences": owner},
              "data": data}  # fmt: skip
        svc = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": jname, "namespace": ns, "ownerReferences": owner},
            "spec": {
                "clusterIP": "None",
                "publishNotReadyAddresses": True,
                "selector": {JOB_NAME: jname, JOB_NS: ns},
                "ports": [
                    {"name": "placeholder-volcano", "port": 1, "protocol": "TCP", "targetPort": 1}
                ],
            },
        }
        for plural, obj in (("configmaps", cm), ("services", svc)):
            try:
                self.api.create(obj_path("v1", plural, ns), obj)
            except ApiError as e:
                if e.status != 409:
                    raise

    def _counts(self, job: Obj, pods: list[Obj]) -> dict[str, Any]:
        c = {
            "pending": 0,
            "running": 0,
            "succeeded": 0,
            "failed": 0,
            "terminating": 0,
            "unknown": 0,
        }
        tasks: dict[str, dict[str, dict[str, int]]] = {}
        for p in pods:
            phase = pod_phase(p)
            if deleting(p):
                c["terminating"] += 1
                continue
            c[{"Pending": "pending", "Running": "running", "Succeeded": "succeeded",
               "Failed": "failed"}.get(phase, "unknown")] += 1  # fmt: skip
            ph = tasks.setdefault(_task(p), {"phase": {}})["phase"]
            ph[phase] = ph.get(phase, 0) + 1
        return {**c, "taskStatusCount": tasks}

    def min_available_of(self, pod: Obj) -> int | None:
        """For the scheduler's gang placement: the pod's job's minAvailable."""
        labels = pod["metadata"].get("labels") or {}
        name = labels.get(JOB_NAME)
        if not name:
            return None
        job = self.jobs.get(f"{pod['metadata']['namespace']}/{name}")
        return min_available(job) if job else None


def _hosts(job: Obj, task: Obj) -> list[str]:
    jname = job["metadata"]["name"]
    return [f"{jname}-{task['name']}-{i}.{jname}" for i in range(int(task.get("replicas", 0)))]


def _task(pod: Obj) -> str:
    return str((pod["metadata"].get("annotations") or {}).get(TASK_SPEC, ""))


def _version(pod: Obj) -> int:
    return int((pod["metadata"].get("annotations") or {}).get(JOB_VERSION, "0"))


def _exit_codes(pod: Obj) -> list[int]:
    codes = []
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        term = (cs.get("state") or {}).get("terminated")
        if term and term.get("exitCode"):
            codes.append(int(term["exitCode"]))
    return codes


def _copy(obj: Any) -> Any:
    import copy

    return copy.deepcopy(obj)
