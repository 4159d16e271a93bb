"""torchx-specs' own plugin: contributes the generic and the AWS named resources.

torchx-specs declares this module as its entry point in the ``torchx`` group
(``specs = "torchx.specs.builtin_plugin"``), so the generic t-shirt sizes reach
the registry through the same ``torchx_named_resources`` hook a third-party
plugin uses, and lose a name clash like any other plugin would; so do the AWS
instance types (``aws_p4d.24xlarge`` ...). It returns lazy references only:
:mod:`torchx.specs.named_resources_generic` is imported when one of the generic sizes
is first looked up, :mod:`torchx.specs.named_resources_aws` when an ``aws_`` name is,
so a generic lookup never loads the AWS table.

>>> refs = torchx_named_resources()
>>> refs["gpu.small"]
'torchx.specs.named_resources_generic:gpu_small'
>>> refs["aws_p4d.24xlarge"]
'torchx.specs.named_resources_aws:aws_p4d_24xlarge'
>>> len(refs)
51
"""

from __future__ import annotations

from torchx.specs.hookspecs import hookimpl

_GENERIC_MODULE = "torchx.specs.named_resources_generic"
_AWS_MODULE = "torchx.specs.named_resources_aws"

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

# EC2 instance types in named_resources_aws, each named "aws_<type>" there, with the
# function "aws_<type with . as _>"; listed here so that naming them imports nothing
_AWS_INSTANCE_TYPES = (
    "t3.medium",
    "m5.2xlarge",
    "c5.18xlarge",
    "p3.2xlarge",
    "p3.8xlarge",
    "p3.16xlarge",
    "p3dn.24xlarge",
    "p4d.24xlarge",
    "p4de.24xlarge",
    "p5.48xlarge",
    "p5e.48xlarge",
    "p5en.48xlarge",
    "g4dn.xlarge",
    "g4dn.2xlarge",
    "g4dn.4xlarge",
    "g4dn.8xlarge",
    "g4dn.12xlarge",
    "g4dn.16xlarge",
    "g4dn.metal",
    "g5.xlarge",
    "g5.2xlarge",
    "g5.4xlarge",
    "g5.8xlarge",
    "g5.12xlarge",
    "g5.16xlarge",
    "g5.24xlarge",
    "g5.48xlarge",
    "g6e.xlarge",
    "g6e.2xlarge",
    "g6e.4xlarge",
    "g6e.8xlarge",
    "g6e.12xlarge",
    "g6e.16xlarge",
    "g6e.24xlarge",
    "g6e.48xlarge",
    "trn1.2xlarge",
    "trn1.32xlarge",
    "inf2.xlarge",
    "inf2.8xlarge",
    "inf2.24xlarge",
    "inf2.48xlarge",
)


@hookimpl
def torchx_named_resources() -> dict[str, str]:
    """The generic sizes and the AWS instance types as lazy ``"module:function"`` references."""
    refs = {name: f"{_GENERIC_MODULE}:{name.replace('.', '_')}" for name in _GENERIC_NAMES}
    for itype in _AWS_INSTANCE_TYPES:
        refs[f"aws_{itype}"] = f"{_AWS_MODULE}:aws_{itype.replace('.', '_')}"
    return refs
