"""The label and tag names TorchX puts on what it submits: one vocabulary for every backend.

A backend that lets a job, a pod, a container or a training job carry key/value pairs
(Kubernetes labels and annotations, Docker labels, AWS tags) gets TorchX's under these
keys, so that ``list`` finds an app's jobs with one query and ``describe`` reads back the
app's name and its replicas' places. The names are upstream TorchX's
(``torchx.pytorch.org/...``), so tools written for it see the same keys. A plugin imports
the keys it writes from here, and keeps in its own ``labels`` module only what is its
backend's alone (a label value's syntax, Kubernetes' recommended ``app.kubernetes.io/``
names, the kinds of Docker's marker containers)::

    from torchx.schedulers.helpers import labels

    tags = {labels.VERSION: __version__, labels.APP_NAME: app.name, labels.USER: user}

>>> APP_NAME, ROLE_NAME, REPLICA_ID
('torchx.pytorch.org/app-name', 'torchx.pytorch.org/role-name', 'torchx.pytorch.org/replica-id')
"""

from __future__ import annotations

__all__ = [
    "APPDEF",
    "APP_ID",
    "APP_NAME",
    "CANCELLED",
    "FORMAT",
    "PREFIX",
    "REPLICA_ID",
    "ROLE_INDEX",
    "ROLE_NAME",
    "SCHEDULER",
    "USER",
    "VERSION",
]

#: The prefix of every key (upstream TorchX's).
PREFIX = "torchx.pytorch.org/"
#: The version of whoever wrote the job (a plugin's version, or its layout's).
VERSION = PREFIX + "version"
#: The app's id, where the backend's own id is not it (a Docker container's).
APP_ID = PREFIX + "app-id"
#: The AppDef's name.
APP_NAME = PREFIX + "app-name"
#: A replica's role's name.
ROLE_NAME = PREFIX + "role-name"
#: A replica's role's index in the AppDef's roles.
ROLE_INDEX = PREFIX + "role-index"
#: A replica's index in its role.
REPLICA_ID = PREFIX + "replica-id"
#: The user who submitted the app.
USER = PREFIX + "user"
#: The scheduler that submitted it (where one backend serves several).
SCHEDULER = PREFIX + "scheduler"
#: The submitted AppDef, as JSON (``describe`` gives it back).
APPDEF = PREFIX + "appdef"
#: The version of the layout of these keys and of the objects that carry them.
FORMAT = PREFIX + "format"
#: Set (to a time) by ``cancel`` where the backend cannot say an app was cancelled.
CANCELLED = PREFIX + "cancelled"
