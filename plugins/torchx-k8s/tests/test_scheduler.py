"""The scheduler's API calls and the status rules, against a stand-in behind the real client."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from fakeapi import FakeApi, api_error, pod
from torchx_k8s import labels
from torchx_k8s.backend import K8sBackend
from torchx_k8s.scheduler import KubernetesScheduler, create_scheduler

from torchx.schedulers.contract.api import Stream
from torchx.schedulers.contract.errors import (
    AuthenticationError,
    SchedulerError,
    TransientSchedulerError,
)
from torchx.specs import NONE, AppDef, AppState, Resource, Role
from torchx.specs.errors import SpecError
from torchx.specs.overlays import set_overlay

VOLCANO_JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets"


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def sched(api: FakeApi) -> KubernetesScheduler:
    return create_scheduler("s", backend=K8sBackend(api))


def app(replicas: int = 2, roles: int = 1) -> AppDef:
    return AppDef(
        "trainer",
        [
            Role(
                f"r{i}",
                "img:1",
                entrypoint="echo",
                args=["hi"],
                num_replicas=replicas,
                resource=Resource(1, 0, 512),
            )
            for i in range(roles)
        ],
    )


def submit(sched: KubernetesScheduler, a: AppDef, **cfg: Any) -> str:
    return sched.schedule(sched.submit_dryrun(a, cfg))


def set_phase(api: FakeApi, app_id: str, phase: str, **extra: Any) -> None:
    ns, name = app_id.split(":")[:2]
    api.objects[f"{VOLCANO_JOBS.format(ns=ns)}/{name}"]["status"] = {
        "state": {"phase": phase},
        **extra,
    }


# -- submitting --------------------------------------------------------------------------


def test_submit_checks_one_pod_per_role_then_creates_the_job(
    sched: KubernetesScheduler, api: FakeApi
) -> None:
    app_id = submit(sched, app(replicas=3, roles=2), namespace="team-a")
    ns, name = app_id.split(":")
    assert ns == "team-a"
    posts = [(m, p, q) for m, p, q, _ in api.calls if m == "POST"]
    assert (
        posts[:2]
        == [
            (
                "POST",
                "/api/v1/namespaces/team-a/pods",
                {"dryRun": "All", "fieldValidation": "Strict"},
            )
        ]
        * 2
    )
    assert posts[2][1] == VOLCANO_JOBS.format(ns="team-a") and len(posts) == 3
    assert f"{VOLCANO_JOBS.format(ns='team-a')}/{name}" in api.objects


def test_an_invalid_pod_is_one_line_naming_the_role(
    sched: KubernetesScheduler, api: FakeApi
) -> None:
    api.fail_next = [api_error(422, 'Pod "x" is invalid: spec.containers[0].image: Required value')]
    with pytest.raises(SpecError) as e:
        submit(sched, app())
    assert "role 'r0'" in str(e.value) and "spec.containers[0].image" in str(e.value)
    assert "\n" not in str(e.value)
    assert not api.objects  # nothing was created


def test_a_field_the_server_does_not_know_is_refused_before_anything_is_created(
    sched: KubernetesScheduler, api: FakeApi
) -> None:
    # a server older than fieldValidation=Strict answers the dry run without the field
    a = app()
    set_overlay(a.roles[0], "kubernetes", "V1Pod", {"spec": {"restartPolicyy": "Never"}})
    api.unknown_pod_fields = {"restartPolicyy"}
    with pytest.raises(SpecError) as e:
        submit(sched, a)
    assert "role 'r0'" in str(e.value) and "spec.restartPolicyy" in str(e.value), e.value
    assert "\n" not in str(e.value)
    assert not api.objects  # nothing was created


def test_a_strict_refusal_is_one_line_naming_the_role(
    sched: KubernetesScheduler, api: FakeApi
) -> None:
    # a server with fieldValidation=Strict refuses the field itself (400)
    api.fail_next = [api_error(400, 'strict decoding error: unknown field "spec.restartPolicyy"')]
    with pytest.raises(SpecError) as e:
        submit(sched, app())
    assert "role 'r0'" in str(e.value) and "spec.restartPolicyy" in str(e.value), e.value
    assert not api.objects


def test_validate_spec_false_makes_one_call(sched: KubernetesScheduler, api: FakeApi) -> None:
    submit(sched, app(), validate_spec=False)
    assert [m for m, *_ in api.calls] == ["POST"]


def test_a_create_that_failed_transiently_is_not_made_twice(
    sched: KubernetesScheduler, api: FakeApi
) -> None:
    info = sched.submit_dryrun(app(), {"validate_spec": False})
    # the server made it, then the answer was lost (503): the retry finds it (409), done
    path = VOLCANO_JOBS.format(ns="default")
    api.objects[f"{path}/{info.request.name}"] = info.request.resource
    api.fail_next = [api_error(503, "etcd leader changed")]
    assert sched.schedule(info) == info.request.app_id
    assert [m for m, *_ in api.calls] == ["POST", "POST"]


def test_a_refused_create_is_one_line_and_a_missing_crd_says_so(
    sched: KubernetesScheduler, api: FakeApi
) -> None:
    api.fail_next = [api_error(404, "the server could not find the requested resource")]
    with pytest.raises(SchedulerError) as e:
        submit(sched, app(), validate_spec=False)
    assert "Job CRD (jobs.batch.volcano.sh) installed" in str(e.value) and "flavour=jobset" in str(
        e.value
    )


def test_throttling_is_retried_after_its_retry_after(sched: KubernetesScheduler) -> None:
    err = sched.classify_error(api_error(429, "slow down", {"Retry-After": "3"}))
    assert isinstance(err, TransientSchedulerError) and err.retry_after == 3.0
    assert isinstance(sched.classify_error(api_error(500, "boom")), TransientSchedulerError)
    forbidden = sched.classify_error(
        api_error(403, 'jobs.batch.volcano.sh is forbidden: User "u" cannot create')
    )
    assert type(forbidden) is SchedulerError and "python -m torchx_k8s rbac" in str(forbidden)
    import urllib3

    unreachable = sched.classify_error(urllib3.exceptions.MaxRetryError(None, "/", "refused"))
    assert isinstance(unreachable, TransientSchedulerError)


def test_credentials_the_api_server_refuses_are_an_authentication_error(
    sched: KubernetesScheduler,
) -> None:
    """401 (a token expired or revoked), and 403 to ``system:anonymous`` (no credentials
    it could read): the credentials, not the app, so ``run --wait`` and ``log -t`` exit 4;
    a 403 to a user it knows is RBAC's refusal, as before."""
    expired = sched.classify_error(api_error(401, "Unauthorized"))
    assert isinstance(expired, AuthenticationError)
    assert str(expired) == (
        "the Kubernetes API server did not accept the credentials (401): Unauthorized; "
        "renew the kubeconfig's credentials (KUBECONFIG)"
    )
    anonymous = sched.classify_error(
        api_error(403, 'pods is forbidden: User "system:anonymous" cannot list resource "pods"')
    )
    assert isinstance(anonymous, AuthenticationError) and "(403)" in str(anonymous)
    forbidden = sched.classify_error(api_error(403, 'pods is forbidden: User "u" cannot list'))
    assert not isinstance(forbidden, AuthenticationError)
    assert isinstance(forbidden, SchedulerError) and "torchx_k8s rbac" in str(forbidden)


# -- describe ------------------------------------------------------------------------------


def test_describe_of_128_replicas_is_two_calls(sched: KubernetesScheduler, api: FakeApi) -> None:
    app_id = submit(sched, app(replicas=128), validate_spec=False)
    name = app_id.split(":")[1]
    set_phase(api, app_id, "Running")
    api.pods = [pod(name, 0, k, "Running") for k in range(128)]
    api.calls.clear()
    d = sched.describe(app_id)
    assert d is not None and d.state == AppState.RUNNING
    assert len(api.calls) == 2
    assert api.calls[1][2]["labelSelector"] == f"{labels.INSTANCE}={name}"
    [role] = d.roles_statuses
    assert [r.id for r in role.replicas] == list(range(128))
    assert role.replicas[5].hostname == f"{name}-r0-5-0.{name}"
    assert d.roles[0].num_replicas == 128 and d.name == "trainer"  # the AppDef, given back
    assert d.run_options["validate_spec"] is False  # and the run options beside it
    assert d.run_options["flavour"] == "volcano" and list(d.run_options) == sorted(d.run_options)


def test_the_run_options_are_kept_masked_in_the_annotation(
    sched: KubernetesScheduler, api: FakeApi
) -> None:
    cfg = {"validate_spec": False, "secret_env": {"HF_TOKEN": "hf-creds/token"}}
    app_id = submit(sched, app(), **cfg)
    ns, name = app_id.split(":")[:2]
    kept = api.objects[f"{VOLCANO_JOBS.format(ns=ns)}/{name}"]["metadata"]["annotations"]
    assert "hf-creds" not in kept[labels.APPDEF]  # whoever may read the job reads it
    set_phase(api, app_id, "Running")
    d = sched.describe(app_id)
    assert d is not None and d.run_options["secret_env"] == "****"


@pytest.mark.parametrize(
    ("phase", "state"),
    [
        ("Pending", AppState.PENDING),
        ("Running", AppState.RUNNING),
        ("Restarting", AppState.RUNNING),
        ("Completed", AppState.SUCCEEDED),
        ("Failed", AppState.FAILED),
        ("Terminated", AppState.FAILED),
        ("Aborted", AppState.CANCELLED),
    ],
)
def test_volcano_phases(
    sched: KubernetesScheduler, api: FakeApi, phase: str, state: AppState
) -> None:
    app_id = submit(sched, app(), validate_spec=False)
    set_phase(api, app_id, phase, retryCount=2)
    d = sched.describe(app_id)
    assert d is not None and d.state == state and d.num_restarts == 2


def test_restarts_are_those_volcano_made(sched: KubernetesScheduler, api: FakeApi) -> None:
    from torchx.specs import RetryPolicy

    a = app()
    a.roles[0].max_retries = 2
    a.roles[0].retry_policy = RetryPolicy.APPLICATION
    app_id = submit(sched, a, validate_spec=False)
    set_phase(api, app_id, "Running", retryCount=1)
    assert sched.describe(app_id).num_restarts == 1  # type: ignore[union-attr]
    # the third failure: retryCount reaches maxRetry (3) and the job fails, 2 restarts made
    set_phase(api, app_id, "Failed", retryCount=3)
    assert sched.describe(app_id).num_restarts == 2  # type: ignore[union-attr]


def test_no_status_yet_is_pending_saying_why(sched: KubernetesScheduler) -> None:
    d = sched.describe(submit(sched, app(), validate_spec=False))
    assert d is not None and d.state == AppState.PENDING and "Volcano controller" in d.msg


def test_exit_codes_and_why_pods_cannot_start(sched: KubernetesScheduler, api: FakeApi) -> None:
    app_id = submit(sched, app(replicas=3), validate_spec=False)
    name = app_id.split(":")[1]
    set_phase(api, app_id, "Running")
    api.pods = [
        pod(name, 0, 0, "Failed", exit_code=3, age=1),
        pod(name, 0, 0, "Succeeded", exit_code=0, age=0),  # an older attempt
        pod(name, 0, 1, "Pending", waiting="ImagePullBackOff"),
        pod(
            name,
            0,
            2,
            "Pending",
            unschedulable="0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
        ),
    ]
    d = sched.describe(app_id)
    assert d is not None
    r0, r1, r2 = d.roles_statuses[0].replicas
    assert (r0.state, r0.exit_code) == (AppState.FAILED, 3)
    assert r1.state == AppState.PENDING and r2.state == AppState.PENDING
    assert "r0/0" in d.msg and "exited with 3" in d.msg
    assert "ImagePullBackOff: pull access denied" in d.msg
    assert "Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu." in d.msg


def test_a_replica_whose_node_stopped_reporting_is_unknown(
    sched: KubernetesScheduler, api: FakeApi
) -> None:
    app_id = submit(sched, app(replicas=2), validate_spec=False)
    name = app_id.split(":")[1]
    set_phase(api, app_id, "Running")
    lost, fine = pod(name, 0, 0, "Running"), pod(name, 0, 1, "Running")
    lost["spec"]["nodeName"] = "node-a"
    # the node lifecycle controller marks the pods of a node gone quiet not Ready; the
    # kubelet's own ContainersReady stays
    lost["status"]["conditions"] = [
        {"type": "Ready", "status": "False"},
        {"type": "ContainersReady", "status": "True"},
    ]
    api.pods = [lost, fine]
    d = sched.describe(app_id)
    assert d is not None and d.state == AppState.UNKNOWN, d
    r0, r1 = d.roles_statuses[0].replicas
    assert (r0.state, r1.state) == (AppState.UNKNOWN, AppState.RUNNING)
    assert "r0/0" in d.msg and "node node-a not ready" in d.msg
    # Ready Unknown (newer node controllers) says the same
    lost["status"]["conditions"][0]["status"] = "Unknown"
    assert sched.describe(app_id).state == AppState.UNKNOWN  # type: ignore[union-attr]
    # a pod held by a readiness gate is not ready on its own node: still RUNNING
    lost["status"]["conditions"][0]["status"] = "False"
    lost["spec"]["readinessGates"] = [{"conditionType": "example.com/ready"}]
    assert sched.describe(app_id).state == AppState.RUNNING  # type: ignore[union-attr]
    # the node back: Ready again, RUNNING
    del lost["spec"]["readinessGates"]
    lost["status"]["conditions"][0]["status"] = "True"
    assert sched.describe(app_id).state == AppState.RUNNING  # type: ignore[union-attr]
    # an app that ended stays ended whatever its pods' conditions
    lost["status"]["conditions"][0]["status"] = "False"
    set_phase(api, app_id, "Failed")
    assert sched.describe(app_id).state == AppState.FAILED  # type: ignore[union-attr]


def test_a_pull_error_names_the_image(sched: KubernetesScheduler, api: FakeApi) -> None:
    app_id = submit(sched, app(), validate_spec=False)
    name = app_id.split(":")[1]
    stuck = pod(name, 0, 0, "Pending", waiting="ErrImagePull")
    stuck["status"]["containerStatuses"][0]["image"] = "torchx-dev/nope:0"
    api.pods = [stuck]
    d = sched.describe(app_id)
    assert d is not None and d.state == AppState.PENDING
    assert "ErrImagePull: image torchx-dev/nope:0: pull access denied" in d.msg


def test_a_volcano_gang_that_cannot_be_placed_says_why(
    sched: KubernetesScheduler, api: FakeApi
) -> None:
    app_id = submit(sched, app(), validate_spec=False)
    name = app_id.split(":")[1]
    set_phase(api, app_id, "Pending")
    assert sched.describe(app_id).msg == NONE  # type: ignore[union-attr]  # no PodGroup yet
    why = "1/0 tasks in gang unschedulable: pod group is not ready, 1 minAvailable"
    podgroups = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"
    api.objects[f"{podgroups}/{name}"] = {
        "metadata": {"name": name},
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                 "message": why},
            ],
        },
    }  # fmt: skip
    d = sched.describe(app_id)
    assert d is not None and d.state == AppState.PENDING
    assert d.msg == f"PodGroup {name}: Unschedulable (NotEnoughResources): {why}"
    set_phase(api, app_id, "Running")  # placed: the PodGroup is not read any more
    api.calls.clear()
    sched.describe(app_id)
    assert not [c for c in api.calls if "podgroups" in c[1]]


def test_an_unknown_app_is_none(sched: KubernetesScheduler) -> None:
    assert sched.describe("default:nope-1a2b3c4d5e") is None
    assert not sched.exists("default:nope-1a2b3c4d5e")


def test_an_app_made_by_upstream_is_described_from_its_pods(
    sched: KubernetesScheduler, api: FakeApi
) -> None:
    path = VOLCANO_JOBS.format(ns="default")
    api.objects[f"{path}/up-x1"] = {
        "metadata": {"name": "up-x1"},
        "status": {"state": {"phase": "Running"}},
    }
    api.pods = [pod("up-x1", 0, k, "Running", role="trainer") for k in range(2)]
    d = sched.describe("default:up-x1")
    assert d is not None and d.state == AppState.RUNNING and d.name == "up-x1"
    assert [r.role for r in d.roles_statuses] == ["trainer"] and len(
        d.roles_statuses[0].replicas
    ) == 2


def test_jobset_states(sched: KubernetesScheduler, api: FakeApi) -> None:
    app_id = submit(sched, app(), validate_spec=False, flavour="jobset")
    ns, name, _ = app_id.split(":")
    obj = api.objects[f"{JOBSETS.format(ns=ns)}/{name}"]
    assert sched.describe(app_id).state == AppState.PENDING  # type: ignore[union-attr]
    obj["status"] = {"restarts": 1, "conditions": [{"type": "Completed", "status": "True"}]}
    d = sched.describe(app_id)
    assert d is not None and d.state == AppState.SUCCEEDED and d.num_restarts == 1
    obj["status"] = {
        "terminalState": "Failed",
        "conditions": [{"type": "Failed", "status": "True", "message": "jobset failed"}],
    }
    assert sched.describe(app_id).state == AppState.FAILED  # type: ignore[union-attr]


# -- list, cancel, delete ----------------------------------------------------------------


def test_list_selects_this_plugins_objects_of_both_flavours(
    sched: KubernetesScheduler, api: FakeApi
) -> None:
    a = submit(sched, app(), validate_spec=False)
    b = submit(sched, app(), validate_spec=False, flavour="jobset")
    api.calls.clear()
    found = {x.app_id: x for x in sched.list({})}
    assert set(found) == {a, b} and found[a].name == "trainer"
    assert all(
        q["labelSelector"] == "app.kubernetes.io/managed-by=torchx.pytorch.org"
        for _, _, q, _ in api.calls
    )


def test_cancel_aborts_a_volcano_job_and_keeps_it(sched: KubernetesScheduler, api: FakeApi) -> None:
    app_id = submit(sched, app(), validate_spec=False)
    set_phase(api, app_id, "Running", retryCount=1)
    sched.cancel(app_id)
    d = sched.describe(app_id)
    assert d is not None and d.state == AppState.CANCELLED and d.num_restarts == 1
    assert d.msg == "cancelled"  # `torchx cancel` prints one line, not torchx's own reason
    patch = [(p, body) for m, p, _, body in api.calls if m == "PATCH"]
    assert patch[0][0].endswith("/status") and patch[0][1]["status"]["state"]["phase"] == "Aborted"
    sched.cancel(app_id)  # idempotent: an ended job is left alone
    assert len([c for c in api.calls if c[0] == "PATCH"]) == 1


def test_cancel_writes_again_after_a_conflict(sched: KubernetesScheduler, api: FakeApi) -> None:
    app_id = submit(sched, app(), validate_spec=False)
    set_phase(api, app_id, "Running")
    # exists (GET), the job (GET), then the status patch: the server gave up on a conflict
    api.fail_call = {len(api.calls) + 3: api_error(409, "the object has been modified")}
    sched.cancel(app_id)
    assert sched.describe(app_id).state == AppState.CANCELLED  # type: ignore[union-attr]
    assert not api.fail_call  # the conflict was answered
    assert len([c for c in api.calls if c[0] == "PATCH"]) == 2


def test_cancel_suspends_a_jobset(sched: KubernetesScheduler, api: FakeApi) -> None:
    app_id = submit(sched, app(), validate_spec=False, flavour="jobset")
    sched.cancel(app_id)
    d = sched.describe(app_id)
    assert d is not None and d.state == AppState.CANCELLED and d.msg == "cancelled"


def test_cancel_of_a_jobset_patches_again_after_a_conflict(
    sched: KubernetesScheduler, api: FakeApi
) -> None:
    app_id = submit(sched, app(), validate_spec=False, flavour="jobset")
    # the server gave up its retries on a conflict with the controller, twice
    api.fail_call = {
        len(api.calls) + 2: api_error(409, "the object has been modified"),
        len(api.calls) + 3: api_error(409, "the object has been modified"),
    }
    sched.cancel(app_id)
    assert not api.fail_call  # both conflicts were answered
    assert len([c for c in api.calls if c[0] == "PATCH"]) == 3
    assert sched.describe(app_id).state == AppState.CANCELLED  # type: ignore[union-attr]


def test_delete_removes_the_object(sched: KubernetesScheduler, api: FakeApi) -> None:
    app_id = submit(sched, app(), validate_spec=False)
    sched.delete(app_id)
    assert sched.describe(app_id) is None
    [(_, _, query, _)] = [c for c in api.calls if c[0] == "DELETE"]
    assert query["propagationPolicy"] == "Background"
    sched.delete(app_id)  # a no-op once gone


# -- logs ----------------------------------------------------------------------------------


def test_logs_are_read_from_the_newest_pod_of_the_replica(
    sched: KubernetesScheduler, api: FakeApi
) -> None:
    app_id = submit(sched, app(), validate_spec=False)
    name = app_id.split(":")[1]
    api.pods = [pod(name, 0, 1, "Failed", age=0), pod(name, 0, 1, "Running", age=5)]
    api.pods[1]["metadata"]["name"] = "newest"
    api.logs["newest"] = (
        b"2026-11-25T00:00:01Z one\n2026-11-25T00:00:02Z two\n2026-11-25T00:00:03Z three"
    )
    assert list(sched.log_iter(app_id, "r0", 1)) == ["one\n", "two\n", "three"]
    assert list(sched.log_iter(app_id, "r0", 1, regex="t.o")) == ["two\n"]
    until = datetime(2026, 11, 25, 0, 0, 2, tzinfo=UTC)
    assert list(sched.log_iter(app_id, "r0", 1, until=until)) == ["one\n", "two\n"]
    log_call = [q for m, p, q, _ in api.calls if p.endswith("/newest/log")][-1]
    assert log_call["timestamps"] is True and log_call["container"] == "r0-1"


def test_lines_cut_by_the_streams_chunks_come_whole(
    sched: KubernetesScheduler, api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("torchx_k8s.logs.LOG_CHUNK", 7)  # HTTP chunks end anywhere
    app_id = submit(sched, app(), validate_spec=False)
    name = app_id.split(":")[1]
    api.pods = [pod(name, 0, 0, "Succeeded", exit_code=0)]
    long = "x" * 50
    api.logs[f"{name}-r0-0-0"] = f"2026-11-25T00:00:01Z a b\n2026-11-25T00:00:02Z {long}\n".encode()
    assert list(sched.log_iter(app_id, "r0", 0)) == ["a b\n", f"{long}\n"]


def test_a_long_line_cut_into_pieces_comes_back_whole(
    sched: KubernetesScheduler, api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the kubelet sends each 16 KiB piece of a long line with its own timestamp
    monkeypatch.setattr("torchx_k8s.logs.LOG_CHUNK", 5000)
    app_id = submit(sched, app(), validate_spec=False)
    name = app_id.split(":")[1]
    api.pods = [pod(name, 0, 0, "Succeeded", exit_code=0)]
    text = ("é" + "x" * 16382).encode() * 3 + b"end"  # a piece ends inside the last "é"
    pieces = [text[i : i + 16384] for i in range(0, len(text), 16384)]
    stamps = [f"2026-11-25T00:00:0{i + 1}.123456789Z ".encode() for i in range(len(pieces))]
    long = b"".join(s + p for s, p in zip(stamps, pieces, strict=True))
    api.logs[f"{name}-r0-0-0"] = (
        b"2026-11-25T00:00:00Z before\n" + long + b"\n2026-11-25T00:00:09Z after\n"
    )
    got = list(sched.log_iter(app_id, "r0", 0))
    assert got == ["before\n", text.decode() + "\n", "after\n"]
    # the window reads the time the line began at
    until = datetime(2026, 11, 25, 0, 0, 1, 500000, tzinfo=UTC)  # before the 2nd piece's
    assert list(sched.log_iter(app_id, "r0", 0, until=until)) == got[:2]
    # a timestamp-like text elsewhere in a line is the user's
    line = b"2026-11-25T00:00:00Z " + b"y" * 100 + b"2026-11-25T00:00:01Z z\n"
    api.logs[f"{name}-r0-0-0"] = line
    assert list(sched.log_iter(app_id, "r0", 0)) == [line.decode().split(" ", 1)[1]]


def test_log_streams_are_combined_only(sched: KubernetesScheduler) -> None:
    app_id = submit(sched, app(), validate_spec=False)
    with pytest.raises(ValueError, match="combined"):
        sched.log_iter(app_id, "r0", 0, streams=Stream.STDERR)


def test_a_replica_without_pods_has_no_lines_yet(sched: KubernetesScheduler) -> None:
    app_id = submit(sched, app(), validate_spec=False)
    assert list(sched.log_iter(app_id, "r0", 0)) == []


def test_an_unknown_app_has_no_log(sched: KubernetesScheduler) -> None:
    with pytest.raises(SpecError, match="no kubernetes app default:nope-1a2b3c4d5e"):
        sched.log_iter("default:nope-1a2b3c4d5e", "r0", 0)


def test_a_container_waiting_to_start_has_no_lines(
    sched: KubernetesScheduler, api: FakeApi
) -> None:
    app_id = submit(sched, app(), validate_spec=False)
    name = app_id.split(":")[1]
    api.pods = [pod(name, 0, 0, "Pending", waiting="ContainerCreating")]
    assert list(sched.log_iter(app_id, "r0", 0)) == []
    assert not [p for _, p, _, _ in api.calls if p.endswith("/log")]


def test_following_waits_for_the_container_and_ends_with_the_app(
    sched: KubernetesScheduler, api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id = submit(sched, app(), validate_spec=False)
    name = app_id.split(":")[1]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 1:  # the pod appears after the first wait
            api.pods = [pod(name, 0, 0, "Running")]
            api.logs[f"{name}-r0-0-0"] = b"2026-11-25T00:00:01Z up\n"
        else:  # the app ends while the follower waits for it, after its log ended
            set_phase(api, app_id, "Completed")

    monkeypatch.setattr("torchx_k8s.logs.time.sleep", sleep)
    assert list(sched.log_iter(app_id, "r0", 0, should_tail=True)) == ["up\n"]
    assert len(sleeps) == 2  # waited for the pod, then (log ended) for the app to end
    log_query = [q for _, p, q, _ in api.calls if p.endswith("/log")][-1]
    assert log_query["follow"] is True
    # an app that ended with no pod for the replica: the follow ends, no line
    api.pods = []
    assert list(sched.log_iter(app_id, "r0", 1, should_tail=True)) == []


# -- workspaces ----------------------------------------------------------------------------


def test_a_workspace_needs_torchx_docker_and_an_image_repo(
    sched: KubernetesScheduler, tmp_path: Any
) -> None:
    import importlib.util

    from torchx.specs.errors import InvalidRunConfigException

    (tmp_path / "train.py").write_text("print('hi')\n")
    # the run option is asked for first, whether torchx-docker is installed or not
    with pytest.raises(InvalidRunConfigException, match="needs the run option 'image_repo'"):
        sched.prepare(app(), {}, workspace=str(tmp_path), dryrun=True)
    cfg: dict[str, Any] = {"image_repo": "registry.example.com/team"}
    if importlib.util.find_spec("torchx_docker") is None:
        with pytest.raises(SpecError, match=r"pip install 'torchx-k8s\[docker\]'"):
            sched.prepare(app(), cfg, workspace=str(tmp_path), dryrun=True)
        return
    # with a registry: the dry run names the image the submission will build, builds nothing
    info = sched.prepare(app(), cfg, workspace=str(tmp_path), dryrun=True)
    image = info.request.resource["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["image"]
    assert image.startswith("registry.example.com/team:ws-"), image


def test_an_object_being_deleted_is_gone(sched: KubernetesScheduler, api: FakeApi) -> None:
    app_id = submit(sched, app(), validate_spec=False)
    ns, name = app_id.split(":")
    api.objects[f"{VOLCANO_JOBS.format(ns=ns)}/{name}"]["metadata"]["deletionTimestamp"] = "x"
    assert sched.describe(app_id) is None and sched.list({}) == []


def test_every_replica_is_given_the_apps_handle_in_torchx_job_id(
    sched: KubernetesScheduler,
) -> None:
    info = sched.submit_dryrun(app(replicas=2, roles=2), {"validate_spec": False})
    envs = [
        {e["name"]: e.get("value") for e in task["template"]["spec"]["containers"][0]["env"]}
        for task in info.request.resource["spec"]["tasks"]
    ]
    # the app_id macro is the job's name (as upstream's: the handle's id adds the namespace)
    assert [env["TORCHX_JOB_ID"] for env in envs] == [f"kubernetes://s/{info.request.name}"] * 4
