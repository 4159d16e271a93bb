"""The job an app becomes, field by field, made without AWS."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from torchx_aws.batch.options import BatchOpts
from torchx_aws.batch.request import (
    APPDEF_MAX,
    NODE_WRAPPER,
    REPLICA_MARK,
    RETRY_EXIT,
    appdef_and_options_of,
    appdef_of,
    job_name,
    make_request,
    retry_policy_warnings,
    roles_of,
)

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
from torchx.specs.appdef_json import encode
from torchx.specs.errors import InvalidRunConfigException, SpecError

RES = Resource(cpu=1.5, gpu=0, memMB=1024)


def _opts(**cfg: object):  # type: ignore[no-untyped-def]
    return BatchOpts.from_cfg(BatchOpts.as_runopts().resolve({"queue": "q", **cfg}))


def _role(name: str = "main", n: int = 1, **kw: object) -> Role:
    return Role(
        name, "img:1", entrypoint="python", args=["-m", "x"], num_replicas=n, resource=RES, **kw
    )  # type: ignore[arg-type]


def test_one_replica_is_a_container_job() -> None:
    req = make_request(AppDef("app", [_role(env={"A": "${app_id}"})]), "app-1a2b", _opts())
    jd = req.job_def
    assert jd["type"] == "container" and "nodeProperties" not in jd
    c = jd["containerProperties"]
    assert c["image"] == "img:1"
    assert c["command"] == ["python", "-m", "x"]
    env = {e["name"]: e["value"] for e in c["environment"]}
    assert env == {
        "TORCHX_ROLE_NAME": "main",
        "A": "app-1a2b",
        "TORCHX_REPLICA_ID": "0",
        "TORCHX_RANK0_HOST": "localhost",
    }
    assert c["resourceRequirements"] == [
        {"type": "VCPU", "value": "2"},
        {"type": "MEMORY", "value": "1024"},
    ]
    assert c["linuxParameters"] == {"sharedMemorySize": 512}
    assert c["privileged"] is False
    assert jd["retryStrategy"] == {"attempts": 1}
    assert req.job == {
        "jobName": "app-1a2b",
        "jobQueue": "q",
        "tags": jd["tags"],
        "propagateTags": True,
    }
    assert "cannot be written as JSON" in req.appdef_left_out  # cpu=1.5
    assert jd["tags"]["torchx.pytorch.org/version"] == "1"
    assert jd["tags"]["torchx.pytorch.org/app-name"] == "app"


def test_roles_become_node_ranges_main_node_first() -> None:
    app = AppDef("app", [_role("trainer", 3, max_retries=2), _role("ps", 1)])
    req = make_request(app, "app-x", _opts())
    props = req.job_def["nodeProperties"]
    assert props["numNodes"] == 4 and props["mainNode"] == 0
    assert [r["targetNodes"] for r in props["nodeRangeProperties"]] == ["0:2", "3:3"]
    assert req.job_def["retryStrategy"] == {"attempts": 3}
    assert roles_of(props) == [("trainer", 0, 3), ("ps", 3, 1)]
    trainer = props["nodeRangeProperties"][0]["container"]
    # the range's first node, the job's attempts, no env value holding the replica id
    assert trainer["command"][:7] == ["sh", "-c", NODE_WRAPPER, "torchx-node", "0", "3", "0"]
    assert trainer["command"][7:] == ["python", "-m", "x"]
    ps = props["nodeRangeProperties"][1]["container"]
    assert ps["command"][4] == "3"  # its first node


def test_a_replica_or_role_retry_policy_is_the_whole_job_and_said_so() -> None:
    app = AppDef(
        "app",
        [
            _role("trainer", 2, max_retries=2, retry_policy=RetryPolicy.REPLICA),
            _role("ps", 1, max_retries=1, retry_policy=RetryPolicy.ROLE),
            _role("agg", 1, retry_policy=RetryPolicy.REPLICA),  # no retries: nothing to say
            _role("eval", 1, max_retries=3, retry_policy=RetryPolicy.APPLICATION),
        ],
    )
    # the request is APPLICATION's whatever the policies: Batch reruns the whole job
    req = make_request(app, "app-x", _opts())
    assert req.job_def["retryStrategy"] == {"attempts": 4}
    said = retry_policy_warnings(app)
    assert said == [
        "role 'trainer' asks retry_policy=REPLICA with max_retries=2: AWS Batch retries "
        "the whole job (APPLICATION), every node of every role, on a failure of any node",
        "role 'ps' asks retry_policy=ROLE with max_retries=1: AWS Batch retries "
        "the whole job (APPLICATION), every node of every role, on a failure of any node",
    ]
    assert retry_policy_warnings(AppDef("a", [_role(max_retries=2)])) == []


def test_the_appdef_goes_with_the_job_as_a_parameter_up_to_8_kib() -> None:
    whole = Resource(cpu=1, gpu=0, memMB=1024)

    def role(name: str = "main", n: int = 1, **kw: object) -> Role:
        return Role(name, "img:1", entrypoint="python", num_replicas=n, resource=whole, **kw)  # type: ignore[arg-type]

    app = AppDef(
        "app",
        [role("trainer", 2, env={"TOKEN": "${app_id}"}), role("ps", max_retries=1)],
        metadata={"k": "v"},
    )
    req = make_request(app, "app-x", _opts())
    assert req.appdef_left_out == ""
    assert appdef_of(req.job) == app  # as written: macros unfilled, every field
    # the whole request stays far below what SubmitJob accepts (30 KiB)
    just = AppDef("app", [role(args=["x" * (APPDEF_MAX - 1000)])])
    kept = make_request(just, "app-x", _opts()).job["parameters"]["torchx_appdef"]
    assert 7 * 1024 < len(kept.encode()) <= APPDEF_MAX
    big = AppDef("app", [role(args=["é" * (APPDEF_MAX // 2)])])  # 2 bytes each
    left = make_request(big, "app-x", _opts())
    assert "parameters" not in left.job
    assert re.fullmatch(
        r"it is 8\d\d\d bytes, over the 8 KiB kept with a job", left.appdef_left_out
    )
    # a value the serializer refuses (a fractional cpu): the job goes, without it
    odd = make_request(AppDef("a", [Role("r", "img", resource=RES)]), "a-x", _opts())
    assert "parameters" not in odd.job and "cannot be written as JSON" in odd.appdef_left_out
    assert appdef_of({}) is None and appdef_of({"parameters": {"torchx_appdef": "[]"}}) is None
    # the run options go with it, masked, where they fit; else the AppDef goes without them
    with_options = make_request(app, "app-x", _opts())
    kept_app, options = appdef_and_options_of(with_options.job)
    assert kept_app == app and options["queue"] == _opts()["queue"]
    room = APPDEF_MAX - len(encode(AppDef("app", [role(args=[""])])).encode())
    fits = AppDef("app", [role(args=["x" * (room - 20)])])  # 20 bytes to spare alone
    assert len(encode(fits).encode()) == APPDEF_MAX - 20
    near = make_request(fits, "app-x", _opts())
    assert near.appdef_left_out == ""
    assert appdef_and_options_of(near.job) == (fits, {})  # with them it would be over 8 KiB


def test_macros_in_a_multi_node_job_are_filled_in_at_run_time() -> None:
    role = _role("w", 2)
    role.args = [f"--rank={macros.replica_id}", f"$${macros.rank0_env}"]
    role.env = {"R": f"r{macros.replica_id}", "P": "plain"}
    req = make_request(AppDef("app", [role]), "app-x", _opts())
    c = req.job_def["nodeProperties"]["nodeRangeProperties"][0]["container"]
    assert c["command"][4:] == [
        "0",
        "1",
        "1",
        f"R=r{REPLICA_MARK}",
        "python",
        f"--rank={REPLICA_MARK}",
        "$TORCHX_RANK0_HOST",
    ]
    assert {e["name"]: e["value"] for e in c["environment"]} == {
        "TORCHX_ROLE_NAME": "w",
        "P": "plain",
    }


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX sh")
def test_the_node_wrapper_sets_the_replica_id_and_rank0_host() -> None:
    cmd = ["sh", "-c", NODE_WRAPPER, "torchx-node", "2", "1", "1"]
    cmd += [f"R=r{REPLICA_MARK}x{REPLICA_MARK}"]
    cmd += [
        "sh",
        "-c",
        'echo "$1|$R|$TORCHX_REPLICA_ID|$TORCHX_RANK0_HOST"',
        "p",
        f"a{REPLICA_MARK}b",
    ]
    env = {
        "PATH": "/usr/bin:/bin",
        "AWS_BATCH_JOB_NODE_INDEX": "5",
        "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "10.0.0.7",
    }
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    assert out == "a3b|r3x3|3|10.0.0.7\n"
    # the main node has no main-node address: it uses its own
    del env["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"]
    env["AWS_BATCH_JOB_NODE_INDEX"] = "2"
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    parts = out.strip().split("|")
    assert parts[:3] == ["a0b", "r0x0", "0"] and parts[3] and "$" not in parts[3]
    # outside a Batch multi-node job it says so and fails
    del env["AWS_BATCH_JOB_NODE_INDEX"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert proc.returncode != 0 and "AWS_BATCH_JOB_NODE_INDEX" in proc.stderr


def _nodes(script0: str, script1: str, attempt: int, attempts: int) -> tuple[int, int, str]:
    """Runs a job's main node and child node through the wrapper on this machine (the
    child reaching the main node on 127.0.0.1, at a port free now); (main's exit code,
    child's, main's stderr)."""
    import os
    import socket
    import sys

    with socket.socket() as s:  # child node 1 reports to the port after the first
        s.bind(("127.0.0.1", 0))
        base = s.getsockname()[1] - 1
    procs = []
    for node, script in enumerate((script0, script1)):
        env = {
            "PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin",
            "AWS_BATCH_JOB_NODE_INDEX": str(node),
            "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0",
            "AWS_BATCH_JOB_NUM_NODES": "2",
            "AWS_BATCH_JOB_ATTEMPT": str(attempt),
            "TORCHX_NODE_REPORT_PORT": str(base),
        }
        if node:
            env["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"] = "127.0.0.1"
        cmd = ["sh", "-c", NODE_WRAPPER, "torchx-node", "0", str(attempts), "0", "sh", "-c"]
        procs.append(subprocess.Popen([*cmd, script], env=env, stderr=subprocess.PIPE, text=True))
    main, child = procs
    _, err = main.communicate(timeout=60)
    child.communicate(timeout=60)
    return main.returncode, child.returncode, err


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX sh")
def test_the_main_node_hears_from_its_children() -> None:
    # Batch ends the job when the main node exits, with the main node's status: the
    # wrapper makes the main node wait for each child's exit code, and end early when a
    # child fails
    assert _nodes("exit 0", "sleep 1; exit 0", 1, 1)[:2] == (0, 0)
    # a child failing after the main node's command: the main node waited for it; on
    # the last attempt it exits 0 (status reads the node job), else 75 (Batch retries)
    assert _nodes("exit 0", "sleep 1; exit 7", 1, 1)[:2] == (0, 7)
    assert _nodes("exit 0", "sleep 1; exit 7", 1, 2)[:2] == (RETRY_EXIT, 7)
    # a child failing while the main node's command runs stops it (Batch then retries)
    main, child, err = _nodes("exec sleep 60", "sleep 1; exit 7", 2, 2)
    assert (main, child) == (143, 7)
    assert "torchx: node 1 exited with code 7: stopping the main node" in err
    # the main node failing is the job failing: it does not wait
    assert _nodes("exit 3", "sleep 1; exit 0", 1, 1)[0] == 3


def test_mounts_devices_and_run_options() -> None:
    role = _role(
        mounts=[
            BindMount("/data", "/mnt/data", read_only=True),
            VolumeMount("fs-123", "/efs"),
            DeviceMount("/dev/fuse", "/dev/fuse", permissions="rw"),
        ]
    )
    role.resource = Resource(
        cpu=4,
        gpu=2,
        memMB=2048,
        devices={"vpc.amazonaws.com/efa": 2},
        capabilities={"node.kubernetes.io/instance-type": "p4d.24xlarge"},
    )
    opts = _opts(
        privileged=True,
        ulimits=["nofile:1:2"],
        job_role_arn="arn:aws:iam::123456789012:role/job",
        execution_role_arn="arn:aws:iam::123456789012:role/exec",
        share_id="team",
        priority=7,
    )
    req = make_request(AppDef("app", [role, _role("b")]), "app-x", opts)
    c = req.job_def["nodeProperties"]["nodeRangeProperties"][0]["container"]
    assert c["volumes"] == [
        {"name": "mount_0", "host": {"sourcePath": "/data"}},
        {"name": "mount_1", "efsVolumeConfiguration": {"fileSystemId": "fs-123"}},
    ]
    assert c["mountPoints"] == [
        {"containerPath": "/mnt/data", "readOnly": True, "sourceVolume": "mount_0"},
        {"containerPath": "/efs", "readOnly": False, "sourceVolume": "mount_1"},
    ]
    rw = ["READ", "WRITE", "MKNOD"]
    assert c["linuxParameters"]["devices"] == [
        {
            "hostPath": "/dev/infiniband/uverbs0",
            "containerPath": "/dev/infiniband/uverbs0",
            "permissions": rw,
        },
        {
            "hostPath": "/dev/infiniband/uverbs1",
            "containerPath": "/dev/infiniband/uverbs1",
            "permissions": rw,
        },
        {"hostPath": "/dev/fuse", "containerPath": "/dev/fuse", "permissions": ["READ", "WRITE"]},
    ]
    assert {"type": "GPU", "value": "2"} in c["resourceRequirements"]
    assert c["instanceType"] == "p4d.24xlarge"
    assert c["privileged"] is True
    assert c["ulimits"] == [{"name": "nofile", "softLimit": 1, "hardLimit": 2}]
    assert c["jobRoleArn"].endswith("role/job") and c["executionRoleArn"].endswith("role/exec")
    assert req.job["shareIdentifier"] == "team" and req.job["schedulingPriorityOverride"] == 7


def test_bad_apps_and_options_are_one_line() -> None:
    with pytest.raises(SpecError) as err:
        make_request(AppDef("a", []), "a-x", _opts())
    assert str(err.value) == "app 'a' has no roles: give it at least one Role"
    with pytest.raises(SpecError, match="at most 10 attempts"):
        make_request(AppDef("a", [_role(max_retries=10)]), "a-x", _opts())
    bad = _role()
    bad.resource = Resource(cpu=1, gpu=0, memMB=1, devices={"x.com/thing": 1})
    with pytest.raises(SpecError, match="cannot map"):
        make_request(AppDef("a", [bad]), "a-x", _opts())
    for cfg, text in [
        ({"priority": 3}, "needs 'share_id'"),
        ({"queue": "bad queue"}, "not a job queue name"),
        ({"job_role_arn": "role"}, "not an IAM role ARN"),
        ({"region": "mars"}, "not an AWS region"),
        ({"ulimits": ["x:1"]}, "NAME:SOFT:HARD"),
    ]:
        with pytest.raises(InvalidRunConfigException, match=text) as e:
            _opts(**cfg)
        assert "\n" not in str(e.value)


def test_job_names_are_what_batch_accepts() -> None:
    assert job_name("a.b_c-1") == "a-b_c-1"
    assert len(job_name("x" * 300)) == 128


def test_an_aws_named_resource_gives_the_instance_type_and_its_devices() -> None:
    from torchx.specs import named_resources_aws, resource

    assert named_resources_aws.K8S_ITYPE == "node.kubernetes.io/instance-type"
    role = _role("t", 2)
    role.resource = resource(h="aws_p4d.24xlarge")
    req = make_request(AppDef("app", [role]), "app-x", _opts())
    c = req.job_def["nodeProperties"]["nodeRangeProperties"][0]["container"]
    assert c["instanceType"] == "p4d.24xlarge"
    reqs = {r["type"]: r["value"] for r in c["resourceRequirements"]}
    assert (reqs["VCPU"], reqs["GPU"]) == ("96", "8")
    assert int(reqs["MEMORY"]) == role.resource.memMB
    efa = [d["hostPath"] for d in c["linuxParameters"]["devices"]]
    assert efa == [f"/dev/infiniband/uverbs{i}" for i in range(4)]
    # a container job names no instance type (Batch takes one only in node ranges)
    one = _role("one")
    one.resource = resource(h="aws_trn1.32xlarge")
    c1 = make_request(AppDef("app", [one]), "app-y", _opts()).job_def["containerProperties"]
    assert "instanceType" not in c1
    assert [d["hostPath"] for d in c1["linuxParameters"]["devices"]] == [
        *(f"/dev/neuron{i}" for i in range(16)),
        *(f"/dev/infiniband/uverbs{i}" for i in range(8)),
    ]
