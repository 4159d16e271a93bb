"""One replica's pod, as plain data (a ``PodTemplateSpec`` dict), made without the client.

:func:`pod_template` gives the pod a Volcano task or a JobSet's Job makes for one
replica: its metadata (labels of :mod:`torchx_k8s.labels`) and spec, in the API's own
field names (camelCase), ready to be sent as JSON or printed as YAML.

* Resources (upstream TorchX's rule): the role's ``cpu`` and ``memMB`` are the limits;
  the requests are ``reserved_millicpu`` and ``reserved_memmb`` lower (never below 0),
  so a role sized as a whole machine fits beside the node's own reservations. GPUs as
  ``nvidia.com/gpu``, other ``Resource.devices`` (``vpc.amazonaws.com/efa``) by name.
  ``memMB`` is read as MiB, as everywhere in TorchX (upstream writes ``M``).
* A node selector on ``node.kubernetes.io/instance-type`` from the capability of that
  name.
* ``/dev/shm`` is a memory-backed ``emptyDir`` (the runtime's 64 MiB is too small for
  PyTorch data loaders).
* Mounts: ``BindMount`` as ``hostPath``, ``VolumeMount`` as a PersistentVolumeClaim,
  ``DeviceMount`` as ``hostPath`` in a privileged container (Kubernetes has no
  ``--device``; prefer a device plugin).
* Arguments and env values arrive as typed: Kubernetes expands ``$(NAME)`` in a
  container's command, args and env values and turns ``$$`` into ``$``, so each ``$``
  it would read so is doubled (:func:`literal`): ``$(LOGLEVEL)`` reaches the program as
  ``$(LOGLEVEL)``, ``pa$$word`` as ``pa$$word``.
* Environment: the role's ``env``; ``TORCHX_POD_NAME``, ``TORCHX_POD_NAMESPACE`` and
  ``TORCHX_POD_IP`` from the downward API (field references); each ``secret_env``
  variable as a ``secretKeyRef``, so a credential never sits in the spec.
* ``port_map`` as named container ports; service account, image pull secrets,
  ``restartPolicy: Never`` (retries are the controller's).
* Last, the role's ``V1Pod`` overlay (``set_overlay(role, "kubernetes", "V1Pod", ...)``,
  or upstream's flat ``role.metadata["kubernetes"]``) is applied onto the pod.
"""

from __future__ import annotations

import re
from typing import Any

from torchx.specs import BindMount, DeviceMount, Role, VolumeMount
from torchx.specs.errors import SpecError
from torchx_k8s import labels
from torchx_k8s.options import K8sOpts

#: The scheduler's name in ``Role.metadata``, and the overlay's kind.
OVERLAY_NAMESPACE = "kubernetes"
OVERLAY_KIND = "V1Pod"
GPU_RESOURCE = "nvidia.com/gpu"
SHM_VOLUME = "dshm"

_PORT_NAME = re.compile(r"(?=.*[a-z])[a-z0-9]([a-z0-9]|-(?!-))*[a-z0-9]|[a-z]")
#: A ``$`` Kubernetes reads as the start of ``$(NAME)`` or of the escape ``$$``.
_EXPANDED = re.compile(r"\$(?=[$(])")


def literal(text: str) -> str:
    """``text`` as Kubernetes passes it to the container unchanged (command, args, env).

    Kubernetes replaces ``$(NAME)`` by the value of the container's variable ``NAME``
    (when it has one) and ``$$`` by ``$``; a ``$`` before anything else is kept. Doubling
    each ``$`` that comes before ``$`` or ``(`` is its own escape, and undoes exactly
    that: every string arrives as typed.

    >>> literal("--level=$(LOGLEVEL) pa$$word $HOME $")
    '--level=$$(LOGLEVEL) pa$$$word $HOME $'
    """
    return _EXPANDED.sub("$$", text) if "$" in text else text


def resources(role: Role, opts: K8sOpts) -> dict[str, dict[str, str]]:
    """The container's ``resources``: limits from the role, requests below by the headroom."""
    resource = role.resource
    limits: dict[str, str] = {}
    requests: dict[str, str] = {}
    if resource.cpu > 0:
        mcpu = int(resource.cpu * 1000)
        limits["cpu"] = f"{mcpu}m"
        requests["cpu"] = f"{max(mcpu - opts.reserved_millicpu, 0)}m"
    if resource.memMB > 0:
        mem = int(resource.memMB)
        limits["memory"] = f"{mem}Mi"
        requests["memory"] = f"{max(mem - opts.reserved_memmb, 0)}Mi"
    if resource.gpu > 0:
        limits[GPU_RESOURCE] = requests[GPU_RESOURCE] = str(int(resource.gpu))
    for device, count in sorted(resource.devices.items()):
        limits[device] = requests[device] = str(int(count))
    out: dict[str, dict[str, str]] = {}
    if limits:
        out["limits"] = limits
    if requests:
        out["requests"] = requests
    return out


def port_name(name: str, port: int, taken: set[str]) -> str:
    """A valid, unused container port name (at most 15 characters) for ``port_map[name]``."""
    candidate = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:15].strip("-")
    if not _PORT_NAME.fullmatch(candidate) or candidate in taken:
        candidate = f"p{port}"
    taken.add(candidate)
    return candidate


def _mounts(role: Role) -> tuple[list[dict[str, Any]], list[dict[str, Any]], bool]:
    volumes: list[dict[str, Any]] = [{"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}}]
    mounts: list[dict[str, Any]] = [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}]
    privileged = False
    for i, mount in enumerate(role.mounts):
        name = f"mount-{i}"
        if isinstance(mount, BindMount):
            volumes.append({"name": name, "hostPath": {"path": mount.src_path}})
            mounts.append({"name": name, "mountPath": mount.dst_path, "readOnly": mount.read_only})
        elif isinstance(mount, VolumeMount):
            volumes.append({"name": name, "persistentVolumeClaim": {"claimName": mount.src}})
            mounts.append({"name": name, "mountPath": mount.dst_path, "readOnly": mount.read_only})
        elif isinstance(mount, DeviceMount):
            volumes.append({"name": name, "hostPath": {"path": mount.src_path}})
            writable = "w" in mount.permissions or "m" in mount.permissions
            mounts.append({"name": name, "mountPath": mount.dst_path, "readOnly": not writable})
            privileged = True
        else:  # pragma: no cover - parse_mounts makes only these
            raise SpecError(f"role {role.name!r}: unknown mount {mount!r}")
    return volumes, mounts, privileged


def _env(env: dict[str, str], opts: K8sOpts) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"name": k, "value": literal(str(v))} for k, v in env.items() if k not in opts.secret_refs
    ]
    for var, path in (
        ("TORCHX_POD_NAME", "metadata.name"),
        ("TORCHX_POD_NAMESPACE", "metadata.namespace"),
        ("TORCHX_POD_IP", "status.podIP"),
    ):
        if var not in env:
            out.append({"name": var, "valueFrom": {"fieldRef": {"fieldPath": path}}})
    for var, (secret, key) in opts.secret_refs.items():
        out.append({"name": var, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}})
    return out


def pod_template(
    role: Role,
    args: list[str],
    env: dict[str, str],
    container: str,
    pod_labels: dict[str, str],
    opts: K8sOpts,
    *,
    pod_priority_class: bool,
) -> dict[str, Any]:
    """The ``PodTemplateSpec`` of one replica of ``role``, running ``args`` with ``env``.

    ``args`` and ``env`` are the role's with the replica's macros substituted (the
    role's own are not read: substituting needs no copy of the role).

    ``container`` names the one container (upstream TorchX: the task's name);
    ``pod_priority_class``: the priority class goes on the pod (a JobSet's) rather than
    on the Volcano Job.
    """
    volumes, mounts, privileged = _mounts(role)
    taken: set[str] = set()
    ports = [
        {"name": port_name(name, port, taken), "containerPort": int(port)}
        for name, port in role.port_map.items()
    ]
    spec_container: dict[str, Any] = {
        "name": container,
        "image": role.image,
        "command": [literal(part) for part in (role.entrypoint, *args)],
        "env": _env(env, opts),
        "resources": resources(role, opts),
        "volumeMounts": mounts,
    }
    if ports:
        spec_container["ports"] = ports
    if privileged:
        spec_container["securityContext"] = {"privileged": True}
    spec: dict[str, Any] = {
        "containers": [spec_container],
        "restartPolicy": "Never",
        "volumes": volumes,
    }
    instance_type = role.resource.capabilities.get(labels.INSTANCE_TYPE)
    if instance_type:
        spec["nodeSelector"] = {labels.INSTANCE_TYPE: str(instance_type)}
    if opts.service_account:
        spec["serviceAccountName"] = opts.service_account
    if opts.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": s} for s in opts.image_pull_secrets]
    if pod_priority_class and opts.priority_class:
        spec["priorityClassName"] = opts.priority_class
    pod: dict[str, Any] = {
        "metadata": {
            "labels": pod_labels,
            "annotations": {labels.ISTIO_SIDECAR: "false"},
        },
        "spec": spec,
    }
    _apply_overlay(role, pod)
    return pod


def _apply_overlay(role: Role, pod: dict[str, Any]) -> None:
    if OVERLAY_NAMESPACE not in role.metadata:
        return
    from torchx.specs.overlays import apply_overlay, get_overlay

    overlay = get_overlay(role, OVERLAY_NAMESPACE, OVERLAY_KIND)
    if overlay:
        apply_overlay(pod, overlay)
