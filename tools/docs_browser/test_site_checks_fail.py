"""Each site check fails on a copy of the built site broken the way it guards against."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import sitechecks
from cdp import Browser


@pytest.fixture
def broken(site: Path, tmp_path: Path) -> Path:
    """A copy of the built site, to break."""
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    return copy


def _inject(page: Path, html: str) -> None:
    text = page.read_text(encoding="utf-8")
    assert "</body>" in text
    page.write_text(text.replace("</body>", f"{html}</body>", 1), encoding="utf-8")


def test_a_script_error_on_the_home_page_fails_it(
    broken: Path, serve: Callable[[Path], str], browser: Browser
) -> None:
    _inject(broken / "index.html", "<script>window.undefinedThing.call()</script>")
    with pytest.raises(AssertionError, match="the console shows errors: exception: TypeError"):
        sitechecks.check_home(browser, serve(broken))


def test_a_home_page_without_its_stylesheets_fails_it(
    broken: Path, serve: Callable[[Path], str], browser: Browser
) -> None:
    index = broken / "index.html"
    index.write_text(re.sub(r'<link rel="stylesheet"[^>]*>', "", index.read_text()))
    with pytest.raises(AssertionError, match="no stylesheet applied"):
        sitechecks.check_home(browser, serve(broken))


def test_a_search_index_without_the_component_fails_the_search(
    broken: Path, serve: Callable[[Path], str], browser: Browser
) -> None:
    index = broken / "searchindex.js"
    text = index.read_text(encoding="utf-8")
    assert "ddp" in text
    index.write_text(text.replace("ddp", "zzq"), encoding="utf-8")
    with pytest.raises(AssertionError, match=re.escape("no result named 'dist.ddp'")):
        sitechecks.check_search(browser, serve(broken), "dist.ddp")


def test_a_search_page_whose_script_fails_fails_the_search(
    broken: Path, serve: Callable[[Path], str], browser: Browser
) -> None:
    (broken / "searchindex.js").write_text("Search.setIndex(", encoding="utf-8")  # cut short
    with pytest.raises(AssertionError, match="the console shows errors: exception: SyntaxError"):
        sitechecks.check_search(browser, serve(broken), "dist.ddp")


def test_an_api_page_missing_its_entry_fails_it(
    broken: Path, serve: Callable[[Path], str], browser: Browser, site: Path
) -> None:
    base = serve(broken)
    url = sitechecks.check_api_page(browser, base, "torchx.specs", "AppDef")
    page = broken / url.removeprefix(base)
    page.write_text(page.read_text().replace('id="torchx.specs.AppDef"', 'id="gone"'))
    with pytest.raises(AssertionError, match=re.escape("no signature of torchx.specs.AppDef")):
        sitechecks.check_api_page(browser, base, "torchx.specs", "AppDef")


def test_an_api_page_with_a_console_error_fails_it(
    broken: Path, serve: Callable[[Path], str], browser: Browser
) -> None:
    base = serve(broken)
    url = sitechecks.check_api_page(browser, base, "torchx.specs", "AppDef")
    _inject(broken / url.removeprefix(base), "<script>console.error('oops')</script>")
    with pytest.raises(AssertionError, match=re.escape("console.error: oops")):
        sitechecks.check_api_page(browser, base, "torchx.specs", "AppDef")


def test_a_result_whose_page_lost_the_entry_fails_the_search(
    broken: Path, serve: Callable[[Path], str], browser: Browser
) -> None:
    base = serve(broken)
    [catalogue] = [
        url for url in sitechecks.check_search(browser, base, "dist.ddp") if "#dist-ddp" in url
    ]
    page = broken / catalogue.removeprefix(base).split("#")[0]
    page.write_text(page.read_text(encoding="utf-8").replace('id="dist-ddp"', 'id="elsewhere"'))
    with pytest.raises(AssertionError, match=re.escape("no #dist-ddp showing 'dist.ddp'")):
        sitechecks.check_search(browser, base, "dist.ddp")
