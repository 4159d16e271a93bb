"""The AppWrapper an app becomes on the ``kubernetes_mcad`` scheduler, as plain data.

:func:`make_appwrapper` turns an AppDef into a :class:`~torchx_k8s.request.K8sRequest`
holding one ``workload.codeflare.dev`` AppWrapper: what ``torchx run --dryrun -s
kubernetes_mcad`` prints and what ``schedule`` creates. The pods are the ``kubernetes``
scheduler's (:func:`torchx_k8s.request.replicas` and :mod:`torchx_k8s.pod`: resources,
mounts, environment, secrets, overlays), so both schedulers run a role the same way.

What the AppWrapper wraps, in order:

* with ``coscheduler_name``: one ``PodGroup`` named after the app, ``minMember`` the
  replicas the app needs (all, or each role's ``min_replicas``), so the secondary
  scheduler starts the app's pods together or not at all (one gang for the whole app:
  a role that starts without the others would wait on them);
* one ``Pod`` per replica, named ``{name}-{role}-{replica}``
  (:func:`torchx_k8s.names.appwrapper_pod_name`), its ``hostname`` that name and its
  ``subdomain`` the app's Service, so each replica is reachable as ``{pod}.{name}``;
  labelled as the ``kubernetes`` scheduler labels its pods (``describe``, ``log`` and
  ``list`` select them by ``app.kubernetes.io/instance``); ``schedulerName`` is the
  coscheduler, the ``network`` is the pod's ``k8s.v1.cni.cncf.io/networks`` annotation,
  ``priority_class_name`` its ``priorityClassName``;
* one headless ``Service`` named after the app (``clusterIP: None``,
  ``publishNotReadyAddresses``: replicas find each other before they are ready),
  selecting the app's pods. ``macros.rank0_env`` is ``TORCHX_RANK0_HOST``, set in every
  replica to the first replica's ``{pod}.{name}.{namespace}.svc.{cluster_domain}``
  (:func:`torchx_k8s.names.rank0_host` says why fully qualified).

The two versions (``appwrapper_version``):

============================ ================================= ==============================
                             ``v1beta1`` (default)             ``v1beta2``
============================ ================================= ==============================
who runs it                  MCAD (what upstream TorchX        the AppWrapper controller
                             submits)                          (with Kueue)
wrapped objects              ``spec.resources.GenericItems[]`` ``spec.components[]``
                             ``.generictemplate``, a pod's     ``.template``, a pod's
                             ``custompodresources``            ``podSets`` (path ``template``)
priority                     ``spec.priority``                 (none: ``priority_class_name``)
retries                      ``spec.schedulingSpec``:          annotation ``workload.codeflare
                             ``minAvailable`` and              .dev.appwrapper/retryLimit``
                             ``requeuing.maxNumRequeuings``
queue                        (MCAD's own)                      label ``kueue.x-k8s.io/
                                                               queue-name`` (``queue``)
pod label                    ``appwrapper.mcad.ibm.com``       (the controller adds its own)
PodGroup                     ``scheduling.sigs.k8s.io/         ``scheduling.x-k8s.io/
                             v1alpha1``, pod label ``pod-      v1alpha1``, pod label
                             group.scheduling.sigs.k8s.io``    ``scheduling.x-k8s.io/pod-group``
============================ ================================= ==============================

Retries: an AppWrapper restarts as a whole (its controller deletes every wrapped object
and makes them again), whatever a role's ``retry_policy``; the app's retries are the
largest ``max_retries`` of its roles. MCAD requeues an AppWrapper whose running and
succeeded pods fall below ``minAvailable`` (the replicas the app needs), at most
``maxNumRequeuings`` times; it reads ``maxNumRequeuings: 0`` as "no limit" and an absent
``minAvailable`` as 1, so an app without retries gets ``minAvailable: -1`` (no
monitoring: MCAD never requeues it, and ``describe`` reports it FAILED from its failed
pod). A v1beta2 one gets ``retryLimit: "0"`` (the controller's default is 3).
``failure_grace`` and ``retry_pause`` set how long the controller waits (v1beta1:
``requeuing.timeInSeconds``, counted from dispatch, and ``pauseTimeInSeconds``; v1beta2:
the ``failureGracePeriodDuration`` and ``retryPausePeriodDuration`` annotations).
"""

from __future__ import annotations

from typing import Any

from torchx.specs import AppDef
from torchx_k8s import labels, names, pod
from torchx_k8s.options import McadOpts
from torchx_k8s.request import (
    APPWRAPPER_GROUP,
    APPWRAPPER_PLURAL,
    KUEUE_QUEUE,
    RANK0_ENV,
    K8sRequest,
    appdef_json,
    check,
    metadata,
    replicas,
)

GROUP, PLURAL = APPWRAPPER_GROUP, APPWRAPPER_PLURAL
#: The flavour (:mod:`torchx_k8s.names`) of each ``appwrapper_version``.
FLAVOUR_OF_VERSION = {"v1beta1": names.APPWRAPPER, "v1beta2": names.APPWRAPPER_V1BETA2}
VERSION_OF_FLAVOUR = {flavour: version for version, flavour in FLAVOUR_OF_VERSION.items()}
#: The label MCAD counts an AppWrapper's pods by (its value: the AppWrapper's name).
MCAD_POD_LABEL = "appwrapper.mcad.ibm.com"
#: The v1beta2 annotation bounding the controller's resets (its default: 3).
RETRY_LIMIT = "workload.codeflare.dev.appwrapper/retryLimit"
FAILURE_GRACE = "workload.codeflare.dev.appwrapper/failureGracePeriodDuration"
RETRY_PAUSE = "workload.codeflare.dev.appwrapper/retryPausePeriodDuration"
#: v1beta1 ``schedulingSpec.minAvailable`` that turns MCAD's monitoring off (no requeues).
NO_MONITORING = -1
#: The pod annotation naming Multus networks (``network``).
NETWORK_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
#: (PodGroup apiVersion, pod label naming the group) of the coscheduling plugin, per
#: flavour: the older group upstream TorchX names, and the current one.
COSCHEDULING = {
    names.APPWRAPPER: ("scheduling.sigs.k8s.io/v1alpha1", "pod-group.scheduling.sigs.k8s.io"),
    names.APPWRAPPER_V1BETA2: ("scheduling.x-k8s.io/v1alpha1", "scheduling.x-k8s.io/pod-group"),
}
#: The Service's port when no role has a ``port_map`` (torchrun's rendezvous port).
DEFAULT_PORT = 29500


def make_appwrapper(app: AppDef, name: str, opts: McadOpts) -> K8sRequest:
    """The AppWrapper of ``app`` named ``name`` with the run options ``opts``.

    Raises :class:`~torchx.specs.errors.SpecError` (one line) for what a cluster could
    not run.
    """
    check(app)
    flavour = FLAVOUR_OF_VERSION[opts.appwrapper_version]
    namespace = opts.pods.namespace
    host = names.appwrapper_pod_name(name, app.roles[0].name, 0)
    rank0_host = names.rank0_host(host, name, namespace, opts.cluster_domain)
    pods: list[dict[str, Any]] = []
    samples: list[dict[str, Any]] = []
    required = 0
    for _, role, k, task, template in replicas(
        app, name, opts.pods, flavour, RANK0_ENV, rank0_host
    ):
        wrapped = _wrapped_pod(template, f"{name}-{task}", name, namespace, flavour, opts)
        pods.append(wrapped)
        if k == 0:
            samples.append(wrapped)
        required += 1 if role.min_replicas is None or k < role.min_replicas else 0
    retries = max(r.max_retries for r in app.roles)
    group = _pod_group(app, name, namespace, flavour, required) if opts.coscheduler_name else None
    service = _service(app, name, namespace)
    meta = metadata(name, app)
    meta["namespace"] = namespace
    meta["annotations"] = {
        labels.FORMAT_KEY: labels.FORMAT,
        labels.APPDEF: appdef_json(app, opts),
    }
    spec: dict[str, Any]
    if flavour == names.APPWRAPPER:
        items = [{"replicas": 1, "generictemplate": group}] if group else []
        items += [
            {
                "replicas": 1,
                "custompodresources": [_pod_resources(p)],
                "generictemplate": p,
            }
            for p in pods
        ]
        items.append({"replicas": 1, "generictemplate": service})
        spec = {}
        if opts.priority is not None:
            spec["priority"] = opts.priority
        spec["schedulingSpec"] = _scheduling_spec(retries, required, opts)
        spec["resources"] = {"GenericItems": items}
    else:
        components: list[dict[str, Any]] = [{"template": group}] if group else []
        components += [
            {"podSets": [{"replicas": 1, "path": "template"}], "template": p} for p in pods
        ]
        components.append({"template": service})
        meta["annotations"][RETRY_LIMIT] = str(retries)
        if opts.failure_grace is not None:
            meta["annotations"][FAILURE_GRACE] = f"{opts.failure_grace}s"
        if opts.retry_pause is not None:
            meta["annotations"][RETRY_PAUSE] = f"{opts.retry_pause}s"
        if opts.queue:
            meta["labels"][KUEUE_QUEUE] = opts.queue
        spec = {"components": components}
    resource = {
        "apiVersion": f"{GROUP}/{opts.appwrapper_version}",
        "kind": "AppWrapper",
        "metadata": meta,
        "spec": spec,
    }
    ref = names.AppRef(namespace, name, flavour, opts.pods.context)
    return K8sRequest(
        app_id=names.format_app_id(ref),
        namespace=namespace,
        name=name,
        flavour=flavour,
        resource=resource,
        context=opts.pods.context,
        validate_spec=opts.pods.validate_spec,
        samples=samples,
    )


def _scheduling_spec(retries: int, required: int, opts: McadOpts) -> dict[str, Any]:
    """v1beta1's ``schedulingSpec``: MCAD's monitoring (requeues) only with retries."""
    if retries == 0:
        return {"minAvailable": NO_MONITORING}
    requeuing: dict[str, int] = {"maxNumRequeuings": retries}
    if opts.failure_grace is not None:
        requeuing["timeInSeconds"] = opts.failure_grace
    if opts.retry_pause is not None:
        requeuing["pauseTimeInSeconds"] = opts.retry_pause
    return {"minAvailable": required, "requeuing": requeuing}


def _wrapped_pod(
    template: dict[str, Any],
    pod_name: str,
    name: str,
    namespace: str,
    flavour: str,
    opts: McadOpts,
) -> dict[str, Any]:
    """The replica's pod template made a Pod of its own (a role's overlay keeps its say)."""
    meta = template["metadata"]
    spec = template["spec"]
    meta["name"] = pod_name
    meta["namespace"] = namespace
    if flavour == names.APPWRAPPER:
        meta["labels"][MCAD_POD_LABEL] = name
    if opts.network:
        meta["annotations"][NETWORK_ANNOTATION] = opts.network
    spec.setdefault("hostname", pod_name)
    spec.setdefault("subdomain", name)
    if opts.coscheduler_name:
        spec.setdefault("schedulerName", opts.coscheduler_name)
        meta["labels"][COSCHEDULING[flavour][1]] = name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _pod_resources(wrapped: dict[str, Any]) -> dict[str, Any]:
    """MCAD's ``custompodresources`` entry of one pod: what it counts against its quota."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    for c in wrapped["spec"].get("containers") or []:
        res = c.get("resources") or {}
        requests.update(res.get("requests") or {})
        limits.update(res.get("limits") or {})
    out: dict[str, Any] = {"replicas": 1, "requests": requests}
    if limits:
        out["limits"] = limits
    return out


def _pod_group(
    app: AppDef, name: str, namespace: str, flavour: str, required: int
) -> dict[str, Any]:
    return {
        "apiVersion": COSCHEDULING[flavour][0],
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels.object_labels(name, app.name),
        },
        "spec": {"minMember": required},
    }


def _service(app: AppDef, name: str, namespace: str) -> dict[str, Any]:
    ports: list[dict[str, Any]] = []
    seen: set[int] = set()
    taken: set[str] = set()
    for role in app.roles:
        for port_name, port in role.port_map.items():
            if int(port) in seen:
                continue
            seen.add(int(port))
            ports.append(
                {
                    "name": pod.port_name(port_name, int(port), taken),
                    "port": int(port),
                    "targetPort": int(port),
                    "protocol": "TCP",
                }
            )
    if not ports:
        ports = [
            {"name": "c10d", "port": DEFAULT_PORT, "targetPort": DEFAULT_PORT, "protocol": "TCP"}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels.object_labels(name, app.name),
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {labels.INSTANCE: name},
            "ports": ports,
        },
    }
