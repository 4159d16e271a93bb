"""Core types: constructor compatibility with the reference, resources, macros and status."""

from __future__ import annotations

import copy
import re

import pytest

from torchx.specs import (
    NULL_RESOURCE,
    AppDef,
    AppDryRunInfo,
    AppState,
    AppStatus,
    AppStatusError,
    InvalidResourceException,
    ReplicaState,
    ReplicaStatus,
    Resource,
    RetryPolicy,
    Role,
    RoleStatus,
    SpecError,
    is_terminal,
    macros,
    resource,
)


def test_role_positional_order_matches_reference() -> None:
    role = Role("trainer", "img", 2, "train.py", ["--x"], {"A": "1"}, 4, 3, RetryPolicy.REPLICA)
    assert (role.min_replicas, role.entrypoint, role.num_replicas, role.max_retries) == (
        2,
        "train.py",
        4,
        3,
    )
    assert role.retry_policy is RetryPolicy.REPLICA
    assert role.resource == NULL_RESOURCE and role.resource is not NULL_RESOURCE
    assert role.mounts == [] and role.workspace is None and role.overrides == {}


def test_defaults_are_not_shared() -> None:
    a, b = Role("a", "i"), Role("b", "i")
    a.args.append("x")
    a.env["K"] = "V"
    assert b.args == [] and b.env == {}
    assert AppDef("x").roles == [] and AppDef("x").metadata == {}


def test_pre_proc_default_is_identity() -> None:
    info: AppDryRunInfo[dict[str, int]] = AppDryRunInfo({"a": 1}, str)
    assert Role("r", "i").pre_proc("local", info) is info


def test_dryrun_info_is_filled_through_public_setters() -> None:
    info: AppDryRunInfo[dict[str, int]] = AppDryRunInfo({"a": 1}, str)
    with pytest.raises(SpecError, match="has no app: it was not made by Scheduler"):
        info.app  # noqa: B018
    app = AppDef("x", [Role("r", "i")])
    info.app, info.cfg, info.scheduler = app, {"queue": "q"}, "my_sched"
    assert (info.app, info.cfg, info.scheduler) == (app, {"queue": "q"}, "my_sched")
    # upstream TorchX's names read the same values, for callers written against it
    assert (info._app, info._cfg, info._scheduler) == (app, {"queue": "q"}, "my_sched")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("app", {"name": "x"}, "AppDryRunInfo.app must be an AppDef, got dict"),
        ("cfg", ["queue=q"], "AppDryRunInfo.cfg must be a mapping of run options, got list"),
        ("scheduler", "", "AppDryRunInfo.scheduler must be a scheduler's name, got ''"),
        ("scheduler", None, "AppDryRunInfo.scheduler must be a scheduler's name, got None"),
    ],
)
def test_dryrun_info_setters_refuse_wrong_types(field: str, value: object, message: str) -> None:
    info: AppDryRunInfo[dict[str, int]] = AppDryRunInfo({"a": 1}, str)
    with pytest.raises(SpecError, match=f"^{re.escape(message)}$"):
        setattr(info, field, value)
    assert getattr(info, "_" + field) is None, "a refused value is not kept"


def test_resource_helpers() -> None:
    assert resource() == Resource(cpu=2, gpu=0, memMB=1024)
    assert resource(cpu=2, gpu=1, memMB=10, h="cpu.nano") == resource(h="cpu.nano")
    named = resource(h="gpu.small")
    assert (named.cpu, named.gpu, named.memMB) == (8, 1, 32 * 1024)
    assert named.get_resource_name() == "gpu.small" and not named.is_fractional()
    assert Resource(1, 0, 1).get_resource_name() is None
    with pytest.raises(InvalidResourceException, match="non-negative integer"):
        resource(cpu=-1)
    with pytest.raises(InvalidResourceException, match="non-empty string"):
        resource(h="")


def test_resource_copy_is_deep() -> None:
    base = Resource(1, 0, 1, capabilities={"nested": {"a": 1}})
    copied = Resource.copy(base, extra=True)
    copied.capabilities["nested"]["a"] = 2
    assert base.capabilities == {"nested": {"a": 1}}
    assert copied.capabilities["extra"] is True


def test_app_state_helpers() -> None:
    assert ReplicaState is AppState
    terminal = {s for s in AppState if is_terminal(s)}
    assert terminal == {AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED}
    assert AppState.RUNNING.is_started() and not AppState.PENDING.is_started()
    assert str(AppState.FAILED) == "FAILED" and str(RetryPolicy.ROLE) == "ROLE"


def test_the_status_core_names_the_states_of_app_state() -> None:
    from torchx.specs import status

    assert tuple(AppState.__members__) == status.STATES
    assert {s.name for s in AppState if s.is_terminal()} == status.ENDED


def test_a_status_prints_through_its_record() -> None:
    from torchx.specs.status import format_status

    st = AppStatus(
        AppState.RUNNING,
        msg="waiting",
        ui_url="http://ui",
        start_time=0.0,
        roles=[RoleStatus("a", [ReplicaStatus(2, AppState.RUNNING, "a", "")])],
    )
    assert st.record() == {
        "state": "RUNNING",
        "num_restarts": 0,
        "msg": "waiting",
        "ui_url": "http://ui",
        "start_time": 0.0,
        "end_time": None,
        "roles": [("a", [(2, "RUNNING", None, "")])],
    }
    assert st.format() == format_status(st.record(), times=False)
    assert (
        st.format()
        == "State: RUNNING\nNum restarts: 0\nMsg: waiting\nUI: http://ui\nRoles:\n  a:\n    a/2  RUNNING"
    )
    # the times come after the restarts (what torchx status prints)
    assert format_status(st.record()).splitlines()[2].startswith("Started: ")


def test_status_format_and_raise() -> None:
    st = AppStatus(
        AppState.FAILED,
        num_restarts=2,
        msg="boom",
        roles=[
            RoleStatus("a", [ReplicaStatus(0, AppState.FAILED, "a", "h", exit_code=3)]),
            RoleStatus("b", [ReplicaStatus(0, AppState.SUCCEEDED, "b", "")]),
        ],
    )
    text = st.format()
    assert (
        "State: FAILED" in text and "Num restarts: 2" in text and "exit=3" in text and "b/0" in text
    )
    assert "b/0" not in st.format(filter_roles=["a"])
    with pytest.raises(AppStatusError) as err:
        st.raise_for_status()
    assert err.value.app_status is st


def test_an_unknown_restart_count_reads_as_unknown_not_minus_one() -> None:
    # -1 is what a scheduler that cannot count restarts reports (DescribeAppResponse's default)
    assert "Num restarts: unknown" in AppStatus(AppState.RUNNING, num_restarts=-1).format()
    assert "Num restarts: 0" in AppStatus(AppState.RUNNING).format()


def test_macros_substitute_args_env_metadata_only() -> None:
    role = Role(
        "r",
        image=macros.img_root,
        entrypoint=macros.app_id,
        args=[macros.app_id, f"--rank0=$${{{macros.rank0_env}:=localhost}}", "${unknown}"],
        env={"ID": macros.replica_id},
        metadata={"k": [macros.app_id], "n": 3},
    )
    original = copy.deepcopy(role)
    out = macros.Values(img_root="/img", app_id="a1", replica_id="2", rank0_env="MASTER").apply(
        role
    )
    assert out.args == ["a1", "--rank0=${MASTER:=localhost}", "${unknown}"]
    assert out.env == {"ID": "2"} and out.metadata == {"k": ["a1"], "n": 3}
    assert out.image == macros.img_root and out.entrypoint == macros.app_id  # not substituted
    assert role == original


def test_status_format_shows_the_errors_message_not_its_json() -> None:
    import json

    from torchx.specs.api import AppState, AppStatus, ReplicaStatus, RoleStatus
    from torchx.specs.structured_errors import error_message

    error = json.dumps(
        {"message": {"message": "ValueError: bad batch\nsecond line", "extraInfo": {"a": "b"}}}
    )
    rep = ReplicaStatus(1, AppState.FAILED, "train", "h", structured_error_msg=error)
    text = AppStatus(
        AppState.FAILED, structured_error_msg=error, roles=[RoleStatus("train", [rep])]
    ).format()
    assert "Error: ValueError: bad batch" in text.splitlines()
    assert "train/1  FAILED  host=h  error=ValueError: bad batch" in text
    assert "extraInfo" not in text and "second line" not in text
    # older torch wrote a bare string; a scheduler may put plain text; long ones are cut
    assert error_message(json.dumps({"message": "RuntimeError: x"})) == "RuntimeError: x"
    assert error_message("  \n plain text\nmore") == "plain text"
    assert error_message("<NONE>") is None and error_message("") is None
    assert len(error_message("x" * 1000) or "") == 300
