"""SageMaker training jobs that run, for dev/aws-moto.py (moto completes every job at once).

Imported by ``dev/aws-moto.py``, which moto's server runs. moto 5.2 records a training
job as ``Completed`` the moment it is created, runs nothing, writes no log and answers
``StopTrainingJob`` with HTTP 500. Here each training job runs as the SageMaker API
reference documents (dev/README.md names the pages):

* ``CreateTrainingJob``: the job is ``InProgress`` (``SecondaryStatus`` ``Starting``,
  then ``Downloading``, then ``Training`` once its containers run), one container per
  instance (``ResourceConfig.InstanceCount``) of ``TrainingImage`` with
  ``ContainerEntrypoint``/``ContainerArguments`` and the request's ``Environment``, on
  the Docker engine of ``DOCKER_HOST``, each reachable by its host name ``algo-<k>``
  and given ``/opt/ml/input/config/resourceconfig.json`` (``current_host``, ``hosts``,
  the instance type and its one instance group, ``homogeneousCluster``);
* each instance's output goes, as it comes, to the CloudWatch Logs stream
  ``<job>/algo-<k>-<epoch seconds>`` of ``/aws/sagemaker/TrainingJobs``;
* every instance exited 0: ``Uploading``, then ``Completed``; one exited non-zero: the
  others are stopped and the job is ``Failed`` with a ``FailureReason`` naming the
  instance and its exit code;
* a job still running after ``StoppingCondition.MaxRuntimeInSeconds`` (counted from
  ``Training``) is stopped as by ``StopTrainingJob``, and ends ``Stopped`` with
  ``SecondaryStatus`` ``MaxRuntimeExceeded``;
* ``StopTrainingJob`` of an ``InProgress`` job: ``Stopping`` at once, the containers
  get SIGTERM (SIGKILL after ``STOP_GRACE`` seconds; AWS gives 120), then ``Stopped``;
  of a job not ``InProgress``: a ``ValidationException``, as AWS answers;
* ``DescribeTrainingJob`` gives back ``Environment`` (moto drops it).
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import aws_moto_logs  # next to this file
from moto.core.responses import ActionResult
from moto.core.utils import unix_time_millis, utcnow
from moto.logs.models import logs_backends
from moto.sagemaker import responses
from moto.sagemaker.exceptions import ValidationError

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
#: The instance group SageMaker names in resourceconfig.json for a job of one instance type.
GROUP = "homogeneousCluster"
#: Seconds a stopped job's containers have between SIGTERM and SIGKILL.
STOP_GRACE = 10
#: Per job ARN: the emulator's own state (never an attribute of the job: moto's
#: response is made of every attribute the job object has).
_state: dict[str, dict[str, Any]] = {}
_lock = threading.Lock()
_original_create = responses.SageMakerResponse.create_training_job


def _transition(job: Any, status: str, message: str) -> None:
    now = utcnow()
    with _lock:
        for step in job.secondary_status_transitions:
            step.setdefault("EndTime", now)
        job.secondary_status_transitions.append(
            {"Status": status, "StartTime": now, "StatusMessage": message}
        )
        job.secondary_status = status
        job.last_modified_time = now


def _end(job: Any, status: str, secondary: str, message: str, reason: str | None) -> None:
    _transition(job, secondary, message)
    with _lock:
        job.training_end_time = utcnow()
        if reason:
            job.failure_reason = reason
        job.training_job_status = status


def _forward(logs: Any, container: Any, stream: str, seen: dict[str, int]) -> None:
    """Puts the container's lines not sent yet into its stream (:mod:`aws_moto_logs`)."""
    from moto.core.parse import default_timestamp_parser

    def millis(stamp: str) -> int:
        return int(unix_time_millis(default_timestamp_parser(stamp)))

    events = aws_moto_logs.new_events(container, millis, seen)
    if events:
        logs.put_log_events(LOG_GROUP, stream, events)


def _run(job: Any, account: str, region: str, env: dict[str, str]) -> None:
    import docker
    from moto.batch.models import settings

    state = _state[job.arn]
    spec = job.algorithm_specification or {}
    count = int((job.resource_config or {}).get("InstanceCount") or 1)
    hosts = [f"algo-{k + 1}" for k in range(count)]
    logs = logs_backends[account][region]
    logs.ensure_log_group(LOG_GROUP)
    client = docker.from_env()
    network = settings.moto_network_name()
    containers: list[Any] = []
    config_dir = Path(tempfile.mkdtemp(prefix="torchx-dev-sagemaker-"))
    try:
        _transition(job, "Downloading", "Downloading the training image")
        epoch = int(time.time())
        for host in hosts:
            if state["stop"]:
                break
            conf = config_dir / host
            conf.mkdir()
            itype = (job.resource_config or {}).get("InstanceType")
            group = {"instance_group_name": GROUP, "instance_type": itype, "hosts": hosts}
            config = {
                "current_host": host,
                "current_instance_type": itype,
                "current_group_name": GROUP,
                "hosts": hosts,
                "instance_groups": [group],
                "network_interface_name": "eth0",
            }
            (conf / "resourceconfig.json").write_text(json.dumps(config))
            kwargs: dict[str, Any] = {"network": network} if network else {}
            container = client.containers.create(
                spec.get("TrainingImage"),
                spec.get("ContainerArguments"),
                entrypoint=spec.get("ContainerEntrypoint"),
                environment=env,
                hostname=host,
                name=f"{job.training_job_name}-{host}",
                mounts=[
                    docker.types.Mount(
                        "/opt/ml/input/config", str(conf), type="bind", read_only=True
                    )
                ],
                log_config=docker.types.LogConfig(type=docker.types.LogConfig.types.JSON),
                **kwargs,
            )
            if network:  # the others find it by its host name
                client.networks.get(network).disconnect(container)
                client.networks.get(network).connect(container, aliases=[host])
            container.start()
            stream = f"{job.training_job_name}/{host}-{epoch}"
            logs.ensure_log_stream(LOG_GROUP, stream)
            containers.append((host, container, stream, {}))
        if not state["stop"]:
            with _lock:
                job.training_start_time = utcnow()
            _transition(job, "Training", "Training image download completed. Training in progress.")
        failed: tuple[str, int] | None = None
        running = list(containers)
        limit = (job.stopping_condition or {}).get("MaxRuntimeInSeconds")
        deadline = time.monotonic() + float(limit) if limit else None
        timed_out = False
        while running and not state["stop"] and failed is None and not timed_out:
            time.sleep(0.2)
            timed_out = deadline is not None and time.monotonic() > deadline
            for entry in list(running):
                host, container, stream, seen = entry
                container.reload()
                _forward(logs, container, stream, seen)
                if container.status in ("running", "created"):
                    continue
                running.remove(entry)
                _forward(logs, container, stream, seen)
                code = int(container.attrs["State"]["ExitCode"])
                if code != 0 and failed is None:
                    failed = (host, code)
        for _host, container, stream, seen in running:  # stopped, or another failed
            try:
                container.stop(timeout=STOP_GRACE)
                container.reload()  # ended: its last line is sent even if unended
            except Exception:
                pass
            _forward(logs, container, stream, seen)
        if state["stop"]:
            _end(job, "Stopped", "Stopped", "Training job stopped", None)
        elif timed_out and running:
            message = f"Training job runtime exceeded MaxRuntimeInSeconds ({limit} s)"
            _end(job, "Stopped", "MaxRuntimeExceeded", message, None)
        elif failed is not None:
            host, code = failed
            reason = f"AlgorithmError: the command of {host} exited with code {code}"
            _end(job, "Failed", "Failed", "Training job failed", reason)
        else:
            _transition(job, "Uploading", "Uploading generated training model")
            _end(job, "Completed", "Completed", "Training job completed", None)
    except Exception as e:  # a job that cannot run fails, as on AWS
        _end(job, "Failed", "Failed", "Training job failed", f"ClientError: {e}")
    finally:
        for _host, container, _stream, _seen in containers:
            try:
                container.remove(force=True)
            except Exception:
                pass


def create_training_job(self: Any) -> ActionResult:
    """moto's CreateTrainingJob, then the job's run in a thread of its own."""
    result = _original_create(self)
    name = self._get_param("TrainingJobName")
    job = self.sagemaker_backend.training_jobs[name]
    env = dict(self._get_param("Environment") or {})
    with _lock:
        job.environment = env
        job.training_job_status = "InProgress"
        job.secondary_status = "Starting"
        job.secondary_status_transitions = [
            {
                "Status": "Starting",
                "StartTime": job.creation_time,
                "StatusMessage": "Preparing the instances for training",
            }
        ]
        job.training_start_time = None
        job.training_end_time = None
        job.final_metric_data_list = None
        _state[job.arn] = {"stop": False}
    account, region = self.current_account, self.region
    threading.Thread(target=_run, args=(job, account, region, env), daemon=True).start()
    return result


def stop_training_job(self: Any) -> ActionResult:
    """StopTrainingJob: an InProgress job goes Stopping, then (its run ends it) Stopped."""
    name = self._get_param("TrainingJobName")
    job = self.sagemaker_backend.training_jobs.get(name)
    if job is None:
        raise ValidationError(message=f"Could not find training job '{name}'.")
    if job.training_job_status != "InProgress":
        raise ValidationError(
            message=f"The training job {name} is not InProgress: it is {job.training_job_status}."
        )
    with _lock:
        job.training_job_status = "Stopping"
        _state.setdefault(job.arn, {})["stop"] = True
    _transition(job, "Stopping", "Stopping the training job")
    return ActionResult({})


def install() -> None:
    """Patches moto's SageMaker responses (called once, at the server's start)."""
    responses.SageMakerResponse.create_training_job = create_training_job  # type: ignore[method-assign]
    responses.SageMakerResponse.stop_training_job = stop_training_job  # type: ignore[attr-defined]
