"""Tests for torchx.specs.file_linter: validate(), validators, docstring parsing."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchx.specs.file_linter import (
    ComponentFunctionValidator,
    LinterMessage,
    TorchFunctionValidator,
    get_fn_docstring,
    parse_docstring_args,
    validate,
)

GOOD = '''\
from typing import Dict, List, Optional, Union
import typing
import torchx
import torchx.specs as specs
from torchx.specs import AppDef


def good(
    script: str,
    *script_args: str,
    nnodes: int = 1,
    lr: float = 0.1,
    debug: bool = False,
    name: Optional[str] = None,
    image: str | None = None,
    tags: list[str] | None = None,
    ids: List[int] = [],
    env: Dict[str, str] = {},
    extra: dict[str, int] = {},
    maybe: Union[str, None] = None,
    none_first: None | float = None,
    opt_dict: typing.Optional[typing.Dict[str, bool]] = None,
    quoted: "Optional[list[float]]" = None,
) -> AppDef:
    """Runs a script.

    Args:
        script: the script
    """
    ...


def ret_specs() -> specs.AppDef:
    """Doc."""


def ret_torchx() -> torchx.specs.AppDef:
    """Doc."""


def ret_api() -> torchx.specs.api.AppDef:
    """Doc."""


def ret_quoted() -> "AppDef":
    """Doc."""


def decorated_helper(x: int) -> AppDef:
    """Doc."""
'''


def _write(tmp_path: Path, source: str, name: str = "comp.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return str(path)


def _line_of(source: str, needle: str) -> int:
    for number, line in enumerate(textwrap.dedent(source).splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(needle)


# ------------------------------------------------------------------ good components


@pytest.mark.parametrize(
    "fn", ["good", "ret_specs", "ret_torchx", "ret_api", "ret_quoted", "decorated_helper"]
)
def test_good_components_pass(tmp_path: Path, fn: str) -> None:
    assert validate(_write(tmp_path, GOOD), fn) == []


@pytest.mark.parametrize(
    "annotation",
    [
        "str",
        "int",
        "float",
        "bool",
        "Optional[int]",
        "int | None",
        "None | int",
        "Union[None, bool]",
        "list[str]",
        "List[str]",
        "list[float]",
        "typing.List[bool]",
        "dict[str, str]",
        "Dict[str, str]",
        "Dict[str, int]",
        "dict[str, float] | None",
        "Optional[Dict[str, str]]",
        "Optional[List[str]]",
        "Optional[Dict[str, List[str]]]",
        "dict[str, list[int]] | None",
        "'int'",
    ],
)
def test_supported_annotations(tmp_path: Path, annotation: str) -> None:
    source = f'''
        from typing import Dict, List, Optional, Union
        import typing
        def comp(x: {annotation}) -> AppDef:
            """Doc."""
    '''
    assert validate(_write(tmp_path, source), "comp") == []


@pytest.mark.parametrize(
    "annotation",
    [
        "object",
        "Any",
        "list",
        "dict",
        "List",
        "tuple[str, str]",
        "list[list[str]]",
        "dict[str, dict[str, str]]",
        "dict[str, Optional[list[str]]]",
        "Dict[str]",
        "str | int",
        "Union[str, int, None]",
        "Optional[Optional[str]]",
        "list[Optional[str]]",
        "None",
        "mymod.str",
        "'not valid python ('",
    ],
)
def test_unsupported_annotations(tmp_path: Path, annotation: str) -> None:
    source = f'''
        def comp(
            x: {annotation},
        ) -> AppDef:
            """Doc."""
    '''
    messages = validate(_write(tmp_path, source), "comp")
    assert len(messages) == 1
    (message,) = messages
    assert message.name == "arg-type"
    assert message.severity == "error"
    assert "`x`" in message.description
    assert message.line == 3
    assert message.char == 4


# ------------------------------------------------------------------ rule violations


def test_missing_docstring_reported_at_def_line(tmp_path: Path) -> None:
    source = """
        import os

        @decorator
        def comp(x: str) -> AppDef:
            return None
    """
    messages = validate(_write(tmp_path, source), "comp", [TorchFunctionValidator()])
    assert [m.name for m in messages] == ["docstring"]
    assert messages[0].line == _line_of(source, "def comp")
    assert messages[0].char == 0
    assert "`comp` has no docstring" in messages[0].description


def test_empty_docstring_counts_as_missing(tmp_path: Path) -> None:
    source = '''
        def comp(x: str) -> AppDef:
            """   """
    '''
    messages = validate(_write(tmp_path, source), "comp", [TorchFunctionValidator()])
    assert [m.name for m in messages] == ["docstring"]


def test_no_docstring_is_no_error_by_default(tmp_path: Path) -> None:
    # upstream: a component without a docstring runs, so validate() does not flag it
    source = """
        def comp(x: str) -> AppDef:
            return None
    """
    assert validate(_write(tmp_path, source), "comp") == []


def test_missing_annotation_reported_at_arg(tmp_path: Path) -> None:
    source = '''
        def comp(
            a: str,
                b,
            *, c=1,
        ) -> AppDef:
            """Doc."""
    '''
    messages = validate(_write(tmp_path, source), "comp")
    assert [m.name for m in messages] == ["arg-annotation", "arg-annotation"]
    assert (messages[0].line, messages[0].char) == (_line_of(source, "    b,"), 8)
    assert "`b`" in messages[0].description
    assert (messages[1].line, messages[1].char) == (_line_of(source, "*, c=1"), 7)
    assert "`c`" in messages[1].description


def test_vararg_must_be_primitive_and_kwargs_rejected(tmp_path: Path) -> None:
    source = '''
        def comp(*args: list[str], **kwargs: str) -> AppDef:
            """Doc."""

        def untyped(*args) -> AppDef:
            """Doc."""
    '''
    path = _write(tmp_path, source)
    messages = validate(path, "comp")
    assert [m.name for m in messages] == ["arg-type", "arg-type"]
    assert "*args" in messages[0].description
    assert "**kwargs" in messages[1].description
    untyped = validate(path, "untyped")
    assert [m.name for m in untyped] == ["arg-annotation"]
    assert "*args" in untyped[0].description


def test_missing_return_annotation(tmp_path: Path) -> None:
    source = '''
        def comp(x: str):
            """Doc."""
    '''
    messages = validate(_write(tmp_path, source), "comp")
    assert [m.name for m in messages] == ["return-type"]
    assert messages[0].line == 2
    assert "no return annotation" in messages[0].description


@pytest.mark.parametrize("returns", ["dict", "Role", "other.AppDef", "AppDefinition", "None"])
def test_wrong_return_annotation(tmp_path: Path, returns: str) -> None:
    source = f'''
        def comp(
            x: str,
        ) -> {returns}:
            """Doc."""
    '''
    messages = validate(_write(tmp_path, source), "comp")
    assert [m.name for m in messages] == ["return-type"]
    assert messages[0].line == 4
    assert f"`{returns}`" in messages[0].description


def test_all_violations_together_in_order(tmp_path: Path) -> None:
    source = """
        def comp(a, b: object) -> int:
            pass
    """
    messages = validate(_write(tmp_path, source), "comp", [TorchFunctionValidator()])
    assert [m.name for m in messages] == ["docstring", "arg-annotation", "arg-type", "return-type"]
    default = validate(_write(tmp_path, source), "comp")
    assert [m.name for m in default] == ["arg-annotation", "arg-type", "return-type"]
    assert all(m.line == 2 for m in messages)


# ------------------------------------------------------------------ lookup failures


def test_missing_file_gives_message(tmp_path: Path) -> None:
    messages = validate(str(tmp_path / "nope.py"), "comp")
    assert len(messages) == 1
    assert messages[0].name == "file"
    assert "nope.py" in messages[0].description
    assert messages[0].line == 0


def test_directory_instead_of_file_gives_message(tmp_path: Path) -> None:
    messages = validate(str(tmp_path), "comp")
    assert [m.name for m in messages] == ["file"]


def test_missing_function_gives_message_with_hint(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD)
    messages = validate(path, "godo")
    assert len(messages) == 1
    assert messages[0].name == "function"
    assert "'godo' not found" in messages[0].description
    assert "did you mean 'good'" in messages[0].description


def test_nested_and_method_functions_are_not_components(tmp_path: Path) -> None:
    source = '''
        class C:
            def comp(self) -> AppDef:
                """Doc."""

        def outer() -> AppDef:
            """Doc."""
            def inner() -> AppDef:
                """Doc."""
    '''
    path = _write(tmp_path, source)
    assert [m.name for m in validate(path, "comp")] == ["function"]
    assert [m.name for m in validate(path, "inner")] == ["function"]


def test_last_definition_wins(tmp_path: Path) -> None:
    source = '''
        def comp(x: str) -> AppDef:
            """Doc."""

        def comp(x) -> AppDef:
            """Doc."""
    '''
    messages = validate(_write(tmp_path, source), "comp")
    assert [(m.name, m.line) for m in messages] == [("arg-annotation", 5)]


def test_async_function_is_rejected(tmp_path: Path) -> None:
    source = '''
        async def comp(x: str) -> AppDef:
            """Doc."""
    '''
    messages = validate(_write(tmp_path, source), "comp")
    assert [m.name for m in messages] == ["function"]
    assert "async" in messages[0].description


def test_syntax_error_gives_message_with_line(tmp_path: Path) -> None:
    source = """
        def comp(x: str) -> AppDef:
            return (
    """
    messages = validate(_write(tmp_path, source), "comp")
    assert len(messages) == 1
    assert messages[0].name == "syntax"
    assert messages[0].line >= 3


def test_validate_does_not_execute_the_file(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = f'''
        open({str(marker)!r}, "w").close()
        raise SystemExit(1)

        def comp(x: str) -> AppDef:
            """Doc."""
    '''
    assert validate(_write(tmp_path, source), "comp") == []
    assert not marker.exists()


# ------------------------------------------------------------------ custom validators


class _NameLength(ComponentFunctionValidator):
    def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
        if len(app_specs_func_def.name) < 5:
            return [
                LinterMessage(
                    "name-length", "too short", app_specs_func_def.lineno, 0, severity="warning"
                )
            ]
        return []


def test_custom_validators_replace_the_default(tmp_path: Path) -> None:
    source = """
        def comp(x):
            pass
    """
    path = _write(tmp_path, source)
    assert validate(path, "comp", validators=[_NameLength()]) == [
        LinterMessage("name-length", "too short", 2, 0, "warning")
    ]
    assert validate(path, "comp", validators=[]) == []
    both = validate(path, "comp", validators=[TorchFunctionValidator(), _NameLength()])
    assert [m.name for m in both][-1] == "name-length"
    assert len(both) == 4


def test_component_function_validator_is_abstract() -> None:
    with pytest.raises(TypeError):
        ComponentFunctionValidator()  # type: ignore[abstract]


def test_linter_message_defaults() -> None:
    message = LinterMessage("n", "d", 1, 2)
    assert message.severity == "error"
    assert message == LinterMessage(name="n", description="d", line=1, char=2, severity="error")


# ------------------------------------------------------------------ docstrings


def test_parse_docstring_args_google_style() -> None:
    doc = """Trains a model.

    Longer description
    over two lines.

    Args:
        lr (float): learning rate,
            decayed every epoch.

            Second paragraph.
        epochs: number of epochs
        *script_args: passed through
        **kwargs (str): extra
        nodesc:
            on the next line

    Returns:
        an AppDef
        lr: not an arg
    """
    description, args = parse_docstring_args(doc)
    assert description == "Trains a model.\n\nLonger description\nover two lines."
    assert args == {
        "lr": "learning rate, decayed every epoch. Second paragraph.",
        "epochs": "number of epochs",
        "script_args": "passed through",
        "kwargs": "extra",
        "nodesc": "on the next line",
    }


def test_parse_docstring_args_alternative_headers_and_sections_after() -> None:
    doc = "Desc.\n\nArguments:\n  a: one\nRaises:\n  ValueError: bad\nParameters:\n  b: two\n"
    assert parse_docstring_args(doc) == ("Desc.", {"a": "one", "b": "two"})


def test_parse_docstring_args_without_sections_and_empty() -> None:
    assert parse_docstring_args("Just text.\n\nMore text.") == ("Just text.\n\nMore text.", {})
    assert parse_docstring_args("") == ("", {})


def test_parse_docstring_args_keeps_colons_in_descriptions() -> None:
    _, args = parse_docstring_args("D.\n\nArgs:\n    url: e.g. http://host:80/path\n")
    assert args == {"url": "e.g. http://host:80/path"}


def test_get_fn_docstring_documented_and_defaults() -> None:
    def comp(script: str, nnodes: int = 2, name: str = "x", *args: str) -> None:
        """Runs a script.

        Args:
            script: the script to run
        """

    description, args = get_fn_docstring(comp)
    assert description == "Runs a script."
    assert args == {
        "script": "the script to run",
        "nnodes": "nnodes (default: 2)",
        "name": "name (default: 'x')",
        "args": "args (optional, any number)",
    }


def test_get_fn_docstring_without_docstring() -> None:
    def my_comp(a: str, b: int = 3) -> None:
        pass

    description, args = get_fn_docstring(my_comp)
    assert description.startswith("my_comp ")
    assert "TIP" in description and "docstring" in description
    assert args == {"a": "a (required)", "b": "b (default: 3)"}


def test_get_fn_docstring_sections_only_uses_name_as_description() -> None:
    def comp(a: str) -> None:
        """
        Args:
            a: the a
        """

    assert get_fn_docstring(comp) == ("comp", {"a": "the a"})


_names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
_words = st.lists(
    st.text(alphabet="abcdefghijklmnop.,'", min_size=1, max_size=8), min_size=1, max_size=6
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_names, st.lists(_words, min_size=1, max_size=3), min_size=1, max_size=5))
def test_parse_docstring_args_roundtrip(entries: dict[str, list[list[str]]]) -> None:
    lines = ["Summary line.", "", "Args:"]
    expected: dict[str, Any] = {}
    for name, desc_lines in entries.items():
        texts = [" ".join(words) for words in desc_lines]
        lines.append(f"    {name} (str): {texts[0]}")
        lines.extend(f"        {text}" for text in texts[1:])
        expected[name] = " ".join(texts)
    lines += ["", "Returns:", "    something: else"]
    assert parse_docstring_args("\n".join(lines)) == ("Summary line.", expected)


@pytest.mark.parametrize(
    "doc",
    [
        "Args:\n    a: the a\nReturns:\n    x: y\n",  # already cleaned (inspect.getdoc)
        "Args:\n        a: the a\n    Returns:\n        x: y\n    ",  # raw, header on line 1
        "Args:\na: the a\nReturns:\nx: y\n",  # cleaned twice
    ],
)
def test_parse_docstring_args_header_on_first_line(doc: str) -> None:
    assert parse_docstring_args(doc) == ("", {"a": "the a"})
