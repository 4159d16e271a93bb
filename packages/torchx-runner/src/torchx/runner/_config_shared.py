"""What reading a ``.torchxconfig`` and writing one share: its name, its error, its options.

:mod:`torchx.runner.config` reads config files and :mod:`torchx.runner.config_writing`
writes the template ``torchx configure`` makes. Both need the file's name, the error a
bad file is, the ``#FIXME`` placeholder a required option is written with (and refused
with when read back), and an installed scheduler's run options. They import them from
here, and this module imports neither, so the writer is loaded only when something is
written and the two modules never import each other. Users import these names from
:mod:`torchx.runner.config` (``ConfigError`` also from :mod:`torchx.runner`).

>>> CONFIG_FILE, FIXME
('.torchxconfig', '#FIXME')
>>> issubclass(ConfigError, SpecError)
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchx.specs.errors import SpecError

if TYPE_CHECKING:
    from torchx.specs.options import runopts

#: The file name looked for in the current directory, its parents and the home directory.
CONFIG_FILE = ".torchxconfig"
#: What a required option's value starts with in a written template until it is given.
FIXME = "#FIXME"


class ConfigError(SpecError):
    """A ``.torchxconfig`` cannot be used: unreadable, malformed, or a bad key or value.

    The message names the file and, where it applies, the section and the key.
    """


# users import it from torchx.runner.config (and torchx.runner), where upstream defined it
ConfigError.__module__ = "torchx.runner.config"


def default_run_opts(scheduler: str) -> runopts | None:
    """The run options of the installed scheduler ``scheduler`` (None if it is not installed).

    The scheduler is created to ask it, and closed at once.
    """
    from torchx.specs.plugins import get_registry

    entry = get_registry().schedulers.get(scheduler)
    if entry is None:
        return None
    sched = entry.load()("torchx")
    try:
        opts: runopts = sched.run_opts()
    finally:
        sched.close()
    return opts
