"""A component's help text, read from its Google-style docstring.

``torchx run COMPONENT --help`` shows the component's description and one line per
argument; both come from its docstring's summary and ``Args:`` section
(:func:`get_fn_docstring`), with a generated line (the name and default) for an
argument the docstring does not describe. :func:`parse_docstring_args` is the
docstring reader alone. The component linter (:mod:`torchx.specs.file_linter`) and
the command-line builder (:mod:`torchx.specs.builders`) both read docstrings here;
upstream TorchX's ``torchx.specs.file_linter.get_fn_docstring`` still works.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

__all__ = ["get_fn_docstring", "parse_docstring_args"]

_ARG_SECTIONS = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "params",
        "keyword args",
        "keyword arguments",
        "other parameters",
    }
)
_OTHER_SECTIONS = frozenset(
    {
        "returns",
        "return",
        "yields",
        "yield",
        "raises",
        "raise",
        "examples",
        "example",
        "note",
        "notes",
        "attributes",
        "todo",
        "warning",
        "warnings",
        "warns",
        "see also",
        "references",
        "methods",
    }
)


def _section_of(line: str) -> str | None:
    stripped = line.strip()
    if not stripped.endswith(":"):
        return None
    title = " ".join(stripped[:-1].split()).lower()
    if title in _ARG_SECTIONS:
        return "args"
    if title in _OTHER_SECTIONS:
        return "other"
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _parse_arg_entry(text: str) -> tuple[str, str] | None:
    """``name (type): desc`` or ``name: desc`` → (name, desc); None if not an entry."""
    head, colon, desc = text.partition(":")
    if not colon:
        return None
    head = head.strip()
    name = head.split("(", 1)[0].strip() if "(" in head and head.endswith(")") else head
    name = name.lstrip("*")
    if not name.isidentifier():
        return None
    return name, desc.strip()


def parse_docstring_args(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and per-argument help.

    The description is the text before the first section (``Args:``,
    ``Returns:``, ...). Each entry of an ``Args:`` section (``name: text`` or
    ``name (type): text``) maps the argument to its text, with continuation
    lines joined by single spaces. ``*args``/``**kwargs`` entries are keyed by
    the bare name.

    >>> doc = '''Trains a model.
    ...
    ... Args:
    ...     lr (float): learning rate,
    ...         decayed every epoch
    ...     epochs: how long to train
    ...
    ... Returns:
    ...     the AppDef
    ... '''
    >>> parse_docstring_args(doc)
    ('Trains a model.', {'lr': 'learning rate, decayed every epoch', 'epochs': 'how long to train'})
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    i = 0
    while i < len(lines) and _section_of(lines[i]) is None:
        description.append(lines[i])
        i += 1
    while i < len(lines):
        kind = _section_of(lines[i])
        # A header on the docstring's first line lost its indentation to cleandoc, so
        # its body may sit at any indent: it then ends only at the next header.
        header_indent = _indent(lines[i]) if i else -1
        i += 1
        body: list[str] = []
        while i < len(lines) and not _ends_section(lines[i], header_indent):
            body.append(lines[i])
            i += 1
        if kind == "args":
            _parse_args_body(body, args)
        while i < len(lines) and _section_of(lines[i]) is None:
            i += 1  # stray text between sections is not part of any argument
    return "\n".join(description).strip(), args


def _ends_section(line: str, header_indent: int) -> bool:
    if not line.strip():
        return False
    indent = _indent(line)
    return indent <= header_indent or (
        _section_of(line) is not None and indent <= max(header_indent, 0)
    )


def _parse_args_body(body: list[str], args: dict[str, str]) -> None:
    content = [line for line in body if line.strip()]
    if not content:
        return
    entry_indent = min(_indent(line) for line in content)
    current: str | None = None
    parts: list[str] = []

    def flush() -> None:
        if current is not None:
            args[current] = " ".join(p for p in parts if p)

    for line in content:
        entry = _parse_arg_entry(line) if _indent(line) == entry_indent else None
        if entry is not None:
            flush()
            current, first = entry
            parts = [first]
        elif current is not None:
            parts.append(line.strip())
    flush()


def _default_arg_descriptions(fn: Callable[..., object]) -> dict[str, str]:
    descriptions: dict[str, str] = {}
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins and some callables have no signature
        return descriptions
    for name, param in parameters.items():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            descriptions[name] = f"{name} (optional, any number)"
        elif param.default is inspect.Parameter.empty:
            descriptions[name] = f"{name} (required)"
        else:
            descriptions[name] = f"{name} (default: {param.default!r})"
    return descriptions


def get_fn_docstring(fn: Callable[..., object]) -> tuple[str, dict[str, str]]:
    """Parses the function and arguments description from a Google-style docstring.

    This is where the runner gets a component's help text. Without a docstring,
    the description is the function's name followed by a tip on writing one.
    Arguments the docstring does not document are described by their name and
    their default, or ``(required)`` when they have none.

    >>> def trainer(lr: float, epochs: int = 10) -> None:
    ...     '''Trains a model.
    ...
    ...     Args:
    ...         lr: learning rate
    ...     '''
    >>> get_fn_docstring(trainer)
    ('Trains a model.', {'lr': 'learning rate', 'epochs': 'epochs (default: 10)'})
    >>> def bare(name: str) -> None: ...
    >>> get_fn_docstring(bare)[1]
    {'name': 'name (required)'}

    Args:
        fn: function with or without a docstring.

    Returns:
        The function description, and a dict of argument name to its description.
    """
    name = getattr(fn, "__name__", type(fn).__name__)
    args = _default_arg_descriptions(fn)
    doc = inspect.getdoc(fn)
    if not doc:
        tip = (
            "TIP: improve this help string by adding a Google-style docstring "
            "(with an Args: section) to the component"
        )
        return f"{name} ({tip})", args
    description, documented = parse_docstring_args(doc)
    args.update(documented)
    return description or name, args
