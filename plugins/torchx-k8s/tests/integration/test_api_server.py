"""The scheduler's requests against a real kube-apiserver, through the CLI and the Runner.

What the API server itself decides is checked here: the objects are accepted by the
CRDs and read back unchanged (nothing the scheduler sends is pruned), a pod the server
refuses is refused before anything is created, status/list/cancel/delete work from new
processes, describe is two API calls, and errors are one line.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from k8scmd import Made, image
from torchx_k8s.backend import K8sBackend
from torchx_k8s.scheduler import create_scheduler

from torchx.runner import get_runner
from torchx.schedulers.testing.cli import TorchxCli
from torchx.specs import AppDef, AppState, Resource, Role, parse_app_handle
from torchx.specs.errors import SpecError
from torchx.specs.overlays import set_overlay

FLAVOURS = ["volcano", "jobset"]


def sleeper(replicas: int = 2, name: str = "sleeper", **kw: Any) -> AppDef:
    role = Role(
        "worker",
        image(),
        entrypoint="sleep",
        args=["600"],
        num_replicas=replicas,
        resource=Resource(cpu=1, gpu=0, memMB=256),
        **kw,
    )
    return AppDef(name, [role])


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_the_cli_runs_follows_cancels_and_deletes(cli: TorchxCli, made: Made, flavour: str) -> None:
    out = cli(
        "run",
        "-s",
        "kubernetes",
        "-cfg",
        f"flavour={flavour}",
        "utils.sh",
        "--image",
        image(),
        "sleep",
        "600",
    )
    handle = out.stdout.strip().splitlines()[-1]
    assert handle.startswith("kubernetes://"), out.stdout
    app_id = made.add(parse_app_handle(handle).app_id)
    assert made.get(app_id) is not None
    status = cli.status(handle)  # a new process
    assert status["state"] in ("PENDING", "RUNNING"), status
    assert [r["role"] for r in status["roles"]] == ["sh"]
    assert handle in cli("list", "-s", "kubernetes").stdout
    assert cli("cancel", handle).stdout == f"cancelled {handle}\n"  # one line
    assert cli.status(handle)["state"] == "CANCELLED"
    cli("cancel", handle)  # idempotent
    cli("delete", handle)
    assert made.get(app_id) is None


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_the_object_is_read_back_as_sent(made: Made, flavour: str) -> None:
    sched = create_scheduler("it")
    app = sleeper(min_replicas=1, max_retries=1, port_map={"tb": 6006}, env={"A": "1"})
    info = sched.submit_dryrun(app, {"flavour": flavour, "secret_env": {"T": "s/k"}})
    app_id = made.add(sched.schedule(info))
    stored = made.get(app_id)
    assert stored is not None
    # the CRD declares every field the scheduler sets: the server pruned or changed
    # nothing sent (an admission webhook, Volcano's, may add defaults)
    assert not_as_sent(info.request.resource["spec"], stored["spec"]) == []
    assert stored["metadata"]["labels"] == info.request.resource["metadata"]["labels"]
    sched.close()


def not_as_sent(sent: Any, stored: Any, path: str = "spec") -> list[str]:
    """The paths of what ``sent`` holds that ``stored`` lacks or holds otherwise."""
    if isinstance(sent, dict) and isinstance(stored, dict):
        return [
            p
            for k, v in sent.items()
            for p in (not_as_sent(v, stored[k], f"{path}.{k}") if k in stored else [f"{path}.{k}"])
        ]
    if isinstance(sent, list) and isinstance(stored, list) and len(sent) == len(stored):
        return [
            p
            for i, (a, b) in enumerate(zip(sent, stored))
            for p in not_as_sent(a, b, f"{path}[{i}]")
        ]
    return [] if sent == stored else [f"{path}: {sent!r} -> {stored!r}"]


def test_not_as_sent_names_what_was_pruned_or_changed() -> None:
    sent = {"a": 1, "b": {"c": [1, {"d": 2}]}, "e": "x"}
    assert not_as_sent(sent, {**sent, "added": 3}) == []
    assert not_as_sent(sent, {"a": 2, "b": {"c": [1, {}]}}) == [
        "spec.a: 1 -> 2",
        "spec.b.c[1].d",
        "spec.e",
    ]


def test_describe_is_two_api_calls(made: Made) -> None:
    from kubernetes import config
    from kubernetes.client import ApiClient

    calls: list[str] = []

    class Counting(ApiClient):  # type: ignore[misc]
        def call_api(self, resource_path: str, method: str, *a: Any, **kw: Any) -> Any:
            calls.append(f"{method} {resource_path}")
            return super().call_api(resource_path, method, *a, **kw)

    api = Counting(configuration=config.new_client_from_config().configuration)
    sched = create_scheduler("it", backend=K8sBackend(api))
    running = made.add(sched.schedule(sched.submit_dryrun(sleeper(), {"validate_spec": False})))
    deadline = time.monotonic() + 60
    while (d := sched.describe(running)) is None or d.state != AppState.RUNNING:
        assert time.monotonic() < deadline, d
        time.sleep(0.5)
    calls.clear()
    assert sched.describe(running) is not None
    assert len(calls) == 2, calls  # the job, its pods
    # too big for the node: Volcano's scheduler places none of its 16 pods; the third
    # call reads why (its PodGroup), only while it is pending with no pod's reason
    big = sleeper(replicas=16)
    big.roles[0].resource = Resource(cpu=4096, gpu=0, memMB=256)
    app_id = made.add(sched.schedule(sched.submit_dryrun(big, {"validate_spec": False})))
    while (d := sched.describe(app_id)) is None or "PodGroup" not in d.msg:
        assert time.monotonic() < deadline + 60, d
        time.sleep(0.5)
    calls.clear()
    described = sched.describe(app_id)
    assert described is not None and len(described.roles_statuses[0].replicas) == 16
    assert described.state == AppState.PENDING and "gang unschedulable" in described.msg
    # the job, its pods, and (a custom object too) its PodGroup
    assert len(calls) == 3 and calls[2] == calls[0], calls
    assert described.roles[0].num_replicas == 16 and described.name == "sleeper"


def test_an_invalid_pod_is_refused_before_anything_is_created(made: Made) -> None:
    with get_runner("it") as runner:
        before = {a.app_id for a in runner.list("kubernetes")}
        bad = sleeper(env={"1BAD": "x"})  # an env name Kubernetes refuses
        with pytest.raises(SpecError) as e:
            runner.run(bad, "kubernetes")
        assert "role 'worker'" in str(e.value) and "1BAD" in str(e.value), e.value
        assert "\n" not in str(e.value)
        assert {a.app_id for a in runner.list("kubernetes")} == before


def test_a_misspelt_pod_field_is_refused_before_anything_is_created(made: Made) -> None:
    """The dry run asks for strict field validation; a server too old for it (1.20, here)
    drops the field instead, which the scheduler sees in the dry run's answer."""
    with get_runner("it") as runner:
        before = {a.app_id for a in runner.list("kubernetes")}
        bad = sleeper()
        set_overlay(bad.roles[0], "kubernetes", "V1Pod", {"spec": {"activeDeadlineSecond": 60}})
        with pytest.raises(SpecError) as e:
            runner.run(bad, "kubernetes")
        assert "role 'worker'" in str(e.value), e.value
        assert "spec.activeDeadlineSecond" in str(e.value) and "\n" not in str(e.value)
        assert {a.app_id for a in runner.list("kubernetes")} == before
        # spelt right, the same overlay is accepted and kept
        good = sleeper()
        set_overlay(good.roles[0], "kubernetes", "V1Pod", {"spec": {"activeDeadlineSeconds": 60}})
        app_id = made.add(parse_app_handle(runner.run(good, "kubernetes")).app_id)
        stored = made.get(app_id)
        assert stored is not None
        assert stored["spec"]["tasks"][0]["template"]["spec"]["activeDeadlineSeconds"] == 60


def test_a_missing_namespace_is_one_line(cli: TorchxCli) -> None:
    proc = cli(
        "run",
        "-s",
        "kubernetes",
        "-cfg",
        "namespace=no-such-ns",
        "utils.echo",
        "--image",
        image(),
        rc=1,
    )
    [line] = proc.stderr.strip().splitlines()
    assert "namespace 'no-such-ns' does not exist" in line


def test_cancel_right_after_submit_and_upstream_handles(cli: TorchxCli, made: Made) -> None:
    with get_runner("it") as runner:
        handle = runner.run(sleeper(), "kubernetes")
        app_id = made.add(parse_app_handle(handle).app_id)
        runner.cancel(handle)
        assert runner.status(handle).state == AppState.CANCELLED  # type: ignore[union-attr]
    # upstream's form: kubernetes://SESSION/NAMESPACE:NAME, any session
    assert cli.status(f"kubernetes://someone/{app_id}")["state"] == "CANCELLED"


def test_a_token_the_server_refuses_leaves_a_followed_apps_state_unknown(
    cli: TorchxCli, made: Made, tmp_path: Path
) -> None:
    """The server's own 401 for a token it does not accept (expired, revoked): one line
    that says so (status exits 1, the scheduler's answer); log -t, which follows the app
    (as run --wait does), says its state is unknown (exit 4), not that it failed: it runs on."""
    import yaml

    handle = cli.start("utils.sh", "--image", image(), "sleep", "120")
    made.add(parse_app_handle(handle).app_id)
    config = yaml.safe_load(Path(os.environ["KUBECONFIG"]).read_text())
    for user in config["users"]:
        user["user"] = {"token": "expired-or-revoked"}
    refused = tmp_path / "kubeconfig"
    refused.write_text(yaml.safe_dump(config))
    env = {"KUBECONFIG": str(refused)}
    [line] = cli("status", handle, env=env, rc=1).stderr.strip().splitlines()
    assert "did not accept the credentials (401)" in line, line
    [line] = cli("log", "-t", handle, env=env, rc=4).stderr.strip().splitlines()
    assert "did not accept the credentials (401)" in line and "is unknown" in line, line
    assert cli.status(handle)["state"] in ("PENDING", "RUNNING")  # it ran on


def test_an_unknown_app_is_not_found(cli: TorchxCli) -> None:
    started = time.monotonic()
    proc = cli("status", "kubernetes://x/default:nope-1a2b3c4d5e", rc=None)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert time.monotonic() - started < 10
