"""torchx.components.args: from a component's command line to its AppDef."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from torchx.components.args import ParamType, component_parser, materialize_appdef, param_types
from torchx.components.errors import (
    ComponentArgError,
    ComponentHelpRequested,
    ComponentLoadError,
)
from torchx.specs import AppDef, Role
from torchx.specs.errors import SpecError

CAPTURED: dict[str, Any] = {}


def _app(**values: Any) -> AppDef:
    CAPTURED.clear()
    CAPTURED.update(values)
    return AppDef(name="captured", roles=[Role(name="r", image=".")])


def typed(
    s: str = "x",
    i: int = 1,
    fl: float = 0.5,
    b: bool = False,
    ls: list[str] | None = None,
    li: list[int] | None = None,
    ds: dict[str, str] | None = None,
    di: dict[str, int] | None = None,
    oi: int | None = None,
) -> AppDef:
    """A component with one parameter of each type.

    Args:
        s: a string
        i: an int
        fl: a float
        b: a bool
        ls: a list of strings
        li: a list of ints
        ds: a dict of strings
        di: a dict of ints
        oi: an optional int
    """
    return _app(s=s, i=i, fl=fl, b=b, ls=ls, li=li, ds=ds, di=di, oi=oi)


def required(name: str, count: int, *rest: str, loud: bool = False) -> AppDef:
    """Has required parameters and a remainder.

    Args:
        name: a required string
        count: a required int
        rest: everything else
        loud: a flag
    """
    return _app(name=name, count=count, rest=list(rest), loud=loud)


def run(fn: Any, argv: list[str], **kw: Any) -> dict[str, Any]:
    materialize_appdef(fn, argv, **kw)
    return dict(CAPTURED)


# ------------------------------------------------------------------------- types


def test_defaults_apply_when_nothing_is_given() -> None:
    got = run(typed, [])
    assert got == {
        "s": "x",
        "i": 1,
        "fl": 0.5,
        "b": False,
        "ls": None,
        "li": None,
        "ds": None,
        "di": None,
        "oi": None,
    }


def test_every_type_is_converted() -> None:
    got = run(
        typed,
        [
            "-s",
            "hello",
            "-i",
            "42",
            "--fl",
            "2.5",
            "-b",
            "true",
            "--ls",
            "a,b,c",
            "--li",
            "1,2,3",
            "--ds",
            "A=1,B=two",
            "--di",
            "x=1;y=2",
            "--oi",
            "7",
        ],
    )
    assert got == {
        "s": "hello",
        "i": 42,
        "fl": 2.5,
        "b": True,
        "ls": ["a", "b", "c"],
        "li": [1, 2, 3],
        "ds": {"A": "1", "B": "two"},
        "di": {"x": 1, "y": 2},
        "oi": 7,
    }


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        ("True", True),
        ("1", True),
        ("yes", True),
        ("on", True),
        ("false", False),
        ("FALSE", False),
        ("0", False),
        ("no", False),
        ("off", False),
    ],
)
def test_bool_words(text: str, value: bool) -> None:
    assert run(typed, ["-b", text])["b"] is value


def test_bare_bool_flag_means_true() -> None:
    assert run(typed, ["--b"])["b"] is True
    got = run(typed, ["-b", "-i", "3"])
    assert (got["b"], got["i"]) == (True, 3)


def test_bad_bool_names_option_and_value() -> None:
    with pytest.raises(
        ComponentArgError, match=r"argument -b: expected true or false, got 'maybe'"
    ):
        run(typed, ["-b", "maybe"])


def test_bad_int_and_float() -> None:
    with pytest.raises(ComponentArgError, match=r"argument -i: expected an integer, got 'two'"):
        run(typed, ["-i", "two"])
    with pytest.raises(ComponentArgError, match=r"argument --fl: expected a number, got 'x'"):
        run(typed, ["--fl", "x"])
    with pytest.raises(ComponentArgError, match=r"argument --li: expected an integer, got 'b'"):
        run(typed, ["--li", "1,b"])


def test_list_and_dict_edge_cases() -> None:
    assert run(typed, ["--ls", ""])["ls"] == []
    assert run(typed, ["--ls", " a , b "])["ls"] == ["a", "b"]
    assert run(typed, ["--ds", ""])["ds"] == {}
    # a value may itself hold a list; the last delimiter before a key separates pairs
    assert run(typed, ["--ds", "PATHS=a,b,MODE=fast"])["ds"] == {"PATHS": "a,b", "MODE": "fast"}
    assert run(typed, ["--ds", "A=x;y;B=z"])["ds"] == {"A": "x;y", "B": "z"}
    assert run(typed, ["--ds", "A='',B=\"\""])["ds"] == {"A": "", "B": ""}
    assert run(typed, ["--ds", "URL=a=b"])["ds"] == {"URL": "a=b"}


@pytest.mark.parametrize("text", ["novalue", "=x", "A=1,=2"])
def test_bad_dict(text: str) -> None:
    with pytest.raises(ComponentArgError, match=r"argument --ds: expected"):
        run(typed, ["--ds", text])


def test_param_type_from_string_and_real_annotations() -> None:
    ns: dict[str, Any] = {}
    src = (
        "from typing import Dict, List, Optional, Union\n"
        "def real(a: int, b: Optional[List[float]] = None, c: Dict[str, bool] | None = None,\n"
        "         d: Union[str, None] = None, e: bool = False, f=None): ...\n"
    )
    exec(compile(src, "<real>", "exec", dont_inherit=True), ns)
    types = {k: str(v) for k, v in param_types(ns["real"]).items()}
    assert types == {
        "a": "int",
        "b": "list[float] | None",
        "c": "dict[str, bool] | None",
        "d": "str | None",
        "e": "bool",
        "f": "str",
    }
    assert {k: str(v) for k, v in param_types(typed).items()}["ls"] == "list[str] | None"
    assert ParamType("list", ("int",)).parse("1,2") == [1, 2]


@pytest.mark.parametrize(
    "annotation",
    ["object", "list[list[str]]", "dict[str, dict[str, str]]", "int | str", "tuple[int]"],
)
def test_unsupported_types_are_refused_naming_the_argument(annotation: str) -> None:
    ns: dict[str, Any] = {}
    exec(f"def comp(x: {annotation!s} = None): ...", ns)
    with pytest.raises(ComponentLoadError, match=r"argument x of component .*comp has type"):
        materialize_appdef(ns["comp"], [])


def test_kwargs_are_refused() -> None:
    def comp(**kw: str) -> AppDef:
        """Bad."""
        return _app()

    with pytest.raises(ComponentLoadError, match=r"\*\*kw"):
        materialize_appdef(comp, [])


def test_component_must_return_an_appdef() -> None:
    def comp() -> AppDef:
        """Returns the wrong thing."""
        return "nope"  # type: ignore[return-value]

    with pytest.raises(ComponentLoadError, match=r"returned str, not an AppDef"):
        materialize_appdef(comp, [], prog="bad.comp")


# ----------------------------------------------------------- options and remainder


def test_single_letter_parameters_have_both_spellings() -> None:
    assert run(typed, ["-i", "3"])["i"] == 3
    assert run(typed, ["--i", "4"])["i"] == 4
    assert run(typed, ["-i=5"])["i"] == 5
    assert run(typed, ["--ls=a,b"])["ls"] == ["a", "b"]


def test_last_occurrence_wins() -> None:
    assert run(typed, ["-i", "1", "-i", "2"])["i"] == 2


def test_required_parameters_are_required_options() -> None:
    with pytest.raises(ComponentArgError) as info:
        run(required, ["--name", "x"], prog="my.comp")
    err = info.value
    assert str(err) == "my.comp: the following arguments are required: --count"
    assert err.usage.startswith("usage: my.comp [--help] --name NAME --count COUNT")
    assert isinstance(err, SpecError) and isinstance(err, ValueError)
    assert "\n" not in str(err)


def test_remainder_starts_at_the_first_positional() -> None:
    got = run(required, ["--name", "n", "--count", "2", "a", "--loud", "b"])
    assert got == {"name": "n", "count": 2, "rest": ["a", "--loud", "b"], "loud": False}


def test_remainder_after_double_dash() -> None:
    got = run(required, ["--name", "n", "--count", "2", "--loud", "--", "--x", "-y"])
    assert got == {"name": "n", "count": 2, "rest": ["--x", "-y"], "loud": True}
    # only the first "--" is a separator
    assert run(required, ["--name", "n", "--count", "2", "--", "--", "a"])["rest"] == ["--", "a"]
    # options may come after the remainder's "--" only as program arguments
    assert run(required, ["--name", "n", "--count", "2", "--", "--name", "m"])["name"] == "n"


def test_negative_numbers_are_values() -> None:
    assert run(typed, ["-i", "-3"])["i"] == -3
    assert run(required, ["--name", "n", "--count", "1", "-5"])["rest"] == ["-5"]


def test_unknown_option_suggests_the_nearest_and_the_separator() -> None:
    with pytest.raises(ComponentArgError) as info:
        run(required, ["--name", "n", "--count", "1", "--lowd", "x"], prog="c")
    message = str(info.value)
    assert message.startswith("c: unrecognized arguments: --lowd (did you mean --loud?)")
    assert "after '--'" in message
    with pytest.raises(ComponentArgError, match=r"did you mean --ls\?"):
        run(typed, ["--lss", "a"])


def test_stray_positional_without_varargs() -> None:
    with pytest.raises(ComponentArgError, match=r"unrecognized arguments: extra$"):
        run(typed, ["extra"])


def test_positional_parameters_before_varargs_are_bound_by_position() -> None:
    def comp(first: str, *rest: int, last: int = 0) -> AppDef:
        """Mixed.

        Args:
            first: first
            rest: ints
            last: last
        """
        return _app(first=first, rest=list(rest), last=last)

    assert run(comp, ["--first", "a", "1", "2"]) == {"first": "a", "rest": [1, 2], "last": 0}
    with pytest.raises(ComponentArgError, match=r"argument rest: expected an integer"):
        run(comp, ["--first", "a", "x"])


def test_positional_only_parameters() -> None:
    def comp(a: str, b: int = 2, /, c: str = "c") -> AppDef:
        """Positional-only.

        Args:
            a: a
            b: b
            c: c
        """
        return _app(a=a, b=b, c=c)

    assert run(comp, ["-a", "x"]) == {"a": "x", "b": 2, "c": "c"}
    assert run(comp, ["-b", "5", "-a", "y", "-c", "z"]) == {"a": "y", "b": 5, "c": "z"}


# ----------------------------------------------------------------------- help


def test_help_raises_with_the_help_text() -> None:
    with pytest.raises(ComponentHelpRequested) as info:
        run(required, ["--name", "x", "--help"], prog="my.comp")
    text = info.value.help
    assert text.startswith("usage: my.comp")
    assert "Has required parameters and a remainder." in text
    assert "a required string (required)" in text
    assert "a flag (default: false)" in text
    assert "everything else (any number)" in text


def test_help_shows_config_defaults_and_escapes_percent() -> None:
    def comp(rate: str = "50%") -> AppDef:
        """Percent.

        Args:
            rate: a 10% thing
        """
        return _app()

    text = component_parser(comp, defaults={"rate": "75%"}).format_help()
    assert "a 10% thing (default: 75%)" in text


def test_a_parameter_named_help_replaces_the_help_option() -> None:
    def comp(help: str = "no") -> AppDef:
        """Has help.

        Args:
            help: a value
        """
        return _app(help=help)

    assert run(comp, ["--help", "yes"]) == {"help": "yes"}


# --------------------------------------------------------------------- defaults


def test_config_defaults_are_converted_and_replace_function_defaults() -> None:
    got = run(typed, [], defaults={"i": "9", "b": "true", "ls": "p,q", "ds": "K=v"})
    assert (got["i"], got["b"], got["ls"], got["ds"]) == (9, True, ["p", "q"], {"K": "v"})
    # the command line still wins
    assert run(typed, ["-i", "3"], defaults={"i": "9"})["i"] == 3


def test_config_default_satisfies_a_required_parameter() -> None:
    got = run(required, ["--name", "n"], defaults={"count": "5"})
    assert got["count"] == 5


def test_config_default_for_varargs_is_shell_split() -> None:
    got = run(required, ["--name", "n", "--count", "1"], defaults={"rest": "a 'b c'"})
    assert got["rest"] == ["a", "b c"]
    got = run(required, ["--name", "n", "--count", "1", "z"], defaults={"rest": "a"})
    assert got["rest"] == ["z"]


def test_unknown_config_default_is_an_error_naming_it() -> None:
    with pytest.raises(ComponentArgError) as info:
        run(typed, [], defaults={"ii": "1"}, prog="my.comp")
    assert str(info.value).startswith("my.comp: unknown default 'ii' (did you mean 'i'?)")
    assert "s, i, fl, b" in str(info.value)


def test_bad_config_default_names_the_option() -> None:
    with pytest.raises(ComponentArgError, match=r"default for -i: expected an integer, got 'x'"):
        run(typed, [], defaults={"i": "x"})


# ---------------------------------------------------------- errors from the component


def test_component_errors_get_the_prog_and_usage() -> None:
    def comp(n: int = 1) -> AppDef:
        """Refuses zero.

        Args:
            n: not zero
        """
        if n == 0:
            raise ComponentArgError("n must not be 0")
        return _app(n=n)

    with pytest.raises(ComponentArgError) as info:
        run(comp, ["-n", "0"], prog="z.comp")
    assert str(info.value) == "z.comp: n must not be 0"
    assert info.value.usage == "usage: z.comp [--help] [-n N]"


def test_other_component_errors_are_the_components_with_the_original_as_cause() -> None:
    from torchx.components.errors import ComponentRaisedError
    from torchx.specs.errors import InvalidResourceException

    def comp() -> AppDef:
        """Breaks."""
        raise RuntimeError("boom")

    with pytest.raises(ComponentRaisedError) as info:
        materialize_appdef(comp, [])
    line = comp.__code__.co_firstlineno + 2
    assert str(info.value) == (
        f"component comp raised RuntimeError: boom (test_components_args.py:{line})"
    )
    assert isinstance(info.value.__cause__, RuntimeError)

    def spec_error() -> AppDef:
        """A SpecError is already a clear user error: it passes unchanged."""
        raise InvalidResourceException("no such resource")

    with pytest.raises(InvalidResourceException, match=r"^no such resource$"):
        materialize_appdef(spec_error, [])


# ------------------------------------------------------------------------ parser


def test_component_parser_is_an_argparse_parser_and_cached() -> None:
    parser = component_parser(typed, prog="t")
    assert isinstance(parser, argparse.ArgumentParser)
    assert component_parser(typed, prog="t") is parser
    assert component_parser(typed, prog="u") is not parser
    assert component_parser(typed, defaults={"i": "2"}, prog="t") is not parser
    with pytest.raises(ComponentArgError):
        parser.parse_args(["--nope"])  # never exits the process


def test_prog_defaults_to_the_function_name() -> None:
    assert component_parser(typed).prog == "typed"


# ------------------------------------------------------------------ property tests

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_WORD = st.text(
    st.characters(codec="utf-8", exclude_characters=",;=\"'", exclude_categories=("Z", "C")),
    min_size=1,
    max_size=8,
)
_KEY = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,7}", fullmatch=True)


_TYPED_OPTIONS = {"-s", "-i", "-b", "--s", "--i", "--b", "--fl", "--ls", "--li", "--ds", "--di"}
_TYPED_OPTIONS |= {"--oi", "--help"}


@given(st.lists(_WORD, max_size=6))
def test_lists_round_trip(items: list[str]) -> None:
    text = ",".join(items)
    # glued to its option, any value is a value
    assert run(typed, [f"--ls={text}"])["ls"] == items
    # apart from it too, but for the two spellings argparse gives a meaning of their own:
    # '--' (the program's arguments follow) and an option of the component itself
    if text != "--" and text not in _TYPED_OPTIONS:
        assert run(typed, ["--ls", text])["ls"] == items


def test_a_list_value_spelled_like_the_separator_needs_the_glued_form() -> None:
    assert run(typed, ["--ls=--"])["ls"] == ["--"]


@given(st.lists(st.integers(-(10**9), 10**9), max_size=6))
def test_int_lists_round_trip(items: list[int]) -> None:
    assert run(typed, ["--li", ",".join(map(str, items))])["li"] == items


@given(st.dictionaries(_KEY, _WORD, max_size=5))
def test_dicts_round_trip(values: dict[str, str]) -> None:
    text = ",".join(f"{k}={v}" for k, v in values.items())
    assert run(typed, ["--ds", text])["ds"] == values


@given(st.lists(st.text(max_size=6), max_size=4))
def test_any_argv_is_parsed_or_refused_with_one_line(argv: list[str]) -> None:
    try:
        run(required, ["--name", "n", "--count", "1", *argv])
    except ComponentArgError as e:
        assert "\n" not in str(e)


def test_values_that_start_with_a_dash_stay_values() -> None:
    assert run(typed, ["--li", "-1,0"])["li"] == [-1, 0]
    assert run(typed, ["-s", "-Dx=y", "--i", "2"])["s"] == "-Dx=y"
    assert run(typed, ["--s", "--not-an-option"])["s"] == "--not-an-option"
    # the program's arguments are left exactly as given
    got = run(required, ["--name", "n", "--count", "1", "prog", "--name", "-x"])
    assert got["rest"] == ["prog", "--name", "-x"] and got["name"] == "n"
    got = run(required, ["--name", "-n", "--count", "1", "--", "--count", "-2"])
    assert got["rest"] == ["--count", "-2"] and got["name"] == "-n"
    with pytest.raises(ComponentArgError, match="argument --name: expected one argument"):
        run(required, ["--name", "--count", "1"])  # a known option is never taken as a value
