"""The scheduler's part for one node: bind the pods that fit, say why the others do not.

Like kube-scheduler it counts the requests of the pods bound to the node and not yet
finished against the node's allocatable resources, checks the node selector, and leaves
a pod that fits nowhere Pending with PodScheduled=False, reason Unschedulable and the
scheduler's message ("0/1 nodes are available: 1 Insufficient cpu."). Pods of a Volcano
Job (annotation scheduling.k8s.io/group-name) are placed as a gang, as Volcano's
scheduler does: none is bound until the job's minAvailable pods fit together; so are the
pods of a coscheduling PodGroup (label pod-group.scheduling.sigs.k8s.io or
scheduling.x-k8s.io/pod-group), up to its minMember.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal

from .api import Api, ApiError, Obj
from .runtime import Informer
from .util import deleting, now, pod_phase, quantity

log = logging.getLogger("k8s-standin")

GROUP = "scheduling.k8s.io/group-name"
#: The coscheduling PodGroup labels: scheduler-plugins' older group's, and the current one's.
POD_GROUPS = ("pod-group.scheduling.sigs.k8s.io", "scheduling.x-k8s.io/pod-group")


def gang_of(pod: Obj) -> str | None:
    """The gang a pod is placed with: its Volcano group, or its coscheduling PodGroup."""
    group = (pod["metadata"].get("annotations") or {}).get(GROUP)
    if group:
        return group
    labels = pod["metadata"].get("labels") or {}
    for label in POD_GROUPS:
        if labels.get(label):
            return f"{label}:{labels[label]}"
    return None


def pod_requests(pod: Obj) -> dict[str, Decimal]:
    """What a pod asks for: the sum over its containers (a request defaults to the limit),
    at least the largest init container's, plus one pod."""

    def of(c: Obj) -> dict[str, Decimal]:
        res = c.get("resources") or {}
        req = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        return {k: quantity(v) for k, v in req.items()}

    spec = pod["spec"]
    total: dict[str, Decimal] = {}
    for c in spec.get("containers") or []:
        for k, v in of(c).items():
            total[k] = total.get(k, Decimal(0)) + v
    for c in spec.get("initContainers") or []:
        for k, v in of(c).items():
            total[k] = max(total.get(k, Decimal(0)), v)
    total["pods"] = Decimal(1)
    return total


class Scheduler:
    def __init__(
        self,
        api: Api,
        pods: Informer,
        node: Callable[[], Obj | None],
        min_available: Callable[[Obj], int | None],
    ) -> None:
        self.api = api
        self.pods = pods
        self.node = node
        self.min_available = min_available

    def sync(self, _key: str) -> None:
        node = self.node()
        if node is None:
            return
        name = node["metadata"]["name"]
        alloc = {k: quantity(v) for k, v in node["status"]["allocatable"].items()}
        labels = node["metadata"].get("labels") or {}
        pods = self.pods.items()
        free = dict(alloc)
        for p in pods:
            if p["spec"].get("nodeName") == name and pod_phase(p) not in ("Succeeded", "Failed"):
                for k, v in pod_requests(p).items():
                    free[k] = free.get(k, Decimal(0)) - v
        pending = [
            p
            for p in pods
            if not p["spec"].get("nodeName") and not deleting(p) and pod_phase(p) == "Pending"
        ]
        pending.sort(
            key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"])
        )
        done: set[str] = set()
        for pod in pending:
            uid = pod["metadata"]["uid"]
            if uid in done:
                continue
            group = gang_of(pod)
            if not group:
                done.add(uid)
                reasons = self._misfit(pod, free, labels)
                if reasons:
                    self._unschedulable(pod, reasons)
                else:
                    self._bind(pod, name, free)
                continue
            ns = pod["metadata"]["namespace"]
            members = [
                p for p in pending if p["metadata"]["namespace"] == ns and gang_of(p) == group
            ]
            done.update(p["metadata"]["uid"] for p in members)
            placed = [
                p
                for p in pods
                if p["spec"].get("nodeName")
                and p["metadata"]["namespace"] == ns
                and gang_of(p) == group
                and pod_phase(p) not in ("Succeeded", "Failed")
                and not deleting(p)
            ]
            need = (self.min_available(pod) or len(members) + len(placed)) - len(placed)
            trial = dict(free)
            fits: list[Obj] = []
            first_misfit: list[str] = []
            for p in members:
                reasons = self._misfit(p, trial, labels)
                if reasons:
                    first_misfit = first_misfit or reasons
                    continue
                for k, v in pod_requests(p).items():
                    trial[k] = trial.get(k, Decimal(0)) - v
                fits.append(p)
            if len(fits) >= need:
                for p in fits:
                    self._bind(p, name, free)
                for p in members:
                    if p not in fits:
                        self._unschedulable(p, first_misfit)
            else:
                for p in members:
                    self._unschedulable(p, first_misfit or self._misfit(p, free, labels))

    @staticmethod
    def _misfit(pod: Obj, free: dict[str, Decimal], labels: dict[str, str]) -> list[str]:
        reasons = []
        selector = pod["spec"].get("nodeSelector") or {}
        if any(labels.get(k) != v for k, v in selector.items()):
            reasons.append("node(s) didn't match node selector")
        for k, v in sorted(pod_requests(pod).items()):
            if v > 0 and v > free.get(k, Decimal(0)):
                reasons.append("Too many pods" if k == "pods" else f"Insufficient {k}")
        return reasons

    def _bind(self, pod: Obj, node: str, free: dict[str, Decimal]) -> None:
        meta = pod["metadata"]
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            self.api.create(
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/binding", body
            )
        except ApiError as e:
            if e.status in (404, 409):  # gone, or bound meanwhile
                return
            raise
        for k, v in pod_requests(pod).items():
            free[k] = free.get(k, Decimal(0)) - v
        log.info("bound %s/%s to %s", meta["namespace"], meta["name"], node)

    def _unschedulable(self, pod: Obj, reasons: list[str]) -> None:
        msg = "0/1 nodes are available: " + ", ".join(f"1 {r}" for r in sorted(reasons)) + "."
        for c in (pod.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("message") == msg:
                return
        meta = pod["metadata"]
        cond = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": msg,
            "lastProbeTime": None,
            "lastTransitionTime": now(),
        }
        try:
            self.api.merge_patch(
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                {"status": {"phase": "Pending", "conditions": [cond]}},
            )
        except ApiError as e:
            if e.status != 404:
                raise
