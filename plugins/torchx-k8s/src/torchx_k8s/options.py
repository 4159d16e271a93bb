"""The ``kubernetes`` scheduler's run options, and their checks before anything is sent.

The names are upstream TorchX's (``namespace``, ``queue``, ``service_account``,
``priority_class``, ``image_repo``, ``reserved_millicpu``, ``reserved_memmb``,
``validate_spec``), so an existing ``.torchxconfig`` ``[kubernetes]`` section works;
``flavour``, ``context``, ``image_pull_secrets`` and ``secret_env`` are ours.

>>> opts = k8s_runopts()
>>> o = read(opts.resolve({"flavour": "jobset", "secret_env": {"HF_TOKEN": "hf/token"}}))
>>> o.flavour, o.namespace, o.secret_env
('jobset', 'default', {'HF_TOKEN': ('hf', 'token')})
>>> read(opts.resolve({"secret_env": {"HF_TOKEN": "hf"}}))
Traceback (most recent call last):
 ...
torchx.specs.errors.InvalidRunConfigException: run option 'secret_env' has HF_TOKEN:'hf': give SECRET/KEY (a Secret of the namespace and one of its keys), e.g. HF_TOKEN:hf-creds/token
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from torchx.specs.errors import InvalidRunConfigException
from torchx.specs.options import CfgVal, runopts
from torchx_k8s.names import FLAVOURS, VOLCANO

#: Upstream TorchX's headroom: a pod requests this much less CPU and memory than its
#: limit, so that a role sized as a whole machine fits beside the node's own reservations.
RESERVED_MILLICPU = 100
RESERVED_MEMMB = 1024
#: The queue Volcano makes when it is installed.
DEFAULT_QUEUE = "default"

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
_SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]+")


#: the options both schedulers take, declared once: name -> runopts.add keywords
_SHARED: dict[str, dict[str, Any]] = {
    "namespace": {"type_": str, "default": "default", "help": "Kubernetes namespace of the app"},
    "service_account": {"type_": str, "default": None, "help": "service account the pods run as"},
    "reserved_millicpu": dict(
        type_=int,
        default=RESERVED_MILLICPU,
        help="CPU (millicores) a pod requests below its limit, for the node's reservations",
    ),
    "reserved_memmb": dict(
        type_=int,
        default=RESERVED_MEMMB,
        help="memory (MiB) a pod requests below its limit, for the node's reservations",
    ),
    "validate_spec": dict(
        type_=bool,
        default=True,
        help="before submitting, the API server checks one pod of each role (a server-side "
        "dry run), so an invalid pod is refused before anything is created",
    ),
    "context": dict(
        type_=str,
        default=None,
        help="kubeconfig context to use (default: the current one); the app's handle keeps it",
    ),
    "secret_env": dict(
        type_=dict[str, str],
        default=None,
        help="environment variables read from Secrets: NAME:SECRET/KEY,... (the spec holds "
        "the reference, never the value)",
    ),
}


def _add_shared(opts: runopts, name: str) -> None:
    opts.add(name, **_SHARED[name])


def k8s_runopts() -> runopts:
    """The run options of the ``kubernetes`` scheduler (see ``torchx runopts kubernetes``)."""
    opts = runopts()
    _add_shared(opts, "namespace")
    opts.add(
        "queue",
        type_=str,
        default=None,
        help="Volcano queue of the job (default: Volcano's 'default' queue); with "
        "flavour=jobset, the Kueue LocalQueue (label kueue.x-k8s.io/queue-name), if any",
    )
    _add_shared(opts, "service_account")
    opts.add(
        "priority_class", type_=str, default=None, help="PriorityClass of the job and its pods"
    )
    opts.add(
        "image_repo",
        type_=str,
        default=None,
        help="image repository a workspace image is pushed to (e.g. registry.example.com/"
        "team/trainer); needed with --workspace",
    )
    _add_shared(opts, "reserved_millicpu")
    _add_shared(opts, "reserved_memmb")
    _add_shared(opts, "validate_spec")
    opts.add(
        "flavour",
        type_=str,
        default=VOLCANO,
        help="what the app becomes: 'volcano' (a batch.volcano.sh Job, as upstream TorchX) "
        "or 'jobset' (a jobset.x-k8s.io JobSet, for clusters without Volcano)",
    )
    _add_shared(opts, "context")
    opts.add(
        "image_pull_secrets",
        type_=list[str],
        default=None,
        help="Secrets (of the namespace) the pods pull their images with",
    )
    _add_shared(opts, "secret_env")
    return opts


@dataclass(frozen=True)
class K8sOpts:
    """The run options, checked and typed (read them with :func:`read`)."""

    namespace: str = "default"
    queue: str | None = None
    service_account: str | None = None
    priority_class: str | None = None
    image_repo: str | None = None
    reserved_millicpu: int = RESERVED_MILLICPU
    reserved_memmb: int = RESERVED_MEMMB
    validate_spec: bool = True
    flavour: str = VOLCANO
    context: str | None = None
    image_pull_secrets: list[str] = field(default_factory=list)
    #: variable name -> (Secret name, key)
    secret_env: dict[str, tuple[str, str]] = field(default_factory=dict)


def _name(cfg: Mapping[str, CfgVal], key: str, rule: re.Pattern[str], what: str) -> str | None:
    value = cfg.get(key)
    if value is None:
        return None
    text = str(value)
    if len(text) > 253 or not rule.fullmatch(text):
        raise InvalidRunConfigException(
            f"run option {key!r}={text!r} is not {what}: use lower-case letters, digits and "
            "'-' (starting and ending with a letter or digit)"
        )
    return text


def _namespace(cfg: Mapping[str, CfgVal]) -> str:
    namespace = _name(cfg, "namespace", _LABEL, "a namespace name") or "default"
    if len(namespace) > 63:
        raise InvalidRunConfigException(
            f"run option 'namespace'={namespace!r} is longer than 63 characters"
        )
    return namespace


def _reserved(cfg: Mapping[str, CfgVal]) -> dict[str, int]:
    reserved: dict[str, int] = {}
    for key, default in (
        ("reserved_millicpu", RESERVED_MILLICPU),
        ("reserved_memmb", RESERVED_MEMMB),
    ):
        value = cfg.get(key)
        reserved[key] = default if value is None else int(value)  # type: ignore[arg-type]
        if reserved[key] < 0:
            raise InvalidRunConfigException(
                f"run option {key!r}={reserved[key]} is negative: give 0 or more"
            )
    return reserved


def _context(cfg: Mapping[str, CfgVal]) -> str | None:
    context = cfg.get("context")
    if context is not None and not str(context).strip():
        raise InvalidRunConfigException(
            "run option 'context' is empty: name a kubeconfig context, or leave it out for "
            "the current one"
        )
    return None if context is None else str(context).strip()


def _secret_names(key: str, values: list[str]) -> list[str]:
    for secret in values:
        if not _SUBDOMAIN.fullmatch(secret):
            raise InvalidRunConfigException(
                f"run option {key!r} has {secret!r}, which is not a Secret's name (lower-case "
                "letters, digits, '-', '.')"
            )
    return values


def _secret_env(cfg: Mapping[str, CfgVal]) -> dict[str, tuple[str, str]]:
    secret_env: dict[str, tuple[str, str]] = {}
    raw = cfg.get("secret_env") or {}
    for var, ref in raw.items() if isinstance(raw, dict) else []:
        secret, slash, key = str(ref).partition("/")
        if not _ENV_NAME.fullmatch(str(var)):
            raise InvalidRunConfigException(
                f"run option 'secret_env' has the variable name {var!r}: use letters, digits, "
                "'_', '-', '.', not starting with a digit"
            )
        if not slash or not _SUBDOMAIN.fullmatch(secret) or not _SECRET_KEY.fullmatch(key):
            raise InvalidRunConfigException(
                f"run option 'secret_env' has {var}:{ref!r}: give SECRET/KEY (a Secret of the "
                f"namespace and one of its keys), e.g. {var}:hf-creds/token"
            )
        secret_env[str(var)] = (secret, key)
    return secret_env


def read(cfg: Mapping[str, CfgVal]) -> K8sOpts:
    """The resolved run options ``cfg`` as :class:`K8sOpts`, each value checked."""
    namespace = _namespace(cfg)
    flavour = str(cfg.get("flavour") or VOLCANO)
    if flavour not in FLAVOURS:
        raise InvalidRunConfigException(
            f"run option 'flavour'={flavour!r} is not one of {', '.join(FLAVOURS)}"
        )
    reserved = _reserved(cfg)
    pull = [str(s) for s in (cfg.get("image_pull_secrets") or [])]  # type: ignore[union-attr]
    image_repo = cfg.get("image_repo")
    return K8sOpts(
        namespace=namespace,
        queue=_name(cfg, "queue", _SUBDOMAIN, "a queue name"),
        service_account=_name(cfg, "service_account", _SUBDOMAIN, "a service account name"),
        priority_class=_name(cfg, "priority_class", _SUBDOMAIN, "a PriorityClass name"),
        image_repo=None if image_repo is None else str(image_repo),
        reserved_millicpu=reserved["reserved_millicpu"],
        reserved_memmb=reserved["reserved_memmb"],
        validate_spec=bool(cfg.get("validate_spec", True)),
        flavour=flavour,
        context=_context(cfg),
        image_pull_secrets=_secret_names("image_pull_secrets", pull),
        secret_env=_secret_env(cfg),
    )


# -- the kubernetes_mcad scheduler -----------------------------------------------------------

#: The AppWrapper versions ``kubernetes_mcad`` submits: ``v1beta1`` (upstream TorchX's,
#: served by MCAD) by default, ``v1beta2`` (the current AppWrapper controller's).
APPWRAPPER_VERSIONS = ("v1beta1", "v1beta2")
_INT32 = 2**31 - 1


def mcad_runopts() -> runopts:
    """The run options of the ``kubernetes_mcad`` scheduler (upstream TorchX's names first)."""
    opts = runopts()
    _add_shared(opts, "namespace")
    opts.add(
        "image_repo",
        type_=str,
        default=None,
        help="image repository a workspace image is pushed to; needed with --workspace",
    )
    _add_shared(opts, "service_account")
    opts.add(
        "priority",
        type_=int,
        default=None,
        help="the AppWrapper's priority (higher runs first; AppWrapper v1beta1 only)",
    )
    opts.add("priority_class_name", type_=str, default=None, help="PriorityClass of the pods")
    opts.add("image_secret", type_=str, default=None, help="Secret the pods pull their images with")
    opts.add(
        "coscheduler_name",
        type_=str,
        default=None,
        help="a secondary scheduler (the coscheduling plugin) to gang-schedule the pods "
        "with: the AppWrapper then wraps a PodGroup of the app's replicas too",
    )
    opts.add(
        "network",
        type_=str,
        default=None,
        help="an extra pod network (a Multus NetworkAttachmentDefinition) for the pods",
    )
    opts.add(
        "appwrapper_version",
        type_=str,
        default=APPWRAPPER_VERSIONS[0],
        help="the AppWrapper version submitted: 'v1beta1' (MCAD; what upstream TorchX "
        "submits) or 'v1beta2' (the current AppWrapper controller)",
    )
    opts.add(
        "queue",
        type_=str,
        default=None,
        help="the Kueue LocalQueue of the AppWrapper (label kueue.x-k8s.io/queue-name; "
        "v1beta2 only)",
    )
    opts.add(
        "failure_grace",
        type_=int,
        default=None,
        help="seconds the controller waits before restarting (or failing) an app with a "
        "failed or missing replica (v1beta1: MCAD's requeuing.timeInSeconds, counted from "
        "dispatch; v1beta2: failureGracePeriodDuration); default: the controller's",
    )
    opts.add(
        "retry_pause",
        type_=int,
        default=None,
        help="seconds the controller waits between removing a failed app's objects and "
        "making them again (v1beta1: requeuing.pauseTimeInSeconds; v1beta2: "
        "retryPausePeriodDuration); default: the controller's",
    )
    _add_shared(opts, "context")
    _add_shared(opts, "validate_spec")
    _add_shared(opts, "reserved_millicpu")
    _add_shared(opts, "reserved_memmb")
    _add_shared(opts, "secret_env")
    return opts


@dataclass(frozen=True)
class McadOpts:
    """The ``kubernetes_mcad`` run options, checked and typed (:func:`read_mcad`).

    ``pods`` holds what the pods share with the ``kubernetes`` scheduler's (service
    account, image pull secret, priority class, headroom, ``secret_env``), so one pod
    builder serves both.
    """

    pods: K8sOpts
    appwrapper_version: str = APPWRAPPER_VERSIONS[0]
    priority: int | None = None
    coscheduler_name: str | None = None
    network: str | None = None
    queue: str | None = None
    #: seconds (None: the controller's default)
    failure_grace: int | None = None
    retry_pause: int | None = None


def read_mcad(cfg: Mapping[str, CfgVal]) -> McadOpts:
    """The resolved ``kubernetes_mcad`` run options ``cfg`` as :class:`McadOpts`, checked."""
    version = str(cfg.get("appwrapper_version") or APPWRAPPER_VERSIONS[0])
    if version not in APPWRAPPER_VERSIONS:
        raise InvalidRunConfigException(
            f"run option 'appwrapper_version'={version!r} is not one of "
            f"{', '.join(APPWRAPPER_VERSIONS)} (v1beta1: MCAD, as upstream TorchX; v1beta2: "
            "the AppWrapper controller)"
        )
    priority = cfg.get("priority")
    if priority is not None:
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise InvalidRunConfigException(
                f"run option 'priority'={priority!r} is not an integer: give e.g. priority=5"
            )
        if not -_INT32 - 1 <= priority <= _INT32:
            raise InvalidRunConfigException(
                f"run option 'priority'={priority} is out of range: give a 32-bit integer"
            )
        if version != "v1beta1":
            raise InvalidRunConfigException(
                f"run option 'priority' has no place in an AppWrapper {version} (its spec has "
                "no priority): use priority_class_name, or appwrapper_version=v1beta1"
            )
    queue = _name(cfg, "queue", _SUBDOMAIN, "a LocalQueue name")
    if queue is not None and version == "v1beta1":
        raise InvalidRunConfigException(
            "run option 'queue' (a Kueue LocalQueue) needs appwrapper_version=v1beta2: MCAD "
            "(v1beta1) queues AppWrappers itself"
        )
    network = cfg.get("network")
    if network is not None and not re.fullmatch(r"[-a-z0-9./@,:=\[\]{}\" ]+", str(network)):
        raise InvalidRunConfigException(
            f"run option 'network'={network!r} is not a network attachment: give "
            "NAME or NAMESPACE/NAME (the pod's k8s.v1.cni.cncf.io/networks annotation)"
        )
    seconds: dict[str, int | None] = {}
    for key in ("failure_grace", "retry_pause"):
        value = cfg.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidRunConfigException(
                f"run option {key!r}={value!r} is not a whole number of seconds"
            )
        if value is not None and not 0 <= value <= 86400:
            raise InvalidRunConfigException(
                f"run option {key!r}={value} is out of range: give 0 to 86400 seconds "
                "(the controllers cap every grace period at 24 hours)"
            )
        seconds[key] = value
    reserved = _reserved(cfg)
    image_secret = _name(cfg, "image_secret", _SUBDOMAIN, "a Secret name")
    image_repo = cfg.get("image_repo")
    pods = K8sOpts(
        namespace=_namespace(cfg),
        service_account=_name(cfg, "service_account", _SUBDOMAIN, "a service account name"),
        priority_class=_name(cfg, "priority_class_name", _SUBDOMAIN, "a PriorityClass name"),
        image_repo=None if image_repo is None else str(image_repo),
        reserved_millicpu=reserved["reserved_millicpu"],
        reserved_memmb=reserved["reserved_memmb"],
        validate_spec=bool(cfg.get("validate_spec", True)),
        flavour=VOLCANO,
        context=_context(cfg),
        image_pull_secrets=[image_secret] if image_secret else [],
        secret_env=_secret_env(cfg),
    )
    return McadOpts(
        pods=pods,
        appwrapper_version=version,
        priority=None if priority is None else int(priority),
        coscheduler_name=_name(cfg, "coscheduler_name", _SUBDOMAIN, "a scheduler name"),
        network=None if network is None else str(network),
        queue=queue,
        failure_grace=seconds["failure_grace"],
        retry_pause=seconds["retry_pause"],
    )
