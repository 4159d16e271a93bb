"""acme-torchx's plugin module: names and lazy references, nothing heavy.

TorchX imports this module on every start (it is named by the ``torchx`` entry
point in pyproject.toml), so it imports only the ``hookimpl`` marker.
"""

from __future__ import annotations

from collections.abc import Mapping

from torchx.specs.hookspecs import hookimpl


@hookimpl
def torchx_schedulers() -> Mapping[str, str]:
    return {"acme": "acme_torchx.scheduler:create_scheduler"}


@hookimpl
def torchx_named_resources() -> Mapping[str, str]:
    return {
        "acme.small": "acme_torchx.resources:small",
        "acme.gpu8": "acme_torchx.resources:gpu8",
    }


@hookimpl
def torchx_components() -> Mapping[str, str]:
    return {"acme.hello": "acme_torchx.components:hello"}


@hookimpl
def torchx_cli_commands() -> Mapping[str, str]:
    return {"acme-sizes": "acme_torchx.cli:SizesCommand"}
