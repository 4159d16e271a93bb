"""The ``kubernetes`` scheduler: an app is one Volcano Job (or JobSet) on a cluster.

``torchx run -s kubernetes`` creates the custom object :mod:`torchx_k8s.request`
describes, in the ``namespace`` run option's namespace, through the kubeconfig's
current context (or the ``context`` run option's). The app id names all three
(:mod:`torchx_k8s.names`), so ``status``, ``log``, ``list``, ``cancel`` and
``delete`` work from any later shell with the same kubeconfig.

How the contract maps onto the API:

* ``schedule``: with ``validate_spec`` (the default), a server-side dry run of one pod
  per role first (nothing is created; an invalid pod is one line naming the role and
  the server's reason), then one create of the object. A create that failed
  transiently is looked up by its (unique) name before it is tried again, so it is
  never made twice; the object is all a submit creates (the controller makes the pods).
* ``describe``: two calls whatever the replica count: the object, then one pod list by
  label selector (:mod:`torchx_k8s.status` turns both into the answer).
* ``list``: one list of the objects this plugin made (label selector) per flavour, in
  the ``namespace`` (and ``context``) of the run options given to it, and one list of
  their running pods (an app whose controller has not yet written RUNNING is RUNNING
  once a pod runs, as ``describe`` says).
* ``cancel``: a Volcano Job's status phase becomes ``Aborted`` (the Volcano controller
  then kills its pods and keeps the job, as upstream TorchX cancels), read back and
  written again if a controller's concurrent status write overwrote it; a JobSet is
  suspended (``spec.suspend``: the controller removes its pods). ``delete``: the object
  is deleted; its pods go with it (the controller's owner references). An object being
  deleted (``deletionTimestamp`` set while a controller's finalizer removes what it made)
  is gone for every call.
* ``log_iter``: the API's pod log (stdout and stderr together: the API has no
  separate streams before Kubernetes 1.32), streamed in chunks; ``should_tail``
  follows it until the container exits, then returns once the app has ended; ``since``
  is sent as ``sinceSeconds``, and
  both bounds are applied to the lines' own times (requested with ``timestamps``).
* Throttling (429, with its ``Retry-After``), 5xx answers and an unreachable API
  server are transient (``TransientSchedulerError``): the Runner retries them with
  backoff, and an app is never reported FAILED because of them.

The ``kubernetes`` client is imported inside the methods that talk to the API, so a
dry run, ``torchx runopts kubernetes`` and ``torchx --help`` never import it.
"""

from __future__ import annotations

import builtins
import codecs
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
)
from torchx.schedulers.capabilities import Capability
from torchx.schedulers.errors import SchedulerError, TransientSchedulerError
from torchx.schedulers.polling import matching_lines
from torchx.schedulers.retry import Backoff, call_with_retries, parse_retry_after
from torchx.schedulers.window import window_lines
from torchx.specs import NONE, AppDef, AppDryRunInfo, AppState, CfgVal, Role, runopts
from torchx.specs.errors import SpecError
from torchx.workspace import WorkspaceMixin
from torchx_k8s import labels, names, status
from torchx_k8s.names import AppRef, parse_app_id
from torchx_k8s.options import k8s_runopts, read
from torchx_k8s.request import KINDS, K8sRequest, appdef_from, make_request

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

#: Seconds an API call (other than a followed log) may take before it is an outage.
API_TIMEOUT = 30
#: Bytes read from a log stream at a time.
LOG_CHUNK = 64 * 1024


class K8sWorkspaceMixin(WorkspaceMixin[None]):
    """Workspaces as images, through torchx-docker's public image builder (extra ``docker``).

    The image is built on the role's image with the workspace in it, pushed to
    ``image_repo`` (a cluster pulls from a registry, never from this machine), and the
    role runs it; a dry run names that image and builds nothing. Without torchx-docker,
    or without ``image_repo``, a workspace is one clear error.
    """

    def workspace_opts(self) -> runopts:
        return runopts()  # image_repo is one of the scheduler's own run options

    def _image_workspaces(self, cfg: Mapping[str, CfgVal]) -> Any:
        import importlib

        try:
            # torchx-docker is an optional extra: imported by name, typed as Any
            images = importlib.import_module("torchx_docker.images")
        except ImportError:
            raise SpecError(
                "a workspace on kubernetes is built as an image by torchx-docker, which is "
                "not installed: pip install 'torchx-k8s[docker]' (or run without --workspace)"
            ) from None
        if not cfg.get("image_repo"):
            from torchx.specs.errors import InvalidRunConfigException

            raise InvalidRunConfigException(
                "a workspace on kubernetes needs the run option 'image_repo' (a registry the "
                "cluster pulls from, e.g. -cfg image_repo=registry.example.com/team)"
            )
        helper = getattr(self, "_ws_helper", None)
        if helper is None:
            helper = images.ImageWorkspaceMixin()
            self._ws_helper = helper
        return helper

    def plan_workspaces(self, roles: builtins.list[Role], cfg: Mapping[str, CfgVal]) -> None:
        if any(r.workspace is not None for r in roles):
            self._image_workspaces(cfg).plan_workspaces(roles, cfg)

    def build_workspace_and_update_role(
        self, role: Role, workspace: Any, cfg: Mapping[str, CfgVal]
    ) -> None:
        self._image_workspaces(cfg).build_workspace_and_update_role(role, workspace, cfg)


class KubernetesScheduler(K8sWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
    """Apps as Volcano Jobs or JobSets on a Kubernetes cluster (see the module docstring).

    Args:
        session_name: the session the handles carry
        client: a ``kubernetes.client.ApiClient`` to use for every context (tests);
            default: one per kubeconfig context, made on first use
    """

    missing_capabilities: Mapping[Any, str] = {
        Capability.SEPARATE_STREAMS: "the Kubernetes pod log API (before 1.32) returns "
        "stdout and stderr together",
    }
    #: the scheduler's name, and the grammar of its app ids
    backend_name = "kubernetes"
    ids: names.IdGrammar = names.K8S_IDS

    def __init__(self, session_name: str, client: ApiClient | None = None) -> None:
        super().__init__(self.backend_name, session_name)
        self._given = client
        self._clients: dict[str | None, ApiClient] = {}

    # -- the API -------------------------------------------------------------------------

    def _api(self, context: str | None) -> ApiClient:
        if self._given is not None:
            return self._given
        if context not in self._clients:
            self._clients[context] = _new_client(context)
        return self._clients[context]

    def _custom(self, context: str | None) -> Any:
        from kubernetes.client import CustomObjectsApi

        return CustomObjectsApi(self._api(context))

    def _core(self, context: str | None) -> Any:
        from kubernetes.client import CoreV1Api

        return CoreV1Api(self._api(context))

    def close(self) -> None:
        clients, self._clients = self._clients, {}
        for c in clients.values():
            try:
                c.close()
            except Exception:
                pass

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        """API errors in contract terms: 429, 5xx and no answer are outages, else one line."""
        if isinstance(e, SchedulerError):
            return e
        status_code = getattr(e, "status", None)
        # the client's errors, if the client was ever imported (nothing is imported here)
        exceptions = sys.modules.get("kubernetes.client.exceptions")
        api_error = exceptions is not None and isinstance(e, exceptions.ApiException)
        if api_error and isinstance(status_code, int):
            reason = _reason(e)
            if status_code == 429:
                headers = getattr(e, "headers", None) or {}
                return TransientSchedulerError(
                    f"the Kubernetes API server is throttling requests (429): {reason}",
                    retry_after=parse_retry_after(headers.get("Retry-After")),
                )
            if status_code == 0 or (status_code >= 500 and status_code != 501):
                return TransientSchedulerError(
                    f"the Kubernetes API server answered {status_code}: {reason}"
                )
            if status_code in (401, 403):
                return SchedulerError(
                    f"the Kubernetes API server refused ({status_code}): {reason}; the "
                    "scheduler's permissions: python -m torchx_k8s rbac"
                )
            return SchedulerError(f"the Kubernetes API server refused ({status_code}): {reason}")
        if _is_unreachable(e):
            return TransientSchedulerError(f"cannot reach the Kubernetes API server: {e}")
        return None

    def _call(self, fn: Any, what: str) -> Any:
        return call_with_retries(
            fn, what, Backoff(deadline=API_TIMEOUT), classify=self.classify_error
        )

    def _parse(self, app_id: str) -> AppRef:
        return parse_app_id(app_id, self.ids)

    def _state(self, ref: AppRef, obj: dict[str, Any]) -> AppState:
        """The app's state as ``describe`` sees it, from its object (and, if need be, pods)."""
        return status.object_state(ref.flavour, obj)[0]

    # -- submitting ----------------------------------------------------------------------

    def _run_opts(self) -> runopts:
        return k8s_runopts()

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[K8sRequest]:
        opts = read(cfg)
        request = make_request(app, names.object_name(app.name), opts)
        return AppDryRunInfo(request, K8sRequest.to_yaml)

    def schedule(self, dryrun_info: AppDryRunInfo[K8sRequest]) -> str:
        request = dryrun_info.request
        if request.validate_spec:
            try:
                self._validate_pods(request)
            except SpecError:
                raise
            except SchedulerError as e:
                raise SchedulerError(self._submit_message(e, request)) from e
        group, version, plural, _ = KINDS[request.flavour]
        api = self._custom(request.context)
        attempts = 0
        unsure = False  # did an attempt fail in a way that may have made the object?

        def create() -> None:
            nonlocal attempts, unsure
            attempts += 1
            from kubernetes.client.exceptions import ApiException

            try:
                api.create_namespaced_custom_object(
                    group,
                    version,
                    request.namespace,
                    plural,
                    request.resource,
                    _request_timeout=API_TIMEOUT,
                )
            except ApiException as e:
                # a retried create that finds its object: the first attempt made it
                if e.status == 409 and attempts > 1:
                    return
                unsure = unsure or isinstance(self.classify_error(e), TransientSchedulerError)
                raise
            except Exception as e:
                unsure = unsure or isinstance(self.classify_error(e), TransientSchedulerError)
                raise

        try:
            self._call(create, f"creating {KINDS[request.flavour][3]} {request.name}")
        except SchedulerError as e:
            if unsure:
                self._remove_unsure(request)
            raise SchedulerError(self._submit_message(e, request)) from e
        return request.app_id

    def _remove_unsure(self, request: K8sRequest) -> None:
        """After a failed submit whose create may have reached the server (a timeout, a
        5xx), delete the object by its (unique) name: a failed submit leaves nothing."""
        group, version, plural, _ = KINDS[request.flavour]
        try:
            self._custom(request.context).delete_namespaced_custom_object(
                group,
                version,
                request.namespace,
                plural,
                request.name,
                propagation_policy="Background",
                _request_timeout=API_TIMEOUT,
            )
        except Exception:
            pass  # not there (404), or the server is still out of reach: nothing more to do

    def _submit_message(self, e: SchedulerError, request: K8sRequest) -> str:
        cause = e.__cause__
        text = _reason(cause) if cause is not None else str(e)
        group, _, plural, kind = KINDS[request.flavour]
        if getattr(cause, "status", None) == 404:
            if "namespaces" in text:
                return (
                    f"namespace {request.namespace!r} does not exist: {text} (-cfg namespace=NAME)"
                )
            return (
                f"the cluster has no {kind} resource ({plural}.{group}): is the {kind} CRD "
                f"({plural}.{group}) installed?{self._crd_hint(request)}"
            )
        return f"submitting {request.name} to namespace {request.namespace}: {e}"

    def _crd_hint(self, request: K8sRequest) -> str:
        """What to try when the cluster lacks the request's custom resource."""
        if request.flavour == names.VOLCANO:
            return " (-cfg flavour=jobset for clusters without Volcano)"
        return ""

    def _validate_pods(self, request: K8sRequest) -> None:
        """A server-side dry run of the first pod of each role: an invalid pod is one line."""
        core = self._core(request.context)
        from kubernetes.client.exceptions import ApiException

        appdef = appdef_from(request.resource)
        for index, template in enumerate(request.samples):
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {**template["metadata"], "name": f"{request.name}-check-{index}"},
                "spec": template["spec"],
            }
            role = appdef.roles[index].name if appdef is not None else str(index)
            try:
                self._call(
                    lambda pod=pod: core.create_namespaced_pod(
                        request.namespace, pod, dry_run="All", _request_timeout=API_TIMEOUT
                    ),
                    f"checking the pods of role {role!r}",
                )
            except SchedulerError as e:
                cause = e.__cause__
                if isinstance(cause, ApiException) and cause.status == 422:
                    raise SpecError(
                        f"role {role!r}: the Kubernetes API server refuses its pod: "
                        f"{_reason(cause)} (-cfg validate_spec=False skips this check)"
                    ) from None
                raise

    # -- following -----------------------------------------------------------------------

    def _get(self, ref: AppRef) -> dict[str, Any] | None:
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

    def _pods(self, ref: AppRef, selector: str, **fields: str) -> builtins.list[dict[str, Any]]:
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

    def exists(self, app_id: str) -> bool:
        return self._get(self._parse(app_id)) is not None

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        ref = self._parse(app_id)
        obj = self._get(ref)
        if obj is None:
            return None
        pods = self._pods(ref, labels.pod_selector(ref.name))
        appdef = appdef_from(obj)
        if appdef is not None:
            roles = [(r.name, r.num_replicas) for r in appdef.roles]
        else:
            roles = status.roles_from_pods(pods)
        view, role_statuses = status.app_status(ref.flavour, obj, pods, roles)
        return DescribeAppResponse(
            app_id=app_id,
            state=view.state,
            num_restarts=view.num_restarts,
            msg=view.msg or NONE,
            roles_statuses=role_statuses,
            roles=list(appdef.roles) if appdef is not None else [],
            metadata=dict(appdef.metadata) if appdef is not None else {},
            name=appdef.name if appdef is not None else ref.name,
            start_time=view.start_time,
            end_time=view.end_time,
        )

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> builtins.list[ListAppResponse]:
        opts = read(self.run_opts().resolve(dict(cfg or {})))
        return self._list_apps(opts.namespace, opts.context, names.FLAVOURS, opts.flavour)

    def _list_apps(
        self,
        namespace: str,
        context: str | None,
        flavours: Iterable[str],
        primary: str,
    ) -> builtins.list[ListAppResponse]:
        """The apps of ``flavours`` in ``namespace`` (a flavour other than ``primary`` whose
        CRD is not installed has none)."""
        out: builtins.list[ListAppResponse] = []
        from kubernetes.client.exceptions import ApiException

        # one more call for every app: the apps with a running pod (a controller writes its
        # object's status a moment after its pods run; describe reads the pods too)
        running = {
            str(((p.get("metadata") or {}).get("labels") or {}).get(labels.INSTANCE))
            for p in self._pods(
                AppRef(namespace, "", primary, context),
                labels.app_selector(),
                field_selector="status.phase=Running",
            )
        }
        for flavour in flavours:
            group, version, plural, _ = KINDS[flavour]
            try:
                answer = self._custom(context).list_namespaced_custom_object(
                    group,
                    version,
                    namespace,
                    plural,
                    label_selector=labels.app_selector(),
                    _request_timeout=API_TIMEOUT,
                )
            except ApiException as e:
                if e.status == 404 and flavour != primary:
                    continue  # that flavour's CRD is not installed
                raise
            for obj in answer.get("items") or []:
                if being_deleted(obj):
                    continue
                meta = obj.get("metadata") or {}
                ref = AppRef(namespace, str(meta.get("name")), flavour, context)
                state, _, _ = status.object_state(flavour, obj)
                if state == AppState.PENDING and ref.name in running:
                    state = AppState.RUNNING
                appdef = appdef_from(obj)
                out.append(
                    ListAppResponse(
                        app_id=names.format_app_id(ref),
                        state=state,
                        name=appdef.name if appdef is not None else ref.name,
                        start_time=status._time(meta.get("creationTimestamp")),
                    )
                )
        return out

    # -- cancel and delete ---------------------------------------------------------------

    def _cancel_existing(self, app_id: str) -> None:
        ref = self._parse(app_id)
        group, version, plural, _ = KINDS[ref.flavour]
        api = self._custom(ref.context)
        from kubernetes.client.exceptions import ApiException

        try:
            if ref.flavour == names.JOBSET:
                api.patch_namespaced_custom_object(
                    group,
                    version,
                    ref.namespace,
                    plural,
                    ref.name,
                    {"spec": {"suspend": True}},
                    _request_timeout=API_TIMEOUT,
                )
                return
            obj = self._get(ref)
            if obj is None:
                return
            state, _, _ = status.object_state(ref.flavour, obj)
            if state.is_terminal():
                return
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            body = {  # a merge patch: the controller's other status fields stay as they are
                "status": {
                    "state": {
                        "phase": "Aborted",
                        "reason": "TorchXCancelled",
                        "message": "cancelled through torchx",
                        "lastTransitionTime": now,
                    },
                }
            }
            # A controller writing the job's first status at that moment may overwrite the
            # phase (a status written from what it read before): read it back, write again.
            for attempt in range(10):
                api.patch_namespaced_custom_object_status(
                    group, version, ref.namespace, plural, ref.name, body,
                    _request_timeout=API_TIMEOUT,
                )  # fmt: skip
                time.sleep(0.1 * (attempt + 1))
                obj = self._get(ref)
                if obj is None or status.object_state(ref.flavour, obj)[0].is_terminal():
                    return
        except ApiException as e:
            if e.status != 404:
                raise

    def _delete_existing(self, app_id: str) -> None:
        ref = self._parse(app_id)
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

    # -- logs ----------------------------------------------------------------------------

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        choice = Stream.COMBINED if streams is None else Stream(streams)
        if choice != Stream.COMBINED:
            raise ValueError(
                f"the {self.backend_name} scheduler has one combined log per replica (the pod log API "
                "returns stdout and stderr together): use streams=combined"
            )
        ref = self._parse(app_id)
        selector = ",".join(
            [
                labels.pod_selector(ref.name),
                f"{labels.ROLE_NAME}={labels.label_value(role_name)}",
                f"{labels.REPLICA_ID}={k}",
            ]
        )
        options: dict[str, Any] = {"timestamps": True, "follow": should_tail}
        if since is not None:
            ago = datetime.now(UTC).timestamp() - _seconds(since)
            options["since_seconds"] = max(int(ago) + 1, 1)
        chunks: Iterable[str]
        if should_tail:
            chunks = self._follow(ref, selector, options)
        else:
            pod = self._newest_pod(ref, selector)
            if pod is None and self._get(ref) is None:
                raise SpecError(f"no {self.backend_name} app {app_id}: nothing to read a log of")
            # no pod yet, or one whose container never started (or was removed): no lines
            answer = self._open_log(ref, pod, options) if pod is not None else None
            chunks = _decode(answer) if answer is not None else iter(())
        lines: Iterator[str] = window_lines(_whole_lines(chunks), since, until, ordered=True)
        return matching_lines(regex, lines) if regex else lines

    def _newest_pod(self, ref: AppRef, selector: str) -> dict[str, Any] | None:
        """The newest pod of one replica (one pod list by label selector), or None."""
        pods = self._pods(ref, selector)
        if not pods:
            return None
        return max(pods, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp")))

    def _open_log(self, ref: AppRef, pod: dict[str, Any], options: dict[str, Any]) -> Any:
        """The pod's log as a stream (None: its container has not started, or it is gone).

        Opening is retried like any call (the API server's 5xx, as when it cannot reach
        the node); a container still waiting to start (400) or a pod removed meanwhile
        (404) has no log to give.
        """
        if not _started(pod):
            return None
        from kubernetes.client.exceptions import ApiException

        kwargs = dict(options)
        container = (((pod.get("spec") or {}).get("containers")) or [{}])[0].get("name")
        if container:
            kwargs["container"] = container
        core = self._core(ref.context)

        def open_log() -> Any:
            return core.read_namespaced_pod_log(
                pod["metadata"]["name"],
                ref.namespace,
                _preload_content=False,
                _request_timeout=None if kwargs.get("follow") else API_TIMEOUT,
                **kwargs,
            )

        try:
            return self._call(open_log, f"reading the log of pod {pod['metadata']['name']}")
        except SchedulerError as e:
            cause = e.__cause__
            if isinstance(cause, ApiException) and cause.status in (400, 404):
                return None
            raise

    def _wait_terminal(self, ref: AppRef) -> None:
        """Returns once the app has ended (or is gone): a followed log ends with the app."""
        delay = 0.1
        while True:
            obj = self._get(ref)
            if obj is None or self._state(ref, obj).is_terminal():
                return
            time.sleep(delay)  # the object's status has no event to wait on here
            delay = min(delay * 1.5, 2.0)

    def _follow(self, ref: AppRef, selector: str, options: dict[str, Any]) -> Iterator[str]:
        """The replica's log, followed: waits for its container to start (or for the app
        to end without it), then streams the log until the container exits."""
        delay = 0.2
        while True:
            pod = self._newest_pod(ref, selector)
            if pod is not None and _started(pod):
                answer = self._open_log(ref, pod, options)
                if answer is not None:
                    yield from _decode(answer)
                    self._wait_terminal(ref)
                    return
            obj = self._get(ref)
            if obj is None or self._state(ref, obj).is_terminal():
                return  # ended (or deleted) with no log left to read
            time.sleep(delay)  # no event to wait on through this API without a watch
            delay = min(delay * 1.5, 2.0)


def format_ref(ref: AppRef) -> str:
    return names.format_app_id(ref)


def create_scheduler(session_name: str, **kwargs: Any) -> KubernetesScheduler:
    """The factory the plugin registers (``kubernetes``)."""
    return KubernetesScheduler(session_name, client=kwargs.get("client"))


# -- helpers ---------------------------------------------------------------------------------


def _new_client(context: str | None) -> ApiClient:
    """An ApiClient for ``context`` of the kubeconfig (``KUBECONFIG``), or in-cluster."""
    from kubernetes import client, config

    try:
        return config.new_client_from_config(context=context)
    except (config.ConfigException, OSError) as e:
        if context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)
            return client.ApiClient(configuration)
        where = f" context {context!r}" if context else ""
        raise SchedulerError(
            f"cannot use the kubeconfig{where}: {' '.join(str(e).split())} (KUBECONFIG names "
            "the file; -cfg context=NAME picks a context)"
        ) from None


def being_deleted(obj: Mapping[str, Any]) -> bool:
    """Is the object on its way out (deleted, a controller's finalizer still removing what
    it made)? Such an app is gone for ``describe``, ``list``, ``cancel`` and ``delete``."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def _reason(e: BaseException) -> str:
    body = getattr(e, "body", None)
    if body:
        try:
            message = json.loads(body).get("message")
            if message:
                return " ".join(str(message).split())
        except (ValueError, AttributeError):
            pass
    return " ".join(str(getattr(e, "reason", None) or e).split())


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


def _seconds(when: datetime) -> float:
    return when.timestamp()


def _decode(answer: Any) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    try:
        for chunk in answer.stream(LOG_CHUNK, decode_content=True):
            text = decoder.decode(chunk)
            if text:
                yield text
    finally:
        answer.release_conn()
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def _started(pod: dict[str, Any]) -> bool:
    """Has the pod's (first) container started: is there a log to read?"""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Running", "Succeeded", "Failed"):
        cs = status._container_status(pod)
        state = cs.get("state") or {}
        return not state.get("waiting") or bool(cs.get("lastState", {}).get("terminated"))
    return False


def _whole_lines(chunks: Iterable[str]) -> Iterator[str]:
    """The lines of a stream whose chunks end anywhere (HTTP chunks split lines), each with
    its ``\\n`` (the last one without, if the stream ends without one)."""
    rest = ""
    for chunk in chunks:
        parts = (rest + chunk).split("\n")
        rest = parts.pop()
        for part in parts:
            yield part + "\n"
    if rest:
        yield rest
