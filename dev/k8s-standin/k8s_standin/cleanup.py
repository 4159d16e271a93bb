"""``python3 -m k8s_standin.cleanup``: what `dev/k8s down` cancels before stopping.

Deletes every AppWrapper, Volcano Job, JobSet, batch Job and pod in every namespace (grace
0; the AppWrappers lose the controller's finalizer, since no controller runs now, and the
Services and PodGroups MCAD made for them, which it labels but does not own, go too), so a
later `up` starts with no work left over (etcd's data otherwise survives `down`; the
node's containers go with its engine).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .api import Api, ApiError, obj_path

AW = ("workload.codeflare.dev/v1beta2", "appwrappers")
KINDS = (AW, ("batch.volcano.sh/v1alpha1", "jobs"), ("jobset.x-k8s.io/v1alpha2", "jobsets"),
         ("batch/v1", "jobs"), ("v1", "pods"))  # fmt: skip
#: What MCAD v2 made for a v1beta1 AppWrapper (labelled, not owned): deleted by label.
LABELLED = (("v1", "services"), ("scheduling.sigs.k8s.io/v1alpha1", "podgroups"),
            ("scheduling.x-k8s.io/v1alpha1", "podgroups"))  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(prog="k8s_standin.cleanup")
    p.add_argument("--server", required=True)
    p.add_argument("--token-file", required=True)
    p.add_argument("--ca-file", required=True)
    args = p.parse_args()
    removed = 0
    try:
        api = Api(args.server, Path(args.token_file).read_text().strip(), args.ca_file)
        namespaces = [n["metadata"]["name"] for n in api.get("/api/v1/namespaces")["items"]]
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                "propagationPolicy": "Background"}  # fmt: skip
        for ns in namespaces:
            for api_version, plural in KINDS:
                try:
                    got = api.request("DELETE", obj_path(api_version, plural, ns), body)
                    removed += len((got or {}).get("items") or [])
                except ApiError as e:
                    if e.status != 404:
                        raise
            for api_version, plural in LABELLED:  # one by one: 1.20 Services have no
                try:  # collection DELETE
                    found = api.get(obj_path(api_version, plural, ns),
                                    labelSelector="appwrapper.mcad.ibm.com")["items"]  # fmt: skip
                except ApiError as e:
                    if e.status != 404:
                        raise
                    found = []
                for o in found:
                    api.delete(obj_path(api_version, plural, ns, o["metadata"]["name"]), body)
                    removed += 1
            try:
                left = api.get(obj_path(*AW, ns))["items"]
            except ApiError as e:
                if e.status != 404:
                    raise
                left = []
            for aw in left:
                fin = [f for f in aw["metadata"].get("finalizers") or []
                       if f != "workload.codeflare.dev/finalizer"]  # fmt: skip
                api.merge_patch(obj_path(*AW, ns, aw["metadata"]["name"]),
                                {"metadata": {"finalizers": fin or None}})  # fmt: skip
    except (OSError, ApiError) as e:
        print(f"k8s_standin.cleanup: API server: {e}", file=sys.stderr)
    print(f"k8s_standin.cleanup: deleted {removed} objects", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
