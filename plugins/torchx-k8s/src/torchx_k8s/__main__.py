"""``python -m torchx_k8s rbac``: prints the RBAC Role the ``kubernetes`` and ``kubernetes_mcad``
schedulers need.

python -m torchx_k8s rbac --namespace team-a | kubectl apply -f -
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchx_k8s")
    sub = parser.add_subparsers(dest="command", required=True)
    rbac = sub.add_parser(
        "rbac", help="print the RBAC Role the kubernetes and kubernetes_mcad schedulers need"
    )
    rbac.add_argument("--namespace", default="default", help="the Role's namespace")
    rbac.add_argument("--name", default="torchx-submitter", help="the Role's name")
    args = parser.parse_args(argv)
    from torchx_k8s.rbac import role_manifest
    from torchx_k8s.request import render_yaml

    sys.stdout.write(render_yaml(role_manifest(args.namespace, args.name)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
