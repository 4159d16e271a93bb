"""The Kubernetes API, as the schedulers call it: one client per context, every call here.

:class:`K8sBackend` holds the ``kubernetes`` client of each kubeconfig context (made on
first use, closed by ``close()``), says what the client's errors mean in the Scheduler
contract's terms (:meth:`K8sBackend.classify_error`), and makes every call the
``kubernetes`` and ``kubernetes_mcad`` schedulers send: the app's custom object (create,
get, list, patch, delete), its pods (list, a server-side dry run, the log), the Secrets
its pods read (get: values for ``torchx status`` to mask). The
schedulers decide which calls an operation makes (:mod:`torchx_k8s.scheduler`,
:mod:`torchx_k8s.mcad`); this module only sends them.

* A create is made once (:func:`torchx.schedulers.helpers.retry.create_once`): a retry after a
  transient failure that finds the name taken (409) is the first attempt's success, and
  a create that finally failed after a transient failure is deleted by its (unique) name.
* Credentials the API server does not accept (401, or a 403 to ``system:anonymous``:
  none it could read) are an :class:`~torchx.schedulers.contract.errors.AuthenticationError`
  (a command following an app says its state is unknown, exit 4); any other 403 is RBAC
  refusing a user it knows, a :class:`~torchx.schedulers.contract.errors.SchedulerError`.
* Throttling (429, with its ``Retry-After``), the transient HTTP answers
  (:func:`torchx.schedulers.contract.errors.transient_http_status`) and an API server that cannot
  be reached are :class:`~torchx.schedulers.contract.errors.TransientSchedulerError` s.
* An object being deleted (``deletionTimestamp`` set while a controller's finalizer
  removes what it made) is gone: :meth:`K8sBackend.get` answers None.

The ``kubernetes`` client is imported inside the methods that talk to the API, so a dry
run, ``torchx runopts kubernetes`` and ``torchx --help`` never import it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from torchx.schedulers.contract.errors import (
    AuthenticationError,
    SchedulerError,
    TransientSchedulerError,
    transient_http_status,
)
from torchx.schedulers.helpers.clients import ClientCache
from torchx.schedulers.helpers.retry import (
    Backoff,
    call_with_retries,
    create_once,
    parse_retry_after,
)
from torchx_k8s.names import AppRef
from torchx_k8s.podenv import decode_secret
from torchx_k8s.request import KINDS, K8sRequest

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

__all__ = ["ANONYMOUS", "API_TIMEOUT", "K8sBackend", "api_status", "being_deleted", "reason"]

T = TypeVar("T")

#: Seconds an API call (other than a followed log) may take before it is an outage.
API_TIMEOUT = 30

#: The user the API server makes of a request whose credentials it could not read (none
#: given, or anonymous requests allowed): its 403 is about the credentials, not RBAC.
ANONYMOUS = "system:anonymous"


class K8sBackend:
    """The API client per kubeconfig context, and every call the schedulers make.

    Args:
        client: a ``kubernetes.client.ApiClient`` to use for every context (tests);
            default: one per kubeconfig context, made on first use
    """

    def __init__(self, client: ApiClient | None = None) -> None:
        self._given = client
        self._clients: ClientCache[str | None, ApiClient] = ClientCache(_new_client)

    def api(self, context: str | None) -> ApiClient:
        """The client of ``context`` (None: the kubeconfig's current one)."""
        if self._given is not None:
            return self._given
        return self._clients.get(context)

    def close(self) -> None:
        """Closes every client made (a given one stays open: its owner closes it)."""
        self._clients.close()

    def _custom(self, context: str | None) -> Any:
        from kubernetes.client import CustomObjectsApi

        return CustomObjectsApi(self.api(context))

    def _core(self, context: str | None) -> Any:
        from kubernetes.client import CoreV1Api

        return CoreV1Api(self.api(context))

    # -- errors ---------------------------------------------------------------------------

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        """API errors in contract terms: 429, transient answers and no answer are outages."""
        if isinstance(e, SchedulerError):
            return e
        status_code = getattr(e, "status", None)
        # the client's errors, if the client was ever imported (nothing is imported here)
        exceptions = sys.modules.get("kubernetes.client.exceptions")
        api_error = exceptions is not None and isinstance(e, exceptions.ApiException)
        if api_error and isinstance(status_code, int):
            why = reason(e)
            if status_code == 429:
                headers = getattr(e, "headers", None) or {}
                return TransientSchedulerError(
                    f"the Kubernetes API server is throttling requests (429): {why}",
                    retry_after=parse_retry_after(headers.get("Retry-After")),
                )
            # 0: the client got no HTTP answer at all
            if status_code == 0 or transient_http_status(status_code):
                return TransientSchedulerError(
                    f"the Kubernetes API server answered {status_code}: {why}"
                )
            if status_code == 401 or (status_code == 403 and ANONYMOUS in why):
                return AuthenticationError(
                    f"the Kubernetes API server did not accept the credentials ({status_code}): "
                    f"{why}; renew the kubeconfig's credentials (KUBECONFIG)"
                )
            if status_code == 403:
                return SchedulerError(
                    f"the Kubernetes API server refused ({status_code}): {why}; the "
                    "scheduler's permissions: python -m torchx_k8s rbac"
                )
            return SchedulerError(f"the Kubernetes API server refused ({status_code}): {why}")
        if _is_unreachable(e):
            return TransientSchedulerError(f"cannot reach the Kubernetes API server: {e}")
        return None

    def call(self, fn: Callable[[], T], what: str) -> T:
        """``fn()``, its transient failures retried for up to :data:`API_TIMEOUT` seconds."""
        return call_with_retries(
            fn, what, Backoff(deadline=API_TIMEOUT), classify=self.classify_error
        )

    # -- the app's object -----------------------------------------------------------------

    def create(self, request: K8sRequest) -> None:
        """Creates the request's object once (see the module); raises the contract's error."""
        group, version, plural, kind = KINDS[request.flavour]
        api = self._custom(request.context)
        ref = AppRef(request.namespace, request.name, request.flavour, request.context)
        create_once(
            lambda: api.create_namespaced_custom_object(
                group,
                version,
                request.namespace,
                plural,
                request.resource,
                _request_timeout=API_TIMEOUT,
            ),
            f"creating {kind} {request.name}",
            Backoff(deadline=API_TIMEOUT),
            classify=self.classify_error,
            # a retried create that finds its name taken: the first attempt made it
            exists=lambda e: getattr(e, "status", None) == 409,
            # a failed submit whose create may have reached the server leaves nothing
            undo=lambda: self.delete(ref),
        )

    def get(self, ref: AppRef) -> dict[str, Any] | None:
        """The app's object; None if there is none (or it is being deleted)."""
        group, version, plural, _ = KINDS[ref.flavour]
        from kubernetes.client.exceptions import ApiException

        try:
            obj = self._custom(ref.context).get_namespaced_custom_object(
                group, version, ref.namespace, plural, ref.name, _request_timeout=API_TIMEOUT
            )
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        return None if being_deleted(obj) else dict(obj)

    def podgroup(self, ref: AppRef) -> dict[str, Any] | None:
        """The Volcano Job's PodGroup (Volcano names it after the job), read once: its
        conditions say why Volcano's scheduler does not place the job. None when there is
        none, or it cannot be read (another Volcano version, or no ``get`` on
        ``podgroups``): it only adds a reason to a status."""
        from kubernetes.client.exceptions import ApiException

        try:
            obj = self._custom(ref.context).get_namespaced_custom_object(
                "scheduling.volcano.sh",
                "v1beta1",
                ref.namespace,
                "podgroups",
                ref.name,
                _request_timeout=API_TIMEOUT,
            )
        except ApiException:
            return None
        return dict(obj)

    def secret(self, ref: AppRef, name: str) -> dict[str, str] | None:
        """The decoded data of Secret ``name`` in ``ref``'s namespace (one GET); None when
        it cannot be read: refused (403: no ``get`` on ``secrets``) or gone (404). It only
        lets ``describe`` report values for masking (:mod:`torchx_k8s.podenv`), so either
        is a debug line, never an error; other failures (throttling, an outage) are
        raised, as any call's."""
        from kubernetes.client.exceptions import ApiException

        try:
            answer = self._core(ref.context).read_namespaced_secret(
                name, ref.namespace, _preload_content=False, _request_timeout=API_TIMEOUT
            )
        except ApiException as e:
            if e.status in (403, 404):
                logging.getLogger(__name__).debug(
                    "Secret %s/%s not read (%s: %s): its values are not masked",
                    ref.namespace,
                    name,
                    e.status,
                    reason(e),
                )
                return None
            raise
        try:
            return decode_secret(json.loads(answer.data))
        finally:
            answer.release_conn()

    def list_objects(
        self, namespace: str, context: str | None, flavour: str, selector: str
    ) -> list[dict[str, Any]]:
        """The objects of ``flavour`` in ``namespace`` matching the label ``selector``
        (those being deleted left out); an ``ApiException`` 404 if its CRD is missing."""
        group, version, plural, _ = KINDS[flavour]
        answer = self._custom(context).list_namespaced_custom_object(
            group,
            version,
            namespace,
            plural,
            label_selector=selector,
            _request_timeout=API_TIMEOUT,
        )
        return [obj for obj in answer.get("items") or [] if not being_deleted(obj)]

    def patch(self, ref: AppRef, body: Mapping[str, Any]) -> None:
        """A merge patch of the app's object."""
        group, version, plural, _ = KINDS[ref.flavour]
        self._custom(ref.context).patch_namespaced_custom_object(
            group, version, ref.namespace, plural, ref.name, body, _request_timeout=API_TIMEOUT
        )

    def patch_status(self, ref: AppRef, body: Mapping[str, Any]) -> None:
        """A merge patch of the app's object's ``status`` subresource."""
        group, version, plural, _ = KINDS[ref.flavour]
        self._custom(ref.context).patch_namespaced_custom_object_status(
            group, version, ref.namespace, plural, ref.name, body, _request_timeout=API_TIMEOUT
        )

    def delete(self, ref: AppRef) -> None:
        """Deletes the app's object (its pods go with it); one already gone is no error."""
        group, version, plural, _ = KINDS[ref.flavour]
        from kubernetes.client.exceptions import ApiException

        try:
            self._custom(ref.context).delete_namespaced_custom_object(
                group,
                version,
                ref.namespace,
                plural,
                ref.name,
                propagation_policy="Background",
                _request_timeout=API_TIMEOUT,
            )
        except ApiException as e:
            if e.status != 404:
                raise

    # -- pods -----------------------------------------------------------------------------

    def pods(self, ref: AppRef, selector: str, **fields: str) -> list[dict[str, Any]]:
        """The pods in ``ref``'s namespace matching the label ``selector`` (one list call)."""
        answer = self._core(ref.context).list_namespaced_pod(
            ref.namespace,
            label_selector=selector,
            _preload_content=False,
            _request_timeout=API_TIMEOUT,
            **fields,
        )
        try:
            items = json.loads(answer.data).get("items") or []
        finally:
            answer.release_conn()
        return [dict(p) for p in items]

    def dry_run_pod(
        self, namespace: str, context: str | None, pod: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Asks the API server to check ``pod`` without making it (a server-side dry run),
        refusing unknown fields where it can (``fieldValidation=Strict``, Kubernetes 1.25
        and later; older servers ignore it and drop them): the pod as it would be stored,
        read raw (the client's model would drop unknown fields itself)."""
        answer = self._core(context).create_namespaced_pod(
            namespace,
            pod,
            dry_run="All",
            field_validation="Strict",
            _preload_content=False,
            _request_timeout=API_TIMEOUT,
        )
        try:
            return dict(json.loads(answer.data))
        finally:
            answer.release_conn()

    def delete_pods(self, ref: AppRef, selector: str, **fields: str) -> None:
        """Deletes the pods in ``ref``'s namespace matching the label ``selector`` (and
        ``field_selector=``, if given)."""
        self._core(ref.context).delete_collection_namespaced_pod(
            ref.namespace, label_selector=selector, _request_timeout=API_TIMEOUT, **fields
        )

    def open_log(self, ref: AppRef, pod: str, **options: Any) -> Any:
        """Pod ``pod``'s log as an unread HTTP answer (``stream()``, ``release_conn()``);
        a followed log (``follow=True``) has no time limit."""
        return self._core(ref.context).read_namespaced_pod_log(
            pod,
            ref.namespace,
            _preload_content=False,
            _request_timeout=None if options.get("follow") else API_TIMEOUT,
            **options,
        )


def api_status(e: BaseException | None) -> int | None:
    """The HTTP status of the client's API error ``e`` (None for any other exception).

    The schedulers tell a 404 (gone) or a 422 (refused) by it without importing the
    client: it is looked up only if the client was imported (an ApiException exists).
    """
    exceptions = sys.modules.get("kubernetes.client.exceptions")
    if e is None or exceptions is None or not isinstance(e, exceptions.ApiException):
        return None
    status = getattr(e, "status", None)
    return status if isinstance(status, int) else None


def being_deleted(obj: Mapping[str, Any]) -> bool:
    """Is the object on its way out (deleted, a controller's finalizer still removing what
    it made)? Such an app is gone for ``describe``, ``list``, ``cancel`` and ``delete``."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def reason(e: BaseException) -> str:
    """The API server's message in an error (its ``Status`` body), on one line."""
    body = getattr(e, "body", None)
    if body:
        try:
            message = json.loads(body).get("message")
            if message:
                return " ".join(str(message).split())
        except (ValueError, AttributeError):
            pass
    return " ".join(str(getattr(e, "reason", None) or e).split())


def _new_client(context: str | None) -> ApiClient:
    """An ApiClient for ``context`` of the kubeconfig (``KUBECONFIG``), or in-cluster.

    The client's own retries (urllib3's: 3 more tries of a request that timed out) are
    off: :meth:`K8sBackend.call` retries within :data:`API_TIMEOUT`, so a call to a
    server that does not answer ends after one request's timeout, not four (a ``status``
    took 121 s with them).
    """
    from kubernetes import client, config

    configuration = client.Configuration()
    configuration.retries = False
    try:
        return config.new_client_from_config(context=context, client_configuration=configuration)
    except (config.ConfigException, OSError) as e:
        if context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=configuration)
            return client.ApiClient(configuration)
        where = f" context {context!r}" if context else ""
        raise SchedulerError(
            f"cannot use the kubeconfig{where}: {' '.join(str(e).split())} (KUBECONFIG names "
            "the file; -cfg context=NAME picks a context)"
        ) from None


def _is_unreachable(e: BaseException) -> bool:
    cur: BaseException | None = e
    for _ in range(8):
        if cur is None:
            return False
        module = type(cur).__module__
        if module.startswith("urllib3") or isinstance(cur, ConnectionError | TimeoutError):
            return True
        cur = cur.__cause__ or cur.__context__
    return False
