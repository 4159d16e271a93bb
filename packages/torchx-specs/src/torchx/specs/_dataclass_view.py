"""The spec types seen by :mod:`dataclasses`: ``fields``, ``asdict`` and ``replace`` work on them.

Upstream TorchX's ``AppDef``, ``Role``, ``Resource``, ... are dataclasses, and code
written for it calls ``dataclasses.asdict(app)``, ``dataclasses.replace(role,
image=...)`` and ``dataclasses.fields(Role)``. Here they are attrs classes; each also
answers to :mod:`dataclasses` through the attribute it reads, ``__dataclass_fields__``:
the attrs fields, described as ``dataclasses.Field`` objects (name, type, default,
``init``, ``repr``, ``compare``). So ``dataclasses.is_dataclass(role)`` is True and
those calls give what upstream's gave (``asdict`` recurses into roles and resources;
``replace`` makes a new instance through the constructor, validators included).

The attribute is computed on first use and kept per class: importing
:mod:`torchx.specs` does not import :mod:`dataclasses` for it. attrs' own API
(``attrs.fields``, ``attrs.evolve``, ``attrs.asdict``) is unchanged and is what new
code should use.

>>> import dataclasses
>>> from torchx.specs import Role
>>> role = Role("trainer", image="img", entrypoint="python")
>>> dataclasses.replace(role, image="other").image
'other'
>>> [f.name for f in dataclasses.fields(Role)][:3]
['name', 'image', 'min_replicas']
>>> dataclasses.asdict(role)["resource"]["memMB"]
-1
"""

from __future__ import annotations

from typing import Any

__all__ = ["expose"]


class _DataclassFields:
    """``__dataclass_fields__`` of an attrs class, built on first access (class or instance)."""

    def __init__(self) -> None:
        self._by_class: dict[type, dict[str, Any]] = {}

    def __get__(self, obj: object, cls: type | None = None) -> dict[str, Any]:
        owner = cls if cls is not None else type(obj)
        built = self._by_class.get(owner)
        if built is None:
            built = self._by_class[owner] = _fields_of(owner)
        return built


def _fields_of(cls: type) -> dict[str, Any]:
    import dataclasses

    import attrs

    out: dict[str, Any] = {}
    for a in attrs.fields(cls):
        default: Any = dataclasses.MISSING
        factory: Any = dataclasses.MISSING
        if isinstance(a.default, attrs.Factory):  # type: ignore[arg-type]
            if not a.default.takes_self:
                factory = a.default.factory
        elif a.default is not attrs.NOTHING:
            default = a.default
        field: dataclasses.Field[Any] = dataclasses.field(
            default=default,
            default_factory=factory,
            init=a.init,
            repr=bool(a.repr),
            compare=bool(a.eq),
            metadata=a.metadata or None,
        )
        # what @dataclass sets on each of its own fields (replace and fields read them)
        field.name = a.name
        field.type = a.type
        field._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
        out[a.name] = field
    return out


def expose(*classes: type) -> None:
    """Makes each attrs class in ``classes`` answer to :mod:`dataclasses` (see the module)."""
    view = _DataclassFields()
    for cls in classes:
        cls.__dataclass_fields__ = view  # type: ignore[attr-defined]
