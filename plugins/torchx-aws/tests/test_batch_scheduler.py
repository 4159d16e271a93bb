"""The aws_batch scheduler's calls to AWS, checked at the request level (botocore's Stubber).

These are AWS's documented behaviours that the emulator used by the integration tests
lacks or differs on (see the README's list): node jobs ``<id>#<n>`` in DescribeJobs,
ListJobs listing only RUNNING jobs without a filter, TerminateJob by id, CloudWatch
answering the same token at the end of a stream, throttling answers.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Stubs
from torchx_aws.batch.backend import BatchBackend
from torchx_aws.batch.request import parse_app_id
from torchx_aws.batch.scheduler import AwsBatchScheduler
from torchx_aws.batch.status import CANCEL_REASON

from torchx.schedulers.contract.errors import (
    AuthenticationError,
    InvalidAppIdError,
    SchedulerError,
)
from torchx.specs import AppDef, AppState, Resource, RetryPolicy, Role

JOB = "6f1c2a9e-3b1d-4c1e-9d0a-1f2e3d4c5b6a"
ARN = "arn:aws:batch:us-east-1:123456789012:job-definition/app-x:1"


def _sched(stubs: Stubs) -> AwsBatchScheduler:
    return AwsBatchScheduler("s", backend=BatchBackend(stubs.factory))


def _parent(n: int, status: str = "RUNNING", **extra: Any) -> dict[str, Any]:
    return {
        "jobId": JOB,
        "jobName": "app-x",
        "jobArn": f"arn:aws:batch:us-east-1:123456789012:job/{JOB}",
        "jobQueue": "q",
        "status": status,
        "startedAt": 1_700_000_000_000,
        "createdAt": 1_699_999_999_000,
        "jobDefinition": ARN,
        "tags": {"torchx.pytorch.org/version": "1", "torchx.pytorch.org/app-name": "app"},
        "nodeProperties": {
            "numNodes": n,
            "mainNode": 0,
            "nodeRangeProperties": [
                {
                    "targetNodes": f"0:{n - 2}",
                    "container": {
                        "environment": [{"name": "TORCHX_ROLE_NAME", "value": "trainer"}]
                    },
                },
                {
                    "targetNodes": f"{n - 1}:{n - 1}",
                    "container": {"environment": [{"name": "TORCHX_ROLE_NAME", "value": "ps"}]},
                },
            ],
        },
        **extra,
    }


def _node(i: int, status: str, code: int | None = None, reason: str = "") -> dict[str, Any]:
    node: dict[str, Any] = {
        "jobId": f"{JOB}#{i}",
        "jobName": "app-x",
        "jobQueue": "q",
        "status": status,
        "startedAt": 1,
        "jobDefinition": ARN,
        "nodeDetails": {"nodeIndex": i, "isMainNode": i == 0},
        "container": {
            "logStreamName": f"app-x/default/task{i}",
            "networkInterfaces": [{"privateIpv4Address": f"10.0.0.{i}"}],
        },
    }
    if code is not None:
        node["container"]["exitCode"] = code
    if reason:
        node["statusReason"] = reason
    return node


def test_app_ids() -> None:
    assert parse_app_id(f"q:{JOB}:us-east-1:16") == ("q", JOB, "us-east-1", 16)
    for bad in ("q", "q:a:b", f"q:{JOB}:us-east-1:x", "q/a:b"):
        with pytest.raises(InvalidAppIdError):
            parse_app_id(bad)


def test_status_of_16_nodes_is_one_call_with_each_node(stubs: Stubs) -> None:
    ids = [JOB] + [f"{JOB}#{i}" for i in range(16)]
    nodes = [_node(i, "RUNNING") for i in range(15)] + [
        _node(15, "FAILED", 3, "Essential container exited")
    ]
    stubs.add("batch", "describe_jobs", {"jobs": [_parent(16), *nodes]}, {"jobs": ids})
    desc = _sched(stubs).describe(f"q:{JOB}:us-east-1:16")
    stubs.done()
    # Batch's job runs on (its main node decides), but a replica failed on the job's
    # only attempt: the app has failed
    assert desc is not None and desc.state == AppState.FAILED
    trainer, ps = desc.roles_statuses
    assert trainer.role == "trainer" and [r.id for r in trainer.replicas] == list(range(15))
    assert all(r.state == AppState.RUNNING for r in trainer.replicas)
    assert trainer.replicas[3].hostname == "10.0.0.3"
    [p] = ps.replicas
    assert (p.role, p.id, p.state, p.exit_code) == ("ps", 0, AppState.FAILED, 3)
    assert "role ps replica 0 (node 15) failed with exit code 3" in desc.msg
    assert desc.ui_url == (
        f"https://us-east-1.console.aws.amazon.com/batch/home?region=us-east-1#jobs/detail/{JOB}"
    )
    assert desc.start_time == 1_700_000_000.0 and desc.end_time is None
    assert desc.name == "app"


def test_a_job_that_succeeded_with_a_failed_node_is_failed(stubs: Stubs) -> None:
    # Batch reports a multi-node job as its main node ended: SUCCEEDED here, although
    # node 1 (a child) failed first; the app is FAILED, with that replica's code and reason
    parent = _parent(3, "SUCCEEDED", stoppedAt=1_700_000_100_000, container={"exitCode": 0})
    nodes = [
        _node(0, "SUCCEEDED", 0, "Essential container in task exited"),
        _node(1, "FAILED", 7, "Essential container in task exited"),
        _node(2, "SUCCEEDED", 0, "Essential container in task exited"),
    ]
    ids = [JOB] + [f"{JOB}#{i}" for i in range(3)]
    stubs.add("batch", "describe_jobs", {"jobs": [parent, *nodes]}, {"jobs": ids})
    desc = _sched(stubs).describe(f"q:{JOB}:us-east-1:3")
    stubs.done()
    assert desc is not None and desc.state == AppState.FAILED
    trainer, ps = desc.roles_statuses
    assert [(r.state, r.exit_code) for r in trainer.replicas] == [
        (AppState.SUCCEEDED, 0),
        (AppState.FAILED, 7),
    ]
    assert (ps.replicas[0].state, ps.replicas[0].exit_code) == (AppState.SUCCEEDED, 0)
    assert desc.msg == (
        "role trainer replica 1 (node 1) failed with exit code 7: "
        "Essential container in task exited"
    )
    assert desc.end_time == 1_700_000_100.0


def test_a_failed_node_with_an_attempt_left_is_restarting(stubs: Stubs) -> None:
    # the node wrapper ends the attempt once a child fails; Batch then makes another:
    # meanwhile the replica will restart, it has not failed the app
    retry = {"retryStrategy": {"attempts": 2}, "attempts": []}
    nodes = [_node(0, "RUNNING"), _node(1, "FAILED", 7, "Essential container in task exited")]
    ids = [JOB] + [f"{JOB}#{i}" for i in range(2)]
    stubs.add("batch", "describe_jobs", {"jobs": [_parent(2, **retry), *nodes]}, {"jobs": ids})
    desc = _sched(stubs).describe(f"q:{JOB}:us-east-1:2")
    assert desc is not None and desc.state == AppState.RUNNING, desc
    assert [r.state for r in desc.roles_statuses[1].replicas] == [AppState.PENDING]
    assert desc.num_restarts == 0
    # on the last attempt (one ended before it) the same answer is a failure at once
    last = {"retryStrategy": {"attempts": 2}, "attempts": [{"startedAt": 1, "stoppedAt": 2}]}
    stubs.add("batch", "describe_jobs", {"jobs": [_parent(2, **last), *nodes]}, {"jobs": ids})
    desc = _sched(stubs).describe(f"q:{JOB}:us-east-1:2")
    stubs.done()
    assert desc is not None and desc.state == AppState.FAILED, desc
    assert desc.num_restarts == 1
    assert "role ps replica 0 (node 1) failed with exit code 7" in desc.msg
    # between attempts (RUNNABLE) the last attempt's node records are not the replicas'
    stubs.add(
        "batch", "describe_jobs", {"jobs": [_parent(2, "RUNNABLE", **last), *nodes]}, {"jobs": ids}
    )
    desc = _sched(stubs).describe(f"q:{JOB}:us-east-1:2")
    stubs.done()
    assert desc is not None and desc.state == AppState.PENDING
    assert {r.state for rs in desc.roles_statuses for r in rs.replicas} == {AppState.PENDING}


def test_a_node_failed_just_now_waits_for_the_job_to_end_a_little(stubs: Stubs) -> None:
    # on the last attempt, a child failed a moment ago: the node wrapper is ending the
    # job (its records are then final); until then, or for 30 s, the app runs on
    from torchx_aws.batch.status import FAILED_NODE_GRACE, describe_response

    now = 1_800_000_000.0
    nodes = [
        _node(0, "RUNNING"),
        {**_node(1, "FAILED", 7, "Essential container in task exited"), "stoppedAt": 0},
    ]
    for age, state in ((1.0, AppState.RUNNING), (FAILED_NODE_GRACE + 1, AppState.FAILED)):
        nodes[1]["stoppedAt"] = int((now - age) * 1000)
        desc = describe_response(f"q:{JOB}:us-east-1:2", "us-east-1", _parent(2), nodes, now)
        assert desc.state == state, (age, desc)
        assert desc.roles_statuses[1].replicas[0].state == AppState.FAILED
        assert "role ps replica 0 (node 1) failed with exit code 7" in desc.msg


def test_nodes_stopped_by_a_cancel_are_cancelled(stubs: Stubs) -> None:
    parent = _parent(2, "FAILED", statusReason=CANCEL_REASON, stoppedAt=1_700_000_100_000)
    nodes = [_node(i, "FAILED", 143, CANCEL_REASON) for i in range(2)]
    ids = [JOB] + [f"{JOB}#{i}" for i in range(2)]
    stubs.add("batch", "describe_jobs", {"jobs": [parent, *nodes]}, {"jobs": ids})
    desc = _sched(stubs).describe(f"q:{JOB}:us-east-1:2")
    stubs.done()
    assert desc is not None and desc.state == AppState.CANCELLED
    assert {r.state for rs in desc.roles_statuses for r in rs.replicas} == {AppState.CANCELLED}


def test_describe_gives_back_the_appdef_the_job_carries(stubs: Stubs) -> None:
    app = AppDef(
        "train",
        [
            Role("trainer", "img", entrypoint="python", num_replicas=15, env={"HF_TOKEN": "hf_x"}),
            Role("ps", "img", entrypoint="python"),
        ],
        metadata={"team": "ml"},
    )
    sched = _sched(stubs)
    info = sched.submit_dryrun(app, {"queue": "q"})
    # what SubmitJob sends comes back in DescribeJobs' record of the job
    parent = _parent(16, parameters=info.request.job["parameters"])
    ids = [JOB] + [f"{JOB}#{i}" for i in range(16)]
    stubs.add("batch", "describe_jobs", {"jobs": [parent]}, {"jobs": ids})
    desc = sched.describe(f"q:{JOB}:us-east-1:16")
    stubs.done()
    assert desc is not None
    assert (desc.roles, desc.name, desc.metadata) == (app.roles, "train", {"team": "ml"})
    assert desc.run_options["queue"] == "q"  # the run options kept beside the AppDef
    # a job without it (another tool's, or an AppDef too large to keep): no roles
    for params in ({}, {"torchx_appdef": "{not json"}):
        stubs.add("batch", "describe_jobs", {"jobs": [_parent(16, parameters=params)]})
        desc = sched.describe(f"q:{JOB}:us-east-1:16")
        assert desc is not None and desc.roles == [] and desc.name == "app"
        assert desc.run_options == {}
    stubs.done()


def test_an_appdef_too_large_to_keep_is_left_out_and_the_dry_run_says_so(stubs: Stubs) -> None:
    role = Role("w", "img", entrypoint="python", args=["x" * 9000])
    with pytest.warns(UserWarning, match=r"^the AppDef of app 'big' is not kept .*: it is 9\d+ b"):
        info = _sched(stubs).submit_dryrun(AppDef("big", [role]), {"queue": "q"})
    assert "parameters" not in info.request.job


def test_a_cancelled_job_and_restarts(stubs: Stubs) -> None:
    job = _parent(
        2,
        "FAILED",
        statusReason=CANCEL_REASON,
        stoppedAt=1_700_000_100_000,
        attempts=[{"startedAt": 1}, {"startedAt": 2}],
    )
    stubs.add("batch", "describe_jobs", {"jobs": [job]})
    desc = _sched(stubs).describe(f"q:{JOB}:us-east-1:2")
    assert desc is not None and desc.state == AppState.CANCELLED
    assert desc.num_restarts == 1 and desc.end_time == 1_700_000_100.0
    # no node job in the answer: every node takes the job's state
    assert [r.state for rs in desc.roles_statuses for r in rs.replicas] == [AppState.CANCELLED] * 2


def test_an_unknown_job_is_none(stubs: Stubs) -> None:
    stubs.add("batch", "describe_jobs", {"jobs": []})
    assert _sched(stubs).describe(f"q:{JOB}:us-east-1:1") is None


def test_throttling_is_retried_then_answered(stubs: Stubs) -> None:
    stubs.error("batch", "describe_jobs", "TooManyRequestsException", 429)
    stubs.error("batch", "describe_jobs", "ThrottlingException", 400)
    stubs.error("batch", "describe_jobs", "InternalServerError", 500)
    stubs.add("batch", "describe_jobs", {"jobs": [_parent(2, "SUCCEEDED")]})
    desc = _sched(stubs).describe(f"q:{JOB}:us-east-1:2")
    stubs.done()
    assert desc is not None and desc.state == AppState.SUCCEEDED


def test_a_refusal_is_one_line(stubs: Stubs) -> None:
    stubs.error("batch", "describe_jobs", "UnrecognizedClientException", 403)
    with pytest.raises(SchedulerError) as e:
        _sched(stubs).describe(f"q:{JOB}:us-east-1:2")
    text = str(e.value)
    assert "did not accept the credentials" in text and "\n" not in text
    assert isinstance(e.value, AuthenticationError)  # never the app's failure


def test_cancel_terminates_by_job_id(stubs: Stubs) -> None:
    stubs.add("batch", "describe_jobs", {"jobs": [_parent(2)]})
    stubs.add("batch", "terminate_job", {}, {"jobId": JOB, "reason": CANCEL_REASON})
    _sched(stubs).cancel(f"q:{JOB}:us-east-1:2")
    stubs.done()


def test_cancel_leaves_an_ended_job_as_it_is(stubs: Stubs) -> None:
    stubs.add(
        "batch", "describe_jobs", {"jobs": [_parent(2, "FAILED", statusReason="Node 1 failed")]}
    )
    _sched(stubs).cancel(f"q:{JOB}:us-east-1:2")  # no TerminateJob: it would change the reason
    stubs.done()


def test_delete_terminates_a_live_job_and_deregisters_its_definition(stubs: Stubs) -> None:
    stubs.add("batch", "describe_jobs", {"jobs": [_parent(2)]})  # exists?
    stubs.add("batch", "describe_jobs", {"jobs": [_parent(2)]}, {"jobs": [JOB]})
    stubs.add("batch", "terminate_job", {}, {"jobId": JOB, "reason": CANCEL_REASON})
    stubs.add("batch", "deregister_job_definition", {}, {"jobDefinition": ARN})
    _sched(stubs).delete(f"q:{JOB}:us-east-1:2")
    stubs.done()


def test_list_asks_every_state_in_every_queue_and_keeps_torchx_jobs(stubs: Stubs) -> None:
    every = [{"name": "AFTER_CREATED_AT", "values": ["0"]}]
    stubs.add(
        "batch",
        "describe_job_queues",
        {
            "jobQueues": [
                {
                    "jobQueueName": "a",
                    "jobQueueArn": "arn:a",
                    "state": "ENABLED",
                    "priority": 1,
                    "computeEnvironmentOrder": [],
                },
                {
                    "jobQueueName": "b",
                    "jobQueueArn": "arn:b",
                    "state": "ENABLED",
                    "priority": 1,
                    "computeEnvironmentOrder": [],
                },
            ]
        },
    )
    summary = {"jobId": JOB, "jobName": "app-x"}
    stubs.add(
        "batch",
        "list_jobs",
        {"jobSummaryList": [summary], "nextToken": "t1"},
        {"jobQueue": "a", "filters": every},
    )
    stubs.add(
        "batch",
        "list_jobs",
        {"jobSummaryList": [{"jobId": "other", "jobName": "o"}]},
        {"jobQueue": "a", "filters": every, "nextToken": "t1"},
    )
    stubs.add(
        "batch",
        "describe_jobs",
        {"jobs": [_parent(2, "SUCCEEDED"), {**_parent(1), "jobId": "other", "tags": {}}]},
        {"jobs": [JOB, "other"]},
    )
    stubs.add("batch", "list_jobs", {"jobSummaryList": []}, {"jobQueue": "b", "filters": every})
    apps = _sched(stubs).list()
    stubs.done()
    assert [(a.app_id, a.state, a.name) for a in apps] == [
        (f"a:{JOB}:us-east-1:2", AppState.SUCCEEDED, "app")
    ]


def test_logs_page_by_token_without_repeats(stubs: Stubs) -> None:
    stream = "app-x/default/task1"
    stubs.add(
        "batch", "describe_jobs", {"jobs": [_parent(3, "SUCCEEDED"), _node(1, "SUCCEEDED", 0)]}
    )
    base = {
        "logGroupName": "/aws/batch/job",
        "logStreamName": stream,
        "startFromHead": True,
        "limit": 10_000,
    }
    stubs.add(
        "logs",
        "get_log_events",
        {"events": [{"message": "a"}, {"message": "b"}], "nextForwardToken": "f/1"},
        base,
    )
    stubs.add(
        "logs",
        "get_log_events",
        {"events": [{"message": "c"}], "nextForwardToken": "f/2"},
        {**base, "nextToken": "f/1"},
    )
    # the end of the stream: CloudWatch answers the token it was given
    stubs.add(
        "logs",
        "get_log_events",
        {"events": [], "nextForwardToken": "f/2"},
        {**base, "nextToken": "f/2"},
    )
    lines = list(_sched(stubs).log_iter(f"q:{JOB}:us-east-1:3", "trainer", 1, regex="[ac]"))
    stubs.done()
    assert lines == ["a\n", "c\n"]


def test_separate_streams_are_refused(stubs: Stubs) -> None:
    from torchx.schedulers.contract.api import Stream

    with pytest.raises(ValueError, match="one CloudWatch Logs stream"):
        _sched(stubs).log_iter(f"q:{JOB}:us-east-1:3", "trainer", 0, streams=Stream.STDERR)


def _app() -> AppDef:
    return AppDef(
        "app", [Role("main", "img", entrypoint="echo", resource=Resource(cpu=1, gpu=0, memMB=64))]
    )


def test_submit_registers_then_submits_and_names_the_job(stubs: Stubs) -> None:
    sched = _sched(stubs)
    info = sched.prepare(_app(), {"queue": "q"})
    name = info.request.name
    stubs.add(
        "batch",
        "register_job_definition",
        {"jobDefinitionName": name, "jobDefinitionArn": ARN, "revision": 1},
        info.request.job_def,
    )
    stubs.add(
        "batch",
        "submit_job",
        {"jobName": name, "jobId": JOB},
        {"jobDefinition": ARN, **info.request.job},
    )
    assert sched.schedule(info) == f"q:{JOB}:us-east-1:1"
    stubs.done()


def test_a_job_aws_does_not_list_yet_is_submitted_not_unknown(stubs: Stubs) -> None:
    # AWS's reads are eventually consistent: right after SubmitJob, DescribeJobs may not
    # know the job. Submitted here (any process of this user), it is SUBMITTED, and a
    # cancel then still terminates it (TerminateJob takes the id)
    from torchx_aws.recent import remember

    app_id = f"q:{JOB}:us-east-1:1"
    remember("aws_batch", app_id)
    stubs.add("batch", "describe_jobs", {"jobs": []}, {"jobs": [JOB]})
    desc = _sched(stubs).describe(app_id)
    assert desc is not None and desc.state == AppState.SUBMITTED
    assert "does not list the job yet" in desc.msg
    stubs.add("batch", "describe_jobs", {"jobs": []}, {"jobs": [JOB]})
    stubs.add("batch", "terminate_job", {}, {"jobId": JOB, "reason": CANCEL_REASON})
    _sched(stubs).cancel(app_id)
    stubs.done()
    # another app id, never submitted here: no such app, and nothing to terminate
    stubs.add("batch", "describe_jobs", {"jobs": []})
    assert _sched(stubs).describe(f"q:{JOB}:us-east-1:2") is None
    stubs.done()


def test_the_dry_run_warns_that_a_replica_policy_retries_the_whole_job(stubs: Stubs) -> None:
    role = Role(
        "w",
        "img",
        entrypoint="true",
        num_replicas=2,
        max_retries=1,
        retry_policy=RetryPolicy.REPLICA,
        resource=Resource(cpu=1, gpu=0, memMB=64),
    )
    with pytest.warns(UserWarning, match=r"^role 'w' asks retry_policy=REPLICA .* whole job"):
        info = _sched(stubs).submit_dryrun(AppDef("app", [role]), {"queue": "q"})
    assert info.request.job_def["retryStrategy"] == {"attempts": 2}
    stubs.done()  # a dry run: no call to AWS


def test_a_failed_submit_deregisters_the_definition(stubs: Stubs) -> None:
    sched = _sched(stubs)
    info = sched.prepare(_app(), {"queue": "nope"})
    name = info.request.name
    stubs.add(
        "batch",
        "register_job_definition",
        {"jobDefinitionName": name, "jobDefinitionArn": ARN, "revision": 1},
    )
    stubs.error("batch", "submit_job", "ClientException")
    stubs.add("batch", "deregister_job_definition", {}, {"jobDefinition": ARN})
    with pytest.raises(SchedulerError) as e:
        sched.schedule(info)
    stubs.done()
    assert str(e.value).startswith(f"submitting job {name} to queue nope:")
    assert "ClientException" in str(e.value) and "\n" not in str(e.value)


def test_a_submit_that_timed_out_is_looked_up_before_trying_again(stubs: Stubs) -> None:
    sched = _sched(stubs)
    info = sched.prepare(_app(), {"queue": "q"})
    name = info.request.name
    stubs.add(
        "batch",
        "register_job_definition",
        {"jobDefinitionName": name, "jobDefinitionArn": ARN, "revision": 1},
    )
    stubs.error("batch", "submit_job", "ServerException", 503)  # it may have happened
    stubs.add(
        "batch",
        "list_jobs",
        {"jobSummaryList": [{"jobId": JOB, "jobName": name}]},
        {"jobQueue": "q", "filters": [{"name": "JOB_NAME", "values": [name]}]},
    )
    assert sched.schedule(info) == f"q:{JOB}:us-east-1:1"
    stubs.done()


def test_list_checks_queue_and_region_as_a_submit_does(stubs: Stubs) -> None:
    from torchx.specs.errors import InvalidRunConfigException

    sched = AwsBatchScheduler("s", backend=BatchBackend(stubs.factory))
    for bad, said in [({"queue": "no queue!"}, "'queue'="), ({"region": "mars"}, "'region'=")]:
        with pytest.raises(InvalidRunConfigException, match=said):
            sched.list(bad)
    stubs.done()  # nothing was asked of AWS


def test_a_handle_must_match_its_job() -> None:
    from torchx_aws.batch.scheduler import check_handle

    from torchx.schedulers.contract.errors import InvalidAppIdError

    job = {
        "jobId": "j1",
        "jobQueue": "arn:aws:batch:us-east-1:123456789012:job-queue/gpu",
        "nodeProperties": {"numNodes": 2},
    }
    check_handle("gpu:j1:us-east-1:2", job)  # as it is
    check_handle("gpu:j1", job)  # upstream's form: no node count to check
    with pytest.raises(InvalidAppIdError) as e:
        check_handle("cpu:j1:us-east-1:2", job)
    assert str(e.value) == (
        "aws_batch app id cpu:j1:us-east-1:2 does not match its job: job j1 is in queue gpu, "
        "not cpu; its app id is gpu:j1:us-east-1:2"
    )
    with pytest.raises(InvalidAppIdError, match="has 2 nodes, not 3"):
        check_handle("gpu:j1:us-east-1:3", job)
    check_handle("gpu:j2:us-east-1:1", {"jobId": "j2", "jobQueue": "gpu"})  # a container job


def test_every_node_is_given_the_apps_handle_in_torchx_job_id(stubs: Stubs) -> None:
    info = _sched(stubs).submit_dryrun(
        AppDef("app", [Role("main", "img", num_replicas=2)]), {"queue": "q"}
    )
    # the app_id macro is the job's name (as upstream's: the handle's id adds the queue)
    entry = {"name": "TORCHX_JOB_ID", "value": f"aws_batch://s/{info.request.name}"}
    assert (
        entry
        in info.request.job_def["nodeProperties"]["nodeRangeProperties"][0]["container"][
            "environment"
        ]
    )
