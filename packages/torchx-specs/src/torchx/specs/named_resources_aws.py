"""AWS EC2 instance types as named resources: ``aws_p4d.24xlarge``, ``aws_m5.2xlarge``, ...

Each name is ``aws_`` plus the EC2 instance type. The numbers are the instance's
vCPUs, GPUs and memory, so a role asking for ``aws_p4d.24xlarge`` asks for a whole
p4d.24xlarge. Besides the numbers each resource carries:

* the instance type under :data:`K8S_ITYPE` in ``capabilities``, which is how a
  scheduler learns the instance type to request (SageMaker's ``InstanceType``, a
  Batch compute environment or a Kubernetes node selector);
* the instance's Elastic Fabric Adapters (:data:`EFA_DEVICE`) and Neuron devices
  (:data:`NEURON_DEVICE`) in ``devices``, for schedulers that map devices.

Memory is not the instance's full memory: ECS and EC2 keep part of it for
themselves, and AWS Batch places a container only on a host that has all the memory
the container asks for, so a job asking for the advertised size would wait in its
queue forever. Every size is therefore counted in :data:`GiB` units of 96% of 1024 MB
(:data:`MEM_TAX`), which AWS Batch can place on every listed type; c5.18xlarge gets
142 rather than its 144 because 96% is not quite enough there.

This module is pure data (nothing AWS is imported). torchx-specs registers its
names through its own plugin (``torchx.specs.builtin_plugin``) as lazy references:
the module is imported the first time an ``aws_`` name is looked up, never for a
generic size such as ``gpu.small``. As with the generic sizes, the definitions may
change between releases; register your own for the instances you actually run on.

=====================  =====  ===  =========  ===  ======
name                   vCPU   GPU  memory     EFA  Neuron
=====================  =====  ===  =========  ===  ======
aws_t3.medium              2    0    4 GiB      .    .
aws_m5.2xlarge             8    0   32 GiB      .    .
aws_c5.18xlarge           72    0  142 GiB      .    .
aws_p3.2xlarge             8    1   61 GiB      .    .
aws_p3.8xlarge            32    4  244 GiB      .    .
aws_p3.16xlarge           64    8  488 GiB      .    .
aws_p3dn.24xlarge         96    8  768 GiB      1    .
aws_p4d.24xlarge          96    8  1152 GiB     4    .
aws_p4de.24xlarge         96    8  1152 GiB     4    .
aws_p5.48xlarge          192    8  2048 GiB    32    .
aws_p5e.48xlarge         192    8  2048 GiB    32    .
aws_p5en.48xlarge        192    8  2048 GiB    16    .
aws_g4dn.xlarge            4    1   16 GiB      .    .
aws_g4dn.2xlarge           8    1   32 GiB      .    .
aws_g4dn.4xlarge          16    1   64 GiB      .    .
aws_g4dn.8xlarge          32    1  128 GiB      1    .
aws_g4dn.12xlarge         48    4  192 GiB      1    .
aws_g4dn.16xlarge         64    1  256 GiB      1    .
aws_g4dn.metal            96    8  384 GiB      1    .
aws_g5.xlarge              4    1   16 GiB      .    .
aws_g5.2xlarge             8    1   32 GiB      .    .
aws_g5.4xlarge            16    1   64 GiB      .    .
aws_g5.8xlarge            32    1  128 GiB      1    .
aws_g5.12xlarge           48    4  192 GiB      1    .
aws_g5.16xlarge           64    1  256 GiB      1    .
aws_g5.24xlarge           96    4  384 GiB      1    .
aws_g5.48xlarge          192    8  768 GiB      1    .
aws_g6e.xlarge             4    1   32 GiB      .    .
aws_g6e.2xlarge            8    1   64 GiB      .    .
aws_g6e.4xlarge           16    1  128 GiB      .    .
aws_g6e.8xlarge           32    1  256 GiB      .    .
aws_g6e.12xlarge          48    4  384 GiB      .    .
aws_g6e.16xlarge          64    1  512 GiB      .    .
aws_g6e.24xlarge          96    4  768 GiB      2    .
aws_g6e.48xlarge         192    8  1536 GiB     4    .
aws_trn1.2xlarge           8    0   32 GiB      .    1
aws_trn1.32xlarge        128    0  512 GiB      8   16
aws_inf2.xlarge            4    0   16 GiB      .    1
aws_inf2.8xlarge          32    0  128 GiB      .    1
aws_inf2.24xlarge         96    0  384 GiB      .    6
aws_inf2.48xlarge        192    0  768 GiB      .   12
=====================  =====  ===  =========  ===  ======

>>> from torchx.specs import resource
>>> p4d = resource(h="aws_p4d.24xlarge")
>>> (p4d.cpu, p4d.gpu, p4d.memMB, p4d.devices)
(96, 8, 1132416, {'vpc.amazonaws.com/efa': 4})
>>> instance_type_from_resource(p4d)
'p4d.24xlarge'
>>> resource(h="aws_trn1.32xlarge").devices
{'vpc.amazonaws.com/efa': 8, 'aws.amazon.com/neurondevice': 16}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from torchx.specs.api import Resource
from torchx.specs.resources import register

#: Device name of an AWS Elastic Fabric Adapter (as the EFA Kubernetes device plugin names it).
EFA_DEVICE: str = "vpc.amazonaws.com/efa"
#: Device name of an AWS Neuron device (Trainium, Inferentia).
NEURON_DEVICE: str = "aws.amazon.com/neurondevice"
#: Capability key holding the EC2 instance type (the well-known Kubernetes node label).
K8S_ITYPE: str = "node.kubernetes.io/instance-type"
#: Share of an instance's memory a container can be given (the rest is the ECS/EC2 overhead).
MEM_TAX: float = 0.96
#: The MB in one GiB of instance memory once :data:`MEM_TAX` is taken off (983).
GiB: int = int(1024 * MEM_TAX)


class _Spec(NamedTuple):
    cpu: int
    gpu: int
    mem_gib: int
    efa: int = 0
    neuron: int = 0


# instance type -> what one instance has; sizes from https://aws.amazon.com/ec2/instance-types/
_SPECS: dict[str, _Spec] = {
    "t3.medium": _Spec(2, 0, 4),
    "m5.2xlarge": _Spec(8, 0, 32),
    "c5.18xlarge": _Spec(72, 0, 142),  # 144 GiB, but 96% of it does not fit a Batch job
    "p3.2xlarge": _Spec(8, 1, 61),
    "p3.8xlarge": _Spec(32, 4, 244),
    "p3.16xlarge": _Spec(64, 8, 488),
    "p3dn.24xlarge": _Spec(96, 8, 768, efa=1),
    "p4d.24xlarge": _Spec(96, 8, 1152, efa=4),
    "p4de.24xlarge": _Spec(96, 8, 1152, efa=4),  # p4d with 80 GB rather than 40 GB per GPU
    "p5.48xlarge": _Spec(192, 8, 2048, efa=32),
    "p5e.48xlarge": _Spec(192, 8, 2048, efa=32),
    "p5en.48xlarge": _Spec(192, 8, 2048, efa=16),
    "g4dn.xlarge": _Spec(4, 1, 16),
    "g4dn.2xlarge": _Spec(8, 1, 32),
    "g4dn.4xlarge": _Spec(16, 1, 64),
    "g4dn.8xlarge": _Spec(32, 1, 128, efa=1),
    "g4dn.12xlarge": _Spec(48, 4, 192, efa=1),
    "g4dn.16xlarge": _Spec(64, 1, 256, efa=1),
    "g4dn.metal": _Spec(96, 8, 384, efa=1),
    "g5.xlarge": _Spec(4, 1, 16),
    "g5.2xlarge": _Spec(8, 1, 32),
    "g5.4xlarge": _Spec(16, 1, 64),
    "g5.8xlarge": _Spec(32, 1, 128, efa=1),
    "g5.12xlarge": _Spec(48, 4, 192, efa=1),
    "g5.16xlarge": _Spec(64, 1, 256, efa=1),
    "g5.24xlarge": _Spec(96, 4, 384, efa=1),
    "g5.48xlarge": _Spec(192, 8, 768, efa=1),
    "g6e.xlarge": _Spec(4, 1, 32),
    "g6e.2xlarge": _Spec(8, 1, 64),
    "g6e.4xlarge": _Spec(16, 1, 128),
    "g6e.8xlarge": _Spec(32, 1, 256),
    "g6e.12xlarge": _Spec(48, 4, 384),
    "g6e.16xlarge": _Spec(64, 1, 512),
    "g6e.24xlarge": _Spec(96, 4, 768, efa=2),
    "g6e.48xlarge": _Spec(192, 8, 1536, efa=4),
    "trn1.2xlarge": _Spec(8, 0, 32, neuron=1),
    "trn1.32xlarge": _Spec(128, 0, 512, efa=8, neuron=16),
    "inf2.xlarge": _Spec(4, 0, 16, neuron=1),
    "inf2.8xlarge": _Spec(32, 0, 128, neuron=1),
    "inf2.24xlarge": _Spec(96, 0, 384, neuron=6),
    "inf2.48xlarge": _Spec(192, 0, 768, neuron=12),
}


def instance_type_from_resource(resource: Resource) -> str | None:
    """The EC2 instance type a resource stands for (its :data:`K8S_ITYPE` capability), if any.

    Schedulers that must name an instance type (SageMaker, Batch compute
    environments with several types) call this; ``None`` means the resource was not
    made from an AWS named resource and did not set the capability itself.

    >>> instance_type_from_resource(Resource(cpu=1, gpu=0, memMB=512)) is None
    True
    """
    itype = resource.capabilities.get(K8S_ITYPE)
    return itype if isinstance(itype, str) else None


def _instance(itype: str) -> Resource:
    spec = _SPECS[itype]
    devices: dict[str, int] = {}
    if spec.efa:
        devices[EFA_DEVICE] = spec.efa
    if spec.neuron:
        devices[NEURON_DEVICE] = spec.neuron
    return Resource(
        cpu=spec.cpu,
        gpu=spec.gpu,
        memMB=spec.mem_gib * GiB,
        capabilities={K8S_ITYPE: itype},
        devices=devices,
    )


# One function per name, as upstream has them (``from torchx.specs.named_resources_aws
# import aws_p4d_24xlarge``), each registered under its ``aws_`` name.


@register.named_resource("aws_t3.medium")
def aws_t3_medium() -> Resource:
    """t3.medium: 2 vCPU, 4 GiB."""
    return _instance("t3.medium")


@register.named_resource("aws_m5.2xlarge")
def aws_m5_2xlarge() -> Resource:
    """m5.2xlarge: 8 vCPU, 32 GiB."""
    return _instance("m5.2xlarge")


@register.named_resource("aws_c5.18xlarge")
def aws_c5_18xlarge() -> Resource:
    """c5.18xlarge: 72 vCPU, 142 GiB."""
    return _instance("c5.18xlarge")


@register.named_resource("aws_p3.2xlarge")
def aws_p3_2xlarge() -> Resource:
    """p3.2xlarge: 8 vCPU, 1 V100, 61 GiB."""
    return _instance("p3.2xlarge")


@register.named_resource("aws_p3.8xlarge")
def aws_p3_8xlarge() -> Resource:
    """p3.8xlarge: 32 vCPU, 4 V100, 244 GiB."""
    return _instance("p3.8xlarge")


@register.named_resource("aws_p3.16xlarge")
def aws_p3_16xlarge() -> Resource:
    """p3.16xlarge: 64 vCPU, 8 V100, 488 GiB."""
    return _instance("p3.16xlarge")


@register.named_resource("aws_p3dn.24xlarge")
def aws_p3dn_24xlarge() -> Resource:
    """p3dn.24xlarge: 96 vCPU, 8 V100, 768 GiB, 1 EFA."""
    return _instance("p3dn.24xlarge")


@register.named_resource("aws_p4d.24xlarge")
def aws_p4d_24xlarge() -> Resource:
    """p4d.24xlarge: 96 vCPU, 8 A100, 1152 GiB, 4 EFA."""
    return _instance("p4d.24xlarge")


@register.named_resource("aws_p4de.24xlarge")
def aws_p4de_24xlarge() -> Resource:
    """p4de.24xlarge: 96 vCPU, 8 A100 (80 GB), 1152 GiB, 4 EFA."""
    return _instance("p4de.24xlarge")


@register.named_resource("aws_p5.48xlarge")
def aws_p5_48xlarge() -> Resource:
    """p5.48xlarge: 192 vCPU, 8 H100, 2048 GiB, 32 EFA."""
    return _instance("p5.48xlarge")


@register.named_resource("aws_p5e.48xlarge")
def aws_p5e_48xlarge() -> Resource:
    """p5e.48xlarge: 192 vCPU, 8 H200, 2048 GiB, 32 EFA."""
    return _instance("p5e.48xlarge")


@register.named_resource("aws_p5en.48xlarge")
def aws_p5en_48xlarge() -> Resource:
    """p5en.48xlarge: 192 vCPU, 8 H200, 2048 GiB, 16 EFA."""
    return _instance("p5en.48xlarge")


@register.named_resource("aws_g4dn.xlarge")
def aws_g4dn_xlarge() -> Resource:
    """g4dn.xlarge: 4 vCPU, 1 T4, 16 GiB."""
    return _instance("g4dn.xlarge")


@register.named_resource("aws_g4dn.2xlarge")
def aws_g4dn_2xlarge() -> Resource:
    """g4dn.2xlarge: 8 vCPU, 1 T4, 32 GiB."""
    return _instance("g4dn.2xlarge")


@register.named_resource("aws_g4dn.4xlarge")
def aws_g4dn_4xlarge() -> Resource:
    """g4dn.4xlarge: 16 vCPU, 1 T4, 64 GiB."""
    return _instance("g4dn.4xlarge")


@register.named_resource("aws_g4dn.8xlarge")
def aws_g4dn_8xlarge() -> Resource:
    """g4dn.8xlarge: 32 vCPU, 1 T4, 128 GiB, 1 EFA."""
    return _instance("g4dn.8xlarge")


@register.named_resource("aws_g4dn.12xlarge")
def aws_g4dn_12xlarge() -> Resource:
    """g4dn.12xlarge: 48 vCPU, 4 T4, 192 GiB, 1 EFA."""
    return _instance("g4dn.12xlarge")


@register.named_resource("aws_g4dn.16xlarge")
def aws_g4dn_16xlarge() -> Resource:
    """g4dn.16xlarge: 64 vCPU, 1 T4, 256 GiB, 1 EFA."""
    return _instance("g4dn.16xlarge")


@register.named_resource("aws_g4dn.metal")
def aws_g4dn_metal() -> Resource:
    """g4dn.metal: 96 vCPU, 8 T4, 384 GiB, 1 EFA."""
    return _instance("g4dn.metal")


@register.named_resource("aws_g5.xlarge")
def aws_g5_xlarge() -> Resource:
    """g5.xlarge: 4 vCPU, 1 A10G, 16 GiB."""
    return _instance("g5.xlarge")


@register.named_resource("aws_g5.2xlarge")
def aws_g5_2xlarge() -> Resource:
    """g5.2xlarge: 8 vCPU, 1 A10G, 32 GiB."""
    return _instance("g5.2xlarge")


@register.named_resource("aws_g5.4xlarge")
def aws_g5_4xlarge() -> Resource:
    """g5.4xlarge: 16 vCPU, 1 A10G, 64 GiB."""
    return _instance("g5.4xlarge")


@register.named_resource("aws_g5.8xlarge")
def aws_g5_8xlarge() -> Resource:
    """g5.8xlarge: 32 vCPU, 1 A10G, 128 GiB, 1 EFA."""
    return _instance("g5.8xlarge")


@register.named_resource("aws_g5.12xlarge")
def aws_g5_12xlarge() -> Resource:
    """g5.12xlarge: 48 vCPU, 4 A10G, 192 GiB, 1 EFA."""
    return _instance("g5.12xlarge")


@register.named_resource("aws_g5.16xlarge")
def aws_g5_16xlarge() -> Resource:
    """g5.16xlarge: 64 vCPU, 1 A10G, 256 GiB, 1 EFA."""
    return _instance("g5.16xlarge")


@register.named_resource("aws_g5.24xlarge")
def aws_g5_24xlarge() -> Resource:
    """g5.24xlarge: 96 vCPU, 4 A10G, 384 GiB, 1 EFA."""
    return _instance("g5.24xlarge")


@register.named_resource("aws_g5.48xlarge")
def aws_g5_48xlarge() -> Resource:
    """g5.48xlarge: 192 vCPU, 8 A10G, 768 GiB, 1 EFA."""
    return _instance("g5.48xlarge")


@register.named_resource("aws_g6e.xlarge")
def aws_g6e_xlarge() -> Resource:
    """g6e.xlarge: 4 vCPU, 1 L40S, 32 GiB."""
    return _instance("g6e.xlarge")


@register.named_resource("aws_g6e.2xlarge")
def aws_g6e_2xlarge() -> Resource:
    """g6e.2xlarge: 8 vCPU, 1 L40S, 64 GiB."""
    return _instance("g6e.2xlarge")


@register.named_resource("aws_g6e.4xlarge")
def aws_g6e_4xlarge() -> Resource:
    """g6e.4xlarge: 16 vCPU, 1 L40S, 128 GiB."""
    return _instance("g6e.4xlarge")


@register.named_resource("aws_g6e.8xlarge")
def aws_g6e_8xlarge() -> Resource:
    """g6e.8xlarge: 32 vCPU, 1 L40S, 256 GiB."""
    return _instance("g6e.8xlarge")


@register.named_resource("aws_g6e.12xlarge")
def aws_g6e_12xlarge() -> Resource:
    """g6e.12xlarge: 48 vCPU, 4 L40S, 384 GiB."""
    return _instance("g6e.12xlarge")


@register.named_resource("aws_g6e.16xlarge")
def aws_g6e_16xlarge() -> Resource:
    """g6e.16xlarge: 64 vCPU, 1 L40S, 512 GiB."""
    return _instance("g6e.16xlarge")


@register.named_resource("aws_g6e.24xlarge")
def aws_g6e_24xlarge() -> Resource:
    """g6e.24xlarge: 96 vCPU, 4 L40S, 768 GiB, 2 EFA."""
    return _instance("g6e.24xlarge")


@register.named_resource("aws_g6e.48xlarge")
def aws_g6e_48xlarge() -> Resource:
    """g6e.48xlarge: 192 vCPU, 8 L40S, 1536 GiB, 4 EFA."""
    return _instance("g6e.48xlarge")


@register.named_resource("aws_trn1.2xlarge")
def aws_trn1_2xlarge() -> Resource:
    """trn1.2xlarge: 8 vCPU, 32 GiB, 1 Neuron device (Trainium)."""
    return _instance("trn1.2xlarge")


@register.named_resource("aws_trn1.32xlarge")
def aws_trn1_32xlarge() -> Resource:
    """trn1.32xlarge: 128 vCPU, 512 GiB, 8 EFA, 16 Neuron devices (Trainium)."""
    return _instance("trn1.32xlarge")


@register.named_resource("aws_inf2.xlarge")
def aws_inf2_xlarge() -> Resource:
    """inf2.xlarge: 4 vCPU, 16 GiB, 1 Neuron device (Inferentia2)."""
    return _instance("inf2.xlarge")


@register.named_resource("aws_inf2.8xlarge")
def aws_inf2_8xlarge() -> Resource:
    """inf2.8xlarge: 32 vCPU, 128 GiB, 1 Neuron device (Inferentia2)."""
    return _instance("inf2.8xlarge")


@register.named_resource("aws_inf2.24xlarge")
def aws_inf2_24xlarge() -> Resource:
    """inf2.24xlarge: 96 vCPU, 384 GiB, 6 Neuron devices (Inferentia2)."""
    return _instance("inf2.24xlarge")


@register.named_resource("aws_inf2.48xlarge")
def aws_inf2_48xlarge() -> Resource:
    """inf2.48xlarge: 192 vCPU, 768 GiB, 12 Neuron devices (Inferentia2)."""
    return _instance("inf2.48xlarge")


#: ``aws_`` name -> factory, as upstream's ``NAMED_RESOURCES`` table.
NAMED_RESOURCES: Mapping[str, Callable[[], Resource]] = {
    f"aws_{itype}": globals()[f"aws_{itype.replace('.', '_')}"] for itype in _SPECS
}
