"""The YAML of a dry run reads back as the data it was made from, whatever the data."""

from __future__ import annotations

import math
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from torchx_k8s.yamltext import render

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.sampled_from(
        [
            "yes",
            "No",
            "ON",
            "off",
            "null",
            "~",
            "",
            "-",
            "1e3",
            ".5",
            "0x1F",
            "a: b",
            "#x",
            "- x",
            "'q'",
            "1:20",
            "2026-11-25",
            "y",
            "<<",
        ]
    )
)
data = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(max_size=8) | st.sampled_from(["on", "1", "a b"]), inner, max_size=4
        )
    ),
    max_leaves=30,
)


@settings(max_examples=400)
@given(data)
def test_yaml_reads_back_as_the_data(value: Any) -> None:
    assert yaml.safe_load(render(value)) == value


def test_special_floats() -> None:
    back = yaml.safe_load(render({"a": math.inf, "b": -math.inf, "c": math.nan}))
    assert back["a"] == math.inf and back["b"] == -math.inf and math.isnan(back["c"])


def test_nested_lists_and_dicts_are_block_style() -> None:
    text = render({"a": [{"b": [1, [2, 3]], "c": {}}], "d": []})
    assert text == "a:\n- b:\n  - 1\n  - - 2\n    - 3\n  c: {}\nd: []\n"
