"""The engine's answers turned into an app's status, without an engine."""

from __future__ import annotations

from typing import Any

from torchx_docker import labels
from torchx_docker.status import (
    add_inspect,
    app_status,
    describe_response,
    seen_from_list,
    to_inspect,
)

from torchx.specs import AppState


def _entry(role: str, k: int, state: str, status: str = "", **extra: str) -> dict[str, Any]:
    lab = labels.replica_labels("app", role, k)
    lab.update(extra)
    return {
        "Id": f"id-{role}-{k}",
        "Names": [f"/app-{role}-{k}"],
        "Image": "img",
        "Labels": lab,
        "State": state,
        "Status": status,
    }


def _marker(kind: str, name: str, **extra: str) -> dict[str, Any]:
    return {
        "Id": name,
        "Names": [f"/{name}"],
        "Image": "img",
        "Labels": labels.marker_labels("app", kind, **extra),
        "State": "created",
        "Status": "Created",
    }


def test_exit_codes_come_from_the_list_answer() -> None:
    seen = seen_from_list(_entry("r", 0, "exited", "Exited (3) 2 seconds ago"))
    assert seen.exit_code == 3 and seen.failed and not seen.needs_inspect()
    killed = seen_from_list(_entry("r", 0, "exited", "Exited (137) 2 seconds ago"))
    assert killed.failed and killed.needs_inspect()  # out of memory, or another SIGKILL?
    ok = seen_from_list(_entry("r", 1, "exited", "Exited (0) 1 second ago"))
    assert ok.exit_code == 0 and not ok.failed and not ok.needs_inspect()
    running = seen_from_list(_entry("r", 2, "running", "Up 3 seconds"))
    assert running.exit_code is None and not running.needs_inspect()


def test_one_failed_replica_fails_the_app_and_is_named() -> None:
    seen = [
        seen_from_list(_entry("r", 0, "exited", "Exited (0) now")),
        seen_from_list(_entry("r", 1, "exited", "Exited (7) now")),
    ]
    view = app_status(seen)
    assert view.state == AppState.FAILED
    assert [(r.state, r.exit_code) for r in view.roles[0].replicas] == [
        (AppState.SUCCEEDED, 0),
        (AppState.FAILED, 7),
    ]
    assert view.msg == "replica r/1 (container app-r-1) exited with 7"
    # only the exit code is known: the Runner makes the error from the replica's stderr
    assert view.structured_error_msg == ""
    assert view.roles[0].replicas[1].structured_error_msg == "<NONE>"


def test_a_failed_replicas_env_is_read_for_torchx_status_to_mask() -> None:
    """The failure's message quotes the replica's stderr, which may print a run option's
    secret (``-cfg env=DB_PASSWORD:...``): the env it ran with is inspected, while its
    siblings still run, and is the response's ``env``."""
    seen = [
        seen_from_list(_entry("r", 0, "exited", "Exited (1) now")),
        seen_from_list(_entry("r", 1, "running", "Up 3 seconds")),
    ]
    assert to_inspect(seen) == [seen[0]]  # exit 1 alone says why; its env it does not
    add_inspect(
        seen[0],
        {
            "State": {"Status": "exited", "ExitCode": 1},
            "Config": {"Env": ["DB_PASSWORD=s3cret=x", "PATH=/bin", "NOVALUE"]},
        },
    )
    desc = describe_response("app", seen)
    assert desc is not None and desc.state == AppState.FAILED
    assert desc.env == {"DB_PASSWORD": "s3cret=x", "PATH": "/bin"}
    running = [seen_from_list(_entry("r", k, "running", "Up 3 seconds")) for k in range(2)]
    assert to_inspect(running) == [] and describe_response("app", running).env == {}  # type: ignore[union-attr]


def test_oom_is_named_from_the_inspect() -> None:
    c = seen_from_list(_entry("r", 0, "exited", "Exited (137) now"))
    add_inspect(c, {"State": {"Status": "exited", "ExitCode": 137, "OOMKilled": True}})
    view = app_status([c])
    assert "out of memory (OOMKilled, exit 137)" in view.msg
    assert '"reason": "OOMKilled"' in view.structured_error_msg


def test_after_cancel_ended_replicas_are_cancelled_but_a_success_stays() -> None:
    seen = [
        seen_from_list(_entry("r", 0, "exited", "Exited (0) now")),
        seen_from_list(_entry("r", 1, "exited", "Exited (143) now")),
        seen_from_list(_marker(labels.KIND_CANCELLED, "m")),
    ]
    view = app_status(seen)
    assert view.state == AppState.CANCELLED
    assert [r.state for r in view.roles[0].replicas] == [AppState.SUCCEEDED, AppState.CANCELLED]


def test_a_restart_under_way_is_pending_and_counted() -> None:
    seen = [
        seen_from_list(_entry("r", 0, "exited", "Exited (1) now")),
        seen_from_list(_entry("r", 1, "running", "Up 1 second")),
        seen_from_list(_marker(labels.KIND_RESTART, "app-restart-1", **{labels.ATTEMPT: "1"})),
    ]
    view = app_status(seen)
    assert view.state == AppState.RUNNING
    assert view.roles[0].replicas[0].state == AppState.PENDING
    assert view.num_restarts == 1
    done = [*seen[:2], seen_from_list(_marker(labels.KIND_RESTART, "app-restart-1-done"))]
    assert app_status(done).state == AppState.FAILED  # a failure after the restart


def test_a_replica_whose_container_is_gone_fails() -> None:
    seen = [seen_from_list(_entry("r", 0, "running", "Up"))]
    view = app_status(seen, ["r"], {"r": 2})
    assert view.state == AppState.FAILED
    assert "replica r/1 is gone: its container was removed from the engine" in view.msg


def test_the_engine_restart_count_adds_to_num_restarts() -> None:
    c = seen_from_list(
        _entry("r", 0, "running", "Up", **{labels.RETRY_POLICY: "REPLICA", labels.MAX_RETRIES: "3"})
    )
    assert c.needs_inspect()
    add_inspect(c, {"State": {"Status": "running"}, "RestartCount": 2})
    assert app_status([c]).num_restarts == 2


def test_a_replica_that_exits_0_after_the_cancel_is_cancelled() -> None:
    """The cancel names the replicas that had ended: those keep their state; the others
    were cancelled, whatever their exit code (0 from a program that ends on SIGTERM)."""
    ended = '["r/0"]'
    seen = [
        seen_from_list(_entry("r", 0, "exited", "Exited (0) 9 seconds ago")),
        seen_from_list(_entry("r", 1, "exited", "Exited (0) now")),
        seen_from_list(_entry("r", 2, "exited", "Exited (143) now")),
        seen_from_list(_marker(labels.KIND_CANCELLED, "m", **{labels.ENDED_BEFORE: ended})),
    ]
    view = app_status(seen)
    assert view.state == AppState.CANCELLED
    assert [r.state for r in view.roles[0].replicas] == [
        AppState.SUCCEEDED,
        AppState.CANCELLED,
        AppState.CANCELLED,
    ]
    everyone = [
        *seen[1:3],
        seen_from_list(_marker(labels.KIND_CANCELLED, "m", **{labels.ENDED_BEFORE: "[]"})),
    ]
    assert app_status(everyone).state == AppState.CANCELLED


def test_a_failed_replica_has_its_siblings_stopped_and_the_app_fails() -> None:
    from torchx_docker.status import siblings_to_stop

    seen = [
        seen_from_list(_entry("r", 0, "running", "Up 9 seconds")),
        seen_from_list(_entry("r", 1, "exited", "Exited (3) now")),
        seen_from_list(_entry("r", 2, "created", "Created")),
    ]
    assert app_status(seen).state == AppState.FAILED
    assert [c.replica for c in siblings_to_stop(seen)] == [0, 2]
    stopped = [
        seen_from_list(_entry("r", 0, "exited", "Exited (0) now")),
        seen[1],
        seen_from_list(_entry("r", 2, "created", "Created")),
        seen_from_list(_marker(labels.KIND_STOPPED, "s", **{labels.ENDED_BEFORE: '["r/1"]'})),
    ]
    assert siblings_to_stop(stopped) == []
    view = app_status(stopped)
    assert view.state == AppState.FAILED
    assert [r.state for r in view.roles[0].replicas] == [
        AppState.CANCELLED,
        AppState.FAILED,
        AppState.CANCELLED,
    ]
    assert view.msg == (
        "replica r/1 (container app-r-1) exited with 3; its other replicas were stopped"
    )


def test_a_failed_replica_with_a_restart_due_is_pending_in_list_as_in_status() -> None:
    from torchx_docker.status import siblings_to_stop

    policy = {labels.RETRY_POLICY: "APPLICATION", labels.MAX_RETRIES: "1"}
    seen = [
        seen_from_list(_entry("r", 0, "running", "Up", **policy)),
        seen_from_list(_entry("r", 1, "exited", "Exited (3) now", **policy)),
    ]
    view = app_status(seen)
    assert view.state == AppState.RUNNING  # not FAILED: the next describe restarts it
    assert view.roles[0].replicas[1].state == AppState.PENDING
    assert siblings_to_stop(seen) == []
    used = [*seen, seen_from_list(_marker(labels.KIND_RESTART, "x-done", **{labels.ATTEMPT: "1"}))]
    assert app_status(used).state == AppState.FAILED
    assert [c.replica for c in siblings_to_stop(used)] == [0]
