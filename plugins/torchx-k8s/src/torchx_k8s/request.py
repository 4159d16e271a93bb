"""The object an app becomes (a Volcano Job or a JobSet), as plain data, made without the client.

:func:`make_request` turns an AppDef (the scheduler's copy) into a :class:`K8sRequest`:
the custom object to create, as the JSON-safe dict the API takes, so ``torchx run
--dryrun -s kubernetes`` prints exactly what would be sent (YAML, :meth:`K8sRequest.to_yaml`)
and tests check it field by field without a cluster.

Both flavours make one task (replicated job) per replica, named
``{role}-{replica}`` (:func:`torchx_k8s.names.task_name`), because macros
(``${replica_id}``) make each replica's arguments its own.

**Volcano** (``batch.volcano.sh/v1alpha1`` ``Job``, the default; upstream TorchX's shape):
``schedulerName: volcano``, the ``queue``, the ``svc`` plugin (a headless Service named
after the job, each pod's hostname its own name and subdomain the job's, host names of
every task in ``VC_<TASK>_HOSTS``; ``--publish-not-ready-addresses`` so replicas find
each other before they are ready) and the ``env`` plugin (``VC_TASK_INDEX``). The
rank-0 host: ``macros.rank0_env`` is ``TORCHX_RANK0_HOST``, as in every flavour: the
first replica's fully qualified host name (:func:`torchx_k8s.names.rank0_host` says why
not Volcano's ``VC_<TASK0>_HOSTS``, ``<host>.<subdomain>``).
``min_replicas`` of a role: its first ``min_replicas`` tasks have
``minAvailable: 1``, the rest ``0``; the job's ``minAvailable`` is their sum (all
replicas when no role sets it), so the gang starts once the required replicas fit.

Retries (Volcano restarts pods through policies; upstream TorchX crashes on ``ROLE``):

========================= =====================================================
policy                    Volcano
========================= =====================================================
``REPLICA``               task ``maxRetry``, ``PodFailed``/``PodEvicted`` ->
                          ``RestartTask`` (each task is one replica)
``APPLICATION``, ``ROLE`` ``PodFailed``/``PodEvicted`` -> ``RestartJob``, job
                          ``maxRetry``: Volcano restarts a task or the whole
                          job, never a group of tasks, so ``ROLE`` restarts all
no retries                ``PodFailed`` -> ``TerminateJob`` (a failed replica
                          fails the app at once, as on every TorchX scheduler)
========================= =====================================================

Volcano counts a restart in ``status.retryCount`` when it asks for it, and fails the job
instead once that count reaches ``maxRetry``: ``maxRetry: N`` allows ``N - 1`` restarts.
So ``max_retries`` becomes ``maxRetry: max_retries + 1`` (the task's, and the job's for
the largest of the roles whose policy restarts the job; upstream TorchX wrote
``max_retries``, one restart short), and the job's is 0 when no role restarts it, so
Volcano's default of 3 never applies unasked.

**JobSet** (``jobset.x-k8s.io/v1alpha2``, ``flavour=jobset``; for clusters without
Volcano): one replicated job per replica (``replicas: 1``, an Indexed batch Job of
one pod), ``network.enableDNSHostnames`` (each pod's host name is
``{jobset}-{rjob}-0-0``, its subdomain the JobSet's name, published before it is ready),
``successPolicy: All``. The rank-0 host is that name of the first replica, in
``TORCHX_RANK0_HOST``, fully qualified (:func:`replicas`). Retries: ``REPLICA`` is the Job's
``backoffLimit`` (the Job makes a new pod); ``APPLICATION`` and ``ROLE`` are the
JobSet's ``failurePolicy.maxRestarts`` (the whole JobSet is recreated). ``queue`` is
Kueue's ``kueue.x-k8s.io/queue-name`` label. Upstream TorchX has no JobSet support.

The object carries the labels of :mod:`torchx_k8s.labels` and the submitted AppDef
(JSON, annotation ``torchx.pytorch.org/appdef``): ``describe`` gives it back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from torchx.schedulers.helpers.scriptroles import require_roles
from torchx.specs import AppDef, RetryPolicy, Role, macros
from torchx.specs.errors import SpecError
from torchx_k8s import labels, names, pod
from torchx_k8s.options import DEFAULT_QUEUE, K8sOpts

VOLCANO_GROUP, VOLCANO_VERSION, VOLCANO_PLURAL = "batch.volcano.sh", "v1alpha1", "jobs"
JOBSET_GROUP, JOBSET_VERSION, JOBSET_PLURAL = "jobset.x-k8s.io", "v1alpha2", "jobsets"
#: The ``kubernetes_mcad`` scheduler's AppWrapper (:mod:`torchx_k8s.appwrapper`).
APPWRAPPER_GROUP, APPWRAPPER_PLURAL = "workload.codeflare.dev", "appwrappers"
#: The variable holding the rank-0 host where the controller sets none (JobSet).
RANK0_ENV = "TORCHX_RANK0_HOST"
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"

#: (group, version, plural, kind) of each flavour's custom object.
KINDS: dict[str, tuple[str, str, str, str]] = {
    names.VOLCANO: (VOLCANO_GROUP, VOLCANO_VERSION, VOLCANO_PLURAL, "Job"),
    names.JOBSET: (JOBSET_GROUP, JOBSET_VERSION, JOBSET_PLURAL, "JobSet"),
    names.APPWRAPPER: (APPWRAPPER_GROUP, "v1beta1", APPWRAPPER_PLURAL, "AppWrapper"),
    names.APPWRAPPER_V1BETA2: (APPWRAPPER_GROUP, "v1beta2", APPWRAPPER_PLURAL, "AppWrapper"),
}


@dataclass
class K8sRequest:
    """What ``schedule`` creates: ``resource`` in ``namespace`` (through ``context``)."""

    app_id: str
    namespace: str
    name: str
    flavour: str
    #: the custom object, as the API takes it
    resource: dict[str, Any]
    context: str | None = None
    validate_spec: bool = True
    #: per role index, the first replica's pod template (for validate_spec)
    samples: list[dict[str, Any]] = field(default_factory=list)

    def to_yaml(self) -> str:
        """The object as YAML (what ``torchx run --dryrun`` prints)."""
        return render_yaml(self.resource)

    def __str__(self) -> str:
        return self.to_yaml()


def render_yaml(data: Any) -> str:
    """``data`` as block YAML, keys in their order (:mod:`torchx_k8s.yamltext`)."""
    from torchx_k8s.yamltext import render

    return render(data)


def check(app: AppDef) -> None:
    require_roles(app)  # every scheduler's refusal, and the Runner's
    for role in app.roles:
        if role.num_replicas < 1:
            raise SpecError(
                f"role {role.name!r} has num_replicas={role.num_replicas}: give 1 or more"
            )
        if not role.image:
            raise SpecError(f"role {role.name!r} has no image: Kubernetes runs container images")
    names_seen = [role.name for role in app.roles]
    for role_name in names_seen:
        if names_seen.count(role_name) > 1:
            raise SpecError(
                f"app {app.name!r} has two roles named {role_name!r}: each role's tasks and "
                "pods are named after it, rename one"
            )


def make_request(app: AppDef, name: str, opts: K8sOpts) -> K8sRequest:
    """The object of ``app`` named ``name`` with the run options ``opts``.

    Raises :class:`SpecError` (one line) for what a cluster could not run.
    """
    check(app)
    flavour = opts.flavour
    ref = names.AppRef(opts.namespace, name, flavour, opts.context)
    appdef_text = appdef_json(app, opts)
    if flavour == names.JOBSET:
        resource, samples = _jobset(app, name, opts)
    else:
        resource, samples = _volcano(app, name, opts)
    resource["metadata"]["annotations"] = {
        labels.FORMAT_KEY: labels.FORMAT,
        labels.APPDEF: appdef_text,
    }
    return K8sRequest(
        app_id=names.format_app_id(ref),
        namespace=opts.namespace,
        name=name,
        flavour=flavour,
        resource=resource,
        context=opts.context,
        validate_spec=opts.validate_spec,
        samples=samples,
    )


def replicas(
    app: AppDef,
    name: str,
    opts: K8sOpts,
    flavour: str,
    rank0_env: str,
    rank0_host: str | None = None,
) -> list[tuple[int, Role, int, str, dict[str, Any]]]:
    """(role index, role, replica, task name, pod template) of every replica.

    ``rank0_env``: the variable ``macros.rank0_env`` names; when it is
    :data:`RANK0_ENV`, every replica gets it set to ``rank0_host``, the first replica's
    fully qualified host name (:func:`torchx_k8s.names.rank0_host`, which says why;
    default: its JobSet host name's).
    """
    out = []
    if rank0_host is None:
        host = names.jobset_host_name(name, app.roles[0].name, 0)
        rank0_host = names.rank0_host(host, name, opts.namespace, opts.cluster_domain)
    for role_index, role in enumerate(app.roles):
        overlaid = pod.OVERLAY_NAMESPACE in role.metadata
        for k in range(role.num_replicas):
            values = macros.Values(img_root="", app_id=name, replica_id=str(k), rank0_env=rank0_env)
            # macros in args and env (and, with an overlay, in metadata: a full copy)
            replica_role = values.apply(role) if overlaid else role
            args = [values.substitute(a) for a in role.args]
            env = {key: values.substitute(v) for key, v in role.env.items()}
            if rank0_env == RANK0_ENV:
                env[RANK0_ENV] = rank0_host
            task = names.task_name(name, role.name, k, flavour)
            template = pod.pod_template(
                replica_role,
                args,
                env,
                task,
                labels.pod_labels(name, app.name, role_index, role.name, k),
                opts,
                pod_priority_class=flavour != names.VOLCANO,
            )
            out.append((role_index, role, k, task, template))
    return out


def metadata(name: str, app: AppDef) -> dict[str, Any]:
    """The object's name and labels (:func:`torchx_k8s.labels.object_labels`)."""
    return {"name": name, "labels": labels.object_labels(name, app.name)}


def _volcano(app: AppDef, name: str, opts: K8sOpts) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    host = names.volcano_pod_name(name, app.roles[0].name, 0)
    rank0_host = names.rank0_host(host, name, opts.namespace, opts.cluster_domain)
    tasks: list[dict[str, Any]] = []
    samples: list[dict[str, Any]] = []
    min_available = 0
    for _, role, k, task_name, template in replicas(
        app, name, opts, names.VOLCANO, RANK0_ENV, rank0_host
    ):
        if k == 0:
            samples.append(template)
        task: dict[str, Any] = {"name": task_name, "replicas": 1, "template": template}
        required = role.min_replicas is None or k < role.min_replicas
        if role.min_replicas is not None:
            task["minAvailable"] = 1 if required else 0
        min_available += 1 if required else 0
        if role.max_retries > 0:
            task["maxRetry"] = role.max_retries + 1
            action = "RestartTask" if role.retry_policy == RetryPolicy.REPLICA else "RestartJob"
            task["policies"] = [
                {"event": "PodFailed", "action": action},
                {"event": "PodEvicted", "action": action},
            ]
        elif required:
            task["policies"] = [{"event": "PodFailed", "action": "TerminateJob"}]
        tasks.append(task)
    job_restarts = [r.max_retries for r in app.roles if r.retry_policy != RetryPolicy.REPLICA]
    job_retries = max(job_restarts) + 1 if job_restarts and max(job_restarts) > 0 else 0
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "queue": opts.queue or DEFAULT_QUEUE,
        "minAvailable": min_available,
        "maxRetry": job_retries,
        "plugins": {"svc": ["--publish-not-ready-addresses"], "env": []},
        "tasks": tasks,
    }
    if opts.priority_class:
        spec["priorityClassName"] = opts.priority_class
    resource = {
        "apiVersion": f"{VOLCANO_GROUP}/{VOLCANO_VERSION}",
        "kind": "Job",
        "metadata": metadata(name, app),
        "spec": spec,
    }
    return resource, samples


def _jobset(app: AppDef, name: str, opts: K8sOpts) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    jobs: list[dict[str, Any]] = []
    samples: list[dict[str, Any]] = []
    for _, role, k, task_name, template in replicas(app, name, opts, names.JOBSET, RANK0_ENV):
        if k == 0:
            samples.append(template)
        backoff = role.max_retries if role.retry_policy == RetryPolicy.REPLICA else 0
        jobs.append(
            {
                "name": task_name,
                "replicas": 1,
                "template": {
                    "metadata": {"labels": dict(template["metadata"]["labels"])},
                    "spec": {
                        "completionMode": "Indexed",
                        "completions": 1,
                        "parallelism": 1,
                        "backoffLimit": backoff,
                        "template": template,
                    },
                },
            }
        )
    restarts = max(
        (r.max_retries for r in app.roles if r.retry_policy != RetryPolicy.REPLICA),
        default=0,
    )
    meta = metadata(name, app)
    if opts.queue:
        meta["labels"][KUEUE_QUEUE] = opts.queue
    resource = {
        "apiVersion": f"{JOBSET_GROUP}/{JOBSET_VERSION}",
        "kind": "JobSet",
        "metadata": meta,
        "spec": {
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            "successPolicy": {"operator": "All"},
            "failurePolicy": {"maxRestarts": restarts},
            "replicatedJobs": jobs,
        },
    }
    return resource, samples


def appdef_json(app: AppDef, opts: Mapping[str, Any]) -> str:
    """The AppDef's document with the run options ``opts``, masked (an annotation that
    whoever may read the object reads)."""
    from torchx.specs.appdef_json import encode

    return encode(app, run_options=opts)


def appdef_from(resource: dict[str, Any]) -> AppDef | None:
    """The AppDef an object made here carries (None: none, or not readable)."""
    return appdef_and_options_from(resource)[0]


def appdef_and_options_from(resource: dict[str, Any]) -> tuple[AppDef | None, dict[str, Any]]:
    """The AppDef an object made here carries (None: none, or not readable) and the
    masked run options kept with it (empty if none)."""
    text = ((resource.get("metadata") or {}).get("annotations") or {}).get(labels.APPDEF)
    if not text:
        return None, {}
    from torchx.specs.appdef_json import decode_with_options

    try:
        return decode_with_options(text)
    except Exception:
        return None, {}


def to_json(request: K8sRequest) -> str:
    """The object as compact JSON (what is sent)."""
    return json.dumps(request.resource, separators=(",", ":"))
