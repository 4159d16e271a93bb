'''Typed scheduler options: declare a dataclass (or attrs class), get runopts for free.

Instead of building a :class:`~torchx.specs.runopts` by hand, a scheduler declares
its options as fields of a :class:`StructuredOpts` subclass. The field's type gives
the option type, its default the option default (no default: required), and the
string literal right below the field (either quote style) its help text.

>>> from dataclasses import dataclass
>>> from torchx.specs import StructuredOpts
>>> @dataclass
... class MyOpts(StructuredOpts):
...     cluster_name: str
...     """Name of the cluster to submit to."""
...
...     num_retries: int = 3
...     """Number of retry attempts."""
>>> opts = MyOpts.from_cfg({"clusterName": "prod"})
>>> opts.cluster_name, opts.num_retries, opts["num_retries"]
('prod', 3, 3)

Nested ``StructuredOpts`` fields are flattened with dotted keys (``k8s.context``).
``torchx.schedulers.api`` re-exports this class, as upstream TorchX does.
'''

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin

from torchx.specs.errors import InvalidRunConfigException
from torchx.specs.options import CfgVal, runopts

_T = TypeVar("_T", bound="StructuredOpts")
_D = TypeVar("_D")
_MISSING: Any = object()


def _snake_to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


class _Field:
    __slots__ = ("default", "name", "type")

    def __init__(self, name: str, type_: Any, default: Any) -> None:
        self.name = name
        self.type = type_
        self.default = default  # _MISSING when required; None when built by a factory


def _fields(cls: type) -> list[_Field]:
    """The fields of a dataclass or attrs class, with resolved types and defaults."""
    import dataclasses
    from typing import get_type_hints

    import attrs

    try:
        hints = get_type_hints(cls)
    except NameError:
        # A class declared inside a function (or a doctest) with postponed annotations
        # names types that live in its caller's scope: look them up there.
        hints = get_type_hints(cls, localns=_caller_namespace())
    if dataclasses.is_dataclass(cls):
        out = []
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = None
            else:
                default = _MISSING
            out.append(_Field(f.name, hints.get(f.name, str), default))
        return out
    if attrs.has(cls):
        out = []
        for a in attrs.fields(cls):
            if isinstance(a.default, attrs.Factory):  # type: ignore[arg-type]
                default = None
            elif a.default is attrs.NOTHING:
                default = _MISSING
            else:
                default = a.default
            out.append(_Field(a.name, hints.get(a.name, a.type or str), default))
        return out
    raise TypeError(f"{cls.__name__} must be a @dataclass or an attrs class to be StructuredOpts")


def _class_source(klass: type) -> str:
    """The source of a class statement, or "" when it cannot be found."""
    import inspect
    import linecache

    try:
        return inspect.getsource(klass)
    except (OSError, TypeError):
        pass
    where = klass.__dict__.get("_torchx_source_at")
    if not where:
        return ""
    filename, lineno = where
    lines = linecache.getlines(filename)
    if not lines or lineno < 1:
        return ""
    try:
        return "".join(inspect.getblock(lines[lineno - 1 :]))
    except (IndentationError, SyntaxError, IndexError):
        return ""


def _caller_namespace() -> dict[str, Any]:
    import sys

    namespace: dict[str, Any] = {}
    frame = sys._getframe(1)
    while frame is not None:
        for scope in (frame.f_globals, frame.f_locals):
            for key, value in scope.items():
                namespace.setdefault(key, value)
        frame = frame.f_back  # type: ignore[assignment]
    return namespace


def _optional_inner(tp: Any) -> Any:
    import types

    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return args[0] if args else str
    return tp


def _is_nested(tp: Any) -> bool:
    inner = _optional_inner(tp)
    return isinstance(inner, type) and issubclass(inner, StructuredOpts)


class StructuredOpts:
    """Base class for typed scheduler configuration options.

    Subclasses are ``@dataclass`` (or attrs) classes whose fields are the options.
    Instances also behave as read-only mappings (``opts["key"]``, ``opts.get``,
    ``in``, iteration over field names) for code written against plain cfg dicts,
    and ``a | b`` merges two instances into one cfg dict.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class OptsA(StructuredOpts):
    ...     foo: str = "a"
    >>> @dataclass
    ... class OptsB(StructuredOpts):
    ...     bar: int = 1
    >>> cfg = OptsA(foo="x") | OptsB(bar=2)
    >>> cfg["foo"], cfg["bar"]
    ('x', 2)
    """

    _torchx_source_at: ClassVar[tuple[str, int] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Remember where the class statement is, so that field docstrings can be read
        # even where inspect.getsource cannot find the class (doctests, the REPL).
        import sys

        super().__init_subclass__(**kwargs)
        frame = sys._getframe(1)
        cls._torchx_source_at = (frame.f_code.co_filename, frame.f_lineno)

    @staticmethod
    def snake_to_camel(name: str) -> str:
        """Convert snake_case to camelCase: ``hpc_identity`` -> ``hpcIdentity``."""
        return _snake_to_camel(name)

    @classmethod
    def get_docstrings(cls) -> dict[str, str]:
        """Help text per field: the string literal right below each field's declaration.

        Read from the class source with :mod:`ast`, so either quote style works;
        inherited fields take their help from the class that declares them.
        """
        import ast
        import inspect
        import textwrap

        docs: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            if klass in (StructuredOpts, object):
                continue
            source = _class_source(klass)
            try:
                tree = ast.parse(textwrap.dedent(source)) if source else None
            except SyntaxError:
                tree = None
            body = (
                next((n.body for n in tree.body if isinstance(n, ast.ClassDef)), []) if tree else []
            )
            for node, following in itertools.pairwise(body):
                if (
                    isinstance(node, ast.AnnAssign)
                    and isinstance(node.target, ast.Name)
                    and isinstance(following, ast.Expr)
                    and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)
                ):
                    docs[node.target.id] = inspect.cleandoc(following.value.value)
        return docs

    @classmethod
    def as_runopts(cls, prefix: str = "") -> runopts:
        '''Build :class:`~torchx.specs.runopts` from the fields.

        Nested StructuredOpts fields are flattened with dot-prefixed keys (a field
        ``k8s: K8sOpts`` with sub-field ``context`` becomes ``k8s.context``).

        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class K8sOpts(StructuredOpts):
        ...     context: str = "default"
        ...     """kubeconfig context to use"""
        >>> @dataclass
        ... class Opts(StructuredOpts):
        ...     queue: str
        ...     """queue to submit to"""
        ...     k8s: K8sOpts | None = None
        >>> print(Opts.as_runopts())
            queue          str  (required)          queue to submit to
            k8s.context    str  (default: default)  kubeconfig context to use
        '''
        opts = runopts()
        docs = cls.get_docstrings()
        for f in _fields(cls):
            if _is_nested(f.type):
                nested: type[StructuredOpts] = _optional_inner(f.type)
                opts.update(nested.as_runopts(prefix=f"{prefix}{f.name}."))
                continue
            key = f"{prefix}{f.name}"
            camel = f"{prefix}{_snake_to_camel(f.name)}"
            required = f.default is _MISSING
            opts.add(
                key,
                type_=_optional_inner(f.type),
                help=docs.get(f.name, f.name),
                default=None if required else f.default,
                required=required,
                aliases=[camel] if camel != key else None,
            )
        return opts

    @classmethod
    def from_cfg(cls: type[_T], cfg: Mapping[str, CfgVal], prefix: str = "") -> _T:
        """Create an instance from a raw config dict.

        Fields are snake_case but also accept camelCase aliases (``hpcIdentity`` sets
        ``hpc_identity``). Nested StructuredOpts fields are rebuilt from dot-prefixed
        keys (``k8s.context``). A required field missing from ``cfg`` raises
        :class:`~torchx.specs.errors.InvalidRunConfigException`.
        """
        kwargs: dict[str, Any] = {}
        for f in _fields(cls):
            if _is_nested(f.type):
                nested: type[StructuredOpts] = _optional_inner(f.type)
                sub_prefixes = (f"{prefix}{f.name}.", f"{prefix}{_snake_to_camel(f.name)}.")
                if any(k.startswith(sub_prefixes) for k in cfg):
                    sub = {
                        k.replace(sub_prefixes[1], sub_prefixes[0], 1): v
                        for k, v in cfg.items()
                        if k.startswith(sub_prefixes)
                    }
                    kwargs[f.name] = nested.from_cfg(sub, prefix=sub_prefixes[0])
                continue
            for key in (f"{prefix}{f.name}", f"{prefix}{_snake_to_camel(f.name)}"):
                # None means "not set" (resolve() fills it in for options without a
                # default): let the field's own default or factory apply.
                if cfg.get(key) is not None:
                    kwargs[f.name] = cfg[key]
                    break
            else:
                if f.default is _MISSING:
                    raise InvalidRunConfigException(
                        f"required run option '{prefix}{f.name}' is missing"
                    )
        return cls(**kwargs)

    # -- the mapping protocol, for code written against plain cfg dicts ----------------------

    def _key(self, key: str) -> str | None:
        names = [f.name for f in _fields(type(self))]
        if key in names:
            return key
        for name in names:
            if _snake_to_camel(name) == key:
                return name
        return None

    def get(self, key: str, default: _D | None = None) -> Any:
        """The value of ``key`` (or its camelCase alias), or ``default`` when unset or None."""
        name = self._key(key)
        if name is None:
            return default
        value = getattr(self, name)
        return default if value is None else value

    def __getitem__(self, key: str) -> Any:
        name = self._key(key)
        if name is None:
            raise KeyError(key)
        return getattr(self, name)

    def __len__(self) -> int:
        return len(_fields(type(self)))

    def __iter__(self) -> Iterator[str]:
        return iter([f.name for f in _fields(type(self))])

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._key(key) is not None

    def __or__(self, other: StructuredOpts) -> dict[str, Any]:
        """Merge two instances into one cfg dict (``other`` wins on a shared key)."""
        merged: dict[str, Any] = {k: self[k] for k in self}
        merged.update({k: other[k] for k in other})
        return merged
