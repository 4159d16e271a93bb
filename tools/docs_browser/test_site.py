"""The built site, as a reader sees it in Chromium: the home page, a search for
``dist.ddp``, and an API page render, with no error in the console on any of them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import urldefrag

import pytest
import sitechecks
from cdp import Browser


@pytest.fixture(scope="module")
def base(site: Path, serve: Callable[[Path], str]) -> str:
    return serve(site)


def test_the_home_page_renders(browser: Browser, base: str) -> None:
    sitechecks.check_home(browser, base)


def test_a_search_for_dist_ddp_finds_the_components_page(browser: Browser, base: str) -> None:
    found = sitechecks.check_search(browser, base, "dist.ddp")
    # the component catalogue's entry among them (the API page of its module may be too)
    pages = [urldefrag(url)[0] for url in found]
    assert f"{base}reference/components.html" in pages, found


def test_an_api_page_renders(browser: Browser, base: str) -> None:
    url = sitechecks.check_api_page(browser, base, "torchx.specs", "AppDef")
    assert url.startswith(base)
