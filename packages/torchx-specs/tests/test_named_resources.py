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
