"""A SageMaker training job's answers as TorchX states and responses. Pure: no AWS call.

``DescribeTrainingJob`` (and ``Search``) give a job's ``TrainingJobStatus``; while it is
``InProgress``, its ``SecondaryStatus`` says whether the command runs yet (PENDING until
the instances train). A job SageMaker stopped at its ``StoppingCondition`` limit is
``Stopped`` with ``SecondaryStatus`` ``MaxRuntimeExceeded`` (or ``MaxWaitTimeExceeded``):
FAILED here, as a timed-out job is on every scheduler, not CANCELLED. SageMaker has no
per-instance state: every replica is reported in the job's.

>>> to_state("InProgress"), to_state("Stopped"), to_state("Hibernating")
(<AppState.RUNNING: 3>, <AppState.CANCELLED: 6>, <AppState.UNKNOWN: 7>)
>>> job_state({"TrainingJobStatus": "InProgress", "SecondaryStatus": "Downloading"})
<AppState.PENDING: 2>
>>> job_state({"TrainingJobStatus": "Stopped", "SecondaryStatus": "MaxRuntimeExceeded"})
<AppState.FAILED: 5>
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from torchx.schedulers.contract.api import DescribeAppResponse, ListAppResponse
from torchx.schedulers.contract.states import replicas_in_app_state, to_app_state
from torchx.specs import AppState
from torchx_aws.sagemaker.request import (
    APP_NAME_TAG,
    APPDEF_HYPERPARAMETER,
    ROLE_NAME_TAG,
    appdef_and_options_of,
)

__all__ = [
    "JOB_STATE",
    "TIMED_OUT",
    "describe_response",
    "job_state",
    "list_response",
    "to_state",
]

#: SageMaker's training job states (``TrainingJobStatus``).
JOB_STATE: dict[str, AppState] = {
    "InProgress": AppState.RUNNING,
    "Completed": AppState.SUCCEEDED,
    "Failed": AppState.FAILED,
    "Stopping": AppState.CANCELLED,
    "Stopped": AppState.CANCELLED,
}

#: ``SecondaryStatus`` values of an ``InProgress`` job whose command is not running yet.
_NOT_YET_TRAINING = frozenset(
    {
        "Starting",
        "Pending",
        "LaunchingMLInstances",
        "PreparingTrainingStack",
        "Downloading",
        "DownloadingTrainingImage",
        "Restarting",
        "Interrupted",
    }
)


#: ``SecondaryStatus`` values of a ``Stopped`` job that SageMaker stopped itself, at the
#: ``StoppingCondition``'s limit: the app ran out of time (FAILED), nobody cancelled it.
TIMED_OUT = frozenset({"MaxRuntimeExceeded", "MaxWaitTimeExceeded"})


def to_state(status: str) -> AppState:
    """The AppState of a ``TrainingJobStatus`` (UNKNOWN for one SageMaker adds later)."""
    return to_app_state(status, JOB_STATE)


def job_state(job: Mapping[str, Any]) -> AppState:
    """The AppState of a training job: its status, PENDING while its instances get ready,
    FAILED when SageMaker stopped it at its time limit (``TIMED_OUT``)."""
    state = to_state(str(job.get("TrainingJobStatus", "")))
    if state == AppState.RUNNING and job.get("SecondaryStatus") in _NOT_YET_TRAINING:
        return AppState.PENDING
    if job.get("TrainingJobStatus") == "Stopped" and job.get("SecondaryStatus") in TIMED_OUT:
        return AppState.FAILED
    return state


def _seconds(when: Any) -> float | None:
    return when.timestamp() if isinstance(when, datetime) else None


def describe_response(
    app_id: str, region: str | None, job: Mapping[str, Any], names: Mapping[str, str]
) -> DescribeAppResponse:
    """``describe``'s answer from a ``DescribeTrainingJob`` record and the app's and role's
    names (by their tags' keys, ``APP_NAME_TAG`` and ``ROLE_NAME_TAG``); the submitted
    AppDef's roles, name and metadata from its hyperparameters
    (:func:`~torchx_aws.sagemaker.request.appdef_of`). ``env`` is the job's
    ``Environment`` and its own ``HyperParameters`` (the ``environment`` and
    ``hyperparameters`` run options among them), whose secrets ``torchx status`` masks."""
    state = job_state(job)
    role = names.get(ROLE_NAME_TAG) or job["TrainingJobName"]
    count = int((job.get("ResourceConfig") or {}).get("InstanceCount") or 1)
    msg = str(job.get("FailureReason") or "")
    if not msg:
        transitions = job.get("SecondaryStatusTransitions") or []
        if transitions:
            msg = str(transitions[-1].get("StatusMessage") or "")
    if state == AppState.FAILED and job.get("SecondaryStatus") in TIMED_OUT:
        limit = job["SecondaryStatus"]
        msg = f"SageMaker stopped the job: {limit}" + (f" ({msg})" if msg else "")
    name = job["TrainingJobName"]
    app, run_options = appdef_and_options_of(job)
    return DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=0,
        msg=msg,
        ui_url=(
            f"https://{region}.console.aws.amazon.com/sagemaker/home?region={region}#/jobs/{name}"
        ),
        roles_statuses=replicas_in_app_state({role: count}, state),
        roles=list(app.roles) if app is not None else [],
        metadata=dict(app.metadata) if app is not None else {},
        run_options=run_options,
        name=app.name if app is not None else names.get(APP_NAME_TAG) or name,
        start_time=_seconds(job.get("TrainingStartTime") or job.get("CreationTime")),
        end_time=_seconds(job.get("TrainingEndTime")) if state.is_terminal() else None,
        env={
            **{
                str(k): str(v)
                for k, v in (job.get("HyperParameters") or {}).items()
                if not str(k).startswith(APPDEF_HYPERPARAMETER)
            },
            **{str(k): str(v) for k, v in (job.get("Environment") or {}).items()},
        },
    )


def list_response(app_id: str, job: Mapping[str, Any]) -> ListAppResponse:
    """``list``'s entry from a ``Search`` result's training job (its tags included)."""
    tags = {t.get("Key"): t.get("Value") for t in job.get("Tags") or []}
    state = job_state(job)
    return ListAppResponse(
        app_id=app_id,
        state=state,
        name=str(tags.get(APP_NAME_TAG) or job["TrainingJobName"]),
        start_time=_seconds(job.get("TrainingStartTime") or job.get("CreationTime")),
        end_time=_seconds(job.get("TrainingEndTime")) if state.is_terminal() else None,
    )
