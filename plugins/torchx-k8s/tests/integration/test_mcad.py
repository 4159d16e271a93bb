"""``kubernetes_mcad`` against a real kube-apiserver with the stand-in's AppWrapper controllers.

The conformance kit for both AppWrapper versions (v1beta1 as MCAD v2 runs it, what upstream
TorchX submits; v1beta2 as the AppWrapper controller runs it), and three replicas meeting
over TCP at the rank-0 host (``$TORCHX_RANK0_HOST``: the first replica's host name under the
app's headless Service), through the real ``torchx`` command; a replica that fails stops
the others at once (neither controller does). The stand-in dispatches each
AppWrapper when its pods fit, makes the wrapped pods, Service (and PodGroup) and writes
the AppWrapper's status as the controllers do (dev/k8s-standin/README.md).

The capabilities are the scheduler's declaration (``missing_capabilities``): only the
kubernetes scheduler's ``separate_streams`` (the pod log API returns stdout and stderr
together). The failed attempt's states and exit codes are reported: the scheduler says
FAILED from the failed pod of the last attempt, while the pods are still there (the
controllers delete them ``failure_grace`` later, when they fail the AppWrapper).
The kit runs with ``failure_grace`` and ``retry_pause`` short, so that a retry (a requeue
or a reset) happens within its timeouts rather than after the controllers' minutes, yet
long enough for every pod to start (MCAD counts the running pods ``failure_grace`` after
dispatch).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from k8scmd import image, wait_ended
from torchx_k8s.mcad import McadScheduler, create_scheduler

from torchx.runner import get_runner
from torchx.schedulers.testing import AppBuilder, SchedulerConformance
from torchx.schedulers.testing.cli import TorchxCli, replicas
from torchx.specs import AppDef, AppState, Resource, Role, macros, parse_app_handle

VERSIONS = ["v1beta1", "v1beta2"]
#: Retries within the kit's timeouts: a requeue (v1beta1) or reset (v1beta2) 10 s after
#: the dispatch (v1beta1) or the failure (v1beta2), the next dispatch 1 s later.
FAST = {"failure_grace": 10, "retry_pause": 1}


class _Kit(SchedulerConformance):
    timeout = 180
    cancel_timeout = 60
    version = "v1beta1"

    @pytest.fixture
    def scheduler(self) -> Iterator[McadScheduler]:
        sched = create_scheduler("kit")
        yield sched
        sched.close()

    @pytest.fixture
    def cfg(self) -> dict[str, Any]:
        return {"appwrapper_version": self.version, **FAST}

    @pytest.fixture
    def unknown_app_id(self) -> str:
        suffix = ":v1beta2" if self.version == "v1beta2" else ""
        return f"default:kit-unknown-1a2b3c4d5e{suffix}"

    @pytest.fixture
    def app_builder(self) -> AppBuilder:
        return AppBuilder(image=image(), shell="sh", resource=Resource(cpu=1, gpu=0, memMB=128))


class TestMcadV1beta1Conformance(_Kit):
    version = "v1beta1"


class TestMcadV1beta2Conformance(_Kit):
    version = "v1beta2"


def _aw(kube: Any, app_id: str) -> dict[str, Any] | None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    ns, name, *rest = app_id.split("@")[0].split(":")
    version = rest[0] if rest else "v1beta1"
    try:
        return dict(
            client.CustomObjectsApi(kube).get_namespaced_custom_object(
                "workload.codeflare.dev", version, ns, "appwrappers", name
            )
        )
    except ApiException as e:
        if e.status == 404:
            return None
        raise


@pytest.mark.parametrize("version", VERSIONS)
def test_three_replicas_meet_over_tcp_at_the_rank0_host(
    cli: TorchxCli, kube: Any, version: str
) -> None:
    # $0 is the replica id and $1 the *name* of the rank-0 host's variable; rank 0 takes
    # one connection per peer (a port each), the others send to that host until it listens
    script = (
        'eval "host=\\${$1}"; '
        'if [ "$0" = 0 ]; then nc -l -p 9001 & nc -l -p 9002 & wait; '
        # the message is in a file before nc starts: with a pipe, a listener whose stdin
        # is empty may close its side first and the sender then quits, 0, having sent nothing
        'else echo "hello from $0 via $host" > /tmp/hello; '
        'until nc "$host" 900$0 < /tmp/hello; do sleep 0.3; done; fi'
    )
    role = Role(
        "peer",
        image(),
        entrypoint="sh",
        args=["-c", script, macros.replica_id, macros.rank0_env],
        num_replicas=3,
        resource=Resource(cpu=1, gpu=0, memMB=128),
        max_retries=1,  # v1beta1: MCAD then monitors the pods (minAvailable 3) and ends it
    )
    with get_runner("it") as runner:
        handle = runner.run(
            AppDef("meet", [role]), "kubernetes_mcad", {"appwrapper_version": version}
        )
        app_id = parse_app_handle(handle).app_id
        try:
            assert wait_ended(runner, handle) == AppState.SUCCEEDED
            # the rank-0 replica's log, read by a new process
            out = cli("log", f"{handle}/peer/0").stdout
            got = sorted(
                x.split("hello from ", 1)[1] for x in out.splitlines() if "hello from" in x
            )
            name = app_id.split(":")[1]
            assert [g.split(" via ")[0] for g in got] == ["1", "2"], out
            # rank 0's pod, fully qualified (torchx_k8s.names.rank0_host)
            rank0 = f"{name}-peer-0.{name}.default.svc.cluster.local"
            assert {g.split(" via ")[1] for g in got} == {rank0}, got
            aw = _aw(kube, app_id)
            assert aw is not None
            if version == "v1beta1":  # MCAD v2's status
                assert (aw["status"]["state"], aw["status"]["restarts"]) == ("Completed", 0)
                steps = [(t["state"], t.get("step")) for t in aw["status"]["transitions"]]
                assert steps[-2:] == [("Running", "created"), ("Completed", None)], steps
            else:  # the AppWrapper controller's
                assert aw["status"]["phase"] == "Succeeded", aw["status"]
        finally:
            runner.delete(handle)
        deadline = time.monotonic() + 60  # the controller's finalizer: its objects go first
        while _aw(kube, app_id) is not None:
            assert time.monotonic() < deadline, f"{app_id} still there after delete"
            time.sleep(0.5)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_failed_replica_stops_the_others(tmp_path: Any, kube: Any, version: str) -> None:
    from kubernetes import client

    cli = TorchxCli(tmp_path, scheduler="kubernetes_mcad")
    try:
        script = 'if [ "$0" = 1 ]; then sleep 2; echo boom; exit 3; fi; echo up; sleep 600'
        handle = cli.start(
            "-cfg", f"appwrapper_version={version}",
            "utils.sh", "--image", image(), "--num_replicas", "3", "--memMB", "64",
            "sh", "-c", script, "${replica_id}",
        )  # fmt: skip
        cli.wait_output(f"{handle}/sh/0", "up", timeout=120)
        # nobody follows it: the first look (status, here) sees sh/1 failed, stops the others
        status = cli.wait_state(handle, {"FAILED", "SUCCEEDED", "CANCELLED"}, timeout=60)
        assert status["state"] == "FAILED", status
        states = {k: r["state"] for k, r in replicas(status).items()}
        assert states == {"sh/0": "CANCELLED", "sh/1": "FAILED", "sh/2": "CANCELLED"}, status
        assert "its other replicas were stopped" in status["msg"], status
        name = parse_app_handle(handle).app_id.split(":")[1]
        deadline = time.monotonic() + 60
        while True:  # their pods go (the kubelet stops the containers): none runs on
            pods = client.CoreV1Api(kube).list_namespaced_pod(
                "default", label_selector=f"app.kubernetes.io/instance={name}"
            )
            live = [p.metadata.name for p in pods.items if p.status.phase in ("Pending", "Running")]
            if not live:
                break
            assert time.monotonic() < deadline, live
            time.sleep(0.5)
        listed = json.loads(
            cli(
                "list", "-s", "kubernetes_mcad", "-cfg", f"appwrapper_version={version}", "--json"
            ).stdout
        )
        [row] = [r for r in listed["data"] if r["handle"] == handle]
        assert row["state"] == "FAILED"
        assert "nothing to cancel" in cli("cancel", handle).stdout
    finally:
        for handle in cli.started:
            cli("delete", handle, rc=None)
        cli.started.clear()
