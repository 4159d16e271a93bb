"""Every call to the Docker engine, in one place: its clients, their cache, what errors mean.

:class:`DockerBackend` holds the clients, made on first use: the hot path's
(:class:`~torchx_docker.wire.Wire`, HTTP/1.1 on the socket, where the engine's address
allows; no SDK to import), the ``docker`` SDK's ``APIClient`` for everything else, and
a client of their own for the blocking exit waits. :meth:`DockerBackend.close` lets
go of them; :meth:`DockerBackend.classify_error` and :func:`submit_error` turn the
engine's answers into the contract's errors, one line each. The scheduler
(:mod:`torchx_docker.scheduler`) and the restart engine (:mod:`torchx_docker.restart`)
call the engine through it only.

Tests give the scheduler a backend around a fake client:
``create_scheduler(session, backend=DockerBackend(client=fake))`` (the fake then serves
every call, the hot path's too).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from torchx.schedulers.contract.errors import (
    SchedulerError,
    TransientSchedulerError,
    transient_http_status,
)
from torchx.specs.errors import SpecError
from torchx_docker import labels, wire
from torchx_docker.logs import engine_log, follow_container
from torchx_docker.pull import Puller, PullError

if TYPE_CHECKING:
    import docker

    from torchx_docker.request import DockerRequest

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


def engine_socket() -> str | None:
    """The path of the engine's Unix socket, or None when it is not reached through one."""
    address = engine_address()
    return address[len("unix://") :] if address.startswith("unix://") else None


def note_socket() -> None:
    """Records that the engine's socket exists now, if it does (see ``classify_error``)."""
    path = engine_socket()
    if path and os.path.exists(path):
        wire.seen_sockets.add(path)


def missing_engine() -> str | None:
    """The one line for an engine whose socket does not exist and never did in this
    process, or None (a TCP address, a socket that exists or was seen: see
    :meth:`DockerBackend.classify_error`)."""
    path = engine_socket()
    if path is None or path in wire.seen_sockets:
        return None
    if os.path.exists(path):
        wire.seen_sockets.add(path)
        return None
    return (
        f"no Docker engine answers at {engine_address()}: the socket {path} does not exist; "
        "start dockerd, or set DOCKER_HOST to the engine's address (a dockerd that is "
        "restarting has no socket for a moment: then try again)"
    )


def engine_on_this_machine() -> bool:
    """Whether the engine is reached through a Unix socket: its host paths are this
    machine's (a bind mount's source can be checked at dry run)."""
    return engine_address().startswith("unix://")


class DockerBackend:
    """The engine's clients and calls (see the module docstring).

    Args:
        client: a ``docker.APIClient`` to use for every call (tests); default: one for
            :func:`engine_address`, made on first use
    """

    def __init__(self, client: docker.APIClient | None = None) -> None:
        self._client = client
        self._injected = client is not None
        #: the hot path's calls without the SDK (None: not made yet; False: not possible)
        self._wire: wire.Wire | bool | None = None
        #: the client of the blocking exit waits (connections of their own)
        self._wait_client: docker.APIClient | None = None
        #: container id -> the wait for its exit under way (or just ended)
        self._exit_waits: dict[str, _ExitWait] = {}
        self._woken = threading.Condition()

    # -- the clients ------------------------------------------------------------------------

    def api(self) -> docker.APIClient:
        """The SDK's client (made on first use)."""
        if self._client is None:
            import docker
            from docker.utils import kwargs_from_env

            self._client = docker.APIClient(timeout=ENGINE_TIMEOUT, **kwargs_from_env())
            note_socket()  # it asked the engine for its API version: the engine answered
        return self._client

    def engine(self) -> Any:
        """The client of the hot path's calls: :class:`~torchx_docker.wire.Wire` where the
        engine's address allows (no SDK to import), else the SDK's (:meth:`api`)."""
        if self._injected:
            return self.api()
        if self._wire is None:
            self._wire = wire.for_address(engine_address(), os.environ) or False
            note_socket()
        return self._wire if isinstance(self._wire, wire.Wire) else self.api()

    def _waits_api(self) -> Any:
        """The client the exit waits use: the main one's pool is left to everything else."""
        if self._injected:
            return self.api()
        fast = self.engine()
        if isinstance(fast, wire.Wire):
            return wire.Wire(fast.path, fast.host, fast.port, timeout=EXIT_WAIT_HOLD)
        if self._wait_client is None:
            import docker
            from docker.utils import kwargs_from_env

            self._wait_client = docker.APIClient(
                version=self.api().api_version,  # known: no second version call
                timeout=ENGINE_TIMEOUT,
                max_pool_size=MAX_EXIT_WAITS,
                **kwargs_from_env(),
            )
        return self._wait_client

    def close(self) -> None:
        """Closes the SDK's clients (the hot path's opens a connection per call)."""
        client, self._client = self._client, None
        waits, self._wait_client = self._wait_client, None
        for c in (client, waits):
            if c is not None:
                try:
                    c.close()
                except Exception:
                    pass

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        """Engine errors in contract terms: unreachable, or an answer the one HTTP rule calls
        transient (:func:`~torchx.schedulers.contract.errors.transient_http_status`: 408, 429, 5xx
        but 501 and 505) is an outage; any other refusal is one line.

        One exception to "unreachable is an outage": an engine on a Unix socket that does
        not exist, and never existed in this process (no connection made to it, no client
        made while it was there), is no engine at all: a one-line ``SchedulerError`` at
        once (:func:`missing_engine`), not minutes of retries ending in "state unknown".
        A socket that was there earlier in the process and is missing now went away:
        dockerd removes its socket while it restarts, and ``run --wait`` or ``log -t``
        ride that out (an outage, retried). So a command started while dockerd restarts
        (``status`` in a new shell, in the moment without a socket) is told there is no
        engine, and the line says to try again if dockerd is restarting. A socket that
        exists but refuses, a TCP engine, a timeout: always outages.
        """
        if isinstance(e, SchedulerError):
            return e
        text = _unreachable(e)
        if text is not None:
            missing = missing_engine()
            if missing is not None:
                return SchedulerError(missing)
            return TransientSchedulerError(text)
        if isinstance(e, refusals()):
            code = getattr(e, "status_code", None) or 0
            reason = engine_reason(e)
            if transient_http_status(code):
                return TransientSchedulerError(f"the Docker engine answered {code}: {reason}")
            return SchedulerError(f"the Docker engine refused: {reason}")
        sdk = sys.modules.get("docker.errors")
        if sdk is not None and isinstance(e, sdk.DockerException):
            return SchedulerError(f"Docker: {e}")
        return None

    # -- submitting ---------------------------------------------------------------------------

    def create_containers(self, containers: Sequence[Any]) -> list[str | BaseException]:
        """Creates each container (pulling an image the engine lacks, once): ids or errors."""
        api = self.engine()
        pull = Puller(self.api, _pull_error)

        def create(c: Any) -> str:
            host_config = api.create_host_config(**c.host_config)
            try:
                answer = api.create_container(host_config=host_config, **c.config)
            except image_missing():
                pull(c.config["image"])  # once per image, whichever replica asks first
                answer = api.create_container(host_config=host_config, **c.config)
            return str(answer["Id"])

        return parallel(create, containers)

    def start(self, ids: Sequence[str]) -> None:
        """Starts the containers ``ids``; raises the first failure."""
        raise_first(parallel(self.engine().start, ids))

    def remove_made(self, created: Sequence[str], network: str | None) -> None:
        """Removes the containers and network a failed submit made (errors ignored)."""
        if not created and network is None:
            return
        try:
            api = self.api()
        except Exception:
            return  # the engine cannot be reached: nothing can be removed

        def remove(cid: str) -> None:
            api.remove_container(cid, v=True, force=True)

        parallel(remove, created)
        if network is not None:
            try:
                api.remove_network(network)
            except Exception:
                pass

    # -- following -----------------------------------------------------------------------------

    def containers(self, app_id: str | None) -> list[Mapping[str, Any]]:
        """The list answer for the app's containers (every app's with None): one call."""
        filters = labels.all_apps_filter() if app_id is None else labels.app_filter(app_id)
        found: list[Mapping[str, Any]] = self.engine().containers(all=True, filters=filters)
        return found

    def inspect(self, cids: Sequence[str]) -> list[Mapping[str, Any] | None]:
        """Each container's full record (None for one gone meanwhile), in parallel."""

        def one(cid: str) -> Mapping[str, Any] | None:
            try:
                record: Mapping[str, Any] = api.inspect_container(cid)
                return record
            except not_found():
                return None

        api = self.engine()
        outcomes = parallel(one, cids)
        raise_first(outcomes)
        return [o for o in outcomes if not isinstance(o, BaseException)]

    def wait_any_stopped(self, cids: Sequence[str], timeout: float) -> bool:
        """Blocks until one of the running containers ``cids`` stops, or ``timeout``.

        The engine's own wait call (``POST /containers/ID/wait?condition=not-running``),
        one per container (at most :data:`MAX_EXIT_WAITS`), each in a daemon thread of
        its own; a wait still under way is reused by the next call. False where the
        waits only failed (an engine without the call, or unreachable): they waited for
        nothing, so the caller sleeps its poll interval instead of spinning.
        """
        api = self._waits_api()
        waits = []
        for cid in cids[:MAX_EXIT_WAITS]:
            w = self._exit_waits.get(cid)
            if w is None or w.done:
                w = self._exit_waits[cid] = _ExitWait(api, cid, self._woken)
            waits.append(w)
        with self._woken:
            self._woken.wait_for(lambda: any(w.done for w in waits), timeout)
        for cid in [cid for cid, w in self._exit_waits.items() if w.done]:
            del self._exit_waits[cid]
        ended = [w for w in waits if w.done]
        return not ended or not all(w.failed for w in ended)

    def log(
        self,
        name: str,
        *,
        stdout: bool,
        stderr: bool,
        follow: bool,
        since: float | None,
        until: float | None,
    ) -> Iterator[bytes] | None:
        """The engine's log of container ``name`` (timestamped lines), None if there is no
        such container; with ``follow``, read to its end once the container has stopped."""
        import docker.errors

        api = self.api()
        try:
            chunks = engine_log(
                api,
                name,
                stdout=stdout,
                stderr=stderr,
                follow=follow,
                since=since,
                until=until,
                timeout=ENGINE_TIMEOUT,
            )
        except docker.errors.NotFound:
            return None
        if not follow:
            return chunks
        return follow_container(
            chunks, api, name, stdout, stderr, self.classify_error, ENGINE_TIMEOUT
        )

    # -- restarts, cancel and delete -------------------------------------------------------------

    def create_marker(
        self, name: str, image: str, app_id: str, kind: str, extra: Mapping[str, str]
    ) -> str | None:
        """Creates (never starts) a marker container; None if one of that name exists."""
        import docker.errors

        api = self.api()
        host_config = api.create_host_config(network_mode="none")
        try:
            answer = api.create_container(
                image,
                entrypoint=["true"],
                name=name,
                labels=labels.marker_labels(app_id, kind, **extra),
                host_config=host_config,
            )
        except docker.errors.APIError as e:
            if e.status_code == 409:
                return None
            raise
        return str(answer["Id"])

    def restart(self, cids_graces: Sequence[tuple[str, int]]) -> None:
        """Restarts each container (stopping it within its grace); raises the first failure."""
        api = self.api()
        raise_first(parallel(lambda c: api.restart(c[0], timeout=c[1]), cids_graces))

    def rename(self, cid: str, name: str) -> None:
        self.api().rename(cid, name)

    def stop(self, cids: Sequence[str]) -> None:
        """Stops each container (its StopTimeout: stop_grace); gone ones are skipped."""
        import docker.errors

        api = self.api()

        def stop(cid: str) -> None:
            try:
                api.stop(cid)
            except docker.errors.NotFound:
                pass

        raise_first(parallel(stop, cids))

    def remove(self, cids: Sequence[str], app_id: str) -> None:
        """Removes the containers ``cids`` and the app's networks; gone ones are skipped."""
        import docker.errors

        api = self.api()

        def remove(cid: str) -> None:
            try:
                api.remove_container(cid, v=True, force=True)
            except docker.errors.NotFound:
                pass

        raise_first(parallel(remove, cids))
        for net in api.networks(filters=labels.app_filter(app_id)):
            try:
                api.remove_network(net["Id"])
            except docker.errors.NotFound:
                pass


def submit_error(e: BaseException, request: DockerRequest) -> BaseException:
    """What a failed submit of ``request`` raises: one line naming the cause, where known."""
    if isinstance(e, SchedulerError | SpecError):
        return e
    if isinstance(e, PullError):
        return SchedulerError(str(e))
    text = _unreachable(e)
    if text is not None:
        return SchedulerError(text)
    sdk = sys.modules.get("docker.errors")
    if not (
        isinstance(e, wire.EngineError) or (sdk is not None and isinstance(e, sdk.DockerException))
    ):
        return e
    reason = engine_reason(e)
    low = reason.lower()
    if isinstance(e, image_missing()) or "no such image" in low:
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


def parallel(fn: Callable[[Any], T], items: Sequence[Any]) -> list[T | BaseException]:
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


def raise_first(outcomes: Sequence[object]) -> None:
    """Raises the first exception among ``outcomes`` (of :func:`parallel`), if any."""
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome


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


def _pull_error(image: str, cause: BaseException) -> str:
    return (
        f"image {image!r} is not on the Docker engine at {engine_address()} and pulling "
        f"it failed: {engine_reason(cause)}; pull or build it there first"
    )


def _sdk_errors(name: str) -> tuple[type[BaseException], ...]:
    """The SDK's exception class ``name``, if the SDK was imported (else none of its can
    have been raised): the hot path reaches the engine without it (:mod:`~torchx_docker.wire`)."""
    sdk = sys.modules.get("docker.errors")
    return (getattr(sdk, name),) if sdk is not None else ()


def not_found() -> tuple[type[BaseException], ...]:
    """The engine's "no such container", from either client."""
    return (wire.NotFound, *_sdk_errors("NotFound"))


def image_missing() -> tuple[type[BaseException], ...]:
    """The engine's "no such image", from either client."""
    return (wire.ImageNotFound, *_sdk_errors("ImageNotFound"))


def refusals() -> tuple[type[BaseException], ...]:
    """An answer of the engine that refuses (with a status code), from either client."""
    return (wire.EngineError, *_sdk_errors("APIError"))


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


def engine_reason(e: BaseException) -> str:
    """The engine's explanation in ``e``, on one line."""
    explanation = getattr(e, "explanation", None)
    text = explanation if explanation else str(e)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return " ".join(str(text).split())
