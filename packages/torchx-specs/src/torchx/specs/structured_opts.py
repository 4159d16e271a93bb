"""Typed scheduler options: one class declares every run option, with its check, alias and help.

A scheduler declares its run options once, as the fields of a :class:`StructuredOpts`
subclass (a ``@dataclass``, or an attrs class), and everything reads that one class:

* :meth:`~torchx.specs.StructuredOpts.as_runopts`: the schema, :class:`~torchx.specs.runopts`
  (``Scheduler.run_opts()``, ``torchx runopts``, the docs tables, ``.torchxconfig``);
* :meth:`~torchx.specs.StructuredOpts.from_cfg`: a resolved cfg as a typed instance, each value
  checked (what a submission reads);
* :meth:`~torchx.specs.StructuredOpts.given`: only the options a cfg gives, checked the same way
  (what ``list`` reads: it must not get a submission's defaults).

A field is one option. Its annotation is the option's type (``str``, ``int``,
``float``, ``bool``, ``list[str]`` or ``dict[str, str]``, optionally ``| None``), its
default the option's default (no default: the option is required), and its help is
``opt(help=...)`` or else the string literal right below the field (either quote
style). :func:`opt` declares the rest, each where the field is:

* ``name``: the option's name when it is no Python name (``mail-user``);
* ``aliases``: other names it is read by (its camelCase spelling always is);
* ``check``: a function given the value (never None) that returns it, or its normal
  form, in the option's own type, or raises a one-line
  :class:`~torchx.specs.errors.InvalidRunConfigException` naming the option, the value
  and what would be right. A check is idempotent: given its own result it returns it
  unchanged. Conversions to richer types (bytes from ``2g``) are properties or methods
  of the class, so the instance still reads as a valid cfg; checks across fields go in
  the dataclass's ``__post_init__``;
* ``secret``: the value is left out of the instance's ``repr``;
* ``default=[]`` or ``{}``: a list or dict default is copied for each instance.

>>> from dataclasses import dataclass
>>> from torchx.specs import InvalidRunConfigException
>>> from torchx.specs.structured_opts import StructuredOpts, opt
>>> def check_queue(value: str) -> str:
...     if not value.isidentifier():
...         raise InvalidRunConfigException(f"run option 'queue'={value!r} is not a queue name")
...     return value
>>> @dataclass(frozen=True, kw_only=True)
... class MyOpts(StructuredOpts):
...     queue: str = opt(required=True, help="the queue to submit to", check=check_queue)
...     mail_user: str | None = opt(name="mail-user", help="who gets mail")
...     num_retries: int = opt(3, help="retries of a failed job")
...     tags: list[str] = opt([], help="tags of the job")
>>> print(MyOpts.as_runopts())
    queue          str        (required)     the queue to submit to
    mail-user      str                       who gets mail
    num_retries    int        (default: 3)   retries of a failed job
    tags           list[str]  (default: [])  tags of the job
>>> opts = MyOpts.from_cfg(MyOpts.as_runopts().resolve({"queue": "gpu", "numRetries": 1}))
>>> opts.queue, opts.num_retries, opts["mail-user"], opts.tags
('gpu', 1, None, [])
>>> MyOpts.given({"queue": "gpu queue"})
Traceback (most recent call last):
 ...
torchx.specs.errors.InvalidRunConfigException: run option 'queue'='gpu queue' is not a queue name

An instance is a read-only mapping of option names to values, so it goes wherever a
cfg does (``Scheduler._submit_dryrun`` gets one). A scheduler names its class once,
``opts_class = MyOpts`` on its :class:`~torchx.schedulers.contract.api.Scheduler`, and reads
``MyOpts.of(cfg)``. A bare field (no :func:`opt`) lists its camelCase spelling among
its aliases, as upstream TorchX's ``StructuredOpts`` does; nested ``StructuredOpts``
fields are flattened with dotted keys (``k8s.context``). ``torchx.schedulers.contract.api``
re-exports this class, as upstream TorchX does.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin

from torchx.specs.errors import InvalidRunConfigException
from torchx.specs.options import CfgVal, runopt, runopts

_T = TypeVar("_T", bound="StructuredOpts")
_D = TypeVar("_D")
_MISSING: Any = object()
#: the key of an option's :class:`OptSpec` in a dataclass or attrs field's metadata
METADATA_KEY = "torchx.opt"


def _snake_to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


class OptSpec:
    """What :func:`opt` records of one option beyond its type and default."""

    __slots__ = ("aliases", "check", "default", "help", "name", "secret")

    def __init__(
        self,
        *,
        help: str | None,
        name: str | None,
        aliases: Sequence[str],
        check: Callable[[Any], Any] | None,
        secret: bool,
        default: Any,
    ) -> None:
        self.help = help
        self.name = name
        self.aliases = list(aliases)
        self.check = check
        self.secret = secret
        self.default = default  # as declared ([] stays [], not the factory)


def opt(
    default: Any = None,
    *,
    help: str | None = None,
    name: str | None = None,
    aliases: Sequence[str] = (),
    check: Callable[[Any], Any] | None = None,
    secret: bool = False,
    required: bool = False,
) -> Any:
    """A dataclass field declaring one run option (see the module docstring).

    ``default`` is the option's default (None: no default); ``required=True`` makes it
    a required option (no default; declare the class ``kw_only`` so that it may follow
    fields with defaults). A list or dict default is copied for each instance. For an
    attrs class, give ``metadata={METADATA_KEY: OptSpec(...)}`` to ``attrs.field``.
    """
    import dataclasses

    if required and default is not None:
        raise ValueError(f"run option {name or ''!r}: a required option has no default")
    spec = OptSpec(
        help=help, name=name, aliases=aliases, check=check, secret=secret, default=default
    )
    metadata = {METADATA_KEY: spec}
    if required:
        return dataclasses.field(metadata=metadata, repr=not secret)
    if isinstance(default, list | dict):
        import copy

        return dataclasses.field(
            default_factory=lambda: copy.deepcopy(default), metadata=metadata, repr=not secret
        )
    return dataclasses.field(default=default, metadata=metadata, repr=not secret)


class _Field:
    """One option of a class: read once per class from its fields (see :func:`_fields`)."""

    __slots__ = ("aliases", "check", "default", "help", "key", "keys", "name", "type")

    def __init__(self, name: str, type_: Any, default: Any, spec: OptSpec | None) -> None:
        self.name = name  # the Python attribute
        self.type = type_
        self.default = default  # _MISSING when required; None when built by a factory
        self.key = spec.name if spec is not None and spec.name else name  # the option's name
        self.help = spec.help if spec is not None else None
        self.check = spec.check if spec is not None else None
        # listed aliases: what opt() names; a bare field lists its camelCase spelling
        camel = _snake_to_camel(name)
        if spec is not None:
            self.aliases: list[str] | None = spec.aliases or None
        else:
            self.aliases = [camel] if camel != name else None
        # every name the option is read by, the option's own first
        self.keys = tuple(dict.fromkeys([self.key, name, camel, *(self.aliases or ())]))


def _fields(cls: type) -> list[_Field]:
    """The options of a dataclass or attrs class, read once per class (and cached on it)."""
    cached: list[_Field] | None = cls.__dict__.get("_torchx_fields")
    if cached is None:
        cached = _read_fields(cls)
        cls._torchx_fields = cached  # type: ignore[attr-defined]
    return cached


#: The annotations of most options, as written (spaces removed), read without ``eval``:
#: a scheduler's first ``run_opts()`` is on every ``torchx run``'s path.
_PLAIN_TYPES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list[str]": list[str],
    "dict[str,str]": dict[str, str],
}


def _plain_hints(cls: type) -> dict[str, Any] | None:
    """The fields' types when every annotation is a plain option type (or one ``| None``).

    None when any is something else (a nested class, a name to look up): then
    :func:`typing.get_type_hints` reads them all.
    """
    import inspect
    from typing import Optional

    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if klass is StructuredOpts or not isinstance(klass, type):
            continue
        for name, annotation in inspect.get_annotations(klass).items():
            text = annotation.replace(" ", "") if isinstance(annotation, str) else None
            if text is None:
                return None
            optional = text.endswith("|None")
            tp = _PLAIN_TYPES.get(text[:-5] if optional else text)
            if tp is None:
                return None
            hints[name] = Optional[tp] if optional else tp  # noqa: UP045 (a typing.Union)
    return hints


def _read_fields(cls: type) -> list[_Field]:
    import dataclasses

    hints = _plain_hints(cls)
    if hints is None:
        from typing import get_type_hints

        try:
            hints = get_type_hints(cls)
        except NameError:
            # A class declared inside a function (or a doctest) with postponed annotations
            # names types that live in its caller's scope: look them up there.
            hints = get_type_hints(cls, localns=_caller_namespace())
    if dataclasses.is_dataclass(cls):
        out = []
        for f in dataclasses.fields(cls):
            spec = f.metadata.get(METADATA_KEY)
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = spec.default if spec is not None else None
            else:
                default = _MISSING
            out.append(_Field(f.name, hints.get(f.name, str), default, spec))
        return out
    import attrs

    if attrs.has(cls):
        out = []
        for a in attrs.fields(cls):
            spec = a.metadata.get(METADATA_KEY)
            if isinstance(a.default, attrs.Factory):  # type: ignore[arg-type]
                default = spec.default if spec is not None else None
            elif a.default is attrs.NOTHING:
                default = _MISSING
            else:
                default = a.default
            out.append(_Field(a.name, hints.get(a.name, a.type or str), default, spec))
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


def _checked(f: _Field, value: Any) -> Any:
    return value if f.check is None else f.check(value)


class StructuredOpts(Mapping[str, Any]):
    """Base class for typed scheduler configuration options.

    Subclasses are ``@dataclass`` (or attrs) classes whose fields are the options.
    Instances are read-only mappings of option names to values (``opts["mail-user"]``,
    ``opts.get``, ``in``, ``dict(opts)``; camelCase spellings and aliases are read
    too), so an instance goes wherever a cfg does, and ``a | b`` merges two instances
    into one cfg dict.

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
        # even where inspect.getsource cannot find the class (doctests, the REPL). The
        # class statement is the first frame outside the metaclass (abc's __new__).
        import sys

        super().__init_subclass__(**kwargs)
        frame = sys._getframe(1)
        while frame.f_back is not None and frame.f_code.co_name == "__new__":
            frame = frame.f_back
        cls._torchx_source_at = (frame.f_code.co_filename, frame.f_lineno)

    @staticmethod
    def snake_to_camel(name: str) -> str:
        """Convert snake_case to camelCase: ``hpc_identity`` -> ``hpcIdentity``."""
        return _snake_to_camel(name)

    @classmethod
    def get_docstrings(cls) -> dict[str, str]:
        """Help text per field: the string literal right below each field's declaration.

        Read from the class source with :mod:`ast`, so either quote style works;
        inherited fields take their help from the class that declares them. Only
        fields without ``opt(help=...)`` need it (reading the source costs milliseconds).
        """
        import ast
        import inspect
        import textwrap

        docs: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            if not (isinstance(klass, type) and issubclass(klass, StructuredOpts)):
                continue
            if klass is StructuredOpts:
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
        '''Build :class:`~torchx.specs.runopts` from the fields, in their order.

        Built once per class; each call returns a copy the caller may change. Nested
        StructuredOpts fields are flattened with dot-prefixed keys (a field
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
        cache: dict[str, runopts] | None = cls.__dict__.get("_torchx_runopts")
        if cache is None:
            cache = {}
            cls._torchx_runopts = cache  # type: ignore[attr-defined]
        built = cache.get(prefix)
        if built is None:
            built = cache[prefix] = cls._build_runopts(prefix)
        out = runopts()
        out.update(built)
        out._opts = {
            name: runopt(o.default, o.opt_type, o.is_required, o.help, o.aliases, name=o.name)
            for name, o in built._opts.items()
        }
        return out

    @classmethod
    def _build_runopts(cls, prefix: str) -> runopts:
        opts = runopts()
        fields = _fields(cls)
        docs = cls.get_docstrings() if any(f.help is None for f in fields) else {}
        for f in fields:
            if _is_nested(f.type):
                nested: type[StructuredOpts] = _optional_inner(f.type)
                opts.update(nested.as_runopts(prefix=f"{prefix}{f.name}."))
                continue
            required = f.default is _MISSING
            opts.add(
                f"{prefix}{f.key}",
                type_=_optional_inner(f.type),
                help=f.help if f.help is not None else docs.get(f.name, f.name),
                default=None if required else f.default,
                required=required,
                aliases=[f"{prefix}{a}" for a in f.aliases] if f.aliases else None,
            )
        return opts

    @classmethod
    def from_cfg(cls: type[_T], cfg: Mapping[str, CfgVal], prefix: str = "") -> _T:
        """Create an instance from a cfg, each value given checked by its field's check.

        A field is read by its option's name, its Python name, its camelCase spelling
        (``hpcIdentity`` sets ``hpc_identity``) or an alias; None is "not given" (the
        field's default applies). Nested StructuredOpts fields are rebuilt from
        dot-prefixed keys (``k8s.context``). A required option missing from ``cfg``, or
        a value its check refuses, raises
        :class:`~torchx.specs.errors.InvalidRunConfigException`. Values are not
        type-checked here: give a cfg resolved by :meth:`as_runopts` (the Scheduler does).
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
            for key in f.keys:
                # None means "not set" (resolve() fills it in for options without a
                # default): let the field's own default or factory apply.
                value = cfg.get(prefix + key)
                if value is not None:
                    kwargs[f.name] = _checked(f, value)
                    break
            else:
                if f.default is _MISSING:
                    raise InvalidRunConfigException(
                        f"required run option '{prefix}{f.key}' is missing"
                    )
        return cls(**kwargs)

    @classmethod
    def of(cls: type[_T], cfg: Mapping[str, CfgVal]) -> _T:
        """``cfg`` if it is already an instance of this class (checked once), else :meth:`from_cfg`.

        What a scheduler's methods call on the cfg they are given: the Scheduler passes
        the instance it made when it resolved the options; a caller of
        ``submit_dryrun`` may pass a plain resolved dict.
        """
        return cfg if isinstance(cfg, cls) else cls.from_cfg(cfg)

    @classmethod
    def given(cls, cfg: Mapping[str, CfgVal] | None) -> dict[str, Any]:
        """The options ``cfg`` gives (not None), each checked as :meth:`from_cfg` checks it.

        Keyed by field (Python) name. No default is filled in and no required option
        asked for: what ``list(cfg)`` reads, where a submission's default (a queue)
        would narrow the listing, yet a value given is held to the same check.
        """
        out: dict[str, Any] = {}
        if not cfg:
            return out
        for f in _fields(cls):
            for key in f.keys:
                value = cfg.get(key)
                if value is not None:
                    out[f.name] = _checked(f, value)
                    break
        return out

    # -- the mapping protocol: option names to values ----------------------------------------

    def _field(self, key: str) -> _Field | None:
        for f in _fields(type(self)):
            if key in f.keys:
                return f
        return None

    def get(self, key: str, default: _D | None = None) -> Any:
        """The value of ``key`` (any of its names), or ``default`` when unknown or None."""
        f = self._field(key)
        if f is None:
            return default
        value = getattr(self, f.name)
        return default if value is None else value

    def __getitem__(self, key: str) -> Any:
        f = self._field(key)
        if f is None:
            raise KeyError(key)
        return getattr(self, f.name)

    def __len__(self) -> int:
        return len(_fields(type(self)))

    def __iter__(self) -> Iterator[str]:
        return iter([f.key for f in _fields(type(self))])

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._field(key) is not None

    def __or__(self, other: StructuredOpts) -> dict[str, Any]:
        """Merge two instances into one cfg dict (``other`` wins on a shared key)."""
        merged: dict[str, Any] = {k: self[k] for k in self}
        merged.update({k: other[k] for k in other})
        return merged
