"""Named resources: t-shirt sizes such as ``gpu.small`` that stand for a :class:`Resource`.

Components take a resource name (``-h gpu.small``) instead of raw cpu/gpu/memory
numbers, so the same component runs on any cluster that defines the name. Names
come from two places, looked up in this order:

1. resources registered in this process with :func:`register.named_resource`;
2. plugins, through the ``torchx_named_resources`` hook (torchx-specs contributes
   the generic sizes this way) or upstream's legacy ``torchx.named_resources``
   entry-point group.

``NULL`` and ``MISSING`` are reserved, as upstream: both give
:data:`~torchx.specs.NULL_RESOURCE`, the "no resource given" marker.

>>> from torchx.specs import named_resources
>>> named_resources["cpu.small"].memMB
2048
>>> named_resources["gpu.smal"]
Traceback (most recent call last):
 ...
torchx.specs.errors.UnknownNamedResourceException: unknown named resource 'gpu.smal' (did you mean 'gpu.small'?)

Registering your own, with an alias and fractional slices (``trn1_2`` is half of it)::

    from torchx.specs import Resource, register

    @register.named_resource(aliases=["trn1_big"], fractionals={"1": 0.5, "2": 1.0})
    def trn1(fractional: float = 1.0) -> Resource:
        return Resource(cpu=int(64 * fractional), gpu=0, memMB=int(512 * 1024 * fractional))
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from torchx.specs.api import FRACTIONAL_TAG, NAMED_RESOURCE_TAG, NULL_RESOURCE, Resource
from torchx.specs.errors import (
    InvalidResourceException,
    UnknownNamedResourceException,
    did_you_mean,
)

#: 1 GiB in MB, for writing memory sizes.
GiB: int = 1024

ResourceFactory = Callable[[], Resource]

# name -> factory; filled by @register.named_resource in this process
_REGISTERED: dict[str, ResourceFactory] = {}

# upstream's reserved names for "no resource given"
_RESERVED: frozenset[str] = frozenset({"NULL", "MISSING"})


def _tagged(res: Resource, name: str, fractional: bool) -> Resource:
    tags = dict(res.tags)
    tags[NAMED_RESOURCE_TAG] = name
    if fractional:
        tags[FRACTIONAL_TAG] = True
    return Resource(
        cpu=res.cpu,
        gpu=res.gpu,
        memMB=res.memMB,
        capabilities=dict(res.capabilities),
        devices=dict(res.devices),
        tags=tags,
    )


class register:
    """Namespace for registering named resources: ``@register.named_resource(...)``."""

    @staticmethod
    def named_resource(
        name: str | None = None,
        *,
        aliases: list[str] | tuple[str, ...] = (),
        fractionals: Mapping[str, float] | None = None,
    ) -> Callable[[Callable[..., Resource]], Callable[..., Resource]]:
        """Registers the decorated function as a named resource.

        Args:
            name: the name (default: the function's name)
            aliases: other names for the same resource
            fractionals: suffix -> fraction; registers ``{name}_{suffix}`` as
                ``fn(fractional=fraction)`` for each, marked fractional

        Every resource it creates is tagged with its name
        (:meth:`Resource.get_resource_name`); fractional ones also answer
        :meth:`Resource.is_fractional` with True.
        """

        def decorate(fn: Callable[..., Resource]) -> Callable[..., Resource]:
            base = name or fn.__name__

            @functools.wraps(fn)
            def whole(*args: Any, **kwargs: Any) -> Resource:
                return _tagged(fn(*args, **kwargs), base, fractional=False)

            for alias in (base, *aliases):
                _REGISTERED[alias] = whole
            for suffix, fraction in (fractionals or {}).items():
                if not 0 < fraction <= 1:
                    raise InvalidResourceException(
                        f"fraction for {base}_{suffix} must be in (0, 1], got {fraction!r}"
                    )
                frac_name = f"{base}_{suffix}"
                _REGISTERED[frac_name] = functools.partial(
                    lambda n, f: _tagged(fn(fractional=f), n, fractional=True), frac_name, fraction
                )
            return whole

        return decorate


def powers_of_two_gpus(gpus: int) -> dict[str, float]:
    """Fractionals for a host with ``gpus`` GPUs: ``{"1": 1/gpus, "2": 2/gpus, ..., str(gpus): 1.0}``.

    >>> powers_of_two_gpus(8)
    {'1': 0.125, '2': 0.25, '4': 0.5, '8': 1.0}
    """
    out: dict[str, float] = {}
    n = 1
    while n <= gpus:
        out[str(n)] = n / gpus
        n *= 2
    return out


def resource(
    cpu: int | None = None,
    gpu: int | None = None,
    memMB: int | None = None,
    h: str | None = None,
) -> Resource:
    """Creates a Resource from raw specs or a named resource.

    It lives here, beside the named resources it looks up, so that the core types
    (:mod:`torchx.specs.api`) import nothing above them; users import it as
    ``torchx.specs.resource``.

    When ``h`` is set it takes precedence and the raw specs are ignored; an unknown
    name raises :class:`~torchx.specs.errors.UnknownNamedResourceException` with the
    nearest registered name. Raw specs left out default to 2 cpus, 0 gpus and 1024 MB
    (upstream's defaults).

    >>> resource(cpu=4, gpu=1, memMB=8192)
    Resource(cpu=4, gpu=1, memMB=8192, capabilities={}, devices={}, tags={})
    >>> resource(h="cpu.small").memMB
    2048
    """
    if h is not None:
        if not isinstance(h, str) or not h.strip():
            raise InvalidResourceException(
                f"named resource must be a non-empty string such as 'gpu.small', got {h!r}"
            )
        return get_named_resources(h)
    values = {"cpu": (cpu, 2), "gpu": (gpu, 0), "memMB": (memMB, 1024)}
    resolved: dict[str, int] = {}
    for key, (given, default) in values.items():
        value = default if given is None else given
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidResourceException(
                f"resource {key} must be a non-negative integer, got {given!r}"
            )
        resolved[key] = value
    return Resource(cpu=resolved["cpu"], gpu=resolved["gpu"], memMB=resolved["memMB"])


def _plugin_entries() -> Mapping[str, Any]:
    from torchx.specs.plugins import get_registry

    return get_registry().named_resources


def _materialize(name: str, value: Any) -> Resource:
    res = value() if callable(value) else value
    if not isinstance(res, Resource):
        raise InvalidResourceException(
            f"named resource {name!r} did not produce a Resource (got {type(res).__name__})"
        )
    if res.get_resource_name() is None:
        res = _tagged(res, name, fractional=False)
    return res


def get_named_resources(res: str) -> Resource:
    """The Resource registered under ``res``.

    Raises :class:`~torchx.specs.errors.UnknownNamedResourceException` (a ValueError
    and a KeyError) with the nearest registered name when there is none.
    """
    if res in _RESERVED:
        return NULL_RESOURCE
    if res in _REGISTERED:
        return _materialize(res, _REGISTERED[res])
    entries = _plugin_entries()
    entry = entries.get(res)
    if entry is None:
        names = sorted({*_REGISTERED, *entries, *_RESERVED})
        raise UnknownNamedResourceException(
            f"unknown named resource {res!r}{did_you_mean(res, names)}"
        )
    return _materialize(res, entry.load())


class _NamedResources(Mapping[str, Resource]):
    """Read-only view of every named resource: ``named_resources["gpu.small"]``."""

    def __getitem__(self, name: str) -> Resource:
        return get_named_resources(name)

    def _names(self) -> list[str]:
        return sorted({*_REGISTERED, *_plugin_entries(), *_RESERVED})

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (
            name in _REGISTERED or name in _RESERVED or name in _plugin_entries()
        )

    def __repr__(self) -> str:
        return f"named_resources({', '.join(self._names())})"


#: Mapping of every named resource, loaded lazily from plugins on first use.
named_resources: Mapping[str, Resource] = _NamedResources()
