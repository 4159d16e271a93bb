"""CodeFlare's AppWrapper controllers (workload.codeflare.dev), the parts a launcher relies on.

One CRD, two controllers, told apart by the spec (both versions are served; see
dev/k8s-crds/appwrapper.yaml):

- v1beta1, ``spec.resources.GenericItems``: MCAD v2. State ''-> Pending; dispatched
  (Running/creating) once the AppWrapper's custompodresources fit what the node has left
  after the pods of no AppWrapper and the AppWrappers already dispatched; every wrapped
  object (and every embedded object with apiVersion, kind and metadata) created with the
  labels appwrapper.mcad.ibm.com and appwrapper.mcad.ibm.com/namespace; Running/created;
  Completed when no pod runs or waits and enough succeeded; a pod count below
  minAvailable ``timeInSeconds`` after dispatch requeues it (Running/deleting, objects
  deleted, restarts + 1, Pending again after ``pauseTimeInSeconds``) until
  ``maxNumRequeuings``, then Failed/deleting and Failed. Status: state, step, restarts,
  transitions (the last 20), transitionCount, dispatchTimestamp, requeueTimestamp, and
  the queuing condition (whose type MCAD spells ``Pending``, its queued state).
- v1beta2, ``spec.components``: the AppWrapper controller, standalone (no Kueue). Phase
  ''-> Suspended -> Resuming (unless spec.suspend) -> Running -> Succeeded, or Resetting
  (resettingCount + 1, components deleted, a pause) and Resuming again, or Failed once
  the retry limit is reached; conditions QuotaReserved, ResourcesDeployed, PodsReady,
  Unhealthy, DeletingResources; componentStatus; the controller owner reference and the
  workload.codeflare.dev/appwrapper label on each component and on its pod templates;
  the grace periods, retry limit and exit-code annotations.

Both hold the finalizer workload.codeflare.dev/finalizer: a deleted AppWrapper goes once
its wrapped objects and their pods are gone (forced after the grace period).
"""

from __future__ import annotations

import copy
import datetime as dt
import logging
import re
import threading
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from .api import Api, ApiError, Obj, obj_path
from .runtime import Informer, WorkQueue
from .util import deleting, merge_diff, now, pod_phase, pod_requests, quantity

log = logging.getLogger("k8s-standin")

GROUP = "workload.codeflare.dev"
V1BETA1, V1BETA2 = f"{GROUP}/v1beta1", f"{GROUP}/v1beta2"
FINALIZER = "workload.codeflare.dev/finalizer"
MCAD_NAME = "appwrapper.mcad.ibm.com"
MCAD_NS = "appwrapper.mcad.ibm.com/namespace"
AW_LABEL = "workload.codeflare.dev/appwrapper"
ANN = "workload.codeflare.dev.appwrapper/"
#: MCAD v2's CRD defaults for spec.schedulingSpec.requeuing (also used when it is absent).
REQUEUING = {"timeInSeconds": 270, "pauseTimeInSeconds": 90, "forceDeletionTimeInSeconds": 570,
             "maxNumRequeuings": 0}  # fmt: skip
#: The AppWrapper controller's default durations (seconds) and retry limit.
FAULT = {"admissionGracePeriodDuration": 60, "warmupGracePeriodDuration": 300,
         "failureGracePeriodDuration": 60, "retryPausePeriodDuration": 90,
         "forcefulDeletionGracePeriodDuration": 600, "deletionOnFailureGracePeriodDuration": 0,
         "successTTLDuration": 7 * 86400}  # fmt: skip
GRACE_MAX = 86400
RETRY_LIMIT = 3
#: Plurals of the kinds a launcher wraps; others are found by discovery.
PLURALS = {("v1", "Pod"): "pods", ("v1", "Service"): "services", ("v1", "ConfigMap"): "configmaps",
           ("v1", "Secret"): "secrets", ("batch/v1", "Job"): "jobs",
           ("scheduling.sigs.k8s.io/v1alpha1", "PodGroup"): "podgroups",
           ("scheduling.x-k8s.io/v1alpha1", "PodGroup"): "podgroups"}  # fmt: skip

_DURATION = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


class Fatal(Exception):
    """A wrapped object that can never be made (unknown kind, refused as invalid)."""


def go_duration(text: str) -> float | None:
    """A Go duration ("90s", "1m30s", "500ms") in seconds; None when malformed."""
    text = text.strip()
    if text in ("0", ""):
        return 0.0 if text == "0" else None
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    return total if pos == len(text) else None


def _ts(value: str | None) -> float:
    if not value:
        return 0.0
    return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()


def _now() -> float:
    return dt.datetime.now(dt.UTC).timestamp()


def is_v1beta2(aw: Obj) -> bool:
    return "components" in (aw.get("spec") or {})


def set_condition(status: Obj, typ: str, state: bool, reason: str, message: str = "") -> None:
    """As apimachinery's SetStatusCondition: lastTransitionTime moves only when the status
    changes. An empty message is left out (the dev API server cannot store "" there)."""
    value = "True" if state else "False"
    conds = status.setdefault("conditions", [])
    found = next((c for c in conds if c["type"] == typ), None)
    if found is None:
        found = {"type": typ, "lastTransitionTime": now()}
        conds.append(found)
    elif found["status"] != value:
        found["lastTransitionTime"] = now()
    found.update(status=value, reason=reason, message=message)
    if not message:
        del found["message"]


def find_condition(status: Obj, typ: str) -> Obj | None:
    return next((c for c in status.get("conditions") or [] if c["type"] == typ), None)


def condition_true(status: Obj, typ: str) -> bool:
    c = find_condition(status, typ)
    return bool(c and c["status"] == "True")


def clear_condition(status: Obj, typ: str, reason: str, message: str = "") -> None:
    if condition_true(status, typ):
        set_condition(status, typ, False, reason, message)


def _at(obj: Any, path: str) -> Obj | None:
    """The pod template at PATH ("template", "template.spec.template") of a component."""
    parts = path.split(".")
    if not parts or parts[0] != "template":
        return None
    node = obj
    for p in parts[1:]:
        if not isinstance(node, dict) or p not in node:
            return None
        node = node[p]
    return node if isinstance(node, dict) else None


def _inferred_podsets(template: Obj) -> list[Obj]:
    """The pod sets the controller knows for a component that declares none."""
    kind = (template.get("apiVersion"), template.get("kind"))
    if kind == ("v1", "Pod"):
        return [{"replicas": 1, "path": "template"}]
    if kind == ("batch/v1", "Job"):
        n = int((template.get("spec") or {}).get("parallelism") or 1)
        return [{"replicas": n, "path": "template.spec.template"}]
    return []


class AppWrapperController:
    def __init__(
        self,
        api: Api,
        aws: Informer,
        pods: Informer,
        queue: WorkQueue,
        node: Callable[[], Obj | None],
    ) -> None:
        self.api = api
        self.aws = aws
        self.pods = pods
        self.queue = queue
        self.node = node
        self._plurals: dict[tuple[str, str], str | None] = dict(PLURALS)
        self._lock = threading.Lock()

    # --- common ---------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        aw = self.aws.get(key)
        if aw is None:
            return
        aw = copy.deepcopy(aw)
        v2 = is_v1beta2(aw)
        if deleting(aw):
            self._finalize(aw, v2)
            return
        if FINALIZER not in (aw["metadata"].get("finalizers") or []):
            self._patch_meta(
                aw, {"finalizers": [*(aw["metadata"].get("finalizers") or []), FINALIZER]}
            )
            return
        if v2:
            self._sync_v1beta2(aw)
        else:
            self._sync_v1beta1(aw)

    def _path(self, aw: Obj, sub: str = "") -> str:
        meta = aw["metadata"]
        gv = V1BETA2 if is_v1beta2(aw) else V1BETA1
        return obj_path(gv, "appwrappers", meta["namespace"], meta["name"]) + sub

    def _patch_meta(self, aw: Obj, meta: Obj) -> None:
        try:
            got = self.api.merge_patch(
                self._path(aw),
                {"metadata": {**meta, "resourceVersion": aw["metadata"]["resourceVersion"]}},
            )
            self.aws.put(got)
        except ApiError as e:
            if e.status != 404:
                raise

    def _write(self, aw: Obj, status: Obj, old: Obj) -> None:
        if status == old:
            return
        try:
            got = self.api.merge_patch(
                self._path(aw, "/status"),
                {"metadata": {"resourceVersion": aw["metadata"]["resourceVersion"]},
                 "status": merge_diff(old, status)},
            )  # fmt: skip
            self.aws.put(got)
        except ApiError as e:
            if e.status != 404:  # 409: written from a stale copy; synced again
                raise

    def _later(self, aw: Obj, seconds: float) -> None:
        meta = aw["metadata"]
        self.queue.add(f"{meta['namespace']}/{meta['name']}", max(seconds, 0.2))

    def _plural(self, api_version: str, kind: str) -> str | None:
        """The resource of KIND (discovery, as a RESTMapper); None when the server has none."""
        k = (api_version, kind)
        if k not in self._plurals:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            try:
                found = self.api.get(path)["resources"]
            except ApiError as e:
                if e.status != 404:
                    raise
                found = []
            self._plurals[k] = next(
                (r["name"] for r in found if r.get("kind") == kind and "/" not in r["name"]), None
            )
        return self._plurals[k]

    def _create(self, obj: Obj) -> None:
        plural = self._plural(str(obj.get("apiVersion")), str(obj.get("kind")))
        meta = obj["metadata"]
        if plural is None:
            raise Fatal(
                f'no matches for kind "{obj.get("kind")}" in version "{obj.get("apiVersion")}"'
            )
        try:
            self.api.create(obj_path(obj["apiVersion"], plural, meta["namespace"]), obj)
            log.info("appwrapper: created %s %s/%s", obj["kind"], meta["namespace"], meta["name"])
        except ApiError as e:
            if e.status == 409:
                return  # made before (a create whose answer was lost, or a retry)
            if e.status in (400, 422):
                raise Fatal(str(e)) from e
            raise

    def _delete(self, obj: Obj, grace: int | None = None) -> bool:
        """Deletes OBJ (background); True when it still exists (being deleted)."""
        plural = self._plural(str(obj.get("apiVersion")), str(obj.get("kind")))
        if plural is None:
            return False
        meta = obj["metadata"]
        body: Obj = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        if grace is not None:
            body["gracePeriodSeconds"] = grace
        path = obj_path(obj["apiVersion"], plural, meta["namespace"], meta["name"])
        return self.api.delete(path, body) is not None

    def _pods(self, aw: Obj) -> list[Obj]:
        name, ns = aw["metadata"]["name"], aw["metadata"]["namespace"]
        if is_v1beta2(aw):
            return [p for p in self.pods.items() if p["metadata"]["namespace"] == ns
                    and (p["metadata"].get("labels") or {}).get(AW_LABEL) == name]  # fmt: skip
        out = []
        for p in self.pods.items():
            labels = p["metadata"].get("labels") or {}
            if labels.get(MCAD_NAME) == name and labels.get(MCAD_NS, ns) == ns:
                out.append(p)
        return out

    def _finalize(self, aw: Obj, v2: bool) -> None:
        if FINALIZER not in (aw["metadata"].get("finalizers") or []):
            return
        old = aw.get("status") or {}
        status = copy.deepcopy(old)
        if v2:
            if condition_true(status, "ResourcesDeployed"):
                if not self._delete_components(aw, status):
                    status["phase"] = "Terminating"
                    self._write(aw, status, old)
                    self._later(aw, 1)
                    return
                set_condition(status, "ResourcesDeployed", False, "Terminating",
                              "Resources successfully deleted")  # fmt: skip
            clear_condition(status, "QuotaReserved", "Terminating", "No resources deployed")
            self._write(aw, status, old)
        else:
            since = aw["metadata"]["deletionTimestamp"]
            if not self._delete_items(aw, since):
                self._later(aw, 1)
                return
        aw = self.aws.get(f"{aw['metadata']['namespace']}/{aw['metadata']['name']}") or aw
        keep = [f for f in aw["metadata"].get("finalizers") or [] if f != FINALIZER]
        self._patch_meta(aw, {"finalizers": keep or None})

    # --- v1beta1: MCAD v2 -----------------------------------------------------------------

    def _items(self, aw: Obj) -> list[Obj]:
        """The wrapped objects as MCAD makes them: labelled, in a namespace."""
        out = []
        name, ns = aw["metadata"]["name"], aw["metadata"]["namespace"]
        for item in (aw["spec"].get("resources") or {}).get("GenericItems") or []:
            obj = copy.deepcopy(item.get("generictemplate") or {})
            _label_embedded(obj, {MCAD_NS: ns, MCAD_NAME: name})
            meta = obj.setdefault("metadata", {})
            meta.setdefault("namespace", "default")  # MCAD v2's fallback, not the AppWrapper's
            out.append(obj)
        return out

    @staticmethod
    def _requeuing(aw: Obj, key: str) -> int:
        req = ((aw["spec"].get("schedulingSpec") or {}).get("requeuing")) or {}
        return int(req.get(key, REQUEUING[key]))

    @staticmethod
    def _min_available(aw: Obj) -> int:
        return int((aw["spec"].get("schedulingSpec") or {}).get("minAvailable") or 0)

    @staticmethod
    def _transition(status: Obj, state: str, step: str, reason: str = "") -> None:
        t: Obj = {"time": now(), "state": state}
        if step:
            t["step"] = step
        if reason:
            t["reason"] = reason
        status["transitions"] = [*(status.get("transitions") or []), t][-20:]
        status["transitionCount"] = int(status.get("transitionCount") or 0) + 1
        status["state"] = state
        if step:
            status["step"] = step
        else:
            status.pop("step", None)
        status.setdefault("restarts", 0)
        log.info("appwrapper: %s %s/%s", state, step or "-", reason)

    def _sync_v1beta1(self, aw: Obj) -> None:
        old = aw.get("status") or {}
        status = copy.deepcopy(old)
        state, step = status.get("state") or "", status.get("step") or ""
        if state == "":
            self._transition(status, "Pending", "")
        elif state == "Pending":
            self._dispatch(aw, status)
        elif state == "Running" and step == "creating":
            try:
                for obj in self._items(aw):
                    self._create(obj)
            except Fatal as e:
                self._requeue_or_fail(aw, status, True, str(e))
            except ApiError as e:
                self._requeue_or_fail(aw, status, False, str(e))
            else:
                self._transition(status, "Running", "created")
        elif state == "Running" and step == "created":
            self._monitor(aw, status)
        elif step == "deleting" and state in ("Running", "Failed"):
            if not self._delete_items(aw, status.get("requeueTimestamp")):
                self._later(aw, 1)
            elif state == "Failed":
                self._transition(status, "Failed", "")
            else:
                status["restarts"] = int(status.get("restarts") or 0) + 1
                status["requeueTimestamp"] = now()
                last = (status.get("transitions") or [{}])[-1].get("reason") or "Requeued by MCAD"
                set_condition(status, "Pending", True, "Requeued", f"Requeued because {last}")
                self._transition(status, "Pending", "")
        self._write(aw, status, old)

    def _dispatch(self, aw: Obj, status: Obj) -> None:
        pause = self._requeuing(aw, "pauseTimeInSeconds")
        wait = _ts(status.get("requeueTimestamp")) + pause - _now()
        if status.get("requeueTimestamp") and wait > 0:
            self._later(aw, wait)
            return
        with self._lock:
            fits, msg = self._fits(aw)
        if fits:
            status["dispatchTimestamp"] = now()
            set_condition(status, "Pending", False, "Dispatched", "Selected for dispatch")
            self._transition(status, "Running", "creating")
        else:
            set_condition(status, "Pending", True, "InsufficientResources", msg)
            self._later(aw, 2)

    def _fits(self, aw: Obj) -> tuple[bool, str]:
        """MCAD's dispatch decision for AW: what is left after the pods of no AppWrapper and
        the dispatched AppWrappers' requests, then the queued AppWrappers ahead of it that
        fit, in queue order (priority, then age)."""
        node = self.node()
        if node is None:
            return False, "no node"
        free = {k: quantity(v) for k, v in node["status"]["allocatable"].items()}
        free.pop("pods", None)
        for p in self.pods.items():
            labels = p["metadata"].get("labels") or {}
            if MCAD_NAME in labels or AW_LABEL in labels or pod_phase(p) in ("Succeeded", "Failed"):
                continue
            if not p["spec"].get("nodeName"):
                continue
            for k, v in pod_requests(p).items():
                if k in free:
                    free[k] -= v
        queued = []
        for other in self.aws.items():
            if is_v1beta2(other) or deleting(other):
                continue
            st = other.get("status") or {}
            state, step = st.get("state") or "", st.get("step") or ""
            if state == "Running" or (state == "Failed" and step):
                for k, v in _aw_request(other).items():
                    free[k] = free.get(k, Decimal(0)) - v
            elif state == "Pending" and other["metadata"]["uid"] != aw["metadata"]["uid"]:
                queued.append(other)
        queued.append(aw)
        queued.sort(key=lambda a: (-int(a["spec"].get("priority") or 0),
                                   a["metadata"].get("creationTimestamp") or ""))  # fmt: skip
        for candidate in queued:
            request = _aw_request(candidate)
            gaps = [k for k, v in sorted(request.items()) if v > free.get(k, Decimal(0))]
            if candidate is aw:
                if not gaps:
                    return True, ""
                return False, "".join(
                    f"Insufficient {k}; requested {_q(request[k])} but only "
                    f"{_q(max(free.get(k, Decimal(0)), Decimal(0)))} available. "
                    for k in gaps
                )
            if not gaps:
                for k, v in request.items():
                    free[k] = free.get(k, Decimal(0)) - v
        return False, ""

    def _monitor(self, aw: Obj, status: Obj) -> None:
        pods = self._pods(aw)
        running = sum(1 for p in pods if pod_phase(p) == "Running")
        succeeded = sum(1 for p in pods if pod_phase(p) == "Succeeded")
        other = len(pods) - running - succeeded
        min_available = self._min_available(aw)
        if (
            running == 0
            and other == 0
            and succeeded >= min_available
            and self._succeeded(aw, succeeded)
        ):
            self._transition(status, "Completed", "")
            return
        expected = min_available or 1
        deadline = _ts(status.get("dispatchTimestamp")) + self._requeuing(aw, "timeInSeconds")
        if running + succeeded < expected:
            if _now() > deadline:
                self._requeue_or_fail(
                    aw,
                    status,
                    False,
                    f"expected pods {expected} but found pods {running + succeeded}",
                )
                return
            self._later(aw, deadline - _now() + 0.5)

    def _succeeded(self, aw: Obj, succeeded: int) -> bool:
        """completionstatus items: a condition of the object (type containing one of the
        keywords) is True; without any: enough pods succeeded (minAvailable > 0)."""
        custom = False
        for item, obj in zip(
            (aw["spec"].get("resources") or {}).get("GenericItems") or [],
            self._items(aw),
            strict=True,
        ):
            keys = [
                k.strip().lower()
                for k in (item.get("completionstatus") or "").split(",")
                if k.strip()
            ]
            if not keys:
                continue
            custom = True
            plural = self._plural(str(obj.get("apiVersion")), str(obj.get("kind")))
            if plural is None:
                return False
            meta = obj["metadata"]
            try:
                got = self.api.get(
                    obj_path(obj["apiVersion"], plural, meta["namespace"], meta["name"])
                )
            except ApiError as e:
                if e.status == 404:
                    return False
                raise
            conds = (got.get("status") or {}).get("conditions") or []
            if not any(
                c.get("status") == "True" and any(k in str(c.get("type", "")).lower() for k in keys)
                for c in conds
            ):
                return False
        min_available = self._min_available(aw)
        return custom or (min_available > 0 and succeeded >= min_available)

    def _requeue_or_fail(self, aw: Obj, status: Obj, fatal: bool, reason: str) -> None:
        max_requeuings = self._requeuing(aw, "maxNumRequeuings")
        if self._min_available(aw) < 0:
            self._transition(status, "Failed", status.get("step") or "", reason)
        elif fatal or (max_requeuings > 0 and int(status.get("restarts") or 0) >= max_requeuings):
            status["requeueTimestamp"] = now()
            self._transition(status, "Failed", "deleting", reason)
        else:
            status["requeueTimestamp"] = now()
            self._transition(status, "Running", "deleting", reason)
        self._later(aw, 0.5)

    def _delete_items(self, aw: Obj, since: str | None) -> bool:
        """MCAD's deletion: each wrapped object deleted (background); done when none is left
        (and, with forceDeletionTimeInSeconds, no labelled pod either: after that long, the
        pods and then the objects are deleted with grace 0)."""
        remaining = sum(1 for obj in self._items(aw) if self._delete(obj))
        force = self._requeuing(aw, "forceDeletionTimeInSeconds")
        if force == 0:
            return remaining == 0
        pods = self._pods(aw)
        if remaining == 0 and not pods:
            return True
        if _now() < _ts(since) + force:
            return False
        if pods:
            for p in pods:
                self._delete(p, grace=0)
        else:
            for obj in self._items(aw):
                self._delete(obj, grace=0)
        return False

    # --- v1beta2: the AppWrapper controller -------------------------------------------------

    def _duration(self, aw: Obj, name: str) -> float:
        text = (aw["metadata"].get("annotations") or {}).get(ANN + name)
        if text is not None:
            got = go_duration(text)
            if got is not None:
                return float(min(max(got, 0.0), GRACE_MAX))
            log.warning("appwrapper %s: malformed %s%s %r; the default", aw["metadata"]["name"],
                        ANN, name, text)  # fmt: skip
        return float(FAULT[name])

    def _retry_limit(self, aw: Obj) -> int:
        text = (aw["metadata"].get("annotations") or {}).get(ANN + "retryLimit")
        try:
            return int(text) if text is not None else RETRY_LIMIT
        except ValueError:
            return RETRY_LIMIT

    def _exit_codes(self, aw: Obj, name: str) -> set[int]:
        text = (aw["metadata"].get("annotations") or {}).get(ANN + name) or ""
        return {int(c) for c in text.split(",") if c.strip().lstrip("-").isdigit()}

    def _components(self, aw: Obj) -> list[tuple[Obj, list[Obj]]]:
        """Each component's object as the controller makes it, with its pod sets."""
        name, ns = aw["metadata"]["name"], aw["metadata"]["namespace"]
        out = []
        for comp in aw["spec"].get("components") or []:
            obj = copy.deepcopy(comp.get("template") or {})
            meta = obj.setdefault("metadata", {})
            if meta.get("namespace", ns) != ns:
                raise Fatal(f'component namespace "{meta["namespace"]}" is different from '
                            f'appwrapper namespace "{ns}"')  # fmt: skip
            meta["namespace"] = ns
            meta["labels"] = {AW_LABEL: name, **(meta.get("labels") or {})}
            podsets = comp.get("podSets") or _inferred_podsets(obj)
            for i, ps in enumerate(podsets):
                tmpl = _at(obj, str(ps.get("path") or ""))
                if tmpl is None or not isinstance(tmpl.get("spec"), dict):
                    raise Fatal(f"podSet {i}: no PodTemplateSpec at path {ps['path']!r}")
                tmeta = tmpl.setdefault("metadata", {})
                tmeta["labels"] = {**(tmeta.get("labels") or {}), AW_LABEL: name}
            meta["ownerReferences"] = [
                *(meta.get("ownerReferences") or []),
                {"apiVersion": V1BETA2, "kind": "AppWrapper", "name": name,
                 "uid": aw["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True},
            ]  # fmt: skip
            out.append((obj, podsets))
        return out

    def _expected_pods(self, aw: Obj) -> int:
        total = 0
        for comp in aw["spec"].get("components") or []:
            for ps in comp.get("podSets") or _inferred_podsets(comp.get("template") or {}):
                total += int(ps.get("replicas", 1))
        return total

    def _sync_v1beta2(self, aw: Obj) -> None:
        old = aw.get("status") or {}
        status = copy.deepcopy(old)
        phase = status.get("phase") or ""
        suspend = bool(aw["spec"].get("suspend"))
        if phase == "":
            status["componentStatus"] = [
                {"name": (c.get("template") or {}).get("metadata", {}).get("name", ""),
                 "kind": (c.get("template") or {}).get("kind", ""),
                 "apiVersion": (c.get("template") or {}).get("apiVersion", ""),
                 "podSets": c.get("podSets") or _inferred_podsets(c.get("template") or {})}
                for c in aw["spec"].get("components") or []
            ]  # fmt: skip
            status["phase"] = "Suspended"
        elif phase == "Suspended":
            if not suspend:
                for typ, value in (("QuotaReserved", True), ("ResourcesDeployed", True),
                                   ("PodsReady", False), ("Unhealthy", False)):  # fmt: skip
                    set_condition(status, typ, value, "Resuming", "Suspend is false")
                status["phase"] = "Resuming"
        elif phase == "Resuming":
            self._resuming(aw, status, suspend)
        elif phase == "Running":
            self._running(aw, status, suspend)
        elif phase == "Suspending":
            if condition_true(status, "ResourcesDeployed"):
                if not self._delete_components(aw, status):
                    self._write(aw, status, old)
                    self._later(aw, 1)
                    return
                set_condition(status, "ResourcesDeployed", False, "Suspended", "Suspend is true")
            set_condition(status, "QuotaReserved", False, "Suspended", "Suspend is true")
            clear_condition(status, "PodsReady", "Suspended")
            clear_condition(status, "Unhealthy", "Suspended")
            status["phase"] = "Suspended"
        elif phase == "Resetting":
            self._resetting(aw, status, suspend)
        elif phase == "Failed":
            self._failed(aw, status, suspend)
        elif phase == "Succeeded" and condition_true(status, "ResourcesDeployed"):
            since = _ts(
                (find_condition(status, "ResourcesDeployed") or {}).get("lastTransitionTime")
            )
            ttl = self._duration(aw, "successTTLDuration")
            if _now() < since + ttl:
                self._later(aw, min(since + ttl - _now(), 3600))
            elif self._delete_components(aw, status):
                set_condition(status, "ResourcesDeployed", False, "Succeeded",
                              f"Time to live after success of {ttl:g}s expired")  # fmt: skip
            else:
                self._later(aw, 1)
        self._write(aw, status, old)

    def _resuming(self, aw: Obj, status: Obj, suspend: bool) -> None:
        if suspend:
            status["phase"] = "Suspending"
            return
        try:
            made = self._components(aw)
            for obj, _ in made:
                self._create(obj)
        except (Fatal, ApiError) as e:
            fatal = isinstance(e, Fatal)
            if not fatal:
                start = _ts(
                    (find_condition(status, "ResourcesDeployed") or {}).get("lastTransitionTime")
                )
                if _now() < start + self._duration(aw, "admissionGracePeriodDuration"):
                    self._later(aw, 1)
                    return
            msg = f"error creating components: {e}"
            set_condition(status, "Unhealthy", True, "CreateFailed", msg)
            if fatal:
                status["phase"] = "Failed"
                self._later(aw, 0.5)
            else:
                self._reset_or_fail(aw, status, False, 1)
            return
        for cs in status.get("componentStatus") or []:
            set_condition(cs, "ResourcesDeployed", True, "ComponentCreated")
        status["phase"] = "Running"

    def _component_counts(self, aw: Obj) -> tuple[int, int, int]:
        expected = deployed = failed = 0
        for obj, _ in self._components(aw):
            expected += 1
            plural = self._plural(str(obj.get("apiVersion")), str(obj.get("kind")))
            if plural is None:
                continue
            meta = obj["metadata"]
            try:
                got = self.api.get(
                    obj_path(obj["apiVersion"], plural, meta["namespace"], meta["name"])
                )
            except ApiError as e:
                if e.status == 404:
                    continue
                raise
            if deleting(got):
                continue
            deployed += 1
            if (obj["apiVersion"], obj["kind"]) == ("batch/v1", "Job") and any(
                c.get("type") == "Failed" and c.get("status") == "True"
                for c in (got.get("status") or {}).get("conditions") or []
            ):
                failed += 1
        return expected, deployed, failed

    def _running(self, aw: Obj, status: Obj, suspend: bool) -> None:
        if suspend:
            status["phase"] = "Suspending"
            return
        expected_c, deployed, failed_c = self._component_counts(aw)
        pods = self._pods(aw)
        counts = {ph: sum(1 for p in pods if pod_phase(p) == ph and not (
            ph == "Running" and deleting(p))) for ph in ("Pending", "Running", "Succeeded", "Failed")}  # fmt: skip
        terminal = self._terminal_failure(aw, [p for p in pods if pod_phase(p) == "Failed"])
        if deployed != expected_c:
            set_condition(status, "Unhealthy", True, "MissingComponent",
                          f"Only found {deployed} deployed components, but was expecting {expected_c}")  # fmt: skip
            status["phase"] = "Failed"
            self._later(aw, 0.5)
            return
        if failed_c:
            set_condition(
                status, "Unhealthy", True, "FailedComponent", f"Found {failed_c} failed components"
            )
            self._reset_or_fail(aw, status, terminal, 1)
            return
        expected = self._expected_pods(aw)
        pending, running, succeeded, failed = (
            counts[k] for k in ("Pending", "Running", "Succeeded", "Failed")
        )
        if succeeded >= expected and pending + running + failed == 0:
            msg = f"{succeeded} pods succeeded and no running, pending, or failed pods"
            set_condition(status, "QuotaReserved", False, "Succeeded", msg)
            set_condition(status, "ResourcesDeployed", True, "Succeeded", msg)
            status["phase"] = "Succeeded"
            return
        if failed:
            set_condition(status, "Unhealthy", True, "FoundFailedPods")
            since = _ts((find_condition(status, "Unhealthy") or {}).get("lastTransitionTime"))
            deadline = since + self._duration(aw, "failureGracePeriodDuration")
            # a terminal exit code decides what comes after the grace period (Failed, no
            # reset), not whether the controller waits it out
            if _now() < deadline:
                self._later(aw, deadline - _now() + 0.2)
            else:
                self._reset_or_fail(aw, status, terminal, 1)
            return
        clear_condition(status, "Unhealthy", "FoundNoFailedPods")
        if running + succeeded >= expected:
            set_condition(status, "PodsReady", True, "SufficientPodsReady",
                          f"{running} pods running; {succeeded} pods succeeded")  # fmt: skip
            return
        detail = f"{pending} pods pending; {running} pods running; {succeeded} pods succeeded"
        if condition_true(status, "PodsReady"):
            set_condition(status, "PodsReady", False, "InsufficientPodsReady", detail)
        since = _ts((find_condition(status, "ResourcesDeployed") or {}).get("lastTransitionTime"))
        grace = self._duration(aw, "warmupGracePeriodDuration" if pending + running + succeeded
                               >= expected else "admissionGracePeriodDuration")  # fmt: skip
        if _now() < since + grace:
            self._later(aw, min(since + grace - _now() + 0.2, 5))
            return
        set_condition(status, "Unhealthy", True, "InsufficientPodsReady", detail)
        self._reset_or_fail(aw, status, terminal, 1)

    def _terminal_failure(self, aw: Obj, failed: list[Obj]) -> bool:
        terminal, retryable = (self._exit_codes(aw, "terminalExitCodes"),
                               self._exit_codes(aw, "retryableExitCodes"))  # fmt: skip
        for p in failed:
            for cs in (p.get("status") or {}).get("containerStatuses") or []:
                code = int(((cs.get("state") or {}).get("terminated") or {}).get("exitCode") or 0)
                if code and (code in terminal or (retryable and code not in retryable)):
                    return True
        return False

    def _reset_or_fail(self, aw: Obj, status: Obj, terminal: bool, increment: int) -> None:
        retries = int(status.get("resettingCount") or 0)
        if not terminal and retries < self._retry_limit(aw):
            status["resettingCount"] = retries + increment
            status["phase"] = "Resetting"
        else:
            status["phase"] = "Failed"
        self._later(aw, 0.5)

    def _resetting(self, aw: Obj, status: Obj, suspend: bool) -> None:
        if suspend:
            status["phase"] = "Suspending"
            return
        clear_condition(status, "PodsReady", "Resetting")
        if condition_true(status, "ResourcesDeployed"):
            if not self._delete_components(aw, status):
                self._later(aw, 1)
                return
            set_condition(status, "ResourcesDeployed", False, "Resetting",
                          "Resources deleted for resetting AppWrapper")  # fmt: skip
        since = _ts((find_condition(status, "Unhealthy") or {}).get("lastTransitionTime"))
        deadline = since + self._duration(aw, "retryPausePeriodDuration")
        if _now() < deadline:
            self._later(aw, deadline - _now() + 0.2)
            return
        set_condition(status, "ResourcesDeployed", True, "Resuming", "Reset complete; resuming")
        status["phase"] = "Resuming"

    def _failed(self, aw: Obj, status: Obj, suspend: bool) -> None:
        delay = self._duration(aw, "deletionOnFailureGracePeriodDuration")
        if delay > 0 and not suspend:
            set_condition(status, "DeletingResources", False, "DeletionPaused",
                          f"{ANN}deletionOnFailureGracePeriodDuration has value {delay:g}s")  # fmt: skip
            since = _ts(
                (find_condition(status, "DeletingResources") or {}).get("lastTransitionTime")
            )
            if _now() < since + delay:
                self._later(aw, since + delay - _now() + 0.2)
                return
        if condition_true(status, "ResourcesDeployed"):
            if not self._delete_components(aw, status):
                self._later(aw, 1)
                return
            set_condition(status, "ResourcesDeployed", False, "Failed",
                          "Resources deleted for failed AppWrapper")  # fmt: skip
        set_condition(status, "QuotaReserved", False, "Failed", "No resources deployed")

    def _delete_components(self, aw: Obj, status: Obj) -> bool:
        """The controller's deletion: components deleted (background); done when neither they
        nor their labelled pods are left; after forcefulDeletionGracePeriod the pods, then
        the components, are deleted with grace 0."""
        if not condition_true(status, "DeletingResources"):
            set_condition(status, "DeletingResources", True, "DeletionInitiated")
        try:
            made = self._components(aw)
        except Fatal:
            made = []
        remaining = sum(1 for obj, _ in made if self._delete(obj))
        since = _ts((find_condition(status, "DeletingResources") or {}).get("lastTransitionTime"))
        expired = _now() > since + self._duration(aw, "forcefulDeletionGracePeriodDuration")
        if remaining and not expired:
            return False
        pods = self._pods(aw)
        if not remaining and not pods:
            clear_condition(status, "DeletingResources", "DeletionComplete")
            return True
        if expired:
            if pods:
                for p in pods:
                    self._delete(p, grace=0)
            else:
                for obj, _ in made:
                    self._delete(obj, grace=0)
        return False


def _label_embedded(node: Any, labels: dict[str, str]) -> None:
    """MCAD's labelling: every mapping with apiVersion, kind and metadata (the object and
    any object embedded in it) gets LABELS."""
    if isinstance(node, dict):
        if "apiVersion" in node and "kind" in node and isinstance(node.get("metadata"), dict):
            node["metadata"]["labels"] = {**(node["metadata"].get("labels") or {}), **labels}
        for v in node.values():
            _label_embedded(v, labels)
    elif isinstance(node, list):
        for v in node:
            _label_embedded(v, labels)


def _aw_request(aw: Obj) -> dict[str, Decimal]:
    """What a v1beta1 AppWrapper asks MCAD for: its custompodresources, replicas x requests."""
    total: dict[str, Decimal] = {}
    for item in (aw["spec"].get("resources") or {}).get("GenericItems") or []:
        for cpr in item.get("custompodresources") or []:
            n = int(cpr.get("replicas") or 0)
            for k, v in (cpr.get("requests") or {}).items():
                total[k] = total.get(k, Decimal(0)) + n * quantity(v)
    return total


def _q(value: Decimal) -> str:
    """A quantity as MCAD prints one (cpu in cores, memory in bytes)."""
    return format(value.normalize(), "f") if value == value.to_integral() else str(value)


def owner_key(pod: Obj) -> str | None:
    """The AppWrapper (namespace/name) a pod or Job belongs to, by its labels."""
    labels = pod["metadata"].get("labels") or {}
    ns = pod["metadata"]["namespace"]
    if AW_LABEL in labels:
        return f"{ns}/{labels[AW_LABEL]}"
    if MCAD_NAME in labels:
        return f"{labels.get(MCAD_NS, ns)}/{labels[MCAD_NAME]}"
    return None
