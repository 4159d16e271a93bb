"""The node: a Node object, and each pod bound to it run as Docker containers.

What a kubelet with Docker (dockershim) does, in the parts pods here use: one container per
pod container, named k8s_<container>_<pod>_<namespace>_<uid>_<attempt>; a restart is a
new container (attempt + 1), so the previous attempt's log stays readable. The first
container holds the pod's network identity (hostname, an address on a per-namespace
network, DNS aliases hostname.subdomain[.namespace.svc.cluster.local]); the others join its
network namespace, as containers of a pod share one. Pod status is written as a kubelet
writes it: phase, conditions, per-container state (running, terminated with exit code and
reason, waiting with ContainerCreating / ErrImagePull / ImagePullBackOff / CrashLoopBackOff)
and restart counts.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import logging
import math
import os
import re
import shutil
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from .api import Api, ApiError, Obj
from .docker import Docker, DockerError
from .runtime import Informer, WorkQueue
from .util import deleting, docker_time, merge_diff, now, pod_phase, quantity

log = logging.getLogger("k8s-standin")

L_NODE = "io.torchx-dev.k8s.node"
L_NS = "io.kubernetes.pod.namespace"
L_POD = "io.kubernetes.pod.name"
L_UID = "io.kubernetes.pod.uid"
L_CONTAINER = "io.kubernetes.container.name"
L_ATTEMPT = "io.torchx-dev.k8s.attempt"

BACKOFF_START = 1.0  # a kubelet starts at 10 s; the tests' restarts should not wait that long
BACKOFF_MAX = 10.0


class PodState:
    """What the node remembers about one pod between syncs (lost on restart, like a
    kubelet's memory, and rebuilt from the containers)."""

    def __init__(self) -> None:
        self.ip: str | None = None
        self.start_time: str | None = None
        self.waiting: dict[str, tuple[str, str]] = {}
        self.pull_retry: dict[str, tuple[float, float]] = {}  # name -> (not before, delay)
        self.crash_retry: dict[str, tuple[float, float]] = {}
        self.volumes_ready = False


class Kubelet:
    def __init__(
        self,
        api: Api,
        docker: Docker,
        pods: Informer,
        queue: WorkQueue,
        name: str,
        state: Path,
        cpu: Decimal,
        memory: int,
        port: int,
    ) -> None:
        self.api = api
        self.docker = docker
        self.pods = pods
        self.queue = queue
        self.name = name
        self.state = state
        self.cpu = cpu
        self.memory = memory
        self.port = port
        self.node: Obj | None = None
        self.pod_state: dict[str, PodState] = {}
        self.lock = threading.Lock()
        self.net_lock = threading.Lock()
        self.inspected: dict[str, dict[str, Any]] = {}  # exited containers do not change
        self.terminating: set[str] = set()

    # --- the Node object ----------------------------------------------------------------

    def register(self) -> None:
        labels = {
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "amd64",
        }
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": labels},
        }
        try:
            self.api.create("/api/v1/nodes", body)
        except ApiError as e:
            if e.status != 409:
                raise
        disk = shutil.disk_usage(self.state)
        resources = {
            "cpu": str(self.cpu),
            "memory": f"{self.memory // 1024}Ki",
            "pods": "110",
            "ephemeral-storage": f"{disk.free // 1024}Ki",
        }
        status = {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [self._ready_condition()],
            "addresses": [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": self.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.port}},
            "nodeInfo": {
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kernelVersion": os.uname().release,
                "osImage": "torchx-dev stand-in node",
                "containerRuntimeVersion": "docker://" + self._engine_version(),
                "kubeletVersion": "v1.20.2",
                "kubeProxyVersion": "v1.20.2",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        }
        self.node = self.api.merge_patch(f"/api/v1/nodes/{self.name}/status", {"status": status})

    def _engine_version(self) -> str:
        try:
            return str(self.docker.request("GET", "/version").get("Version", "unknown"))
        except (OSError, DockerError):
            return "unknown"

    @staticmethod
    def _ready_condition() -> Obj:
        t = now()
        return {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": t,
            "lastTransitionTime": t,
        }

    def heartbeat(self) -> None:
        try:
            self.node = self.api.merge_patch(
                f"/api/v1/nodes/{self.name}/status",
                {"status": {"conditions": [self._ready_condition()]}},
            )
        except (ApiError, OSError) as e:
            log.warning("node heartbeat: %s", e)

    # --- pods -----------------------------------------------------------------------------

    def _state(self, uid: str) -> PodState:
        with self.lock:
            st = self.pod_state.get(uid)
            if st is None:
                st = self.pod_state[uid] = PodState()
            return st

    def sync(self, key: str) -> None:
        ns, name = key.split("/", 1)
        pod = self.pods.get(key)
        containers = self.docker.containers(
            [f"{L_NODE}={self.name}", f"{L_NS}={ns}", f"{L_POD}={name}"]
        )
        uid = pod["metadata"]["uid"] if pod else None
        stale = [c for c in containers if c["Labels"].get(L_UID) != uid]
        for c in stale:  # a deleted pod's, or an earlier pod's of the same name
            self.docker.remove(c["Id"])
            self.inspected.pop(c["Id"], None)
        for c in stale:
            old = c["Labels"].get(L_UID, "")
            with self.lock:
                self.pod_state.pop(old, None)
            shutil.rmtree(self.state / "pods" / old, ignore_errors=True)
        if pod is None or uid is None or pod["spec"].get("nodeName") != self.name:
            return
        mine = [c for c in containers if c["Labels"].get(L_UID) == uid]
        if deleting(pod):
            self._terminate(pod, mine)
            return
        if pod_phase(pod) in ("Succeeded", "Failed"):
            for c in mine:  # a pod that ended (deadline, ...) runs nothing more
                if c["State"] == "running":
                    self.docker.stop(c["Id"], 0)
            return
        self._run(pod, mine)

    def _terminate(self, pod: Obj, mine: list[dict[str, Any]]) -> None:
        """Stops the pod's containers (SIGTERM, SIGKILL after the grace period) in a thread
        of its own, as a kubelet's pod worker does, then deletes the pod for good."""
        uid = pod["metadata"]["uid"]
        with self.lock:
            if uid in self.terminating:
                return
            self.terminating.add(uid)

        def run() -> None:
            try:
                self._stop_and_delete(pod, mine)
            except (ApiError, DockerError, OSError) as e:
                log.warning("terminating %s: %s", pod["metadata"]["name"], e)
            finally:
                with self.lock:
                    self.terminating.discard(uid)
                self.queue.add(f"{pod['metadata']['namespace']}/{pod['metadata']['name']}", 1.0)

        threading.Thread(
            target=run, name=f"terminate-{pod['metadata']['name']}", daemon=True
        ).start()

    def _stop_and_delete(self, pod: Obj, mine: list[dict[str, Any]]) -> None:
        meta = pod["metadata"]
        grace = int(meta.get("deletionGracePeriodSeconds") or 0)
        stops = [
            threading.Thread(target=self.docker.stop, args=(c["Id"], grace), daemon=True)
            for c in mine
            if c["State"] == "running"
        ]
        for t in stops:
            t.start()
        for t in stops:
            t.join()
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": meta["uid"]},
        }
        try:
            self.api.delete(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}", body)
        except ApiError as e:
            if e.status != 409:  # 409: a newer pod of that name
                raise

    def _latest(self, mine: list[dict[str, Any]], cname: str) -> list[dict[str, Any]]:
        attempts = [c for c in mine if c["Labels"].get(L_CONTAINER) == cname]
        attempts.sort(key=lambda c: int(c["Labels"].get(L_ATTEMPT, "0")))
        return attempts

    def _inspect(self, cid: str) -> dict[str, Any]:
        got = self.inspected.get(cid)
        if got is not None:
            return got
        info = self.docker.inspect(cid)
        if info["State"]["Status"] in ("exited", "dead"):
            self.inspected[cid] = info
        return info

    def _run(self, pod: Obj, mine: list[dict[str, Any]]) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        uid = meta["uid"]
        st = self._state(uid)
        st.start_time = st.start_time or (pod.get("status") or {}).get("startTime") or now()
        policy = spec.get("restartPolicy") or "Always"
        requeue: float | None = None
        statuses = []
        first_cid: str | None = None
        for idx, cspec in enumerate(spec.get("containers") or []):
            cname = cspec["name"]
            attempts = self._latest(mine, cname)
            latest = self._inspect(attempts[-1]["Id"]) if attempts else None
            restart = False
            if latest is not None and latest["State"]["Status"] in ("exited", "dead"):
                code = latest["State"]["ExitCode"]
                restart = policy == "Always" or (policy == "OnFailure" and code != 0)
            if (
                latest is not None
                and latest["State"]["Status"] in ("exited", "dead")
                and not restart
            ):
                st.waiting.pop(cname, None)  # ended for good: its state is the last one
            if latest is None or restart:
                if latest is not None:
                    not_before, delay = st.crash_retry.get(cname, (0.0, BACKOFF_START))
                    if not_before == 0.0:
                        st.crash_retry[cname] = (time.monotonic() + delay, delay)
                        requeue = min(requeue or delay, delay)
                        st.waiting[cname] = self._crash_wait(pod, cname, delay)
                    elif time.monotonic() < not_before:
                        requeue = min(requeue or 60.0, not_before - time.monotonic() + 0.05)
                        st.waiting[cname] = self._crash_wait(pod, cname, delay)
                    else:
                        st.crash_retry[cname] = (0.0, min(delay * 2, BACKOFF_MAX))
                        latest = self._start(pod, st, cspec, idx, len(attempts), first_cid)
                        if latest is None:
                            requeue = min(requeue or 2.0, 2.0)
                else:
                    latest = self._start(pod, st, cspec, idx, 0, first_cid)
                    if latest is None:
                        requeue = min(requeue or 2.0, 2.0)
                if latest is not None and latest["State"]["Status"] == "running":
                    st.waiting.pop(cname, None)
                attempts = self._latest(
                    self.docker.containers([f"{L_UID}={uid}", f"{L_CONTAINER}={cname}"]), cname
                )
            if idx == 0 and attempts:
                first_cid = attempts[-1]["Id"]
            statuses.append(self._container_status(cspec, attempts, st))
        self._write_status(pod, st, statuses, policy)
        if requeue is not None:
            self.queue.add(f"{meta['namespace']}/{meta['name']}", requeue)

    @staticmethod
    def _crash_wait(pod: Obj, cname: str, delay: float) -> tuple[str, str]:
        meta = pod["metadata"]
        return (
            "CrashLoopBackOff",
            f"back-off {delay:g}s restarting failed container={cname} "
            f"pod={meta['name']}_{meta['namespace']}({meta['uid']})",
        )

    # --- starting a container ----------------------------------------------------------

    def _start(
        self,
        pod: Obj,
        st: PodState,
        cspec: Obj,
        idx: int,
        attempt: int,
        first_cid: str | None,
    ) -> dict[str, Any] | None:
        """Creates and starts one attempt; None when it cannot start yet (image, volume)."""
        meta, spec = pod["metadata"], pod["spec"]
        cname = cspec["name"]
        image = cspec["image"]
        if not self._ensure_image(pod, st, cspec):
            return None
        try:
            mounts = self._mounts(pod, st, cspec)
            env = self._env(pod, st, cspec)
        except _NotReady as e:
            st.waiting[cname] = ("ContainerCreating", str(e))
            return None
        cmd = [_expand(a, env) for a in cspec.get("command") or []]
        args = [_expand(a, env) for a in cspec.get("args") or []]
        config: dict[str, Any] = {
            "Image": image,
            "Env": [f"{k}={v}" for k, v in env.items()],
            "Labels": {
                L_NODE: self.name,
                L_NS: meta["namespace"],
                L_POD: meta["name"],
                L_UID: meta["uid"],
                L_CONTAINER: cname,
                L_ATTEMPT: str(attempt),
            },
            "Tty": bool(cspec.get("tty")),
            "OpenStdin": bool(cspec.get("stdin")),
        }
        if cmd:
            config["Entrypoint"] = cmd
            config["Cmd"] = args
        elif args:
            config["Cmd"] = args
        if cspec.get("workingDir"):
            config["WorkingDir"] = cspec["workingDir"]
        sc = cspec.get("securityContext") or {}
        psc = spec.get("securityContext") or {}
        user = sc.get("runAsUser", psc.get("runAsUser"))
        if user is not None:
            group = sc.get("runAsGroup", psc.get("runAsGroup"))
            config["User"] = f"{user}:{group}" if group is not None else str(user)
        host: dict[str, Any] = {"Mounts": mounts}
        limits = (cspec.get("resources") or {}).get("limits") or {}
        if "cpu" in limits:
            ncpu = os.cpu_count() or 1
            host["NanoCpus"] = int(min(quantity(limits["cpu"]), Decimal(ncpu)) * 10**9)
        if "memory" in limits:
            host["Memory"] = max(int(quantity(limits["memory"])), 6 * 2**20)
        if first_cid is None or idx == 0:
            net = self._network(meta["namespace"])
            hostname = (spec.get("hostname") or meta["name"])[:63]
            config["Hostname"] = hostname
            sub = spec.get("subdomain")
            aliases = [hostname]
            if sub:
                domain = f"{sub}.{meta['namespace']}.svc.cluster.local"
                config["Domainname"] = domain
                aliases += [f"{hostname}.{sub}", f"{hostname}.{sub}.{meta['namespace']}",
                            f"{hostname}.{sub}.{meta['namespace']}.svc", f"{hostname}.{domain}"]  # fmt: skip
            aliases += self._service_aliases(pod)
            host["NetworkMode"] = net
            endpoint: dict[str, Any] = {"Aliases": aliases}
            if st.ip:
                endpoint["IPAMConfig"] = {"IPv4Address": st.ip}
            config["NetworkingConfig"] = {"EndpointsConfig": {net: endpoint}}
        else:
            host["NetworkMode"] = f"container:{first_cid}"
        config["HostConfig"] = host
        cname_docker = f"k8s_{cname}_{meta['name']}_{meta['namespace']}_{meta['uid']}_{attempt}"
        try:
            cid = self.docker.create(cname_docker, config)
        except DockerError as e:
            if e.status == 409:  # made by an earlier sync that failed after it
                cid = cname_docker
            else:
                st.waiting[cname] = ("CreateContainerError", e.message)
                return None
        try:
            self.docker.start(cid)
        except DockerError as e:
            log.info(
                "%s/%s %s did not start: %s", meta["namespace"], meta["name"], cname, e.message
            )
        info = self.docker.inspect(cid)
        log.info("started %s/%s %s (attempt %d)", meta["namespace"], meta["name"], cname, attempt)
        return info

    def _service_aliases(self, pod: Obj) -> list[str]:
        """Cluster DNS's names of the Services that select this pod (made before it starts):
        `<service>`, `<service>.<namespace>`, `...svc`, `...svc.cluster.local`. Docker's DNS
        answers a name several pods carry with all their addresses, as a headless Service's
        name answers with its endpoints."""
        meta = pod["metadata"]
        labels = meta.get("labels") or {}
        ns = meta["namespace"]
        try:
            services = self.api.get(f"/api/v1/namespaces/{ns}/services")["items"]
        except (OSError, ApiError) as e:
            log.warning("services of %s: %s", ns, e)
            return []
        out: list[str] = []
        for svc in services:
            selector = (svc.get("spec") or {}).get("selector") or {}
            if selector and all(labels.get(k) == v for k, v in selector.items()):
                name = svc["metadata"]["name"]
                out += [name, f"{name}.{ns}", f"{name}.{ns}.svc", f"{name}.{ns}.svc.cluster.local"]
        return out

    def _ensure_image(self, pod: Obj, st: PodState, cspec: Obj) -> bool:
        cname, image = cspec["name"], cspec["image"]
        policy = cspec.get("imagePullPolicy") or (
            "Always"
            if ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
            else "IfNotPresent"
        )
        present = self.docker.image_exists(image)
        if present and policy != "Always":
            return True
        if policy == "Never":
            st.waiting[cname] = (
                "ErrImageNeverPull",
                f'Container image "{image}" is not present with pull policy of Never',
            )
            return False
        not_before, delay = st.pull_retry.get(cname, (0.0, BACKOFF_START))
        if time.monotonic() < not_before:
            st.waiting[cname] = ("ImagePullBackOff", f'Back-off pulling image "{image}"')
            return False
        try:
            self.docker.pull(image)
            st.pull_retry.pop(cname, None)
            return True
        except (DockerError, OSError) as e:
            if present:  # Always, but the registry cannot be reached: use what is there
                return True
            msg = e.message if isinstance(e, DockerError) else str(e)
            st.waiting[cname] = ("ErrImagePull", f'Failed to pull image "{image}": {msg}')
            st.pull_retry[cname] = (time.monotonic() + delay, min(delay * 2, BACKOFF_MAX))
            return False

    def _network(self, namespace: str) -> str:
        """The namespace's Docker network (pods of a namespace resolve each other there)."""
        name = f"k8s-{namespace}"
        with self.net_lock:
            if self.docker.network(name) is not None:
                return name
            # Addresses are chosen here (see _allocate_ip), which Docker allows only on a
            # network with a subnet given at creation: one /24 of 172.29.64.0/18 (beside
            # dev/docker's bridge and its pool for other networks), the first one free.
            for third in range(64, 128):
                try:
                    self.docker.create_network(name, {L_NODE: self.name}, f"172.29.{third}.0/24")
                    return name
                except DockerError as e:
                    if "overlap" not in e.message:
                        raise
        raise DockerError(500, f"no free /24 in 172.29.64.0/18 for network {name}")

    def _allocate_ip(self, net: str, uid: str) -> str | None:
        """A free address on the network, fixed before the pod's first container starts,
        so the pod's address is known for status.podIP (and env) and kept across restarts."""
        with self.net_lock:
            info = self.docker.network(net)
            if info is None:
                return None
            configs = (info.get("IPAM") or {}).get("Config") or []
            if not configs or "Subnet" not in configs[0]:
                return None
            subnet = ipaddress.ip_network(configs[0]["Subnet"])
            used = {configs[0].get("Gateway")}
            used |= {
                c["IPv4Address"].split("/")[0] for c in (info.get("Containers") or {}).values()
            }
            with self.lock:
                used |= {s.ip for u, s in self.pod_state.items() if s.ip and u != uid}
            for addr in subnet.hosts():
                if str(addr) not in used and not str(addr).endswith(".1"):
                    return str(addr)
        return None

    # --- volumes and environment --------------------------------------------------------

    def _mounts(self, pod: Obj, st: PodState, cspec: Obj) -> list[Obj]:
        meta, spec = pod["metadata"], pod["spec"]
        volumes = {v["name"]: v for v in spec.get("volumes") or []}
        base = self.state / "pods" / meta["uid"] / "volumes"
        mounts: list[Obj] = []
        for vm in cspec.get("volumeMounts") or []:
            vol = volumes.get(vm["name"])
            if vol is None:
                raise _NotReady(f'volume "{vm["name"]}" is not in the pod\'s volumes')
            target = vm["mountPath"]
            ro = bool(vm.get("readOnly"))
            if "emptyDir" in vol:
                ed = vol["emptyDir"] or {}
                if ed.get("medium") == "Memory":
                    opts: Obj = {"Mode": 0o1777}
                    if ed.get("sizeLimit"):
                        opts["SizeBytes"] = int(quantity(ed["sizeLimit"]))
                    mounts.append({"Type": "tmpfs", "Target": target, "TmpfsOptions": opts})
                    continue
                src = base / vm["name"]
                src.mkdir(parents=True, exist_ok=True)
                src.chmod(0o777)
            elif "hostPath" in vol:
                src = Path(vol["hostPath"]["path"])
                kind = vol["hostPath"].get("type") or ""
                if kind == "DirectoryOrCreate":
                    src.mkdir(parents=True, exist_ok=True)
                elif not src.exists():
                    raise _NotReady(f'hostPath "{src}" does not exist')
            elif "configMap" in vol or "secret" in vol:
                src = base / vm["name"]
                self._write_projection(meta["namespace"], vol, src)
                ro = True
            else:
                raise _NotReady(
                    f'volume "{vm["name"]}": this node mounts emptyDir, hostPath, configMap and secret only'
                )
            if vm.get("subPath"):
                src = src / vm["subPath"]
            mounts.append({"Type": "bind", "Source": str(src), "Target": target, "ReadOnly": ro})
        return mounts

    def _write_projection(self, namespace: str, vol: Obj, dest: Path) -> None:
        if "configMap" in vol:
            ref = vol["configMap"]
            kind, name = "configmaps", ref.get("name", "")
        else:
            ref = vol["secret"]
            kind, name = "secrets", ref.get("secretName", "")
        try:
            obj = self.api.get(f"/api/v1/namespaces/{namespace}/{kind}/{name}")
        except ApiError as e:
            if e.status == 404:
                if ref.get("optional"):
                    dest.mkdir(parents=True, exist_ok=True)
                    return
                raise _NotReady(f'{kind[:-1]} "{name}" not found') from None
            raise
        data: dict[str, bytes] = {}
        for k, v in (obj.get("data") or {}).items():
            data[k] = base64.b64decode(v) if kind == "secrets" else str(v).encode()
        for k, v in (obj.get("binaryData") or {}).items():
            data[k] = base64.b64decode(v)
        items = ref.get("items")
        files = {i["path"]: data[i["key"]] for i in items if i["key"] in data} if items else data
        dest.mkdir(parents=True, exist_ok=True)
        for path, content in files.items():
            f = dest / path
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(content)
            f.chmod(0o644)

    def _env(self, pod: Obj, st: PodState, cspec: Obj) -> dict[str, str]:
        meta = pod["metadata"]
        if st.ip is None:
            st.ip = self._allocate_ip(self._network(meta["namespace"]), meta["uid"])
        env: dict[str, str] = {}
        for src in cspec.get("envFrom") or []:
            prefix = src.get("prefix") or ""
            for kind, key in (("configmaps", "configMapRef"), ("secrets", "secretRef")):
                if key not in src:
                    continue
                data = self._lookup(meta["namespace"], kind, src[key].get("name", ""), None,
                                    bool(src[key].get("optional")))  # fmt: skip
                for k, v in (data or {}).items():
                    env[prefix + k] = v
        for e in cspec.get("env") or []:
            if "valueFrom" not in e:
                env[e["name"]] = _expand(e.get("value") or "", env)
                continue
            vf = e["valueFrom"]
            value: str | None
            if "fieldRef" in vf:
                value = self._field(pod, st, vf["fieldRef"]["fieldPath"])
            elif "resourceFieldRef" in vf:
                value = self._resource_field(cspec, vf["resourceFieldRef"])
            elif "configMapKeyRef" in vf or "secretKeyRef" in vf:
                kind, ref = (
                    ("configmaps", vf["configMapKeyRef"])
                    if "configMapKeyRef" in vf
                    else ("secrets", vf["secretKeyRef"])
                )
                got = self._lookup(meta["namespace"], kind, ref.get("name", ""), ref["key"],
                                   bool(ref.get("optional")))  # fmt: skip
                value = None if got is None else got.get(ref["key"])
                if value is None:
                    continue
            else:
                raise _NotReady(f"env {e['name']}: unsupported valueFrom")
            env[e["name"]] = value or ""
        return env

    def _lookup(
        self, namespace: str, kind: str, name: str, key: str | None, optional: bool
    ) -> dict[str, str] | None:
        try:
            obj = self.api.get(f"/api/v1/namespaces/{namespace}/{kind}/{name}")
        except ApiError as e:
            if e.status == 404:
                if optional:
                    return None
                raise _NotReady(f'{kind[:-1]} "{name}" not found') from None
            raise
        data = obj.get("data") or {}
        if kind == "secrets":
            data = {k: base64.b64decode(v).decode(errors="replace") for k, v in data.items()}
        if key is not None and key not in data and not optional:
            raise _NotReady(f"couldn't find key {key} in {kind[:-1]} {namespace}/{name}")
        return {k: str(v) for k, v in data.items()}

    def _field(self, pod: Obj, st: PodState, path: str) -> str:
        meta, spec = pod["metadata"], pod["spec"]
        m = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
        if m:
            return str((meta.get(m.group(1)) or {}).get(m.group(2), ""))
        simple = {
            "metadata.name": meta["name"],
            "metadata.namespace": meta["namespace"],
            "metadata.uid": meta["uid"],
            "spec.nodeName": spec.get("nodeName") or "",
            "spec.serviceAccountName": spec.get("serviceAccountName") or "",
            "status.hostIP": "127.0.0.1",
            "status.podIP": st.ip or "",
            "status.podIPs": st.ip or "",
        }
        if path not in simple:
            raise _NotReady(f"fieldRef {path} is not supported")
        return str(simple[path])

    def _resource_field(self, cspec: Obj, ref: Obj) -> str:
        res = cspec.get("resources") or {}
        kind, _, what = ref["resource"].partition(".")
        value = (res.get(kind) or {}).get(what)
        if value is None:
            value = str(self.cpu) if what == "cpu" else str(self.memory)
        divisor = quantity(ref.get("divisor") or "1")
        return str(math.ceil(quantity(value) / divisor))

    # --- status ---------------------------------------------------------------------------

    def _container_status(self, cspec: Obj, attempts: list[dict[str, Any]], st: PodState) -> Obj:
        cname = cspec["name"]
        status: Obj = {
            "name": cname,
            "image": cspec["image"],
            "imageID": "",
            "ready": False,
            "restartCount": max(len(attempts) - 1, 0),
            "started": False,
        }
        if not attempts:
            reason, msg = st.waiting.get(cname, ("ContainerCreating", ""))
            status["state"] = {"waiting": {"reason": reason, **({"message": msg} if msg else {})}}
            status["lastState"] = {}
            return status
        info = self._inspect(attempts[-1]["Id"])
        status["containerID"] = "docker://" + info["Id"]
        status["imageID"] = "docker-pullable://" + str(info.get("Image", ""))
        state = self._state_of(info)
        status["lastState"] = (
            self._state_of(self._inspect(attempts[-2]["Id"])) if len(attempts) > 1 else {}
        )
        if "terminated" in state and cname in st.waiting:
            reason, msg = st.waiting[cname]
            status["lastState"] = state
            state = {"waiting": {"reason": reason, "message": msg}}
        if "running" in state:
            status["ready"] = True
            status["started"] = True
        status["state"] = state
        return status

    @staticmethod
    def _state_of(info: dict[str, Any]) -> Obj:
        s = info["State"]
        if s["Status"] in ("running", "paused", "restarting"):
            return {"running": {"startedAt": docker_time(s.get("StartedAt"))}}
        if s["Status"] in ("exited", "dead"):
            code = int(s.get("ExitCode", 0))
            if s.get("OOMKilled"):
                reason = "OOMKilled"
            elif s.get("Error"):
                reason = "ContainerCannotRun"
            else:
                reason = "Completed" if code == 0 else "Error"
            term: Obj = {
                "exitCode": code,
                "reason": reason,
                "startedAt": docker_time(s.get("StartedAt")),
                "finishedAt": docker_time(s.get("FinishedAt")),
                "containerID": "docker://" + info["Id"],
            }
            if s.get("Error"):
                term["message"] = s["Error"]
            return {"terminated": term}
        return {"waiting": {"reason": "ContainerCreating"}}

    def _write_status(self, pod: Obj, st: PodState, statuses: list[Obj], policy: str) -> None:
        phase = compute_phase(statuses, policy)
        if phase in ("Succeeded", "Failed"):
            for s in statuses:  # the last state, not a back-off, once nothing restarts
                if "waiting" in s["state"] and s["lastState"].get("terminated"):
                    s["state"], s["lastState"] = s["lastState"], {}
        old = pod.get("status") or {}
        t = now()
        ready = all(s["ready"] for s in statuses)
        not_ready = [s["name"] for s in statuses if not s["ready"]]

        def cond(typ: str, ok: bool, reason: str | None = None, msg: str | None = None) -> Obj:
            prev = next((c for c in old.get("conditions") or [] if c.get("type") == typ), None)
            value = "True" if ok else "False"
            c: Obj = {
                "type": typ,
                "status": value,
                "lastProbeTime": None,
                "lastTransitionTime": prev["lastTransitionTime"]
                if prev and prev.get("status") == value
                else t,
            }
            if reason:
                c["reason"] = reason
            if msg:
                c["message"] = msg
            return c

        finished = phase in ("Succeeded", "Failed")
        nr_reason = "PodCompleted" if finished else "ContainersNotReady"
        nr_msg = None if finished else f"containers with unready status: [{' '.join(not_ready)}]"
        conditions = [
            cond("Initialized", True, "PodCompleted" if finished else None),
            cond("Ready", ready, None if ready else nr_reason, None if ready else nr_msg),
            cond("ContainersReady", ready, None if ready else nr_reason, None if ready else nr_msg),
            cond("PodScheduled", True),
        ]
        status: Obj = {
            "phase": phase,
            "conditions": conditions,
            "hostIP": "127.0.0.1",
            "startTime": st.start_time,
            "containerStatuses": statuses,
            "qosClass": _qos(pod),
        }
        if st.ip:
            status["podIP"] = st.ip
            status["podIPs"] = [{"ip": st.ip}]
        if _same(old, status):
            return
        meta = pod["metadata"]
        try:
            got = self.api.merge_patch(
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                {"status": merge_diff(old, status)},
            )
            self.pods.put(got)
        except ApiError as e:
            if e.status not in (404, 409):
                raise

    # --- housekeeping ---------------------------------------------------------------------

    def resync(self) -> None:
        """Every pod bound here, and every container whose pod is gone, gets a sync."""
        keys = {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            for p in self.pods.items()
            if p["spec"].get("nodeName") == self.name
        }
        containers = self.docker.containers([f"{L_NODE}={self.name}"])
        for c in containers:
            keys.add(f"{c['Labels'].get(L_NS)}/{c['Labels'].get(L_POD)}")
        self.queue.add_all(keys)
        # A namespace's network goes once none of its pods has a container here (the
        # pool has room for 64 at a time; tests make a namespace each).
        busy = {f"k8s-{c['Labels'].get(L_NS)}" for c in containers}
        busy |= {f"k8s-{p['metadata']['namespace']}" for p in self.pods.items()}
        filters = json.dumps({"label": [f"{L_NODE}={self.name}"]})
        with self.net_lock:
            for net in self.docker.request("GET", "/networks", {"filters": filters}) or []:
                if net["Name"] not in busy and not net.get("Containers"):
                    self.docker.remove_network(net["Id"])

    def watch_engine(self) -> None:
        """Container starts and deaths (docker events) sync their pods at once."""
        backoff = 0.5
        while True:
            try:
                for ev in self.docker.events([f"{L_NODE}={self.name}"]):
                    if ev.get("Action") in ("start", "die", "oom", "destroy"):
                        attrs = (ev.get("Actor") or {}).get("Attributes") or {}
                        self.queue.add(f"{attrs.get(L_NS)}/{attrs.get(L_POD)}")
                    backoff = 0.5
            except (OSError, DockerError, ValueError) as e:
                log.warning("docker events: %s (again in %.1fs)", e, backoff)
            time.sleep(backoff)
            backoff = min(backoff * 2, 10.0)
            try:
                self.resync()
            except (OSError, DockerError) as e:
                log.warning("resync: %s", e)


def compute_phase(statuses: list[Obj], policy: str) -> str:
    """The pod's phase from its containers' states, by the kubelet's rules: Pending while
    a container waits to start for the first time; Running while one runs or will be
    restarted; Succeeded when all ended with 0; Failed when one failed for good."""
    running = waiting = stopped = succeeded = 0
    for s in statuses:
        state = s["state"]
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            succeeded += state["terminated"]["exitCode"] == 0
        elif s.get("lastState", {}).get("terminated"):
            stopped += 1
        else:
            waiting += 1
    if waiting:
        return "Pending"
    if running or policy == "Always":
        return "Running"
    if stopped == succeeded:
        return "Succeeded"
    return "Running" if policy == "OnFailure" else "Failed"


class _NotReady(Exception):
    """A container cannot be made yet (a volume's source, a referenced object)."""


def _expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) references: the variable's value when defined, else as written;
    $$ escapes a $."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.\-]*)\)", sub, value)


def _qos(pod: Obj) -> str:
    containers = pod["spec"].get("containers") or []
    reqs = [(c.get("resources") or {}) for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in reqs):
        return "BestEffort"
    for r in reqs:
        lim = r.get("limits") or {}
        req = {**lim, **(r.get("requests") or {})}
        if not all(k in lim for k in ("cpu", "memory")) or any(
            quantity(req[k]) != quantity(lim[k]) for k in ("cpu", "memory")
        ):
            return "Burstable"
    return "Guaranteed"


def _same(old: Obj, new: Obj) -> bool:
    keys = ("phase", "conditions", "containerStatuses", "podIP", "startTime")

    def strip(s: Obj) -> str:
        out = {k: s.get(k) for k in keys}
        for c in out.get("conditions") or []:
            c.pop("lastTransitionTime", None)
            c.pop("lastProbeTime", None)
        return json.dumps(out, sort_keys=True)

    return strip(json.loads(json.dumps(old))) == strip(json.loads(json.dumps(new)))
