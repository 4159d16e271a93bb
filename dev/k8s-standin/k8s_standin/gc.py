"""The garbage collector's part (dependents go when their owner goes) and the namespace
controller's (a namespace being deleted is emptied, then its finalizer removed).

A dependent (pod, batch Job, Service, ConfigMap, PodGroup) whose every owner is gone is deleted
(background deletion); an owner deleted with propagationPolicy=Foreground carries the
foregroundDeletion finalizer until its blocking dependents are gone, and one deleted with
Orphan keeps its dependents, which lose their reference to it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from .api import Api, ApiError, Obj, obj_path

log = logging.getLogger("k8s-standin")

#: (apiVersion, kind) of owners this stand-in knows, and their plural.
OWNERS = {
    ("batch.volcano.sh/v1alpha1", "Job"): "jobs",
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): "jobsets",
    ("batch/v1", "Job"): "jobs",
    ("workload.codeflare.dev/v1beta2", "AppWrapper"): "appwrappers",
    ("workload.codeflare.dev/v1beta1", "AppWrapper"): "appwrappers",
}
#: Dependent kinds: (apiVersion, plural).
DEPENDENTS = (("v1", "pods"), ("batch/v1", "jobs"), ("v1", "services"), ("v1", "configmaps"),
              ("scheduling.sigs.k8s.io/v1alpha1", "podgroups"),
              ("scheduling.x-k8s.io/v1alpha1", "podgroups"))  # fmt: skip


class GarbageCollector:
    def __init__(self, api: Api) -> None:
        self.api = api

    def sync(self, _key: str) -> None:
        deps: list[tuple[str, str, Obj]] = []
        for api_version, plural in DEPENDENTS:
            try:
                listed = self.api.get(obj_path(api_version, plural, None))["items"]
            except ApiError as e:
                if e.status == 404:  # a CRD not installed
                    continue
                raise
            for o in listed:
                if o["metadata"].get("ownerReferences"):
                    deps.append((api_version, plural, o))
        owners: dict[tuple[str, str, str, str], Obj | None] = {}
        for api_version, plural, o in deps:
            ns = o["metadata"]["namespace"]
            refs = [
                r
                for r in o["metadata"]["ownerReferences"]
                if (r["apiVersion"], r["kind"]) in OWNERS
            ]
            if not refs:
                continue
            alive = []
            for r in refs:
                k = (r["apiVersion"], r["kind"], ns, r["name"])
                if k not in owners:
                    owners[k] = self._get(
                        r["apiVersion"], OWNERS[(r["apiVersion"], r["kind"])], ns, r["name"]
                    )
                owner = owners[k]
                if owner is not None and owner["metadata"]["uid"] == r["uid"]:
                    alive.append(owner)
            if len(alive) < len(refs) and not alive:
                self._delete(api_version, plural, o, "Background")
                continue
            for owner in alive:
                fin = owner["metadata"].get("finalizers") or []
                if "foregroundDeletion" in fin and owner["metadata"].get("deletionTimestamp"):
                    self._delete(api_version, plural, o, "Background")
                elif "orphan" in fin and owner["metadata"].get("deletionTimestamp"):
                    keep = [
                        r
                        for r in o["metadata"]["ownerReferences"]
                        if r["uid"] != owner["metadata"]["uid"]
                    ]
                    self.api.merge_patch(
                        obj_path(api_version, plural, ns, o["metadata"]["name"]),
                        {"metadata": {"ownerReferences": keep or None}},
                    )
        self._finish_owners(deps)
        self._namespaces()

    def _namespaces(self) -> None:
        """Empties each namespace being deleted (every namespaced resource the server
        serves, found by discovery as the namespace controller does), then finalizes it."""
        terminating = [
            n
            for n in self.api.get("/api/v1/namespaces")["items"]
            if n["metadata"].get("deletionTimestamp")
        ]
        if not terminating:
            return
        resources: list[tuple[str, str]] = []
        groups = [("v1", "/api/v1")]
        for g in self.api.get("/apis")["groups"]:
            gv = g["preferredVersion"]["groupVersion"]
            groups.append((gv, f"/apis/{gv}"))
        for gv, path in groups:
            for r in self.api.get(path)["resources"]:
                if (
                    r.get("namespaced")
                    and "/" not in r["name"]
                    and "deletecollection" in r.get("verbs", [])
                ):
                    resources.append((gv, r["name"]))
        for ns in terminating:
            name = ns["metadata"]["name"]
            left = 0
            for gv, plural in resources:
                path = obj_path(gv, plural, name)
                try:
                    items = self.api.get(path)["items"]
                    if items:
                        left += len(items)
                        self.api.request("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions",
                                                         "propagationPolicy": "Background"})  # fmt: skip
                except ApiError as e:
                    if e.status not in (404, 405):
                        raise
            if left == 0:
                log.info("namespace %s is empty: finalizing", name)
                body = {**ns, "spec": {**(ns.get("spec") or {}), "finalizers": []}}
                try:
                    self.api.request("PUT", f"/api/v1/namespaces/{name}/finalize", body)
                except ApiError as e:
                    if e.status not in (404, 409):
                        raise

    def _finish_owners(self, deps: Iterable[tuple[str, str, Obj]]) -> None:
        """Drops the finalizer of owners being deleted whose blocking dependents are gone."""
        blocking: set[str] = set()
        for _, _, o in deps:
            for r in o["metadata"]["ownerReferences"]:
                if r.get("blockOwnerDeletion"):
                    blocking.add(r["uid"])
        kinds = {(av, plural) for (av, _), plural in OWNERS.items()} | set(DEPENDENTS)
        for api_version, plural in sorted(kinds):
            try:
                items = self.api.get(obj_path(api_version, plural, None))["items"]
            except ApiError as e:
                if e.status == 404:
                    continue
                raise
            for owner in items:
                meta = owner["metadata"]
                fin = meta.get("finalizers") or []
                if not meta.get("deletionTimestamp") or not (
                    {"foregroundDeletion", "orphan"} & set(fin)
                ):
                    continue
                if meta["uid"] in blocking and "foregroundDeletion" in fin:
                    continue
                keep = [f for f in fin if f not in ("foregroundDeletion", "orphan")]
                try:
                    self.api.merge_patch(
                        obj_path(api_version, plural, meta["namespace"], meta["name"]),
                        {
                            "metadata": {
                                "finalizers": keep or None,
                                "resourceVersion": meta["resourceVersion"],
                            }
                        },
                    )
                except ApiError as e:
                    if e.status not in (404, 409):
                        raise

    def _get(self, api_version: str, plural: str, ns: str, name: str) -> Obj | None:
        try:
            return self.api.get(obj_path(api_version, plural, ns, name))  # type: ignore[no-any-return]
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def _delete(self, api_version: str, plural: str, o: Obj, propagation: str) -> None:
        if o["metadata"].get("deletionTimestamp"):
            return
        meta = o["metadata"]
        log.info("gc: deleting %s %s/%s (%s)", plural, meta["namespace"], meta["name"], propagation)
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": propagation,
            "preconditions": {"uid": meta["uid"]},
        }
        try:
            self.api.delete(obj_path(api_version, plural, meta["namespace"], meta["name"]), body)
        except ApiError as e:
            if e.status != 409:
                raise
