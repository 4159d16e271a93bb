"""The site's build fails on a warning, a broken link and a reference to a missing name.

Each test builds a small project with the site's own configuration (``docs/conf.py``,
its extension and its strictness flags, exactly as ``nox -s docs`` passes them), once
clean and once with one thing broken: the clean build passes and the broken one fails
naming what broke, so the failure is the break's and not the project's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent

#: What ``nox -s docs`` passes to sphinx-build (noxfile.py's build_docs), less -j and -q.
STRICT = ["-W", "--keep-going", "-n", "-b", "html"]

FIXTURE_MODULE = "torchx_docs_fixture"

GOOD_MODULE = '''\
"""A module of the project: see :func:`greet`."""


def greet(name: str) -> str:
    """Says hello to ``name``.

    Args:
        name: who to greet
    """
    return f"hello {name}"
'''


def build(tmp_path: Path, pages: dict[str, str], module: str = GOOD_MODULE) -> tuple[int, str]:
    """sphinx-build of ``pages`` (name -> Markdown) plus an index listing them."""
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    toctree = "\n".join(["```{toctree}", *(Path(n).stem for n in pages), "```"])
    (src / "index.md").write_text(f"# Home\n\n{toctree}\n", encoding="utf-8")
    for name, text in pages.items():
        (src / name).write_text(textwrap.dedent(text), encoding="utf-8")
    lib = tmp_path / "lib"
    lib.mkdir(exist_ok=True)
    (lib / f"{FIXTURE_MODULE}.py").write_text(module, encoding="utf-8")
    env = {
        **os.environ,
        "TORCHX_DOCS_GENERATE": "0",  # no generated pages: only the fixture's
        "PYTHONPATH": os.pathsep.join(filter(None, [str(lib), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", *STRICT, "-c", str(DOCS), str(src), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    return proc.returncode, proc.stdout + proc.stderr


API_PAGE = f"""\
# API

```{{eval-rst}}
.. automodule:: {FIXTURE_MODULE}
   :members:
```
"""

OTHER = """\
# Other

## A section

See [the API](api.md) and [its section](other.md#a-section).
"""


def test_the_clean_fixture_builds(tmp_path: Path) -> None:
    code, out = build(tmp_path, {"api.md": API_PAGE, "other.md": OTHER})
    assert code == 0, out
    assert "hello" not in out
    html = (tmp_path / "out" / "api.html").read_text(encoding="utf-8")
    assert "Says hello to" in html  # the docstring is on the page


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        ("See [a page](missing-page.md).", "missing-page.md"),
        ("See [a section](other.md#no-such-section).", "no-such-section"),
        ("See {py:func}`torchx_docs_fixture.no_such_function`.", "no_such_function"),
        ("See {py:class}`torchx.specs.api.NoSuchClass`.", "NoSuchClass"),
    ],
    ids=["broken-link", "broken-anchor", "missing-name", "missing-name-of-torchx"],
)
def test_a_broken_page_fails_the_build(tmp_path: Path, broken: str, expected: str) -> None:
    code, out = build(tmp_path, {"api.md": API_PAGE, "other.md": OTHER + "\n" + broken + "\n"})
    assert code != 0, out
    assert expected in out and "WARNING" in out, out


def test_a_docstring_naming_a_missing_name_fails_the_build(tmp_path: Path) -> None:
    module = GOOD_MODULE.replace(":func:`greet`", ":func:`greeet`")
    code, out = build(tmp_path, {"api.md": API_PAGE, "other.md": OTHER}, module=module)
    assert code != 0, out
    assert "greeet" in out, out


def test_a_docstring_that_does_not_parse_fails_the_build(tmp_path: Path) -> None:
    module = GOOD_MODULE.replace("Says hello to ``name``.", "Says hello to ``name.")
    code, out = build(tmp_path, {"api.md": API_PAGE, "other.md": OTHER}, module=module)
    assert code != 0, out
    assert "Inline literal start-string without end-string" in out, out


def test_a_name_outside_the_project_is_not_a_warning(tmp_path: Path) -> None:
    """Offline, there is nothing to link ``collections.OrderedDict`` to: not a failure."""
    page = OTHER + "\nSee {py:class}`collections.OrderedDict` and {py:mod}`json`.\n"
    code, out = build(tmp_path, {"api.md": API_PAGE, "other.md": page})
    assert code == 0, out
