"""The page's files: in the installed package, self-contained, values put in as text."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from torchx.ui.server import STATIC, static_text


@pytest.mark.parametrize("name", sorted(STATIC))
def test_each_file_is_installed_with_the_package(name: str) -> None:
    assert resources.files("torchx.ui").joinpath("static", name).is_file()
    assert static_text(name).strip()


def test_the_script_never_writes_markup() -> None:
    """Every value (an app's name, a reason) goes in with textContent: a name like
    ``<img src=x onerror=alert(1)>`` shows as text. No API that parses markup is used."""
    js = static_text("app.js")
    for api in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        "createContextualFragment",
        "DOMParser",
    ):
        assert api not in js, api
    assert js.count("textContent") >= 2


def test_the_page_needs_nothing_from_elsewhere_and_no_inline_script() -> None:
    html = static_text("index.html")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "a file from elsewhere"
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/app.js" defer>']
    assert not re.search(r"<[^>]+\son[a-z]+\s*=", html), "an inline event handler"
    assert "<style" not in html
    for name in ("app.js", "app.css"):
        assert not re.search(r"https?://", static_text(name)), name


def test_the_script_asks_only_its_own_server() -> None:
    js = static_text("app.js")
    urls = re.findall(r"""(?:fetch|EventSource)\(\s*[`"']([^`"'$]+)""", js)
    assert sorted(urls) == [
        "/api/",
        "/api/app?handle=",
        "/api/events",
        "/api/log/page?",
        "/api/log?",
        "/api/replicas",
    ]
    assert "fetch(`/api/${action}`" in js and '"cancel"' in js and '"delete"' in js
