"""``torchx acme-sizes``: list the Acme Batch instance sizes.

``torchx`` imports this module on every start: keep the top level light.
"""

from __future__ import annotations

import argparse


class SizesCommand:
    help = "list the Acme Batch instance sizes (named resources acme.*)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--min-gpus", type=int, default=0, help="hide sizes with fewer GPUs")

    def run(self, args: argparse.Namespace) -> int:
        from torchx.specs.plugins import get_registry  # the registry is built by now

        registry = get_registry()
        for name in sorted(registry.named_resources):
            if name.startswith("acme."):
                res = registry.named_resource_factory(name)()
                if res.gpu >= args.min_gpus:
                    print(f"{name}: {res.cpu} CPUs, {res.gpu} GPUs, {res.memMB} MB")
        return 0
