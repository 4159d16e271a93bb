"""The browser harness sees what a reader would: each check is shown failing on a page
made to fail it (tiny static pages, no site needed)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cdp import Browser, BrowserError


def _page(tmp_path: Path, serve: Callable[[Path], str], body: str, name: str = "index.html") -> str:
    (tmp_path / name).write_text(
        f"<!doctype html><html><head><title>t</title>"
        f'<link rel="icon" href="data:,"></head><body>{body}</body></html>'
    )
    return serve(tmp_path) + name


def _errors(browser: Browser, url: str, ready: str = "") -> list[str]:
    page = browser.new_page()
    try:
        page.goto(url)
        if ready:
            page.wait_until(ready)
        page.drain()
        return [str(e) for e in page.errors]
    finally:
        page.close()


def test_a_clean_page_shows_no_errors(
    tmp_path: Path, serve: Callable[[Path], str], browser: Browser
) -> None:
    url = _page(tmp_path, serve, "<main><h1>Hello</h1></main><script>console.log('fine')</script>")
    assert _errors(browser, url) == []


def test_an_uncaught_exception_is_caught(
    tmp_path: Path, serve: Callable[[Path], str], browser: Browser
) -> None:
    url = _page(tmp_path, serve, "<script>null.search('x')</script>")
    [error] = _errors(browser, url)
    assert error.startswith("exception: TypeError") and "null" in error


def test_an_exception_after_the_load_is_caught(
    tmp_path: Path, serve: Callable[[Path], str], browser: Browser
) -> None:
    body = (
        "<script>setTimeout(() => { document.body.dataset.done = 1;"
        " throw new Error('late'); }, 50)</script>"
    )
    url = _page(tmp_path, serve, body)
    errors = _errors(browser, url, ready="document.body.dataset.done")
    assert any("Error: late" in e for e in errors), errors


def test_console_error_and_assert_are_caught(
    tmp_path: Path, serve: Callable[[Path], str], browser: Browser
) -> None:
    url = _page(
        tmp_path, serve, "<script>console.error('bad', 7); console.assert(1 === 2)</script>"
    )
    errors = _errors(browser, url)
    assert "console.error: bad 7" in errors
    assert any(e.startswith("console.assert") for e in errors), errors


def test_a_script_that_does_not_load_is_caught(
    tmp_path: Path, serve: Callable[[Path], str], browser: Browser
) -> None:
    url = _page(tmp_path, serve, '<script src="_static/missing.js"></script>')
    [error] = _errors(browser, url)
    assert "404" in error and "_static/missing.js" in error


def test_wait_for_sees_an_element_added_later(
    tmp_path: Path, serve: Callable[[Path], str], browser: Browser
) -> None:
    body = (
        "<script>setTimeout(() => { const a = document.createElement('a');"
        " a.href = 'x.html'; a.textContent = 'dist.ddp'; document.body.append(a); }, 200)</script>"
    )
    url = _page(tmp_path, serve, body)
    page = browser.new_page()
    try:
        page.goto(url)
        [link] = page.wait_for("a")
        assert link == {"text": "dist.ddp", "href": url.replace("index.html", "x.html")}
    finally:
        page.close()


def test_waiting_for_what_never_comes_fails_in_time(
    tmp_path: Path, serve: Callable[[Path], str], browser: Browser
) -> None:
    url = _page(tmp_path, serve, "<p>nothing</p>")
    page = browser.new_page()
    try:
        page.goto(url)
        with pytest.raises(BrowserError, match="no element matches '#search-results li a'"):
            page.wait_for("#search-results li a", timeout=0.5)
    finally:
        page.close()


def test_a_page_that_does_not_exist_is_an_error(
    tmp_path: Path, serve: Callable[[Path], str], browser: Browser
) -> None:
    base = _page(tmp_path, serve, "<p>here</p>")
    errors = _errors(browser, base.replace("index.html", "nowhere.html"))
    assert any("404" in e for e in errors), errors


def test_a_browser_that_does_not_start_says_why(tmp_path: Path) -> None:
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\necho 'cannot open display' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(BrowserError, match=r"did not start: .*it said: cannot open display"):
        Browser(str(fake), timeout=10)
