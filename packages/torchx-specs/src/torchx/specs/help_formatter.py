"""An argparse help formatter that does not import :mod:`shutil`: for every torchx parser.

argparse makes a formatter for every ``add_argument`` (to check it), and its
``__init__`` imports :mod:`shutil` for the terminal's width; shutil loads the bz2 and
lzma extensions: milliseconds of every ``torchx run``'s start (and of every component
command line parsed) for a width no one reads unless help is printed. The ``torchx``
command's parser and the component argument parser (:mod:`torchx.specs.builders`) both
use :class:`HelpFormatter`; a plugin's own argparse-based tool may too.

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="p", formatter_class=HelpFormatter)
>>> _ = parser.add_argument("--n", help="replicas")
>>> "--n N" in parser.format_help()
True
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["HelpFormatter", "terminal_columns"]


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter of raw descriptions, sized by :func:`terminal_columns` - 2
    (what argparse's own width is) instead of through :mod:`shutil`."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def terminal_columns() -> int:
    """The columns ``shutil.get_terminal_size()`` gives, without importing shutil.

    ``$COLUMNS`` when it is a positive number, else the width of the terminal of
    ``sys.__stdout__``, else 80.
    """
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80
