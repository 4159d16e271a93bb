"""Run options: the typed schema of a scheduler's configuration (its ``--help`` for ``run``).

A scheduler describes what it accepts with a :class:`runopts`; users give values as
a ``cfg`` dict (``{"queue": "gpu", "priority": 1}``), as a string on the command
line (``-cfg queue=gpu,priority=1``) or in ``.torchxconfig``. This module parses
and validates those values:

* :meth:`runopts.cfg_from_str` turns the command-line string into typed values
  (unknown keys are dropped, or rejected with ``strict=True``);
* :meth:`runopts.resolve` checks a cfg against the schema and fills defaults.

The text forms (the ``-cfg`` string, its JSON form, the table ``torchx runopts``
prints) are read and written by :mod:`torchx.specs.options_text`, which the methods
``cfg_from_str``, ``cfg_from_json_repr``, ``cfg_to_str`` and ``str()`` call.

>>> opts = runopts()
>>> opts.add("cluster_id", type_=int, help="cluster to submit the job", required=True)
>>> opts.add("priority", type_=float, default=0.5, help="job priority")
>>> opts.add("preemptible", type_=bool, default=False, help="is the job preemptible")
>>> opts.add("tags", type_=list[str], default=[], help="job tags", aliases=["labels"])
>>> opts.cfg_from_str("cluster_id=3,preemptible=yes,tags=a,b")
{'cluster_id': 3, 'preemptible': True, 'tags': ['a', 'b']}
>>> opts.resolve({"clusterId": 3})
{'cluster_id': 3, 'priority': 0.5, 'preemptible': False, 'tags': []}
>>> opts.resolve({})
Traceback (most recent call last):
 ...
torchx.specs.errors.InvalidRunConfigException: required run option 'cluster_id' (int) is missing: cluster to submit the job
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from typing import Any, Union, get_args, get_origin

from torchx.specs._option_types import is_dict_type, is_list_type
from torchx.specs._option_types import type_name as type_name  # public here (config_writing)
from torchx.specs.errors import InvalidRunConfigException, did_you_mean

#: Type of a run config value.
CfgVal = Union[str, int, float, bool, list[str], dict[str, str], None]  # noqa: UP007

_TRUE = frozenset({"true", "1", "yes", "on", "y", "t"})
_FALSE = frozenset({"false", "0", "no", "off", "n", "f"})


def _camel_to_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def _snake_to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def get_type_name(tp: Any) -> str:
    """The name upstream TorchX prints for a type: ``__name__`` for a class, else ``str()``.

    Unlike :func:`type_name` it spells ``typing`` generics as Python does, as
    upstream's ``torchx.specs.get_type_name`` did.

    >>> from typing import List
    >>> get_type_name(int), get_type_name(List[str])
    ('int', 'typing.List[str]')
    """
    if getattr(tp, "__module__", None) != "typing" and hasattr(tp, "__name__"):
        return str(tp.__name__)
    return str(tp)


def _split_items(value: str) -> list[str]:
    return [item.strip() for item in re.split(r"[,;]", value) if item.strip()]


class runopt:
    """Metadata for a single scheduler run option.

    Args:
        default: value used when the option is not given (None for no default)
        opt_type: one of ``str``, ``int``, ``float``, ``bool``, ``list[str]``, ``dict[str, str]``
        is_required: whether a value must be given (required options have no default)
        help: one line describing the option
        aliases: other accepted names (camelCase names are always accepted)
    """

    __slots__ = ("aliases", "default", "help", "is_required", "name", "opt_type")

    def __init__(
        self,
        default: CfgVal,
        opt_type: Any,
        is_required: bool,
        help: str,
        aliases: list[str] | None = None,
        name: str = "",
    ) -> None:
        self.default = default
        self.opt_type = opt_type
        self.is_required = is_required
        self.help = help
        self.aliases = list(aliases or [])
        self.name = name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, runopt):
            return NotImplemented
        return (self.default, self.opt_type, self.is_required, self.help, self.aliases) == (
            other.default,
            other.opt_type,
            other.is_required,
            other.help,
            other.aliases,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"runopt(default={self.default!r}, opt_type={type_name(self.opt_type)}, "
            f"is_required={self.is_required}, help={self.help!r})"
        )

    @property
    def is_type_list_of_str(self) -> bool:
        return is_list_type(self.opt_type)

    @property
    def is_type_dict_of_str(self) -> bool:
        return is_dict_type(self.opt_type)

    def cast_to_type(self, value: str) -> CfgVal:
        """Casts ``value`` (its string form) to this option's type.

        * ``str``: as is; ``int``/``float``: parsed (an int is accepted for a float)
        * ``bool``: true/false, 1/0, yes/no, on/off in any case; anything else is an error
        * ``list[str]``: ``"a,b,c"`` or ``"a;b;c"`` gives ``["a", "b", "c"]``
        * ``dict[str, str]``: ``"a:1,b:2"`` or ``"a:1;b:2"`` gives ``{"a": "1", "b": "2"}``
          (``:`` separates key and value because ``=`` separates the options themselves)

        Raises :class:`~torchx.specs.errors.InvalidRunConfigException` naming the value.

        >>> runopt(None, dict[str, str], False, "labels").cast_to_type("team:ml;env:prod")
        {'team': 'ml', 'env': 'prod'}
        >>> runopt(None, bool, False, "flag").cast_to_type("maybe")
        Traceback (most recent call last):
         ...
        torchx.specs.errors.InvalidRunConfigException: run option 'flag' expects a bool (true/false, yes/no, on/off, 1/0), got 'maybe'
        """
        label = f"run option '{self.name or self.help}'"
        tp = self.opt_type
        if not isinstance(value, str):
            if runopts.is_type(value, tp):
                return value
            raise InvalidRunConfigException(
                f"{label} expects {type_name(tp)} given as a string, got {value!r}"
            )
        if tp is str:
            return value
        if tp is bool:
            low = value.strip().lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise InvalidRunConfigException(
                f"{label} expects a bool (true/false, yes/no, on/off, 1/0), got {value!r}"
            )
        if tp is int:
            try:
                return int(value.strip())
            except ValueError:
                raise InvalidRunConfigException(
                    f"{label} expects an int (e.g. 3), got {value!r}"
                ) from None
        if tp is float:
            try:
                return float(value.strip())
            except ValueError:
                raise InvalidRunConfigException(
                    f"{label} expects a float (e.g. 0.5), got {value!r}"
                ) from None
        if is_list_type(tp):
            return _split_items(value)
        if is_dict_type(tp):
            out: dict[str, str] = {}
            for item in _split_items(value):
                key, sep, val = item.partition(":")
                if not sep or not key.strip():
                    raise InvalidRunConfigException(
                        f"{label} expects KEY:VALUE pairs separated by ',' or ';' "
                        f"(e.g. a:1,b:2), got {item!r} in {value!r}"
                    )
                out[key.strip()] = val.strip()
            return out
        raise InvalidRunConfigException(f"{label} has unsupported type {type_name(tp)}")


_SUPPORTED_TYPES = "str, int, float, bool, list[str] or dict[str, str]"


def _check_type(tp: Any, key: str) -> None:
    if tp in (str, int, float, bool) or is_list_type(tp) or is_dict_type(tp):
        return
    if get_origin(tp) is Union:
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            _check_type(args[0], key)
            return
    raise ValueError(f"run option {key!r}: unsupported type {tp!r}; use {_SUPPORTED_TYPES}")


def _strip_optional(tp: Any) -> Any:
    if get_origin(tp) is Union:
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


class runopts:
    """Schema for scheduler run configuration: accepted keys, types, defaults and help.

    Built by ``Scheduler.run_opts()`` and used to validate a cfg before submitting.
    Names are snake_case; the camelCase spelling of each name and any registered
    aliases are accepted wherever a key is read.

    >>> opts = runopts()
    >>> opts.add("cluster_id", type_=int, help="cluster to submit the job", required=True)
    >>> opts.add("priority", type_=float, default=0.5, help="job priority")
    >>> print(opts)
        cluster_id    int    (required)      cluster to submit the job
        priority      float  (default: 0.5)  job priority
    """

    def __init__(self) -> None:
        self._opts: dict[str, runopt] = {}
        self._aliases: dict[str, str] = {}

    # -- building ---------------------------------------------------------------------------

    def add(
        self,
        cfg_key: str,
        type_: Any,
        help: str,
        default: CfgVal = None,
        required: bool = False,
        aliases: list[str] | None = None,
    ) -> None:
        """Registers a config option. Required options must not have a default.

        ``aliases`` are extra accepted names; the camelCase form is always accepted.
        """
        _check_type(type_, cfg_key)
        type_ = _strip_optional(type_)
        if is_dict_type(type_) and isinstance(default, list) and not default:
            default = {}  # upstream took an empty list as an empty mapping
        if required and default is not None:
            raise ValueError(f"run option {cfg_key!r} is required, so it must not have a default")
        if default is not None and not runopts.is_type(default, type_):
            raise TypeError(
                f"run option {cfg_key!r}: default {default!r} is not of type {type_name(type_)}"
            )
        opt = runopt(default, type_, required, help, aliases, name=cfg_key)
        self._opts[cfg_key] = opt
        for alias in [*opt.aliases, _snake_to_camel(cfg_key)]:
            if alias != cfg_key:
                self._aliases[alias] = cfg_key

    def update(self, other: runopts) -> None:
        """Adds every option of ``other`` (its options win on a name clash)."""
        self._opts.update(other._opts)
        self._aliases.update(other._aliases)

    def __or__(self, other: runopts) -> runopts:
        """A new runopts with the options of both (``other`` wins on a clash)."""
        merged = runopts()
        merged.update(self)
        merged.update(other)
        return merged

    # -- reading ----------------------------------------------------------------------------

    def canonical_name(self, name: str) -> str | None:
        """The registered name for ``name`` (itself, an alias, or its camelCase form), or None."""
        if name in self._opts:
            return name
        if name in self._aliases:
            return self._aliases[name]
        snake = _camel_to_snake(name)
        return snake if snake in self._opts else None

    def get(self, name: str) -> runopt | None:
        """Returns the registered option, or None. Accepts aliases and camelCase names."""
        key = self.canonical_name(name)
        return self._opts[key] if key is not None else None

    def __iter__(self) -> Iterator[tuple[str, runopt]]:
        return iter(self._opts.items())

    def __len__(self) -> int:
        return len(self._opts)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.canonical_name(name) is not None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, runopts) and self._opts == other._opts

    __hash__ = None  # type: ignore[assignment]

    def _unknown(self, key: str, where: str = "") -> InvalidRunConfigException:
        names = list(self._opts)
        known = ", ".join(names) if names else "none"
        return InvalidRunConfigException(
            f"unknown run option {key!r}{where}{did_you_mean(key, names)}; valid options: {known}"
        )

    @staticmethod
    def is_type(obj: CfgVal, tp: Any) -> bool:
        """Like :func:`isinstance` but understands ``list[str]`` and ``dict[str, str]``.

        ``bool`` is not accepted where an ``int`` or ``float`` is expected; an ``int``
        is accepted where a ``float`` is expected.

        >>> runopts.is_type(["a", "b"], list[str]), runopts.is_type(["a", 1], list[str])
        (True, False)
        """
        tp = _strip_optional(tp)
        if is_list_type(tp):
            return isinstance(obj, list) and all(isinstance(v, str) for v in obj)
        if is_dict_type(tp):
            return isinstance(obj, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in obj.items()
            )
        if tp in (int, float) and isinstance(obj, bool):
            return False
        if tp is float and isinstance(obj, int):
            return True
        return isinstance(tp, type) and isinstance(obj, tp)

    def resolve(
        self, cfg: Mapping[str, CfgVal], *, strict: bool = False, fill_defaults: bool = True
    ) -> dict[str, CfgVal]:
        """Validates ``cfg`` against the registered options and fills in defaults.

        Keys may be aliases or camelCase; the result uses the registered names. Raises
        :class:`~torchx.specs.errors.InvalidRunConfigException` for a missing required
        option or a value of the wrong type. Unknown keys are passed through as they
        are, unless ``strict`` is set, in which case the first one is an error naming
        the nearest valid key. ``cfg`` itself is never modified.

        ``fill_defaults=False`` checks only the options given: nothing is added and a
        missing required option is no error. That is what a call that is not a
        submission wants (``Runner.list`` of a queue): a default meant for submitting
        would narrow it, and an option only a submission needs is not asked for.

        >>> opts = runopts()
        >>> opts.add("queue", type_=str, required=True, help="the queue")
        >>> opts.add("priority", type_=int, default=0, help="job priority")
        >>> opts.resolve({"priority": 2}, fill_defaults=False)
        {'priority': 2}
        """
        resolved: dict[str, CfgVal] = {}
        for key, value in cfg.items():
            name = self.canonical_name(key)
            if name is None:
                if strict:
                    raise self._unknown(key)
                resolved[key] = value
                continue
            if name in resolved and key != name:
                continue  # the canonical spelling wins over an alias given too
            resolved[name] = value
        for name, opt in self._opts.items():
            value = resolved.get(name)
            if value is None:
                if not fill_defaults:
                    resolved.pop(name, None)  # None is "not given"
                    continue
                if opt.is_required:
                    raise InvalidRunConfigException(
                        f"required run option '{name}' ({type_name(opt.opt_type)}) is missing: "
                        f"{opt.help}"
                    )
                resolved[name] = copy.deepcopy(opt.default)
            elif not runopts.is_type(value, opt.opt_type):
                raise InvalidRunConfigException(
                    f"run option '{name}' expects {type_name(opt.opt_type)}, "
                    f"got {value!r} ({type(value).__name__})"
                )
            elif opt.opt_type is float and isinstance(value, int):
                resolved[name] = float(value)
        return resolved

    def cfg_from_str(self, cfg_str: str, *, strict: bool = False) -> dict[str, CfgVal]:
        """Parses a cfg string such as ``"queue=gpu,priority=1"`` into typed values.

        Pairs are ``KEY=VALUE`` separated by ``,`` or ``;``. Because list values use
        the same delimiters, the delimiter right before a ``KEY=`` starts the next pair
        and every other one belongs to the value. Defaults and required options are
        not checked here (call :meth:`resolve` for that). Unknown keys are dropped,
        as upstream does; with ``strict=True`` an unknown key is an error naming the
        nearest valid one. An empty string gives an empty cfg.

        >>> opts = runopts()
        >>> opts.add("FOO", type_=list[str], default=["a"], help="an optional list option")
        >>> opts.add("BAR", type_=str, required=True, help="a required str option")
        >>> opts.cfg_from_str("")
        {}
        >>> opts.cfg_from_str("UNKNOWN=VALUE")
        {}
        >>> opts.cfg_from_str("FOO=v1;v2;BAR=v3")
        {'FOO': ['v1', 'v2'], 'BAR': 'v3'}
        >>> opts.cfg_from_str("FOO=v1,v2,BAR=v3")
        {'FOO': ['v1', 'v2'], 'BAR': 'v3'}
        >>> opts.cfg_from_str("BOR=v3", strict=True)
        Traceback (most recent call last):
         ...
        torchx.specs.errors.InvalidRunConfigException: unknown run option 'BOR' in 'BOR=v3' (did you mean 'BAR'?); valid options: FOO, BAR
        """
        from torchx.specs.options_text import cfg_from_str

        return cfg_from_str(self, cfg_str, strict=strict)

    def cfg_from_json_repr(self, json_repr: str) -> dict[str, CfgVal]:
        """Converts a JSON object (as text) into a cfg of this runopts' types.

        Values already of the right type are kept; strings are cast as in
        :meth:`cfg_from_str`. Unknown keys are kept as they are.

        >>> opts = runopts()
        >>> opts.add("n", type_=int, help="count")
        >>> opts.cfg_from_json_repr('{"n": "3", "other": [1]}')
        {'n': 3, 'other': [1]}
        """
        from torchx.specs.options_text import cfg_from_json_repr

        return cfg_from_json_repr(self, json_repr)

    def cfg_to_str(self, cfg: Mapping[str, CfgVal]) -> str:
        """Renders a cfg back into the string form :meth:`cfg_from_str` reads.

        >>> opts = runopts()
        >>> opts.add("tags", type_=list[str], help="tags")
        >>> opts.add("env", type_=dict[str, str], help="env")
        >>> opts.cfg_to_str({"tags": ["a", "b"], "env": {"k": "v"}})
        'tags=a,b,env=k:v'
        """
        from torchx.specs.options_text import cfg_to_str

        return cfg_to_str(cfg)

    # -- printing ---------------------------------------------------------------------------

    def __repr__(self) -> str:
        """The table ``torchx runopts`` prints (:func:`torchx.specs.options_text.table`)."""
        from torchx.specs.options_text import table

        return table(self)

    __str__ = __repr__
