"""The cluster DNS's records for dnsmasq: what CoreDNS would answer for Services.

``dev/k8s up`` runs dnsmasq (Debian's ``dnsmasq-base``; no CoreDNS package exists here)
as the node's cluster DNS, serving ``cluster.local`` from a hosts directory it watches.
This loop fills that directory from the API server, answering as CoreDNS's kubernetes
plugin does, from the Endpoints objects the real endpoints controller writes (so
selection, readiness and ``publishNotReadyAddresses`` are the controller's, not ours):

- ``<hostname>.<service>.<ns>.svc.cluster.local``: an endpoint address that has a
  hostname (the controller sets it only for a pod whose ``subdomain`` is that Service's
  name), so a pod's ``hostname.subdomain`` resolves only when a Service of that name
  selects it, and only once it is ready unless the Service publishes not-ready
  addresses (only ``addresses`` count, never ``notReadyAddresses``);
- ``<service>.<ns>.svc.cluster.local``: a headless Service's ready addresses, another
  Service's cluster IP.

The whole answer is one hosts file, replaced atomically when it changes (dnsmasq
re-reads it and forgets removed records).

Run as ``python3 -m k8s_standin.dns --server URL --token-file F --ca-file F --hosts-dir D``.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from .api import Api, ApiError

DOMAIN = "cluster.local"


def records(services: list[dict[str, Any]], endpoints: list[dict[str, Any]]) -> list[str]:
    """The hosts-file lines (``address name``) CoreDNS would answer for these objects."""
    by_key = {(s["metadata"]["namespace"], s["metadata"]["name"]): s for s in services}
    lines: set[str] = set()
    for ep in endpoints:
        ns, name = ep["metadata"]["namespace"], ep["metadata"]["name"]
        svc = by_key.get((ns, name))
        if svc is None:
            continue
        fqdn = f"{name}.{ns}.svc.{DOMAIN}"
        headless = svc.get("spec", {}).get("clusterIP") == "None"
        for subset in ep.get("subsets") or []:
            for addr in subset.get("addresses") or []:
                ip = addr.get("ip")
                if not ip:
                    continue
                if addr.get("hostname"):
                    lines.add(f"{ip} {addr['hostname']}.{fqdn}")
                if headless:
                    lines.add(f"{ip} {fqdn}")
    for (ns, name), svc in by_key.items():
        ip = svc.get("spec", {}).get("clusterIP")
        if ip and ip != "None":
            lines.add(f"{ip} {name}.{ns}.svc.{DOMAIN}")
    return sorted(lines)


def write_atomically(path: str, text: str) -> bool:
    """PATH holds TEXT afterwards; True when it changed (a rename, never a partial file)."""
    try:
        with open(path) as f:
            if f.read() == text:
                return False
    except FileNotFoundError:
        pass
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return True


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--server", required=True)
    p.add_argument("--token-file", required=True)
    p.add_argument("--ca-file", required=True)
    p.add_argument("--hosts-dir", required=True)
    p.add_argument("--ready-file", required=True)
    p.add_argument("--interval", type=float, default=0.25)
    a = p.parse_args()
    with open(a.token_file) as f:
        api = Api(a.server, f.read().strip(), a.ca_file)
    out = os.path.join(a.hosts_dir, "cluster.hosts")
    ready = False
    while True:
        try:
            services = api.get("/api/v1/services")["items"]
            endpoints = api.get("/api/v1/endpoints")["items"]
        except (ApiError, OSError) as e:
            print(f"dns: listing services and endpoints failed: {e}", flush=True)
            time.sleep(1)
            continue
        lines = records(services, endpoints)
        if write_atomically(out, "".join(f"{line}\n" for line in lines)):
            print(f"dns: {len(lines)} records", flush=True)
        if not ready:
            with open(a.ready_file, "w") as f:
                f.write(f"{os.getpid()}\n")
            ready = True
        time.sleep(a.interval)


if __name__ == "__main__":
    main()
