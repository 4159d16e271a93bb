"""A busy API server: throttling, unavailability, a lost answer and a competing writer.

Through :class:`apiproxy.ApiProxy` in front of the real API server (which itself never
throttles or fails over). What must hold, as on a production cluster: 429 (honouring
``Retry-After``) and 503 answers to a create, a status read or a list are waited out, so
no app ever reads FAILED and no object is made twice; a create whose answer is lost after
the server made the object leaves exactly one object; and a cancel racing a controller
that writes the job's status (a stale write refused 409, an overwrite, the server giving
up with 409) ends CANCELLED.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apiproxy import ApiProxy, Fault
from k8scmd import Made, image, wait_ended
from torchx_k8s.backend import API_TIMEOUT, K8sBackend
from torchx_k8s.scheduler import create_scheduler

from torchx.runner import Runner
from torchx.schedulers.testing.cli import TorchxCli
from torchx.specs import AppDef, AppState, Resource, Role, parse_app_handle

JOBS = r"^/apis/batch\.volcano\.sh/v1alpha1/namespaces/default/jobs"
VOLCANO = ("batch.volcano.sh", "v1alpha1", "default", "jobs")


@pytest.fixture
def proxy() -> Iterator[ApiProxy]:
    p = ApiProxy(Path(os.environ["KUBECONFIG"]))
    yield p
    p.close()


@pytest.fixture
def runner(proxy: ApiProxy) -> Iterator[Runner]:
    """A Runner whose ``kubernetes`` scheduler talks to the server through the proxy."""
    from kubernetes import config

    api = config.new_client_from_config(config_file=str(proxy.kubeconfig()))
    sched = create_scheduler("it", backend=K8sBackend(api))
    with Runner("it", {"kubernetes": lambda _name, **_kw: sched}) as r:
        yield r
    api.close()


def app(*args: str) -> AppDef:
    role = Role(
        "worker",
        image(),
        entrypoint="sh",
        args=["-c", " ".join(args) or "echo ok"],
        resource=Resource(cpu=1, gpu=0, memMB=64),
    )
    return AppDef("faults", [role])


def test_429_and_503_on_create_status_and_list_are_waited_out(
    cli: TorchxCli, made: Made, proxy: ApiProxy, runner: Runner
) -> None:
    cli.env["KUBECONFIG"] = str(proxy.kubeconfig())
    proxy.fail(
        Fault("POST", JOBS + "$", 429, retry_after=1),
        Fault("POST", JOBS + "$", 503),
    )
    out = cli("run", "-s", "kubernetes", "utils.sh", "--image", image(), "sleep", "3")
    handle = out.stdout.strip().splitlines()[-1]
    app_id = made.add(parse_app_handle(handle).app_id)
    name = app_id.split(":")[1]
    creates = proxy.requests("POST", JOBS + "$")
    assert [(s.status, s.upstream) for s in creates] == [(429, None), (503, None), (201, 201)]
    assert creates[1].at - creates[0].at >= 0.9  # Retry-After: 1
    objects = made.select(f"app.kubernetes.io/instance={name}")
    assert len(objects) == 1  # made once

    # status (the job, its pods) and list, each answered 429 and 503 first
    proxy.fail(
        Fault("GET", JOBS + f"/{name}$", 503),
        Fault("GET", JOBS + f"/{name}$", 429, retry_after=1),
        Fault("GET", r"^/api/v1/namespaces/default/pods\?", 503),
        Fault("GET", JOBS + r"\?labelSelector", 429, retry_after=1),
        Fault("GET", JOBS + r"\?labelSelector", 503),
    )
    assert cli.status(handle)["state"] in ("PENDING", "RUNNING", "SUCCEEDED")
    assert handle in cli("list", "-s", "kubernetes").stdout
    assert all(f.times == 0 for f in proxy.faults), proxy.faults

    # to the end, each status's first read of the job answered 503: never FAILED on the way
    seen: list[AppState] = []
    deadline = time.monotonic() + 180
    while not seen or not seen[-1].is_terminal():
        assert time.monotonic() < deadline, seen
        proxy.fail(Fault("GET", JOBS + f"/{name}$", 503))
        status = runner.status(handle)
        assert status is not None
        seen.append(status.state)
        time.sleep(0.5)  # polling, as a user's `torchx status` does
    assert seen[-1] == AppState.SUCCEEDED and AppState.FAILED not in seen, seen
    assert len(proxy.requests("POST", JOBS + "$")) == 3  # nothing created again


def test_a_lost_answer_to_a_create_leaves_one_object(
    made: Made, proxy: ApiProxy, runner: Runner
) -> None:
    # the server makes the job, then the connection closes before its answer arrives
    proxy.fail(Fault("POST", JOBS + "$", status=0, lose=True))
    handle = runner.run(app(), "kubernetes")
    app_id = made.add(parse_app_handle(handle).app_id)
    creates = proxy.requests("POST", JOBS + "$")
    # the retry finds the name taken (409): the first attempt's success
    assert [(s.status, s.upstream) for s in creates] == [(0, 201), (409, 409)]
    name = app_id.split(":")[1]
    assert len(made.select(f"app.kubernetes.io/instance={name}")) == 1
    assert wait_ended(runner, handle) == AppState.SUCCEEDED


def test_cancel_against_a_competing_status_writer_ends_cancelled(
    kube: Any, made: Made, proxy: ApiProxy, runner: Runner
) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    handle = runner.run(app("sleep 600"), "kubernetes")
    app_id = made.add(parse_app_handle(handle).app_id)
    name = app_id.split(":")[1]
    objects = client.CustomObjectsApi(kube)
    stale = objects.get_namespaced_custom_object(*VOLCANO, name)
    writer: list[int] = []

    def controller_writes_what_it_read_before() -> None:
        # with the resourceVersion it read: refused, the cancel is not overwritten...
        body = {**stale, "status": {"state": {"phase": "Running"}}}
        try:
            objects.replace_namespaced_custom_object_status(*VOLCANO, name, body)
            writer.append(200)
        except ApiException as e:
            writer.append(e.status)
        # ...without one (a merge patch): it is, and the cancel must write again
        objects.patch_namespaced_custom_object_status(
            *VOLCANO, name, {"status": {"state": {"phase": "Running"}}}
        )

    status_path = JOBS + f"/{name}/status$"
    proxy.fail(
        Fault("PATCH", status_path, status=0, hook=controller_writes_what_it_read_before),
        Fault("PATCH", status_path, 409),  # the server gave up its retries on a conflict
    )
    runner.cancel(handle)
    assert writer == [409]
    patches = proxy.requests("PATCH", status_path)
    assert [s.status for s in patches][:2] == [200, 409] and len(patches) >= 3
    assert patches[-1].status == 200
    status = runner.status(handle)
    assert status is not None and status.state == AppState.CANCELLED, status
    stored = objects.get_namespaced_custom_object(*VOLCANO, name)
    assert stored["status"]["state"]["phase"] in ("Aborted", "Aborting")


def test_status_with_the_api_server_frozen_answers_within_one_timeout(
    cli: TorchxCli, made: Made, proxy: ApiProxy, runner: Runner
) -> None:
    handle = runner.run(app("sleep 600"), "kubernetes")
    app_id = made.add(parse_app_handle(handle).app_id)
    name = app_id.split(":")[1]
    thaw = threading.Event()
    # every read of the job hangs, as a server that stopped does (its answer never comes)
    frozen = Fault("GET", JOBS + f"/{name}$", status=0, lose=True, times=100, hook=thaw.wait)
    proxy.fail(frozen)
    cli.env["KUBECONFIG"] = str(proxy.kubeconfig())
    try:
        start = time.monotonic()
        out = cli("status", handle, rc=None, timeout=300)
        took = time.monotonic() - start
    finally:
        thaw.set()
    # one request's timeout, not the client's own retries on top (4 x 30 s before)
    assert API_TIMEOUT <= took < API_TIMEOUT + 15, (took, out.stderr)
    assert out.returncode != 0 and "Traceback" not in out.stderr, out
    assert "unknown, not failed" in out.stderr and "FAILED" not in out.stdout, out
    frozen.times = 0
    assert cli.status(handle)["state"] in ("PENDING", "RUNNING")  # thawed: answers again
