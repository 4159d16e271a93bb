"""macros.Values.substitute: the one substitution every scheduler uses.

It keeps the parse of each string (see torchx.specs.templating), so these tests hold it
to ``string.Template(text).safe_substitute(**values.to_dict())`` on arbitrary text
without ``$$`` (``$``, ``${``, unclosed braces, unknown and differently cased macros),
and to the rule of ``$$``: upstream's escape before a macro or ``{``, as typed elsewhere
(``pa$$word`` arrived as ``pa$word`` on every scheduler).
"""

from __future__ import annotations

from string import Template

import attrs
from hypothesis import given
from hypothesis import strategies as st

from torchx.specs import macros
from torchx.specs.templating import _parse

_MACROS = ("app_id", "replica_id", "img_root", "rank0_env", "base_img_root")

# Text built from the pieces that matter to the parser, mixed with arbitrary characters.
_PIECES = st.sampled_from(
    [
        "$",
        "$$",
        "${",
        "}",
        "{",
        "$$$",
        "_",
        "0",
        "a",
        "app_id",
        "APP_ID",
        "replica_id",
        "img_root",
        "rank0_env",
        "base_img_root",
        "unknown",
        "${app_id}",
        "$replica_id",
        "${replica_id",
        "$app_idx",
        "${ app_id}",
        "é",
        " ",
        "\n",
    ]
)
_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=4)), max_size=12).map("".join)
_VALUE = st.text(max_size=6)


def _values(app_id: str, replica_id: str, img_root: str, rank0_env: str) -> macros.Values:
    return macros.Values(
        img_root=img_root, app_id=app_id, replica_id=replica_id, rank0_env=rank0_env
    )


@given(_TEXT.filter(lambda t: "$$" not in t), _VALUE, _VALUE, _VALUE, _VALUE)
def test_substitute_is_string_templates_safe_substitute_without_a_double_dollar(
    text: str, app_id: str, replica_id: str, img_root: str, rank0_env: str
) -> None:
    values = _values(app_id, replica_id, img_root, rank0_env)
    expected = Template(text).safe_substitute(**attrs.asdict(values))
    assert values.substitute(text) == expected
    assert values.substitute(text) == expected  # again: now from the kept parse


@given(st.text(max_size=40).filter(lambda t: "$$" not in t))
def test_substitute_agrees_on_any_text_without_a_double_dollar(text: str) -> None:
    values = _values("app-1", "7", "/img", "MASTER_ADDR")
    assert values.substitute(text) == Template(text).safe_substitute(**values.to_dict())


#: Text that names no macro and has no "{": passwords, shell's $$ and $HOME, prices.
_PLAIN = st.text(alphabet=st.sampled_from(list("$$$abwordHOME_09 -.}\n")), max_size=30).filter(
    lambda t: not any(m in t for m in _MACROS)
)


@given(_PLAIN, _VALUE, _VALUE)
def test_a_double_dollar_that_escapes_no_macro_arrives_as_typed(
    text: str, app_id: str, rank0_env: str
) -> None:
    values = _values(app_id, "0", "/img", rank0_env)
    assert values.substitute(text) == text
    assert values.substitute(text) == text  # again: now from the kept parse


@given(_PLAIN, _PLAIN, st.sampled_from(_MACROS), _VALUE)
def test_upstreams_escape_of_a_macro_is_kept(
    before: str, after: str, name: str, value: str
) -> None:
    """``$${m}`` and ``$$m`` are the macro's text, ``$$${m}`` a ``$`` before its value,
    wherever they stand among text typed as it is."""
    values = macros.Values(
        img_root=value, app_id=value, replica_id=value, rank0_env=value, base_img_root=value
    )
    for written, meant in [
        (f"$${{{name}}}", f"${{{name}}}"),
        (f"$${name}", f"${name}"),
        (f"$$${{{name}}}", f"${value}"),
    ]:
        text = f"{before} {written} {after}"
        assert values.substitute(text) == f"{before} {meant} {after}", text


@given(_TEXT)
def test_the_parse_joins_back_to_the_text(text: str) -> None:
    # placeholders stay as written; an escape drops one "$", and only before a macro or "{"
    for names in (frozenset(), frozenset(_MACROS)):
        joined = "".join(p if isinstance(p, str) else p[1] for p in _parse(text, names))
        assert joined.replace("$", "") == text.replace("$", "")
        if "{" not in text and not (names and any(m in text for m in names)):
            assert joined == text


def test_cases_that_matter() -> None:
    values = _values("a1", "3", "/img", "MASTER")
    cases = {
        "${app_id}-$replica_id": "a1-3",
        "$$${app_id}": "$a1",
        "$${rank0_env}": "${rank0_env}",
        "$$" + macros.rank0_env: "$MASTER",
        "${APP_ID}": "${APP_ID}",  # lookups are case-sensitive: left alone
        "${unknown} $unknown": "${unknown} $unknown",
        "${app_id": "${app_id",  # unclosed: the "$" is kept as it is
        "$": "$",
        "cost: 5$": "cost: 5$",
        "$app_idx": "$app_idx",  # the longest name is taken, and is unknown
        "no macro": "no macro",
        "pa$$word": "pa$$word",  # escapes no macro: as typed (it arrived as pa$word)
        "echo $$ $$HOME $$APP_ID a$$$$b": "echo $$ $$HOME $$APP_ID a$$$$b",
        "$$app_id $$${app_id}": "$app_id $a1",  # upstream's escape, and a $ before a value
        "$${PORT:-29500}": "${PORT:-29500}",  # a shell expansion where ${ starts a macro
        "$${${rank0_env}:=localhost}": "${MASTER:=localhost}",  # dist.ddp's endpoint
    }
    for text, expected in cases.items():
        assert values.substitute(text) == expected, text


def test_a_value_that_is_not_a_string_is_made_one_as_template_does() -> None:
    values = macros.Values(img_root="/i", app_id="a", replica_id=3, rank0_env="M")  # type: ignore[arg-type]
    assert values.substitute("r${replica_id}") == "r3"


def test_to_dict_of_a_subclass_keeps_its_fields() -> None:
    @attrs.define
    class More(macros.Values):
        extra: str = "x"

    more = More(img_root="/i", app_id="a", replica_id="0", rank0_env="M")
    assert more.to_dict()["extra"] == "x"
    assert more.substitute("${extra}") == "x"
    assert macros.Values("/i", "a", "0", "M").to_dict() == {
        "img_root": "/i",
        "app_id": "a",
        "replica_id": "0",
        "rank0_env": "M",
        "base_img_root": "DEPRECATED",
    }
