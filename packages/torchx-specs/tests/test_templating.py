"""macros.Values.substitute: the one substitution every scheduler uses, exactly string.Template's.

It keeps the parse of each string (see torchx.specs.templating), so these tests hold it
to ``string.Template(text).safe_substitute(**values.to_dict())`` on arbitrary text:
``$``, ``$$``, ``${``, unclosed braces, unknown and differently cased macros.
"""

from __future__ import annotations

from string import Template

import attrs
from hypothesis import given
from hypothesis import strategies as st

from torchx.specs import macros
from torchx.specs.templating import _parse

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


@given(_TEXT, _VALUE, _VALUE, _VALUE, _VALUE)
def test_substitute_is_string_templates_safe_substitute(
    text: str, app_id: str, replica_id: str, img_root: str, rank0_env: str
) -> None:
    values = _values(app_id, replica_id, img_root, rank0_env)
    expected = Template(text).safe_substitute(**attrs.asdict(values))
    assert values.substitute(text) == expected
    assert values.substitute(text) == expected  # again: now from the kept parse


@given(st.text(max_size=40))
def test_substitute_agrees_on_any_text(text: str) -> None:
    values = _values("app-1", "7", "/img", "MASTER_ADDR")
    assert values.substitute(text) == Template(text).safe_substitute(**values.to_dict())


@given(_TEXT)
def test_the_parse_joins_back_to_the_text(text: str) -> None:
    # with no value known, every macro stays as written and "$$" becomes "$"
    pieces = _parse(text)
    joined = "".join(p if isinstance(p, str) else p[1] for p in pieces)
    assert joined == Template(text).safe_substitute()


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
