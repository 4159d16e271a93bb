"""What a reader of the documentation site must see, checked in a real browser.

Each check opens pages of a site served at ``base`` (a URL ending in ``/``) in a new tab
and fails with one line saying what is wrong: the page did not render, search found
nothing, or the browser's console showed an error on any page opened (an exception, a
``console.error``, a script, stylesheet or image that did not load). The site is a
Sphinx HTML build: its search page is ``search.html?q=...`` and its module index
``py-modindex.html``.
"""

from __future__ import annotations

import json
from urllib.parse import quote, urldefrag

from cdp import Browser, Page, describe

#: The CSS the theme must have applied: a page without its stylesheets shows the browser's
#: default serif font.
_STYLED = "getComputedStyle(document.body).fontFamily"


def _no_console_errors(page: Page, url: str) -> None:
    page.drain()
    assert not page.errors, f"{url}: the console shows errors: {describe(page.errors)}"


def _open(browser: Browser, url: str) -> Page:
    """A new tab showing ``url``, loaded; fails at once on an error while it loaded (rather
    than waiting for what a broken script will never show)."""
    page = browser.new_page()
    try:
        page.goto(url)
        _no_console_errors(page, url)
    except BaseException:
        page.close()
        raise
    return page


def _rendered(page: Page, url: str) -> str:
    """The main text of a rendered page: a title, styles applied, a heading, some text."""
    title = page.evaluate("document.title")
    assert title, f"{url}: the page has no title"
    sheets = page.evaluate("document.styleSheets.length")
    font = page.evaluate(_STYLED)
    assert sheets and "Times" not in font, f"{url}: no stylesheet applied (font {font!r})"
    heading = page.wait_for("article h1, main h1, [role=main] h1")
    text = page.text("article") or page.text("main")
    assert len(text) > 200, f"{url}: the page's main text is {len(text)} characters: {text!r}"
    return f"{heading[0]['text']}\n{text}"


def check_home(browser: Browser, base: str) -> None:
    """The home page renders, with a navigation that links to the other pages."""
    url = base
    page = _open(browser, url)
    try:
        _rendered(page, url)
        nav = page.links("nav a[href], .sidebar-tree a[href]")
        local = {link["href"] for link in nav if link["href"].startswith(base)}
        assert len(local) >= 3, f"{url}: the navigation links to {len(local)} pages: {nav}"
        _no_console_errors(page, url)
    finally:
        page.close()


def check_search(browser: Browser, base: str, query: str = "dist.ddp") -> list[str]:
    """A search for ``query`` lists results named ``query``, and each one's page shows it
    (at its anchor, when the link has one). Their URLs."""
    url = f"{base}search.html?q={quote(query)}"
    page = _open(browser, url)
    try:
        summary = page.wait_until(
            "(document.querySelector('#search-results .search-summary') || {}).innerText"
            " && !/^(Preparing|Searching)/.test("
            "document.querySelector('#search-results .search-summary').innerText)"
            " && document.querySelector('#search-results .search-summary').innerText",
        )
        results = page.links("#search-results li a")
        named = [r["href"] for r in results if r["text"].split(" > ")[-1].endswith(query)]
        assert named, f"{url}: no result named {query!r} ({summary!r}; results: {results})"
        _no_console_errors(page, url)
    finally:
        page.close()
    for found in named:
        page = _open(browser, found)
        try:
            _, anchor = urldefrag(found)
            if anchor:
                shown = page.evaluate(
                    f"(document.getElementById({json.dumps(anchor)}) || {{}}).innerText || ''"
                )
                assert query in shown, f"{found}: no #{anchor} showing {query!r} ({shown[:200]!r})"
            else:
                assert query in page.text("body"), f"{found}: {query!r} is not on the page"
            _no_console_errors(page, found)
        finally:
            page.close()
    return named


def check_api_page(
    browser: Browser, base: str, module: str = "torchx.specs", name: str = "AppDef"
) -> str:
    """The module index links ``module``'s API page, which renders and documents ``name``
    (a signature and its docstring). The page's URL."""
    index = f"{base}py-modindex.html"
    page = _open(browser, index)
    try:
        links = [link for link in page.links("a[href]") if link["text"] == module]
        assert links, f"{index}: no link to {module}"
        _no_console_errors(page, index)
    finally:
        page.close()
    url = urldefrag(links[0]["href"])[0]
    page = _open(browser, url)
    try:
        _rendered(page, url)
        qualified = f"{module}.{name}"
        signature = page.evaluate(
            f"(document.getElementById({json.dumps(qualified)}) || {{}}).innerText || ''"
        )
        assert name in signature, f"{url}: no signature of {qualified} ({signature!r})"
        described = page.evaluate(
            f"((document.getElementById({json.dumps(qualified)}) || {{}})"
            ".nextElementSibling || {}).innerText || ''"
        )
        assert len(described) > 40, f"{url}: {qualified} has no description ({described!r})"
        _no_console_errors(page, url)
    finally:
        page.close()
    return url
