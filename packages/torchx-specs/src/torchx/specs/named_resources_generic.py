"""The generic, cloud-agnostic t-shirt sizes (``gpu.small`` ... ``cpu.xlarge``).

Meant as defaults for components and examples, not as a description of any real
machine: the numbers may change between releases. Define your own named resources
for production work. torchx-specs contributes these through the same
``torchx_named_resources`` plugin hook a third-party plugin uses
(see ``torchx.specs.builtin_plugin``).

==========  ===  ===  =======
name        cpu  gpu  memory
==========  ===  ===  =======
gpu.small     8    1   32 GiB
gpu.medium   16    2   64 GiB
gpu.large    32    4  128 GiB
gpu.xlarge   64    8  256 GiB
cpu.nano      1    0  512 MiB
cpu.micro     1    0    1 GiB
cpu.small     1    0    2 GiB
cpu.medium    2    0    4 GiB
cpu.large     2    0    8 GiB
cpu.xlarge    8    0   32 GiB
==========  ===  ===  =======

>>> gpu_large()
Resource(cpu=32, gpu=4, memMB=131072, capabilities={}, devices={}, tags={'torchx.specs/named_resource': 'gpu.large'})
"""

from __future__ import annotations

from torchx.specs.api import Resource
from torchx.specs.resources import GiB, register


@register.named_resource("gpu.small")
def gpu_small() -> Resource:
    """gpu.small: 8 cpu, 1 gpu, 32 GiB of memory."""
    return Resource(cpu=8, gpu=1, memMB=32 * GiB)


@register.named_resource("gpu.medium")
def gpu_medium() -> Resource:
    """gpu.medium: 16 cpu, 2 gpu, 64 GiB of memory."""
    return Resource(cpu=16, gpu=2, memMB=64 * GiB)


@register.named_resource("gpu.large")
def gpu_large() -> Resource:
    """gpu.large: 32 cpu, 4 gpu, 128 GiB of memory."""
    return Resource(cpu=32, gpu=4, memMB=128 * GiB)


@register.named_resource("gpu.xlarge")
def gpu_xlarge() -> Resource:
    """gpu.xlarge: 64 cpu, 8 gpu, 256 GiB of memory."""
    return Resource(cpu=64, gpu=8, memMB=256 * GiB)


@register.named_resource("cpu.nano")
def cpu_nano() -> Resource:
    """cpu.nano: 1 cpu, 0 gpu, 512 MiB of memory."""
    return Resource(cpu=1, gpu=0, memMB=512)


@register.named_resource("cpu.micro")
def cpu_micro() -> Resource:
    """cpu.micro: 1 cpu, 0 gpu, 1 GiB of memory."""
    return Resource(cpu=1, gpu=0, memMB=1 * GiB)


@register.named_resource("cpu.small")
def cpu_small() -> Resource:
    """cpu.small: 1 cpu, 0 gpu, 2 GiB of memory."""
    return Resource(cpu=1, gpu=0, memMB=2 * GiB)


@register.named_resource("cpu.medium")
def cpu_medium() -> Resource:
    """cpu.medium: 2 cpu, 0 gpu, 4 GiB of memory."""
    return Resource(cpu=2, gpu=0, memMB=4 * GiB)


@register.named_resource("cpu.large")
def cpu_large() -> Resource:
    """cpu.large: 2 cpu, 0 gpu, 8 GiB of memory."""
    return Resource(cpu=2, gpu=0, memMB=8 * GiB)


@register.named_resource("cpu.xlarge")
def cpu_xlarge() -> Resource:
    """cpu.xlarge: 8 cpu, 0 gpu, 32 GiB of memory."""
    return Resource(cpu=8, gpu=0, memMB=32 * GiB)


#: name -> factory, as upstream's ``NAMED_RESOURCES`` table.
NAMED_RESOURCES = {
    "gpu.small": gpu_small,
    "gpu.medium": gpu_medium,
    "gpu.large": gpu_large,
    "gpu.xlarge": gpu_xlarge,
    "cpu.nano": cpu_nano,
    "cpu.micro": cpu_micro,
    "cpu.small": cpu_small,
    "cpu.medium": cpu_medium,
    "cpu.large": cpu_large,
    "cpu.xlarge": cpu_xlarge,
}
