"""The ``kubernetes_mcad`` scheduler's API calls and status rules, against the stand-in behind the
real client (tests/fakeapi.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fakeapi import FakeApi, api_error, pod
from torchx_k8s import labels
from torchx_k8s.awstatus import CANCELLED
from torchx_k8s.backend import K8sBackend
from torchx_k8s.mcad import McadScheduler, create_scheduler

from torchx.schedulers.contract.capabilities import Capability
from torchx.schedulers.contract.errors import SchedulerError
from torchx.specs import AppDef, AppState, Resource, Role
from torchx.specs.plugins import get_registry

AW = "/apis/workload.codeflare.dev/{version}/namespaces/{ns}/appwrappers"
PODS = "/api/v1/namespaces/{ns}/pods"


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def sched(api: FakeApi) -> McadScheduler:
    return create_scheduler("s", backend=K8sBackend(api))


def app(replicas: int = 2, roles: int = 1, retries: int = 0) -> AppDef:
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
                max_retries=retries,
            )
            for i in range(roles)
        ],
    )


def submit(sched: McadScheduler, a: AppDef, **cfg: Any) -> str:
    cfg.setdefault("validate_spec", False)
    return sched.schedule(sched.submit_dryrun(a, cfg))


def obj(api: FakeApi, app_id: str) -> dict[str, Any]:
    ns, name, *rest = app_id.split(":")
    version = "v1beta2" if rest else "v1beta1"
    return api.objects[f"{AW.format(version=version, ns=ns)}/{name}"]


def set_status(api: FakeApi, app_id: str, **status: Any) -> None:
    obj(api, app_id)["status"] = status


def name_of(app_id: str) -> str:
    return app_id.split(":")[1]


# -- registration, submitting ------------------------------------------------------------------


def test_kubernetes_mcad_is_registered_through_the_plugins_hook() -> None:
    sched = get_registry().scheduler_factory("kubernetes_mcad")("sess")
    assert isinstance(sched, McadScheduler) and sched.backend == "kubernetes_mcad"
    assert set(McadScheduler.missing_capabilities) == {Capability.SEPARATE_STREAMS}


def test_submit_checks_one_pod_per_role_then_creates_the_appwrapper(
    sched: McadScheduler, api: FakeApi
) -> None:
    app_id = submit(sched, app(replicas=3, roles=2), namespace="team-a", validate_spec=True)
    assert app_id == f"team-a:{name_of(app_id)}"
    posts = [(p, q) for m, p, q, _ in api.calls if m == "POST"]
    assert (
        posts[:2]
        == [(PODS.format(ns="team-a"), {"dryRun": "All", "fieldValidation": "Strict"})] * 2
    )
    assert posts[2][0] == AW.format(version="v1beta1", ns="team-a") and len(posts) == 3
    assert obj(api, app_id)["kind"] == "AppWrapper"


def test_v1beta2_is_created_and_read_through_v1beta2(sched: McadScheduler, api: FakeApi) -> None:
    app_id = submit(sched, app(), appwrapper_version="v1beta2")
    assert app_id.endswith(":v1beta2")
    assert obj(api, app_id)["apiVersion"] == "workload.codeflare.dev/v1beta2"
    api.calls.clear()
    assert sched.describe(app_id) is not None
    assert api.calls[0][1].startswith(AW.format(version="v1beta2", ns="default"))


def test_a_failed_submit_removes_what_it_created(sched: McadScheduler, api: FakeApi) -> None:
    info = sched.submit_dryrun(app(), {"validate_spec": False})
    # the first create made the AppWrapper but its answer was lost (503); the retry is
    # refused (403): the submit fails, and must not leave the AppWrapper behind
    api.lost_answers = [api_error(503, "etcd leader changed")]
    api.fail_call = {2: api_error(403, "appwrappers is forbidden")}
    with pytest.raises(SchedulerError) as e:
        sched.schedule(info)
    assert "\n" not in str(e.value) and "forbidden" in str(e.value)
    assert not api.objects
    assert [m for m, *_ in api.calls] == ["POST", "POST", "DELETE"]


def test_a_refused_submit_creates_nothing_and_deletes_nothing(
    sched: McadScheduler, api: FakeApi
) -> None:
    api.fail_next = [api_error(422, "spec.resources: Required value")]
    with pytest.raises(SchedulerError, match="Required value"):
        submit(sched, app())
    assert not api.objects and [m for m, *_ in api.calls] == ["POST"]


@pytest.mark.parametrize(
    ("version", "hint"),
    [("v1beta1", "appwrapper_version=v1beta2"), ("v1beta2", "appwrapper_version=v1beta1")],
)
def test_a_missing_crd_says_which_controller_serves_which_version(
    sched: McadScheduler, api: FakeApi, version: str, hint: str
) -> None:
    api.fail_next = [api_error(404, "the server could not find the requested resource")]
    with pytest.raises(SchedulerError) as e:
        submit(sched, app(), appwrapper_version=version)
    assert "appwrappers.workload.codeflare.dev" in str(e.value) and hint in str(e.value)


# -- status ------------------------------------------------------------------------------------

P, R, S, F, C, U = (
    AppState.PENDING,
    AppState.RUNNING,
    AppState.SUCCEEDED,
    AppState.FAILED,
    AppState.CANCELLED,
    AppState.UNKNOWN,
)
#: the pods of a 2-replica app, by situation
PODS_BY = {
    "none": [],
    "pending": ["Pending", "Pending"],
    "running": ["Running", "Pending"],
    "succeeded": ["Succeeded", "Succeeded"],
    "failed": ["Failed", "Running"],
}
SITUATIONS = list(PODS_BY)
#: the controller's state -> the app's state in each pod situation (no retries)
V1BETA1 = {
    None: [P, P, R, S, F],
    "Pending": [P, P, R, S, F],
    "Running": [R, R, R, S, F],
    "RunningHoldCompletion": [R, R, R, S, F],
    "Completed": [S] * 5,
    "Failed": [F] * 5,
    "Deleted": [C] * 5,
    "Surprise": [U, U, U, S, F],
}
V1BETA2 = {
    None: [P, P, R, S, F],
    "Suspended": [P, P, R, S, F],
    "Resuming": [P, P, R, S, F],
    "Suspending": [P, P, R, S, F],
    "Running": [R, R, R, S, F],
    "Resetting": [R, R, R, S, F],
    "Succeeded": [S] * 5,
    "Failed": [F] * 5,
    "Terminating": [C] * 5,
}
TABLE = [
    (version, state, situation, expected[i])
    for version, table in (("v1beta1", V1BETA1), ("v1beta2", V1BETA2))
    for state, expected in table.items()
    for i, situation in enumerate(SITUATIONS)
]


def with_pods(api: FakeApi, app_id: str, phases: list[str]) -> None:
    name = name_of(app_id)
    api.pods = [
        pod(name, 0, k, phase, exit_code={"Failed": 1, "Succeeded": 0}.get(phase))
        for k, phase in enumerate(phases)
    ]


@pytest.mark.parametrize(("version", "state", "situation", "expected"), TABLE)
def test_the_app_state_from_the_appwrappers_state_and_its_pods(
    sched: McadScheduler,
    api: FakeApi,
    version: str,
    state: str | None,
    situation: str,
    expected: AppState,
) -> None:
    app_id = submit(sched, app(), appwrapper_version=version)
    if state is not None:
        set_status(api, app_id, **({"phase": state} if version == "v1beta2" else {"state": state}))
    with_pods(api, app_id, PODS_BY[situation])
    d = sched.describe(app_id)
    assert d is not None and d.state == expected
    [listed] = sched.list({"appwrapper_version": version})
    assert listed.state == expected  # list says what describe says


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_a_failed_replica_with_restarts_left_keeps_the_app_running(
    sched: McadScheduler, api: FakeApi, version: str
) -> None:
    app_id = submit(sched, app(retries=2), appwrapper_version=version)
    key = "resettingCount" if version == "v1beta2" else "restarts"
    phase = {"phase": "Running"} if version == "v1beta2" else {"state": "Running"}
    with_pods(api, app_id, ["Failed", "Running"])
    for restarts, expected in ((0, R), (1, R), (2, F)):
        set_status(api, app_id, **phase, **{key: restarts})
        d = sched.describe(app_id)
        assert d is not None and (d.state, d.num_restarts) == (expected, restarts)
    # the last attempt's exit codes, from its pods (until the controller deletes them)
    assert [r.exit_code for r in d.roles_statuses[0].replicas] == [1, None]


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_a_failed_replica_stops_the_others(
    sched: McadScheduler, api: FakeApi, version: str
) -> None:
    """Neither controller stops them at once: the first look at the FAILED app does."""
    app_id = submit(sched, app(replicas=3), appwrapper_version=version)
    set_status(
        api, app_id, **({"phase": "Running"} if version == "v1beta2" else {"state": "Running"})
    )
    with_pods(api, app_id, ["Running", "Failed", "Pending"])
    api.pods.append(pod("other-app-1a2b3c4d5e", 0, 0, "Running"))
    d = sched.describe(app_id)
    assert d is not None and d.state == F
    assert [(r.state, r.exit_code) for r in d.roles_statuses[0].replicas] == [
        (C, None),
        (F, 1),
        (C, None),
    ]
    assert d.msg.endswith("its other replicas were stopped"), d.msg
    assert "r0/0" not in d.msg and "r0/1" in d.msg  # only the failed replica's problem
    annotations = obj(api, app_id)["metadata"]["annotations"]
    assert annotations["torchx.pytorch.org/stopped"] == "0/0,0/2"
    [query] = [q for m, p, q, _ in api.calls if m == "DELETE" and p.endswith("/pods")]
    assert query["fieldSelector"] == "status.phase!=Failed,status.phase!=Succeeded"
    # the failed pod stays (its exit code), and no other app's pod goes
    assert sorted(p["metadata"]["name"] for p in api.pods) == sorted(
        [f"{name_of(app_id)}-r0-1-0", "other-app-1a2b3c4d5e-r0-0-0"]
    )
    api.calls.clear()
    again = sched.describe(app_id)
    assert again is not None and again.state == F and len(api.calls) == 2  # once only
    [listed] = sched.list({"appwrapper_version": version})
    assert listed.state == F
    assert not [c for c in api.calls if c[0] in ("PATCH", "DELETE")]


def test_list_stops_the_others_of_a_failed_app_too(sched: McadScheduler, api: FakeApi) -> None:
    app_id = submit(sched, app(replicas=2))
    set_status(api, app_id, state="Running")
    with_pods(api, app_id, ["Failed", "Running"])
    [listed] = sched.list({})
    assert listed.state == F
    assert obj(api, app_id)["metadata"]["annotations"]["torchx.pytorch.org/stopped"] == "0/1"
    assert [p["status"]["phase"] for p in api.pods] == ["Failed"]


def test_a_cancelled_app_is_not_stopped_again(sched: McadScheduler, api: FakeApi) -> None:
    app_id = submit(sched, app(replicas=2))
    set_status(api, app_id, state="Running")
    with_pods(api, app_id, ["Running", "Running"])
    sched.cancel(app_id)
    with_pods(api, app_id, ["Failed", "Running"])
    d = sched.describe(app_id)
    assert d is not None and d.state == C
    assert "torchx.pytorch.org/stopped" not in obj(api, app_id)["metadata"]["annotations"]


def test_an_appwrapper_made_by_upstream_without_a_limit_is_never_failed_from_its_pods(
    sched: McadScheduler, api: FakeApi
) -> None:
    app_id = submit(sched, app(retries=1))
    spec = obj(api, app_id)["spec"]
    spec["schedulingSpec"] = {"minAvailable": 2, "requeuing": {"maxNumRequeuings": 0}}
    set_status(api, app_id, state="Running", restarts=9)
    with_pods(api, app_id, ["Failed", "Running"])
    assert sched.describe(app_id).state == R  # type: ignore[union-attr]


def test_why_it_waits_is_in_the_message(sched: McadScheduler, api: FakeApi) -> None:
    one = submit(sched, app())
    set_status(
        api,
        one,
        state="Pending",
        conditions=[
            {
                "type": "Pending",
                "status": "True",
                "reason": "InsufficientResources",
                "message": "Insufficient cpu; requested 4096 but only 16 available. ",
            }
        ],
    )
    assert "InsufficientResources Insufficient cpu" in sched.describe(one).msg  # type: ignore[union-attr]
    two = submit(sched, app(), appwrapper_version="v1beta2")
    set_status(
        api,
        two,
        phase="Running",
        conditions=[
            {
                "type": "Unhealthy",
                "status": "True",
                "reason": "FoundFailedPods",
                "message": "1 failed",
            }
        ],
    )
    assert "FoundFailedPods 1 failed" in sched.describe(two).msg  # type: ignore[union-attr]
    three = submit(sched, app())
    assert "has not seen it" in sched.describe(three).msg  # type: ignore[union-attr]


def test_describe_is_two_calls_with_exit_codes_and_the_appdef(
    sched: McadScheduler, api: FakeApi
) -> None:
    app_id = submit(sched, app(replicas=64))
    set_status(api, app_id, state="Running")
    with_pods(api, app_id, ["Succeeded"] * 63 + ["Failed"])
    api.calls.clear()
    d = sched.describe(app_id)
    assert d is not None and len(api.calls) == 2
    assert api.calls[1][2]["labelSelector"] == f"{labels.INSTANCE}={name_of(app_id)}"
    assert d.state == F and d.name == "trainer" and d.roles[0].num_replicas == 64
    assert [r.exit_code for r in d.roles_statuses[0].replicas][-2:] == [0, 1]
    assert d.run_options["validate_spec"] is False  # kept beside the AppDef


def test_an_unknown_app_is_none(sched: McadScheduler) -> None:
    assert sched.describe("default:nope-1a2b3c4d5e") is None
    assert sched.describe("default:nope-1a2b3c4d5e:v1beta2") is None


# -- list, cancel, delete ----------------------------------------------------------------------


def test_list_reads_the_appwrappers_of_one_version_and_their_pods(
    sched: McadScheduler, api: FakeApi
) -> None:
    a = submit(sched, app())
    b = submit(sched, app(), appwrapper_version="v1beta2")
    set_status(api, a, state="Running")
    api.calls.clear()
    [listed] = sched.list({})
    assert (listed.app_id, listed.state, listed.name) == (a, R, "trainer")
    assert len(api.calls) == 2
    assert all(q["labelSelector"] == labels.app_selector() for _, _, q, _ in api.calls)
    assert [x.app_id for x in sched.list({"appwrapper_version": "v1beta2"})] == [b]


def test_cancel_suspends_a_v1beta2_appwrapper_and_keeps_it(
    sched: McadScheduler, api: FakeApi
) -> None:
    app_id = submit(sched, app(), appwrapper_version="v1beta2")
    set_status(api, app_id, phase="Running", resettingCount=1)
    with_pods(api, app_id, ["Running", "Running"])
    sched.cancel(app_id)
    [(path, body)] = [(p, b) for m, p, _, b in api.calls if m == "PATCH"]
    assert not path.endswith("/status")
    assert body["spec"] == {"suspend": True} and CANCELLED in body["metadata"]["annotations"]
    d = sched.describe(app_id)
    assert d is not None and d.state == C and d.num_restarts == 1
    assert d.msg == "cancelled"  # `torchx cancel` prints one line
    sched.cancel(app_id)  # idempotent: a cancelled app is left alone
    assert len([c for c in api.calls if c[0] == "PATCH"]) == 1


def test_cancel_takes_the_pods_out_of_mcads_hands_then_deletes_them(
    sched: McadScheduler, api: FakeApi
) -> None:
    app_id = submit(sched, app())
    set_status(api, app_id, state="Running")
    with_pods(api, app_id, ["Running", "Running"])
    api.pods.append(pod("other-app-1a2b3c4d5e", 0, 0, "Running"))
    sched.cancel(app_id)
    [body] = [b for m, _, _, b in api.calls if m == "PATCH"]
    assert body["spec"]["schedulingSpec"] == {"minAvailable": -1}
    # the pods leave the AppWrapper: MCAD never makes them again, nor counts their quota
    [service] = body["spec"]["resources"]["GenericItems"]
    assert service["generictemplate"]["kind"] == "Service"
    assert [
        i["generictemplate"]["kind"] for i in obj(api, app_id)["spec"]["resources"]["GenericItems"]
    ] == ["Service"]
    [query] = [q for m, p, q, _ in api.calls if m == "DELETE" and p.endswith("/pods")]
    assert query["labelSelector"] == f"{labels.INSTANCE}={name_of(app_id)}"
    assert [p["metadata"]["labels"][labels.INSTANCE] for p in api.pods] == ["other-app-1a2b3c4d5e"]
    assert sched.describe(app_id).state == C  # type: ignore[union-attr]
    assert obj(api, app_id)["kind"] == "AppWrapper"  # kept until delete


def test_a_v1beta1_cancel_before_dispatch_leaves_mcad_nothing_to_run(
    sched: McadScheduler, api: FakeApi
) -> None:
    app_id = submit(sched, app(replicas=2), coscheduler_name="co")
    sched.cancel(app_id)  # no status yet: MCAD has not dispatched it
    items = obj(api, app_id)["spec"]["resources"]["GenericItems"]
    # the PodGroup stays named in the spec, so deleting the AppWrapper deletes it too
    assert [i["generictemplate"]["kind"] for i in items] == ["PodGroup", "Service"]
    assert sched.describe(app_id).state == C  # type: ignore[union-attr]


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_an_ended_app_stays_as_it_ended(sched: McadScheduler, api: FakeApi, version: str) -> None:
    app_id = submit(sched, app(), appwrapper_version=version)
    with_pods(api, app_id, ["Succeeded", "Succeeded"])
    sched.cancel(app_id)
    assert not [c for c in api.calls if c[0] in ("PATCH", "DELETE")]
    assert sched.describe(app_id).state == S  # type: ignore[union-attr]


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_delete_removes_the_appwrapper(sched: McadScheduler, api: FakeApi, version: str) -> None:
    app_id = submit(sched, app(), appwrapper_version=version)
    sched.delete(app_id)
    assert sched.describe(app_id) is None
    [(_, path, query, _)] = [c for c in api.calls if c[0] == "DELETE"]
    assert path.startswith(AW.format(version=version, ns="default"))
    assert query["propagationPolicy"] == "Background"
    sched.delete(app_id)  # a no-op once gone


# -- logs --------------------------------------------------------------------------------------


def test_logs_come_from_the_replicas_pod(sched: McadScheduler, api: FakeApi) -> None:
    app_id = submit(sched, app())
    name = name_of(app_id)
    with_pods(api, app_id, ["Running", "Running"])
    api.logs[f"{name}-r0-1-0"] = b"2026-11-25T00:00:01Z one\n2026-11-25T00:00:02Z two\n"
    assert list(sched.log_iter(app_id, "r0", 1)) == ["one\n", "two\n"]
    [query] = [q for m, p, q, _ in api.calls if m == "GET" and p.endswith("/pods")][-1:]
    assert query["labelSelector"] == (
        f"{labels.INSTANCE}={name},{labels.ROLE_NAME}=r0,{labels.REPLICA_ID}=1"
    )


def test_a_followed_log_ends_when_the_pods_end_the_app(
    sched: McadScheduler, api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MCAD does not monitor an app without retries: its state never ends, its pods do
    app_id = submit(sched, app())
    name = name_of(app_id)
    set_status(api, app_id, state="Running")
    with_pods(api, app_id, ["Running", "Running"])
    api.logs[f"{name}-r0-0-0"] = b"2026-11-25T00:00:01Z up\n"
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        with_pods(api, app_id, ["Failed", "Running"])

    monkeypatch.setattr("torchx_k8s.logs.time.sleep", sleep)
    assert list(sched.log_iter(app_id, "r0", 0, should_tail=True)) == ["up\n"]
    assert len(sleeps) == 1


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_an_appwrapper_being_deleted_is_gone(
    sched: McadScheduler, api: FakeApi, version: str
) -> None:
    # the controllers' finalizer keeps a deleted AppWrapper until its objects are gone
    app_id = submit(sched, app(), appwrapper_version=version)
    obj(api, app_id)["metadata"]["deletionTimestamp"] = "2026-11-25T00:00:00Z"
    assert sched.describe(app_id) is None and not sched.exists(app_id)
    assert sched.list({"appwrapper_version": version}) == []
    sched.cancel(app_id)
    sched.delete(app_id)
    assert not [c for c in api.calls if c[0] in ("PATCH", "DELETE")]


def test_log_errors_name_this_scheduler(sched: McadScheduler) -> None:
    from torchx.schedulers.contract.api import Stream
    from torchx.specs.errors import SpecError

    with pytest.raises(SpecError, match="no kubernetes_mcad app default:nope-1a2b3c4d5e"):
        list(sched.log_iter("default:nope-1a2b3c4d5e", "r0", 0))
    with pytest.raises(ValueError, match="the kubernetes_mcad scheduler has one combined log"):
        sched.log_iter("default:nope-1a2b3c4d5e", "r0", 0, streams=Stream.STDOUT)


def test_every_replica_is_given_the_apps_handle_in_torchx_job_id(sched: McadScheduler) -> None:
    info = sched.submit_dryrun(app(replicas=2), {"validate_spec": False})
    text = json.dumps(info.request.resource)
    handle = f"kubernetes_mcad://s/{info.request.name}"
    entry = json.dumps({"name": "TORCHX_JOB_ID", "value": handle})
    assert text.count(entry) == 2, text
