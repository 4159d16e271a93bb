"""The scheduler's engine calls against a stand-in client: errors, cleanup, call counts.

The real engine is in ``integration/``; here a small fake ``APIClient`` records calls and
fails where a test says, to check what is hard to provoke on a real engine (a create
failing half-way, each refusal's one line).
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from typing import Any

import docker.errors
import pytest
import requests
from torchx_docker import labels, wire
from torchx_docker.backend import DockerBackend
from torchx_docker.pull import split_image
from torchx_docker.scheduler import DockerScheduler

from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError
from torchx.specs import AppDef, Resource, Role


class FakeAPI:
    """Records calls; ``fail_create`` maps a container name to the error its create raises."""

    def __init__(self, fail_create: dict[str, BaseException] | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.fail_create = fail_create or {}
        self.fail_start: BaseException | None = None
        self.containers_answer: list[dict[str, Any]] = []

    def create_host_config(self, **kw: Any) -> dict[str, Any]:
        return kw

    def create_network(self, name: str, **kw: Any) -> None:
        self.calls.append(("create_network", name))

    def remove_network(self, name: str) -> None:
        self.calls.append(("remove_network", name))

    def create_container(self, **kw: Any) -> dict[str, str]:
        if kw["name"] in self.fail_create:
            raise self.fail_create[kw["name"]]
        self.calls.append(("create_container", kw["name"]))
        return {"Id": "id-" + kw["name"]}

    def start(self, cid: str) -> None:
        if self.fail_start is not None:
            raise self.fail_start
        self.calls.append(("start", cid))

    def remove_container(self, cid: str, **kw: Any) -> None:
        self.calls.append(("remove_container", cid))

    def containers(self, **kw: Any) -> list[dict[str, Any]]:
        self.calls.append(("containers", kw))
        return self.containers_answer

    def inspect_container(self, cid: str) -> dict[str, Any]:
        self.calls.append(("inspect_container", cid))
        k = int(cid.removeprefix("id"))
        return {
            "State": {"Status": "exited", "ExitCode": 0, "FinishedAt": f"2026-11-25T10:00:0{k}.5Z"},
            "RestartCount": 0,
        }

    def pull(self, repo: str, tag: str | None = None) -> None:
        self.calls.append(("pull", f"{repo}:{tag}"))
        raise docker.errors.NotFound("pull access denied for x, repository does not exist")


def _api_error(status: int, explanation: str) -> docker.errors.APIError:
    response = requests.Response()
    response.status_code = status
    return docker.errors.APIError("engine", response=response, explanation=explanation)


def _submit(api: FakeAPI, replicas: int = 3, **role_kw: Any) -> str:
    sched = DockerScheduler("t", backend=DockerBackend(client=api))
    role = Role("w", "img", entrypoint="sh", num_replicas=replicas, **role_kw)
    info = sched.submit_dryrun(AppDef("app", [role]), {})
    return sched.schedule(info)


def test_a_submit_makes_the_network_then_containers_then_starts_them() -> None:
    api = FakeAPI()
    app_id = _submit(api)
    kinds = [c[0] for c in api.calls]
    assert kinds == ["create_network"] + ["create_container"] * 3 + ["start"] * 3
    assert api.calls[0] == ("create_network", f"torchx-{app_id}")


def test_a_create_failing_half_way_removes_what_was_made() -> None:
    api = FakeAPI()
    sched = DockerScheduler("t", backend=DockerBackend(client=api))
    info = sched.submit_dryrun(
        AppDef("app", [Role("w", "img", entrypoint="sh", num_replicas=3)]), {}
    )
    bad = info.request.containers[2].name
    api.fail_create[bad] = _api_error(
        409, f'Conflict. The container name "/{bad}" is already in use'
    )
    with pytest.raises(SchedulerError, match="is taken on the Docker engine") as e:
        sched.schedule(info)
    assert "\n" not in str(e.value)
    removed = sorted(c[1] for c in api.calls if c[0] == "remove_container")
    assert removed == sorted(f"id-{c.name}" for c in info.request.containers[:2])
    assert ("remove_network", info.request.network) in api.calls
    assert not [c for c in api.calls if c[0] == "start"]


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (
            _api_error(500, 'could not select device driver "" with capabilities: [[gpu]]'),
            "asks for GPUs, but the Docker engine",
        ),
        (
            _api_error(
                500, "OCI runtime create failed: unable to apply caps: operation not permitted"
            ),
            "refused a privileged container",
        ),
        (requests.exceptions.ConnectionError("refused"), "cannot reach the Docker engine"),
    ],
)
def test_a_refused_start_is_one_line_and_leaves_nothing(error: BaseException, words: str) -> None:
    api = FakeAPI()
    api.fail_start = error
    sched = DockerScheduler("t", backend=DockerBackend(client=api))
    role = Role(
        "w", "img", entrypoint="sh", num_replicas=2, resource=Resource(cpu=1, gpu=1, memMB=8)
    )
    info = sched.submit_dryrun(AppDef("app", [role]), {"privileged": True})
    with pytest.raises(SchedulerError, match=words) as e:
        sched.schedule(info)
    assert "\n" not in str(e.value)
    assert len([c for c in api.calls if c[0] == "remove_container"]) == 2
    assert ("remove_network", info.request.network) in api.calls


def test_a_missing_image_is_pulled_once_and_a_failed_pull_is_one_line() -> None:
    api = FakeAPI()
    sched = DockerScheduler("t", backend=DockerBackend(client=api))
    info = sched.submit_dryrun(
        AppDef("app", [Role("w", "reg/img:2", entrypoint="sh", num_replicas=4)]), {}
    )
    for c in info.request.containers:
        api.fail_create[c.name] = docker.errors.ImageNotFound("No such image: reg/img:2")
    with pytest.raises(SchedulerError, match="image 'reg/img:2' is not on the Docker engine") as e:
        sched.schedule(info)
    assert "pulling it failed" in str(e.value)
    assert [c for c in api.calls if c[0] == "pull"] == [("pull", "reg/img:2")]


def test_engine_errors_while_following_are_outages_or_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # an engine this process reached (a socket missing now went away: see test_wire's
    # tests of a socket never there)
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/torchx-test-engine.sock")
    monkeypatch.setattr(wire, "seen_sockets", {"/run/torchx-test-engine.sock"})
    sched = DockerScheduler("t", backend=DockerBackend(client=FakeAPI()))  # type: ignore[arg-type]
    assert isinstance(
        sched.classify_error(requests.exceptions.ConnectionError("x")), TransientSchedulerError
    )
    assert isinstance(sched.classify_error(_api_error(503, "busy")), TransientSchedulerError)
    # the one HTTP rule of every plugin (torchx.schedulers.contract.errors.transient_http_status)
    assert isinstance(sched.classify_error(_api_error(429, "slow down")), TransientSchedulerError)
    for permanent in (501, 505):
        assert type(sched.classify_error(_api_error(permanent, "no"))) is SchedulerError
    refused = sched.classify_error(_api_error(400, "bad filter"))
    assert type(refused) is SchedulerError and "bad filter" in str(refused)
    assert sched.classify_error(KeyError("not the engine's")) is None
    version = docker.errors.DockerException(
        "Error while fetching server API version: ('Connection aborted.', FileNotFoundError(2))"
    )
    assert isinstance(sched.classify_error(version), TransientSchedulerError)


def test_status_of_an_app_is_one_list_call() -> None:
    api = FakeAPI()
    api.containers_answer = [
        {
            "Id": f"id{k}",
            "Names": [f"/a-w-{k}"],
            "Image": "img",
            "Labels": {**labels.replica_labels("a", "w", k), labels.APP_NAME: "a"},
            "State": "running",
            "Status": "Up 1 second",
        }
        for k in range(8)
    ]
    desc = DockerScheduler("t", backend=DockerBackend(client=api)).describe("a")  # type: ignore[arg-type]
    assert desc is not None and desc.state.name == "RUNNING"
    assert len(desc.roles_statuses[0].replicas) == 8
    assert [c[0] for c in api.calls] == ["containers"]


def _replicas(state: str, status: str, n: int = 3) -> list[dict[str, Any]]:
    return [
        {
            "Id": f"id{k}",
            "Names": [f"/a-w-{k}"],
            "Image": "img",
            "Labels": {**labels.replica_labels("a", "w", k), labels.APP_NAME: "a"},
            "State": state,
            "Status": status,
            "Created": 1795600000 + k,
        }
        for k in range(n)
    ]


def test_times_of_a_running_app_come_from_the_list_answer() -> None:
    api = FakeAPI()
    api.containers_answer = _replicas("running", "Up 1 second")
    sched = DockerScheduler("t", backend=DockerBackend(client=api))  # type: ignore[arg-type]
    desc = sched.describe("a")
    assert desc is not None and (desc.start_time, desc.end_time) == (1795600000.0, None)
    assert [c[0] for c in api.calls] == ["containers"]
    [listed] = sched.list()
    assert (listed.start_time, listed.end_time) == (1795600000.0, None)


def test_an_ended_app_ends_when_its_last_container_exited() -> None:
    api = FakeAPI()
    api.containers_answer = _replicas("exited", "Exited (0) 1 second ago")
    desc = DockerScheduler("t", backend=DockerBackend(client=api)).describe("a")  # type: ignore[arg-type]
    assert desc is not None and desc.state.name == "SUCCEEDED"
    # the list answer says only "Exited (0) 1 second ago": each record says when
    last = datetime(2026, 11, 25, 10, 0, 2, tzinfo=UTC).timestamp() + 0.5
    assert (desc.start_time, desc.end_time) == (1795600000.0, last)
    assert sorted(c[1] for c in api.calls if c[0] == "inspect_container") == ["id0", "id1", "id2"]


def test_split_image() -> None:
    assert split_image("busybox") == ("busybox", "latest")
    assert split_image("127.0.0.1:5000/a/b:1") == ("127.0.0.1:5000/a/b", "1")
    assert split_image("127.0.0.1:5000/a/b") == ("127.0.0.1:5000/a/b", "latest")
    assert split_image("r/a@sha256:ab") == ("r/a", "sha256:ab")


# -- wait_for_change: the engine's blocking wait for a container's exit ---------------------


class WaitingAPI(FakeAPI):
    """A stand-in whose ``wait`` blocks until the test releases that container."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting: dict[str, threading.Event] = {}
        self.released: dict[str, threading.Event] = {}
        self.wait_error: BaseException | None = None
        self.lock = threading.Lock()

    def _events(self, cid: str) -> tuple[threading.Event, threading.Event]:
        with self.lock:
            return (
                self.waiting.setdefault(cid, threading.Event()),
                self.released.setdefault(cid, threading.Event()),
            )

    def wait(self, cid: str, timeout: float, condition: str) -> dict[str, Any]:
        self.calls.append(("wait", cid))
        assert condition == "not-running"
        waiting, released = self._events(cid)
        waiting.set()
        if self.wait_error is not None:
            raise self.wait_error
        assert released.wait(30), "never released"
        return {"StatusCode": 0}

    def release_when_waited(self, cid: str) -> threading.Thread:
        """Releases ``cid``'s wait once it has begun, from another thread."""
        waiting, released = self._events(cid)

        def run() -> None:
            assert waiting.wait(30)
            released.set()

        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t


def _described(api: FakeAPI, state: str = "running") -> DockerScheduler:
    api.containers_answer = _replicas(state, "Up 1 second" if state == "running" else "Created")
    sched = DockerScheduler("t", backend=DockerBackend(client=api))  # type: ignore[arg-type]
    assert sched.describe("a") is not None
    api.calls.clear()
    return sched


def test_wait_for_change_returns_when_a_running_container_stops() -> None:
    api = WaitingAPI()
    sched = _described(api)
    api.release_when_waited("id1")
    t0 = time.monotonic()
    assert sched.wait_for_change("a", 60) is True
    assert time.monotonic() - t0 < 30  # woken by the exit, not by the 60 s timeout
    assert sorted(c for c in api.calls if c[0] == "wait") == [("wait", f"id{k}") for k in range(3)]


def test_wait_for_change_keeps_to_its_timeout_and_reuses_waits_under_way() -> None:
    api = WaitingAPI()
    sched = _described(api)
    t0 = time.monotonic()
    assert sched.wait_for_change("a", 0.2) is True  # nothing stopped: it waited 0.2 s
    assert 0.2 <= time.monotonic() - t0 < 10
    assert sched.wait_for_change("a", 0.05) is True
    assert len([c for c in api.calls if c[0] == "wait"]) == 3  # one per container, reused
    for k in range(3):
        api.released.setdefault(f"id{k}", threading.Event()).set()


def test_wait_for_change_without_a_running_container_is_false_at_once() -> None:
    api = WaitingAPI()
    sched = _described(api, state="created")
    assert sched.wait_for_change("a", 60) is False
    assert api.calls == []


def test_wait_for_change_of_an_app_not_described_lists_it_once() -> None:
    api = WaitingAPI()
    api.containers_answer = _replicas("running", "Up 1 second", n=1)
    sched = DockerScheduler("t", backend=DockerBackend(client=api))  # type: ignore[arg-type]
    api.release_when_waited("id0")
    assert sched.wait_for_change("a", 60) is True
    assert [c[0] for c in api.calls] == ["containers", "wait"]


def test_wait_for_change_whose_waits_fail_is_false_so_the_caller_sleeps() -> None:
    api = WaitingAPI()
    api.wait_error = requests.ConnectionError("engine gone")
    sched = _described(api)
    assert sched.wait_for_change("a", 60) is False


class _SiblingsAPI(FakeAPI):
    """Answers each list call with the next of ``answers`` (the last one repeats)."""

    def __init__(self, answers: list[list[dict[str, Any]]], exit_codes: dict[str, int]) -> None:
        super().__init__()
        self.answers = answers
        self.exit_codes = exit_codes
        self.marker_labels: dict[str, str] = {}

    def containers(self, **kw: Any) -> list[dict[str, Any]]:
        self.calls.append(("containers", kw))
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def inspect_container(self, cid: str) -> dict[str, Any]:
        code = self.exit_codes[cid]
        state = {"Status": "exited", "ExitCode": code, "FinishedAt": "2026-11-25T10:00:00Z"}
        return {"State": state, "RestartCount": 0}

    def create_container(self, image: str = "", **kw: Any) -> dict[str, str]:
        self.marker_labels = kw["labels"]
        return super().create_container(**kw)

    def stop(self, cid: str) -> None:
        self.calls.append(("stop", cid))


def test_a_replica_that_ended_on_its_own_before_the_stop_keeps_its_state() -> None:
    def listed(states: list[str]) -> list[dict[str, Any]]:
        out = _replicas("running", "Up 1 second")
        for entry, state, code in zip(out, states, (3, 143, 0)):
            entry["State"] = state
            if state == "exited":
                entry["Status"] = f"Exited ({code}) 1 second ago"
        return out

    # w/0 failed; w/2 was running when the app was listed, and exited 0 on its own before
    # the stopped marker was made: it is left SUCCEEDED, only w/1 is stopped
    api = _SiblingsAPI(
        [listed(["exited", "running", "running"]), listed(["exited", "running", "exited"])],
        {"id0": 3, "id1": 143, "id2": 0},
    )
    sched = DockerScheduler("t", backend=DockerBackend(client=api))  # type: ignore[arg-type]
    sched.describe("a")
    assert [c[1] for c in api.calls if c[0] == "stop"] == ["id1"]
    assert json.loads(api.marker_labels[labels.ENDED_BEFORE]) == ["w/0", "w/2"]


def test_every_replica_is_given_the_apps_handle_in_torchx_job_id() -> None:
    sched = DockerScheduler("t", backend=DockerBackend(client=FakeAPI()))
    # a value the role gives is replaced, as upstream's Runner did
    role = Role("w", "img", entrypoint="sh", num_replicas=2, env={"TORCHX_JOB_ID": "mine"})
    info = sched.submit_dryrun(AppDef("app", [role]), {})
    handle = f"docker://t/{info.request.app_id}"
    assert [c.config["environment"]["TORCHX_JOB_ID"] for c in info.request.containers] == [
        handle,
        handle,
    ]
    # the AppDef kept beside the job leaves it out (every request is given it)
    kept = info.request.containers[0].config["labels"]["torchx.pytorch.org/appdef"]
    assert '"env": {}' in kept


def test_describe_gives_back_the_run_options_the_label_keeps_masked() -> None:
    api = FakeAPI()
    sched = DockerScheduler("t", backend=DockerBackend(client=api))
    app = AppDef("app", [Role("w", "img", entrypoint="sh")])
    cfg = {"env": {"HF_TOKEN": "hf-secret-1", "LR": "1"}, "copy_env": ["DB_*"], "stop_grace": 3}
    info = sched.submit_dryrun(app, cfg)
    label = info.request.containers[0].config["labels"][labels.APPDEF]
    assert "hf-secret-1" not in label  # a label anyone who may inspect the container reads
    api.containers_answer = _replicas("running", "Up 1 second", 1)
    api.containers_answer[0]["Labels"][labels.APPDEF] = label
    desc = sched.describe("a")
    assert desc is not None and desc.roles == app.roles
    assert desc.run_options["env"] == {"HF_TOKEN": "****", "LR": "1"}
    assert desc.run_options["copy_env"] == ["DB_*"] and desc.run_options["stop_grace"] == 3
    assert list(desc.run_options) == sorted(desc.run_options)
