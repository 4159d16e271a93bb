"""Component linter: checks that a component function follows the component standard.

A *component* is a plain Python function returning an :class:`~torchx.specs.AppDef`.
The runner turns its signature into a command line parser and its docstring into
the help text, so the function must be written in a form the runner understands:

1. it has a Google-style docstring (the ``Args:`` section becomes per-argument help;
   a component without one still runs, so :func:`validate` does not require it by
   default, as upstream: add :class:`DocstringValidator` to enforce it);
2. every parameter is annotated with a type the CLI can parse: ``str``, ``int``,
   ``float``, ``bool``, ``list[X]`` / ``List[X]``, ``dict[K, V]`` / ``Dict[K, V]``
   (``X``, ``K``, ``V`` among those four primitives, and ``V`` also ``list[X]``),
   or any of these made optional
   with ``Optional[...]``, ``Union[..., None]`` or ``... | None``;
3. it is annotated as returning ``AppDef`` (also spelt ``specs.AppDef``,
   ``torchx.specs.AppDef`` or ``torchx.specs.api.AppDef``).

:func:`validate` checks these rules from the file's syntax tree, without importing
or running it, and returns a list of :class:`LinterMessage` (empty when the
component is fine):

>>> import os, tempfile, textwrap
>>> src = textwrap.dedent('''
...     from torchx import specs
...
...     def echo(msg: str = "hi", n: int = 1) -> specs.AppDef:
...         \"\"\"Echoes a message.
...
...         Args:
...             msg: what to print
...             n: how many replicas
...         \"\"\"
...         ...
...
...     def bad(msg, n: object) -> dict:
...         ...
... ''')
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = os.path.join(tmp, "comp.py")
...     with open(path, "w") as f:
...         _ = f.write(src)
...     validate(path, "echo")
...     for m in validate(path, "bad"):
...         print(m.line, m.description)
[]
13 argument `msg` of `bad` has no type annotation; annotate it, e.g. `msg: str`
13 argument `n` of `bad` has type `object`, which components do not support; use str, int, float, bool, list[X], dict[K, V], dict[K, list[V]] or Optional of these
13 `bad` returns `dict`; components must be annotated `-> AppDef`

The default rules are upstream's two validators, :class:`ArgTypeValidator` and
:class:`ReturnTypeValidator`; :class:`TorchFunctionValidator` adds the docstring
rule (:class:`DocstringValidator`). Custom rules plug in as
:class:`ComponentFunctionValidator` subclasses; :class:`ComponentFnVisitor` applies
them while walking a syntax tree. :func:`get_fn_docstring` gives the runner the
help texts of an imported component, and :class:`TorchXArgumentHelpFormatter`
shows each option's default, or that it is required, in argparse help.
"""

from __future__ import annotations

import abc
import argparse
import ast
from collections.abc import Sequence

import attrs

from torchx.specs.docstrings import get_fn_docstring, parse_docstring_args

__all__ = [
    "ArgTypeValidator",
    "ComponentFnVisitor",
    "ComponentFunctionValidator",
    "DocstringValidator",
    "LinterMessage",
    "ReturnTypeValidator",
    "TorchFunctionValidator",
    "TorchXArgumentHelpFormatter",
    "get_fn_docstring",
    "parse_docstring_args",
    "validate",
]


@attrs.define(eq=True)
class LinterMessage:
    """One finding of the linter.

    Args:
        name: short name of the rule that produced it (e.g. ``"arg-type"``)
        description: one line saying what is wrong and what would be right
        line: 1-based line in the file (0 when the finding has no line)
        char: 0-based column in that line
        severity: ``"error"`` (the runner refuses the component) or ``"warning"``
    """

    name: str
    description: str
    line: int
    char: int
    severity: str = "error"


class ComponentFunctionValidator(abc.ABC):
    """Base class of the rules :func:`validate` applies to a component function.

    Subclass it and pass instances in ``validate(..., validators=[...])`` to enforce
    house rules; the default is ``[ArgTypeValidator(), ReturnTypeValidator()]``.
    """

    @abc.abstractmethod
    def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
        """Return the findings for the function's syntax tree (empty when it is fine)."""

    def _message(self, name: str, description: str, node: ast.AST) -> LinterMessage:
        return LinterMessage(
            name=name,
            description=description,
            line=getattr(node, "lineno", 0),
            char=getattr(node, "col_offset", 0),
        )

    def _gen_linter_message(self, description: str, lineno: int) -> LinterMessage:
        """A finding at ``lineno`` named after the validator (upstream's helper)."""
        return LinterMessage(name=type(self).__name__, description=description, line=lineno, char=0)


# ----------------------------------------------------------------- type annotations

_PRIMITIVES = frozenset({"str", "int", "float", "bool"})
_LISTS = frozenset({"list", "List"})
_DICTS = frozenset({"dict", "Dict"})
_APPDEF_SPELLINGS = frozenset(
    {"AppDef", "specs.AppDef", "torchx.specs.AppDef", "torchx.specs.api.AppDef", "api.AppDef"}
)
_SUPPORTED = "str, int, float, bool, list[X], dict[K, V], dict[K, list[V]] or Optional of these"


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head is not None else None
    return None


def _typing_name(node: ast.expr) -> str | None:
    """The bare name of a type reference, accepting ``typing.X`` / ``t.X`` spellings."""
    dotted = _dotted(node)
    if dotted is None:
        return None
    head, _, last = dotted.rpartition(".")
    if head and head not in ("typing", "t", "builtins", "typing_extensions"):
        return None
    return last


def _unquote(node: ast.expr) -> ast.expr:
    """Parse a string (forward reference) annotation into its expression."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return ast.parse(node.value.strip(), mode="eval").body
        except SyntaxError:
            return node
    return node


def _is_none(node: ast.expr) -> bool:
    node = _unquote(node)
    return (isinstance(node, ast.Constant) and node.value is None) or _typing_name(node) in (
        "None",
        "NoneType",
    )


def _union_members(node: ast.expr) -> list[ast.expr] | None:
    """Members of ``A | B`` or ``Union[A, B]`` / ``Optional[A]``; None if not a union."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left = _union_members(node.left) or [node.left]
        right = _union_members(node.right) or [node.right]
        return left + right
    if isinstance(node, ast.Subscript):
        name = _typing_name(node.value)
        if name == "Optional":
            return [node.slice, ast.Constant(value=None)]
        if name == "Union":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return list(elts)
    return None


def _is_primitive(node: ast.expr) -> bool:
    return _typing_name(_unquote(node)) in _PRIMITIVES


def _is_list_of_primitive(node: ast.expr) -> bool:
    node = _unquote(node)
    return (
        isinstance(node, ast.Subscript)
        and _typing_name(node.value) in _LISTS
        and _is_primitive(node.slice)
    )


def _is_supported(node: ast.expr, allow_optional: bool = True) -> bool:
    """Whether an annotation is a type the component argument parser can build."""
    node = _unquote(node)
    members = _union_members(node)
    if members is not None:
        rest = [m for m in members if not _is_none(m)]
        return (
            allow_optional
            and len(rest) == 1
            and len(rest) < len(members)
            and _is_supported(rest[0], allow_optional=False)
        )
    if isinstance(node, ast.Subscript):
        name = _typing_name(node.value)
        if name in _LISTS:
            return _is_primitive(node.slice)
        if name in _DICTS:
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else []
            return (
                len(elts) == 2
                and _is_primitive(elts[0])
                and (_is_primitive(elts[1]) or _is_list_of_primitive(elts[1]))
            )
        return False
    return _is_primitive(node)


def _is_appdef(node: ast.expr) -> bool:
    node = _unquote(node)
    return _dotted(node) in _APPDEF_SPELLINGS


class DocstringValidator(ComponentFunctionValidator):
    """The function has a docstring (message name ``"docstring"``).

    Not among :func:`validate`'s defaults: a component without a docstring runs,
    its help then says only the parameters' names.
    """

    def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
        fn = app_specs_func_def
        if ast.get_docstring(fn):
            return []
        return [
            self._message(
                "docstring",
                f"`{fn.name}` has no docstring; add a Google-style docstring with an Args: section",
                fn,
            )
        ]


class ArgTypeValidator(ComponentFunctionValidator):
    """Every parameter is annotated with a type the command line parser can build.

    Message names ``"arg-annotation"`` and ``"arg-type"``. A ``*args`` parameter
    must be annotated with a primitive (the type of each element); ``**kwargs``
    is not supported because the command line parser cannot know its names.
    """

    def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
        fn = app_specs_func_def
        messages: list[LinterMessage] = []
        args = fn.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            messages.extend(self._check_arg(fn, arg, vararg=False))
        if args.vararg is not None:
            messages.extend(self._check_arg(fn, args.vararg, vararg=True))
        if args.kwarg is not None:
            messages.append(
                self._message(
                    "arg-type",
                    f"`**{args.kwarg.arg}` of `{fn.name}` is not supported: the command line "
                    "cannot tell its names; declare each argument explicitly",
                    args.kwarg,
                )
            )
        return messages

    def _check_arg(self, fn: ast.FunctionDef, arg: ast.arg, vararg: bool) -> list[LinterMessage]:
        shown = f"*{arg.arg}" if vararg else arg.arg
        if arg.annotation is None:
            return [
                self._message(
                    "arg-annotation",
                    f"argument `{shown}` of `{fn.name}` has no type annotation; "
                    f"annotate it, e.g. `{shown}: str`",
                    arg,
                )
            ]
        supported = _is_primitive(arg.annotation) if vararg else _is_supported(arg.annotation)
        if supported:
            return []
        allowed = "str, int, float or bool (the type of each element)" if vararg else _SUPPORTED
        return [
            self._message(
                "arg-type",
                f"argument `{shown}` of `{fn.name}` has type `{ast.unparse(arg.annotation)}`, "
                f"which components do not support; use {allowed}",
                arg,
            )
        ]


class ReturnTypeValidator(ComponentFunctionValidator):
    """The function is annotated as returning ``AppDef`` (message name ``"return-type"``)."""

    def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
        return self._check_return(app_specs_func_def)

    def _check_return(self, fn: ast.FunctionDef) -> list[LinterMessage]:
        if fn.returns is None:
            return [
                self._message(
                    "return-type",
                    f"`{fn.name}` has no return annotation; components must be annotated "
                    "`-> AppDef`",
                    fn,
                )
            ]
        if _is_appdef(fn.returns):
            return []
        return [
            self._message(
                "return-type",
                f"`{fn.name}` returns `{ast.unparse(fn.returns)}`; components must be "
                "annotated `-> AppDef`",
                fn.returns,
            )
        ]


class TorchFunctionValidator(ComponentFunctionValidator):
    """All three rules: a docstring, supported parameter types, ``-> AppDef``.

    Stricter than :func:`validate`'s default (which leaves out the docstring), for
    projects that want every component documented:
    ``validate(path, fn, validators=[TorchFunctionValidator()])``.
    """

    def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
        return [
            *DocstringValidator().validate(app_specs_func_def),
            *ArgTypeValidator().validate(app_specs_func_def),
            *ReturnTypeValidator().validate(app_specs_func_def),
        ]


def _default_validators() -> list[ComponentFunctionValidator]:
    return [ArgTypeValidator(), ReturnTypeValidator()]


class ComponentFnVisitor(ast.NodeVisitor):
    """Walks a module's syntax tree and applies ``validators`` to one function.

    After ``visit(tree)``, ``linter_errors`` holds the findings for the
    top-level function named ``component_function_name`` (the last definition
    wins, as when the module runs) and ``visited_function`` its node, or None
    when the module has no such function.
    """

    def __init__(
        self,
        component_function_name: str,
        validators: Sequence[ComponentFunctionValidator] | None = None,
    ) -> None:
        self.component_function_name = component_function_name
        self.validators = list(_default_validators() if validators is None else validators)
        self.linter_errors: list[LinterMessage] = []
        self.visited_function: ast.FunctionDef | None = None

    def visit_Module(self, node: ast.Module) -> None:
        for child in node.body:  # top level only: a nested function is not a component
            if isinstance(child, ast.FunctionDef) and child.name == self.component_function_name:
                self.visited_function = child
        if self.visited_function is not None:
            self.visit_FunctionDef(self.visited_function)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.linter_errors = []
        for validator in self.validators:
            self.linter_errors.extend(validator.validate(node))


class TorchXArgumentHelpFormatter(argparse.HelpFormatter):
    """Argparse help that ends each option's text with ``(required)`` or its default.

    >>> parser = argparse.ArgumentParser(prog="c", formatter_class=TorchXArgumentHelpFormatter)
    >>> _ = parser.add_argument("--n", type=int, default=2, help="replicas")
    >>> _ = parser.add_argument("--script", required=True, help="the program")
    >>> lines = parser.format_help().splitlines()
    >>> [line.split(None, 2)[-1] for line in lines if "replicas" in line or "program" in line]
    ['replicas (default: 2)', 'the program (required)']
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help = action.help or ""
        if action.required:
            return f"{help} (required)".strip()
        default = action.default
        if default is None or default is argparse.SUPPRESS or action.nargs == 0:
            return help
        return f"{help} (default: {str(default).replace('%', '%%')})".strip()


# ---------------------------------------------------------------------- validate()


def _read_source(path: str) -> str:
    import tokenize  # honours PEP 263 encoding cookies

    with tokenize.open(path) as f:
        return f.read()


def validate(
    path: str,
    component_function: str,
    validators: Sequence[ComponentFunctionValidator] | None = None,
) -> list[LinterMessage]:
    """Validates the function to make sure it complies the component standard.

    Finds the top-level function ``component_function`` in the Python file at
    ``path`` and applies each validator to it (by default
    :class:`ArgTypeValidator` and :class:`ReturnTypeValidator`: every parameter
    annotated with a supported type, return annotated as ``AppDef``). The file is
    parsed, never imported, so linting a component runs none of its code.

    No docstring is not a finding by default (the component runs); pass
    ``validators=[TorchFunctionValidator()]`` to require one.

    A file that cannot be read or parsed, or that has no such function, gives a
    single message (names ``"file"``, ``"syntax"``, ``"function"``) rather than
    an exception.

    Args:
        path: path to the Python source file.
        component_function: name of the function to validate.
        validators: rules to apply; defaults to
            ``[ArgTypeValidator(), ReturnTypeValidator()]``.

    Returns:
        The findings, in validator order; empty when the component is fine.
    """
    try:
        source = _read_source(path)
    except (OSError, UnicodeDecodeError, SyntaxError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        return [LinterMessage("file", f"cannot read component file {path!r}: {reason}", 0, 0)]
    try:
        module = ast.parse(source, filename=path)
    except SyntaxError as e:
        return [
            LinterMessage(
                "syntax",
                f"{path!r} is not valid Python: {e.msg}",
                e.lineno or 0,
                max((e.offset or 1) - 1, 0),
            )
        ]
    found: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    names: list[str] = []
    for node in module.body:  # the last definition wins, as when the module runs
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(node.name)
            if node.name == component_function:
                found = node
    if found is None:
        from torchx.specs.errors import did_you_mean

        hint = did_you_mean(component_function, names)
        return [
            LinterMessage(
                "function",
                f"function {component_function!r} not found in {path!r}{hint}",
                0,
                0,
            )
        ]
    if isinstance(found, ast.AsyncFunctionDef):
        return [
            LinterMessage(
                "function",
                f"`{component_function}` in {path!r} is async; a component must be a plain "
                "function returning AppDef",
                found.lineno,
                found.col_offset,
            )
        ]
    messages: list[LinterMessage] = []
    for validator in _default_validators() if validators is None else validators:
        messages.extend(validator.validate(found))
    return messages
