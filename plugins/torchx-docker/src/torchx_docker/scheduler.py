"""The ``docker`` scheduler: one container per replica on a Docker engine.

``torchx run -s docker`` (or ``-s local_docker``, upstream TorchX's name) makes the
containers :mod:`torchx_docker.request` describes, on the engine ``DOCKER_HOST`` names
(else the local socket), and starts them. Everything about an app lives on the
engine, in its containers' labels (:mod:`torchx_docker.labels`), so ``status``,
``log``, ``list``, ``cancel`` and ``delete`` work from any later shell that reaches the
same engine, and nothing is written on the submitting machine.

How the contract maps onto the engine:

* ``schedule``: creates the app's network (more than one replica), then every
  container, then starts them, each step in parallel; on any failure it removes what
  it created and raises one line naming the cause (engine not reachable, image
  missing, a name taken, no GPU driver, privileged refused).
* ``describe``: one list call for the app's containers (labels, states, exit codes);
  a container's full record is read only for one killed with 137 (was it out of
  memory?), a dead one, and for the engine's restart count of the ``REPLICA`` policy.
* retries: ``REPLICA`` is the engine's own ``on-failure`` restart policy;
  ``ROLE`` and ``APPLICATION`` restart the role's (every role's) containers in place
  when ``describe`` finds a failed replica with restarts left (the ``restart``
  marker makes that happen once, whichever process notices). So these two policies
  restart an app when something follows it (``torchx run --wait``, ``status``,
  ``log -f``), not while nobody looks.
* ``cancel``: records the ``cancelled`` marker, then stops every container (SIGTERM,
  SIGKILL after ``stop_grace`` seconds); ``delete`` also removes the containers, the
  markers and the app's network.
* ``log_iter``: the engine's log of the replica's container, stdout and stderr
  apart or together, bounded by ``since``/``until``, followed until the container
  exits (the engine ends the stream then, after its last line).
* An engine that cannot be reached while following an app is an outage
  (``TransientSchedulerError``, retried by the Runner), never a FAILED app.

The ``docker`` SDK is imported inside the methods that talk to the engine, so a dry
run, ``torchx runopts docker`` and ``torchx --help`` never import it.
"""

from __future__ import annotations

import builtins
import codecs
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
    split_lines_iterator,
)
from torchx.schedulers.errors import SchedulerError, TransientSchedulerError
from torchx.schedulers.ids import make_app_id
from torchx.specs import NONE, AppDef, AppDryRunInfo, CfgVal, RetryPolicy, runopts
from torchx.specs.errors import SpecError
from torchx_docker import labels, wire
from torchx_docker.images import ImageWorkspaceMixin
from torchx_docker.logs import engine_log, follow_to_the_end
from torchx_docker.options import docker_runopts, read
from torchx_docker.request import (
    DockerRequest,
    container_name,
    make_request,
    marker_name,
)

if TYPE_CHECKING:
    from datetime import datetime

    import docker

    from torchx_docker.engine import Seen

T = TypeVar("T")

#: Seconds an engine call (other than a followed log) may take before it is an outage.
ENGINE_TIMEOUT = 30
#: At most this many engine calls at once (creating, starting, stopping containers).
PARALLEL = 16
#: The engine's address when ``DOCKER_HOST`` is not set.
DEFAULT_ENGINE = "unix:///var/run/docker.sock"
#: Seconds one blocking wait for a container's exit may hold its connection; a follower
#: that waits longer starts another.
EXIT_WAIT_HOLD = 120
#: At most this many containers of an app are waited for at once (each wait holds a
#: connection); any others are seen at the next describe, which a wait's timeout bounds.
MAX_EXIT_WAITS = 16


def engine_address() -> str:
    """The engine's address: ``DOCKER_HOST``, else the local socket."""
    return os.environ.get("DOCKER_HOST") or DEFAULT_ENGINE


class DockerScheduler(ImageWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
    """Apps as containers on one Docker engine (see the module docstring).

    Args:
        session_name: the session the handles carry
        client: a ``docker.APIClient`` to use (tests); default: one for
            :func:`engine_address`, made on first use
    """

    #: The engine here runs every kind of request the contract makes.
    missing_capabilities: Mapping[Any, str] = {}

    def __init__(self, session_name: str, client: docker.APIClient | None = None) -> None:
        super().__init__("docker", session_name)
        self._client = client
        self._injected = client is not None
        #: the hot path's calls without the SDK (None: not made yet; False: not possible)
        self._wire: wire.Wire | bool | None = None
        #: the client of the blocking exit waits (connections of their own)
        self._wait_client: docker.APIClient | None = None
        #: app id -> its replica containers the last describe saw running
        self._running: dict[str, builtins.list[str]] = {}
        #: container id -> the wait for its exit under way (or just ended)
        self._exit_waits: dict[str, _ExitWait] = {}
        self._woken = threading.Condition()

    # -- the engine ----------------------------------------------------------------------

    def _api(self) -> docker.APIClient:
        if self._client is None:
            import docker
            from docker.utils import kwargs_from_env

            self._client = docker.APIClient(timeout=ENGINE_TIMEOUT, **kwargs_from_env())
        return self._client

    def _engine(self) -> Any:
        """The client of the hot path's calls: :class:`~torchx_docker.wire.Wire` where the
        engine's address allows (no SDK to import), else the SDK's (``_api``)."""
        if self._injected:
            return self._api()
        if self._wire is None:
            self._wire = wire.for_address(engine_address(), os.environ) or False
        return self._wire if isinstance(self._wire, wire.Wire) else self._api()

    def _waits_api(self) -> Any:
        """The client the exit waits use: the main one's pool is left to everything else."""
        if self._injected:
            return self._api()
        fast = self._engine()
        if isinstance(fast, wire.Wire):
            return wire.Wire(fast.path, fast.host, fast.port, timeout=EXIT_WAIT_HOLD)
        if self._wait_client is None:
            import docker
            from docker.utils import kwargs_from_env

            self._wait_client = docker.APIClient(
                version=self._api().api_version,  # known: no second version call
                timeout=ENGINE_TIMEOUT,
                max_pool_size=MAX_EXIT_WAITS,
                **kwargs_from_env(),
            )
        return self._wait_client

    def close(self) -> None:
        client, self._client = self._client, None
        waits, self._wait_client = self._wait_client, None
        for c in (client, waits):
            if c is not None:
                try:
                    c.close()
                except Exception:
                    pass

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        """Engine errors in contract terms: unreachable or 5xx is an outage, else one line."""
        if isinstance(e, SchedulerError):
            return e
        text = _unreachable(e)
        if text is not None:
            return TransientSchedulerError(text)
        if isinstance(e, _refusals()):
            code = getattr(e, "status_code", None) or 0
            reason = _engine_reason(e)
            if code >= 500 and code != 501:
                return TransientSchedulerError(f"the Docker engine answered {code}: {reason}")
            return SchedulerError(f"the Docker engine refused: {reason}")
        sdk = sys.modules.get("docker.errors")
        if sdk is not None and isinstance(e, sdk.DockerException):
            return SchedulerError(f"Docker: {e}")
        return None

    # -- submitting ----------------------------------------------------------------------

    def _run_opts(self) -> runopts:
        return docker_runopts()

    def _submit_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal]
    ) -> AppDryRunInfo[DockerRequest]:
        request = make_request(app, make_app_id(app.name), read(cfg), os.environ)
        return AppDryRunInfo(request, DockerRequest.to_json)

    def schedule(self, dryrun_info: AppDryRunInfo[DockerRequest]) -> str:
        request = dryrun_info.request
        try:
            api = self._engine()
        except Exception as e:
            raise self._submit_error(e, request) from e
        network: str | None = None
        created: list[str] = []
        try:
            if request.network is not None:
                _create_network(api, self._api, request.network, request.app_id)
                network = request.network

            pull = _Puller(self._api)

            def create(c: Any) -> str:
                host_config = api.create_host_config(**c.host_config)
                try:
                    answer = api.create_container(host_config=host_config, **c.config)
                except _image_missing():
                    pull(c.config["image"])  # once per image, whichever replica asks first
                    answer = api.create_container(host_config=host_config, **c.config)
                return str(answer["Id"])

            outcomes = _parallel(create, request.containers)
            created = [o for o in outcomes if isinstance(o, str)]
            _raise_first(outcomes)
            _preload_following()  # while the engine starts them, the longest wait here
            _raise_first(_parallel(api.start, created))
        except BaseException as e:
            _cleanup(self._api, created, network)
            raise self._submit_error(e, request) from e
        return request.app_id

    def _submit_error(self, e: BaseException, request: DockerRequest) -> BaseException:
        if isinstance(e, SchedulerError | SpecError):
            return e
        if isinstance(e, _PullError):
            return SchedulerError(str(e))
        text = _unreachable(e)
        if text is not None:
            return SchedulerError(text)
        sdk = sys.modules.get("docker.errors")
        if not (
            isinstance(e, wire.EngineError)
            or (sdk is not None and isinstance(e, sdk.DockerException))
        ):
            return e
        reason = _engine_reason(e)
        low = reason.lower()
        if isinstance(e, _image_missing()) or "no such image" in low:
            return SchedulerError(
                f"image not found on the Docker engine at {engine_address()}: {reason}; "
                "pull or build it there first (docker pull IMAGE)"
            )
        if "could not select device driver" in low:
            return SchedulerError(
                "the app asks for GPUs, but the Docker engine at "
                f"{engine_address()} has no GPU driver ({reason}): install the NVIDIA "
                "Container Toolkit there, or run without GPUs (-h cpu.* / gpu=0)"
            )
        if "operation not permitted" in low and any(
            c.host_config.get("privileged") for c in request.containers
        ):
            return SchedulerError(
                f"the Docker engine at {engine_address()} refused a privileged container "
                f"({reason}): run without -cfg privileged=True, or on an engine that may"
            )
        if "conflict" in low and "already in use" in low:
            return SchedulerError(
                f"a name of app {request.app_id} is taken on the Docker engine: {reason}; "
                "submit again (a new app id), or remove the old container"
            )
        return SchedulerError(f"the Docker engine refused app {request.app_id}: {reason}")

    # -- following -----------------------------------------------------------------------

    def _seen(self, app_id: str | None) -> builtins.list[Seen]:
        """The app's containers (every app's with None): one list call, inspects if needed."""
        from torchx_docker import engine

        api = self._engine()
        filters = labels.all_apps_filter() if app_id is None else labels.app_filter(app_id)
        seen = [engine.seen_from_list(e) for e in api.containers(all=True, filters=filters)]
        if app_id is not None:
            self._inspect_where_needed(api, seen)
        return seen

    def _inspect_where_needed(self, api: Any, seen: builtins.list[Seen]) -> None:
        from torchx_docker import engine

        def inspect(c: Seen) -> None:
            try:
                engine.add_inspect(c, api.inspect_container(c.id))
            except _not_found():
                c.state = "removing"

        replicas = [c for c in seen if c.kind == labels.KIND_REPLICA]
        if replicas and all(c.state in ("exited", "dead") for c in replicas):
            # every replica has ended: their records say when (the app's end time)
            wanted = replicas
        else:
            wanted = [c for c in seen if c.needs_inspect()]
        for outcome in _parallel(inspect, wanted):
            if isinstance(outcome, BaseException):
                raise outcome

    def exists(self, app_id: str) -> bool:
        """One list call: does any replica container of the app exist?"""
        from torchx_docker import engine

        api = self._engine()
        found = api.containers(all=True, filters=labels.app_filter(app_id))
        return any(engine.seen_from_list(e).kind == labels.KIND_REPLICA for e in found)

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        from torchx_docker import engine

        seen = self._seen(app_id)
        # A restarted replica may fail again before the containers are listed anew: look
        # again until no restart is due (each restart makes a marker, so this ends).
        while self._restart_if_due(app_id, seen):
            seen = self._seen(app_id)
        replicas = [c for c in seen if c.kind == labels.KIND_REPLICA]
        if not replicas:
            return None
        appdef = _appdef_of(replicas)
        order = [r.name for r in appdef.roles] if appdef is not None else None
        expected = {r.name: r.num_replicas for r in appdef.roles} if appdef is not None else None
        view = engine.app_status(seen, order, expected)
        self._running[app_id] = [c.id for c in replicas if c.state == "running"]
        return DescribeAppResponse(
            app_id=app_id,
            state=view.state,
            num_restarts=view.num_restarts,
            msg=view.msg or NONE,
            structured_error_msg=view.structured_error_msg or NONE,
            roles_statuses=view.roles,
            roles=list(appdef.roles) if appdef is not None else [],
            metadata=dict(appdef.metadata) if appdef is not None else {},
            name=appdef.name if appdef is not None else _app_name(replicas),
            start_time=_start_time(replicas),
            end_time=_end_time(replicas) if view.state.is_terminal() else None,
        )

    def wait_for_change(self, app_id: str, timeout: float) -> bool:
        """Blocks until a container of the app that was running stops, or ``timeout``.

        The engine's own wait call (``POST /containers/ID/wait?condition=not-running``),
        one per container the last describe saw running, each in a daemon thread of its
        own: it answers as soon as the container has stopped (at once if it already
        had), so ``torchx run --wait`` sees an app end as it ends instead of at its next
        poll. A wait still under way is reused by the next call. An app with no running
        container (pending, restarting, ended) is not waited for: False, the caller
        polls.
        """
        running = self._running.get(app_id)
        if running is None:  # not described by this process yet: one list call
            running = [
                c.id
                for c in self._seen_plain(app_id)
                if c.kind == labels.KIND_REPLICA and c.state == "running"
            ]
        if not running:
            return False
        api = self._waits_api()
        waits = []
        for cid in running[:MAX_EXIT_WAITS]:
            w = self._exit_waits.get(cid)
            if w is None or w.done:
                w = self._exit_waits[cid] = _ExitWait(api, cid, self._woken)
            waits.append(w)
        with self._woken:
            self._woken.wait_for(lambda: any(w.done for w in waits), timeout)
        for cid in [cid for cid, w in self._exit_waits.items() if w.done]:
            del self._exit_waits[cid]
        # waits that only failed (an engine without the call, or unreachable) waited for
        # nothing: False, so that the caller sleeps its poll interval instead of spinning
        ended = [w for w in waits if w.done]
        return not ended or not all(w.failed for w in ended)

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        del cfg  # one engine: nothing to route by
        from torchx_docker import engine

        by_app: dict[str, builtins.list[Seen]] = {}
        for c in self._seen(None):
            by_app.setdefault(c.labels.get(labels.APP_ID, ""), []).append(c)
        out = []
        for app_id, containers in by_app.items():
            replicas = [c for c in containers if c.kind == labels.KIND_REPLICA]
            if not app_id or not replicas:
                continue
            view = engine.app_status(containers)
            out.append(
                ListAppResponse(
                    app_id=app_id,
                    state=view.state,
                    name=_app_name(replicas),
                    start_time=_start_time(replicas),
                )
            )
        return out

    # -- retries of the ROLE and APPLICATION policies ---------------------------------------

    def _restart_if_due(self, app_id: str, seen: builtins.list[Seen]) -> bool:
        """Restarts the role (or app) of a failed replica with restarts left; True if done."""
        from torchx_docker import engine

        markers = engine.read_markers(seen)
        if markers.cancelled or markers.restarting:
            return False
        replicas = [c for c in seen if c.kind == labels.KIND_REPLICA]
        for c in replicas:
            if not c.failed or c.max_retries <= 0:
                continue
            if c.retry_policy == RetryPolicy.APPLICATION.value:
                scope, used = "", markers.app_restarts
            elif c.retry_policy == RetryPolicy.ROLE.value:
                scope, used = c.role, markers.role_restarts.get(c.role, 0)
            else:
                continue
            if used >= c.max_retries:
                continue
            targets = [r for r in replicas if not scope or r.role == scope]
            self._restart(app_id, scope, used + 1, c.image, targets)
            return True
        return False

    def _restart(
        self, app_id: str, scope: str, attempt: int, image: str, targets: builtins.list[Seen]
    ) -> None:
        import docker.errors

        api = self._api()
        name = marker_name(app_id, "restart", scope or "~app", attempt)
        extra = {labels.ATTEMPT: str(attempt), labels.RESTART_ROLE: scope}
        try:
            marker = _create_marker(api, name, image, app_id, labels.KIND_RESTART, extra)
        except docker.errors.APIError as e:
            if e.status_code == 409:
                return  # another process restarts it
            raise

        def restart(c: Seen) -> None:
            grace = int(c.labels.get(labels.STOP_GRACE, "10") or 10)
            api.restart(c.id, timeout=grace)

        try:
            _raise_first(_parallel(restart, targets))
        finally:
            # done even when a container could not be restarted (removed meanwhile): the
            # next describe then sees the replicas as they are, not a restart under way
            api.rename(marker, f"{name}-done")

    # -- cancel and delete -------------------------------------------------------------------

    def _cancel_existing(self, app_id: str) -> None:
        import docker.errors

        from torchx_docker import engine

        api = self._api()
        seen = self._seen_plain(app_id)
        replicas = [c for c in seen if c.kind == labels.KIND_REPLICA]
        if not replicas:
            return
        if not engine.read_markers(seen).cancelled:
            try:
                _create_marker(
                    api,
                    marker_name(app_id, "cancelled"),
                    replicas[0].image,
                    app_id,
                    labels.KIND_CANCELLED,
                    {},
                )
            except docker.errors.APIError as e:
                if e.status_code != 409:  # 409: cancelled already
                    raise

        def stop(c: Seen) -> None:
            try:
                api.stop(c.id)  # the container's StopTimeout: stop_grace
            except docker.errors.NotFound:
                pass

        live = [c for c in replicas if c.state not in ("exited", "dead")]
        for outcome in _parallel(stop, live):
            if isinstance(outcome, BaseException):
                raise outcome

    def _delete_existing(self, app_id: str) -> None:
        import docker.errors

        self._cancel_existing(app_id)
        api = self._api()

        def remove(c: Seen) -> None:
            try:
                api.remove_container(c.id, v=True, force=True)
            except docker.errors.NotFound:
                pass

        for outcome in _parallel(remove, self._seen_plain(app_id)):
            if isinstance(outcome, BaseException):
                raise outcome
        for net in api.networks(filters=labels.app_filter(app_id)):
            try:
                api.remove_network(net["Id"])
            except docker.errors.NotFound:
                pass

    def _seen_plain(self, app_id: str) -> builtins.list[Seen]:
        from torchx_docker import engine

        api = self._engine()
        found = api.containers(all=True, filters=labels.app_filter(app_id))
        return [engine.seen_from_list(e) for e in found]

    # -- logs ----------------------------------------------------------------------------------

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
        stdout = choice in (Stream.STDOUT, Stream.COMBINED)
        stderr = choice in (Stream.STDERR, Stream.COMBINED)
        name = container_name(app_id, role_name, k)
        api = self._api()
        import docker.errors

        try:
            chunks = engine_log(
                api,
                name,
                stdout=stdout,
                stderr=stderr,
                follow=should_tail,
                # a second around the bounds: the lines' own times decide (window_lines)
                since=None if since is None else max(since.timestamp() - 1.0, 0.001),
                until=None if until is None else until.timestamp() + 1.0,
                timeout=ENGINE_TIMEOUT,
            )
        except docker.errors.NotFound:
            raise SpecError(
                f"app {app_id} has no replica {k} of role {role_name!r} on the Docker engine "
                f"(no container {name})"
            ) from None
        if should_tail:
            # the engine may end a followed log early: read what it had not sent yet
            chunks = follow_to_the_end(
                _then_wait(chunks, api, name),
                lambda after: engine_log(
                    api,
                    name,
                    stdout=stdout,
                    stderr=stderr,
                    follow=False,
                    since=after,
                    until=None,
                    timeout=ENGINE_TIMEOUT,
                ),
            )
        from torchx.schedulers.polling import matching_lines
        from torchx.schedulers.window import window_lines

        lines: Iterator[str] = window_lines(
            split_lines_iterator(_decode(chunks)), since, until, ordered=True
        )
        return matching_lines(regex, lines) if regex else lines


def create_scheduler(session_name: str, **kwargs: Any) -> DockerScheduler:
    """The factory the plugin registers (``docker`` and ``local_docker``)."""
    return DockerScheduler(session_name, client=kwargs.get("client"))


# -- helpers ---------------------------------------------------------------------------------


def _preload_following() -> None:
    """Imports what following an app needs (:mod:`torchx_docker.engine`) in a thread.

    ``torchx run --wait`` describes the app as soon as ``schedule`` returns, and the
    engine takes some 200 ms to start a container, during which this process only waits
    on a socket: a module imported meanwhile costs the command nothing, where importing
    it at the first describe would (a few milliseconds, dataclasses included). The
    describe's own import waits for this one if it is still under way (the import
    lock), or finds it done; an error here is left for that import to raise.
    """
    if "torchx_docker.engine" in sys.modules:
        return

    def load() -> None:
        try:
            import torchx_docker.engine  # noqa: F401
        except Exception:
            pass

    threading.Thread(target=load, daemon=True, name="torchx-docker: preload").start()


def _then_wait(chunks: Iterable[bytes], api: docker.APIClient, name: str) -> Iterator[bytes]:
    """The followed log, ended only once the engine has the container stopped.

    The engine closes a followed log when the container's output ends, a moment before
    it records the container as exited: waiting for that (the engine's own wait call,
    not a poll) makes a follower that ends see the app ended too.
    """
    yield from chunks
    try:
        api.wait(name, timeout=ENGINE_TIMEOUT, condition="not-running")
    except Exception:
        pass  # removed meanwhile, or the engine went away: the log ended anyway


def _decode(chunks: Iterable[bytes]) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            yield text
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def _parallel(fn: Callable[[Any], T], items: Sequence[Any]) -> list[T | BaseException]:
    """``fn`` of each item, at most :data:`PARALLEL` at once: each result or its exception."""
    if not items:
        return []
    if len(items) == 1:
        try:
            return [fn(items[0])]
        except Exception as e:
            return [e]

    def guarded(item: Any) -> T | BaseException:
        try:
            return fn(item)
        except Exception as e:
            return e

    # imported here: concurrent.futures brings logging and queue, which a 1-replica app
    # (the common start, timed by the CLI's start-up) never needs
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(PARALLEL, len(items))) as pool:
        return list(pool.map(guarded, items))


class _ExitWait:
    """The engine's blocking wait for one container to stop running, in a daemon thread.

    ``done`` once the engine answered (the container stopped), or the wait failed or
    timed out (the container gone, the engine unreachable, :data:`EXIT_WAIT_HOLD`
    passed): any of these wakes the follower, whose next describe says what happened.
    """

    def __init__(self, api: docker.APIClient, cid: str, woken: threading.Condition) -> None:
        self.done = False
        #: the engine did not answer the wait (an error, not the container's exit)
        self.failed = False
        self._woken = woken
        threading.Thread(
            target=self._run, args=(api, cid), daemon=True, name=f"torchx-docker: wait {cid[:12]}"
        ).start()

    def _run(self, api: docker.APIClient, cid: str) -> None:
        try:
            api.wait(cid, timeout=EXIT_WAIT_HOLD, condition="not-running")
        except Exception:
            self.failed = True  # gone, unreachable or held too long: the next describe tells
        finally:
            with self._woken:
                self.done = True
                self._woken.notify_all()


class _Puller:
    """Pulls each image at most once per submit, however many replicas find it missing.

    The engine creates containers only from images it has; one a replica needs but the
    engine lacks is pulled from its registry (as ``docker run`` does). A pull that fails
    is remembered, so the other replicas of that image fail at once with the same error.
    """

    def __init__(self, api: Callable[[], docker.APIClient]) -> None:
        self._api = api  # the SDK's client, made on the first pull
        self._lock = threading.Lock()
        self._done: dict[str, BaseException | None] = {}

    def __call__(self, image: str) -> None:
        with self._lock:
            if image not in self._done:
                try:
                    repo, tag = _split_image(image)
                    self._api().pull(repo, tag=tag)
                    self._done[image] = None
                except Exception as e:
                    self._done[image] = e
            error = self._done[image]
        if error is not None:
            raise _PullError(image, error) from error


class _PullError(Exception):
    """An image the engine lacks and could not pull (the message says why)."""

    def __init__(self, image: str, cause: BaseException) -> None:
        super().__init__(
            f"image {image!r} is not on the Docker engine at {engine_address()} and pulling "
            f"it failed: {_engine_reason(cause)}; pull or build it there first"
        )


def _split_image(image: str) -> tuple[str, str | None]:
    """``repo[:tag]`` or ``repo@digest`` as (repository, tag or digest); no tag: latest."""
    if "@" in image:
        repo, digest = image.split("@", 1)
        return repo, digest
    slash = image.rfind("/")
    colon = image.rfind(":")
    if colon > slash:
        return image[:colon], image[colon + 1 :]
    return image, "latest"


def _sdk_errors(name: str) -> tuple[type[BaseException], ...]:
    """The SDK's exception class ``name``, if the SDK was imported (else none of its can
    have been raised): the hot path reaches the engine without it (:mod:`~torchx_docker.wire`)."""
    sdk = sys.modules.get("docker.errors")
    return (getattr(sdk, name),) if sdk is not None else ()


def _not_found() -> tuple[type[BaseException], ...]:
    """The engine's "no such container", from either client."""
    return (wire.NotFound, *_sdk_errors("NotFound"))


def _image_missing() -> tuple[type[BaseException], ...]:
    """The engine's "no such image", from either client."""
    return (wire.ImageNotFound, *_sdk_errors("ImageNotFound"))


def _refusals() -> tuple[type[BaseException], ...]:
    """An answer of the engine that refuses (with a status code), from either client."""
    return (wire.EngineError, *_sdk_errors("APIError"))


def _raise_first(outcomes: Sequence[object]) -> None:
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome


def _unreachable(e: BaseException) -> str | None:
    """The one line for an engine that cannot be reached, or None if ``e`` is not that.

    The SDK's HTTP errors without an answer (connection refused, no socket, timed out)
    are ``OSError`` s; one that carries the engine's answer (``response``) is a refusal,
    not an outage.
    """
    chain: list[BaseException] = []
    cur: BaseException | None = e
    while cur is not None and len(chain) < 8:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    for err in chain:
        answered = getattr(err, "response", None) is not None
        if (isinstance(err, OSError) and not answered) or (
            "Error while fetching server API version" in str(err)
        ):
            return (
                f"cannot reach the Docker engine at {engine_address()} (is dockerd running? "
                "DOCKER_HOST names another engine)"
            )
    return None


def _engine_reason(e: BaseException) -> str:
    explanation = getattr(e, "explanation", None)
    text = explanation if explanation else str(e)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return " ".join(str(text).split())


def _create_network(api: Any, sdk: Callable[[], docker.APIClient], name: str, app_id: str) -> None:
    """Creates the app's network; one of that name already made for this app is reused."""
    try:
        api.create_network(
            name,
            driver="bridge",
            check_duplicate=True,
            labels={labels.APP_ID: app_id, labels.VERSION: labels.FORMAT},
        )
    except _refusals() as e:
        if getattr(e, "status_code", None) != 409:
            raise
        found = sdk().networks(names=[name])
        if not any((n.get("Labels") or {}).get(labels.APP_ID) == app_id for n in found):
            raise SchedulerError(
                f"a network named {name} exists on the Docker engine but is not app "
                f"{app_id}'s: remove it (docker network rm {name}) or submit again"
            ) from None


def _create_marker(
    api: docker.APIClient,
    name: str,
    image: str,
    app_id: str,
    kind: str,
    extra: Mapping[str, str],
) -> str:
    """Creates (never starts) a marker container; raises APIError 409 if it exists."""
    host_config = api.create_host_config(network_mode="none")
    answer = api.create_container(
        image,
        entrypoint=["true"],
        name=name,
        labels=labels.marker_labels(app_id, kind, **extra),
        host_config=host_config,
    )
    return str(answer["Id"])


def _cleanup(
    sdk: Callable[[], docker.APIClient], created: Sequence[str], network: str | None
) -> None:
    """Removes the containers and network a failed submit made (errors ignored)."""
    if not created and network is None:
        return
    try:
        api = sdk()
    except Exception:
        return  # the engine cannot be reached: nothing can be removed

    def remove(cid: str) -> None:
        api.remove_container(cid, v=True, force=True)

    _parallel(remove, created)
    if network is not None:
        try:
            api.remove_network(network)
        except Exception:
            pass


def _appdef_of(replicas: Sequence[Seen]) -> AppDef | None:
    for c in replicas:
        text = c.labels.get(labels.APPDEF)
        if text:
            from torchx.specs.appdef_json import decode

            try:
                app = decode(text)
            except Exception:
                return None
            return app
    return None


def _app_name(replicas: Sequence[Seen]) -> str:
    for c in replicas:
        name = c.labels.get(labels.APP_NAME)
        if name:
            return name
    return ""


def _start_time(replicas: builtins.list[Seen]) -> float | None:
    """When the app's first container was created (its submission, to within a second)."""
    times = [c.created for c in replicas if c.created is not None]
    return min(times) if times else None


def _end_time(replicas: builtins.list[Seen]) -> float | None:
    """When the last container of an ended app exited, where every one was inspected (the
    list answer says only "Exited (0) 5 seconds ago"); None otherwise."""
    times = [c.finished for c in replicas if c.finished is not None]
    return max(times) if times and len(times) == len(replicas) else None
