"""The kit's docstring-example helpers fail where a plugin's docs went wrong.

``modules_with_examples`` and ``run_examples`` (torchx.schedulers.testing) are what every
plugin's tests/test_doctests.py runs; here they meet a made-up package with one good
module, one whose example is wrong, and one without examples.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchx.schedulers.testing import modules_with_examples, run_examples

PACKAGE = "kit_examples_pkg"


@pytest.fixture
def package(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / PACKAGE
    root.mkdir()
    files = {
        "__init__.py": '"""No examples here."""\n',
        "good.py": '''
            """Adds.

            >>> add(2, 2)
            4
            >>> add(1, 2)  # ``...`` matches anything
            3...
            """


            def add(a: int, b: int) -> int:
                return a + b
            ''',
        "broken.py": '''
            def half(n: int) -> float:
                """Halves.

                >>> half(3)
                1
                """
                return n / 2
            ''',
        "plain.py": "X = 1\n",
    }
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip())
    sys.path.insert(0, str(tmp_path))
    try:
        yield PACKAGE
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def test_modules_with_examples_finds_each_module_that_has_some(package: str) -> None:
    assert modules_with_examples(package) == [f"{package}.broken", f"{package}.good"]


def test_run_examples_passes_on_examples_that_hold(package: str) -> None:
    run_examples(f"{package}.good")


def test_run_examples_fails_on_a_wrong_example_naming_the_module(
    package: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(AssertionError, match=rf"1 example\(s\) failed in {package}\.broken"):
        run_examples(f"{package}.broken")
    report = capsys.readouterr().out
    assert "Expected:\n    1\nGot:\n    1.5" in report


def test_run_examples_fails_on_a_module_without_examples(package: str) -> None:
    with pytest.raises(AssertionError, match="has no examples: remove it from the list"):
        run_examples(f"{package}.plain")
