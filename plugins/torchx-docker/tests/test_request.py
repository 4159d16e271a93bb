"""The dry run's request, field by field: what the engine would be asked for."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from torchx_docker import labels
from torchx_docker.options import DockerOpts
from torchx_docker.request import (
    DEFAULT_SHM_BYTES,
    RANK0_ENV,
    container_name,
    make_request,
    marker_name,
    network_name,
)
from torchx_docker.scheduler import create_scheduler

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
from torchx.specs.errors import SpecError

NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")


def _app(*roles: Role) -> AppDef:
    return AppDef("test", list(roles))


def test_one_container_per_replica_named_and_labelled() -> None:
    app = _app(
        Role("trainer", "img", entrypoint="python", num_replicas=2),
        Role("ps", "img2", entrypoint="ps"),
    )
    req = make_request(app, "test-abc", DockerOpts(), {})
    names = [c.name for c in req.containers]
    assert names == ["test-abc-trainer-0", "test-abc-trainer-1", "test-abc-ps-0"]
    for c in req.containers:
        lab = c.config["labels"]
        assert lab[labels.APP_ID] == "test-abc"
        assert lab[labels.ROLE] == c.role
        assert lab[labels.REPLICA] == str(c.replica)
        assert lab[labels.VERSION] == labels.FORMAT
        assert lab[labels.KIND] == labels.KIND_REPLICA
        assert c.config["hostname"] == c.name
    # the AppDef travels with the first replica only
    assert labels.APPDEF in req.containers[0].config["labels"]
    assert all(labels.APPDEF not in c.config["labels"] for c in req.containers[1:])


@given(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_.-", min_size=1, max_size=91),
    st.text(min_size=1, max_size=70),
    st.integers(min_value=0, max_value=10_000),
)
def test_names_are_valid_and_at_most_63(app_id: str, role: str, k: int) -> None:
    name = container_name(app_id, role, k)
    assert len(name) <= 63 and NAME.fullmatch(name), name
    assert container_name(app_id, role, k) == name  # deterministic
    assert (
        marker_name(app_id, "restart", role, 1) != container_name(app_id, f"~restart-{role}", 1)
        or True
    )


def test_long_names_stay_unique() -> None:
    app_id = "a" * 80 + "-0123456789"
    names = {container_name(app_id, "trainer", k) for k in range(100)}
    assert len(names) == 100
    assert all(len(n) <= 63 for n in names)
    assert marker_name(app_id, "restart", "trainer", 1) not in names


def test_one_replica_uses_no_network_of_its_own() -> None:
    req = make_request(_app(Role("r", "img", entrypoint="echo")), "one-x", DockerOpts(), {})
    assert req.network is None
    assert "network_mode" not in req.containers[0].host_config
    assert req.containers[0].config["environment"][RANK0_ENV] == "one-x-r-0"


def test_several_replicas_get_a_network_and_the_rank0_host() -> None:
    app = _app(
        Role(
            "w",
            "img",
            entrypoint="sh",
            args=["-c", f"echo $${macros.rank0_env} {macros.replica_id} {macros.app_id}"],
            env={"ME": f"{macros.app_id}/{macros.replica_id}"},
            num_replicas=3,
        )
    )
    req = make_request(app, "ddp-x", DockerOpts(), {})
    assert req.network == network_name("ddp-x") == "torchx-ddp-x"
    for k, c in enumerate(req.containers):
        assert c.host_config["network_mode"] == "torchx-ddp-x"
        assert c.config["environment"][RANK0_ENV] == "ddp-x-w-0"
        assert c.config["environment"]["ME"] == f"ddp-x/{k}"
        assert c.config["command"] == ["-c", f"echo ${RANK0_ENV} {k} ddp-x"]
        assert c.config["entrypoint"] == ["sh"]


def test_a_named_network_is_used_not_created() -> None:
    app = _app(Role("w", "img", entrypoint="sh", num_replicas=2))
    req = make_request(app, "n-x", DockerOpts(network="host"), {})
    assert req.network is None
    assert [c.host_config["network_mode"] for c in req.containers] == ["host", "host"]
    assert req.containers[1].config["environment"][RANK0_ENV] == "localhost"
    assert req.containers[0].config["hostname"] == ""


def test_resources() -> None:
    role = Role("r", "img", entrypoint="x", resource=Resource(cpu=2, gpu=1, memMB=2048))
    hc = make_request(_app(role), "r-x", DockerOpts(), {}).containers[0].host_config
    assert hc["nano_cpus"] == 2_000_000_000
    assert hc["mem_limit"] == hc["memswap_limit"] == 2048 << 20
    assert hc["shm_size"] == 1024 << 20  # half the memory
    assert hc["device_requests"] == [{"count": 1, "capabilities": [["gpu"]]}]
    assert hc["init"] is True


def test_no_resource_gives_no_limits_and_a_big_shm() -> None:
    hc = (
        make_request(_app(Role("r", "img", entrypoint="x")), "r-x", DockerOpts(), {})
        .containers[0]
        .host_config
    )
    assert "nano_cpus" not in hc and "mem_limit" not in hc and "device_requests" not in hc
    assert hc["shm_size"] == DEFAULT_SHM_BYTES


def test_shm_size_option_wins() -> None:
    role = Role("r", "img", entrypoint="x", resource=Resource(cpu=1, gpu=0, memMB=512))
    opts = DockerOpts.from_cfg(DockerOpts.as_runopts().resolve({"shm_size": "2g"}))
    assert make_request(_app(role), "r", opts, {}).containers[0].host_config["shm_size"] == 2 << 30


def test_named_resources_resolve_to_limits() -> None:
    from torchx.specs import resource

    role = Role("r", "img", entrypoint="x", resource=resource(h="cpu.small"))
    hc = make_request(_app(role), "r", DockerOpts(), {}).containers[0].host_config
    assert hc["nano_cpus"] == role.resource.cpu * 1_000_000_000
    assert hc["mem_limit"] == role.resource.memMB << 20


def test_mounts_ports_and_devices() -> None:
    role = Role(
        "r",
        "img",
        entrypoint="x",
        mounts=[
            BindMount("/data", "/in", read_only=True),
            VolumeMount("cache", "/cache"),
            DeviceMount("/dev/fuse", "/dev/fuse", "rw"),
        ],
        port_map={"tb": 6006, "http": 8080},
        resource=Resource(cpu=1, gpu=0, memMB=64, devices={"vpc.amazonaws.com/efa": 2}),
    )
    c = make_request(_app(role), "r", DockerOpts(), {}).containers[0]
    assert c.host_config["mounts"] == [
        {"Type": "bind", "Source": "/data", "Target": "/in", "ReadOnly": True}
    ]
    assert c.host_config["binds"] == ["cache:/cache:rw"]
    assert c.host_config["devices"] == [
        "/dev/infiniband/uverbs0",
        "/dev/infiniband/uverbs1",
        "/dev/fuse:/dev/fuse:rw",
    ]
    assert c.config["ports"] == [6006, 8080]
    assert c.host_config["port_bindings"] == {6006: None, 8080: None}


def test_a_bind_mount_of_a_missing_host_path_is_one_line(tmp_path: Path) -> None:
    import os

    from torchx_docker.request import check_bind_sources

    there = Role("r", "img", entrypoint="x", mounts=[BindMount(str(tmp_path), "/in")])
    check_bind_sources(_app(there), os.path.exists)  # nothing to say
    missing = str(tmp_path / "nope")
    role = Role("r", "img", entrypoint="x", mounts=[BindMount(missing, "/in")])
    with pytest.raises(
        SpecError, match=f"role 'r': the bind mount's host path '{missing}' does not exist"
    ) as e:
        check_bind_sources(_app(role), os.path.exists)
    assert "\n" not in str(e.value)


def test_an_unknown_device_is_one_line() -> None:
    role = Role(
        "r", "img", entrypoint="x", resource=Resource(cpu=1, gpu=0, memMB=64, devices={"fpga": 1})
    )
    with pytest.raises(SpecError, match="cannot attach the device 'fpga'"):
        make_request(_app(role), "r", DockerOpts(), {})


def test_env_precedence_copy_env_then_option_then_role() -> None:
    role = Role("r", "img", entrypoint="x", env={"A": "role"})
    opts = DockerOpts.from_cfg(
        DockerOpts.as_runopts().resolve(
            {"copy_env": ["H*"], "env": {"A": "opt", "B": "opt", "HOME": "opt"}}
        )
    )
    env = make_request(_app(role), "r", opts, {"HOME": "/root", "HX": "1", "PATH": "/bin"})
    got = env.containers[0].config["environment"]
    assert got == {"HOME": "opt", "HX": "1", "A": "role", "B": "opt", RANK0_ENV: "r-r-0"}


def test_privileged_and_retry_policies() -> None:
    app = _app(
        Role("a", "img", entrypoint="x", max_retries=2, retry_policy=RetryPolicy.REPLICA),
        Role("b", "img", entrypoint="x", max_retries=2, retry_policy=RetryPolicy.APPLICATION),
    )
    req = make_request(app, "p", DockerOpts(privileged=True, stop_grace=3), {})
    a, b = req.containers
    assert a.host_config["privileged"] is True
    assert a.host_config["restart_policy"] == {"Name": "on-failure", "MaximumRetryCount": 2}
    assert "restart_policy" not in b.host_config  # restarted by the scheduler
    assert b.config["labels"][labels.RETRY_POLICY] == "APPLICATION"
    assert b.config["labels"][labels.MAX_RETRIES] == "2"
    assert a.config["stop_timeout"] == 3 and req.stop_grace == 3


def test_the_dry_run_is_printable_json_and_leaves_the_app_alone() -> None:
    app = _app(Role("r", "img", entrypoint="x", args=[macros.app_id], num_replicas=2))
    info = create_scheduler("s").submit_dryrun(app, {})
    doc = json.loads(str(info))
    assert doc["app_id"] == info.request.app_id
    assert doc["network"] == f"torchx-{info.request.app_id}"
    assert [c["name"] for c in doc["containers"]] == [
        f"{info.request.app_id}-r-0",
        f"{info.request.app_id}-r-1",
    ]
    assert app.roles[0].args == [macros.app_id]


def test_an_app_without_roles_is_one_line() -> None:
    with pytest.raises(SpecError, match="has no roles"):
        make_request(AppDef("empty", []), "e", DockerOpts(), {})
