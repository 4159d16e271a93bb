"""The AWS Batch job an app becomes: a job definition to register and a job to submit.

Made without AWS (the dry run prints it), checked field by field by the tests:

* An app of one role with one replica is a plain ``container`` job. Any other app is a
  *multi-node parallel* job: one node range per role, in the order of the roles
  (role 0 holds node 0, the main node), ``numNodes`` the sum of the replicas.
* Each node range's container: the role's image, resources as
  ``resourceRequirements`` (``VCPU`` rounded up to a whole CPU, ``MEMORY`` in MiB,
  ``GPU``), an instance type when the role's resource names one (the capability
  :data:`INSTANCE_TYPE`), ``/dev/shm`` of half the memory, the role's env (macros
  substituted) plus ``TORCHX_ROLE_NAME`` and ``TORCHX_REPLICA_ID``, mounts as
  volumes (bind: a host path; volume: an EFS file system id; device: a device), the
  resource's EFA and Neuron devices, the run options ``privileged`` and ``ulimits``.
* Macros: ``${app_id}`` is the job's name, ``${rank0_env}`` is ``TORCHX_RANK0_HOST``.
  In a multi-node job every node of a range runs the same command, so the node's own
  values come from Batch's node environment at run time: the command runs under a
  small POSIX ``sh`` wrapper (:data:`NODE_WRAPPER`; the image needs ``sh``) that sets
  ``TORCHX_REPLICA_ID`` to ``AWS_BATCH_JOB_NODE_INDEX`` minus the range's first node,
  ``TORCHX_RANK0_HOST`` to ``AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS`` (the main
  node, which Batch does not give that variable, uses its own address), puts the
  replica id where ``${replica_id}`` was in the args and env, then ``exec`` s the
  role's entrypoint. A container job needs none of that: its replica id is 0 and its
  rank-0 host is ``localhost``.
* ``retryStrategy.attempts`` is 1 + the largest ``max_retries`` of the roles (Batch
  retries the whole job: the ``APPLICATION`` policy, whatever the role asked); at most
  10 attempts, as Batch allows. A role that asks ``REPLICA`` or ``ROLE`` with retries
  gets ``APPLICATION`` all the same, said by :func:`retry_policy_warnings` (the dry run
  warns), as torchx-slurm does: refusing would make components that default to another
  policy unusable on Batch for no gain.
* The job and its definition are named after the app (:func:`job_name`, unique per
  submit), tagged (:data:`TAGS`) so that ``list`` finds TorchX's jobs, with
  ``propagateTags`` so that the containers' tasks carry the tags too.
* The AppDef goes with the job as the submit's parameter :data:`APPDEF_PARAMETER`
  (``torchx.specs.appdef_json``), which ``DescribeJobs`` gives back, so ``describe``
  returns its roles from any process. A parameter only replaces ``Ref::torchx_appdef``
  in a command, which none has. It holds nothing the job does not already show in
  clear (the env is each container's ``environment``). Up to :data:`APPDEF_MAX` bytes,
  a fraction of what a ``SubmitJob`` request may hold (30 KiB); a larger AppDef, or one
  the serializer refuses, is left out (:func:`appdef_of` gives None, ``describe`` no
  roles) and the dry run warns.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from torchx.schedulers.helpers.ids import join_app_id
from torchx.schedulers.helpers.labels import APP_NAME, USER, VERSION
from torchx.schedulers.helpers.scriptroles import require_roles
from torchx.specs import AppDef, BindMount, DeviceMount, RetryPolicy, Role, VolumeMount, macros
from torchx.specs.errors import SpecError
from torchx_aws import appdef_doc
from torchx_aws.batch.options import BatchOpts
from torchx_aws.replica_sh import REPLICA_MARK, SUBSTITUTE

__all__ = [
    "APPDEF_MAX",
    "APPDEF_PARAMETER",
    "INSTANCE_TYPE",
    "NODE_WRAPPER",
    "RANK0_ENV",
    "REPLICA_MARK",
    "TAGS",
    "BatchRequest",
    "app_id_of",
    "appdef_and_options_of",
    "appdef_of",
    "job_name",
    "make_request",
    "parse_app_id",
    "retry_policy_warnings",
]

#: The rank-0 host's variable (``macros.rank0_env``) in every container.
RANK0_ENV = "TORCHX_RANK0_HOST"
#: The resource capability naming an EC2 instance type (upstream TorchX's key, which the
#: AWS named resources of ``torchx.specs.named_resources_aws`` set).
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
#: Devices of ``Resource.devices`` (the keys ``named_resources_aws.EFA_DEVICE`` and
#: ``NEURON_DEVICE``) mapped to host device files, by name.
DEVICE_PATHS = {
    "vpc.amazonaws.com/efa": "/dev/infiniband/uverbs{}",
    "aws.amazon.com/neurondevice": "/dev/neuron{}",
}
#: Batch's most attempts of a job.
MAX_ATTEMPTS = 10

#: Tag keys (on the job and its definition). ``version`` is the layout's format version.
TAGS = {"version": VERSION, "app_name": APP_NAME, "user": USER}
#: The format version of this layout (job names, tags, environment).
LAYOUT_VERSION = "1"
#: The submit's parameter holding the AppDef (its JSON document carries its own version).
APPDEF_PARAMETER = "torchx_appdef"
#: The largest AppDef document kept with the job, in bytes of UTF-8.
APPDEF_MAX = 8 * 1024

#: The first TCP port on which the main node of a multi-node job hears from its children:
#: child node ``n`` reports to port ``NODE_REPORT_PORT + n`` (see :data:`NODE_WRAPPER`);
#: the role's env ``TORCHX_NODE_REPORT_PORT`` chooses another.
NODE_REPORT_PORT = 28400
#: Seconds the main node waits, once its own command has exited 0, for its children's
#: reports before it exits all the same (a child that vanished without one).
NODE_REPORT_WAIT = 300
#: The exit code of a main node whose own command exited 0 while a child node failed,
#: when the job has attempts left: Batch retries the job (EX_TEMPFAIL).
RETRY_EXIT = 75

#: The POSIX ``sh`` program each node of a multi-node job runs first (see the module).
#: Arguments: the range's first node, the job's attempts, the number of NAME=VALUE
#: pairs that follow (env values holding the replica id), those pairs, then the
#: entrypoint and its args.
NODE_WRAPPER = (
    r"""first=$1; attempts=$2; nenv=$3; shift 3
node=${AWS_BATCH_JOB_NODE_INDEX:?is not set: this is not a node of an AWS Batch multi-node job}
TORCHX_REPLICA_ID=$((node - first)); export TORCHX_REPLICA_ID
if [ -z "${AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS-}" ]; then
  TORCHX_RANK0_HOST=$(hostname -i 2>/dev/null | cut -d' ' -f1)
  [ -n "$TORCHX_RANK0_HOST" ] || TORCHX_RANK0_HOST=$(hostname)
else
  TORCHX_RANK0_HOST=$AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS
fi
export TORCHX_RANK0_HOST
@SUBSTITUTE@while [ "$nenv" -gt 0 ]; do sub "$1"; export "$out"; shift; nenv=$((nenv - 1)); done
n=$#
for arg do sub "$arg"; set -- "$@" "$out"; done
shift "$n"
nodes=${AWS_BATCH_JOB_NUM_NODES:-1}; main=${AWS_BATCH_JOB_MAIN_NODE_INDEX:-0}
attempt=${AWS_BATCH_JOB_ATTEMPT:-1}; port=${TORCHX_NODE_REPORT_PORT:-@PORT@}
if command -v nc >/dev/null 2>&1; then via=nc
elif command -v python3 >/dev/null 2>&1; then via=py
else via=; fi
if [ "$nodes" -le 1 ] || [ -z "$via" ]; then exec "$@"; fi
listen() {
  if [ "$via" = nc ]; then nc -l -p "$1" </dev/null >"$2" 2>/dev/null; else
  python3 -c 'import socket,sys
s=socket.create_server(("",int(sys.argv[1])))
c=s.accept()[0]
open(sys.argv[2],"wb").write(c.makefile("rb").read())' "$1" "$2" 2>/dev/null; fi
}
send() {
  if [ "$via" = nc ]; then nc "$1" "$2" <"$3" 2>/dev/null; else
  python3 -c 'import socket,sys
c=socket.create_connection((sys.argv[1],int(sys.argv[2])),5)
c.sendall(open(sys.argv[3],"rb").read())' "$1" "$2" "$3" 2>/dev/null; fi
}
dir=$(mktemp -d 2>/dev/null) || { dir=/tmp/torchx-node-$node; mkdir -p "$dir"; }
if [ "$node" != "$main" ]; then
  "$@" &
  pid=$!
  trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
  while :; do wait "$pid"; rc=$?; kill -0 "$pid" 2>/dev/null || break; done
  echo "$rc" >"$dir/rc"
  tries=0
  until send "$TORCHX_RANK0_HOST" $((port + node)) "$dir/rc"; do
    tries=$((tries + 1)); [ "$tries" -lt 60 ] || break; sleep 1
  done
  exit "$rc"
fi
i=0
while [ "$i" -lt "$nodes" ]; do
  if [ "$i" != "$main" ]; then
    (until [ -s "$dir/$i" ]; do listen $((port + i)) "$dir/$i" || sleep 1; done) &
  fi
  i=$((i + 1))
done
("$@" & echo "$!" >"$dir/pid"; wait "$!"; echo "$?" >"$dir/own") &
trap 'kill -TERM "$(cat "$dir/pid" 2>/dev/null)" 2>/dev/null; exit 143' TERM INT
own=; waited=0
while :; do
  [ -z "$own" ] && [ -s "$dir/own" ] && own=$(cat "$dir/own")
  bad=; pending=0; i=0
  while [ "$i" -lt "$nodes" ]; do
    if [ "$i" != "$main" ]; then
      if [ -s "$dir/$i" ]; then c=$(cat "$dir/$i"); [ "$c" = 0 ] || bad=${bad:-$i:$c}
      else pending=$((pending + 1)); fi
    fi
    i=$((i + 1))
  done
  if [ -n "$own" ] && [ "$own" != 0 ]; then exit "$own"; fi
  if [ -n "$bad" ]; then
    if [ -z "$own" ]; then
      echo "torchx: node ${bad%%:*} exited with code ${bad#*:}: stopping the main node" >&2
      kill -TERM "$(cat "$dir/pid" 2>/dev/null)" 2>/dev/null
      until [ -s "$dir/own" ]; do sleep 1; done
      own=$(cat "$dir/own"); [ "$own" != 0 ] || own=143
      exit "$own"
    fi
    if [ "$attempt" -lt "$attempts" ]; then exit @RETRY@; fi
    exit 0
  fi
  if [ "$own" = 0 ]; then
    [ "$pending" -gt 0 ] || exit 0
    waited=$((waited + 1))
    if [ "$waited" -gt @WAIT@ ]; then
      echo "torchx: $pending child node(s) did not report in @WAIT@ s: the main node ends" >&2
      exit 0
    fi
  fi
  sleep 1
done
""".replace("@PORT@", str(NODE_REPORT_PORT))
    .replace("@WAIT@", str(NODE_REPORT_WAIT))
    .replace("@RETRY@", str(RETRY_EXIT))
    .replace("@SUBSTITUTE@", SUBSTITUTE)
)

_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


def job_name(app_id: str) -> str:
    """A Batch job (and job definition) name from an app id made by ``make_app_id``.

    Batch allows letters, digits, ``-`` and ``_`` (up to 128): other characters become
    ``-``.

    >>> job_name("trainer.v2-1a2b3c4d5e")
    'trainer-v2-1a2b3c4d5e'
    """
    return _NAME_CHARS.sub("-", app_id)[:128]


@dataclass
class BatchRequest:
    """What ``schedule`` sends: ``register_job_definition(**job_def)`` then ``submit_job(**job)``.

    ``job`` lacks ``jobDefinition``: the ARN the registration returns goes there.
    ``region`` is where it goes (None: boto3's default), ``roles`` the role of each node.
    """

    name: str
    queue: str
    region: str | None
    profile: str | None
    job_def: dict[str, Any]
    job: dict[str, Any]
    roles: list[tuple[str, int]] = field(default_factory=list)
    #: Why the AppDef is not kept with the job ("" when it is): the dry run warns.
    appdef_left_out: str = ""

    @property
    def num_nodes(self) -> int:
        return sum(n for _, n in self.roles)

    def to_json(self) -> dict[str, Any]:
        """The request as plain JSON data (what ``torchx run --dryrun`` prints)."""
        return {
            "region": self.region,
            "queue": self.queue,
            "register_job_definition": self.job_def,
            "submit_job": self.job,
        }

    def __str__(self) -> str:
        import json

        return json.dumps(self.to_json(), indent=2)


def _resources(role: Role) -> list[dict[str, str]]:
    res = role.resource
    out = [{"type": "VCPU", "value": str(max(1, math.ceil(res.cpu)))}]
    if res.memMB > 0:
        out.append({"type": "MEMORY", "value": str(int(res.memMB))})
    if res.gpu > 0:
        out.append({"type": "GPU", "value": str(int(res.gpu))})
    return out


def _devices(role: Role) -> list[dict[str, Any]]:
    devices: list[dict[str, Any]] = []
    for name, count in sorted(role.resource.devices.items()):
        template = DEVICE_PATHS.get(name)
        if template is None:
            raise SpecError(
                f"role '{role.name}' asks for device {name!r}, which AWS Batch cannot map: "
                f"known devices are {', '.join(sorted(DEVICE_PATHS))}"
            )
        for i in range(int(count)):
            path = template.format(i)
            devices.append(
                {"hostPath": path, "containerPath": path, "permissions": ["READ", "WRITE", "MKNOD"]}
            )
    return devices


_PERMISSIONS = {"r": "READ", "w": "WRITE", "m": "MKNOD"}


def _mounts(role: Role) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, mountPoints, devices) of the role's mounts."""
    volumes: list[dict[str, Any]] = []
    points: list[dict[str, Any]] = []
    devices: list[dict[str, Any]] = []
    for i, mount in enumerate(role.mounts):
        name = f"mount_{i}"
        if isinstance(mount, BindMount):
            volumes.append({"name": name, "host": {"sourcePath": mount.src_path}})
            points.append(
                {"containerPath": mount.dst_path, "readOnly": mount.read_only, "sourceVolume": name}
            )
        elif isinstance(mount, VolumeMount):
            volumes.append({"name": name, "efsVolumeConfiguration": {"fileSystemId": mount.src}})
            points.append(
                {"containerPath": mount.dst_path, "readOnly": mount.read_only, "sourceVolume": name}
            )
        elif isinstance(mount, DeviceMount):
            perms = [_PERMISSIONS[c] for c in mount.permissions if c in _PERMISSIONS]
            devices.append(
                {"hostPath": mount.src_path, "containerPath": mount.dst_path, "permissions": perms}
            )
        else:  # pragma: no cover - the spec has no other mount type
            raise SpecError(f"role '{role.name}': unknown mount {mount!r}")
    return volumes, points, devices


def _env(pairs: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in pairs.items()]


def _container(
    role: Role, name: str, opts: BatchOpts, *, first_node: int | None, attempts: int = 1
) -> dict[str, Any]:
    """The container properties of ``role``; ``first_node`` None: a container job;
    ``attempts`` the job's (the node wrapper's retry decision reads it)."""
    multi = first_node is not None
    values = macros.Values(
        img_root="",
        app_id=name,
        replica_id=REPLICA_MARK if multi else "0",
        rank0_env=RANK0_ENV,
    )
    role = values.apply(role)
    env = {"TORCHX_ROLE_NAME": role.name, **role.env}
    if not multi:
        env.update({"TORCHX_REPLICA_ID": "0", RANK0_ENV: "localhost"})
    marked = {k: v for k, v in env.items() if REPLICA_MARK in v}
    plain = {k: v for k, v in env.items() if k not in marked}
    if multi:
        command = [
            "sh",
            "-c",
            NODE_WRAPPER,
            "torchx-node",
            str(first_node),
            str(attempts),
            str(len(marked)),
            *(f"{k}={v}" for k, v in marked.items()),
            role.entrypoint,
            *role.args,
        ]
    else:
        command = [role.entrypoint, *role.args]
    volumes, points, mount_devices = _mounts(role)
    container: dict[str, Any] = {
        "image": role.image,
        "command": command,
        "environment": _env(plain),
        "resourceRequirements": _resources(role),
        "privileged": opts.privileged,
        "logConfiguration": {"logDriver": "awslogs"},
    }
    linux: dict[str, Any] = {}
    devices = _devices(role) + mount_devices
    if devices:
        linux["devices"] = devices
    if role.resource.memMB > 0:
        linux["sharedMemorySize"] = max(1, int(role.resource.memMB) // 2)
    if linux:
        container["linuxParameters"] = linux
    if volumes:
        container["volumes"] = volumes
    if points:
        container["mountPoints"] = points
    if opts.ulimit_specs:
        container["ulimits"] = [dict(u) for u in opts.ulimit_specs]
    if opts.job_role_arn:
        container["jobRoleArn"] = opts.job_role_arn
    if opts.execution_role_arn:
        container["executionRoleArn"] = opts.execution_role_arn
    from torchx.specs.named_resources_aws import instance_type_from_resource

    instance_type = instance_type_from_resource(role.resource)
    if instance_type and multi:
        container["instanceType"] = str(instance_type)
    return container


def _check(app: AppDef) -> None:
    require_roles(app)  # every scheduler's refusal, and the Runner's
    for role in app.roles:
        if role.num_replicas < 1:
            raise SpecError(
                f"role '{role.name}' has num_replicas={role.num_replicas}: AWS Batch runs "
                "at least one node per role"
            )
        if role.max_retries + 1 > MAX_ATTEMPTS:
            raise SpecError(
                f"role '{role.name}' has max_retries={role.max_retries}: AWS Batch makes at "
                f"most {MAX_ATTEMPTS} attempts of a job (max_retries 0 to {MAX_ATTEMPTS - 1})"
            )


def retry_policy_warnings(app: AppDef) -> list[str]:
    """What the dry run warns of: each role whose retries Batch gives another meaning.

    Batch's ``retryStrategy`` reruns the whole job, every node of every role, so a
    role's ``REPLICA`` or ``ROLE`` policy behaves as ``APPLICATION``. Only a role that
    asks for retries is named: without them the policy changes nothing.
    """
    return [
        f"role '{role.name}' asks retry_policy={role.retry_policy.value} with "
        f"max_retries={role.max_retries}: AWS Batch retries the whole job (APPLICATION), "
        "every node of every role, on a failure of any node"
        for role in app.roles
        if role.max_retries > 0 and role.retry_policy != RetryPolicy.APPLICATION
    ]


def make_request(app: AppDef, app_id: str, opts: BatchOpts) -> BatchRequest:
    """The request for ``app`` (a copy the scheduler may change) submitted as ``app_id``."""
    _check(app)
    name = job_name(app_id)
    tags = {
        TAGS["version"]: LAYOUT_VERSION,
        TAGS["app_name"]: app.name[:256],
        TAGS["user"]: opts.user[:256],
    }
    attempts = 1 + max(role.max_retries for role in app.roles)
    roles = [(role.name, role.num_replicas) for role in app.roles]
    job_def: dict[str, Any] = {
        "jobDefinitionName": name,
        "retryStrategy": {"attempts": attempts},
        "propagateTags": True,
        "tags": dict(tags),
    }
    if len(app.roles) == 1 and app.roles[0].num_replicas == 1:
        job_def["type"] = "container"
        job_def["containerProperties"] = _container(app.roles[0], name, opts, first_node=None)
    else:
        ranges = []
        first = 0
        for role in app.roles:
            last = first + role.num_replicas - 1
            ranges.append(
                {
                    "targetNodes": f"{first}:{last}",
                    "container": _container(role, name, opts, first_node=first, attempts=attempts),
                }
            )
            first = last + 1
        job_def["type"] = "multinode"
        job_def["nodeProperties"] = {
            "numNodes": first,
            "mainNode": 0,
            "nodeRangeProperties": ranges,
        }
    job: dict[str, Any] = {
        "jobName": name,
        "jobQueue": opts.queue,
        "tags": dict(tags),
        "propagateTags": True,
    }
    if opts.share_id is not None:
        job["shareIdentifier"] = opts.share_id
        job["schedulingPriorityOverride"] = opts.priority
    document, left_out = appdef_doc.document(app, opts)
    if document is not None:
        job["parameters"] = {APPDEF_PARAMETER: document}
    return BatchRequest(
        name=name,
        queue=opts.queue,
        region=opts.region,
        profile=opts.profile,
        job_def=job_def,
        job=job,
        roles=roles,
        appdef_left_out=left_out,
    )


def roles_of(node_properties: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """(role, first node, replicas) of each node range of a job this module made."""
    out = []
    for rng in node_properties.get("nodeRangeProperties") or []:
        start, _, end = str(rng.get("targetNodes", "")).partition(":")
        env = {
            e.get("name"): e.get("value") for e in rng.get("container", {}).get("environment", [])
        }
        first = int(start or 0)
        last = int(end) if end else int(node_properties.get("numNodes", first + 1)) - 1
        out.append((str(env.get("TORCHX_ROLE_NAME") or f"nodes-{first}"), first, last - first + 1))
    return out


def describe_roles(roles: Sequence[tuple[str, int, int]]) -> str:
    """``"trainer:0-1,ps:2"``: the node ranges of :func:`roles_of`, for messages."""
    return ",".join(f"{r}:{f}" if n == 1 else f"{r}:{f}-{f + n - 1}" for r, f, n in roles)


def appdef_of(job: Mapping[str, Any]) -> AppDef | None:
    """The AppDef a job made here carries (a ``DescribeJobs`` record); None: none, or unreadable."""
    return appdef_and_options_of(job)[0]


def appdef_and_options_of(job: Mapping[str, Any]) -> tuple[AppDef | None, dict[str, Any]]:
    """:func:`appdef_of` and the masked run options kept with it (empty if none)."""
    return appdef_doc.read_with_options((job.get("parameters") or {}).get(APPDEF_PARAMETER))


# -- app ids ------------------------------------------------------------------------------

_FORM = "queue:job-id:region:nodes"


def app_id_of(queue: str, job_id: str, region: str, nodes: int) -> str:
    """The app id ``<queue>:<job id>:<region>:<nodes>`` (:func:`parse_app_id` reads it):
    where the job is, and how many node jobs ``describe`` asks for with it."""
    return join_app_id(queue, job_id, region, str(nodes), form=_FORM)


def parse_app_id(app_id: str) -> tuple[str, str, str | None, int | None]:
    """(queue, job id or name, region, nodes) of an app id; region and nodes None when
    the id is upstream's two-part ``queue:job-name``.

    >>> parse_app_id("gpu:2dc82baf-d5bf:us-east-1:4")
    ('gpu', '2dc82baf-d5bf', 'us-east-1', 4)
    >>> parse_app_id("gpu:trainer-x1")
    ('gpu', 'trainer-x1', None, None)
    >>> parse_app_id("trainer")
    Traceback (most recent call last):
     ...
    torchx.schedulers.contract.errors.InvalidAppIdError: invalid aws_batch app id 'trainer': expected queue:job-id:region:nodes (e.g. gpu-queue:6f1c2a9e-3b1d-4c1e-9d0a-1f2e3d4c5b6a:us-east-1:2) or upstream's queue:job-name
    """
    import re

    from torchx.schedulers.contract.errors import InvalidAppIdError

    parts = app_id.split(":") if isinstance(app_id, str) else []
    part = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,252}")
    ok = len(parts) in (2, 4) and all(part.fullmatch(p) for p in parts)
    if ok and len(parts) == 4 and not parts[3].isdigit():
        ok = False
    if not ok:
        raise InvalidAppIdError(
            f"invalid aws_batch app id {app_id!r}: expected {_FORM} (e.g. "
            "gpu-queue:6f1c2a9e-3b1d-4c1e-9d0a-1f2e3d4c5b6a:us-east-1:2) or upstream's "
            "queue:job-name"
        )
    if len(parts) == 2:
        return parts[0], parts[1], None, None
    return parts[0], parts[1], parts[2], int(parts[3])
