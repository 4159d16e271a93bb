"""The ``kubernetes_mcad`` scheduler: an app is one AppWrapper on a cluster running MCAD or the
AppWrapper controller.

``torchx run -s kubernetes_mcad`` creates the AppWrapper :mod:`torchx_k8s.appwrapper`
describes (``workload.codeflare.dev/v1beta1`` by default, as upstream TorchX;
``-cfg appwrapper_version=v1beta2`` for the current AppWrapper controller); its
controller makes the wrapped pods, Service (and PodGroup). Everything else is the
``kubernetes`` scheduler's (:mod:`torchx_k8s.scheduler`, which this class extends):
the API client and its retries, ``validate_spec``'s dry run, ``describe`` (the
AppWrapper and one pod list; states in :mod:`torchx_k8s.awstatus`), ``log_iter`` from
the pods, ``delete``. What differs:

* app ids: ``NAMESPACE:NAME`` (v1beta1: upstream's ``kubernetes_mcad://SESSION/NAMESPACE:NAME``
  handles work), ``NAMESPACE:NAME:v1beta2``, either with ``@CONTEXT``;
* ``list``: the AppWrappers of the ``appwrapper_version`` given to it (a cluster serving
  both versions would list each AppWrapper twice), each app's state from its AppWrapper
  and its pods (two calls in all);
* ``cancel``: marks the AppWrapper (annotation ``torchx.pytorch.org/cancelled``: the app
  is CANCELLED from then on) and stops it: a v1beta2 AppWrapper is suspended
  (``spec.suspend``: its controller removes what it made and keeps the AppWrapper); MCAD
  (v1beta1) has no suspend, so in one patch its monitoring is turned off
  (``schedulingSpec.minAvailable: -1``: no requeue) and the pods (and PodGroup) leave the
  AppWrapper's ``GenericItems`` (one not yet dispatched never makes them; their quota is
  released), then the pods already made are deleted. The AppWrapper stays (``describe``
  answers CANCELLED) until ``delete``.
* a failed replica stops the others: neither controller does at once (MCAD without
  monitoring never does; the AppWrapper controller after its failure grace period, a
  minute by default), so once the app is FAILED (a replica failed with no restart left)
  the first ``describe`` or ``list`` that sees it names the replicas still pending or
  running in the annotation ``torchx.pytorch.org/stopped`` (they read CANCELLED, and
  the message says they were stopped) and deletes their pods; the failed pod stays.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from torchx.schedulers.contract.api import ListAppResponse
from torchx.specs import AppDef, AppDryRunInfo, AppState, CfgVal, ReplicaState
from torchx_k8s import awstatus, labels, names, status
from torchx_k8s.appwrapper import FLAVOUR_OF_VERSION, NO_MONITORING, make_appwrapper
from torchx_k8s.backend import api_status
from torchx_k8s.names import AppRef
from torchx_k8s.options import McadOpts
from torchx_k8s.request import K8sRequest, appdef_from
from torchx_k8s.scheduler import KubernetesScheduler

# what a cancelled v1beta1 AppWrapper keeps of its items: not the pods (MCAD would make
# them again), but what its deletion must still take with it
_KEPT = frozenset({"Service", "PodGroup"})


class McadScheduler(KubernetesScheduler):
    """Apps as AppWrappers (MCAD or the AppWrapper controller); see the module docstring.

    Args:
        session_name: the session the handles carry
        backend: the API to call (tests: a :class:`~torchx_k8s.backend.K8sBackend`
            around a stand-in client); default: the kubeconfig's
    """

    # The last attempt's exit codes are reported: the app is FAILED from its failed pod
    # (no restart left) before the controller deletes that pod, and they stay until then.
    missing_capabilities: Mapping[Any, str] = KubernetesScheduler.missing_capabilities
    opts_class = McadOpts
    backend_name = "kubernetes_mcad"
    ids = names.MCAD_IDS

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[K8sRequest]:
        opts = McadOpts.of(cfg)
        request = make_appwrapper(app, names.object_name(app.name), opts)
        return AppDryRunInfo(request, K8sRequest.to_yaml)

    def _crd_hint(self, request: K8sRequest) -> str:
        if request.flavour == names.APPWRAPPER:
            return " (MCAD serves v1beta1; -cfg appwrapper_version=v1beta2 for the AppWrapper controller)"
        return (
            " (the AppWrapper controller serves v1beta2; -cfg appwrapper_version=v1beta1 for MCAD)"
        )

    def _state(self, ref: AppRef, obj: dict[str, Any]) -> AppState:
        # an AppWrapper's controller may never end an app whose pods have ended (MCAD
        # without monitoring): the pods decide too, as in describe
        pods = self._k8s.pods(ref, labels.pod_selector(ref.name))
        return _app_state(ref.flavour, obj, pods)

    def _settle(
        self, ref: AppRef, obj: dict[str, Any], pods: builtins.list[dict[str, Any]]
    ) -> tuple[dict[str, Any], builtins.list[dict[str, Any]]]:
        """``obj`` and ``pods`` read again if the app's other replicas had to be stopped."""
        if not self._stop_others(ref, obj, pods):
            return obj, pods
        return self._k8s.get(ref) or obj, self._k8s.pods(ref, labels.pod_selector(ref.name))

    def _stop_others(
        self,
        ref: AppRef,
        obj: dict[str, Any],
        pods: builtins.list[dict[str, Any]],
        appdef: AppDef | None = None,
    ) -> bool:
        """Stops the replicas still pending or running of an app that has FAILED (see the
        module docstring); whether it did. Once per app: the annotation says it was done."""
        if awstatus.is_cancelled(obj) or awstatus.stopped_replicas(obj):
            return False
        if _app_state(ref.flavour, obj, pods, appdef) != AppState.FAILED:
            return False
        live = [
            key
            for key, r in status.newest_replicas(pods).items()
            if r.state in (ReplicaState.PENDING, ReplicaState.RUNNING)
        ]
        if not live:
            return False
        body = {"metadata": {"annotations": {awstatus.STOPPED: awstatus.stopped_value(live)}}}
        try:
            self._k8s.patch(ref, body)
            self._k8s.delete_pods(
                ref,
                labels.pod_selector(ref.name),
                field_selector="status.phase!=Failed,status.phase!=Succeeded",
            )
        except Exception as e:
            if api_status(e) != 404:
                raise
        return True

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> builtins.list[ListAppResponse]:
        opts = McadOpts.from_cfg(self.run_opts_once().resolve(dict(cfg or {})))
        flavour = FLAVOUR_OF_VERSION[opts.appwrapper_version]
        namespace, context = opts.pods.namespace, opts.pods.context
        objects = self._k8s.list_objects(namespace, context, flavour, labels.app_selector())
        by_app: dict[str, builtins.list[dict[str, Any]]] = {}
        for p in self._k8s.pods(AppRef(namespace, "", flavour, context), labels.app_selector()):
            instance = ((p.get("metadata") or {}).get("labels") or {}).get(labels.INSTANCE)
            by_app.setdefault(str(instance), []).append(p)
        out: builtins.list[ListAppResponse] = []
        for obj in objects:
            meta = obj.get("metadata") or {}
            ref = AppRef(namespace, str(meta.get("name")), flavour, context)
            appdef = appdef_from(obj)
            self._stop_others(ref, obj, by_app.get(ref.name, []), appdef)
            out.append(
                ListAppResponse(
                    app_id=names.format_app_id(ref),
                    state=_app_state(flavour, obj, by_app.get(ref.name, []), appdef),
                    name=appdef.name if appdef is not None else ref.name,
                    start_time=status._time(meta.get("creationTimestamp")),
                )
            )
        return out

    def _cancel_existing(self, app_id: str) -> None:
        ref = self._parse(app_id)
        obj = self._k8s.get(ref)
        if obj is None or self._state(ref, obj).is_terminal():
            return
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body: dict[str, Any] = {"metadata": {"annotations": {awstatus.CANCELLED: now}}}
        if ref.flavour == names.APPWRAPPER_V1BETA2:
            body["spec"] = {"suspend": True}
        else:
            # MCAD has no suspend: its monitoring goes off (no requeue), and the pods leave
            # the AppWrapper, so that one not yet dispatched never makes them and their
            # quota (custompodresources) is released. The Service and PodGroup stay: an
            # object MCAD made is deleted with the AppWrapper only while its spec names it
            items = ((obj.get("spec") or {}).get("resources") or {}).get("GenericItems") or []
            kept = [i for i in items if (i.get("generictemplate") or {}).get("kind") in _KEPT]
            body["spec"] = {
                "schedulingSpec": {"minAvailable": NO_MONITORING},
                "resources": {"GenericItems": kept},
            }
        try:
            self._k8s.patch(ref, body)
            if ref.flavour == names.APPWRAPPER:
                # MCAD stops nothing by itself: the pods go (it no longer requeues them)
                self._k8s.delete_pods(ref, labels.pod_selector(ref.name))
        except Exception as e:
            if api_status(e) != 404:
                raise


def _app_state(
    flavour: str,
    obj: Mapping[str, Any],
    pods: builtins.list[dict[str, Any]],
    appdef: AppDef | None = None,
) -> AppState:
    """The app's state from its AppWrapper and its pods, as ``describe`` says it."""
    appdef = appdef if appdef is not None else appdef_from(dict(obj))
    if appdef is not None:
        roles = [(r.name, r.num_replicas) for r in appdef.roles]
    else:
        roles = status.roles_from_pods(pods)
    view, _ = status.app_status(flavour, obj, pods, roles)
    return view.state


def create_scheduler(session_name: str, **kwargs: Any) -> McadScheduler:
    """The factory the plugin registers (``kubernetes_mcad``)."""
    return McadScheduler(session_name, backend=kwargs.get("backend"))
