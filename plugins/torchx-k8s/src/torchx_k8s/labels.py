"""The labels and annotations that tie pods and objects to apps.

The names are upstream TorchX's (``torchx.pytorch.org/...`` and the recommended
``app.kubernetes.io/...``), so pods made by either are found the same way:
``describe`` lists an app's pods with one label selector on
``app.kubernetes.io/instance`` (the object's name) and reads each pod's role index
and replica id from its labels; ``list`` selects the objects by
``app.kubernetes.io/managed-by``.

Label values are at most 63 characters of letters, digits, ``-``, ``_``, ``.``;
:func:`label_value` makes one of any text (the exact app and role names are in
the object's ``appdef`` annotation).

>>> label_value("My trainer (v2)")
'My-trainer-v2'
>>> pod_selector("trainer-1a2b3c4d5e")
'app.kubernetes.io/instance=trainer-1a2b3c4d5e'
"""

from __future__ import annotations

import re

from torchx.schedulers.helpers.labels import (
    APP_NAME,
    APPDEF,
    PREFIX,
    REPLICA_ID,
    ROLE_INDEX,
    ROLE_NAME,
    VERSION,
)
from torchx.schedulers.helpers.labels import FORMAT as FORMAT_KEY
from torchx_k8s._version import __version__

__all__ = [
    "APPDEF",
    "APP_NAME",
    "FORMAT",
    "FORMAT_KEY",
    "INSTANCE",
    "INSTANCE_TYPE",
    "ISTIO_SIDECAR",
    "KUBE_APP_NAME",
    "MANAGED_BY",
    "MANAGER",
    "PREFIX",
    "REPLICA_ID",
    "ROLE_INDEX",
    "ROLE_NAME",
    "VERSION",
    "app_selector",
    "label_value",
    "object_labels",
    "pod_labels",
    "pod_selector",
]

# TorchX's own keys (torchx-k8s's version is VERSION's value on pods; upstream TorchX
# writes its own there) come from torchx.schedulers.helpers.labels; these are Kubernetes' own:
KUBE_APP_NAME = "app.kubernetes.io/name"
MANAGED_BY = "app.kubernetes.io/managed-by"
#: the object's name, on the object and every pod: what ``describe`` selects pods by
INSTANCE = "app.kubernetes.io/instance"
MANAGER = "torchx.pytorch.org"

#: The version of this layout (names, labels, annotations), in the object's
#: ``FORMAT_KEY`` annotation (its ``APPDEF`` annotation holds the submitted AppDef as JSON).
FORMAT = "1"
#: Annotation on pods: keeps an Istio sidecar out (it would keep a finished pod running).
ISTIO_SIDECAR = "sidecar.istio.io/inject"
#: Node label of the machine type (``Resource.capabilities`` key, as upstream TorchX).
INSTANCE_TYPE = "node.kubernetes.io/instance-type"

_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


def label_value(text: str) -> str:
    """``text`` as a valid label value: other characters become ``-``, cut to 63."""
    value = _BAD.sub("-", text)[:63]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", value)


def object_labels(name: str, app_name: str) -> dict[str, str]:
    """The labels of the app's object (``list`` selects on ``MANAGED_BY``)."""
    return {
        MANAGED_BY: MANAGER,
        INSTANCE: name,
        KUBE_APP_NAME: label_value(app_name),
        APP_NAME: label_value(app_name),
        VERSION: __version__,
    }


def pod_labels(
    name: str, app_name: str, role_index: int, role: str, replica: int
) -> dict[str, str]:
    """The labels of a replica's pod (upstream TorchX's set)."""
    return {
        VERSION: __version__,
        APP_NAME: label_value(app_name),
        ROLE_INDEX: str(role_index),
        ROLE_NAME: label_value(role),
        REPLICA_ID: str(replica),
        KUBE_APP_NAME: label_value(app_name),
        MANAGED_BY: MANAGER,
        INSTANCE: name,
    }


def pod_selector(name: str) -> str:
    """The label selector of every pod of the app whose object is ``name``."""
    return f"{INSTANCE}={name}"


def app_selector() -> str:
    """The label selector of every object this plugin made."""
    return f"{MANAGED_BY}={MANAGER}"
