"""Secret-looking names and the masking of run options kept beside an app."""

from __future__ import annotations

from typing import Any

import pytest

from torchx.specs.secrets import MASK, is_secret_name, masked_run_options


@pytest.mark.parametrize("name", ["HF_TOKEN", "api_key", "DbPassword", "passwd", "secret:x/y"])
def test_secret_looking_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["LR", "queue", "image_repo", "env"])
def test_plain_names(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ({"A_KEY": "v", "B": "w"}, {"A_KEY": MASK, "B": "w"}),
        (
            ["A_KEY=v", "B=w", "C_TOKEN:x", "D_TOKEN="],
            ["A_KEY=" + MASK, "B=w", "C_TOKEN:" + MASK, "D_TOKEN="],
        ),
        ("A_KEY=v;B=w,C_SECRET:x", f"A_KEY={MASK};B=w,C_SECRET:{MASK}"),
        ("https://host:8080/path", "https://host:8080/path"),
        (
            ["--comment=HF_TOKEN=x", "-e", "secret:db/url"],
            ["--comment=HF_TOKEN=****", "-e", "secret:****"],
        ),
        ("--opt=a=b:c=d", "--opt=a=b:c=d"),
        (3, 3),
        (1.5, 1.5),
        (False, False),
    ],
)
def test_values_inside_an_option_are_masked_by_their_pairs(value: Any, want: Any) -> None:
    assert masked_run_options({"opt": value}) == {"opt": want}


def test_an_option_named_like_a_secret_is_masked_whole_and_unset_ones_left_out() -> None:
    got = masked_run_options({"z_token": ["a", "b"], "a_password": "", "m": None, "b": "x"})
    assert got == {"a_password": "", "b": "x", "z_token": MASK}
    assert list(got) == ["a_password", "b", "z_token"]


def test_another_type_is_kept_as_its_text() -> None:
    class Size:
        def __str__(self) -> str:
            return "API_KEY=abc"

    assert masked_run_options({"size": Size()}) == {"size": f"API_KEY={MASK}"}
