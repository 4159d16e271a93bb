"""The cluster DNS of the real node: a pod's name resolves as CoreDNS would resolve it.

A pod's ``hostname.subdomain`` resolves only when a headless Service of that name
selects it, and only once the pod is ready unless the Service publishes not-ready
addresses. This is what makes a test of replicas meeting by host name able to fail:
with the Service missing or misnamed the name does not exist.
"""

from __future__ import annotations

from typing import Any

from conftest import BUSYBOX, Cluster

PODS = "/api/v1/namespaces/{ns}/pods"
SERVICES = "/api/v1/namespaces/{ns}/services"
Obj = dict[str, Any]


def _target(name: str, subdomain: str, ready: bool) -> Obj:
    c: Obj = {"name": "main", "image": BUSYBOX, "command": ["sleep", "300"]}
    if not ready:
        c["readinessProbe"] = {"exec": {"command": ["false"]}, "periodSeconds": 1}
    spec = {"hostname": "t0", "subdomain": subdomain, "terminationGracePeriodSeconds": 0,
            "containers": [c]}  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"dns-test": name}}, "spec": spec}  # fmt: skip


def _service(name: str, target: str, publish_not_ready: bool = False) -> Obj:
    spec = {"clusterIP": "None", "selector": {"dns-test": target},
            "ports": [{"name": "x", "port": 9000}],
            "publishNotReadyAddresses": publish_not_ready}  # fmt: skip
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def _lookup(name: str, host: str, seconds: int) -> Obj:
    """A pod that tries to resolve ``host`` for ``seconds``: exits 0 once it does, else 1."""
    script = (
        f"i=0; while [ $i -lt {seconds} ]; do "
        f"if nslookup {host} >/dev/null 2>&1; then echo resolved; exit 0; fi; "
        "sleep 1; i=$((i+1)); done; echo unresolved; exit 1"
    )
    c = {"name": "main", "image": BUSYBOX, "command": ["sh", "-c", script]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "containers": [c]}}  # fmt: skip


def _ended(p: Obj) -> bool:
    return (p.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def test_a_pod_name_resolves_only_through_its_ready_headless_service(
    cluster: Cluster, ns: str
) -> None:
    # a: its Service is misnamed; b: named as its subdomain; c: not ready; d: not
    # ready, its Service publishing not-ready addresses
    for name, subdomain, ready in (("a", "sub-a", True), ("b", "sub-b", True),
                                   ("c", "sub-c", False), ("d", "sub-d", False)):  # fmt: skip
        cluster.api.create(PODS.format(ns=ns), _target(name, subdomain, ready))
    cluster.api.create(SERVICES.format(ns=ns), _service("other-a", "a"))
    cluster.api.create(SERVICES.format(ns=ns), _service("sub-b", "b"))
    cluster.api.create(SERVICES.format(ns=ns), _service("sub-c", "c"))
    cluster.api.create(SERVICES.format(ns=ns), _service("sub-d", "d", publish_not_ready=True))
    for name in "abcd":
        cluster.wait(
            PODS.format(ns=ns), name, lambda p: (p.get("status") or {}).get("phase") == "Running"
        )
    # the ones that must resolve get 30 s; the others 20 s, after those resolved
    expect = {"a": "unresolved", "b": "resolved", "c": "unresolved", "d": "resolved"}
    for name in "bd":
        cluster.api.create(
            PODS.format(ns=ns), _lookup(f"look-{name}", f"t0.sub-{name}.{ns}.svc.cluster.local", 30)
        )
    for name in "bd":
        cluster.wait(PODS.format(ns=ns), f"look-{name}", _ended, timeout=60)
    for name in "ac":
        cluster.api.create(
            PODS.format(ns=ns), _lookup(f"look-{name}", f"t0.sub-{name}.{ns}.svc.cluster.local", 20)
        )
    for name in "ac":
        cluster.wait(PODS.format(ns=ns), f"look-{name}", _ended, timeout=60)
    got = {name: cluster.log(ns, f"look-{name}").strip() for name in "abcd"}
    assert got == expect
    # the misnamed Service's own name resolves (to the pod), the pod's host name did not
    cluster.api.create(
        PODS.format(ns=ns), _lookup("look-svc", f"other-a.{ns}.svc.cluster.local", 30)
    )
    cluster.wait(PODS.format(ns=ns), "look-svc", _ended, timeout=60)
    assert cluster.log(ns, "look-svc").strip() == "resolved"
