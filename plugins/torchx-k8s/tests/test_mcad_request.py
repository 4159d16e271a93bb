"""The AppWrappers ``kubernetes_mcad`` makes, both versions, field by field; its run options and
app ids.

Pods are checked against the official Kubernetes schemas (``kubernetes-validate``,
strict), as the ``kubernetes`` scheduler's are: the pods are built by the same code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from crdcheck import crd_schema, validate
from hypothesis import given
from hypothesis import strategies as st
from torchx_k8s import labels
from torchx_k8s.appwrapper import (
    FAILURE_GRACE,
    MCAD_POD_LABEL,
    NETWORK_ANNOTATION,
    RETRY_LIMIT,
    RETRY_PAUSE,
    make_appwrapper,
)
from torchx_k8s.names import (
    APPWRAPPER,
    APPWRAPPER_FLAVOURS,
    APPWRAPPER_V1BETA2,
    JOBSET,
    K8S_IDS,
    MCAD_IDS,
    AppRef,
    InvalidK8sAppIdError,
    format_app_id,
    parse_app_id,
)
from torchx_k8s.options import McadOpts
from torchx_k8s.request import K8sRequest, appdef_from

from torchx.components.dist import ddp
from torchx.specs import (
    AppDef,
    BindMount,
    Resource,
    RetryPolicy,
    Role,
    VolumeMount,
    macros,
    parse_app_handle,
)
from torchx.specs.errors import InvalidRunConfigException, SpecError
from torchx.specs.overlays import set_overlay

NAME = "trainer-1a2b3c4d5e"
VERSIONS = ["v1beta1", "v1beta2"]


def opts(**cfg: Any) -> McadOpts:
    return McadOpts.from_cfg(McadOpts.as_runopts().resolve(cfg))


def two_roles(**master: Any) -> AppDef:
    return AppDef(
        "trainer",
        [
            Role(
                "master",
                "img:1",
                entrypoint="python",
                args=["-m", "train", "--host", macros.rank0_env, "--id", macros.replica_id],
                num_replicas=1,
                resource=Resource(cpu=2, gpu=1, memMB=4096),
                **master,
            ),
            Role(
                "worker",
                "img:1",
                entrypoint="python",
                args=["-m", "train", "--id", macros.replica_id, "--app", macros.app_id],
                num_replicas=2,
                resource=Resource(cpu=1, gpu=0, memMB=2048),
            ),
        ],
    )


def request(app: AppDef, **cfg: Any) -> K8sRequest:
    return make_appwrapper(app, NAME, opts(**cfg))


def items(req: K8sRequest) -> list[dict[str, Any]]:
    """The wrapped objects, whatever the version."""
    spec = req.resource["spec"]
    if "components" in spec:
        return [c["template"] for c in spec["components"]]
    return [i["generictemplate"] for i in spec["resources"]["GenericItems"]]


def of_kind(req: K8sRequest, kind: str) -> list[dict[str, Any]]:
    return [o for o in items(req) if o["kind"] == kind]


def env(p: dict[str, Any]) -> dict[str, Any]:
    return {
        e["name"]: e.get("value", e.get("valueFrom")) for e in p["spec"]["containers"][0]["env"]
    }


# -- the AppWrapper ----------------------------------------------------------------------------


def test_v1beta1_is_upstreams_shape_one_pod_per_replica_then_the_service() -> None:
    req = request(two_roles())
    aw = req.resource
    assert (aw["apiVersion"], aw["kind"]) == ("workload.codeflare.dev/v1beta1", "AppWrapper")
    assert req.flavour == APPWRAPPER and req.app_id == f"default:{NAME}"
    assert aw["metadata"]["name"] == NAME and aw["metadata"]["namespace"] == "default"
    assert aw["metadata"]["labels"][labels.MANAGED_BY] == labels.MANAGER
    generic = aw["spec"]["resources"]["GenericItems"]
    assert [i["generictemplate"]["kind"] for i in generic] == ["Pod", "Pod", "Pod", "Service"]
    assert all(i["replicas"] == 1 for i in generic)
    pods = of_kind(req, "Pod")
    assert [p["metadata"]["name"] for p in pods] == [
        f"{NAME}-master-0",
        f"{NAME}-worker-0",
        f"{NAME}-worker-1",
    ]
    for p in pods:
        assert p["spec"]["hostname"] == p["metadata"]["name"]
        assert p["spec"]["subdomain"] == NAME
        assert p["metadata"]["namespace"] == "default"
        assert p["metadata"]["labels"][MCAD_POD_LABEL] == NAME
        assert p["metadata"]["labels"][labels.INSTANCE] == NAME
        assert p["spec"]["restartPolicy"] == "Never"
    assert [
        (p["metadata"]["labels"][labels.ROLE_NAME], p["metadata"]["labels"][labels.REPLICA_ID])
        for p in pods
    ] == [("master", "0"), ("worker", "0"), ("worker", "1")]
    # MCAD counts quota from custompodresources: the pod's own requests and limits
    first = generic[0]["custompodresources"]
    assert first == [
        {
            "replicas": 1,
            "requests": {"cpu": "1900m", "memory": "3072Mi", "nvidia.com/gpu": "1"},
            "limits": {"cpu": "2000m", "memory": "4096Mi", "nvidia.com/gpu": "1"},
        }
    ]
    assert appdef_from(aw) == two_roles()


def test_v1beta2_wraps_the_same_objects_as_components() -> None:
    one, two = request(two_roles()), request(two_roles(), appwrapper_version="v1beta2")
    aw = two.resource
    assert aw["apiVersion"] == "workload.codeflare.dev/v1beta2"
    assert two.flavour == APPWRAPPER_V1BETA2 and two.app_id == f"default:{NAME}:v1beta2"
    components = aw["spec"]["components"]
    assert [c.get("podSets") for c in components] == [[{"replicas": 1, "path": "template"}]] * 3 + [
        None
    ]
    # the same pods, less MCAD's label; the same Service
    for a, b in zip(of_kind(one, "Pod"), of_kind(two, "Pod"), strict=True):
        a["metadata"]["labels"].pop(MCAD_POD_LABEL)
        assert a == b
    assert of_kind(one, "Service") == of_kind(two, "Service")
    assert "priority" not in aw["spec"] and "schedulingSpec" not in aw["spec"]
    assert aw["metadata"]["annotations"][RETRY_LIMIT] == "0"


@pytest.mark.parametrize("version", VERSIONS)
def test_every_replica_reads_the_rank0_host_from_one_variable(version: str) -> None:
    req = request(two_roles(), appwrapper_version=version)
    pods = of_kind(req, "Pod")
    # rank 0's pod, fully qualified: in its own /etc/hosts at once, in the DNS for the others
    assert pods[0]["spec"]["hostname"] == f"{NAME}-master-0"
    rank0 = f"{NAME}-master-0.{NAME}.default.svc.cluster.local"
    assert [env(p)["TORCHX_RANK0_HOST"] for p in pods] == [rank0] * 3
    master, worker0, worker1 = (p["spec"]["containers"][0]["command"] for p in pods)
    assert master == ["python", "-m", "train", "--host", "TORCHX_RANK0_HOST", "--id", "0"]
    assert worker1 == ["python", "-m", "train", "--id", "1", "--app", NAME]
    assert worker0[-3] == "0"


@pytest.mark.parametrize("version", VERSIONS)
def test_the_service_is_headless_selects_the_apps_pods_and_publishes_them_unready(
    version: str,
) -> None:
    [svc] = of_kind(request(two_roles(), appwrapper_version=version), "Service")
    assert svc["metadata"]["name"] == NAME
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["spec"]["selector"] == {labels.INSTANCE: NAME}
    assert svc["spec"]["ports"] == [
        {"name": "c10d", "port": 29500, "targetPort": 29500, "protocol": "TCP"}
    ]
    [svc] = of_kind(request(two_roles(port_map={"tb": 6006, "Rdzv Port": 29400})), "Service")
    assert [(p["name"], p["port"]) for p in svc["spec"]["ports"]] == [
        ("tb", 6006),
        ("rdzv-port", 29400),
    ]


def test_priority_and_retries_on_v1beta1() -> None:
    spec = request(two_roles(max_retries=2), priority=7).resource["spec"]
    assert spec["priority"] == 7
    assert spec["schedulingSpec"] == {"minAvailable": 3, "requeuing": {"maxNumRequeuings": 2}}
    spec = request(two_roles(max_retries=1), failure_grace=5, retry_pause=1).resource["spec"]
    assert spec["schedulingSpec"]["requeuing"] == {
        "maxNumRequeuings": 1,
        "timeInSeconds": 5,
        "pauseTimeInSeconds": 1,
    }
    # no retries: MCAD must not monitor it (maxNumRequeuings 0 would mean "no limit")
    assert request(two_roles()).resource["spec"]["schedulingSpec"] == {"minAvailable": -1}


def test_min_replicas_is_the_gang_minimum() -> None:
    app = two_roles(max_retries=1)
    app.roles[1].min_replicas = 1
    spec = request(app).resource["spec"]
    assert spec["schedulingSpec"]["minAvailable"] == 2


@pytest.mark.parametrize("policy", [RetryPolicy.APPLICATION, RetryPolicy.ROLE, RetryPolicy.REPLICA])
def test_retries_are_the_largest_of_the_roles_on_v1beta2(policy: RetryPolicy) -> None:
    app = two_roles(max_retries=3, retry_policy=policy)
    app.roles[1].max_retries = 1
    aw = request(app, appwrapper_version="v1beta2", failure_grace=5, retry_pause=0).resource
    assert aw["metadata"]["annotations"][RETRY_LIMIT] == "3"
    assert aw["metadata"]["annotations"][FAILURE_GRACE] == "5s"
    assert aw["metadata"]["annotations"][RETRY_PAUSE] == "0s"


@pytest.mark.parametrize(
    ("version", "api", "label"),
    [
        ("v1beta1", "scheduling.sigs.k8s.io/v1alpha1", "pod-group.scheduling.sigs.k8s.io"),
        ("v1beta2", "scheduling.x-k8s.io/v1alpha1", "scheduling.x-k8s.io/pod-group"),
    ],
)
def test_a_coscheduler_gangs_the_whole_app_in_one_pod_group(
    version: str, api: str, label: str
) -> None:
    req = request(two_roles(), appwrapper_version=version, coscheduler_name="co")
    assert items(req)[0]["kind"] == "PodGroup"
    [group] = of_kind(req, "PodGroup")
    assert group["apiVersion"] == api
    assert group["metadata"]["name"] == NAME and group["spec"] == {"minMember": 3}
    for p in of_kind(req, "Pod"):
        assert p["spec"]["schedulerName"] == "co"
        assert p["metadata"]["labels"][label] == NAME
    assert not of_kind(request(two_roles(), appwrapper_version=version), "PodGroup")


@pytest.mark.parametrize("version", VERSIONS)
def test_upstreams_pod_options(version: str) -> None:
    req = request(
        two_roles(),
        appwrapper_version=version,
        service_account="trainer-sa",
        image_secret="regcred",
        priority_class_name="high",
        network="team-a/fast-net",
        namespace="team-a",
    )
    assert req.app_id.startswith("team-a:")
    for p in of_kind(req, "Pod"):
        assert p["spec"]["serviceAccountName"] == "trainer-sa"
        assert p["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
        assert p["spec"]["priorityClassName"] == "high"
        assert p["metadata"]["annotations"][NETWORK_ANNOTATION] == "team-a/fast-net"
        assert p["metadata"]["namespace"] == "team-a"


def test_queue_is_kueues_label_on_v1beta2() -> None:
    aw = request(two_roles(), appwrapper_version="v1beta2", queue="team-q").resource
    assert aw["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-q"


def test_a_pod_overlay_keeps_its_say() -> None:
    app = two_roles()
    set_overlay(app.roles[0], "kubernetes", "V1Pod", {"spec": {"hostNetwork": True}})
    pods = of_kind(request(app), "Pod")
    assert pods[0]["spec"]["hostNetwork"] is True and "hostNetwork" not in pods[1]["spec"]


def test_long_role_names_still_make_dns_label_host_names() -> None:
    app = AppDef("t", [Role("a-very-long-role-name-" * 4, "img", entrypoint="x", num_replicas=2)])
    for p in of_kind(request(app), "Pod"):
        assert len(p["spec"]["hostname"]) <= 63 and p["metadata"]["name"] == p["spec"]["hostname"]


def test_a_request_checks_the_app() -> None:
    with pytest.raises(SpecError, match="no image"):
        request(AppDef("x", [Role("a", "")]))


def _schema_apps() -> list[AppDef]:
    full = Role(
        "full",
        "img:1",
        entrypoint="python",
        args=["-m", "x"],
        num_replicas=2,
        resource=Resource(cpu=2, gpu=1, memMB=4096, devices={"vpc.amazonaws.com/efa": 1}),
        mounts=[BindMount("/d", "/d"), VolumeMount("c", "/c", True)],
        port_map={"tb": 6006},
        max_retries=2,
        env={"A": "1"},
    )
    return [ddp(script="train.py", j="3x2", image="img:1"), AppDef("full", [full]), two_roles()]


CFG = {
    "service_account": "sa",
    "priority_class_name": "high",
    "image_secret": "r",
    "secret_env": {"T": "s/k"},
    "coscheduler_name": "co",
    "network": "net",
}


@pytest.mark.parametrize("version", VERSIONS)
def test_pods_and_services_pass_the_official_schemas_strictly(version: str) -> None:
    import kubernetes_validate
    from kubernetes_validate.utils import latest_version

    for app in _schema_apps():
        req = request(app, appwrapper_version=version, **CFG)
        for obj in of_kind(req, "Pod") + of_kind(req, "Service"):
            kubernetes_validate.validate(obj, latest_version(), strict=True)


# -- run options -------------------------------------------------------------------------------


def test_options_default_to_upstreams() -> None:
    o = opts()
    assert o.appwrapper_version == "v1beta1" and o.pods.namespace == "default"
    assert o.priority is None and o.coscheduler_name is None and o.network is None
    assert o.pods.validate_spec is True


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"appwrapper_version": "v2"}, "'appwrapper_version'='v2' is not one of v1beta1, v1beta2"),
        ({"priority": 5, "appwrapper_version": "v1beta2"}, "'priority' has no place"),
        ({"priority": 2**31}, "'priority'=2147483648 is out of range"),
        ({"queue": "q"}, "'queue' (a Kueue LocalQueue) needs appwrapper_version=v1beta2"),
        ({"namespace": "Team_A"}, "'namespace'='Team_A' is not a namespace name"),
        ({"image_secret": "Reg Cred"}, "'image_secret'='Reg Cred' is not a Secret name"),
        ({"coscheduler_name": "co/x"}, "'coscheduler_name'='co/x' is not a scheduler name"),
        ({"priority_class_name": "High"}, "'priority_class_name'='High' is not a PriorityClass"),
        ({"network": "bad\nnet"}, "'network'='bad\\nnet' is not a network attachment"),
        ({"failure_grace": -1}, "'failure_grace'=-1 is out of range"),
        ({"retry_pause": 100000}, "'retry_pause'=100000 is out of range"),
        ({"secret_env": {"T": "nokey"}}, "give SECRET/KEY"),
        ({"reserved_memmb": -5}, "'reserved_memmb'=-5 is negative"),
        ({"context": " "}, "'context' is empty"),
    ],
)
def test_bad_options_are_one_line_naming_the_option(cfg: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRunConfigException) as info:
        opts(**cfg)
    text = str(info.value)
    assert "\n" not in text
    assert message in text


def test_upstream_option_names_resolve() -> None:
    names = {o for o, _ in McadOpts.as_runopts()}
    assert {
        "namespace",
        "image_repo",
        "service_account",
        "priority",
        "priority_class_name",
        "image_secret",
        "coscheduler_name",
        "network",
    } <= names


# -- app ids -----------------------------------------------------------------------------------

labels_st = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)
contexts = st.text(min_size=1, max_size=40).filter(lambda s: s.strip() == s and s)


@given(labels_st, labels_st, st.sampled_from(APPWRAPPER_FLAVOURS), st.none() | contexts)
def test_mcad_app_ids_read_back_what_they_wrote(
    ns: str, name: str, flavour: str, ctx: str | None
) -> None:
    ref = AppRef(ns, name, flavour, ctx)
    app_id = format_app_id(ref)
    assert parse_app_id(app_id, MCAD_IDS) == ref
    assert parse_app_handle(f"kubernetes_mcad://session/{app_id}").app_id == app_id


@given(st.text(max_size=60))
def test_any_text_is_an_mcad_app_id_or_one_line(text: str) -> None:
    try:
        ref = parse_app_id(text, MCAD_IDS)
    except InvalidK8sAppIdError as e:
        assert "\n" not in str(e) and "kubernetes_mcad app id" in str(e)
    else:
        assert ref.flavour in APPWRAPPER_FLAVOURS
        assert parse_app_id(format_app_id(ref), MCAD_IDS) == ref


def test_upstreams_handles_name_a_v1beta1_appwrapper() -> None:
    handle = parse_app_handle("kubernetes_mcad://torchx_user/team-a:trainer-x1")
    assert handle.scheduler_backend == "kubernetes_mcad"
    assert parse_app_id(handle.app_id, MCAD_IDS) == AppRef("team-a", "trainer-x1", APPWRAPPER)


@pytest.mark.parametrize("bad", ["trainer", "ns:name:jobset", "ns:name:v1beta3", "A:b"])
def test_bad_mcad_ids_say_the_form(bad: str) -> None:
    with pytest.raises(InvalidK8sAppIdError, match=r"NAMESPACE:NAME\[:v1beta2\]\[@CONTEXT\]"):
        parse_app_id(bad, MCAD_IDS)


def test_each_scheduler_reads_only_its_own_suffixes() -> None:
    assert parse_app_id("ns:n:jobset", K8S_IDS).flavour == JOBSET
    with pytest.raises(InvalidK8sAppIdError, match="kubernetes app id"):
        parse_app_id("ns:n:v1beta2", K8S_IDS)


# -- against the CRDs --------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[3]
CRDS = REPO / "dev" / "k8s-crds"
PODGROUP_GROUPS = {"v1beta1": "scheduling.sigs.k8s.io", "v1beta2": "scheduling.x-k8s.io"}


def _aws(version: str) -> list[K8sRequest]:
    return [request(a, appwrapper_version=version, **CFG) for a in _schema_apps()] + [
        request(two_roles(max_retries=2), appwrapper_version=version, failure_grace=5),
        request(two_roles(), appwrapper_version=version),
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_appwrappers_pass_the_projects_crd(version: str) -> None:
    schema = crd_schema(CRDS / "appwrapper.yaml", version)
    for req in _aws(version):
        validate(schema, req.resource)
    bad = request(two_roles(), appwrapper_version=version).resource
    bad["spec"]["surprise"] = 1
    with pytest.raises(Exception, match="surprise"):
        validate(schema, bad)


def _crd_of_group(group: str, version: str) -> dict[str, Any]:
    for path in sorted(CRDS.glob("*.yaml")):
        try:
            return crd_schema(path, version, group)
        except LookupError:
            continue
    raise LookupError(f"no CRD of {group}/{version} in {CRDS}")


@pytest.mark.parametrize("version", VERSIONS)
def test_pod_groups_pass_the_projects_crd(version: str) -> None:
    group = PODGROUP_GROUPS[version]
    schema = _crd_of_group(group, "v1alpha1")
    [pg] = of_kind(
        request(two_roles(), appwrapper_version=version, coscheduler_name="c"), "PodGroup"
    )
    assert pg["apiVersion"] == f"{group}/v1alpha1"
    validate(schema, pg)


UPSTREAM = {
    "v1beta1": "workload.codeflare.dev_appwrappers.mcad-v1beta1.yaml",
    "v1beta2": "workload.codeflare.dev_appwrappers.v1beta2.yaml",
}


@pytest.mark.parametrize("version", VERSIONS)
def test_appwrappers_pass_the_upstream_crds(version: str, upstream_crds: Path) -> None:
    """MCAD's (v1beta1) and the AppWrapper controller's (v1beta2) published CRDs, in the
    folder ``TORCHX_K8S_UPSTREAM_CRDS`` names (see conftest.py)."""
    schema = crd_schema(upstream_crds / UPSTREAM[version], version, "workload.codeflare.dev")
    for req in _aws(version):
        validate(schema, req.resource)
    bad = _aws(version)[0].resource
    bad["spec"]["surprise"] = 1
    with pytest.raises(Exception, match="surprise"):
        validate(schema, bad)
