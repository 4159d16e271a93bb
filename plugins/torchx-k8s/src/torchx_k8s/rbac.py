"""The permissions the ``kubernetes`` and ``kubernetes_mcad`` schedulers need, as a namespaced
RBAC Role.

Every API call the scheduler makes, and why (:data:`RULES`):

================================ ===================================== ============================
resource (API group)             verbs                                 used by
================================ ===================================== ============================
``jobs`` (batch.volcano.sh)      create, get, list, patch, delete      run, status, list, cancel,
                                                                       delete (Volcano flavour)
``jobs/status`` (batch.volcano.  patch                                 cancel (phase ``Aborted``)
sh)
``jobsets`` (jobset.x-k8s.io)    create, get, list, patch, delete      the same, JobSet flavour
                                                                       (cancel: ``spec.suspend``)
``appwrappers`` (workload.       create, get, list, patch, delete      the same, ``kubernetes_mcad``
codeflare.dev)                                                         (cancel: an annotation, and
                                                                       ``spec.suspend`` or
                                                                       ``schedulingSpec``)
``pods`` (core)                  list, create, deletecollection        status (one list by label);
                                                                       ``validate_spec`` (a dry
                                                                       run: nothing is created);
                                                                       cancel of an AppWrapper
                                                                       v1beta1 (its pods)
``pods/log`` (core)              get                                   log
``podgroups`` (scheduling.       get                                   status of a pending Volcano
volcano.sh)                                                            job (why it is not placed)
``secrets`` (core)               get                                   status of a failed app: the
                                                                       values of the Secrets its
                                                                       pods read (``secret_env``),
                                                                       to mask them
================================ ===================================== ============================

``get`` on ``secrets`` gives the submitter nothing new: whoever may create pods (or the
Volcano Jobs, JobSets and AppWrappers that make them) in a namespace can already read
any of its Secrets through a pod that mounts it. Without it everything works, and
``torchx status`` cannot mask a ``secret_env`` value a failed app printed (a debug line
says which Secret it could not read): an administrator who grants less drops that rule.

``python -m torchx_k8s rbac --namespace team-a`` prints it as YAML, to apply with
``kubectl apply -f -`` and bind to the users (or service account) who submit:

>>> role = role_manifest("team-a")
>>> role["kind"], role["metadata"]["namespace"], len(role["rules"])
('Role', 'team-a', 8)
"""

from __future__ import annotations

from typing import Any

#: (API group, resource, verbs) of every call the scheduler makes.
RULES: list[tuple[str, str, list[str]]] = [
    ("batch.volcano.sh", "jobs", ["create", "get", "list", "patch", "delete"]),
    ("batch.volcano.sh", "jobs/status", ["patch"]),
    ("jobset.x-k8s.io", "jobsets", ["create", "get", "list", "patch", "delete"]),
    ("workload.codeflare.dev", "appwrappers", ["create", "get", "list", "patch", "delete"]),
    ("", "pods", ["list", "create", "deletecollection"]),
    ("", "pods/log", ["get"]),
    ("scheduling.volcano.sh", "podgroups", ["get"]),
    ("", "secrets", ["get"]),
]


def role_manifest(namespace: str = "default", name: str = "torchx-submitter") -> dict[str, Any]:
    """The ``rbac.authorization.k8s.io/v1`` Role granting :data:`RULES` in ``namespace``."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace},
        "rules": [
            {"apiGroups": [group], "resources": [resource], "verbs": list(verbs)}
            for group, resource, verbs in RULES
        ],
    }
