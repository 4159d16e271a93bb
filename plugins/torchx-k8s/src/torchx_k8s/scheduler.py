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
  label selector (:mod:`torchx_k8s.status` turns both into the answer). Its ``env`` is
  the env of the pods the app's object describes (:mod:`torchx_k8s.podenv`), for
  ``torchx status`` to mask; for a FAILED app (whose message quotes the failed
  replica's stderr) it holds the values of the Secrets the pods read too
  (``secret_env``), one GET per Secret, reported as secret whatever the variable's
  name. A Secret that cannot be read (no ``get`` on ``secrets``, or gone) is left out.
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
* Throttling (429, with its ``Retry-After``), the transient HTTP answers and an
  unreachable API server are transient (``TransientSchedulerError``): the Runner
  retries them with backoff, and an app is never reported FAILED because of them.

Every call goes through :class:`torchx_k8s.backend.K8sBackend` (the client of each
context, the errors' meaning); the log is :mod:`torchx_k8s.logs`'s; a workspace is an
image pushed to ``image_repo`` (:mod:`torchx.workspace.pushed_image`). The
``kubernetes`` client is imported inside the methods that talk to the API, so a dry
run, ``torchx runopts kubernetes`` and ``torchx --help`` never import it.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any, ClassVar

from torchx.schedulers.contract.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
)
from torchx.schedulers.contract.capabilities import Capability
from torchx.schedulers.contract.errors import SchedulerError
from torchx.specs import NONE, AppDef, AppDryRunInfo, AppState, CfgVal
from torchx.specs.errors import SpecError
from torchx.specs.structured_opts import StructuredOpts
from torchx.workspace.pushed_image import PushedImageWorkspaceMixin
from torchx_k8s import labels, names, podenv, status
from torchx_k8s.backend import K8sBackend, api_status, reason
from torchx_k8s.logs import replica_log
from torchx_k8s.names import AppRef, parse_app_id
from torchx_k8s.options import K8sOpts
from torchx_k8s.pruned import dropped_fields
from torchx_k8s.request import (
    KINDS,
    K8sRequest,
    appdef_and_options_from,
    appdef_from,
    make_request,
)


class KubernetesScheduler(PushedImageWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
    """Apps as Volcano Jobs or JobSets on a Kubernetes cluster (see the module docstring).

    Args:
        session_name: the session the handles carry
        backend: the API to call (tests: a :class:`~torchx_k8s.backend.K8sBackend`
            around a stand-in client); default: a client per kubeconfig context, made
            on first use
    """

    runs_container_images = True
    missing_capabilities: Mapping[Any, str] = {
        Capability.SEPARATE_STREAMS: "the Kubernetes pod log API (before 1.32) returns "
        "stdout and stderr together",
    }
    #: the run options, declared once
    opts_class: ClassVar[type[StructuredOpts] | None] = K8sOpts
    #: the scheduler's name, and the grammar of its app ids
    backend_name = "kubernetes"
    ids: names.IdGrammar = names.K8S_IDS
    #: a workspace's image: torchx-docker's builder, this distribution's ``docker`` extra
    image_builder = "torchx_docker.images"
    distribution = "torchx-k8s"

    def __init__(self, session_name: str, backend: K8sBackend | None = None) -> None:
        super().__init__(self.backend_name, session_name)
        self._k8s = backend if backend is not None else K8sBackend()

    def close(self) -> None:
        self._k8s.close()

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        """API errors in contract terms (:meth:`torchx_k8s.backend.K8sBackend.classify_error`)."""
        return self._k8s.classify_error(e)

    def _parse(self, app_id: str) -> AppRef:
        return parse_app_id(app_id, self.ids)

    def _state(self, ref: AppRef, obj: dict[str, Any]) -> AppState:
        """The app's state as ``describe`` sees it, from its object (and, if need be, pods)."""
        return status.object_state(ref.flavour, obj)[0]

    def _settle(
        self, ref: AppRef, obj: dict[str, Any], pods: builtins.list[dict[str, Any]]
    ) -> tuple[dict[str, Any], builtins.list[dict[str, Any]]]:
        """What ``describe`` reads, once anything the app's state calls for is done: here
        nothing (the Volcano and JobSet controllers end a failed app's other replicas);
        ``kubernetes_mcad`` stops them (:meth:`torchx_k8s.mcad.McadScheduler._settle`)."""
        return obj, pods

    def _ended(self, ref: AppRef) -> bool:
        """Has the app ended (or is it gone)? One get (and, for some, one pod list)."""
        obj = self._k8s.get(ref)
        return obj is None or self._state(ref, obj).is_terminal()

    # -- submitting ----------------------------------------------------------------------

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[K8sRequest]:
        opts = K8sOpts.of(cfg)
        request = make_request(app, names.object_name(app.name), opts)
        return AppDryRunInfo(request, K8sRequest.to_yaml)

    def schedule(self, dryrun_info: AppDryRunInfo[K8sRequest]) -> str:
        request = dryrun_info.request
        try:
            if request.validate_spec:
                _validate_pods(self._k8s, request)
            self._k8s.create(request)
        except SpecError:
            raise
        except SchedulerError as e:
            raise SchedulerError(self._submit_message(e, request)) from e
        return request.app_id

    def _submit_message(self, e: SchedulerError, request: K8sRequest) -> str:
        cause = e.__cause__
        text = reason(cause) if cause is not None else str(e)
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

    # -- following -----------------------------------------------------------------------

    def exists(self, app_id: str) -> bool:
        return self._k8s.get(self._parse(app_id)) is not None

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        ref = self._parse(app_id)
        obj = self._k8s.get(ref)
        if obj is None:
            return None
        pods = self._k8s.pods(ref, labels.pod_selector(ref.name))
        obj, pods = self._settle(ref, obj, pods)
        appdef, run_options = appdef_and_options_from(obj)
        roles = (
            [(r.name, r.num_replicas) for r in appdef.roles]
            if appdef is not None
            else status.roles_from_pods(pods)
        )
        view, role_statuses = status.app_status(ref.flavour, obj, pods, roles)
        if ref.flavour == names.VOLCANO and view.state == AppState.PENDING and not view.msg:
            # Volcano's scheduler says why it does not place a job on its PodGroup only
            # (a gang too big for the cluster gets no pods at all)
            view.msg = status.podgroup_problem(self._k8s.podgroup(ref))
        return DescribeAppResponse(
            app_id=app_id,
            env=podenv.reported_env(
                view.state == AppState.FAILED, partial(self._k8s.secret, ref), obj, pods
            ),
            state=view.state,
            num_restarts=view.num_restarts,
            msg=view.msg or NONE,
            roles_statuses=role_statuses,
            roles=list(appdef.roles) if appdef is not None else [],
            metadata=dict(appdef.metadata) if appdef is not None else {},
            name=appdef.name if appdef is not None else ref.name,
            run_options=run_options,
            start_time=view.start_time,
            end_time=view.end_time,
        )

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> builtins.list[ListAppResponse]:
        opts = K8sOpts.from_cfg(self.run_opts_once().resolve(dict(cfg or {})))
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

        # one more call for every app: the apps with a running pod (a controller writes its
        # object's status a moment after its pods run; describe reads the pods too)
        running = {
            str(((p.get("metadata") or {}).get("labels") or {}).get(labels.INSTANCE))
            for p in self._k8s.pods(
                AppRef(namespace, "", primary, context),
                labels.app_selector(),
                field_selector="status.phase=Running",
            )
        }
        for flavour in flavours:
            try:
                objects = self._k8s.list_objects(namespace, context, flavour, labels.app_selector())
            except Exception as e:
                if api_status(e) == 404 and flavour != primary:
                    continue  # that flavour's CRD is not installed
                raise
            for obj in objects:
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
        try:
            if ref.flavour == names.JOBSET:
                # a merge patch of the spec; a 409 is the server giving up its own retries
                # against another writer (JobSet's controller updating the object): again
                for attempt in range(10):
                    try:
                        self._k8s.patch(ref, {"spec": {"suspend": True}})
                        return
                    except Exception as e:
                        if api_status(e) != 409 or attempt == 9:
                            raise
                    time.sleep(0.1 * (attempt + 1))
                return
            obj = self._k8s.get(ref)
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
                        "reason": status.CANCEL_REASON,
                        "message": "cancelled through torchx",
                        "lastTransitionTime": now,
                    },
                }
            }
            # A controller writing the job's first status at that moment may overwrite the
            # phase (a status written from what it read before): read it back, write again.
            # A 409 is the server giving up its own retries against such a writer: again.
            for attempt in range(10):
                try:
                    self._k8s.patch_status(ref, body)
                except Exception as e:
                    if api_status(e) != 409:
                        raise
                time.sleep(0.1 * (attempt + 1))
                obj = self._k8s.get(ref)
                if obj is None or status.object_state(ref.flavour, obj)[0].is_terminal():
                    return
        except Exception as e:
            if api_status(e) != 404:
                raise

    def _delete_existing(self, app_id: str) -> None:
        self._k8s.delete(self._parse(app_id))

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
        return replica_log(
            self._k8s,
            ref,
            role_name,
            k,
            ended=lambda: self._ended(ref),
            missing=f"no {self.backend_name} app {app_id}: nothing to read a log of",
            regex=regex,
            since=since,
            until=until,
            should_tail=should_tail,
        )


def create_scheduler(session_name: str, **kwargs: Any) -> KubernetesScheduler:
    """The factory the plugin registers (``kubernetes``)."""
    return KubernetesScheduler(session_name, backend=kwargs.get("backend"))


def _validate_pods(k8s: K8sBackend, request: K8sRequest) -> None:
    """A server-side dry run of the first pod of each role: an invalid pod is one line."""
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
            stored = k8s.call(
                partial(k8s.dry_run_pod, request.namespace, request.context, pod),
                f"checking the pods of role {role!r}",
            )
        except SchedulerError as e:
            cause = e.__cause__
            # 422: invalid; 400: an unknown field under fieldValidation=Strict
            if cause is not None and api_status(cause) in (400, 422):
                raise SpecError(
                    f"role {role!r}: the Kubernetes API server refuses its pod: "
                    f"{reason(cause)} (-cfg validate_spec=False skips this check)"
                ) from None
            raise
        # a server older than fieldValidation drops unknown fields: refused all the same
        dropped = dropped_fields(pod, stored)
        if dropped:
            raise SpecError(
                f"role {role!r}: the Kubernetes API server does not know the pod "
                f"field{'s' if len(dropped) > 1 else ''} {', '.join(dropped)} (misspelt, "
                "or newer than the server: it would drop them) (-cfg validate_spec=False "
                "skips this check)"
            )
