"""The objects an app becomes, field by field, and checked against the real schemas.

Pods are validated with ``kubernetes-validate`` (the official schemas of the newest
Kubernetes release it has, strict: an unknown field fails). The Volcano Job and the
JobSet are validated against the project's CRDs (dev/k8s-crds, what ``dev/k8s``
installs) and, when ``TORCHX_K8S_UPSTREAM_CRDS`` names a folder holding Volcano's and
JobSet's published CRD manifests, against those too (they are not in this repository;
CI sets it, and then these tests cannot skip: see conftest.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from crdcheck import crd_schema, validate
from torchx_k8s import labels
from torchx_k8s.names import JOBSET, VOLCANO, volcano_pod_name
from torchx_k8s.options import K8sOpts
from torchx_k8s.request import KINDS, K8sRequest, appdef_from, make_request, render_yaml

from torchx.components.dist import ddp
from torchx.specs import (
    AppDef,
    BindMount,
    DeviceMount,
    Resource,
    RetryPolicy,
    Role,
    VolumeMount,
    macros,
)
from torchx.specs.overlays import JOIN, set_overlay

NAME = "trainer-1a2b3c4d5e"
REPO = Path(__file__).resolve().parents[3]


def opts(**cfg: Any) -> K8sOpts:
    return K8sOpts.from_cfg(K8sOpts.as_runopts().resolve(cfg))


def role(**kw: Any) -> Role:
    base: dict[str, Any] = {
        "name": "trainer",
        "image": "ghcr.io/me/torch:1",
        "entrypoint": "python",
        "args": ["-m", "train", "--rank", macros.replica_id, "--master", macros.rank0_env],
        "num_replicas": 2,
        "resource": Resource(cpu=4, gpu=2, memMB=16384),
    }
    base.update(kw)
    return Role(**base)


def request(app: AppDef, **cfg: Any) -> K8sRequest:
    return make_request(app, NAME, opts(**cfg))


def tasks(req: K8sRequest) -> list[dict[str, Any]]:
    if req.flavour == JOBSET:
        return req.resource["spec"]["replicatedJobs"]
    return req.resource["spec"]["tasks"]


def pods(req: K8sRequest) -> list[dict[str, Any]]:
    if req.flavour == JOBSET:
        return [t["template"]["spec"]["template"] for t in tasks(req)]
    return [t["template"] for t in tasks(req)]


def container(pod: dict[str, Any]) -> dict[str, Any]:
    return pod["spec"]["containers"][0]


def env(pod: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(pod)["env"]}


# -- Volcano -----------------------------------------------------------------------------


def test_a_volcano_job_has_one_task_per_replica_named_role_replica() -> None:
    req = request(AppDef("my app", [role(), role(name="ps", num_replicas=1)]))
    res = req.resource
    assert (res["apiVersion"], res["kind"]) == ("batch.volcano.sh/v1alpha1", "Job")
    assert res["metadata"]["name"] == NAME and req.app_id == f"default:{NAME}"
    assert [t["name"] for t in tasks(req)] == ["trainer-0", "trainer-1", "ps-0"]
    assert all(t["replicas"] == 1 for t in tasks(req))
    spec = res["spec"]
    assert spec["schedulerName"] == "volcano" and spec["queue"] == "default"
    assert spec["plugins"] == {"svc": ["--publish-not-ready-addresses"], "env": []}
    assert spec["minAvailable"] == 3 and spec["maxRetry"] == 0


def test_macros_and_the_rank0_host_in_torchx_rank0_host() -> None:
    req = request(AppDef("a", [role(num_replicas=3)]))
    first, *others = pods(req)
    for k, pod in enumerate((first, *others)):
        assert container(pod)["command"] == [
            "python", "-m", "train", "--rank", str(k), "--master", "TORCHX_RANK0_HOST",
        ]  # fmt: skip
    # every replica, rank 0 included, finds rank 0 by its pod's fully qualified name (the
    # svc plugin makes the pod's host name its own name, its subdomain the job's): in rank
    # 0's /etc/hosts at once, through the cluster DNS for the others
    rank0 = f"{volcano_pod_name(NAME, 'trainer', 0)}.{NAME}.default.svc.cluster.local"
    assert [env(p)["TORCHX_RANK0_HOST"] for p in (first, *others)] == [rank0] * 3


def test_the_rank0_host_follows_the_namespace_and_cluster_domain() -> None:
    for flavour in (VOLCANO, JOBSET):
        req = request(AppDef("a", [role()]), flavour=flavour, namespace="team-a",
                      cluster_domain="corp.example")  # fmt: skip
        hosts = {env(p)["TORCHX_RANK0_HOST"] for p in pods(req)}
        (host,) = hosts
        assert host.endswith(f".{NAME}.team-a.svc.corp.example"), host


def test_min_replicas_makes_the_first_tasks_required() -> None:
    req = request(AppDef("a", [role(num_replicas=4, min_replicas=2)]))
    assert [t["minAvailable"] for t in tasks(req)] == [1, 1, 0, 0]
    assert req.resource["spec"]["minAvailable"] == 2


@pytest.mark.parametrize(
    ("policy", "task_action", "job_retries"),
    [
        (RetryPolicy.REPLICA, "RestartTask", 0),
        (RetryPolicy.ROLE, "RestartJob", 4),
        (RetryPolicy.APPLICATION, "RestartJob", 4),
    ],
)
def test_retry_policies_map_to_volcano_policies(
    policy: RetryPolicy, task_action: str, job_retries: int
) -> None:
    req = request(AppDef("a", [role(max_retries=3, retry_policy=policy)]))
    for task in tasks(req):
        # Volcano fails the job when retryCount reaches maxRetry: 3 restarts need 4
        assert task["maxRetry"] == 4
        assert task["policies"] == [
            {"event": "PodFailed", "action": task_action},
            {"event": "PodEvicted", "action": task_action},
        ]
    assert req.resource["spec"]["maxRetry"] == job_retries


def test_without_retries_a_failed_replica_terminates_the_job() -> None:
    req = request(AppDef("a", [role()]))
    assert all(
        t["policies"] == [{"event": "PodFailed", "action": "TerminateJob"}] for t in tasks(req)
    )


def test_queue_and_priority_class_go_on_the_job() -> None:
    req = request(AppDef("a", [role()]), queue="gpu-q", priority_class="high")
    assert req.resource["spec"]["queue"] == "gpu-q"
    assert req.resource["spec"]["priorityClassName"] == "high"
    assert "priorityClassName" not in pods(req)[0]["spec"]


# -- JobSet ------------------------------------------------------------------------------


def test_a_jobset_has_one_replicated_job_per_replica_with_dns_hostnames() -> None:
    req = request(
        AppDef("a", [role(), role(name="ps", num_replicas=1)]),
        flavour="jobset",
        queue="lq",
        priority_class="high",
    )
    res = req.resource
    assert (res["apiVersion"], res["kind"]) == ("jobset.x-k8s.io/v1alpha2", "JobSet")
    assert req.app_id == f"default:{NAME}:jobset"
    assert [j["name"] for j in tasks(req)] == ["trainer-0", "trainer-1", "ps-0"]
    assert res["spec"]["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    assert res["spec"]["successPolicy"] == {"operator": "All"}
    assert res["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "lq"
    for job in tasks(req):
        spec = job["template"]["spec"]
        assert (spec["completions"], spec["parallelism"], spec["completionMode"]) == (
            1,
            1,
            "Indexed",
        )
    first, second, ps = pods(req)
    # JobSet's documented host name: <jobset>-<replicated job>-<job index>-<pod index>.<subdomain>,
    # fully qualified
    for pod in (first, second, ps):
        assert env(pod)["TORCHX_RANK0_HOST"] == (
            f"{NAME}-trainer-0-0-0.{NAME}.default.svc.cluster.local"
        )
    assert first["spec"]["priorityClassName"] == "high"


@pytest.mark.parametrize(
    ("policy", "backoff", "restarts"),
    [(RetryPolicy.REPLICA, 2, 0), (RetryPolicy.ROLE, 0, 2), (RetryPolicy.APPLICATION, 0, 2)],
)
def test_jobset_retries(policy: RetryPolicy, backoff: int, restarts: int) -> None:
    req = request(AppDef("a", [role(max_retries=2, retry_policy=policy)]), flavour="jobset")
    assert all(j["template"]["spec"]["backoffLimit"] == backoff for j in tasks(req))
    assert req.resource["spec"]["failurePolicy"] == {"maxRestarts": restarts}


# -- pods --------------------------------------------------------------------------------


@pytest.mark.parametrize("flavour", [VOLCANO, JOBSET])
def test_resources_have_upstreams_headroom(flavour: str) -> None:
    r = role(resource=Resource(cpu=4, gpu=2, memMB=16384, devices={"vpc.amazonaws.com/efa": 1}))
    req = request(AppDef("a", [r]), flavour=flavour, reserved_millicpu=250, reserved_memmb=2048)
    res = container(pods(req)[0])["resources"]
    assert res["limits"] == {
        "cpu": "4000m",
        "memory": "16384Mi",
        "nvidia.com/gpu": "2",
        "vpc.amazonaws.com/efa": "1",
    }
    assert res["requests"] == {
        "cpu": "3750m",
        "memory": "14336Mi",
        "nvidia.com/gpu": "2",
        "vpc.amazonaws.com/efa": "1",
    }


def test_headroom_never_requests_below_zero() -> None:
    small = Resource(cpu=1, gpu=0, memMB=512)
    req = request(AppDef("a", [role(resource=small)]), reserved_millicpu=1500)
    assert container(pods(req)[0])["resources"]["requests"] == {"cpu": "0m", "memory": "0Mi"}


def test_instance_type_shm_mounts_and_ports() -> None:
    r = role(
        resource=Resource(
            cpu=1, gpu=0, memMB=1024, capabilities={labels.INSTANCE_TYPE: "p4d.24xlarge"}
        ),
        mounts=[
            BindMount("/data", "/mnt/data", read_only=True),
            VolumeMount("ckpt-claim", "/ckpt"),
            DeviceMount("/dev/fuse", "/dev/fuse", "rwm"),
        ],
        port_map={"tensorboard": 6006, "ddp_port": 29500},
    )
    pod = pods(request(AppDef("a", [r])))[0]
    spec = pod["spec"]
    assert spec["nodeSelector"] == {labels.INSTANCE_TYPE: "p4d.24xlarge"}
    assert spec["restartPolicy"] == "Never"
    assert spec["volumes"] == [
        {"name": "dshm", "emptyDir": {"medium": "Memory"}},
        {"name": "mount-0", "hostPath": {"path": "/data"}},
        {"name": "mount-1", "persistentVolumeClaim": {"claimName": "ckpt-claim"}},
        {"name": "mount-2", "hostPath": {"path": "/dev/fuse"}},
    ]
    c = container(pod)
    assert c["volumeMounts"] == [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "mount-0", "mountPath": "/mnt/data", "readOnly": True},
        {"name": "mount-1", "mountPath": "/ckpt", "readOnly": False},
        {"name": "mount-2", "mountPath": "/dev/fuse", "readOnly": False},
    ]
    assert c["securityContext"] == {"privileged": True}
    assert c["ports"] == [
        {"name": "tensorboard", "containerPort": 6006},
        {"name": "ddp-port", "containerPort": 29500},
    ]


def test_field_refs_secrets_service_account_pull_secrets() -> None:
    cfg = {
        "service_account": "trainer-sa",
        "image_pull_secrets": ["regcred"],
        "secret_env": {"HF_TOKEN": "hf-creds/token"},
    }
    pod = pods(request(AppDef("a", [role(env={"HF_TOKEN": "do-not-ship", "A": "1"})]), **cfg))[0]
    e = env(pod)
    assert e["A"] == "1"
    assert e["TORCHX_POD_IP"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert e["TORCHX_POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    # the Secret's reference, never a value: secret_env wins over a literal of the same name
    assert e["HF_TOKEN"] == {"secretKeyRef": {"name": "hf-creds", "key": "token"}}
    assert "do-not-ship" not in render_yaml(pod)
    assert pod["spec"]["serviceAccountName"] == "trainer-sa"
    assert pod["spec"]["imagePullSecrets"] == [{"name": "regcred"}]


def test_the_pod_overlay_is_applied_last() -> None:
    r = role()
    set_overlay(
        r,
        "kubernetes",
        "V1Pod",
        {
            "spec": {
                "nodeSelector": {"pool": "a100"},
                "tolerations": [{"key": "gpu", "operator": "Exists"}],
            }
        },
    )
    set_overlay(
        r,
        "kubernetes",
        "V1Pod",
        {"spec": {JOIN("containers", on="name"): [{"name": "trainer-0", "workingDir": "/w"}]}},
    )
    pod = pods(request(AppDef("a", [r])))[0]
    assert pod["spec"]["nodeSelector"] == {"pool": "a100"}
    assert pod["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert container(pod)["workingDir"] == "/w" and container(pod)["image"] == "ghcr.io/me/torch:1"


def test_labels_are_upstreams_and_valid() -> None:
    pod = pods(request(AppDef("My App!", [role(name="Train er")])))[1]
    lab = pod["metadata"]["labels"]
    assert (
        lab[labels.INSTANCE] == NAME
        and lab[labels.REPLICA_ID] == "1"
        and lab[labels.ROLE_INDEX] == "0"
    )
    assert lab[labels.ROLE_NAME] == "Train-er" and lab[labels.APP_NAME] == "My-App"
    assert pod["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}


def test_the_appdef_is_carried_and_read_back() -> None:
    app = AppDef("a", [role()], metadata={"team": "x"})
    req = request(app)
    assert req.resource["metadata"]["annotations"][labels.FORMAT_KEY] == "1"
    assert appdef_from(req.resource) == app


def test_the_yaml_is_the_object() -> None:
    req = request(ddp(script="train.py", j="2x4", image="img:1"))
    assert yaml.safe_load(req.to_yaml()) == req.resource
    assert str(req) == req.to_yaml()


def test_an_app_without_roles_is_refused_as_every_scheduler_refuses_it() -> None:
    from torchx.specs.errors import SpecError

    with pytest.raises(SpecError) as err:
        request(AppDef("x", []))
    assert str(err.value) == "app 'x' has no roles: give it at least one Role"


def test_two_roles_of_one_name_are_refused() -> None:
    from torchx.specs.errors import SpecError

    with pytest.raises(SpecError, match="two roles named 'a'"):
        request(AppDef("x", [role(name="a", num_replicas=1), role(name="a", num_replicas=2)]))


# -- against the schemas -------------------------------------------------------------------


def _apps() -> list[AppDef]:
    full = role(
        resource=Resource(
            cpu=2,
            gpu=1,
            memMB=4096,
            devices={"vpc.amazonaws.com/efa": 2},
            capabilities={labels.INSTANCE_TYPE: "m5.large"},
        ),
        mounts=[
            BindMount("/d", "/d"),
            VolumeMount("c", "/c", True),
            DeviceMount("/dev/x", "/dev/x", "r"),
        ],
        port_map={"tb": 6006},
        max_retries=2,
        retry_policy=RetryPolicy.ROLE,
        min_replicas=1,
        env={"A": "1"},
    )
    return [
        ddp(script="train.py", j="3x2", image="img:1"),
        AppDef("full", [full, role(name="ps", num_replicas=1)]),
    ]


CFG = {
    "service_account": "sa",
    "priority_class": "high",
    "image_pull_secrets": ["r"],
    "secret_env": {"T": "s/k"},
    "queue": "q",
}


@pytest.mark.parametrize("flavour", [VOLCANO, JOBSET])
@pytest.mark.parametrize("index", [0, 1])
def test_pods_pass_the_official_schemas_strictly(flavour: str, index: int) -> None:
    import kubernetes_validate
    from kubernetes_validate.utils import latest_version

    req = request(_apps()[index], flavour=flavour, **CFG)
    for i, template in enumerate(pods(req)):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {**template["metadata"], "name": f"p-{i}"},
            "spec": template["spec"],
        }
        kubernetes_validate.validate(pod, latest_version(), strict=True)
    if flavour == JOBSET:
        for i, job in enumerate(tasks(req)):
            batch = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {**job["template"]["metadata"], "name": f"j-{i}"},
                "spec": job["template"]["spec"],
            }
            kubernetes_validate.validate(batch, latest_version(), strict=True)


def test_an_invalid_pod_fails_the_official_schema() -> None:
    """The check above can fail: a misspelt field is caught (strict)."""
    import kubernetes_validate
    from kubernetes_validate.utils import latest_version

    template = pods(request(_apps()[0]))[0]
    template["spec"]["restartPolicyy"] = "Never"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": template["spec"],
            },
            latest_version(),
            strict=True,
        )


OWN = {
    VOLCANO: REPO / "dev" / "k8s-crds" / "volcano-job.yaml",
    JOBSET: REPO / "dev" / "k8s-crds" / "jobset.yaml",
}
UPSTREAM = {VOLCANO: "volcano-batch.volcano.sh_jobs.yaml", JOBSET: "jobset.x-k8s.io_jobsets.yaml"}


@pytest.mark.parametrize("flavour", [VOLCANO, JOBSET])
def test_objects_pass_the_projects_crds(flavour: str) -> None:
    schema = crd_schema(OWN[flavour])
    for app in _apps():
        validate(schema, request(app, flavour=flavour, **CFG).resource)
    bad = request(_apps()[0], flavour=flavour).resource
    bad["spec"]["surprise"] = 1
    with pytest.raises(Exception, match="surprise"):
        validate(schema, bad)


@pytest.mark.parametrize("flavour", [VOLCANO, JOBSET])
def test_objects_pass_the_upstream_crds(flavour: str, upstream_crds: Path) -> None:
    schema = crd_schema(upstream_crds / UPSTREAM[flavour])
    for app in _apps():
        validate(schema, request(app, flavour=flavour, **CFG).resource)
    # the upstream schemas declare the whole pod: a misspelt pod field is refused too
    bad = request(_apps()[0], flavour=flavour)
    pods(bad)[0]["spec"]["restartPolicyy"] = "Never"
    with pytest.raises(Exception, match="restartPolicyy"):
        validate(schema, bad.resource)


def test_kinds_name_each_flavours_resource() -> None:
    assert KINDS[VOLCANO][:3] == ("batch.volcano.sh", "v1alpha1", "jobs")
    assert KINDS[JOBSET][:3] == ("jobset.x-k8s.io", "v1alpha2", "jobsets")
