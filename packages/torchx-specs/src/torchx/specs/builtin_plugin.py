"""torchx-specs' own plugin: contributes the generic named resources (``gpu.small`` ...).

torchx-specs declares this module as its entry point in the ``torchx`` group
(``specs = "torchx.specs.builtin_plugin"``), so the generic t-shirt sizes reach
the registry through the same ``torchx_named_resources`` hook a third-party
plugin uses, and lose a name clash like any other plugin would. It returns lazy
references only: :mod:`torchx.specs.named_resources_generic` is imported when one
of the sizes is first looked up.

>>> refs = torchx_named_resources()
>>> refs["gpu.small"]
'torchx.specs.named_resources_generic:gpu_small'
>>> len(refs)
10
"""

from __future__ import annotations

from torchx.specs.hookspecs import hookimpl

_GENERIC_MODULE = "torchx.specs.named_resources_generic"

# name -> function in named_resources_generic (the name with "." replaced by "_")
_GENERIC_NAMES = (
    "gpu.small",
    "gpu.medium",
    "gpu.large",
    "gpu.xlarge",
    "cpu.nano",
    "cpu.micro",
    "cpu.small",
    "cpu.medium",
    "cpu.large",
    "cpu.xlarge",
)


@hookimpl
def torchx_named_resources() -> dict[str, str]:
    """The ten generic sizes as lazy ``"module:function"`` references."""
    return {name: f"{_GENERIC_MODULE}:{name.replace('.', '_')}" for name in _GENERIC_NAMES}
