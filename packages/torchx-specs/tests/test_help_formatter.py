"""The shared help formatter: argparse's width without importing shutil."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

import pytest

from torchx.specs import builders
from torchx.specs.help_formatter import HelpFormatter, terminal_columns


@pytest.mark.parametrize("columns", ["57", "0", "-3", "x", None])
def test_the_width_is_shutils(monkeypatch: pytest.MonkeyPatch, columns: str | None) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns
    assert HelpFormatter("p")._width == shutil.get_terminal_size().columns - 2


def test_an_explicit_width_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert HelpFormatter("p", width=40)._width == 40


def test_descriptions_keep_their_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    parser = argparse.ArgumentParser(
        prog="p", description="one\n  two", formatter_class=HelpFormatter
    )
    assert "one\n  two" in parser.format_help()


def test_the_component_parser_uses_it() -> None:
    parser = builders.component_parser(_component)
    assert parser.formatter_class is HelpFormatter


def test_importing_it_imports_no_shutil() -> None:
    code = (
        "import sys; import torchx.specs.help_formatter as h; h.HelpFormatter('p'); "
        "print(','.join(m for m in ('shutil', 'bz2', 'lzma') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _component(n: int = 1) -> None:
    """A component.

    Args:
        n: a number
    """
