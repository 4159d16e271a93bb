"""The ``kubernetes`` scheduler's run options, and their checks before anything is sent.

The names are upstream TorchX's (``namespace``, ``queue``, ``service_account``,
``priority_class``, ``image_repo``, ``reserved_millicpu``, ``reserved_memmb``,
``validate_spec``), so an existing ``.torchxconfig`` ``[kubernetes]`` section works;
``flavour``, ``context``, ``image_pull_secrets`` and ``secret_env`` are ours. Each
scheduler declares its options once, as one ``StructuredOpts`` class (:class:`K8sOpts`,
:class:`McadOpts`: each field with its type, default, help and check; the options both
take are declared by one function each): ``run_opts()``, a submit (``K8sOpts.of(cfg)``)
and ``list`` read it.

>>> opts = K8sOpts.as_runopts()
>>> o = K8sOpts.from_cfg(opts.resolve({"flavour": "jobset", "secret_env": {"HF_TOKEN": "hf/token"}}))
>>> o.flavour, o.namespace, o.secret_refs
('jobset', 'default', {'HF_TOKEN': ('hf', 'token')})
>>> K8sOpts.from_cfg(opts.resolve({"secret_env": {"HF_TOKEN": "hf"}}))
Traceback (most recent call last):
 ...
torchx.specs.errors.InvalidRunConfigException: run option 'secret_env' has HF_TOKEN:'hf': give SECRET/KEY (a Secret of the namespace and one of its keys), e.g. HF_TOKEN:hf-creds/token
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torchx.specs.errors import InvalidRunConfigException
from torchx.specs.structured_opts import StructuredOpts, opt
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


# -- the checks ---------------------------------------------------------------------------


def _name(key: str, rule: re.Pattern[str], what: str) -> Callable[[str], str]:
    """The check of an option naming a Kubernetes object."""

    def check(value: str) -> str:
        text = str(value)
        if len(text) > 253 or not rule.fullmatch(text):
            raise InvalidRunConfigException(
                f"run option {key!r}={text!r} is not {what}: use lower-case letters, digits "
                "and '-' (starting and ending with a letter or digit)"
            )
        return text

    return check


def _namespace(value: str) -> str:
    namespace = _name("namespace", _LABEL, "a namespace name")(value)
    if len(namespace) > 63:
        raise InvalidRunConfigException(
            f"run option 'namespace'={namespace!r} is longer than 63 characters"
        )
    return namespace


def _not_negative(key: str) -> Callable[[int], int]:
    def check(value: int) -> int:
        if int(value) < 0:
            raise InvalidRunConfigException(
                f"run option {key!r}={int(value)} is negative: give 0 or more"
            )
        return int(value)

    return check


def _flavour(value: str) -> str:
    if value not in FLAVOURS:
        raise InvalidRunConfigException(
            f"run option 'flavour'={value!r} is not one of {', '.join(FLAVOURS)}"
        )
    return value


def _context(value: str) -> str:
    if not str(value).strip():
        raise InvalidRunConfigException(
            "run option 'context' is empty: name a kubeconfig context, or leave it out for "
            "the current one"
        )
    return str(value).strip()


def _secret_names(value: list[str]) -> list[str]:
    for secret in value:
        if not _SUBDOMAIN.fullmatch(str(secret)):
            raise InvalidRunConfigException(
                f"run option 'image_pull_secrets' has {secret!r}, which is not a Secret's "
                "name (lower-case letters, digits, '-', '.')"
            )
    return [str(s) for s in value]


def _secret_env(value: dict[str, str]) -> dict[str, str]:
    for var, ref in value.items():
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
    return {str(var): str(ref) for var, ref in value.items()}


# -- the options both schedulers take (each call declares one field) -------------------------


def _namespace_opt() -> Any:
    return opt("default", help="Kubernetes namespace of the app", check=_namespace)


def _cluster_domain_opt() -> Any:
    return opt(
        "cluster.local",
        help="the cluster's DNS domain (the kubelet's clusterDomain): replicas find rank 0 "
        "at <pod>.<app>.<namespace>.svc.<cluster_domain>",
        check=_name("cluster_domain", _SUBDOMAIN, "a DNS domain"),
    )


def _service_account_opt() -> Any:
    return opt(
        help="service account the pods run as",
        check=_name("service_account", _SUBDOMAIN, "a service account name"),
    )


def _reserved_millicpu_opt() -> Any:
    return opt(
        RESERVED_MILLICPU,
        help="CPU (millicores) a pod requests below its limit, for the node's reservations",
        check=_not_negative("reserved_millicpu"),
    )


def _reserved_memmb_opt() -> Any:
    return opt(
        RESERVED_MEMMB,
        help="memory (MiB) a pod requests below its limit, for the node's reservations",
        check=_not_negative("reserved_memmb"),
    )


def _validate_spec_opt() -> Any:
    return opt(
        True,
        help="before submitting, the API server checks one pod of each role (a server-side "
        "dry run), so an invalid pod is refused before anything is created",
    )


def _context_opt() -> Any:
    return opt(
        help="kubeconfig context to use (default: the current one); the app's handle keeps it",
        check=_context,
    )


def _secret_env_opt() -> Any:
    return opt(
        help="environment variables read from Secrets: NAME:SECRET/KEY,... (the spec holds "
        "the reference, never the value)",
        check=_secret_env,
    )


def _refs(secret_env: dict[str, str] | None) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for var, ref in (secret_env or {}).items():
        secret, _, key = ref.partition("/")
        out[var] = (secret, key)
    return out


@dataclass(frozen=True, kw_only=True)
class K8sOpts(StructuredOpts):
    """The ``kubernetes`` scheduler's run options (``torchx runopts kubernetes``), checked.

    The pods of both schedulers are built from one (``McadOpts.pods`` is the
    ``kubernetes_mcad`` options' share of it).
    """

    namespace: str = _namespace_opt()
    cluster_domain: str = _cluster_domain_opt()
    queue: str | None = opt(
        help="Volcano queue of the job (default: Volcano's 'default' queue); with "
        "flavour=jobset, the Kueue LocalQueue (label kueue.x-k8s.io/queue-name), if any",
        check=_name("queue", _SUBDOMAIN, "a queue name"),
    )
    service_account: str | None = _service_account_opt()
    priority_class: str | None = opt(
        help="PriorityClass of the job and its pods",
        check=_name("priority_class", _SUBDOMAIN, "a PriorityClass name"),
    )
    image_repo: str | None = opt(
        help="image repository a workspace image is pushed to (e.g. registry.example.com/"
        "team/trainer); needed with --workspace",
    )
    reserved_millicpu: int = _reserved_millicpu_opt()
    reserved_memmb: int = _reserved_memmb_opt()
    validate_spec: bool = _validate_spec_opt()
    flavour: str = opt(
        VOLCANO,
        help="what the app becomes: 'volcano' (a batch.volcano.sh Job, as upstream TorchX) "
        "or 'jobset' (a jobset.x-k8s.io JobSet, for clusters without Volcano)",
        check=_flavour,
    )
    context: str | None = _context_opt()
    image_pull_secrets: list[str] | None = opt(
        help="Secrets (of the namespace) the pods pull their images with", check=_secret_names
    )
    secret_env: dict[str, str] | None = _secret_env_opt()  # noqa: RUF009 (an opt() field)

    @property
    def secret_refs(self) -> dict[str, tuple[str, str]]:
        """``secret_env`` as variable name -> (Secret name, key)."""
        return _refs(self.secret_env)


# -- the kubernetes_mcad scheduler -----------------------------------------------------------

#: The AppWrapper versions ``kubernetes_mcad`` submits: ``v1beta1`` (upstream TorchX's,
#: served by MCAD) by default, ``v1beta2`` (the current AppWrapper controller's).
APPWRAPPER_VERSIONS = ("v1beta1", "v1beta2")
_INT32 = 2**31 - 1


def _version(value: str) -> str:
    if value not in APPWRAPPER_VERSIONS:
        raise InvalidRunConfigException(
            f"run option 'appwrapper_version'={value!r} is not one of "
            f"{', '.join(APPWRAPPER_VERSIONS)} (v1beta1: MCAD, as upstream TorchX; v1beta2: "
            "the AppWrapper controller)"
        )
    return value


def _priority(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRunConfigException(
            f"run option 'priority'={value!r} is not an integer: give e.g. priority=5"
        )
    if not -_INT32 - 1 <= value <= _INT32:
        raise InvalidRunConfigException(
            f"run option 'priority'={value} is out of range: give a 32-bit integer"
        )
    return value


def _network(value: str) -> str:
    if not re.fullmatch(r"[-a-z0-9./@,:=\[\]{}\" ]+", str(value)):
        raise InvalidRunConfigException(
            f"run option 'network'={value!r} is not a network attachment: give "
            "NAME or NAMESPACE/NAME (the pod's k8s.v1.cni.cncf.io/networks annotation)"
        )
    return str(value)


def _seconds(key: str) -> Callable[[int], int]:
    def check(value: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidRunConfigException(
                f"run option {key!r}={value!r} is not a whole number of seconds"
            )
        if not 0 <= value <= 86400:
            raise InvalidRunConfigException(
                f"run option {key!r}={value} is out of range: give 0 to 86400 seconds "
                "(the controllers cap every grace period at 24 hours)"
            )
        return value

    return check


@dataclass(frozen=True, kw_only=True)
class McadOpts(StructuredOpts):
    """The ``kubernetes_mcad`` run options (upstream TorchX's names first), checked.

    :attr:`pods` is what the pods share with the ``kubernetes`` scheduler's (service
    account, image pull secret, priority class, headroom, ``secret_env``), so one pod
    builder serves both.
    """

    namespace: str = _namespace_opt()
    cluster_domain: str = _cluster_domain_opt()
    image_repo: str | None = opt(
        help="image repository a workspace image is pushed to; needed with --workspace"
    )
    service_account: str | None = _service_account_opt()
    priority: int | None = opt(
        help="the AppWrapper's priority (higher runs first; AppWrapper v1beta1 only)",
        check=_priority,
    )
    priority_class_name: str | None = opt(
        help="PriorityClass of the pods",
        check=_name("priority_class_name", _SUBDOMAIN, "a PriorityClass name"),
    )
    image_secret: str | None = opt(
        help="Secret the pods pull their images with",
        check=_name("image_secret", _SUBDOMAIN, "a Secret name"),
    )
    coscheduler_name: str | None = opt(
        help="a secondary scheduler (the coscheduling plugin) to gang-schedule the pods "
        "with: the AppWrapper then wraps a PodGroup of the app's replicas too",
        check=_name("coscheduler_name", _SUBDOMAIN, "a scheduler name"),
    )
    network: str | None = opt(
        help="an extra pod network (a Multus NetworkAttachmentDefinition) for the pods",
        check=_network,
    )
    appwrapper_version: str = opt(
        APPWRAPPER_VERSIONS[0],
        help="the AppWrapper version submitted: 'v1beta1' (MCAD; what upstream TorchX "
        "submits) or 'v1beta2' (the current AppWrapper controller)",
        check=_version,
    )
    queue: str | None = opt(
        help="the Kueue LocalQueue of the AppWrapper (label kueue.x-k8s.io/queue-name; "
        "v1beta2 only)",
        check=_name("queue", _SUBDOMAIN, "a LocalQueue name"),
    )
    failure_grace: int | None = opt(
        help="seconds the controller waits before restarting (or failing) an app with a "
        "failed or missing replica (v1beta1: MCAD's requeuing.timeInSeconds, counted from "
        "dispatch; v1beta2: failureGracePeriodDuration); default: the controller's",
        check=_seconds("failure_grace"),
    )
    retry_pause: int | None = opt(
        help="seconds the controller waits between removing a failed app's objects and "
        "making them again (v1beta1: requeuing.pauseTimeInSeconds; v1beta2: "
        "retryPausePeriodDuration); default: the controller's",
        check=_seconds("retry_pause"),
    )
    context: str | None = _context_opt()
    validate_spec: bool = _validate_spec_opt()
    reserved_millicpu: int = _reserved_millicpu_opt()
    reserved_memmb: int = _reserved_memmb_opt()
    secret_env: dict[str, str] | None = _secret_env_opt()  # noqa: RUF009 (an opt() field)

    def __post_init__(self) -> None:
        version = self.appwrapper_version
        if self.priority is not None and version != "v1beta1":
            raise InvalidRunConfigException(
                f"run option 'priority' has no place in an AppWrapper {version} (its spec has "
                "no priority): use priority_class_name, or appwrapper_version=v1beta1"
            )
        if self.queue is not None and version == "v1beta1":
            raise InvalidRunConfigException(
                "run option 'queue' (a Kueue LocalQueue) needs appwrapper_version=v1beta2: MCAD "
                "(v1beta1) queues AppWrappers itself"
            )

    @property
    def pods(self) -> K8sOpts:
        """The pods' share of the options, as the ``kubernetes`` scheduler's pods read them."""
        return K8sOpts(
            namespace=self.namespace,
            cluster_domain=self.cluster_domain,
            service_account=self.service_account,
            priority_class=self.priority_class_name,
            image_repo=self.image_repo,
            reserved_millicpu=self.reserved_millicpu,
            reserved_memmb=self.reserved_memmb,
            validate_spec=self.validate_spec,
            flavour=VOLCANO,
            context=self.context,
            image_pull_secrets=[self.image_secret] if self.image_secret else None,
            secret_env=self.secret_env,
        )
