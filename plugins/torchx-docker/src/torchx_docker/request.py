"""The containers an app becomes: the dry run's request, made without the engine.

:func:`make_request` turns an AppDef (the scheduler's copy) into a :class:`DockerRequest`:
one :class:`ContainerRequest` per replica, each holding exactly the arguments the
scheduler passes to the engine's API (``create_container`` and its host config), as
plain JSON-safe data, so ``torchx run --dryrun -s docker`` prints what would be sent
and tests check it field by field without a daemon.

What an app looks like on the engine:

* every replica is a container named ``dns_label(app_id, role, replica)`` (a valid,
  unique container name and DNS label of at most 63 characters), with the hostname of
  the same name, labelled as :mod:`torchx_docker.labels` says;
* an app of more than one replica gets a user-defined network of its own (named after
  the app id, made by ``schedule`` and removed with the app), on which the replicas
  reach each other by container name; the rank-0 host (role 0's replica 0) is in
  ``TORCHX_RANK0_HOST`` (the value of ``macros.rank0_env``);
* ``${app_id}`` and ``${replica_id}`` are substituted in args and env;
* resources: ``cpu`` as ``nano_cpus``, ``memMB`` as ``mem_limit`` (with no swap on top,
  so the limit is the limit), ``/dev/shm`` sized for data loaders, GPUs as a device
  request, EFA devices as ``/dev/infiniband`` devices;
* bind mounts as ``mounts`` (the API's ``Mounts``, whose engine refuses a host path
  that does not exist, where the legacy ``Binds`` made it, owned by root, and ran the
  job on an empty directory; :func:`check_bind_sources` refuses it at dry run when the
  engine is on this machine), volume mounts as ``binds``, device mounts as ``devices``,
  each ``port_map`` port published on a free host port;
* the entrypoint runs under the engine's small init (``init``), so a cancel's SIGTERM
  reaches the program even when it is a shell;
* a role with ``max_retries`` and the ``REPLICA`` policy gets the engine's own
  ``on-failure`` restart policy; the other policies are applied by the scheduler.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from torchx.schedulers.helpers.ids import dns_label
from torchx.specs import AppDef, BindMount, DeviceMount, RetryPolicy, Role, VolumeMount, macros
from torchx.specs.errors import SpecError
from torchx_docker import labels
from torchx_docker.options import DockerOpts

#: The variable holding the rank-0 host: what ``macros.rank0_env`` names in every replica.
RANK0_ENV = "TORCHX_RANK0_HOST"
#: ``/dev/shm`` of a replica with no memory limit (the engine's own default, 64 MiB, is too
#: small for PyTorch data loaders, which pass batches through it).
DEFAULT_SHM_BYTES = 1 << 30
#: The device name of AWS EFA interfaces in ``Resource.devices`` (upstream TorchX's).
EFA_DEVICE = "vpc.amazonaws.com/efa"


# ContainerRequest and DockerRequest are named tuples rather than dataclasses: every
# ``torchx run -s docker`` defines them, and a dataclass costs ten times more to define.


class ContainerRequest(NamedTuple):
    """One replica's container: the arguments of ``create_container`` and its host config."""

    name: str
    role: str
    replica: int
    #: keyword arguments of docker-py's ``APIClient.create_container`` (but ``host_config``)
    config: dict[str, Any]
    #: keyword arguments of docker-py's ``APIClient.create_host_config``
    host_config: dict[str, Any]


class DockerRequest(NamedTuple):
    """Everything ``schedule`` creates for one app, in order: the network, then containers."""

    app_id: str
    #: the network to create for the app (None: it uses the default one, or ``network``)
    network: str | None
    #: one per replica, in the order they are created
    containers: list[ContainerRequest]
    #: seconds a cancelled replica has between SIGTERM and SIGKILL
    stop_grace: int = 10

    def to_json(self) -> str:
        """The request as indented JSON (what ``torchx run --dryrun`` prints)."""
        data = self._asdict()
        data["containers"] = [c._asdict() for c in self.containers]
        return json.dumps(data, indent=2, sort_keys=False)


def container_name(app_id: str, role: str, replica: int) -> str:
    """The container (and host) name of replica ``replica`` of ``role``: at most 63 chars."""
    return dns_label(app_id, role, replica)


def marker_name(app_id: str, kind: str, *parts: str | int) -> str:
    """The name of a marker container (see :mod:`torchx_docker.labels`).

    The ``~`` cannot appear in a container name, so the label is cleaned and hashed and
    can never be a replica's name, whatever the roles are called.
    """
    return dns_label(app_id, f"~{kind}", *parts)


def network_name(app_id: str) -> str:
    """The name of the app's own network."""
    return dns_label("torchx", app_id)


def make_request(
    app: AppDef, app_id: str, opts: DockerOpts, host_env: Mapping[str, str]
) -> DockerRequest:
    """The containers (and network) of ``app`` under ``app_id`` with the options ``opts``.

    ``host_env`` is where ``copy_env`` reads from (the submitting process's environment).
    Raises :class:`SpecError` (one line) for what the engine could not run.
    """
    if not app.roles:  # the one refusal every scheduler shares, imported only when due
        from torchx.schedulers.helpers.scriptroles import require_roles

        require_roles(app)
    total = sum(role.num_replicas for role in app.roles)
    if opts.network is not None:
        network, own_network = opts.network, None
    elif total > 1:
        network = own_network = network_name(app_id)
    else:
        network, own_network = None, None
    first = app.roles[0]
    rank0 = "localhost" if network == "host" else container_name(app_id, first.name, 0)
    base_env = {**opts.copied_env(host_env), **(opts.env or {})}
    request = DockerRequest(
        app_id=app_id, network=own_network, containers=[], stop_grace=opts.stop_grace
    )
    for role in app.roles:
        for k in range(role.num_replicas):
            values = macros.Values(
                img_root="", app_id=app_id, replica_id=str(k), rank0_env=RANK0_ENV
            )
            replica_role = values.apply(role)
            name = container_name(app_id, role.name, k)
            env = {**base_env, RANK0_ENV: rank0, **replica_role.env}
            role_labels = labels.replica_labels(app_id, role.name, k)
            role_labels[labels.RETRY_POLICY] = str(role.retry_policy.value)
            role_labels[labels.MAX_RETRIES] = str(role.max_retries)
            role_labels[labels.STOP_GRACE] = str(opts.stop_grace)
            if role is first and k == 0:
                role_labels[labels.APP_NAME] = app.name
                role_labels[labels.APPDEF] = _appdef_json(app, opts)
            else:
                role_labels[labels.APP_NAME] = app.name
            config: dict[str, Any] = {
                "image": role.image,
                "entrypoint": [replica_role.entrypoint],
                "command": list(replica_role.args),
                "name": name,
                "hostname": "" if network == "host" else name,
                "labels": role_labels,
                "environment": env,
                "stop_timeout": opts.stop_grace,
            }
            ports = sorted(set(role.port_map.values()))
            if ports:
                config["ports"] = ports
            request.containers.append(
                ContainerRequest(
                    name=name,
                    role=role.name,
                    replica=k,
                    config=config,
                    host_config=host_config(role, opts, network, ports),
                )
            )
    return request


def host_config(
    role: Role, opts: DockerOpts, network: str | None, ports: list[int]
) -> dict[str, Any]:
    """The keyword arguments of ``create_host_config`` for a replica of ``role``."""
    resource = role.resource
    hc: dict[str, Any] = {"init": True}
    if network is not None:
        hc["network_mode"] = network
    if resource.cpu > 0:
        hc["nano_cpus"] = int(resource.cpu * 1_000_000_000)
    if resource.memMB > 0:
        mem = int(resource.memMB) << 20
        hc["mem_limit"] = mem
        hc["memswap_limit"] = mem  # no swap on top: the limit is the limit
    hc["shm_size"] = (
        opts.shm_bytes
        if opts.shm_bytes is not None
        else (int(resource.memMB) << 19 if resource.memMB > 0 else DEFAULT_SHM_BYTES)
    )
    if resource.gpu > 0:
        hc["device_requests"] = [{"count": int(resource.gpu), "capabilities": [["gpu"]]}]
    devices: list[str] = []
    for device, count in sorted(resource.devices.items()):
        if device != EFA_DEVICE:
            raise SpecError(
                f"role {role.name!r}: the docker scheduler cannot attach the device "
                f"{device!r} of its resource: it knows {EFA_DEVICE!r}; use a DeviceMount "
                "for any other device"
            )
        devices += [f"/dev/infiniband/uverbs{i}" for i in range(count)]
    binds: list[str] = []
    mounts: list[dict[str, Any]] = []
    for mount in role.mounts:
        if isinstance(mount, BindMount):
            mounts.append(
                {
                    "Type": "bind",
                    "Source": mount.src_path,
                    "Target": mount.dst_path,
                    "ReadOnly": bool(mount.read_only),
                }
            )
        elif isinstance(mount, VolumeMount):
            binds.append(f"{mount.src}:{mount.dst_path}:{'ro' if mount.read_only else 'rw'}")
        elif isinstance(mount, DeviceMount):
            devices.append(f"{mount.src_path}:{mount.dst_path}:{mount.permissions}")
    if mounts:
        hc["mounts"] = mounts
    if binds:
        hc["binds"] = binds
    if devices:
        hc["devices"] = devices
    if ports:
        hc["port_bindings"] = {port: None for port in ports}  # a free host port each
    if opts.privileged:
        hc["privileged"] = True
    if role.max_retries > 0 and role.retry_policy == RetryPolicy.REPLICA:
        hc["restart_policy"] = {"Name": "on-failure", "MaximumRetryCount": role.max_retries}
    return hc


def check_bind_sources(app: AppDef, exists: Callable[[str], bool]) -> None:
    """Refuses (one line) a bind mount whose host path ``exists`` says is not there.

    For an engine on this machine, where the dry run can look (``exists`` is
    ``os.path.exists``): refused before anything is created, as the engine would refuse
    it at create.
    """
    for role in app.roles:
        for mount in role.mounts:
            if isinstance(mount, BindMount) and not exists(mount.src_path):
                raise SpecError(
                    f"role {role.name!r}: the bind mount's host path {mount.src_path!r} does "
                    "not exist on this machine (the Docker engine's): create it first, or "
                    "mount an existing path"
                )


def _appdef_json(app: AppDef, opts: DockerOpts) -> str:
    """The AppDef's document, with the run options masked (a label anyone may inspect)."""
    from torchx.specs.appdef_json import encode

    return encode(app, run_options=opts)
