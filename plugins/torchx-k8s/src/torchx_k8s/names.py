"""App ids, object names and pod names: how an app is found again on a cluster.

An app is one custom object (a Volcano ``Job`` or a ``JobSet``) in a namespace, reached
through a kubeconfig context. Its app id carries all of that, so ``torchx status``
from any later shell finds it without being told again:

* ``NAMESPACE:NAME``: a Volcano Job, through the kubeconfig's current context
  (upstream TorchX's form: its ``kubernetes://SESSION/NAMESPACE:NAME`` handles work);
* ``NAMESPACE:NAME:jobset``: a JobSet;
* either, followed by ``@CONTEXT``: through that kubeconfig context, percent-encoded
  (context names may hold ``:``, ``/``, ``@``: an EKS context is an ARN).

The ``kubernetes_mcad`` scheduler's ids have the same form (:data:`MCAD_IDS`):
``NAMESPACE:NAME`` is an AppWrapper of ``workload.codeflare.dev/v1beta1`` (upstream
TorchX's ``kubernetes_mcad://SESSION/NAMESPACE:NAME`` handles), ``NAMESPACE:NAME:v1beta2``
one of ``v1beta2``.

>>> format_app_id(AppRef("team-a", "trainer-x1"))
'team-a:trainer-x1'
>>> ref = parse_app_id("default:ddp-4k2:jobset@arn%3Aaws%3Aeks%3Aus-east-1%3A1%3Acluster%2Fml")
>>> ref.flavour, ref.context
('jobset', 'arn:aws:eks:us-east-1:1:cluster/ml')
>>> parse_app_id("team-a:trainer-x1:v1beta2", MCAD_IDS).flavour
'appwrapper-v1beta2'
>>> parse_app_id("trainer-x1")
Traceback (most recent call last):
  ...
torchx_k8s.names.InvalidK8sAppIdError: invalid kubernetes app id 'trainer-x1': expected NAMESPACE:NAME[:jobset][@CONTEXT] (a namespace and an object name, lower-case letters, digits and '-'), e.g. 'default:trainer-1a2b3c4d5e'

Names. The object's name (:func:`object_name`) is short (at most
:data:`OBJECT_NAME_MAX` characters, starting with a letter, ending in 10 random ones):
the controllers name pods and host names after it, and a host name is a DNS label of at
most 63 characters. Each replica is a Volcano task (a JobSet replicated job) of its own,
named by :func:`task_name` from the role and the replica index, cut (with a hash) so
that the longest name made from it still fits:

>>> task_name("trainer-1a2b3c4d5e", "worker", 3)
'worker-3'
>>> volcano_pod_name("trainer-1a2b3c4d5e", "worker", 3)
'trainer-1a2b3c4d5e-worker-3-0'
>>> jobset_host_name("trainer-1a2b3c4d5e", "worker", 3)
'trainer-1a2b3c4d5e-worker-3-0-0'
>>> appwrapper_pod_name("trainer-1a2b3c4d5e", "worker", 3)
'trainer-1a2b3c4d5e-worker-3'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from torchx.schedulers.contract.errors import InvalidAppIdError
from torchx.schedulers.helpers.ids import DNS_LABEL_MAX, dns_label, make_app_id

VOLCANO = "volcano"
JOBSET = "jobset"
#: The ``kubernetes`` scheduler's flavours: a Volcano ``batch.volcano.sh/v1alpha1`` Job
#: (the default, as upstream TorchX), or a ``jobset.x-k8s.io/v1alpha2`` JobSet.
FLAVOURS = (VOLCANO, JOBSET)
#: The ``kubernetes_mcad`` scheduler's flavours: an AppWrapper of
#: ``workload.codeflare.dev/v1beta1`` (what upstream TorchX submits) or ``v1beta2``.
APPWRAPPER = "appwrapper"
APPWRAPPER_V1BETA2 = "appwrapper-v1beta2"
APPWRAPPER_FLAVOURS = (APPWRAPPER, APPWRAPPER_V1BETA2)

#: The longest object name made here: 19 characters of the app's name, ``-`` and 10
#: random ones. Leaves 28 characters for a task name in a JobSet's host names.
OBJECT_NAME_MAX = 30
_STEM_MAX = OBJECT_NAME_MAX - 11
_RANDOM = 10

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_NAMESPACE = re.compile(_LABEL)
# an object name: a DNS subdomain (what the API server accepts for custom objects)
_NAME = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_CONTEXT = re.compile(r"[A-Za-z0-9%._~-]+")


@dataclass(frozen=True)
class IdGrammar:
    """The app ids of one scheduler: its default flavour and the suffixes naming others."""

    scheduler: str
    default: str
    #: ``:SUFFIX`` after the name -> the flavour it names
    suffixes: Mapping[str, str] = field(default_factory=dict)

    def form(self) -> str:
        extra = "".join(f"[:{s}]" for s in self.suffixes)
        return (
            f"expected NAMESPACE:NAME{extra}[@CONTEXT] (a namespace and an object name, "
            "lower-case letters, digits and '-'), e.g. 'default:trainer-1a2b3c4d5e'"
        )


#: The ``kubernetes`` scheduler's ids (Volcano by default, ``:jobset``).
K8S_IDS = IdGrammar("kubernetes", VOLCANO, {"jobset": JOBSET})
#: The ``kubernetes_mcad`` scheduler's ids (AppWrapper v1beta1 by default, ``:v1beta2``).
MCAD_IDS = IdGrammar("kubernetes_mcad", APPWRAPPER, {"v1beta2": APPWRAPPER_V1BETA2})
#: The suffix of each flavour that is not a default one.
_SUFFIX = {JOBSET: "jobset", APPWRAPPER_V1BETA2: "v1beta2"}


class InvalidK8sAppIdError(InvalidAppIdError):
    """An app id that is not of the form :func:`parse_app_id` reads (one line)."""


@dataclass(frozen=True)
class AppRef:
    """Where an app's object is: namespace, name, flavour, kubeconfig context."""

    namespace: str
    name: str
    flavour: str = VOLCANO
    #: the kubeconfig context (None: the kubeconfig's current one)
    context: str | None = None


def format_app_id(ref: AppRef) -> str:
    """The app id of ``ref`` (see the module docstring); :func:`parse_app_id` reads it back."""
    text = f"{ref.namespace}:{ref.name}"
    if ref.flavour in _SUFFIX:
        text += f":{_SUFFIX[ref.flavour]}"
    if ref.context is not None:
        text += "@" + quote(ref.context, safe="")
    return text


def parse_app_id(app_id: str, grammar: IdGrammar = K8S_IDS) -> AppRef:
    """The :class:`AppRef` of ``app_id``; a one-line :class:`InvalidK8sAppIdError` if malformed.

    ``grammar``: whose id it is (the ``kubernetes`` scheduler's by default).
    """
    what = f"invalid {grammar.scheduler} app id {app_id!r}"
    if not isinstance(app_id, str):
        raise InvalidK8sAppIdError(f"{what}: {grammar.form()}")
    body, at, encoded = app_id.partition("@")
    context: str | None = None
    if at:
        if not _CONTEXT.fullmatch(encoded):
            raise InvalidK8sAppIdError(
                f"{what}: the context after '@' must be percent-encoded; {grammar.form()}"
            )
        context = unquote(encoded, errors="strict") if "%" in encoded else encoded
    parts = body.split(":")
    flavour = grammar.default
    if len(parts) == 3 and parts[2] in grammar.suffixes:
        flavour = grammar.suffixes[parts.pop()]
    if (
        len(parts) != 2
        or len(parts[0]) > DNS_LABEL_MAX
        or not _NAMESPACE.fullmatch(parts[0])
        or len(parts[1]) > 253
        or not _NAME.fullmatch(parts[1])
    ):
        raise InvalidK8sAppIdError(f"{what}: {grammar.form()}")
    return AppRef(parts[0], parts[1], flavour, context)


def object_name(app_name: str) -> str:
    """A new, unique object name for an app called ``app_name``.

    At most :data:`OBJECT_NAME_MAX` characters: the name cleaned to lower-case letters,
    digits and ``-``, starting with a letter (Volcano and JobSet name a Service after
    the object, and a Service's name must), then ``-`` and 10 random characters.
    """
    stem = re.sub(r"[^a-z0-9]+", "-", app_name.lower()).strip("-")
    if not stem[:1].isalpha():
        stem = "app-" + stem if stem else "app"
    stem = stem[:_STEM_MAX].rstrip("-")
    return f"{stem}-{make_app_id('x')[-_RANDOM:]}"


def _budget(name: str, suffix: int) -> int:
    return max(DNS_LABEL_MAX - len(name) - 1 - suffix, 12)


#: Characters each flavour adds after ``{name}-{task}`` in the longest name it makes.
_TAIL = {VOLCANO: 2, JOBSET: 4, APPWRAPPER: 0, APPWRAPPER_V1BETA2: 0}


def task_name(name: str, role: str, replica: int, flavour: str = VOLCANO) -> str:
    """The Volcano task (JobSet replicated job, AppWrapper pod) of replica ``replica`` of ``role``.

    ``{role}-{replica}`` (upstream TorchX's) when that is a DNS label short enough for
    the longest name made from it (Volcano's pod ``{name}-{task}-0``, a JobSet's host
    ``{name}-{task}-0-0``, an AppWrapper's pod ``{name}-{task}``), else that cleaned and
    cut, with a hash of the exact parts.
    """
    return dns_label(role, replica, max_length=_budget(name, _TAIL[flavour]))


def volcano_pod_name(name: str, role: str, replica: int) -> str:
    """The pod Volcano makes for the replica: ``{job}-{task}-{index}`` (index 0)."""
    return f"{name}-{task_name(name, role, replica)}-0"


def jobset_host_name(name: str, role: str, replica: int) -> str:
    """The host name JobSet gives the replica's pod: ``{jobset}-{rjob}-{job}-{pod}``."""
    return f"{name}-{task_name(name, role, replica, JOBSET)}-0-0"


def appwrapper_pod_name(name: str, role: str, replica: int) -> str:
    """The pod an AppWrapper wraps for the replica (also its host name): ``{name}-{task}``."""
    return f"{name}-{task_name(name, role, replica, APPWRAPPER)}"


def rank0_host(pod_host: str, subdomain: str, namespace: str, cluster_domain: str) -> str:
    """The name every replica finds rank 0 by: its pod's fully qualified host name.

    ``<host>.<subdomain>`` alone resolves only through the cluster DNS, once the pod's
    address is published there (0.5 to 0.7 s after its container started on an idle dev
    node, longer under load), while torchrun's c10d rendezvous decides at once, by
    resolving the endpoint, whether this node hosts the store: a rank 0 that looked too
    early joined as a client of a store nobody hosted, and every rank failed a minute
    later. The fully qualified name is also in the pod's own ``/etc/hosts`` (the kubelet
    writes it for a pod with a subdomain), so rank 0 resolves it at once, and the others
    through the DNS, retrying as torchrun does.

    >>> rank0_host("app-trainer-0-0", "app", "default", "cluster.local")
    'app-trainer-0-0.app.default.svc.cluster.local'
    """
    return f"{pod_host}.{subdomain}.{namespace}.svc.{cluster_domain}"
