"""moto's server (``moto_server``), with AWS Batch jobs run as AWS documents them.

Started by ``dev/aws up`` with the private venv's Python. moto 5.2 runs a multi-node
parallel job's nodes as containers, but unlike AWS it sets none of the node variables,
has no node jobs (``DescribeJobs`` of ``<job id>#<n>`` answers nothing), waits for the
nodes one after the other, writes every node's output into one log stream, and never
applies a job's ``retryStrategy``. Here, what the AWS Batch user guide documents
(dev/README.md names the pages):

* each node's container gets ``AWS_BATCH_JOB_NODE_INDEX``,
  ``AWS_BATCH_JOB_MAIN_NODE_INDEX`` (0), ``AWS_BATCH_JOB_NUM_NODES``, the nodes after
  the main node ``AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS``, and every container
  ``AWS_BATCH_JOB_ATTEMPT`` (1, 2, ...);
* the main node decides: the attempt ends when the main node (node 0) exits, its exit
  code is the job's, and the child nodes still running are then stopped (FAILED,
  "Stopped: the main node exited"); a child node that exits, with any code, changes
  nothing else;
* ``DescribeJobs`` answers each node job ``<job id>#<n>`` of the current attempt: its
  status, exit code, status reason, ``nodeDetails`` and ``container.logStreamName``;
* retries: an attempt whose main node (or container) exits non-zero is followed by a
  new one, back through RUNNABLE, up to ``retryStrategy.attempts``, unless an
  ``evaluateOnExit`` rule (exit code or status reason, with globs) says EXIT; each
  attempt is listed in ``attempts[]`` with its exit code, reason and log stream;
* each node's output goes to a log stream of its own per attempt in
  ``/aws/batch/job``, sent while the container runs (moto sends a container job's
  output once it has ended, and every node's into one stream): a followed log sees
  lines as they come, as on AWS, and an earlier attempt's stream stays;
* a job's record carries its (main node's) exit code (moto drops it);
* CloudWatch Logs' ``GetLogEvents`` leaves out events at ``endTime`` (moto includes
  them), as the CloudWatch Logs API reference says;
* a job whose queue's compute environments are all tagged ``torchx-dev-aws/no-capacity``
  (an emulator knob) stays RUNNABLE with AWS's ``statusReason`` for a lack of EC2
  capacity, until a tag goes or the job is cancelled.

Container jobs run the same way (one node, no node job). SageMaker training jobs run
too (:mod:`aws_moto_sagemaker`). Everything else is moto's own; dev/README.md lists
the differences from AWS that remain.
"""

from __future__ import annotations

import sys
import threading
import time
from datetime import datetime
from typing import Any

import aws_moto_logs  # next to this file: container output as CloudWatch events
import aws_moto_sagemaker  # next to this file: SageMaker training jobs that run
from moto.batch import models
from moto.batch.utils import JobStatus
from moto.core.parse import default_timestamp_parser
from moto.core.utils import unix_time_millis
from moto.logs.models import LogStream

_original_run = models.Job.run
_original_describe_jobs = models.BatchBackend.describe_jobs
_lock = threading.Lock()


def _node_specs(job: Any) -> list[dict[str, Any]]:
    props = job.job_definition.node_properties
    num = int(props["numNodes"])
    specs: dict[int, dict[str, Any]] = {}
    for rng in props["nodeRangeProperties"]:
        start, sep, end = str(rng["targetNodes"]).partition(":")
        first = int(start or 0)
        last = (int(end) if end else num - 1) if sep else first
        for i in range(first, last + 1):
            specs[i] = rng["container"]
    return [specs[i] for i in range(num)]


def _set_node(job: Any, index: int, **fields: Any) -> None:
    with _lock:
        job._torchx_nodes.setdefault(index, {}).update(fields)


def _stream_name(job: Any, index: int, multi: bool, attempt: int) -> str:
    """The log stream of a node's attempt: each attempt writes a stream of its own."""
    base = f"{job.job_definition.name}/default/{job.job_id}"
    if multi:
        base += f"-node-{index}"
    return base if attempt == 1 else f"{base}-attempt-{attempt}"


def _forward_logs(job: Any, index: int, container: Any, stream: str) -> None:
    """Puts the container's lines not sent yet into its stream (as awslogs does, live:
    :mod:`aws_moto_logs`)."""
    with _lock:
        seen = job._torchx_nodes.setdefault(index, {}).setdefault("_seen", {})
    events = aws_moto_logs.new_events(container, _millis, seen)
    if events:
        job._log_backend.put_log_events(job._log_group, stream, events)


def _millis(stamp: str) -> int:
    return int(unix_time_millis(default_timestamp_parser(stamp)))


_recent: dict[str, float] = {}  # addresses given out lately (not yet seen in use)


def _free_address(client: Any, network: str) -> str | None:
    """An unused IPv4 address of the user-defined ``network`` (None if it has no subnet)."""
    import ipaddress

    net = client.networks.get(network)
    configs = (net.attrs.get("IPAM") or {}).get("Config") or []
    if not configs or not configs[0].get("Subnet"):
        return None
    subnet = ipaddress.ip_network(configs[0]["Subnet"])
    used = {configs[0].get("Gateway")}
    for c in (net.attrs.get("Containers") or {}).values():
        used.add(str(c.get("IPv4Address", "")).split("/")[0])
    with _lock:
        now = time.monotonic()
        for addr, when in list(_recent.items()):
            if now - when > 60:
                del _recent[addr]
        for host in subnet.hosts():
            addr = str(host)
            if addr not in used and addr not in _recent and not addr.endswith(".1"):
                _recent[addr] = now
                return addr
    return None


def _address(container: Any, network: str | None) -> str | None:
    """The container's IPv4 address on ``network`` (or the default bridge)."""
    ipam = (
        (container.attrs["NetworkSettings"].get("Networks") or {}).get(network or "") or {}
    ).get("IPAMConfig") or {}
    if ipam.get("IPv4Address"):
        return str(ipam["IPv4Address"])  # fixed at start: kept after the container ends
    nets = container.attrs["NetworkSettings"].get("Networks") or {}
    net = (nets.get(network) if network else None) or nets.get("bridge") or {}
    found = net.get("IPAddress") or container.attrs["NetworkSettings"].get("IPAddress")
    return str(found) if found else None


def _wait_while(job: Any, status: str) -> None:
    job.advance()
    while job.status == status and not job.stop:
        time.sleep(0.2)


def _retry_rules(job: Any) -> tuple[int, list[dict[str, Any]]]:
    """(attempts, evaluateOnExit rules) of the job's retry strategy (its definition's)."""
    strategy = job.job_definition.retry_strategy or {}
    attempts = int(strategy.get("attempts") or 1)
    return max(1, min(attempts, 10)), list(strategy.get("evaluateOnExit") or [])


def _retries(rules: list[dict[str, Any]], code: int | None, status_reason: str) -> bool:
    """Whether a failed attempt is retried: the first rule that matches decides (its
    ``action``); none matching retries (AWS Batch's ``evaluateOnExit``)."""
    import fnmatch

    for rule in rules:
        checks = []
        if "onExitCode" in rule:
            checks.append(code is not None and fnmatch.fnmatchcase(str(code), rule["onExitCode"]))
        if "onStatusReason" in rule:
            checks.append(fnmatch.fnmatchcase(status_reason, rule["onStatusReason"]))
        if "onReason" in rule:
            checks.append(fnmatch.fnmatchcase("", rule["onReason"]))  # no container reason here
        if checks and all(checks):
            return str(rule.get("action", "")).lower() == "retry"
    return True


#: The reason AWS Batch gives a job (or node) whose essential container exited.
EXITED = "Essential container in task exited"
#: The tag of a compute environment that has no capacity (an emulator knob: AWS's EC2
#: can lack instances of a type, which nothing here can run out of).
NO_CAPACITY_TAG = "torchx-dev-aws/no-capacity"


def _no_capacity(job: Any) -> str | None:
    """AWS's reason for a job held in RUNNABLE when every compute environment of its
    queue is tagged :data:`NO_CAPACITY_TAG` (None when one has capacity)."""
    envs = list(getattr(job.job_queue, "environments", None) or [])
    types = []
    for env in envs:
        if NO_CAPACITY_TAG not in job.backend.list_tags_for_resource(env.arn):
            return None
        types += list((env.compute_resources or {}).get("instanceTypes") or [])
    if not envs:
        return None
    return (
        "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity "
        f"requested for instance type [{(types or ['optimal'])[0]}]"
    )


#: The reason of each job held in RUNNABLE, by job id (DescribeJobs gives it).
_held: dict[str, str] = {}


def _wait_for_capacity(job: Any) -> None:
    """Holds a RUNNABLE job while its queue has no capacity, saying why (as AWS does)."""
    try:
        while not job.stop and (reason := _no_capacity(job)):
            _held[job.job_id] = reason
            time.sleep(0.5)
    finally:
        _held.pop(job.job_id, None)


def _run_job(job: Any, multi: bool) -> None:
    """The job's attempts, as AWS Batch runs them (see the module docstring)."""
    attempts, rules = _retry_rules(job)
    try:
        _wait_while(job, JobStatus.SUBMITTED)
        _wait_while(job, JobStatus.PENDING)
        attempt = 0
        while True:
            attempt += 1
            _wait_for_capacity(job)
            _wait_while(job, JobStatus.RUNNABLE)
            _wait_while(job, JobStatus.STARTING)
            if job.stop:  # cancelled before it started: no attempt
                job._mark_stopped(success=False)
                return
            job.job_started_at = datetime.now()
            job._start_attempt()
            code, stream = _run_attempt(job, multi, attempt)
            record = job.latest_attempt
            record["container"]["logStreamName"] = stream
            record["container"]["exitCode"] = code
            record["stoppedAt"] = models.datetime2int_milliseconds(datetime.now())
            reason = job.job_stopped_reason if job.stop else EXITED
            record["statusReason"] = reason
            job.exit_code = code
            job.log_stream_name = stream
            if job.stop:
                job._mark_stopped(success=False)
                return
            if code == 0:
                job._mark_stopped(success=True)
                return
            if attempt >= attempts or not _retries(rules, code, reason):
                job.job_stopped_reason = EXITED
                job._mark_stopped(success=False)
                return
            job.latest_attempt = None  # kept in job.attempts; the next one is new
            job.status = JobStatus.RUNNABLE  # a new attempt: back to the queue
    except Exception as e:  # as moto does: a job that cannot run fails
        models.logger.error("Failed to run AWS Batch job %s: %s", job.name, e)
        job._mark_stopped(success=False)


def _run_attempt(job: Any, multi: bool, attempt: int) -> tuple[int | None, str]:
    """Runs one attempt's nodes; (the main node's exit code, its log stream).

    The attempt ends when the main node (node 0) exits: the child nodes still running
    are then stopped. A child node that ends, however it ends, changes nothing else.
    """
    import docker

    with _lock:
        job._torchx_nodes = {}  # each attempt updates its node jobs
    containers: list[Any] = []
    try:
        network = models.settings.moto_network_name()
        mode = models.settings.moto_network_mode()
        main_ip = None
        specs = _node_specs(job) if multi else [job.job_definition.container_properties]
        job._log_backend.ensure_log_group(job._log_group)
        for index, spec in enumerate(specs):
            if job.stop:
                break
            env = {e["name"]: e["value"] for e in spec.get("environment", [])}
            env["AWS_BATCH_JOB_ID"] = job.job_id
            env["AWS_BATCH_JOB_ATTEMPT"] = str(attempt)
            if multi:
                env["AWS_BATCH_JOB_ID"] = f"{job.job_id}#{index}"
                env["AWS_BATCH_JOB_NODE_INDEX"] = str(index)
                env["AWS_BATCH_JOB_MAIN_NODE_INDEX"] = "0"
                env["AWS_BATCH_JOB_NUM_NODES"] = str(len(specs))
            if main_ip:
                env["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"] = main_ip
            kwargs: dict[str, Any] = {}
            if network:
                kwargs["network"] = network
            elif mode:
                kwargs["network_mode"] = mode
            volumes = {v["name"]: v["host"] for v in spec.get("volumes", []) if "host" in v}
            mounts = [
                docker.types.Mount(
                    m["containerPath"],
                    volumes[m["sourceVolume"]]["sourcePath"],
                    type="bind",
                    read_only=m.get("readOnly", False),
                )
                for m in spec.get("mountPoints", [])
                if m["sourceVolume"] in volumes
            ]
            if index == 0 and multi and network:
                # the main node's address is fixed before it starts: a node that ends at
                # once has no address left to read, yet the others must be given it
                fixed = _free_address(job.docker_client, network)
                if fixed:
                    config = job.docker_client.api.create_endpoint_config(ipv4_address=fixed)
                    kwargs["networking_config"] = {network: config}
            name = f"{job.job_name}-{job.job_id}-{attempt}-{index}"

            def start(
                kwargs: dict[str, Any] = kwargs,
                spec: dict[str, Any] = spec,
                env: dict[str, str] = env,
                mounts: list[Any] = mounts,
                name: str = name,
            ) -> Any:
                return job.docker_client.containers.run(
                    spec.get("image", "alpine:latest"),
                    spec.get("command"),
                    detach=True,
                    environment=env,
                    mounts=mounts,
                    privileged=spec.get("privileged", False),
                    name=name,
                    log_config=docker.types.LogConfig(type=docker.types.LogConfig.types.JSON),
                    **kwargs,
                )

            try:
                container = start()
            except docker.errors.APIError:
                if "networking_config" not in kwargs:
                    raise
                # the engine refused the fixed address: start it as moto would
                job.docker_client.containers.get(name).remove(force=True)
                kwargs.pop("networking_config")
                container = start()
            container.reload()
            containers.append(container)
            stream = _stream_name(job, index, multi, attempt)
            job._log_backend.ensure_log_stream(job._log_group, stream)
            _set_node(
                job,
                index,
                status="RUNNING",
                logStreamName=stream,
                startedAt=models.datetime2int_milliseconds(datetime.now()),
            )
            if index == 0:
                main_ip = _address(container, network)
                job.log_stream_name = stream  # the job's record names it while it runs
        main_code: int | None = None
        running = set(range(len(containers)))
        while 0 in running and not job.stop:
            time.sleep(0.2)
            for index in sorted(running):
                container = containers[index]
                container.reload()
                stream = _stream_name(job, index, multi, attempt)
                _forward_logs(job, index, container, stream)
                if container.status in ("running", "created"):
                    continue
                running.discard(index)
                code = int(container.attrs["State"]["ExitCode"])
                _forward_logs(job, index, container, stream)  # what it wrote last
                if index == 0:
                    main_code = code
                _set_node(
                    job,
                    index,
                    exitCode=code,
                    stoppedAt=models.datetime2int_milliseconds(datetime.now()),
                    status="SUCCEEDED" if code == 0 else "FAILED",
                    statusReason=EXITED,
                )
        why = job.job_stopped_reason if job.stop else "Stopped: the main node exited"
        for index in sorted(running):  # stopped: terminated, or the main node exited
            container = containers[index]
            try:
                container.kill()
                container.wait(timeout=30)
                container.reload()
            except Exception:
                pass
            code = container.attrs["State"].get("ExitCode")
            _forward_logs(job, index, container, _stream_name(job, index, multi, attempt))
            if index == 0:
                main_code = code
            _set_node(
                job,
                index,
                exitCode=code,
                status="FAILED",
                stoppedAt=models.datetime2int_milliseconds(datetime.now()),
                statusReason=why,
            )
        return main_code, _stream_name(job, 0, multi, attempt)
    finally:
        for container in containers:
            try:
                container.remove(force=True)
            except Exception:
                pass


def _run(self: Any) -> None:
    if self.job_definition.type == "multinode":
        _run_job(self, multi=True)
    elif self.job_definition.container_properties is not None:
        _run_job(self, multi=False)
    else:  # EKS jobs: moto's own
        _original_run(self)


def _describe_jobs(self: Any, jobs: list[str] | None) -> list[dict[str, Any]]:
    answer = _original_describe_jobs(self, jobs)
    for record in answer:  # moto's record of a container job drops its exit code
        job = self._jobs.get(record.get("jobId"))
        if job is not None and job.exit_code is not None and "container" in record:
            record["container"].setdefault("exitCode", job.exit_code)
        if job is not None and job.job_definition.retry_strategy:  # AWS returns it too
            record.setdefault("retryStrategy", job.job_definition.retry_strategy)
        held = _held.get(str(record.get("jobId")))
        if held and record.get("status") == "RUNNABLE":
            record["statusReason"] = held
    for wanted in jobs or []:
        job_id, sep, index = str(wanted).partition("#")
        job = self._jobs.get(job_id)
        if not sep or not index.isdigit() or job is None:
            continue
        if job.job_definition.type != "multinode":
            continue
        with _lock:
            node = dict(getattr(job, "_torchx_nodes", {}).get(int(index), {}))
        if not node:
            continue  # not started yet: AWS has no node job either
        record: dict[str, Any] = {
            "jobId": wanted,
            "jobArn": f"{job.arn}#{index}",
            "jobName": job.job_name,
            "jobQueue": job.job_queue.arn,
            "jobDefinition": job.job_definition.arn,
            "createdAt": models.datetime2int_milliseconds(job.job_created_at),
            "status": node.get("status", "RUNNING"),
            "nodeDetails": {"nodeIndex": int(index), "isMainNode": index == "0"},
            "container": {},
            "tags": self.list_tags_for_resource(job.arn),
        }
        for key in ("startedAt", "stoppedAt", "statusReason"):
            if node.get(key) is not None:
                record[key] = node[key]
        for key in ("exitCode", "logStreamName"):
            if node.get(key) is not None:
                record["container"][key] = node[key]
        answer.append(record)
    return answer


_moto_get_log_events = LogStream.get_log_events


def _get_log_events(self: Any, start_time: Any, end_time: Any, *args: Any) -> Any:
    """GetLogEvents with ``endTime`` exclusive, as AWS documents it (moto includes it)."""
    if end_time:
        end_time = int(end_time) - 1
    return _moto_get_log_events(self, start_time, end_time, *args)


LogStream.get_log_events = _get_log_events  # type: ignore[method-assign]
models.Job.run = _run  # type: ignore[method-assign]
models.BatchBackend.describe_jobs = _describe_jobs  # type: ignore[method-assign]
aws_moto_sagemaker.install()

if __name__ == "__main__":
    from moto.server import main

    sys.exit(main(sys.argv[1:]))
