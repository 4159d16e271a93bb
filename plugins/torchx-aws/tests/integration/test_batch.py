"""aws_batch against the emulator, jobs running in containers: what the kit does not check.

Multi-node jobs through the Runner and the ``torchx`` command, their node jobs, the
tags ``list`` finds them by, cancel, a failing node's exit code, and logs read back with
paging and followed to the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from awsenv import busybox
from torchx_aws.batch.request import parse_app_id

from torchx.runner import Runner, get_runner
from torchx.specs import AppDef, AppState, Resource, RetryPolicy, Role

RES = Resource(cpu=1, gpu=0, memMB=64)


@pytest.fixture
def runner() -> Iterator[Runner]:
    with get_runner("it") as r:
        yield r


def _role(name: str, script: str, n: int = 1) -> Role:
    return Role(name, busybox(), entrypoint="sh", args=["-c", script], num_replicas=n, resource=RES)


def test_a_multi_node_job_runs_every_node_with_its_ids(
    runner: Runner, queue: str, batch: Any
) -> None:
    app = AppDef(
        "mnp",
        [
            _role(
                "trainer", 'echo "trainer $TORCHX_REPLICA_ID of node $AWS_BATCH_JOB_NODE_INDEX"', 3
            ),
            _role("ps", 'echo "ps $TORCHX_REPLICA_ID rank0=$TORCHX_RANK0_HOST"'),
        ],
    )
    handle = runner.run(app, "aws_batch", cfg={"queue": queue})
    app_id = handle.rsplit("/", 1)[1]
    q, job_id, region, nodes = parse_app_id(app_id)
    assert (q, region, nodes) == (queue, "us-east-1", 4)
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state == AppState.SUCCEEDED, status
    # the job as AWS Batch keeps it: multi-node, main node 0, one range per role, tagged
    [job] = batch.describe_jobs(jobs=[job_id])["jobs"]
    props = job["nodeProperties"]
    assert (props["numNodes"], props["mainNode"]) == (4, 0)
    assert [r["targetNodes"] for r in props["nodeRangeProperties"]] == ["0:2", "3:3"]
    assert job["tags"]["torchx.pytorch.org/app-name"] == "mnp"
    for k in range(3):
        assert list(runner.log_lines(handle, "trainer", k)) == [f"trainer {k} of node {k}\n"]
    [line] = runner.log_lines(handle, "ps", 0)
    assert line.startswith("ps 0 rank0=") and "$" not in line
    desc = runner.describe(handle)
    assert desc is not None
    statuses = runner.status(handle)
    assert statuses is not None and statuses.ui_url and job_id in statuses.ui_url


def test_a_failing_node_gives_its_exit_code_and_the_job_fails(runner: Runner, queue: str) -> None:
    app = AppDef(
        "fail", [_role("w", 'if [ "$TORCHX_REPLICA_ID" = 1 ]; then exit 7; fi; sleep 30', 2)]
    )
    handle = runner.run(app, "aws_batch", cfg={"queue": queue})
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state == AppState.FAILED, status
    sched_status = runner.status(handle)
    assert sched_status is not None
    [role] = sched_status.roles
    by_id = {r.id: r for r in role.replicas}
    assert by_id[1].state == AppState.FAILED and by_id[1].exit_code == 7
    # the main node was stopped once node 1 failed (its 30 s sleep cut short)
    assert by_id[0].state == AppState.FAILED and by_id[0].exit_code == 143, by_id[0]
    assert "replica 1 (node 1) failed with exit code 7" in sched_status.msg.split(";")[0]


def test_a_replica_retry_policy_is_warned_of_and_the_job_keeps_batchs_retries(
    runner: Runner, queue: str, batch: Any
) -> None:
    role = _role("w", "true", 2)
    role.max_retries, role.retry_policy = 2, RetryPolicy.REPLICA
    with pytest.warns(UserWarning, match=r"^role 'w' asks retry_policy=REPLICA with max_retri"):
        handle = runner.run(AppDef("retried", [role]), "aws_batch", cfg={"queue": queue})
    _q, job_id, _region, _nodes = parse_app_id(handle.rsplit("/", 1)[1])
    [job] = batch.describe_jobs(jobs=[job_id])["jobs"]
    # the whole job's attempts, as Batch keeps them
    [jd] = batch.describe_job_definitions(jobDefinitions=[job["jobDefinition"]])["jobDefinitions"]
    assert jd["retryStrategy"]["attempts"] == 3
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state == AppState.SUCCEEDED, status


def test_a_failed_attempt_is_retried_and_each_attempt_keeps_its_log(
    runner: Runner, queue: str, batch: Any, logs: Any
) -> None:
    role = _role("w", 'echo "attempt $AWS_BATCH_JOB_ATTEMPT"; [ "$AWS_BATCH_JOB_ATTEMPT" = 2 ]')
    role.max_retries = 2
    handle = runner.run(AppDef("retry", [role]), "aws_batch", cfg={"queue": queue})
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state == AppState.SUCCEEDED, status
    desc = runner.describe(handle)
    sched_status = runner.status(handle)
    assert desc is not None and sched_status is not None and sched_status.num_restarts == 1
    # the last attempt's log is the replica's; the first one's stays in its own stream
    assert list(runner.log_lines(handle, "w", 0)) == ["attempt 2\n"]
    job_id = parse_app_id(handle.rsplit("/", 1)[1])[1]
    [job] = batch.describe_jobs(jobs=[job_id])["jobs"]
    first, second = job["attempts"]
    assert (first["container"]["exitCode"], second["container"]["exitCode"]) == (1, 0)
    events = logs.get_log_events(
        logGroupName="/aws/batch/job", logStreamName=first["container"]["logStreamName"]
    )["events"]
    assert [e["message"] for e in events] == ["attempt 1"]


def _raw_multi_node_job(batch: Any, queue: str, main: str, child: str) -> tuple[Any, Any]:
    """Runs a 2-node job made without torchx (no node wrapper: Batch's own rules) whose
    main node runs ``main`` and child node ``child``; (the job's record, node 1's)."""
    jd = batch.register_job_definition(
        jobDefinitionName="raw-mnp",
        type="multinode",
        nodeProperties={
            "numNodes": 2,
            "mainNode": 0,
            "nodeRangeProperties": [
                {
                    "targetNodes": "0:1",
                    "container": {
                        "image": busybox(),
                        "command": [
                            "sh",
                            "-c",
                            f'if [ "$AWS_BATCH_JOB_NODE_INDEX" = 0 ]; then {main}; else {child}; fi',
                        ],
                        "resourceRequirements": [
                            {"type": "VCPU", "value": "1"},
                            {"type": "MEMORY", "value": "64"},
                        ],
                    },
                }
            ],
        },
    )
    try:
        job_id = batch.submit_job(
            jobName="raw-mnp", jobQueue=queue, jobDefinition=jd["jobDefinitionArn"]
        )["jobId"]
        deadline = time.monotonic() + 120
        while True:
            [rec] = batch.describe_jobs(jobs=[job_id])["jobs"]
            if rec["status"] in ("SUCCEEDED", "FAILED"):
                break
            assert time.monotonic() < deadline, rec
            time.sleep(0.5)  # a poll interval: Batch has no event to wait on
        [node] = batch.describe_jobs(jobs=[f"{job_id}#1"])["jobs"]
        return rec, node
    finally:
        batch.deregister_job_definition(jobDefinition=jd["jobDefinitionArn"])


def test_the_main_node_decides_as_on_aws(queue: str, batch: Any) -> None:
    # a child node that fails changes nothing by itself: the job is the main node's
    job, node = _raw_multi_node_job(batch, queue, "sleep 4; exit 0", "exit 7")
    assert job["status"] == "SUCCEEDED", job
    assert (node["status"], node["container"]["exitCode"]) == ("FAILED", 7)
    # the job ends when the main node exits: the child still running is stopped
    job, node = _raw_multi_node_job(batch, queue, "exit 3", "sleep 300")
    assert (job["status"], job["container"]["exitCode"]) == ("FAILED", 3)
    assert node["status"] == "FAILED" and node["statusReason"].startswith("Stopped"), node
    assert node["stoppedAt"] - node["startedAt"] < 60_000, node


def test_a_job_without_capacity_is_pending_with_aws_reason_and_cancels(
    runner: Runner, starved_queue: str
) -> None:
    app = AppDef("starved", [_role("w", "echo never", 2)])
    handle = runner.run(app, "aws_batch", cfg={"queue": starved_queue})
    deadline = time.monotonic() + 60
    while True:
        status = runner.status(handle)
        assert status is not None
        if "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY" in status.msg:
            break
        assert time.monotonic() < deadline and not status.is_terminal(), status
        time.sleep(0.5)  # a poll interval: Batch has no event to wait on
    assert status.state == AppState.PENDING, status
    runner.cancel(handle)
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state == AppState.CANCELLED, status


def test_list_finds_torchx_jobs_by_tag_and_not_others(
    runner: Runner, queue: str, batch: Any
) -> None:
    handle = runner.run(AppDef("listed", [_role("m", "true")]), "aws_batch", cfg={"queue": queue})
    # a job submitted without torchx: not an app
    jd = batch.register_job_definition(
        jobDefinitionName="not-torchx",
        type="container",
        containerProperties={
            "image": busybox(),
            "command": ["true"],
            "resourceRequirements": [
                {"type": "VCPU", "value": "1"},
                {"type": "MEMORY", "value": "64"},
            ],
        },
    )
    other = batch.submit_job(
        jobName="not-torchx", jobQueue=queue, jobDefinition=jd["jobDefinitionArn"]
    )
    apps = runner.list("aws_batch", cfg={"queue": queue})
    ids = {a.app_id for a in apps}
    assert handle.rsplit("/", 1)[1] in ids
    assert not [i for i in ids if other["jobId"] in i]
    # across every queue of the region too
    assert handle in {a.app_handle for a in runner.list("aws_batch")}
    batch.terminate_job(jobId=other["jobId"], reason="test")
    batch.deregister_job_definition(jobDefinition=jd["jobDefinitionArn"])


def test_cancel_stops_every_node_and_delete_deregisters(
    runner: Runner, queue: str, batch: Any
) -> None:
    handle = runner.run(
        AppDef("cancel", [_role("w", "echo up; sleep 300", 2)]), "aws_batch", cfg={"queue": queue}
    )
    lines = iter(runner.log_lines(handle, "w", 1, should_tail=True))
    assert next(lines) == "up\n"  # running, and its log is read while it runs
    runner.cancel(handle)
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state == AppState.CANCELLED, status
    assert all(r.state in (AppState.CANCELLED, AppState.FAILED) for r in status.roles[0].replicas)
    assert list(lines) == []  # the follow ends with the job
    job_id = parse_app_id(handle.rsplit("/", 1)[1])[1]
    [job] = batch.describe_jobs(jobs=[job_id])["jobs"]
    runner.delete(handle)
    active = batch.describe_job_definitions(jobDefinitions=[job["jobDefinition"]], status="ACTIVE")
    assert active["jobDefinitions"] == []


def test_logs_page_and_follow_without_repeats(
    runner: Runner, queue: str, batch: Any, logs: Any
) -> None:
    from torchx_aws.cwlogs import stream_log

    # small pages: 1,000 lines read 37 at a time, through the token; none twice, none lost
    script = 'i=0; while [ $i -lt 1000 ]; do echo "line $i"; i=$((i+1)); done; sleep 1; echo last'
    handle = runner.run(AppDef("pages", [_role("m", script)]), "aws_batch", cfg={"queue": queue})
    followed: list[str] = []
    t = threading.Thread(
        target=lambda: followed.extend(runner.log_lines(handle, "m", 0, should_tail=True))
    )
    t.start()
    status = runner.wait(handle, wait_interval=0.5)
    t.join(60)
    assert not t.is_alive() and status is not None and status.state == AppState.SUCCEEDED
    expected = [f"line {i}\n" for i in range(1000)] + ["last\n"]
    assert followed == expected
    job_id = parse_app_id(handle.rsplit("/", 1)[1])[1]
    [job] = batch.describe_jobs(jobs=[job_id])["jobs"]
    stream = job["container"]["logStreamName"]
    pages = list(stream_log(logs, "/aws/batch/job", stream, limit=37))
    assert pages == expected
    paged = list(stream_log(logs, "/aws/batch/job", stream, limit=37, regex="^line 9"))
    assert paged == [x for x in expected if x.startswith("line 9")]


def test_the_torchx_command_runs_and_follows_an_app(queue: str) -> None:
    torchx = [sys.executable, "-m", "torchx.cli.main"]
    run = subprocess.run(
        [
            *torchx,
            "run",
            "-s",
            "aws_batch",
            "-cfg",
            f"queue={queue}",
            "--wait",
            "--log",
            "utils.echo",
            "--image",
            busybox(),
            "--msg",
            "hello from batch",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ.copy(),
    )
    assert run.returncode == 0, run.stderr
    assert "hello from batch" in run.stdout + run.stderr
    handle = next(w for w in (run.stdout + run.stderr).split() if w.startswith("aws_batch://"))
    status = subprocess.run([*torchx, "status", handle], capture_output=True, text=True, timeout=60)
    assert status.returncode == 0 and "SUCCEEDED" in status.stdout, status.stdout + status.stderr
