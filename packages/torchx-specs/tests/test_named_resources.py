"""Named resources: the generic sizes, registration, aliases, fractionals and misses."""

from __future__ import annotations

import pytest

from torchx.specs import (
    GiB,
    Resource,
    UnknownNamedResourceException,
    get_named_resources,
    named_resources,
    powers_of_two_gpus,
    register,
)

GENERIC = {
    "gpu.small": (8, 1, 32 * GiB),
    "gpu.medium": (16, 2, 64 * GiB),
    "gpu.large": (32, 4, 128 * GiB),
    "gpu.xlarge": (64, 8, 256 * GiB),
    "cpu.nano": (1, 0, 512),
    "cpu.micro": (1, 0, 1 * GiB),
    "cpu.small": (1, 0, 2 * GiB),
    "cpu.medium": (2, 0, 4 * GiB),
    "cpu.large": (2, 0, 8 * GiB),
    "cpu.xlarge": (8, 0, 32 * GiB),
}


@pytest.mark.parametrize("name", sorted(GENERIC))
def test_generic_sizes(name: str) -> None:
    res = named_resources[name]
    assert (res.cpu, res.gpu, res.memMB) == GENERIC[name]
    assert res.get_resource_name() == name
    assert name in named_resources


def test_generic_sizes_come_through_the_plugin_hook() -> None:
    from torchx.specs.plugins import get_registry

    entries = get_registry().named_resources
    for name in GENERIC:
        assert entries[name].distribution == "torchx-specs"


def test_register_with_aliases_and_fractionals() -> None:
    @register.named_resource("test.box", aliases=["test_box"], fractionals=powers_of_two_gpus(4))
    def box(fractional: float = 1.0) -> Resource:
        return Resource(
            cpu=int(16 * fractional), gpu=int(4 * fractional), memMB=int(1000 * fractional)
        )

    whole = get_named_resources("test.box")
    assert (whole.cpu, whole.gpu) == (16, 4) and not whole.is_fractional()
    assert get_named_resources("test_box") == whole
    half = get_named_resources("test.box_2")
    assert (half.cpu, half.gpu, half.memMB) == (8, 2, 500)
    assert half.is_fractional() and half.get_resource_name() == "test.box_2"
    assert get_named_resources("test.box_4").is_fractional()
    assert "test.box_1" in set(named_resources)


def test_miss_is_key_and_value_error_with_suggestion() -> None:
    with pytest.raises(UnknownNamedResourceException, match=r"did you mean 'cpu.large'") as err:
        named_resources["cpu.lrage"]
    assert isinstance(err.value, KeyError) and isinstance(err.value, ValueError)
    assert named_resources.get("nope") is None
    assert "\n" not in str(err.value)


def test_powers_of_two() -> None:
    assert powers_of_two_gpus(1) == {"1": 1.0}
    assert list(powers_of_two_gpus(8)) == ["1", "2", "4", "8"]


# --- AWS instance types (torchx.specs.named_resources_aws) ---------------------------

#: what AWS lists for each instance: vCPU, GPU, GiB of memory, EFA, Neuron devices
AWS = {
    "aws_t3.medium": (2, 0, 4, 0, 0),
    "aws_m5.2xlarge": (8, 0, 32, 0, 0),
    "aws_p3.2xlarge": (8, 1, 61, 0, 0),
    "aws_p3.8xlarge": (32, 4, 244, 0, 0),
    "aws_p4d.24xlarge": (96, 8, 1152, 4, 0),
    "aws_p5.48xlarge": (192, 8, 2048, 32, 0),
    "aws_g4dn.12xlarge": (48, 4, 192, 1, 0),
    "aws_g5.48xlarge": (192, 8, 768, 1, 0),
    "aws_g6e.24xlarge": (96, 4, 768, 2, 0),
    "aws_trn1.2xlarge": (8, 0, 32, 0, 1),
    "aws_trn1.32xlarge": (128, 0, 512, 8, 16),
    "aws_inf2.48xlarge": (192, 0, 768, 0, 12),
}


@pytest.mark.parametrize("name", sorted(AWS))
def test_aws_instance_types(name: str) -> None:
    from torchx.specs.named_resources_aws import (
        EFA_DEVICE,
        K8S_ITYPE,
        NEURON_DEVICE,
        instance_type_from_resource,
    )

    cpu, gpu, gib, efa, neuron = AWS[name]
    res = named_resources[name]
    # memory is the instance's less the 4% ECS/EC2 keep (983 MB per GiB), so Batch can place it
    assert (res.cpu, res.gpu, res.memMB) == (cpu, gpu, gib * 983)
    assert res.devices.get(EFA_DEVICE, 0) == efa
    assert res.devices.get(NEURON_DEVICE, 0) == neuron
    assert res.capabilities[K8S_ITYPE] == name.removeprefix("aws_")
    assert instance_type_from_resource(res) == name.removeprefix("aws_")
    assert res.get_resource_name() == name


def test_aws_names_are_the_documented_set() -> None:
    from torchx.specs import named_resources_aws as aws

    names = set(aws.NAMED_RESOURCES)
    assert len(names) == 41
    # the reference's usage examples and the families it lists
    assert {"aws_t3.medium", "aws_m5.2xlarge", "aws_p3.2xlarge", "aws_p3.8xlarge"} <= names
    families = {n.removeprefix("aws_").split(".")[0] for n in names}
    assert families == {
        "t3", "m5", "c5", "p3", "p3dn", "p4d", "p4de", "p5", "p5e", "p5en",
        "g4dn", "g5", "g6e", "trn1", "inf2",
    }  # fmt: skip
    for name, factory in aws.NAMED_RESOURCES.items():
        assert factory() == get_named_resources(name)


def test_aws_names_come_through_torchx_specs_plugin_lazily() -> None:
    from torchx.specs import named_resources_aws as aws
    from torchx.specs.plugins import get_registry

    entries = get_registry().named_resources
    aws_entries = {n: e for n, e in entries.items() if n.startswith("aws_")}
    # the plugin's name list (which must import nothing) is the module's table, name for name
    assert set(aws_entries) == set(aws.NAMED_RESOURCES)
    for name, entry in aws_entries.items():
        assert entry.distribution == "torchx-specs"
        assert (
            entry.value == f"torchx.specs.named_resources_aws:{aws.NAMED_RESOURCES[name].__name__}"
        )


def _loaded_after(lookup: str) -> list[str]:
    import subprocess
    import sys

    code = (
        "import sys\nfrom torchx.specs import resource\n"
        f"r = resource(h={lookup!r})\n"
        "print(r.cpu, [m for m in sys.modules if m.startswith('torchx.specs.named_resources')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_a_generic_lookup_does_not_load_the_aws_table() -> None:
    out = _loaded_after("cpu.medium")
    assert out[0] == "2"
    assert "torchx.specs.named_resources_aws" not in " ".join(out[1:])
    assert "torchx.specs.named_resources_generic" in " ".join(out[1:])


def test_an_aws_lookup_loads_only_the_aws_table() -> None:
    out = _loaded_after("aws_p4d.24xlarge")
    assert out[0] == "96"
    assert "torchx.specs.named_resources_aws" in " ".join(out[1:])
    assert "torchx.specs.named_resources_generic" not in " ".join(out[1:])


def test_aws_miss_suggests_the_nearest_instance_type() -> None:
    with pytest.raises(UnknownNamedResourceException, match=r"did you mean 'aws_p4d.24xlarge'"):
        named_resources["aws_p4d.24xlarg"]


def test_instance_type_of_a_resource_without_one() -> None:
    from torchx.specs.named_resources_aws import K8S_ITYPE, instance_type_from_resource

    assert instance_type_from_resource(named_resources["gpu.small"]) is None
    assert instance_type_from_resource(Resource(1, 0, 1, capabilities={K8S_ITYPE: 3})) is None
