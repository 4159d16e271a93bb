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

This module says only which call does what; each job has its own module, as in every
TorchX plugin: :mod:`~torchx_docker.options` (run options), :mod:`~torchx_docker.request`
(the containers), :mod:`~torchx_docker.status` (the engine's answers as states, pure),
:mod:`~torchx_docker.backend` (every engine call, its clients and errors),
:mod:`~torchx_docker.restart` (the restart engine of the ROLE and APPLICATION
policies), :mod:`~torchx_docker.logs` and, for workspaces, :mod:`~torchx_docker.images`.

The ``docker`` SDK is imported inside the backend's methods that need it, so a dry
run, ``torchx runopts docker`` and ``torchx --help`` never import it.
"""

from __future__ import annotations

import builtins
import codecs
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from torchx.schedulers.contract.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
    split_lines_iterator,
)
from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.helpers.ids import make_app_id
from torchx.specs import AppDef, AppDryRunInfo, CfgVal, runopts
from torchx.specs.errors import SpecError
from torchx_docker import labels
from torchx_docker.backend import (
    DockerBackend,
    engine_on_this_machine,
    raise_first,
    submit_error,
)
from torchx_docker.images import ImageWorkspaceMixin
from torchx_docker.options import DockerOpts
from torchx_docker.request import (
    DockerRequest,
    check_bind_sources,
    container_name,
    make_request,
    marker_name,
)

if TYPE_CHECKING:
    from datetime import datetime

    from torchx_docker.status import Seen


class DockerScheduler(ImageWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
    """Apps as containers on one Docker engine (see the module docstring).

    Args:
        session_name: the session the handles carry
        backend: the backend to call (tests: ``DockerBackend(client=fake)``); default:
            one for the engine ``DOCKER_HOST`` names
    """

    #: the run options, declared once
    opts_class = DockerOpts
    runs_container_images = True
    #: The engine here runs every kind of request the contract makes.
    missing_capabilities: Mapping[Any, str] = {}

    def __init__(self, session_name: str, backend: DockerBackend | None = None) -> None:
        super().__init__("docker", session_name)
        self._backend = backend or DockerBackend()
        #: app id -> its replica containers the last describe saw running
        self._running: dict[str, builtins.list[str]] = {}

    def close(self) -> None:
        self._backend.close()

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        return self._backend.classify_error(e)

    # -- submitting ----------------------------------------------------------------------

    def workspace_opts(self) -> runopts:
        """None of its own: ``image_repo``, which the image workspace reads, is a DockerOpts field."""
        return runopts()

    def _submit_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal]
    ) -> AppDryRunInfo[DockerRequest]:
        request = make_request(app, make_app_id(app.name), DockerOpts.of(cfg), os.environ)
        if engine_on_this_machine():
            check_bind_sources(app, os.path.exists)
        return AppDryRunInfo(request, DockerRequest.to_json)

    def schedule(self, dryrun_info: AppDryRunInfo[DockerRequest]) -> str:
        request = dryrun_info.request
        backend = self._backend
        try:
            backend.engine()
        except Exception as e:
            raise submit_error(e, request) from e
        network: str | None = None
        created: list[str] = []
        try:
            if request.network is not None:
                from torchx_docker import networks

                networks.create(backend, request.network, request.app_id)
                network = request.network
            outcomes = backend.create_containers(request.containers)
            created = [o for o in outcomes if isinstance(o, str)]
            raise_first(outcomes)
            _preload_following()  # while the engine starts them, the longest wait here
            backend.start(created)
        except BaseException as e:
            backend.remove_made(created, network)
            raise submit_error(e, request) from e
        return request.app_id

    # -- following -----------------------------------------------------------------------

    def _seen(self, app_id: str | None) -> builtins.list[Seen]:
        """The app's containers (every app's with None): one list call, inspects if needed."""
        from torchx_docker import status

        seen = [status.seen_from_list(e) for e in self._backend.containers(app_id)]
        if app_id is not None:
            wanted = status.to_inspect(seen)
            for c, record in zip(wanted, self._backend.inspect([c.id for c in wanted])):
                if record is None:
                    c.state = "removing"
                else:
                    status.add_inspect(c, record)
        return seen

    def exists(self, app_id: str) -> bool:
        """One list call: does any replica container of the app exist?"""
        return any(c.kind == labels.KIND_REPLICA for c in self._seen_plain(app_id))

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        from torchx_docker import restart, status

        seen = self._seen(app_id)
        # A restarted replica may fail again before the containers are listed anew: look
        # again until no restart is due (each restart makes a marker, so this ends).
        while restart.restart_if_due(self._backend, app_id, seen):
            seen = self._seen(app_id)
        if self._stop_siblings(app_id, seen):
            seen = self._seen(app_id)
        desc = status.describe_response(app_id, seen)
        if desc is not None:
            self._running[app_id] = [
                c.id for c in seen if c.kind == labels.KIND_REPLICA and c.state == "running"
            ]
            if desc.state.is_terminal():
                self._release(app_id, seen)
        return desc

    def _stop_siblings(self, app_id: str, seen: builtins.list[Seen]) -> bool:
        """Stops the other replicas of an app one of whose replicas failed for good (a
        distributed job cannot go on without one of its ranks); True if it did.

        The ``stopped`` marker first (once, whichever process sees it: the others leave
        it to its maker), naming the replicas that had ended; they keep their state, the
        ones stopped read CANCELLED, the app FAILED.
        """
        from torchx_docker import status

        live = status.siblings_to_stop(seen)
        if not live:
            return False
        # which replicas have ended, read again just before the marker: one that ended on
        # its own since ``seen`` was listed keeps its state (it read CANCELLED, exit 0)
        replicas = [c for c in self._seen_plain(app_id) if c.kind == labels.KIND_REPLICA]
        marker = self._backend.create_marker(
            marker_name(app_id, "stopped"),
            live[0].image,
            app_id,
            labels.KIND_STOPPED,
            {labels.ENDED_BEFORE: status.ended_before_json(replicas)},
        )
        if marker is not None:
            ended = ("exited", "dead")
            self._backend.stop([c.id for c in replicas if c.state not in ended])
        return True

    def _release(self, app_id: str, seen: builtins.list[Seen]) -> None:
        """Removes the network of an app that has ended (its containers, so its logs and
        status, stay until ``delete``): an engine has addresses for ~128 such networks."""
        from torchx_docker.request import network_name

        own = network_name(app_id)
        if any(c.network == own for c in seen if c.kind == labels.KIND_REPLICA):
            from torchx_docker import networks

            networks.remove(self._backend, own)

    def wait_for_change(self, app_id: str, timeout: float) -> bool:
        """Blocks until a container of the app that was running stops, or ``timeout``.

        The engine's own wait call for each container the last describe saw running
        (:meth:`~torchx_docker.backend.DockerBackend.wait_any_stopped`): it answers as
        soon as the container has stopped (at once if it already had), so ``torchx run
        --wait`` sees an app end as it ends instead of at its next poll. An app with no
        running container (pending, restarting, ended) is not waited for: False, the
        caller polls.
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
        return self._backend.wait_any_stopped(running, timeout)

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        del cfg  # one engine: nothing to route by
        from torchx_docker import status

        return status.list_entries(self._seen(None))

    # -- cancel and delete -------------------------------------------------------------------

    def _cancel_existing(self, app_id: str) -> None:
        from torchx_docker import status

        seen = self._seen_plain(app_id)
        replicas = [c for c in seen if c.kind == labels.KIND_REPLICA]
        live = [c.id for c in replicas if c.state not in ("exited", "dead")]
        if not live:
            return  # ended before: nothing to cancel, and it stays as it ended
        if not status.read_markers(seen).cancelled:
            # None: a marker of that name exists, cancelled already
            self._backend.create_marker(
                marker_name(app_id, "cancelled"),
                replicas[0].image,
                app_id,
                labels.KIND_CANCELLED,
                {labels.ENDED_BEFORE: status.ended_before_json(replicas)},
            )
        self._backend.stop(live)

    def _delete_existing(self, app_id: str) -> None:
        self._cancel_existing(app_id)
        self._backend.remove([c.id for c in self._seen_plain(app_id)], app_id)

    def _seen_plain(self, app_id: str) -> builtins.list[Seen]:
        from torchx_docker import status

        return [status.seen_from_list(e) for e in self._backend.containers(app_id)]

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
        name = container_name(app_id, role_name, k)
        chunks = self._backend.log(
            name,
            stdout=choice in (Stream.STDOUT, Stream.COMBINED),
            stderr=choice in (Stream.STDERR, Stream.COMBINED),
            follow=should_tail,
            # a second around the bounds: the lines' own times decide (window_lines)
            since=None if since is None else max(since.timestamp() - 1.0, 0.001),
            until=None if until is None else until.timestamp() + 1.0,
        )
        if chunks is None:
            raise SpecError(
                f"app {app_id} has no replica {k} of role {role_name!r} on the Docker engine "
                f"(no container {name})"
            )
        from torchx.schedulers.helpers.polling import matching_lines
        from torchx.schedulers.helpers.window import window_lines

        lines: Iterator[str] = window_lines(
            split_lines_iterator(_decode(chunks)), since, until, ordered=True
        )
        return matching_lines(regex, lines) if regex else lines


def create_scheduler(session_name: str, **kwargs: Any) -> DockerScheduler:
    """The factory the plugin registers (``docker`` and ``local_docker``); ``backend=``
    replaces the engine's (tests)."""
    return DockerScheduler(session_name, backend=kwargs.get("backend"))


def _preload_following() -> threading.Thread | None:
    """Imports what following an app needs (:mod:`torchx_docker.status`) in a thread.

    ``torchx run --wait`` describes the app as soon as ``schedule`` returns, and the
    engine takes some 200 ms to start a container, during which this process only waits
    on a socket: a module imported meanwhile costs the command nothing, where importing
    it at the first describe would (a few milliseconds, dataclasses included). The
    describe's own import waits for this one if it is still under way (the import
    lock), or finds it done; an error here is left for that import to raise.

    Returns the thread it started (None when the module was already imported), so a
    caller that must know the import is done joins it instead of guessing.
    """
    if "torchx_docker.restart" in sys.modules:
        return None

    def load() -> None:
        try:
            import torchx_docker.restart  # noqa: F401  (and torchx_docker.status with it)
        except Exception:
            pass

    thread = threading.Thread(target=load, daemon=True, name="torchx-docker: preload")
    thread.start()
    return thread


def _decode(chunks: Iterable[bytes]) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            yield text
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail
