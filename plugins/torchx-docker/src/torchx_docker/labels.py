"""The labels that tie containers to apps: the engine is the scheduler's only record.

Every container the ``docker`` scheduler creates carries these labels, so that
``describe``, ``list``, ``log_iter``, ``cancel`` and ``delete`` find an app's
containers from any process with one label query, and nothing is kept on the
submitting machine. Two kinds of containers exist:

* a *replica*: runs one replica of one role (``ROLE``, ``REPLICA``);
* a *marker*: created, never started, whose existence records a fact about the app
  that the engine cannot hold otherwise (labels cannot change once a container
  exists): ``cancelled`` (``cancel`` was asked for), ``stopped`` (a replica failed, and
  the app's other replicas were stopped) or ``restart`` (the app, or one role, was
  restarted; ``ATTEMPT`` counts). ``cancelled`` and ``stopped`` name the replicas that
  had already ended when they were made (``ENDED_BEFORE``): the others ended because
  torchx stopped them, whatever their exit code. Creating a container of a given name
  happens at most once, which makes a marker a lock too: two processes that both see
  a failure restart the app once.

``FORMAT`` is the version of this layout: a scheduler reading containers of a newer
format says so instead of misreading them. The names every backend shares (the app's
id and name, a replica's role and index, the version, the AppDef) are torchx-runner's
:mod:`torchx.schedulers.helpers.labels`; the others are the Docker scheduler's own.

>>> replica_labels("app-1", "trainer", 0)[APP_ID]
'app-1'
"""

from __future__ import annotations

from torchx.schedulers.helpers import labels as shared

#: Prefix of every label (upstream TorchX's, so its tools see these containers too).
PREFIX = shared.PREFIX
#: The app's id (``make_app_id``): what every query filters on.
APP_ID = shared.APP_ID
#: The role's name (replicas only).
ROLE = shared.ROLE_NAME
#: The replica's index in its role, as a decimal string (replicas only).
REPLICA = shared.REPLICA_ID
#: The version of this label layout.
VERSION = shared.VERSION
#: What the container is: ``replica``, or a marker's kind (``cancelled``, ``restart``).
KIND = PREFIX + "kind"
#: The app's name (the AppDef's), for ``list``.
APP_NAME = shared.APP_NAME
#: On the first replica only: the submitted AppDef as JSON (``describe`` gives it back).
APPDEF = shared.APPDEF
#: The role's retry policy and max_retries (replicas only): what a failure leads to.
RETRY_POLICY = PREFIX + "retry-policy"
MAX_RETRIES = PREFIX + "max-retries"
#: Seconds a replica has between SIGTERM and SIGKILL (``stop_grace``), for restarts.
STOP_GRACE = PREFIX + "stop-grace"
#: On restart markers: which restart of the app (``1``, ``2``, ...) and of which role
#: (empty: every role, the APPLICATION policy).
ATTEMPT = PREFIX + "attempt"
RESTART_ROLE = PREFIX + "restart-role"

#: On ``cancelled`` and ``stopped`` markers: the replicas (``role/index``, a JSON list)
#: that had ended before the marker was made.
ENDED_BEFORE = PREFIX + "ended-before"

#: The layout version written by this release.
FORMAT = "1"

KIND_REPLICA = "replica"
KIND_CANCELLED = "cancelled"
KIND_RESTART = "restart"
KIND_STOPPED = "stopped"


def replica_labels(app_id: str, role: str, replica: int) -> dict[str, str]:
    """The labels of replica ``replica`` of ``role`` in app ``app_id``."""
    return {
        APP_ID: app_id,
        ROLE: role,
        REPLICA: str(replica),
        VERSION: FORMAT,
        KIND: KIND_REPLICA,
    }


def marker_labels(app_id: str, kind: str, **extra: str) -> dict[str, str]:
    """The labels of a marker container of ``kind`` for app ``app_id``."""
    return {APP_ID: app_id, VERSION: FORMAT, KIND: kind, **extra}


def app_filter(app_id: str) -> dict[str, list[str]]:
    """The engine's filter for every container (replicas and markers) of ``app_id``."""
    return {"label": [f"{APP_ID}={app_id}"]}


def all_apps_filter() -> dict[str, list[str]]:
    """The engine's filter for every container the scheduler made, of any app."""
    return {"label": [APP_ID]}
