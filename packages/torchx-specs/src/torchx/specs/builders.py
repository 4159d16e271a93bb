"""From a component's command line to its AppDef: the parser built from its signature.

A *component* is a function returning an :class:`~torchx.specs.AppDef`;
``torchx run COMPONENT ARGS`` ends here: :func:`materialize_appdef` parses
``ARGS`` against the component function's signature and calls the function.
:func:`component_parser` gives the same parser, for help and usage, and
:func:`parse_args` the parsed values. This module is upstream TorchX's
``torchx.specs.builders``, so its documented calls work unchanged
(``materialize_appdef(fn, args, cmpnt_defaults, config)``, ``parse_args``,
``make_app_handle``, ``parse_mounts``).

>>> from torchx.specs import AppDef, Role
>>> def echo(msg: str = "hello", num_replicas: int = 1) -> AppDef:
...     \"\"\"Echoes a message.\"\"\"
...     return AppDef("echo", [Role("echo", image=".", entrypoint="/bin/echo", args=[msg],
...                                 num_replicas=num_replicas)])
>>> app = materialize_appdef(echo, ["--msg", "hi", "--num_replicas", "2"])
>>> app.roles[0].args, app.roles[0].num_replicas
(['hi'], 2)

The rules, shared with upstream TorchX so that its components parse the same:

* each parameter is an option ``--name`` (the exact parameter name, underscores
  kept); a one-letter parameter is also ``-x``. There is no ``-h`` for help (it
  is often a parameter: the named resource): help is ``--help``;
* a parameter without a default is a required option;
* values are converted by the annotation: ``str``, ``int``, ``float``;
  ``bool`` from ``true``/``false`` (also ``1/0``, ``yes/no``, ``on/off``; a bare
  ``--flag`` means true); ``list[X]`` from ``a,b,c``; ``dict[K, V]`` from
  ``k1=v1,k2=v2`` (``;`` also separates pairs, and a value may hold a list:
  ``PATHS=a,b,MODE=fast`` gives ``{"PATHS": "a,b", "MODE": "fast"}``);
  ``dict[K, list[X]]`` splits each value at ``,`` (``PATHS=a,b,MODE=fast`` gives
  ``{"PATHS": ["a", "b"], "MODE": ["fast"]}``); ``Optional[X]`` and ``X | None``
  as ``X``. A parameter without annotation is a string;
* ``*args`` takes the rest of the command line from the first argument that is
  not an option; arguments after ``--`` are never options, so
  ``--script main.py -- --lr 0.1`` passes ``--lr 0.1`` to the program;
* ``defaults`` (the ``[component:NAME]`` section of ``.torchxconfig``: strings)
  replace the function's defaults; they are converted like command line values
  (a value that is not a string, such as a list, is used as given), and a name the
  component does not take is ignored, as upstream's (an error with
  ``strict_defaults=True``, as ``torchx run`` reads them).

Every mistake raises :class:`~torchx.specs.errors.ComponentArgError`, a
one-line message with the component's usage in ``.usage``; ``--help`` raises
:class:`~torchx.specs.errors.ComponentHelpRequested` carrying the help text.
Nothing is printed and nothing exits: the caller decides.

>>> materialize_appdef(echo, ["--num_replicas", "two"], prog="utils.echo")
Traceback (most recent call last):
 ...
torchx.specs.errors.ComponentArgError: utils.echo: argument --num_replicas: expected an integer, got 'two'

Parsers are built once per function, defaults and prog, then reused.
"""

from __future__ import annotations

import argparse
import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NoReturn

from torchx.specs.api import AppDef
from torchx.specs.errors import (
    ComponentArgError,
    ComponentDefaultError,
    ComponentHelpRequested,
    ComponentLoadError,
    ComponentRaisedError,
    SpecError,
)
from torchx.specs.handles import make_app_handle
from torchx.specs.help_formatter import HelpFormatter
from torchx.specs.mounts import parse_mounts
from torchx.specs.param_types import SUPPORTED, ParamType, type_of_annotation

__all__ = [
    "ParamType",
    "component_parser",
    "make_app_handle",
    "materialize_appdef",
    "param_types",
    "parse_args",
    "parse_mounts",
]


# ------------------------------------------------------------------ the spec


class _Param:
    """One parameter: how to parse it and how to pass it (private, built once per function)."""

    __slots__ = ("default", "help", "is_vararg", "kind", "name", "option", "type")

    def __init__(self, name: str, kind: Any, ptype: ParamType, default: Any, help: str) -> None:
        self.name = name
        self.kind = kind
        self.type = ptype
        self.default = default  # inspect.Parameter.empty when required
        self.help = help
        self.is_vararg = kind is inspect.Parameter.VAR_POSITIONAL
        self.option = name if self.is_vararg else f"-{name}" if len(name) == 1 else f"--{name}"


class _Spec:
    """A component function's parameters and how to call it (private)."""

    __slots__ = ("by_name", "description", "fn_name", "params", "positional", "vararg")

    def __init__(self, fn_name: str, description: str, params: tuple[_Param, ...]) -> None:
        self.fn_name = fn_name
        self.description = description
        self.params = params
        self.by_name: Mapping[str, _Param] = {p.name: p for p in params}
        self.vararg = next((p for p in params if p.is_vararg), None)
        # with *args (or positional-only parameters), what precedes them is passed by position
        last = max(
            (
                i
                for i, p in enumerate(params)
                if p.is_vararg or p.kind is inspect.Parameter.POSITIONAL_ONLY
            ),
            default=-1,
        )
        self.positional: tuple[_Param, ...] = tuple(
            p
            for p in params[: last + 1]
            if not p.is_vararg and p.kind is not inspect.Parameter.KEYWORD_ONLY
        )


def _fn_label(fn: Callable[..., Any]) -> str:
    module = getattr(fn, "__module__", None)
    name = str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))
    return f"{module}.{name}" if module else name


def _build_spec(fn: Callable[..., Any]) -> _Spec:
    from torchx.specs.docstrings import get_fn_docstring

    label = _fn_label(fn)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as e:
        raise ComponentLoadError(f"component {label} has no inspectable signature: {e}") from e
    description, helps = get_fn_docstring(fn)
    params: list[_Param] = []
    for p in signature.parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            raise ComponentLoadError(
                f"component {label} takes **{p.name}, which the command line cannot fill; "
                "declare each argument explicitly"
            )
        if p.annotation is inspect.Parameter.empty:
            ptype: ParamType | None = ParamType("str")
        else:
            ptype = type_of_annotation(p.annotation)
            if ptype is not None and p.kind is inspect.Parameter.VAR_POSITIONAL and ptype.items:
                ptype = None
        if ptype is None:
            shown = p.annotation if isinstance(p.annotation, str) else _show_type(p.annotation)
            star = "*" if p.kind is inspect.Parameter.VAR_POSITIONAL else ""
            raise ComponentLoadError(
                f"argument {star}{p.name} of component {label} has type {shown!r}, which "
                f"components do not support; use {SUPPORTED}"
            )
        params.append(_Param(p.name, p.kind, ptype, p.default, helps.get(p.name, p.name)))
    return _Spec(str(getattr(fn, "__name__", label)), description, tuple(params))


def _show_type(ann: Any) -> str:
    return getattr(ann, "__name__", None) or repr(ann).replace("typing.", "")


_LOCK: Final = threading.Lock()
_SPECS: dict[Callable[..., Any], _Spec] = {}
_PARSERS: dict[tuple[Any, ...], _Compiled] = {}
_MAX_CACHED: Final = 256


def _spec_for(fn: Callable[..., Any]) -> _Spec:
    spec = _SPECS.get(fn)
    if spec is None:
        spec = _build_spec(fn)
        with _LOCK:
            if len(_SPECS) >= _MAX_CACHED:
                _SPECS.clear()
            _SPECS[fn] = spec
    return spec


def param_types(fn: Callable[..., Any]) -> dict[str, ParamType]:
    """The :class:`ParamType` of each parameter of component ``fn``, by name.

    >>> from typing import Optional
    >>> def train(*script_args: str, j: str = "1x2", env: Optional[dict[str, str]] = None) -> AppDef:
    ...     ...
    >>> {k: str(v) for k, v in param_types(train).items()}
    {'script_args': 'str', 'j': 'str', 'env': 'dict[str, str] | None'}

    Raises :class:`~torchx.specs.errors.ComponentLoadError` for a parameter
    whose type components do not support.
    """
    return {p.name: p.type for p in _spec_for(fn).params}


# ------------------------------------------------------------------ the parser


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of printing and exiting."""

    def error(self, message: str) -> NoReturn:
        raise ComponentArgError(f"{self.prog}: {message}", usage=self.format_usage().strip())

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        text = (message or "").strip() or f"exit status {status}"
        raise ComponentArgError(f"{self.prog}: {text}", usage=self.format_usage().strip())


class _HelpAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(
            option_strings=option_strings,
            dest=dest,
            default=argparse.SUPPRESS,
            nargs=0,
            help="show this help message and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> NoReturn:
        raise ComponentHelpRequested(parser.format_help())


class _Compiled:
    """A component's parser with its converted config defaults (private, cached)."""

    __slots__ = ("defaults", "parser", "spec")

    def __init__(self, spec: _Spec, parser: _Parser, defaults: Mapping[str, Any]) -> None:
        self.spec = spec
        self.parser = parser
        self.defaults = defaults  # parameter -> converted default from the config


def _default_text(param: _Param, config: Mapping[str, Any]) -> str:
    if param.name in config:
        return f"(default: {config[param.name]})"
    if param.is_vararg:
        return "(any number)"
    if param.default is inspect.Parameter.empty:
        return "(required)"
    default = param.default
    if isinstance(default, bool):
        return f"(default: {str(default).lower()})"
    return f"(default: {default})"


def _convert_defaults(
    spec: _Spec,
    defaults: Mapping[str, Any],
    prog: str,
    usage: Callable[[], str],
    strict: bool,
) -> dict[str, Any]:
    from torchx.specs.errors import did_you_mean

    out: dict[str, Any] = {}
    for key, text in defaults.items():
        param = spec.by_name.get(key)
        if param is None and not strict:
            continue  # upstream's: a default the component does not take is ignored
        if param is None:
            names = [p.name for p in spec.params]
            raise ComponentDefaultError(
                f"{prog}: unknown default {key!r}{did_you_mean(key, names)}; the component "
                f"takes: {', '.join(names) or 'no arguments'}",
                key=key,
                usage=usage(),
            )
        if not isinstance(text, str):
            out[key] = text  # already typed (a list, a dict, a number): used as given
            continue
        try:
            if param.is_vararg:
                import shlex

                out[key] = [param.type.parse(v) for v in shlex.split(text)]
            else:
                out[key] = param.type.parse(text)
        except ValueError as e:
            raise ComponentDefaultError(
                f"{prog}: default for {param.option}: {e}", key=key, usage=usage()
            ) from None
    return out


def _compile(
    fn: Callable[..., Any],
    defaults: Mapping[str, Any] | None,
    prog: str | None,
    preset: frozenset[str] = frozenset(),
    strict: bool = False,
) -> _Compiled:
    # typed defaults (not strings) key the cache by their repr, kept apart from strings
    items = (
        tuple(
            sorted((str(k), v if isinstance(v, str) else (repr(v),)) for k, v in defaults.items())
        )
        if defaults
        else ()
    )
    key = (fn, items, prog, preset, strict)
    compiled = _PARSERS.get(key)
    if compiled is not None:
        return compiled
    spec = _spec_for(fn)
    config = {str(k): v for k, v in defaults.items()} if defaults else {}
    parser = _Parser(
        prog=prog or spec.fn_name,
        description=spec.description,
        add_help=False,
        allow_abbrev=False,
        formatter_class=HelpFormatter,
    )
    converted = _convert_defaults(
        spec, config, parser.prog, lambda: parser.format_usage().strip(), strict
    )
    if "help" not in spec.by_name:
        parser.add_argument("--help", action=_HelpAction)
    for param in spec.params:
        help_text = f"{param.help} {_default_text(param, config)}".replace("%", "%%")
        if param.is_vararg:
            parser.add_argument(
                param.name, nargs=argparse.REMAINDER, default=argparse.SUPPRESS, help=help_text
            )
            continue
        names = [f"-{param.name}", f"--{param.name}"] if len(param.name) == 1 else []
        names = names or [f"--{param.name}"]
        kwargs: dict[str, Any] = {"dest": param.name, "default": argparse.SUPPRESS}
        if param.type.kind == "bool":
            kwargs.update(nargs="?", const="true", metavar="{true,false}")
        required = (
            param.default is inspect.Parameter.empty
            and param.name not in converted
            and param.name not in preset
        )
        parser.add_argument(*names, required=required, help=help_text, **kwargs)
    compiled = _Compiled(spec=spec, parser=parser, defaults=converted)
    with _LOCK:
        if len(_PARSERS) >= _MAX_CACHED:
            _PARSERS.clear()
        _PARSERS[key] = compiled
    return compiled


def component_parser(
    fn: Callable[..., Any],
    defaults: Mapping[str, str] | None = None,
    prog: str | None = None,
) -> argparse.ArgumentParser:
    """The command line parser of component ``fn`` (for ``--help`` and usage).

    The parser raises :class:`~torchx.specs.errors.ComponentArgError`
    instead of exiting, and its ``--help`` raises
    :class:`~torchx.specs.errors.ComponentHelpRequested`. Parse with
    :func:`materialize_appdef`, which also converts the values; this parser's
    namespace holds the raw strings of the options given.

    >>> def touch(file: str, image: str = ".") -> AppDef:
    ...     ...
    >>> print(component_parser(touch, prog="utils.touch").format_usage().strip())
    usage: utils.touch [--help] --file FILE [--image IMAGE]

    Args:
        fn: the component function.
        defaults: parameter name to default value as a string (``.torchxconfig``).
        prog: the name shown in usage and errors (default: the function's name).
    """
    return _compile(fn, defaults, prog, strict=True).parser


# ---------------------------------------------------------------- materializing


def materialize_appdef(
    cmpnt_fn: Callable[..., Any],
    cmpnt_args: Sequence[str],
    cmpnt_defaults: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
    prog: str | None = None,
    *,
    strict_defaults: bool = False,
) -> AppDef:
    """Parses ``cmpnt_args`` for component ``cmpnt_fn``, calls it and returns its AppDef.

    Args:
        cmpnt_fn: the component function.
        cmpnt_args: the component's command line (what follows its name).
        cmpnt_defaults: parameter name to default value, replacing the function's
            defaults (the ``[component:NAME]`` section of ``.torchxconfig``): a string
            is converted as on the command line, any other value (a list, a dict) is
            used as given; a name the component does not take is ignored, as upstream's.
        config: parameter name to value (a Python object, not parsed), replacing
            what the command line gave; a parameter it names is not required on
            the command line, and names the component does not take are ignored
            (upstream's ``config``).
        prog: the name shown in usage and errors (default: the function's name).
        strict_defaults: refuse a default the component does not take (naming the
            nearest parameter) instead of ignoring it: what ``torchx run`` does, where
            the defaults come from a file the user may have mistyped.

    Returns:
        The AppDef returned by ``cmpnt_fn``.

    Raises:
        ComponentArgError: bad arguments or defaults (``.usage`` has the usage),
            including errors the component itself raises as ComponentArgError.
        ComponentHelpRequested: ``--help`` was given.
        ComponentRaisedError: ``cmpnt_fn`` raised an exception that is not a
            ``SpecError`` (the message names the component, the exception and where).
        ComponentLoadError: ``cmpnt_fn`` is not a valid component (unsupported
            parameter type, ``**kwargs``) or did not return an AppDef.
    """
    fn = cmpnt_fn
    compiled, _, args, kwargs = _parse(
        fn, cmpnt_args, cmpnt_defaults, config, prog, strict=strict_defaults
    )
    parser = compiled.parser
    try:
        app = fn(*args, **kwargs)
    except ComponentArgError as e:
        if e.usage:
            raise
        prefix = f"{parser.prog}: "
        message = str(e) if str(e).startswith(prefix) else prefix + str(e)
        raise ComponentArgError(message, usage=parser.format_usage().strip()) from e
    except SpecError:
        raise  # the project's own errors a user can fix: already one clear line
    except Exception as e:
        raise ComponentRaisedError(
            f"component {parser.prog} raised {type(e).__name__}: {e} ({_raised_at(fn, e)})"
        ) from e
    if not isinstance(app, AppDef):
        raise ComponentLoadError(
            f"component {parser.prog} returned {type(app).__name__}, not an AppDef"
        )
    return app


def _raised_at(fn: Callable[..., Any], e: BaseException) -> str:
    """``file.py:LINE`` where ``e`` was raised: the deepest frame in the component's own
    file (the line to fix there), else the deepest frame of all."""
    import os
    import traceback

    frames = traceback.extract_tb(e.__traceback__)
    code = getattr(inspect.unwrap(fn), "__code__", None)
    own = [f for f in frames if code is not None and f.filename == code.co_filename]
    frame = (own or frames)[-1]
    return f"{os.path.basename(frame.filename)}:{frame.lineno}"


def parse_args(
    cmpnt_fn: Callable[..., Any],
    cmpnt_args: Sequence[str],
    cmpnt_defaults: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> argparse.Namespace:
    """The values :func:`materialize_appdef` would call ``cmpnt_fn`` with, by name.

    Every parameter is in the namespace: given, from ``cmpnt_defaults`` or
    ``config``, or the function's own default; values are converted by the
    annotation (``--n 2`` gives ``2``) and ``*args`` is a list.

    >>> def greet(name: str, n: int = 1, *rest: str) -> AppDef:
    ...     ...
    >>> parse_args(greet, ["--name", "ada", "x", "y"])
    Namespace(name='ada', n=1, rest=['x', 'y'])
    """
    compiled, values, _, _ = _parse(cmpnt_fn, cmpnt_args, cmpnt_defaults, config, None)
    namespace = argparse.Namespace()
    for param in compiled.spec.params:
        if param.name in values:
            value = values[param.name]
        else:
            value = [] if param.is_vararg else param.default
        setattr(namespace, param.name, list(value) if param.is_vararg else value)
    return namespace


def _parse(
    fn: Callable[..., Any],
    argv: Sequence[str],
    defaults: Mapping[str, Any] | None,
    config: Mapping[str, Any] | None,
    prog: str | None,
    *,
    strict: bool = False,
) -> tuple[_Compiled, dict[str, Any], list[Any], dict[str, Any]]:
    """Parses ``argv``: the compiled parser, the values by name, the call's arguments."""
    preset = frozenset(config or ())
    compiled = _compile(fn, defaults, prog, preset, strict)
    parser = compiled.parser
    spec = compiled.spec
    namespace, extras = parser.parse_known_args(_attach_dash_values(parser, argv))
    if extras:
        parser.error(_unrecognized(spec, extras))
    values = dict(compiled.defaults)
    by_name = spec.by_name
    for name, raw in vars(namespace).items():
        param = by_name[name]
        try:
            if param.is_vararg:
                if not raw:
                    continue  # nothing given: the config's default, else the function's
                if raw[0] == "--":
                    raw = raw[1:]
                values[name] = [param.type.parse(v) for v in raw]
            else:
                if isinstance(raw, list):  # argparse drops the value of '--opt=--', leaving []
                    raw = "--"
                values[name] = param.type.parse(raw)
        except ValueError as e:
            parser.error(f"argument {param.option}: {e}")
    for name, value in (config or {}).items():
        if name in by_name:
            values[name] = value
    args, kwargs = _bind(spec, values)
    return compiled, values, args, kwargs


def _attach_dash_values(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """``--opt -1,0`` as ``--opt=-1,0``: a value that starts with ``-`` stays a value.

    argparse takes such a value (``-1,0``, ``-Dx=y``, ``-v``) for an unknown option
    unless it is glued to its option. Only the component's own options are looked at:
    scanning stops at ``--`` and at the first positional (the program's arguments
    begin there), so nothing meant for the program is changed.
    """
    known = parser._option_string_actions
    out = list(argv)
    i = 0
    while i < len(out):
        token = out[i]
        if token == "--":
            break
        action = known.get(token)
        if action is None:
            if not token.startswith("-"):
                break  # the first positional: the rest is the program's
            i += 1  # "--opt=value", or an unknown option argparse will report
            continue
        if action.nargs is None and i + 1 < len(out):  # takes exactly one value
            value = out[i + 1]
            if value.startswith("-") and value != "--" and value not in known:
                out[i : i + 2] = [f"{token}={value}"]
            else:
                i += 1
        elif action.nargs == "?" and i + 1 < len(out) and not out[i + 1].startswith("-"):
            i += 1  # a bool option with its value
        i += 1
    return out


def _unrecognized(spec: _Spec, extras: list[str]) -> str:
    from torchx.specs.errors import did_you_mean

    message = f"unrecognized arguments: {' '.join(extras)}"
    options = [p.option for p in spec.params if not p.is_vararg]
    first = next((e.split("=", 1)[0] for e in extras if e.startswith("-")), None)
    if first is not None:
        close = did_you_mean(first.lstrip("-").replace("-", "_"), [o.lstrip("-") for o in options])
        if close:
            name = close.split("'")[1]
            message += f" (did you mean {'-' if len(name) == 1 else '--'}{name}?)"
        if spec.vararg is not None:
            message += "; arguments for the program go last, after '--' (e.g. -- --flag value)"
    return message


def _bind(spec: _Spec, values: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword arguments for the call; unset ones keep the function's defaults."""
    args = [values.get(p.name, p.default) for p in spec.positional]
    kwargs = dict(values)
    for p in spec.positional:
        kwargs.pop(p.name, None)
    if spec.vararg is not None:
        args.extend(kwargs.pop(spec.vararg.name, ()))
    return args, kwargs
